// The rows kernel's workgroup tree (reduce_rows.wgsl) through subgroup shuffles, for adapters
// with subgroups (native): each subgroup folds its lanes in a fixed tree of shuffles (lane i
// with lane i + s, s = size / 2, ..., 1), then the subgroups' results meet in the same tree in
// workgroup memory, one barrier a level instead of one a lane level. The order depends on the
// subgroup size only, so the same input gives the same bits on one adapter. Needs full
// subgroups (the workgroup never returns early while any of its lanes continues).

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
    // count is a power of two (64 over a power-of-two subgroup size).
    for (var s = tl.count / 2u; s > 0u; s = s >> 1u) {
        if (tl.lid < s) {
            tree[tl.lid] = comb(k, tree[tl.lid], tree[tl.lid + s]);
        }
        workgroupBarrier();
    }
    let r = tree[0];
    workgroupBarrier();
    return r;
}
