//! Convolution on device tensors: checks, the kernel choice, and recording into a batch (the
//! kernels are in `crate::kernels::conv`).

use std::sync::Arc;

use crate::conv::{self as host_conv, conv1x1_shape, conv2d_shape, Conv1x1Options, Conv2d, Conv2dOptions, Conv2dShape};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::gpu::batch::{read_copy, Batch};
use crate::gpu::context::GpuContext;
use crate::gpu::fuse::{ConvTail, Tail};
use crate::gpu::tensor::DeviceTensor;
use crate::kernels::conv::class::{conv_class, conv_default, tune_images, Conv, ConvClass};
use crate::layout::Layout;
use crate::runtime::submit::Drive;
use crate::runtime::timing::Timer;
use crate::tune::Tuner;
use crate::kernels::conv::{self, ConvCall, ConvKernel, View};
use crate::kernels::conv::grouped;
use crate::elementwise::resolve::{Input, Target};
use crate::elementwise::Op;
use crate::runtime::record::Recorder;
use crate::runtime::{AdapterReport, Runtime};
use crate::strided::Strided;

/// `torch.nn.functional.conv2d` on the device: f32, f16 or bf16 (16-bit types accumulated in f32
/// and rounded once). `input` is logically [N, C, H, W] in any
/// strides; `weight` \[K, C/groups, kh, kw\] in any strides; `bias` \[K\]. Stride, zero padding,
/// dilation, groups (depthwise included) and a fused ReLU come from `options`. The output is a
/// new tensor, channels-last where the input or the weight is (else contiguous), unless `options` names a format. Bad input is a typed
/// error and nothing is dispatched. The kernel is the one kept for the call's shape class (by
/// [`crate::GpuContext::tune_conv2d`] or a loaded tuning file), else the adapter's default;
/// under [`crate::TuningPolicy::OnFirstCall`] the first call of a class measures the candidates
/// first. The convolution is submitted (or held back under `SubmitPolicy::Deferred`), never waited for. The same as the method form
/// [`Conv2d::conv2d`] (`x.conv2d(&w, bias, &options)`).
pub fn conv2d(input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv2dOptions) -> Result<DeviceTensor> {
    conv2d_with(input, weight, bias, options, ConvKernel::Auto)
}

/// [`conv2d`] through a chosen kernel (one whose [`ConvKernel::eligible`] accepts the call).
pub fn conv2d_with(input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv2dOptions, kernel: ConvKernel) -> Result<DeviceTensor> {
    if input.rank() == 3 {
        return conv2d_with(&input.unsqueeze(0)?, weight, bias, options, kernel)?.squeeze(0);
    }
    let g = conv2d_shape(input.layout(), weight.layout(), bias.map(|b| b.layout()), [Some(input.dtype()), Some(weight.dtype()), bias.map(|b| b.dtype())], options)?;
    run("conv2d", input, weight, bias, options, &g, kernel, None)
}

/// `torch.nn.functional.conv2d` with a 1x1 kernel: [`conv2d`] whose weight must be
/// [K, C/groups, 1, 1] or [K, C/groups].
pub fn conv1x1(input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv1x1Options) -> Result<DeviceTensor> {
    conv1x1_with(input, weight, bias, options, ConvKernel::Auto)
}

/// [`conv1x1`] through a chosen kernel.
pub fn conv1x1_with(input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv1x1Options, kernel: ConvKernel) -> Result<DeviceTensor> {
    if input.rank() == 3 {
        return conv1x1_with(&input.unsqueeze(0)?, weight, bias, options, kernel)?.squeeze(0);
    }
    let g = conv1x1_shape(input.layout(), weight.layout(), bias.map(|b| b.layout()), [Some(input.dtype()), Some(weight.dtype()), bias.map(|b| b.dtype())], options)?;
    run("conv1x1", input, weight, bias, options, &g, kernel, None)
}

impl Conv2d for DeviceTensor {
    /// [`conv2d`]: the device kernels (the kept or default kernel of the call's shape class);
    /// submitted (or held back under `SubmitPolicy::Deferred`), never waited for.
    fn conv2d(&self, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv2dOptions) -> Result<DeviceTensor> {
        conv2d(self, weight, bias, options)
    }

    /// [`conv2d`] into `out`, checked before anything is tuned or recorded; submitted, not
    /// waited for.
    fn conv2d_out(&self, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv2dOptions, out: &DeviceTensor) -> Result<()> {
        if self.rank() == 3 {
            return self.unsqueeze(0)?.conv2d_out(weight, bias, options, &out.unsqueeze(0)?);
        }
        let g = conv2d_shape(self.layout(), weight.layout(), bias.map(|b| b.layout()), [Some(self.dtype()), Some(weight.dtype()), bias.map(|b| b.dtype())], options)?;
        run("conv2d", self, weight, bias, options, &g, ConvKernel::Auto, Some(out)).map(drop)
    }

    /// [`conv2d_add_with`] with the call's kernel: fused into the GEMM kernels' epilogue, else
    /// three recorded ops; submitted (or held back under `SubmitPolicy::Deferred`), never waited for.
    fn conv2d_add(&self, weight: &DeviceTensor, bias: Option<&DeviceTensor>, residual: &DeviceTensor, options: &Conv2dOptions) -> Result<DeviceTensor> {
        conv2d_add_with(self, weight, bias, residual, options, ConvKernel::Auto)
    }
}

