//! Error capture: the crate's own error scopes around each call, device loss, and the GL turn.
//!
//! On a device the host program owns (`GpuContext::from_device`) the crate never installs an
//! uncaptured-error handler or a device-lost callback: those belong to the host. On a device the
//! crate created it installs an uncaptured-error handler that ignores errors (wgpu's default
//! panics); nothing of the crate's own relies on it. Each crate call pushes validation, out-of-memory and internal scopes,
//! does its device work and pops them. wgpu's scopes are per thread, so the host's own work on
//! any thread is never caught by them, and an error of the host's never fails a crate call, with
//! one exception: wgpu runs the callbacks of finished work (the host's `map_async` and
//! work-done callbacks too) inside the crate's `Queue::submit` and polls, under the crate's
//! scopes, so an error a host callback causes there fails that crate call (whose work was
//! submitted all the same).
//!
//! Popping a scope gives a future. On native backends it is ready at once and is read without
//! waiting (one poll); on WebGPU it settles later, so it is kept and awaited by the next async
//! completion of the crate ([`Capture::settle`]): there the error comes back from that await.
//!
//! wgpu reports device loss only to the device-lost callback, not to scopes: on a device the
//! crate opened, the crate's callback sets the flag every call checks first; on a host's
//! device (`from_device`) the callback is the host's, and the crate learns of a loss where
//! wgpu tells every caller: a failed poll, a failed buffer map, a
//! submission that can no longer complete, or a probe (`Runtime::probe`: a buffer a lost device
//! cannot make) at each entry point and wherever a completion resolves. A device destroyed
//! after a submission still runs the work submitted (WebGPU's `destroy`) and then destroys its
//! buffers: the probe is what turns such a wait or download into a loss. From then on every
//! call returns [`Error::DeviceLost`], and nothing the crate does after it reaches a handler:
//! a mapped buffer's unmap runs in the crate's scopes, not at all once the loss is known.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use crate::error::{Error, Result};
use crate::runtime::lock::lock;

type ScopeFuture = Pin<Box<dyn Future<Output = Option<wgpu::Error>> + Send>>;

/// The crate's error state for one device.
pub(crate) struct Capture {
    /// Set once the device is known lost (also by the device-lost callback of a device the
    /// crate opened: [`Capture::lost_flag`]).
    lost: Arc<Mutex<Option<String>>>,
    /// Scope results not yet settled (WebGPU), with the operation that pushed them.
    /// Each with whether its scopes made a buffer or a pipeline (a late error of those bumps
    /// the epoch).
    pending: Mutex<Vec<(&'static str, bool, ScopeFuture)>>,
    /// The first error among settled ones not yet reported (WebGPU).
    deferred: Mutex<Option<Error>>,
    /// On the GL backend, one thread at a time does this crate's device work (see `gl_turn`).
    gl_turn: Option<Arc<Mutex<()>>>,
    /// How many errors scopes reported after their call had returned (WebGPU; 0 natively,
    /// where every scope settles in its call). Handles made before one may be invalid (a
    /// buffer whose creation ran out of memory, a pipeline that failed): the buffer pool, the
    /// pipeline cache and the bind groups drop what they kept from before it ([`Capture::epoch`]).
    epoch: Arc<std::sync::atomic::AtomicU64>,
    /// The pending list's length at which [`Capture::drain`] polls it next: twice what the
    /// last drain left (a synchronous stretch of calls, whose scopes a browser settles only
    /// when its event loop runs, polls each pending result O(1) times, not once a call).
    drain_at: std::sync::atomic::AtomicUsize,
}

/// The pending scope results at which a drain first polls them.
const FIRST_DRAIN: usize = 8;

thread_local! {
    /// The error state whose scopes this thread has open (its address; 0: none).
    static OPEN_SCOPE: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// Whether this thread holds a GL turn of some runtime (`scoped` nests).
    static IN_GL_TURN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// A held GL turn; dropping it passes the turn on.
pub(crate) struct GlTurn<'a> {
    _guard: MutexGuard<'a, ()>,
}

impl Drop for GlTurn<'_> {
    fn drop(&mut self) {
        IN_GL_TURN.with(|c| c.set(false));
    }
}

