//! Lifetimes of recorded work, and completion of submitted work.
//!
//! A recording holds every tensor it reads or writes and every temporary it made in a `Keep`
//! (`runtime/record.rs`),
//! attached to its command encoder: wgpu drops it when that command buffer's work has finished
//! on the GPU (or when an encoder that was never submitted is dropped), and only then do pooled
//! buffers return to the pool.
//!
//! A [`Completion`] is a future that resolves when a callback wgpu runs after submitted work
//! (work done, a buffer mapped) has fired. On native backends the callbacks run inside
//! `Device::poll`: an awaited completion polls the device without waiting and asks to be
//! polled again (a cooperative busy loop: it keeps its executor's thread busy until the work is
//! done), so an executor that never blocks the thread drives it; the
//! blocking wrappers drive the same future with a waiting poll. On WebGPU the browser's event
//! loop runs the callbacks, which wake the future.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use crate::error::{Error, Result};
use crate::runtime::pool::Pooled;
use crate::runtime::record::{Command, Keep, RecordCounts, Recorder};
use crate::runtime::lock::lock;
use crate::runtime::deferred::{Held, SubmitPolicy};
use crate::runtime::Runtime;

/// A value set once by a wgpu callback, and the waker of whoever awaits it.
pub(crate) struct Signal<T>(Arc<Mutex<(Option<T>, Option<Waker>)>>);

impl<T> Clone for Signal<T> {
    fn clone(&self) -> Self {
        Signal(self.0.clone())
    }
}

impl<T> Signal<T> {
    pub fn new() -> Signal<T> {
        Signal(Arc::new(Mutex::new((None, None))))
    }
    /// Sets the value and wakes the waiter.
    pub fn set(&self, v: T) {
        let waker = {
            let mut g = lock(&self.0);
            g.0 = Some(v);
            g.1.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }
    fn is_set(&self) -> bool {
        lock(&self.0).0.is_some()
    }
    fn take(&self, cx: &mut Context<'_>) -> Option<T> {
        let mut g = lock(&self.0);
        let v = g.0.take();
        if v.is_none() {
            g.1 = Some(cx.waker().clone());
        }
        v
    }
}

/// How a completion drives the device while it waits.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Drive {
    /// Polls without blocking and asks to be polled again (async callers).
    Poll,
    /// Waits for the submission (the blocking wrappers; native only): on an adapter that is not
    /// a CPU, first by polling for up to [`SPIN`], then by blocking.
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    Wait,
}

/// How long a blocking wait polls the device before it blocks, on adapters that are not CPUs
/// (CUDA's default synchronization spins likewise). A blocked thread wakes late: on an NVIDIA
/// H200 (Vulkan, in a virtual machine), an empty submission waited for by blocking took 41-46
/// us, by polling 17-19 us (`bench --only calls`, rows F0 and F1, 2026-11-28). A CPU adapter
/// runs the work on the host's cores, which polling would take from it.
#[cfg(not(target_arch = "wasm32"))]
const SPIN: std::time::Duration = std::time::Duration::from_millis(2);

/// A future of the value a callback of submission `index` sets.
pub(crate) struct Completion<T> {
    rt: Arc<Runtime>,
    op: &'static str,
    /// The submission waited for (`None`: everything submitted).
    pub(crate) index: Option<wgpu::SubmissionIndex>,
    signal: Signal<T>,
    pub(crate) drive: Drive,
}

impl<T> Completion<T> {
    pub fn new(rt: Arc<Runtime>, op: &'static str, index: Option<wgpu::SubmissionIndex>, signal: Signal<T>, drive: Drive) -> Completion<T> {
        Completion { rt, op, index, signal, drive }
    }
}

impl<T> Unpin for Completion<T> {}

