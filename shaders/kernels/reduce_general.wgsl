// Any reduction, softmax, log_softmax or cumsum. An invocation walks a run of elements of one
// output (mode 0: all of them; mode 1: one part of at most `chunk`, since software adapters
// cap a loop's iterations) in the plan's (memory) order with one accumulator, and either
// finishes the output or writes its part's state; mode 2 combines an output's part states in
// part order. Every combination order is fixed: the same input gives the same bits. Neighbouring
// invocations read neighbouring elements where a kept dim is innermost (columns).
//
// A state (vec4<u32>) per op: sums (sum, mean, norms, cumsum) a compensated pair; prod, amax,
// amin (negated), the inf-norm the value; logsumexp and softmax (true max m, compensated sum of
// exp(x - fin(m))) with fin(m) = m where finite, else 0; var and std (mean, sum of squared
// deviations, count); the arg ops (value, logical index); integers their 32-bit value.

fn is_int() -> bool {
    if (F32) {
        return false;
    }
    return !dt_is_float(red_u[pz()].cast_t);
}

// Element k (plan order) of a reduction run: the input's element and the index's.
fn elem(b: vec3<u32>, r: u32) -> vec2<u32> {
    let o = red_offsets(r);
    return vec2<u32>(b.y + o.y, b.z + o.z);
}

// A scan row's strides and whether its plan order is its logical order backwards.
fn row_strides() -> vec3<u32> {
    if (red_u[pz()].rrank == 1u) {
        return r_strides(0u);
    }
    return vec3<u32>(0u);
}
// Plan position of logical position k of a row of n.
fn plan_pos(k: u32, n: u32) -> u32 {
    return select(k, n - 1u - k, bitcast<i32>(row_strides().z) < 0);
}

// The state of elements [r0, r1) of output b (r1 > r0).
fn run_state(b: vec3<u32>, r0: u32, r1: u32, step: u32) -> vec4<u32> {
    let op = op_code();
    if (is_int()) {
        if (op == R_SUM || op == R_PROD || op == R_CUMSUM) {
            var acc = select(0u, 1u, op == R_PROD);
            for (var r = r0; r < r1; r = r + step) {
                var e = r;
                if (op == R_CUMSUM) {
                    e = plan_pos(r, red_u[pz()].extent);
                }
                let x = bitcast<u32>(load_i(elem(b, e).x));
                acc = select(acc + x, acc * x, op == R_PROD);
            }
            return vec4<u32>(acc, 0u, 0u, 0u);
        }
        if (op == R_AMAX || op == R_AMIN) {
            var m = load_i(elem(b, r0).x);
            for (var r = r0 + step; r < r1; r = r + step) {
                let x = load_i(elem(b, r).x);
                m = select(min(m, x), max(m, x), op == R_AMAX);
            }
            return vec4<u32>(bitcast<u32>(m), 0u, 0u, 0u);
        }
        let want_max = op == R_ARGMAX || op == R_MAX;
        let e0 = elem(b, r0);
        var best = load_i(e0.x);
        var bi = e0.y;
        for (var r = r0 + step; r < r1; r = r + step) {
            let e = elem(b, r);
            let x = load_i(e.x);
            if (arg_better_i(x, e.y, best, bi, want_max)) {
                best = x;
                bi = e.y;
            }
        }
        return vec4<u32>(bitcast<u32>(best), bi, 0u, 0u);
    }
    if (op == R_SUM || op == R_MEAN || op == R_NORM1 || op == R_NORM2 || op == R_CUMSUM) {
        var s = vec2<f32>(0.0);
        for (var r = r0; r < r1; r = r + step) {
            var e = r;
            if (op == R_CUMSUM) {
                e = plan_pos(r, red_u[pz()].extent);
            }
            var x = load_f(elem(b, e).x);
            if (op == R_NORM1) {
                x = abs(x);
            } else if (op == R_NORM2) {
                x = x * x;
            }
            s = kadd(s, x);
        }
        return vec4<u32>(asu(s.x), asu(s.y), 0u, 0u);
    }
    if (op == R_VAR || op == R_STD) {
        var s = vec2<f32>(0.0);
        for (var r = r0; r < r1; r = r + step) {
            s = kadd(s, load_f(elem(b, r).x));
        }
        let mean = ksum(s) / f32((r1 - r0 + step - 1u) / step);
        var q = vec2<f32>(0.0);
        for (var r = r0; r < r1; r = r + step) {
            let d = load_f(elem(b, r).x) - mean;
            q = kadd(q, d * d);
        }
        return vec4<u32>(asu(mean), asu(ksum(q)), (r1 - r0 + step - 1u) / step, 0u);
    }
    if (op == R_PROD) {
        var p = 1.0;
        for (var r = r0; r < r1; r = r + step) {
            p = p * load_f(elem(b, r).x);
        }
        return vec4<u32>(asu(p), 0u, 0u, 0u);
    }
    if (op == R_AMAX || op == R_AMIN || op == R_NORMINF || op == R_LOGSUMEXP || op == R_SOFTMAX || op == R_LOG_SOFTMAX) {
        // amin is -amax(-x), as the CPU reference (the signed-zero order flips with the sign).
        var m = f32_of(0xff800000u);
        for (var r = r0; r < r1; r = r + step) {
            var x = load_f(elem(b, r).x);
            if (op == R_AMIN) {
                x = -x;
            } else if (op == R_NORMINF) {
                x = abs(x);
            }
            m = max_total(m, x);
        }
        if (op == R_AMAX || op == R_AMIN || op == R_NORMINF) {
            return vec4<u32>(asu(m), 0u, 0u, 0u);
        }
        let mr = fin(m);
        var s = vec2<f32>(0.0);
        for (var r = r0; r < r1; r = r + step) {
            s = kadd(s, exp(load_f(elem(b, r).x) - mr));
        }
        return vec4<u32>(asu(m), asu(s.x), asu(s.y), 0u);
    }
    // argmax, argmin, max, min: the best value and its logical index.
    let want_max = op == R_ARGMAX || op == R_MAX;
    let e0 = elem(b, r0);
    var best = load_f(e0.x);
    var bi = e0.y;
    for (var r = r0 + step; r < r1; r = r + step) {
        let e = elem(b, r);
        let x = load_f(e.x);
        if (arg_better(x, e.y, best, bi, want_max)) {
            best = x;
            bi = e.y;
        }
    }
    return vec4<u32>(asu(best), bi, 0u, 0u);
}

