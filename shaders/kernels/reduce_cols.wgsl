// Reductions, softmax and log_softmax whose outputs are contiguous in the input (columns: a
// kept dim, the plan's dim `rrank`, has input stride 1): invocations per four neighbouring
// outputs of that dim, walking their reductions together in the plan's (memory) order with one
// lane each, a 16-byte load per step where the four elements are one aligned word (`mode` 1:
// every reduced input stride is a multiple of 4). SPLIT 0 (CPU adapters): one invocation per
// four outputs walks all of their elements (or, `parts` 4, sixteen: wide_main). SPLIT 1
// (GPUs, whose thousands of lanes a few hundred outputs would leave idle): `parts` invocations (a power of two, 2 to 32) share four
// outputs, invocation s walking the reduced elements s, s + parts, ...; their states meet in a
// fixed tree in workgroup memory. Where the outputs are too few to fill a GPU so, `blocks`
// workgroups (the uniform's; a power of two) share them too, walker s of block g walking
// elements g * parts + s, + blocks * parts, ...; a stage a dispatch (the uniform's `stage`):
//   0: each workgroup's pass-0 states of its quads into partials[(quad * blocks + g) * 4 + lane];
//   1: min(blocks, WG) invocations a quad combine its blocks' states (invocation j folds
//      blocks j, j + n, .. in order, then a tree) and finish the outputs, or (two-pass ops)
//      store the combined states in partials[(quads * blocks + quad) * 4 + lane];
//   2: two-pass ops walk pass 1 with those, each workgroup's states as in stage 0;
//   3: two-pass ops combine pass 1's states and finish.
// (Scans keep one block.) A fixed order either way: the same input gives the same bits.
// Two-pass_ ops walk twice; softmax and log_softmax then write. Needs `reduce` and
// `reduce_vec`; the uniform's grid_row counts invocations (SPLIT 0) per row of the dispatch
// grid, or (SPLIT 1) its workgroups times the quads a workgroup holds (WG / parts in walks, WG
// / min(blocks, WG) in combinations).

override SPLIT: u32 = 0u;

const WG: u32 = 64u;

// SPLIT 1: the lane states of the workgroup's invocations, [(s * quads per workgroup + quad) * 4 + lane].
var<workgroup> lanes: array<vec4<u32>, 256>;

// The four outputs' elements (valid lanes; the others repeat the last valid one) at input
// element e.
fn load4(e: u32, whole: bool, valid: u32) -> vec4<f32> {
    if (whole) {
        return src4[e >> 2u];
    }
    let l = min(vec4<u32>(0u, 1u, 2u, 3u), vec4<u32>(valid - 1u));
    return vec4<f32>(src[e + l.x], src[e + l.y], src[e + l.z], src[e + l.w]);
}

// The lanes' accumulators of pass_ `pass_` over the outputs with elements b: reduced elements
// r0, r0 + step, ...
fn walk(b: vec3<u32>, pass_: u32, c: vec4<f32>, whole: bool, valid: u32, r0: u32, step: u32) -> Acc {
    let k = kind(pass_);
    var acc = acc_new(k);
    // One reduced dim (the plan coalesced them): its offsets by one multiply, outside
    // red_offsets, whose general loop (divisions) lavapipe would run, masked, at every step;
    // and whole words without load4's branch, whose scalar loads it would run too (lavapipe,
    // quiet: mean over H, W of channels-last [8, 64, 56, 56] 2.34 -> 1.39 -> 0.94 ms).
    // Four words loaded before they are folded, in the walk's order (the same bits), while
    // four steps remain: four loads in flight a lane where one waited at each step (the
    // vectorized thread reduction of PyTorch's Reduce.cuh), which a split walk of a few dozen
    // steps needs to cover a GPU's memory latency.
    if (red_u[pz()].rrank == 1u && whole) {
        let s = r_strides(0u);
        let end = red_u[pz()].extent;
        var r = r0;
        for (; r + 3u * step < end; r = r + 4u * step) {
            let o0 = r * s;
            let o1 = o0 + step * s;
            let o2 = o1 + step * s;
            let o3 = o2 + step * s;
            let x0 = src4[(b.y + o0.y) >> 2u];
            let x1 = src4[(b.y + o1.y) >> 2u];
            let x2 = src4[(b.y + o2.y) >> 2u];
            let x3 = src4[(b.y + o3.y) >> 2u];
            acc = fold(k, acc, tx(x0, pass_, c), vec4<u32>(b.z + o0.z));
            acc = fold(k, acc, tx(x1, pass_, c), vec4<u32>(b.z + o1.z));
            acc = fold(k, acc, tx(x2, pass_, c), vec4<u32>(b.z + o2.z));
            acc = fold(k, acc, tx(x3, pass_, c), vec4<u32>(b.z + o3.z));
        }
        for (; r < end; r = r + step) {
            let o = r * s;
            acc = fold(k, acc, tx(src4[(b.y + o.y) >> 2u], pass_, c), vec4<u32>(b.z + o.z));
        }
        return acc;
    }
    if (red_u[pz()].rrank == 1u) {
        let s = r_strides(0u);
        for (var r = r0; r < red_u[pz()].extent; r = r + step) {
            let o = r * s;
            acc = fold(k, acc, tx(load4(b.y + o.y, whole, valid), pass_, c), vec4<u32>(b.z + o.z));
        }
        return acc;
    }
    for (var r = r0; r < red_u[pz()].extent; r = r + step) {
        let o = red_offsets(r);
        acc = fold(k, acc, tx(load4(b.y + o.y, whole, valid), pass_, c), vec4<u32>(b.z + o.z));
    }
    return acc;
}

