// The rows kernel's workgroup tree (reduce_rows.wgsl) through subgroup shuffles, for adapters
// with subgroups (native): each subgroup folds its lanes in a fixed tree of shuffles (lane i
// with lane i + s, s = size / 2, ..., 1), then the subgroups' results meet in the same tree in
// workgroup memory, one barrier a level instead of one a lane level. The order depends on the
// subgroup size only, so the same input gives the same bits while a driver compiles the
// pipeline at one subgroup size (wgpu lets Vulkan drivers vary it between compiles; the
// order, not the correctness, would change). Needs full subgroups: 64 invocations, a multiple
// of every power-of-two size up to 64, and no early return while any lane continues.

struct TreeLane {
    @builtin(local_invocation_index) lid: u32,
    @builtin(subgroup_invocation_id) sid: u32,
    @builtin(subgroup_size) size: u32,
    @builtin(subgroup_id) sg: u32,
    @builtin(num_subgroups) count: u32,
}

var<workgroup> tree: array<vec4<u32>, 64>;

fn reduce_tree(k: u32, st: vec4<u32>, tl: TreeLane) -> vec4<u32> {
    var v = st;
    for (var s = tl.size / 2u; s > 0u; s = s >> 1u) {
        let o = subgroupShuffleDown(v, s);
        if (tl.sid < s) {
            v = comb(k, v, o);
        }
    }
    if (tl.sid == 0u) {
        tree[tl.sg] = v;
    }
    workgroupBarrier();
    // Any count of subgroups: the first half (rounded up) takes the rest, level by level.
    var n = tl.count;
    while (n > 1u) {
        let h = (n + 1u) / 2u;
        if (tl.lid < n - h) {
            tree[tl.lid] = comb(k, tree[tl.lid], tree[tl.lid + h]);
        }
        workgroupBarrier();
        n = h;
    }
    let r = tree[0];
    workgroupBarrier();
    return r;
}
