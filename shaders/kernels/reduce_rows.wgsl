// Reductions, softmax and log_softmax whose innermost reduced dim is contiguous in the input
// (rows): a workgroup per output. The output's elements are `extent / n0` runs of n0
// contiguous elements (one run when a single dim is reduced); every invocation folds the
// 16-byte words w, w + WG, ... of each run into four lanes (neighbouring invocations read
// neighbouring words), the run's unaligned head and tail elements one per invocation; then the
// lanes are combined in order and the invocations' states in a fixed tree (reduce_tree: in
// workgroup memory, or through subgroup shuffles then workgroup memory):
// the same input gives the same bits. Two-pass_ ops run the walk twice (the second time from the
// workgroup's caches); softmax and log_softmax take the maximum and the sum of exponentials in
// one walk (K_SOFT), then write the row. Needs `reduce`, `reduce_vec` and
// `reduce_tree` or `reduce_tree_subgroup`; the uniform's grid_row counts workgroups.

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

// This invocation's state of pass `pass_` over the output with elements b.
fn walk(b: vec3<u32>, pass_: u32, c: f32, lid: u32, step: u32) -> vec4<u32> {
    let k = row_kind(pass_);
    let cv = vec4<f32>(c);
    var acc = acc_new(k);
    let n0 = red_u[pz()].sizes[0].x;
    let runs = red_u[pz()].extent / n0;
    let si = r_strides(0u).z;
    let steps = vec4<u32>(0u, 1u, 2u, 3u) * si;
    for (var j = 0u; j < runs; j = j + 1u) {
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
            for (var q = (a >> 2u) + lid; q < (w >> 2u); q = q + step) {
                acc = fold(k, acc, tx(src4[q], pass_, cv), vec4<u32>(z0 + (4u * q - e0) * si) + steps);
            }
            let h = a - e0;
            if (step == 1u) {
                for (var e = e0; e < a; e = e + 1u) {
                    acc = fold1(k, acc, tx(vec4<f32>(src[e]), pass_, cv).x, z0 + (e - e0) * si);
                }
                for (var e = w; e < e1; e = e + 1u) {
                    acc = fold1(k, acc, tx(vec4<f32>(src[e]), pass_, cv).x, z0 + (e - e0) * si);
                }
            } else if (lid < h + e1 - w) {
                let e = select(w + lid - h, e0 + lid, lid < h);
                acc = fold1(k, acc, tx(vec4<f32>(src[e]), pass_, cv).x, z0 + (e - e0) * si);
            }
        } else {
            for (var e = e0 + lid; e < e1; e = e + step) {
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

// Output element e (within out4's window) set to v.
fn store4_1(e: u32, v: f32) {
    out4[e >> 2u][e & 3u] = asu(v);
}

// softmax / log_softmax of the row with elements b (one run) from its maximum m and k, into
// 16-byte words of out4 (mode 1): the row's words, then its head and tail elements.
fn write_row4(b: vec3<u32>, m: f32, s: f32, lid: u32, step: u32) {
    let e0 = b.y;
    let e1 = e0 + red_u[pz()].extent;
    let a = (e0 + 3u) & ~3u;
    let w = e1 & ~3u;
    // Output element of input element e: e + d (wrapping), in the same place of its word.
    let d = b.x - e0;
    if (w > a) {
        for (var q = (a >> 2u) + lid; q < (w >> 2u); q = q + step) {
            let x = src4[q];
            out4[(4u * q + d) >> 2u] = vec4<u32>(asu(soft(x.x, m, s)), asu(soft(x.y, m, s)), asu(soft(x.z, m, s)), asu(soft(x.w, m, s)));
        }
        let h = a - e0;
        if (step == 1u) {
            for (var e = e0; e < a; e = e + 1u) {
                store4_1(e + d, soft(src[e], m, s));
            }
            for (var e = w; e < e1; e = e + 1u) {
                store4_1(e + d, soft(src[e], m, s));
            }
        } else if (lid < h + e1 - w) {
            let e = select(w + lid - h, e0 + lid, lid < h);
            store4_1(e + d, soft(src[e], m, s));
        }
    } else {
        for (var e = e0 + lid; e < e1; e = e + step) {
            store4_1(e + d, soft(src[e], m, s));
        }
    }
}

// softmax / log_softmax of the row with elements b (one run) from its maximum m and k.
fn write_row(b: vec3<u32>, m: f32, s: f32, lid: u32, step: u32) {
    // s: the k of `soft`.
    if (red_u[pz()].mode == 1u) {
        write_row4(b, m, s, lid, step);
        return;
    }
    let n = red_u[pz()].extent;
    let so = r_strides(0u).x;
    let e0 = b.y;
    let e1 = e0 + n;
    let a = (e0 + 3u) & ~3u;
    let w = e1 & ~3u;
    if (w > a) {
        for (var q = (a >> 2u) + lid; q < (w >> 2u); q = q + step) {
            let x = src4[q];
            let ob = b.x + (4u * q - e0) * so;
            out[ob] = asu(soft(x.x, m, s));
            out[ob + so] = asu(soft(x.y, m, s));
            out[ob + 2u * so] = asu(soft(x.z, m, s));
            out[ob + 3u * so] = asu(soft(x.w, m, s));
        }
        let h = a - e0;
        if (step == 1u) {
            for (var e = e0; e < a; e = e + 1u) {
                out[b.x + (e - e0) * so] = asu(soft(src[e], m, s));
            }
            for (var e = w; e < e1; e = e + 1u) {
                out[b.x + (e - e0) * so] = asu(soft(src[e], m, s));
            }
        } else if (lid < h + e1 - w) {
            let e = select(w + lid - h, e0 + lid, lid < h);
            out[b.x + (e - e0) * so] = asu(soft(src[e], m, s));
        }
    } else {
        for (var e = e0 + lid; e < e1; e = e + step) {
            out[b.x + (e - e0) * so] = asu(soft(src[e], m, s));
        }
    }
}

// Each invocation reduces (writes) a whole output (row) when PER_THREAD: no workgroup memory
// or barrier (what the software adapters run fastest, 8 rows to a SIMD batch); else a workgroup
// per output.
override PER_THREAD: bool = false;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, tl: TreeLane) {
    let lid = tl.lid;
    if (PER_THREAD) {
        // No early return on the invocation's own index: WGSL's uniformity analysis (Tint)
        // would then treat the workgroup path's barriers below as non-uniform.
        let o = (wid.x + wid.y * red_u[pz()].grid_row) * WG + lid;
        if (o < red_u[pz()].outputs) {
            let b = out_offsets(o);
            let st = walk(b, 0u, 0.0, 0u, 1u);
            var st2 = st;
            if (row_two_pass()) {
                st2 = walk(b, 1u, second_c(st), 0u, 1u);
            }
            if (is_scan()) {
                let ms = soft_ms1(st);
                write_row(b, ms.x, ms.y, 0u, 1u);
            } else {
                finish(b.x, st, st2);
            }
        }
        return;
    }
    let o = wid.x + wid.y * red_u[pz()].grid_row;
    if (o >= red_u[pz()].outputs) {
        return;
    }
    let b = out_offsets(o);
    let st = reduce_tree(row_kind(0u), walk(b, 0u, 0.0, lid, WG), tl);
    var st2 = st;
    if (row_two_pass()) {
        st2 = reduce_tree(K_SUM, walk(b, 1u, second_c(st), lid, WG), tl);
    }
    if (is_scan()) {
        let ms = soft_ms1(st);
        write_row(b, ms.x, ms.y, lid, WG);
        return;
    }
    if (lid == 0u) {
        finish(b.x, st, st2);
    }
}