/// Polls a future once, with a waker that does nothing.
pub(crate) fn poll_once<F: Future + ?Sized>(f: Pin<&mut F>) -> Poll<F::Output> {
    f.poll(&mut Context::from_waker(Waker::noop()))
}

impl Capture {
    pub fn new(gl: bool) -> Capture {
        Capture { lost: Arc::new(Mutex::new(None)), pending: Mutex::new(Vec::new()), deferred: Mutex::new(None), gl_turn: gl.then(|| Arc::new(Mutex::new(()))), epoch: Default::default(), drain_at: FIRST_DRAIN.into() }
    }

    /// The count of errors met after their call returned (see the field): what the buffer
    /// pool, the pipeline cache and the bind groups compare with the count their handles were
    /// kept at.
    pub fn epoch(&self) -> Arc<std::sync::atomic::AtomicU64> {
        self.epoch.clone()
    }

    /// [`Capture::epoch`]'s count now.
    pub fn epoch_now(&self) -> u64 {
        self.epoch.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Counts an error met after its call returned.
    pub(crate) fn late_error(&self) {
        self.epoch.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    /// Runs `f` inside validation, out-of-memory and internal error scopes and returns what
    /// they caught as [`Error::Gpu`] for `op`. Fails at once when the device is known lost.
    /// Inside another call's scopes of this device on this thread, `f` runs in those (what it
    /// causes fails the outer call): a recorded op pushes and pops its scopes once.
    pub fn scoped<T>(&self, device: &wgpu::Device, op: &'static str, f: impl FnOnce() -> Result<T>) -> Result<T> {
        self.check_lost(op)?;
        if OPEN_SCOPE.with(|c| c.get()) == self as *const Capture as usize {
            return f();
        }
        self.scoped_fresh(device, op, f)
    }

    /// [`Capture::scoped`] in scopes of its own, also inside another call's: for work whose
    /// caller handles its errors (a pipeline that does not compile is not cached).
    pub fn scoped_fresh<T>(&self, device: &wgpu::Device, op: &'static str, f: impl FnOnce() -> Result<T>) -> Result<T> {
        self.scoped_in(device, op, false, f)
    }

    /// [`Capture::scoped_fresh`], where `creates` says the scopes make a buffer or a pipeline
    /// the crate keeps (pool, cache): their error found late counts in [`Capture::epoch`].
    pub(crate) fn scoped_in<T>(&self, device: &wgpu::Device, op: &'static str, creates: bool, f: impl FnOnce() -> Result<T>) -> Result<T> {
        self.check_lost(op)?;
        let _turn = self.gl_turn();
        let open = OpenScope::set(self as *const Capture as usize);
        let internal = device.push_error_scope(wgpu::ErrorFilter::Internal);
        let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let out = f();
        drop(open);
        self.drain();
        let mut caught = None;
        for guard in [validation, oom, internal] {
            // Boxed by the crate only when it has not settled (WebGPU; wgpu boxes its own
            // future inside): on native backends it is ready.
            let mut fut = guard.pop();
            match poll_once(Pin::new(&mut fut)) {
                Poll::Ready(Some(e)) => {
                    caught.get_or_insert(e);
                }
                Poll::Ready(None) => {}
                Poll::Pending => lock(&self.pending).push((op, creates, Box::pin(fut))),
            }
        }
        if let Some(e) = caught {
            return Err(Error::Gpu { op, message: describe(&e) });
        }
        self.check_lost(op)?;
        out
    }

    /// Drops the pending scope results that have settled without an error, and keeps the
    /// first error among them for the next [`Capture::settle`] (so that they do not pile up
    /// where nothing awaits, as when the host submits the crate's recordings).
    fn drain(&self) {
        use std::sync::atomic::Ordering;
        let mut pending = lock(&self.pending);
        if pending.len() < self.drain_at.load(Ordering::Relaxed) {
            return;
        }
        let mut found = None;
        let mut created = false;
        pending.retain_mut(|(op, creates, fut)| match poll_once(fut.as_mut()) {
            Poll::Pending => true,
            Poll::Ready(None) => false,
            Poll::Ready(Some(e)) => {
                created |= *creates;
                found.get_or_insert(Error::Gpu { op, message: describe(&e) });
                false
            }
        });
        self.drain_at.store((2 * pending.len()).max(FIRST_DRAIN), Ordering::Relaxed);
        if created {
            self.late_error();
        }
        if let Some(e) = found {
            lock(&self.deferred).get_or_insert(e);
        }
    }

    /// Awaits the scope results that were not ready when their call returned (WebGPU) and
    /// returns the first error among them. A settle dropped before it finished (its caller's
    /// future cancelled, a race against a timeout) puts back what it had not awaited and keeps
    /// the error it had found, for the next settle.
    pub async fn settle(&self) -> Result<()> {
        /// What a settle holds: given back when it is dropped unfinished.
        struct Rest<'a> {
            cap: &'a Capture,
            left: std::collections::VecDeque<(&'static str, bool, ScopeFuture)>,
            first: Option<Error>,
        }
        impl Drop for Rest<'_> {
            fn drop(&mut self) {
                // Its error is older than any a drain found meanwhile: first.
                if let Some(e) = self.first.take() {
                    *lock(&self.cap.deferred) = Some(e);
                }
                // A future whose poll panicked is not polled again.
                if std::thread::panicking() {
                    self.left.pop_front();
                }
                if !self.left.is_empty() {
                    // Ahead of those pushed meanwhile, in their order.
                    let mut pending = lock(&self.cap.pending);
                    let newer = std::mem::take(&mut *pending);
                    pending.extend(self.left.drain(..));
                    pending.extend(newer);
                }
            }
        }
        let left = std::mem::take(&mut *lock(&self.pending)).into();
        self.drain_at.store(FIRST_DRAIN, std::sync::atomic::Ordering::Relaxed);
        let first = lock(&self.deferred).take();
        let mut rest = Rest { cap: self, left, first };
        while let Some((op, creates, fut)) = rest.left.front_mut() {
            let (op, creates) = (*op, *creates);
            // Awaited in place: a cancellation here leaves it in `left`.
            let r = fut.as_mut().await;
            rest.left.pop_front();
            if let Some(e) = r {
                if creates {
                    self.late_error();
                }
                rest.first.get_or_insert(Error::Gpu { op, message: describe(&e) });
            }
        }
        rest.first.take().map_or(Ok(()), Err)
    }

    /// The flag [`Capture::check_lost`] reads, for a device-lost callback to set (it holds no
    /// runtime: a callback the device keeps must not keep the device's runtime alive).
    pub fn lost_flag(&self) -> Arc<Mutex<Option<String>>> {
        self.lost.clone()
    }

    /// Records that the device is lost, and returns the error for `op` (naming the first
    /// report of the loss).
    pub fn lost(&self, op: &'static str, detail: impl Into<String>) -> Error {
        let detail = lock(&self.lost).get_or_insert_with(|| detail.into()).clone();
        Error::DeviceLost { op, detail }
    }

    /// Fails when the device is known lost.
    pub fn check_lost(&self, op: &'static str) -> Result<()> {
        match &*lock(&self.lost) {
            Some(detail) => Err(Error::DeviceLost { op, detail: detail.clone() }),
            None => Ok(()),
        }
    }

    /// On the GL backend, waits for this thread's turn at the device. wgpu drives GL through one
    /// context behind a lock that panics when a thread waits for it longer than a few seconds
    /// (`CONTEXT_LOCK_TIMEOUT_SECS` in wgpu-hal), and a shader compile or a wait for a long
    /// dispatch on llvmpipe holds it that long. Every crate call that reaches the device runs
    /// inside `scoped` or a wait, so threads sharing a device queue on this mutex instead, which
    /// has no timeout. `None` on other backends, and when this thread already holds a GL turn.
    pub fn gl_turn(&self) -> Option<GlTurn<'_>> {
        turn(&self.gl_turn)
    }

