// The tall depthwise kernel's lanes (conv2d_depthwise_tall.wgsl) on CPU adapters with full
// subgroups: lanes take slots by subgroup_slot.wgsl, so the next lane holds the next strip of
// the same row (unless the strip is its row's last or the lane its subgroup's last), and
// columns 8 and 9 of a strip's input rows are columns 0 and 1 of the next strip's: taken from
// the next lane by a shuffle, loaded only by the lanes without one. On lavapipe every storage
// load is a loop over the lanes.

struct Lanes {
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(subgroup_id) sg: u32,
    @builtin(subgroup_size) size: u32,
    @builtin(subgroup_invocation_id) sid: u32,
}

fn slot(l: Lanes) -> u32 {
    return subgroup_slot(l.wid, l.nwg.x, l.sg, l.size, l.sid);
}

// Columns 8 and 9 of a row whose columns 0 and 1 are c0, c1 (row offset `at`, first column
// ix0; `row` where the row lies in the image; `last` where the strip is its row's last).
// Called in uniform control flow (the shuffles).
fn right_cols(l: Lanes, c0: vec4<f32>, c1: vec4<f32>, at: i32, ix0: i32, k0: u32, row: bool, last: bool) -> Pair {
    let src = min(l.sid + 1u, l.size - 1u);
    var p = Pair(subgroupShuffle(c0, src), subgroupShuffle(c1, src));
    if (last || l.sid + 1u >= l.size) {
        p = Pair(ldz(at, ix0 + 8, k0, row), ldz(at, ix0 + 9, k0, row));
    }
    return p;
}
