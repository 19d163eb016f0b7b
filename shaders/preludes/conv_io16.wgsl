// The 16-bit twin of conv_io.wgsl, for the kernels that run on float16 and bfloat16 operands
// (HALF) as they are: the GEMM convolution (conv2d_gemm16, conv2d_gemm_sum16) and the depthwise
// ones (conv2d_depthwise16, conv2d_depthwise_rows16). The input and bias are bound as u32 words
// of two elements each and read as f32, exactly (every 16-bit value is an f32); the output is
// rounded once to the type (round to nearest even, cast.wgsl: the bits of the f32 result rounded
// by a copy) and stored as whole words where 4 outputs are one aligned vec2 word (VOUT), else
// element by element through packed_store.wgsl's atomics (an invocation never writes a
// neighbour's half). A weight read in place (the GEMM's, the strided depthwise kernel's) is
// widened exactly too (`w_elem` below); one packed by the host is f32. So the arithmetic is the
// f32 kernel's step for step. Needs the `dtypes` prelude, cast.wgsl and packed_store.wgsl.

// DT_F16 or DT_BF16.
override HALF: u32 = DT_F16;

@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(3) var<storage, read> bias: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<atomic<u32>>;
// 4 elements a word (VIN, VOUT); the GEMM's split-K partial words (4 f32) as two of them.
@group(0) @binding(5) var<storage, read> x4: array<vec2<u32>>;
@group(0) @binding(6) var<storage, read_write> y4: array<vec2<u32>>;

// A 16-bit element's bits (the low 16 of h) as f32, exactly, as cast.wgsl widens it for a
// copy: bfloat16 by a shift; float16 through unpack2x16float for normal numbers and zeros
// (whose conversion is exact on every IEEE unit) and through cast.wgsl's integer conversion
// for subnormals, infinities and NaN (which a driver may flush or quiet).
fn widen(h: u32) -> f32 {
    if (HALF != DT_F16) {
        return bitcast<f32>(h << 16u);
    }
    let e = h & 0x7c00u;
    if (e == 0x7c00u || (e == 0u && (h & 0x3ffu) != 0u)) {
        return bitcast<f32>(f16_to_f32(h));
    }
    return unpack2x16float(h).x;
}

// Element i of the words `w` (i & 1 picks the half).
fn half_at(w: u32, i: u32) -> f32 {
    return widen((w >> (16u * (i & 1u))) & 0xffffu);
}

// The 4 elements of a vec2 word.
fn halves(w: vec2<u32>) -> vec4<f32> {
    return vec4<f32>(widen(w.x & 0xffffu), widen(w.x >> 16u), widen(w.y & 0xffffu), widen(w.y >> 16u));
}

fn x_at(i: u32) -> f32 {
    return half_at(x[i >> 1u], i);
}

// A weight read in place, bound as u32 words: two elements a word (conv_io.wgsl's twin).
const WORD_ELEMS: u32 = 2u;

fn w_elem(word: u32, i: u32) -> f32 {
    return half_at(word, i);
}

fn x4_at(i: u32) -> vec4<f32> {
    return halves(x4[i / 4u]);
}

fn bias_elem(i: u32) -> f32 {
    return half_at(bias[i >> 1u], i);
}

// The bits of v rounded to the type (round to nearest even; NaN stays NaN).
fn y_bits(v: f32) -> u32 {
    return f32_to_float(HALF, bitcast<u32>(v));
}

// v rounded to the type, as the f32 it is exactly.
fn y_round(v: vec4<f32>) -> vec4<f32> {
    var r: vec4<f32>;
    for (var i = 0u; i < 4u; i = i + 1u) {
        r[i] = bitcast<f32>(float_to_f32(HALF, y_bits(v[i])));
    }
    return r;
}

fn y_store(i: u32, v: f32) {
    store_packed(i, y_bits(v), 2u);
}

fn y4_store(i: u32, v: vec4<f32>) {
    y4[i / 4u] = vec2<u32>(y_bits(v.x) | (y_bits(v.y) << 16u), y_bits(v.z) | (y_bits(v.w) << 16u));
}