impl<T> Future for Completion<T> {
    type Output = Result<T>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T>> {
        let this = self.get_mut();
        if let Err(e) = this.rt.errors.check_lost(this.op) {
            return Poll::Ready(Err(e));
        }
        if cfg!(target_arch = "wasm32") {
            // The browser's event loop runs the callback, which wakes this future.
            return match this.signal.take(cx) {
                Some(v) => Poll::Ready(this.rt.probe(this.op).map(|()| v)),
                None => Poll::Pending,
            };
        }
        // Callbacks run inside polls. A poll with a zero timeout is not used: in wgpu 30 it
        // races with other threads' submits and polls (an assertion in `Device::maintain`).
        if this.drive == Drive::Poll {
            if let Err(e) = this.rt.poll_device(this.op, wgpu::PollType::Poll, "polling the device failed") {
                return Poll::Ready(Err(e));
            }
        }
        if this.drive == Drive::Poll && !this.signal.is_set() {
            // Nothing else will wake this future on native: ask to be polled again.
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        #[cfg(not(target_arch = "wasm32"))]
        if this.drive == Drive::Wait && this.rt.report.device_type != wgpu::DeviceType::Cpu {
            let start = std::time::Instant::now();
            while !this.signal.is_set() && start.elapsed() < SPIN {
                if let Err(e) = this.rt.poll_device(this.op, wgpu::PollType::Poll, "polling the device failed") {
                    return Poll::Ready(Err(e));
                }
                std::hint::spin_loop();
            }
        }
        // Done (or, blocking, about to be): a wait on the index returns at once, and it is what
        // says that a submission never ran on a lost device (wgpu still runs its callbacks).
        // A polled completion of everything submitted (`flush`, no index) has its signal set
        // here: a wait without an index would block on whatever was submitted since, by any
        // thread (the probe below still learns a loss).
        let waited = match (&this.index, this.drive) {
            (None, Drive::Poll) => Ok(()),
            (index, _) => this.rt.poll_device(this.op, wgpu::PollType::Wait { submission_index: index.clone(), timeout: None }, "the submission could not complete"),
        };
        if let Err(e) = waited {
            return Poll::Ready(Err(e));
        }
        match this.signal.take(cx) {
            // A device destroyed after the submission still finishes the work submitted before
            // (WebGPU's `destroy`), and the callbacks report success: the loss is learnt here,
            // so that a wait or a download that ends after a loss is `DeviceLost`.
            Some(v) => Poll::Ready(this.rt.probe(this.op).map(|()| v)),
            None => {
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        }
    }
}

/// Work the crate submitted: await it (or, on native, [`Submission::wait`]) to know it has
/// finished on the GPU. Dropping it does not cancel the work.
///
/// A batch submitted while its thread captures a graph submits nothing: its work joins the
/// graph, and waiting for its submission is an error.
pub struct Submission {
    pub(crate) done: Option<Completion<()>>,
}

impl Submission {
    /// The submission of work appended to a graph being captured: nothing ran, and waiting
    /// for it is an error.
    pub(crate) fn captured() -> Submission {
        Submission { done: None }
    }

    /// Resolves when the work has finished on the GPU, with the errors wgpu reported for it
    /// (on WebGPU, also those of earlier calls whose scopes were still open). For a batch
    /// submitted while its thread captured a graph, [`Error::InvalidArgument`]: its work joined
    /// the graph and has not run (as a synchronization inside a CUDA graph capture fails);
    /// so is waiting inside a capture for work submitted before it.
    pub async fn finished(self) -> Result<()> {
        let Some(done) = self.done else {
            return Err(Error::invalid("wait", "the batch was submitted while its thread captured a graph: its work joined the graph and has not run; wait for a replay instead, outside the capture"));
        };
        done.rt.check_not_capturing("wait")?;
        let rt = done.rt.clone();
        rt.errors.settle().await?;
        done.await
    }

    /// Blocks until the work has finished on the GPU (native only). On an adapter that is not
    /// a CPU it polls the device for up to 2 ms before it sleeps (a sleeping thread wakes tens
    /// of microseconds late); so do downloads and [`crate::Graph::replay_and_wait`].
    #[cfg(not(target_arch = "wasm32"))]
    pub fn wait(mut self) -> Result<()> {
        if let Some(done) = &mut self.done {
            done.drive = Drive::Wait;
        }
        pollster::block_on(self.finished())
    }
}

impl std::fmt::Debug for Submission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Submission").field("op", &self.done.as_ref().map(|d| d.op)).finish()
    }
}

