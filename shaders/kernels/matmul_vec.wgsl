// Matrix-vector products (m == 1 or n == 1), memory-bound: every element of the matrix operand is
// read once. With n == 1 the rows are A's, dotted with B's column; with m == 1 the rows are B's
// columns, dotted with A's row. L lanes per row (epi bits 8..). L = 1 on CPU adapters: a team
// of 8 lanes streams ROWS rows, its lanes along k (neighbouring lanes read neighbouring words:
// one stream per row), each lane reading its steps of the vector once for all ROWS rows (as one
// vec4 word where flag bit 4 allows, the rows' words too under bit 3), so the vector's loads
// are a fraction of the matrix's (a CPU adapter's per-lane loads cost the same whether their
// addresses are shared or not); the 8 partial sums of a row meet in lane order at the end.
// L > 1 on GPUs: a workgroup of 64 invocations covers 64 / L rows, the lanes of a row read
// consecutive 16-byte words where bit 3 allows (else elements; float32 two words a step,
// 16-bit types one word of 8), and their partial sums meet in workgroup memory in a fixed order. Each row's sum runs in a fixed order: deterministic. Operands and epilogue:
// preludes/matmul_io.wgsl.

// Rows per invocation where L = 1 (two vec4 accumulators).
const ROWS: u32 = 8u;

// The matrix operand's vec4 word at element `at` (B's along n, else A's).
fn mat4(along_n: bool, at: i32) -> vec4<f32> {
    if (along_n) {
        return bitcast<vec4<f32>>(b4[u32(at) / 4u]);
    }
    return bitcast<vec4<f32>>(a4[u32(at) / 4u]);
}

// The matrix operand's element at `at`.
fn mat1(along_n: bool, at: i32) -> f32 {
    if (along_n) {
        return load_b(at);
    }
    return load_a(at);
}

// The vector's four elements from element kk (A's row for n == 1, else B's column): one vec4
// word where flag bit 4 allows.
fn vec_word(along_n: bool, vv: bool, v0: i32, kk: i32, vs: i32) -> vec4<f32> {
    if (vv && along_n) {
        return bitcast<vec4<f32>>(a4[u32(v0 + kk) / 4u]);
    }
    if (vv) {
        return bitcast<vec4<f32>>(b4[u32(v0 + kk) / 4u]);
    }
    if (along_n) {
        return vec4<f32>(load_a(v0 + kk * vs), load_a(v0 + (kk + 1) * vs), load_a(v0 + (kk + 2) * vs), load_a(v0 + (kk + 3) * vs));
    }
    return vec4<f32>(load_b(v0 + kk * vs), load_b(v0 + (kk + 1) * vs), load_b(v0 + (kk + 2) * vs), load_b(v0 + (kk + 3) * vs));
}

// Eight 16-bit elements (a 16-byte word), as f32: float16 or bfloat16, as the uniform says.
struct Oct {
    lo: vec4<f32>,
    hi: vec4<f32>,
}

fn oct(w: vec4<u32>) -> Oct {
    if (mp.dims.w == DT_F16) {
        return Oct(vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y)), vec4<f32>(unpack2x16float(w.z), unpack2x16float(w.w)));
    }
    let lo = vec4<u32>(w.x << 16u, w.x & 0xffff0000u, w.y << 16u, w.y & 0xffff0000u);
    let hi = vec4<u32>(w.z << 16u, w.z & 0xffff0000u, w.w << 16u, w.w & 0xffff0000u);
    return Oct(bitcast<vec4<f32>>(lo), bitcast<vec4<f32>>(hi));
}

// The matrix operand's eight 16-bit elements from element `at` (a multiple of 8).
fn mat8(along_n: bool, at: i32) -> Oct {
    if (along_n) {
        return oct(b4[u32(at) / 8u]);
    }
    return oct(a4[u32(at) / 8u]);
}

// The vector's eight 16-bit elements from element kk: one word where flag bit 4 allows.
fn vec8(along_n: bool, vv: bool, v0: i32, kk: i32, vs: i32) -> Oct {
    if (vv && along_n) {
        return oct(a4[u32(v0 + kk) / 8u]);
    }
    if (vv) {
        return oct(b4[u32(v0 + kk) / 8u]);
    }
    return Oct(vec_word(along_n, false, v0, kk, vs), vec_word(along_n, false, v0, kk + 4, vs));
}