/// `relu?(conv2d(input, weight) + bias + residual)` on the device: [`Conv2d::conv2d_add`]
/// through a chosen kernel. The GEMM kernels add the residual in their epilogue when it has
/// the output's strides ([`ConvKernel::fuses_residual`]); otherwise the convolution, the add
/// and the ReLU are recorded one after the other, with the same result bit for bit. Under
/// [`crate::TuningPolicy::OnFirstCall`] the first call of a shape class measures the
/// candidates first, as [`conv2d`]'s does (the same class).
pub fn conv2d_add_with(input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, residual: &DeviceTensor, options: &Conv2dOptions, kernel: ConvKernel) -> Result<DeviceTensor> {
    const OP: &str = "conv2d_add";
    if input.rank() == 3 {
        return conv2d_add_with(&input.unsqueeze(0)?, weight, bias, &residual.unsqueeze(0)?, options, kernel)?.squeeze(0);
    }
    let g = conv2d_shape(input.layout(), weight.layout(), bias.map(|b| b.layout()), [Some(input.dtype()), Some(weight.dtype()), bias.map(|b| b.dtype())], options)?;
    let ctx = input.context();
    if kernel != ConvKernel::Auto {
        kernel.admits(&ctx.rt.report, &g, options)?;
    }
    host_conv::check_residual(OP, residual.shape(), residual.dtype(), &g)?;
    let out = DeviceTensor::empty_for(OP, ctx, &g.out_shape(), g.dtype, g.format)?;
    // As `conv2d`: asked to, the first call of a shape class measures (the class and kernel
    // `conv2d` of the same operands takes, so that both keep their bits once it has one).
    #[cfg(not(target_arch = "wasm32"))]
    if kernel == ConvKernel::Auto && ctx.tunes_on_call() && [Some(weight), bias, Some(residual)].into_iter().flatten().all(|t| t.context().same_device(ctx)) {
        pollster::block_on(ctx.tune_conv_into(out.layout(), input, weight, bias, options, &g, crate::runtime::submit::Drive::Wait))?;
    }
    let mut batch = ctx.batch();
    batch.convolve(OP, &out, input, weight, bias, Some(residual), options, &g, kernel)?;
    batch.submit_eager(OP)?;
    Ok(out)
}

#[allow(clippy::too_many_arguments)]
fn run(op: &'static str, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv2dOptions, g: &Conv2dShape, kernel: ConvKernel, out: Option<&DeviceTensor>) -> Result<DeviceTensor> {
    let ctx = input.context();
    if kernel != ConvKernel::Auto {
        kernel.admits(&ctx.rt.report, g, options)?;
    }
    let out = match out {
        Some(out) => {
            check_destination(op, out, input, weight, bias, g)?;
            out.clone()
        }
        None => DeviceTensor::empty_for(op, ctx, &g.out_shape(), g.dtype, g.format)?,
    };
    // Asked to, the first convolution of a shape class measures the kernels, outside any recording.
    #[cfg(not(target_arch = "wasm32"))]
    if kernel == ConvKernel::Auto && ctx.tunes_on_call() && [Some(weight), bias].into_iter().flatten().all(|t| t.context().same_device(ctx)) {
        pollster::block_on(ctx.tune_conv_into(out.layout(), input, weight, bias, options, g, crate::runtime::submit::Drive::Wait))?;
    }
    let mut batch = ctx.batch();
    batch.convolve(op, &out, input, weight, bias, None, options, g, kernel)?;
    batch.submit_eager(op)?;
    Ok(out)
}

