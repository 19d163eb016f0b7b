//! Pooling and bilinear resampling on device tensors (the kernel is `crate::kernels::pool`).

use crate::dtype::DType;
use crate::error::Result;
use crate::gpu::batch::Batch;
use crate::gpu::tensor::DeviceTensor;
use crate::kernels::dispatch::most_that_fit;
use crate::kernels::pool::{self, PoolKernel};
use crate::pool::{adaptive_window, avg_pool2d_window, global_mean_strides, unbatched, max_pool2d_window, AvgPool2dOptions, MaxPool2dOptions, Pool2d, Window};
use crate::shape::{nearest_pieces, resize, InterpolateMode, InterpolateOptions};
use crate::layout::overlap::gcd;
use crate::strided::Strided;

impl Pool2d for DeviceTensor {
    /// Records the window kernel into a new output (and indices) and submits it, not waiting.
    fn window(&self, g: &Window) -> Result<(DeviceTensor, Option<DeviceTensor>)> {
        let ctx = self.context();
        g.check(self.layout(), self.dtype())?;
        let out = DeviceTensor::empty_for(g.op, ctx, &g.out_shape(), self.dtype(), g.format)?;
        let idx = if g.indices { Some(DeviceTensor::empty_for(g.op, ctx, &g.out_shape(), DType::I32, g.format)?) } else { None };
        let mut batch = ctx.batch();
        batch.window(g, self, &out, idx.as_ref(), PoolKernel::Auto)?;
        batch.submit_eager(g.op)?;
        Ok((out, idx))
    }
}

/// The window op `g` of `x` (built by [`crate::pool::max_pool2d_window`] and its siblings for
/// `x`'s layout) through a chosen kernel, into a new tensor (and the indices when `g.indices`)
/// in `g.format`; submitted (or held back under `SubmitPolicy::Deferred`), never waited for. A kernel that cannot run the call is
/// [`Error::Unsupported`](crate::Error::Unsupported) ([`crate::kernels::pool::classify`]'s check).
pub fn window_with(x: &DeviceTensor, g: &Window, kernel: PoolKernel) -> Result<(DeviceTensor, Option<DeviceTensor>)> {
    let ctx = x.context();
    g.check(x.layout(), x.dtype())?;
    let out = DeviceTensor::empty_for(g.op, ctx, &g.out_shape(), x.dtype(), g.format)?;
    let idx = if g.indices { Some(DeviceTensor::empty_for(g.op, ctx, &g.out_shape(), DType::I32, g.format)?) } else { None };
    let mut batch = ctx.batch();
    batch.window(g, x, &out, idx.as_ref(), kernel)?;
    batch.submit_eager(g.op)?;
    Ok((out, idx))
}

