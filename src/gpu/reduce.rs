//! Reductions, softmax, log_softmax and cumsum on device tensors: recorded into a [`Batch`], or
//! run at once through the [`Reduce`] methods.

use crate::dtype::DType;
use crate::error::Result;
use crate::gpu::batch::{read_copy, Batch};
use crate::gpu::tensor::DeviceTensor;
use crate::kernels::reduce::{self, Buffers, Types, Work};
use crate::layout::{Layout, MemoryFormat};
use crate::reduce::spec::{check_out, check_targets};
use crate::reduce::{reduce_spec, scan_spec, Dims, Reduce, ReduceOp, ReducePlan, ScanOp};
use crate::strided::Strided;

impl Batch<'_> {
    /// Records reduction `op` of `x` (see [`Reduce::reduce`]): returns the values (the indices
    /// of `Argmax` / `Argmin`) and, for `Max` / `Min`, the indices. Into `out` (and `indices`)
    /// when given. Bad input is an error, and nothing is recorded.
    #[allow(clippy::too_many_arguments)]
    pub fn reduce(&mut self, x: &DeviceTensor, op: ReduceOp, dims: Dims, keepdim: bool, dtype: Option<DType>, out: Option<&DeviceTensor>, indices: Option<&DeviceTensor>) -> Result<(DeviceTensor, Option<DeviceTensor>)> {
        self.whole(|b| b.record_reduce(x, op, dims, keepdim, dtype, out, indices))
    }

    #[allow(clippy::too_many_arguments)]
    fn record_reduce(&mut self, x: &DeviceTensor, op: ReduceOp, dims: Dims, keepdim: bool, dtype: Option<DType>, out: Option<&DeviceTensor>, indices: Option<&DeviceTensor>) -> Result<(DeviceTensor, Option<DeviceTensor>)> {
        let name = op.name();
        let all: Vec<&DeviceTensor> = [Some(x), out, indices].into_iter().flatten().collect();
        self.check_context(name, &all)?;
        let s = reduce_spec(op, x.layout(), x.dtype(), &dims, keepdim, dtype)?;
        check_targets(name, &s, x, out, indices, DeviceTensor::shares_storage)?;
        let ctx = self.context().clone();
        let both = matches!(op, ReduceOp::Max | ReduceOp::Min);
        // max / min write values and indices of one layout: fresh ones, copied into given ones.
        let (values, idx) = match out {
            Some(o) if !both => (o.clone(), None),
            _ => (
                DeviceTensor::empty_for(name, &ctx, &s.out_shape, s.out_dtype, MemoryFormat::Contiguous)?,
                both.then(|| DeviceTensor::empty_for(name, &ctx, &s.out_shape, DType::I32, MemoryFormat::Contiguous)).transpose()?,
            ),
        };
        let rp = ReducePlan::reduction(&s, x.layout(), values.layout())?;
        let rt = &ctx.rt;
        let rec = self.parts(name)?;
        rec.hold_shared(values.storage());
        rec.hold_shared(x.storage());
        if let Some(i) = &idx {
            rec.hold_shared(i.storage());
        }
        let t = Types { input: x.dtype(), cast: s.cast_to, out: s.out_dtype };
        // An `out` in the input's buffer (disjoint from the input, as checked): one buffer is
        // not bound for reading and writing in one dispatch, so the kernel reads a copy.
        let copy = if values.buffer() == x.buffer() { Some(read_copy(rt, rec, name, x.buffer())?) } else { None };
        let b = Buffers { out: values.buffer(), input: copy.as_ref().unwrap_or(x.buffer()), indices: idx.as_ref().map(|i| (i.buffer(), i.storage_offset())) };
        rt.scoped(name, || reduce::record(rt, rec, &rp, Work::Reduce(s.op), t, &b))?;
        match (out, indices, idx) {
            (Some(o), Some(oi), Some(i)) => {
                self.copy_(o, &values)?;
                self.copy_(oi, &i)?;
                Ok((o.clone(), Some(oi.clone())))
            }
            (_, _, i) => Ok((values, i)),
        }
    }

    /// Records `op` along `dim` of `x` (softmax, log_softmax, cumsum; see [`Reduce::scan`]):
    /// a new contiguous tensor, or `out`.
    pub fn scan(&mut self, x: &DeviceTensor, op: ScanOp, dim: isize, out: Option<&DeviceTensor>) -> Result<DeviceTensor> {
        self.whole(|b| b.record_scan(x, op, dim, out))
    }

    fn record_scan(&mut self, x: &DeviceTensor, op: ScanOp, dim: isize, out: Option<&DeviceTensor>) -> Result<DeviceTensor> {
        let name = op.name();
        let all: Vec<&DeviceTensor> = [Some(x), out].into_iter().flatten().collect();
        self.check_context(name, &all)?;
        let s = scan_spec(op, x.layout(), x.dtype(), dim)?;
        let ctx = self.context().clone();
        let dst = match out {
            Some(o) => {
                check_out(name, "out", x.shape(), s.out_dtype, o.layout(), o.dtype(), x.layout(), x.dtype(), o.shares_storage(x))?;
                o.clone()
            }
            None => alloc(name, &ctx, s.out_dtype, &s.out_layout)?,
        };
        let rp = ReducePlan::scan(&s, x.layout(), dst.layout())?;
        let rt = &ctx.rt;
        let rec = self.parts(name)?;
        rec.hold_shared(dst.storage());
        rec.hold_shared(x.storage());
        let t = Types { input: x.dtype(), cast: x.dtype(), out: s.out_dtype };
        let copy = if dst.buffer() == x.buffer() { Some(read_copy(rt, rec, name, x.buffer())?) } else { None };
        let b = Buffers { out: dst.buffer(), input: copy.as_ref().unwrap_or(x.buffer()), indices: None };
        rt.scoped(name, || reduce::record(rt, rec, &rp, Work::Scan(op), t, &b))?;
        Ok(dst)
    }

    /// Records `x.sum(dims, keepdim)`.
    pub fn sum(&mut self, x: &DeviceTensor, dims: impl Into<Dims>, keepdim: bool) -> Result<DeviceTensor> {
        Ok(self.reduce(x, ReduceOp::Sum, dims.into(), keepdim, None, None, None)?.0)
    }
    /// Records `x.mean(dims, keepdim)`.
    pub fn mean(&mut self, x: &DeviceTensor, dims: impl Into<Dims>, keepdim: bool) -> Result<DeviceTensor> {
        Ok(self.reduce(x, ReduceOp::Mean, dims.into(), keepdim, None, None, None)?.0)
    }
    /// Records `x.amax(dims, keepdim)`.
    pub fn amax(&mut self, x: &DeviceTensor, dims: impl Into<Dims>, keepdim: bool) -> Result<DeviceTensor> {
        Ok(self.reduce(x, ReduceOp::Amax, dims.into(), keepdim, None, None, None)?.0)
    }
    /// Records `x.argmax(dim, keepdim)`.
    pub fn argmax(&mut self, x: &DeviceTensor, dim: Option<isize>, keepdim: bool) -> Result<DeviceTensor> {
        Ok(self.reduce(x, ReduceOp::Argmax, dim.into(), keepdim, None, None, None)?.0)
    }
    /// Records `x.var(dims, correction, keepdim)`.
    pub fn var(&mut self, x: &DeviceTensor, dims: impl Into<Dims>, correction: f64, keepdim: bool) -> Result<DeviceTensor> {
        Ok(self.reduce(x, ReduceOp::Var { correction }, dims.into(), keepdim, None, None, None)?.0)
    }
    /// Records `x.softmax(dim)`.
    pub fn softmax(&mut self, x: &DeviceTensor, dim: isize) -> Result<DeviceTensor> {
        self.scan(x, ScanOp::Softmax, dim, None)
    }
    /// Records `x.log_softmax(dim)`.
    pub fn log_softmax(&mut self, x: &DeviceTensor, dim: isize) -> Result<DeviceTensor> {
        self.scan(x, ScanOp::LogSoftmax, dim, None)
    }
    /// Records `x.cumsum(dim)`.
    pub fn cumsum(&mut self, x: &DeviceTensor, dim: isize) -> Result<DeviceTensor> {
        self.scan(x, ScanOp::Cumsum, dim, None)
    }
}

