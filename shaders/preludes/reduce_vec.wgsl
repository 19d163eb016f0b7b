// The rows and columns reduction kernels' bindings and arithmetic (src/kernels/reduce/):
// f32 in, f32 (or an i32 index) out, the op an override constant (OPC), so that each pipeline
// holds only its op's code (the software adapters run every branch under masks). Elements are
// loaded four at a time where their words are 16-byte aligned (`src4`, the same window of the
// same buffer as `src`). Needs `reduce`.
//
// A pass accumulates one of six kinds (K_*) over the elements, each of them first mapped by
// `tx` (|x|, x^2, (x - c)^2, exp(x - c), -x): an accumulator holds four lanes of it (vec4
// lanes), a state (vec4<u32>) one: a compensated sum (sum, compensation), a maximum, a
// product, the best value and its logical index of an argmax / argmin, or softmax's running
// maximum and rescaled sum (K_SOFT, the rows kernel). Two-pass ops (var, std: the mean, then
// squared deviations; logsumexp, and softmax / log_softmax in the columns kernel: the maximum,
// then exp(x - max)) run a second pass with the first one's result `c`.

@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@group(0) @binding(2) var<storage, read> src: array<f32>;
// The whole 16-byte words of `src`'s window.
@group(0) @binding(3) var<storage, read> src4: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> indices: array<u32>;
// Part states of the split kernels (reduce_rows.wgsl and reduce_cols.wgsl with SPLIT): the
// states of an output's (a quad's lanes') parts, then its combined state.
@group(0) @binding(6) var<storage, read_write> partials: array<vec4<u32>>;

const K_SUM: u32 = 0u;
const K_MAX: u32 = 1u;
const K_PROD: u32 = 2u;
const K_ARGMAX: u32 = 3u;
const K_ARGMIN: u32 = 4u;
// softmax's one-pass state (the rows kernel): the running maximum m and the sum of exp(x - m),
// rescaled whenever m grows.
const K_SOFT: u32 = 5u;

const NO_INDEX: u32 = 0xffffffffu;

fn is_scan() -> bool {
    return OPC == R_SOFTMAX || OPC == R_LOG_SOFTMAX;
}
// Whether the op runs a second pass_.
fn two_pass() -> bool {
    return OPC == R_VAR || OPC == R_STD || OPC == R_LOGSUMEXP || is_scan();
}

// The kind pass_ `pass_` (0 or 1) accumulates.
fn kind(pass_: u32) -> u32 {
    if (OPC == R_PROD) {
        return K_PROD;
    }
    if (OPC == R_ARGMAX || OPC == R_MAX) {
        return K_ARGMAX;
    }
    if (OPC == R_ARGMIN || OPC == R_MIN) {
        return K_ARGMIN;
    }
    if (OPC == R_AMAX || OPC == R_AMIN || OPC == R_NORMINF) {
        return K_MAX;
    }
    if ((OPC == R_LOGSUMEXP || is_scan()) && pass_ == 0u) {
        return K_MAX;
    }
    return K_SUM;
}

// The value pass_ `pass_` accumulates for elements x, given the first pass_'s result c.
fn tx(x: vec4<f32>, pass_: u32, c: vec4<f32>) -> vec4<f32> {
    if (OPC == R_AMIN) {
        // amin is -amax(-x), as the CPU reference (the signed-zero order flips with the sign).
        return -x;
    }
    if (OPC == R_NORM1 || OPC == R_NORMINF) {
        return abs(x);
    }
    if (OPC == R_NORM2) {
        return x * x;
    }
    if (pass_ == 1u && (OPC == R_VAR || OPC == R_STD)) {
        let d = x - c;
        return d * d;
    }
    if (pass_ == 1u) {
        return exp(x - c);
    }
    return x;
}

// The value that changes no accumulator of kind k.
fn ident(k: u32) -> f32 {
    if (k == K_MAX || k == K_ARGMAX || k == K_SOFT) {
        return f32_of(0xff800000u);
    }
    if (k == K_ARGMIN) {
        return f32_of(INF_BITS);
    }
    return select(0.0, 1.0, k == K_PROD);
}

// Four lanes of a kind: a the sum, maximum, product or best value; b the sums' compensation;
// i the best values' logical indices.
struct Acc {
    a: vec4<f32>,
    b: vec4<f32>,
    i: vec4<u32>,
}

