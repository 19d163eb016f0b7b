// Rows that are contiguous in the destination and strided in the source (a stepped slice, a
// broadcast along the innermost dim, a column read into a row): 4-byte elements of one type,
// written as vec4 words. Plan dim 0 has destination stride 1; its size, the other destination
// strides and the destination offset are multiples of 4.
//
// Invocations are laid out in word columns (plan.wgsl's word_column): each moves one vec4 word
// of several consecutive rows.
//
// STEP, the source stride of plan dim 0 as the loads see it: 0 for a broadcast row (one load
// per row), -1 for any other stride (four scalar loads per destination word).

override WG: u32 = 256u;
override STEP: i32 = -1;

@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<vec4<u32>>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let t = invocation_index(gid);
    if (t >= plan_u[pz()].threads) {
        return;
    }
    let col = word_column(t, 4u);
    let ss = bitcast<u32>(plan_u[pz()].src_strides[0].x);
    let ds1 = bitcast<u32>(plan_u[pz()].dst_strides[0].y) >> 2u;
    let ss1 = bitcast<u32>(plan_u[pz()].src_strides[0].y);
    var d = col.x >> 2u;
    var s = col.y;
    for (var r = 0u; r < col.z; r = r + 1u) {
        if (STEP == 0) {
            dst[d] = vec4<u32>(src[s]);
        } else {
            dst[d] = vec4<u32>(src[s], src[s + ss], src[s + 2u * ss], src[s + 3u * ss]);
        }
        d = d + ds1;
        s = s + ss1;
    }
}