/// Convolutions, recorded: the [`Conv2d`] methods with the input as the first argument.
/// Recording never measures: the tuned kernel of the shape class runs, or, when the class is
/// not tuned yet, the adapter's default (see [`crate::GpuContext::tune_conv2d`]).
impl Batch<'_> {
    /// Records `input.conv2d(weight, bias, options)` ([`Conv2d::conv2d`]); returns the new
    /// [N, K, OH, OW] tensor, channels-last where the input or the weight is (else contiguous), unless `options` names a format.
    pub fn conv2d(&mut self, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv2dOptions) -> Result<DeviceTensor> {
        if input.rank() == 3 {
            return self.conv2d(&input.unsqueeze(0)?, weight, bias, options)?.squeeze(0);
        }
        let g = conv2d_shape(input.layout(), weight.layout(), bias.map(|b| b.layout()), [Some(input.dtype()), Some(weight.dtype()), bias.map(|b| b.dtype())], options)?;
        let operands: Vec<&DeviceTensor> = [Some(input), Some(weight), bias].into_iter().flatten().collect();
        self.check_context("conv2d", &operands)?;
        let out = DeviceTensor::empty_for("conv2d", self.context(), &g.out_shape(), g.dtype, g.format)?;
        self.convolve("conv2d", &out, input, weight, bias, None, options, &g, ConvKernel::Auto)?;
        Ok(out)
    }

    /// Records `input.conv2d_add(weight, bias, residual, options)` ([`Conv2d::conv2d_add`]):
    /// `relu?(conv2d + bias + residual)`, a new tensor.
    pub fn conv2d_add(&mut self, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, residual: &DeviceTensor, options: &Conv2dOptions) -> Result<DeviceTensor> {
        const OP: &str = "conv2d_add";
        if input.rank() == 3 {
            return self.conv2d_add(&input.unsqueeze(0)?, weight, bias, &residual.unsqueeze(0)?, options)?.squeeze(0);
        }
        let g = conv2d_shape(input.layout(), weight.layout(), bias.map(|b| b.layout()), [Some(input.dtype()), Some(weight.dtype()), bias.map(|b| b.dtype())], options)?;
        host_conv::check_residual(OP, residual.shape(), residual.dtype(), &g)?;
        let out = DeviceTensor::empty_for(OP, self.context(), &g.out_shape(), g.dtype, g.format)?;
        self.convolve(OP, &out, input, weight, bias, Some(residual), options, &g, ConvKernel::Auto)?;
        Ok(out)
    }

    /// Records `input.conv2d_out(weight, bias, options, out)` ([`Conv2d::conv2d_out`]): into
    /// `out`, a view of shape [N, K, OH, OW] of the operands' type, in any strides (`options.output_format` is
    /// only checked, `out` decides the layout). `out` must not overlap itself or an operand;
    /// an operand in the same buffer as `out` (a disjoint view) is read from a copy.
    pub fn conv2d_out(&mut self, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv2dOptions, out: &DeviceTensor) -> Result<()> {
        self.conv2d_out_with(input, weight, bias, options, out, ConvKernel::Auto)
    }

    /// [`Batch::conv2d_out`] through a chosen kernel: one that is not eligible for the call
    /// ([`ConvKernel::eligible`]) or cannot run on the adapter ([`ConvKernel::runs_on`]) is
    /// [`Error::Unsupported`], and nothing is recorded.
    pub fn conv2d_out_with(&mut self, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv2dOptions, out: &DeviceTensor, kernel: ConvKernel) -> Result<()> {
        if input.rank() == 3 {
            return self.conv2d_out_with(&input.unsqueeze(0)?, weight, bias, options, &out.unsqueeze(0)?, kernel);
        }
        let g = conv2d_shape(input.layout(), weight.layout(), bias.map(|b| b.layout()), [Some(input.dtype()), Some(weight.dtype()), bias.map(|b| b.dtype())], options)?;
        self.convolve("conv2d", out, input, weight, bias, None, options, &g, kernel)
    }

    /// [`Batch::conv2d_out_with`] of a 1x1 convolution (weight [K, C/groups, 1, 1] or
    /// [K, C/groups]; see [`conv1x1`]).
    pub fn conv1x1_out_with(&mut self, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv1x1Options, out: &DeviceTensor, kernel: ConvKernel) -> Result<()> {
        if input.rank() == 3 {
            return self.conv1x1_out_with(&input.unsqueeze(0)?, weight, bias, options, &out.unsqueeze(0)?, kernel);
        }
        let g = conv1x1_shape(input.layout(), weight.layout(), bias.map(|b| b.layout()), [Some(input.dtype()), Some(weight.dtype()), bias.map(|b| b.dtype())], options)?;
        self.convolve("conv1x1", out, input, weight, bias, None, options, &g, kernel)
    }

    /// Records a checked convolution (the kernel `Auto` or forced) into `out`: f32, and 16-bit
    /// types on a kernel that reads them as they are ([`ConvKernel::reads_half`]: the GEMM and
    /// GPU-shaped depthwise kernels here, [`ConvKernel::Coop`] in `convolve_coop`), its tail kept for fusion in a
    /// captured graph (`gpu/fuse.rs`); 16-bit types on the other
    /// kernels through f32 copies (`convolve_in_f32`).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn convolve(&mut self, op: &'static str, out: &DeviceTensor, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, residual: Option<&DeviceTensor>, options: &Conv2dOptions, g: &Conv2dShape, kernel: ConvKernel) -> Result<()> {
        self.whole(|b| b.record_convolution(op, out, input, weight, bias, residual, options, g, kernel))
    }

    #[allow(clippy::too_many_arguments)]
    fn record_convolution(&mut self, op: &'static str, out: &DeviceTensor, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, residual: Option<&DeviceTensor>, options: &Conv2dOptions, g: &Conv2dShape, kernel: ConvKernel) -> Result<()> {
        let ctx = self.context().clone();
        let operands: Vec<&DeviceTensor> = [Some(input), Some(weight), bias, Some(out), residual].into_iter().flatten().collect();
        self.check_context(op, &operands)?;
        if kernel != ConvKernel::Auto {
            kernel.admits(&ctx.rt.report, g, options)?;
        }
        check_destination(op, out, input, weight, bias, g)?;
        if out.numel() == 0 {
            return Ok(());
        }
        // A weight or bias in a buffer past one binding whose own elements fit one (small views
        // into a large arena of a model's weights): the kernels bind the whole buffer of each
        // (or pack from it), so they read a dense copy, recorded here (a captured graph makes
        // it once). One too large itself stays: the kernels' Limit error.
        let limit = ctx.rt.report.conv_binding_limit();
        if needs_dense_copy(limit, weight) || bias.is_some_and(|b| needs_dense_copy(limit, b)) {
            let mut dense = |t: &DeviceTensor| -> Result<DeviceTensor> {
                if !needs_dense_copy(limit, t) {
                    return Ok(t.clone());
                }
                self.copied(op, t, t.dtype(), t.layout().suggest_memory_format())
            };
            let w = dense(weight)?;
            let b = bias.map(&mut dense).transpose()?;
            return self.record_bound(op, out, input, &w, b.as_ref(), residual, options, g, kernel);
        }
        self.record_bound(op, out, input, weight, bias, residual, options, g, kernel)
    }

    /// [`Batch::convolve`] past its checks, with operands the kernels can bind.
    #[allow(clippy::too_many_arguments)]
    fn record_bound(&mut self, op: &'static str, out: &DeviceTensor, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, residual: Option<&DeviceTensor>, options: &Conv2dOptions, g: &Conv2dShape, kernel: ConvKernel) -> Result<()> {
        let ctx = self.context().clone();
        let operands: Vec<&DeviceTensor> = [Some(input), Some(weight), bias, Some(out), residual].into_iter().flatten().collect();
        let mut kernel = kernel;
        if g.dtype != DType::F32 {
            if kernel == ConvKernel::Coop || (kernel == ConvKernel::Auto && coop_applies(&ctx.rt.report, out, input, weight, bias, residual, g, options)) {
                return self.convolve_coop(op, out, input, weight, bias, residual, options, g);
            }
            // The kernel of the class its f32 copies would have (what the tuner measured); one
            // that reads 16-bit operands runs on them as they are, below.
            if kernel == ConvKernel::Auto {
                let y = f32_twin(out.layout())?;
                kernel = ctx.conv_choice(&conv_class(&ctx.rt.report, g, options, &f32_twin(input.layout())?, &f32_twin(weight.layout())?, &y), kernel);
            }
            if !kernel.reads_half() {
                return self.convolve_in_f32(op, out, input, weight, bias, residual, options, g, kernel);
            }
        }
        for t in [Some(input), Some(weight), bias].into_iter().flatten() {
            if out.shares_storage(t) && !t.buffer().usage().contains(wgpu::BufferUsages::COPY_SRC) {
                return Err(Error::unsupported(op, format!("the output shares a buffer with an operand (shape {:?}), which is then read from a copy, but the buffer's usage {:?} lacks COPY_SRC", t.shape(), t.buffer().usage())));
            }
        }
        if residual.is_some_and(|r| r.shares_storage(out)) {
            return Err(Error::Overlap { op, detail: "the residual shares the output's buffer".into() });
        }
        let class = conv_class(&ctx.rt.report, g, options, input.layout(), weight.layout(), out.layout());
        let start = self.recorded();
        let kernel = ctx.conv_choice(&class, kernel);
        // The residual in the kernel's epilogue where it can be; else the convolution without
        // its ReLU, then the add and the ReLU (the same f32 steps, the same bits).
        let fused = residual.filter(|r| kernel.fuses_residual() && r.layout().strides() == out.layout().strides() && r.buffer().size() <= ctx.rt.report.conv_binding_limit());
        let unfused = Conv2dOptions { relu: false, ..*options };
        let conv_options = if residual.is_some() && fused.is_none() { &unfused } else { options };
        let rec = self.parts(op)?;
        for t in operands {
            rec.hold_shared(t.storage());
        }
        let rt = &ctx.rt;
        let [xc, wc, bc] = shared_copies(rt, rec, op, out, [Some(input), Some(weight), bias])?;
        let (x, w, b) = (view_via(input, &xc), view_via(weight, &wc), bias.map(|b| view_via(b, &bc)));
        record(rt, rec, &ConvCall { op, out: view(out), input: x, weight: w, bias: b, options: conv_options, g, kernel, residual: fused.map(view) })?;
        if let (Some(res), None) = (residual, fused) {
            self.add_then_relu(out, res, options.relu)?;
        } else {
            let call = ConvTail { end: self.recorded(), op, out: out.clone(), input: input.clone(), weight: weight.clone(), bias: bias.cloned(), residual: residual.cloned(), options: *options, g: g.clone(), kernel };
            self.tail = Some((start, Tail::Conv(Box::new(call))));
        }
        Ok(())
    }
}

