// The reduction kernels' plan, bindings, loads, stores and arithmetic (src/kernels/reduce/,
// src/reduce/plan.rs). The plan's operands: 0 the output (stride 0 along reduced dims), 1 the
// input, 2 the index (each element's logical position within its reduction); its first
// `rrank` dims are reduced, so that linear index r + extent * o is element r of output o.
// The kernels' bindings 1.. and element access are in reduce_io.wgsl (the general kernel) and
// reduce_vec.wgsl (the rows and columns kernels). Needs `compensated` (kadd, ksum, is_finite).

struct Red {
    // Dims innermost first, 8 at most; unused dims have size 1 and stride 0.
    sizes: array<vec4<u32>, 2>,
    // Operand k's strides along dims 4j..4j+3 are strides[2k + j] (k: output, input, index).
    strides: array<vec4<i32>, 6>,
    // The output's, input's and index's element of linear index 0 (relative to their bound
    // windows), and the indices output's.
    offsets: vec4<u32>,
    rank: u32,
    rrank: u32,
    outputs: u32,
    extent: u32,
    op: u32,
    in_t: u32,
    cast_t: u32,
    out_t: u32,
    // Invocations (general) or workgroups (rows) per row of the dispatch grid.
    grid_row: u32,
    // var / std: the divisor of the squared deviations' sum, max(0, n - correction).
    divisor: f32,
    // 0: each invocation reduces (scans) a whole output (row); 1: each takes part `p` of
    // `parts` of an output, elements [p * chunk, (p + 1) * chunk), and writes its state to
    // `partials`; 2: each combines an output's part states in order and writes the result
    // (a scan: the row's state, or each part's prefix); 3 (scans): each part writes its
    // elements from the combined state. The rows kernel's scans: 1 where the output is bound
    // as 16-byte words. The columns kernel: 1 where every reduced step keeps a word aligned.
    mode: u32,
    parts: u32,
    chunk: u32,
    // The SPLIT stage of the rows and columns kernels (reduce_rows.wgsl, reduce_cols.wgsl).
    stage: u32,
    // The columns kernel's SPLIT: workgroups per four outputs along the reduction.
    blocks: u32,
    pad2: u32,
}

@group(0) @binding(0) var<uniform> red_u: array<Red, 1>;

fn pz() -> u32 {
    return uniform_index(red_u[0].rank);
}
// The op codes of src/kernels/reduce/abi.rs (`code`).
const R_SUM: u32 = 0u;
const R_MEAN: u32 = 1u;
const R_PROD: u32 = 2u;
const R_AMAX: u32 = 3u;
const R_AMIN: u32 = 4u;
const R_ARGMAX: u32 = 5u;
const R_ARGMIN: u32 = 6u;
const R_MAX: u32 = 7u;
const R_MIN: u32 = 8u;
const R_VAR: u32 = 9u;
const R_STD: u32 = 10u;
const R_NORM1: u32 = 11u;
const R_NORM2: u32 = 12u;
const R_NORMINF: u32 = 13u;
const R_LOGSUMEXP: u32 = 14u;
const R_SOFTMAX: u32 = 20u;
const R_LOG_SOFTMAX: u32 = 21u;
const R_CUMSUM: u32 = 22u;

// Specializations (the general pipeline leaves both at their defaults): the op, or 255 for
// the uniform's; F32 when input, computation and output are all f32 (indices i32), so that
// loads and stores need no conversion.
override OPC: u32 = 255u;
override F32: bool = false;

fn op_code() -> u32 {
    if (OPC != 255u) {
        return OPC;
    }
    return red_u[pz()].op;
}

// f32 bits as a value at run time: browsers refuse a constant NaN or infinity in WGSL.
fn f32_of(bits: u32) -> f32 {
    return bitcast<f32>(bits);
}

const NAN_BITS: u32 = 0x7fc00000u;
const INF_BITS: u32 = 0x7f800000u;

// Every operand's stride along dim d: (output, input, index).
fn r_strides(d: u32) -> vec3<u32> {
    let j = d >> 2u;
    let c = d & 3u;
    return bitcast<vec3<u32>>(vec3<i32>(red_u[pz()].strides[j][c], red_u[pz()].strides[2u + j][c], red_u[pz()].strides[4u + j][c]));
}

// The (output, input, index) elements of output o (reduced element 0). Wrapping u32
// arithmetic gives the exact index whenever it lies in [0, 2^32).
fn out_offsets(o: u32) -> vec3<u32> {
    var rem = o;
    var off = red_u[pz()].offsets.xyz;
    for (var d = red_u[pz()].rrank; d < red_u[pz()].rank; d = d + 1u) {
        let n = red_u[pz()].sizes[d >> 2u][d & 3u];
        let k = rem % n;
        rem = rem / n;
        off = off + k * r_strides(d);
    }
    return off;
}

// The (output, input, index) deltas of reduced element r.
fn red_offsets(r: u32) -> vec3<u32> {
    if (red_u[pz()].rrank == 1u) {
        return r * r_strides(0u);
    }
    var rem = r;
    var off = vec3<u32>(0u);
    for (var d = 0u; d < red_u[pz()].rrank; d = d + 1u) {
        let n = red_u[pz()].sizes[d >> 2u][d & 3u];
        let k = rem % n;
        rem = rem / n;
        off = off + k * r_strides(d);
    }
    return off;
}

fn is_nan(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
}

// A state word as f32, and back.
fn asf(v: u32) -> f32 {
    return bitcast<f32>(v);
}
fn asu(x: f32) -> u32 {
    return bitcast<u32>(x);
}
// m where finite, else 0 (logsumexp's and softmax's shift exp(x - fin(m))).
fn fin(m: f32) -> f32 {
    return select(0.0, m, is_finite(m));
}

// b where b is larger than a: NaN wins, -0.0 < +0.0 (a total order: any combination order
// gives the same bits). The twin of max_total in src/reduce/cpu.rs.
fn max_total(a: f32, b: f32) -> f32 {
    if (is_nan(a)) {
        return a;
    }
    if (is_nan(b) || b > a || (b == a && bitcast<u32>(a) == 0x80000000u && bitcast<u32>(b) == 0u)) {
        return b;
    }
    return a;
}

// Whether candidate (x, i) replaces the best (b, bi) of an argmax (`max`) or argmin: the first
// NaN wins, then the larger (smaller) value, then the lower index among equals.
fn arg_better(x: f32, i: u32, b: f32, bi: u32, max: bool) -> bool {
    if (is_nan(b)) {
        return is_nan(x) && i < bi;
    }
    if (is_nan(x)) {
        return true;
    }
    if (x == b) {
        return i < bi;
    }
    return (max && x > b) || (!max && x < b);
}
fn arg_better_i(x: i32, i: u32, b: i32, bi: u32, max: bool) -> bool {
    if (x == b) {
        return i < bi;
    }
    return (max && x > b) || (!max && x < b);
}

// var's divisor max(0, n - correction) (the host's, `divisor`) applied to the sum of squared
// deviations m2 of the n elements reduced.
fn var_of(m2: f32, n: u32) -> f32 {
    let d = red_u[pz()].divisor;
    if (d <= 0.0) {
        if (is_nan(m2) || m2 == 0.0) {
            return f32_of(NAN_BITS);
        }
        return f32_of(INF_BITS);
    }
    return m2 / d;
}
