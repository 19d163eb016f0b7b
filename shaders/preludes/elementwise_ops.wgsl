// The arithmetic of every elementwise op, on values in the computation's representation (f32
// bits for float types, 32-bit integer bits else): the twin of src/elementwise/cpu.rs `apply`.
// Needs the generated `ops` and `dtypes` preludes. NaN and infinity are handled on bits and
// by explicit cases, never left to built-ins whose results WGSL leaves indeterminate there.

// The op (OP_* of the ops prelude) and the representation (DT_F32, DT_I32 or DT_U32).
override OP: u32 = 0u;
override REPR: u32 = 0u;

fn f_nan(b: u32) -> bool {
    return (b & 0x7fffffffu) > 0x7f800000u;
}

const F_INF: u32 = 0x7f800000u;
const F_NAN: u32 = 0x7fc00000u;
// +inf as a runtime value: Tint rejects `bitcast<f32>` of a constant infinity.
var<private> INF_BITS: u32 = F_INF;

// exp with overflow to +inf and underflow to 0 made explicit.
fn f_exp(x: f32) -> f32 {
    if (x > 88.72283) {
        return bitcast<f32>(INF_BITS);
    }
    if (x < -103.97208) {
        return 0.0;
    }
    return exp(x);
}

// tanh without the built-in: Mesa computes it as (e^x - e^-x) / (e^x + e^-x), which cancels
// near 0 (tanh(1e-7) came out 19% off, tanh(1e-8) 0). Below 0.5 the odd series to x^15 (the
// next term is under 1e-8 of tanh there); above, 1 - 2 / (e^2|x| + 1), which does not cancel.
fn f_tanh(x: f32) -> f32 {
    let a = abs(x);
    if (a > 15.0) {
        return sign(x);
    }
    if (a < 0.5) {
        // x times the even part, so that -0.0 stays -0.0.
        let p = x * x;
        return x * (1.0 + p * (-0.33333334 + p * (0.13333334 + p * (-0.053968254 + p * (0.021869488 + p * (-0.008863236 + p * (0.003592128 + p * -0.0014558344)))))));
    }
    let t = 1.0 - 2.0 / (exp(2.0 * a) + 1.0);
    return select(t, -t, x < 0.0);
}

// erfc with a fractional error below 1.2e-7 (the Chebyshev fit of src/elementwise/cpu.rs).
// erfc(z) of z >= 0 as t e^p: (t, p).
fn f_erfc_tp(z: f32) -> vec2<f32> {
    let t = 1.0 / (1.0 + 0.5 * z);
    let p = -z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
    return vec2<f32>(t, p);
}

fn f_erfc(x: f32) -> f32 {
    let tp = f_erfc_tp(abs(x));
    let r = tp.x * f_exp(tp.y);
    return select(2.0 - r, r, x >= 0.0);
}

