//! The copy family on the device: `copy_` on tensors and in batches, the kernel path each
//! copy takes (forced, kept by the tuner, or the adapter's default) and the transpose kernels'
//! tuning. The checks are the host's (`crate::copy::check_copy`); the kernels are in
//! `kernels/copy/`.

use std::sync::Arc;

use crate::copy::{check_copy, reads_from_copy};
use crate::dtype::DType;
use crate::elementwise::resolve::{Input, Target};
use crate::elementwise::Op;
use crate::error::{Error, Result};
use crate::gpu::batch::{read_copy, Batch};
use crate::gpu::context::GpuContext;
use crate::gpu::tensor::DeviceTensor;
use crate::kernels::copy::{self, CopyPath, Transpose};
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

impl DeviceTensor {
    /// `Tensor.copy_(src)` on the device: `src` broadcast to this view's shape, converted to
    /// this view's type (every pair of types converts, bit for bit as the CPU reference does:
    /// [`crate::dtype::cast_bits`]). The same checks as [`crate::HostTensor::copy_`]; on error nothing is dispatched. The
    /// copy is submitted (or held back under `SubmitPolicy::Deferred`), never waited for. A batched transpose runs the kernel kept for its shape
    /// class, else the adapter's default; it measures the candidates first only under
    /// [`crate::TuningPolicy::OnFirstCall`] (native backends; on the web, call
    /// [`GpuContext::tune_copy_async`]).
    pub fn copy_(&self, src: &DeviceTensor) -> Result<()> {
        self.copy_with(src, CopyPath::Auto)
    }

    /// [`DeviceTensor::copy_`] through a forced kernel path (for tests and benchmarks).
    pub fn copy_with(&self, src: &DeviceTensor, path: CopyPath) -> Result<()> {
        // Loss is found by the tuning's and the submission's probes.
        let ctx = self.context();
        #[cfg(not(target_arch = "wasm32"))]
        if path == CopyPath::Auto && ctx.tunes_on_call() && src.context().same_device(ctx) {
            ctx.tune_copy(self, src)?;
        }
        let mut batch = ctx.batch();
        batch.copy_with(self, src, path)?;
        batch.submit_eager("copy_")?;
        Ok(())
    }
}

impl Batch<'_> {
    /// A new tensor of `src`'s shape in `dtype` and `format` for `op` (named in its errors),
    /// and the recorded copy of `src` into it (converting as `copy_` does).
    pub(crate) fn copied(&mut self, op: &'static str, src: &DeviceTensor, dtype: crate::dtype::DType, format: crate::layout::MemoryFormat) -> Result<DeviceTensor> {
        let t = DeviceTensor::empty_for(op, self.context(), src.shape(), dtype, format)?;
        self.copy_(&t, src)?;
        Ok(t)
    }

    /// Records `dst.copy_(src)`.
    pub fn copy_(&mut self, dst: &DeviceTensor, src: &DeviceTensor) -> Result<()> {
        self.copy_with(dst, src, CopyPath::Auto)
    }

    /// Records `dst.copy_(src)` through a forced kernel path. Bad input, and a forced path that
    /// does not apply, are errors and nothing is recorded.
    pub fn copy_with(&mut self, dst: &DeviceTensor, src: &DeviceTensor, path: CopyPath) -> Result<()> {
        self.whole(|b| b.record_copy(dst, src, path))
    }

    fn record_copy(&mut self, dst: &DeviceTensor, src: &DeviceTensor, path: CopyPath) -> Result<()> {
        const OP: &str = "copy_";
        self.check_context(OP, &[dst, src])?;
        let same = dst.shares_storage(src);
        if reads_from_copy(dst.layout(), dst.dtype(), src.layout(), src.dtype(), same) {
            let tmp = self.copied(OP, src, src.dtype(), crate::layout::MemoryFormat::Contiguous)?;
            return self.record_copy(dst, &tmp, path);
        }
        let Some(plan) = check_copy(dst.layout(), dst.dtype(), src.layout(), src.dtype(), same)? else { return Ok(()) };
        if path == CopyPath::Auto && copy::converts_as_elementwise(&plan, dst.dtype(), src.dtype(), same) {
            // A converting copy is the elementwise `to` (its rows kernel moves whole words
            // where the plan's rows allow, its general kernel anything else), except a batched
            // transpose between two buffers, which the converting transpose kernel moves.
            let src = src.broadcast_to(dst.shape())?;
            return self.elementwise(Op::To(dst.dtype()), &[Input::Tensor(&src)], Target::Out(dst)).map(drop);
        }
        if same && reads_view_copy(src) {
            let tmp = self.copied(OP, src, src.dtype(), crate::layout::MemoryFormat::Contiguous)?;
            return self.record_copy(dst, &tmp, path);
        }
        let ctx = self.context().clone();
        let buffer_copy = src.buffer().usage().contains(wgpu::BufferUsages::COPY_SRC) && dst.buffer().usage().contains(wgpu::BufferUsages::COPY_DST);
        if path == CopyPath::BufferCopy && !buffer_copy {
            return Err(Error::unsupported(OP, format!("a buffer copy needs COPY_SRC on the source and COPY_DST on the destination, got {:?} and {:?}", src.buffer().usage(), dst.buffer().usage())));
        }
        let Some(path) = ctx.copy_choice(&plan, dst.dtype(), src.dtype(), buffer_copy, path) else { return Ok(()) };
        let prepared = copy::prepare(&ctx.rt.report, &plan, dst.dtype(), src.dtype(), path)?;
        let rec = self.parts(OP)?;
        let rt = &ctx.rt;
        rec.hold_shared(dst.storage());
        rec.hold_shared(src.storage());
        let d = dst.buffer();
        if !same {
            return copy::record(rt, rec, prepared, d, src.buffer());
        }
        // One buffer cannot be bound for reading and writing at once: read a copy.
        let tmp = read_copy(rt, rec, OP, src.buffer())?;
        copy::record(rt, rec, prepared, d, &tmp)
    }
}

