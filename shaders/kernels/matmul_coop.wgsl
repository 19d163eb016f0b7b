// Batched float16 matrix product on tensor cores: C[z] = A[z] @ B[z] with f32 accumulation,
// through cooperative matrices (wgpu's EXPERIMENTAL_COOPERATIVE_MATRIX: FRAG x FRAG x FRAG
// f16 x f16 + f32, FRAG 16 or 8 by the prelude coop_frag16 / coop_frag8), for
// `MatmulKernel::Coop`. A workgroup of four subgroups computes an 8 FRAG x 8 FRAG tile (128 x
// 128 with FRAG 16), each subgroup a 4 FRAG x 4 FRAG block of 4 x 4 accumulators; every fragment is loaded straight from
// the operands' storage (A_ROWS: A row-major, its pitch the row stride sa.x, else column-major,
// its pitch sa.y; B_ROWS likewise with sb.x / sb.y) and stored by the output prelude's
// out_frag: matmul_coop_out.wgsl stores it straight into an f32 output (Y_ROWS: pitch so.x,
// else so.y) or through the epilogue (EPI, below); matmul_coop_out16.wgsl always through the
// epilogue, which rounds each element once into the float16 output. A_PITCH, B_PITCH and
// Y_PITCH, where not 0, are those pitches compiled in: an NVIDIA H200 ran 4096^3 1.5x as fast
// so as with the pitches read from the uniform, and 0.67x with signed address arithmetic (all
// of it is unsigned here); staging the fragments through workgroup memory ran 2.4-8x slower
// there (docs/cooperative-matrices.md).
// The host's one check (kernels/matmul/coop.rs) guarantees what the loads assume: m, n and k
// multiples of FRAG, non-negative offsets, positive pitches, pitches, batch strides and offsets
// of A and B 16-byte aligned, and those of the output too where it is stored directly (without
// an epilogue or a 16-bit output). Cooperative-matrix operations need uniform control flow, so
// nothing branches: rows and columns of a tile past m or n are the last valid fragment again
// (clamped), computed from the same inputs in the same order and stored to the same place with
// the same bits, and a workgroup past the work repeats the last tile likewise. Workgroup id =
// (tile along m, tile along n, batch z) as the tiled GEMM's.
enable f16;
enable wgpu_cooperative_matrix;

override A_ROWS: bool = true;
override B_ROWS: bool = true;
override Y_ROWS: bool = true;
override A_PITCH: u32 = 0u;
override B_PITCH: u32 = 0u;
override Y_PITCH: u32 = 0u;
// Four subgroups (the host sets 4 x the adapter's subgroup size).
override WG: u32 = 128u;

// EPI: the product has an epilogue (alpha, an addend, an activation: preludes/
// matmul_epilogue.wgsl's mm_finish); each accumulator then goes through the subgroup's FRAG x FRAG
// of workgroup memory, and its lanes finish and store the elements through the output's strides
// (finish_frag). Read by matmul_coop_out.wgsl; a 16-bit output always takes that way.
override EPI: bool = false;

// A and B as f16 (the other matrix-product kernels bind the same windows as 32-bit words).
@group(0) @binding(1) var<storage, read> ah: array<f16>;
@group(0) @binding(2) var<storage, read> bh: array<f16>;

var<workgroup> scratch: array<f32, 4u * FRAG * FRAG>;

fn frag_a(at: u32) -> FragA {
    if (A_ROWS) {
        return coopLoadT<FragA>(&ah[at], a_pitch());
    }
    return coopLoad<FragA>(&ah[at], a_pitch());
}

fn frag_b(at: u32) -> FragB {
    if (B_ROWS) {
        return coopLoadT<FragB>(&bh[at], b_pitch());
    }
    return coopLoad<FragB>(&bh[at], b_pitch());
}

