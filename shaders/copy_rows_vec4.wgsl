// Rows of whole vec4 words in both operands that are too short for copy_vec4.wgsl, whose
// workgroups each move a run of WG * WPT words of one row. The plan counts vec4<u32> words.
// Invocations are laid out in word columns (plan.wgsl's word_column): each moves one word of
// several consecutive rows, so a row of 7 words keeps 7 of every 8 invocations busy.

override WG: u32 = 256u;

@group(0) @binding(1) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> dst: array<vec4<u32>>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let t = invocation_index(gid);
    if (t >= plan.threads) {
        return;
    }
    let col = word_column(t, 1u);
    let ds1 = bitcast<u32>(plan.dst_strides[0].y);
    let ss1 = bitcast<u32>(plan.src_strides[0].y);
    var d = col.x;
    var s = col.y;
    for (var r = 0u; r < col.z; r = r + 1u) {
        dst[d] = src[s];
        d = d + ds1;
        s = s + ss1;
    }
}
