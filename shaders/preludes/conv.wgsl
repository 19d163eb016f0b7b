// Shared by the register-blocked convolution kernels: their uniform, weight binding, and the pixel
// arithmetic. Under conv1x1_*.wgsl a kh x kw kernel runs as kh*kw dispatches, one per tap: a 1x1
// convolution of the input shifted by the tap (`conv.zw`), adding into the output;
// conv2d_direct.wgsl walks every tap within one dispatch.
//
// One dispatch covers a window: a range of images (so that input and output bind within
// max_storage_buffer_binding_size), 4*CQ input channels of one group and 16384 / (4*CQ) output
// channels. The window's weights sit in a 64 KiB uniform block (`wu`), packed by the host from
// the weight view. Every invocation owns two quads of 4 consecutive output pixels (one under
// QUADS = 1; two Tiles of two under matmul_blocked.wgsl's TILES = 2); the input and output are
// addressed through their strides, so any layout, padding and stride is read directly. Channel
// windows after the first add into the output (mode 2); the last applies ReLU.

struct ConvParams {
    // Input strides (n, c, h, w) and output strides (n, k, oh, ow), in elements.
    xs: vec4<i32>,
    ys: vec4<i32>,
    // h, w, oh, ow
    geo: vec4<u32>,
    // sh, sw, and the input row and column that output (0, 0) reads under this dispatch's tap
    // (ky * dh - ph, kx * dw - pw)
    conv: vec4<i32>,
    // Element offsets within the bound windows: x at (n0, c0), y at (n0, k0), bias at k0;
    // then the bias stride.
    base: vec4<i32>,
    // Output pixels in this dispatch, channels in this chunk, output channels in this window,
    // invocations per grid row.
    work: vec4<u32>,
    // kh, kw, dh, dw: read by the direct kernel (the other convolutions get one tap per
    // dispatch); matmul_blocked.wgsl reads its batch levels here (its header).
    taps: vec4<i32>,
    // x: 1 applies ReLU to what this dispatch writes (the last channel window of a call with
    // ReLU); y: the window's mode where MODE is 3 (else 0); z: 0; w: 0, read by `four` only.
    finish: vec4<u32>,
}

// Specializations (pipeline constants, so that lanes never pay for a path they do not take):
// the workgroup size, the channels held, how a window starts (MODE 0: from zero, 1: from the
// bias, 2: from what earlier channel windows wrote; 3: as the uniform's `finish.y` says, so
// that every window of a call runs one pipeline, `mode`), and whether the kernel's 4-vectors
// of input (of output) are contiguous and 16-byte aligned, so that they move as one vec4 word. ReLU is the
// uniform's `finish.x`, applied by a select at each store (no branch): as a constant it
// doubled the pipelines of a network (a ResNet's convolutions with and without it).
override WG: u32 = 64u;
// Channel quads each invocation holds in registers (its chunk is 4*CQ <= 64 channels; a power
// of two).
override CQ: u32 = 16u;
override MODE: u32 = 0u;
override VIN: bool = false;
override VOUT: bool = false;
// The NCHW-orientation step (conv1x1_nchw_step.wgsl) reading an input whose channels, not its
// pixels, are unit-stride 16-byte words (matmul_blocked.wgsl's transposed operands): a quad's
// 4 channels x 4 pixels load as 4 words, one a pixel (load_pixel's words).
override XT: bool = false;
// The tiled variant: each channel quad of the workgroup's input passes through workgroup memory,
// loaded by consecutive invocations at consecutive quads (coalesced where the input's pixels are
// contiguous); the barrier-free variant loads its own pixels directly. WG <= 64.
override TILED: bool = false;
// Quads of output pixels an invocation owns: 2 (`a` and `b` of its Tile), or 1 (`a`; `b` is
// empty and its work compiles away). Not with TILED. conv1x1_nhwc.wgsl owns one where it holds
// 16 channel quads: a CPU adapter's compile time grows with what an invocation holds
// (kernels/conv/blocked.rs).
override QUADS: u32 = 2u;

// Bindings 1 and 3-6: conv_io.wgsl.
@group(0) @binding(0) var<uniform> cp_u: array<ConvParams, 1>;

fn pz() -> u32 {
    return uniform_index(cp_u[0].geo.x);
}
// Binding 2 holds the window's weights: the kernel file says how they are laid out, and the
// weights prelude (conv_weights.wgsl, conv_weights_shuffled.wgsl: the 64 KiB uniform block `wu`;
// matmul_weights.wgsl: a storage buffer) declares and reads it.

