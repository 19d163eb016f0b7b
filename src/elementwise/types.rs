//! Type promotion as PyTorch's: `torch.result_type` and `torch.can_cast`, over the crate's
//! seven element types and Python scalars ("wrapped numbers").
//!
//! Promotion works on a wider set of types than the crate stores (int16 and int64 arise from
//! mixed signedness and from Python ints), so that a result outside the seven is an error
//! that names it rather than a silent change of type.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::elementwise::Scalar;

/// An argument's part in type promotion.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arg {
    /// A tensor of this type and rank (0-d tensors rank below tensors with dims).
    Tensor(DType, usize),
    /// A Python scalar: an int counts as int64, a float as the default float32, and neither
    /// raises a tensor's type within its category.
    Scalar(Scalar),
}

/// The types promotion moves through: the stored seven and the ones PyTorch would produce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wide {
    Stored(DType),
    I16,
    I64,
}

impl Wide {
    fn is_float(self) -> bool {
        matches!(self, Wide::Stored(d) if d.is_float())
    }
    fn name(self) -> String {
        match self {
            Wide::Stored(d) => d.to_string(),
            Wide::I16 => "int16".into(),
            Wide::I64 => "int64".into(),
        }
    }
    /// (signed, bits) of an integer type.
    fn int(self) -> (bool, u32) {
        match self {
            Wide::Stored(DType::U8) => (false, 8),
            Wide::Stored(DType::I8) => (true, 8),
            Wide::I16 => (true, 16),
            Wide::Stored(DType::I32) => (true, 32),
            Wide::Stored(DType::U32) => (false, 32),
            _ => (true, 64),
        }
    }
}

/// PyTorch's `promoteTypes` on two types.
fn promote(op: &'static str, a: Wide, b: Wide) -> Result<Wide> {
    use DType::*;
    if a == b {
        return Ok(a);
    }
    match (a, b) {
        (Wide::Stored(F16), Wide::Stored(BF16)) | (Wide::Stored(BF16), Wide::Stored(F16)) => return Ok(Wide::Stored(F32)),
        (Wide::Stored(F32), _) | (_, Wide::Stored(F32)) => return Ok(Wide::Stored(F32)),
        (x, _) if x.is_float() => return Ok(x),
        (_, y) if y.is_float() => return Ok(y),
        _ => {}
    }
    if a == Wide::Stored(U32) || b == Wide::Stored(U32) {
        return Err(Error::DType {
            op,
            got: format!("{} with {}", a.name(), b.name()),
            expected: "uint32 with uint32 or a float type (PyTorch does not promote uint32 with another integer type)".into(),
        });
    }
    let ((sa, ba), (sb, bb)) = (a.int(), b.int());
    Ok(match (sa, sb) {
        (true, true) => if ba >= bb { a } else { b },
        // u8 with a signed type: the signed type when it is wider, else int16.
        (false, true) => if bb > 8 { b } else { Wide::I16 },
        (true, false) => if ba > 8 { a } else { Wide::I16 },
        (false, false) => if ba >= bb { a } else { b },
    })
}

fn promote_opt(op: &'static str, a: Option<Wide>, b: Wide) -> Result<Option<Wide>> {
    Ok(Some(match a {
        None => b,
        Some(a) => promote(op, a, b)?,
    }))
}

/// PyTorch's `combine_categories`: the higher-priority result wins unless the lower one is of
/// a higher category (a float against integers).
fn combine(op: &'static str, higher: Option<Wide>, lower: Option<Wide>) -> Result<Option<Wide>> {
    match (higher, lower) {
        (Some(h), _) if h.is_float() => Ok(Some(h)),
        (Some(h), Some(l)) if l.is_float() => Ok(Some(promote(op, h, l)?)),
        (Some(h), _) => Ok(Some(h)),
        (None, l) => Ok(l),
    }
}

