//! Element types and the conversions a copy makes between them: every pair converts, as
//! PyTorch's `x.to(dtype)` does.
//!
//! Conversions are defined bit for bit here ([`cast_bits`]) and mirrored exactly by the WGSL
//! kernels (`shaders/preludes/cast.wgsl`), so device results equal the CPU reference on every adapter:
//!
//! * float to float: round to nearest even; NaN payloads kept in their top bits, quieted on
//!   narrowing (PyTorch's NaN bits differ and are not one rule: its CPU gives float32 NaN
//!   `0x7fa02000` as bfloat16 `0xffff` and quiets a widened float16 NaN in one way or another
//!   by the tensor's size; any NaN stays a NaN here, as there).
//! * int to int: sign-extended (i8, i32) or zero-extended (u8, u32) to 32 bits, then the
//!   target's low bits kept (two's complement wrap-around, as PyTorch: u8 242 -> i8 -14).
//! * int to float: to f32 rounding to nearest even, then (f16, bf16) narrowed from that f32,
//!   rounding to nearest even again (PyTorch also converts through float).
//! * float to u8, i8, u32: as PyTorch 2.15's CPU, through int64: truncation toward zero, then
//!   the target's low bits (f32 300.7 -> u8 44 and i8 44, -1.5 -> u8 255, 128.0 -> i8 -128,
//!   -1.5 -> u32 4294967295); NaN and magnitudes of at least 2^63 give 0 (int64's undefined
//!   cases, as x86's conversion gives them). PyTorch's CPU agrees for u8 and i8 everywhere and
//!   for u32 on (-2^31, 2^32); past that its u32 results vary with the tensor's size (under 8
//!   elements they wrap as here, 2^33 + 1024 giving 1024; from 8, 0, or 0x80000000 for -3e9).
//! * float to i32: truncation toward zero; NaN gives 0 and values outside the range saturate
//!   to its nearest bound (-inf -> i32::MIN), Rust's `as` from f32. PyTorch leaves these cases
//!   to its hardware (x86 gives i32::MIN, ARM saturates); this crate saturates on every adapter.

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
    /// The type's code: its index in [`DType::ALL`], the number the WGSL kernels know it by
    /// (their `DT_*` constants are generated from these codes).
    pub fn code(self) -> u32 {
        self as u32
    }
    /// Whether a copy from `self` into `dst` is allowed: always, every pair converts (see
    /// [`cast_bits`]). Kept so that callers need not assume it.
    pub fn can_copy_into(self, dst: DType) -> bool {
        let _ = dst;
        true
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

/// A Rust type that can be an element of a tensor: the seven the crate implements it for
/// (sealed: a type of another size than its `DTYPE`'s would make transfers read and write past
/// a tensor).
pub trait Element: bytemuck::Pod + Send + Sync + 'static + sealed::Sealed {
    /// Its element type.
    const DTYPE: DType;
}

mod sealed {
    pub trait Sealed {}
}

