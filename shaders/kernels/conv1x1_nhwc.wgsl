// 1x1 convolution, channel-vectorized (the NHWC orientation: A = input [N*H*W, C], B = the
// weight transposed). Each invocation holds its two quads' 8 pixels (one quad's 4 under
// QUADS = 1) x up to 4*CQ <= 64 input channels in registers (one mat4x4 per 4 channels:
// columns are pixels, each a vec4 over channels), then walks the window's output channels 4 at
// a time: acc_pixel (a vec4 over 4 output channels) += W * x_pixel, where W's columns are
// w[k..k+4, c] for 4 channels. Barrier-free, or staged under TILED (conv.wgsl). Weights:
// wu[c * KR + k / 4] holds w[k..k+4, c] (rows of 4*KR output channels, 4*CQ rows).
//
// The quads are named, not held in an array: see conv1x1_nchw.wgsl.

// Output-channel quads per weight row.
override KR: u32 = 1024u / CQ;

// One step: quad i of the input into the 4 output channels whose rows `w` holds (rows kq,
// kq + KR, ...: row c is w[4kq..4kq+4, c]).
fn step(a: Acc, x: Pair, w: Weights, i: u32) -> Acc {
    if (i >= CQ) {
        return a;
    }
    let wm = mat4x4<f32>(weight(w, 4u * i), weight(w, 4u * i + 1u), weight(w, 4u * i + 2u), weight(w, 4u * i + 3u));
    if (QUADS == 1u) {
        return Acc(a.v0 + wm * x.a[0], a.v1 + wm * x.a[1], a.v2 + wm * x.a[2], a.v3 + wm * x.a[3], a.v4, a.v5, a.v6, a.v7);
    }
    return Acc(a.v0 + wm * x.a[0], a.v1 + wm * x.a[1], a.v2 + wm * x.a[2], a.v3 + wm * x.a[3], a.v4 + wm * x.b[0], a.v5 + wm * x.b[1], a.v6 + wm * x.b[2], a.v7 + wm * x.b[3]);
}

// Input channels 4i .. 4i+3 of the chunk at a quad's 4 pixels.
fn quad_load(qd: Quad, i: u32) -> mat4x4<f32> {
    return mat4x4<f32>(load_pixel(qd, 0u, i), load_pixel(qd, 1u, i), load_pixel(qd, 2u, i), load_pixel(qd, 3u, i));
}

@compute @workgroup_size(WG)
fn main(inv: Invocation) {
    let q = inv.gid.x + inv.gid.y * cp_u[pz()].work.w;
    // No invocation returns early: every one takes part in the tiled variant's staging and in
    // shuffled weight reads, and WGSL's uniformity rules (enforced by browsers' compilers) allow
    // a barrier only where no invocation can have left. Quads past the work load zeros and
    // store nothing.
    let t = tile_at(q, inv.lid);
    let h = hold_input(t);
    for (var kq = 0u; kq * 4u < cp_u[pz()].work.z; kq = kq + 1u) {
        let a = block(h, weights(inv, kq, KR));
        let k = kq * 4u;
        let b = bias4(k);
        store_pixel(t.a, 0u, k, a.v0, b);
        store_pixel(t.a, 1u, k, a.v1, b);
        store_pixel(t.a, 2u, k, a.v2, b);
        store_pixel(t.a, 3u, k, a.v3, b);
        if (QUADS == 2u) {
            store_pixel(t.b, 0u, k, a.v4, b);
            store_pixel(t.b, 1u, k, a.v5, b);
            store_pixel(t.b, 2u, k, a.v6, b);
            store_pixel(t.b, 3u, k, a.v7, b);
        }
    }
}
