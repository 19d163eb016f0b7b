// Matrix-vector products (m == 1 or n == 1), memory-bound: every element of the matrix operand is
// read once. With n == 1 the rows are A's, dotted with B's column; with m == 1 the rows are B's
// columns, dotted with A's row. A workgroup of 64 invocations covers 64 / L rows, L lanes per row
// (epi bits 8..: 1 on CPU adapters, where one invocation streams its row; more on GPUs, where
// the lanes of a row read consecutive elements and their partial sums meet in workgroup memory
// in a fixed order: deterministic). Operands and epilogue: preludes/matmul_io.wgsl.

var<workgroup> part: array<f32, 64>;

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
    let row = group * per + lid / lanes;
    let lane = lid % lanes;
    var acc = 0.0;
    if (row < rows) {
        let r0 = m0 + i32(row) * ms.x;
        // Float32 rows 4-aligned and contiguous along k (one lane per row): 4 elements a load.
        let k4 = select(0u, mp.dims.z / 4u, (mp.epi.w & 8u) != 0u && lanes == 1u);
        for (var q = 0u; q < k4; q = q + 1u) {
            let kk = i32(4u * q);
            var w: vec4<f32>;
            var v: vec4<f32>;
            if (along_n) {
                w = bitcast<vec4<f32>>(b4[u32(r0 + kk) / 4u]);
                v = vec4<f32>(load_a(v0 + kk * vs), load_a(v0 + (kk + 1) * vs), load_a(v0 + (kk + 2) * vs), load_a(v0 + (kk + 3) * vs));
            } else {
                w = bitcast<vec4<f32>>(a4[u32(r0 + kk) / 4u]);
                v = vec4<f32>(load_b(v0 + kk * vs), load_b(v0 + (kk + 1) * vs), load_b(v0 + (kk + 2) * vs), load_b(v0 + (kk + 3) * vs));
            }
            acc = acc + dot(w, v);
        }
        if (along_n) {
            for (var k = lane + 4u * k4; k < mp.dims.z; k = k + lanes) {
                acc = acc + load_b(r0 + i32(k) * ms.y) * load_a(v0 + i32(k) * vs);
            }
        } else {
            for (var k = lane + 4u * k4; k < mp.dims.z; k = k + lanes) {
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
        let c0 = mp.base.z + z0 * mp.sc.z + z1 * mp.sc.w;
        let o0 = mp.base.w + z0 * mp.so.z + z1 * mp.so.w;
        var cs = mp.sc.x;
        var os = mp.so.x;
        if (along_n) {
            cs = mp.sc.y;
            os = mp.so.y;
        }
        y[u32(o0 + i32(row) * os)] = mm_finish(acc, c0 + i32(row) * cs);
    }
}
