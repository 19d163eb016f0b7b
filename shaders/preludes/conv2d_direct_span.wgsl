// The rows forms of the direct kernel (conv2d_direct_rows.wgsl, conv2d_direct_band.wgsl), after
// conv2d_direct_acc.wgsl: an invocation's 8 consecutive output pixels of a row under a kernel 3
// taps wide at unit stride and dilation along W read the 10 input pixels those taps span, held
// as a `Span` and slid from tap to tap.

// Input channels 4cq .. 4cq+3 at the 10 pixels that the three taps of a kernel row span.
struct Span {
    a: mat4x4<f32>,
    b: mat4x4<f32>,
    c0: vec4<f32>,
    c1: vec4<f32>,
}

fn span_load(qa: Quad, qb: Quad, qc: Quad, cq: u32) -> Span {
    return Span(quad_load(qa, cq), quad_load(qb, cq), load_pixel(qc, 0u, cq), load_pixel(qc, 1u, cq));
}

// v0 at kx = 0, v1 at 1, v2 at 2: column j of tap kx's window is loaded pixel j + kx.
fn pick(v0: vec4<f32>, v1: vec4<f32>, v2: vec4<f32>, kx: u32) -> vec4<f32> {
    return select(select(v2, v1, kx == 1u), v0, kx == 0u);
}

// The three taps of one kernel row at the 10 pixels `s`; the weights of tap kx start at word
// `w0 + kx * cw * CQ`.
fn row_taps(h: Held, inv: Invocation, s: Span, w0: u32) -> Held {
    var acc = h;
    let cw = (cp_u[pz()].work.y + 3u) / 4u * 4u;
    for (var kx = 0u; kx < 3u; kx = kx + 1u) {
        let x = Pair(
            mat4x4<f32>(pick(s.a[0], s.a[1], s.a[2], kx), pick(s.a[1], s.a[2], s.a[3], kx), pick(s.a[2], s.a[3], s.b[0], kx), pick(s.a[3], s.b[0], s.b[1], kx)),
            mat4x4<f32>(pick(s.b[0], s.b[1], s.b[2], kx), pick(s.b[1], s.b[2], s.b[3], kx), pick(s.b[2], s.b[3], s.c0, kx), pick(s.b[3], s.c0, s.c1, kx)),
        );
        acc = accumulate_all(acc, x, weights(inv, w0 + kx * cw * CQ, 1u));
    }
    return acc;
}

