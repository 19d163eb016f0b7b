//! Elementwise operations as PyTorch's: the ops, their type rules, and the checks every form
//! (out-of-place, in-place, `out=`) goes through before anything is written, shared by the
//! CPU reference and the device.
//!
//! An operation resolves to an [`IterPlan`](crate::IterPlan) over its output and tensor
//! inputs and a `Resolved` description of the arithmetic: the type it computes in (the
//! inputs' [`result_type`], or float32 for ops PyTorch computes in floating
//! point), the output's type, and its scalar operands and arguments converted once.
//!
//! Arithmetic: float types compute in f32 (f16 and bf16 values are widened exactly and the
//! result is rounded once, to nearest even, at the store); integer types compute in 32 bits
//! and wrap as PyTorch's do (an int8 127 + 1 is -128); uint8 with int8 (PyTorch's int16)
//! computes in int32 into a destination, where that gives int16's bits (`resolve`). Every input
//! is first converted to the computation type with the casting rules of
//! [`cast_bits`](crate::dtype::cast_bits).

pub(crate) mod api;
pub(crate) mod cpu;
pub(crate) mod resolve;
pub(crate) mod types;

pub use api::Elementwise;
pub use resolve::{output_layout, Input, Target};
pub use types::{can_cast, result_type, Arg as PromoteArg};

use std::fmt;

use crate::dtype::DType;

/// A Python scalar operand or argument: its category takes part in type promotion as a
/// "wrapped number" (it never raises a tensor's type within the tensor's category).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    /// A Python int.
    Int(i64),
    /// A Python float.
    Float(f64),
}

macro_rules! scalar_from {
    ($($t:ty => $v:ident as $w:ty),*) => { $(impl From<$t> for Scalar { fn from(x: $t) -> Scalar { Scalar::$v(x as $w) } })* };
}
scalar_from!(i64 => Int as i64, i32 => Int as i64, u8 => Int as i64, f64 => Float as f64, f32 => Float as f64);

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Int(i) => write!(f, "{i}"),
            Scalar::Float(x) => write!(f, "{x:?}"),
        }
    }
}

/// An elementwise operation. Names and semantics are PyTorch's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Op {
    /// `x.to(dtype)`: the value converted to `dtype` (into a given destination: to the
    /// destination's type, as `copy_`).
    To(DType),
    /// `-x` (integers wrap).
    Neg,
    /// `|x|`.
    Abs,
    /// `max(x, 0)` (NaN stays NaN; -0.0 gives +0.0, where PyTorch's CPU keeps -0.0: the fused
    /// ReLU of convolutions and products into 16-bit outputs gives the same bits this way).
    Relu,
    /// `1 / (1 + exp(-x))`, computed in floating point.
    Sigmoid,
    /// `tanh(x)`, computed in floating point.
    Tanh,
    /// `exp(x)`, computed in floating point.
    Exp,
    /// Natural logarithm, computed in floating point (`log(0) = -inf`, negative: NaN).
    Log,
    /// Square root, computed in floating point (negative: NaN).
    Sqrt,
    /// `1 / sqrt(x)`, computed in floating point.
    Rsqrt,
    /// Rounds toward -inf (integers unchanged).
    Floor,
    /// Rounds toward +inf (integers unchanged).
    Ceil,
    /// Rounds half to even (integers unchanged).
    Round,
    /// Rounds toward zero (integers unchanged).
    Trunc,
    /// `min(max(x, min), max)`, either bound optional (NaN stays NaN; with min > max every
    /// value becomes max, as PyTorch).
    Clamp {
        /// The lower bound.
        min: Option<Scalar>,
        /// The upper bound.
        max: Option<Scalar>,
    },
    /// `x * Φ(x)` with the exact normal CDF (`approximate="none"`); float inputs only.
    Gelu,
    /// `0.5 x (1 + tanh(sqrt(2/π) (x + 0.044715 x³)))` (`approximate="tanh"`); float inputs only.
    GeluTanh,
    /// `x * sigmoid(x)`; float inputs only.
    Silu,
    /// `a + alpha * b`.
    Add {
        /// The multiplier of `b` (an int for integer computations).
        alpha: Scalar,
    },
    /// `a - alpha * b`.
    Sub {
        /// The multiplier of `b` (an int for integer computations).
        alpha: Scalar,
    },
    /// `a * b`.
    Mul,
    /// True division `a / b` (integer inputs compute in float32).
    Div,
    /// The larger of `a` and `b`; NaN if either is NaN; `maximum(-0.0, 0.0) = 0.0`.
    Maximum,
    /// The smaller of `a` and `b`; NaN if either is NaN; `minimum(-0.0, 0.0) = -0.0`.
    Minimum,
    /// `torch.addcmul`: `a + value * b * c`.
    Addcmul {
        /// The multiplier of `b * c`.
        value: Scalar,
    },
}