fn acc_new(k: u32) -> Acc {
    return Acc(vec4<f32>(ident(k)), vec4<f32>(0.0), vec4<u32>(select(NO_INDEX, 0u, k == K_SUM)));
}

fn nan4(x: vec4<f32>) -> vec4<bool> {
    return (bitcast<vec4<u32>>(x) & vec4<u32>(0x7fffffffu)) > vec4<u32>(0x7f800000u);
}

// max_total lane by lane.
fn max4(a: vec4<f32>, b: vec4<f32>) -> vec4<f32> {
    let zeros = (bitcast<vec4<u32>>(a) == vec4<u32>(0x80000000u)) & (bitcast<vec4<u32>>(b) == vec4<u32>(0u));
    let take = !nan4(a) & (nan4(b) | (b > a) | ((b == a) & zeros));
    return select(a, b, take);
}

// arg_better lane by lane: whether (x, i) replaces (b, bi).
fn better4(x: vec4<f32>, i: vec4<u32>, b: vec4<f32>, bi: vec4<u32>, want_max: bool) -> vec4<bool> {
    let xn = nan4(x);
    let bn = nan4(b);
    let lower = i < bi;
    let order = select((x < b), (x > b), want_max);
    return select(xn | (!bn & (select(order, lower, x == b))), xn & lower, bn);
}

// Folds elements x (already through `tx`; lanes to skip hold `ident`) of logical indices i.
fn fold(k: u32, acc: Acc, x: vec4<f32>, i: vec4<u32>) -> Acc {
    var r = acc;
    if (k == K_SUM) {
        // Neumaier's compensated sum, lane by lane. An infinity or NaN makes the running sum
        // `a` non-finite for good (the sum of what came so far, as IEEE adds them), and the
        // compensation `b` meaningless: `sum_of` then takes `a`.
        let t = acc.a + x;
        let c = select((x - t) + acc.a, (acc.a - t) + x, abs(acc.a) >= abs(x));
        r.a = t;
        r.b = acc.b + c;
    } else if (k == K_MAX) {
        r.a = max4(acc.a, x);
    } else if (k == K_PROD) {
        r.a = acc.a * x;
    } else if (k == K_SOFT) {
        // -inf elements (and the lanes skipped) add nothing; a maximum that stays scales by 1
        // (so a row of -inf so far keeps its sum 0, not NaN). +inf makes m non-finite and the
        // row NaN (soft_ms1). A plain max (cheaper than max_total on lavapipe): whichever
        // operand it returns for a NaN, the NaN itself is the term (found by its bits, not by
        // IEEE arithmetic a fast-math compiler may fold), so the sum is NaN, and the row.
        let m = max(acc.a, x);
        let scale = select(exp(acc.a - m), vec4<f32>(1.0), acc.a == m);
        let term = select(select(exp(x - m), vec4<f32>(0.0), x == vec4<f32>(f32_of(0xff800000u))), x, nan4(x));
        r.a = m;
        r.b = acc.b * scale + term;
    } else {
        let take = better4(x, i, acc.a, acc.i, k == K_ARGMAX);
        r.a = select(acc.a, x, take);
        r.i = select(acc.i, i, take);
    }
    return r;
}

// One element x (of logical index i) folded into lane 0.
fn fold1(k: u32, acc: Acc, x: f32, i: u32) -> Acc {
    let id = ident(k);
    return fold(k, acc, vec4<f32>(x, id, id, id), vec4<u32>(i, NO_INDEX, NO_INDEX, NO_INDEX));
}

// Lane l's state.
fn lane(k: u32, acc: Acc, l: u32) -> vec4<u32> {
    if (k == K_SUM || k == K_SOFT) {
        return vec4<u32>(asu(acc.a[l]), asu(acc.b[l]), acc.i[l], 0u);
    }
    return vec4<u32>(asu(acc.a[l]), select(asu(acc.b[l]), acc.i[l], k >= K_ARGMAX), 0u, 0u);
}

