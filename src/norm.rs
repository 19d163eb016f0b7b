//! Normalizations on host and device tensors, written once over the reductions and elementwise
//! ops: batch normalization in inference (`F.batch_norm(.., training=False)`), whose
//! per-channel scale `weight / sqrt(var + eps)` and shift `bias - mean * scale` are computed on
//! the [C] vectors and applied by one `addcmul` over their broadcast views; the fold of a batch
//! norm into the convolution before it; `F.layer_norm` and `F.group_norm`, whose statistics
//! come from `mean` and `var` (biased) over the normalized elements on the host, and from one
//! fused kernel a call on a device ([`ShapeOps::fused_norm`], `gpu::norm`), on a software
//! adapter only within its loop bound (longer slices run the composed ops there).

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::MemoryFormat;
use crate::reduce::Reduce;
use crate::shape::{NormCall, NormKind, ShapeOps};
use crate::strided::Strided;


/// PyTorch 2.15's rule for a batch norm's parameters: all of one type, the input's (`dtype`)
/// or float32 beside a 16-bit input ("mixed dtype (CPU): expect parameter to have scalar type
/// of Float").
fn check_parameter_types(op: &'static str, dtype: DType, given: &[(&str, DType)]) -> Result<()> {
    let first = given[0].1;
    let fits = (first == dtype || (first == DType::F32 && matches!(dtype, DType::F16 | DType::BF16))) && given.iter().all(|&(_, d)| d == first);
    if !fits {
        let got = given.iter().map(|(w, d)| format!("{w} {d}")).collect::<Vec<_>>().join(", ");
        return Err(Error::DType { op, got: format!("parameters of types ({got}) with a {dtype} input"), expected: format!("parameters all {dtype}, or all float32 beside a 16-bit input") });
    }
    Ok(())
}

/// The per-channel (scale, shift) of a batch norm over `c` channels, f32 \[C\]: the statistics
/// \[C\], `weight` and `bias` of C elements in any shape (PyTorch checks their counts only).
fn scale_shift<T: ShapeOps>(op: &'static str, c: usize, mean: &T, var: &T, weight: Option<&T>, bias: Option<&T>, eps: f64) -> Result<(T, T)> {
    // (name, tensor, whether its shape must be [C] rather than any shape of C elements)
    for (what, t, exact) in [("running_mean", Some(mean), true), ("running_var", Some(var), true), ("weight", weight, false), ("bias", bias, false)] {
        if let Some(t) = t {
            if (exact && t.shape() != [c]) || t.numel() != c {
                let want = if exact { format!("[{c}]") } else { format!("{c} elements") };
                return Err(Error::invalid(op, format!("{what} of shape {:?}: expected {want}, one per channel", t.shape())));
            }
            if !t.dtype().is_float() {
                return Err(Error::unsupported(op, format!("{what} of type {} (float types are served)", t.dtype())));
            }
        }
    }
    check_eps(op, eps)?;
    let per_channel = |t: &T| t.reshape(&[c as isize]);
    let mut scale = var.to(DType::F32)?.add(eps)?.rsqrt()?;
    if let Some(w) = weight {
        scale = scale.mul(&per_channel(w)?)?;
    }
    let mut shift = mean.mul(&scale)?.neg()?;
    if let Some(b) = bias {
        shift = shift.add(&per_channel(b)?)?;
    }
    Ok((scale, shift))
}

