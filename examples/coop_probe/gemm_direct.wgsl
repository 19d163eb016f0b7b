// Tiled f16 GEMMs on cooperative matrices (16 x 16 x 16, f32 accumulators), C = A B, all
// row-major with row pitches lda, ldb, ldc, every fragment loaded straight from the storage
// buffers (staging through workgroup memory ran 2.4-8x slower on an NVIDIA H200): variants timed
// against each other by examples/coop_probe.rs; each needs m and n multiples of its tile and k
// of 64. Names: d<R>x<C>_<wgr>x<wgc>_<mode>: R x C accumulators a subgroup, wgr x wgc
// subgroups a workgroup; mode plain (load, multiply), k32 / k64 (two / four steps' loads, then
// their products), pf (the next step's fragments loaded before this step's products), const
// (pitches of 4096 compiled in), m8 (pitches rounded to multiples of 8 in the shader), fn
// (fragments through helper functions that branch on an override), i32 (signed address
// arithmetic), crate (fn, i32 and clamped fragment rows together, as an early version of the
// crate's kernel had them).
enable f16;
enable wgpu_cooperative_matrix;

struct Gemm {
    m: u32,
    n: u32,
    k: u32,
    lda: u32,
    ldb: u32,
    ldc: u32,
    pad0: u32,
    pad1: u32,
}

@group(0) @binding(0) var<uniform> g: Gemm;
@group(0) @binding(1) var<storage, read> ga: array<f16>;
@group(0) @binding(2) var<storage, read> gb: array<f16>;
@group(0) @binding(3) var<storage, read_write> gc: array<f32>;

override A_ROWS: bool = true;
override B_ROWS: bool = true;

fn frag_a(at: u32, pitch: u32) -> coop_mat16x16<f16, A> {
    if (A_ROWS) {
        return coopLoadT<coop_mat16x16<f16, A>>(&ga[at], pitch);
    }
    return coopLoad<coop_mat16x16<f16, A>>(&ga[at], pitch);
}

fn frag_b(at: u32, pitch: u32) -> coop_mat16x16<f16, B> {
    if (B_ROWS) {
        return coopLoadT<coop_mat16x16<f16, B>>(&gb[at], pitch);
    }
    return coopLoad<coop_mat16x16<f16, B>>(&gb[at], pitch);
}

@compute @workgroup_size(128)
fn d4x4_2x2_plain(@builtin(workgroup_id) wid: vec3<u32>, @builtin(subgroup_id) sid: u32) {
    let m0 = wid.y * 128u;
    let n0 = wid.x * 128u;
    let wm = (sid / 2u) * 64u;
    let wn = (sid % 2u) * 64u;
    let lda = g.lda;
    let ldb = g.ldb;
    var c00 = coop_mat16x16<f32, C>();
    var c01 = coop_mat16x16<f32, C>();
    var c02 = coop_mat16x16<f32, C>();
    var c03 = coop_mat16x16<f32, C>();
    var c10 = coop_mat16x16<f32, C>();
    var c11 = coop_mat16x16<f32, C>();
    var c12 = coop_mat16x16<f32, C>();
    var c13 = coop_mat16x16<f32, C>();
    var c20 = coop_mat16x16<f32, C>();
    var c21 = coop_mat16x16<f32, C>();
    var c22 = coop_mat16x16<f32, C>();
    var c23 = coop_mat16x16<f32, C>();
    var c30 = coop_mat16x16<f32, C>();
    var c31 = coop_mat16x16<f32, C>();
    var c32 = coop_mat16x16<f32, C>();
    var c33 = coop_mat16x16<f32, C>();

    for (var k0 = 0u; k0 < g.k; k0 = k0 + 16u) {
        let a0 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 0u) * lda + k0], lda);
        let a1 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 16u) * lda + k0], lda);
        let a2 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 32u) * lda + k0], lda);
        let a3 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 48u) * lda + k0], lda);
        let b0 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k0) * ldb + n0 + wn + 0u], ldb);
        let b1 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k0) * ldb + n0 + wn + 16u], ldb);
        let b2 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k0) * ldb + n0 + wn + 32u], ldb);
        let b3 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k0) * ldb + n0 + wn + 48u], ldb);
        c00 = coopMultiplyAdd(a0, b0, c00);
        c01 = coopMultiplyAdd(a0, b1, c01);
        c02 = coopMultiplyAdd(a0, b2, c02);
        c03 = coopMultiplyAdd(a0, b3, c03);
        c10 = coopMultiplyAdd(a1, b0, c10);
        c11 = coopMultiplyAdd(a1, b1, c11);
        c12 = coopMultiplyAdd(a1, b2, c12);
        c13 = coopMultiplyAdd(a1, b3, c13);
        c20 = coopMultiplyAdd(a2, b0, c20);
        c21 = coopMultiplyAdd(a2, b1, c21);
        c22 = coopMultiplyAdd(a2, b2, c22);
        c23 = coopMultiplyAdd(a2, b3, c23);
        c30 = coopMultiplyAdd(a3, b0, c30);
        c31 = coopMultiplyAdd(a3, b1, c31);
        c32 = coopMultiplyAdd(a3, b2, c32);
        c33 = coopMultiplyAdd(a3, b3, c33);
    }
    let ldc = g.ldc;
    let o00 = (m0 + wm + 0u) * ldc + n0 + wn + 0u;
    coopStoreT(c00, &gc[o00], ldc);
    let o01 = (m0 + wm + 0u) * ldc + n0 + wn + 16u;
    coopStoreT(c01, &gc[o01], ldc);
    let o02 = (m0 + wm + 0u) * ldc + n0 + wn + 32u;
    coopStoreT(c02, &gc[o02], ldc);
    let o03 = (m0 + wm + 0u) * ldc + n0 + wn + 48u;
    coopStoreT(c03, &gc[o03], ldc);
    let o10 = (m0 + wm + 16u) * ldc + n0 + wn + 0u;
    coopStoreT(c10, &gc[o10], ldc);
    let o11 = (m0 + wm + 16u) * ldc + n0 + wn + 16u;
    coopStoreT(c11, &gc[o11], ldc);
    let o12 = (m0 + wm + 16u) * ldc + n0 + wn + 32u;
    coopStoreT(c12, &gc[o12], ldc);
    let o13 = (m0 + wm + 16u) * ldc + n0 + wn + 48u;
    coopStoreT(c13, &gc[o13], ldc);
    let o20 = (m0 + wm + 32u) * ldc + n0 + wn + 0u;
    coopStoreT(c20, &gc[o20], ldc);
    let o21 = (m0 + wm + 32u) * ldc + n0 + wn + 16u;
    coopStoreT(c21, &gc[o21], ldc);
    let o22 = (m0 + wm + 32u) * ldc + n0 + wn + 32u;
    coopStoreT(c22, &gc[o22], ldc);
    let o23 = (m0 + wm + 32u) * ldc + n0 + wn + 48u;
    coopStoreT(c23, &gc[o23], ldc);
    let o30 = (m0 + wm + 48u) * ldc + n0 + wn + 0u;
    coopStoreT(c30, &gc[o30], ldc);
    let o31 = (m0 + wm + 48u) * ldc + n0 + wn + 16u;
    coopStoreT(c31, &gc[o31], ldc);
    let o32 = (m0 + wm + 48u) * ldc + n0 + wn + 32u;
    coopStoreT(c32, &gc[o32], ldc);
    let o33 = (m0 + wm + 48u) * ldc + n0 + wn + 48u;
    coopStoreT(c33, &gc[o33], ldc);
}

