// Shared by the batched-transpose kernels. Plan dim 0 is contiguous in the destination, plan
// dim 1 in the source, other dims are batch dims; the plan uniform's inner_chunks and aux hold
// the number of TILE-wide blocks along dims 0 and 1.

override TILE: u32 = 4u;
// 0: neighbouring blocks along dim 0 (destination-contiguous) go to neighbouring indices;
// 1: along dim 1 (source-contiguous).
override ORDER: u32 = 0u;

struct Block {
    // First element of the block along dims 0 and 1.
    i0: u32,
    j0: u32,
    // The plan's sizes along dims 0 and 1 (the block's elements are those below them).
    m: u32,
    n: u32,
    // Element indices of the block's first element.
    dst: u32,
    src: u32,
    // Destination stride of dim 1 and source stride of dim 0 (the "row" strides).
    dst_row: u32,
    src_row: u32,
}

// The origin of block b.
fn transpose_block(b: u32) -> Block {
    let m = plan_u[pz()].sizes[0].x;
    let n = plan_u[pz()].sizes[0].y;
    let bm = plan_u[pz()].inner_chunks;
    let bn = plan_u[pz()].aux;
    let per_batch = bm * bn;
    let batch = b / per_batch;
    let k = b - batch * per_batch;
    var bi: u32;
    var bj: u32;
    if (ORDER == 0u) {
        bj = k / bm;
        bi = k - bj * bm;
    } else {
        bi = k / bn;
        bj = k - bi * bn;
    }
    let i0 = bi * TILE;
    let j0 = bj * TILE;
    let base = plan_offsets((batch * n + j0) * m + i0);
    return Block(i0, j0, m, n, base.x, base.y, bitcast<u32>(plan_u[pz()].dst_strides[0].y), bitcast<u32>(plan_u[pz()].src_strides[0].x));
}
