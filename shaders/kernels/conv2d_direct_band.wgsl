// The direct convolution for 3x3 kernels at unit stride and dilation (the common 1-padded
// case), shaped for CPU adapters, where each storage load is a loop over lanes. As
// conv2d_direct_rows.wgsl, an invocation accumulates 8 consecutive pixels of one output row x
// 4*CQ output channels over every tap and input channel of its window, and the three taps of a
// kernel row share the 10 input pixels they span. Here, in addition, the 8 lanes of an aligned
// group of a subgroup hold 8 consecutive output rows (a band) at the same columns, so that
// the three kernel rows of the band's lanes read 10 input rows, not 24: lane l loads input row
// l of the band's window, lanes 0 and 1 also rows 8 and 9, and every lane takes kernel row ky
// from lane l + ky by a subgroup shuffle. Needs full subgroups (every lane active: the kernel
// never returns early) of a multiple of 8 invocations, as the shuffled weights do; which
// invocations of the workgroup a subgroup holds does not matter.
//
// Work is handed out by lanes, not by invocation ids (subgroup_slot.wgsl): the aligned group
// of 8 lanes with slots 8g .. 8g+7 is group g.
// Group g covers column block g % B (pixels 8 * (g % B) .. + 7,
// B = ceil(OW / 8)) of band (g / B) % R of image g / (B * R), R = ceil(OH / 8), and lane l of
// the group output row 8 * band + l. Rows past OH and pixels past OW store nothing; images
// past the dispatch load zeros. The accumulators and the weight block: conv2d_direct_acc.wgsl;
// the spans and their taps: conv2d_direct_span.wgsl; the uniform, the loads and the stores:
// conv.wgsl.

// Pixels ox0 .. ox0+3 of output row oy of image n (`valid` where the row and pixel exist),
// reading input row iy at columns ox + rx (`inside` where that lies in the image).
fn band_quad(n: u32, oy: u32, iy: i32, ox0: u32, rx: i32) -> Quad {
    var qd: Quad;
    let image = n < cp_u[pz()].work.x / (cp_u[pz()].geo.z * cp_u[pz()].geo.w);
    let row_inside = image && iy >= 0 && u32(iy) < cp_u[pz()].geo.x;
    for (var j = 0u; j < 4u; j = j + 1u) {
        let ox = ox0 + j;
        let ix = i32(ox) + rx;
        qd.valid[j] = image && oy < cp_u[pz()].geo.z && ox < cp_u[pz()].geo.w;
        qd.inside[j] = row_inside && ix >= 0 && u32(ix) < cp_u[pz()].geo.y;
        qd.xoff[j] = cp_u[pz()].base.x + i32(n) * cp_u[pz()].xs.x + iy * cp_u[pz()].xs.z + ix * cp_u[pz()].xs.w;
        qd.yoff[j] = cp_u[pz()].base.y + i32(n) * cp_u[pz()].ys.x + i32(oy) * cp_u[pz()].ys.z + i32(ox) * cp_u[pz()].ys.w;
    }
    return qd;
}

// Lane `src` of the band's 10 loaded rows: lane src's `own` row below 8, else row src of
// `extra` (loaded by lane src - 8).
fn take(own: vec4<f32>, extra: vec4<f32>, base: u32, src: u32) -> vec4<f32> {
    let o = subgroupShuffle(own, base + min(src, 7u));
    let e = subgroupShuffle(extra, base + (src & 7u));
    return select(e, o, src < 8u);
}

fn take4(own: mat4x4<f32>, extra: mat4x4<f32>, base: u32, src: u32) -> mat4x4<f32> {
    return mat4x4<f32>(take(own[0], extra[0], base, src), take(own[1], extra[1], base, src), take(own[2], extra[2], base, src), take(own[3], extra[3], base, src));
}

fn take_span(own: Span, extra: Span, base: u32, src: u32) -> Span {
    return Span(take4(own.a, extra.a, base, src), take4(own.b, extra.b, base, src), take(own.c0, extra.c0, base, src), take(own.c1, extra.c1, base, src));
}

@compute @workgroup_size(WG)
fn main(inv: Invocation, @builtin(workgroup_id) wid: vec3<u32>, @builtin(subgroup_id) sg: u32, @builtin(subgroup_size) size: u32) {
    // The lane within its aligned group of 8 of the subgroup, and the group's slots 8g .. 8g+7
    // (cp.work.w / WG workgroups per row of the grid).
    let lane = inv.sid % 8u;
    let base = inv.sid - lane;
    let g = subgroup_slot(wid, cp_u[pz()].work.w / WG, sg, size, base) / 8u;
    let blocks = (cp_u[pz()].geo.w + 7u) / 8u;
    let bands = (cp_u[pz()].geo.z + 7u) / 8u;
    let t = g / blocks;
    let ox0 = 8u * (g - t * blocks);
    let n = t / bands;
    let oy0 = 8u * (t - n * bands);
    // Input rows oy0 - ph + lane, and for lanes 0 and 1 also 8 rows further.
    let iy = i32(oy0 + lane) + cp_u[pz()].conv.z;
    let rx = cp_u[pz()].conv.w;
    let oa = band_quad(n, oy0 + lane, iy, ox0, rx);
    let ob = band_quad(n, oy0 + lane, iy, ox0 + 4u, rx);
    let oc = band_quad(n, oy0 + lane, iy, ox0 + 8u, rx);
    // The extra rows (lanes 0 and 1; row -1, nothing, elsewhere): only loaded.
    let ex = select(-1, iy + 8, lane < 2u);
    let ea = band_quad(n, oy0 + lane, ex, ox0, rx);
    let eb = band_quad(n, oy0 + lane, ex, ox0 + 4u, rx);
    let ec = band_quad(n, oy0 + lane, ex, ox0 + 8u, rx);
    let cw = (cp_u[pz()].work.y + 3u) / 4u * 4u;
    var acc = Held();
    for (var cq = 0u; 4u * cq < cp_u[pz()].work.y; cq = cq + 1u) {
        let own = span_load(oa, ob, oc, cq);
        let extra = span_load(ea, eb, ec, cq);
        // Kernel row ky is the input row of lane l + ky (row 0 the lane's own, taken by a shuffle
        // too): a loop to the uniform's kh (3), so that the compilers hold one copy of the taps,
        // not three (lavapipe's first call of this kernel 1.3-2.1 s instead of 1.8-2.1 s).
        for (var ky = 0u; ky < u32(cp_u[pz()].taps.x); ky = ky + 1u) {
            acc = row_taps(acc, inv, take_span(own, extra, base, lane + ky), (3u * ky * cw + 4u * cq) * CQ);
        }
    }
    var tile: Tile;
    tile.a = band_quad(n, oy0 + lane, 0, ox0, 0);
    tile.b = band_quad(n, oy0 + lane, 0, ox0 + 4u, 0);
    store_all(tile, acc);
}