/// `torch.result_type` of `args`: tensors with dims first, then 0-d tensors, then Python
/// scalars, each class promoted within itself and combined by category. A result outside the
/// crate's seven types (int16 from uint8 with int8, int64 from Python ints alone) and
/// promotions PyTorch does not support (uint32 with another integer type) are errors that
/// name the types. (An in-place or `out=` op of uint8 with int8 stores no int16: it computes
/// in 32 bits into its destination where that gives PyTorch's int16 bits.)
///
/// ```
/// use strided_wgpu::ops::{result_type, PromoteArg};
/// use strided_wgpu::{DType, Scalar};
/// let t = |d| PromoteArg::Tensor(d, 4);
/// assert_eq!(result_type("add", &[t(DType::I32), PromoteArg::Scalar(Scalar::Float(0.5))]).unwrap(), DType::F32);
/// assert_eq!(result_type("add", &[t(DType::F16), PromoteArg::Scalar(Scalar::Float(0.5))]).unwrap(), DType::F16);
/// assert_eq!(result_type("add", &[t(DType::F16), t(DType::BF16)]).unwrap(), DType::F32);
/// assert_eq!(result_type("add", &[t(DType::U8), PromoteArg::Tensor(DType::F32, 0)]).unwrap(), DType::F32);
/// assert_eq!(result_type("add", &[t(DType::F16), PromoteArg::Tensor(DType::F32, 0)]).unwrap(), DType::F16);
/// assert!(result_type("add", &[t(DType::U8), t(DType::I8)]).is_err()); // int16
/// ```
pub fn result_type(op: &'static str, args: &[Arg]) -> Result<DType> {
    result_type_for(op, args, false)
}

/// The type an operation computes in: one of the crate's seven, or int16 (uint8 with int8),
/// which the crate stores nowhere but an in-place or `out=` operation can compute in (see
/// `resolve`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Common {
    Stored(DType),
    Int16,
}

/// [`result_type`], with integer results becoming float32 when `float` is set (the ops
/// PyTorch computes in floating point, for which int16 is only a step on the way).
pub(crate) fn result_type_for(op: &'static str, args: &[Arg], float: bool) -> Result<DType> {
    match common_type(op, args, float)? {
        Common::Stored(d) => Ok(d),
        Common::Int16 => Err(int16_result(op)),
    }
}

/// The error of an int16 result where one must be stored, or where 32-bit arithmetic would not
/// give PyTorch's int16 bits: a type the crate does not implement.
pub(crate) fn int16_result(op: &'static str) -> Error {
    Error::unsupported(op, format!("PyTorch computes this in {}, a type the crate does not implement (it has f32, f16, bf16, i32, u32, u8 and i8)", Wide::I16.name()))
}

/// [`result_type_for`], with int16 a result rather than an error.
pub(crate) fn common_type(op: &'static str, args: &[Arg], float: bool) -> Result<Common> {
    let (mut dim, mut zero, mut wrapped) = (None, None, None);
    for a in args {
        match *a {
            Arg::Tensor(d, rank) if rank > 0 => dim = promote_opt(op, dim, Wide::Stored(d))?,
            Arg::Tensor(d, _) => zero = promote_opt(op, zero, Wide::Stored(d))?,
            Arg::Scalar(Scalar::Int(_)) => wrapped = promote_opt(op, wrapped, Wide::I64)?,
            Arg::Scalar(Scalar::Float(_)) => wrapped = promote_opt(op, wrapped, Wide::Stored(DType::F32))?,
        }
    }
    match combine(op, dim, combine(op, zero, wrapped)?)? {
        Some(w) if float && !w.is_float() => Ok(Common::Stored(DType::F32)),
        Some(Wide::Stored(d)) => Ok(Common::Stored(d)),
        Some(Wide::I16) => Ok(Common::Int16),
        Some(w) => Err(Error::unsupported(op, format!("PyTorch computes this in {}, a type the crate does not implement (it has f32, f16, bf16, i32, u32, u8 and i8)", w.name()))),
        None => Err(Error::invalid(op, "no operand to take a type from")),
    }
}

/// `torch.can_cast(from, to)`: whether an operation computing in `from` may write an in-place
/// or `out=` destination of type `to`. A float result cannot go into an integer tensor; every
/// other pair may (narrowing within a category included).
pub fn can_cast(from: DType, to: DType) -> bool {
    !from.is_float() || to.is_float()
}
