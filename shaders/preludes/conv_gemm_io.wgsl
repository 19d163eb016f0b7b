// What the implicit-GEMM convolution (conv2d_gemm.wgsl, conv2d_gemm_sum.wgsl) reads and writes
// beyond conv_io.wgsl's operands in its float32 form: the residual (the output's shape and
// strides) and split-K's partial sums. Its 16-bit twin, conv_gemm_io16.wgsl, defines the same
// functions.

@group(0) @binding(7) var<storage, read> res: array<f32>;

fn res_elem(i: u32) -> f32 {
    return res[i];
}

// Split-K: partial word w (4 f32 sums), stored by the slices (binding 6) and read by the sum
// (binding 5).
fn partial_store(w: u32, v: vec4<f32>) {
    y4[w] = v;
}

fn partial_at(w: u32) -> vec4<f32> {
    return x4[w];
}

// The GEMM's fetches as loaded (gemm_engine.wgsl's GemmRaw, decoded by conv2d_gemm.wgsl's
// gemm_decode_a / _b): float32 words, decoded by a bitcast (the halves, the 16-bit twin's, go
// unused).

fn x_raw(i: u32) -> vec2<u32> {
    return vec2<u32>(bitcast<u32>(x[i]), 0u);
}

fn x4_raw(i: u32) -> vec4<u32> {
    return bitcast<vec4<u32>>(x4[i / 4u]);
}

fn decode_word(w: u32, s: u32) -> f32 {
    return bitcast<f32>(w);
}

fn decode_x4(w: vec4<u32>) -> vec4<f32> {
    return bitcast<vec4<f32>>(w);
}