// The state of a then b (a's elements first).
fn combine(a: vec4<u32>, b: vec4<u32>) -> vec4<u32> {
    let op = op_code();
    if (is_int()) {
        if (op == R_SUM || op == R_CUMSUM) {
            return vec4<u32>(a.x + b.x, 0u, 0u, 0u);
        }
        if (op == R_PROD) {
            return vec4<u32>(a.x * b.x, 0u, 0u, 0u);
        }
        let x = bitcast<i32>(a.x);
        let y = bitcast<i32>(b.x);
        if (op == R_AMAX) {
            return vec4<u32>(bitcast<u32>(max(x, y)), 0u, 0u, 0u);
        }
        if (op == R_AMIN) {
            return vec4<u32>(bitcast<u32>(min(x, y)), 0u, 0u, 0u);
        }
        return select(a, b, arg_better_i(y, b.y, x, a.y, op == R_ARGMAX || op == R_MAX));
    }
    if (op == R_SUM || op == R_MEAN || op == R_NORM1 || op == R_NORM2 || op == R_CUMSUM) {
        // The running sums add as IEEE does (a part's infinity stays one: its compensation,
        // NaN then, is not added to the sum); the compensations add with that addition's error.
        let s = kadd(vec2<f32>(asf(a.x), asf(a.y) + asf(b.y)), asf(b.x));
        return vec4<u32>(asu(s.x), asu(s.y), 0u, 0u);
    }
    if (op == R_PROD) {
        return vec4<u32>(asu(asf(a.x) * asf(b.x)), 0u, 0u, 0u);
    }
    if (op == R_AMAX || op == R_AMIN || op == R_NORMINF) {
        return vec4<u32>(asu(max_total(asf(a.x), asf(b.x))), 0u, 0u, 0u);
    }
    if (op == R_VAR || op == R_STD) {
        // Chan's parallel combination.
        let na = f32(a.z);
        let nb = f32(b.z);
        let n = na + nb;
        let d = asf(b.x) - asf(a.x);
        let mean = asf(a.x) + d * (nb / n);
        let m2 = asf(a.y) + asf(b.y) + d * d * (na * nb / n);
        return vec4<u32>(asu(mean), asu(m2), a.z + b.z, 0u);
    }
    if (op == R_LOGSUMEXP || op == R_SOFTMAX || op == R_LOG_SOFTMAX) {
        let m = max_total(asf(a.x), asf(b.x));
        let mr = fin(m);
        let sa = ksum(vec2<f32>(asf(a.y), asf(a.z)));
        let sb = ksum(vec2<f32>(asf(b.y), asf(b.z)));
        var s = 0.0;
        // Bit tests: a part of only -inf adds nothing; NaN stays (no ordered compare drops it).
        if ((asu(sa) & 0x7fffffffu) != 0u) {
            s = s + sa * exp(fin(asf(a.x)) - mr);
        }
        if ((asu(sb) & 0x7fffffffu) != 0u) {
            s = s + sb * exp(fin(asf(b.x)) - mr);
        }
        return vec4<u32>(asu(m), asu(s), 0u, 0u);
    }
    return select(a, b, arg_better(asf(b.x), b.y, asf(a.x), a.y, op == R_ARGMAX || op == R_MAX));
}

