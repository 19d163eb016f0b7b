// The implicit-GEMM convolutions' uniform, the specializations they share and the output's
// index formula: conv2d_gemm.wgsl and conv2d_gemm_sum.wgsl (with conv_gemm.wgsl) and the
// tensor-core conv2d_coop.wgsl.

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
    // (conv2d_coop.wgsl: f16 elements per packed row, Kp)
    red: vec4<u32>,
    // Element offsets within the bound windows: input at image n0, output at image n0, bias;
    // then the bias stride.
    base: vec4<i32>,
    // Output pixels in this dispatch, tiles along the pixels, tiles along the channels,
    // workgroups in all (tiles along pixels x along channels x groups x slices; for
    // conv2d_gemm_sum.wgsl, invocations in all: groups x pixels x channel quads).
    work: vec4<u32>,
    // RESID: the residual's element index minus the output's bound-window index of the same
    // element (the residual has the output's strides); then, conv2d_gemm.wgsl's weight read
    // where it lies, its element offset (-1: the packed rows), its stride along the output
    // channels and along the reduction (unused by conv2d_gemm_sum.wgsl and conv2d_coop.wgsl).
    res: vec4<i32>,
    // SPLIT: slices S of the reduction, reduction steps per slice (a multiple of BK), rows of a
    // (group, slice)'s partial tile block (the pixel tiles x 64), vec4 words per partial row
    // (the channel tiles x 16). Partial word ((group * S + s) * rows + m) * words + k / 4 holds
    // slice s's sums of pixel m at channels k .. k+3.
    split: vec4<u32>,
    // 1 / (C/groups), 1 / kw, 1 / (kh * kw) as f32, the reciprocals `tap_of`
    // (conv_gemm_taps.wgsl) divides the reduction index through; then 0.
    inv: vec4<f32>,
}

// The orientation: lanes along channels and the reduction as (ky, kx, c) (NHWC), else
// along pixels and (c, ky, kx) (NCHW).
override CHANNELS: bool = false;
// 0: start from zero; 1: start from the bias.
override MODE: u32 = 0u;
override RELU: bool = false;
// Whether the epilogue adds a residual (the output's shape and strides) before the
// ReLU: relu(conv + bias + residual), ResNet's block.
override RESID: bool = false;
// Whether the reduction index is decomposed by integer division (conv_gemm_taps.wgsl's
// `tap_of`): the host sets it where R, and the steps of a tile past it, reach 2^20
// (kernels/conv/common.rs, `long_reduction`); shorter reductions divide through a float
// reciprocal in a third of the instructions.
override LONG_R: bool = false;
// Whether B is the weight where it lies (`res.yzw`: conv2d_gemm.wgsl's lanes along the
// reduction; conv2d_coop.wgsl's [group][k][r] run), else the host's packed rows. An override,
// not the uniform: each form then loads straight into the registers the next slice is staged
// from, where a run-time choice between them made the compiler copy the loaded words at the
// merge, waiting for the loads (RADV, 2026-11-29), and the tensor-core kernel's fragment loads
// need control flow that naga can prove uniform.
override IN_PLACE: bool = false;

@group(0) @binding(0) var<uniform> gp_u: array<GemmParams, 1>;

fn pz() -> u32 {
    return uniform_index(gp_u[0].geo.x);
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