// Each invocation owns two quads of output pixels (8 pixels; one quad under QUADS = 1, four
// under matmul_blocked.wgsl's TILES = 2): every weight it reads feeds each of them.

// What an invocation holds of 4 input channels: a mat4x4 per quad (the kernel says its shape).
struct Pair {
    a: mat4x4<f32>,
    b: mat4x4<f32>,
}

// The staged channel quad of the tiled variant: one mat4x4 per quad of the workgroup.
var<workgroup> stage: array<mat4x4<f32>, 128>;

// Eight accumulators: a 4x4 block of output per quad (v0..v3 for the first, v4..v7 for the second).
struct Acc {
    v0: vec4<f32>,
    v1: vec4<f32>,
    v2: vec4<f32>,
    v3: vec4<f32>,
    v4: vec4<f32>,
    v5: vec4<f32>,
    v6: vec4<f32>,
    v7: vec4<f32>,
}

// Where the 4 pixels of quad `q` read (channel 0 of the chunk) and write (channel 0 of the
// window), and which of them exist (`valid`) and fall inside the image rather than the
// zero padding (`inside`).
struct Quad {
    xoff: vec4<i32>,
    yoff: vec4<i32>,
    valid: vec4<bool>,
    inside: vec4<bool>,
}

fn quad_at(q: u32) -> Quad {
    return quad_from(q, cp_u[pz()].conv.z, cp_u[pz()].conv.w);
}

// quad_at with the input row and column that output (0, 0) reads given as (ry, rx): the direct
// kernel walks the taps itself.
fn quad_from(q: u32, ry: i32, rx: i32) -> Quad {
    var r: Quad;
    let plane = cp_u[pz()].geo.z * cp_u[pz()].geo.w;
    for (var j = 0u; j < 4u; j = j + 1u) {
        let p = q * 4u + j;
        r.valid[j] = p < cp_u[pz()].work.x;
        let pp = min(p, cp_u[pz()].work.x - 1u);
        let n = pp / plane;
        let rem = pp - n * plane;
        let oy = rem / cp_u[pz()].geo.w;
        let ox = rem - oy * cp_u[pz()].geo.w;
        let iy = i32(oy) * cp_u[pz()].conv.x + ry;
        let ix = i32(ox) * cp_u[pz()].conv.y + rx;
        r.inside[j] = r.valid[j] && iy >= 0 && ix >= 0 && u32(iy) < cp_u[pz()].geo.x && u32(ix) < cp_u[pz()].geo.y;
        r.xoff[j] = cp_u[pz()].base.x + i32(n) * cp_u[pz()].xs.x + iy * cp_u[pz()].xs.z + ix * cp_u[pz()].xs.w;
        r.yoff[j] = cp_u[pz()].base.y + i32(n) * cp_u[pz()].ys.x + i32(oy) * cp_u[pz()].ys.z + i32(ox) * cp_u[pz()].ys.w;
    }
    return r;
}

// An invocation's two quads (`a`, `b`: quads 2q and 2q+1 of the dispatch; under QUADS = 1, `a`
// is quad q and `b` is empty: no pixel valid), and, in the tiled variant, the two it loads into
// the stage (quads lid and lid+WG of its workgroup).
struct Tile {
    a: Quad,
    b: Quad,
    load_a: Quad,
    load_b: Quad,
    lid: u32,
}

fn tile_at(q: u32, lid: u32) -> Tile {
    var t: Tile;
    t.a = quad_at(QUADS * q);
    if (QUADS == 2u) {
        t.b = quad_at(2u * q + 1u);
    }
    t.lid = lid;
    if (TILED) {
        let first = 2u * (q - lid);
        t.load_a = quad_at(first + lid);
        t.load_b = quad_at(first + lid + WG);
    }
    return t;
}

// Input channels 4i .. 4i+3 of the chunk at both quads (zero at or past CQ, and at `b` under
// QUADS = 1). `quad_load` is the kernel's: a mat4x4 of 4 channels x 4 pixels in its
// orientation.
fn held(t: Tile, i: u32) -> Pair {
    if (i >= CQ) {
        return Pair();
    }
    if (TILED) {
        workgroupBarrier();
        stage[t.lid] = quad_load(t.load_a, i);
        stage[t.lid + WG] = quad_load(t.load_b, i);
        workgroupBarrier();
        return Pair(stage[2u * t.lid], stage[2u * t.lid + 1u]);
    }
    if (QUADS == 1u) {
        return Pair(quad_load(t.a, i), mat4x4<f32>());
    }
    return Pair(quad_load(t.a, i), quad_load(t.b, i));
}

