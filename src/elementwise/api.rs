//! The elementwise API shared by host and device tensors: every op in its out-of-place,
//! in-place (`add_`) and `out=` (`add_out`) forms, written once over [`Elementwise::run`].

use crate::dtype::DType;
use crate::elementwise::resolve::{Input, Target};
use crate::elementwise::{Op, Scalar};
use crate::error::Result;
use crate::strided::Strided;

/// Every elementwise op and its three forms, listed once. `$m!` receives the list and writes
/// the methods: the [`Elementwise`] trait's (`$T` = `Self`) and [`Batch`](crate::Batch)'s,
/// which record the same ops (`$T` = `DeviceTensor`). An entry reads
/// `name, name_, name_out = "PyTorch's name" (parameters after the tensor) => the op, [the
/// inputs after the tensor], "what it computes";`.
macro_rules! elementwise_ops {
    ($m:ident, $T:ty) => { $m! {
        neg, neg_, neg_out = "neg" () => Op::Neg, [], "`-x`.";
        abs, abs_, abs_out = "abs" () => Op::Abs, [], "`|x|`.";
        relu, relu_, relu_out = "relu" () => Op::Relu, [], "`max(x, 0)`.";
        sigmoid, sigmoid_, sigmoid_out = "sigmoid" () => Op::Sigmoid, [], "`1 / (1 + exp(-x))`.";
        tanh, tanh_, tanh_out = "tanh" () => Op::Tanh, [], "hyperbolic tangent.";
        exp, exp_, exp_out = "exp" () => Op::Exp, [], "`e^x`.";
        log, log_, log_out = "log" () => Op::Log, [], "natural logarithm.";
        sqrt, sqrt_, sqrt_out = "sqrt" () => Op::Sqrt, [], "square root.";
        rsqrt, rsqrt_, rsqrt_out = "rsqrt" () => Op::Rsqrt, [], "`1 / sqrt(x)`.";
        floor, floor_, floor_out = "floor" () => Op::Floor, [], "round toward -inf.";
        ceil, ceil_, ceil_out = "ceil" () => Op::Ceil, [], "round toward +inf.";
        round, round_, round_out = "round" () => Op::Round, [], "round half to even.";
        trunc, trunc_, trunc_out = "trunc" () => Op::Trunc, [], "round toward zero.";
        gelu, gelu_, gelu_out = "nn.functional.gelu" () => Op::Gelu, [], "`x * Φ(x)` (`approximate=\"none\"`).";
        gelu_tanh, gelu_tanh_, gelu_tanh_out = "nn.functional.gelu" () => Op::GeluTanh, [], "GELU with `approximate=\"tanh\"`.";
        silu, silu_, silu_out = "nn.functional.silu" () => Op::Silu, [], "`x * sigmoid(x)`.";
        clamp, clamp_, clamp_out = "clamp" (min: Option<Scalar>, max: Option<Scalar>) => Op::Clamp { min, max }, [],
            "`min(max(x, min), max)`; either bound may be `None`, not both. A NaN bound makes every element NaN (as PyTorch's). On integer types a bound past the type's range on the side that clamps nothing (a `min` below it, a `max` above it) is ignored, one past the other side is an error (PyTorch's rule).";
        add, add_, add_out = "add" (other: impl Into<Input<'a, $T>>) => Op::Add { alpha: Scalar::Int(1) }, [other.into()],
            "`x + other`; `other` is a tensor (broadcast) or a scalar.";
        add_scaled, add_scaled_, add_scaled_out = "add" (other: impl Into<Input<'a, $T>>, alpha: impl Into<Scalar>) => Op::Add { alpha: alpha.into() }, [other.into()],
            "`x + alpha * other` (PyTorch's `add(other, alpha=alpha)`).";
        sub, sub_, sub_out = "sub" (other: impl Into<Input<'a, $T>>) => Op::Sub { alpha: Scalar::Int(1) }, [other.into()],
            "`x - other`; `other` is a tensor (broadcast) or a scalar.";
        sub_scaled, sub_scaled_, sub_scaled_out = "sub" (other: impl Into<Input<'a, $T>>, alpha: impl Into<Scalar>) => Op::Sub { alpha: alpha.into() }, [other.into()],
            "`x - alpha * other` (PyTorch's `sub(other, alpha=alpha)`).";
        mul, mul_, mul_out = "mul" (other: impl Into<Input<'a, $T>>) => Op::Mul, [other.into()], "`x * other`.";
        div, div_, div_out = "div" (other: impl Into<Input<'a, $T>>) => Op::Div, [other.into()], "true division (integers divide in float32).";
        maximum, maximum_, maximum_out = "maximum" (other: impl Into<Input<'a, $T>>) => Op::Maximum, [other.into()], "the larger value (NaN wins).";
        minimum, minimum_, minimum_out = "minimum" (other: impl Into<Input<'a, $T>>) => Op::Minimum, [other.into()], "the smaller value (NaN wins).";
        addcmul, addcmul_, addcmul_out = "addcmul" (t1: impl Into<Input<'a, $T>>, t2: impl Into<Input<'a, $T>>, value: impl Into<Scalar>) => Op::Addcmul { value: value.into() }, [t1.into(), t2.into()],
            "`x + value * t1 * t2` (PyTorch's `addcmul(t1, t2, value=value)`).";
    }};
}
pub(crate) use elementwise_ops;

/// The [`Elementwise`] trait's methods, from the list in [`elementwise_ops`].
macro_rules! trait_methods {
    ($($name:ident, $name_:ident, $name_out:ident = $torch:literal ($($arg:ident: $ty:ty),*) => $op:expr, [$($inp:expr),*], $doc:literal;)*) => {$(
        #[doc = concat!("`x.", stringify!($name), "(..)`: ", $doc, " A new tensor (PyTorch's `torch.", $torch, "`).")]
        #[allow(clippy::needless_lifetimes)]
        fn $name<'a>(&'a self $(, $arg: $ty)*) -> Result<Self> {
            Self::run($op, &[Input::Tensor(self) $(, $inp)*], Target::New)
        }
        #[doc = concat!("In place: `x.", stringify!($name_), "(..)` writes [`", stringify!($name), "`](Elementwise::", stringify!($name), ") into `x` (PyTorch's in-place method where it has one; else `x.copy_(torch.", $torch, "(x, ..))`); the result type must be castable to `x`'s.")]
        #[allow(clippy::needless_lifetimes)]
        fn $name_<'a>(&'a self $(, $arg: $ty)*) -> Result<()> {
            Self::run($op, &[Input::Tensor(self) $(, $inp)*], Target::InPlace).map(drop)
        }
        #[doc = concat!("Into a given view: `x.", stringify!($name_out), "(.., &out)` writes [`", stringify!($name), "`](Elementwise::", stringify!($name), ") into `out` (PyTorch's `out=` form, or its `aten` out form, where it has one; else `out.copy_(torch.", $torch, "(x, ..))`).")]
        fn $name_out<'a>(&'a self $(, $arg: $ty)*, out: &'a Self) -> Result<()> {
            Self::run($op, &[Input::Tensor(self) $(, $inp)*], Target::Out(out)).map(drop)
        }
    )*};
}

/// Elementwise operations, as PyTorch's, on host and device tensors alike. Each takes tensors
/// and scalars, broadcasts them, computes in the promoted type (see
/// [`result_type`](crate::ops::result_type)) and writes a new tensor, the first input (`*_`), or a
/// given view (`*_out`). uint8 with int8 promotes to int16, which no tensor here stores: into
/// a destination (`*_`, `*_out`) it computes in 32 bits and converts at the store, which gives
/// PyTorch's int16 bits into a uint8 or int8 destination always, and into a wider one where no
/// result can leave int16 (else [`Error::Unsupported`](crate::Error::Unsupported)); a new
/// result is an error. Bad input (shapes that do not broadcast, a destination of another
/// shape, a result type the destination cannot hold, a destination reaching an element twice
/// or partially overlapping an input) is a typed error, and nothing is written; an input that
/// partially overlaps the destination but walks some axis of the storage the other way (a
/// `flip` of it, which PyTorch would hold as a copy: `x.add_(&x.flip(0))`) is read from a copy.
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

    elementwise_ops!(trait_methods, Self);
}