/// `torch.nn.functional.batch_norm(x, running_mean, running_var, weight, bias, training=False,
/// eps=eps)`: `(x - mean) / sqrt(var + eps) * weight + bias` per channel (dim 1) of an
/// [N, C, ...] float input, computed in f32 (one `addcmul` over the per-channel scale and
/// shift) and stored in the input's type and memory format. The statistics, `weight` and
/// `bias` are \[C\] float tensors of the input's kind (host or device), all of one type: the
/// input's, or float32 beside a 16-bit input (PyTorch 2.15's rule; others are
/// [`Error::DType`]); `weight` and `bias` may have any shape of C elements. Bad shapes and an
/// `eps` that is negative or not finite (PyTorch refuses a negative one and computes with the
/// others) are [`Error::InvalidArgument`] before anything is written. An empty input is
/// PyTorch's `input.clone() * weight[0] + bias[0]`, of any type but uint32: only `eps` and the
/// element 0 of `weight` and `bias` are checked, whose types promote the result's (an int16
/// step, uint8 times an int8 weight, is refused even where the bias would widen it).
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
    check_eps(OP, eps)?;
    // PyTorch: an empty input's clone, times `weight[0]`, plus `bias[0]`, before it looks at
    // anything else: those (0-d for 1-d parameters) promote and broadcast the result, and an
    // empty or 0-d parameter has no element 0.
    if x.numel() == 0 {
        use crate::elementwise::{result_type, PromoteArg};
        // (PyTorch asks for the input's accumulation type first, which uint32 lacks.)
        if x.dtype() == DType::U32 {
            return Err(Error::DType { op: OP, got: "a uint32 input".into(), expected: "a type with an accumulation type (not uint32)".into() });
        }
        let (mut dtype, mut shape) = (x.dtype(), x.shape().to_vec());
        for (what, t) in [("weight", weight), ("bias", bias)] {
            if let Some(t) = t {
                if t.rank() == 0 || t.shape()[0] == 0 {
                    return Err(Error::invalid(OP, format!("{what} of shape {:?} with an empty input: PyTorch reads {what}[0], which needs a {what} with dims and elements", t.shape())));
                }
                let first = &t.shape()[1..];
                dtype = result_type(OP, &[PromoteArg::Tensor(dtype, shape.len()), PromoteArg::Tensor(t.dtype(), first.len())])?;
                shape = crate::elementwise::resolve::broadcast_shapes(OP, &[&shape, first])?;
            }
        }
        let format = if shape == x.shape() { x.layout().suggest_memory_format() } else { MemoryFormat::Contiguous };
        return x.new_tensor(OP, &shape, dtype, format);
    }
    if x.rank() < 2 {
        return Err(Error::invalid(OP, format!("input of shape {:?}: expected [N, C, ...]", x.shape())));
    }
    if !x.dtype().is_float() {
        return Err(Error::unsupported(OP, format!("input of type {} (float types are served)", x.dtype())));
    }
    let c = x.shape()[1];
    let given: Vec<(&str, DType)> = [("running_mean", Some(running_mean)), ("running_var", Some(running_var)), ("weight", weight), ("bias", bias)].into_iter().filter_map(|(w, t)| t.map(|t| (w, t.dtype()))).collect();
    // Before anything runs (a parameter that is no float is scale_shift's error).
    if given.iter().all(|(_, d)| d.is_float()) {
        check_parameter_types(OP, x.dtype(), &given)?;
    }
    let (scale, shift) = scale_shift(OP, c, running_mean, running_var, weight, bias, eps)?;
    // [C] seen as [1, C, 1, ...] broadcasts over the input.
    let mut view = vec![1isize; x.rank()];
    view[1] = c as isize;
    let (scale, shift) = (scale.view(&view)?, shift.view(&view)?);
    let out = x.new_tensor(OP, x.shape(), x.dtype(), x.layout().suggest_memory_format())?;
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
/// bias are folded in f32 and rounded once. Bad shapes and an `eps` that is negative or not
/// finite are [`Error::InvalidArgument`].
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

