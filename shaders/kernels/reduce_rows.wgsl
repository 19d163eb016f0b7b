// Reductions, softmax and log_softmax whose innermost reduced dim is contiguous in the input
// (rows): a workgroup per output. The output's elements are `extent / n0` runs of n0
// contiguous elements (one run when a single dim is reduced); every invocation folds the
// 16-byte words w, w + WG, ... of each run into four lanes (neighbouring invocations read
// neighbouring words), the run's unaligned head and tail elements one per invocation; then the
// lanes are combined in order and the invocations' states in a fixed tree (reduce_tree: in
// workgroup memory, or through subgroup shuffles then workgroup memory):
// the same input gives the same bits. Two-pass_ ops run the walk twice (the second time from the
// workgroup's caches); softmax and log_softmax take the maximum and the sum of exponentials in
// one walk (K_SOFT), then write the row. A few long outputs take several workgroups each
// (SPLIT, below), short rows a team of invocations each (TEAMS, below). Needs `reduce`, `reduce_vec` and `reduce_tree` or `reduce_tree_subgroup`;
// the uniform's grid_row counts workgroups.

const WG: u32 = 64u;

// The kind pass `pass_` accumulates: softmax and log_softmax take the maximum and the sum of
// exponentials in one pass (K_SOFT), so that their rows are read twice, not three times.
fn row_kind(pass_: u32) -> u32 {
    if (is_scan()) {
        return K_SOFT;
    }
    return kind(pass_);
}

// Whether a second pass runs.
fn row_two_pass() -> bool {
    return two_pass() && !is_scan();
}

// An invocation's share of an output's elements: runs j0, j0 + js, ..; of each run's whole
// words, block g of `parts` equal blocks, and of those words lid, lid + step, ..; the runs'
// unaligned heads and tails (and runs too short for a word) go to block 0.
struct Share {
    lid: u32,
    step: u32,
    j0: u32,
    js: u32,
    g: u32,
    parts: u32,
}

// Words lid, lid + step, .. of every run, all blocks: a workgroup's (step WG) or an
// invocation's (step 1) share of a whole output.
fn whole(lid: u32, step: u32) -> Share {
    return Share(lid, step, 0u, 1u, 0u, 1u);
}

// The first of sh's words among a run's whole words [qa, qe), and the end of its block.
fn words_of(sh: Share, qa: u32, qe: u32) -> vec2<u32> {
    let per = (qe - qa + sh.parts - 1u) / sh.parts;
    let q0 = min(qa + sh.g * per, qe);
    return vec2<u32>(q0 + sh.lid, min(q0 + per, qe));
}

// The element of a run's head [e0, a) and tail [w, e1) that invocation sh takes (e1 where
// none): block 0's invocations one each, at most 6 of them (an invocation walking a whole
// output, step 1, takes them all in loops of its own).
fn edge_of(sh: Share, e0: u32, a: u32, w: u32, e1: u32) -> u32 {
    let h = a - e0;
    if (sh.g != 0u || sh.lid >= h + e1 - w) {
        return e1;
    }
    return select(w + sh.lid - h, e0 + sh.lid, sh.lid < h);
}

