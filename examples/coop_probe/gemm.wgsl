// Tiled f16 GEMMs on cooperative matrices (16 x 16 x 16, f32 accumulators), C = A B, all
// row-major with row pitches lda, ldb, ldc: variants of one design, timed against each other by
// examples/coop_probe.rs. Workgroup tiles 128 x 128; edges read zeros and skip their stores.
//   gemm_base:   256 invocations (8 subgroups as 4 x 2 of 32 x 64 blocks), k steps of 32 staged
//                through workgroup memory, the next step fetched element by element (with a
//                branch per element) while the current one multiplies.
//   gemm_clamp:  the same with branch-free fetches (clamped index, select).
//   gemm_wide:   128 invocations (4 subgroups as 2 x 2 of 64 x 64 blocks), branch-free fetches.
//   gemm_vec:    gemm_wide fetching 4 halves a load (rows of A and B as vec4<f16>; needs lda and ldb
//                multiples of 4).
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
@group(0) @binding(4) var<storage, read> ga4: array<vec4<f16>>;
@group(0) @binding(5) var<storage, read> gb4: array<vec4<f16>>;

// Row pitches in workgroup memory (multiples of 8 halves / 4 floats: 16-byte rows).
const AP: u32 = 40u;
const BP: u32 = 136u;
const CP: u32 = 20u;
var<workgroup> ta: array<f16, 5120>;
var<workgroup> tb: array<f16, 4352>;
var<workgroup> tc: array<f32, 2560>;

fn a_at(m: u32, k: u32) -> f16 {
    if (m < g.m && k < g.k) {
        return ga[m * g.lda + k];
    }
    return 0.0h;
}

fn b_at(k: u32, n: u32) -> f16 {
    if (k < g.k && n < g.n) {
        return gb[k * g.ldb + n];
    }
    return 0.0h;
}

fn a_clamp(m: u32, k: u32) -> f16 {
    let v = ga[min(m, g.m - 1u) * g.lda + min(k, g.k - 1u)];
    return select(0.0h, v, m < g.m && k < g.k);
}

fn b_clamp(k: u32, n: u32) -> f16 {
    let v = gb[min(k, g.k - 1u) * g.ldb + min(n, g.n - 1u)];
    return select(0.0h, v, k < g.k && n < g.n);
}

// 4 halves of A's row m from column k (k a multiple of 4; zeros past the edges).
fn a_vec(m: u32, k: u32) -> vec4<f16> {
    let v = ga4[(min(m, g.m - 1u) * g.lda + min(k, g.k - 4u)) / 4u];
    return select(vec4<f16>(0.0h), v, vec4<bool>(m < g.m && k < g.k));
}

fn b_vec(k: u32, n: u32) -> vec4<f16> {
    let v = gb4[(min(k, g.k - 1u) * g.ldb + min(n, g.n - 4u)) / 4u];
    return select(vec4<f16>(0.0h), v, vec4<bool>(k < g.k && n < g.n));
}

// One accumulator out through the subgroup's scratch rows (every subgroup calls it in step: the
// barriers are the workgroup's).
fn gemm_store(c: coop_mat16x16<f32, C>, sid: u32, sl: u32, ss: u32, m: u32, n: u32) {
    coopStoreT(c, &tc[sid * 320u], CP);
    workgroupBarrier();
    for (var e = sl; e < 256u; e = e + ss) {
        let r = m + e / 16u;
        let col = n + e % 16u;
        if (r < g.m && col < g.n) {
            gc[r * g.ldc + col] = tc[sid * 320u + (e / 16u) * CP + e % 16u];
        }
    }
    workgroupBarrier();
}


