// Matrix-vector products, memory-bound: every element of the matrix operand is read once. The
// kernel sees n == 1 only: A's rows dotted with B's column (the host records a product with
// m == 1 as its transpose, B^T a^T, so that no load below chooses its binding at run time).
// L lanes per row (epi bits 8..). L = 1 on CPU adapters: a team
// of 8 lanes streams 8 rows (16 for 16-bit types), its lanes along k (neighbouring lanes read
// neighbouring words: one stream per row), each lane reading its steps of the vector once for
// all the team's rows (as one
// vec4 word where flag bit 4 allows, the rows' words too under bit 3), so the vector's loads
// are a fraction of the matrix's (a CPU adapter's per-lane loads cost the same whether their
// addresses are shared or not); the 8 partial sums of a row meet in lane order at the end.
// L > 1 on GPUs: a workgroup of 64 invocations covers 64 / L rows, the lanes of a row read
// consecutive 16-byte words where bit 3 allows (else elements), four words a step (4 float32
// or 8 16-bit elements each: loads in flight for a memory-bound kernel; on an H200, timed run
// after run without the bench's alternating copy (before 98d2810), this took
// [1, 4096] x [4096, 4096]^T from 0.85-0.88 of a same-bytes copy to 0.92-0.94 in float32, and
// from 0.38-0.39 to 0.42 in float16, where two words a step read 0.41-0.42), and their partial
// sums meet in workgroup memory in a fixed order. Each row's sum runs in a fixed order:
// deterministic. Operands and epilogue: preludes/matmul_io.wgsl.

// The one-lane kernel (L = 1, the host's `Vec1`) as its own pipeline: with TEAMS false its code
// compiles away, so that its registers do not count against the L > 1 pipeline, the one GPUs
// run (RADV, `gpu_budget`: one pipeline with both paths took 120 VGPRs and 8 waves once the
// teams took 16 rows; apart, the L > 1 pipeline keeps its 96 VGPRs and 10 waves, and the
// one-lane one takes 64 and 16).
override TEAMS: bool = false;

// The L > 1 kernel's 16-bit path (float16, bfloat16) as its own pipeline: float32 products
// then compile without its four words' 32 decoded elements (RADV, `gpu_budget`: 40 VGPRs and 22
// waves instead of 96 and 10; the 16-bit pipeline keeps 96 and 10).
override HALVES: bool = false;

// Rows per team where L = 1: 8 for float32, 16 for 16-bit types (the host's `vec_rows` in
// kernels/matmul/mod.rs sizes the grid by the same rule). Sixteen halve the vector's share of the loads; on lavapipe the
// float16 [1, 4096] x [4096, 4096]^T went from 0.77-0.79 of a same-bytes copy to 0.81-0.83,
// but float32 from 0.93-0.95 to 0.84-0.92 (its 16 rows' words held at once), so float32
// keeps 8.

// A's vec4 word at element `at`.
fn mat4(at: i32) -> vec4<f32> {
    return bitcast<vec4<f32>>(a4[u32(at) / 4u]);
}

// B's four elements from element kk: one vec4 word where flag bit 4 allows.
fn vec_word(vv: bool, v0: i32, kk: i32, vs: i32) -> vec4<f32> {
    if (vv) {
        return bitcast<vec4<f32>>(b4[u32(v0 + kk) / 4u]);
    }
    return vec4<f32>(load_b(v0 + kk * vs), load_b(v0 + (kk + 1) * vs), load_b(v0 + (kk + 2) * vs), load_b(v0 + (kk + 3) * vs));
}

// Eight 16-bit elements (a 16-byte word), as f32: float16 or bfloat16, as the uniform says.
struct Oct {
    lo: vec4<f32>,
    hi: vec4<f32>,
}

fn oct_f16(w: vec4<u32>) -> Oct {
    return Oct(vec4<f32>(f16x2(w.x), f16x2(w.y)), vec4<f32>(f16x2(w.z), f16x2(w.w)));
}

fn oct_bf16(w: vec4<u32>) -> Oct {
    let lo = vec4<u32>(w.x << 16u, w.x & 0xffff0000u, w.y << 16u, w.y & 0xffff0000u);
    let hi = vec4<u32>(w.z << 16u, w.z & 0xffff0000u, w.w << 16u, w.w & 0xffff0000u);
    return Oct(bitcast<vec4<f32>>(lo), bitcast<vec4<f32>>(hi));
}

