//! Batches: operations recorded into one command encoder (the crate's own, or the caller's),
//! holding every operand and temporary until the GPU has finished the work.

use crate::error::{Error, Result};
use crate::gpu::context::GpuContext;
use crate::gpu::fuse::{self, Tail};
use crate::gpu::tensor::DeviceTensor;
use crate::runtime::record::Recorder;
use crate::runtime::Runtime;
use crate::runtime::submit::{self, Submission};

/// The encoder a batch records into: the crate's own (made when the batch is submitted or
/// finished: an eager call held back never makes one), or the caller's.
enum Encoder<'e> {
    Owned,
    Borrowed(&'e mut wgpu::CommandEncoder),
}

/// Operations recorded into one command encoder. Recording never submits, waits or measures:
/// an automatic kernel choice whose shape class is not tuned yet runs the adapter's default.
///
/// A batch from [`GpuContext::batch`] owns its encoder: [`Batch::submit`] submits it, and
/// [`Batch::finish`] hands its command buffer to the caller to submit with others. A batch from
/// [`GpuContext::record_into`] records into the caller's encoder, among the caller's own
/// passes; the caller submits it. Either way every tensor the batch reads or writes, and every
/// temporary, is held until that command buffer has finished on the GPU, so dropping a tensor
/// after recording it is safe. An owned batch dropped without [`Batch::submit`] or
/// [`Batch::finish`] discards what it recorded (the tensors it returned are never written).
///
/// Every op a tensor method runs (the elementwise ops, `copy_` and the convolution; not the
/// view materializations `contiguous`, `reshape` and `to_memory_format`, which are `copy_`
/// into a new tensor) has a batch method of the same name and arguments that records it, with the tensor the method is called on as the first argument, as PyTorch's
/// function forms take it (`torch.add(x, y)`, `torch.addcmul(x, t1, t2, value=v)`):
/// `batch.add(&x, &y)` records `x.add(&y)` and returns the new tensor, `batch.add_(&x, &y)`
/// and `batch.add_out(&x, &y, &out)` write, and so for every op of
/// [`Elementwise`](crate::Elementwise) in its three forms; `batch.copy_(&dst, &src)` records
/// `dst.copy_(&src)`, `batch.conv2d(&x, &w, bias, &opts)` and `batch.conv2d_out(.., &out)`
/// the [`Conv2d`](crate::Conv2d) methods, `batch.matmul(&a, &b)`, `mm`, `bmm`, `linear`,
/// `addmm`, `addmm_act`, `matmul_out`, `linear_out` and `addmm_out` the
/// [`Matmul`](crate::Matmul) methods of those names. The elementwise methods are generated from the same
/// list of ops as the trait's, so the two cannot drift apart. This form was chosen over a
/// receiver such as `batch.on(&x).add(&y)` because it needs no adapter type, reads as
/// PyTorch's own function forms, and is the form `copy_` already had.
///
/// ```
/// use strided_wgpu::{DeviceTensor, GpuContext, Strided};
/// # let Ok(ctx) = GpuContext::new() else { return Ok(()) };
/// let x = DeviceTensor::from_slice(&ctx, &[1f32, -2., 3., -4.], &[2, 2])?;
/// let out = DeviceTensor::from_slice(&ctx, &[0f32; 4], &[2, 2])?;
/// let mut batch = ctx.batch();
/// let y = batch.mul(&x, 2.0)?;                  // y = x * 2, a new tensor
/// batch.relu_(&y)?;                             // in place
/// batch.addcmul_out(&y, &x, &x, 0.5, &out)?;   // out = y + 0.5 * x * x
/// batch.submit_and_wait()?;
/// assert_eq!(out.download()?.to_vec::<f32>()?, vec![2.5, 2.0, 10.5, 8.0]);
/// # Ok::<(), strided_wgpu::Error>(())
/// ```
#[must_use = "a batch runs nothing until it is submitted or finished (dropping one of `ctx.batch()` discards its work)"]
pub struct Batch<'e> {
    ctx: GpuContext,
    enc: Option<Encoder<'e>>,
    rec: Recorder,
    /// The last op recorded, where a captured graph may fuse it with the next (`gpu/fuse.rs`):
    /// the index of its first command and what it was.
    pub(crate) tail: Option<(usize, Tail)>,
}

impl GpuContext {
    /// Starts recording operations into a new encoder of the crate's.
    pub fn batch(&self) -> Batch<'static> {
        // Buffers of finished work return to the pool before the batch allocates.
        self.rt.reclaim();
        Batch { ctx: self.clone(), enc: Some(Encoder::Owned), rec: Recorder::default(), tail: None }
    }

    /// Starts recording operations into the caller's `encoder` (of this context's device). The
    /// operations run where they are recorded among the caller's passes, when the caller
    /// submits the encoder. End the batch ([`Batch::end`], or drop it) before finishing the
    /// encoder. Eager calls held back ([`crate::advanced::SubmitPolicy::Deferred`]) are submitted first,
    /// and those held while the batch records when it ends, so that they run before the
    /// caller's encoder, all of its work included (an eager call made while it records that
    /// reads a tensor the batch writes reads it unwritten: record that call into the batch too;
    /// an error of theirs is returned by the next call that submits).
    pub fn record_into<'e>(&self, encoder: &'e mut wgpu::CommandEncoder) -> Batch<'e> {
        self.rt.reclaim();
        self.rt.submit_held();
        Batch { ctx: self.clone(), enc: Some(Encoder::Borrowed(encoder)), rec: Recorder::default(), tail: None }
    }
}