@compute @workgroup_size(128)
fn d4x4_2x2_k32(@builtin(workgroup_id) wid: vec3<u32>, @builtin(subgroup_id) sid: u32) {
    let m0 = wid.y * 128u;
    let n0 = wid.x * 128u;
    let wm = (sid / 2u) * 64u;
    let wn = (sid % 2u) * 64u;
    let lda = g.lda;
    let ldb = g.ldb;
    var c00 = coop_mat16x16<f32, C>();
    var c01 = coop_mat16x16<f32, C>();
    var c02 = coop_mat16x16<f32, C>();
    var c03 = coop_mat16x16<f32, C>();
    var c10 = coop_mat16x16<f32, C>();
    var c11 = coop_mat16x16<f32, C>();
    var c12 = coop_mat16x16<f32, C>();
    var c13 = coop_mat16x16<f32, C>();
    var c20 = coop_mat16x16<f32, C>();
    var c21 = coop_mat16x16<f32, C>();
    var c22 = coop_mat16x16<f32, C>();
    var c23 = coop_mat16x16<f32, C>();
    var c30 = coop_mat16x16<f32, C>();
    var c31 = coop_mat16x16<f32, C>();
    var c32 = coop_mat16x16<f32, C>();
    var c33 = coop_mat16x16<f32, C>();

    for (var k0 = 0u; k0 < g.k; k0 = k0 + 32u) {
        let a0 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 0u) * lda + k0], lda);
        let a1 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 16u) * lda + k0], lda);
        let a2 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 32u) * lda + k0], lda);
        let a3 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 48u) * lda + k0], lda);
        let b0 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k0) * ldb + n0 + wn + 0u], ldb);
        let b1 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k0) * ldb + n0 + wn + 16u], ldb);
        let b2 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k0) * ldb + n0 + wn + 32u], ldb);
        let b3 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k0) * ldb + n0 + wn + 48u], ldb);
        let k1 = k0 + 16u;
        let a0n = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 0u) * lda + k1], lda);
        let a1n = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 16u) * lda + k1], lda);
        let a2n = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 32u) * lda + k1], lda);
        let a3n = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 48u) * lda + k1], lda);
        let b0n = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k1) * ldb + n0 + wn + 0u], ldb);
        let b1n = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k1) * ldb + n0 + wn + 16u], ldb);
        let b2n = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k1) * ldb + n0 + wn + 32u], ldb);
        let b3n = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k1) * ldb + n0 + wn + 48u], ldb);
        c00 = coopMultiplyAdd(a0, b0, c00);
        c01 = coopMultiplyAdd(a0, b1, c01);
        c02 = coopMultiplyAdd(a0, b2, c02);
        c03 = coopMultiplyAdd(a0, b3, c03);
        c10 = coopMultiplyAdd(a1, b0, c10);
        c11 = coopMultiplyAdd(a1, b1, c11);
        c12 = coopMultiplyAdd(a1, b2, c12);
        c13 = coopMultiplyAdd(a1, b3, c13);
        c20 = coopMultiplyAdd(a2, b0, c20);
        c21 = coopMultiplyAdd(a2, b1, c21);
        c22 = coopMultiplyAdd(a2, b2, c22);
        c23 = coopMultiplyAdd(a2, b3, c23);
        c30 = coopMultiplyAdd(a3, b0, c30);
        c31 = coopMultiplyAdd(a3, b1, c31);
        c32 = coopMultiplyAdd(a3, b2, c32);
        c33 = coopMultiplyAdd(a3, b3, c33);
        c00 = coopMultiplyAdd(a0n, b0n, c00);
        c01 = coopMultiplyAdd(a0n, b1n, c01);
        c02 = coopMultiplyAdd(a0n, b2n, c02);
        c03 = coopMultiplyAdd(a0n, b3n, c03);
        c10 = coopMultiplyAdd(a1n, b0n, c10);
        c11 = coopMultiplyAdd(a1n, b1n, c11);
        c12 = coopMultiplyAdd(a1n, b2n, c12);
        c13 = coopMultiplyAdd(a1n, b3n, c13);
        c20 = coopMultiplyAdd(a2n, b0n, c20);
        c21 = coopMultiplyAdd(a2n, b1n, c21);
        c22 = coopMultiplyAdd(a2n, b2n, c22);
        c23 = coopMultiplyAdd(a2n, b3n, c23);
        c30 = coopMultiplyAdd(a3n, b0n, c30);
        c31 = coopMultiplyAdd(a3n, b1n, c31);
        c32 = coopMultiplyAdd(a3n, b2n, c32);
        c33 = coopMultiplyAdd(a3n, b3n, c33);
    }
    let ldc = g.ldc;
    let o00 = (m0 + wm + 0u) * ldc + n0 + wn + 0u;
    coopStoreT(c00, &gc[o00], ldc);
    let o01 = (m0 + wm + 0u) * ldc + n0 + wn + 16u;
    coopStoreT(c01, &gc[o01], ldc);
    let o02 = (m0 + wm + 0u) * ldc + n0 + wn + 32u;
    coopStoreT(c02, &gc[o02], ldc);
    let o03 = (m0 + wm + 0u) * ldc + n0 + wn + 48u;
    coopStoreT(c03, &gc[o03], ldc);
    let o10 = (m0 + wm + 16u) * ldc + n0 + wn + 0u;
    coopStoreT(c10, &gc[o10], ldc);
    let o11 = (m0 + wm + 16u) * ldc + n0 + wn + 16u;
    coopStoreT(c11, &gc[o11], ldc);
    let o12 = (m0 + wm + 16u) * ldc + n0 + wn + 32u;
    coopStoreT(c12, &gc[o12], ldc);
    let o13 = (m0 + wm + 16u) * ldc + n0 + wn + 48u;
    coopStoreT(c13, &gc[o13], ldc);
    let o20 = (m0 + wm + 32u) * ldc + n0 + wn + 0u;
    coopStoreT(c20, &gc[o20], ldc);
    let o21 = (m0 + wm + 32u) * ldc + n0 + wn + 16u;
    coopStoreT(c21, &gc[o21], ldc);
    let o22 = (m0 + wm + 32u) * ldc + n0 + wn + 32u;
    coopStoreT(c22, &gc[o22], ldc);
    let o23 = (m0 + wm + 32u) * ldc + n0 + wn + 48u;
    coopStoreT(c23, &gc[o23], ldc);
    let o30 = (m0 + wm + 48u) * ldc + n0 + wn + 0u;
    coopStoreT(c30, &gc[o30], ldc);
    let o31 = (m0 + wm + 48u) * ldc + n0 + wn + 16u;
    coopStoreT(c31, &gc[o31], ldc);
    let o32 = (m0 + wm + 48u) * ldc + n0 + wn + 32u;
    coopStoreT(c32, &gc[o32], ldc);
    let o33 = (m0 + wm + 48u) * ldc + n0 + wn + 48u;
    coopStoreT(c33, &gc[o33], ldc);
}

@compute @workgroup_size(128)
fn d4x4_2x2_pf(@builtin(workgroup_id) wid: vec3<u32>, @builtin(subgroup_id) sid: u32) {
    let m0 = wid.y * 128u;
    let n0 = wid.x * 128u;
    let wm = (sid / 2u) * 64u;
    let wn = (sid % 2u) * 64u;
    let lda = g.lda;
    let ldb = g.ldb;
    var c00 = coop_mat16x16<f32, C>();
    var c01 = coop_mat16x16<f32, C>();
    var c02 = coop_mat16x16<f32, C>();
    var c03 = coop_mat16x16<f32, C>();
    var c10 = coop_mat16x16<f32, C>();
    var c11 = coop_mat16x16<f32, C>();
    var c12 = coop_mat16x16<f32, C>();
    var c13 = coop_mat16x16<f32, C>();
    var c20 = coop_mat16x16<f32, C>();
    var c21 = coop_mat16x16<f32, C>();
    var c22 = coop_mat16x16<f32, C>();
    var c23 = coop_mat16x16<f32, C>();
    var c30 = coop_mat16x16<f32, C>();
    var c31 = coop_mat16x16<f32, C>();
    var c32 = coop_mat16x16<f32, C>();
    var c33 = coop_mat16x16<f32, C>();

    let kz = 0u;
        var a0 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 0u) * lda + kz], lda);
        var a1 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 16u) * lda + kz], lda);
        var a2 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 32u) * lda + kz], lda);
        var a3 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 48u) * lda + kz], lda);
        var b0 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(kz) * ldb + n0 + wn + 0u], ldb);
        var b1 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(kz) * ldb + n0 + wn + 16u], ldb);
        var b2 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(kz) * ldb + n0 + wn + 32u], ldb);
        var b3 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(kz) * ldb + n0 + wn + 48u], ldb);
    for (var k0 = 0u; k0 < g.k; k0 = k0 + 16u) {
        let k1 = min(k0 + 16u, g.k - 16u);
        let a0n = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 0u) * lda + k1], lda);
        let a1n = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 16u) * lda + k1], lda);
        let a2n = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 32u) * lda + k1], lda);
        let a3n = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 48u) * lda + k1], lda);
        let b0n = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k1) * ldb + n0 + wn + 0u], ldb);
        let b1n = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k1) * ldb + n0 + wn + 16u], ldb);
        let b2n = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k1) * ldb + n0 + wn + 32u], ldb);
        let b3n = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k1) * ldb + n0 + wn + 48u], ldb);
        c00 = coopMultiplyAdd(a0, b0, c00);
        c01 = coopMultiplyAdd(a0, b1, c01);
        c02 = coopMultiplyAdd(a0, b2, c02);
        c03 = coopMultiplyAdd(a0, b3, c03);
        c10 = coopMultiplyAdd(a1, b0, c10);
        c11 = coopMultiplyAdd(a1, b1, c11);
        c12 = coopMultiplyAdd(a1, b2, c12);
        c13 = coopMultiplyAdd(a1, b3, c13);
        c20 = coopMultiplyAdd(a2, b0, c20);
        c21 = coopMultiplyAdd(a2, b1, c21);
        c22 = coopMultiplyAdd(a2, b2, c22);
        c23 = coopMultiplyAdd(a2, b3, c23);
        c30 = coopMultiplyAdd(a3, b0, c30);
        c31 = coopMultiplyAdd(a3, b1, c31);
        c32 = coopMultiplyAdd(a3, b2, c32);
        c33 = coopMultiplyAdd(a3, b3, c33);
        a0 = a0n;
        a1 = a1n;
        a2 = a2n;
        a3 = a3n;
        b0 = b0n;
        b1 = b1n;
        b2 = b2n;
        b3 = b3n;
    }
    let ldc = g.ldc;
    let o00 = (m0 + wm + 0u) * ldc + n0 + wn + 0u;
    coopStoreT(c00, &gc[o00], ldc);
    let o01 = (m0 + wm + 0u) * ldc + n0 + wn + 16u;
    coopStoreT(c01, &gc[o01], ldc);
    let o02 = (m0 + wm + 0u) * ldc + n0 + wn + 32u;
    coopStoreT(c02, &gc[o02], ldc);
    let o03 = (m0 + wm + 0u) * ldc + n0 + wn + 48u;
    coopStoreT(c03, &gc[o03], ldc);
    let o10 = (m0 + wm + 16u) * ldc + n0 + wn + 0u;
    coopStoreT(c10, &gc[o10], ldc);
    let o11 = (m0 + wm + 16u) * ldc + n0 + wn + 16u;
    coopStoreT(c11, &gc[o11], ldc);
    let o12 = (m0 + wm + 16u) * ldc + n0 + wn + 32u;
    coopStoreT(c12, &gc[o12], ldc);
    let o13 = (m0 + wm + 16u) * ldc + n0 + wn + 48u;
    coopStoreT(c13, &gc[o13], ldc);
    let o20 = (m0 + wm + 32u) * ldc + n0 + wn + 0u;
    coopStoreT(c20, &gc[o20], ldc);
    let o21 = (m0 + wm + 32u) * ldc + n0 + wn + 16u;
    coopStoreT(c21, &gc[o21], ldc);
    let o22 = (m0 + wm + 32u) * ldc + n0 + wn + 32u;
    coopStoreT(c22, &gc[o22], ldc);
    let o23 = (m0 + wm + 32u) * ldc + n0 + wn + 48u;
    coopStoreT(c23, &gc[o23], ldc);
    let o30 = (m0 + wm + 48u) * ldc + n0 + wn + 0u;
    coopStoreT(c30, &gc[o30], ldc);
    let o31 = (m0 + wm + 48u) * ldc + n0 + wn + 16u;
    coopStoreT(c31, &gc[o31], ldc);
    let o32 = (m0 + wm + 48u) * ldc + n0 + wn + 32u;
    coopStoreT(c32, &gc[o32], ldc);
    let o33 = (m0 + wm + 48u) * ldc + n0 + wn + 48u;
    coopStoreT(c33, &gc[o33], ldc);
}