/// Submits `encoder` (with `keep` attached) and returns its completion; the eager calls held
/// back (`runtime/deferred.rs`) go first, in a queue submission of their own just before.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn submit(rt: &Arc<Runtime>, op: &'static str, encoder: wgpu::CommandEncoder, keep: Keep) -> Result<Submission> {
    encode_and_submit(rt, op, || Ok((encoder, keep)))
}

/// Encodes work (`encode`) and submits it as [`submit`], both under the held calls' lock, the
/// held calls encoded first: the writes to graphs' constants are counted as they are encoded
/// (`runtime/watch.rs`), and with encoding and submission under one lock that is the order the
/// GPU runs them in, whatever the threads (a replay on one thread and a write on another are
/// counted and run in the same order).
pub(crate) fn encode_and_submit(rt: &Arc<Runtime>, op: &'static str, encode: impl FnOnce() -> Result<(wgpu::CommandEncoder, Keep)>) -> Result<Submission> {
    // Inside a callback that this thread's submission runs, nothing is held to go first (the
    // outer submission took it, and holds the lock), and an error left for the next call stays
    // for the outer one.
    let sub = match rt.lock_held() {
        Some(mut held) => submit_after_held(rt, op, &mut held, Some(encode))?,
        None => submit_after_held(rt, op, &mut Held::default(), Some(encode))?,
    };
    Ok(sub.expect("a command buffer was submitted"))
}

/// No work of the call's own: [`submit_after_held`] of the held calls alone.
type NoWork = fn() -> Result<(wgpu::CommandEncoder, Keep)>;

/// Submits the held-back calls of `held` (encoded into a command buffer of their own) and then
/// `work` (encoded once they are submitted), each in a queue submission of its own: wgpu drops
/// a whole submission when one of its command buffers fails validation (`work` binding a caller's destroyed buffer, say), and the
/// held calls returned without an error. `None` when there was neither. The caller holds
/// `held`'s lock, which keeps the order of the crate's submissions that of its calls. An
/// error left by a submission without a caller ([`Held::fail`]) is this call's: its `work`
/// is not encoded (a failed call does nothing), and the held calls, which returned without an
/// error, are submitted all the same; so are they where encoding `work` fails.
pub(crate) fn submit_after_held<W: FnOnce() -> Result<(wgpu::CommandEncoder, Keep)>>(rt: &Arc<Runtime>, op: &'static str, held: &mut Held, work: Option<W>) -> Result<Option<Submission>> {
    let Some(stale) = held.take_failure() else {
        return submit_held_then(rt, op, held, work);
    };
    drop(work);
    if let Err(e) = submit_held_then(rt, op, held, None::<NoWork>) {
        held.fail(e);
    }
    Err(stale)
}

fn submit_held_then<W: FnOnce() -> Result<(wgpu::CommandEncoder, Keep)>>(rt: &Arc<Runtime>, op: &'static str, held: &mut Held, work: Option<W>) -> Result<Option<Submission>> {
    let held_work = match held.take() {
        Some(rec) => {
            let mut enc = rt.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("strided-wgpu deferred") });
            let keep = encode_recording(rt, op, &mut enc, rec, true)?;
            Some((enc, keep))
        }
        None => None,
    };
    // The held calls are submitted before the work is encoded: a callback that their
    // submission runs may call the crate (on this thread, which holds the lock: it submits at
    // once), and a write it makes is then counted before the work's replays check theirs. The
    // held calls' failure is this call's, whose work then is not encoded.
    let held_sub = held_work.map(|h| submit_one(rt, op, h)).transpose()?;
    match work {
        Some(w) => submit_one(rt, op, w()?).map(Some),
        None => Ok(held_sub),
    }
}

/// Submits `encoder` with `keep` attached, one queue submission.
fn submit_one(rt: &Arc<Runtime>, op: &'static str, (encoder, mut keep): (wgpu::CommandEncoder, Keep)) -> Result<Submission> {
    let signal = Signal::new();
    let reruns = keep.take_reruns();
    let index = rt.scoped(op, || {
        keep.attach(&encoder);
        let s = signal.clone();
        encoder.on_submitted_work_done(move || s.set(()));
        let finished = encoder.finish();
        rt.counters.add(RecordCounts { submits: 1, ..Default::default() });
        Ok(rt.outside_capture(|| crate::runtime::errors::outside_scopes(|| rt.queue.submit([finished]))))
    })?;
    // The graphs' run-once work in it ran with the counts it was encoded with.
    for (constants, now) in &reruns {
        constants.commit(now);
    }
    Ok(Submission { done: Some(Completion::new(rt.clone(), op, Some(index), signal, Drive::Poll)) })
}