// Writes output b from its whole state.
fn finish(b: vec3<u32>, st: vec4<u32>) {
    let op = op_code();
    if (is_int()) {
        if (op == R_ARGMAX || op == R_ARGMIN) {
            store_bits(b.x, st.y);
            return;
        }
        store_bits(b.x, st.x);
        if (op == R_MAX || op == R_MIN) {
            indices[red_u[pz()].offsets.w + b.x - red_u[pz()].offsets.x] = st.y;
        }
        return;
    }
    let sum = ksum(vec2<f32>(asf(st.x), asf(st.y)));
    switch op {
        case R_SUM, R_NORM1: {
            store_f(b.x, sum);
        }
        case R_MEAN: {
            store_f(b.x, sum / f32(red_u[pz()].extent));
        }
        case R_NORM2: {
            store_f(b.x, sqrt(sum));
        }
        case R_PROD, R_AMAX, R_NORMINF: {
            store_f(b.x, asf(st.x));
        }
        case R_AMIN: {
            store_f(b.x, -asf(st.x));
        }
        case R_VAR, R_STD: {
            var v = var_of(asf(st.y), st.z);
            if (op == R_STD) {
                v = sqrt(v);
            }
            store_f(b.x, v);
        }
        case R_LOGSUMEXP: {
            if (is_nan(asf(st.x))) {
                store_f(b.x, asf(NAN_BITS));
                return;
            }
            store_f(b.x, log(ksum(vec2<f32>(asf(st.y), asf(st.z)))) + fin(asf(st.x)));
        }
        case R_ARGMAX, R_ARGMIN: {
            store_bits(b.x, st.y);
        }
        default: {
            store_f(b.x, asf(st.x));
            indices[red_u[pz()].offsets.w + b.x - red_u[pz()].offsets.x] = st.y;
        }
    }
}

// Writes logical positions [k0, k1) of scan row b: softmax / log_softmax from the row's max m
// and sum s of exp(x - m), cumsum from the running state `run` before k0.
fn scan_write(b: vec3<u32>, k0: u32, k1: u32, m: f32, s: f32, run: vec4<u32>) {
    let st = row_strides();
    let n = red_u[pz()].extent;
    if (op_code() == R_CUMSUM) {
        var acc = run.x;
        var q = vec2<f32>(asf(run.x), asf(run.y));
        for (var k = k0; k < k1; k = k + 1u) {
            let kk = plan_pos(k, n);
            let e = b.y + kk * st.y;
            let w = b.x + kk * st.x;
            if (is_int()) {
                acc = acc + bitcast<u32>(load_i(e));
                store_bits(w, acc);
            } else {
                q = kadd(q, load_f(e));
                store_f(w, ksum(q));
            }
        }
        return;
    }
    let ls = log(s);
    for (var k = k0; k < k1; k = k + 1u) {
        let d = load_f(b.y + k * st.y) - m;
        if (op_code() == R_SOFTMAX) {
            store_f(b.x + k * st.x, exp(d) / s);
        } else {
            store_f(b.x + k * st.x, d - ls);
        }
    }
}