/// Whether the automatic choice runs a (checked) 16-bit convolution on [`ConvKernel::Coop`]:
/// the device takes every tensor-core path (no GPU has run this one yet:
/// `CooperativeMatrix::all_paths`, `STRIDED_WGPU_COOPERATIVE_MATRIX=all`), its checks pass,
/// every buffer it binds fits one binding (not the weight: only its packed copy is bound), and
/// no operand shares the output's buffer (the f32 path reads such an operand from a copy).
#[allow(clippy::too_many_arguments)]
fn coop_applies(report: &AdapterReport, out: &DeviceTensor, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, residual: Option<&DeviceTensor>, g: &Conv2dShape, options: &Conv2dOptions) -> bool {
    let operands = [Some(input), Some(weight), bias, residual];
    report.cooperative_matrix.is_some_and(|c| c.all_paths)
        && ConvKernel::Coop.admits(report, g, options).is_ok()
        && [Some(out), Some(input), bias, residual].into_iter().flatten().all(|t| t.buffer().size() <= report.conv_binding_limit())
        && !operands.into_iter().flatten().any(|t| out.shares_storage(t))
}

impl Batch<'_> {
    /// The residual of a convolution whose kernel did not add it: `out += res` in place, then
    /// the ReLU if asked (the separate ops' steps and bits).
    fn add_then_relu(&mut self, out: &DeviceTensor, res: &DeviceTensor, relu: bool) -> Result<()> {
        self.elementwise(Op::Add { alpha: crate::elementwise::Scalar::Int(1) }, &[Input::Tensor(out), Input::Tensor(res)], Target::InPlace)?;
        if relu {
            self.elementwise(Op::Relu, &[Input::Tensor(out)], Target::InPlace)?;
        }
        Ok(())
    }

    /// A 16-bit convolution (checked) on the tensor cores ([`ConvKernel::Coop`]): the operands
    /// read as they are, the output written directly, a residual and the ReLU in the epilogue.
    /// An input, bias or residual that shares the output's buffer (a disjoint view of it) is
    /// read from a copy, as on the f32 path; the weight is read only by its packing.
    #[allow(clippy::too_many_arguments)]
    fn convolve_coop(&mut self, op: &'static str, out: &DeviceTensor, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, residual: Option<&DeviceTensor>, options: &Conv2dOptions, g: &Conv2dShape) -> Result<()> {
        let ctx = self.context().clone();
        // The residual in the epilogue where it has the output's strides and its buffer fits
        // the kernels' binding (as the GEMM path's); else the convolution (rounded to f16),
        // then the f16 add and the ReLU, as the separate ops.
        let fused = residual.filter(|r| r.layout().strides() == out.layout().strides() && r.buffer().size() <= ctx.rt.report.conv_binding_limit());
        let unfused = Conv2dOptions { relu: false, ..*options };
        let conv_options = if residual.is_some() && fused.is_none() { &unfused } else { options };
        let rec = self.parts(op)?;
        for t in [Some(input), Some(weight), bias, fused, Some(out)].into_iter().flatten() {
            rec.hold_shared(t.storage());
        }
        let rt = &ctx.rt;
        let [xc, bc, rc] = shared_copies(rt, rec, op, out, [Some(input), bias, fused])?;
        let (x, b, r) = (view_via(input, &xc), bias.map(|b| view_via(b, &bc)), fused.map(|r| view_via(r, &rc)));
        record(rt, rec, &ConvCall { op, out: view(out), input: x, weight: view(weight), bias: b, options: conv_options, g, kernel: ConvKernel::Coop, residual: r })?;
        if let (Some(res), None) = (residual, fused) {
            self.add_then_relu(out, res, options.relu)?;
        }
        Ok(())
    }

    /// A 16-bit convolution (checked): its operands converted to f32 tensors of the same memory
    /// format, the f32 convolution into an f32 tensor of the output's format (accumulating in
    /// f32), then that converted into `out` (rounded once, to nearest even), all recorded here.
    /// A residual is added after that rounding, then the ReLU, as the separate 16-bit ops do
    /// (the same bits as `conv2d`, `add_` and `relu_`). The conversions are passes over memory
    /// that kernels reading 16-bit operands would not need (a weight's runs once in a captured
    /// graph, at capture).
    #[allow(clippy::too_many_arguments)]
    fn convolve_in_f32(&mut self, op: &'static str, out: &DeviceTensor, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, residual: Option<&DeviceTensor>, options: &Conv2dOptions, g: &Conv2dShape, kernel: ConvKernel) -> Result<()> {
        let ctx = self.context().clone();
        let mut wide = |t: &DeviceTensor| self.copied(op, t, DType::F32, t.layout().suggest_memory_format());
        let (x, w) = (wide(input)?, wide(weight)?);
        let b = bias.map(&mut wide).transpose()?;
        let y = f32_like(op, &ctx, out)?;
        let g32 = Conv2dShape { dtype: DType::F32, ..g.clone() };
        let unfused = Conv2dOptions { relu: false, ..*options };
        self.convolve(op, &y, &x, &w, b.as_ref(), None, if residual.is_some() { &unfused } else { options }, &g32, kernel)?;
        self.copy_(out, &y)?;
        if let Some(res) = residual {
            self.add_then_relu(out, res, options.relu)?;
        }
        Ok(())
    }
}