    /// The GL turn's mutex, for the buffer pool (which destroys buffers).
    pub fn gl_lock(&self) -> Option<Arc<Mutex<()>>> {
        self.gl_turn.clone()
    }
}

/// Runs `f` outside any call's scopes as far as the crate's calls can tell (wgpu's scopes stay
/// pushed, and catch what `f` causes): a `Queue::submit`, whose callbacks of finished work may
/// call the crate, whose calls then push scopes of their own and get their own errors.
pub(crate) fn outside_scopes<T>(f: impl FnOnce() -> T) -> T {
    let _open = OpenScope::set(0);
    f()
}

/// This thread's open scope set to another's until dropped, also when the code between
/// unwinds (a caught panic of wgpu's left it set, and every later call on the thread took
/// itself for a nested one and pushed no scopes: its errors went uncaught).
struct OpenScope(usize);

impl OpenScope {
    fn set(scope: usize) -> OpenScope {
        OpenScope(OPEN_SCOPE.with(|c| c.replace(scope)))
    }
}

impl Drop for OpenScope {
    fn drop(&mut self) {
        OPEN_SCOPE.with(|c| c.set(self.0));
    }
}

/// A wgpu error with its detail: the `description` of validation and internal errors (the
/// top-level text alone says only "Validation Error"), else the source chain.
pub(crate) fn describe(e: &wgpu::Error) -> String {
    match e {
        wgpu::Error::Validation { description, .. } => format!("validation error: {}", description.trim()),
        wgpu::Error::Internal { description, .. } => format!("internal error: {}", description.trim()),
        wgpu::Error::OutOfMemory { source } => format!("out of memory: {source}"),
    }
}