// This invocation's state of pass `pass_` over its share sh of the output with elements b.
fn walk(b: vec3<u32>, pass_: u32, c: f32, sh: Share) -> vec4<u32> {
    let k = row_kind(pass_);
    let cv = vec4<f32>(c);
    var acc = acc_new(k);
    let n0 = red_u[pz()].sizes[0].x;
    let runs = red_u[pz()].extent / n0;
    let si = r_strides(0u).z;
    let steps = vec4<u32>(0u, 1u, 2u, 3u) * si;
    let step = sh.step;
    for (var j = sh.j0; j < runs; j = j + sh.js) {
        var o = vec3<u32>(0u);
        if (j > 0u) {
            o = red_offsets(j * n0);
        }
        let e0 = b.y + o.y;
        let z0 = b.z + o.z;
        let e1 = e0 + n0;
        // The run's whole words [a, w) (elements), its head [e0, a) and tail [w, e1).
        let a = (e0 + 3u) & ~3u;
        let w = e1 & ~3u;
        if (w > a) {
            // Four words loaded together where four remain, then folded in order (PyTorch's
            // vectorized thread reduction in Reduce.cuh): four loads in flight a lane, the same
            // fold order (and bits) as one at a time.
            let qr = words_of(sh, a >> 2u, w >> 2u);
            var q = qr.x;
            let qe = qr.y;
            for (; q + 3u * step < qe; q = q + 4u * step) {
                let x0 = src4[q];
                let x1 = src4[q + step];
                let x2 = src4[q + 2u * step];
                let x3 = src4[q + 3u * step];
                acc = fold(k, acc, tx(x0, pass_, cv), vec4<u32>(z0 + (4u * q - e0) * si) + steps);
                acc = fold(k, acc, tx(x1, pass_, cv), vec4<u32>(z0 + (4u * (q + step) - e0) * si) + steps);
                acc = fold(k, acc, tx(x2, pass_, cv), vec4<u32>(z0 + (4u * (q + 2u * step) - e0) * si) + steps);
                acc = fold(k, acc, tx(x3, pass_, cv), vec4<u32>(z0 + (4u * (q + 3u * step) - e0) * si) + steps);
            }
            for (; q < qe; q = q + step) {
                acc = fold(k, acc, tx(src4[q], pass_, cv), vec4<u32>(z0 + (4u * q - e0) * si) + steps);
            }
            if (step == 1u) {
                for (var e = e0; e < a; e = e + 1u) {
                    acc = fold1(k, acc, tx(vec4<f32>(src[e]), pass_, cv).x, z0 + (e - e0) * si);
                }
                for (var e = w; e < e1; e = e + 1u) {
                    acc = fold1(k, acc, tx(vec4<f32>(src[e]), pass_, cv).x, z0 + (e - e0) * si);
                }
            } else {
                let e = edge_of(sh, e0, a, w, e1);
                if (e < e1) {
                    acc = fold1(k, acc, tx(vec4<f32>(src[e]), pass_, cv).x, z0 + (e - e0) * si);
                }
            }
        } else if (sh.g == 0u) {
            for (var e = e0 + sh.lid; e < e1; e = e + step) {
                acc = fold1(k, acc, tx(vec4<f32>(src[e]), pass_, cv).x, z0 + (e - e0) * si);
            }
        }
    }
    return collapse(k, acc);
}

// The output as 16-byte words where the uniform's mode is 1 (scans whose output rows are
// contiguous and share the input's word alignment; `out` is then a spare word), else a spare
// word: a writable range is bound once (browsers refuse aliased writable bindings).
@group(0) @binding(5) var<storage, read_write> out4: array<vec4<u32>>;

// softmax / log_softmax of the row with elements b (one run) from its maximum m and k, into
// 16-byte words of out4 (mode 1). The host gives mode 1 only to rows of whole words, each
// element in the same place of its word as its input element (kernels/reduce/kernel.rs,
// `words_out`): a row's elements are its words, and no element is stored alone into a
// component of a word another row shares (a race in WGSL's memory model).
fn write_row4(b: vec3<u32>, m: f32, s: f32, sh: Share) {
    let step = sh.step;
    let e0 = b.y;
    let e1 = e0 + red_u[pz()].extent;
    // Output element of input element e: e + d (wrapping), in the same place of its word.
    let d = b.x - e0;
    let qr = words_of(sh, e0 >> 2u, e1 >> 2u);
    for (var q = qr.x; q < qr.y; q = q + step) {
        let x = src4[q];
        out4[(4u * q + d) >> 2u] = vec4<u32>(asu(soft(x.x, m, s)), asu(soft(x.y, m, s)), asu(soft(x.z, m, s)), asu(soft(x.w, m, s)));
    }
}