macro_rules! element {
    ($($t:ty => $d:ident),*) => { $(impl sealed::Sealed for $t {} impl Element for $t { const DTYPE: DType = DType::$d; })* };
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

/// Converts one element's bits from type `from` to type `to`, as a copy does: the bits are the
/// element's little-endian bytes, zero-extended to 32 bits (an i8 -1 is 0xff), and so is the
/// result. Same type: the bits untouched (NaN payloads kept). See the
/// module docs of `dtype` for each pair; float to u8, i8 and u32 wraps through int64 as
/// PyTorch's CPU does, float to i32 saturates out-of-range values (Rust's `as`), where PyTorch
/// leaves the result to its hardware; NaN gives 0.
pub fn cast_bits(from: DType, to: DType, bits: u32) -> u32 {
    if from == to {
        return bits;
    }
    match (from.is_float(), to.is_float()) {
        (true, true) => f32_bits_to_float(to, float_bits_to_f32(from, bits)),
        (false, false) => int_narrow(to, int_widen(from, bits)),
        (false, true) => f32_bits_to_float(to, int_to_f32_bits(from, bits)),
        (true, false) => f32_bits_to_int(to, float_bits_to_f32(from, bits)),
    }
}

/// An integer element's bits sign-extended (i8) or zero-extended (u8) to 32 bits.
fn int_widen(dtype: DType, bits: u32) -> u32 {
    match dtype {
        DType::I8 => bits as u8 as i8 as i32 as u32,
        DType::U8 => bits & 0xff,
        _ => bits,
    }
}

/// 32 bits cut to an integer type's low bits (two's complement wrap-around).
fn int_narrow(dtype: DType, bits: u32) -> u32 {
    match dtype {
        DType::I8 | DType::U8 => bits & 0xff,
        _ => bits,
    }
}

/// An integer element as f32 bits, rounding to nearest even (Rust's `as`).
fn int_to_f32_bits(dtype: DType, bits: u32) -> u32 {
    let w = int_widen(dtype, bits);
    match dtype {
        DType::I8 | DType::I32 => (w as i32 as f32).to_bits(),
        _ => (w as f32).to_bits(),
    }
}

/// f32 bits as an integer type's bits: truncated toward zero, NaN to 0; u8, i8 and u32 the
/// low bits of the int64 (PyTorch's `(uint8_t)(int64_t)x`), 0 where that is undefined (|x| >=
/// 2^63); i32's out-of-range values saturated to its bounds (Rust's `as`).
fn f32_bits_to_int(dtype: DType, bits: u32) -> u32 {
    let x = f32::from_bits(bits);
    match dtype {
        DType::I32 => x as i32 as u32,
        _ if x.is_nan() || x.abs() >= 9_223_372_036_854_775_808.0 => 0,
        DType::U8 | DType::I8 => x as i64 as u8 as u32,
        _ => x as i64 as u32,
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

/// A float32 accumulator as PyTorch's and the device kernels' are, for the host references'
/// sums (reductions, products, convolutions, average pools): in f64's precision while the
/// running value stays within float32's range, then in float32 (infinite, or NaN beside an
/// infinity of the other sign). A term is given in f64, where a product of two float32 values
/// is exact; one past float32's range (a float32 product that overflows) enters as float32's
/// infinity: `[1e30] x [1e10]` then `[1e30] x [-1e10]` is NaN, as a float32 accumulator's.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sum32 {
    exact: f64,
    past: Option<f32>,
}

impl Sum32 {
    /// An accumulator holding `start` (-0.0 kept; PyTorch's sums start from +0.0).
    pub(crate) fn new(start: f64) -> Sum32 {
        let t = start as f32;
        Sum32 { exact: start, past: (!t.is_finite()).then_some(t) }
    }

    /// Adds one term.
    pub(crate) fn add(&mut self, term: f64) {
        let t = term as f32;
        match self.past {
            Some(p) => self.past = Some(p + t),
            None if !t.is_finite() => self.past = Some(self.exact as f32 + t),
            None => {
                self.exact += term;
                if !(self.exact as f32).is_finite() {
                    self.past = Some(self.exact as f32);
                }
            }
        }
    }

    /// The value so far.
    pub(crate) fn value(&self) -> f64 {
        self.past.map_or(self.exact, f64::from)
    }
}

#[cfg(test)]
mod tests {
    use super::DType::{self, *};
    use super::{cast_bits, f32_to_f16_bits};

    fn f(x: f32) -> u32 {
        x.to_bits()
    }
    fn check(from: DType, to: DType, cases: &[(u32, u32)]) {
        for &(bits, want) in cases {
            let got = cast_bits(from, to, bits);
            assert_eq!(got, want, "{from} {bits:#x} -> {to}: got {got:#x}, want {want:#x}");
        }
    }

    #[test]
    fn codes_are_indices_in_all() {
        for (i, t) in DType::ALL.iter().enumerate() {
            assert_eq!(t.code() as usize, i, "{t}");
        }
    }

    #[test]
    fn every_pair_converts_and_results_fit_the_target() {
        let samples = [0u32, 1, 0x7f, 0x80, 0xff, 0x7fff, 0x8000, 0xffff, 0x7c00, 0x7e01, 0x7f80_0000, 0x7fc0_1234, 0xffa0_0001, 0x8000_0000, 0xffff_ffff, 0x4f80_0000, 0xcf00_0000];
        for from in DType::ALL {
            let mask = |t: DType| if t.size() == 4 { u32::MAX } else { (1u32 << (8 * t.size())) - 1 };
            for to in DType::ALL {
                assert!(from.can_copy_into(to));
                for s in samples {
                    let s = s & mask(from);
                    assert_eq!(cast_bits(from, to, s) & !mask(to), 0, "{from} {s:#x} -> {to} has bits above the target's size");
                }
            }
        }
    }

    #[test]
    fn same_type_keeps_bits() {
        for t in DType::ALL {
            for b in [0x7fa0_0001u32, 0xffff_ffff, 0x8000_0000, 0x7d01, 0xff] {
                let b = if t.size() == 4 { b } else { b & ((1 << (8 * t.size())) - 1) };
                assert_eq!(cast_bits(t, t, b), b, "{t}");
            }
        }
    }

    #[test]
    fn float_to_float_rounds_to_nearest_even_and_keeps_nan_payloads() {
        // Halfway cases: 1 + 2^-11 lies between f16 1.0 and 1 + 2^-10.
        check(F32, F16, &[(0x3f80_1000, 0x3c00), (0x3f80_3000, 0x3c02), (0x3f80_1001, 0x3c01), (f(65520.0), 0x7c00), (f(65519.99), 0x7bff)]);
        check(F32, F16, &[(0x7fa0_2000, 0x7f01), (0x7f80_0001, 0x7e00), (0xffc0_0000, 0xfe00), (0x7f80_0000, 0x7c00), (0xff80_0000, 0xfc00)]);
        check(F32, F16, &[(0x8000_0000, 0x8000), (0x0000_0001, 0), (0x3380_0000, 0x0001), (0x3300_0000, 0), (0x3340_0000, 0x0001), (0x33c0_0000, 0x0002)]);
        check(F16, F32, &[(0x7d01, 0x7fa0_2000), (0x0001, 0x3380_0000), (0x8000, 0x8000_0000), (0x03ff, f(1023.0 / 16_777_216.0)), (0xfc00, 0xff80_0000)]);
        check(F32, BF16, &[(0x3f80_8000, 0x3f80), (0x3f81_8000, 0x3f82), (0x3f80_8001, 0x3f81), (0x7f80_0001, 0x7fc0), (0xff81_0000, 0xffc1), (0x7f7f_ffff, 0x7f80), (0x0000_0001, 0)]);
        check(BF16, F32, &[(0x7f81, 0x7f81_0000), (0x8001, 0x8001_0000)]);
        // bf16 -> f16 goes through f32 exactly: 1/3 in bf16 (0x3eab) narrowed once.
        check(BF16, F16, &[(0x3eab, f32_to_f16_bits(0x3eab_0000) as u32), (0x7f80, 0x7c00), (0x0001, 0x0000), (0x7fc1, 0x7e08)]);
        check(F16, BF16, &[(0x3c01, 0x3f80), (0x3c03, 0x3f80), (0x3c04, 0x3f80), (0x3c05, 0x3f81), (0x3c0c, 0x3f82), (0x7d01, 0x7fe0)]);
    }

    #[test]
    fn int_to_int_wraps_like_pytorch() {
        check(U8, I8, &[(242, 0xf2), (127, 127), (128, 0x80), (255, 0xff)]);
        check(I8, U8, &[(0xf2, 242), (0x80, 128)]);
        check(I32, U8, &[(300, 44), (0xffff_ffff, 0xff), (256, 0)]);
        check(I32, I8, &[((-129i32) as u32, 0x7f), (128, 0x80), (0x8000_0000, 0)]);
        check(I32, U32, &[(0xffff_ffff, 0xffff_ffff), (0x8000_0000, 0x8000_0000)]);
        check(U32, I32, &[(0xffff_ffff, 0xffff_ffff)]);
        check(I8, I32, &[(0xff, 0xffff_ffff), (0x80, (-128i32) as u32), (0x7f, 127)]);
        check(I8, U32, &[(0xff, 0xffff_ffff)]);
        check(U8, I32, &[(0xff, 255), (242, 242)]);
        check(U8, U32, &[(0xff, 255)]);
        check(U32, U8, &[(0x1234_56f2, 0xf2)]);
        check(U32, I8, &[(0x1234_56f2, 0xf2)]);
    }

    #[test]
    fn int_to_float_rounds_to_nearest_even_through_f32() {
        check(I32, F32, &[(16_777_217, f(16_777_216.0)), (16_777_219, f(16_777_220.0)), (16_777_218, f(16_777_218.0)), (0x7fff_ffff, f(2_147_483_648.0)), (0x8000_0000, f(-2_147_483_648.0))]);
        check(I32, F32, &[(0, 0), (1, f(1.0)), (0xffff_ffff, f(-1.0)), ((-16_777_217i32) as u32, f(-16_777_216.0)), ((-16_777_219i32) as u32, f(-16_777_220.0))]);
        check(U32, F32, &[(0xffff_ffff, f(4_294_967_296.0)), (0x8000_0000, f(2_147_483_648.0)), (16_777_217, f(16_777_216.0)), (0xffff_ff7f, f(4_294_967_040.0)), (0xffff_ff80, f(4_294_967_296.0))]);
        check(I8, F32, &[(0xff, f(-1.0)), (0x80, f(-128.0)), (0x7f, f(127.0)), (0, 0)]);
        check(U8, F32, &[(0xff, f(255.0)), (242, f(242.0))]);
        // f16: 2049 is halfway between 2048 and 2050 (ties to even), 65519 rounds down, 65520 overflows.
        check(I32, F16, &[(2049, 0x6800), (2051, 0x6802), (65_504, 0x7bff), (65_519, 0x7bff), (65_520, 0x7c00), ((-65_520i32) as u32, 0xfc00), (0xffff_ffff, 0xbc00)]);
        check(U32, F16, &[(0xffff_ffff, 0x7c00), (2049, 0x6800)]);
        check(I8, F16, &[(0x80, 0xd800), (0xff, 0xbc00)]);
        check(U8, BF16, &[(255, 0x437f), (242, 0x4372)]);
        // Double rounding, as PyTorch: 2^24 + 2^16 + 1 rounds to 2^24 + 2^16 in f32, a bf16 tie
        // that goes to even (2^24); rounding once would give 2^24 + 2^17.
        check(I32, BF16, &[(16_842_753, 0x4b80), (16_842_752, 0x4b80), (16_908_288, 0x4b81), (257, 0x4380), (0x8000_0000, 0xcf00)]);
        check(U32, BF16, &[(0xffff_ffff, 0x4f80)]);
    }

    #[test]
    fn float_to_int_truncates_and_wraps_or_saturates() {
        let nan = [0x7fc0_0000u32, 0xffc0_0000, 0x7f80_0001, 0x7fa0_1234, 0xffff_ffff];
        for to in [I32, U32, U8, I8] {
            for n in nan {
                check(F32, to, &[(n, 0)]);
            }
            check(F16, to, &[(0x7e01, 0), (0xfd55, 0)]);
            check(BF16, to, &[(0x7fc1, 0), (0xff81, 0)]);
            // Zeros, subnormals and anything in (-1, 1) truncate to 0.
            check(F32, to, &[(0, 0), (0x8000_0000, 0), (1, 0), (0x8000_0001, 0), (f(-0.9), 0), (f(0.999), 0), (f(-0.5), 0)]);
            check(F16, to, &[(0x0001, 0), (0x8001, 0), (0x8000, 0)]);
        }
        // u8 through int64, as PyTorch's: the low 8 bits of the truncation.
        check(F32, U8, &[(f(300.7), 44), (f(-1.5), 255), (f(-2.7), 254), (f(255.5), 255), (f(256.0), 0), (f(254.9), 254), (f(-256.5), 0), (f(4_294_967_296.0), 0), (f(1e30), 0), (0x7f80_0000, 0), (0xff80_0000, 0)]);
        check(F32, U8, &[(f(2_147_483_520.0), 0x80), (f(-16_777_215.0), 1), (f(9.2e18), 0), (f(-9.3e18), 0)]);
        // i8 and u32 too (PyTorch 2.15's CPU); infinities give 0 (int64's undefined case).
        check(F32, I8, &[(f(127.9), 127), (f(128.0), 0x80), (f(-128.9), 0x80), (f(-129.0), 0x7f), (f(-2.7), 0xfe), (f(300.7), 44), (0x7f80_0000, 0), (0xff80_0000, 0)]);
        check(F32, I32, &[(f(1e10), 0x7fff_ffff), (0xff80_0000, 0x8000_0000), (0x7f80_0000, 0x7fff_ffff), (f(2_147_483_520.0), 2_147_483_520), (f(2_147_483_648.0), 0x7fff_ffff)]);
        check(F32, I32, &[(f(-2_147_483_648.0), 0x8000_0000), (f(-2_147_483_904.0), 0x8000_0000), (f(-2.7), (-2i32) as u32), (f(16_777_217.0), 16_777_216), (f(-1e10), 0x8000_0000)]);
        check(F32, U32, &[(0x7f80_0000, 0), (f(4_294_967_040.0), 4_294_967_040), (f(4_294_967_296.0), 0), (f(8_589_935_616.0), 1024), (f(-1.0), 0xffff_ffff), (f(-1.5), 0xffff_ffff), (0xff80_0000, 0), (f(2.5), 2)]);
        check(F16, U8, &[(0x7bff, 224), (0x5bf8, 255), (0x5bf0, 254), (0xfc00, 0), (0x7c00, 0), (0xbe00, 255)]);
        check(F16, I8, &[(0xfc00, 0), (0xd808, 0x7f), (0xd800, 0x80), (0xd7f8, 0x81), (0xfbff, 32), (0x7bff, 0xe0)]);
        check(F16, I32, &[(0x7bff, 65_504), (0xfbff, (-65_504i32) as u32), (0x7c00, 0x7fff_ffff), (0x3e00, 1)]);
        check(BF16, U32, &[(0x7f7f, 0), (0x4f80, 0), (0x4f7f, 0xff00_0000), (0xbf80, 0xffff_ffff)]);
        check(BF16, I32, &[(0x4f00, 0x7fff_ffff), (0xcf00, 0x8000_0000), (0x4eff, 0x7f80_0000)]);
    }
}
