// What the implicit-GEMM convolution reads and writes beyond conv_io16.wgsl in its 16-bit form
// (conv2d_gemm16, conv2d_gemm_sum16): the residual, bound as u32 words of two elements, and
// split-K's f32 partial sums through the vec2 words of bindings 5 and 6. The twin of
// conv_gemm_io.wgsl.

@group(0) @binding(7) var<storage, read> res: array<u32>;

fn res_elem(i: u32) -> f32 {
    return half_at(res[i >> 1u], i);
}

// Split-K: partial word w (4 f32 sums), stored by the slices and read by the sum.
fn partial_store(w: u32, v: vec4<f32>) {
    let u = bitcast<vec4<u32>>(v);
    y4[2u * w] = u.xy;
    y4[2u * w + 1u] = u.zw;
}

fn partial_at(w: u32) -> vec4<f32> {
    return bitcast<vec4<f32>>(vec4<u32>(x4[2u * w], x4[2u * w + 1u]));
}

// The GEMM's fetches as loaded (gemm_engine.wgsl's GemmRaw, decoded by conv2d_gemm.wgsl's
// gemm_decode_a / _b): the words that hold the 16-bit elements and which half; an x4 word's 4
// elements as its two words (then two zeros), decoded together.

fn x_raw(i: u32) -> vec2<u32> {
    return vec2<u32>(x[i >> 1u], i & 1u);
}

fn x4_raw(i: u32) -> vec4<u32> {
    return vec4<u32>(x4[i / 4u], 0u, 0u);
}

fn decode_word(w: u32, s: u32) -> f32 {
    return half_at(w, s);
}

fn decode_x4(w: vec4<u32>) -> vec4<f32> {
    return halves(w.xy);
}