// The state of p's elements then q's.
fn comb(k: u32, p: vec4<u32>, q: vec4<u32>) -> vec4<u32> {
    if (k == K_SUM) {
        // The running sums add as IEEE does (a non-finite one stays so); the compensations add
        // with the error of that addition.
        let s = kadd(vec2<f32>(asf(p.x), asf(p.y) + asf(q.y)), asf(q.x));
        return vec4<u32>(asu(s.x), asu(s.y), 0u, 0u);
    }
    if (k == K_MAX) {
        return vec4<u32>(asu(max_total(asf(p.x), asf(q.x))), 0u, 0u, 0u);
    }
    if (k == K_PROD) {
        return vec4<u32>(asu(asf(p.x) * asf(q.x)), 0u, 0u, 0u);
    }
    if (k == K_SOFT) {
        let m = max_total(asf(p.x), asf(q.x));
        let sp = asf(p.y) * select(exp(asf(p.x) - m), 1.0, asf(p.x) == m);
        let sq = asf(q.y) * select(exp(asf(q.x) - m), 1.0, asf(q.x) == m);
        return vec4<u32>(asu(m), asu(sp + sq), 0u, 0u);
    }
    return select(p, q, arg_better(asf(q.x), q.y, asf(p.x), p.y, k == K_ARGMAX));
}

// The four lanes' state, combined in lane order.
fn collapse(k: u32, acc: Acc) -> vec4<u32> {
    return comb(k, comb(k, comb(k, lane(k, acc, 0u), lane(k, acc, 1u)), lane(k, acc, 2u)), lane(k, acc, 3u));
}

// A sum state's value: its running sum where that is not finite (NaN where the elements held
// NaN or both infinities, else the infinity they held, or to which finite elements
// overflowed), else the compensated sum.
fn sum_of(st: vec4<u32>) -> f32 {
    return ksum(vec2<f32>(asf(st.x), asf(st.y)));
}

// The second pass_'s `c` from the first pass_'s state: the mean (var, std) or the finite part of
// the maximum.
fn second_c(st: vec4<u32>) -> f32 {
    if (OPC == R_VAR || OPC == R_STD) {
        return sum_of(st) / f32(red_u[pz()].extent);
    }
    return fin(asf(st.x));
}

// Writes the result of output element ob (operand 0) from its passes' states.
fn finish(ob: u32, st: vec4<u32>, st2: vec4<u32>) {
    var v = asf(st.x);
    switch OPC {
        case R_SUM, R_NORM1: {
            v = sum_of(st);
        }
        case R_MEAN: {
            v = sum_of(st) / f32(red_u[pz()].extent);
        }
        case R_NORM2: {
            v = sqrt(sum_of(st));
        }
        case R_AMIN: {
            v = -v;
        }
        case R_VAR, R_STD: {
            v = var_of(sum_of(st2), red_u[pz()].extent);
            if (OPC == R_STD) {
                v = sqrt(v);
            }
        }
        case R_LOGSUMEXP: {
            if (!is_nan(v)) {
                v = log(sum_of(st2)) + fin(v);
            }
        }
        case R_ARGMAX, R_ARGMIN: {
            out[ob] = st.y;
            return;
        }
        case R_MAX, R_MIN: {
            indices[red_u[pz()].offsets.w + ob - red_u[pz()].offsets.x] = st.y;
        }
        default: {}
    }
    out[ob] = asu(v);
}

// softmax / log_softmax of x from its row's maximum m and k (1 / sum of exp(x - m), or its log).
fn soft(x: f32, m: f32, k: f32) -> f32 {
    let d = x - m;
    if (OPC == R_SOFTMAX) {
        return exp(d) * k;
    }
    return d - k;
}
// A row's (maximum, k of `soft`) from its K_SOFT state: NaN sums where the maximum is not
// finite, as soft_ms.
fn soft_ms1(st: vec4<u32>) -> vec2<f32> {
    let m = asf(st.x);
    var s = f32_of(NAN_BITS);
    if (is_finite(m)) {
        s = asf(st.y);
    }
    if (OPC == R_SOFTMAX) {
        return vec2<f32>(m, 1.0 / s);
    }
    return vec2<f32>(m, log(s));
}

// A row's (maximum, k of `soft`) from its passes' states: NaN sums where the maximum is not
// finite (x - m is NaN there, as in the CPU reference).
fn soft_ms(st: vec4<u32>, st2: vec4<u32>) -> vec2<f32> {
    let m = asf(st.x);
    var s = f32_of(NAN_BITS);
    if (is_finite(m)) {
        s = sum_of(st2);
    }
    if (OPC == R_SOFTMAX) {
        return vec2<f32>(m, 1.0 / s);
    }
    return vec2<f32>(m, log(s));
}
