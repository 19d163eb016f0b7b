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

// One step: quad i of the input into the 4 output channels whose rows `w` holds (rows from
// k * CQ: row m * CQ + i is w[k + m, 4i..4i+4]).
fn step(a: Acc, x: Pair, w: Weights, i: u32) -> Acc {
    if (i >= CQ) {
        return a;
    }
    let w0 = weight(w, i);
    let w1 = weight(w, CQ + i);
    let w2 = weight(w, 2u * CQ + i);
    let w3 = weight(w, 3u * CQ + i);
    return Acc(a.v0 + x.a * w0, a.v1 + x.a * w1, a.v2 + x.a * w2, a.v3 + x.a * w3, a.v4 + x.b * w0, a.v5 + x.b * w1, a.v6 + x.b * w2, a.v7 + x.b * w3);
}

// Input channels 4i .. 4i+3 of the chunk at a quad's pixels.
fn quad_load(qd: Quad, i: u32) -> mat4x4<f32> {
    return mat4x4<f32>(load_channel(qd, 4u * i), load_channel(qd, 4u * i + 1u), load_channel(qd, 4u * i + 2u), load_channel(qd, 4u * i + 3u));
}

@compute @workgroup_size(WG)
fn main(inv: Invocation) {
    let q = inv.gid.x + inv.gid.y * cp.work.w;
    // No invocation returns early: every one takes part in the tiled variant's staging and in
    // shuffled weight reads, and WGSL's uniformity rules (enforced by browsers' compilers) allow
    // a barrier only where no invocation can have left. Quads past the work load zeros and
    // store nothing.
    let t = tile_at(q, inv.lid);
    let h = hold(t);
    for (var k = 0u; k < cp.work.z; k = k + 4u) {
        let a = block(h, weights(inv, k * CQ, 1u));
        store_channel(t.a, k, a.v0);
        store_channel(t.a, k + 1u, a.v1);
        store_channel(t.a, k + 2u, a.v2);
        store_channel(t.a, k + 3u, a.v3);
        store_channel(t.b, k, a.v4);
        store_channel(t.b, k + 1u, a.v5);
        store_channel(t.b, k + 2u, a.v6);
        store_channel(t.b, k + 3u, a.v7);
    }
}