impl Batch<'_> {
    /// The context the batch records for.
    pub fn context(&self) -> &GpuContext {
        &self.ctx
    }

    /// The recording, unless the batch has ended. Every op records through it, which ends the
    /// fusion tail of the op before (an op that leaves one sets it after recording).
    pub(crate) fn parts(&mut self, op: &'static str) -> Result<&mut Recorder> {
        self.tail = None;
        match &self.enc {
            // What it records would run once, when the caller submits the encoder, outside the
            // graph (and before the capture's run-once work had it written fresh buffers).
            Some(Encoder::Borrowed(_)) if self.ctx.rt.capturing_here() => Err(Error::invalid(op, "this thread is capturing a graph: a batch recording into the caller's encoder (record_into) would run outside it; record into ctx.batch() and submit it")),
            Some(_) => Ok(&mut self.rec),
            None => Err(Error::invalid(op, "the batch was already ended")),
        }
    }

    /// Commands recorded so far.
    pub(crate) fn recorded(&self) -> usize {
        self.rec.len()
    }

    /// Runs `f`, a call that may record several commands (a copy of a shared buffer, then a
    /// kernel that may still fail), whole or not at all: should it fail part way, the batch is
    /// cut back to what it held before.
    pub(crate) fn whole<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        let mark = self.recorded();
        let r = f(self);
        if r.is_err() {
            self.cut_back(mark);
        }
        r
    }

    /// Drops the commands recorded after the first `mark` (a call that failed part way through
    /// leaves the batch as it was; what they hold stays held until the batch's work is done).
    pub(crate) fn cut_back(&mut self, mark: usize) {
        self.tail = None;
        drop(self.rec.split_off(mark));
    }

    /// The recording and its fusion tail, taken out of the batch (which then holds nothing).
    pub(crate) fn take_recording(mut self) -> (Recorder, Option<(usize, Tail)>) {
        (std::mem::take(&mut self.rec), self.tail.take())
    }

    /// Fails unless every tensor lives on this batch's context.
    pub(crate) fn check_context(&self, op: &'static str, tensors: &[&DeviceTensor]) -> Result<()> {
        match tensors.iter().all(|t| t.context().same_device(&self.ctx)) {
            true => self.ctx.rt.errors.check_lost(op),
            false => Err(Error::Device { op, detail: "the tensors live on another GpuContext than the batch".into() }),
        }
    }

    /// Ends recording into the caller's encoder: the recorded work is encoded into it, and what
    /// the batch holds is handed to it, to be released when its work has finished. Dropping the
    /// batch does the same, but only `end` returns an error caught while encoding (wgpu 30
    /// reports most encoding errors, such as an encoder of another device or one with a pass
    /// open, at the caller's `CommandEncoder::finish`, not here). A batch of the crate's own encoder (`ctx.batch()`) is
    /// not ended so: `end` (as dropping it) discards what it recorded; `submit` or `finish` it.
    pub fn end(mut self) -> Result<()> {
        self.release()
    }

    /// Finishes the crate's encoder into a command buffer for the caller to submit (with its
    /// own, in one submission). What the batch holds is released when that command buffer's
    /// work has finished. Eager calls held back ([`crate::advanced::SubmitPolicy::Deferred`]) are
    /// submitted first, so that they run before it. An error for a batch recording into the
    /// caller's encoder, and while this thread captures a graph ([`GpuContext::capture`]: a
    /// command buffer would run outside the graph; the batch's work is captured all the same,
    /// as [`Batch::submit`] captures it, so that the tensors it returned are written at every
    /// replay).
    pub fn finish(mut self) -> Result<wgpu::CommandBuffer> {
        if self.ctx.rt.capturing_here() && matches!(self.enc, Some(Encoder::Owned)) {
            self.submit_as("finish")?;
            return Err(Error::invalid("finish", "this thread is capturing a graph: a finished command buffer would run outside it; the batch's work was captured as `submit` captures it (do not record it again)"));
        }
        match self.enc.take() {
            Some(Encoder::Owned) => {
                let rt = self.ctx.rt.clone();
                rt.submit_held_now("finish")?;
                let mut enc = rt.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("strided-wgpu batch") });
                let rec = std::mem::take(&mut self.rec);
                let mut keep = submit::encode_recording(&rt, "finish", &mut enc, rec, false)?;
                rt.scoped("finish", || {
                    keep.attach(&enc);
                    Ok(enc.finish())
                })
            }
            other => {
                self.enc = other;
                Err(Error::invalid("finish", "the batch records into the caller's encoder; the caller finishes it"))
            }
        }
    }

    /// Submits everything recorded (one command buffer, its dispatches in as few compute passes
    /// as its copies allow); errors wgpu reports are returned here. The returned
    /// [`Submission`] can be awaited (or, on native, waited on) for the work to finish. While
    /// this thread captures a graph ([`GpuContext::capture`]), the work is appended to the
    /// graph instead, and waiting for the submission is an error (nothing ran). Eager calls held back
    /// ([`crate::advanced::SubmitPolicy::Deferred`]) are submitted first, in a queue submission of
    /// their own just before.
    pub fn submit(self) -> Result<Submission> {
        self.submit_as("submit")
    }

    /// [`Batch::submit`], its errors naming `op` (an eager call's own name).
    fn submit_as(mut self, op: &'static str) -> Result<Submission> {
        match self.enc.take() {
            Some(Encoder::Owned) => {
                let rt = self.ctx.rt.clone();
                let rec = std::mem::take(&mut self.rec);
                if rt.capturing_here() {
                    rt.probe(op)?;
                    // A replay recorded before the capture began (`Batch::replay` refuses one
                    // during it): replays do not nest in captures.
                    if rec.replays_graph() {
                        return Err(Error::invalid(op, "this thread is capturing a graph and the batch holds a replay of another graph: replays do not nest in captures (submit the batch before the capture)"));
                    }
                    // A convolution's tail holds only while nothing was recorded after it.
                    let tail = self.tail.take().filter(|(_, t)| !matches!(t, Tail::Conv(c) if c.end != rec.len()));
                    return fuse::append_captured(&self.ctx, rec, tail).map(|()| Submission::captured());
                }
                submit::submit_recording(&rt, op, rec)
            }
            other => {
                self.enc = other;
                Err(Error::invalid(op, "the batch records into the caller's encoder; the caller submits it"))
            }
        }
    }

    /// An eager call's end: its recording is submitted, or held back with the calls before it
    /// where the context defers ([`crate::advanced::SubmitPolicy::Deferred`], `runtime/deferred.rs`);
    /// while this thread captures a graph, appended to the graph as [`Batch::submit`] does.
    /// Errors name `op`, the eager call's.
    pub(crate) fn submit_eager(mut self, op: &'static str) -> Result<()> {
        let rt = self.ctx.rt.clone();
        if rt.capturing_here() || !matches!(self.enc, Some(Encoder::Owned)) {
            return self.submit_as(op).map(drop);
        }
        self.enc = None;
        rt.defer(op, std::mem::take(&mut self.rec))
    }

    /// Submits everything recorded and waits for it to finish (native only).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn submit_and_wait(self) -> Result<()> {
        self.submit()?.wait()
    }

    fn release(&mut self) -> Result<()> {
        if let Some(Encoder::Borrowed(e)) = self.enc.take() {
            let rt = self.ctx.rt.clone();
            // Eager calls held back since the batch started (they write what its work may
            // read) go now, before the caller can submit the encoder.
            rt.submit_held();
            let rec = std::mem::take(&mut self.rec);
            return rt.scoped("end", || {
                let (commands, mut keep) = rec.finish(&rt.queue);
                rt.encode(&commands, e, None);
                keep.attach(e);
                Ok(())
            });
        }
        Ok(())
    }
}