/// Records a validated convolution through `call.kernel` (not `Auto`), for calls and the
/// tuner's measurements alike: a grouped 1x1 convolution on the NCHW kernel of a CPU adapter
/// as a batch of matrix products over its groups where that kernel serves it
/// (`kernels/conv/grouped.rs`), else through the kernel's family.
pub(crate) fn record(rt: &Runtime, rec: &mut Recorder, call: &ConvCall<'_>) -> Result<()> {
    if grouped::record(rt, rec, call)? {
        return Ok(());
    }
    conv::record(rt, rec, call)
}

/// The output of a convolution of `g` must be of its dtype and shape [N, K, OH, OW].
pub(crate) fn check_output(op: &'static str, out: &DeviceTensor, g: &Conv2dShape) -> Result<()> {
    host_conv::check_output(op, out.shape(), out.dtype(), g)
}

/// [`check_output`], and `out` overlaps neither itself nor an operand (host and device alike).
fn check_destination(op: &'static str, out: &DeviceTensor, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, g: &Conv2dShape) -> Result<()> {
    check_output(op, out, g)?;
    let operands: Vec<(&str, &crate::layout::Layout, bool)> = [("input", Some(input)), ("weight", Some(weight)), ("bias", bias)]
        .into_iter()
        .filter_map(|(name, t)| t.map(|t| (name, t.layout(), out.shares_storage(t))))
        .collect();
    host_conv::check_overlap(op, out.layout(), &operands)
}

/// The layout of a 16-bit convolution operand's f32 copy (`Batch::convolve_in_f32`): dense,
/// in the operand's suggested memory format.
fn f32_twin(l: &Layout) -> Result<Layout> {
    Layout::with_format(l.shape(), l.suggest_memory_format())
}

