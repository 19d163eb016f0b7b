// Batched 2-D transpose through workgroup memory: plan dim 0 is contiguous in the destination,
// plan dim 1 in the source, the other dims are batch dims. A workgroup moves one TILE x TILE
// block: neighbouring invocations read neighbouring source elements into a padded tile (one
// extra column against bank conflicts), then, after a barrier, write neighbouring destination
// elements (coalesced on both sides on GPUs). Elements of 1, 2 or 4 bytes (EB), packed in u32
// words; sub-word stores use atomics so that no invocation writes a neighbour's bytes.

override WG: u32 = 256u;
override TILE: u32 = 32u;
override EB: u32 = 4u;

// Room for a 32 x 33 tile; TILE <= 32.
var<workgroup> tile: array<u32, 1056>;

@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<atomic<u32>>;

fn load(e: u32) -> u32 {
    if (EB == 4u) {
        return src[e];
    }
    if (EB == 2u) {
        return (src[e >> 1u] >> ((e & 1u) * 16u)) & 0xffffu;
    }
    return (src[e >> 2u] >> ((e & 3u) * 8u)) & 0xffu;
}

fn store(e: u32, v: u32) {
    if (EB == 4u) {
        atomicStore(&dst[e], v);
        return;
    }
    var w: u32;
    var shift: u32;
    var mask: u32;
    if (EB == 2u) {
        w = e >> 1u;
        shift = (e & 1u) * 16u;
        mask = 0xffffu;
    } else {
        w = e >> 2u;
        shift = (e & 3u) * 8u;
        mask = 0xffu;
    }
    atomicAnd(&dst[w], ~(mask << shift));
    atomicOr(&dst[w], (v & mask) << shift);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    // One block per workgroup; the test is uniform across the workgroup.
    let b = wid.x + wid.y * (plan.grid_row / WG);
    if (b * WG >= plan.threads) {
        return;
    }
    let m = plan.sizes[0].x;
    let n = plan.sizes[0].y;
    let bm = plan.inner_chunks;
    let bn = plan.aux;
    let per_batch = bm * bn;
    let batch = b / per_batch;
    let k = b - batch * per_batch;
    let bj = k / bm;
    let bi = k - bj * bm;
    let i0 = bi * TILE;
    let j0 = bj * TILE;
    let base = plan_offsets((batch * n + j0) * m + i0);
    let ds1 = bitcast<u32>(plan.dst_strides[0].y);
    let ss0 = bitcast<u32>(plan.src_strides[0].x);
    let rows = WG / TILE;
    let lane = lid % TILE;
    for (var r = lid / TILE; r < TILE; r = r + rows) {
        if (i0 + r < m && j0 + lane < n) {
            tile[r * (TILE + 1u) + lane] = load(base.y + r * ss0 + lane);
        }
    }
    workgroupBarrier();
    for (var c = lid / TILE; c < TILE; c = c + rows) {
        if (j0 + c < n && i0 + lane < m) {
            store(base.x + c * ds1 + lane, tile[lane * (TILE + 1u) + c]);
        }
    }
}
