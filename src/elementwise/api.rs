//! The elementwise API shared by host and device tensors: every op in its out-of-place,
//! in-place (`add_`) and `out=` (`add_out`) forms, written once over [`Elementwise::run`].

use crate::dtype::DType;
use crate::elementwise::resolve::{Input, Target};
use crate::elementwise::{Op, Scalar};
use crate::error::Result;
use crate::strided::Strided;

macro_rules! unary {
    ($($name:ident, $name_:ident, $name_out:ident => $op:expr, $doc:literal;)*) => {$(
        #[doc = concat!("`torch.", stringify!($name), "`: ", $doc)]
        fn $name(&self) -> Result<Self> {
            Self::run($op, &[Input::Tensor(self)], Target::New)
        }
        #[doc = concat!("In place: `Tensor.", stringify!($name_), "()`.")]
        fn $name_(&self) -> Result<()> {
            Self::run($op, &[Input::Tensor(self)], Target::InPlace).map(drop)
        }
        #[doc = concat!("Into `out` (`torch.", stringify!($name), "(x, out=out)`).")]
        fn $name_out(&self, out: &Self) -> Result<()> {
            Self::run($op, &[Input::Tensor(self)], Target::Out(out)).map(drop)
        }
    )*};
}

macro_rules! binary {
    ($($name:ident, $name_:ident, $name_out:ident => $op:expr, $doc:literal;)*) => {$(
        #[doc = concat!("`torch.", stringify!($name), "(self, other)`: ", $doc, " `other` is a tensor (broadcast) or a scalar.")]
        fn $name<'a>(&'a self, other: impl Into<Input<'a, Self>>) -> Result<Self> {
            Self::run($op, &[Input::Tensor(self), other.into()], Target::New)
        }
        #[doc = concat!("In place: `Tensor.", stringify!($name_), "(other)`.")]
        fn $name_<'a>(&'a self, other: impl Into<Input<'a, Self>>) -> Result<()> {
            Self::run($op, &[Input::Tensor(self), other.into()], Target::InPlace).map(drop)
        }
        #[doc = concat!("Into `out` (`torch.", stringify!($name), "(self, other, out=out)`).")]
        fn $name_out<'a>(&'a self, other: impl Into<Input<'a, Self>>, out: &'a Self) -> Result<()> {
            Self::run($op, &[Input::Tensor(self), other.into()], Target::Out(out)).map(drop)
        }
    )*};
}