var<workgroup> part: array<f32, 64>;
// The one-lane kernel's partial sums: two vec4 (ROWS rows) per invocation.
var<workgroup> teams: array<vec4<f32>, 128>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let id = wid.x + wid.y * nwg.x;
    if (id >= mp.work.w) {
        return;
    }
    let lanes = max(mp.epi.w >> 8u, 1u);
    let per = 64u / lanes;
    let group = id % mp.work.x;
    let z = id / mp.work.x;
    let z0 = i32(z / mp.work.z);
    let z1 = i32(z % mp.work.z);
    let along_n = mp.dims.x == 1u;
    var rows = mp.dims.x;
    // The matrix operand's (row, k) strides and start, the vector's k stride and start.
    var ms = vec2<i32>(mp.sa.x, mp.sa.y);
    var vs = mp.sb.x;
    var m0 = mp.base.x + z0 * mp.sa.z + z1 * mp.sa.w;
    var v0 = mp.base.y + z0 * mp.sb.z + z1 * mp.sb.w;
    if (along_n) {
        rows = mp.dims.y;
        ms = vec2<i32>(mp.sb.y, mp.sb.x);
        vs = mp.sa.y;
        let t = m0;
        m0 = v0;
        v0 = t;
    }
    let c0 = mp.base.z + z0 * mp.sc.z + z1 * mp.sc.w;
    let o0 = mp.base.w + z0 * mp.so.z + z1 * mp.so.w;
    var cs = mp.sc.x;
    var os = mp.so.x;
    if (along_n) {
        cs = mp.sc.y;
        os = mp.so.y;
    }
    if (lanes == 1u) {
        // A team of 8 lanes takes ROWS rows, its lanes along k: lane t reads words t, t + 8, ..
        // (neighbouring lanes, neighbouring words).
        let team = lid / 8u;
        let tl = lid % 8u;
        let first = (group * 8u + team) * ROWS;
        // Rows past the end read the last row and store nothing.
        var r0: array<i32, 8>;
        for (var i = 0u; i < ROWS; i = i + 1u) {
            r0[i] = m0 + i32(min(first + i, rows - 1u)) * ms.x;
        }
        var lo = vec4<f32>(0.0);
        var hi = vec4<f32>(0.0);
        let k4 = select(0u, mp.dims.z / 4u, (mp.epi.w & 8u) != 0u);
        let vv = (mp.epi.w & 16u) != 0u;
        // Inside one `if`, so that the loops' lane-varying bounds leave the barrier below in
        // uniform control flow (browsers' compilers check).
        if (true) {
            for (var q = tl; q < k4; q = q + 8u) {
                let kk = i32(4u * q);
                let v = vec_word(along_n, vv, v0, kk, vs);
                lo = lo + vec4<f32>(dot(mat4(along_n, r0[0] + kk), v), dot(mat4(along_n, r0[1] + kk), v), dot(mat4(along_n, r0[2] + kk), v), dot(mat4(along_n, r0[3] + kk), v));
                hi = hi + vec4<f32>(dot(mat4(along_n, r0[4] + kk), v), dot(mat4(along_n, r0[5] + kk), v), dot(mat4(along_n, r0[6] + kk), v), dot(mat4(along_n, r0[7] + kk), v));
            }
            for (var k = 4u * k4 + tl; k < mp.dims.z; k = k + 8u) {
                let kk = i32(k);
                let ks = kk * ms.y;
                var v: f32;
                if (along_n) {
                    v = load_a(v0 + kk * vs);
                } else {
                    v = load_b(v0 + kk * vs);
                }
                lo = lo + v * vec4<f32>(mat1(along_n, r0[0] + ks), mat1(along_n, r0[1] + ks), mat1(along_n, r0[2] + ks), mat1(along_n, r0[3] + ks));
                hi = hi + v * vec4<f32>(mat1(along_n, r0[4] + ks), mat1(along_n, r0[5] + ks), mat1(along_n, r0[6] + ks), mat1(along_n, r0[7] + ks));
            }
        }
        // The team's 8 partial sums of each row meet in workgroup memory, added in lane order.
        teams[2u * lid] = lo;
        teams[2u * lid + 1u] = hi;
        workgroupBarrier();
        // The first lane of each team finishes its rows (no early return: the GEMM-shaped
        // path below keeps its barriers in uniform control flow).
        if (tl == 0u) {
            lo = vec4<f32>(0.0);
            hi = vec4<f32>(0.0);
            for (var t = 0u; t < 8u; t = t + 1u) {
                lo = lo + teams[2u * (lid + t)];
                hi = hi + teams[2u * (lid + t) + 1u];
            }
            for (var i = 0u; i < ROWS; i = i + 1u) {
                let r = first + i;
                if (r < rows) {
                    var acc = lo[i % 4u];
                    if (i >= 4u) {
                        acc = hi[i % 4u];
                    }
                    y[u32(o0 + i32(r) * os)] = mm_finish(acc, c0 + i32(r) * cs);
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
        let halves = mp.dims.w != DT_F32;
        let epw = select(4u, 8u, halves);
        let k4 = select(0u, mp.dims.z / epw, (mp.epi.w & 8u) != 0u);
        let vv = (mp.epi.w & 16u) != 0u;
        var w0 = vec4<f32>(0.0);
        var w1 = vec4<f32>(0.0);
        if (halves) {
            // 16-bit: one word a step, its two halves into the two accumulators.
            for (var q = lane; q < k4; q = q + lanes) {
                let kk = i32(8u * q);
                let m = mat8(along_n, r0 + kk);
                let v = vec8(along_n, vv, v0, kk, vs);
                w0 = w0 + m.lo * v.lo;
                w1 = w1 + m.hi * v.hi;
            }
        } else {
            var q = lane;
            for (; q + lanes < k4; q = q + 2u * lanes) {
                let kk = i32(4u * q);
                let kl = i32(4u * (q + lanes));
                w0 = w0 + mat4(along_n, r0 + kk) * vec_word(along_n, vv, v0, kk, vs);
                w1 = w1 + mat4(along_n, r0 + kl) * vec_word(along_n, vv, v0, kl, vs);
            }
            if (q < k4) {
                let kk = i32(4u * q);
                w0 = w0 + mat4(along_n, r0 + kk) * vec_word(along_n, vv, v0, kk, vs);
            }
        }
        let w = w0 + w1;
        acc = (w.x + w.y) + (w.z + w.w);
        if (along_n) {
            for (var k = epw * k4 + lane; k < mp.dims.z; k = k + lanes) {
                acc = acc + load_b(r0 + i32(k) * ms.y) * load_a(v0 + i32(k) * vs);
            }
        } else {
            for (var k = epw * k4 + lane; k < mp.dims.z; k = k + lanes) {
                acc = acc + load_a(r0 + i32(k) * ms.y) * load_b(v0 + i32(k) * vs);
            }
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
        y[u32(o0 + i32(row) * os)] = mm_finish(acc, c0 + i32(row) * cs);
    }
}
