// What every matrix-product kernel writes through (matmul_gemm.wgsl, matmul_gemm_sum.wgsl,
// matmul_vec.wgsl, matmul_coop.wgsl): the addend C (bound as 32-bit words: float32 one per word,
// 16-bit types two), the decoding of an element of the operands' type, and the epilogue act(alpha
// * acc + beta * C). The output (binding 4) is matmul_out.wgsl's (float32) or
// matmul_out16.wgsl's (the operands' 16-bit type, written as it is). Needs the generated
// `dtypes` prelude and preludes/matmul_params.wgsl first.

@group(0) @binding(3) var<storage, read> c: array<u32>;

// The two float16 values of word w as f32, exactly on every driver: unpack2x16float, whose
// conversion of normal numbers, zeros and infinities is exact on every IEEE unit, with zeros and
// subnormals (which a driver may flush) taken from their mantissa instead (m * 2^-24, exact).
// A NaN stays a NaN (a driver may quiet it).
fn f16x2(w: u32) -> vec2<f32> {
    let h = vec2<u32>(w & 0xffffu, w >> 16u);
    let tiny = bitcast<vec2<u32>>(vec2<f32>(h & vec2<u32>(0x3ffu)) * 5.9604644775390625e-8) | ((h & vec2<u32>(0x8000u)) << vec2<u32>(16u));
    return select(unpack2x16float(w), bitcast<vec2<f32>>(tiny), (h & vec2<u32>(0x7c00u)) == vec2<u32>(0u));
}

// Element i of an operand whose word is w (float32: the word; 16-bit types: its half i & 1).
fn mm_decode(w: u32, i: u32) -> f32 {
    if (F32_IN || mp_u[pz()].dims.w == DT_F32) {
        return bitcast<f32>(w);
    }
    if (mp_u[pz()].dims.w == DT_F16) {
        return f16x2(w)[i & 1u];
    }
    return bitcast<f32>(((w >> (16u * (i & 1u))) & 0xffffu) << 16u);
}

fn mm_word(i: u32) -> u32 {
    if (F32_IN || mp_u[pz()].dims.w == DT_F32) {
        return i;
    }
    return i >> 1u;
}

fn load_c(i: i32) -> f32 {
    let u = u32(i);
    return mm_decode(c[mm_word(u)], u);
}

// erfc, the Chebyshev fit of src/elementwise/cpu.rs (fractional error below 1.2e-7).
// erfc(z) of z >= 0 as t e^p: (t, p).
fn mm_erfc_tp(z: f32) -> vec2<f32> {
    let t = 1.0 / (1.0 + 0.5 * z);
    let p = -z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
    return vec2<f32>(t, p);
}

// GELU: 0.5 v erfc(-v / sqrt 2); below -9 as 0.5 v t e^(p/2) e^(p/2), so that erfc's value,
// under 2^-60 there, reaches no subnormal (which GPUs may flush) before the result does.
fn mm_gelu(v: f32) -> f32 {
    let tp = mm_erfc_tp(abs(v) * 0.70710678118654752);
    if (v < -9.0) {
        let e = exp(0.5 * tp.y);
        return ((0.5 * v * tp.x) * e) * e;
    }
    let r = tp.x * exp(tp.y);
    return 0.5 * v * select(r, 2.0 - r, v >= 0.0);
}

// act(alpha * acc + beta * C[ci]); C is read only when flag bit 0 says so (beta != 0).
fn mm_finish(acc: f32, ci: i32) -> f32 {
    var v = bitcast<f32>(mp_u[pz()].epi.x) * acc;
    if ((mp_u[pz()].epi.w & 1u) != 0u) {
        v = v + bitcast<f32>(mp_u[pz()].epi.y) * load_c(ci);
    }
    if (mp_u[pz()].epi.z == 1u) {
        // As Op::Relu: a NaN stays (its bits tested: WGSL leaves max() of NaN open).
        let nan = (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
        v = select(0.0, v, v > 0.0 || nan);
    } else if (mp_u[pz()].epi.z == 2u) {
        v = mm_gelu(v);
    }
    return v;
}