// A quad's lane states: s from the first pass_, t from the second (the first again for
// one-pass ops).
struct QuadStates {
    s0: vec4<u32>,
    s1: vec4<u32>,
    s2: vec4<u32>,
    s3: vec4<u32>,
    t0: vec4<u32>,
    t1: vec4<u32>,
    t2: vec4<u32>,
    t3: vec4<u32>,
}

// Writes what the quad with elements b (its `valid` outputs `so` apart) gives: softmax and
// log_softmax its reduced elements r0, r0 + step, ...; the other ops their outputs, where
// `finishes`.
fn write_quad(b: vec3<u32>, whole: bool, valid: u32, so: u32, q: QuadStates, r0: u32, step: u32, finishes: bool) {
    if (is_scan()) {
        let m0 = soft_ms(q.s0, q.t0);
        let m1 = soft_ms(q.s1, q.t1);
        let m2 = soft_ms(q.s2, q.t2);
        let m3 = soft_ms(q.s3, q.t3);
        let flat = red_u[pz()].rrank == 1u;
        let s = r_strides(0u);
        for (var r = r0; r < red_u[pz()].extent; r = r + step) {
            var o = r * s;
            if (!flat) {
                o = red_offsets(r);
            }
            let x = load4(b.y + o.y, whole, valid);
            let ob = b.x + o.x;
            out[ob] = asu(soft(x.x, m0.x, m0.y));
            if (valid > 1u) {
                out[ob + so] = asu(soft(x.y, m1.x, m1.y));
            }
            if (valid > 2u) {
                out[ob + 2u * so] = asu(soft(x.z, m2.x, m2.y));
            }
            if (valid > 3u) {
                out[ob + 3u * so] = asu(soft(x.w, m3.x, m3.y));
            }
        }
        return;
    }
    if (!finishes) {
        return;
    }
    finish(b.x, q.s0, q.t0);
    if (valid > 1u) {
        finish(b.x + so, q.s1, q.t1);
    }
    if (valid > 2u) {
        finish(b.x + 2u * so, q.s2, q.t2);
    }
    if (valid > 3u) {
        finish(b.x + 3u * so, q.s3, q.t3);
    }
}

// SPLIT 1: the invocations' lane states combined over the splits of each quad in a fixed tree
// (split s with s + h, h = parts / 2, ..., 1); quad q's lane l then lies at lanes[4 q + l].
fn split_tree(k: u32, acc: Acc, lid: u32, qpw: u32) {
    for (var l = 0u; l < 4u; l = l + 1u) {
        lanes[lid * 4u + l] = lane(k, acc, l);
    }
    quad_tree(k, lid, qpw, red_u[pz()].parts);
}

// The lane states in `lanes` ([(s * qpw + quad) * 4 + lane]) of the `n` sharers s of each of
// the workgroup's qpw quads combined in a fixed tree (s with s + h, h = n / 2, ..., 1), into
// those of s = 0.
fn quad_tree(k: u32, lid: u32, qpw: u32, n: u32) {
    workgroupBarrier();
    let sy = lid / qpw;
    for (var h = n / 2u; h > 0u; h = h >> 1u) {
        if (sy < h) {
            for (var l = 0u; l < 4u; l = l + 1u) {
                let i = lid * 4u + l;
                lanes[i] = comb(k, lanes[i], lanes[i + h * qpw * 4u]);
            }
        }
        workgroupBarrier();
    }
}

// The quad of invocation t's outputs: its elements, valid outputs and whether its four input
// elements are one aligned word at every step (`live`: t is a quad).
struct Quad {
    b: vec3<u32>,
    valid: u32,
    whole: bool,
    live: bool,
}

fn quad_at(t: u32) -> Quad {
    let d = red_u[pz()].rrank;
    let k0 = red_u[pz()].sizes[d >> 2u][d & 3u];
    let quads = (k0 + 3u) / 4u;
    var q = Quad(vec3<u32>(0u), 1u, false, t < quad_count());
    if (q.live) {
        q.b = out_offsets((t / quads) * k0 + 4u * (t % quads));
        q.valid = min(4u, k0 - 4u * (t % quads));
        q.whole = q.valid == 4u && red_u[pz()].mode == 1u && (q.b.y & 3u) == 0u;
    }
    return q;
}