@compute @workgroup_size(256)
fn gemm_base(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32, @builtin(subgroup_id) sid: u32, @builtin(subgroup_invocation_id) sl: u32, @builtin(subgroup_size) ss: u32) {
    let m0 = wid.y * 128u;
    let n0 = wid.x * 128u;
    let wm = (sid / 2u) * 32u;
    let wn = (sid % 2u) * 64u;
    var c00 = coop_mat16x16<f32, C>();
    var c01 = coop_mat16x16<f32, C>();
    var c02 = coop_mat16x16<f32, C>();
    var c03 = coop_mat16x16<f32, C>();
    var c10 = coop_mat16x16<f32, C>();
    var c11 = coop_mat16x16<f32, C>();
    var c12 = coop_mat16x16<f32, C>();
    var c13 = coop_mat16x16<f32, C>();
    var ra: array<f16, 16>;
    var rb: array<f16, 16>;
    {
        for (var i = 0u; i < 16u; i = i + 1u) {
            let e = lid + 256u * i;
            ra[i] = a_at(m0 + e / 32u, 0u + e % 32u);
            rb[i] = b_at(0u + e / 128u, n0 + e % 128u);
        }
    }
    for (var k0 = 0u; k0 < g.k; k0 = k0 + 32u) {
        workgroupBarrier();
        for (var i = 0u; i < 16u; i = i + 1u) {
            let e = lid + 256u * i;
            ta[(e / 32u) * AP + e % 32u] = ra[i];
            tb[(e / 128u) * BP + e % 128u] = rb[i];
        }
        workgroupBarrier();
        if (k0 + 32u < g.k) {
            let kn = k0 + 32u;
        for (var i = 0u; i < 16u; i = i + 1u) {
            let e = lid + 256u * i;
            ra[i] = a_at(m0 + e / 32u, kn + e % 32u);
            rb[i] = b_at(kn + e / 128u, n0 + e % 128u);
        }
        }
        for (var kk = 0u; kk < 32u; kk = kk + 16u) {
            let a0 = coopLoadT<coop_mat16x16<f16, A>>(&ta[(wm + 0u) * AP + kk], AP);
            let a1 = coopLoadT<coop_mat16x16<f16, A>>(&ta[(wm + 16u) * AP + kk], AP);
            let b0 = coopLoadT<coop_mat16x16<f16, B>>(&tb[kk * BP + wn + 0u], BP);
            let b1 = coopLoadT<coop_mat16x16<f16, B>>(&tb[kk * BP + wn + 16u], BP);
            let b2 = coopLoadT<coop_mat16x16<f16, B>>(&tb[kk * BP + wn + 32u], BP);
            let b3 = coopLoadT<coop_mat16x16<f16, B>>(&tb[kk * BP + wn + 48u], BP);
            c00 = coopMultiplyAdd(a0, b0, c00);
            c01 = coopMultiplyAdd(a0, b1, c01);
            c02 = coopMultiplyAdd(a0, b2, c02);
            c03 = coopMultiplyAdd(a0, b3, c03);
            c10 = coopMultiplyAdd(a1, b0, c10);
            c11 = coopMultiplyAdd(a1, b1, c11);
            c12 = coopMultiplyAdd(a1, b2, c12);
            c13 = coopMultiplyAdd(a1, b3, c13);
        }
    }
    gemm_store(c00, sid, sl, ss, m0 + wm + 0u, n0 + wn + 0u);
    gemm_store(c01, sid, sl, ss, m0 + wm + 0u, n0 + wn + 16u);
    gemm_store(c02, sid, sl, ss, m0 + wm + 0u, n0 + wn + 32u);
    gemm_store(c03, sid, sl, ss, m0 + wm + 0u, n0 + wn + 48u);
    gemm_store(c10, sid, sl, ss, m0 + wm + 16u, n0 + wn + 0u);
    gemm_store(c11, sid, sl, ss, m0 + wm + 16u, n0 + wn + 16u);
    gemm_store(c12, sid, sl, ss, m0 + wm + 16u, n0 + wn + 32u);
    gemm_store(c13, sid, sl, ss, m0 + wm + 16u, n0 + wn + 48u);
}