/// Checks the weight and bias of a layer or group norm against the `expected` shape and the
/// input's type `dtype`, as PyTorch's `check_mixed_data_type`: of the input's type, or float32
/// beside a 16-bit input, both the same.
fn check_affine<T: Strided>(op: &'static str, weight: Option<&T>, bias: Option<&T>, expected: &[usize], dtype: DType) -> Result<()> {
    for (what, t) in [("weight", weight), ("bias", bias)] {
        if let Some(t) = t {
            if t.shape() != expected {
                return Err(Error::invalid(op, format!("{what} of shape {:?}: expected {expected:?}", t.shape())));
            }
            if !(t.dtype() == dtype || (t.dtype() == DType::F32 && matches!(dtype, DType::F16 | DType::BF16))) {
                return Err(Error::DType { op, got: format!("a {} {what} with a {dtype} input", t.dtype()), expected: format!("a {dtype} {what}, or float32 beside a 16-bit input") });
            }
        }
    }
    if let (Some(w), Some(b)) = (weight, bias) {
        if w.dtype() != b.dtype() {
            return Err(Error::DType { op, got: format!("a {} weight and a {} bias", w.dtype(), b.dtype()), expected: "weight and bias of one type".into() });
        }
    }
    Ok(())
}

/// `out = y * weight + bias` (either optional) in f32, rounded once into `out`.
fn affine_out<T: ShapeOps + Clone>(op: &'static str, y: &T, weight: Option<&T>, bias: Option<&T>, out: &T) -> Result<()> {
    match (weight, bias) {
        (Some(w), Some(b)) => b.addcmul_out(y, w, 1.0, out),
        (Some(w), None) => y.mul_out(w, out),
        (None, Some(b)) => y.add_out(b, out),
        (None, None) => T::copy_pieces(op, &[(out.clone(), y.clone())]),
    }
}

/// `torch.nn.functional.layer_norm(x, normalized_shape, weight, bias, eps)`: each slice over the
/// trailing dims `normalized_shape` normalized by its own mean and biased variance,
/// `(x - mean) / sqrt(var + eps) * weight + bias`, computed in f32 (the statistics by the
/// reductions' `mean` and `var`, then `x * rstd - mean * rstd` as PyTorch's kernel forms it)
/// and rounded once into a new contiguous tensor of the input's type (as PyTorch's).
/// `weight` and `bias` have shape `normalized_shape` and the input's type, or float32 beside
/// a 16-bit input (PyTorch's mixed types; another type is [`Error::DType`]); any input memory
/// order is read. On the host (the CPU reference) composed of the reductions and elementwise
/// ops; on a device one kernel (`norm_rows.wgsl`: a workgroup per slice, the same arithmetic in
/// f32, every float type read and written as it is), after a copy where the input is not
/// slices at one stride, and a converting copy for a 16-bit output of odd-length slices
/// (`Batch::layer_norm` records it); the composed ops there too
/// where a sample passes a binding, and on software adapters for slices past 1,024 elements
/// (whose `mean`, a float32 sum, overflows where a slice's sum passes float32's range: NaN
/// there, as PyTorch's CPU gives, where the kernel and the host's f64 statistics give 0). A `normalized_shape` that is empty or does not end the input's
/// shape, affine parameters of another shape, or an `eps` that is negative or not finite
/// (which PyTorch takes) are [`Error::InvalidArgument`] before anything runs.
///
/// ```
/// use strided_wgpu::HostTensor;
/// use strided_wgpu::ops::layer_norm;
/// let x = HostTensor::from_vec(vec![1f32, 3.0, 0.0, 4.0], &[2, 2]).unwrap();
/// let y = layer_norm(&x, &[2], None, None, 0.0).unwrap();
/// assert_eq!(y.to_vec::<f32>().unwrap(), vec![-1.0, 1.0, -1.0, 1.0]);
/// ```
pub fn layer_norm<T: ShapeOps + Reduce>(x: &T, normalized_shape: &[usize], weight: Option<&T>, bias: Option<&T>, eps: f64) -> Result<T> {
    check_layer_norm(x, normalized_shape, weight, bias, eps)?;
    let (rank, k) = (x.rank(), normalized_shape.len());
    if let Some(y) = x.fused_norm(&NormCall { kind: NormKind::Layer { dims: k }, weight, bias, eps })? {
        return Ok(y);
    }
    let dims: Vec<isize> = (rank - k..rank).map(|d| d as isize).collect();
    let x32 = x.to(DType::F32)?;
    let rstd = x32.var(&dims[..], 0.0, true)?.add(eps)?.rsqrt()?;
    let shift = x32.mean(&dims[..], true)?.mul(&rstd)?.neg()?;
    let out = x.new_tensor("layer_norm", x.shape(), x.dtype(), MemoryFormat::Contiguous)?;
    let y = shift.addcmul(&x32, &rstd, 1.0)?;
    affine_out("layer_norm", &y, weight, bias, &out)?;
    Ok(out)
}