/// Whether `dst.copy_(src)` between disjoint views of one buffer (a plain copy, not the
/// elementwise `to`) reads a contiguous copy of the source view (a dispatch into a
/// temporary): unless the whole buffer can be copied for little more than the view's bytes
/// (`read_copy`, which needs COPY_SRC), so that a few elements of a large caller's buffer cost
/// a few bytes.
fn reads_view_copy(src: &DeviceTensor) -> bool {
    let span = src.layout().span().map_or(0, |(lo, hi)| (hi - lo + 1) as u64 * src.dtype().size() as u64);
    !src.buffer().usage().contains(wgpu::BufferUsages::COPY_SRC) || src.buffer().size() > 2 * span + (1 << 20)
}

/// The plan `dst.copy_(src)` runs, from `plan` (checked with `same`, whether the two share a
/// buffer): where the source is read from a contiguous copy of its view
/// ([`reads_view_copy`]), the copy from that (a pooled buffer), and whether it is so staged;
/// `None` where nothing is copied.
fn staged_plan(dst: &DeviceTensor, src: &DeviceTensor, plan: crate::plan::CopyPlan, same: bool) -> Result<Option<(crate::plan::CopyPlan, bool)>> {
    if !(same && reads_view_copy(src)) {
        return Ok(Some((plan, false)));
    }
    Ok(check_copy(dst.layout(), dst.dtype(), &crate::layout::Layout::contiguous(src.shape())?, src.dtype(), false)?.map(|p| (p, true)))
}

/// The copy path of a call, and the transpose kernels' tuning.
impl GpuContext {
    /// The copy path for `plan`: `path` when forced, else the plan's class with the tuned (or
    /// default) transpose kernel. `None` for an empty plan.
    pub(crate) fn copy_choice(&self, plan: &CopyPlan, dst: DType, src: DType, buffer_copy: bool, path: CopyPath) -> Option<CopyPath> {
        if path != CopyPath::Auto {
            return Some(path);
        }
        let r = &self.rt.report;
        copy::auto_path(r, plan, dst, src, buffer_copy, |c| self.choice::<Transpose>(c, || copy::transpose_default(r, c)))
    }

