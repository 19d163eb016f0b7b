//! `layer_norm` and `group_norm` on device tensors in one kernel ([`kernels::norm`]): recorded
//! into a [`Batch`], or run at once through [`ops::layer_norm`](crate::ops::layer_norm) and
//! [`ops::group_norm`](crate::ops::group_norm), whose composed form is the CPU reference.

use crate::dtype::DType;
use crate::error::Result;
use crate::gpu::batch::Batch;
use crate::gpu::tensor::DeviceTensor;
use crate::kernels::norm::{self, NormKernel, Rows};
use crate::layout::MemoryFormat;
use crate::norm::{check_group_norm, check_layer_norm};
use crate::shape::{NormCall, NormKind};
use crate::strided::Strided;

impl Batch<'_> {
    /// Records `F.layer_norm(x, normalized_shape, weight, bias, eps)` (see
    /// [`ops::layer_norm`](crate::ops::layer_norm): the same checks, result and arithmetic) as
    /// one kernel, a workgroup per normalized slice (on GPUs, few long slices cut into chunks: a
    /// workgroup per chunk, three dispatches; [`NormKernel`]), reading float32, float16 and bfloat16 as
    /// they are and writing the result's type (rounded once from float32); an input that is
    /// not slices at one stride is first copied into a contiguous one, a weight or bias that is
    /// not dense float32 into a float32 one, and a 16-bit result of odd-length slices is
    /// converted from a float32 one: the kernel and up to four copies (a captured graph runs
    /// the parameters' copies once). A
    /// slice past a software adapter's loop bound (1,279,616 elements: an invocation's three
    /// walks of its 64th of a slice, 3 * ceil(n / 64) + 16 turns, within 60,000) or a sample
    /// past a binding is [`Error::Limit`](crate::Error::Limit). Bad input is an error, and nothing is recorded.
    pub fn layer_norm(&mut self, x: &DeviceTensor, normalized_shape: &[usize], weight: Option<&DeviceTensor>, bias: Option<&DeviceTensor>, eps: f64) -> Result<DeviceTensor> {
        check_layer_norm(x, normalized_shape, weight, bias, eps)?;
        self.norm(x, &NormCall { kind: NormKind::Layer { dims: normalized_shape.len() }, weight, bias, eps })
    }

    /// Records `F.group_norm(x, num_groups, weight, bias, eps)` (see
    /// [`ops::group_norm`](crate::ops::group_norm)) as one kernel, a workgroup per group of a
    /// sample (or per chunk of one, as [`Batch::layer_norm`]), with the copies of [`Batch::layer_norm`] where needed (a channels-last input read
    /// from a contiguous copy, its channels-last result written from a contiguous one).
    pub fn group_norm(&mut self, x: &DeviceTensor, num_groups: usize, weight: Option<&DeviceTensor>, bias: Option<&DeviceTensor>, eps: f64) -> Result<DeviceTensor> {
        check_group_norm(x, num_groups, weight, bias, eps)?;
        self.norm(x, &NormCall { kind: NormKind::Group { groups: num_groups }, weight, bias, eps })
    }

    /// [`Batch::layer_norm`] with the kernel forced, as [`layer_norm_with`].
    pub fn layer_norm_with(&mut self, x: &DeviceTensor, normalized_shape: &[usize], weight: Option<&DeviceTensor>, bias: Option<&DeviceTensor>, eps: f64, kernel: NormKernel) -> Result<DeviceTensor> {
        check_layer_norm(x, normalized_shape, weight, bias, eps)?;
        self.norm_with(x, &NormCall { kind: NormKind::Layer { dims: normalized_shape.len() }, weight, bias, eps }, kernel)
    }

    /// [`Batch::group_norm`] with the kernel forced, as [`group_norm_with`].
    pub fn group_norm_with(&mut self, x: &DeviceTensor, num_groups: usize, weight: Option<&DeviceTensor>, bias: Option<&DeviceTensor>, eps: f64, kernel: NormKernel) -> Result<DeviceTensor> {
        check_group_norm(x, num_groups, weight, bias, eps)?;
        self.norm_with(x, &NormCall { kind: NormKind::Group { groups: num_groups }, weight, bias, eps }, kernel)
    }

    /// Records a checked call.
    pub(crate) fn norm(&mut self, x: &DeviceTensor, call: &NormCall<'_, DeviceTensor>) -> Result<DeviceTensor> {
        self.norm_with(x, call, NormKernel::Auto)
    }

    /// Records a checked call with `kernel` (forced, or chosen: `Auto`).
    pub(crate) fn norm_with(&mut self, x: &DeviceTensor, call: &NormCall<'_, DeviceTensor>, kernel: NormKernel) -> Result<DeviceTensor> {
        self.whole(|b| b.record_norm(x, call, kernel))
    }

    fn record_norm(&mut self, x: &DeviceTensor, call: &NormCall<'_, DeviceTensor>, kernel: NormKernel) -> Result<DeviceTensor> {
        let op = name(call.kind);
        kernel.check(op)?;
        let all: Vec<&DeviceTensor> = [Some(x), call.weight, call.bias].into_iter().flatten().collect();
        self.check_context(op, &all)?;
        let shape = x.shape();
        let (lead, groups, format) = match call.kind {
            NormKind::Layer { dims } => (x.rank() - dims, 1, MemoryFormat::Contiguous),
            NormKind::Group { groups } => (1, groups, x.layout().suggest_memory_format()),
        };
        let ctx = self.context().clone();
        let out = DeviceTensor::empty_for(op, &ctx, shape, x.dtype(), format)?;
        if x.numel() == 0 {
            return Ok(out);
        }
        let sample: usize = shape[lead..].iter().product();
        let n = sample / groups;
        let channels = matches!(call.kind, NormKind::Group { .. }).then(|| (shape[1] / groups, shape[2..].iter().product::<usize>()));
        let report = &ctx.rt.report;
        if !norm::fits(report, n, sample) {
            return Err(norm::limit_error(report, op, n, sample));
        }
        let align = report.min_storage_buffer_offset_alignment as usize;
        // The input as rows at one stride, as it is or copied (in its own type: the kernel
        // reads float32, float16 and bfloat16).
        let (xin, stride) = match norm::rows_of(x.layout(), lead) {
            Some(stride) => (x.clone(), stride),
            None => (self.copied(op, x, x.dtype(), MemoryFormat::Contiguous)?, sample),
        };
        // The affine parameters dense float32 from an aligned offset, as they are or copied.
        let param = |b: &mut Self, t: Option<&DeviceTensor>| -> Result<Option<DeviceTensor>> {
            match t {
                Some(t) if !(t.dtype() == DType::F32 && t.is_contiguous() && (t.storage_offset() * 4).is_multiple_of(align)) => b.copied(op, t, DType::F32, MemoryFormat::Contiguous).map(Some),
                t => Ok(t.cloned()),
            }
        };
        let weight = param(self, call.weight)?;
        let bias = param(self, call.bias)?;
        // The contiguous rows the kernel writes: the result (float32, or a 16-bit type in rows
        // of even length: whole 32-bit words), or a float32 tensor copied into it.
        let half = x.dtype() != DType::F32;
        let direct = format == MemoryFormat::Contiguous && (!half || n.is_multiple_of(2));
        let y = if direct { out.clone() } else { DeviceTensor::empty_for(op, &ctx, shape, DType::F32, MemoryFormat::Contiguous)? };
        let rec = self.parts(op)?;
        for t in [Some(&xin), weight.as_ref(), bias.as_ref(), Some(&y)].into_iter().flatten() {
            rec.hold_shared(t.storage());
        }
        let rt = &ctx.rt;
        let rows = Rows { rows: x.numel() / n, n, groups, sample_stride: stride, channels };
        let (input, out_half) = ((operand(&xin), xin.dtype()), (operand(&y), y.dtype() != DType::F32));
        rt.scoped(op, || norm::record(rt, rec, op, rows, call.eps as f32, input, weight.as_ref().map(operand), bias.as_ref().map(operand), out_half, kernel))?;
        if !direct {
            self.copy_(&out, &y)?;
        }
        Ok(out)
    }
}