/// Whether a convolution reads `t` (a weight or bias) from a dense copy: its buffer is past one
/// binding (`limit`) but its own elements fit one.
fn needs_dense_copy(limit: u64, t: &DeviceTensor) -> bool {
    t.buffer().size() > limit && (t.numel() as u64).saturating_mul(t.dtype().size() as u64) <= limit
}

/// Dense copies of a weight and bias that [`needs_dense_copy`], run now (a tuning's scratch:
/// one the adapter cannot give is `None`, and the call measures nothing); the tensors as they
/// are where none does.
fn tuning_operands(ctx: &GpuContext, weight: &DeviceTensor, bias: Option<&DeviceTensor>) -> Result<Option<(DeviceTensor, Option<DeviceTensor>)>> {
    let limit = ctx.rt.report.conv_binding_limit();
    let dense = |t: &DeviceTensor| -> Result<Option<DeviceTensor>> {
        if !needs_dense_copy(limit, t) {
            return Ok(Some(t.clone()));
        }
        let Some(c) = crate::tune::scratch(DeviceTensor::empty_for("tune", ctx, t.shape(), t.dtype(), t.layout().suggest_memory_format()))? else { return Ok(None) };
        c.copy_(t)?;
        Ok(Some(c))
    };
    let Some(w) = dense(weight)? else { return Ok(None) };
    let b = match bias.map(dense).transpose()? {
        Some(None) => return Ok(None),
        b => b.flatten(),
    };
    Ok(Some((w, b)))
}

/// A new f32 tensor laid out as [`f32_twin`] says for `t`: where a 16-bit convolution's
/// operands and result are held in f32, so the class its calls look up is the one measured.
fn f32_like(op: &'static str, ctx: &GpuContext, t: &DeviceTensor) -> Result<DeviceTensor> {
    DeviceTensor::empty_for(op, ctx, t.shape(), DType::F32, t.layout().suggest_memory_format())
}

/// A device tensor as a kernel operand.
fn view(t: &DeviceTensor) -> View<'_> {
    View { buffer: t.buffer(), layout: t.layout() }
}

/// Copies (recorded now, [`read_copy`]) of the operands that share `out`'s buffer (disjoint
/// views of it: one buffer cannot be bound for reading and writing in one dispatch); `None`
/// for the others.
fn shared_copies<const N: usize>(rt: &Runtime, rec: &mut Recorder, op: &'static str, out: &DeviceTensor, operands: [Option<&DeviceTensor>; N]) -> Result<[Option<wgpu::Buffer>; N]> {
    let mut copies: [Option<wgpu::Buffer>; N] = std::array::from_fn(|_| None);
    for (copy, t) in copies.iter_mut().zip(operands) {
        if let Some(t) = t.filter(|t| out.shares_storage(t)) {
            *copy = Some(read_copy(rt, rec, op, t.buffer())?);
        }
    }
    Ok(copies)
}

/// A device tensor as a kernel operand, read from `copy` where it has one ([`shared_copies`]).
fn view_via<'a>(t: &'a DeviceTensor, copy: &'a Option<wgpu::Buffer>) -> View<'a> {
    View { buffer: copy.as_ref().unwrap_or(t.buffer()), layout: t.layout() }
}

/// The convolution's kernel choice and tuning: the kept (or default) kernel of a call's shape
/// class, and the measurements that keep one.
impl GpuContext {
    /// The convolution kernel: `kernel` when forced, else the tuned (or default) one.
    pub(crate) fn conv_choice(&self, class: &ConvClass, kernel: ConvKernel) -> ConvKernel {
        match kernel {
            ConvKernel::Auto => self.choice::<Conv>(class, || conv_default(&self.rt.report, class)),
            k => k,
        }
    }

    /// The kernel that `Batch::conv2d_out(input, weight, bias, options, out)`
    /// records now: [`ConvKernel::Coop`] for a 16-bit convolution where that kernel applies, else
    /// the tuned kernel of the call's shape class, or the adapter's default while the class is
    /// not tuned; `None` for an empty output, where the convolution records
    /// nothing. Checks the operands' shapes and types and the output's shape and type as the
    /// convolution does (not the overlaps or the tensors' contexts: nothing is recorded).
    pub fn conv2d_choice(&self, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv2dOptions, out: &DeviceTensor) -> Result<Option<ConvKernel>> {
        // An unbatched [C, H, W] input (and its [K, OH, OW] output) runs as a batch of one.
        if input.rank() == 3 && out.rank() == 3 {
            return self.conv2d_choice(&input.unsqueeze(0)?, weight, bias, options, &out.unsqueeze(0)?);
        }
        let class = self.conv2d_class("conv2d_choice", out, input, weight, bias, options)?;
        if class.is_some() && self.coop_default(input, weight, bias, options, out)? {
            return Ok(Some(ConvKernel::Coop));
        }
        Ok(class.map(|(class, _)| self.conv_choice(&class, ConvKernel::Auto)))
    }

    /// Whether the automatic choice runs this (checked) convolution on [`ConvKernel::Coop`]:
    /// a 16-bit one where that kernel applies ([`coop_applies`]), whatever its class's kept
    /// choice (which the f32 path uses).
    fn coop_default(&self, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv2dOptions, out: &DeviceTensor) -> Result<bool> {
        let g = conv2d_shape(input.layout(), weight.layout(), bias.map(|b| b.layout()), [Some(input.dtype()), Some(weight.dtype()), bias.map(|b| b.dtype())], options)?;
        Ok(g.dtype != DType::F32 && coop_applies(&self.rt.report, out, input, weight, bias, None, &g, options))
    }