// An operand's pitch: compiled in, else the uniform's stride along its other dim.
fn a_pitch() -> u32 {
    if (A_PITCH != 0u) {
        return A_PITCH;
    }
    return u32(select(mp_u[pz()].sa.y, mp_u[pz()].sa.x, A_ROWS));
}

fn b_pitch() -> u32 {
    if (B_PITCH != 0u) {
        return B_PITCH;
    }
    return u32(select(mp_u[pz()].sb.y, mp_u[pz()].sb.x, B_ROWS));
}

fn y_pitch() -> u32 {
    if (Y_PITCH != 0u) {
        return Y_PITCH;
    }
    return u32(select(mp_u[pz()].so.y, mp_u[pz()].so.x, Y_ROWS));
}

// An accumulator through the epilogue: stored into the subgroup's scratch, then each lane
// finishes two neighbours along n at a time, elements (m + e / FRAG, n + e % FRAG) and the next
// (FRAG is even), into the output (element offsets o0 and, for the addend, c0): mm_store2 stores
// them as one word of a 16-bit output where they make one. Every subgroup calls it in step: the
// barriers are the workgroup's.
fn finish_frag(c: FragC, sid: u32, lane: u32, lanes: u32, m: u32, n: u32, c0: i32, o0: i32) {
    let at = sid * FRAG * FRAG;
    coopStoreT(c, &scratch[at], FRAG);
    workgroupBarrier();
    let so = mp_u[pz()].so.xy;
    let sc = mp_u[pz()].sc.xy;
    for (var e = 2u * lane; e < FRAG * FRAG; e = e + 2u * lanes) {
        let mi = i32(m + e / FRAG);
        let ni = i32(n + e % FRAG);
        let i = o0 + mi * so.x + ni * so.y;
        let ci = c0 + mi * sc.x + ni * sc.y;
        mm_store2(u32(i), u32(i + so.y), mm_finish(scratch[at + e], ci), mm_finish(scratch[at + e + 1u], ci + sc.y));
    }
    workgroupBarrier();
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(subgroup_id) sid: u32, @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) lanes: u32) {
    let id = min(wid.x + wid.y * nwg.x, mp_u[pz()].work.w - 1u);
    let tile_m = id % mp_u[pz()].work.x;
    let rest = id / mp_u[pz()].work.x;
    let tile_n = rest % mp_u[pz()].work.y;
    let z = rest / mp_u[pz()].work.y;
    let z0 = z / mp_u[pz()].work.z;
    let z1 = z % mp_u[pz()].work.z;
    // Offsets and batch strides are non-negative here (the host's check).
    let pa = u32(mp_u[pz()].base.x) + z0 * u32(mp_u[pz()].sa.z) + z1 * u32(mp_u[pz()].sa.w);
    let pb = u32(mp_u[pz()].base.y) + z0 * u32(mp_u[pz()].sb.z) + z1 * u32(mp_u[pz()].sb.w);
    let o0 = u32(mp_u[pz()].base.w) + z0 * u32(mp_u[pz()].so.z) + z1 * u32(mp_u[pz()].so.w);
    // Element steps along each operand's two dims: the pitch along one, 1 along the other.
    let am = select(1u, a_pitch(), A_ROWS);
    let ak = select(a_pitch(), 1u, A_ROWS);
    let bk = select(1u, b_pitch(), B_ROWS);
    let bn = select(b_pitch(), 1u, B_ROWS);
    let om = select(1u, y_pitch(), Y_ROWS);
    let on = select(y_pitch(), 1u, Y_ROWS);
    // This subgroup's 4 FRAG x 4 FRAG block: its fragments' first rows and columns (clamped).
    let m1 = tile_m * 8u * FRAG + (sid / 2u) * 4u * FRAG;
    let n1 = tile_n * 8u * FRAG + (sid % 2u) * 4u * FRAG;
    let mlast = mp_u[pz()].dims.x - FRAG;
    let nlast = mp_u[pz()].dims.y - FRAG;
    let r0 = min(m1, mlast);
    let r1 = min(m1 + FRAG, mlast);
    let r2 = min(m1 + 2u * FRAG, mlast);
    let r3 = min(m1 + 3u * FRAG, mlast);
    let q0 = min(n1, nlast);
    let q1 = min(n1 + FRAG, nlast);
    let q2 = min(n1 + 2u * FRAG, nlast);
    let q3 = min(n1 + 3u * FRAG, nlast);
    var c00 = FragC();
    var c01 = FragC();
    var c02 = FragC();
    var c03 = FragC();
    var c10 = FragC();
    var c11 = FragC();
    var c12 = FragC();
    var c13 = FragC();
    var c20 = FragC();
    var c21 = FragC();
    var c22 = FragC();
    var c23 = FragC();
    var c30 = FragC();
    var c31 = FragC();
    var c32 = FragC();
    var c33 = FragC();
    for (var k0 = 0u; k0 < mp_u[pz()].dims.z; k0 = k0 + FRAG) {
        let a0 = frag_a(pa + r0 * am + k0 * ak);
        let a1 = frag_a(pa + r1 * am + k0 * ak);
        let a2 = frag_a(pa + r2 * am + k0 * ak);
        let a3 = frag_a(pa + r3 * am + k0 * ak);
        let b0 = frag_b(pb + k0 * bk + q0 * bn);
        let b1 = frag_b(pb + k0 * bk + q1 * bn);
        let b2 = frag_b(pb + k0 * bk + q2 * bn);
        let b3 = frag_b(pb + k0 * bk + q3 * bn);
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
    // Each accumulator into the output (the output prelude's out_frag): at element
    // o0 + r * om + q * on stored straight, or finished from (r, q) with the addend at c0 and
    // the output at y0.
    let c0 = mp_u[pz()].base.z + i32(z0) * mp_u[pz()].sc.z + i32(z1) * mp_u[pz()].sc.w;
    let y0 = mp_u[pz()].base.w + i32(z0) * mp_u[pz()].so.z + i32(z1) * mp_u[pz()].so.w;
    out_frag(c00, sid, lane, lanes, r0, q0, o0 + r0 * om + q0 * on, c0, y0);
    out_frag(c01, sid, lane, lanes, r0, q1, o0 + r0 * om + q1 * on, c0, y0);
    out_frag(c02, sid, lane, lanes, r0, q2, o0 + r0 * om + q2 * on, c0, y0);
    out_frag(c03, sid, lane, lanes, r0, q3, o0 + r0 * om + q3 * on, c0, y0);
    out_frag(c10, sid, lane, lanes, r1, q0, o0 + r1 * om + q0 * on, c0, y0);
    out_frag(c11, sid, lane, lanes, r1, q1, o0 + r1 * om + q1 * on, c0, y0);
    out_frag(c12, sid, lane, lanes, r1, q2, o0 + r1 * om + q2 * on, c0, y0);
    out_frag(c13, sid, lane, lanes, r1, q3, o0 + r1 * om + q3 * on, c0, y0);
    out_frag(c20, sid, lane, lanes, r2, q0, o0 + r2 * om + q0 * on, c0, y0);
    out_frag(c21, sid, lane, lanes, r2, q1, o0 + r2 * om + q1 * on, c0, y0);
    out_frag(c22, sid, lane, lanes, r2, q2, o0 + r2 * om + q2 * on, c0, y0);
    out_frag(c23, sid, lane, lanes, r2, q3, o0 + r2 * om + q3 * on, c0, y0);
    out_frag(c30, sid, lane, lanes, r3, q0, o0 + r3 * om + q0 * on, c0, y0);
    out_frag(c31, sid, lane, lanes, r3, q1, o0 + r3 * om + q1 * on, c0, y0);
    out_frag(c32, sid, lane, lanes, r3, q2, o0 + r3 * om + q2 * on, c0, y0);
    out_frag(c33, sid, lane, lanes, r3, q3, o0 + r3 * om + q3 * on, c0, y0);
}
