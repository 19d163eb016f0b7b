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
