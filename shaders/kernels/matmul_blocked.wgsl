// Batched matrix product on CPU adapters, the 1x1 convolution's register-blocked inner product
// (preludes conv.wgsl, conv1x1_nchw_step.wgsl, conv1x1_block.wgsl) over a batch of weights read
// from storage (matmul_weights.wgsl): out[z] = X[z] @ W[z]^T where the "pixels" (rows of X and
// of out) are the product's rows, the channels its reduction and the outputs its columns (or,
// transposed, the product's columns as pixels and its rows as outputs). One dispatch covers the
// batch and every output block of one chunk of 4*CQ reduction steps; chunks after the first add
// into the output (MODE 2), the first starts from zero or the bias (MODE 1), the last applies
// ReLU. The batch is a grid dimension: each group of 8 invocations (a unit) takes 64 pixels of
// one batch matrix (128 under TILES = 2) and one block of outputs, so the weights it reads are
// the same for its lanes. The batch has two levels, each operand's own strides for each: batch
// matrix z is (z / inner, z % inner), so that a batch of [outer, inner] matrices whose weights
// (or bias) repeat over the outer level (a grouped convolution's images) is one dispatch.
//
// The uniform (ConvParams of conv.wgsl) as this kernel reads it:
//   xs: X's strides (inner batch, channel, pixel, outer batch), ys: out's (inner batch, output,
//       pixel, outer batch),
//   geo: pixels per matrix, pixel units per matrix, output blocks, outputs per block (a
//        multiple of 4),
//   conv: weight rows per inner batch matrix (0: one matrix for all), this chunk's first row
//         (the window's first row included), the batch size (outer x inner), rows from one
//         output to the next,
//   base: X's and out's element offsets (this chunk's channel included), the bias's offset and
//         stride (per output), work: -, channels in this chunk, outputs,
//   taps: the inner batch size, weight rows per outer batch matrix, the bias's element offset
//         per inner and per outer batch matrix.
// The weights as vec4 rows: packed, row ((zw * chunks + chunk) * outputs + o) * CQ + i holds
// W[zw][o] at steps chunk * 4*CQ + 4i .. 4i+3 (zero past the reduction, zw the distinct weight
// matrices); or W itself where its rows are unit-stride whole chunks (row z0 * taps.y + z1 *
// conv.x + o * os + chunk * CQ + i).

// Tiles (8 pixels each) an invocation owns: 1, or 2 where the batch alone gives enough units
// (kernels/matmul/blocked.rs). Each block of weights a unit reads then serves twice the pixels:
// lavapipe reads storage at a cost per lane and component, and the weights of a batched
// product are in storage (a convolution's are in a uniform block). Each row reaches the lanes
// by one shuffle for both tiles (`block2`).
override TILES: u32 = 1u;

// Pixels 4p .. 4p+3 of batch matrix z (outer, inner; none where `live` is false). Every
// address is an element of the matrix (pixels past it clamped to its last, z to the batch by
// the caller), so loads need no guard: `inside` is true and only stores check `valid` (a
// guarded load ran each lane under its own condition, and read the transposed bmm about 2%
// slower on lavapipe).
fn mm_quad(p: u32, z: vec2<u32>, live: bool) -> Quad {
    var r: Quad;
    let x0 = cp_u[pz()].base.x + i32(z.x) * cp_u[pz()].xs.w + i32(z.y) * cp_u[pz()].xs.x;
    let y0 = cp_u[pz()].base.y + i32(z.x) * cp_u[pz()].ys.w + i32(z.y) * cp_u[pz()].ys.x;
    for (var j = 0u; j < 4u; j = j + 1u) {
        let px = 4u * p + j;
        r.valid[j] = live && px < cp_u[pz()].geo.x;
        r.inside[j] = true;
        let pc = i32(min(px, cp_u[pz()].geo.x - 1u));
        r.xoff[j] = x0 + pc * cp_u[pz()].xs.z;
        r.yoff[j] = y0 + pc * cp_u[pz()].ys.z;
    }
    return r;
}

