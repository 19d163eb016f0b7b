// The window kernels' uniform and family codes (pool2d.wgsl, pool2d_vec.wgsl, pool2d_rows.wgsl):
// one struct for the three, whose Rust twin is `kernels::pool::PoolParams`. Its members as
// pool2d.wgsl reads them; where the vec kernel (pool2d_vec.wgsl) or the rows kernel
// (pool2d_rows.wgsl) read one otherwise, that is said after "vec:" or "rows:".

override WG: u32 = 64u;
// 0: max, 1: average, 2: adaptive max, 3: adaptive average, 4: bilinear (the MODE_* codes).
override FAMILY: u32 = 0u;

struct PoolParams {
    // Input strides (n, c, h, w) in elements. rows: (n, c, h) in words, -.
    xs: vec4<i32>,
    // (C, H, W, output elements). vec: (C, H, W, channel groups: ceil(C / 4)). rows: (C, H, W,
    // input words a row).
    geo: vec4<u32>,
    // (OH, OW, channels-last output, element type code: DT's). vec: (OH, OW, pixel blocks per
    // image, pixels per invocation). rows: (OH, output words a row, runs a row, output words a
    // run).
    dims: vec4<u32>,
    // (kh, kw, sh, sw). rows: max pooling's rows (kh, sh, ph, dh).
    win: vec4<i32>,
    // (ph, pw, dh, dw). rows: (pw of max pooling, average pooling's divisor, -, -).
    pad: vec4<i32>,
    // (mode, count_include_pad, divisor override or 0, write indices). vec: mode.x unread.
    // rows: unread.
    mode: vec4<u32>,
    // (row scale, column scale, align_corners, -) of bilinear resampling. rows: (row scale, -,
    // -, -).
    scale: vec4<f32>,
    // (input offset in elements within the binding, output words, words per invocation, -).
    // vec: (input offset in elements, invocations, -, -). rows: (input offset in words,
    // invocations, -, -).
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

// Which lanes of v are NaN.
fn nan4(v: vec4<f32>) -> vec4<bool> {
    return (bitcast<vec4<u32>>(v) & vec4<u32>(0x7fffffffu)) > vec4<u32>(0x7f800000u);
}