// The chunk's channel quads at both quads of pixels, named rather than held in an array so that
// every index below is a constant (see conv1x1_nchw.wgsl).
struct Held {
    q0: Pair,
    q1: Pair,
    q2: Pair,
    q3: Pair,
    q4: Pair,
    q5: Pair,
    q6: Pair,
    q7: Pair,
    q8: Pair,
    q9: Pair,
    q10: Pair,
    q11: Pair,
    q12: Pair,
    q13: Pair,
    q14: Pair,
    q15: Pair,
}

fn hold(t: Tile) -> Held {
    return Held(held(t, 0u), held(t, 1u), held(t, 2u), held(t, 3u), held(t, 4u), held(t, 5u), held(t, 6u), held(t, 7u), held(t, 8u), held(t, 9u), held(t, 10u), held(t, 11u), held(t, 12u), held(t, 13u), held(t, 14u), held(t, 15u));
}

// `hold` as a loop over the quads that stays a loop (its bound is CQ plus `finish.w`, the always-0
// word `four` adds too), each quad stored into its named member by a switch: one copy of `held`'s
// loads instead of 16. Where the input's 4-vectors are not vec4 words (strided or shifted pixels),
// `held` loads every element on its own; unrolled, a lavapipe shader then held 128 load sites (each
// a loop of `four()`, and each compiled as a loop over the SIMD lanes), and the first call of an
// NCHW 1x1 stride-2 convolution on `Nchw` took 4.4 s against 2.4 s rolled, at the same speed once
// compiled (docs/benchmarks-log.md).
fn hold_rolled(t: Tile) -> Held {
    var h: Held;
    for (var i = 0u; i < CQ + cp_u[pz()].finish.w; i = i + 1u) {
        let p = held(t, i);
        switch i {
            case 0u: { h.q0 = p; }
            case 1u: { h.q1 = p; }
            case 2u: { h.q2 = p; }
            case 3u: { h.q3 = p; }
            case 4u: { h.q4 = p; }
            case 5u: { h.q5 = p; }
            case 6u: { h.q6 = p; }
            case 7u: { h.q7 = p; }
            case 8u: { h.q8 = p; }
            case 9u: { h.q9 = p; }
            case 10u: { h.q10 = p; }
            case 11u: { h.q11 = p; }
            case 12u: { h.q12 = p; }
            case 13u: { h.q13 = p; }
            case 14u: { h.q14 = p; }
            default: { h.q15 = p; }
        }
    }
    return h;
}

// The convolution kernels' input: `hold` where it moves as vec4 words, else `hold_rolled`
// (matmul_blocked.wgsl keeps `hold`: its float16 transposed bmm ran 1.5x slower rolled).
fn hold_input(t: Tile) -> Held {
    if (VIN) {
        return hold(t);
    }
    return hold_rolled(t);
}

// 4, as a value no compiler can see: the loops over the 4 elements of a vec4 that load or store
// them one at a time (scalar channels or pixels) run to it, so that they stay loops. lavapipe
// compiles every storage access site as a loop of its own over the SIMD lanes, and the kernels
// unrolled ~100 such sites: rolled, a `DirectBand` pipeline's first call with an empty shader
// cache took 2.0-2.6 s instead of 4.2-5.1 s (docs/benchmarks-log.md). `finish.w` is always 0.
fn four() -> u32 {
    return 4u + cp_u[pz()].finish.w;
}

// Input channels 4*cq .. 4*cq+3 of the chunk at pixel j of the quad (zero in the padding and
// past the chunk).
fn load_pixel(qd: Quad, j: u32, cq: u32) -> vec4<f32> {
    let c = 4u * cq;
    if (VIN || XT) {
        // Quads past the chunk (C/groups not a power of two) read zeros, not the next
        // channels: their zero weights would turn an infinity there into NaN.
        if (qd.inside[j] && c < cp_u[pz()].work.y) {
            return x4[u32(qd.xoff[j] + i32(c)) / 4u];
        }
        return vec4<f32>(0.0);
    }
    var v = vec4<f32>(0.0);
    if (qd.inside[j]) {
        for (var t = 0u; t < four(); t = t + 1u) {
            if (c + t < cp_u[pz()].work.y) {
                v[t] = x[u32(qd.xoff[j] + i32(c + t) * cp_u[pz()].xs.y)];
            }
        }
    }
    return v;
}