fn oct(w: vec4<u32>) -> Oct {
    if (mp_u[pz()].dims.w == DT_F16) {
        return oct_f16(w);
    }
    return oct_bf16(w);
}

// The dot product of two words of eight.
fn dot8(x: Oct, y: Oct) -> f32 {
    return dot(x.lo, y.lo) + dot(x.hi, y.hi);
}

// A's eight 16-bit elements from element `at` (a multiple of 8).
fn mat8(at: i32) -> Oct {
    return oct(a4[u32(at) / 8u]);
}

// B's eight 16-bit elements from element kk: one word where flag bit 4 allows.
fn vec8(vv: bool, v0: i32, kk: i32, vs: i32) -> Oct {
    if (vv) {
        return oct(b4[u32(v0 + kk) / 8u]);
    }
    return Oct(vec_word(false, v0, kk, vs), vec_word(false, v0, kk + 4, vs));
}

// A's element `ks` (an offset from each row's start) in rows i .. i+3 of a team's `r0`.
fn rows4(r0: array<i32, 16>, i: u32, ks: i32) -> vec4<f32> {
    return vec4<f32>(load_a(r0[i] + ks), load_a(r0[i + 1u] + ks), load_a(r0[i + 2u] + ks), load_a(r0[i + 3u] + ks));
}

