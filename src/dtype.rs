//! Element types and the conversions a copy may make between the float types.
//!
//! Conversions are defined bit for bit here (round to nearest even, NaN payloads kept in their
//! top bits and quieted on narrowing) and mirrored exactly by the WGSL kernels, so device
//! results equal the CPU reference on every adapter.

use std::fmt;

/// The element type of a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// IEEE binary32.
    F32,
    /// IEEE binary16.
    F16,
    /// bfloat16.
    BF16,
    /// Signed 32-bit integer.
    I32,
    /// Unsigned 32-bit integer.
    U32,
    /// Unsigned byte.
    U8,
    /// Signed byte.
    I8,
}

impl DType {
    /// Every element type.
    pub const ALL: [DType; 7] = [DType::F32, DType::F16, DType::BF16, DType::I32, DType::U32, DType::U8, DType::I8];

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F16 | DType::BF16 => 2,
            DType::U8 | DType::I8 => 1,
        }
    }
    /// Whether this is a floating-point type.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F16 | DType::BF16)
    }
    /// Whether a copy from `self` into `dst` is allowed: same type, or between float types.
    pub fn can_copy_into(self, dst: DType) -> bool {
        self == dst || (self.is_float() && dst.is_float())
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::I32 => "i32",
            DType::U32 => "u32",
            DType::U8 => "u8",
            DType::I8 => "i8",
        })
    }
}

/// A Rust type that can be an element of a tensor.
pub trait Element: bytemuck::Pod + Send + Sync + 'static {
    /// Its element type.
    const DTYPE: DType;
}

macro_rules! element {
    ($($t:ty => $d:ident),*) => { $(impl Element for $t { const DTYPE: DType = DType::$d; })* };
}
element!(f32 => F32, half::f16 => F16, half::bf16 => BF16, i32 => I32, u32 => U32, u8 => U8, i8 => I8);

/// The bits of an element of a float type, widened to f32 bits exactly (NaN payloads kept).
pub fn float_bits_to_f32(dtype: DType, bits: u32) -> u32 {
    match dtype {
        DType::F16 => f16_to_f32_bits(bits as u16),
        DType::BF16 => bits << 16,
        _ => bits,
    }
}

/// f32 bits narrowed to a float type's bits, rounding to nearest even.
pub fn f32_bits_to_float(dtype: DType, bits: u32) -> u32 {
    match dtype {
        DType::F16 => f32_to_f16_bits(bits) as u32,
        DType::BF16 => f32_to_bf16_bits(bits) as u32,
        _ => bits,
    }
}

/// binary16 -> binary32, exact. NaN payloads move to the top of the f32 mantissa.
pub fn f16_to_f32_bits(h: u16) -> u32 {
    let h = h as u32;
    let sign = (h & 0x8000) << 16;
    let exp = (h >> 10) & 0x1f;
    let man = h & 0x3ff;
    if exp == 0x1f {
        return sign | 0x7f80_0000 | (man << 13);
    }
    if exp != 0 {
        return sign | ((exp + 112) << 23) | (man << 13);
    }
    if man == 0 {
        return sign;
    }
    // Subnormal: shift the leading one into the implicit position.
    let shift = man.leading_zeros() - 21; // 1..=10
    sign | ((113 - shift) << 23) | ((man << shift) & 0x3ff) << 13
}

/// binary32 -> binary16, round to nearest even; NaN keeps its top payload bits and is quieted.
pub fn f32_to_f16_bits(x: u32) -> u16 {
    let sign = ((x >> 16) & 0x8000) as u16;
    let exp = ((x >> 23) & 0xff) as i32;
    let man = x & 0x7f_ffff;
    if exp == 0xff {
        let nan = if man != 0 { 0x200 | (man >> 13) as u16 } else { 0 };
        return sign | 0x7c00 | nan;
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign; // rounds to zero
        }
        let m = man | 0x80_0000; // 24 significant bits
        let shift = (14 - e) as u32; // 14..=24
        let half = 1u32 << (shift - 1);
        let rest = m & ((1u32 << shift) - 1);
        let mut r = m >> shift;
        if rest > half || (rest == half && r & 1 == 1) {
            r += 1;
        }
        return sign | r as u16;
    }
    let mut r = ((e as u32) << 10) | (man >> 13);
    let rest = man & 0x1fff;
    if rest > 0x1000 || (rest == 0x1000 && r & 1 == 1) {
        r += 1; // may carry into the exponent, up to infinity: correct
    }
    sign | r as u16
}

/// binary32 -> bfloat16, round to nearest even; NaN keeps its top payload bits and is quieted.
pub fn f32_to_bf16_bits(x: u32) -> u16 {
    if x & 0x7fff_ffff > 0x7f80_0000 {
        return ((x >> 16) | 0x40) as u16;
    }
    ((x + 0x7fff + ((x >> 16) & 1)) >> 16) as u16
}

/// An element's bits converted from `from` to `to`: identity within a type; float to float
/// through f32, rounding to nearest even; integer to integer keeping the low bits of the
/// sign- or zero-extended value; integer to float rounding to nearest even (to f32, then to
/// f16/bf16); float to integer truncating toward zero, saturating at the target's range, NaN
/// to 0.
pub fn cast_bits(from: DType, to: DType, bits: u32) -> u32 {
    let int = |d: DType, b: u32| -> i64 {
        match d {
            DType::I8 => b as u8 as i8 as i64,
            DType::U8 => (b & 0xff) as i64,
            DType::I32 => b as i32 as i64,
            _ => b as i64,
        }
    };
    if from == to {
        return bits;
    }
    match (from.is_float(), to.is_float()) {
        (true, true) => f32_bits_to_float(to, float_bits_to_f32(from, bits)),
        (false, false) => {
            let v = int(from, bits) as u32;
            match to.size() {
                1 => v & 0xff,
                _ => v,
            }
        }
        (false, true) => f32_bits_to_float(to, (int(from, bits) as f32).to_bits()),
        (true, false) => {
            let f = f32::from_bits(float_bits_to_f32(from, bits));
            match to {
                DType::I32 => f as i32 as u32,
                DType::U32 => f as u32,
                DType::U8 => f as u8 as u32,
                _ => f as i8 as u8 as u32,
            }
        }
    }
}
