//! Reductions (`sum`, `mean`, `prod`, `amax`, `amin`, `argmax`, `argmin`, `max` / `min` along a
//! dim, `var`, `std`, `norm`, `logsumexp`) and the ops along one dim (`softmax`,
//! `log_softmax`, `cumsum`): host values only (dims, result types, shape checks), the
//! [`Reduce`] trait that both tensor types implement, and the CPU reference (`cpu`).
//!
//! Result types follow PyTorch, with one difference: PyTorch returns int64 for the `sum`,
//! `prod` and `cumsum` of integers and for every index; this crate has no 64-bit type and
//! returns **int32** there. Integer sums and products wrap modulo 2^32, as PyTorch's own
//! `dtype=torch.int32` reductions do. float16 / bfloat16 accumulate in float32 on the device
//! (float64 in the CPU reference) and are rounded once.

mod cpu;
pub(crate) mod plan;
pub(crate) mod spec;

pub use plan::{ReduceClass, ReducePlan};
pub use spec::{reduce_spec, scan_spec, Dims, ReduceOp, ScanOp};

use crate::dtype::DType;
use crate::error::Result;
use crate::strided::Strided;

/// Reductions and ops along a dim, as PyTorch's, on host and device tensors alike.
///
/// Dims are given as [`Dims`]: `Dims::All` (PyTorch's `dim=None`), one dim (`-1`; negative
/// counts from the end) or a list (`[0, 2]`, `&[1, 3][..]`, `vec![..]`); a repeated or
/// out-of-range dim is an error. `keepdim` keeps each reduced dim with size 1. The Rust forms
/// follow PyTorch's argument order: `x.sum(dims, keepdim)`, `x.var(dims, correction,
/// keepdim)`, `x.norm(p, dims, keepdim)`; PyTorch's `dtype=` is a separate method
/// (`sum_dtype`, `mean_dtype`), and `out=` is the `_out` form, which needs an `out` of the
/// result's shape and type that overlaps neither itself nor the input. `torch.max(x, dim)` /
/// `torch.min(x, dim)` are `max_dim` / `min_dim`, returning `(values, indices)`.
///
/// Result types: floats keep their type (f16 / bf16 accumulate in f32 and round once, as
/// PyTorch's CUDA kernels; its CPU rounds some intermediates to the 16-bit type: a bfloat16
/// `log_softmax` along the last dim, or `softmax` along another, can differ by one unit in the
/// last place);
/// integer `sum` / `prod` / `cumsum` and every index are **int32** (PyTorch: int64), integer
/// sums wrapping as PyTorch's `dtype=torch.int32`; `mean`, `var`, `std`, `norm`, `softmax`,
/// `log_softmax` need a float input (`mean_dtype` takes integers); `logsumexp` of integers is
/// f32; `amax` / `amin` / `max_dim` / `min_dim` keep the input type, and they and `argmax` /
/// `argmin` refuse uint32 (as PyTorch does). NaN propagates through `amax`, `amin`, `max_dim`,
/// `min_dim`; `argmax` of a row holding NaN is its first NaN; ties give the first index;
/// `amax` orders -0.0 below +0.0. An empty reduction gives 0 (`sum`, `norm`), 1 (`prod`), NaN
/// (`mean`, `var`, `std`), -inf (`logsumexp`), and is an error for `amax`, `amin`, `argmax`,
/// `argmin`, `max_dim`, `min_dim` and the inf-norm. Results are new contiguous tensors,
/// `softmax`, `log_softmax` and `cumsum` included (as PyTorch's, whatever the input's memory
/// order).
///
/// ```
/// use strided_wgpu::{Dims, DType, HostTensor, Reduce, Strided};
/// let x = HostTensor::from_vec(vec![1.0f32, 5.0, 3.0, 4.0, 2.0, 6.0], &[2, 3])?;
/// assert_eq!(x.sum(-1, false)?.to_vec::<f32>()?, vec![9.0, 12.0]);
/// assert_eq!(x.amax([0, 1], true)?.shape(), &[1, 1]);
/// assert_eq!(x.argmax(Some(1), false)?.to_vec::<i32>()?, vec![1, 2]);
/// let (v, i) = x.max_dim(0, false)?;
/// assert_eq!((v.to_vec::<f32>()?, i.to_vec::<i32>()?), (vec![4.0, 5.0, 6.0], vec![1, 0, 1]));
/// assert_eq!(x.mean(Dims::All, false)?.to_vec::<f32>()?, vec![3.5]);
/// let s = x.softmax(-1)?.sum(-1, false)?.to_vec::<f32>()?;
/// assert!(s.iter().all(|v| (v - 1.0).abs() < 1e-6));
/// let n = HostTensor::from_vec(vec![1i32, 2, 3], &[3])?;
/// assert_eq!(n.cumsum(0)?.to_vec::<i32>()?, vec![1, 3, 6]);
/// assert!(n.mean(0, false).is_err()); // an integer mean needs a float dtype
/// assert_eq!(n.mean_dtype(0, false, DType::F32)?.to_vec::<f32>()?, vec![2.0]);
/// # Ok::<(), strided_wgpu::Error>(())
/// ```
pub trait Reduce: Strided + Clone {
    /// Runs reduction `op` of `self` over `dims`: a new tensor, or written into `out` (and
    /// `indices` for [`ReduceOp::Max`] / [`ReduceOp::Min`]) after every check has passed.
    /// Returns the values (the indices for `Argmax` / `Argmin`) and, for `Max` / `Min`, the
    /// indices. `dtype` is PyTorch's `dtype=` (`Sum` and `Mean` only).
    #[allow(clippy::too_many_arguments)]
    fn reduce(&self, op: ReduceOp, dims: Dims, keepdim: bool, dtype: Option<DType>, out: Option<&Self>, indices: Option<&Self>) -> Result<(Self, Option<Self>)>;

