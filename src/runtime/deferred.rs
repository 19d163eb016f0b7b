//! Eager calls held back and submitted together.
//!
//! On a context that defers ([`SubmitPolicy::Deferred`]), an eager call (`x.add(&y)`,
//! `x.conv2d(..)`, ..) does not submit its recording: the recording joins the runtime's
//! held-back one, and the held-back calls are encoded into one command buffer (their dispatches
//! in one compute pass where they hold no copy or clear) and submitted
//! - just ahead of the next submission of the crate's (a download, a wait, a
//!   [`crate::Batch::submit`], a graph replay, a measurement), in a queue submission of their
//!   own: so every result the crate reads back has run, and a submission that fails (wgpu drops
//!   a submission whole when one of its command buffers fails validation: a caller's buffer
//!   destroyed, say) drops none of the held calls, which returned without an error;
//! - when the held-back calls reach their count: 1 after such a submission, then 2, 4, .. up to
//!   [`MOST_CALLS`], so that the GPU starts on the first call at once and then gets work in
//!   growing pieces while the host records the rest (the counts are fixed, so the same calls
//!   always make the same submissions);
//! - on [`crate::GpuContext::flush`], before a [`crate::Batch::finish`] or
//!   [`crate::GpuContext::record_into`] hands work to the caller, when the context hands out
//!   its device or queue, and when its last handle (context and tensors) is dropped (errors
//!   then have no caller to go to).
//!
//! Nothing outside the crate can see the difference: a program reaches the GPU's results only
//! through the crate's submissions, or through the device and queue, which a context hands out
//! only after submitting what it held and switching to [`SubmitPolicy::EachCall`] (a context
//! made on the caller's device, [`crate::GpuContext::from_device`], starts there). A recording
//! holds its operands as a submitted one does, and the same kernels run with the same uniforms:
//! the same bits either way.
//!
//! An error of held-back work (wgpu's, on the submission that carries it) is returned by the call
//! that submitted it; one that a submission without a caller met (the device or queue handed
//! out) is returned by the next call that submits.
//!
//! Every submission of the crate's takes the held calls' lock, so that the held calls go ahead
//! of it. wgpu runs the callbacks of finished work inside `Queue::submit`, and a callback of
//! the program's may call the crate: on the thread that holds the lock, [`Deferral::lock`] then
//! gives nothing, and the nested call submits at once, as under [`SubmitPolicy::EachCall`]
//! (after the submission that ran it, before any other thread's).
//!
//! On GL the lock is taken after the runtime's GL turn, never the other way round: a poll
//! holds the turn while it runs callbacks, and a callback's call to the crate takes the lock,
//! so a thread that held the lock while it waited for the turn (to submit the held calls)
//! would wait on that callback forever.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::MutexGuard;

use crate::error::Error;
use crate::runtime::errors::GlTurn;
use crate::runtime::record::Recorder;

/// The most eager calls held back before they are submitted.
pub const MOST_CALLS: u32 = 32;

/// How a context's eager calls reach the GPU ([`crate::GpuContext::set_submit_policy`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubmitPolicy {
    /// Each eager call submits its work before it returns: one queue submission a call. What a
    /// context made on the caller's device ([`crate::GpuContext::from_device`]) does, and any
    /// context once it has handed out its device or queue.
    EachCall,
    /// Eager calls are held back and submitted together (this file): ahead of the
    /// crate's next submission (a download, a wait, a batch, a replay), on
    /// [`crate::GpuContext::flush`], and after 1, 2, 4, .. up to 32 calls. What a context the
    /// crate opened does until it hands out its device or queue. The calls held together go
    /// in one command buffer, which wgpu refuses whole when one of them is invalid at
    /// submission (it binds a caller's buffer destroyed after the call): the call that submits
    /// gets the error, and the calls held with the invalid one, which returned `Ok`, have not
    /// run (their outputs keep what they held). Under [`SubmitPolicy::EachCall`] each call's
    /// error is its own.
    Deferred,
}

impl SubmitPolicy {
    /// The policy `STRIDED_WGPU_SUBMIT` names (`each` or `deferred`), else `default`.
    pub(crate) fn from_env(default: SubmitPolicy) -> SubmitPolicy {
        match crate::runtime::env::switch("STRIDED_WGPU_SUBMIT", &["each", "deferred"]) {
            Some("each") => SubmitPolicy::EachCall,
            Some("deferred") => SubmitPolicy::Deferred,
            _ => default,
        }
    }
}

/// The held-back calls of a runtime.
pub(crate) struct Held {
    /// Their recording (uniforms not written yet).
    rec: Recorder,
    /// How many calls it holds.
    calls: u32,
    /// At how many calls it is submitted.
    next: u32,
    /// Errors submissions without a caller met, oldest first, each for a next call that
    /// submits.
    failed: std::collections::VecDeque<Error>,
}