/// Pooling and bilinear resampling, recorded: the [`Pool2d`] methods (and bilinear
/// [`crate::ShapeOps::interpolate`]) with the input as the first argument, each into a new
/// tensor in the input's memory format.
impl Batch<'_> {
    /// Records `x.max_pool2d(options)` ([`Pool2d::max_pool2d`]).
    pub fn max_pool2d(&mut self, x: &DeviceTensor, options: &MaxPool2dOptions) -> Result<DeviceTensor> {
        Ok(unbatched(x, |l, t| max_pool2d_window(l, t, options, false), |x, g| self.new_window(x, g))?.0)
    }
    /// Records `x.max_pool2d_with_indices(options)` ([`Pool2d::max_pool2d_with_indices`]).
    pub fn max_pool2d_with_indices(&mut self, x: &DeviceTensor, options: &MaxPool2dOptions) -> Result<(DeviceTensor, DeviceTensor)> {
        let (y, i) = unbatched(x, |l, t| max_pool2d_window(l, t, options, true), |x, g| self.new_window(x, g))?;
        Ok((y, i.expect("indices asked for")))
    }
    /// Records `x.avg_pool2d(options)` ([`Pool2d::avg_pool2d`]).
    pub fn avg_pool2d(&mut self, x: &DeviceTensor, options: &AvgPool2dOptions) -> Result<DeviceTensor> {
        Ok(unbatched(x, |l, t| avg_pool2d_window(l, t, options), |x, g| self.new_window(x, g))?.0)
    }
    /// Records `x.adaptive_avg_pool2d(output_size)` ([`Pool2d::adaptive_avg_pool2d`]; to
    /// (1, 1) a mean).
    pub fn adaptive_avg_pool2d(&mut self, x: &DeviceTensor, output_size: (usize, usize)) -> Result<DeviceTensor> {
        if let Some(strides) = global_mean_strides(x.layout(), x.dtype(), output_size)? {
            let m = self.reduce(x, crate::reduce::ReduceOp::Mean, [-2isize, -1].into(), true, None, None, None)?.0;
            return m.as_strided(m.shape(), &strides, m.storage_offset());
        }
        Ok(unbatched(x, |l, t| adaptive_window("adaptive_avg_pool2d", l, t, output_size, false, false), |x, g| self.new_window(x, g))?.0)
    }
    /// Records `x.adaptive_max_pool2d(output_size)` ([`Pool2d::adaptive_max_pool2d`]).
    pub fn adaptive_max_pool2d(&mut self, x: &DeviceTensor, output_size: (usize, usize)) -> Result<DeviceTensor> {
        Ok(unbatched(x, |l, t| adaptive_window("adaptive_max_pool2d", l, t, output_size, true, false), |x, g| self.new_window(x, g))?.0)
    }
    /// Records `x.interpolate(options)` ([`crate::ShapeOps::interpolate`]): bilinear through
    /// the window kernel, the nearest modes as the method's copies (rows into an intermediate,
    /// then columns, or one copy of an expanded view), in order.
    pub fn interpolate(&mut self, x: &DeviceTensor, options: &InterpolateOptions) -> Result<DeviceTensor> {
        self.check_context("interpolate", &[x])?;
        let r = resize(x.layout(), x.dtype(), options)?;
        if let Some(g) = &r.bilinear {
            return Ok(self.new_window(x, g)?.0);
        }
        let (out, pieces) = nearest_pieces(x, &r, options.mode == InterpolateMode::NearestExact)?;
        // Whole or not at all: a copy that fails leaves none of the others recorded.
        self.whole(|batch| {
            for (dst, src) in &pieces {
                batch.copy_(dst, src)?;
            }
            Ok(out)
        })
    }

    fn new_window(&mut self, x: &DeviceTensor, g: &Window) -> Result<(DeviceTensor, Option<DeviceTensor>)> {
        self.check_context(g.op, &[x])?;
        let ctx = self.context().clone();
        let out = DeviceTensor::empty_for(g.op, &ctx, &g.out_shape(), x.dtype(), g.format)?;
        let idx = if g.indices { Some(DeviceTensor::empty_for(g.op, &ctx, &g.out_shape(), DType::I32, g.format)?) } else { None };
        self.window(g, x, &out, idx.as_ref(), PoolKernel::Auto)?;
        Ok((out, idx))
    }

    /// Records the window `g` of `x` into `out` (new, dense) and `idx` through `kernel`: in
    /// one dispatch, or, where the input's span, the output or the indices pass one storage
    /// binding, in runs of whole images that each fit ([`image_runs`]; a single image that
    /// does not is `Error::Limit`, from the kernel family's checks).
    pub(crate) fn window(&mut self, g: &Window, x: &DeviceTensor, out: &DeviceTensor, idx: Option<&DeviceTensor>, kernel: PoolKernel) -> Result<()> {
        let operands: Vec<&DeviceTensor> = [Some(x), Some(out), idx].into_iter().flatten().collect();
        self.check_context(g.op, &operands)?;
        g.check(x.layout(), x.dtype())?;
        // The asked kernel: `pool::record` classifies it (the automatic choice is also the
        // adapter's there).
        pool::classify(g, x.dtype(), out.layout(), kernel)?;
        let ctx = self.context().clone();
        let runs = image_runs(&ctx.rt.report, g, x)?;
        // Whole or not at all: a dispatch whose error its op's scope caught is not kept.
        self.whole(|batch| {
            for (n0, len) in runs {
                let part = |t: &DeviceTensor| if len == g.input[0] { Ok(t.clone()) } else { t.narrow(0, n0 as isize, len) };
                let (g, x, out, idx) = (Window { input: [len, g.input[1], g.input[2], g.input[3]], ..g.clone() }, part(x)?, part(out)?, idx.map(part).transpose()?);
                // A run whose output (or indices) does not start at a binding's alignment is
                // pooled into a new tensor and copied into place.
                let direct = pool::eligible(&g, x.dtype(), out.layout()).is_ok();
                let (dst, dst_idx) = if direct {
                    (out.clone(), idx.clone())
                } else {
                    let fresh = |t: DType| DeviceTensor::empty_for(g.op, &ctx, &g.out_shape(), t, g.format);
                    (fresh(x.dtype())?, idx.as_ref().map(|_| fresh(DType::I32)).transpose()?)
                };
                let rec = batch.parts(g.op)?;
                for t in [Some(&x), Some(&dst), dst_idx.as_ref()].into_iter().flatten() {
                    rec.hold_shared(t.storage());
                }
                ctx.rt.scoped(g.op, || pool::record(&ctx.rt, rec, &g, x.dtype(), x.layout(), x.buffer(), dst.layout(), dst.buffer(), dst_idx.as_ref().map(|i| i.buffer()), kernel))?;
                if !direct {
                    batch.copy_(&out, &dst)?;
                    if let (Some(i), Some(d)) = (&idx, &dst_idx) {
                        batch.copy_(i, d)?;
                    }
                }
            }
            Ok(())
        })
    }
}

