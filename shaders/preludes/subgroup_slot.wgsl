// For kernels on CPU adapters with full subgroups that hand out work by lane
// (conv2d_direct_band.wgsl, conv2d_depthwise_cols_shuffled.wgsl): lane s of subgroup q of
// workgroup (x, y), in a grid `groups_x` workgroups wide, takes slot
// (x + y * groups_x) * WG + q * S + s (S the subgroup size). For full subgroups that is one
// slot per invocation, whichever invocations a driver puts in one subgroup, and consecutive
// lanes of a subgroup hold consecutive slots.
fn subgroup_slot(wid: vec3<u32>, groups_x: u32, sg: u32, size: u32, sid: u32) -> u32 {
    return (wid.x + wid.y * groups_x) * WG + sg * size + sid;
}