impl Default for Held {
    fn default() -> Held {
        Held { rec: Recorder::default(), calls: 0, next: 1, failed: Default::default() }
    }
}

impl Held {
    /// Takes the held recording (`None` when it holds no command); the count starts again at 1.
    pub(crate) fn take(&mut self) -> Option<Recorder> {
        let rec = std::mem::take(&mut self.rec);
        self.calls = 0;
        self.next = 1;
        (rec.len() > 0).then_some(rec)
    }

    /// Takes the oldest error left for the next call that submits, if any.
    pub(crate) fn take_failure(&mut self) -> Option<Error> {
        self.failed.pop_front()
    }

    /// Holds back `rec`, one more call; whether the held calls are due for submission. The
    /// caller submits them ([`Held::take`]), then sets the next count ([`Held::grow`]).
    pub(crate) fn hold(&mut self, rec: Recorder) -> bool {
        self.rec.append_unwritten(rec);
        self.calls += 1;
        self.calls >= self.next
    }

    /// The count after the held calls were submitted when due: twice this one, at most
    /// [`MOST_CALLS`].
    pub(crate) fn next_after(&self) -> u32 {
        (self.next * 2).min(MOST_CALLS)
    }

    /// Sets the count at which the held calls are submitted next.
    pub(crate) fn grow(&mut self, next: u32) {
        self.next = next;
    }

    /// Leaves `e` for a next call that submits, after those left before it.
    pub(crate) fn fail(&mut self, e: Error) {
        self.failed.push_back(e);
    }

    /// Leaves `e` (taken by a submission that found no caller to return it to) for the next
    /// call that submits, before the others.
    pub(crate) fn put_back(&mut self, e: Error) {
        self.failed.push_front(e);
    }
}

/// Whether eager calls are held back, and what is held.
pub(crate) struct Deferral {
    on: AtomicBool,
    held: std::sync::Mutex<Held>,
}

thread_local! {
    /// The deferrals whose lock this thread holds (their addresses).
    static LOCKED: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

/// The held calls, locked by this thread until dropped, and the runtime's GL turn taken
/// before them (GL only; released after them).
pub(crate) struct HeldGuard<'a> {
    held: MutexGuard<'a, Held>,
    key: usize,
    _turn: Option<GlTurn<'a>>,
}

impl std::ops::Deref for HeldGuard<'_> {
    type Target = Held;
    fn deref(&self) -> &Held {
        &self.held
    }
}

impl std::ops::DerefMut for HeldGuard<'_> {
    fn deref_mut(&mut self) -> &mut Held {
        &mut self.held
    }
}

impl Drop for HeldGuard<'_> {
    fn drop(&mut self) {
        LOCKED.with(|l| l.borrow_mut().retain(|&k| k != self.key));
    }
}

impl Deferral {
    pub(crate) fn new(policy: SubmitPolicy) -> Deferral {
        Deferral { on: AtomicBool::new(policy == SubmitPolicy::Deferred), held: Default::default() }
    }

    /// The held calls, locked after `turn` (the runtime's GL turn, taken by the caller:
    /// [`Runtime::lock_held`](crate::runtime::Runtime::lock_held)); `None` where this thread
    /// holds them already (a callback that wgpu runs inside the crate's own submission,
    /// calling the crate: module docs).
    pub(crate) fn lock<'a>(&'a self, turn: Option<GlTurn<'a>>) -> Option<HeldGuard<'a>> {
        let key = self as *const Deferral as usize;
        if LOCKED.with(|l| l.borrow().contains(&key)) {
            return None;
        }
        let held = crate::runtime::lock::lock(&self.held);
        LOCKED.with(|l| l.borrow_mut().push(key));
        Some(HeldGuard { held, key, _turn: turn })
    }

    /// The held calls, where nothing else can reach them (the runtime's drop; a thread that
    /// panicked holding them left them whole, `lock.rs`).
    pub(crate) fn held_mut(&mut self) -> &mut Held {
        self.held.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The policy now.
    pub(crate) fn policy(&self) -> SubmitPolicy {
        match self.on.load(Ordering::SeqCst) {
            true => SubmitPolicy::Deferred,
            false => SubmitPolicy::EachCall,
        }
    }

    /// Sets the policy; returns the one it replaced.
    pub(crate) fn set(&self, policy: SubmitPolicy) -> SubmitPolicy {
        match self.on.swap(policy == SubmitPolicy::Deferred, Ordering::SeqCst) {
            true => SubmitPolicy::Deferred,
            false => SubmitPolicy::EachCall,
        }
    }
}

