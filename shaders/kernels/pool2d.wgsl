// Windowed ops on the (n, c) planes of a [N, C, H, W] input read in place through its strides:
// max / average pooling, adaptive max / average pooling and bilinear resampling. The family
// (FAMILY) and the element type (DT) are override constants, the rest is in the uniform:
// lavapipe runs every branch of a shader under masks, so one pipeline for every mode ran all
// the modes' code for each output (40 times slower). Each invocation computes the outputs of
// p.base.z consecutive 32-bit words of the dense output (in its memory order: NCHW or NHWC),
// so float16 and bfloat16 results are stored as whole words without atomics; values are read
// as f32 (cast.wgsl), accumulated in f32 and rounded once at the store. Max modes also write
// each maximum's h * W + w (int32) when asked; NaN wins (the last NaN of a window, as
// PyTorch's CPU kernel).

override WG: u32 = 64u;
// 0: max, 1: average, 2: adaptive max, 3: adaptive average, 4: bilinear (the MODE_* codes).
override FAMILY: u32 = 0u;
// The element type's code (DT_F32, DT_F16, DT_BF16).
override DT: u32 = 0u;

struct PoolParams {
    // Input strides (n, c, h, w) in elements.
    xs: vec4<i32>,
    // (C, H, W, output elements).
    geo: vec4<u32>,
    // (OH, OW, channels-last output, element type code: DT's).
    dims: vec4<u32>,
    // (kh, kw, sh, sw).
    win: vec4<i32>,
    // (ph, pw, dh, dw).
    pad: vec4<i32>,
    // (mode, count_include_pad, divisor override or 0, write indices).
    mode: vec4<u32>,
    // (row scale, column scale, align_corners, -) of bilinear resampling.
    scale: vec4<f32>,
    // (input offset in elements within the binding, output words, words per invocation, -).
    base: vec4<u32>,
}

const MODE_MAX: u32 = 0u;
const MODE_AVG: u32 = 1u;
const MODE_ADAPTIVE_MAX: u32 = 2u;
const MODE_ADAPTIVE_AVG: u32 = 3u;
const MODE_BILINEAR: u32 = 4u;

@group(0) @binding(0) var<uniform> p_u: array<PoolParams, 1>;

fn pz() -> u32 {
    return uniform_index(p_u[0].geo.x);
}
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;
@group(0) @binding(3) var<storage, read_write> idx: array<i32>;

fn load(e: i32) -> f32 {
    let t = DT;
    let i = u32(e);
    if (t == DT_F32) {
        return bitcast<f32>(src[i]);
    }
    let h = (src[i >> 1u] >> ((i & 1u) * 16u)) & 0xffffu;
    return bitcast<f32>(float_to_f32(t, h));
}

fn is_nan(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
}

// The window of output o along one axis: (first, end, step, divisor extent).
fn span(axis: u32, o: i32, size: i32, outs: i32) -> vec4<i32> {
    let mode = FAMILY;
    if (mode == MODE_ADAPTIVE_MAX || mode == MODE_ADAPTIVE_AVG) {
        let s = (o * size) / outs;
        let e = ((o + 1) * size + outs - 1) / outs;
        return vec4<i32>(s, e, 1, e - s);
    }
    let k = p_u[pz()].win[axis];
    let s = o * p_u[pz()].win[2u + axis] - p_u[pz()].pad[axis];
    if (mode == MODE_AVG) {
        let e = min(s + k, size + p_u[pz()].pad[axis]);
        return vec4<i32>(max(s, 0), min(e, size), 1, e - s);
    }
    let d = p_u[pz()].pad[2u + axis];
    let e = min(s + (k - 1) * d + 1, size);
    var f = s;
    if (f < 0) {
        f = f + ((-f + d - 1) / d) * d;
    }
    return vec4<i32>(f, e, d, 0);
}

// Bilinear taps of output o along one axis: (i0, i1) and (l0, l1).
fn taps(scale: f32, o: u32, size: u32) -> vec4<f32> {
    var real: f32;
    if (p_u[pz()].scale.z != 0.0) {
        real = scale * f32(o);
    } else {
        real = max(scale * (f32(o) + 0.5) - 0.5, 0.0);
    }
    let i0 = min(u32(real), size - 1u);
    var i1 = i0;
    if (i0 < size - 1u) {
        i1 = i0 + 1u;
    }
    let l1 = real - f32(i0);
    return vec4<f32>(f32(i0), f32(i1), 1.0 - l1, l1);
}

// An output's coordinates.
struct Pos {
    n: u32,
    c: u32,
    oh: u32,
    ow: u32,
}

// The coordinates of output element e (in the output's memory order: NCHW or NHWC).
fn pos_of(e: u32) -> Pos {
    let C = p_u[pz()].geo.x;
    let OH = p_u[pz()].dims.x;
    let OW = p_u[pz()].dims.y;
    if (p_u[pz()].dims.z != 0u) {
        let t = e / C;
        let u = t / OW;
        return Pos(u / OH, e - t * C, u % OH, t - u * OW);
    }
    let t = e / OW;
    let u = t / OH;
    return Pos(u / C, u % C, t - u * OH, e - t * OW);
}

