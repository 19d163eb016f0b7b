//! The kernel families' tuning inputs (classes, candidates, what a measurement records) and
//! the context's tuning calls. Measuring happens only here, outside any recording.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::conv::{conv1x1_shape, conv2d_shape, Conv1x1Options, Conv2dOptions, Conv2dShape};
use crate::dtype::DType;
use crate::error::Result;
use crate::gpu::context::GpuContext;
use crate::gpu::tensor::DeviceTensor;
use crate::host::check_copy;
use crate::kernels::conv::{self, ConvKernel, View};
use crate::kernels::copy::{self, CopyPath, TRANSPOSE_FAMILY};
use crate::layout::Layout;
use crate::plan::{CopyPlan, Cuts};
use crate::runtime::submit::Drive;
use crate::runtime::timing::Timer;
use crate::runtime::AdapterReport;
use crate::strided::Strided;
use crate::tune::Tuner;

/// The most elements a transpose tuning run copies, and the most output elements a
/// convolution tuning run writes (one image of the batch when a single image holds more).
pub const TUNE_ELEMENTS: usize = 1 << 20;

/// How many images of a convolution's batch the tuner convolves: the whole batch, or as many
/// images as keep the output within [`TUNE_ELEMENTS`] (at least one). How fast a kernel is
/// depends on how much work one dispatch has to spread over the adapter's cores, so the
/// measurement runs at the call's size, and the class records it.
fn tune_images(g: &Conv2dShape) -> usize {
    g.n.min(TUNE_ELEMENTS / g.k.saturating_mul(g.oh).saturating_mul(g.ow).max(1)).max(1)
}

/// The tuner's name for the convolution family.
pub(crate) const CONV_FAMILY: &str = "conv2d";

/// A convolution shape class: the candidate kernels with the vec4 paths each gets, the kernel
/// window, and the magnitudes of the channels per group, output channels per group and output
/// pixels of the images a tuning run convolves.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ConvClass {
    /// The candidates ([`conv_candidates`]) and, for each, (vec4 input, vec4 output).
    pub kernels: Vec<(ConvKernel, (bool, bool))>,
    /// floor(log2) of C/groups, K/groups and the output pixels of the images the tuner
    /// convolves (OH*OW times the batch, or as much of it as a tuning run takes).
    pub log2: [u32; 3],
    /// kh, kw, sh, sw, dh, dw.
    pub window: [usize; 6],
    /// Whether the convolution is depthwise (groups == C).
    pub depthwise: bool,
}

/// The kernels the tuner compares for a convolution on the adapter of `report`: on a CPU
/// adapter every eligible kernel it runs, elsewhere the GPU-shaped ones only (see
/// [`ConvKernel::gpu_shaped`]). Eligibility is [`ConvKernel::eligible`] and
/// [`ConvKernel::runs_on`], as for forced kernels.
pub fn conv_candidates(report: &AdapterReport, g: &Conv2dShape, o: &Conv2dOptions) -> Vec<ConvKernel> {
    let cpu = report.device_type == wgpu::DeviceType::Cpu;
    ConvKernel::ALL.into_iter().filter(|k| (cpu || k.gpu_shaped()) && k.eligible(g, o).is_ok() && k.runs_on(report).is_ok()).collect()
}

/// The class of a convolution of `g` from `input` into `out` on the adapter of `report`.
pub(crate) fn conv_class(report: &AdapterReport, g: &Conv2dShape, o: &Conv2dOptions, input: &Layout, out: &Layout) -> ConvClass {
    let log2 = |v: usize| usize::BITS - 1 - v.max(1).leading_zeros();
    let kernels = conv_candidates(report, g, o).into_iter().map(|k| (k, k.vectors(g, o, input.strides(), out.strides(), input.offset() as isize, out.offset() as isize, g.n))).collect();
    ConvClass {
        kernels,
        log2: [log2(g.c / o.groups), log2(g.k / o.groups), log2(tune_images(g).saturating_mul(g.oh).saturating_mul(g.ow))],
        window: [g.kh, g.kw, o.stride.0, o.stride.1, o.dilation.0, o.dilation.1],
        depthwise: o.groups == g.c && g.c > 1,
    }
}

