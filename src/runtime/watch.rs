//! Writes to a captured graph's constants, counted: the buffers that a graph's run-once work
//! (weight packing, a folded transpose) read from outside the capture. A replay encoded after
//! one of them was written runs that work again first, so that the replay reads what the eager
//! calls would (a weight updated in place by an eager call, or by another graph's replay).
//! The counts a run-once work ran with are noted only once the crate has submitted it
//! ([`Constants::commit`]): a command buffer dropped unsubmitted or failed leaves it stale. A
//! replay in a command buffer the caller submits (`Batch::finish`, `record_into`) runs the
//! work every time, since the crate cannot see whether or when that command buffer runs.
//! Likewise a write in a command buffer the caller submits: its buffers are pending
//! ([`Watch::pending_until_done`]) from its encoding until that work is done on the GPU (or
//! the command buffer is dropped unsubmitted), and every replay meanwhile runs the work again
//! (the write may run before it); once done, they count as written once more.
//!
//! Writes are counted as the crate encodes them ([`crate::runtime::record::encode`]): a
//! replay's check sees every write encoded before it (the eager calls held back are encoded
//! ahead of a recording's commands). The crate encodes and submits each command buffer of its
//! own under one lock (the held calls', `submit::encode_and_submit`; a tuning's measurements,
//! which write only scratch buffers, encode before it), so that is the order the
//! GPU runs them in, whatever thread made them: a write another thread submits while this one
//! replays is counted and runs either before the replay's check or after its submission. Writes
//! the crate does not encode (the caller's own commands or `queue.write_buffer` into a tensor's
//! buffer) are not counted: a caller's buffer ([`crate::DeviceTensor::from_buffer`]) is never a
//! constant of a graph for that reason.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::runtime::fxhash::{FxHashMap, FxHashSet};
use crate::runtime::lock::lock;
use crate::runtime::record::Command;

/// The write counts of the buffers some live graph watches.
#[derive(Default)]
pub(crate) struct Watch {
    /// How many buffers are watched: 0 skips the count (no graph with constants is alive).
    watched: AtomicUsize,
    /// Per buffer: its writes so far, and the graphs watching it.
    counts: Mutex<FxHashMap<wgpu::Buffer, (u64, usize)>>,
    /// How many command buffers the caller submits are pending: 0 skips the list.
    pending_len: AtomicUsize,
    /// Per command buffer the caller submits that writes: the buffers it writes, and whether
    /// its work is done (or the command buffer dropped unsubmitted).
    pending: Mutex<Vec<(Arc<AtomicBool>, FxHashSet<wgpu::Buffer>)>>,
}

/// Set when dropped: held by a command buffer's `on_submitted_work_done` callback, which is
/// dropped once it ran, or with a command buffer dropped unsubmitted.
struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// A captured graph's run-once work and the constants it read, with their write counts when
/// it last ran.
pub(crate) struct Constants {
    /// The run-once commands.
    pub(crate) once: Arc<[Command]>,
    seen: Mutex<Vec<(wgpu::Buffer, u64)>>,
    watch: Arc<Watch>,
}

impl Watch {
    /// Starts watching `buffers` for a graph whose run-once work is `once` (about to run).
    pub(crate) fn constants(self: &Arc<Self>, once: Arc<[Command]>, buffers: Vec<wgpu::Buffer>) -> Arc<Constants> {
        let mut counts = lock(&self.counts);
        let seen = buffers
            .into_iter()
            .map(|b| {
                let e = counts.entry(b.clone()).or_insert((0, 0));
                e.1 += 1;
                let writes = e.0;
                (b, writes)
            })
            .collect();
        self.watched.store(counts.len(), Ordering::Relaxed);
        drop(counts);
        Arc::new(Constants { once, seen: Mutex::new(seen), watch: self.clone() })
    }

    /// Counts the writes of `c` (not of a nested graph: its commands are counted as encoded);
    /// `caller`: where the command buffer is the caller's to submit, collects what it writes.
    // A buffer's `Hash` and `Eq` are those of its id, which never changes.
    #[allow(clippy::mutable_key_type)]
    pub(crate) fn note(&self, c: &Command, caller: Option<&mut FxHashSet<wgpu::Buffer>>) {
        let written = writes(c);
        if let Some(set) = caller {
            set.extend(written.iter().cloned());
        }
        if self.watched.load(Ordering::Relaxed) == 0 {
            return;
        }
        let mut counts = lock(&self.counts);
        for b in written {
            if let Some(e) = counts.get_mut(b) {
                e.0 += 1;
            }
        }
    }

