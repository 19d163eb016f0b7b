//! Captured graphs, the crate's answer to CUDA Graphs: the work of a closure recorded once,
//! then replayed with new input contents at a host cost of a few calls a dispatch.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::gpu::batch::Batch;
use crate::gpu::context::GpuContext;
use crate::gpu::tensor::DeviceTensor;
use crate::runtime::record::{self, Command, Constants, Keep, RecordCounts};
use crate::runtime::submit::{self, Submission};
use crate::strided::Strided;

/// The work of a closure, captured once ([`GpuContext::capture`]) and replayed: its pipelines,
/// bind groups, uniforms and every buffer it reads or writes (its inputs, intermediates and
/// outputs) are fixed at capture. A replay re-encodes the cached commands (wgpu cannot
/// resubmit a command buffer) into one command buffer and one compute pass (more only where
/// the captured work holds copies or clears, see [`Graph::counts`]), and submits once.
///
/// A replay computes what the captured calls would compute eagerly on the inputs' contents at
/// the time it runs, bit for bit: the same kernels with the same uniforms over the same buffers.
/// Tensors uploaded inside the closure (`from_slice`, `upload`) are written once, at capture,
/// and are constants of the graph.
///
/// Where that promise ends: a replay runs the kernels chosen at capture, so a shape class tuned
/// after it ([`GpuContext::tune_conv2d_async`] and its siblings, [`GpuContext::load_tuning`]) may give the eager calls
/// another kernel, whose sums run in another order (other bits, within the tolerance). A tensor
/// the graph computed from constants alone is written once, at capture, and not watched: the
/// caller writing it changes what later replays read. A write to a tensor the graph's run-once
/// work reads (a weight it packs), made by the crate on any thread, is seen by the replays
/// submitted after it (the crate's submissions are ordered under one lock); one in a command
/// buffer the caller submits makes every replay run that work again until it is done.
///
/// The graph holds every buffer its work uses; each replay holds the graph's buffers until the
/// GPU has finished it, so dropping the graph after a replay is safe. Outputs are overwritten
/// by each replay: read them (e.g. [`DeviceTensor::download`]) after a replay and before the
/// next one, or record the replay and the reads in one [`Batch`]. (An output computed from
/// constants alone is written once, at capture: see [`GpuContext::capture`].)
///
/// ```
/// use strided_wgpu::{DeviceTensor, Elementwise, GpuContext};
/// # let Ok(ctx) = GpuContext::new() else { return Ok(()) };
/// let x = DeviceTensor::from_slice(&ctx, &[1f32, -2., 3., -4.], &[2, 2])?;
/// // Capture x -> relu(x * 2) + x once ...
/// let graph = ctx.capture(&[&x], || x.mul(2.0)?.relu()?.add(&x))?;
/// // ... then replay it on new inputs: copied into x's buffer first, in the same submit.
/// let new = DeviceTensor::from_slice(&ctx, &[5f32, 6., -7., 8.], &[2, 2])?;
/// graph.replay(&[&new])?;
/// assert_eq!(graph.output().download()?.to_vec::<f32>()?, vec![15., 18., -7., 24.]);
/// # Ok::<(), strided_wgpu::Error>(())
/// ```
pub struct Graph<T> {
    ctx: GpuContext,
    commands: Arc<[Command]>,
    held: Arc<Keep>,
    inputs: Vec<DeviceTensor>,
    output: T,
    constants: RecordCounts,
    /// The run-once work and the constants it read from outside the capture (`None` without).
    once: Option<Arc<Constants>>,
}

