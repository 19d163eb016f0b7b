// How the implicit-GEMM convolution (conv2d_gemm.wgsl, conv2d_gemm_sum.wgsl) reads and writes
// float32 operands: conv_io.wgsl's bindings as they are. Its twin for float16 and bfloat16,
// conv_gemm_io16.wgsl, defines the same functions; the kernels touch their operands only
// through them. Element indices are within the bound windows.

@group(0) @binding(7) var<storage, read> res: array<f32>;

fn x_at(i: u32) -> f32 {
    return x[i];
}

// Elements i .. i+3 (i a multiple of 4).
fn x4_at(i: u32) -> vec4<f32> {
    return x4[i / 4u];
}

fn bias_elem(i: u32) -> f32 {
    return bias[i];
}

fn res_elem(i: u32) -> f32 {
    return res[i];
}

// A value rounded to the output's type (float32: as it is).
fn y_round(v: vec4<f32>) -> vec4<f32> {
    return v;
}

fn y_store(i: u32, v: f32) {
    y[i] = v;
}

// Elements i .. i+3 of the output (i a multiple of 4).
fn y4_store(i: u32, v: vec4<f32>) {
    y4[i / 4u] = v;
}

// Split-K: partial word w (4 f32 sums), stored by the slices (binding 6) and read by the sum
// (binding 5).
fn partial_store(w: u32, v: vec4<f32>) {
    y4[w] = v;
}

fn partial_at(w: u32) -> vec4<f32> {
    return x4[w];
}