    /// Runs `op` along `dim` (softmax, log_softmax, cumsum): a new contiguous tensor (as
    /// PyTorch's, whatever the input's memory order), or written into `out`.
    fn scan(&self, op: ScanOp, dim: isize, out: Option<&Self>) -> Result<Self>;

    /// `x.sum(dim, keepdim)`.
    fn sum(&self, dims: impl Into<Dims>, keepdim: bool) -> Result<Self> {
        Ok(self.reduce(ReduceOp::Sum, dims.into(), keepdim, None, None, None)?.0)
    }
    /// `x.sum(dim, keepdim, dtype=dtype)`: the input converted to `dtype` (a float type, or
    /// int32), then summed in it.
    fn sum_dtype(&self, dims: impl Into<Dims>, keepdim: bool, dtype: DType) -> Result<Self> {
        Ok(self.reduce(ReduceOp::Sum, dims.into(), keepdim, Some(dtype), None, None)?.0)
    }
    /// `torch.sum(x, dim, keepdim, out=out)`.
    fn sum_out(&self, dims: impl Into<Dims>, keepdim: bool, out: &Self) -> Result<()> {
        self.reduce(ReduceOp::Sum, dims.into(), keepdim, None, Some(out), None).map(drop)
    }
    /// `x.mean(dim, keepdim)` (float inputs; integers need [`mean_dtype`](Reduce::mean_dtype)).
    fn mean(&self, dims: impl Into<Dims>, keepdim: bool) -> Result<Self> {
        Ok(self.reduce(ReduceOp::Mean, dims.into(), keepdim, None, None, None)?.0)
    }
    /// `x.mean(dim, keepdim, dtype=dtype)` (`dtype` a float type).
    fn mean_dtype(&self, dims: impl Into<Dims>, keepdim: bool, dtype: DType) -> Result<Self> {
        Ok(self.reduce(ReduceOp::Mean, dims.into(), keepdim, Some(dtype), None, None)?.0)
    }
    /// `torch.mean(x, dim, keepdim, out=out)`.
    fn mean_out(&self, dims: impl Into<Dims>, keepdim: bool, out: &Self) -> Result<()> {
        self.reduce(ReduceOp::Mean, dims.into(), keepdim, None, Some(out), None).map(drop)
    }
    /// `x.prod(dim, keepdim)`; `dim` `None` multiplies every element.
    fn prod(&self, dim: Option<isize>, keepdim: bool) -> Result<Self> {
        Ok(self.reduce(ReduceOp::Prod, dim.into(), keepdim, None, None, None)?.0)
    }
    /// `torch.prod(x, dim, keepdim, out=out)`.
    fn prod_out(&self, dim: Option<isize>, keepdim: bool, out: &Self) -> Result<()> {
        self.reduce(ReduceOp::Prod, dim.into(), keepdim, None, Some(out), None).map(drop)
    }
    /// `x.amax(dim, keepdim)`: the largest value (NaN wins).
    fn amax(&self, dims: impl Into<Dims>, keepdim: bool) -> Result<Self> {
        Ok(self.reduce(ReduceOp::Amax, dims.into(), keepdim, None, None, None)?.0)
    }
    /// `torch.amax(x, dim, keepdim, out=out)`.
    fn amax_out(&self, dims: impl Into<Dims>, keepdim: bool, out: &Self) -> Result<()> {
        self.reduce(ReduceOp::Amax, dims.into(), keepdim, None, Some(out), None).map(drop)
    }
    /// `x.amin(dim, keepdim)`: the smallest value (NaN wins).
    fn amin(&self, dims: impl Into<Dims>, keepdim: bool) -> Result<Self> {
        Ok(self.reduce(ReduceOp::Amin, dims.into(), keepdim, None, None, None)?.0)
    }
    /// `torch.amin(x, dim, keepdim, out=out)`.
    fn amin_out(&self, dims: impl Into<Dims>, keepdim: bool, out: &Self) -> Result<()> {
        self.reduce(ReduceOp::Amin, dims.into(), keepdim, None, Some(out), None).map(drop)
    }
    /// `x.argmax(dim, keepdim)`: int32 indices of the first maximum (the first NaN); `dim`
    /// `None` indexes the flattened tensor.
    fn argmax(&self, dim: Option<isize>, keepdim: bool) -> Result<Self> {
        Ok(self.reduce(ReduceOp::Argmax, dim.into(), keepdim, None, None, None)?.0)
    }
    /// `x.argmin(dim, keepdim)`: int32 indices of the first minimum (the first NaN).
    fn argmin(&self, dim: Option<isize>, keepdim: bool) -> Result<Self> {
        Ok(self.reduce(ReduceOp::Argmin, dim.into(), keepdim, None, None, None)?.0)
    }
    /// `torch.max(x, dim, keepdim)`: `(values, indices)` (indices int32).
    fn max_dim(&self, dim: isize, keepdim: bool) -> Result<(Self, Self)> {
        let (v, i) = self.reduce(ReduceOp::Max, dim.into(), keepdim, None, None, None)?;
        Ok((v, i.expect("max returns indices")))
    }
    /// `torch.max(x, dim, keepdim, out=(values, indices))`.
    fn max_dim_out(&self, dim: isize, keepdim: bool, values: &Self, indices: &Self) -> Result<()> {
        self.reduce(ReduceOp::Max, dim.into(), keepdim, None, Some(values), Some(indices)).map(drop)
    }
    /// `torch.min(x, dim, keepdim)`: `(values, indices)` (indices int32).
    fn min_dim(&self, dim: isize, keepdim: bool) -> Result<(Self, Self)> {
        let (v, i) = self.reduce(ReduceOp::Min, dim.into(), keepdim, None, None, None)?;
        Ok((v, i.expect("min returns indices")))
    }
    /// `torch.min(x, dim, keepdim, out=(values, indices))`.
    fn min_dim_out(&self, dim: isize, keepdim: bool, values: &Self, indices: &Self) -> Result<()> {
        self.reduce(ReduceOp::Min, dim.into(), keepdim, None, Some(values), Some(indices)).map(drop)
    }
    /// `x.var(dim, correction=correction, keepdim)`: the sum of squared deviations divided by
    /// `max(0, N - correction)`.
    fn var(&self, dims: impl Into<Dims>, correction: f64, keepdim: bool) -> Result<Self> {
        Ok(self.reduce(ReduceOp::Var { correction }, dims.into(), keepdim, None, None, None)?.0)
    }
    /// `torch.var(x, dim, correction=, keepdim, out=out)`.
    fn var_out(&self, dims: impl Into<Dims>, correction: f64, keepdim: bool, out: &Self) -> Result<()> {
        self.reduce(ReduceOp::Var { correction }, dims.into(), keepdim, None, Some(out), None).map(drop)
    }
    /// `x.std(dim, correction=correction, keepdim)`: the square root of [`var`](Reduce::var).
    fn std(&self, dims: impl Into<Dims>, correction: f64, keepdim: bool) -> Result<Self> {
        Ok(self.reduce(ReduceOp::Std { correction }, dims.into(), keepdim, None, None, None)?.0)
    }
    /// `torch.std(x, dim, correction=, keepdim, out=out)`.
    fn std_out(&self, dims: impl Into<Dims>, correction: f64, keepdim: bool, out: &Self) -> Result<()> {
        self.reduce(ReduceOp::Std { correction }, dims.into(), keepdim, None, Some(out), None).map(drop)
    }
    /// `torch.linalg.vector_norm(x, ord=p, dim, keepdim)` for `p` 1, 2 or `f64::INFINITY`
    /// (another `p` is [`Error::Unsupported`](crate::Error::Unsupported)).
    fn norm(&self, p: f64, dims: impl Into<Dims>, keepdim: bool) -> Result<Self> {
        Ok(self.reduce(ReduceOp::Norm { p }, dims.into(), keepdim, None, None, None)?.0)
    }
    /// `torch.linalg.vector_norm(x, ord=p, dim, keepdim, out=out)`.
    fn norm_out(&self, p: f64, dims: impl Into<Dims>, keepdim: bool, out: &Self) -> Result<()> {
        self.reduce(ReduceOp::Norm { p }, dims.into(), keepdim, None, Some(out), None).map(drop)
    }
    /// `x.logsumexp(dim, keepdim)`: `log(sum(exp(x)))`, computed as `m + log(sum(exp(x - m)))`
    /// with `m` the maximum.
    fn logsumexp(&self, dims: impl Into<Dims>, keepdim: bool) -> Result<Self> {
        Ok(self.reduce(ReduceOp::Logsumexp, dims.into(), keepdim, None, None, None)?.0)
    }
    /// `torch.logsumexp(x, dim, keepdim, out=out)`.
    fn logsumexp_out(&self, dims: impl Into<Dims>, keepdim: bool, out: &Self) -> Result<()> {
        self.reduce(ReduceOp::Logsumexp, dims.into(), keepdim, None, Some(out), None).map(drop)
    }
    /// `x.softmax(dim)`: `exp(x - max) / sum(exp(x - max))` along `dim`, a new contiguous
    /// tensor.
    fn softmax(&self, dim: isize) -> Result<Self> {
        self.scan(ScanOp::Softmax, dim, None)
    }
    /// `torch.softmax(x, dim, out=out)` (PyTorch's `_softmax.out`).
    fn softmax_out(&self, dim: isize, out: &Self) -> Result<()> {
        self.scan(ScanOp::Softmax, dim, Some(out)).map(drop)
    }
    /// `x.log_softmax(dim)`: `x - max - log(sum(exp(x - max)))` along `dim`.
    fn log_softmax(&self, dim: isize) -> Result<Self> {
        self.scan(ScanOp::LogSoftmax, dim, None)
    }
    /// `torch.log_softmax(x, dim, out=out)`.
    fn log_softmax_out(&self, dim: isize, out: &Self) -> Result<()> {
        self.scan(ScanOp::LogSoftmax, dim, Some(out)).map(drop)
    }
    /// `x.cumsum(dim)`: running sums along `dim` (integers give int32, wrapping).
    fn cumsum(&self, dim: isize) -> Result<Self> {
        self.scan(ScanOp::Cumsum, dim, None)
    }
    /// `torch.cumsum(x, dim, out=out)`.
    fn cumsum_out(&self, dim: isize, out: &Self) -> Result<()> {
        self.scan(ScanOp::Cumsum, dim, Some(out)).map(drop)
    }
}