@compute @workgroup_size(256)
fn d2x4_4x2_plain(@builtin(workgroup_id) wid: vec3<u32>, @builtin(subgroup_id) sid: u32) {
    let m0 = wid.y * 128u;
    let n0 = wid.x * 128u;
    let wm = (sid / 2u) * 32u;
    let wn = (sid % 2u) * 64u;
    let lda = g.lda;
    let ldb = g.ldb;
    var c00 = coop_mat16x16<f32, C>();
    var c01 = coop_mat16x16<f32, C>();
    var c02 = coop_mat16x16<f32, C>();
    var c03 = coop_mat16x16<f32, C>();
    var c10 = coop_mat16x16<f32, C>();
    var c11 = coop_mat16x16<f32, C>();
    var c12 = coop_mat16x16<f32, C>();
    var c13 = coop_mat16x16<f32, C>();

    for (var k0 = 0u; k0 < g.k; k0 = k0 + 16u) {
        let a0 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 0u) * lda + k0], lda);
        let a1 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 16u) * lda + k0], lda);
        let b0 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k0) * ldb + n0 + wn + 0u], ldb);
        let b1 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k0) * ldb + n0 + wn + 16u], ldb);
        let b2 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k0) * ldb + n0 + wn + 32u], ldb);
        let b3 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k0) * ldb + n0 + wn + 48u], ldb);
        c00 = coopMultiplyAdd(a0, b0, c00);
        c01 = coopMultiplyAdd(a0, b1, c01);
        c02 = coopMultiplyAdd(a0, b2, c02);
        c03 = coopMultiplyAdd(a0, b3, c03);
        c10 = coopMultiplyAdd(a1, b0, c10);
        c11 = coopMultiplyAdd(a1, b1, c11);
        c12 = coopMultiplyAdd(a1, b2, c12);
        c13 = coopMultiplyAdd(a1, b3, c13);
    }
    let ldc = g.ldc;
    let o00 = (m0 + wm + 0u) * ldc + n0 + wn + 0u;
    coopStoreT(c00, &gc[o00], ldc);
    let o01 = (m0 + wm + 0u) * ldc + n0 + wn + 16u;
    coopStoreT(c01, &gc[o01], ldc);
    let o02 = (m0 + wm + 0u) * ldc + n0 + wn + 32u;
    coopStoreT(c02, &gc[o02], ldc);
    let o03 = (m0 + wm + 0u) * ldc + n0 + wn + 48u;
    coopStoreT(c03, &gc[o03], ldc);
    let o10 = (m0 + wm + 16u) * ldc + n0 + wn + 0u;
    coopStoreT(c10, &gc[o10], ldc);
    let o11 = (m0 + wm + 16u) * ldc + n0 + wn + 16u;
    coopStoreT(c11, &gc[o11], ldc);
    let o12 = (m0 + wm + 16u) * ldc + n0 + wn + 32u;
    coopStoreT(c12, &gc[o12], ldc);
    let o13 = (m0 + wm + 16u) * ldc + n0 + wn + 48u;
    coopStoreT(c13, &gc[o13], ldc);
}

@compute @workgroup_size(256)
fn d2x4_4x2_pf(@builtin(workgroup_id) wid: vec3<u32>, @builtin(subgroup_id) sid: u32) {
    let m0 = wid.y * 128u;
    let n0 = wid.x * 128u;
    let wm = (sid / 2u) * 32u;
    let wn = (sid % 2u) * 64u;
    let lda = g.lda;
    let ldb = g.ldb;
    var c00 = coop_mat16x16<f32, C>();
    var c01 = coop_mat16x16<f32, C>();
    var c02 = coop_mat16x16<f32, C>();
    var c03 = coop_mat16x16<f32, C>();
    var c10 = coop_mat16x16<f32, C>();
    var c11 = coop_mat16x16<f32, C>();
    var c12 = coop_mat16x16<f32, C>();
    var c13 = coop_mat16x16<f32, C>();

    let kz = 0u;
        var a0 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 0u) * lda + kz], lda);
        var a1 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 16u) * lda + kz], lda);
        var b0 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(kz) * ldb + n0 + wn + 0u], ldb);
        var b1 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(kz) * ldb + n0 + wn + 16u], ldb);
        var b2 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(kz) * ldb + n0 + wn + 32u], ldb);
        var b3 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(kz) * ldb + n0 + wn + 48u], ldb);
    for (var k0 = 0u; k0 < g.k; k0 = k0 + 16u) {
        let k1 = min(k0 + 16u, g.k - 16u);
        let a0n = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 0u) * lda + k1], lda);
        let a1n = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 16u) * lda + k1], lda);
        let b0n = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k1) * ldb + n0 + wn + 0u], ldb);
        let b1n = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k1) * ldb + n0 + wn + 16u], ldb);
        let b2n = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k1) * ldb + n0 + wn + 32u], ldb);
        let b3n = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k1) * ldb + n0 + wn + 48u], ldb);
        c00 = coopMultiplyAdd(a0, b0, c00);
        c01 = coopMultiplyAdd(a0, b1, c01);
        c02 = coopMultiplyAdd(a0, b2, c02);
        c03 = coopMultiplyAdd(a0, b3, c03);
        c10 = coopMultiplyAdd(a1, b0, c10);
        c11 = coopMultiplyAdd(a1, b1, c11);
        c12 = coopMultiplyAdd(a1, b2, c12);
        c13 = coopMultiplyAdd(a1, b3, c13);
        a0 = a0n;
        a1 = a1n;
        b0 = b0n;
        b1 = b1n;
        b2 = b2n;
        b3 = b3n;
    }
    let ldc = g.ldc;
    let o00 = (m0 + wm + 0u) * ldc + n0 + wn + 0u;
    coopStoreT(c00, &gc[o00], ldc);
    let o01 = (m0 + wm + 0u) * ldc + n0 + wn + 16u;
    coopStoreT(c01, &gc[o01], ldc);
    let o02 = (m0 + wm + 0u) * ldc + n0 + wn + 32u;
    coopStoreT(c02, &gc[o02], ldc);
    let o03 = (m0 + wm + 0u) * ldc + n0 + wn + 48u;
    coopStoreT(c03, &gc[o03], ldc);
    let o10 = (m0 + wm + 16u) * ldc + n0 + wn + 0u;
    coopStoreT(c10, &gc[o10], ldc);
    let o11 = (m0 + wm + 16u) * ldc + n0 + wn + 16u;
    coopStoreT(c11, &gc[o11], ldc);
    let o12 = (m0 + wm + 16u) * ldc + n0 + wn + 32u;
    coopStoreT(c12, &gc[o12], ldc);
    let o13 = (m0 + wm + 16u) * ldc + n0 + wn + 48u;
    coopStoreT(c13, &gc[o13], ldc);
}

@compute @workgroup_size(128)
fn d2x4_2x2_pf(@builtin(workgroup_id) wid: vec3<u32>, @builtin(subgroup_id) sid: u32) {
    let m0 = wid.y * 64u;
    let n0 = wid.x * 128u;
    let wm = (sid / 2u) * 32u;
    let wn = (sid % 2u) * 64u;
    let lda = g.lda;
    let ldb = g.ldb;
    var c00 = coop_mat16x16<f32, C>();
    var c01 = coop_mat16x16<f32, C>();
    var c02 = coop_mat16x16<f32, C>();
    var c03 = coop_mat16x16<f32, C>();
    var c10 = coop_mat16x16<f32, C>();
    var c11 = coop_mat16x16<f32, C>();
    var c12 = coop_mat16x16<f32, C>();
    var c13 = coop_mat16x16<f32, C>();

    let kz = 0u;
        var a0 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 0u) * lda + kz], lda);
        var a1 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 16u) * lda + kz], lda);
        var b0 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(kz) * ldb + n0 + wn + 0u], ldb);
        var b1 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(kz) * ldb + n0 + wn + 16u], ldb);
        var b2 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(kz) * ldb + n0 + wn + 32u], ldb);
        var b3 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(kz) * ldb + n0 + wn + 48u], ldb);
    for (var k0 = 0u; k0 < g.k; k0 = k0 + 16u) {
        let k1 = min(k0 + 16u, g.k - 16u);
        let a0n = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 0u) * lda + k1], lda);
        let a1n = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 16u) * lda + k1], lda);
        let b0n = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k1) * ldb + n0 + wn + 0u], ldb);
        let b1n = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k1) * ldb + n0 + wn + 16u], ldb);
        let b2n = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k1) * ldb + n0 + wn + 32u], ldb);
        let b3n = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k1) * ldb + n0 + wn + 48u], ldb);
        c00 = coopMultiplyAdd(a0, b0, c00);
        c01 = coopMultiplyAdd(a0, b1, c01);
        c02 = coopMultiplyAdd(a0, b2, c02);
        c03 = coopMultiplyAdd(a0, b3, c03);
        c10 = coopMultiplyAdd(a1, b0, c10);
        c11 = coopMultiplyAdd(a1, b1, c11);
        c12 = coopMultiplyAdd(a1, b2, c12);
        c13 = coopMultiplyAdd(a1, b3, c13);
        a0 = a0n;
        a1 = a1n;
        b0 = b0n;
        b1 = b1n;
        b2 = b2n;
        b3 = b3n;
    }
    let ldc = g.ldc;
    let o00 = (m0 + wm + 0u) * ldc + n0 + wn + 0u;
    coopStoreT(c00, &gc[o00], ldc);
    let o01 = (m0 + wm + 0u) * ldc + n0 + wn + 16u;
    coopStoreT(c01, &gc[o01], ldc);
    let o02 = (m0 + wm + 0u) * ldc + n0 + wn + 32u;
    coopStoreT(c02, &gc[o02], ldc);
    let o03 = (m0 + wm + 0u) * ldc + n0 + wn + 48u;
    coopStoreT(c03, &gc[o03], ldc);
    let o10 = (m0 + wm + 16u) * ldc + n0 + wn + 0u;
    coopStoreT(c10, &gc[o10], ldc);
    let o11 = (m0 + wm + 16u) * ldc + n0 + wn + 16u;
    coopStoreT(c11, &gc[o11], ldc);
    let o12 = (m0 + wm + 16u) * ldc + n0 + wn + 32u;
    coopStoreT(c12, &gc[o12], ldc);
    let o13 = (m0 + wm + 16u) * ldc + n0 + wn + 48u;
    coopStoreT(c13, &gc[o13], ldc);
}

@compute @workgroup_size(256)
fn d4x2_2x4_pf(@builtin(workgroup_id) wid: vec3<u32>, @builtin(subgroup_id) sid: u32) {
    let m0 = wid.y * 128u;
    let n0 = wid.x * 128u;
    let wm = (sid / 4u) * 64u;
    let wn = (sid % 4u) * 32u;
    let lda = g.lda;
    let ldb = g.ldb;
    var c00 = coop_mat16x16<f32, C>();
    var c01 = coop_mat16x16<f32, C>();
    var c10 = coop_mat16x16<f32, C>();
    var c11 = coop_mat16x16<f32, C>();
    var c20 = coop_mat16x16<f32, C>();
    var c21 = coop_mat16x16<f32, C>();
    var c30 = coop_mat16x16<f32, C>();
    var c31 = coop_mat16x16<f32, C>();

    let kz = 0u;
        var a0 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 0u) * lda + kz], lda);
        var a1 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 16u) * lda + kz], lda);
        var a2 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 32u) * lda + kz], lda);
        var a3 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 48u) * lda + kz], lda);
        var b0 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(kz) * ldb + n0 + wn + 0u], ldb);
        var b1 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(kz) * ldb + n0 + wn + 16u], ldb);
    for (var k0 = 0u; k0 < g.k; k0 = k0 + 16u) {
        let k1 = min(k0 + 16u, g.k - 16u);
        let a0n = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 0u) * lda + k1], lda);
        let a1n = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 16u) * lda + k1], lda);
        let a2n = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 32u) * lda + k1], lda);
        let a3n = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 48u) * lda + k1], lda);
        let b0n = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k1) * ldb + n0 + wn + 0u], ldb);
        let b1n = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k1) * ldb + n0 + wn + 16u], ldb);
        c00 = coopMultiplyAdd(a0, b0, c00);
        c01 = coopMultiplyAdd(a0, b1, c01);
        c10 = coopMultiplyAdd(a1, b0, c10);
        c11 = coopMultiplyAdd(a1, b1, c11);
        c20 = coopMultiplyAdd(a2, b0, c20);
        c21 = coopMultiplyAdd(a2, b1, c21);
        c30 = coopMultiplyAdd(a3, b0, c30);
        c31 = coopMultiplyAdd(a3, b1, c31);
        a0 = a0n;
        a1 = a1n;
        a2 = a2n;
        a3 = a3n;
        b0 = b0n;
        b1 = b1n;
    }
    let ldc = g.ldc;
    let o00 = (m0 + wm + 0u) * ldc + n0 + wn + 0u;
    coopStoreT(c00, &gc[o00], ldc);
    let o01 = (m0 + wm + 0u) * ldc + n0 + wn + 16u;
    coopStoreT(c01, &gc[o01], ldc);
    let o10 = (m0 + wm + 16u) * ldc + n0 + wn + 0u;
    coopStoreT(c10, &gc[o10], ldc);
    let o11 = (m0 + wm + 16u) * ldc + n0 + wn + 16u;
    coopStoreT(c11, &gc[o11], ldc);
    let o20 = (m0 + wm + 32u) * ldc + n0 + wn + 0u;
    coopStoreT(c20, &gc[o20], ldc);
    let o21 = (m0 + wm + 32u) * ldc + n0 + wn + 16u;
    coopStoreT(c21, &gc[o21], ldc);
    let o30 = (m0 + wm + 48u) * ldc + n0 + wn + 0u;
    coopStoreT(c30, &gc[o30], ldc);
    let o31 = (m0 + wm + 48u) * ldc + n0 + wn + 16u;
    coopStoreT(c31, &gc[o31], ldc);
}

