// Element conversions between the seven element types, on u32 bits (an element's little-endian
// bits, zero-extended): the bit-exact twin of dtype.rs `cast_bits`. Needs the generated
// `dtypes` prelude (DT_F32 ... DT_I8, the codes of DType::ALL). Integer arithmetic only: WGSL's
// f32(i32) may round either way when inexact, and fast-math compilers may drop NaN and
// infinity checks done in float arithmetic.

// Bit-exact twins of dtype.rs: f16_to_f32_bits, f32_to_f16_bits, f32_to_bf16_bits.
fn f16_to_f32(h: u32) -> u32 {
    let sign = (h & 0x8000u) << 16u;
    let exp = (h >> 10u) & 0x1fu;
    let man = h & 0x3ffu;
    if (exp == 0x1fu) {
        return sign | 0x7f800000u | (man << 13u);
    }
    if (exp != 0u) {
        return sign | ((exp + 112u) << 23u) | (man << 13u);
    }
    if (man == 0u) {
        return sign;
    }
    let shift = countLeadingZeros(man) - 21u;
    return sign | ((113u - shift) << 23u) | (((man << shift) & 0x3ffu) << 13u);
}

fn f32_to_f16(x: u32) -> u32 {
    let sign = (x >> 16u) & 0x8000u;
    let exp = i32((x >> 23u) & 0xffu);
    let man = x & 0x7fffffu;
    if (exp == 0xff) {
        var nan = 0u;
        if (man != 0u) {
            nan = 0x200u | (man >> 13u);
        }
        return sign | 0x7c00u | nan;
    }
    let e = exp - 112;
    if (e >= 0x1f) {
        return sign | 0x7c00u;
    }
    if (e <= 0) {
        if (e < -10) {
            return sign;
        }
        let m = man | 0x800000u;
        let shift = u32(14 - e);
        let half = 1u << (shift - 1u);
        let rest = m & ((1u << shift) - 1u);
        var r = m >> shift;
        if (rest > half || (rest == half && (r & 1u) == 1u)) {
            r = r + 1u;
        }
        return sign | r;
    }
    var r = (u32(e) << 10u) | (man >> 13u);
    let rest = man & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (r & 1u) == 1u)) {
        r = r + 1u;
    }
    return sign | r;
}

fn f32_to_bf16(x: u32) -> u32 {
    if ((x & 0x7fffffffu) > 0x7f800000u) {
        return (x >> 16u) | 0x40u;
    }
    return (x + 0x7fffu + ((x >> 16u) & 1u)) >> 16u;
}

// Bytes of an element of type t.
fn dt_bytes(t: u32) -> u32 {
    switch t {
        case DT_F32, DT_I32, DT_U32: {
            return 4u;
        }
        case DT_F16, DT_BF16: {
            return 2u;
        }
        default: {
            return 1u;
        }
    }
}

fn dt_is_float(t: u32) -> bool {
    return t == DT_F32 || t == DT_F16 || t == DT_BF16;
}

// A float element widened to f32 bits, exactly (dtype.rs float_bits_to_f32).
fn float_to_f32(t: u32, v: u32) -> u32 {
    if (t == DT_F16) {
        return f16_to_f32(v);
    }
    if (t == DT_BF16) {
        return v << 16u;
    }
    return v;
}

// f32 bits narrowed to a float type, round to nearest even (dtype.rs f32_bits_to_float).
fn f32_to_float(t: u32, x: u32) -> u32 {
    if (t == DT_F16) {
        return f32_to_f16(x);
    }
    if (t == DT_BF16) {
        return f32_to_bf16(x);
    }
    return x;
}

// An integer element sign-extended (i8) or zero-extended (u8) to 32 bits.
fn int_widen(t: u32, v: u32) -> u32 {
    if (t == DT_I8) {
        return bitcast<u32>(bitcast<i32>(v << 24u) >> 24u);
    }
    if (t == DT_U8) {
        return v & 0xffu;
    }
    return v;
}

