//! The kernel families' tuning inputs (classes, candidates, what a measurement records) and
//! the context's tuning calls. Measuring happens only here, outside any recording.

use std::sync::Arc;

use crate::conv::{conv1x1_shape, conv2d_shape, Conv1x1Options, Conv2dOptions, Conv2dShape};
use crate::dtype::DType;
use crate::error::Result;
use crate::gpu::context::GpuContext;
use crate::gpu::tensor::DeviceTensor;
use crate::elementwise::resolve::check_copy;
use crate::kernels::conv::class::{conv_class, conv_default, tune_images, ConvClass, CONV_FAMILY};
use crate::kernels::conv::{ConvCall, ConvKernel, View};
use crate::kernels::copy::{self, CopyPath, TRANSPOSE_FAMILY};
use crate::layout::Layout;
use crate::plan::{CopyPlan, Cuts};
use crate::runtime::submit::Drive;
use crate::runtime::timing::Timer;
use crate::strided::Strided;
use crate::tune::Tuner;

/// The most elements a transpose tuning run copies on a GPU (a piece larger than its L2).
const GPU_TUNE_COPY_ELEMENTS: usize = 1 << 24;

/// The largest piece of a transpose a CPU adapter times: 2^22 elements (8-16 MiB a side, past a
/// CPU's L2 and most of its L3). On pieces of 2^20 (TUNE_ELEMENTS), which a 32 MiB L3 holds,
/// lavapipe's tuner took 16 x 16 blocks for NCHW -> NHWC of [32, 256, 56, 56] f16 about as
/// often as 32 x 32, and 16 x 16 ran 0.74 of the copy kernel on the whole tensor against 0.86.
const CPU_TUNE_COPY_ELEMENTS: usize = 1 << 22;

impl GpuContext {
    /// The copy path for `plan`: `path` when forced, else the plan's class with the tuned (or
    /// default) transpose kernel. `None` for an empty plan.
    pub(crate) fn copy_choice(&self, plan: &CopyPlan, dst: DType, src: DType, buffer_copy: bool, path: CopyPath) -> Option<CopyPath> {
        if path != CopyPath::Auto {
            return Some(path);
        }
        let r = &self.rt.report;
        copy::auto_path(r, plan, dst, src, buffer_copy, |c| self.tuner.get(TRANSPOSE_FAMILY, c).unwrap_or_else(|| copy::transpose_default(r, c)))
    }

    /// The convolution kernel: `kernel` when forced, else the tuned (or default) one.
    pub(crate) fn conv_choice(&self, class: &ConvClass, out: &Layout, kernel: ConvKernel) -> ConvKernel {
        match kernel {
            ConvKernel::Auto => self.tuner.get(CONV_FAMILY, class).unwrap_or_else(|| conv_default(self.rt.report.device_type, class, out.strides()[1] == 1 && out.shape()[1] > 1)),
            k => k,
        }
    }

    /// The kernel that `Batch::conv2d_out(input, weight, bias, options, out)`
    /// records now: the tuned kernel of the call's shape class, or the adapter's default while
    /// the class is not tuned; `None` for an empty output, where the convolution records
    /// nothing. Checks the operands' shapes and types and the output's shape and type as the
    /// convolution does (not the overlaps or the tensors' contexts: nothing is recorded).
    pub fn conv2d_choice(&self, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv2dOptions, out: &DeviceTensor) -> Result<Option<ConvKernel>> {
        self.conv2d_class("conv2d_choice", out, input, weight, bias, options).map(|c| c.map(|class| self.conv_choice(&class, out.layout(), ConvKernel::Auto)))
    }

    /// The adapter's default kernel for this convolution: what [`GpuContext::conv2d_choice`]
    /// gives while the call's class has no kept choice (measured or loaded). The same checks;
    /// `None` for an empty output.
    pub fn conv2d_default(&self, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv2dOptions, out: &DeviceTensor) -> Result<Option<ConvKernel>> {
        let cl = |o: &Layout| o.strides()[1] == 1 && o.shape()[1] > 1;
        self.conv2d_class("conv2d_default", out, input, weight, bias, options).map(|c| c.map(|class| conv_default(self.rt.report.device_type, &class, cl(out.layout()))))
    }

    fn conv2d_class(&self, op: &'static str, out: &DeviceTensor, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv2dOptions) -> Result<Option<ConvClass>> {
        let g = conv2d_shape(input.layout(), weight.layout(), bias.map(|b| b.layout()), [Some(input.dtype()), Some(weight.dtype()), bias.map(|b| b.dtype())], options)?;
        crate::gpu::conv::check_output(op, out, &g)?;
        if out.numel() == 0 {
            return Ok(None);
        }
        Ok(Some(conv_class(&self.rt.report, &g, options, input.layout(), out.layout())))
    }