// softmax / log_softmax of the row with elements b (one run) from its maximum m and k.
fn write_row(b: vec3<u32>, m: f32, s: f32, sh: Share) {
    // s: the k of `soft`.
    if (red_u[pz()].mode == 1u) {
        write_row4(b, m, s, sh);
        return;
    }
    let step = sh.step;
    let n = red_u[pz()].extent;
    let so = r_strides(0u).x;
    let e0 = b.y;
    let e1 = e0 + n;
    let a = (e0 + 3u) & ~3u;
    let w = e1 & ~3u;
    if (w > a) {
        let qr = words_of(sh, a >> 2u, w >> 2u);
        for (var q = qr.x; q < qr.y; q = q + step) {
            let x = src4[q];
            let ob = b.x + (4u * q - e0) * so;
            out[ob] = asu(soft(x.x, m, s));
            out[ob + so] = asu(soft(x.y, m, s));
            out[ob + 2u * so] = asu(soft(x.z, m, s));
            out[ob + 3u * so] = asu(soft(x.w, m, s));
        }
        if (step == 1u) {
            for (var e = e0; e < a; e = e + 1u) {
                out[b.x + (e - e0) * so] = asu(soft(src[e], m, s));
            }
            for (var e = w; e < e1; e = e + 1u) {
                out[b.x + (e - e0) * so] = asu(soft(src[e], m, s));
            }
        } else {
            let e = edge_of(sh, e0, a, w, e1);
            if (e < e1) {
                out[b.x + (e - e0) * so] = asu(soft(src[e], m, s));
            }
        }
    } else if (sh.g == 0u) {
        for (var e = e0 + sh.lid; e < e1; e = e + step) {
            out[b.x + (e - e0) * so] = asu(soft(src[e], m, s));
        }
    }
}

// Each invocation reduces (writes) a whole output (row) when PER_THREAD: no workgroup memory
// or barrier (what the software adapters run fastest, 8 rows to a SIMD batch); else a workgroup
// per output.
override PER_THREAD: bool = false;

// SPLIT (GPUs, a few long outputs: ReduceKernel::RowSplits): `parts` workgroups share each
// output, workgroup g of it taking runs g, g + parts, .. where there are at least `parts`
// runs, else block g of `parts` equal blocks of every run's words (Share); a stage a dispatch
// (the uniform's `stage`):
//   0: each workgroup's pass-0 state into partials[o * parts + g];
//   1: a workgroup per output combines its part states (invocation i takes parts i, i + WG, ..
//      in order, then the tree) and finishes it, or (two-pass ops, scans) stores the combined
//      state in partials[outputs * parts + o];
//   2: scans write their share of the row from that state; two-pass ops walk pass 1 with it,
//      each workgroup's state into partials[o * parts + g];
//   3: two-pass ops combine pass 1's part states and finish.
// Every order is fixed by `parts` (and the subgroup size, as the tree's): the same bits each run.
override SPLIT: bool = false;

// The part states of output o combined across the workgroup: invocation i folds parts i,
// i + WG, .. in order, then the tree.
fn combine_parts(k: u32, o: u32, tl: TreeLane) -> vec4<u32> {
    let parts = red_u[pz()].parts;
    var st = collapse(k, acc_new(k));
    for (var g = tl.lid; g < parts; g = g + WG) {
        st = comb(k, st, partials[o * parts + g]);
    }
    return reduce_tree(k, st, tl);
}

// Stage `red_u.stage` of SPLIT for workgroup gi of the dispatch.
fn split_stage(gi: u32, tl: TreeLane) {
    let lid = tl.lid;
    let parts = red_u[pz()].parts;
    let outputs = red_u[pz()].outputs;
    let stage = red_u[pz()].stage;
    if (stage == 1u || stage == 3u) {
        if (gi >= outputs) {
            return;
        }
        let b = out_offsets(gi);
        let st = combine_parts(select(K_SUM, row_kind(0u), stage == 1u), gi, tl);
        if (lid == 0u) {
            if (stage == 3u) {
                finish(b.x, partials[outputs * parts + gi], st);
            } else if (row_two_pass() || is_scan()) {
                partials[outputs * parts + gi] = st;
            } else {
                finish(b.x, st, st);
            }
        }
        return;
    }
    let o = gi / parts;
    if (o >= outputs) {
        return;
    }
    let b = out_offsets(o);
    // An output of at least `parts` runs: workgroup g takes runs g, g + parts, .. whole (a
    // batch-norm statistic: a run of H * W each); else block g of every run's words.
    let g = gi % parts;
    var sh = Share(lid, WG, 0u, 1u, g, parts);
    if (red_u[pz()].extent / red_u[pz()].sizes[0].x >= parts) {
        sh = Share(lid, WG, g, parts, 0u, 1u);
    }
    if (stage == 0u) {
        let st = reduce_tree(row_kind(0u), walk(b, 0u, 0.0, sh), tl);
        if (lid == 0u) {
            partials[gi] = st;
        }
        return;
    }
    let st = partials[outputs * parts + o];
    if (is_scan()) {
        let ms = soft_ms1(st);
        write_row(b, ms.x, ms.y, sh);
        return;
    }
    let st2 = reduce_tree(K_SUM, walk(b, 1u, second_c(st), sh), tl);
    if (lid == 0u) {
        partials[gi] = st2;
    }
}