/// Takes the GL turn of `m` (`None` off GL, or when this thread holds a turn already).
pub(crate) fn turn(m: &Option<Arc<Mutex<()>>>) -> Option<GlTurn<'_>> {
    let m = m.as_ref()?;
    if IN_GL_TURN.with(|c| c.get()) {
        return None;
    }
    let guard = lock(m);
    IN_GL_TURN.with(|c| c.set(true));
    Some(GlTurn { _guard: guard })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A settle dropped before it finished (a cancelled await) puts back the scope results it
    /// had not awaited and keeps the error it had found: the next settle reports it (they were
    /// dropped with the settle).
    #[test]
    fn a_cancelled_settle_keeps_what_it_had_not_reported() {
        let cap = Capture::new(false);
        let error = || wgpu::Error::Validation { source: Box::new(std::io::Error::other("test")), description: "the first call's error".into() };
        let failed: ScopeFuture = Box::pin(std::future::ready(Some(error())));
        let never: ScopeFuture = Box::pin(std::future::pending());
        lock(&cap.pending).extend([("first", true, failed), ("second", false, never)]);
        let mut settle = Box::pin(cap.settle());
        assert!(poll_once(settle.as_mut()).is_pending());
        drop(settle);
        assert_eq!(lock(&cap.pending).len(), 1, "the result not awaited is put back");
        assert!(matches!(&*lock(&cap.deferred), Some(Error::Gpu { op: "first", .. })), "the error found is kept");
        // The next settle reports it (the pending one put back dropped here, never ready).
        lock(&cap.pending).clear();
        assert!(matches!(poll_once(Box::pin(cap.settle()).as_mut()), Poll::Ready(Err(Error::Gpu { op: "first", .. }))));
    }
}