impl GpuContext {
    /// Captures the work that `f` submits on this thread, on this context, into a [`Graph`]:
    /// every op (eager calls and [`Batch::submit`] alike) is recorded, nothing runs. `inputs`
    /// are the tensors whose contents a replay may replace ([`Graph::replay`]); the closure's
    /// result is the graph's [`Graph::output`].
    ///
    /// Inside the closure nothing may wait for the GPU: a download, a wait or a measurement is
    /// an error (the captured work has not run), and under [`crate::TuningPolicy::OnFirstCall`]
    /// a capture runs each untuned class's default kernel instead of measuring. Other threads'
    /// calls are not captured, nor are calls made by a wgpu callback that the crate's own polls
    /// and submissions run meanwhile (a readback's `map_async`): those run as eager calls (a
    /// callback run by the program's own `device.poll` inside the closure is the program's
    /// call, and is captured). A thread's captures do not nest (a callback the crate runs
    /// during one may capture a graph of its own); threads may capture at once.
    ///
    /// Tensors that are not `inputs` and that the captured work never writes are constants of the
    /// graph (weights, say): work that reads only constants and writes only buffers made inside
    /// the capture that no replayed work writes, nor reads before it (a convolution packing its
    /// weight) runs once, at capture, and not at each replay ([`Graph::constant_counts`]); it
    /// runs again before a replay where the crate wrote such a tensor since (an eager `mul_` of
    /// a weight, another graph's replay), so replays read what the eager calls would; and
    /// before every replay in a command buffer the caller submits ([`Batch::finish`],
    /// [`GpuContext::record_into`]), whose order against the crate's writes the crate cannot
    /// see ([`Graph::constant_counts`] more dispatches and copies each; on WebGPU a submission
    /// refused later is counted as having run it), and before every replay while a write of
    /// such a tensor in a command buffer the caller submits has not finished on the GPU (nor
    /// been dropped unsubmitted). An in-place update of a tensor uploaded inside the closure
    /// is replayed work, run at every replay on what the last replay left. A
    /// batch holding a replay cannot be submitted inside the closure (replays do not nest),
    /// and an input that reaches an element twice is refused ([`Error::Overlap`]). A
    /// caller's buffer ([`DeviceTensor::from_buffer`]) is never such a constant (its writes are
    /// the caller's own), nor is an input; a tensor's buffer written by the caller's own wgpu
    /// commands is not seen: capture again after such a write.
    ///
    /// The closure may fail with any error type that a crate [`Error`] converts into (a
    /// model's own error, say); its error is returned as it is, and nothing is captured.
    pub fn capture<T, E: From<Error>>(&self, inputs: &[&DeviceTensor], f: impl FnOnce() -> std::result::Result<T, E>) -> std::result::Result<Graph<T>, E> {
        const OP: &str = "capture";
        self.rt.probe(OP)?;
        if let Some(t) = inputs.iter().find(|t| !t.context().same_device(self)) {
            return Err(Error::Device { op: OP, detail: format!("an input of shape {:?} lives on another GpuContext than the capture", t.shape()) }.into());
        }
        // A replay copies new contents into each input: one that reaches an element twice
        // (an expanded view) could never be written.
        if let Some(t) = inputs.iter().find(|t| t.layout().has_internal_overlap()) {
            return Err(Error::Overlap { op: OP, detail: format!("an input of shape {:?} and strides {:?} reaches some element twice: a replay could not copy new contents into it", t.shape(), t.strides()) }.into());
        }
        self.rt.capture_begin(OP)?;
        // Should `f` panic, the capture ends anyway (the thread's recording, and what it holds,
        // would otherwise stay in the runtime: a fusion tail holds tensors, and through them the
        // runtime itself).
        // (Not `std::thread::panicking()`: a capture made in a destructor while the thread
        // unwinds would end before its own `capture_end`.)
        struct EndOnUnwind<'a>(&'a crate::runtime::Runtime);
        impl Drop for EndOnUnwind<'_> {
            fn drop(&mut self) {
                drop(self.0.capture_end());
            }
        }
        let guard = EndOnUnwind(&self.rt);
        let output = f();
        std::mem::forget(guard);
        let mut rec = self.rt.capture_end().ok_or_else(|| Error::invalid(OP, "the capture ended on another thread"))?;
        let output = output?;
        let fresh = std::mem::take(&mut rec.fresh);
        let (commands, mut held) = self.rt.scoped(OP, || Ok(rec.finish(&self.rt.queue)))?;
        for t in inputs {
            held.hold_shared(t.storage());
        }
        // The work that computes constants (weight packing) runs once, now, and again before a
        // replay where a constant it read was written since (`runtime/watch.rs`). The caller's
        // buffers are no constants: their writes are the caller's, unseen by the crate.
        let foreign: Vec<wgpu::Buffer> = held.shared().filter_map(DeviceTensor::foreign_buffer).cloned().collect();
        let buffers: Vec<&wgpu::Buffer> = inputs.iter().map(|t| t.buffer()).chain(&foreign).collect();
        let (once, every) = record::split_constants(commands, &buffers, &fresh);
        let held = Arc::new(held);
        let constants = record::count(&once);
        let once = (!once.is_empty()).then(|| {
            let external = record::external_reads(&once, &fresh);
            self.rt.watch.constants(once.into(), external)
        });
        if let Some(k) = &once {
            run_once(&self.rt, OP, k, &held)?;
        }
        Ok(Graph { ctx: self.clone(), commands: every.into(), held, inputs: inputs.iter().map(|&t| t.clone()).collect(), output, constants, once })
    }

    /// Submits, compute passes, dispatches and copies this context has encoded so far (every
    /// thread's): the difference around a call says what it cost the GPU in commands.
    pub fn record_counts(&self) -> RecordCounts {
        self.rt.counters.get()
    }
}

