// What the matrix-product kernels (matmul_gemm.wgsl, matmul_vec.wgsl) share: their uniform, the
// operands bound as 32-bit words (float32 one per word; float16 and bfloat16 two per word, loaded
// packed: no SHADER_F16), the f32 output, and the epilogue act(alpha * acc + beta * C).
// Needs the generated `dtypes` prelude first.

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
    // matrix rows move as vec4 words (float32, unit stride along k, rows and start 4-aligned),
    // bit 4 its vector too (the same conditions); bits 8.. the matvec's lanes per row.
    epi: vec4<u32>,
    // Split-K (matmul_gemm.wgsl under SPLIT, matmul_gemm_sum.wgsl): slices S of the reduction,
    // steps per slice (a multiple of 16), rows of a (batch, slice)'s partial block (the tiles
    // along m x 64), floats per partial row (the tiles along n x 64). Partial float
    // ((z * S + s) * rows + m) * cols + n holds slice s's sum of output (z, m, n).
    split: vec4<u32>,
}

@group(0) @binding(0) var<uniform> mp_u: array<MatmulParams, 1>;

fn pz() -> u32 {
    return uniform_index(mp_u[0].dims.x);
}
@group(0) @binding(1) var<storage, read> a: array<u32>;
@group(0) @binding(2) var<storage, read> b: array<u32>;
@group(0) @binding(3) var<storage, read> c: array<u32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
// A's and B's windows again as vec4 words (the matrix-vector kernel's float32 rows, flag bit 3).
@group(0) @binding(5) var<storage, read> a4: array<vec4<u32>>;
@group(0) @binding(6) var<storage, read> b4: array<vec4<u32>>;

// Element i of an operand whose word is w (float32: the word; 16-bit types: its half i & 1).
fn mm_decode(w: u32, i: u32) -> f32 {
    if (mp_u[pz()].dims.w == DT_F32) {
        return bitcast<f32>(w);
    }
    let h = (w >> (16u * (i & 1u))) & 0xffffu;
    if (mp_u[pz()].dims.w == DT_F16) {
        return unpack2x16float(h).x;
    }
    return bitcast<f32>(h << 16u);
}

fn mm_word(i: u32) -> u32 {
    if (mp_u[pz()].dims.w == DT_F32) {
        return i;
    }
    return i >> 1u;
}

fn load_a(i: i32) -> f32 {
    let u = u32(i);
    return mm_decode(a[mm_word(u)], u);
}

fn load_b(i: i32) -> f32 {
    let u = u32(i);
    return mm_decode(b[mm_word(u)], u);
}

fn load_c(i: i32) -> f32 {
    let u = u32(i);
    return mm_decode(c[mm_word(u)], u);
}

// erfc, the Chebyshev fit of src/elementwise/cpu.rs (fractional error below 1.2e-7).
fn mm_erfc(x: f32) -> f32 {
    let z = abs(x);
    let t = 1.0 / (1.0 + 0.5 * z);
    let p = -z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
    let r = t * exp(p);
    return select(2.0 - r, r, x >= 0.0);
}

// act(alpha * acc + beta * C[ci]); C is read only when flag bit 0 says so (beta != 0).
fn mm_finish(acc: f32, ci: i32) -> f32 {
    var v = bitcast<f32>(mp_u[pz()].epi.x) * acc;
    if ((mp_u[pz()].epi.w & 1u) != 0u) {
        v = v + bitcast<f32>(mp_u[pz()].epi.y) * load_c(ci);
    }
    if (mp_u[pz()].epi.z == 1u) {
        // As Op::Relu: a NaN stays (its bits tested: WGSL leaves max() of NaN open).
        let nan = (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
        v = select(0.0, v, v > 0.0 || nan);
    } else if (mp_u[pz()].epi.z == 2u) {
        v = 0.5 * v * mm_erfc(-v * 0.70710678118654752);
    }
    return v;
}