var<workgroup> part: array<f32, 64>;
// The one-lane kernel's partial sums: two vec4 (8 rows) per invocation at a time.
var<workgroup> teams: array<vec4<f32>, 128>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let id = wid.x + wid.y * nwg.x;
    if (id >= mp_u[pz()].work.w) {
        return;
    }
    let lanes = max(mp_u[pz()].epi.w >> 8u, 1u);
    let per = 64u / lanes;
    let group = id % mp_u[pz()].work.x;
    let z = id / mp_u[pz()].work.x;
    let z0 = i32(z / mp_u[pz()].work.z);
    let z1 = i32(z % mp_u[pz()].work.z);
    let rows = mp_u[pz()].dims.x;
    // A's (row, k) strides and start, B's k stride and start.
    let ms = vec2<i32>(mp_u[pz()].sa.x, mp_u[pz()].sa.y);
    let vs = mp_u[pz()].sb.x;
    let m0 = mp_u[pz()].base.x + z0 * mp_u[pz()].sa.z + z1 * mp_u[pz()].sa.w;
    let v0 = mp_u[pz()].base.y + z0 * mp_u[pz()].sb.z + z1 * mp_u[pz()].sb.w;
    let c0 = mp_u[pz()].base.z + z0 * mp_u[pz()].sc.z + z1 * mp_u[pz()].sc.w;
    let o0 = mp_u[pz()].base.w + z0 * mp_u[pz()].so.z + z1 * mp_u[pz()].so.w;
    let cs = mp_u[pz()].sc.x;
    let os = mp_u[pz()].so.x;
    if (TEAMS) {
        // A team of 8 lanes takes `nr` rows, its lanes along k: lane t reads words t, t + 8,
        // .. (neighbouring lanes, neighbouring words). Rows 8..15 (lo2, hi2) only for 16-bit
        // types (nr = 16): the 16-bit loops below.
        let halves = mp_u[pz()].dims.w != DT_F32;
        let nr = select(8u, 16u, halves);
        let team = lid / 8u;
        let tl = lid % 8u;
        let first = (group * 8u + team) * nr;
        // Rows past the end read the last row and store nothing.
        var r0: array<i32, 16>;
        for (var i = 0u; i < 16u; i = i + 1u) {
            r0[i] = m0 + i32(min(first + i, rows - 1u)) * ms.x;
        }
        var lo = vec4<f32>(0.0);
        var hi = vec4<f32>(0.0);
        var lo2 = vec4<f32>(0.0);
        var hi2 = vec4<f32>(0.0);
        // Whole 16-byte words of the rows under flag bit 3: 4 float32 or 8 16-bit elements.
        let epw = select(4u, 8u, halves);
        let kw = select(0u, mp_u[pz()].dims.z / epw, (mp_u[pz()].epi.w & 8u) != 0u);
        let vv = (mp_u[pz()].epi.w & 16u) != 0u;
        // Inside one `if`, so that the loops' lane-varying bounds leave the barrier below in
        // uniform control flow (browsers' compilers check). One word loop per vector layout and
        // 16-bit type, not one loop choosing per word: a CPU adapter runs both sides of a
        // branch. (The 16-bit loop for a vector not in whole words still decodes through
        // oct(), both types' code run: an uncommon layout, left so.)
        if (halves && vv && mp_u[pz()].dims.w == DT_F16) {
            for (var q = tl; q < kw; q = q + 8u) {
                let kk = i32(8u * q);
                let v = oct_f16(b4[u32(v0 + kk) / 8u]);
                lo = lo + vec4<f32>(dot8(oct_f16(a4[u32(r0[0] + kk) / 8u]), v), dot8(oct_f16(a4[u32(r0[1] + kk) / 8u]), v), dot8(oct_f16(a4[u32(r0[2] + kk) / 8u]), v), dot8(oct_f16(a4[u32(r0[3] + kk) / 8u]), v));
                hi = hi + vec4<f32>(dot8(oct_f16(a4[u32(r0[4] + kk) / 8u]), v), dot8(oct_f16(a4[u32(r0[5] + kk) / 8u]), v), dot8(oct_f16(a4[u32(r0[6] + kk) / 8u]), v), dot8(oct_f16(a4[u32(r0[7] + kk) / 8u]), v));
                lo2 = lo2 + vec4<f32>(dot8(oct_f16(a4[u32(r0[8] + kk) / 8u]), v), dot8(oct_f16(a4[u32(r0[9] + kk) / 8u]), v), dot8(oct_f16(a4[u32(r0[10] + kk) / 8u]), v), dot8(oct_f16(a4[u32(r0[11] + kk) / 8u]), v));
                hi2 = hi2 + vec4<f32>(dot8(oct_f16(a4[u32(r0[12] + kk) / 8u]), v), dot8(oct_f16(a4[u32(r0[13] + kk) / 8u]), v), dot8(oct_f16(a4[u32(r0[14] + kk) / 8u]), v), dot8(oct_f16(a4[u32(r0[15] + kk) / 8u]), v));
            }
        } else if (halves && vv) {
            for (var q = tl; q < kw; q = q + 8u) {
                let kk = i32(8u * q);
                let v = oct_bf16(b4[u32(v0 + kk) / 8u]);
                lo = lo + vec4<f32>(dot8(oct_bf16(a4[u32(r0[0] + kk) / 8u]), v), dot8(oct_bf16(a4[u32(r0[1] + kk) / 8u]), v), dot8(oct_bf16(a4[u32(r0[2] + kk) / 8u]), v), dot8(oct_bf16(a4[u32(r0[3] + kk) / 8u]), v));
                hi = hi + vec4<f32>(dot8(oct_bf16(a4[u32(r0[4] + kk) / 8u]), v), dot8(oct_bf16(a4[u32(r0[5] + kk) / 8u]), v), dot8(oct_bf16(a4[u32(r0[6] + kk) / 8u]), v), dot8(oct_bf16(a4[u32(r0[7] + kk) / 8u]), v));
                lo2 = lo2 + vec4<f32>(dot8(oct_bf16(a4[u32(r0[8] + kk) / 8u]), v), dot8(oct_bf16(a4[u32(r0[9] + kk) / 8u]), v), dot8(oct_bf16(a4[u32(r0[10] + kk) / 8u]), v), dot8(oct_bf16(a4[u32(r0[11] + kk) / 8u]), v));
                hi2 = hi2 + vec4<f32>(dot8(oct_bf16(a4[u32(r0[12] + kk) / 8u]), v), dot8(oct_bf16(a4[u32(r0[13] + kk) / 8u]), v), dot8(oct_bf16(a4[u32(r0[14] + kk) / 8u]), v), dot8(oct_bf16(a4[u32(r0[15] + kk) / 8u]), v));
            }
        } else if (halves) {
            for (var q = tl; q < kw; q = q + 8u) {
                let kk = i32(8u * q);
                let v = vec8(vv, v0, kk, vs);
                lo = lo + vec4<f32>(dot8(mat8(r0[0] + kk), v), dot8(mat8(r0[1] + kk), v), dot8(mat8(r0[2] + kk), v), dot8(mat8(r0[3] + kk), v));
                hi = hi + vec4<f32>(dot8(mat8(r0[4] + kk), v), dot8(mat8(r0[5] + kk), v), dot8(mat8(r0[6] + kk), v), dot8(mat8(r0[7] + kk), v));
                lo2 = lo2 + vec4<f32>(dot8(mat8(r0[8] + kk), v), dot8(mat8(r0[9] + kk), v), dot8(mat8(r0[10] + kk), v), dot8(mat8(r0[11] + kk), v));
                hi2 = hi2 + vec4<f32>(dot8(mat8(r0[12] + kk), v), dot8(mat8(r0[13] + kk), v), dot8(mat8(r0[14] + kk), v), dot8(mat8(r0[15] + kk), v));
            }
        } else if (vv) {
            for (var q = tl; q < kw; q = q + 8u) {
                let kk = i32(4u * q);
                let v = bitcast<vec4<f32>>(b4[u32(v0 + kk) / 4u]);
                lo = lo + vec4<f32>(dot(mat4(r0[0] + kk), v), dot(mat4(r0[1] + kk), v), dot(mat4(r0[2] + kk), v), dot(mat4(r0[3] + kk), v));
                hi = hi + vec4<f32>(dot(mat4(r0[4] + kk), v), dot(mat4(r0[5] + kk), v), dot(mat4(r0[6] + kk), v), dot(mat4(r0[7] + kk), v));
            }
        } else {
            for (var q = tl; q < kw; q = q + 8u) {
                let kk = i32(4u * q);
                let v = vec_word(false, v0, kk, vs);
                lo = lo + vec4<f32>(dot(mat4(r0[0] + kk), v), dot(mat4(r0[1] + kk), v), dot(mat4(r0[2] + kk), v), dot(mat4(r0[3] + kk), v));
                hi = hi + vec4<f32>(dot(mat4(r0[4] + kk), v), dot(mat4(r0[5] + kk), v), dot(mat4(r0[6] + kk), v), dot(mat4(r0[7] + kk), v));
            }
        }
        // The elements past the words (one loop per row count, as the word loops).
        if (halves) {
            for (var k = epw * kw + tl; k < mp_u[pz()].dims.z; k = k + 8u) {
                let ks = i32(k) * ms.y;
                let v = load_b(v0 + i32(k) * vs);
                lo = lo + v * rows4(r0, 0u, ks);
                hi = hi + v * rows4(r0, 4u, ks);
                lo2 = lo2 + v * rows4(r0, 8u, ks);
                hi2 = hi2 + v * rows4(r0, 12u, ks);
            }
        } else {
            for (var k = epw * kw + tl; k < mp_u[pz()].dims.z; k = k + 8u) {
                let ks = i32(k) * ms.y;
                let v = load_b(v0 + i32(k) * vs);
                lo = lo + v * rows4(r0, 0u, ks);
                hi = hi + v * rows4(r0, 4u, ks);
            }
        }
        // The team's 8 partial sums of each row meet in workgroup memory, added in lane order:
        // rows 0..7, then (nr = 16) rows 8..15 through the same slots. The first lane of each
        // team finishes its rows (no early return: the GEMM-shaped path below keeps its
        // barriers in uniform control flow).
        var sums = array<vec4<f32>, 4>();
        teams[2u * lid] = lo;
        teams[2u * lid + 1u] = hi;
        workgroupBarrier();
        if (tl == 0u) {
            for (var t = 0u; t < 8u; t = t + 1u) {
                sums[0] = sums[0] + teams[2u * (lid + t)];
                sums[1] = sums[1] + teams[2u * (lid + t) + 1u];
            }
        }
        if (nr == 16u) {
            workgroupBarrier();
            teams[2u * lid] = lo2;
            teams[2u * lid + 1u] = hi2;
            workgroupBarrier();
            if (tl == 0u) {
                for (var t = 0u; t < 8u; t = t + 1u) {
                    sums[2] = sums[2] + teams[2u * (lid + t)];
                    sums[3] = sums[3] + teams[2u * (lid + t) + 1u];
                }
            }
        }
        if (tl == 0u) {
            for (var i = 0u; i < nr; i = i + 1u) {
                let r = first + i;
                if (r < rows) {
                    mm_store(u32(o0 + i32(r) * os), mm_finish(sums[i / 4u][i % 4u], c0 + i32(r) * cs));
                }
            }
        }
        return;
    }
    let row = group * per + lid / lanes;
    let lane = lid % lanes;
    var acc = 0.0;
    if (row < rows) {
        let r0 = m0 + i32(row) * ms.x;
        // Where the flags allow, the row's whole vec4 words first: lane l takes words l,
        // l + L, ... (a row's lanes read L neighbouring words), two per step into two vec4
        // accumulators (more loads in flight), which meet in a fixed order; the tail below.
        // A word holds 4 float32 or 8 16-bit elements.
        let halves = HALVES;
        let epw = select(4u, 8u, halves);
        let k4 = select(0u, mp_u[pz()].dims.z / epw, (mp_u[pz()].epi.w & 8u) != 0u);
        let vv = (mp_u[pz()].epi.w & 16u) != 0u;
        var w0 = vec4<f32>(0.0);
        var w1 = vec4<f32>(0.0);
        var w2 = vec4<f32>(0.0);
        var w3 = vec4<f32>(0.0);
        var q = lane;
        if (halves) {
            // 16-bit: four words a step (the halves of the first two into w0..w3, then of the
            // last two), then one word a step.
            for (; q + 3u * lanes < k4; q = q + 4u * lanes) {
                let k0 = i32(8u * q);
                let k1 = i32(8u * (q + lanes));
                let k2 = i32(8u * (q + 2u * lanes));
                let k3 = i32(8u * (q + 3u * lanes));
                let a0 = mat8(r0 + k0);
                let a1 = mat8(r0 + k1);
                let a2 = mat8(r0 + k2);
                let a3 = mat8(r0 + k3);
                let b0 = vec8(vv, v0, k0, vs);
                let b1 = vec8(vv, v0, k1, vs);
                let b2 = vec8(vv, v0, k2, vs);
                let b3 = vec8(vv, v0, k3, vs);
                w0 = w0 + a0.lo * b0.lo + a2.lo * b2.lo;
                w1 = w1 + a0.hi * b0.hi + a2.hi * b2.hi;
                w2 = w2 + a1.lo * b1.lo + a3.lo * b3.lo;
                w3 = w3 + a1.hi * b1.hi + a3.hi * b3.hi;
            }
            for (; q < k4; q = q + lanes) {
                let kk = i32(8u * q);
                let m = mat8(r0 + kk);
                let v = vec8(vv, v0, kk, vs);
                w0 = w0 + m.lo * v.lo;
                w1 = w1 + m.hi * v.hi;
            }
        } else {
            // float32: four words a step, one into each accumulator, then one word a step.
            for (; q + 3u * lanes < k4; q = q + 4u * lanes) {
                let k0 = i32(4u * q);
                let k1 = i32(4u * (q + lanes));
                let k2 = i32(4u * (q + 2u * lanes));
                let k3 = i32(4u * (q + 3u * lanes));
                let a0 = mat4(r0 + k0);
                let a1 = mat4(r0 + k1);
                let a2 = mat4(r0 + k2);
                let a3 = mat4(r0 + k3);
                w0 = w0 + a0 * vec_word(vv, v0, k0, vs);
                w1 = w1 + a1 * vec_word(vv, v0, k1, vs);
                w2 = w2 + a2 * vec_word(vv, v0, k2, vs);
                w3 = w3 + a3 * vec_word(vv, v0, k3, vs);
            }
            for (; q < k4; q = q + lanes) {
                let kk = i32(4u * q);
                w0 = w0 + mat4(r0 + kk) * vec_word(vv, v0, kk, vs);
            }
        }
        let w = (w0 + w1) + (w2 + w3);
        acc = (w.x + w.y) + (w.z + w.w);
        for (var k = epw * k4 + lane; k < mp_u[pz()].dims.z; k = k + lanes) {
            acc = acc + load_a(r0 + i32(k) * ms.y) * load_b(v0 + i32(k) * vs);
        }
    }
    if (lanes > 1u) {
        part[lid] = acc;
        for (var s = lanes / 2u; s > 0u; s = s / 2u) {
            workgroupBarrier();
            if (lane < s) {
                part[lid] = part[lid] + part[lid + s];
            }
        }
        workgroupBarrier();
        acc = part[lid];
    }
    if (row < rows && lane == 0u) {
        mm_store(u32(o0 + i32(row) * os), mm_finish(acc, c0 + i32(row) * cs));
    }
}
