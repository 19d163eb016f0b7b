// Batched matrix product on the shared GEMM engine (preludes/gemm_engine.wgsl): C[z] = A[z] @
// B[z] with A and B addressed directly through their strides (row, column, two batch dims, any
// sign, 0 for a broadcast batch), so transposed, sliced and broadcast operands are read in
// place. A is staged with lanes along whichever of its dims has unit stride (A_STEPS: along
// k; the host's flag bit 1), B likewise (B_STEPS, bit 2); the output is written through its strides after the epilogue
// (preludes/matmul_io.wgsl). Workgroup id = (tile along m, tile along n, batch z).
//
// SPLIT (split-K, `MatmulKernel::GemmSplit`): workgroup id = (tile along m, tile along n, batch z
// x slices); each walks one slice of the reduction and stores its tile's partial sums (binding
// 4, the partial buffer; layout in matmul_io.wgsl) without the epilogue, which
// matmul_gemm_sum.wgsl applies after adding the slices in slice order. (SPLIT and the tile's
// parts PM, PN: preludes/gemm_engine.wgsl.)

struct GemmFeed {
    a0: i32,
    b0: i32,
    m0: u32,
    n0: u32,
}

// A[m, r] and B[r, n] as loaded: the word that holds the element and which half (a 0 word
// past the matrices). The bounds are one condition and the load the only lane-masked
// instruction, and the value is decoded only when staged (gemm_decode), so that the slice's
// loads stay in flight (a value selected or decoded where it is loaded is waited for there).
fn a_at(f: GemmFeed, m: u32, r: u32) -> vec2<u32> {
    let inside = (m < mp_u[pz()].dims.x) & (r < mp_u[pz()].dims.z);
    let i = u32(f.a0 + i32(m) * mp_u[pz()].sa.x + i32(r) * mp_u[pz()].sa.y);
    var v = vec2<u32>(0u, i & 1u);
    if (inside) {
        v.x = a[mm_word(i)];
    }
    return v;
}

fn b_at(f: GemmFeed, r: u32, n: u32) -> vec2<u32> {
    let inside = (r < mp_u[pz()].dims.z) & (n < mp_u[pz()].dims.y);
    let i = u32(f.b0 + i32(r) * mp_u[pz()].sb.x + i32(n) * mp_u[pz()].sb.y);
    var v = vec2<u32>(0u, i & 1u);
    if (inside) {
        v.x = b[mm_word(i)];
    }
    return v;
}

// Four values as loaded (word and half each) as one GemmRaw.
fn raw4(v0: vec2<u32>, v1: vec2<u32>, v2: vec2<u32>, v3: vec2<u32>) -> GemmRaw {
    return GemmRaw(v0.x, v1.x, v2.x, v3.x, v0.y | (v1.y << 2u) | (v2.y << 4u) | (v3.y << 6u));
}

// The engine's decodes: each value from its word as the operands' type says.
fn gemm_decode_a(r: GemmRaw) -> vec4<f32> {
    return vec4<f32>(mm_decode(r.w0, gemm_sel(r, 0u)), mm_decode(r.w1, gemm_sel(r, 1u)), mm_decode(r.w2, gemm_sel(r, 2u)), mm_decode(r.w3, gemm_sel(r, 3u)));
}

fn gemm_decode_b(r: GemmRaw) -> vec4<f32> {
    return gemm_decode_a(r);
}

fn gemm_fetch_a(f: GemmFeed, lid: u32, r0: u32, p: u32) -> GemmRaw {
    let m0 = f.m0 + 64u * p;
    if (A_STEPS) {
        let r = r0 + lid % 16u;
        let m = m0 + lid / 16u;
        return raw4(a_at(f, m, r), a_at(f, m + 16u, r), a_at(f, m + 32u, r), a_at(f, m + 48u, r));
    }
    let m = m0 + lid % 64u;
    let r = r0 + lid / 64u;
    return raw4(a_at(f, m, r), a_at(f, m, r + 4u), a_at(f, m, r + 8u), a_at(f, m, r + 12u));
}

fn gemm_fetch_b(f: GemmFeed, lid: u32, r0: u32, p: u32) -> GemmRaw {
    var r = r0 + lid / 16u;
    var j = lid % 16u;
    if (B_STEPS) {
        r = r0 + lid % 16u;
        j = lid / 16u;
    }
    let n = f.n0 + 64u * p + 4u * j;
    return raw4(b_at(f, r, n), b_at(f, r, n + 1u), b_at(f, r, n + 2u), b_at(f, r, n + 3u));
}