@compute @workgroup_size(256)
fn gemm_clamp(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32, @builtin(subgroup_id) sid: u32, @builtin(subgroup_invocation_id) sl: u32, @builtin(subgroup_size) ss: u32) {
    let m0 = wid.y * 128u;
    let n0 = wid.x * 128u;
    let wm = (sid / 2u) * 32u;
    let wn = (sid % 2u) * 64u;
    var c00 = coop_mat16x16<f32, C>();
    var c01 = coop_mat16x16<f32, C>();
    var c02 = coop_mat16x16<f32, C>();
    var c03 = coop_mat16x16<f32, C>();
    var c10 = coop_mat16x16<f32, C>();
    var c11 = coop_mat16x16<f32, C>();
    var c12 = coop_mat16x16<f32, C>();
    var c13 = coop_mat16x16<f32, C>();
    var ra: array<f16, 16>;
    var rb: array<f16, 16>;
    {
        for (var i = 0u; i < 16u; i = i + 1u) {
            let e = lid + 256u * i;
            ra[i] = a_clamp(m0 + e / 32u, 0u + e % 32u);
            rb[i] = b_clamp(0u + e / 128u, n0 + e % 128u);
        }
    }
    for (var k0 = 0u; k0 < g.k; k0 = k0 + 32u) {
        workgroupBarrier();
        for (var i = 0u; i < 16u; i = i + 1u) {
            let e = lid + 256u * i;
            ta[(e / 32u) * AP + e % 32u] = ra[i];
            tb[(e / 128u) * BP + e % 128u] = rb[i];
        }
        workgroupBarrier();
        if (k0 + 32u < g.k) {
            let kn = k0 + 32u;
        for (var i = 0u; i < 16u; i = i + 1u) {
            let e = lid + 256u * i;
            ra[i] = a_clamp(m0 + e / 32u, kn + e % 32u);
            rb[i] = b_clamp(kn + e / 128u, n0 + e % 128u);
        }
        }
        for (var kk = 0u; kk < 32u; kk = kk + 16u) {
            let a0 = coopLoadT<coop_mat16x16<f16, A>>(&ta[(wm + 0u) * AP + kk], AP);
            let a1 = coopLoadT<coop_mat16x16<f16, A>>(&ta[(wm + 16u) * AP + kk], AP);
            let b0 = coopLoadT<coop_mat16x16<f16, B>>(&tb[kk * BP + wn + 0u], BP);
            let b1 = coopLoadT<coop_mat16x16<f16, B>>(&tb[kk * BP + wn + 16u], BP);
            let b2 = coopLoadT<coop_mat16x16<f16, B>>(&tb[kk * BP + wn + 32u], BP);
            let b3 = coopLoadT<coop_mat16x16<f16, B>>(&tb[kk * BP + wn + 48u], BP);
            c00 = coopMultiplyAdd(a0, b0, c00);
            c01 = coopMultiplyAdd(a0, b1, c01);
            c02 = coopMultiplyAdd(a0, b2, c02);
            c03 = coopMultiplyAdd(a0, b3, c03);
            c10 = coopMultiplyAdd(a1, b0, c10);
            c11 = coopMultiplyAdd(a1, b1, c11);
            c12 = coopMultiplyAdd(a1, b2, c12);
            c13 = coopMultiplyAdd(a1, b3, c13);
        }
    }
    gemm_store(c00, sid, sl, ss, m0 + wm + 0u, n0 + wn + 0u);
    gemm_store(c01, sid, sl, ss, m0 + wm + 0u, n0 + wn + 16u);
    gemm_store(c02, sid, sl, ss, m0 + wm + 0u, n0 + wn + 32u);
    gemm_store(c03, sid, sl, ss, m0 + wm + 0u, n0 + wn + 48u);
    gemm_store(c10, sid, sl, ss, m0 + wm + 16u, n0 + wn + 0u);
    gemm_store(c11, sid, sl, ss, m0 + wm + 16u, n0 + wn + 16u);
    gemm_store(c12, sid, sl, ss, m0 + wm + 16u, n0 + wn + 32u);
    gemm_store(c13, sid, sl, ss, m0 + wm + 16u, n0 + wn + 48u);
}