@compute @workgroup_size(256)
fn d4x4_2x4_plain(@builtin(workgroup_id) wid: vec3<u32>, @builtin(subgroup_id) sid: u32) {
    let m0 = wid.y * 128u;
    let n0 = wid.x * 256u;
    let wm = (sid / 4u) * 64u;
    let wn = (sid % 4u) * 64u;
    let lda = g.lda;
    let ldb = g.ldb;
    var c00 = coop_mat16x16<f32, C>();
    var c01 = coop_mat16x16<f32, C>();
    var c02 = coop_mat16x16<f32, C>();
    var c03 = coop_mat16x16<f32, C>();
    var c10 = coop_mat16x16<f32, C>();
    var c11 = coop_mat16x16<f32, C>();
    var c12 = coop_mat16x16<f32, C>();
    var c13 = coop_mat16x16<f32, C>();
    var c20 = coop_mat16x16<f32, C>();
    var c21 = coop_mat16x16<f32, C>();
    var c22 = coop_mat16x16<f32, C>();
    var c23 = coop_mat16x16<f32, C>();
    var c30 = coop_mat16x16<f32, C>();
    var c31 = coop_mat16x16<f32, C>();
    var c32 = coop_mat16x16<f32, C>();
    var c33 = coop_mat16x16<f32, C>();

    for (var k0 = 0u; k0 < g.k; k0 = k0 + 16u) {
        let a0 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 0u) * lda + k0], lda);
        let a1 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 16u) * lda + k0], lda);
        let a2 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 32u) * lda + k0], lda);
        let a3 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 48u) * lda + k0], lda);
        let b0 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k0) * ldb + n0 + wn + 0u], ldb);
        let b1 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k0) * ldb + n0 + wn + 16u], ldb);
        let b2 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k0) * ldb + n0 + wn + 32u], ldb);
        let b3 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k0) * ldb + n0 + wn + 48u], ldb);
        c00 = coopMultiplyAdd(a0, b0, c00);
        c01 = coopMultiplyAdd(a0, b1, c01);
        c02 = coopMultiplyAdd(a0, b2, c02);
        c03 = coopMultiplyAdd(a0, b3, c03);
        c10 = coopMultiplyAdd(a1, b0, c10);
        c11 = coopMultiplyAdd(a1, b1, c11);
        c12 = coopMultiplyAdd(a1, b2, c12);
        c13 = coopMultiplyAdd(a1, b3, c13);
        c20 = coopMultiplyAdd(a2, b0, c20);
        c21 = coopMultiplyAdd(a2, b1, c21);
        c22 = coopMultiplyAdd(a2, b2, c22);
        c23 = coopMultiplyAdd(a2, b3, c23);
        c30 = coopMultiplyAdd(a3, b0, c30);
        c31 = coopMultiplyAdd(a3, b1, c31);
        c32 = coopMultiplyAdd(a3, b2, c32);
        c33 = coopMultiplyAdd(a3, b3, c33);
    }
    let ldc = g.ldc;
    let o00 = (m0 + wm + 0u) * ldc + n0 + wn + 0u;
    coopStoreT(c00, &gc[o00], ldc);
    let o01 = (m0 + wm + 0u) * ldc + n0 + wn + 16u;
    coopStoreT(c01, &gc[o01], ldc);
    let o02 = (m0 + wm + 0u) * ldc + n0 + wn + 32u;
    coopStoreT(c02, &gc[o02], ldc);
    let o03 = (m0 + wm + 0u) * ldc + n0 + wn + 48u;
    coopStoreT(c03, &gc[o03], ldc);
    let o10 = (m0 + wm + 16u) * ldc + n0 + wn + 0u;
    coopStoreT(c10, &gc[o10], ldc);
    let o11 = (m0 + wm + 16u) * ldc + n0 + wn + 16u;
    coopStoreT(c11, &gc[o11], ldc);
    let o12 = (m0 + wm + 16u) * ldc + n0 + wn + 32u;
    coopStoreT(c12, &gc[o12], ldc);
    let o13 = (m0 + wm + 16u) * ldc + n0 + wn + 48u;
    coopStoreT(c13, &gc[o13], ldc);
    let o20 = (m0 + wm + 32u) * ldc + n0 + wn + 0u;
    coopStoreT(c20, &gc[o20], ldc);
    let o21 = (m0 + wm + 32u) * ldc + n0 + wn + 16u;
    coopStoreT(c21, &gc[o21], ldc);
    let o22 = (m0 + wm + 32u) * ldc + n0 + wn + 32u;
    coopStoreT(c22, &gc[o22], ldc);
    let o23 = (m0 + wm + 32u) * ldc + n0 + wn + 48u;
    coopStoreT(c23, &gc[o23], ldc);
    let o30 = (m0 + wm + 48u) * ldc + n0 + wn + 0u;
    coopStoreT(c30, &gc[o30], ldc);
    let o31 = (m0 + wm + 48u) * ldc + n0 + wn + 16u;
    coopStoreT(c31, &gc[o31], ldc);
    let o32 = (m0 + wm + 48u) * ldc + n0 + wn + 32u;
    coopStoreT(c32, &gc[o32], ldc);
    let o33 = (m0 + wm + 48u) * ldc + n0 + wn + 48u;
    coopStoreT(c33, &gc[o33], ldc);
}

@compute @workgroup_size(128)
fn d4x4_2x2_const(@builtin(workgroup_id) wid: vec3<u32>, @builtin(subgroup_id) sid: u32) {
    let m0 = wid.y * 128u;
    let n0 = wid.x * 128u;
    let wm = (sid / 2u) * 64u;
    let wn = (sid % 2u) * 64u;
    let lda = 4096u;
    let ldb = 4096u;
    var c00 = coop_mat16x16<f32, C>();
    var c01 = coop_mat16x16<f32, C>();
    var c02 = coop_mat16x16<f32, C>();
    var c03 = coop_mat16x16<f32, C>();
    var c10 = coop_mat16x16<f32, C>();
    var c11 = coop_mat16x16<f32, C>();
    var c12 = coop_mat16x16<f32, C>();
    var c13 = coop_mat16x16<f32, C>();
    var c20 = coop_mat16x16<f32, C>();
    var c21 = coop_mat16x16<f32, C>();
    var c22 = coop_mat16x16<f32, C>();
    var c23 = coop_mat16x16<f32, C>();
    var c30 = coop_mat16x16<f32, C>();
    var c31 = coop_mat16x16<f32, C>();
    var c32 = coop_mat16x16<f32, C>();
    var c33 = coop_mat16x16<f32, C>();

    for (var k0 = 0u; k0 < g.k; k0 = k0 + 16u) {
        let a0 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 0u) * lda + k0], lda);
        let a1 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 16u) * lda + k0], lda);
        let a2 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 32u) * lda + k0], lda);
        let a3 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 48u) * lda + k0], lda);
        let b0 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k0) * ldb + n0 + wn + 0u], ldb);
        let b1 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k0) * ldb + n0 + wn + 16u], ldb);
        let b2 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k0) * ldb + n0 + wn + 32u], ldb);
        let b3 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k0) * ldb + n0 + wn + 48u], ldb);
        c00 = coopMultiplyAdd(a0, b0, c00);
        c01 = coopMultiplyAdd(a0, b1, c01);
        c02 = coopMultiplyAdd(a0, b2, c02);
        c03 = coopMultiplyAdd(a0, b3, c03);
        c10 = coopMultiplyAdd(a1, b0, c10);
        c11 = coopMultiplyAdd(a1, b1, c11);
        c12 = coopMultiplyAdd(a1, b2, c12);
        c13 = coopMultiplyAdd(a1, b3, c13);
        c20 = coopMultiplyAdd(a2, b0, c20);
        c21 = coopMultiplyAdd(a2, b1, c21);
        c22 = coopMultiplyAdd(a2, b2, c22);
        c23 = coopMultiplyAdd(a2, b3, c23);
        c30 = coopMultiplyAdd(a3, b0, c30);
        c31 = coopMultiplyAdd(a3, b1, c31);
        c32 = coopMultiplyAdd(a3, b2, c32);
        c33 = coopMultiplyAdd(a3, b3, c33);
    }
    let ldc = g.ldc;
    let o00 = (m0 + wm + 0u) * ldc + n0 + wn + 0u;
    coopStoreT(c00, &gc[o00], ldc);
    let o01 = (m0 + wm + 0u) * ldc + n0 + wn + 16u;
    coopStoreT(c01, &gc[o01], ldc);
    let o02 = (m0 + wm + 0u) * ldc + n0 + wn + 32u;
    coopStoreT(c02, &gc[o02], ldc);
    let o03 = (m0 + wm + 0u) * ldc + n0 + wn + 48u;
    coopStoreT(c03, &gc[o03], ldc);
    let o10 = (m0 + wm + 16u) * ldc + n0 + wn + 0u;
    coopStoreT(c10, &gc[o10], ldc);
    let o11 = (m0 + wm + 16u) * ldc + n0 + wn + 16u;
    coopStoreT(c11, &gc[o11], ldc);
    let o12 = (m0 + wm + 16u) * ldc + n0 + wn + 32u;
    coopStoreT(c12, &gc[o12], ldc);
    let o13 = (m0 + wm + 16u) * ldc + n0 + wn + 48u;
    coopStoreT(c13, &gc[o13], ldc);
    let o20 = (m0 + wm + 32u) * ldc + n0 + wn + 0u;
    coopStoreT(c20, &gc[o20], ldc);
    let o21 = (m0 + wm + 32u) * ldc + n0 + wn + 16u;
    coopStoreT(c21, &gc[o21], ldc);
    let o22 = (m0 + wm + 32u) * ldc + n0 + wn + 32u;
    coopStoreT(c22, &gc[o22], ldc);
    let o23 = (m0 + wm + 32u) * ldc + n0 + wn + 48u;
    coopStoreT(c23, &gc[o23], ldc);
    let o30 = (m0 + wm + 48u) * ldc + n0 + wn + 0u;
    coopStoreT(c30, &gc[o30], ldc);
    let o31 = (m0 + wm + 48u) * ldc + n0 + wn + 16u;
    coopStoreT(c31, &gc[o31], ldc);
    let o32 = (m0 + wm + 48u) * ldc + n0 + wn + 32u;
    coopStoreT(c32, &gc[o32], ldc);
    let o33 = (m0 + wm + 48u) * ldc + n0 + wn + 48u;
    coopStoreT(c33, &gc[o33], ldc);
}