/// Elementwise operations, as PyTorch's, on host and device tensors alike. Each takes tensors
/// and scalars, broadcasts them, computes in the promoted type (see
/// [`result_type`](crate::result_type)) and writes a new tensor, the first input (`*_`), or a
/// given view (`*_out`). uint8 with int8 promotes to int16, which no tensor here stores: into
/// a destination (`*_`, `*_out`) it computes in 32 bits and converts at the store, which gives
/// PyTorch's int16 bits into a uint8 or int8 destination always, and into a wider one where no
/// result can leave int16 (else a [`Error::DType`](crate::Error::DType)); a new result is an
/// error. Bad input (shapes that do not broadcast, a destination of another
/// shape, a result type the destination cannot hold, a destination reaching an element twice
/// or partially overlapping an input) is a typed error, and nothing is written.
///
/// ```
/// use strided_wgpu::{Elementwise, HostTensor, Strided};
/// let x = HostTensor::from_vec(vec![-1.0f32, 2.0, -3.0, 4.0], &[2, 2]).unwrap();
/// let y = x.relu().unwrap().add(0.5).unwrap();
/// assert_eq!(y.to_vec::<f32>().unwrap(), vec![0.5, 2.5, 0.5, 4.5]);
/// x.mul_(&x.transpose(0, 1).unwrap().contiguous(strided_wgpu::MemoryFormat::Contiguous).unwrap()).unwrap();
/// assert_eq!(x.to_vec::<f32>().unwrap(), vec![1.0, -6.0, -6.0, 16.0]);
/// ```
pub trait Elementwise: Strided + Clone {
    /// Runs `op` on `inputs` into `target`; returns the tensor written (the new one, or a
    /// view of the destination).
    fn run(op: Op, inputs: &[Input<'_, Self>], target: Target<'_, Self>) -> Result<Self>;

    /// `x.to(dtype)`: this same view when it already has `dtype`, else a copy converted to
    /// `dtype` (see [`cast_bits`](crate::dtype::cast_bits) for the rules) that keeps the
    /// memory order (`preserve_format`: a dense view keeps its strides, any other view becomes
    /// dense in the order of its strides).
    fn to(&self, dtype: DType) -> Result<Self> {
        if dtype == self.dtype() {
            return Ok(self.clone());
        }
        Self::run(Op::To(dtype), &[Input::Tensor(self)], Target::New)
    }

    /// `torch.clamp(x, min, max)`; either bound may be `None`.
    fn clamp(&self, min: Option<Scalar>, max: Option<Scalar>) -> Result<Self> {
        Self::run(Op::Clamp { min, max }, &[Input::Tensor(self)], Target::New)
    }
    /// In place: `Tensor.clamp_(min, max)`.
    fn clamp_(&self, min: Option<Scalar>, max: Option<Scalar>) -> Result<()> {
        Self::run(Op::Clamp { min, max }, &[Input::Tensor(self)], Target::InPlace).map(drop)
    }
    /// `torch.add(self, other, alpha=alpha)`: `self + alpha * other`.
    fn add_scaled<'a>(&'a self, other: impl Into<Input<'a, Self>>, alpha: impl Into<Scalar>) -> Result<Self> {
        Self::run(Op::Add { alpha: alpha.into() }, &[Input::Tensor(self), other.into()], Target::New)
    }
    /// `torch.sub(self, other, alpha=alpha)`: `self - alpha * other`.
    fn sub_scaled<'a>(&'a self, other: impl Into<Input<'a, Self>>, alpha: impl Into<Scalar>) -> Result<Self> {
        Self::run(Op::Sub { alpha: alpha.into() }, &[Input::Tensor(self), other.into()], Target::New)
    }
    /// `torch.addcmul(self, t1, t2, value=value)`: `self + value * t1 * t2`.
    fn addcmul<'a>(&'a self, t1: impl Into<Input<'a, Self>>, t2: impl Into<Input<'a, Self>>, value: impl Into<Scalar>) -> Result<Self> {
        Self::run(Op::Addcmul { value: value.into() }, &[Input::Tensor(self), t1.into(), t2.into()], Target::New)
    }

    unary! {
        neg, neg_, neg_out => Op::Neg, "`-x`.";
        abs, abs_, abs_out => Op::Abs, "`|x|`.";
        relu, relu_, relu_out => Op::Relu, "`max(x, 0)`.";
        sigmoid, sigmoid_, sigmoid_out => Op::Sigmoid, "`1 / (1 + exp(-x))`.";
        tanh, tanh_, tanh_out => Op::Tanh, "hyperbolic tangent.";
        exp, exp_, exp_out => Op::Exp, "`e^x`.";
        log, log_, log_out => Op::Log, "natural logarithm.";
        sqrt, sqrt_, sqrt_out => Op::Sqrt, "square root.";
        rsqrt, rsqrt_, rsqrt_out => Op::Rsqrt, "`1 / sqrt(x)`.";
        floor, floor_, floor_out => Op::Floor, "round toward -inf.";
        ceil, ceil_, ceil_out => Op::Ceil, "round toward +inf.";
        round, round_, round_out => Op::Round, "round half to even.";
        trunc, trunc_, trunc_out => Op::Trunc, "round toward zero.";
        gelu, gelu_, gelu_out => Op::Gelu, "`x * Φ(x)` (`approximate=\"none\"`).";
        gelu_tanh, gelu_tanh_, gelu_tanh_out => Op::GeluTanh, "GELU with `approximate=\"tanh\"`.";
        silu, silu_, silu_out => Op::Silu, "`x * sigmoid(x)`.";
    }

    binary! {
        add, add_, add_out => Op::Add { alpha: Scalar::Int(1) }, "`self + other`.";
        sub, sub_, sub_out => Op::Sub { alpha: Scalar::Int(1) }, "`self - other`.";
        mul, mul_, mul_out => Op::Mul, "`self * other`.";
        div, div_, div_out => Op::Div, "true division (integers divide in float32).";
        maximum, maximum_, maximum_out => Op::Maximum, "the larger value (NaN wins).";
        minimum, minimum_, minimum_out => Op::Minimum, "the smaller value (NaN wins).";
    }
}
