// The tiled implicit-GEMM convolution's bindings, specializations and epilogue, shared by its
// two kernels: conv2d_gemm.wgsl (the tiles; under SPLIT, one slice of the reduction each, their
// partial sums stored as they are) and conv2d_gemm_sum.wgsl (a split call's partial sums added
// in slice order, then the epilogue).

// (The uniform, CHANNELS, MODE, RELU, RESID and out_offset: conv_gemm_params.wgsl; the
// residual is binding 7; SPLIT: gemm_engine.wgsl.)

// Whether 4 consecutive input channels (NHWC) are one aligned vec4 word.
override VIN: bool = false;
// Whether an invocation's 4 outputs along its fast dim (pixels for NCHW, channels for NHWC)
// are one aligned vec4 word.
override VOUT: bool = false;

// Bindings 1 and 3-7 and how elements are read and written: conv_io.wgsl and conv_gemm_io.wgsl
// (float32), or conv_io16.wgsl and conv_gemm_io16.wgsl (16-bit types). The weight as words: the
// packed rows' f32 bits (for both), or the weight's own elements where the kernel reads it in
// place (decoded by the io prelude's `w_elem`).
@group(0) @binding(2) var<storage, read> wp: array<vec4<u32>>;

// The residual at the output's window indices `at` + i * `step` for the lanes `live` marks
// (0 elsewhere, and everywhere without RESID).
fn residual4(at: i32, step: i32, live: vec4<bool>) -> vec4<f32> {
    var r = vec4<f32>(0.0);
    if (RESID) {
        for (var i = 0u; i < 4u; i = i + 1u) {
            if (live[i]) {
                r[i] = res_elem(u32(at + gp_u[pz()].res.x + i32(i) * step));
            }
        }
    }
    return r;
}

// The epilogue: (acc + bias) + residual, then ReLU; each step rounded as the separate ops
// would round it (the convolution's result to the output's type before the residual is added;
// the store rounds the rest), so the fused result equals conv, add_ and relu_ bit for bit.
fn finish(v: vec4<f32>, b: vec4<f32>, r: vec4<f32>) -> vec4<f32> {
    var o = v;
    if (MODE == 1u) {
        o = o + b;
    }
    if (RESID) {
        o = y_round(o) + r;
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
    return bias_elem(u32(gp_u[pz()].base.z + i32(group * gp_u[pz()].red.y + k) * gp_u[pz()].base.w));
}

// Pixel m's output channels k .. k+3 of `group` (those below K/groups): the epilogue applied to v
// with the channels' bias b, stored as one vec4 word under CHANNELS and VOUT, else element by
// element.
fn store_channels(m: u32, group: u32, k: u32, v: vec4<f32>, b: vec4<f32>) {
    let at = out_offset(m) + i32(group * gp_u[pz()].red.y + k) * gp_u[pz()].ys.y;
    let live = vec4<u32>(k) + vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(gp_u[pz()].red.y);
    let o = finish(v, b, residual4(at, gp_u[pz()].ys.y, live));
    if (CHANNELS && VOUT) {
        y4_store(u32(at), o);
    } else {
        for (var j = 0u; j < 4u; j = j + 1u) {
            if (live[j]) {
                y_store(u32(at + i32(j) * gp_u[pz()].ys.y), o[j]);
            }
        }
    }
}