// TEAMS (GPUs, rows of 65 to 512 elements: ReduceKernel::RowTeams): a team of `parts`
// invocations (8, 16 or 32: at least the 6 head and tail elements a run may have) per output,
// WG / parts outputs a workgroup, where a workgroup per output would leave most of its
// invocations without a word (a 128-element row is 32 words) and run a 64-wide tree a row.
override TEAMS: bool = false;

// Each team's states combined in the fixed tree of reduce_tree.wgsl over its `team`
// invocations (invocation i with i + s, s = team / 2, .., 1), in workgroup memory, so that the
// order (and the bits) is the same on every adapter. Every invocation of the workgroup reaches
// every barrier.
fn team_tree(k: u32, st: vec4<u32>, lid: u32, team: u32) -> vec4<u32> {
    let i = lid & (team - 1u);
    tree[lid] = st;
    workgroupBarrier();
    for (var s = team / 2u; s > 0u; s = s >> 1u) {
        if (i < s) {
            tree[lid] = comb(k, tree[lid], tree[lid + s]);
        }
        workgroupBarrier();
    }
    let r = tree[lid - i];
    workgroupBarrier();
    return r;
}

// TEAMS for workgroup gi of the dispatch: a team past the outputs walks no run, and leaves
// after the last barrier.
fn team_main(gi: u32, lid: u32) {
    let team = red_u[pz()].parts;
    let o = gi * (WG / team) + lid / team;
    let valid = o < red_u[pz()].outputs;
    var b = vec3<u32>(0u);
    if (valid) {
        b = out_offsets(o);
    }
    let sh = Share(lid & (team - 1u), team, select(0xffffffffu, 0u, valid), 1u, 0u, 1u);
    let st = team_tree(row_kind(0u), walk(b, 0u, 0.0, sh), lid, team);
    var st2 = st;
    if (row_two_pass()) {
        st2 = team_tree(K_SUM, walk(b, 1u, second_c(st), sh), lid, team);
    }
    if (!valid) {
        return;
    }
    if (is_scan()) {
        let ms = soft_ms1(st);
        write_row(b, ms.x, ms.y, sh);
        return;
    }
    if (sh.lid == 0u) {
        finish(b.x, st, st2);
    }
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, tl: TreeLane) {
    let lid = tl.lid;
    if (TEAMS) {
        team_main(wid.x + wid.y * red_u[pz()].grid_row, lid);
        return;
    }
    if (PER_THREAD) {
        // No early return on the invocation's own index: WGSL's uniformity analysis (Tint)
        // would then treat the workgroup path's barriers below as non-uniform.
        let o = (wid.x + wid.y * red_u[pz()].grid_row) * WG + lid;
        if (o < red_u[pz()].outputs) {
            let b = out_offsets(o);
            let st = walk(b, 0u, 0.0, whole(0u, 1u));
            var st2 = st;
            if (row_two_pass()) {
                st2 = walk(b, 1u, second_c(st), whole(0u, 1u));
            }
            if (is_scan()) {
                let ms = soft_ms1(st);
                write_row(b, ms.x, ms.y, whole(0u, 1u));
            } else {
                finish(b.x, st, st2);
            }
        }
        return;
    }
    if (SPLIT) {
        split_stage(wid.x + wid.y * red_u[pz()].grid_row, tl);
        return;
    }
    let o = wid.x + wid.y * red_u[pz()].grid_row;
    if (o >= red_u[pz()].outputs) {
        return;
    }
    let b = out_offsets(o);
    let st = reduce_tree(row_kind(0u), walk(b, 0u, 0.0, whole(lid, WG)), tl);
    var st2 = st;
    if (row_two_pass()) {
        st2 = reduce_tree(K_SUM, walk(b, 1u, second_c(st), whole(lid, WG)), tl);
    }
    if (is_scan()) {
        let ms = soft_ms1(st);
        write_row(b, ms.x, ms.y, whole(lid, WG));
        return;
    }
    if (lid == 0u) {
        finish(b.x, st, st2);
    }
}
