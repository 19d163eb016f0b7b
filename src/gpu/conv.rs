//! Convolution on device tensors: checks, the kernel choice, and recording into a batch (the
//! kernels are in `crate::kernels::conv`).

use crate::conv::{conv1x1_shape, conv2d_shape, Conv1x1Options, Conv2dOptions, Conv2dShape};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::gpu::batch::Batch;
use crate::gpu::tensor::DeviceTensor;
use crate::gpu::tuning::conv_class;
use crate::kernels::conv::{self, ConvKernel, View};
use crate::layout::Overlap;
use crate::strided::Strided;

/// `torch.nn.functional.conv2d`, f32, on the device. `input` is logically [N, C, H, W] in any
/// strides; `weight` [K, C/groups, kh, kw] in any strides; `bias` [K]. Stride, zero padding,
/// dilation, groups (depthwise included) and a fused ReLU come from `options`. The output is a
/// new tensor in the input's memory format unless `options` names one. Bad input is a typed
/// error and nothing is dispatched. The first call of a shape class measures the candidate
/// kernels (see [`crate::GpuContext::tune_conv2d`]); the convolution is submitted, not waited for.
pub fn conv2d(input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv2dOptions) -> Result<DeviceTensor> {
    conv2d_with(input, weight, bias, options, ConvKernel::Auto)
}

/// [`conv2d`] through a chosen kernel (one whose [`ConvKernel::eligible`] accepts the call).
pub fn conv2d_with(input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv2dOptions, kernel: ConvKernel) -> Result<DeviceTensor> {
    let g = conv2d_shape(input.layout(), weight.layout(), bias.map(|b| b.layout()), [Some(input.dtype()), Some(weight.dtype()), bias.map(|b| b.dtype())], options)?;
    run("conv2d", input, weight, bias, options, &g, kernel)
}

/// `torch.nn.functional.conv2d` with a 1x1 kernel: [`conv2d`] whose weight must be
/// [K, C/groups, 1, 1] or [K, C/groups].
pub fn conv1x1(input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv1x1Options) -> Result<DeviceTensor> {
    conv1x1_with(input, weight, bias, options, ConvKernel::Auto)
}

/// [`conv1x1`] through a chosen kernel.
pub fn conv1x1_with(input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv1x1Options, kernel: ConvKernel) -> Result<DeviceTensor> {
    let g = conv1x1_shape(input.layout(), weight.layout(), bias.map(|b| b.layout()), [Some(input.dtype()), Some(weight.dtype()), bias.map(|b| b.dtype())], options)?;
    run("conv1x1", input, weight, bias, options, &g, kernel)
}

fn run(op: &'static str, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv2dOptions, g: &Conv2dShape, kernel: ConvKernel) -> Result<DeviceTensor> {
    let ctx = input.context();
    if kernel != ConvKernel::Auto {
        kernel.eligible(g, options)?;
        kernel.runs_on(&ctx.rt.report)?;
    }
    let out = DeviceTensor::empty(ctx, &g.out_shape(), DType::F32, g.format)?;
    // The first convolution of a shape class measures the kernels, outside any recording.
    #[cfg(not(target_arch = "wasm32"))]
    if kernel == ConvKernel::Auto && [Some(weight), bias].into_iter().flatten().all(|t| t.context().same_device(ctx)) {
        pollster::block_on(ctx.tune_conv_into(out.layout(), input, weight, bias, options, g, crate::runtime::submit::Drive::Wait))?;
    }
    let mut batch = ctx.batch();
    batch.convolve(op, &out, input, weight, bias, options, g, kernel)?;
    let _ = batch.submit()?;
    Ok(out)
}