    /// The kernel path `dst.copy_(src)` takes by default, with no kept choice for its class
    /// (what a batched transpose runs before, or without, tuning); `None` where nothing is
    /// copied, or where a converting copy runs as the elementwise `to` (every converting copy
    /// but a converting batched transpose between two buffers). The checks of `copy_`.
    pub fn copy_default(&self, dst: &DeviceTensor, src: &DeviceTensor) -> Result<Option<CopyPath>> {
        let same = dst.shares_storage(src);
        let Some(plan) = check_copy(dst.layout(), dst.dtype(), src.layout(), src.dtype(), same)? else { return Ok(None) };
        if copy::converts_as_elementwise(&plan, dst.dtype(), src.dtype(), same) {
            return Ok(None);
        }
        let r = &self.rt.report;
        Ok(copy::auto_path(r, &plan, dst.dtype(), src.dtype(), src.buffer().usage().contains(wgpu::BufferUsages::COPY_SRC) && dst.buffer().usage().contains(wgpu::BufferUsages::COPY_DST), |c| copy::transpose_default(r, c)))
    }

    /// Measures the transpose kernels for the shape class of `dst.copy_(src)` unless it is
    /// tuned already (or is no batched transpose), on scratch buffers holding a representative
    /// piece of the plan (at most 2^22 elements on CPU adapters, 2^24 on GPUs). Returns whether
    /// it measured.
    pub async fn tune_copy_async(&self, dst: &DeviceTensor, src: &DeviceTensor) -> Result<bool> {
        self.tune_copy_with(dst, src, Drive::Poll).await
    }

