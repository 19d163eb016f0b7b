//! The kernel families' tuning inputs (classes, candidates, what a measurement records) and
//! the context's tuning calls. Measuring happens only here, outside any recording.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::conv::{conv1x1_shape, Conv1x1Options, Conv1x1Shape};
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
use crate::strided::Strided;
use crate::tune::Tuner;

/// The most elements a transpose tuning run copies.
pub const TUNE_ELEMENTS: usize = 1 << 20;

/// The tuner's name for the 1x1 convolution family.
pub(crate) const CONV_FAMILY: &str = "conv1x1";

/// A convolution shape class: the vec4 paths each kernel gets, and the magnitudes of the
/// channels per group, output channels per group and output pixels per image.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ConvClass {
    /// For each of [`CONV_CANDIDATES`]: (vec4 input, vec4 output).
    pub vectors: [(bool, bool); 4],
    /// floor(log2) of C/groups, K/groups and OH*OW.
    pub log2: [u32; 3],
    /// Whether stride and padding are trivial.
    pub direct: bool,
}

/// The kernels the tuner compares.
pub const CONV_CANDIDATES: [ConvKernel; 4] = [ConvKernel::Nchw, ConvKernel::Nhwc, ConvKernel::NchwTiled, ConvKernel::NhwcTiled];

/// The class of a convolution of `g` from `input` into `out`.
pub(crate) fn conv_class(g: &Conv1x1Shape, options: &Conv1x1Options, input: &Layout, out: &Layout) -> ConvClass {
    let log2 = |v: usize| usize::BITS - 1 - v.max(1).leading_zeros();
    let vectors = CONV_CANDIDATES.map(|k| k.vectors(g, options, input.strides(), out.strides(), input.offset() as isize, out.offset() as isize, g.n));
    ConvClass { vectors, log2: [log2(g.c / options.groups), log2(g.k / options.groups), log2(g.oh * g.ow)], direct: options.stride == (1, 1) && options.padding == (0, 0) }
}

/// The convolution kernel used before (or without) tuning: the channel-vectorized kernel where
/// it moves both operands as vec4 words, else the pixel-vectorized one.
fn conv_default(c: &ConvClass) -> ConvKernel {
    if c.vectors[1] == (true, true) {
        ConvKernel::Nhwc
    } else {
        ConvKernel::Nchw
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
    pub(crate) fn conv_choice(&self, class: &ConvClass, kernel: ConvKernel) -> ConvKernel {
        match kernel {
            ConvKernel::Auto => self.tuner.get(CONV_FAMILY, class).unwrap_or_else(|| conv_default(class)),
            k => k,
        }
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
        let ((dlo, dhi), (slo, shi)) = piece.spans();
        // Keep the offsets' alignment (the vec4 kernels need multiples of 4 elements).
        let (dlo, slo) = (dlo / 16 * 16, slo / 16 * 16);
        let piece = piece.rebased(dlo, slo);
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

    /// Measures the convolution kernels for the shape class of this convolution (into an
    /// output of `output_format`, or the input's) unless it is tuned already: each kernel
    /// convolves one image of the real input (read only) into a scratch output. Returns whether
    /// it measured.
    pub async fn tune_conv1x1_async(&self, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv1x1Options) -> Result<bool> {
        self.tune_conv_with(input, weight, bias, options, Drive::Poll).await
    }

    /// [`GpuContext::tune_conv1x1_async`], blocking (native only).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn tune_conv1x1(&self, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv1x1Options) -> Result<bool> {
        pollster::block_on(self.tune_conv_with(input, weight, bias, options, Drive::Wait))
    }

    async fn tune_conv_with(&self, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv1x1Options, drive: Drive) -> Result<bool> {
        let g = conv1x1_shape(input.layout(), weight.layout(), bias.map(|b| b.layout()), [Some(input.dtype()), Some(weight.dtype()), bias.map(|b| b.dtype())], options)?;
        let out_layout = Layout::with_format(&[g.n, g.k, g.oh, g.ow], g.format)?;
        self.tune_conv_into(&out_layout, input, weight, bias, options, &g, drive).await
    }

    /// Measures the kernels for a convolution into an output laid out as `out` (only its
    /// strides and offset matter) unless its class is tuned already.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn tune_conv_into(&self, out: &Layout, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv1x1Options, g: &Conv1x1Shape, drive: Drive) -> Result<bool> {
        let class = conv_class(g, options, input.layout(), out);
        if g.n * g.k * g.oh * g.ow == 0 || self.tuner.get::<_, ConvKernel>(CONV_FAMILY, &class).is_some() {
            return Ok(false);
        }
        self.rt.probe("tune")?;
        let one = input.layout().narrow(0, 0, 1)?;
        // A scratch output with the same strides as `out` within one image.
        let os = out.strides();
        let span = (1..4).map(|d| (out.shape()[d].max(1) - 1) * os[d].unsigned_abs()).sum::<usize>() + 1;
        let min_offset: isize = (1..4).map(|d| if os[d] < 0 { -(os[d]) * (out.shape()[d].max(1) as isize - 1) } else { 0 }).sum();
        let dst = Layout::as_strided(&[1, g.k, g.oh, g.ow], &[0, os[1], os[2], os[3]], min_offset as usize, span)?;
        let scratch = Arc::new(self.rt.scoped("tune", || self.rt.buffer("tune", span as u64 * 4, wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST))?);
        let g1 = Conv1x1Shape { n: 1, ..g.clone() };
        let timer = Timer::new(&self.rt)?;
        let best = Tuner::measure(&timer, &CONV_CANDIDATES, drive, |kernel, enc, keep| {
            
            let (x, w) = (View { buffer: input.buffer(), layout: &one }, view(weight));
            keep.hold(scratch.clone());
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