/// The runs of images (first, count) the window `g` of `x` is recorded in: all of them where
/// the input's span, the output and the indices each fit one storage binding, else as many
/// as fit a run (a multiple of the images that keep each run's output at a binding's
/// alignment, [`pool::OUT_ALIGN`], where that many fit: those bind in place, the others are
/// copied into place). One image that does not fit alone is left whole (the family's checks
/// refuse it).
fn image_runs(report: &crate::runtime::AdapterReport, g: &Window, x: &DeviceTensor) -> Result<Vec<(usize, usize)>> {
    let n = g.input[0];
    let bytes = x.dtype().size() as u64;
    let per_image = (g.input[1] as u64).saturating_mul(g.out.0 as u64).saturating_mul(g.out.1 as u64);
    let max = report.max_storage_buffer_binding_size;
    // The bytes a run of `len` images binds: its input's span (with the alignment the window
    // starts at below it, and the word it ends in), its output, its indices.
    let fits = |len: usize| -> Result<bool> {
        let span = x.layout().narrow(0, 0, len)?.span().map_or(0, |(lo, hi)| (hi - lo + 1) as u64);
        let input = span.saturating_mul(bytes).saturating_add(report.min_storage_buffer_offset_alignment as u64 + 4);
        let outs = per_image.saturating_mul(len as u64);
        Ok(input <= max && outs.saturating_mul(bytes).div_ceil(4).saturating_mul(4) <= max && (!g.indices || outs.saturating_mul(4) <= max))
    };
    if n <= 1 || fits(n)? {
        return Ok(vec![(0, n)]);
    }
    // The most images a run fits (the bytes grow with the count).
    let lo = most_that_fit(0, n, fits)?;
    if lo == 0 {
        return Ok(vec![(0, n)]);
    }
    // Runs that start at an aligned output (and indices) where a whole number of such steps fit.
    let align = pool::OUT_ALIGN as usize;
    let step = |size: u64| align / gcd(align, (per_image.saturating_mul(size) % pool::OUT_ALIGN) as usize);
    let step = if g.indices { step(bytes) / gcd(step(bytes), step(4)) * step(4) } else { step(bytes) };
    let len = if lo >= step { lo / step * step } else { lo };
    Ok((0..n).step_by(len).map(|n0| (n0, len.min(n - n0))).collect())
}

