//! The CPU reference of the reductions and of softmax / log_softmax / cumsum on host tensors:
//! every element read in logical order, accumulated in f64 (float sums, norms and products
//! within a float32 accumulator's range, as PyTorch's: `reduce_float`; integer sums and
//! products in wrapping 64-bit arithmetic, then wrapped to int32), rounded once to the result
//! type. The oracle of the device kernels.

use crate::copy::cpu::{read_bits, write_bits};
use crate::dtype::{cast_bits, float_bits_to_f32, DType, Sum32};
use crate::error::{Error, Result};
use crate::host::HostTensor;
use crate::layout::{Layout, MemoryFormat};
use crate::reduce::spec::{check_out, check_targets, reduce_spec, scan_spec, Dims, ReduceOp, ReduceSpec, ScanOp};
use crate::reduce::Reduce;
use crate::strided::Strided;

/// An element's value: f64 for floats, i64 for integers (exact either way).
pub(crate) fn value_of(dtype: DType, bits: u32) -> f64 {
    match dtype {
        DType::F32 | DType::F16 | DType::BF16 => f32::from_bits(float_bits_to_f32(dtype, bits)) as f64,
        DType::I32 => bits as i32 as f64,
        DType::U32 => bits as f64,
        DType::U8 => (bits & 0xff) as f64,
        DType::I8 => (bits & 0xff) as u8 as i8 as f64,
    }
}

/// The bits of `v` in `dtype`: floats rounded once from f64 (nearest even), integers wrapped.
pub(crate) fn bits_of(dtype: DType, v: f64) -> u32 {
    match dtype {
        DType::F32 => (v as f32).to_bits(),
        DType::F16 => half::f16::from_f64(v).to_bits() as u32,
        DType::BF16 => half::bf16::from_f64(v).to_bits() as u32,
        _ => v as i64 as u32,
    }
}

/// The elements of `x` in logical row-major order, as bits.
fn logical_bits(x: &HostTensor) -> Result<Vec<u32>> {
    let c = x.contiguous(MemoryFormat::Contiguous)?;
    let size = x.dtype().size();
    Ok(c.with_bytes(|b| b.chunks_exact(size).map(read_bits).collect()))
}

/// A contiguous tensor of `shape` and `dtype` holding `bits` (logical order).
fn tensor_of(dtype: DType, shape: &[usize], bits: &[u32]) -> Result<HostTensor> {
    let mut bytes = vec![0u8; bits.len() * dtype.size()];
    for (chunk, &b) in bytes.chunks_exact_mut(dtype.size()).zip(bits) {
        write_bits(chunk, b);
    }
    HostTensor::from_bytes(dtype, bytes, Layout::contiguous(shape)?)
}

/// Row-major element offsets of every index of `dims` (logical order, the last dim fastest) in
/// a contiguous tensor of `shape` (whose element count fits a usize: a layout's). The list's
/// memory is reserved first, so that one the host cannot hold is [`Error::HostMemory`] (the
/// outputs of an empty input's other dims may be many: `[2^62, 0].sum(1)`), not an abort.
fn offsets(op: &'static str, shape: &[usize], dims: &[usize]) -> Result<Vec<usize>> {
    let mut stride = vec![1usize; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        stride[d] = stride[d + 1].saturating_mul(shape[d + 1]);
    }
    let total = dims.iter().try_fold(1usize, |a, &d| a.checked_mul(shape[d])).ok_or_else(|| Error::overflow(op, format!("the indices of dims {dims:?} of shape {shape:?}")))?;
    let mut out = crate::error::reserved(op, || format!("the offsets of {total} elements of shape {shape:?}"), total)?;
    for i in 0..total {
        let (mut rem, mut o) = (i, 0);
        for &d in dims.iter().rev() {
            o += (rem % shape[d]) * stride[d];
            rem /= shape[d];
        }
        out.push(o);
    }
    Ok(out)
}