// Input channel `c` of the chunk at the quad's 4 pixels (zero in the padding and past the chunk).
fn load_channel(qd: Quad, c: u32) -> vec4<f32> {
    var v = vec4<f32>(0.0);
    if (c < cp_u[pz()].work.y) {
        let cs = i32(c) * cp_u[pz()].xs.y;
        if (VIN) {
            return x4[u32(qd.xoff.x + cs) / 4u];
        }
        for (var j = 0u; j < four(); j = j + 1u) {
            if (qd.inside[j]) {
                v[j] = x[u32(qd.xoff[j] + cs)];
            }
        }
    }
    return v;
}

// How this dispatch's window starts (MODE, or the uniform's word where MODE is 3).
fn mode() -> u32 {
    if (MODE == 3u) {
        return cp_u[pz()].finish.y;
    }
    return MODE;
}

// The finished value of one output element: v + (bias or what earlier chunks wrote), then
// ReLU on the last chunk. `b` is the bias of its output channel, `prev` the output's value.
fn finish(v: vec4<f32>, b: vec4<f32>, prev: vec4<f32>) -> vec4<f32> {
    var o = v;
    if (mode() == 1u) {
        o = o + b;
    } else if (mode() == 2u) {
        o = o + prev;
    }
    return select(o, relu4(o), cp_u[pz()].finish.x != 0u);
}

// Writes one vec4 word of output (y4[at]), or one element (y[at]), finished as `finish` says.
fn put4(at: u32, v: vec4<f32>, b: vec4<f32>) {
    var prev = vec4<f32>(0.0);
    if (mode() == 2u) {
        prev = y4[at];
    }
    y4[at] = finish(v, b, prev);
}

fn put1(at: u32, v: f32, b: f32) {
    var prev = 0.0;
    if (mode() == 2u) {
        prev = y[at];
    }
    y[at] = finish(vec4<f32>(v), vec4<f32>(b), vec4<f32>(prev)).x;
}

// The bias of output channels k .. k+3 of the window (0 where the mode is not 1 or past the
// window), read once per output quad, not at every store.
fn bias4(k: u32) -> vec4<f32> {
    return vec4<f32>(bias_at(k), bias_at(k + 1u), bias_at(k + 2u), bias_at(k + 3u));
}

// The bias's element offset for the invocation's batch matrix, past `base.z`: 0 for the
// convolutions (one bias for every image); matmul_blocked.wgsl sets it per batch matrix.
var<private> bias_batch: i32 = 0;

fn bias_at(k: u32) -> f32 {
    if (mode() != 1u || k >= cp_u[pz()].work.z) {
        return 0.0;
    }
    return bias[u32(cp_u[pz()].base.z + bias_batch + i32(k) * cp_u[pz()].base.w)];
}

// Writes output channel `k` of the window at the quad's 4 pixels (`v` is a vec4 over pixels).
fn store_channel(qd: Quad, k: u32, v: vec4<f32>) {
    if (k >= cp_u[pz()].work.z) {
        return;
    }
    let ks = i32(k) * cp_u[pz()].ys.y;
    let b = vec4<f32>(bias_at(k));
    if (VOUT) {
        // A vec4 quad lies in one image row: all its pixels exist or none does.
        if (qd.valid.x) {
            put4(u32(qd.yoff.x + ks) / 4u, v, b);
        }
        return;
    }
    for (var j = 0u; j < four(); j = j + 1u) {
        if (qd.valid[j]) {
            put1(u32(qd.yoff[j] + ks), v[j], b.x);
        }
    }
}

// Writes output channels k .. k+3 of the window at pixel j of the quad (`v` is a vec4 over
// output channels, `b` their `bias4`).
fn store_pixel(qd: Quad, j: u32, k: u32, v: vec4<f32>, b: vec4<f32>) {
    if (!qd.valid[j]) {
        return;
    }
    if (VOUT) {
        put4(u32(qd.yoff[j] + i32(k)) / 4u, v, b);
        return;
    }
    for (var t = 0u; t < four(); t = t + 1u) {
        if (k + t < cp_u[pz()].work.z) {
            put1(u32(qd.yoff[j] + i32(k + t) * cp_u[pz()].ys.y), v[t], b[t]);
        }
    }
}
