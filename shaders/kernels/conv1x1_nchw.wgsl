// 1x1 convolution, pixel-vectorized (the NCHW orientation: A = weight [K, C], B = the image's
// [C, H*W]). Each invocation holds its two quads' 8 pixels x up to 4*CQ <= 64 input channels in
// registers (one mat4x4 per 4 channels: columns are channels, rows pixels), then walks the
// window's output channels 4 at a time: acc_k += X * w[k, c..c+4], so each uniform weight feeds
// 32 multiply-adds and no operand is re-read from memory. Barrier-free, or with the input staged
// through workgroup memory under TILED (conv.wgsl). Weights: wu[k * CQ + i] holds w[k, 4i..4i+4]
// (rows of 4*CQ channels, 4096 / CQ rows).
//
// The 16 channel quads are named rather than held in an array, and `step` takes the quad's
// number as a constant: shader compilers that cannot unroll a loop over CQ would otherwise index
// the array per lane (on lavapipe that is a gather per element, and the kernel ran at about 2/3
// of this speed). Quads at or past CQ are zero and their steps compile away (CQ is a pipeline
// constant).

// `step`, `quad_load` and `store_block`: preludes/conv1x1_nchw_step.wgsl (shared with
// matmul_blocked.wgsl).

@compute @workgroup_size(WG)
fn main(inv: Invocation) {
    let q = inv.gid.x + inv.gid.y * cp_u[pz()].work.w;
    // No invocation returns early: every one takes part in the tiled variant's staging and in
    // shuffled weight reads, and WGSL's uniformity rules (enforced by browsers' compilers) allow
    // a barrier only where no invocation can have left. Quads past the work load zeros and
    // store nothing.
    let t = tile_at(q, inv.lid);
    let h = hold_input(t);
    for (var k = 0u; k < cp_u[pz()].work.z; k = k + 4u) {
        store_block(t, k, block(h, weights(inv, k * CQ, 1u)));
    }
}