// A row's (max, sum of exp(x - max)) from its state: NaN sums where the max is not finite
// (x - max is NaN there, as in the CPU reference).
fn softmax_of(st: vec4<u32>) -> vec2<f32> {
    let m = asf(st.x);
    if (!is_finite(m)) {
        return vec2<f32>(m, f32_of(NAN_BITS));
    }
    return vec2<f32>(m, ksum(vec2<f32>(asf(st.y), asf(st.z))));
}

fn identity(b: vec3<u32>) {
    var v = 0.0;
    if (op_code() == R_PROD) {
        v = 1.0;
    } else if (op_code() == R_MEAN || op_code() == R_VAR || op_code() == R_STD) {
        v = f32_of(NAN_BITS);
    } else if (op_code() == R_LOGSUMEXP) {
        v = f32_of(0xff800000u);
    }
    if (dt_is_float(red_u[pz()].out_t)) {
        store_f(b.x, v);
    } else {
        store_bits(b.x, u32(v));
    }
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let t = gid.x + gid.y * red_u[pz()].grid_row;
    let n = red_u[pz()].extent;
    let scan = op_code() >= R_SOFTMAX;
    if (red_u[pz()].mode == 0u) {
        if (t >= red_u[pz()].outputs) {
            return;
        }
        let b = out_offsets(t);
        if (n == 0u) {
            identity(b);
            return;
        }
        if (!scan) {
            finish(b, run_state(b, 0u, n, 1u));
            return;
        }
        var ms = vec2<f32>(0.0);
        if (op_code() != R_CUMSUM) {
            ms = softmax_of(run_state(b, 0u, n, 1u));
        }
        scan_write(b, 0u, n, ms.x, ms.y, vec4<u32>(0u));
        return;
    }
    if (red_u[pz()].mode == 1u || red_u[pz()].mode == 3u) {
        if (t >= red_u[pz()].outputs * red_u[pz()].parts) {
            return;
        }
        let o = t / red_u[pz()].parts;
        let p = t % red_u[pz()].parts;
        let b = out_offsets(o);
        var r0 = p * red_u[pz()].chunk;
        var r1 = min(n, r0 + red_u[pz()].chunk);
        if (red_u[pz()].mode == 1u) {
            if (red_u[pz()].chunk == 0u) {
                // Interleaved parts (rows contiguous in memory): part p takes elements p,
                // p + parts, ..., so neighbouring invocations read neighbouring elements.
                partials[t] = run_state(b, p, n, red_u[pz()].parts);
            } else {
                partials[t] = run_state(b, r0, r1, 1u);
            }
            return;
        }
        if (op_code() == R_CUMSUM) {
            scan_write(b, r0, r1, 0.0, 0.0, partials[t]);
        } else {
            let ms = softmax_of(partials[red_u[pz()].outputs * red_u[pz()].parts + o]);
            scan_write(b, r0, r1, ms.x, ms.y, vec4<u32>(0u));
        }
        return;
    }
    // mode 2: combine the parts of output (row) t in order.
    if (t >= red_u[pz()].outputs) {
        return;
    }
    let base = t * red_u[pz()].parts;
    if (op_code() == R_CUMSUM) {
        // Each part's state becomes the running state before it.
        var run = vec4<u32>(0u);
        for (var p = 0u; p < red_u[pz()].parts; p = p + 1u) {
            let s = partials[base + p];
            partials[base + p] = run;
            run = combine(run, s);
        }
        return;
    }
    var st = partials[base];
    for (var p = 1u; p < red_u[pz()].parts; p = p + 1u) {
        st = combine(st, partials[base + p]);
    }
    if (scan) {
        partials[red_u[pz()].outputs * red_u[pz()].parts + t] = st;
        return;
    }
    finish(out_offsets(t), st);
}