/// A completion of everything submitted so far, without a submission of its own.
pub(crate) fn all_submitted(rt: &Arc<Runtime>, op: &'static str) -> Result<Submission> {
    let signal = Signal::new();
    let s = signal.clone();
    rt.scoped(op, || {
        rt.queue.on_submitted_work_done(move || s.set(()));
        Ok(())
    })?;
    Ok(Submission { done: Some(Completion::new(rt.clone(), op, None, signal, Drive::Poll)) })
}

/// Encodes `commands` into `encoder` (their uniforms already written), and submits it with
/// `keep` attached, as [`submit`].
pub(crate) fn submit_commands(rt: &Arc<Runtime>, op: &'static str, mut encoder: wgpu::CommandEncoder, commands: &[Command], mut keep: Keep) -> Result<Submission> {
    encode_and_submit(rt, op, || {
        rt.scoped(op, || {
            rt.encode(commands, &mut encoder, Some(&mut keep.reruns));
            Ok(())
        })?;
        Ok((encoder, keep))
    })
}

/// Submits a recording in an encoder of the crate's own ([`encode_recording`]), as [`submit`].
pub(crate) fn submit_recording(rt: &Arc<Runtime>, op: &'static str, rec: Recorder) -> Result<Submission> {
    // A replay decides whether its graph's run-once work runs again as it is encoded, from the
    // writes encoded before it (`runtime/watch.rs`): the eager calls held back are encoded
    // first, so that their writes are among those, and no other thread encodes meanwhile.
    encode_and_submit(rt, op, || {
        let mut encoder = rt.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("strided-wgpu batch") });
        let keep = encode_recording(rt, op, &mut encoder, rec, true)?;
        Ok((encoder, keep))
    })
}

/// The most uniform bytes a recording uploads through its probe buffer (16,384 dispatches'
/// slots); a recording with more writes them with queue writes (`Recorder::flush`) after a
/// plain probe, so that no upload asks for a buffer near the device's size limits.
const UPLOAD_BYTES: usize = 4 << 20;

/// Encodes a recording into the crate's own `encoder` (a batch's, submitted or finished
/// next): first the device-loss probe, which is also the staging buffer of the recording's
/// uniforms ([`Runtime::probe_with`]), and their copies into the uniform buffers, then the
/// commands. One driver buffer for both where a probe and a queue write made two (the probe's
/// and the queue's staging buffer), and no command buffer of the queue's pending writes ahead
/// of the batch's. The uniform copies are not counted in [`RecordCounts`] (its transfers are
/// the recorded copies and clears, as [`Graph::counts`](crate::Graph::counts) counts them).
/// Returns what the recording holds (the staging buffer with it). `crate_submits`: whether the
/// crate submits `encoder` (else the caller: [`Runtime::encode`]'s `reruns`).
pub(crate) fn encode_recording(rt: &Runtime, op: &'static str, encoder: &mut wgpu::CommandEncoder, mut rec: Recorder, crate_submits: bool) -> Result<Keep> {
    let (bytes, copies) = match rec.unwritten_bytes() <= UPLOAD_BYTES.min(rt.device.limits().max_buffer_size as usize) {
        true => rec.take_unwritten(),
        // Left to `finish`'s queue writes.
        false => (Vec::new(), Vec::new()),
    };
    let staging = rt.probe_with(op, &bytes)?;
    rt.scoped(op, || {
        let (commands, mut keep) = rec.finish(&rt.queue);
        if let Some(s) = staging {
            for (dst, dst_offset, src_offset, size) in &copies {
                encoder.copy_buffer_to_buffer(&s, *src_offset, dst, *dst_offset, *size);
            }
            keep.hold(s);
        }
        let mut reruns = Vec::new();
        rt.encode(&commands, encoder, crate_submits.then_some(&mut reruns));
        keep.reruns.append(&mut reruns);
        Ok(keep)
    })
}