@compute @workgroup_size(128)
fn gemm_wide(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32, @builtin(subgroup_id) sid: u32, @builtin(subgroup_invocation_id) sl: u32, @builtin(subgroup_size) ss: u32) {
    let m0 = wid.y * 128u;
    let n0 = wid.x * 128u;
    let wm = (sid / 2u) * 64u;
    let wn = (sid % 2u) * 64u;
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
    var ra: array<f16, 32>;
    var rb: array<f16, 32>;
    {
        for (var i = 0u; i < 32u; i = i + 1u) {
            let e = lid + 128u * i;
            ra[i] = a_clamp(m0 + e / 32u, 0u + e % 32u);
            rb[i] = b_clamp(0u + e / 128u, n0 + e % 128u);
        }
    }
    for (var k0 = 0u; k0 < g.k; k0 = k0 + 32u) {
        workgroupBarrier();
        for (var i = 0u; i < 32u; i = i + 1u) {
            let e = lid + 128u * i;
            ta[(e / 32u) * AP + e % 32u] = ra[i];
            tb[(e / 128u) * BP + e % 128u] = rb[i];
        }
        workgroupBarrier();
        if (k0 + 32u < g.k) {
            let kn = k0 + 32u;
        for (var i = 0u; i < 32u; i = i + 1u) {
            let e = lid + 128u * i;
            ra[i] = a_clamp(m0 + e / 32u, kn + e % 32u);
            rb[i] = b_clamp(kn + e / 128u, n0 + e % 128u);
        }
        }
        for (var kk = 0u; kk < 32u; kk = kk + 16u) {
            let a0 = coopLoadT<coop_mat16x16<f16, A>>(&ta[(wm + 0u) * AP + kk], AP);
            let a1 = coopLoadT<coop_mat16x16<f16, A>>(&ta[(wm + 16u) * AP + kk], AP);
            let a2 = coopLoadT<coop_mat16x16<f16, A>>(&ta[(wm + 32u) * AP + kk], AP);
            let a3 = coopLoadT<coop_mat16x16<f16, A>>(&ta[(wm + 48u) * AP + kk], AP);
            let b0 = coopLoadT<coop_mat16x16<f16, B>>(&tb[kk * BP + wn + 0u], BP);
            let b1 = coopLoadT<coop_mat16x16<f16, B>>(&tb[kk * BP + wn + 16u], BP);
            let b2 = coopLoadT<coop_mat16x16<f16, B>>(&tb[kk * BP + wn + 32u], BP);
            let b3 = coopLoadT<coop_mat16x16<f16, B>>(&tb[kk * BP + wn + 48u], BP);
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
    }
    gemm_store(c00, sid, sl, ss, m0 + wm + 0u, n0 + wn + 0u);
    gemm_store(c01, sid, sl, ss, m0 + wm + 0u, n0 + wn + 16u);
    gemm_store(c02, sid, sl, ss, m0 + wm + 0u, n0 + wn + 32u);
    gemm_store(c03, sid, sl, ss, m0 + wm + 0u, n0 + wn + 48u);
    gemm_store(c10, sid, sl, ss, m0 + wm + 16u, n0 + wn + 0u);
    gemm_store(c11, sid, sl, ss, m0 + wm + 16u, n0 + wn + 16u);
    gemm_store(c12, sid, sl, ss, m0 + wm + 16u, n0 + wn + 32u);
    gemm_store(c13, sid, sl, ss, m0 + wm + 16u, n0 + wn + 48u);
    gemm_store(c20, sid, sl, ss, m0 + wm + 32u, n0 + wn + 0u);
    gemm_store(c21, sid, sl, ss, m0 + wm + 32u, n0 + wn + 16u);
    gemm_store(c22, sid, sl, ss, m0 + wm + 32u, n0 + wn + 32u);
    gemm_store(c23, sid, sl, ss, m0 + wm + 32u, n0 + wn + 48u);
    gemm_store(c30, sid, sl, ss, m0 + wm + 48u, n0 + wn + 0u);
    gemm_store(c31, sid, sl, ss, m0 + wm + 48u, n0 + wn + 16u);
    gemm_store(c32, sid, sl, ss, m0 + wm + 48u, n0 + wn + 32u);
    gemm_store(c33, sid, sl, ss, m0 + wm + 48u, n0 + wn + 48u);
}

@compute @workgroup_size(128)
fn gemm_vec(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32, @builtin(subgroup_id) sid: u32, @builtin(subgroup_invocation_id) sl: u32, @builtin(subgroup_size) ss: u32) {
    let m0 = wid.y * 128u;
    let n0 = wid.x * 128u;
    let wm = (sid / 2u) * 64u;
    let wn = (sid % 2u) * 64u;
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
    var ra: array<vec4<f16>, 8>;
    var rb: array<vec4<f16>, 8>;
    {
        for (var i = 0u; i < 8u; i = i + 1u) {
            let e = lid + 128u * i;
            ra[i] = a_vec(m0 + e / 8u, 0u + 4u * (e % 8u));
            rb[i] = b_vec(0u + e / 32u, n0 + 4u * (e % 32u));
        }
    }
    for (var k0 = 0u; k0 < g.k; k0 = k0 + 32u) {
        workgroupBarrier();
        for (var i = 0u; i < 8u; i = i + 1u) {
            let e = lid + 128u * i;
            let pa = (e / 8u) * AP + 4u * (e % 8u);
            let pb = (e / 32u) * BP + 4u * (e % 32u);
            for (var q = 0u; q < 4u; q = q + 1u) {
                ta[pa + q] = ra[i][q];
                tb[pb + q] = rb[i][q];
            }
        }
        workgroupBarrier();
        if (k0 + 32u < g.k) {
            let kn = k0 + 32u;
        for (var i = 0u; i < 8u; i = i + 1u) {
            let e = lid + 128u * i;
            ra[i] = a_vec(m0 + e / 8u, kn + 4u * (e % 8u));
            rb[i] = b_vec(kn + e / 32u, n0 + 4u * (e % 32u));
        }
        }
        for (var kk = 0u; kk < 32u; kk = kk + 16u) {
            let a0 = coopLoadT<coop_mat16x16<f16, A>>(&ta[(wm + 0u) * AP + kk], AP);
            let a1 = coopLoadT<coop_mat16x16<f16, A>>(&ta[(wm + 16u) * AP + kk], AP);
            let a2 = coopLoadT<coop_mat16x16<f16, A>>(&ta[(wm + 32u) * AP + kk], AP);
            let a3 = coopLoadT<coop_mat16x16<f16, A>>(&ta[(wm + 48u) * AP + kk], AP);
            let b0 = coopLoadT<coop_mat16x16<f16, B>>(&tb[kk * BP + wn + 0u], BP);
            let b1 = coopLoadT<coop_mat16x16<f16, B>>(&tb[kk * BP + wn + 16u], BP);
            let b2 = coopLoadT<coop_mat16x16<f16, B>>(&tb[kk * BP + wn + 32u], BP);
            let b3 = coopLoadT<coop_mat16x16<f16, B>>(&tb[kk * BP + wn + 48u], BP);
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
    }
    gemm_store(c00, sid, sl, ss, m0 + wm + 0u, n0 + wn + 0u);
    gemm_store(c01, sid, sl, ss, m0 + wm + 0u, n0 + wn + 16u);
    gemm_store(c02, sid, sl, ss, m0 + wm + 0u, n0 + wn + 32u);
    gemm_store(c03, sid, sl, ss, m0 + wm + 0u, n0 + wn + 48u);
    gemm_store(c10, sid, sl, ss, m0 + wm + 16u, n0 + wn + 0u);
    gemm_store(c11, sid, sl, ss, m0 + wm + 16u, n0 + wn + 16u);
    gemm_store(c12, sid, sl, ss, m0 + wm + 16u, n0 + wn + 32u);
    gemm_store(c13, sid, sl, ss, m0 + wm + 16u, n0 + wn + 48u);
    gemm_store(c20, sid, sl, ss, m0 + wm + 32u, n0 + wn + 0u);
    gemm_store(c21, sid, sl, ss, m0 + wm + 32u, n0 + wn + 16u);
    gemm_store(c22, sid, sl, ss, m0 + wm + 32u, n0 + wn + 32u);
    gemm_store(c23, sid, sl, ss, m0 + wm + 32u, n0 + wn + 48u);
    gemm_store(c30, sid, sl, ss, m0 + wm + 48u, n0 + wn + 0u);
    gemm_store(c31, sid, sl, ss, m0 + wm + 48u, n0 + wn + 16u);
    gemm_store(c32, sid, sl, ss, m0 + wm + 48u, n0 + wn + 32u);
    gemm_store(c33, sid, sl, ss, m0 + wm + 48u, n0 + wn + 48u);
}
