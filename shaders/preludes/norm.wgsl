// What the normalization kernels share (norm_rows.wgsl: whole rows; norm_split.wgsl: rows cut
// into chunks): the uniform, the operands, the walks over a row's elements that sum their
// terms (compensated) and the writes of the normalized elements. The arithmetic is the composed
// ops' (src/norm.rs): layer_norm's `x * rstd - mean * rstd`, then `* weight[j] + bias[j]`;
// group_norm's per-channel `scale = rstd * weight[c]`, `shift = -mean * rstd * weight[c] +
// bias[c]`, then `x * scale + shift`. The input is float32, float16 or bfloat16 (IN_DT,
// widened exactly), the arithmetic float32, the output float32 or the input's 16-bit type
// (OUT_HALF: rounded once, to nearest even, as the crate's conversions), written a 32-bit word
// (two elements) at a time. Needs `dtypes`, `cast` and `compensated`.

// Invocations a workgroup: 64, or 256 for long rows on GPUs (at most the tree's 256).
override WG: u32 = 64u;
// group_norm's per-channel affine (the weight index and arithmetic above), else layer_norm's.
override GROUPED: bool = false;

struct NormParams {
    // (rows, n: elements a row, workgroups along x of the grid, -).
    geo: vec4<u32>,
    // Input element of row r = n' * G + g, element j: x_off + n' * row_stride + g * n + j, as
    // (x_off, row_stride, G: rows a batch sample holds (1 for layer_norm), output offset), in
    // elements of the input's and the output's types. The output's rows are dense from its
    // offset.
    offs: vec4<u32>,
    // (channels a group, elements a channel (group_norm: pixels), weight given, bias given).
    aff: vec4<u32>,
    // (eps, -, -, -).
    eps: vec4<f32>,
    // norm_split: (chunks a row, elements a chunk (a multiple of 4), -, -).
    split: vec4<u32>,
}

@group(0) @binding(0) var<uniform> norm_u: array<NormParams, 1>;
// The input's 32-bit words (float32 elements, or two 16-bit ones each).
@group(0) @binding(1) var<storage, read> x: array<u32>;
// The affine parameters (a spare word where not given, never read).
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
// The output's 32-bit words.
@group(0) @binding(4) var<storage, read_write> out: array<u32>;
// The whole 16-byte words of x's window, read where VEC4 (a spare word elsewhere, never read).
@group(0) @binding(5) var<storage, read> x4: array<vec4<u32>>;

// Every row starts on a 16-byte word of x and holds whole words (float32): loaded as words.
override VEC4: bool = false;
// The input's element type (a DT_* code: DT_F32, DT_F16, DT_BF16).
override IN_DT: u32 = DT_F32;
// The output is the input's 16-bit type (rows of even length from even offsets), else float32.
override OUT_HALF: bool = false;

// +inf as a runtime value: Tint rejects `bitcast<f32>` of a constant infinity.
var<private> NORM_INF: u32 = 0x7f800000u;

// 1 / sqrt(v) as the composed ops' `rsqrt` (elementwise_ops.wgsl's OP_RSQRT): zeros and the
// infinity made explicit (a constant row with eps = 0 has an infinite rstd and NaN outputs, as
// PyTorch's), where WGSL leaves inverseSqrt(0), 1 / 0 and sqrt of a NaN to the driver (and
// compilers turn 1 / sqrt(v) into inverseSqrt(v)).
fn rsqrt_of(v: f32) -> f32 {
    let a = bitcast<u32>(v);
    if ((a & 0x7fffffffu) > NORM_INF || v < 0.0) {
        return bitcast<f32>(NORM_INF | 0x00400000u);
    }
    if (v == 0.0) {
        return bitcast<f32>((a & 0x80000000u) | NORM_INF);
    }
    if (a == NORM_INF) {
        return 0.0;
    }
    return 1.0 / sqrt(v);
}

// Input element i of the window, widened to f32.
fn load(i: u32) -> f32 {
    if (IN_DT == DT_F32) {
        return bitcast<f32>(x[i]);
    }
    return bitcast<f32>(float_to_f32(IN_DT, (x[i >> 1u] >> ((i & 1u) * 16u)) & 0xffffu));
}

fn pz() -> u32 {
    return uniform_index(norm_u[0].geo.x);
}

var<workgroup> tree: array<f32, 256>;

// The workgroup's values v summed in a fixed tree (invocation i with i + s, s = WG / 2, .., 1).
fn tree_sum(v: f32, lid: u32) -> f32 {
    tree[lid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
        if (lid < s) {
            tree[lid] = tree[lid] + tree[lid + s];
        }
        workgroupBarrier();
    }
    let r = tree[0];
    workgroupBarrier();
    return r;
}


// The scale of a row's terms for its mean (`sum_scale`), set by each kernel's main.
var<private> norm_scale: f32 = 1.0;

// 2^-k, k = ceil(log2 n), for rows of n elements (geo.y): a row's n finite values scaled by it
// sum to a finite value (each is at most f32's largest / n), and a power of two scales exactly
// while the terms and the sum's compensations stay normal (values above about 2^(k - 102)), so
// `(sum / n) / scale` has the bits of the unscaled sum's mean there (rows of tiny values may
// differ in their last bits, or flush to 0 on a GPU that flushes subnormals), and is finite
// where the unscaled sum overflowed (a row of 1024 values of 1e36 has mean 1e36, where an f32
// sum is inf: as a running (Welford) mean, PyTorch's CUDA kernels' way, keeps it; its CPU
// kernels' f32 sum gives inf and the row NaN).
fn sum_scale() -> f32 {
    let n = norm_u[pz()].geo.y;
    let k = 32u - countLeadingZeros(max(n, 1u) - 1u);
    return bitcast<f32>((127u - k) << 23u);
}