fn apply_f32(a: u32, b: u32, c: u32) -> u32 {
    let x = bitcast<f32>(a);
    let y = bitcast<f32>(b);
    let z = bitcast<f32>(c);
    let alpha = bitcast<f32>(it_u[pz()].args.x);
    switch OP {
        case OP_NEG: {
            return a ^ 0x80000000u;
        }
        case OP_ABS: {
            return a & 0x7fffffffu;
        }
        case OP_ADD: {
            if (it_u[pz()].args.x == 0x3f800000u) {
                return bitcast<u32>(x + y);
            }
            return bitcast<u32>(x + alpha * y);
        }
        case OP_SUB: {
            if (it_u[pz()].args.x == 0x3f800000u) {
                return bitcast<u32>(x - y);
            }
            return bitcast<u32>(x - alpha * y);
        }
        case OP_MUL: {
            return bitcast<u32>(x * y);
        }
        case OP_ADDCMUL: {
            return bitcast<u32>(x + alpha * y * z);
        }
        case OP_MAXIMUM, OP_MINIMUM: {
            if (f_nan(a)) {
                return a;
            }
            if (f_nan(b)) {
                return b;
            }
            if (x == y) {
                return select(a | b, a & b, OP == OP_MAXIMUM);
            }
            return select(b, a, (x > y) == (OP == OP_MAXIMUM));
        }
        default: {}
    }
    if (f_nan(a)) {
        if (OP == OP_DIV) {
            return a;
        }
        return a;
    }
    switch OP {
        case OP_RELU: {
            return select(0u, a, x > 0.0);
        }
        case OP_SIGMOID: {
            return bitcast<u32>(1.0 / (1.0 + f_exp(-x)));
        }
        case OP_TANH: {
            return bitcast<u32>(f_tanh(x));
        }
        case OP_EXP: {
            return bitcast<u32>(f_exp(x));
        }
        case OP_LOG: {
            if (x < 0.0) {
                return F_NAN;
            }
            if (x == 0.0) {
                return 0xff800000u;
            }
            if (a == F_INF) {
                return a;
            }
            return bitcast<u32>(log(x));
        }
        case OP_SQRT: {
            if (x < 0.0) {
                return F_NAN;
            }
            if (x == 0.0 || a == F_INF) {
                return a;
            }
            return bitcast<u32>(sqrt(x));
        }
        case OP_RSQRT: {
            if (x < 0.0) {
                return F_NAN;
            }
            if (x == 0.0) {
                return (a & 0x80000000u) | F_INF;
            }
            if (a == F_INF) {
                return 0u;
            }
            return bitcast<u32>(1.0 / sqrt(x));
        }
        case OP_FLOOR: {
            return bitcast<u32>(floor(x));
        }
        case OP_CEIL: {
            return bitcast<u32>(ceil(x));
        }
        case OP_ROUND: {
            return bitcast<u32>(round(x));
        }
        case OP_TRUNC: {
            return bitcast<u32>(trunc(x));
        }
        case OP_CLAMP: {
            // A NaN bound: NaN (PyTorch's `clamp` fills its result with NaN there; a NaN x
            // returned itself above). A bound not given holds 0.
            let nan_bound = (bitcast<u32>(it_u[pz()].args.y) & 0x7fffffffu) > 0x7f800000u || (bitcast<u32>(it_u[pz()].args.z) & 0x7fffffffu) > 0x7f800000u;
            if (nan_bound) {
                return 0x7fc00000u;
            }
            var r = x;
            if ((it_u[pz()].args.w & 1u) != 0u && r < bitcast<f32>(it_u[pz()].args.y)) {
                r = bitcast<f32>(it_u[pz()].args.y);
            }
            if ((it_u[pz()].args.w & 2u) != 0u && r > bitcast<f32>(it_u[pz()].args.z)) {
                r = bitcast<f32>(it_u[pz()].args.z);
            }
            return bitcast<u32>(r);
        }
        case OP_GELU: {
            // Below -9, erfc(-x / sqrt 2) = t e^p is under 2^-60 and, from about -13, reaches
            // f32's subnormals (which GPUs may flush) before x / 2 times it does: x t e^(p/2)
            // e^(p/2) instead.
            if (x < -9.0) {
                let tp = f_erfc_tp(-x * 0.70710678118654752);
                let e = f_exp(0.5 * tp.y);
                return bitcast<u32>(((0.5 * x * tp.x) * e) * e);
            }
            return bitcast<u32>(0.5 * x * f_erfc(-x * 0.70710678118654752));
        }
        case OP_GELU_TANH: {
            // 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)): no cancellation for negative x. Past
            // e^80 the sum is e^-2u's own, which overflows before the result leaves f32 (and a
            // divisor past 2^126 is outside WGSL's division accuracy): x e^(u) e^(u) instead.
            let v = -1.5957691216057308 * (x + 0.044715 * x * x * x);
            if (v > 80.0) {
                let e = f_exp(-0.5 * v);
                return bitcast<u32>((x * e) * e);
            }
            return bitcast<u32>(x / (1.0 + f_exp(v)));
        }
        case OP_SILU: {
            // As gelu_tanh's: x e^(x/2) e^(x/2) where 1 + e^-x is e^-x's own.
            if (x < -80.0) {
                let e = f_exp(0.5 * x);
                return bitcast<u32>((x * e) * e);
            }
            return bitcast<u32>(x / (1.0 + f_exp(-x)));
        }
        case OP_DIV: {
            if (f_nan(b)) {
                return b;
            }
            if ((b & 0x7fffffffu) == 0u) {
                if ((a & 0x7fffffffu) == 0u) {
                    return F_NAN;
                }
                return ((a ^ b) & 0x80000000u) | F_INF;
            }
            if ((a & 0x7fffffffu) == 0u) {
                // 0 / y is a signed zero for every other y (a GPU that flushes a subnormal y
                // would take 0 / 0 = NaN).
                return (a ^ b) & 0x80000000u;
            }
            // WGSL's `/` is accurate only for |y| in [2^-126, 2^126]: beyond, a GPU may take
            // x * (1 / y) with 1 / y flushed to 0 (NVIDIA gave inf / 3.4e38 = NaN). Scaling
            // both by 1/4 brings such a y into range and keeps IEEE's quotient.
            let s = select(1.0, 0.25, abs(y) > 8.5070592e37);
            return bitcast<u32>((x * s) / (y * s));
        }
        default: {
            return a;
        }
    }
}

fn apply_int(a: u32, b: u32, c: u32) -> u32 {
    let signed = REPR == DT_I32;
    let x = bitcast<i32>(a);
    switch OP {
        case OP_NEG: {
            return 0u - a;
        }
        case OP_ABS: {
            return select(a, bitcast<u32>(abs(x)), signed);
        }
        case OP_RELU: {
            return select(a, 0u, signed && x < 0);
        }
        case OP_CLAMP: {
            var r = a;
            if ((it_u[pz()].args.w & 1u) != 0u && int_less(r, it_u[pz()].args.y)) {
                r = it_u[pz()].args.y;
            }
            if ((it_u[pz()].args.w & 2u) != 0u && int_less(it_u[pz()].args.z, r)) {
                r = it_u[pz()].args.z;
            }
            return r;
        }
        case OP_ADD: {
            return a + it_u[pz()].args.x * b;
        }
        case OP_SUB: {
            return a - it_u[pz()].args.x * b;
        }
        case OP_MUL: {
            return a * b;
        }
        case OP_ADDCMUL: {
            return a + it_u[pz()].args.x * b * c;
        }
        case OP_MAXIMUM: {
            return select(a, b, int_less(a, b));
        }
        case OP_MINIMUM: {
            return select(a, b, int_less(b, a));
        }
        default: {
            return a;
        }
    }
}

fn int_less(p: u32, q: u32) -> bool {
    if (REPR == DT_I32) {
        return bitcast<i32>(p) < bitcast<i32>(q);
    }
    return p < q;
}

// The op on slot values a, b, c (unused slots: anything).
fn apply_op(a: u32, b: u32, c: u32) -> u32 {
    if (REPR == DT_F32) {
        return apply_f32(a, b, c);
    }
    return apply_int(a, b, c);
}