    /// The adapter's default kernel for this convolution: what [`GpuContext::conv2d_choice`]
    /// gives while the call's class has no kept choice (measured or loaded). The same checks;
    /// `None` for an empty output.
    pub fn conv2d_default(&self, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv2dOptions, out: &DeviceTensor) -> Result<Option<ConvKernel>> {
        if input.rank() == 3 && out.rank() == 3 {
            return self.conv2d_default(&input.unsqueeze(0)?, weight, bias, options, &out.unsqueeze(0)?);
        }
        let class = self.conv2d_class("conv2d_default", out, input, weight, bias, options)?;
        if class.is_some() && self.coop_default(input, weight, bias, options, out)? {
            return Ok(Some(ConvKernel::Coop));
        }
        Ok(class.map(|(class, _)| conv_default(&self.rt.report, &class)))
    }

    /// The class of a checked convolution and the output layout its kernels write: a 16-bit
    /// convolution's kernels see its f32 copies ([`f32_twin`]).
    fn conv2d_class(&self, op: &'static str, out: &DeviceTensor, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv2dOptions) -> Result<Option<(ConvClass, Layout)>> {
        let g = conv2d_shape(input.layout(), weight.layout(), bias.map(|b| b.layout()), [Some(input.dtype()), Some(weight.dtype()), bias.map(|b| b.dtype())], options)?;
        check_output(op, out, &g)?;
        if out.numel() == 0 {
            return Ok(None);
        }
        // A weight the call reads from a dense copy (`needs_dense_copy`) has that copy's layout.
        let dense;
        let weight_layout = match needs_dense_copy(self.rt.report.conv_binding_limit(), weight) {
            true => {
                dense = Layout::with_format(weight.shape(), weight.layout().suggest_memory_format())?;
                &dense
            }
            false => weight.layout(),
        };
        let (x, w, y) = if g.dtype == DType::F32 { (input.layout().clone(), weight_layout.clone(), out.layout().clone()) } else { (f32_twin(input.layout())?, f32_twin(weight_layout)?, f32_twin(out.layout())?) };
        Ok(Some((conv_class(&self.rt.report, &g, options, &x, &w, &y), y)))
    }

    /// Measures the convolution kernels (`conv_candidates`) for the shape class of this
    /// convolution (into an output of `output_format`, or the input's) unless it is tuned
    /// already: each kernel convolves the real input (read only; its first images, up to
    /// `TUNE_ELEMENTS` (2^20) output elements, at least one image) into a scratch output. Returns
    /// whether it measured.
    pub async fn tune_conv2d_async(&self, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv2dOptions) -> Result<bool> {
        self.tune_conv_with(conv2d_shape, input, weight, bias, options, Drive::Poll).await
    }

