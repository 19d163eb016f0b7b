// What the SIMT matrix-product kernels (matmul_gemm.wgsl, matmul_vec.wgsl) share beside their
// uniform (preludes/matmul_params.wgsl) and epilogue (preludes/matmul_epilogue.wgsl): A and B
// bound as 32-bit words (float32 one per word; float16 and bfloat16 two per word, loaded
// packed: no SHADER_F16), decoded by the epilogue prelude's `mm_decode`.

@group(0) @binding(1) var<storage, read> a: array<u32>;
@group(0) @binding(2) var<storage, read> b: array<u32>;
// A's and B's windows again as vec4 words (the matrix-vector kernel's float32 rows, flag bit 3).
@group(0) @binding(5) var<storage, read> a4: array<vec4<u32>>;
@group(0) @binding(6) var<storage, read> b4: array<vec4<u32>>;

fn load_a(i: i32) -> f32 {
    let u = u32(i);
    return mm_decode(a[mm_word(u)], u);
}

fn load_b(i: i32) -> f32 {
    let u = u32(i);
    return mm_decode(b[mm_word(u)], u);
}