/// `a` replaced by `b` where `b` is larger: NaN wins, -0.0 < +0.0 (a total order, so the
/// result does not depend on the order of combination).
fn max_total(a: f64, b: f64) -> f64 {
    if a.is_nan() {
        return a;
    }
    if b.is_nan() || b > a || (b == a && a.is_sign_negative() && !b.is_sign_negative()) {
        return b;
    }
    a
}

/// The index of the first maximum (`max`) or minimum of `xs`; the first NaN wins.
fn arg_best(xs: &[f64], max: bool) -> usize {
    let mut best = 0;
    for (i, &x) in xs.iter().enumerate() {
        let b = xs[best];
        if b.is_nan() {
            break;
        }
        if x.is_nan() || (max && x > b) || (!max && x < b) {
            best = i;
        }
    }
    best
}

/// A float32 sum as PyTorch's and the device's: from +0.0, as PyTorch's sums start, in a
/// [`Sum32`] (f64 while within float32's range).
fn sum32(xs: impl Iterator<Item = f32>) -> f32 {
    let mut s = Sum32::new(0.0);
    xs.for_each(|v| s.add(v as f64));
    s.value() as f32
}

/// One float reduction of `xs` (values of float32, float16 or bfloat16): (value, index).
/// Sums, norms and products keep a float32 accumulator's range, as PyTorch 2.15's CPU does for
/// float32 (a sum past float32's range is infinite, a product or a square below it 0), in
/// f64's precision for sums (PyTorch's float32 sums round as they go); 16-bit products too
/// (PyTorch's CPU multiplies those in their own type); means, `var` and `std` run in f64
/// (finite where a float32 sum overflows, as the device's normalizations keep their
/// statistics; PyTorch's float32 `mean` is infinite there); `logsumexp` runs in f64.
fn reduce_float(op: ReduceOp, xs: &[f64]) -> (f64, usize) {
    let n = xs.len() as f64;
    // From +0.0, as PyTorch's sums start (`Iterator::sum` starts from -0.0: a sum of -0.0s
    // and an empty sum would be -0.0).
    let sum64 = |f: fn(f64) -> f64| xs.iter().fold(0.0, |a, &x| a + f(x));
    let sum = |f: fn(f32) -> f32| sum32(xs.iter().map(|&x| f(x as f32))) as f64;
    match op {
        ReduceOp::Sum => (sum(|x| x), 0),
        ReduceOp::Mean => (sum64(|x| x) / n, 0),
        ReduceOp::Prod => (xs.iter().fold(1f32, |a, &x| a * x as f32) as f64, 0),
        ReduceOp::Amax => (xs.iter().copied().fold(f64::NEG_INFINITY, max_total), 0),
        ReduceOp::Amin => (-xs.iter().map(|&x| -x).fold(f64::NEG_INFINITY, max_total), 0),
        ReduceOp::Argmax | ReduceOp::Max => {
            let i = arg_best(xs, true);
            (xs[i], i)
        }
        ReduceOp::Argmin | ReduceOp::Min => {
            let i = arg_best(xs, false);
            (xs[i], i)
        }
        // PyTorch fills NaN where nothing is reduced, whatever the correction (a negative one
        // divided 0 by a positive count here).
        ReduceOp::Var { .. } | ReduceOp::Std { .. } if xs.is_empty() => (f64::NAN, 0),
        ReduceOp::Var { correction } | ReduceOp::Std { correction } => {
            let mean = sum64(|x| x) / n;
            let m2: f64 = xs.iter().fold(0.0, |a, &x| a + (x - mean) * (x - mean));
            let var = m2 / (n - correction).max(0.0);
            (if matches!(op, ReduceOp::Std { .. }) { var.sqrt() } else { var }, 0)
        }
        ReduceOp::Norm { p: 1.0 } => (sum(f32::abs), 0),
        ReduceOp::Norm { p: 2.0 } => ((sum(|x| x * x) as f32).sqrt() as f64, 0),
        ReduceOp::Norm { .. } => (xs.iter().map(|x| x.abs()).fold(0.0, max_total), 0),
        ReduceOp::Logsumexp => {
            let m = xs.iter().copied().fold(f64::NEG_INFINITY, max_total);
            // PyTorch's rule: an infinite maximum is replaced by 0 (no inf - inf).
            let m = if m.is_infinite() { 0.0 } else { m };
            (xs.iter().fold(0.0, |a, &x| a + (x - m).exp()).ln() + m, 0)
        }
    }
}

