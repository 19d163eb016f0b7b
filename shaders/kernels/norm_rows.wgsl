// layer_norm and group_norm of float rows in one dispatch (src/kernels/norm/): a workgroup
// per row, a row being the `n` contiguous input elements one mean and variance cover (a slice
// over layer_norm's normalized dims, a group of group_norm's channels with their pixels).
// Three walks over the row, invocation i taking elements i, i + WG, .. (neighbouring
// invocations read neighbouring elements; four loads in flight an invocation), or its 16-byte
// words i, i + WG, .. where the rows are whole aligned words (VEC4): the sum (compensated) for
// the mean, the sum of squared deviations from it (compensated) for the biased variance, then
// the writes; the invocations' sums meet in a fixed tree in workgroup memory, so the same input
// gives the same bits. Few long rows on a GPU go to norm_split.wgsl instead. Needs `dtypes`,
// `cast`, `compensated` and `norm` (the uniform, operands, walks and writes).

// Each invocation normalizes a whole row when PER_THREAD (software adapters, rows within their
// loop bound: no workgroup memory or barrier, what they run fastest); else a workgroup a row.
override PER_THREAD: bool = false;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let geo = norm_u[pz()].geo;
    let n = geo.y;
    let eps = norm_u[pz()].eps.x;
    norm_scale = sum_scale();
    if (PER_THREAD) {
        // No early return on the invocation's own index: the uniformity analysis would then
        // take the workgroup path's barriers below for non-uniform.
        let r = (wid.x + wid.y * geo.z) * WG + lid;
        if (r < geo.x) {
            let b = row_start(r);
            let mean = mean_of(walk(b.x, n, 0u, 1u, false, 0.0), n);
            let rstd = rsqrt_of(walk(b.x, n, 0u, 1u, true, mean) / f32(n) + eps);
            write_row(r, b.x, b.y, n, 0u, 0u, 1u, mean, rstd);
        }
        return;
    }
    let r = wid.x + wid.y * geo.z;
    // Uniform across the workgroup: the barriers below stay in uniform control flow.
    if (r >= geo.x) {
        return;
    }
    let b = row_start(r);
    // The mean, then the biased variance (squared deviations from the mean).
    let mean = mean_of(tree_sum(walk(b.x, n, lid, WG, false, 0.0), lid), n);
    let rstd = rsqrt_of(tree_sum(walk(b.x, n, lid, WG, true, mean), lid) / f32(n) + eps);
    write_row(r, b.x, b.y, n, 0u, lid, WG, mean, rstd);
}
