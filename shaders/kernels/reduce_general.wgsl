// Any reduction, softmax, log_softmax or cumsum, one output (one row of a scan) per
// invocation, walking its elements in the plan's order with one accumulator: deterministic
// (one fixed order), any strides and types. The reduced dims' order is the input's memory
// order, so an invocation streams its elements; neighbouring invocations read neighbouring
// elements where a kept dim is innermost (columns).

// The float reduction of n elements of output b.
fn reduce_float(b: vec3<u32>, n: u32) {
    let op = red.op;
    if (op == R_SUM || op == R_MEAN || op == R_NORM1 || op == R_NORM2 || op == R_VAR || op == R_STD) {
        var s = vec2<f32>(0.0);
        for (var r = 0u; r < n; r = r + 1u) {
            var x = load_f(b.y + red_offsets(r).y);
            if (op == R_NORM1) {
                x = abs(x);
            } else if (op == R_NORM2) {
                x = x * x;
            }
            s = kadd(s, x);
        }
        let sum = ksum(s);
        if (op == R_SUM || op == R_NORM1) {
            store_f(b.x, sum);
        } else if (op == R_NORM2) {
            store_f(b.x, sqrt(sum));
        } else if (op == R_MEAN) {
            store_f(b.x, sum / f32(n));
        } else {
            // Two passes: the mean, then the squared deviations from it.
            let mean = sum / f32(n);
            var q = vec2<f32>(0.0);
            for (var r = 0u; r < n; r = r + 1u) {
                let d = load_f(b.y + red_offsets(r).y) - mean;
                q = kadd(q, d * d);
            }
            var v = var_of(ksum(q), n);
            if (op == R_STD) {
                v = sqrt(v);
            }
            store_f(b.x, v);
        }
        return;
    }
    if (op == R_PROD) {
        var p = 1.0;
        for (var r = 0u; r < n; r = r + 1u) {
            p = p * load_f(b.y + red_offsets(r).y);
        }
        store_f(b.x, p);
        return;
    }
    if (op == R_AMAX || op == R_AMIN || op == R_NORMINF || op == R_LOGSUMEXP) {
        // amin is -amax(-x), as the CPU reference (the signed-zero order flips with the sign).
        var m = bitcast<f32>(0xff800000u);
        for (var r = 0u; r < n; r = r + 1u) {
            var x = load_f(b.y + red_offsets(r).y);
            if (op == R_AMIN) {
                x = -x;
            } else if (op == R_NORMINF) {
                x = abs(x);
            }
            m = max_total(m, x);
        }
        if (op == R_AMIN) {
            m = -m;
        }
        if (op != R_LOGSUMEXP) {
            store_f(b.x, m);
            return;
        }
        // PyTorch's rule: an infinite maximum is replaced by 0 (no inf - inf).
        if (!is_finite(m) && !is_nan(m)) {
            m = 0.0;
        }
        var s = vec2<f32>(0.0);
        for (var r = 0u; r < n; r = r + 1u) {
            s = kadd(s, exp(load_f(b.y + red_offsets(r).y) - m));
        }
        store_f(b.x, log(ksum(s)) + m);
        return;
    }
    // argmax, argmin, max, min: the best value and its logical index.
    let want_max = op == R_ARGMAX || op == R_MAX;
    var best = load_f(b.y);
    var bi = b.z;
    for (var r = 1u; r < n; r = r + 1u) {
        let o = red_offsets(r);
        let x = load_f(b.y + o.y);
        let i = b.z + o.z;
        if (arg_better(x, i, best, bi, want_max)) {
            best = x;
            bi = i;
        }
    }
    if (op == R_ARGMAX || op == R_ARGMIN) {
        store_bits(b.x, bi);
    } else {
        store_f(b.x, best);
        indices[red.offsets.w + b.x - red.offsets.x] = bi;
    }
}

