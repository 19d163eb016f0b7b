// Reductions, softmax and log_softmax whose outputs are contiguous in the input (columns: a
// kept dim, the plan's dim `rrank`, has input stride 1): an invocation per four neighbouring
// outputs of that dim, walking their reductions together in the plan's (memory) order with one
// lane each, a 16-byte load per step where the four elements are one aligned word (`mode` 1:
// every reduced input stride is a multiple of 4). One accumulator per output and a fixed order:
// the same input gives the same bits. Two-pass_ ops walk twice; softmax and log_softmax then
// write. Needs `reduce` and `reduce_vec`; the uniform's grid_row counts invocations.

// The four outputs' elements (valid lanes; the others repeat the last valid one) at input
// element e.
fn load4(e: u32, whole: bool, valid: u32) -> vec4<f32> {
    if (whole) {
        return src4[e >> 2u];
    }
    let l = min(vec4<u32>(0u, 1u, 2u, 3u), vec4<u32>(valid - 1u));
    return vec4<f32>(src[e + l.x], src[e + l.y], src[e + l.z], src[e + l.w]);
}

// The lanes' accumulators of pass_ `pass_` over the outputs with elements b.
fn walk(b: vec3<u32>, pass_: u32, c: vec4<f32>, whole: bool, valid: u32) -> Acc {
    let k = kind(pass_);
    var acc = acc_new(k);
    for (var r = 0u; r < red.extent; r = r + 1u) {
        let o = red_offsets(r);
        acc = fold(k, acc, tx(load4(b.y + o.y, whole, valid), pass_, c), vec4<u32>(b.z + o.z));
    }
    return acc;
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let t = gid.x + gid.y * red.grid_row;
    let d = red.rrank;
    let k0 = red.sizes[d >> 2u][d & 3u];
    let quads = (k0 + 3u) / 4u;
    if (t >= quads * (red.outputs / k0)) {
        return;
    }
    let q = t % quads;
    let b = out_offsets((t / quads) * k0 + 4u * q);
    let valid = min(4u, k0 - 4u * q);
    let whole = valid == 4u && red.mode == 1u && (b.y & 3u) == 0u;
    let so = r_strides(d).x;
    let k = kind(0u);
    let acc = walk(b, 0u, vec4<f32>(0.0), whole, valid);
    var acc2 = acc;
    if (two_pass()) {
        let c = vec4<f32>(second_c(lane(k, acc, 0u)), second_c(lane(k, acc, 1u)), second_c(lane(k, acc, 2u)), second_c(lane(k, acc, 3u)));
        acc2 = walk(b, 1u, c, whole, valid);
    }
    if (is_scan()) {
        let m0 = soft_ms(lane(k, acc, 0u), lane(K_SUM, acc2, 0u));
        let m1 = soft_ms(lane(k, acc, 1u), lane(K_SUM, acc2, 1u));
        let m2 = soft_ms(lane(k, acc, 2u), lane(K_SUM, acc2, 2u));
        let m3 = soft_ms(lane(k, acc, 3u), lane(K_SUM, acc2, 3u));
        for (var r = 0u; r < red.extent; r = r + 1u) {
            let o = red_offsets(r);
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
    finish(b.x, lane(k, acc, 0u), lane(K_SUM, acc2, 0u));
    if (valid > 1u) {
        finish(b.x + so, lane(k, acc, 1u), lane(K_SUM, acc2, 1u));
    }
    if (valid > 2u) {
        finish(b.x + 2u * so, lane(k, acc, 2u), lane(K_SUM, acc2, 2u));
    }
    if (valid > 3u) {
        finish(b.x + 3u * so, lane(k, acc, 3u), lane(K_SUM, acc2, 3u));
    }
}