// The mean of a row of n elements from the sum of its scaled terms.
fn mean_of(scaled_sum: f32, n: u32) -> f32 {
    return scaled_sum / f32(n) / norm_scale;
}

// The term of element value v: v scaled (`norm_scale`), or (v - mean)^2.
fn term(v: f32, squares: bool, mean: f32) -> f32 {
    if (squares) {
        let d = v - mean;
        return d * d;
    }
    return v * norm_scale;
}

// This invocation's compensated sum of the terms of elements j0, j0 + step, .. of the row
// from xb, in that order, four loads issued together where four remain; with VEC4, of the
// row's 16-byte words j0, j0 + step, .. (their four elements in order).
fn walk(xb: u32, n: u32, j0: u32, step: u32, squares: bool, mean: f32) -> f32 {
    var st = vec2<f32>(0.0);
    if (VEC4) {
        let qb = xb / 4u;
        for (var q = j0; q < n / 4u; q = q + step) {
            let v = bitcast<vec4<f32>>(x4[qb + q]);
            st = kadd(st, term(v.x, squares, mean));
            st = kadd(st, term(v.y, squares, mean));
            st = kadd(st, term(v.z, squares, mean));
            st = kadd(st, term(v.w, squares, mean));
        }
        return ksum(st);
    }
    var j = j0;
    for (; j + 3u * step < n; j = j + 4u * step) {
        let a = load(xb + j);
        let b = load(xb + j + step);
        let c = load(xb + j + 2u * step);
        let d = load(xb + j + 3u * step);
        st = kadd(st, term(a, squares, mean));
        st = kadd(st, term(b, squares, mean));
        st = kadd(st, term(c, squares, mean));
        st = kadd(st, term(d, squares, mean));
    }
    for (; j < n; j = j + step) {
        st = kadd(st, term(load(xb + j), squares, mean));
    }
    return ksum(st);
}

// The output of element j (value v) of a row whose group's first channel is c0 (GROUPED), from
// the row's rstd and shift = -mean * rstd.
fn normalized(c0: u32, j: u32, v: f32, rstd: f32, shift: f32) -> f32 {
    let aff = norm_u[pz()].aff;
    if (GROUPED) {
        // Channel of element j: (r % G) * per + j / plane.
        let ch = c0 + j / aff.y;
        var sc = rstd;
        var sh = shift;
        if (aff.z != 0u) {
            sc = rstd * w[ch];
            sh = shift * w[ch];
        }
        if (aff.w != 0u) {
            sh = sh + bias[ch];
        }
        return v * sc + sh;
    }
    var y = v * rstd + shift;
    if (aff.z != 0u) {
        y = y * w[j];
    }
    if (aff.w != 0u) {
        y = y + bias[j];
    }
    return y;
}

// Writes elements j0, j0 + step, .. (with VEC4 words j0, j0 + step, ..; with OUT_HALF element
// pairs j0, j0 + step, ..) of the n elements of row r from its element lo (input from xb, output
// from ob: lo's) from the row's mean and rstd.
fn write_row(r: u32, xb: u32, ob: u32, n: u32, lo: u32, j0: u32, step: u32, mean: f32, rstd: f32) {
    let shift = -(mean * rstd);
    let c0 = (r % norm_u[pz()].offs.z) * norm_u[pz()].aff.x;
    if (OUT_HALF) {
        // Each invocation writes whole words: elements 2q and 2q + 1 (ob and n are even).
        for (var q = j0; q < n / 2u; q = q + step) {
            let j = 2u * q;
            let even = f32_to_float(IN_DT, bitcast<u32>(normalized(c0, lo + j, load(xb + j), rstd, shift)));
            let odd = f32_to_float(IN_DT, bitcast<u32>(normalized(c0, lo + j + 1u, load(xb + j + 1u), rstd, shift)));
            out[(ob + j) >> 1u] = even | (odd << 16u);
        }
        return;
    }
    if (VEC4) {
        let qb = xb / 4u;
        for (var q = j0; q < n / 4u; q = q + step) {
            let v = bitcast<vec4<f32>>(x4[qb + q]);
            let j = 4u * q;
            out[ob + j] = bitcast<u32>(normalized(c0, lo + j, v.x, rstd, shift));
            out[ob + j + 1u] = bitcast<u32>(normalized(c0, lo + j + 1u, v.y, rstd, shift));
            out[ob + j + 2u] = bitcast<u32>(normalized(c0, lo + j + 2u, v.z, rstd, shift));
            out[ob + j + 3u] = bitcast<u32>(normalized(c0, lo + j + 3u, v.w, rstd, shift));
        }
        return;
    }
    for (var j = j0; j < n; j = j + step) {
        out[ob + j] = bitcast<u32>(normalized(c0, lo + j, load(xb + j), rstd, shift));
    }
}

// The first input and output elements of row r.
fn row_start(r: u32) -> vec2<u32> {
    let offs = norm_u[pz()].offs;
    let n = norm_u[pz()].geo.y;
    return vec2<u32>(offs.x + (r / offs.z) * offs.y + (r % offs.z) * n, offs.w + r * n);
}