/// The checks of [`layer_norm`], before anything runs.
pub(crate) fn check_layer_norm<T: Strided>(x: &T, normalized_shape: &[usize], weight: Option<&T>, bias: Option<&T>, eps: f64) -> Result<()> {
    const OP: &str = "layer_norm";
    let (rank, k) = (x.rank(), normalized_shape.len());
    if k == 0 || k > rank || x.shape()[rank - k..] != *normalized_shape {
        return Err(Error::invalid(OP, format!("input of shape {:?} with normalized_shape {normalized_shape:?}: expected a non-empty normalized_shape that ends the input's shape", x.shape())));
    }
    if !x.dtype().is_float() {
        return Err(Error::unsupported(OP, format!("input of type {} (float types are served)", x.dtype())));
    }
    check_affine(OP, weight, bias, normalized_shape, x.dtype())?;
    check_eps(OP, eps)
}

/// `torch.nn.functional.group_norm(x, num_groups, weight, bias, eps)`: the channels (dim 1) of
/// an [N, C, ...] float input split into `num_groups` groups, each group of each sample
/// normalized by its own mean and biased variance over its channels and the spatial dims, then
/// `* weight[c] + bias[c]` per channel. Computed in f32 (the statistics by `mean` and `var`;
/// each element as `x * scale[n, c] + shift[n, c]` with the per-channel factors folded first,
/// as PyTorch's CPU kernel) and rounded once into a new tensor of the input's type and memory
/// format (PyTorch's CPU rule: channels-last stays channels-last). `weight` and `bias` are
/// \[C\] of the input's type, or float32 beside a 16-bit input (else [`Error::DType`]).
/// On the host composed of the reductions and elementwise ops (the statistics read a
/// contiguous copy of a channels-last input); on a device one kernel, as `layer_norm`'s, with
/// copies around it for a channels-last or strided input (`Batch::group_norm`), and
/// the composed ops where `layer_norm` runs them (a group past 1,024 elements on software
/// adapters).
/// `num_groups` of 0 or not dividing C, one value per group over the
/// batch (N * C / groups times the spatial size 1: `F.group_norm`'s check), affine
/// parameters of another shape, or an `eps` that is negative or not finite are
/// [`Error::InvalidArgument`] before anything runs.
///
/// ```
/// use strided_wgpu::HostTensor;
/// use strided_wgpu::ops::group_norm;
/// let x = HostTensor::from_vec(vec![1f32, 3.0, 0.0, 4.0], &[1, 2, 2]).unwrap();
/// let y = group_norm(&x, 2, None, None, 0.0).unwrap();
/// assert_eq!(y.to_vec::<f32>().unwrap(), vec![-1.0, 1.0, -1.0, 1.0]);
/// ```
pub fn group_norm<T: ShapeOps + Reduce>(x: &T, num_groups: usize, weight: Option<&T>, bias: Option<&T>, eps: f64) -> Result<T> {
    const OP: &str = "group_norm";
    let plane = check_group_norm(x, num_groups, weight, bias, eps)?;
    if let Some(y) = x.fused_norm(&NormCall { kind: NormKind::Group { groups: num_groups }, weight, bias, eps })? {
        return Ok(y);
    }
    let (n, c) = (x.shape()[0], x.shape()[1]);
    let (g, per) = (num_groups, c / num_groups);
    let isz = |v: usize| isize::try_from(v).map_err(|_| Error::overflow(OP, format!("size {v} of input shape {:?} past isize", x.shape())));
    let (ni, gi, ci, pi, peri) = (isz(n)?, isz(g)?, isz(c)?, isz(plane)?, isz(per)?);
    let stats = x.to(DType::F32)?.reshape(&[ni, gi, pi])?;
    let rstd = stats.var(2, 0.0, true)?.add(eps)?.rsqrt()?;
    let shift = stats.mean(2, true)?.mul(&rstd)?.neg()?;
    // [N, G, 1] -> [N, C]: each group's factor for each of its channels.
    let per_channel = |t: &T| t.expand(&[ni, gi, peri])?.reshape(&[ni, ci]);
    let (mut scale, mut shift) = (per_channel(&rstd)?, per_channel(&shift)?);
    if let Some(w) = weight {
        scale = scale.mul(w)?;
        shift = shift.mul(w)?;
    }
    if let Some(b) = bias {
        shift = shift.add(b)?;
    }
    // [N, C] seen as [N, C, 1, ...] broadcasts over the input.
    let mut view = vec![1isize; x.rank()];
    view[0] = ni;
    view[1] = ci;
    let (scale, shift) = (scale.view(&view)?, shift.view(&view)?);
    let out = x.new_tensor(OP, x.shape(), x.dtype(), x.layout().suggest_memory_format())?;
    shift.addcmul_out(x, &scale, 1.0, &out)?;
    Ok(out)
}