@compute @workgroup_size(128)
fn d4x4_2x2_k64(@builtin(workgroup_id) wid: vec3<u32>, @builtin(subgroup_id) sid: u32) {
    let m0 = wid.y * 128u;
    let n0 = wid.x * 128u;
    let wm = (sid / 2u) * 64u;
    let wn = (sid % 2u) * 64u;
    let lda = g.lda;
    let ldb = g.ldb;
    var c00 = coop_mat16x16<f32, C>();
    var c01 = coop_mat16x16<f32, C>();
    var c02 = coop_mat16x16<f32, C>();
    var c03 = coop_mat16x16<f32, C>();
    var c10 = coop_mat16x16<f32, C>();
    var c11 = coop_mat16x16<f32, C>();
    var c12 = coop_mat16x16<f32, C>();
    var c13 = coop_mat16x16<f32, C>();
    var c20 = coop_mat16x16<f32, C>();
    var c21 = coop_mat16x16<f32, C>();
    var c22 = coop_mat16x16<f32, C>();
    var c23 = coop_mat16x16<f32, C>();
    var c30 = coop_mat16x16<f32, C>();
    var c31 = coop_mat16x16<f32, C>();
    var c32 = coop_mat16x16<f32, C>();
    var c33 = coop_mat16x16<f32, C>();

    for (var k0 = 0u; k0 < g.k; k0 = k0 + 64u) {
        let a0 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 0u) * lda + k0], lda);
        let a1 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 16u) * lda + k0], lda);
        let a2 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 32u) * lda + k0], lda);
        let a3 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 48u) * lda + k0], lda);
        let b0 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k0) * ldb + n0 + wn + 0u], ldb);
        let b1 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k0) * ldb + n0 + wn + 16u], ldb);
        let b2 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k0) * ldb + n0 + wn + 32u], ldb);
        let b3 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k0) * ldb + n0 + wn + 48u], ldb);
        let k1 = k0 + 16u;
        let a0n = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 0u) * lda + k1], lda);
        let a1n = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 16u) * lda + k1], lda);
        let a2n = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 32u) * lda + k1], lda);
        let a3n = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 48u) * lda + k1], lda);
        let b0n = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k1) * ldb + n0 + wn + 0u], ldb);
        let b1n = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k1) * ldb + n0 + wn + 16u], ldb);
        let b2n = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k1) * ldb + n0 + wn + 32u], ldb);
        let b3n = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k1) * ldb + n0 + wn + 48u], ldb);
        let k2 = k0 + 32u;
        let a0p = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 0u) * lda + k2], lda);
        let a1p = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 16u) * lda + k2], lda);
        let a2p = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 32u) * lda + k2], lda);
        let a3p = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 48u) * lda + k2], lda);
        let b0p = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k2) * ldb + n0 + wn + 0u], ldb);
        let b1p = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k2) * ldb + n0 + wn + 16u], ldb);
        let b2p = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k2) * ldb + n0 + wn + 32u], ldb);
        let b3p = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k2) * ldb + n0 + wn + 48u], ldb);
        let k3 = k0 + 48u;
        let a0q = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 0u) * lda + k3], lda);
        let a1q = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 16u) * lda + k3], lda);
        let a2q = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 32u) * lda + k3], lda);
        let a3q = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 48u) * lda + k3], lda);
        let b0q = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k3) * ldb + n0 + wn + 0u], ldb);
        let b1q = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k3) * ldb + n0 + wn + 16u], ldb);
        let b2q = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k3) * ldb + n0 + wn + 32u], ldb);
        let b3q = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k3) * ldb + n0 + wn + 48u], ldb);
        c00 = coopMultiplyAdd(a0q, b0q, coopMultiplyAdd(a0p, b0p, coopMultiplyAdd(a0n, b0n, coopMultiplyAdd(a0, b0, c00))));
        c01 = coopMultiplyAdd(a0q, b1q, coopMultiplyAdd(a0p, b1p, coopMultiplyAdd(a0n, b1n, coopMultiplyAdd(a0, b1, c01))));
        c02 = coopMultiplyAdd(a0q, b2q, coopMultiplyAdd(a0p, b2p, coopMultiplyAdd(a0n, b2n, coopMultiplyAdd(a0, b2, c02))));
        c03 = coopMultiplyAdd(a0q, b3q, coopMultiplyAdd(a0p, b3p, coopMultiplyAdd(a0n, b3n, coopMultiplyAdd(a0, b3, c03))));
        c10 = coopMultiplyAdd(a1q, b0q, coopMultiplyAdd(a1p, b0p, coopMultiplyAdd(a1n, b0n, coopMultiplyAdd(a1, b0, c10))));
        c11 = coopMultiplyAdd(a1q, b1q, coopMultiplyAdd(a1p, b1p, coopMultiplyAdd(a1n, b1n, coopMultiplyAdd(a1, b1, c11))));
        c12 = coopMultiplyAdd(a1q, b2q, coopMultiplyAdd(a1p, b2p, coopMultiplyAdd(a1n, b2n, coopMultiplyAdd(a1, b2, c12))));
        c13 = coopMultiplyAdd(a1q, b3q, coopMultiplyAdd(a1p, b3p, coopMultiplyAdd(a1n, b3n, coopMultiplyAdd(a1, b3, c13))));
        c20 = coopMultiplyAdd(a2q, b0q, coopMultiplyAdd(a2p, b0p, coopMultiplyAdd(a2n, b0n, coopMultiplyAdd(a2, b0, c20))));
        c21 = coopMultiplyAdd(a2q, b1q, coopMultiplyAdd(a2p, b1p, coopMultiplyAdd(a2n, b1n, coopMultiplyAdd(a2, b1, c21))));
        c22 = coopMultiplyAdd(a2q, b2q, coopMultiplyAdd(a2p, b2p, coopMultiplyAdd(a2n, b2n, coopMultiplyAdd(a2, b2, c22))));
        c23 = coopMultiplyAdd(a2q, b3q, coopMultiplyAdd(a2p, b3p, coopMultiplyAdd(a2n, b3n, coopMultiplyAdd(a2, b3, c23))));
        c30 = coopMultiplyAdd(a3q, b0q, coopMultiplyAdd(a3p, b0p, coopMultiplyAdd(a3n, b0n, coopMultiplyAdd(a3, b0, c30))));
        c31 = coopMultiplyAdd(a3q, b1q, coopMultiplyAdd(a3p, b1p, coopMultiplyAdd(a3n, b1n, coopMultiplyAdd(a3, b1, c31))));
        c32 = coopMultiplyAdd(a3q, b2q, coopMultiplyAdd(a3p, b2p, coopMultiplyAdd(a3n, b2n, coopMultiplyAdd(a3, b2, c32))));
        c33 = coopMultiplyAdd(a3q, b3q, coopMultiplyAdd(a3p, b3p, coopMultiplyAdd(a3n, b3n, coopMultiplyAdd(a3, b3, c33))));
    }
    let ldc = g.ldc;
    let o00 = (m0 + wm + 0u) * ldc + n0 + wn + 0u;
    coopStoreT(c00, &gc[o00], ldc);
    let o01 = (m0 + wm + 0u) * ldc + n0 + wn + 16u;
    coopStoreT(c01, &gc[o01], ldc);
    let o02 = (m0 + wm + 0u) * ldc + n0 + wn + 32u;
    coopStoreT(c02, &gc[o02], ldc);
    let o03 = (m0 + wm + 0u) * ldc + n0 + wn + 48u;
    coopStoreT(c03, &gc[o03], ldc);
    let o10 = (m0 + wm + 16u) * ldc + n0 + wn + 0u;
    coopStoreT(c10, &gc[o10], ldc);
    let o11 = (m0 + wm + 16u) * ldc + n0 + wn + 16u;
    coopStoreT(c11, &gc[o11], ldc);
    let o12 = (m0 + wm + 16u) * ldc + n0 + wn + 32u;
    coopStoreT(c12, &gc[o12], ldc);
    let o13 = (m0 + wm + 16u) * ldc + n0 + wn + 48u;
    coopStoreT(c13, &gc[o13], ldc);
    let o20 = (m0 + wm + 32u) * ldc + n0 + wn + 0u;
    coopStoreT(c20, &gc[o20], ldc);
    let o21 = (m0 + wm + 32u) * ldc + n0 + wn + 16u;
    coopStoreT(c21, &gc[o21], ldc);
    let o22 = (m0 + wm + 32u) * ldc + n0 + wn + 32u;
    coopStoreT(c22, &gc[o22], ldc);
    let o23 = (m0 + wm + 32u) * ldc + n0 + wn + 48u;
    coopStoreT(c23, &gc[o23], ldc);
    let o30 = (m0 + wm + 48u) * ldc + n0 + wn + 0u;
    coopStoreT(c30, &gc[o30], ldc);
    let o31 = (m0 + wm + 48u) * ldc + n0 + wn + 16u;
    coopStoreT(c31, &gc[o31], ldc);
    let o32 = (m0 + wm + 48u) * ldc + n0 + wn + 32u;
    coopStoreT(c32, &gc[o32], ldc);
    let o33 = (m0 + wm + 48u) * ldc + n0 + wn + 48u;
    coopStoreT(c33, &gc[o33], ldc);
}