    /// [`GpuContext::tune_conv2d_async`], blocking (native only).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn tune_conv2d(&self, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv2dOptions) -> Result<bool> {
        pollster::block_on(self.tune_conv_with(conv2d_shape, input, weight, bias, options, Drive::Wait))
    }

    /// [`GpuContext::tune_conv2d_async`] of a 1x1 convolution.
    pub async fn tune_conv1x1_async(&self, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv1x1Options) -> Result<bool> {
        self.tune_conv_with(conv1x1_shape, input, weight, bias, options, Drive::Poll).await
    }

    /// [`GpuContext::tune_conv1x1_async`], blocking (native only).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn tune_conv1x1(&self, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv1x1Options) -> Result<bool> {
        pollster::block_on(self.tune_conv_with(conv1x1_shape, input, weight, bias, options, Drive::Wait))
    }

    /// Tunes the convolution whose shape `shape` checks ([`conv2d_shape`], or [`conv1x1_shape`],
    /// which also takes a 2-d [K, C/groups] weight).
    #[allow(clippy::type_complexity)]
    async fn tune_conv_with(&self, shape: fn(&Layout, &Layout, Option<&Layout>, [Option<DType>; 3], &Conv2dOptions) -> Result<Conv2dShape>, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv2dOptions, drive: Drive) -> Result<bool> {
        // An unbatched [C, H, W] input is tuned as the batch of one it runs as.
        let batched;
        let input = if input.rank() == 3 {
            batched = input.unsqueeze(0)?;
            &batched
        } else {
            input
        };
        let g = shape(input.layout(), weight.layout(), bias.map(|b| b.layout()), [Some(input.dtype()), Some(weight.dtype()), bias.map(|b| b.dtype())], options)?;
        let out_layout = Layout::with_format(&[g.n, g.k, g.oh, g.ow], g.format)?;
        self.tune_conv_into(&out_layout, input, weight, bias, options, &g, drive).await
    }

    /// Measures the kernels for a convolution into an output laid out as `out` (only its
    /// strides and offset matter) unless its class is tuned already.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn tune_conv_into(&self, out: &Layout, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv2dOptions, g: &Conv2dShape, drive: Drive) -> Result<bool> {
        self.ready_to_tune(&[Some(input), Some(weight), bias].into_iter().flatten().map(|t| t.context()).collect::<Vec<_>>())?;
        if g.dtype == DType::F32 {
            // A weight or bias the call reads from a dense copy is measured on one too (the
            // class of the copy's layout, the one the call looks up; copied only while untuned).
            let limit = self.rt.report.conv_binding_limit();
            if needs_dense_copy(limit, weight) || bias.is_some_and(|b| needs_dense_copy(limit, b)) {
                let wl = if needs_dense_copy(limit, weight) { Layout::with_format(weight.shape(), weight.layout().suggest_memory_format())? } else { weight.layout().clone() };
                if self.tuner.get::<Conv>(&conv_class(&self.rt.report, g, options, input.layout(), &wl, out)).is_some() {
                    return Ok(false);
                }
                let Some((w, b)) = tuning_operands(self, weight, bias)? else { return Ok(false) };
                return self.tune_f32_into(out, input, &w, b.as_ref(), options, g, drive).await;
            }
            return self.tune_f32_into(out, input, weight, bias, options, g, drive).await;
        }
        // A 16-bit convolution takes the kernel of its f32 copies' class: measured on f32 copies
        // of the operands, in the memory formats `Batch::convolve_in_f32` gives them, so the
        // class is the one its calls look up (the kernels that read 16-bit operands run them in
        // about their f32 time, less the conversions the others need); nothing is copied when
        // that class is tuned already.
        let out32 = f32_twin(out)?;
        if self.tuner.get::<Conv>(&conv_class(&self.rt.report, g, options, &f32_twin(input.layout())?, &f32_twin(weight.layout())?, &out32)).is_some() {
            return Ok(false);
        }
        // (Copies the adapter cannot allocate measure nothing: the call runs the default.)
        let wide = |t: &DeviceTensor| -> Result<Option<DeviceTensor>> {
            let Some(w) = crate::tune::scratch(f32_like("tune", self, t))? else { return Ok(None) };
            w.copy_(t)?;
            Ok(Some(w))
        };
        let (Some(x), Some(w)) = (wide(input)?, wide(weight)?) else { return Ok(false) };
        let b = match bias.map(wide).transpose()? {
            Some(None) => return Ok(false),
            b => b.flatten(),
        };
        self.tune_f32_into(&out32, &x, &w, b.as_ref(), options, &Conv2dShape { dtype: DType::F32, ..g.clone() }, drive).await
    }

    #[allow(clippy::too_many_arguments)]
    async fn tune_f32_into(&self, out: &Layout, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv2dOptions, g: &Conv2dShape, drive: Drive) -> Result<bool> {
        self.ready_to_tune(&[Some(input), Some(weight), bias].into_iter().flatten().map(|t| t.context()).collect::<Vec<_>>())?;
        let class = conv_class(&self.rt.report, g, options, input.layout(), weight.layout(), out);
        if g.n * g.k * g.oh * g.ow == 0 || self.tuner.get::<Conv>(&class).is_some() {
            return Ok(false);
        }
        let nt = tune_images(g);
        let first = input.layout().narrow(0, 0, nt)?;
        // A scratch output dense within an image in the order of `out`'s strides (NCHW or
        // channels-last as `out`; an image's span of `out` itself may be the whole output,
        // where its batch dim is not outermost), images one after another.
        // `out`'s own strides where it is dense within an image already (ties of size-1 dims
        // and the vector paths kept as the call has them).
        let os = out.strides();
        let per_image = out.shape()[1..].iter().product::<usize>();
        let reach = (1..4).map(|d| (out.shape()[d].max(1) - 1) * os[d].unsigned_abs()).sum::<usize>() + 1;
        let mut strides = [per_image as isize, os[1], os[2], os[3]];
        let mut span = per_image;
        if reach != per_image || os[1..].iter().any(|&s| s < 0) {
            let mut order = [1usize, 2, 3];
            order.sort_by_key(|&d| std::cmp::Reverse(os[d].unsigned_abs()));
            span = 1;
            for &d in order.iter().rev() {
                strides[d] = span as isize;
                span *= out.shape()[d];
            }
            strides[0] = span as isize;
        }
        let dst = Layout::as_strided(&[nt, g.k, g.oh, g.ow], &strides, 0, nt * span)?;
        let Some(scratch) = crate::tune::scratch(self.rt.scoped("tune", || self.rt.buffer("tune", (nt * span) as u64 * 4, wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST)))? else { return Ok(false) };
        let scratch = Arc::new(scratch);
        let g1 = Conv2dShape { n: nt, ..g.clone() };
        self.settle_before_measuring().await?;
        let timer = Timer::new(&self.rt)?;
        let candidates: Vec<ConvKernel> = class.kernels.iter().map(|(k, _)| *k).collect();
        let best = Tuner::measure(&timer, &candidates, drive, |kernel, rec| {
            let (x, w) = (View { buffer: input.buffer(), layout: &first }, view(weight));
            rec.hold(scratch.clone());
            for t in [Some(input), Some(weight), bias].into_iter().flatten() {
                rec.hold_shared(t.storage());
            }
            record(&self.rt, rec, &ConvCall { op: "tune", out: View { buffer: scratch.buffer(), layout: &dst }, input: x, weight: w, bias: bias.map(view), options, g: &g1, kernel, residual: None })
        })
        .await?;
        let Some(best) = best else { return Ok(false) };
        self.tuner.keep::<Conv>(&class, &best);
        Ok(true)
    }
}
