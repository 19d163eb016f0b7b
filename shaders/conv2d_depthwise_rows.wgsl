// Depthwise convolution (groups == C), NHWC orientation, register-blocked along rows: each
// invocation computes 4 output channels (one vec4) x 8 consecutive output pixels of one row,
// held as 8 named accumulators. With unit stride and dilation (SLIDE) the 8 input columns under
// tap kx are kept in 8 named registers and slide by one column per tap, so each input vec4 is
// loaded once per kernel row instead of once per tap. The weights are packed by the host as
// [tap][K rounded up to 4] so that a tap's 4 channels are one vec4 load. The 16 vec4 values
// are named, not an array: CPU adapters' compilers do not unroll loops, and a GPU's keeps them
// in registers (80 VGPRs on RADV, no spills: a candidate on every adapter).

struct RowsParams {
    // Input strides (n, c, h, w), output strides (n, k, oh, ow), in elements.
    xs: vec4<i32>,
    ys: vec4<i32>,
    // h, w, oh, ow
    geo: vec4<u32>,
    // sh, sw, ph, pw
    conv: vec4<i32>,
    // kh, kw, dh, dw
    taps: vec4<i32>,
    // Element offsets within the bound windows: input, output, -, bias; then the bias stride.
    base: vec4<i32>,
    // Invocations in this dispatch, K / C, K, vec4 words per packed weight row.
    work: vec4<u32>,
    // Strips of 8 pixels per output row, -, -, -.
    strips: vec4<u32>,
}

override MODE: u32 = 0u;
override RELU: bool = false;
// 4 consecutive channels of the input are one aligned vec4 word (K == C).
override VIN: bool = false;
// 4 consecutive channels of the output are one aligned vec4 word.
override VOUT: bool = false;
// Unit stride and dilation along the row: the input columns slide one per tap.
override SLIDE: bool = false;
override WG: u32 = 64u;

@group(0) @binding(0) var<uniform> rp: RowsParams;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> wp: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
@group(0) @binding(5) var<storage, read> x4: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> y4: array<vec4<f32>>;

// The input of channels k0 .. k0+3 at (row offset `at`, column ix): zero outside the image.
fn ld(at: i32, ix: i32, k0: u32) -> vec4<f32> {
    if (ix < 0 || u32(ix) >= rp.geo.y) {
        return vec4<f32>(0.0);
    }
    let p = at + ix * rp.xs.w;
    if (VIN) {
        return x4[u32(p + i32(k0)) / 4u];
    }
    var v = vec4<f32>(0.0);
    for (var j = 0u; j < 4u; j = j + 1u) {
        if (k0 + j < rp.work.z) {
            v[j] = x[u32(p + i32((k0 + j) / rp.work.y) * rp.xs.y)];
        }
    }
    return v;
}

fn bias_at(k: u32) -> f32 {
    if (MODE != 1u || k >= rp.work.z) {
        return 0.0;
    }
    return bias[u32(rp.base.w + i32(k) * rp.base.z)];
}

