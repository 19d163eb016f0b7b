// Shared by the depthwise kernels that hold register blocks of pixels x 4 channels (NHWC
// orientation: conv2d_depthwise_rows.wgsl, conv2d_depthwise_tall.wgsl): their uniform,
// bindings, the input load of 4 channels at a pixel (zero in the padding) and the output
// store with bias and ReLU. The weights are packed by the host as [tap][K rounded up to 4], so
// that a tap's 4 channels are one vec4 load.

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
    // Strips of 8 pixels per output row; blocks of TALL output rows per output column
    // (conv2d_depthwise_tall.wgsl); -, -.
    strips: vec4<u32>,
    // x = 1: plus the bias; y = 1: ReLU after (kernels/conv/common.rs: `finish`).
    finish: vec4<u32>,
}

// 4 consecutive channels of the input are one aligned vec4 word (K == C).
override VIN: bool = false;
// 4 consecutive channels of the output are one aligned vec4 word.
override VOUT: bool = false;
override WG: u32 = 64u;

// Bindings 1 and 3-6: conv_io.wgsl.
@group(0) @binding(0) var<uniform> rp_u: array<RowsParams, 1>;

fn pz() -> u32 {
    return uniform_index(rp_u[0].geo.x);
}
@group(0) @binding(2) var<storage, read> wp: array<vec4<f32>>;

// The input of channels k0 .. k0+3 at (row offset `at`, column ix): zero outside the image.
fn ld(at: i32, ix: i32, k0: u32) -> vec4<f32> {
    if (ix < 0 || u32(ix) >= rp_u[pz()].geo.y) {
        return vec4<f32>(0.0);
    }
    return ld_inside(at, ix, k0);
}

// `ld` of a column the caller knows lies in the image (0 <= ix < W).
fn ld_inside(at: i32, ix: i32, k0: u32) -> vec4<f32> {
    let p = at + ix * rp_u[pz()].xs.w;
    if (VIN) {
        return x4_at(u32(p + i32(k0)));
    }
    var v = vec4<f32>(0.0);
    for (var j = 0u; j < 4u; j = j + 1u) {
        if (k0 + j < rp_u[pz()].work.z) {
            v[j] = x_at(u32(p + i32((k0 + j) / rp_u[pz()].work.y) * rp_u[pz()].xs.y));
        }
    }
    return v;
}

fn bias_at(k: u32) -> f32 {
    if (rp_u[pz()].finish.x != 1u || k >= rp_u[pz()].work.z) {
        return 0.0;
    }
    return bias_elem(u32(rp_u[pz()].base.w + i32(k) * rp_u[pz()].base.z));
}

fn put(n: u32, oy: u32, ox: u32, k0: u32, v: vec4<f32>, b: vec4<f32>) {
    if (ox >= rp_u[pz()].geo.w) {
        return;
    }
    var o = v;
    if (rp_u[pz()].finish.x == 1u) {
        o = o + b;
    }
    if (rp_u[pz()].finish.y != 0u) {
        o = relu4(o);
    }
    let at = rp_u[pz()].base.y + i32(n) * rp_u[pz()].ys.x + i32(oy) * rp_u[pz()].ys.z + i32(ox) * rp_u[pz()].ys.w + i32(k0) * rp_u[pz()].ys.y;
    if (VOUT) {
        y4_store(u32(at), o);
        return;
    }
    for (var j = 0u; j < 4u; j = j + 1u) {
        if (k0 + j < rp_u[pz()].work.z) {
            y_store(u32(at + i32(j) * rp_u[pz()].ys.y), o[j]);
        }
    }
}