@compute @workgroup_size(32)
fn d4x4_1x1_plain(@builtin(workgroup_id) wid: vec3<u32>, @builtin(subgroup_id) sid: u32) {
    let m0 = wid.y * 64u;
    let n0 = wid.x * 64u;
    let wm = (sid / 1u) * 64u;
    let wn = (sid % 1u) * 64u;
    let lda = g.lda;
    let ldb = g.ldb;
    var c00 = coop_mat16x16<f32, C>();
    var c01 = coop_mat16x16<f32, C>();
    var c02 = coop_mat16x16<f32, C>();
    var c03 = coop_mat16x16<f32, C>();
    var c10 = coop_mat16x16<f32, C>();
    var c11 = coop_mat16x16<f32, C>();
    var c12 = coop_mat16x16<f32, C>();
    var c13 = coop_mat16x16<f32, C>();
    var c20 = coop_mat16x16<f32, C>();
    var c21 = coop_mat16x16<f32, C>();
    var c22 = coop_mat16x16<f32, C>();
    var c23 = coop_mat16x16<f32, C>();
    var c30 = coop_mat16x16<f32, C>();
    var c31 = coop_mat16x16<f32, C>();
    var c32 = coop_mat16x16<f32, C>();
    var c33 = coop_mat16x16<f32, C>();

    for (var k0 = 0u; k0 < g.k; k0 = k0 + 16u) {
        let a0 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 0u) * lda + k0], lda);
        let a1 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 16u) * lda + k0], lda);
        let a2 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 32u) * lda + k0], lda);
        let a3 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 48u) * lda + k0], lda);
        let b0 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k0) * ldb + n0 + wn + 0u], ldb);
        let b1 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k0) * ldb + n0 + wn + 16u], ldb);
        let b2 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k0) * ldb + n0 + wn + 32u], ldb);
        let b3 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k0) * ldb + n0 + wn + 48u], ldb);
        c00 = coopMultiplyAdd(a0, b0, c00);
        c01 = coopMultiplyAdd(a0, b1, c01);
        c02 = coopMultiplyAdd(a0, b2, c02);
        c03 = coopMultiplyAdd(a0, b3, c03);
        c10 = coopMultiplyAdd(a1, b0, c10);
        c11 = coopMultiplyAdd(a1, b1, c11);
        c12 = coopMultiplyAdd(a1, b2, c12);
        c13 = coopMultiplyAdd(a1, b3, c13);
        c20 = coopMultiplyAdd(a2, b0, c20);
        c21 = coopMultiplyAdd(a2, b1, c21);
        c22 = coopMultiplyAdd(a2, b2, c22);
        c23 = coopMultiplyAdd(a2, b3, c23);
        c30 = coopMultiplyAdd(a3, b0, c30);
        c31 = coopMultiplyAdd(a3, b1, c31);
        c32 = coopMultiplyAdd(a3, b2, c32);
        c33 = coopMultiplyAdd(a3, b3, c33);
    }
    let ldc = g.ldc;
    let o00 = (m0 + wm + 0u) * ldc + n0 + wn + 0u;
    coopStoreT(c00, &gc[o00], ldc);
    let o01 = (m0 + wm + 0u) * ldc + n0 + wn + 16u;
    coopStoreT(c01, &gc[o01], ldc);
    let o02 = (m0 + wm + 0u) * ldc + n0 + wn + 32u;
    coopStoreT(c02, &gc[o02], ldc);
    let o03 = (m0 + wm + 0u) * ldc + n0 + wn + 48u;
    coopStoreT(c03, &gc[o03], ldc);
    let o10 = (m0 + wm + 16u) * ldc + n0 + wn + 0u;
    coopStoreT(c10, &gc[o10], ldc);
    let o11 = (m0 + wm + 16u) * ldc + n0 + wn + 16u;
    coopStoreT(c11, &gc[o11], ldc);
    let o12 = (m0 + wm + 16u) * ldc + n0 + wn + 32u;
    coopStoreT(c12, &gc[o12], ldc);
    let o13 = (m0 + wm + 16u) * ldc + n0 + wn + 48u;
    coopStoreT(c13, &gc[o13], ldc);
    let o20 = (m0 + wm + 32u) * ldc + n0 + wn + 0u;
    coopStoreT(c20, &gc[o20], ldc);
    let o21 = (m0 + wm + 32u) * ldc + n0 + wn + 16u;
    coopStoreT(c21, &gc[o21], ldc);
    let o22 = (m0 + wm + 32u) * ldc + n0 + wn + 32u;
    coopStoreT(c22, &gc[o22], ldc);
    let o23 = (m0 + wm + 32u) * ldc + n0 + wn + 48u;
    coopStoreT(c23, &gc[o23], ldc);
    let o30 = (m0 + wm + 48u) * ldc + n0 + wn + 0u;
    coopStoreT(c30, &gc[o30], ldc);
    let o31 = (m0 + wm + 48u) * ldc + n0 + wn + 16u;
    coopStoreT(c31, &gc[o31], ldc);
    let o32 = (m0 + wm + 48u) * ldc + n0 + wn + 32u;
    coopStoreT(c32, &gc[o32], ldc);
    let o33 = (m0 + wm + 48u) * ldc + n0 + wn + 48u;
    coopStoreT(c33, &gc[o33], ldc);
}

@compute @workgroup_size(64)
fn d4x4_2x1_plain(@builtin(workgroup_id) wid: vec3<u32>, @builtin(subgroup_id) sid: u32) {
    let m0 = wid.y * 128u;
    let n0 = wid.x * 64u;
    let wm = (sid / 1u) * 64u;
    let wn = (sid % 1u) * 64u;
    let lda = g.lda;
    let ldb = g.ldb;
    var c00 = coop_mat16x16<f32, C>();
    var c01 = coop_mat16x16<f32, C>();
    var c02 = coop_mat16x16<f32, C>();
    var c03 = coop_mat16x16<f32, C>();
    var c10 = coop_mat16x16<f32, C>();
    var c11 = coop_mat16x16<f32, C>();
    var c12 = coop_mat16x16<f32, C>();
    var c13 = coop_mat16x16<f32, C>();
    var c20 = coop_mat16x16<f32, C>();
    var c21 = coop_mat16x16<f32, C>();
    var c22 = coop_mat16x16<f32, C>();
    var c23 = coop_mat16x16<f32, C>();
    var c30 = coop_mat16x16<f32, C>();
    var c31 = coop_mat16x16<f32, C>();
    var c32 = coop_mat16x16<f32, C>();
    var c33 = coop_mat16x16<f32, C>();

    for (var k0 = 0u; k0 < g.k; k0 = k0 + 16u) {
        let a0 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 0u) * lda + k0], lda);
        let a1 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 16u) * lda + k0], lda);
        let a2 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 32u) * lda + k0], lda);
        let a3 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 48u) * lda + k0], lda);
        let b0 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k0) * ldb + n0 + wn + 0u], ldb);
        let b1 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k0) * ldb + n0 + wn + 16u], ldb);
        let b2 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k0) * ldb + n0 + wn + 32u], ldb);
        let b3 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k0) * ldb + n0 + wn + 48u], ldb);
        c00 = coopMultiplyAdd(a0, b0, c00);
        c01 = coopMultiplyAdd(a0, b1, c01);
        c02 = coopMultiplyAdd(a0, b2, c02);
        c03 = coopMultiplyAdd(a0, b3, c03);
        c10 = coopMultiplyAdd(a1, b0, c10);
        c11 = coopMultiplyAdd(a1, b1, c11);
        c12 = coopMultiplyAdd(a1, b2, c12);
        c13 = coopMultiplyAdd(a1, b3, c13);
        c20 = coopMultiplyAdd(a2, b0, c20);
        c21 = coopMultiplyAdd(a2, b1, c21);
        c22 = coopMultiplyAdd(a2, b2, c22);
        c23 = coopMultiplyAdd(a2, b3, c23);
        c30 = coopMultiplyAdd(a3, b0, c30);
        c31 = coopMultiplyAdd(a3, b1, c31);
        c32 = coopMultiplyAdd(a3, b2, c32);
        c33 = coopMultiplyAdd(a3, b3, c33);
    }
    let ldc = g.ldc;
    let o00 = (m0 + wm + 0u) * ldc + n0 + wn + 0u;
    coopStoreT(c00, &gc[o00], ldc);
    let o01 = (m0 + wm + 0u) * ldc + n0 + wn + 16u;
    coopStoreT(c01, &gc[o01], ldc);
    let o02 = (m0 + wm + 0u) * ldc + n0 + wn + 32u;
    coopStoreT(c02, &gc[o02], ldc);
    let o03 = (m0 + wm + 0u) * ldc + n0 + wn + 48u;
    coopStoreT(c03, &gc[o03], ldc);
    let o10 = (m0 + wm + 16u) * ldc + n0 + wn + 0u;
    coopStoreT(c10, &gc[o10], ldc);
    let o11 = (m0 + wm + 16u) * ldc + n0 + wn + 16u;
    coopStoreT(c11, &gc[o11], ldc);
    let o12 = (m0 + wm + 16u) * ldc + n0 + wn + 32u;
    coopStoreT(c12, &gc[o12], ldc);
    let o13 = (m0 + wm + 16u) * ldc + n0 + wn + 48u;
    coopStoreT(c13, &gc[o13], ldc);
    let o20 = (m0 + wm + 32u) * ldc + n0 + wn + 0u;
    coopStoreT(c20, &gc[o20], ldc);
    let o21 = (m0 + wm + 32u) * ldc + n0 + wn + 16u;
    coopStoreT(c21, &gc[o21], ldc);
    let o22 = (m0 + wm + 32u) * ldc + n0 + wn + 32u;
    coopStoreT(c22, &gc[o22], ldc);
    let o23 = (m0 + wm + 32u) * ldc + n0 + wn + 48u;
    coopStoreT(c23, &gc[o23], ldc);
    let o30 = (m0 + wm + 48u) * ldc + n0 + wn + 0u;
    coopStoreT(c30, &gc[o30], ldc);
    let o31 = (m0 + wm + 48u) * ldc + n0 + wn + 16u;
    coopStoreT(c31, &gc[o31], ldc);
    let o32 = (m0 + wm + 48u) * ldc + n0 + wn + 32u;
    coopStoreT(c32, &gc[o32], ldc);
    let o33 = (m0 + wm + 48u) * ldc + n0 + wn + 48u;
    coopStoreT(c33, &gc[o33], ldc);
}

