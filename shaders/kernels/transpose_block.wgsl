// Batched 2-D transpose, register-blocked: plan dim 0 is contiguous in the destination, plan
// dim 1 is contiguous in the source, the other dims are batch dims. Each invocation moves a
// TILE x TILE block: it reads TILE runs of TILE consecutive source elements and writes TILE
// runs of TILE consecutive destination elements, with no workgroup memory and no barriers
// (which suits CPU-backed adapters). 4-byte elements.

override WG: u32 = 64u;

@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let t = invocation_index(gid);
    if (t >= plan_u[pz()].threads) {
        return;
    }
    let blk = transpose_block(t);
    let ri = min(TILE, blk.m - blk.i0);
    let rj = min(TILE, blk.n - blk.j0);
    if (ri == 4u && rj == 4u && TILE == 4u) {
        // Full block: 16 loads, 16 stores, all addresses from two strides.
        var v: array<vec4<u32>, 4>;
        for (var r = 0u; r < 4u; r = r + 1u) {
            let s = blk.src + r * blk.src_row;
            v[r] = vec4<u32>(src[s], src[s + 1u], src[s + 2u], src[s + 3u]);
        }
        for (var c = 0u; c < 4u; c = c + 1u) {
            let d = blk.dst + c * blk.dst_row;
            dst[d] = v[0][c];
            dst[d + 1u] = v[1][c];
            dst[d + 2u] = v[2][c];
            dst[d + 3u] = v[3][c];
        }
        return;
    }
    for (var c = 0u; c < rj; c = c + 1u) {
        for (var r = 0u; r < ri; r = r + 1u) {
            dst[blk.dst + c * blk.dst_row + r] = src[blk.src + r * blk.src_row + c];
        }
    }
}