// Quads of the dispatch.
fn quad_count() -> u32 {
    let d = red_u[pz()].rrank;
    let k0 = red_u[pz()].sizes[d >> 2u][d & 3u];
    return (k0 + 3u) / 4u * (red_u[pz()].outputs / k0);
}

// SPLIT 1, stages 1 and 3 (blocks > 1): min(blocks, WG) invocations of workgroup wg share each
// of its quads (n of them), invocation j folding blocks j, j + n, .. in order, then a tree; then the
// quads' outputs are finished, or pass 0's combined states kept for pass 1 (no early return
// before the tree: every invocation reaches its barriers).
fn combine_blocks(wg: u32, lid: u32) {
    let stage = red_u[pz()].stage;
    let blocks = red_u[pz()].blocks;
    let n = min(blocks, WG);
    let qpw = WG / n;
    let qx = lid % qpw;
    let q = wg * qpw + qx;
    let live = q < quad_count();
    let k = kind(stage / 2u);
    for (var l = 0u; l < 4u; l = l + 1u) {
        var st = collapse(k, acc_new(k));
        if (live) {
            for (var g = lid / qpw; g < blocks; g = g + n) {
                st = comb(k, st, partials[(q * blocks + g) * 4u + l]);
            }
        }
        lanes[lid * 4u + l] = st;
    }
    quad_tree(k, lid, qpw, n);
    if (!live || lid >= qpw) {
        return;
    }
    let c = qx * 4u;
    let kept = (quad_count() * blocks + q) * 4u;
    if (stage == 1u && two_pass()) {
        for (var l = 0u; l < 4u; l = l + 1u) {
            partials[kept + l] = lanes[c + l];
        }
        return;
    }
    let qd = quad_at(q);
    var s = QuadStates(lanes[c], lanes[c + 1u], lanes[c + 2u], lanes[c + 3u], lanes[c], lanes[c + 1u], lanes[c + 2u], lanes[c + 3u]);
    if (stage == 3u) {
        s = QuadStates(partials[kept], partials[kept + 1u], partials[kept + 2u], partials[kept + 3u], lanes[c], lanes[c + 1u], lanes[c + 2u], lanes[c + 3u]);
    }
    write_quad(qd.b, qd.whole, qd.valid, r_strides(red_u[pz()].rrank).x, s, 0u, 1u, true);
}

// SPLIT 1: `parts` invocations per four outputs (no early return: every invocation reaches
// the barriers); with `blocks` > 1, workgroups of a stage as the header says.
fn split_main(wid: vec3<u32>, lid: u32) {
    let parts = red_u[pz()].parts;
    let blocks = red_u[pz()].blocks;
    let qpw = WG / parts;
    let qx = lid % qpw;
    let sy = lid / qpw;
    // The workgroup's index in the dispatch (grid_row: a row's workgroups times qpw).
    let wg = wid.x + wid.y * (red_u[pz()].grid_row / qpw);
    let stage = red_u[pz()].stage;
    if (stage == 1u || stage == 3u) {
        combine_blocks(wid.x + wid.y * (red_u[pz()].grid_row / (WG / min(blocks, WG))), lid);
        return;
    }
    let t = (wg / blocks) * qpw + qx;
    let qd = quad_at(t);
    let live = qd.live;
    let b = qd.b;
    let valid = qd.valid;
    let whole = qd.whole;
    if (blocks > 1u) {
        let pass_ = stage / 2u;
        let k = kind(pass_);
        var c = vec4<f32>(0.0);
        let kept = (quad_count() * blocks + t) * 4u;
        if (pass_ == 1u && live) {
            c = vec4<f32>(second_c(partials[kept]), second_c(partials[kept + 1u]), second_c(partials[kept + 2u]), second_c(partials[kept + 3u]));
        }
        var acc = acc_new(k);
        if (live) {
            acc = walk(b, pass_, c, whole, valid, (wg % blocks) * parts + sy, blocks * parts);
        }
        split_tree(k, acc, lid, qpw);
        if (live && sy == 0u) {
            let at = (t * blocks + wg % blocks) * 4u;
            for (var l = 0u; l < 4u; l = l + 1u) {
                partials[at + l] = lanes[qx * 4u + l];
            }
        }
        return;
    }
    let k = kind(0u);
    var acc = acc_new(k);
    if (live) {
        acc = walk(b, 0u, vec4<f32>(0.0), whole, valid, sy, parts);
    }
    split_tree(k, acc, lid, qpw);
    let s0 = lanes[qx * 4u];
    let s1 = lanes[qx * 4u + 1u];
    let s2 = lanes[qx * 4u + 2u];
    let s3 = lanes[qx * 4u + 3u];
    var t0 = s0;
    var t1 = s1;
    var t2 = s2;
    var t3 = s3;
    if (two_pass()) {
        let c = vec4<f32>(second_c(s0), second_c(s1), second_c(s2), second_c(s3));
        // Every invocation has read the first pass_'s states before the second overwrites them.
        workgroupBarrier();
        var acc2 = acc_new(kind(1u));
        if (live) {
            acc2 = walk(b, 1u, c, whole, valid, sy, parts);
        }
        split_tree(kind(1u), acc2, lid, qpw);
        t0 = lanes[qx * 4u];
        t1 = lanes[qx * 4u + 1u];
        t2 = lanes[qx * 4u + 2u];
        t3 = lanes[qx * 4u + 3u];
    }
    if (live) {
        write_quad(b, whole, valid, r_strides(red_u[pz()].rrank).x, QuadStates(s0, s1, s2, s3, t0, t1, t2, t3), sy, parts, sy == 0u);
    }
}