    /// [`GpuContext::tune_copy_async`], blocking (native only).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn tune_copy(&self, dst: &DeviceTensor, src: &DeviceTensor) -> Result<bool> {
        pollster::block_on(self.tune_copy_with(dst, src, Drive::Wait))
    }

    async fn tune_copy_with(&self, dst: &DeviceTensor, src: &DeviceTensor, drive: Drive) -> Result<bool> {
        self.rt.probe("tune")?;
        let Some(plan) = check_copy(dst.layout(), dst.dtype(), src.layout(), src.dtype(), dst.shares_storage(src))? else { return Ok(false) };
        let r = &self.rt.report;
        let Some(class) = copy::transpose_class(r, &plan, dst.dtype(), src.dtype()) else { return Ok(false) };
        if self.tuner.get::<_, CopyPath>(TRANSPOSE_FAMILY, &class).is_some() {
            return Ok(false);
        }
        // On a GPU a piece its last-level cache holds times the cache, not the memory the whole
        // copy streams through (an H200, whose L2 holds 50 MiB, tuned NHWC -> NCHW of
        // [32, 256, 56, 56] on one 3 MiB image to a kernel 1.4x slower on the whole tensor than
        // the default), so GPUs time pieces of up to 2^24 elements; CPU adapters, which time
        // slowly, pieces of CPU_TUNE_COPY_ELEMENTS.
        let most = if r.device_type == wgpu::DeviceType::Cpu { CPU_TUNE_COPY_ELEMENTS } else { GPU_TUNE_COPY_ELEMENTS };
        let piece = plan.pieces(Cuts::OUTERMOST, |p| p.numel() <= most).ok().and_then(|v| v.into_iter().next()).unwrap_or_else(|| plan.clone());
        let Some(((dlo, dhi), (slo, shi))) = piece.spans() else { return Ok(false) };
        // Keep the offsets' alignment (the vec4 kernels need multiples of 4 elements).
        let (dlo, slo) = (dlo / 16 * 16, slo / 16 * 16);
        let piece = piece.rebased(&[dlo, slo]);
        let dtype = dst.dtype();
        let es = dtype.size() as u64;
        let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST;
        // Each run's recording holds the scratch buffers, so that they return to the pool only
        // when its work is done, also if this future is dropped half-way.
        let (d, s) = self.rt.scoped("tune", || Ok((Arc::new(self.rt.buffer("tune", (dhi - dlo + 1) as u64 * es, usage)?), Arc::new(self.rt.buffer("tune", (shi - slo + 1) as u64 * es, usage)?))))?;
        let timer = Timer::new(&self.rt)?;
        let candidates = copy::transpose_candidates(&class);
        let best = Tuner::measure(&timer, &candidates, drive, |path, rec| {
            let prepared = copy::prepare(r, &piece, dtype, dtype, path)?;
            rec.hold(d.clone());
            rec.hold(s.clone());
            copy::record(&self.rt, rec, prepared, d.buffer(), s.buffer())
        })
        .await?;
        // Nothing measured (no candidate could be timed): keep no choice, the default runs.
        let Some(best) = best else { return Ok(false) };
        self.tuner.set(TRANSPOSE_FAMILY, &class, &best);
        Ok(true)
    }

    /// Measures the convolution kernels (`conv_candidates`) for the shape class of this
    /// convolution (into an output of `output_format`, or the input's) unless it is tuned
    /// already: each kernel convolves the real input (read only; its first images, up to
    /// `TUNE_ELEMENTS` (2^20) output elements, at least one image) into a scratch output. Returns
    /// whether it measured.
    pub async fn tune_conv2d_async(&self, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv2dOptions) -> Result<bool> {
        self.tune_conv_with(input, weight, bias, options, Drive::Poll).await
    }

    /// [`GpuContext::tune_conv2d_async`], blocking (native only).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn tune_conv2d(&self, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv2dOptions) -> Result<bool> {
        pollster::block_on(self.tune_conv_with(input, weight, bias, options, Drive::Wait))
    }

    /// [`GpuContext::tune_conv2d_async`] of a 1x1 convolution.
    pub async fn tune_conv1x1_async(&self, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv1x1Options) -> Result<bool> {
        conv1x1_shape(input.layout(), weight.layout(), bias.map(|b| b.layout()), [None; 3], options)?;
        self.tune_conv_with(input, weight, bias, options, Drive::Poll).await
    }

    /// [`GpuContext::tune_conv1x1_async`], blocking (native only).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn tune_conv1x1(&self, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv1x1Options) -> Result<bool> {
        conv1x1_shape(input.layout(), weight.layout(), bias.map(|b| b.layout()), [None; 3], options)?;
        pollster::block_on(self.tune_conv_with(input, weight, bias, options, Drive::Wait))
    }

    async fn tune_conv_with(&self, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv2dOptions, drive: Drive) -> Result<bool> {
        let g = conv2d_shape(input.layout(), weight.layout(), bias.map(|b| b.layout()), [Some(input.dtype()), Some(weight.dtype()), bias.map(|b| b.dtype())], options)?;
        let out_layout = Layout::with_format(&[g.n, g.k, g.oh, g.ow], g.format)?;
        self.tune_conv_into(&out_layout, input, weight, bias, options, &g, drive).await
    }

    /// Measures the kernels for a convolution into an output laid out as `out` (only its
    /// strides and offset matter) unless its class is tuned already.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn tune_conv_into(&self, out: &Layout, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv2dOptions, g: &Conv2dShape, drive: Drive) -> Result<bool> {
        self.rt.probe("tune")?;
        let class = conv_class(&self.rt.report, g, options, input.layout(), out);
        if g.n * g.k * g.oh * g.ow == 0 || self.tuner.get::<_, ConvKernel>(CONV_FAMILY, &class).is_some() {
            return Ok(false);
        }
        let nt = tune_images(g);
        let first = input.layout().narrow(0, 0, nt)?;
        // A scratch output with the strides of `out` within an image, images one after another.
        let os = out.strides();
        let span = (1..4).map(|d| (out.shape()[d].max(1) - 1) * os[d].unsigned_abs()).sum::<usize>() + 1;
        let min_offset: isize = (1..4).map(|d| if os[d] < 0 { -(os[d]) * (out.shape()[d].max(1) as isize - 1) } else { 0 }).sum();
        let dst = Layout::as_strided(&[nt, g.k, g.oh, g.ow], &[span as isize, os[1], os[2], os[3]], min_offset as usize, nt * span)?;
        let scratch = Arc::new(self.rt.scoped("tune", || self.rt.buffer("tune", (nt * span) as u64 * 4, wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST))?);
        let g1 = Conv2dShape { n: nt, ..g.clone() };
        let timer = Timer::new(&self.rt)?;
        let candidates: Vec<ConvKernel> = class.kernels.iter().map(|(k, _)| *k).collect();
        let best = Tuner::measure(&timer, &candidates, drive, |kernel, rec| {
            let (x, w) = (View { buffer: input.buffer(), layout: &first }, view(weight));
            rec.hold(scratch.clone());
            for t in [Some(input), Some(weight), bias].into_iter().flatten() {
                rec.hold(t.storage());
            }
            crate::gpu::conv::record(&self.rt, rec, &ConvCall { op: "tune", out: View { buffer: scratch.buffer(), layout: &dst }, input: x, weight: w, bias: bias.map(view), options, g: &g1, kernel, residual: None })
        })
        .await?;
        let Some(best) = best else { return Ok(false) };
        self.tuner.set(CONV_FAMILY, &class, &best);
        Ok(true)
    }
}

/// A device tensor as a kernel operand.
fn view(t: &DeviceTensor) -> View<'_> {
    View { buffer: t.buffer(), layout: t.layout() }
}