@compute @workgroup_size(128)
fn d4x4_2x2_m8(@builtin(workgroup_id) wid: vec3<u32>, @builtin(subgroup_id) sid: u32) {
    let m0 = wid.y * 128u;
    let n0 = wid.x * 128u;
    let wm = (sid / 2u) * 64u;
    let wn = (sid % 2u) * 64u;
    let lda = (g.lda / 8u) * 8u;
    let ldb = (g.ldb / 8u) * 8u;
    var c00 = coop_mat16x16<f32, C>();
    var c01 = coop_mat16x16<f32, C>();
    var c02 = coop_mat16x16<f32, C>();
    var c03 = coop_mat16x16<f32, C>();
    var c10 = coop_mat16x16<f32, C>();
    var c11 = coop_mat16x16<f32, C>();
    var c12 = coop_mat16x16<f32, C>();
    var c13 = coop_mat16x16<f32, C>();
    var c20 = coop_mat16x16<f32, C>();
    var c21 = coop_mat16x16<f32, C>();
    var c22 = coop_mat16x16<f32, C>();
    var c23 = coop_mat16x16<f32, C>();
    var c30 = coop_mat16x16<f32, C>();
    var c31 = coop_mat16x16<f32, C>();
    var c32 = coop_mat16x16<f32, C>();
    var c33 = coop_mat16x16<f32, C>();

    for (var k0 = 0u; k0 < g.k; k0 = k0 + 16u) {
        let a0 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 0u) * lda + k0], lda);
        let a1 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 16u) * lda + k0], lda);
        let a2 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 32u) * lda + k0], lda);
        let a3 = coopLoadT<coop_mat16x16<f16, A>>(&ga[(m0 + wm + 48u) * lda + k0], lda);
        let b0 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k0) * ldb + n0 + wn + 0u], ldb);
        let b1 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k0) * ldb + n0 + wn + 16u], ldb);
        let b2 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k0) * ldb + n0 + wn + 32u], ldb);
        let b3 = coopLoadT<coop_mat16x16<f16, B>>(&gb[(k0) * ldb + n0 + wn + 48u], ldb);
        c00 = coopMultiplyAdd(a0, b0, c00);
        c01 = coopMultiplyAdd(a0, b1, c01);
        c02 = coopMultiplyAdd(a0, b2, c02);
        c03 = coopMultiplyAdd(a0, b3, c03);
        c10 = coopMultiplyAdd(a1, b0, c10);
        c11 = coopMultiplyAdd(a1, b1, c11);
        c12 = coopMultiplyAdd(a1, b2, c12);
        c13 = coopMultiplyAdd(a1, b3, c13);
        c20 = coopMultiplyAdd(a2, b0, c20);
        c21 = coopMultiplyAdd(a2, b1, c21);
        c22 = coopMultiplyAdd(a2, b2, c22);
        c23 = coopMultiplyAdd(a2, b3, c23);
        c30 = coopMultiplyAdd(a3, b0, c30);
        c31 = coopMultiplyAdd(a3, b1, c31);
        c32 = coopMultiplyAdd(a3, b2, c32);
        c33 = coopMultiplyAdd(a3, b3, c33);
    }
    let ldc = g.ldc;
    let o00 = (m0 + wm + 0u) * ldc + n0 + wn + 0u;
    coopStoreT(c00, &gc[o00], ldc);
    let o01 = (m0 + wm + 0u) * ldc + n0 + wn + 16u;
    coopStoreT(c01, &gc[o01], ldc);
    let o02 = (m0 + wm + 0u) * ldc + n0 + wn + 32u;
    coopStoreT(c02, &gc[o02], ldc);
    let o03 = (m0 + wm + 0u) * ldc + n0 + wn + 48u;
    coopStoreT(c03, &gc[o03], ldc);
    let o10 = (m0 + wm + 16u) * ldc + n0 + wn + 0u;
    coopStoreT(c10, &gc[o10], ldc);
    let o11 = (m0 + wm + 16u) * ldc + n0 + wn + 16u;
    coopStoreT(c11, &gc[o11], ldc);
    let o12 = (m0 + wm + 16u) * ldc + n0 + wn + 32u;
    coopStoreT(c12, &gc[o12], ldc);
    let o13 = (m0 + wm + 16u) * ldc + n0 + wn + 48u;
    coopStoreT(c13, &gc[o13], ldc);
    let o20 = (m0 + wm + 32u) * ldc + n0 + wn + 0u;
    coopStoreT(c20, &gc[o20], ldc);
    let o21 = (m0 + wm + 32u) * ldc + n0 + wn + 16u;
    coopStoreT(c21, &gc[o21], ldc);
    let o22 = (m0 + wm + 32u) * ldc + n0 + wn + 32u;
    coopStoreT(c22, &gc[o22], ldc);
    let o23 = (m0 + wm + 32u) * ldc + n0 + wn + 48u;
    coopStoreT(c23, &gc[o23], ldc);
    let o30 = (m0 + wm + 48u) * ldc + n0 + wn + 0u;
    coopStoreT(c30, &gc[o30], ldc);
    let o31 = (m0 + wm + 48u) * ldc + n0 + wn + 16u;
    coopStoreT(c31, &gc[o31], ldc);
    let o32 = (m0 + wm + 48u) * ldc + n0 + wn + 32u;
    coopStoreT(c32, &gc[o32], ldc);
    let o33 = (m0 + wm + 48u) * ldc + n0 + wn + 48u;
    coopStoreT(c33, &gc[o33], ldc);
}

@compute @workgroup_size(128)
fn d4x4_2x2_fn(@builtin(workgroup_id) wid: vec3<u32>, @builtin(subgroup_id) sid: u32) {
    let m0 = wid.y * 128u;
    let n0 = wid.x * 128u;
    let wm = (sid / 2u) * 64u;
    let wn = (sid % 2u) * 64u;
    let lda = g.lda;
    let ldb = g.ldb;
    var c00 = coop_mat16x16<f32, C>();
    var c01 = coop_mat16x16<f32, C>();
    var c02 = coop_mat16x16<f32, C>();
    var c03 = coop_mat16x16<f32, C>();
    var c10 = coop_mat16x16<f32, C>();
    var c11 = coop_mat16x16<f32, C>();
    var c12 = coop_mat16x16<f32, C>();
    var c13 = coop_mat16x16<f32, C>();
    var c20 = coop_mat16x16<f32, C>();
    var c21 = coop_mat16x16<f32, C>();
    var c22 = coop_mat16x16<f32, C>();
    var c23 = coop_mat16x16<f32, C>();
    var c30 = coop_mat16x16<f32, C>();
    var c31 = coop_mat16x16<f32, C>();
    var c32 = coop_mat16x16<f32, C>();
    var c33 = coop_mat16x16<f32, C>();

    for (var k0 = 0u; k0 < g.k; k0 = k0 + 16u) {
        let a0 = frag_a((m0 + wm + 0u) * lda + k0, lda);
        let a1 = frag_a((m0 + wm + 16u) * lda + k0, lda);
        let a2 = frag_a((m0 + wm + 32u) * lda + k0, lda);
        let a3 = frag_a((m0 + wm + 48u) * lda + k0, lda);
        let b0 = frag_b((k0) * ldb + n0 + wn + 0u, ldb);
        let b1 = frag_b((k0) * ldb + n0 + wn + 16u, ldb);
        let b2 = frag_b((k0) * ldb + n0 + wn + 32u, ldb);
        let b3 = frag_b((k0) * ldb + n0 + wn + 48u, ldb);
        c00 = coopMultiplyAdd(a0, b0, c00);
        c01 = coopMultiplyAdd(a0, b1, c01);
        c02 = coopMultiplyAdd(a0, b2, c02);
        c03 = coopMultiplyAdd(a0, b3, c03);
        c10 = coopMultiplyAdd(a1, b0, c10);
        c11 = coopMultiplyAdd(a1, b1, c11);
        c12 = coopMultiplyAdd(a1, b2, c12);
        c13 = coopMultiplyAdd(a1, b3, c13);
        c20 = coopMultiplyAdd(a2, b0, c20);
        c21 = coopMultiplyAdd(a2, b1, c21);
        c22 = coopMultiplyAdd(a2, b2, c22);
        c23 = coopMultiplyAdd(a2, b3, c23);
        c30 = coopMultiplyAdd(a3, b0, c30);
        c31 = coopMultiplyAdd(a3, b1, c31);
        c32 = coopMultiplyAdd(a3, b2, c32);
        c33 = coopMultiplyAdd(a3, b3, c33);
    }
    let ldc = g.ldc;
    let o00 = (m0 + wm + 0u) * ldc + n0 + wn + 0u;
    coopStoreT(c00, &gc[o00], ldc);
    let o01 = (m0 + wm + 0u) * ldc + n0 + wn + 16u;
    coopStoreT(c01, &gc[o01], ldc);
    let o02 = (m0 + wm + 0u) * ldc + n0 + wn + 32u;
    coopStoreT(c02, &gc[o02], ldc);
    let o03 = (m0 + wm + 0u) * ldc + n0 + wn + 48u;
    coopStoreT(c03, &gc[o03], ldc);
    let o10 = (m0 + wm + 16u) * ldc + n0 + wn + 0u;
    coopStoreT(c10, &gc[o10], ldc);
    let o11 = (m0 + wm + 16u) * ldc + n0 + wn + 16u;
    coopStoreT(c11, &gc[o11], ldc);
    let o12 = (m0 + wm + 16u) * ldc + n0 + wn + 32u;
    coopStoreT(c12, &gc[o12], ldc);
    let o13 = (m0 + wm + 16u) * ldc + n0 + wn + 48u;
    coopStoreT(c13, &gc[o13], ldc);
    let o20 = (m0 + wm + 32u) * ldc + n0 + wn + 0u;
    coopStoreT(c20, &gc[o20], ldc);
    let o21 = (m0 + wm + 32u) * ldc + n0 + wn + 16u;
    coopStoreT(c21, &gc[o21], ldc);
    let o22 = (m0 + wm + 32u) * ldc + n0 + wn + 32u;
    coopStoreT(c22, &gc[o22], ldc);
    let o23 = (m0 + wm + 32u) * ldc + n0 + wn + 48u;
    coopStoreT(c23, &gc[o23], ldc);
    let o30 = (m0 + wm + 48u) * ldc + n0 + wn + 0u;
    coopStoreT(c30, &gc[o30], ldc);
    let o31 = (m0 + wm + 48u) * ldc + n0 + wn + 16u;
    coopStoreT(c31, &gc[o31], ldc);
    let o32 = (m0 + wm + 48u) * ldc + n0 + wn + 32u;
    coopStoreT(c32, &gc[o32], ldc);
    let o33 = (m0 + wm + 48u) * ldc + n0 + wn + 48u;
    coopStoreT(c33, &gc[o33], ldc);
}

