// The direct kernels' accumulation (conv2d_direct.wgsl, conv2d_direct_rows.wgsl), after
// conv.wgsl and a weights prelude: each invocation holds two quads' 8 output pixels x 4*CQ
// output channels (CQ output-channel quads, up to 16) as `Held`, and every step adds 4 input
// channels at its 8 pixels times the weight rows of one tap.
//
// Weights: the window's block holds, for tap t = ky * kw + kx and window input channel c, one
// row of 4*CQ output channels as CQ vec4 words: wu[(t * CW + c) * CQ + i] = w[4i..4i+4, c, ky,
// kx], CW the window's channels rounded up to 4.

// Input channels 4i .. 4i+3 of the window at a quad's 4 pixels (a column per pixel).
fn quad_load(qd: Quad, i: u32) -> mat4x4<f32> {
    return mat4x4<f32>(load_pixel(qd, 0u, i), load_pixel(qd, 1u, i), load_pixel(qd, 2u, i), load_pixel(qd, 3u, i));
}

// Output quad i (columns: pixels) plus 4 input channels `x` at the same 8 pixels; rows
// j * CQ + i of `w` hold the weights of input channel j into output channels 4i .. 4i+3.
fn accumulate(a: Pair, x: Pair, w: Weights, i: u32) -> Pair {
    if (i >= CQ) {
        return a;
    }
    let wm = mat4x4<f32>(weight(w, i), weight(w, CQ + i), weight(w, 2u * CQ + i), weight(w, 3u * CQ + i));
    return Pair(
        mat4x4<f32>(a.a[0] + wm * x.a[0], a.a[1] + wm * x.a[1], a.a[2] + wm * x.a[2], a.a[3] + wm * x.a[3]),
        mat4x4<f32>(a.b[0] + wm * x.b[0], a.b[1] + wm * x.b[1], a.b[2] + wm * x.b[2], a.b[3] + wm * x.b[3]),
    );
}

fn accumulate_all(h: Held, x: Pair, w: Weights) -> Held {
    return Held(accumulate(h.q0, x, w, 0u), accumulate(h.q1, x, w, 1u), accumulate(h.q2, x, w, 2u), accumulate(h.q3, x, w, 3u), accumulate(h.q4, x, w, 4u), accumulate(h.q5, x, w, 5u), accumulate(h.q6, x, w, 6u), accumulate(h.q7, x, w, 7u), accumulate(h.q8, x, w, 8u), accumulate(h.q9, x, w, 9u), accumulate(h.q10, x, w, 10u), accumulate(h.q11, x, w, 11u), accumulate(h.q12, x, w, 12u), accumulate(h.q13, x, w, 13u), accumulate(h.q14, x, w, 14u), accumulate(h.q15, x, w, 15u));
}

// Writes output quad i at both quads of pixels (quads past the window's channels: nothing).
fn store_quad(t: Tile, i: u32, p: Pair) {
    let k = 4u * i;
    if (i >= CQ || k >= cp_u[pz()].work.z) {
        return;
    }
    let b = bias4(k);
    store_pixel(t.a, 0u, k, p.a[0], b);
    store_pixel(t.a, 1u, k, p.a[1], b);
    store_pixel(t.a, 2u, k, p.a[2], b);
    store_pixel(t.a, 3u, k, p.a[3], b);
    store_pixel(t.b, 0u, k, p.b[0], b);
    store_pixel(t.b, 1u, k, p.b[1], b);
    store_pixel(t.b, 2u, k, p.b[2], b);
    store_pixel(t.b, 3u, k, p.b[3], b);
}

// Writes every output quad of `h` at the tile's two quads of pixels.
fn store_all(t: Tile, h: Held) {
    store_quad(t, 0u, h.q0);
    store_quad(t, 1u, h.q1);
    store_quad(t, 2u, h.q2);
    store_quad(t, 3u, h.q3);
    store_quad(t, 4u, h.q4);
    store_quad(t, 5u, h.q5);
    store_quad(t, 6u, h.q6);
    store_quad(t, 7u, h.q7);
    store_quad(t, 8u, h.q8);
    store_quad(t, 9u, h.q9);
    store_quad(t, 10u, h.q10);
    store_quad(t, 11u, h.q11);
    store_quad(t, 12u, h.q12);
    store_quad(t, 13u, h.q13);
    store_quad(t, 14u, h.q14);
    store_quad(t, 15u, h.q15);
}