/// `F.layer_norm` on a device with the kernel forced ([`NormKernel`]; `Auto` takes the kernel's
/// own choice, even where an eager call would run the composed ops), run at once. The checks
/// and result of [`ops::layer_norm`](crate::ops::layer_norm); a forced kernel's own check:
/// [`Error::InvalidArgument`](crate::Error) for a `Split` of 0 or past
/// [`MAX_CHUNKS`](norm::MAX_CHUNKS) chunks.
pub fn layer_norm_with(x: &DeviceTensor, normalized_shape: &[usize], weight: Option<&DeviceTensor>, bias: Option<&DeviceTensor>, eps: f64, kernel: NormKernel) -> Result<DeviceTensor> {
    let mut b = x.context().batch();
    let y = b.layer_norm_with(x, normalized_shape, weight, bias, eps, kernel)?;
    b.submit_eager("layer_norm")?;
    Ok(y)
}

/// `F.group_norm` on a device with the kernel forced, as [`layer_norm_with`].
pub fn group_norm_with(x: &DeviceTensor, num_groups: usize, weight: Option<&DeviceTensor>, bias: Option<&DeviceTensor>, eps: f64, kernel: NormKernel) -> Result<DeviceTensor> {
    let mut b = x.context().batch();
    let y = b.group_norm_with(x, num_groups, weight, bias, eps, kernel)?;
    b.submit_eager("group_norm")?;
    Ok(y)
}

/// A tensor's buffer and storage offset, as the kernel binds it.
fn operand(t: &DeviceTensor) -> norm::Operand<'_> {
    (t.buffer(), t.storage_offset())
}

/// The op's name in errors.
pub(crate) fn name(kind: NormKind) -> &'static str {
    match kind {
        NormKind::Layer { .. } => "layer_norm",
        NormKind::Group { .. } => "group_norm",
    }
}

/// Whether the kernel takes the eager `call` on `x`'s adapter (else the composed ops run it):
/// [`norm::eager_fits`].
pub(crate) fn fused_fits(x: &DeviceTensor, call: &NormCall<'_, DeviceTensor>) -> bool {
    if x.numel() == 0 {
        return true;
    }
    let (lead, groups) = match call.kind {
        NormKind::Layer { dims } => (x.rank() - dims, 1),
        NormKind::Group { groups } => (1, groups),
    };
    let sample: usize = x.shape()[lead..].iter().product();
    norm::eager_fits(&x.context().rt.report, sample / groups, sample)
}
