//! Batch normalization in inference (`F.batch_norm(.., training=False)`) on host and device
//! tensors, and the fold of a batch norm into the convolution before it, written once over the
//! elementwise ops: the per-channel scale `weight / sqrt(var + eps)` and shift
//! `bias - mean * scale` are computed on the [C] vectors, and the input is normalized by one
//! `addcmul` over their broadcast views.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::shape::ShapeOps;

/// The per-channel (scale, shift) of a batch norm over `c` channels, f32 \[C\].
fn scale_shift<T: ShapeOps>(op: &'static str, c: usize, mean: &T, var: &T, weight: Option<&T>, bias: Option<&T>, eps: f64) -> Result<(T, T)> {
    for (what, t) in [("running_mean", Some(mean)), ("running_var", Some(var)), ("weight", weight), ("bias", bias)] {
        if let Some(t) = t {
            if t.shape() != [c] {
                return Err(Error::invalid(op, format!("{what} of shape {:?}: expected [{c}], one per channel", t.shape())));
            }
            if !t.dtype().is_float() {
                return Err(Error::unsupported(op, format!("{what} of type {} (float types are served)", t.dtype())));
            }
        }
    }
    if !(eps >= 0.0 && eps.is_finite()) {
        return Err(Error::invalid(op, format!("eps {eps} must be finite and >= 0")));
    }
    let mut scale = var.to(DType::F32)?.add(eps)?.rsqrt()?;
    if let Some(w) = weight {
        scale = scale.mul(w)?;
    }
    let mut shift = mean.mul(&scale)?.neg()?;
    if let Some(b) = bias {
        shift = shift.add(b)?;
    }
    Ok((scale, shift))
}

/// `torch.nn.functional.batch_norm(x, running_mean, running_var, weight, bias, training=False,
/// eps=eps)`: `(x - mean) / sqrt(var + eps) * weight + bias` per channel (dim 1) of an
/// [N, C, ...] float input, computed in f32 (one `addcmul` over the per-channel scale and
/// shift) and stored in the input's type and memory format. The statistics, `weight` and
/// `bias` are \[C\] float tensors of the input's kind (host or device). Bad shapes are
/// [`Error::InvalidArgument`] before anything is written.
///
/// ```
/// use strided_wgpu::HostTensor;
/// use strided_wgpu::ops::batch_norm;
/// let x = HostTensor::from_vec(vec![1f32, 2.0, 3.0, 4.0], &[1, 2, 2]).unwrap();
/// let mean = HostTensor::from_vec(vec![1f32, 3.0], &[2]).unwrap();
/// let var = HostTensor::from_vec(vec![4f32, 1.0], &[2]).unwrap();
/// let y = batch_norm(&x, &mean, &var, None, None, 0.0).unwrap();
/// assert_eq!(y.to_vec::<f32>().unwrap(), vec![0.0, 0.5, 0.0, 1.0]);
/// ```
pub fn batch_norm<T: ShapeOps>(x: &T, running_mean: &T, running_var: &T, weight: Option<&T>, bias: Option<&T>, eps: f64) -> Result<T> {
    const OP: &str = "batch_norm";
    if x.rank() < 2 {
        return Err(Error::invalid(OP, format!("input of shape {:?}: expected [N, C, ...]", x.shape())));
    }
    if !x.dtype().is_float() {
        return Err(Error::unsupported(OP, format!("input of type {} (float types are served)", x.dtype())));
    }
    let c = x.shape()[1];
    let (scale, shift) = scale_shift(OP, c, running_mean, running_var, weight, bias, eps)?;
    // [C] seen as [1, C, 1, ...] broadcasts over the input.
    let mut view = vec![1isize; x.rank()];
    view[1] = c as isize;
    let (scale, shift) = (scale.view(&view)?, shift.view(&view)?);
    let out = x.new_tensor(x.shape(), x.dtype(), x.layout().suggest_memory_format())?;
    shift.addcmul_out(x, &scale, 1.0, &out)?;
    Ok(out)
}

/// Folds an inference batch norm into the convolution before it, as inference engines do:
/// returns the weight and bias of one convolution equal to `batch_norm(conv2d(x, weight,
/// bias))`: `weight * scale[k]` and `(bias - mean) * scale + bn_bias` with
/// `scale = bn_weight / sqrt(var + eps)`. `weight` is [K, ...] (f32, f16 or bf16), `bias` \[K\]
/// or none, the statistics \[K\]. New tensors of the weight's type, the weight dense in its
/// memory format (a channels-last weight stays channels-last, as PyTorch's elementwise fold
/// keeps it, and the GPU kernels read it in place; otherwise contiguous): a 16-bit weight and
/// bias are folded in f32 and rounded once.
pub fn fold_batch_norm<T: ShapeOps>(weight: &T, bias: Option<&T>, running_mean: &T, running_var: &T, bn_weight: Option<&T>, bn_bias: Option<&T>, eps: f64) -> Result<(T, T)> {
    const OP: &str = "fold_batch_norm";
    let dtype = weight.dtype();
    if weight.rank() < 1 || !matches!(dtype, DType::F32 | DType::F16 | DType::BF16) {
        return Err(Error::invalid(OP, format!("weight of shape {:?} and type {}: expected an f32, f16 or bf16 [K, ...] convolution weight", weight.shape(), weight.dtype())));
    }
    let k = weight.shape()[0];
    if let Some(b) = bias {
        if b.shape() != [k] || !b.dtype().is_float() {
            return Err(Error::invalid(OP, format!("bias of shape {:?} and type {}: expected a float [{k}]", b.shape(), b.dtype())));
        }
    }
    let (scale, shift) = scale_shift(OP, k, running_mean, running_var, bn_weight, bn_bias, eps)?;
    let mut view = vec![1isize; weight.rank()];
    view[0] = k as isize;
    let format = weight.layout().suggest_memory_format();
    let wide = |t: &T, format| if t.dtype() == DType::F32 { t.contiguous(format) } else { t.to(DType::F32)?.contiguous(format) };
    let folded = wide(weight, format)?.mul(&scale.view(&view)?)?.contiguous(format)?;
    // (bias - mean) * scale + bn_bias, as the docs and PyTorch's `fuse_conv_bn_weights`
    // (bias * scale - mean * scale lost the bias's digits where it is close to the mean).
    let b = match bias {
        Some(b) => {
            let centred = wide(b, crate::layout::MemoryFormat::Contiguous)?.sub(running_mean)?.mul(&scale)?;
            match bn_bias {
                Some(bb) => centred.add(bb)?,
                None => centred,
            }
        }
        None => shift,
    };
    if dtype == DType::F32 {
        return Ok((folded, b));
    }
    Ok((folded.to(dtype)?, b.to(dtype)?))
}