/// Submits a graph's run-once work `k` at capture (in a command buffer of its own, its
/// constants' counts noted already), `held` (what the graph's commands use) held until it has
/// run.
fn run_once(rt: &Arc<crate::runtime::Runtime>, op: &'static str, k: &Arc<Constants>, held: &Arc<Keep>) -> Result<()> {
    let enc = rt.scoped(op, || Ok(rt.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("strided-wgpu graph constants") })))?;
    let mut keep = Keep::default();
    keep.hold(held.clone());
    submit::submit_commands(rt, op, enc, &k.once, keep).map(drop)
}

impl<T> Graph<T> {
    /// What the closure returned: tensors over the graph's buffers, written by each replay.
    pub fn output(&self) -> &T {
        &self.output
    }

    /// The input tensors given at capture.
    pub fn inputs(&self) -> &[DeviceTensor] {
        &self.inputs
    }

    /// What one replay encodes: one submit, its compute passes (a pass for each run of
    /// dispatches between copies and clears: one where there are none), dispatches and copies
    /// (the input copies of
    /// [`Graph::replay`] not included).
    pub fn counts(&self) -> RecordCounts {
        RecordCounts { submits: 1, ..record::count(&self.commands) }
    }

    /// Each dispatch of a replay, in order: the op that recorded it and its kernel (shader).
    pub fn dispatches(&self) -> Vec<(&'static str, &'static str)> {
        record::dispatches(&self.commands)
    }

    /// The work that computes the graph's constants, run once at capture (see
    /// [`GpuContext::capture`]).
    pub fn constant_counts(&self) -> RecordCounts {
        self.constants
    }

    /// Runs the graph once (on its inputs' current contents) with each dispatch timed by GPU
    /// timestamps in a compute pass of its own, and returns each dispatch's op, kernel and
    /// milliseconds, in order. A measurement, made only when asked; needs
    /// `TIMESTAMP_QUERY` (else [`Error::Unsupported`]). A pass per dispatch serializes them:
    /// the sum is at least a replay's GPU time.
    pub async fn profile_async(&self) -> Result<Vec<(&'static str, &'static str, f64)>> {
        self.profile_with(crate::runtime::submit::Drive::Poll).await
    }