/// Maps `range` of `buffer` for reading once `encoder`'s work is done, submits it, and awaits
/// the mapping. The caller reads the mapped range, then unmaps.
pub(crate) async fn submit_and_map(rt: &Arc<Runtime>, op: &'static str, encoder: wgpu::CommandEncoder, keep: Keep, buffer: &MapGuard, range: std::ops::Range<u64>, drive: Drive) -> Result<()> {
    encode_submit_and_map(rt, op, || Ok((encoder, keep)), buffer, range, drive).await
}

/// [`submit_and_map`] of work that `encode` encodes under the held calls' lock
/// ([`encode_and_submit`]).
pub(crate) async fn encode_submit_and_map(rt: &Arc<Runtime>, op: &'static str, encode: impl FnOnce() -> Result<(wgpu::CommandEncoder, Keep)>, buffer: &MapGuard, range: std::ops::Range<u64>, drive: Drive) -> Result<()> {
    rt.check_not_capturing(op)?;
    let mapped = Signal::new();
    let s = mapped.clone();
    let sub = encode_and_submit(rt, op, || {
        let (encoder, keep) = encode()?;
        rt.scoped(op, || {
            encoder.map_buffer_on_submit(buffer.buffer(), wgpu::MapMode::Read, range, move |r| s.set(r));
            Ok(())
        })?;
        // The mapping is under way once submitted, and also after a failed submission (wgpu
        // starts an encoder's mappings either way): armed first, the guard unmaps it however
        // this ends, and no buffer returns to the pool mapped.
        buffer.arm();
        Ok((encoder, keep))
    })?;
    let mut done = sub.done.expect("a submitted encoder has a completion");
    done.drive = drive;
    let index = done.index.clone();
    Submission { done: Some(done) }.finished().await?;
    match Completion::new(rt.clone(), op, index, mapped, drive).await? {
        Ok(()) => Ok(()),
        // A failed mapping is a loss only when the device says so.
        Err(e) => {
            buffer.disarm();
            rt.probe(op)?;
            Err(Error::Gpu { op, message: format!("mapping a buffer for reading failed: {e}") })
        }
    }
}

impl Drop for Runtime {
    /// The last handle is gone (context and tensors): calls still held back are submitted, so
    /// that a caller's buffer one writes (`from_buffer`) is written. Their errors have no
    /// caller left to take them.
    fn drop(&mut self) {
        let Some(rec) = self.deferral.held_mut().take() else { return };
        // Nothing on a lost device; every device call in the crate's scopes (an error of a
        // host's device must not reach the host's handler), the submit outside them (as
        // every crate submit: a host callback's error is not the crate's).
        let _ = self.scoped("drop", || {
            let mut enc = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("strided-wgpu held at drop") });
            let mut keep = encode_recording(self, "drop", &mut enc, rec, true)?;
            keep.attach(&enc);
            let finished = enc.finish();
            crate::runtime::errors::outside_scopes(|| self.queue.submit([finished]));
            Ok(())
        });
    }
}

impl Runtime {
    /// Runs the callbacks of finished work without waiting, so that buffers whose recordings
    /// are done return to the pool before a new one is made.
    pub fn reclaim(&self) {
        if cfg!(not(target_arch = "wasm32")) {
            let _ = self.poll_device("reclaim", wgpu::PollType::Poll, "polling the device failed");
        }
    }