/// One integer reduction of `xs` (exact values): (value, index); sums and products wrap.
fn reduce_int(op: ReduceOp, xs: &[f64]) -> (f64, usize) {
    let ints = xs.iter().map(|&x| x as i64);
    match op {
        ReduceOp::Sum => (ints.fold(0i64, i64::wrapping_add) as i32 as f64, 0),
        ReduceOp::Prod => (ints.fold(1i64, i64::wrapping_mul) as i32 as f64, 0),
        ReduceOp::Amax => (xs.iter().copied().fold(f64::NEG_INFINITY, f64::max), 0),
        ReduceOp::Amin => (xs.iter().copied().fold(f64::INFINITY, f64::min), 0),
        _ => reduce_float(op, xs),
    }
}

/// The CPU reference of a checked reduction: (values, indices where the op has both).
pub(crate) fn reduce_cpu(x: &HostTensor, s: &ReduceSpec) -> Result<(HostTensor, Option<HostTensor>)> {
    let shape = x.shape();
    let bits = logical_bits(x)?;
    let vals: Vec<f64> = bits.iter().map(|&b| value_of(s.cast_to, cast_bits(x.dtype(), s.cast_to, b))).collect();
    let (red, kept): (Vec<usize>, Vec<usize>) = (0..shape.len()).partition(|&d| s.reduced[d]);
    // Offsets are listed only for a non-empty input (whose strides and offsets fit a usize):
    // an empty one's outputs each reduce nothing, and its other dims may be huge.
    let n_out = s.outputs();
    let what = || format!("the {n_out} outputs of shape {:?}", s.out_shape);
    let (red_off, kept_off) = if n_out == 0 || s.extent == 0 { (Vec::new(), Vec::new()) } else { (offsets(s.op.name(), shape, &red)?, offsets(s.op.name(), shape, &kept)?) };
    let (mut out, mut idx): (Vec<f64>, Vec<f64>) = (crate::error::reserved(s.op.name(), what, n_out)?, crate::error::reserved(s.op.name(), what, n_out)?);
    let mut xs = Vec::with_capacity(if n_out == 0 { 0 } else { s.extent });
    // (An output's offset where the input is not empty; else it reduces nothing.)
    for k in (0..n_out).map(|o| kept_off.get(o).copied()) {
        xs.clear();
        if let Some(k) = k {
            xs.extend(red_off.iter().map(|&r| vals[k + r]));
        }
        let (v, i) = if s.cast_to.is_float() { reduce_float(s.op, &xs) } else { reduce_int(s.op, &xs) };
        out.push(v);
        idx.push(i as f64);
    }
    let enc = |t: DType, v: &[f64]| -> Vec<u32> { v.iter().map(|&v| bits_of(t, v)).collect() };
    match s.op {
        ReduceOp::Argmax | ReduceOp::Argmin => Ok((tensor_of(DType::I32, &s.out_shape, &enc(DType::I32, &idx))?, None)),
        ReduceOp::Max | ReduceOp::Min => {
            Ok((tensor_of(s.out_dtype, &s.out_shape, &enc(s.out_dtype, &out))?, Some(tensor_of(DType::I32, &s.out_shape, &enc(DType::I32, &idx))?)))
        }
        _ => Ok((tensor_of(s.out_dtype, &s.out_shape, &enc(s.out_dtype, &out))?, None)),
    }
}