    /// [`Graph::profile_async`], blocking (native only).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn profile(&self) -> Result<Vec<(&'static str, &'static str, f64)>> {
        pollster::block_on(self.profile_with(crate::runtime::submit::Drive::Wait))
    }

    async fn profile_with(&self, drive: crate::runtime::submit::Drive) -> Result<Vec<(&'static str, &'static str, f64)>> {
        let timer = crate::runtime::timing::Timer::new(&self.ctx.rt)?;
        // The run-once work first where a constant was written since it ran (untimed; the
        // calls held back submitted before, their writes counted).
        let times = timer.profile(drive, &self.commands, self.held.clone(), self.once.as_ref()).await?;
        Ok(self.dispatches().into_iter().zip(times).map(|((op, kernel), ms)| (op, kernel, ms)).collect())
    }

    /// Replays the graph in one submission (after one of the eager calls held back, if any):
    /// first copies `inputs` (none, or one per input
    /// given at capture, of its shape and dtype, any layout; the graph's own inputs in any
    /// order among them, each read before any input is written) into the graph's inputs, then
    /// runs the captured work. Errors: inputs of another count, shape, dtype or context, a
    /// device lost ([`Error::DeviceLost`]), and a replay while this thread captures a graph.
    pub fn replay(&self, inputs: &[&DeviceTensor]) -> Result<Submission> {
        let mut batch = self.ctx.batch();
        batch.replay(self, inputs)?;
        batch.submit()
    }

    /// [`Graph::replay`], waiting for it to finish (native only).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn replay_and_wait(&self, inputs: &[&DeviceTensor]) -> Result<()> {
        self.replay(inputs)?.wait()
    }
}

impl Batch<'_> {
    /// Records a replay of `graph` ([`Graph::replay`]: `inputs` copied into the graph's inputs
    /// first) into this batch, after what it already holds. On an error nothing is recorded.
    /// An error too while this thread captures a graph: replays do not nest in captures (a
    /// nested graph's work would all run at every replay of the outer one, its run-once work
    /// included).
    pub fn replay<T>(&mut self, graph: &Graph<T>, inputs: &[&DeviceTensor]) -> Result<()> {
        const OP: &str = "replay";
        if self.context().rt.capturing_here() {
            return Err(Error::invalid(OP, "this thread is capturing a graph: replays do not nest in captures"));
        }
        if !graph.ctx.same_device(self.context()) {
            return Err(Error::Device { op: OP, detail: "the graph was captured on another GpuContext than the batch".into() });
        }
        self.check_context(OP, inputs)?;
        if !inputs.is_empty() {
            if inputs.len() != graph.inputs.len() {
                return Err(Error::invalid(OP, format!("{} inputs given, the graph was captured with {} (give none to replay on their current contents)", inputs.len(), graph.inputs.len())));
            }
            for (i, (dst, src)) in graph.inputs.iter().zip(inputs).enumerate() {
                if dst.shape() != src.shape() || dst.dtype() != src.dtype() {
                    return Err(Error::invalid(OP, format!("input {i} has shape {:?} and dtype {}, the graph was captured with shape {:?} and dtype {}", src.shape(), src.dtype(), dst.shape(), dst.dtype())));
                }
            }
            // The copies are recorded one after another, so a source that shares a buffer with
            // another input of the graph (the inputs given swapped, say) is copied aside first,
            // before any input is written; and should a copy fail, the batch is cut back to
            // what it held before.
            let mark = self.recorded();
            let copies = self.copy_inputs(graph, inputs);
            if copies.is_err() {
                self.cut_back(mark);
            }
            copies?;
        }
        let rec = self.parts(OP)?;
        rec.replay(&graph.commands, graph.once.as_ref(), graph.held.clone());
        Ok(())
    }

    /// The input copies of [`Batch::replay`] (`inputs` checked against the graph's).
    fn copy_inputs<T>(&mut self, graph: &Graph<T>, inputs: &[&DeviceTensor]) -> Result<()> {
        let mut sources = Vec::with_capacity(inputs.len());
        for (i, &src) in inputs.iter().enumerate() {
            // A source that shares the storage of a graph input other than the one it is copied
            // into, or of that one in another layout (a partial overlap), is read first.
            let aliased = graph.inputs.iter().enumerate().any(|(j, dst)| dst.shares_storage(src) && (j != i || dst.layout() != src.layout()));
            sources.push(if aliased { self.copied("replay", src, src.dtype(), crate::layout::MemoryFormat::Contiguous)? } else { src.clone() });
        }
        for (dst, src) in graph.inputs.iter().zip(&sources) {
            if !dst.shares_storage(src) || dst.layout() != src.layout() {
                self.copy_(dst, src)?;
            }
        }
        Ok(())
    }
}