    /// `device.poll(poll)` outside any capture, in this thread's GL turn: an error (`what`,
    /// then wgpu's) is the device's loss. wgpu 30 panics on a poll error other than a
    /// timeout or a wrong index, as a device lost while the poll waits on its fence: wgpu's
    /// panic is the loss where the device reported one or a probe then fails; any other panic
    /// (a callback's own) is raised again. A device known lost is not polled again.
    pub(crate) fn poll_device(&self, op: &'static str, poll: wgpu::PollType, what: &str) -> Result<()> {
        self.errors.check_lost(op)?;
        let polled = {
            let _turn = self.errors.gl_turn();
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.outside_capture(|| self.device.poll(poll))))
        };
        match polled {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(self.errors.lost(op, format!("{what} ({e})"))),
            Err(panic) => {
                let message = panic.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| panic.downcast_ref::<String>().cloned()).unwrap_or_default();
                // wgpu's own (`handle_error_fatal`: "Error in Device::poll: .."); any other is
                // a callback's, raised again.
                let wgpus = message.starts_with("Error in Device::poll");
                if wgpus && (self.errors.check_lost(op).is_err() || self.probe(op).is_err()) {
                    Err(self.errors.lost(op, format!("{what}: wgpu panicked ({message})")))
                } else {
                    std::panic::resume_unwind(panic)
                }
            }
        }
    }

    /// Learns whether the device is still there: a 4-byte buffer mapped at creation, which a
    /// lost device cannot make (no submission, no poll). Called by the crate's entry points
    /// and completions (a batch of its own encoder probes through [`Runtime::probe_with`],
    /// whose buffer also carries the batch's uniforms). The buffer is `MAP_WRITE`: mapped at creation, it is its own host-visible
    /// memory. A buffer without `MAP_WRITE` is mapped through a staging buffer that wgpu makes,
    /// zeroes and later copies or frees: two driver buffers a probe instead of one, 2.7-7.6 us
    /// a probe on lavapipe against 1.0-1.5 (20,000 probes of each in one run), and the staging
    /// buffers' release left to the next submission (a submission and wait after 20,000 such
    /// probes took 0.82-0.90 ms against 12-35 us).
    pub fn probe(&self, op: &'static str) -> Result<()> {
        self.probe_with(op, &[]).map(drop)
    }

    /// [`Runtime::probe`] with a buffer that holds `bytes` (a whole number of 4-byte words),
    /// returned unmapped (`COPY_SRC`) for the caller to copy from; `None` for no bytes (the
    /// probe's buffer is then destroyed).
    pub fn probe_with(&self, op: &'static str, bytes: &[u8]) -> Result<Option<wgpu::Buffer>> {
        self.errors.check_lost(op)?;
        debug_assert!(bytes.len().is_multiple_of(4));
        let staged = self.errors.scoped_fresh(&self.device, op, || {
            let usage = wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC;
            let size = (bytes.len() as u64).max(4);
            let b = self.device.create_buffer(&wgpu::BufferDescriptor { label: Some("strided-wgpu probe"), size, usage, mapped_at_creation: true });
            let ok = match b.slice(..).get_mapped_range_mut() {
                Ok(mut view) => {
                    view.slice(..bytes.len()).copy_from_slice(bytes);
                    true
                }
                Err(_) => false,
            };
            if ok && !bytes.is_empty() {
                b.unmap();
                return Ok(Some(Some(b)));
            }
            b.destroy();
            Ok(ok.then_some(None))
        })?;
        staged.ok_or_else(|| self.errors.lost(op, "the device can no longer create buffers"))
    }
}

/// A pooled buffer that is mapped, or may have a mapping pending: dropping the guard unmaps it
/// (aborting a pending mapping), so that no buffer returns to the pool mapped, also when the
/// future that waited for the mapping is dropped. A recording holds the buffer itself (`held`)
/// until its work is done.
pub(crate) struct MapGuard {
    pooled: Arc<Pooled>,
    armed: std::sync::atomic::AtomicBool,
    /// The unmap runs inside the runtime's error scopes, and not at all once the device is known
    /// lost: after a loss the buffer may be destroyed, and unmapping a destroyed buffer is an
    /// error that would otherwise reach the device's uncaptured-error handler.
    rt: Arc<Runtime>,
}

