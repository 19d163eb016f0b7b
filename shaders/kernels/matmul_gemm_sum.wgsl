// The second dispatch of a split-K matrix product (matmul_gemm.wgsl under SPLIT): each invocation
// adds the S partial sums of one output element in slice order (so the result is the same at
// every run), then applies the epilogue act(alpha * acc + beta * C) and stores it through the
// output's strides. The partial sums are bound as A's words (binding 1, float32 bits); this
// dispatch's work.w counts invocations (batches x m x n). Invocations run along n.

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = gid.x + gid.y * nwg.x * 256u;
    if (id >= mp_u[pz()].work.w) {
        return;
    }
    let n = id % mp_u[pz()].dims.y;
    let m = (id / mp_u[pz()].dims.y) % mp_u[pz()].dims.x;
    let z = id / (mp_u[pz()].dims.y * mp_u[pz()].dims.x);
    let slices = mp_u[pz()].split.x;
    var v = 0.0;
    for (var s = 0u; s < slices; s = s + 1u) {
        v = v + bitcast<f32>(a[((z * slices + s) * mp_u[pz()].split.z + m) * mp_u[pz()].split.w + n]);
    }
    let z0 = i32(z / mp_u[pz()].work.z);
    let z1 = i32(z % mp_u[pz()].work.z);
    let c0 = mp_u[pz()].base.z + z0 * mp_u[pz()].sc.z + z1 * mp_u[pz()].sc.w;
    let o0 = mp_u[pz()].base.w + z0 * mp_u[pz()].so.z + z1 * mp_u[pz()].so.w;
    mm_store(u32(o0 + i32(m) * mp_u[pz()].so.x + i32(n) * mp_u[pz()].so.y), mm_finish(v, c0 + i32(m) * mp_u[pz()].sc.x + i32(n) * mp_u[pz()].sc.y));
}