impl Drop for Batch<'_> {
    fn drop(&mut self) {
        // Nothing to report from a drop: a lost device or a bad encoder fails the caller's
        // submit or the next call of the crate (`Batch::end` reports it).
        let _ = self.release();
    }
}

/// A recorded copy of the whole of `src`, for an operand that shares its op's output buffer:
/// one buffer cannot be bound for reading and writing in one dispatch, so the op reads the
/// copy (the handle returned). The copy may itself be the source of a buffer copy (`copy_`
/// between disjoint views of one buffer takes that path where the plan is dense). The
/// recording holds the copy from its creation, so no error path returns it to the pool while
/// the recorded copy still writes it. A buffer without `COPY_SRC` cannot be copied:
/// [`Error::Unsupported`].
pub(crate) fn read_copy(rt: &Runtime, rec: &mut Recorder, op: &'static str, src: &wgpu::Buffer) -> Result<wgpu::Buffer> {
    if !src.usage().contains(wgpu::BufferUsages::COPY_SRC) {
        return Err(Error::unsupported(op, format!("an operand that shares the output's buffer is read from a copy of it, but the buffer's usage {:?} lacks COPY_SRC", src.usage())));
    }
    let size = src.size();
    let tmp = rt.scoped(op, || rt.buffer(op, size, wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC))?;
    rec.copy_buffer_to_buffer(src, 0, tmp.buffer(), 0, size);
    let handle = tmp.buffer().clone();
    rec.hold(tmp);
    Ok(handle)
}