// The next output in memory order (no division: one pass computes a run of outputs).
fn next(q: Pos) -> Pos {
    var r = q;
    if (p_u[pz()].dims.z != 0u) {
        r.c = r.c + 1u;
        if (r.c == p_u[pz()].geo.x) {
            r.c = 0u;
            r.ow = r.ow + 1u;
            if (r.ow == p_u[pz()].dims.y) {
                r.ow = 0u;
                r.oh = r.oh + 1u;
                if (r.oh == p_u[pz()].dims.x) {
                    r.oh = 0u;
                    r.n = r.n + 1u;
                }
            }
        }
    } else {
        r.ow = r.ow + 1u;
        if (r.ow == p_u[pz()].dims.y) {
            r.ow = 0u;
            r.oh = r.oh + 1u;
            if (r.oh == p_u[pz()].dims.x) {
                r.oh = 0u;
                r.c = r.c + 1u;
                if (r.c == p_u[pz()].geo.x) {
                    r.c = 0u;
                    r.n = r.n + 1u;
                }
            }
        }
    }
    return r;
}

// Output q (element e in memory order): its value; writes its index when asked.
fn one(q: Pos, e: u32) -> f32 {
    let H = i32(p_u[pz()].geo.y);
    let W = i32(p_u[pz()].geo.z);
    let OH = p_u[pz()].dims.x;
    let OW = p_u[pz()].dims.y;
    let n = q.n;
    let c = q.c;
    let oh = q.oh;
    let ow = q.ow;
    let plane = i32(p_u[pz()].base.x) + i32(n) * p_u[pz()].xs.x + i32(c) * p_u[pz()].xs.y;
    let hs = p_u[pz()].xs.z;
    let ws = p_u[pz()].xs.w;
    let mode = FAMILY;
    if (mode == MODE_BILINEAR) {
        let th = taps(p_u[pz()].scale.x, oh, u32(H));
        let tw = taps(p_u[pz()].scale.y, ow, u32(W));
        let r0 = plane + i32(th.x) * hs;
        let r1 = plane + i32(th.y) * hs;
        let c0 = i32(tw.x) * ws;
        let c1 = i32(tw.y) * ws;
        return th.z * (tw.z * load(r0 + c0) + tw.w * load(r0 + c1)) + th.w * (tw.z * load(r1 + c0) + tw.w * load(r1 + c1));
    }
    let rs = span(0u, i32(oh), H, i32(OH));
    let cs = span(1u, i32(ow), W, i32(OW));
    if (mode == MODE_MAX || mode == MODE_ADAPTIVE_MAX) {
        var best = bitcast<f32>(0xff800000u);
        var at = rs.x * W + cs.x;
        for (var r = rs.x; r < rs.y; r = r + rs.z) {
            let row = plane + r * hs;
            for (var q = cs.x; q < cs.y; q = q + cs.z) {
                let v = load(row + q * ws);
                if (v > best || is_nan(v)) {
                    best = v;
                    at = r * W + q;
                }
            }
        }
        if (p_u[pz()].mode.w != 0u) {
            idx[e] = at;
        }
        return best;
    }
    if (rs.x >= rs.y || cs.x >= cs.y) {
        return 0.0;
    }
    var sum = 0.0;
    for (var r = rs.x; r < rs.y; r = r + 1) {
        let row = plane + r * hs;
        for (var q = cs.x; q < cs.y; q = q + 1) {
            sum = sum + load(row + q * ws);
        }
    }
    var divisor: i32;
    if (p_u[pz()].mode.z != 0u) {
        divisor = i32(p_u[pz()].mode.z);
    } else if (mode == MODE_AVG && p_u[pz()].mode.y != 0u) {
        divisor = rs.w * cs.w;
    } else {
        divisor = (rs.y - rs.x) * (cs.y - cs.x);
    }
    return sum / f32(divisor);
}

// A workgroup takes WG * p.base.z consecutive output words, each invocation p.base.z
// consecutive ones (one f32, or two 16-bit results, per word), finding the first output's
// coordinates by division and the others by counting.
@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let per = p_u[pz()].base.z;
    let first = ((wid.y * nwg.x + wid.x) * WG + lid) * per;
    let words = p_u[pz()].base.y;
    if (first >= words) {
        return;
    }
    let total = p_u[pz()].geo.w;
    var e = first;
    if (DT != DT_F32) {
        e = first * 2u;
    }
    var q = pos_of(e);
    for (var k = 0u; k < per; k = k + 1u) {
        let word = first + k;
        if (word >= words) {
            return;
        }
        if (DT == DT_F32) {
            dst[word] = bitcast<u32>(one(q, e));
            q = next(q);
            e = e + 1u;
        } else {
            let lo = f32_to_float(DT, bitcast<u32>(one(q, e))) & 0xffffu;
            q = next(q);
            var hi = 0u;
            if (e + 1u < total) {
                hi = f32_to_float(DT, bitcast<u32>(one(q, e + 1u))) & 0xffffu;
            }
            q = next(q);
            e = e + 2u;
            dst[word] = lo | (hi << 16u);
        }
    }
}