// 32 bits cut to an integer type's low bits.
fn int_narrow(t: u32, v: u32) -> u32 {
    if (t == DT_U8 || t == DT_I8) {
        return v & 0xffu;
    }
    return v;
}

// An unsigned 32-bit value as f32 bits, round to nearest even (ties to an even mantissa; a
// carry out of the mantissa correctly bumps the exponent).
fn u32_to_f32_bits(u: u32) -> u32 {
    if (u == 0u) {
        return 0u;
    }
    let lz = countLeadingZeros(u);
    let n = u << lz; // leading one at bit 31: bits 30..8 are the mantissa, 7..0 the rest
    var r = ((158u - lz) << 23u) | ((n >> 8u) & 0x7fffffu);
    let rest = n & 0xffu;
    if (rest > 0x80u || (rest == 0x80u && (r & 1u) == 1u)) {
        r = r + 1u;
    }
    return r;
}

// A signed 32-bit value (two's complement bits) as f32 bits, round to nearest even.
fn i32_to_f32_bits(v: u32) -> u32 {
    if ((v & 0x80000000u) == 0u) {
        return u32_to_f32_bits(v);
    }
    return 0x80000000u | u32_to_f32_bits(0u - v); // the magnitude of i32 min is 2^31, as u32
}

// f32 bits as an integer type's bits: NaN to 0, truncated toward zero; u8, i8 and u32 the low
// bits of the int64 (PyTorch's `(uint8_t)(int64_t)x`; 0 from 2^63), i32's out-of-range values
// saturated to its bounds (Rust's `as`). The twin of dtype.rs's `f32_bits_to_int`.
fn f32_to_int(t: u32, x: u32) -> u32 {
    if ((x & 0x7fffffffu) > 0x7f800000u) {
        return 0u;
    }
    let exp = (x >> 23u) & 0xffu;
    let man = (x & 0x7fffffu) | 0x800000u;
    let neg = (x & 0x80000000u) != 0u;
    if (t != DT_I32) {
        // The low 32 bits of |x| truncated: from 2^55 (a shift of 32 or more) they are 0, and
        // so up to 2^63 and past it (int64's undefined case, 0 on x86).
        var low = 0u;
        if (exp >= 127u && exp < 150u) {
            low = man >> (150u - exp);
        } else if (exp >= 150u && exp < 182u) {
            low = man << (exp - 150u);
        }
        let mask = select(0xffffffffu, 0xffu, t == DT_U8 || t == DT_I8);
        return select(low, 0u - low, neg) & mask;
    }
    // i32: |x| truncated, or 0xffffffff for |x| >= 2^32 (infinity included), then saturated.
    var mag = 0xffffffffu;
    if (exp < 127u) {
        mag = 0u;
    } else if (exp < 150u) {
        mag = man >> (150u - exp);
    } else if (exp < 159u) {
        mag = man << (exp - 150u);
    }
    if (neg) {
        return 0u - min(mag, 0x80000000u);
    }
    return min(mag, 0x7fffffffu);
}

// One element converted from type `src_t` to type `dst_t` (dtype codes).
fn cast_bits(v: u32, src_t: u32, dst_t: u32) -> u32 {
    if (src_t == dst_t) {
        return v;
    }
    let src_float = dt_is_float(src_t);
    let dst_float = dt_is_float(dst_t);
    if (!src_float && !dst_float) {
        return int_narrow(dst_t, int_widen(src_t, v));
    }
    var w: u32;
    if (src_float) {
        w = float_to_f32(src_t, v);
    } else if (src_t == DT_I32 || src_t == DT_I8) {
        w = i32_to_f32_bits(int_widen(src_t, v));
    } else {
        w = u32_to_f32_bits(int_widen(src_t, v));
    }
    if (dst_float) {
        return f32_to_float(dst_t, w);
    }
    return f32_to_int(dst_t, w);
}