/// The checks of [`group_norm`], before anything runs: the elements of a group (its channels
/// times the spatial size).
pub(crate) fn check_group_norm<T: Strided>(x: &T, num_groups: usize, weight: Option<&T>, bias: Option<&T>, eps: f64) -> Result<usize> {
    const OP: &str = "group_norm";
    if x.rank() < 2 {
        return Err(Error::invalid(OP, format!("input of shape {:?}: expected [N, C, ...]", x.shape())));
    }
    let (n, c) = (x.shape()[0], x.shape()[1]);
    // PyTorch's "Expected number of channels to be greater than 0" and "Expected HxW to be
    // greater than 0" (an empty batch is taken).
    if c == 0 || x.shape()[2..].contains(&0) {
        return Err(Error::invalid(OP, format!("input of shape {:?}: expected channels and a spatial size above 0", x.shape())));
    }
    if num_groups == 0 || !c.is_multiple_of(num_groups) {
        return Err(Error::invalid(OP, format!("input of shape {:?} in {num_groups} groups: expected a number of groups that divides its {c} channels", x.shape())));
    }
    if !x.dtype().is_float() {
        return Err(Error::unsupported(OP, format!("input of type {} (float types are served)", x.dtype())));
    }
    check_affine(OP, weight, bias, &[c], x.dtype())?;
    check_eps(OP, eps)?;
    let per = c / num_groups;
    // The elements of a group: its channels times the spatial dims (a product within numel
    // unless N is 0, where the shape's other dims may still multiply past usize; 0 where any
    // of them is).
    let spatial = &x.shape()[2..];
    let plane = if spatial.contains(&0) { 0 } else { spatial.iter().try_fold(per, |a, &d| a.checked_mul(d)).ok_or_else(|| Error::overflow(OP, format!("a group of input shape {:?} holds more than usize::MAX elements", x.shape())))? };
    // PyTorch's `F.group_norm` refuses one value per group of all the samples
    // (`_verify_batch_size`: N * C / G times the spatial size must not be 1).
    if n.checked_mul(per).and_then(|v| spatial.iter().try_fold(v, |a, &d| a.checked_mul(d))) == Some(1) {
        return Err(Error::invalid(OP, format!("input of shape {:?} in {num_groups} groups: expected more than 1 value per channel (N * C / groups * spatial size is 1)", x.shape())));
    }
    Ok(plane)
}

/// `eps` of a normalization: finite and at least 0.
fn check_eps(op: &'static str, eps: f64) -> Result<()> {
    if !(eps >= 0.0 && eps.is_finite()) {
        return Err(Error::invalid(op, format!("eps {eps} must be finite and >= 0")));
    }
    Ok(())
}
