// The rows kernel's workgroup tree (reduce_rows.wgsl), in workgroup memory: for adapters
// without subgroups (GL, browsers). reduce_tree_subgroup.wgsl is the same interface.

struct TreeLane {
    @builtin(local_invocation_index) lid: u32,
}

var<workgroup> tree: array<vec4<u32>, 64>;

// The workgroup's states combined in a fixed tree (invocation i with i + s, s = 32, ..., 1).
fn reduce_tree(k: u32, st: vec4<u32>, tl: TreeLane) -> vec4<u32> {
    let lid = tl.lid;
    tree[lid] = st;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
        if (lid < s) {
            tree[lid] = comb(k, tree[lid], tree[lid + s]);
        }
        workgroupBarrier();
    }
    let r = tree[0];
    workgroupBarrier();
    return r;
}
