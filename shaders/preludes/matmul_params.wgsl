// The uniform of every matrix-product kernel (matmul_gemm.wgsl, matmul_gemm_sum.wgsl,
// matmul_vec.wgsl, matmul_coop.wgsl): `MatmulParams` (its Rust twin in src/kernels/matmul/mod.rs).

struct MatmulParams {
    // m, n, k, the operands' element type (DT_*).
    dims: vec4<u32>,
    // GEMM: tiles along m, tiles along n; matvec: row groups, 0. Then the inner batch size b1
    // and the workgroups in all (batch index z = z0 * b1 + z1).
    work: vec4<u32>,
    // Element strides of A (m, k, batch z0, batch z1), B (k, n, z0, z1), C and the output
    // (m, n, z0, z1).
    sa: vec4<i32>,
    sb: vec4<i32>,
    sc: vec4<i32>,
    so: vec4<i32>,
    // Element offsets of A, B, C and the output within their bound windows.
    base: vec4<i32>,
    // alpha and beta (f32 bits), the activation (0 none, 1 relu, 2 gelu), flags: bit 0 C is
    // read, bit 1 A staged along k, bit 2 B staged along k, bit 3 the matrix-vector kernel's
    // matrix rows move as 16-byte words (4 float32 or 8 16-bit elements; unit stride along k,
    // rows and start word-aligned),
    // bit 4 its vector too (the same conditions); bits 8.. the matvec's lanes per row.
    epi: vec4<u32>,
    // Split-K (matmul_gemm.wgsl under SPLIT, matmul_gemm_sum.wgsl): slices S of the reduction,
    // steps per slice (a multiple of 16), rows of a (batch, slice)'s partial block (the tiles
    // along m x 64), floats per partial row (the tiles along n x 64). Partial float
    // ((z * S + s) * rows + m) * cols + n holds slice s's sum of output (z, m, n).
    split: vec4<u32>,
}

// The GEMM kernels' specializations (matmul_gemm.wgsl; declared here, before the engine's
// workgroup arrays): operands of float32 (the decode below a bitcast, so no load is waited for
// where it is issued), and A and B staged along k (flag bits 1 and 2, compiled in, so that
// each staging form loads straight into the registers the next slice is staged from).
override F32_IN: bool = false;
override A_STEPS: bool = false;
override B_STEPS: bool = false;

@group(0) @binding(0) var<uniform> mp_u: array<MatmulParams, 1>;

fn pz() -> u32 {
    return uniform_index(mp_u[0].dims.x);
}