/// A new tensor of `layout` over exactly the elements it spans.
fn alloc(op: &'static str, ctx: &crate::GpuContext, dtype: DType, layout: &Layout) -> Result<DeviceTensor> {
    let len = layout.span().map_or(0, |(_, hi)| hi + 1);
    DeviceTensor::alloc_unchecked(op, ctx, dtype, len, layout.clone())
}

impl Reduce for DeviceTensor {
    /// Records the reduction into a batch of its own and submits it (or holds it back under
    /// `SubmitPolicy::Deferred`), never waiting for it.
    fn reduce(&self, op: ReduceOp, dims: Dims, keepdim: bool, dtype: Option<DType>, out: Option<&Self>, indices: Option<&Self>) -> Result<(Self, Option<Self>)> {
        let mut b = self.context().batch();
        let r = b.reduce(self, op, dims, keepdim, dtype, out, indices)?;
        b.submit_eager(op.name())?;
        Ok(r)
    }

    /// Records the op into a batch of its own and submits it (or holds it back under
    /// `SubmitPolicy::Deferred`), never waiting for it.
    fn scan(&self, op: ScanOp, dim: isize, out: Option<&Self>) -> Result<Self> {
        let mut b = self.context().batch();
        let r = b.scan(self, op, dim, out)?;
        b.submit_eager(op.name())?;
        Ok(r)
    }
}