// Quads 2q and 2q + 1 of batch matrix z (outer, inner).
fn mm_tile(q: u32, z: vec2<u32>, live: bool, lid: u32) -> Tile {
    var t: Tile;
    t.a = mm_quad(2u * q, z, live);
    t.b = mm_quad(2u * q + 1u, z, live);
    t.lid = lid;
    return t;
}

// Both tiles' accumulators.
struct Acc2 {
    t1: Acc,
    t2: Acc,
}

// `step` for two tiles: each weight row reaches the lanes once (a shuffle, which lavapipe runs
// as a loop over the lanes per component) and serves both tiles.
fn step2(a: Acc2, x: Pair, y: Pair, w: Weights, i: u32) -> Acc2 {
    if (i >= CQ) {
        return a;
    }
    let r = step_rows(w, i);
    return Acc2(step_with(a.t1, x, r), step_with(a.t2, y, r));
}

// `block` (conv1x1_block.wgsl) for two tiles.
fn block2(h: Held, g: Held, k: Weights) -> Acc2 {
    var a = Acc2();
    a = step2(a, h.q0, g.q0, k, 0u);
    a = step2(a, h.q1, g.q1, k, 1u);
    a = step2(a, h.q2, g.q2, k, 2u);
    a = step2(a, h.q3, g.q3, k, 3u);
    a = step2(a, h.q4, g.q4, k, 4u);
    a = step2(a, h.q5, g.q5, k, 5u);
    a = step2(a, h.q6, g.q6, k, 6u);
    a = step2(a, h.q7, g.q7, k, 7u);
    a = step2(a, h.q8, g.q8, k, 8u);
    a = step2(a, h.q9, g.q9, k, 9u);
    a = step2(a, h.q10, g.q10, k, 10u);
    a = step2(a, h.q11, g.q11, k, 11u);
    a = step2(a, h.q12, g.q12, k, 12u);
    a = step2(a, h.q13, g.q13, k, 13u);
    a = step2(a, h.q14, g.q14, k, 14u);
    a = step2(a, h.q15, g.q15, k, 15u);
    return a;
}

@compute @workgroup_size(WG)
fn main(inv: Invocation, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    // No invocation returns early (the shuffles need every lane of a group).
    let unit = (wid.x + wid.y * nwg.x) * (WG / 8u) + inv.lid / 8u;
    let pu = unit % cp_u[pz()].geo.y;
    let rest = unit / cp_u[pz()].geo.y;
    let ob = rest % cp_u[pz()].geo.z;
    let z = rest / cp_u[pz()].geo.z;
    let live = z < u32(cp_u[pz()].conv.z);
    let zc = min(z, u32(cp_u[pz()].conv.z) - 1u);
    let inner = u32(cp_u[pz()].taps.x);
    let zw = vec2<u32>(zc / inner, zc % inner);
    bias_batch = i32(zw.x) * cp_u[pz()].taps.w + i32(zw.y) * cp_u[pz()].taps.z;
    // Tile j of the unit: quads 2q + 16j and 2q + 16j + 1 (the unit's 8 lanes side by side).
    let q = pu * 8u * TILES + inv.lid % 8u;
    let t = mm_tile(q, zw, live, inv.lid);
    let h = hold(t);
    var t2: Tile;
    var h2: Held;
    if (TILES == 2u) {
        t2 = mm_tile(q + 8u, zw, live, inv.lid);
        h2 = hold(t2);
    }
    let wbase = zw.x * u32(cp_u[pz()].taps.y) + zw.y * u32(cp_u[pz()].conv.x) + u32(cp_u[pz()].conv.y);
    let o0 = ob * cp_u[pz()].geo.w;
    for (var k = o0; k < o0 + cp_u[pz()].geo.w; k = k + 4u) {
        let w = weights(inv, wbase + k * u32(cp_u[pz()].conv.w), u32(cp_u[pz()].conv.w));
        if (TILES == 2u) {
            let a = block2(h, h2, w);
            store_block(t, k, a.t1);
            store_block(t2, k, a.t2);
        } else {
            store_block(t, k, block(h, w));
        }
    }
}