@compute @workgroup_size(128)
fn d4x4_2x2_i32(@builtin(workgroup_id) wid: vec3<u32>, @builtin(subgroup_id) sid: u32) {
    let m0 = wid.y * 128u;
    let n0 = wid.x * 128u;
    let wm = (sid / 2u) * 64u;
    let wn = (sid % 2u) * 64u;
    let lda = g.lda;
    let ldb = g.ldb;
    var c00 = coop_mat16x16<f32, C>();
    var c01 = coop_mat16x16<f32, C>();
    var c02 = coop_mat16x16<f32, C>();
    var c03 = coop_mat16x16<f32, C>();
    var c10 = coop_mat16x16<f32, C>();
    var c11 = coop_mat16x16<f32, C>();
    var c12 = coop_mat16x16<f32, C>();
    var c13 = coop_mat16x16<f32, C>();
    var c20 = coop_mat16x16<f32, C>();
    var c21 = coop_mat16x16<f32, C>();
    var c22 = coop_mat16x16<f32, C>();
    var c23 = coop_mat16x16<f32, C>();
    var c30 = coop_mat16x16<f32, C>();
    var c31 = coop_mat16x16<f32, C>();
    var c32 = coop_mat16x16<f32, C>();
    var c33 = coop_mat16x16<f32, C>();

    for (var k0 = 0u; k0 < g.k; k0 = k0 + 16u) {
        let a0 = coopLoadT<coop_mat16x16<f16, A>>(&ga[u32(i32(m0 + wm + 0u) * i32(lda) + i32(k0))], lda);
        let a1 = coopLoadT<coop_mat16x16<f16, A>>(&ga[u32(i32(m0 + wm + 16u) * i32(lda) + i32(k0))], lda);
        let a2 = coopLoadT<coop_mat16x16<f16, A>>(&ga[u32(i32(m0 + wm + 32u) * i32(lda) + i32(k0))], lda);
        let a3 = coopLoadT<coop_mat16x16<f16, A>>(&ga[u32(i32(m0 + wm + 48u) * i32(lda) + i32(k0))], lda);
        let b0 = coopLoadT<coop_mat16x16<f16, B>>(&gb[u32(i32(k0) * i32(ldb) + i32(n0 + wn + 0u))], ldb);
        let b1 = coopLoadT<coop_mat16x16<f16, B>>(&gb[u32(i32(k0) * i32(ldb) + i32(n0 + wn + 16u))], ldb);
        let b2 = coopLoadT<coop_mat16x16<f16, B>>(&gb[u32(i32(k0) * i32(ldb) + i32(n0 + wn + 32u))], ldb);
        let b3 = coopLoadT<coop_mat16x16<f16, B>>(&gb[u32(i32(k0) * i32(ldb) + i32(n0 + wn + 48u))], ldb);
        c00 = coopMultiplyAdd(a0, b0, c00);
        c01 = coopMultiplyAdd(a0, b1, c01);
        c02 = coopMultiplyAdd(a0, b2, c02);
        c03 = coopMultiplyAdd(a0, b3, c03);
        c10 = coopMultiplyAdd(a1, b0, c10);
        c11 = coopMultiplyAdd(a1, b1, c11);
        c12 = coopMultiplyAdd(a1, b2, c12);
        c13 = coopMultiplyAdd(a1, b3, c13);
        c20 = coopMultiplyAdd(a2, b0, c20);
        c21 = coopMultiplyAdd(a2, b1, c21);
        c22 = coopMultiplyAdd(a2, b2, c22);
        c23 = coopMultiplyAdd(a2, b3, c23);
        c30 = coopMultiplyAdd(a3, b0, c30);
        c31 = coopMultiplyAdd(a3, b1, c31);
        c32 = coopMultiplyAdd(a3, b2, c32);
        c33 = coopMultiplyAdd(a3, b3, c33);
    }
    let ldc = g.ldc;
    let o00 = (m0 + wm + 0u) * ldc + n0 + wn + 0u;
    coopStoreT(c00, &gc[o00], ldc);
    let o01 = (m0 + wm + 0u) * ldc + n0 + wn + 16u;
    coopStoreT(c01, &gc[o01], ldc);
    let o02 = (m0 + wm + 0u) * ldc + n0 + wn + 32u;
    coopStoreT(c02, &gc[o02], ldc);
    let o03 = (m0 + wm + 0u) * ldc + n0 + wn + 48u;
    coopStoreT(c03, &gc[o03], ldc);
    let o10 = (m0 + wm + 16u) * ldc + n0 + wn + 0u;
    coopStoreT(c10, &gc[o10], ldc);
    let o11 = (m0 + wm + 16u) * ldc + n0 + wn + 16u;
    coopStoreT(c11, &gc[o11], ldc);
    let o12 = (m0 + wm + 16u) * ldc + n0 + wn + 32u;
    coopStoreT(c12, &gc[o12], ldc);
    let o13 = (m0 + wm + 16u) * ldc + n0 + wn + 48u;
    coopStoreT(c13, &gc[o13], ldc);
    let o20 = (m0 + wm + 32u) * ldc + n0 + wn + 0u;
    coopStoreT(c20, &gc[o20], ldc);
    let o21 = (m0 + wm + 32u) * ldc + n0 + wn + 16u;
    coopStoreT(c21, &gc[o21], ldc);
    let o22 = (m0 + wm + 32u) * ldc + n0 + wn + 32u;
    coopStoreT(c22, &gc[o22], ldc);
    let o23 = (m0 + wm + 32u) * ldc + n0 + wn + 48u;
    coopStoreT(c23, &gc[o23], ldc);
    let o30 = (m0 + wm + 48u) * ldc + n0 + wn + 0u;
    coopStoreT(c30, &gc[o30], ldc);
    let o31 = (m0 + wm + 48u) * ldc + n0 + wn + 16u;
    coopStoreT(c31, &gc[o31], ldc);
    let o32 = (m0 + wm + 48u) * ldc + n0 + wn + 32u;
    coopStoreT(c32, &gc[o32], ldc);
    let o33 = (m0 + wm + 48u) * ldc + n0 + wn + 48u;
    coopStoreT(c33, &gc[o33], ldc);
}

@compute @workgroup_size(128)
fn d4x4_2x2_crate(@builtin(workgroup_id) wid: vec3<u32>, @builtin(subgroup_id) sid: u32) {
    let m0 = wid.y * 128u;
    let n0 = wid.x * 128u;
    let wm = (sid / 2u) * 64u;
    let wn = (sid % 2u) * 64u;
    let lda = g.lda;
    let ldb = g.ldb;
    var c00 = coop_mat16x16<f32, C>();
    var c01 = coop_mat16x16<f32, C>();
    var c02 = coop_mat16x16<f32, C>();
    var c03 = coop_mat16x16<f32, C>();
    var c10 = coop_mat16x16<f32, C>();
    var c11 = coop_mat16x16<f32, C>();
    var c12 = coop_mat16x16<f32, C>();
    var c13 = coop_mat16x16<f32, C>();
    var c20 = coop_mat16x16<f32, C>();
    var c21 = coop_mat16x16<f32, C>();
    var c22 = coop_mat16x16<f32, C>();
    var c23 = coop_mat16x16<f32, C>();
    var c30 = coop_mat16x16<f32, C>();
    var c31 = coop_mat16x16<f32, C>();
    var c32 = coop_mat16x16<f32, C>();
    var c33 = coop_mat16x16<f32, C>();
    var row: array<u32, 4>;
    var col: array<u32, 4>;
    for (var i = 0u; i < 4u; i = i + 1u) {
        row[i] = min(m0 + wm + 16u * i, g.m - 16u);
        col[i] = min(n0 + wn + 16u * i, g.n - 16u);
    }
    for (var k0 = 0u; k0 < g.k; k0 = k0 + 16u) {
        let a0 = frag_a(u32(i32(row[0]) * i32(lda) + i32(k0)), lda);
        let a1 = frag_a(u32(i32(row[1]) * i32(lda) + i32(k0)), lda);
        let a2 = frag_a(u32(i32(row[2]) * i32(lda) + i32(k0)), lda);
        let a3 = frag_a(u32(i32(row[3]) * i32(lda) + i32(k0)), lda);
        let b0 = frag_b(u32(i32(k0) * i32(ldb) + i32(col[0])), ldb);
        let b1 = frag_b(u32(i32(k0) * i32(ldb) + i32(col[1])), ldb);
        let b2 = frag_b(u32(i32(k0) * i32(ldb) + i32(col[2])), ldb);
        let b3 = frag_b(u32(i32(k0) * i32(ldb) + i32(col[3])), ldb);
        c00 = coopMultiplyAdd(a0, b0, c00);
        c01 = coopMultiplyAdd(a0, b1, c01);
        c02 = coopMultiplyAdd(a0, b2, c02);
        c03 = coopMultiplyAdd(a0, b3, c03);
        c10 = coopMultiplyAdd(a1, b0, c10);
        c11 = coopMultiplyAdd(a1, b1, c11);
        c12 = coopMultiplyAdd(a1, b2, c12);
        c13 = coopMultiplyAdd(a1, b3, c13);
        c20 = coopMultiplyAdd(a2, b0, c20);
        c21 = coopMultiplyAdd(a2, b1, c21);
        c22 = coopMultiplyAdd(a2, b2, c22);
        c23 = coopMultiplyAdd(a2, b3, c23);
        c30 = coopMultiplyAdd(a3, b0, c30);
        c31 = coopMultiplyAdd(a3, b1, c31);
        c32 = coopMultiplyAdd(a3, b2, c32);
        c33 = coopMultiplyAdd(a3, b3, c33);
    }
    let ldc = g.ldc;
    let o00 = (m0 + wm + 0u) * ldc + n0 + wn + 0u;
    coopStoreT(c00, &gc[o00], ldc);
    let o01 = (m0 + wm + 0u) * ldc + n0 + wn + 16u;
    coopStoreT(c01, &gc[o01], ldc);
    let o02 = (m0 + wm + 0u) * ldc + n0 + wn + 32u;
    coopStoreT(c02, &gc[o02], ldc);
    let o03 = (m0 + wm + 0u) * ldc + n0 + wn + 48u;
    coopStoreT(c03, &gc[o03], ldc);
    let o10 = (m0 + wm + 16u) * ldc + n0 + wn + 0u;
    coopStoreT(c10, &gc[o10], ldc);
    let o11 = (m0 + wm + 16u) * ldc + n0 + wn + 16u;
    coopStoreT(c11, &gc[o11], ldc);
    let o12 = (m0 + wm + 16u) * ldc + n0 + wn + 32u;
    coopStoreT(c12, &gc[o12], ldc);
    let o13 = (m0 + wm + 16u) * ldc + n0 + wn + 48u;
    coopStoreT(c13, &gc[o13], ldc);
    let o20 = (m0 + wm + 32u) * ldc + n0 + wn + 0u;
    coopStoreT(c20, &gc[o20], ldc);
    let o21 = (m0 + wm + 32u) * ldc + n0 + wn + 16u;
    coopStoreT(c21, &gc[o21], ldc);
    let o22 = (m0 + wm + 32u) * ldc + n0 + wn + 32u;
    coopStoreT(c22, &gc[o22], ldc);
    let o23 = (m0 + wm + 32u) * ldc + n0 + wn + 48u;
    coopStoreT(c23, &gc[o23], ldc);
    let o30 = (m0 + wm + 48u) * ldc + n0 + wn + 0u;
    coopStoreT(c30, &gc[o30], ldc);
    let o31 = (m0 + wm + 48u) * ldc + n0 + wn + 16u;
    coopStoreT(c31, &gc[o31], ldc);
    let o32 = (m0 + wm + 48u) * ldc + n0 + wn + 32u;
    coopStoreT(c32, &gc[o32], ldc);
    let o33 = (m0 + wm + 48u) * ldc + n0 + wn + 48u;
    coopStoreT(c33, &gc[o33], ldc);
}