// The integer reduction of n elements of output b (sums and products wrap).
fn reduce_int(b: vec3<u32>, n: u32) {
    let op = red.op;
    if (op == R_SUM || op == R_PROD) {
        var acc = select(0u, 1u, op == R_PROD);
        for (var r = 0u; r < n; r = r + 1u) {
            let x = bitcast<u32>(load_i(b.y + red_offsets(r).y));
            if (op == R_SUM) {
                acc = acc + x;
            } else {
                acc = acc * x;
            }
        }
        store_bits(b.x, acc);
        return;
    }
    if (op == R_AMAX || op == R_AMIN) {
        var m = load_i(b.y);
        for (var r = 1u; r < n; r = r + 1u) {
            let x = load_i(b.y + red_offsets(r).y);
            m = select(min(m, x), max(m, x), op == R_AMAX);
        }
        store_bits(b.x, bitcast<u32>(m));
        return;
    }
    let want_max = op == R_ARGMAX || op == R_MAX;
    var best = load_i(b.y);
    var bi = b.z;
    for (var r = 1u; r < n; r = r + 1u) {
        let o = red_offsets(r);
        let x = load_i(b.y + o.y);
        let i = b.z + o.z;
        if (arg_better_i(x, i, best, bi, want_max)) {
            best = x;
            bi = i;
        }
    }
    if (op == R_ARGMAX || op == R_ARGMIN) {
        store_bits(b.x, bi);
    } else {
        store_bits(b.x, bitcast<u32>(best));
        indices[red.offsets.w + b.x - red.offsets.x] = bi;
    }
}

// softmax, log_softmax or cumsum along one row of n elements, written in logical order.
fn scan_row(b: vec3<u32>, n: u32) {
    let op = red.op;
    var st = vec3<u32>(0u);
    if (red.rrank == 1u) {
        st = r_strides(0u);
    }
    // A row the plan walks backwards (a flipped view) starts at its last plan element.
    let back = bitcast<i32>(st.z) < 0;
    if (op == R_CUMSUM) {
        var s = vec2<f32>(0.0);
        var acc = 0u;
        for (var k = 0u; k < n; k = k + 1u) {
            let kk = select(k, n - 1u - k, back);
            let e = b.y + kk * st.y;
            let w = b.x + kk * st.x;
            if (dt_is_float(red.cast_t)) {
                s = kadd(s, load_f(e));
                store_f(w, ksum(s));
            } else {
                acc = acc + bitcast<u32>(load_i(e));
                store_bits(w, acc);
            }
        }
        return;
    }
    var m = bitcast<f32>(0xff800000u);
    for (var k = 0u; k < n; k = k + 1u) {
        m = max_total(m, load_f(b.y + k * st.y));
    }
    var s = vec2<f32>(0.0);
    for (var k = 0u; k < n; k = k + 1u) {
        s = kadd(s, exp(load_f(b.y + k * st.y) - m));
    }
    let sum = ksum(s);
    let ls = log(sum);
    for (var k = 0u; k < n; k = k + 1u) {
        let d = load_f(b.y + k * st.y) - m;
        if (op == R_SOFTMAX) {
            store_f(b.x + k * st.x, exp(d) / sum);
        } else {
            store_f(b.x + k * st.x, d - ls);
        }
    }
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let o = gid.x + gid.y * red.grid_row;
    if (o >= red.outputs) {
        return;
    }
    let b = out_offsets(o);
    let n = red.extent;
    if (red.op >= R_SOFTMAX) {
        scan_row(b, n);
        return;
    }
    if (n == 0u) {
        // The identity of an empty reduction.
        var v = 0.0;
        if (red.op == R_PROD) {
            v = 1.0;
        } else if (red.op == R_MEAN || red.op == R_VAR || red.op == R_STD) {
            v = bitcast<f32>(NAN_BITS);
        } else if (red.op == R_LOGSUMEXP) {
            v = bitcast<f32>(0xff800000u);
        }
        if (dt_is_float(red.out_t)) {
            store_f(b.x, v);
        } else {
            store_bits(b.x, u32(v));
        }
        return;
    }
    if (dt_is_float(red.cast_t)) {
        reduce_float(b, n);
    } else {
        reduce_int(b, n);
    }
}
