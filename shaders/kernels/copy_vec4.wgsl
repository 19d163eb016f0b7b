// Copy of 16-byte words: rows of plan dim 0 that are contiguous and 16-byte aligned in both
// operands (a dense copy is one row). The plan counts vec4<u32> words. A workgroup moves
// WG * WPT consecutive words of one row, word e * WG + lane in step e, so that neighbouring
// invocations touch neighbouring words (coalesced on GPUs, one wide access on CPU SIMD).

override WG: u32 = 256u;
override WPT: u32 = 4u;

@group(0) @binding(1) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> dst: array<vec4<u32>>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    let t = invocation_index(gid);
    if (t >= plan_u[pz()].threads) {
        return;
    }
    let n0 = plan_u[pz()].sizes[0].x;
    let tile = t / WG;
    let row = tile / plan_u[pz()].inner_chunks;
    let first = (tile - row * plan_u[pz()].inner_chunks) * WG * WPT;
    let base = plan_offsets(row * n0 + first);
    for (var e = 0u; e < WPT; e = e + 1u) {
        let j = first + e * WG + lane;
        if (j < n0) {
            dst[base.x + j - first] = src[base.y + j - first];
        }
    }
}