impl MapGuard {
    pub(crate) fn new(rt: &Arc<Runtime>, p: Pooled) -> MapGuard {
        MapGuard { pooled: Arc::new(p), armed: std::sync::atomic::AtomicBool::new(false), rt: rt.clone() }
    }
    /// Marks the buffer as mapped or mapping (its mapping was submitted): only then does
    /// dropping the guard unmap it (unmapping a buffer that is not mapped is an error).
    pub(crate) fn arm(&self) {
        self.armed.store(true, std::sync::atomic::Ordering::SeqCst);
    }
    /// The mapping failed: the buffer is not mapped, and dropping the guard leaves it so.
    pub(crate) fn disarm(&self) {
        self.armed.store(false, std::sync::atomic::Ordering::SeqCst);
    }
    pub(crate) fn held(&self) -> Arc<Pooled> {
        self.pooled.clone()
    }
    pub(crate) fn buffer(&self) -> &wgpu::Buffer {
        self.pooled.buffer()
    }
}

impl Drop for MapGuard {
    fn drop(&mut self) {
        if !self.armed.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        // `scoped` fails at once when the device is known lost, and catches the error of
        // unmapping a buffer that a loss not known yet destroyed: nothing to report from a drop.
        let _ = self.rt.scoped("unmap", || {
            self.pooled.buffer().unmap();
            Ok(())
        });
    }
}

/// Eager calls held back (`runtime/deferred.rs`): the runtime's side.
impl Runtime {
    /// The held calls' lock, taken after the GL turn (GL only): `Deferral::lock`.
    pub(crate) fn lock_held(&self) -> Option<crate::runtime::deferred::HeldGuard<'_>> {
        self.deferral.lock(self.errors.gl_turn())
    }

    /// The eager calls' policy.
    pub fn submit_policy(&self) -> SubmitPolicy {
        self.deferral.policy()
    }

    /// Sets the eager calls' policy; what was held back is submitted first.
    pub fn set_submit_policy(self: &Arc<Self>, policy: SubmitPolicy) -> Result<()> {
        self.deferral.set(policy);
        self.submit_held_now("set_submit_policy")
    }

    /// Holds back `rec`, an eager call's recording, where the policy defers (else submits it).
    pub fn defer(self: &Arc<Self>, op: &'static str, rec: Recorder) -> Result<()> {
        // The policy is read under the lock, which `hand_out` takes after switching it off: a
        // call either joins what it then submits, or submits by itself.
        let Some(mut held) = self.lock_held().filter(|_| self.submit_policy() == SubmitPolicy::Deferred) else {
            return submit_recording(self, op, rec).map(drop);
        };
        // An error left by a submission without a caller is this call's, which then does
        // nothing (a retry does not run it twice).
        if let Some(e) = held.take_failure() {
            return Err(e);
        }
        if held.hold(rec) {
            let next = held.next_after();
            submit_after_held(self, op, &mut held, None::<NoWork>)?;
            held.grow(next);
        }
        Ok(())
    }

    /// Submits what is held back, and returns a submission that finishes when everything
    /// submitted so far has (nothing held: no command buffer, the same completion).
    pub fn flush(self: &Arc<Self>, op: &'static str) -> Result<Submission> {
        let Some(mut held) = self.lock_held() else {
            return all_submitted(self, op);
        };
        match submit_after_held(self, op, &mut held, None::<NoWork>)? {
            Some(s) => Ok(s),
            None => all_submitted(self, op),
        }
    }

    /// Submits what is held back, if anything (no completion made); its error is returned.
    pub fn submit_held_now(self: &Arc<Self>, op: &'static str) -> Result<()> {
        match self.lock_held() {
            Some(mut held) => submit_after_held(self, op, &mut held, None::<NoWork>).map(drop),
            None => Ok(()),
        }
    }

    /// Submits what is held back before work goes to the caller (a borrowed encoder, the
    /// device or queue); an error is left for the next call that submits.
    pub fn submit_held(self: &Arc<Self>) {
        // Its error is the oldest one left (taken by this submission, or met by it when none
        // was left): first for the next call, put back under the same hold of the lock.
        if let Some(mut held) = self.lock_held() {
            if let Err(e) = submit_after_held(self, "flush", &mut held, None::<NoWork>) {
                held.put_back(e);
            }
        }
    }

    /// The device or queue goes to the caller: what is held back is submitted, and eager
    /// calls submit at once from now on. An error is left for the next call that submits.
    pub fn hand_out(self: &Arc<Self>) {
        if self.deferral.set(SubmitPolicy::EachCall) == SubmitPolicy::Deferred {
            self.submit_held();
        }
    }
}