impl Batch<'_> {
    /// Records a convolution into `out` (a view of shape [N, K, OH, OW], f32, in any strides;
    /// `options.output_format` is only checked, `out` decides the layout). `out` must not
    /// overlap itself or an operand; an operand in the same buffer as `out` (a disjoint view)
    /// is read from a copy. With
    /// [`ConvKernel::Auto`] the tuned kernel of the shape class runs, or, when the class is not
    /// tuned yet, the adapter's default (see [`crate::GpuContext::tune_conv2d`]).
    pub fn conv2d(&mut self, out: &DeviceTensor, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv2dOptions, kernel: ConvKernel) -> Result<()> {
        let g = conv2d_shape(input.layout(), weight.layout(), bias.map(|b| b.layout()), [Some(input.dtype()), Some(weight.dtype()), bias.map(|b| b.dtype())], options)?;
        self.convolve("conv2d", out, input, weight, bias, options, &g, kernel)
    }

    /// [`Batch::conv2d`] of a 1x1 convolution (weight [K, C/groups, 1, 1] or [K, C/groups]).
    pub fn conv1x1(&mut self, out: &DeviceTensor, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv1x1Options, kernel: ConvKernel) -> Result<()> {
        let g = conv1x1_shape(input.layout(), weight.layout(), bias.map(|b| b.layout()), [Some(input.dtype()), Some(weight.dtype()), bias.map(|b| b.dtype())], options)?;
        self.convolve("conv1x1", out, input, weight, bias, options, &g, kernel)
    }

    #[allow(clippy::too_many_arguments)]
    fn convolve(&mut self, op: &'static str, out: &DeviceTensor, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv2dOptions, g: &Conv2dShape, kernel: ConvKernel) -> Result<()> {
        let ctx = self.context().clone();
        let operands: Vec<&DeviceTensor> = [Some(input), Some(weight), bias, Some(out)].into_iter().flatten().collect();
        self.check_context(op, &operands)?;
        if kernel != ConvKernel::Auto {
            kernel.eligible(g, options)?;
            kernel.runs_on(&ctx.rt.report)?;
        }
        check_output(op, out, g)?;
        if out.layout().has_internal_overlap() {
            return Err(Error::Overlap { op, detail: format!("the output (shape {:?}, strides {:?}) overlaps itself", out.shape(), out.strides()) });
        }
        for (name, t) in [("input", Some(input)), ("weight", Some(weight)), ("bias", bias)] {
            if let Some(t) = t {
                if out.shares_storage(t) && out.layout().overlap(t.layout()) != Overlap::Disjoint {
                    return Err(Error::Overlap { op, detail: format!("the output (shape {:?}, strides {:?}) overlaps the {name} (shape {:?}, strides {:?})", out.shape(), out.strides(), t.shape(), t.strides()) });
                }
            }
        }
        if out.numel() == 0 {
            return Ok(());
        }
        for t in [Some(input), Some(weight), bias].into_iter().flatten() {
            if out.shares_storage(t) && !t.buffer().usage().contains(wgpu::BufferUsages::COPY_SRC) {
                return Err(Error::unsupported(op, format!("the output shares a buffer with an operand (shape {:?}), which is then read from a copy, but the buffer's usage {:?} lacks COPY_SRC", t.shape(), t.buffer().usage())));
            }
        }
        let class = conv_class(&ctx.rt.report, g, options, input.layout(), out.layout());
        let kernel = ctx.conv_choice(&class, out.layout(), kernel);
        let (enc, keep) = self.parts(op)?;
        for t in operands {
            keep.hold(t.storage());
        }
        let rt = &ctx.rt;
        // One buffer cannot be bound for reading and writing in one dispatch: an operand that
        // shares the output's buffer (a disjoint view of it) is read from a copy.
        let mut copies = Vec::new();
        for t in [Some(input), Some(weight), bias] {
            let copy = match t {
                Some(t) if out.shares_storage(t) => {
                    let size = t.buffer().size();
                    Some(rt.scoped(op, || {
                        let tmp = rt.buffer(op, size, wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST)?;
                        enc.copy_buffer_to_buffer(t.buffer(), 0, tmp.buffer(), 0, size);
                        Ok(tmp)
                    })?)
                }
                _ => None,
            };
            copies.push(copy);
        }
        let x = View { buffer: copies[0].as_ref().map_or(input.buffer(), |c| c.buffer()), layout: input.layout() };
        let w = View { buffer: copies[1].as_ref().map_or(weight.buffer(), |c| c.buffer()), layout: weight.layout() };
        let b = bias.map(|b| View { buffer: copies[2].as_ref().map_or(b.buffer(), |c| c.buffer()), layout: b.layout() });
        let r = conv::record(rt, enc, keep, view(out), x, w, b, options, g, kernel);
        for c in copies.into_iter().flatten() {
            keep.hold(c);
        }
        r
    }
}

/// The output of a convolution of `g` must be f32 of shape [N, K, OH, OW].
pub(crate) fn check_output(op: &'static str, out: &DeviceTensor, g: &Conv2dShape) -> Result<()> {
    if out.shape() != g.out_shape() || out.dtype() != DType::F32 {
        return Err(Error::invalid(op, format!("the output must be f32 of shape {:?}, got {} of shape {:?}", g.out_shape(), out.dtype(), out.shape())));
    }
    Ok(())
}

/// A device tensor as a kernel operand.
fn view(t: &DeviceTensor) -> View<'_> {
    View { buffer: t.buffer(), layout: t.layout() }
}