/// One op of each kind, in the order of their kernel codes.
pub(crate) const KINDS: [Op; 25] = [
    Op::To(DType::F32),
    Op::Neg,
    Op::Abs,
    Op::Relu,
    Op::Sigmoid,
    Op::Tanh,
    Op::Exp,
    Op::Log,
    Op::Sqrt,
    Op::Rsqrt,
    Op::Floor,
    Op::Ceil,
    Op::Round,
    Op::Trunc,
    Op::Clamp { min: None, max: None },
    Op::Gelu,
    Op::GeluTanh,
    Op::Silu,
    Op::Add { alpha: Scalar::Int(1) },
    Op::Sub { alpha: Scalar::Int(1) },
    Op::Mul,
    Op::Div,
    Op::Maximum,
    Op::Minimum,
    Op::Addcmul { value: Scalar::Int(1) },
];

/// The WGSL constants `OP_<NAME>` naming each op's kernel code: generated here so that Rust
/// and WGSL cannot disagree.
pub(crate) fn wgsl_op_codes() -> String {
    KINDS.iter().map(|op| format!("const OP_{}: u32 = {}u;\n", op.name().to_uppercase(), op.code())).collect()
}

impl Op {
    /// PyTorch's name of the op (`"add"`, `"gelu"`, ...; `"to"` for a conversion).
    pub fn name(self) -> &'static str {
        match self {
            Op::To(_) => "to",
            Op::Neg => "neg",
            Op::Abs => "abs",
            Op::Relu => "relu",
            Op::Sigmoid => "sigmoid",
            Op::Tanh => "tanh",
            Op::Exp => "exp",
            Op::Log => "log",
            Op::Sqrt => "sqrt",
            Op::Rsqrt => "rsqrt",
            Op::Floor => "floor",
            Op::Ceil => "ceil",
            Op::Round => "round",
            Op::Trunc => "trunc",
            Op::Clamp { .. } => "clamp",
            Op::Gelu => "gelu",
            Op::GeluTanh => "gelu_tanh",
            Op::Silu => "silu",
            Op::Add { .. } => "add",
            Op::Sub { .. } => "sub",
            Op::Mul => "mul",
            Op::Div => "div",
            Op::Maximum => "maximum",
            Op::Minimum => "minimum",
            Op::Addcmul { .. } => "addcmul",
        }
    }

    /// The kernels' code of the op: its position in the list of kinds.
    pub(crate) fn code(self) -> u32 {
        KINDS.iter().position(|k| std::mem::discriminant(k) == std::mem::discriminant(&self)).unwrap_or(0) as u32
    }

    /// How many inputs the op takes (tensors or scalars).
    pub fn arity(self) -> usize {
        match self {
            Op::Add { .. } | Op::Sub { .. } | Op::Mul | Op::Div | Op::Maximum | Op::Minimum => 2,
            Op::Addcmul { .. } => 3,
            _ => 1,
        }
    }

    /// Whether integer inputs compute in float32 (PyTorch's `promote_integer_inputs_to_float`).
    pub fn computes_in_float(self) -> bool {
        matches!(self, Op::Sigmoid | Op::Tanh | Op::Exp | Op::Log | Op::Sqrt | Op::Rsqrt | Op::Div | Op::Gelu | Op::GeluTanh | Op::Silu)
    }

    /// Whether the op takes float inputs only (PyTorch has no integer kernel for it).
    fn float_only(self) -> bool {
        matches!(self, Op::Gelu | Op::GeluTanh | Op::Silu)
    }

    /// Whether the op's float result is exactly determined (bit for bit on every adapter, but
    /// for subnormal results and operands of arithmetic on adapters that flush them to zero, as
    /// lavapipe does): conversions, sign and rounding ops, clamps, comparisons, and add/sub/mul
    /// without a multiplier. Other float results are within the tolerances of
    /// `tests/data/README.md`.
    pub fn is_exact(self) -> bool {
        match self {
            Op::Add { alpha } | Op::Sub { alpha } => alpha == Scalar::Int(1) || alpha == Scalar::Float(1.0),
            Op::To(_) | Op::Neg | Op::Abs | Op::Relu | Op::Floor | Op::Ceil | Op::Round | Op::Trunc | Op::Clamp { .. } | Op::Mul | Op::Maximum | Op::Minimum => true,
            _ => false,
        }
    }

    /// The op's scalar arguments that take part in type promotion (clamp's bounds).
    fn promoted_args(self) -> Vec<Scalar> {
        match self {
            Op::Clamp { min, max } => min.into_iter().chain(max).collect(),
            _ => Vec::new(),
        }
    }
}