// SPLIT 0 with `parts` 4 (the host's choice for one-pass ops over one reduced dim whose
// outputs come in whole aligned words, CPU adapters): each invocation takes four neighbouring
// quads, 16 outputs, a 64-byte line of every reduced step, so that a batch of lanes streams
// whole neighbouring lines (one quad a lane left each step a quarter line, and a walk 16 KiB
// apart per step waiting on memory, lavapipe: sum(dim=0) of [4096, 4096]).
fn wide_main(t: u32) {
    let d = red_u[pz()].rrank;
    let k0 = red_u[pz()].sizes[d >> 2u][d & 3u];
    let groups = k0 / 16u;
    if (t >= groups * (red_u[pz()].outputs / k0)) {
        return;
    }
    let o0 = (t / groups) * k0 + 16u * (t % groups);
    let b = out_offsets(o0);
    let k = kind(0u);
    var a0 = acc_new(k);
    var a1 = a0;
    var a2 = a0;
    var a3 = a0;
    let s = r_strides(0u);
    let c = vec4<f32>(0.0);
    for (var r = 0u; r < red_u[pz()].extent; r = r + 1u) {
        let o = r * s;
        let w = (b.y + o.y) >> 2u;
        let i = vec4<u32>(b.z + o.z);
        a0 = fold(k, a0, tx(src4[w], 0u, c), i);
        a1 = fold(k, a1, tx(src4[w + 1u], 0u, c), i);
        a2 = fold(k, a2, tx(src4[w + 2u], 0u, c), i);
        a3 = fold(k, a3, tx(src4[w + 3u], 0u, c), i);
    }
    let so = r_strides(d).x;
    write_acc(b, so, k, a0);
    write_acc(out_offsets(o0 + 4u), so, k, a1);
    write_acc(out_offsets(o0 + 8u), so, k, a2);
    write_acc(out_offsets(o0 + 12u), so, k, a3);
}

// The four outputs of a one-pass op's whole quad with elements b from its lanes.
fn write_acc(b: vec3<u32>, so: u32, k: u32, acc: Acc) {
    let states = QuadStates(lane(k, acc, 0u), lane(k, acc, 1u), lane(k, acc, 2u), lane(k, acc, 3u), lane(k, acc, 0u), lane(k, acc, 1u), lane(k, acc, 2u), lane(k, acc, 3u));
    write_quad(b, true, 4u, so, states, 0u, 1u, true);
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if (SPLIT == 1u) {
        split_main(wid, lid);
        return;
    }
    let t = gid.x + gid.y * red_u[pz()].grid_row;
    if (red_u[pz()].parts == 4u) {
        wide_main(t);
        return;
    }
    let qd = quad_at(t);
    if (!qd.live) {
        return;
    }
    let b = qd.b;
    let valid = qd.valid;
    let whole = qd.whole;
    let k = kind(0u);
    let acc = walk(b, 0u, vec4<f32>(0.0), whole, valid, 0u, 1u);
    var acc2 = acc;
    if (two_pass()) {
        let c = vec4<f32>(second_c(lane(k, acc, 0u)), second_c(lane(k, acc, 1u)), second_c(lane(k, acc, 2u)), second_c(lane(k, acc, 3u)));
        acc2 = walk(b, 1u, c, whole, valid, 0u, 1u);
    }
    let states = QuadStates(lane(k, acc, 0u), lane(k, acc, 1u), lane(k, acc, 2u), lane(k, acc, 3u), lane(K_SUM, acc2, 0u), lane(K_SUM, acc2, 1u), lane(K_SUM, acc2, 2u), lane(K_SUM, acc2, 3u));
    write_quad(b, whole, valid, r_strides(red_u[pz()].rrank).x, states, 0u, 1u, true);
}