/// The CPU reference of `op` along `dim`: a contiguous result (logical order).
pub(crate) fn scan_cpu(x: &HostTensor, op: ScanOp, dim: usize, out_dtype: DType) -> Result<HostTensor> {
    let shape = x.shape().to_vec();
    let bits = logical_bits(x)?;
    let vals: Vec<f64> = bits.iter().map(|&b| value_of(x.dtype(), b)).collect();
    let mut res = vec![0f64; vals.len()];
    if !vals.is_empty() {
        let along = if shape.is_empty() { vec![0] } else { offsets(op.name(), &shape, &[dim])? };
        let others: Vec<usize> = (0..shape.len()).filter(|&d| d != dim).collect();
        for base in offsets(op.name(), &shape, &others)? {
            let xs: Vec<f64> = along.iter().map(|&a| vals[base + a]).collect();
            let m = xs.iter().copied().fold(f64::NEG_INFINITY, max_total);
            let sum: f64 = xs.iter().map(|&v| (v - m).exp()).sum();
            let mut run = 0f64;
            let mut irun = 0i64;
            for (&a, &v) in along.iter().zip(&xs) {
                res[base + a] = match op {
                    ScanOp::Softmax => (v - m).exp() / sum,
                    ScanOp::LogSoftmax => v - m - sum.ln(),
                    ScanOp::Cumsum if out_dtype.is_float() => {
                        run += v;
                        run
                    }
                    ScanOp::Cumsum => {
                        irun = irun.wrapping_add(v as i64);
                        irun as i32 as f64
                    }
                };
            }
        }
    }
    tensor_of(out_dtype, &shape, &res.iter().map(|&v| bits_of(out_dtype, v)).collect::<Vec<_>>())
}

/// A new tensor of `layout` and `dtype` (zeroed), over exactly the storage the layout spans.
fn alloc(op: &'static str, dtype: DType, layout: &Layout) -> Result<HostTensor> {
    let len = layout.span().map_or(0, |(_, hi)| hi + 1);
    let bytes = len.checked_mul(dtype.size()).ok_or_else(|| Error::overflow(op, format!("the byte size of a result of shape {:?}", layout.shape())))?;
    HostTensor::from_bytes(dtype, HostTensor::zeroed(op, || format!("a result of shape {:?}", layout.shape()), bytes)?, layout.clone())
}

impl Reduce for HostTensor {
    /// The CPU reference.
    fn reduce(&self, op: ReduceOp, dims: Dims, keepdim: bool, dtype: Option<DType>, out: Option<&Self>, indices: Option<&Self>) -> Result<(Self, Option<Self>)> {
        let name = op.name();
        let s = reduce_spec(op, self.layout(), self.dtype(), &dims, keepdim, dtype)?;
        check_targets(name, &s, self, out, indices, HostTensor::shares_storage)?;
        let (v, i) = reduce_cpu(self, &s)?;
        match (out, indices) {
            (None, _) => Ok((v, i)),
            (Some(o), oi) => {
                o.copy_(&v)?;
                if let (Some(oi), Some(i)) = (oi, &i) {
                    oi.copy_(i)?;
                }
                Ok((o.clone(), oi.cloned()))
            }
        }
    }

    /// The CPU reference.
    fn scan(&self, op: ScanOp, dim: isize, out: Option<&Self>) -> Result<Self> {
        let s = scan_spec(op, self.layout(), self.dtype(), dim)?;
        if let Some(o) = out {
            check_out(op.name(), "out", self.shape(), s.out_dtype, o.layout(), o.dtype(), self.layout(), self.dtype(), o.shares_storage(self))?;
        }
        let r = scan_cpu(self, op, s.dim, s.out_dtype)?;
        let dst = match out {
            Some(o) => o.clone(),
            None => alloc(op.name(), s.out_dtype, &s.out_layout)?,
        };
        dst.copy_(&r)?;
        Ok(dst)
    }
}