// Stores the 4 x 4 block `acc` at rows m .. m+3 and columns n .. n+3 of batch z (z0, z1): the
// epilogue applied, through the output's strides (split-K: the partial sums of `slice` as they
// are).
fn store_block(acc: mat4x4<f32>, m: u32, n: u32, z: u32, z0: i32, z1: i32, slice: u32) {
    if (SPLIT) {
        // Rows and columns are padded to whole tiles, so every store is in range.
        let cols = mp_u[pz()].split.w;
        let row0 = (z * mp_u[pz()].split.x + slice) * mp_u[pz()].split.z + m;
        for (var i = 0u; i < 4u; i = i + 1u) {
            for (var j = 0u; j < 4u; j = j + 1u) {
                mm_partial((row0 + i) * cols + n + j, acc[i][j]);
            }
        }
        return;
    }
    let c0 = mp_u[pz()].base.z + z0 * mp_u[pz()].sc.z + z1 * mp_u[pz()].sc.w;
    let o0 = mp_u[pz()].base.w + z0 * mp_u[pz()].so.z + z1 * mp_u[pz()].so.w;
    // A row's 4 outputs are consecutive (unit column stride, all 4 columns in range): one
    // store of 4 (a 16-bit output's two whole words where the first is even).
    let row4 = mp_u[pz()].so.y == 1 && n + 3u < mp_u[pz()].dims.y;
    for (var i = 0u; i < 4u; i = i + 1u) {
        if (row4 && m + i < mp_u[pz()].dims.x) {
            let ci = c0 + i32(m + i) * mp_u[pz()].sc.x + i32(n) * mp_u[pz()].sc.y;
            let sc = mp_u[pz()].sc.y;
            mm_store4(u32(o0 + i32(m + i) * mp_u[pz()].so.x + i32(n)), vec4<f32>(mm_finish(acc[i][0], ci), mm_finish(acc[i][1], ci + sc), mm_finish(acc[i][2], ci + 2 * sc), mm_finish(acc[i][3], ci + 3 * sc)));
        } else if (m + i < mp_u[pz()].dims.x) {
            for (var j = 0u; j < 4u; j = j + 1u) {
                if (n + j < mp_u[pz()].dims.y) {
                    mm_store(u32(o0 + i32(m + i) * mp_u[pz()].so.x + i32(n + j) * mp_u[pz()].so.y), mm_finish(acc[i][j], c0 + i32(m + i) * mp_u[pz()].sc.x + i32(n + j) * mp_u[pz()].sc.y));
                }
            }
        }
    }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    // Whole workgroups past the work leave together (the barriers stay in uniform control flow).
    let id = wid.x + wid.y * nwg.x;
    if (id >= mp_u[pz()].work.w) {
        return;
    }
    let tile_m = id % mp_u[pz()].work.x;
    let rest = id / mp_u[pz()].work.x;
    let tile_n = rest % mp_u[pz()].work.y;
    var z = rest / mp_u[pz()].work.y;
    var slice = 0u;
    if (SPLIT) {
        slice = z % mp_u[pz()].split.x;
        z = z / mp_u[pz()].split.x;
    }
    let z0 = i32(z / mp_u[pz()].work.z);
    let z1 = i32(z % mp_u[pz()].work.z);
    var f: GemmFeed;
    f.a0 = mp_u[pz()].base.x + z0 * mp_u[pz()].sa.z + z1 * mp_u[pz()].sa.w;
    f.b0 = mp_u[pz()].base.y + z0 * mp_u[pz()].sb.z + z1 * mp_u[pz()].sb.w;
    f.m0 = tile_m * 64u * PM;
    f.n0 = tile_n * 64u * PN;
    var sa = STAGE_A_ROWS;
    if (A_STEPS) {
        sa = STAGE_A_STEPS;
    }
    var sb = STAGE_B_COLS;
    if (B_STEPS) {
        sb = STAGE_B_STEPS;
    }
    // Register blocks: rows 64a + 4tx .. x columns 64b + 4ty .., 4 x 4 each; lanes run along
    // the columns.
    let lanes = gemm_lanes(lid);
    let tx = lanes.y;
    let ty = lanes.x;
    var begin = 0u;
    var end = mp_u[pz()].dims.z;
    if (SPLIT) {
        begin = slice * mp_u[pz()].split.y;
        end = min(end, begin + mp_u[pz()].split.y);
    }
    let acc = gemm_tile(f, lid, tx, ty, begin, end, sa, sb);
    for (var a = 0u; a < PM; a = a + 1u) {
        for (var b = 0u; b < PN; b = b + 1u) {
            store_block(gemm_block(acc, a, b), f.m0 + 64u * a + 4u * tx, f.n0 + 64u * b + 4u * ty, z, z0, z1, slice);
        }
    }
}
