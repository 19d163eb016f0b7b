// Batched 2-D transpose through workgroup memory: plan dim 0 is contiguous in the destination,
// plan dim 1 in the source, the other dims are batch dims. A workgroup moves one TILE x TILE
// block: neighbouring invocations read neighbouring source elements into a padded tile (one
// extra column against bank conflicts), then, after a barrier, write neighbouring destination
// elements (coalesced on both sides on GPUs). Elements of 1, 2 or 4 bytes, through
// packed.wgsl (SRC_BYTES = DST_BYTES). TILE <= 32.

override WG: u32 = 256u;

// Room for a 32 x 33 tile; TILE <= 32.
var<workgroup> tile: array<u32, 1056>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    // One block per workgroup; the test is uniform across the workgroup.
    let b = wid.x + wid.y * (plan_u[pz()].grid_row / WG);
    if (b * WG >= plan_u[pz()].threads) {
        return;
    }
    let blk = transpose_block(b);
    let rows = WG / TILE;
    let lane = lid % TILE;
    for (var r = lid / TILE; r < TILE; r = r + rows) {
        if (blk.i0 + r < blk.m && blk.j0 + lane < blk.n) {
            tile[r * (TILE + 1u) + lane] = load(blk.src + r * blk.src_row + lane);
        }
    }
    workgroupBarrier();
    for (var c = lid / TILE; c < TILE; c = c + rows) {
        if (blk.j0 + c < blk.n && blk.i0 + lane < blk.m) {
            store(blk.dst + c * blk.dst_row + lane, tile[lane * (TILE + 1u) + c]);
        }
    }
}
