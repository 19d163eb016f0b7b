// The tall depthwise kernel's lanes (conv2d_depthwise_tall.wgsl), plain form: each invocation
// loads all 10 columns of its input rows. `slot` is the invocation's place in the dispatch.

struct Lanes {
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
}

fn slot(l: Lanes) -> u32 {
    return (l.wid.x + l.wid.y * l.nwg.x) * WG + l.lid;
}

// Columns 8 and 9 of a row whose columns 0 and 1 are c0, c1 (row offset `at`, first column
// ix0; `row` where the row lies in the image; `last` where the strip is its row's last).
fn right_cols(l: Lanes, c0: vec4<f32>, c1: vec4<f32>, at: i32, ix0: i32, k0: u32, row: bool, last: bool) -> Pair {
    return Pair(ldz(at, ix0 + 8, k0, row), ldz(at, ix0 + 9, k0, row));
}
