// The output of the matrix-product kernels in float32 (binding 4): what matmul_gemm.wgsl,
// matmul_gemm_sum.wgsl, matmul_vec.wgsl and matmul_coop.wgsl store through. Its twin,
// matmul_out16.wgsl, defines the same functions for an output of the operands' 16-bit type.

@group(0) @binding(4) var<storage, read_write> y: array<f32>;

// Output element i (an index into binding 4) set to v.
fn mm_store(i: u32, v: f32) {
    y[i] = v;
}

// Output elements i .. i+3 (consecutive) set to v.
fn mm_store4(i: u32, v: vec4<f32>) {
    y[i] = v.x;
    y[i + 1u] = v.y;
    y[i + 2u] = v.z;
    y[i + 3u] = v.w;
}

// Output elements i and j set to a and b (two neighbours of the tensor-core kernel's
// epilogue: j is i plus the output's column stride).
fn mm_store2(i: u32, j: u32, a: f32, b: f32) {
    y[i] = a;
    y[j] = b;
}

// Split-K: partial sum i of the partial buffer (bound as binding 4) set to v.
fn mm_partial(i: u32, v: f32) {
    y[i] = v;
}