/// The convolution kernel used before (or without) tuning: the depthwise kernel for a depthwise
/// convolution; on a CPU the register-blocked kernel that moves both operands as vec4 words
/// (else the pixel-vectorized one); elsewhere the GEMM in the output's orientation.
fn conv_default(device_type: wgpu::DeviceType, c: &ConvClass, channels_last_out: bool) -> ConvKernel {
    let has = |k: ConvKernel| c.kernels.iter().any(|(kk, _)| *kk == k);
    if has(ConvKernel::DepthwiseNchw) {
        return if channels_last_out { ConvKernel::DepthwiseNhwc } else { ConvKernel::DepthwiseNchw };
    }
    if device_type == wgpu::DeviceType::Cpu {
        return if c.kernels.contains(&(ConvKernel::Nhwc, (true, true))) { ConvKernel::Nhwc } else { ConvKernel::Nchw };
    }
    if channels_last_out {
        ConvKernel::GemmNhwc
    } else {
        ConvKernel::GemmNchw
    }
}

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
    pub fn conv2d_choice(&self, out: &DeviceTensor, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv2dOptions) -> Result<Option<ConvKernel>> {
        let g = conv2d_shape(input.layout(), weight.layout(), bias.map(|b| b.layout()), [Some(input.dtype()), Some(weight.dtype()), bias.map(|b| b.dtype())], options)?;
        crate::gpu::conv::check_output("conv2d_choice", out, &g)?;
        if out.numel() == 0 {
            return Ok(None);
        }
        let class = conv_class(&self.rt.report, &g, options, input.layout(), out.layout());
        Ok(Some(self.conv_choice(&class, out.layout(), ConvKernel::Auto)))
    }

    /// Measures the transpose kernels for the shape class of `dst.copy_(src)` unless it is
    /// tuned already (or is no batched transpose), on scratch buffers holding a representative
    /// piece of the plan (at most [`TUNE_ELEMENTS`] elements). Returns whether it measured.
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
        let piece = plan.pieces(Cuts::OUTERMOST, |p| p.numel() <= TUNE_ELEMENTS).ok().and_then(|v| v.into_iter().next()).unwrap_or_else(|| plan.clone());
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
        let best = Tuner::measure(&timer, &candidates, drive, |path, enc, keep| {
            let prepared = copy::prepare(r, &piece, dtype, dtype, path)?;
            keep.hold(d.clone());
            keep.hold(s.clone());
            copy::record(&self.rt, enc, keep, prepared, d.buffer(), s.buffer())
        })
        .await?;
        // Nothing measured (no candidate could be timed): keep no choice, the default runs.
        let Some(best) = best else { return Ok(false) };
        self.tuner.set(TRANSPOSE_FAMILY, &class, &best);
        Ok(true)
    }

    /// Measures the convolution kernels ([`conv_candidates`]) for the shape class of this
    /// convolution (into an output of `output_format`, or the input's) unless it is tuned
    /// already: each kernel convolves the real input (read only; its first images, up to
    /// [`TUNE_ELEMENTS`] output elements, at least one image) into a scratch output. Returns
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
        let class = conv_class(&self.rt.report, g, options, input.layout(), out);
        if g.n * g.k * g.oh * g.ow == 0 || self.tuner.get::<_, ConvKernel>(CONV_FAMILY, &class).is_some() {
            return Ok(false);
        }
        self.rt.probe("tune")?;
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
        let best = Tuner::measure(&timer, &candidates, drive, |kernel, enc, keep| {
            let (x, w) = (View { buffer: input.buffer(), layout: &first }, view(weight));
            keep.hold(scratch.clone());
            for t in [Some(input), Some(weight), bias].into_iter().flatten() {
                keep.hold(t.storage());
            }
            conv::record(&self.rt, enc, keep, View { buffer: scratch.buffer(), layout: &dst }, x, w, bias.map(view), options, &g1, kernel)
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
