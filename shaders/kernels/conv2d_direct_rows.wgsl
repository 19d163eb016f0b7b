// The direct convolution for kernels 3 taps wide at unit stride and dilation along W (the common
// 3x3 / 1-padded case), shaped for CPU adapters. As conv2d_direct.wgsl, an invocation
// accumulates 8 output pixels x 4*CQ output channels over every tap and input channel of its
// window; here its 8 pixels are consecutive pixels of one output row, so the three taps of a
// kernel row read input columns that overlap: per kernel row and input channel quad it loads
// the 10 input pixels the three taps span once, where conv2d_direct.wgsl loads 24. On a CPU
// adapter every storage load is a loop over lanes, and the loads are about half of the direct
// kernel's time.
//
// Invocation q covers output row q / B (n * OH + oy, within the dispatch's images) and its
// pixels 8 * (q % B) .. + 7, with B = ceil(OW / 8): pixels past OW, and rows past the dispatch,
// load zeros and store nothing. `cp.work.x` counts the dispatch's output pixels (rows x OW).
// The accumulators and the weight block: conv2d_direct_acc.wgsl; the 10 pixels' span and its
// taps: conv2d_direct_span.wgsl; the uniform, the loads and the stores: conv.wgsl.

// Pixels ox0 .. ox0+3 of output row `r`, reading input row oy * sh + ry at columns ox + rx.
fn row_quad(r: u32, ox0: u32, ry: i32, rx: i32) -> Quad {
    var qd: Quad;
    let n = r / cp_u[pz()].geo.z;
    let oy = r - n * cp_u[pz()].geo.z;
    let iy = i32(oy) * cp_u[pz()].conv.x + ry;
    let row = r < cp_u[pz()].work.x / cp_u[pz()].geo.w;
    let row_inside = row && iy >= 0 && u32(iy) < cp_u[pz()].geo.x;
    for (var j = 0u; j < 4u; j = j + 1u) {
        let ox = ox0 + j;
        let ix = i32(ox) + rx;
        qd.valid[j] = row && ox < cp_u[pz()].geo.w;
        qd.inside[j] = row_inside && ix >= 0 && u32(ix) < cp_u[pz()].geo.y;
        qd.xoff[j] = cp_u[pz()].base.x + i32(n) * cp_u[pz()].xs.x + iy * cp_u[pz()].xs.z + ix * cp_u[pz()].xs.w;
        qd.yoff[j] = cp_u[pz()].base.y + i32(n) * cp_u[pz()].ys.x + i32(oy) * cp_u[pz()].ys.z + i32(ox) * cp_u[pz()].ys.w;
    }
    return qd;
}

@compute @workgroup_size(WG)
fn main(inv: Invocation) {
    let q = inv.gid.x + inv.gid.y * cp_u[pz()].work.w;
    let blocks = (cp_u[pz()].geo.w + 7u) / 8u;
    let r = q / blocks;
    let ox0 = 8u * (q - r * blocks);
    // No invocation returns early (the shuffled weight reads need every lane).
    let cw = (cp_u[pz()].work.y + 3u) / 4u * 4u;
    var acc = Held();
    for (var ky = 0; ky < cp_u[pz()].taps.x; ky = ky + 1) {
        let ry = cp_u[pz()].conv.z + ky * cp_u[pz()].taps.z;
        let qa = row_quad(r, ox0, ry, cp_u[pz()].conv.w);
        let qb = row_quad(r, ox0 + 4u, ry, cp_u[pz()].conv.w);
        let qc = row_quad(r, ox0 + 8u, ry, cp_u[pz()].conv.w);
        let rows = u32(ky) * 3u * cw;
        for (var cq = 0u; 4u * cq < cp_u[pz()].work.y; cq = cq + 1u) {
            acc = row_taps(acc, inv, span_load(qa, qb, qc, cq), (rows + 4u * cq) * CQ);
        }
    }
    var t: Tile;
    t.a = row_quad(r, ox0, 0, 0);
    t.b = row_quad(r, ox0 + 4u, 0, 0);
    store_all(t, acc);
}