fn put(n: u32, oy: u32, ox: u32, k0: u32, v: vec4<f32>, b: vec4<f32>) {
    if (ox >= rp.geo.w) {
        return;
    }
    var o = v;
    if (MODE == 1u) {
        o = o + b;
    }
    if (RELU) {
        o = max(o, vec4<f32>(0.0));
    }
    let at = rp.base.y + i32(n) * rp.ys.x + i32(oy) * rp.ys.z + i32(ox) * rp.ys.w + i32(k0) * rp.ys.y;
    if (VOUT) {
        y4[u32(at) / 4u] = o;
        return;
    }
    for (var j = 0u; j < 4u; j = j + 1u) {
        if (k0 + j < rp.work.z) {
            y[u32(at + i32(j) * rp.ys.y)] = o[j];
        }
    }
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let u = gid.x + gid.y * nwg.x * WG;
    if (u >= rp.work.x) {
        return;
    }
    // u = ((n * OH + oy) * strips + strip) * quads + kq: neighbouring invocations take
    // neighbouring channel quads of one strip.
    let kq = u % rp.work.w;
    let s = u / rp.work.w;
    let strip = s % rp.strips.x;
    let row = s / rp.strips.x;
    let oy = row % rp.geo.z;
    let n = row / rp.geo.z;
    let k0 = 4u * kq;
    let ox0 = 8u * strip;
    let ix0 = i32(ox0) * rp.conv.y - rp.conv.w;
    let sx = rp.conv.y;
    let dx = rp.taps.w;
    var a0 = vec4<f32>(0.0);
    var a1 = vec4<f32>(0.0);
    var a2 = vec4<f32>(0.0);
    var a3 = vec4<f32>(0.0);
    var a4 = vec4<f32>(0.0);
    var a5 = vec4<f32>(0.0);
    var a6 = vec4<f32>(0.0);
    var a7 = vec4<f32>(0.0);
    for (var ky = 0; ky < rp.taps.x; ky = ky + 1) {
        let iy = i32(oy) * rp.conv.x - rp.conv.z + ky * rp.taps.z;
        if (iy < 0 || u32(iy) >= rp.geo.x) {
            continue;
        }
        let at = rp.base.x + i32(n) * rp.xs.x + iy * rp.xs.z;
        let wrow = u32(ky * rp.taps.y) * rp.work.w + kq;
        if (SLIDE) {
            var v0 = ld(at, ix0, k0);
            var v1 = ld(at, ix0 + 1, k0);
            var v2 = ld(at, ix0 + 2, k0);
            var v3 = ld(at, ix0 + 3, k0);
            var v4 = ld(at, ix0 + 4, k0);
            var v5 = ld(at, ix0 + 5, k0);
            var v6 = ld(at, ix0 + 6, k0);
            var v7 = ld(at, ix0 + 7, k0);
            for (var kx = 0; kx < rp.taps.y; kx = kx + 1) {
                let w = wp[wrow + u32(kx) * rp.work.w];
                a0 = a0 + w * v0;
                a1 = a1 + w * v1;
                a2 = a2 + w * v2;
                a3 = a3 + w * v3;
                a4 = a4 + w * v4;
                a5 = a5 + w * v5;
                a6 = a6 + w * v6;
                a7 = a7 + w * v7;
                v0 = v1;
                v1 = v2;
                v2 = v3;
                v3 = v4;
                v4 = v5;
                v5 = v6;
                v6 = v7;
                v7 = ld(at, ix0 + 8 + kx, k0);
            }
        } else {
            for (var kx = 0; kx < rp.taps.y; kx = kx + 1) {
                let w = wp[wrow + u32(kx) * rp.work.w];
                let c = ix0 + kx * dx;
                a0 = a0 + w * ld(at, c, k0);
                a1 = a1 + w * ld(at, c + sx, k0);
                a2 = a2 + w * ld(at, c + 2 * sx, k0);
                a3 = a3 + w * ld(at, c + 3 * sx, k0);
                a4 = a4 + w * ld(at, c + 4 * sx, k0);
                a5 = a5 + w * ld(at, c + 5 * sx, k0);
                a6 = a6 + w * ld(at, c + 6 * sx, k0);
                a7 = a7 + w * ld(at, c + 7 * sx, k0);
            }
        }
    }
    let b = vec4<f32>(bias_at(k0), bias_at(k0 + 1u), bias_at(k0 + 2u), bias_at(k0 + 3u));
    put(n, oy, ox0, k0, a0, b);
    put(n, oy, ox0 + 1u, k0, a1, b);
    put(n, oy, ox0 + 2u, k0, a2, b);
    put(n, oy, ox0 + 3u, k0, a3, b);
    put(n, oy, ox0 + 4u, k0, a4, b);
    put(n, oy, ox0 + 5u, k0, a5, b);
    put(n, oy, ox0 + 6u, k0, a6, b);
    put(n, oy, ox0 + 7u, k0, a7, b);
}
