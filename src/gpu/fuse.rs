//! Fusion in a captured graph: an elementwise op that writes in place the tensor the op before
//! it just wrote folds into that op. Today: a convolution followed, as the next submitted work
//! of the capture, by an in-place ReLU of its output (`y.relu_()`), or by an in-place add with
//! alpha 1 of a tensor of the output's shape and type (`y.add_(&identity)`, ResNet's residual)
//! where the convolution's kernel takes a residual in its epilogue (the GEMM kernels, the GPUs'
//! defaults; the addend in the output's strides, within one binding), is recorded again, with
//! the kernel it ran, with the ReLU or the residual in its epilogue (the options' fused ReLU,
//! `conv2d_add`'s residual), in place of its first recording, and the elementwise op records
//! nothing. Both fold in turn (`conv`, `add_`, `relu_`: one convolution). The kernels'
//! epilogues add and clamp in f32 as `Op::Add` and `Op::Relu` do, and a 16-bit convolution
//! that reads its operands as they are (`ConvKernel::reads_half`) rounds its result to the
//! type before the residual as the separate ops do (one on f32 copies leaves a conversion last,
//! which nothing folds into), so the graph computes the eager calls' bits; it saves a dispatch
//! and a pass over the output each. The first recording's temporaries (a packed weight, split-K
//! partials) stay held with the graph, unused.
//!
//! In-place forms only: after `y = conv(x); z = y.relu()` the graph cannot tell whether `y` is
//! read later (by the caller too), so `y` keeps its own values. Eager calls (one submission
//! each) and ops recorded into one `Batch` are not fused: a capture sees the sequence whole.

use crate::conv::{check_residual, Conv2dOptions, Conv2dShape};
use crate::dtype::DType;
use crate::elementwise::{Op, Scalar};
use crate::error::Result;
use crate::gpu::context::GpuContext;
use crate::gpu::tensor::DeviceTensor;
use crate::kernels::conv::ConvKernel;
use crate::runtime::record::Recorder;
use crate::strided::Strided;

/// What a batch's last op was, as far as fusion cares.
pub(crate) enum Tail {
    /// A convolution (its commands from the index kept beside it).
    Conv(Box<ConvTail>),
    /// The batch is one in-place ReLU of this tensor.
    Relu(DeviceTensor),
    /// The batch is one in-place add (alpha 1) of `addend` into `target`, of one shape.
    Add { target: DeviceTensor, addend: DeviceTensor },
}

/// A convolution call with the kernel it ran, enough to record it again, and the
/// length of its batch's recording after it (anything recorded later makes the tail stale).
#[derive(Clone)]
pub(crate) struct ConvTail {
    pub end: usize,
    pub op: &'static str,
    pub out: DeviceTensor,
    pub input: DeviceTensor,
    pub weight: DeviceTensor,
    pub bias: Option<DeviceTensor>,
    pub residual: Option<DeviceTensor>,
    pub options: Conv2dOptions,
    pub g: Conv2dShape,
    pub kernel: ConvKernel,
}

impl ConvTail {
    /// The call with `next` (a ReLU or an add into its output) folded in, if it folds
    /// (`max_binding`: the largest binding the convolution kernels take, `conv_binding_limit`,
    /// which a fused residual must fit).
    fn fold(&self, next: &Tail, max_binding: u64) -> Option<ConvTail> {
        let same = |t: &DeviceTensor| t.shares_storage(&self.out) && t.layout() == self.out.layout() && t.dtype() == self.out.dtype();
        let mut call = self.clone();
        match next {
            Tail::Relu(t) if same(t) && !self.options.relu => call.options.relu = true,
            // The residual comes before the ReLU: not into a convolution that has one already.
            // Only where the kernel takes the residual in its epilogue (else the fold would
            // record the same add again, and end the chance of the ReLU after it).
            Tail::Add { target, addend }
                if same(target)
                    && !self.options.relu
                    && self.residual.is_none()
                    && self.kernel.fuses_residual()
                    && addend.layout().strides() == self.out.layout().strides()
                    && addend.buffer().size() <= max_binding
                    && !addend.shares_storage(&self.out)
                    && check_residual(self.op, addend.shape(), addend.dtype(), &self.g).is_ok() =>
            {
                call.op = "conv2d_add";
                call.residual = Some(addend.clone());
            }
            _ => return None,
        }
        Some(call)
    }
}

/// Whether a convolution of type `t` folds: float32, float16 and bfloat16 (see the module).
fn float(t: DType) -> bool {
    matches!(t, DType::F32 | DType::F16 | DType::BF16)
}

/// The tail an elementwise op leaves in a batch that held nothing before it (`op` on
/// `inputs`, in place): a ReLU, or an add with alpha 1 of a tensor of the same shape and type.
pub(crate) fn elementwise_tail(op: Op, inputs: &[&DeviceTensor]) -> Option<Tail> {
    let one = |alpha: Scalar| matches!(alpha, Scalar::Int(1)) || matches!(alpha, Scalar::Float(f) if f == 1.0);
    match (op, inputs) {
        (Op::Relu, [t]) if float(t.dtype()) => Some(Tail::Relu((*t).clone())),
        (Op::Add { alpha }, [t, a]) if one(alpha) && float(t.dtype()) && a.dtype() == t.dtype() && t.shape() == a.shape() => Some(Tail::Add { target: (*t).clone(), addend: (*a).clone() }),
        _ => None,
    }
}

/// Appends a batch's recording `rec` (with its last op, `tail`) to this thread's capture,
/// folding it into the capture's last op where it folds (see the module). Where recording the
/// fused convolution fails, the op is appended as it was recorded.
pub(crate) fn append_captured(ctx: &GpuContext, rec: Recorder, tail: Option<(usize, Tail)>) -> Result<()> {
    let rt = &ctx.rt;
    let previous = rt.capture_take_tail();
    if let (Some((start, last)), Some((_, next @ (Tail::Relu(_) | Tail::Add { .. })))) = (previous, &tail) {
        if let Some(call) = last.downcast_ref::<ConvTail>().and_then(|c| c.fold(next, rt.report.conv_binding_limit())) {
            // Recorded again, with the op after it in its epilogue, in place of its first
            // recording; the elementwise op's own recording is dropped.
            let mut batch = ctx.batch();
            if batch.convolve(call.op, &call.out, &call.input, &call.weight, call.bias.as_ref(), call.residual.as_ref(), &call.options, &call.g, call.kernel).is_ok() {
                let (fused, tail) = batch.take_recording();
                return rt.capture_append(fused, Some(start), boxed(tail));
            }
        }
    }
    rt.capture_append(rec, None, boxed(tail))
}

/// A batch's tail as the capture keeps it: convolutions only (the rest fold into nothing).
fn boxed(tail: Option<(usize, Tail)>) -> Option<crate::runtime::record::Tail> {
    match tail {
        Some((at, Tail::Conv(c))) => Some((at, c as Box<dyn std::any::Any + Send + Sync>)),
        _ => None,
    }
}