    /// Marks `written`, the buffers a command buffer the caller submits writes (encoded into
    /// `enc`), as pending until its work is done on the GPU or it is dropped unsubmitted (the
    /// entries of those done are forgotten here too, so that the list holds only command
    /// buffers in flight, graph or not).
    #[allow(clippy::mutable_key_type)]
    pub(crate) fn pending_until_done(&self, written: FxHashSet<wgpu::Buffer>, enc: &wgpu::CommandEncoder) {
        if written.is_empty() {
            return;
        }
        let done = Arc::new(AtomicBool::new(false));
        let flag = SetOnDrop(done.clone());
        enc.on_submitted_work_done(move || drop(flag));
        let mut pending = lock(&self.pending);
        self.sweep(&mut pending);
        pending.push((done, written));
        self.pending_len.store(pending.len(), Ordering::Relaxed);
    }

    /// Forgets the entries of `pending` (locked) whose work is done, their buffers counted as
    /// written once more first (under the lock: a check meanwhile sees them pending or
    /// counted, never neither).
    #[allow(clippy::mutable_key_type)]
    fn sweep(&self, pending: &mut Vec<(Arc<AtomicBool>, FxHashSet<wgpu::Buffer>)>) {
        if !pending.iter().any(|(d, _)| d.load(Ordering::Acquire)) {
            return;
        }
        let mut counts = lock(&self.counts);
        pending.retain(|(d, w)| {
            let done = d.load(Ordering::Acquire);
            if done {
                for b in w {
                    if let Some(e) = counts.get_mut(b) {
                        e.0 += 1;
                    }
                }
            }
            !done
        });
        drop(counts);
        self.pending_len.store(pending.len(), Ordering::Relaxed);
    }

    /// Whether one of `bufs` is written by a pending command buffer of the caller's (those
    /// done swept first: [`Watch::sweep`]).
    fn pending(&self, bufs: &[wgpu::Buffer]) -> bool {
        let mut pending = lock(&self.pending);
        self.sweep(&mut pending);
        pending.iter().any(|(_, w)| bufs.iter().any(|b| w.contains(b)))
    }
}

/// The buffers `c` writes (none for a nested graph, whose commands are noted one by one).
fn writes(c: &Command) -> &[wgpu::Buffer] {
    match c {
        Command::Dispatch { storage, reads, .. } => &storage[*reads..],
        Command::Copy { dst, .. } => std::slice::from_ref(dst),
        Command::Clear { buffer, .. } => std::slice::from_ref(buffer),
        Command::Graph(..) => &[],
    }
}

/// A graph's run-once work encoded again, with its constants' write counts then: noted as
/// what it ran with ([`Constants::commit`]) once the crate's submission of it succeeded.
pub(crate) type Rerun = (Arc<Constants>, Vec<u64>);

impl Constants {
    /// The constants' write counts now, where one of them was written since the run-once work
    /// last ran in a submission of the crate's, or is written by a command buffer of the
    /// caller's whose work may not have run yet (`None`: neither).
    pub(crate) fn stale(&self) -> Option<Vec<u64>> {
        // (The seen buffers copied out first: no lock of `seen` is held while another is taken
        // here before `counts`.)
        let pending = self.watch.pending_len.load(Ordering::Relaxed) > 0 && {
            let bufs: Vec<wgpu::Buffer> = lock(&self.seen).iter().map(|(b, _)| b.clone()).collect();
            self.watch.pending(&bufs)
        };
        let counts = lock(&self.watch.counts);
        let seen = lock(&self.seen);
        let now: Vec<u64> = seen.iter().map(|(b, writes)| counts.get(b).map_or(*writes, |&(n, _)| n)).collect();
        (pending || seen.iter().zip(&now).any(|((_, writes), n)| n != writes)).then_some(now)
    }

    /// Notes that the run-once work encoded when the counts were `now` ([`Constants::stale`])
    /// was submitted (counts only grow: a later submission's counts stay).
    pub(crate) fn commit(&self, now: &[u64]) {
        for ((_, writes), &n) in lock(&self.seen).iter_mut().zip(now) {
            *writes = (*writes).max(n);
        }
    }
}

impl Drop for Constants {
    fn drop(&mut self) {
        let mut counts = lock(&self.watch.counts);
        for (b, _) in lock(&self.seen).iter() {
            if let Some(e) = counts.get_mut(b) {
                e.1 -= 1;
                if e.1 == 0 {
                    counts.remove(b);
                }
            }
        }
        self.watch.watched.store(counts.len(), Ordering::Relaxed);
    }
}
