// The NCHW-orientation 1x1 kernels' step, input loads and output stores (conv1x1_nchw.wgsl;
// matmul_blocked.wgsl runs the same inner product with a batch of weights): see
// conv1x1_nchw.wgsl for the layout.

// The weight rows of step i: row m * CQ + i of `w` (w[k + m, 4i..4i+4]) for m = 0..3.
struct StepRows {
    w0: vec4<f32>,
    w1: vec4<f32>,
    w2: vec4<f32>,
    w3: vec4<f32>,
}

fn step_rows(w: Weights, i: u32) -> StepRows {
    return StepRows(weight(w, i), weight(w, CQ + i), weight(w, 2u * CQ + i), weight(w, 3u * CQ + i));
}

// Quad pair `x` times the rows `r` into the 4 output channels' accumulators.
fn step_with(a: Acc, x: Pair, r: StepRows) -> Acc {
    return Acc(a.v0 + x.a * r.w0, a.v1 + x.a * r.w1, a.v2 + x.a * r.w2, a.v3 + x.a * r.w3, a.v4 + x.b * r.w0, a.v5 + x.b * r.w1, a.v6 + x.b * r.w2, a.v7 + x.b * r.w3);
}

// One step: quad i of the input into the 4 output channels whose rows `w` holds (rows from
// k * CQ: row m * CQ + i is w[k + m, 4i..4i+4]).
fn step(a: Acc, x: Pair, w: Weights, i: u32) -> Acc {
    if (i >= CQ) {
        return a;
    }
    return step_with(a, x, step_rows(w, i));
}

// Input channels 4i .. 4i+3 of the chunk at a quad's pixels.
fn quad_load(qd: Quad, i: u32) -> mat4x4<f32> {
    if (XT) {
        return transpose(mat4x4<f32>(load_pixel(qd, 0u, i), load_pixel(qd, 1u, i), load_pixel(qd, 2u, i), load_pixel(qd, 3u, i)));
    }
    return mat4x4<f32>(load_channel(qd, 4u * i), load_channel(qd, 4u * i + 1u), load_channel(qd, 4u * i + 2u), load_channel(qd, 4u * i + 3u));
}

// Output channels k .. k+3 of both quads of `t`, from `block`'s accumulators (or
// `block2`'s, one tile's).
fn store_block(t: Tile, k: u32, a: Acc) {
    store_channel(t.a, k, a.v0);
    store_channel(t.a, k + 1u, a.v1);
    store_channel(t.a, k + 2u, a.v2);
    store_channel(t.a, k + 3u, a.v3);
    store_channel(t.b, k, a.v4);
    store_channel(t.b, k + 1u, a.v5);
    store_channel(t.b, k + 2u, a.v6);
    store_channel(t.b, k + 3u, a.v7);
}