    /// The kernel path `dst.copy_(src)` takes by default, with no kept choice for its class
    /// (what a batched transpose runs before, or without, tuning); `None` where nothing is
    /// copied, or where a converting copy runs as the elementwise `to` (every converting copy
    /// but a converting batched transpose between two buffers). The checks of `copy_`.
    pub fn copy_default(&self, dst: &DeviceTensor, src: &DeviceTensor) -> Result<Option<CopyPath>> {
        let same = dst.shares_storage(src);
        // A flipped source overlapping the destination is read from a contiguous copy of it
        // (`reads_from_copy`): the copy into `dst` is from that.
        let staged;
        let (src_layout, same, src_copies) = match reads_from_copy(dst.layout(), dst.dtype(), src.layout(), src.dtype(), same) {
            true => {
                staged = crate::layout::Layout::contiguous(src.shape())?;
                // The staged copy is a pooled buffer, which buffer copies may read.
                (&staged, false, true)
            }
            false => (src.layout(), same, src.buffer().usage().contains(wgpu::BufferUsages::COPY_SRC)),
        };
        let Some(plan) = check_copy(dst.layout(), dst.dtype(), src_layout, src.dtype(), same)? else { return Ok(None) };
        if copy::converts_as_elementwise(&plan, dst.dtype(), src.dtype(), same) {
            return Ok(None);
        }
        // Disjoint views of one buffer whose source is read from a contiguous copy of it: the
        // copy into `dst` is from that (a pooled buffer).
        let Some((plan, staged)) = staged_plan(dst, src, plan, same)? else { return Ok(None) };
        let src_copies = src_copies || staged;
        let r = &self.rt.report;
        Ok(copy::auto_path(r, &plan, dst.dtype(), src.dtype(), src_copies && dst.buffer().usage().contains(wgpu::BufferUsages::COPY_DST), |c| copy::transpose_default(r, c)))
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
        self.ready_to_tune(&[dst.context(), src.context()])?;
        // A flipped source overlapping the destination is read from a copy (`reads_from_copy`):
        // nothing of this call's own to measure.
        if reads_from_copy(dst.layout(), dst.dtype(), src.layout(), src.dtype(), dst.shares_storage(src)) {
            return Ok(false);
        }
        let same = dst.shares_storage(src);
        let Some(plan) = check_copy(dst.layout(), dst.dtype(), src.layout(), src.dtype(), same)? else { return Ok(false) };
        // Disjoint views of one buffer whose source is read from a contiguous copy of it: the
        // plan the call runs is the copy from that.
        let Some((plan, _)) = staged_plan(dst, src, plan, same)? else { return Ok(false) };
        let r = &self.rt.report;
        let Some(class) = copy::transpose_class(r, &plan, dst.dtype(), src.dtype()) else { return Ok(false) };
        if self.tuner.get::<Transpose>(&class).is_some() {
            return Ok(false);
        }
        // On a GPU a piece its last-level cache holds times the cache, not the memory the whole
        // copy streams through (an H200, whose L2 holds 50 MiB, tuned NHWC -> NCHW of
        // [32, 256, 56, 56] on one 3 MiB image to a kernel 1.4x slower on the whole tensor than
        // the default), so GPUs time pieces of up to 2^24 elements; CPU adapters, which time
        // slowly, pieces of CPU_TUNE_COPY_ELEMENTS.
        let most = if r.device_type == wgpu::DeviceType::Cpu { CPU_TUNE_COPY_ELEMENTS } else { GPU_TUNE_COPY_ELEMENTS };
        let piece = plan.pieces(Cuts::OUTERMOST, |p| p.numel() <= most).ok().and_then(|v| v.into_iter().next()).unwrap_or(std::borrow::Cow::Borrowed(&plan));
        // The piece must admit the class's every candidate (a cut of a transposed dim may
        // leave it one column, or a size no vec4 kernel takes, or no transpose at all): else
        // the race would leave out the kernels it cannot run, and its winner would be kept for
        // the whole class. Such a class is not tuned (its default runs).
        let admits = copy::transpose_class(r, &piece, dst.dtype(), src.dtype()).is_some_and(|c| c.vec4 == class.vec4 && c.narrow == class.narrow && c.element_bytes == class.element_bytes);
        if !admits {
            return Ok(false);
        }
        let Some(((dlo, dhi), (slo, shi))) = piece.spans() else { return Ok(false) };
        // Keep the offsets' alignment (the vec4 kernels need multiples of 4 elements).
        let (dlo, slo) = (dlo / 16 * 16, slo / 16 * 16);
        let piece = piece.rebased(&[dlo, slo]);
        let dtype = dst.dtype();
        let es = dtype.size() as u64;
        let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST;
        // Each run's recording holds the scratch buffers, so that they return to the pool only
        // when its work is done, also if this future is dropped half-way.
        let Some((d, s)) = crate::tune::scratch(self.rt.scoped("tune", || Ok((Arc::new(self.rt.buffer("tune", (dhi - dlo + 1) as u64 * es, usage)?), Arc::new(self.rt.buffer("tune", (shi - slo + 1) as u64 * es, usage)?)))))? else { return Ok(false) };
        self.settle_before_measuring().await?;
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
        self.tuner.keep::<Transpose>(&class, &best);
        Ok(true)
    }
}
