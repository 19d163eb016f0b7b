// The tiled implicit-GEMM convolution's uniform, specializations and epilogue, shared by its
// two kernels: conv2d_gemm.wgsl (the tiles; under SPLIT, one slice of the reduction each, their
// partial sums stored as they are) and conv2d_gemm_sum.wgsl (a split call's partial sums added
// in slice order, then the epilogue).

struct GemmParams {
    // Input strides (n, c, h, w), output strides (n, k, oh, ow), in elements.
    xs: vec4<i32>,
    ys: vec4<i32>,
    // h, w, oh, ow
    geo: vec4<u32>,
    // sh, sw, ph, pw
    conv: vec4<i32>,
    // kh, kw, dh, dw
    taps: vec4<i32>,
    // C/groups, K/groups, R = C/groups * kh * kw, vec4 words per packed weight row
    red: vec4<u32>,
    // Element offsets within the bound windows: input at image n0, output at image n0, bias;
    // then the bias stride.
    base: vec4<i32>,
    // Output pixels in this dispatch, tiles along the pixels, tiles along the channels,
    // workgroups in all (tiles along pixels x along channels x groups x slices; for
    // conv2d_gemm_sum.wgsl, invocations in all: groups x pixels x channel quads).
    work: vec4<u32>,
    // RESID: the residual's element index minus the output's bound-window index of the same
    // element (the residual has the output's strides); then three unused words.
    res: vec4<i32>,
    // SPLIT: slices S of the reduction, reduction steps per slice (a multiple of BK), rows of a
    // (group, slice)'s partial tile block (the pixel tiles x 64), vec4 words per partial row
    // (the channel tiles x 16). Partial word ((group * S + s) * rows + m) * words + k / 4 holds
    // slice s's sums of pixel m at channels k .. k+3.
    split: vec4<u32>,
}

override CHANNELS: bool = false;
// 0: start from zero; 1: start from the bias.
override MODE: u32 = 0u;
override RELU: bool = false;
// Whether the epilogue adds a residual (binding 7, the output's shape and strides) before the
// ReLU: relu(conv + bias + residual), ResNet's block.
override RESID: bool = false;
// Whether 4 consecutive input channels (NHWC) are one aligned vec4 word.
override VIN: bool = false;
// Whether an invocation's 4 outputs along its fast dim (pixels for NCHW, channels for NHWC)
// are one aligned vec4 word.
override VOUT: bool = false;
// conv2d_gemm.wgsl: each workgroup sums one slice of the reduction and stores its tile's
// partial sums (binding 6, the partial buffer) without the epilogue.
override SPLIT: bool = false;

// Bindings 1 and 3-6: conv_io.wgsl.
@group(0) @binding(0) var<uniform> gp_u: array<GemmParams, 1>;

fn pz() -> u32 {
    return uniform_index(gp_u[0].geo.x);
}
@group(0) @binding(2) var<storage, read> wp: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read> res: array<f32>;

// The residual at the output's window indices `at` + i * `step` for the lanes `live` marks
// (0 elsewhere, and everywhere without RESID).
fn residual4(at: i32, step: i32, live: vec4<bool>) -> vec4<f32> {
    var r = vec4<f32>(0.0);
    if (RESID) {
        for (var i = 0u; i < 4u; i = i + 1u) {
            if (live[i]) {
                r[i] = res[u32(at + gp_u[pz()].res.x + i32(i) * step)];
            }
        }
    }
    return r;
}

// The epilogue: (acc + bias) + residual, then ReLU; each step rounded to f32 as the separate
// ops would round it, so the fused result equals conv, add_ and relu_ bit for bit.
fn finish(v: vec4<f32>, b: vec4<f32>, r: vec4<f32>) -> vec4<f32> {
    var o = v;
    if (MODE == 1u) {
        o = o + b;
    }
    if (RESID) {
        o = o + r;
    }
    if (RELU) {
        o = relu4(o);
    }
    return o;
}

// The bias of output channel k of group `group`.
fn bias_at(group: u32, k: u32) -> f32 {
    if (MODE != 1u || k >= gp_u[pz()].red.y) {
        return 0.0;
    }
    return bias[u32(gp_u[pz()].base.z + i32(group * gp_u[pz()].red.y + k) * gp_u[pz()].base.w)];
}

// The output element offset of pixel m (channel 0 of the window).
fn out_offset(m: u32) -> i32 {
    let plane = gp_u[pz()].geo.z * gp_u[pz()].geo.w;
    let n = m / plane;
    let rem = m - n * plane;
    let oy = rem / gp_u[pz()].geo.w;
    let ox = rem - oy * gp_u[pz()].geo.w;
    return gp_u[pz()].base.y + i32(n) * gp_u[pz()].ys.x + i32(oy) * gp_u[pz()].ys.z + i32(ox) * gp_u[pz()].ys.w;
}

// Pixel m's output channels k .. k+3 of `group` (those below K/groups): the epilogue applied to v
// with the channels' bias b, stored as one vec4 word under CHANNELS and VOUT, else element by
// element.
fn store_channels(m: u32, group: u32, k: u32, v: vec4<f32>, b: vec4<f32>) {
    let at = out_offset(m) + i32(group * gp_u[pz()].red.y + k) * gp_u[pz()].ys.y;
    let live = vec4<u32>(k) + vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(gp_u[pz()].red.y);
    let o = finish(v, b, residual4(at, gp_u[pz()].ys.y, live));
    if (CHANNELS && VOUT) {
        y4[u32(at) / 4u] = o;
    } else {
        for (var j = 0u; j < 4u; j = j + 1u) {
            if (live[j]) {
                y[u32(at + i32(j) * gp_u[pz()].ys.y)] = o[j];
            }
        }
    }
}
