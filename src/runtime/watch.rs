//! Writes to a captured graph's constants, counted: the buffers that a graph's run-once work
//! (weight packing, a folded transpose) read from outside the capture. A replay encoded after
//! one of them was written runs that work again first, so that the replay reads what the eager
//! calls would (a weight updated in place by an eager call, or by another graph's replay).
//! The counts a run-once work ran with are noted only once the crate has submitted it
//! ([`Constants::commit`]): a command buffer dropped unsubmitted or failed leaves it stale. A
//! replay in a command buffer the caller submits (`Batch::finish`, `record_into`) runs the
//! work every time, since the crate cannot see whether or when that command buffer runs.
//!
//! Writes are counted as the crate encodes them ([`crate::runtime::record::encode`]): a
//! replay's check sees every write encoded before it (the eager calls held back are submitted,
//! and so encoded, before a recording that replays a graph with constants is). On one thread
//! that is the order the GPU runs them in; a write encoded on another thread between a replay's
//! encoding and its submission is counted but runs after the replay (a race, as any
//! unsynchronized write racing a replay). Writes
//! the crate does not encode (the caller's own commands or `queue.write_buffer` into a tensor's
//! buffer) are not counted: a caller's buffer ([`crate::DeviceTensor::from_buffer`]) is never a
//! constant of a graph for that reason.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::runtime::fxhash::FxHashMap;
use crate::runtime::lock::lock;
use crate::runtime::record::Command;

/// The write counts of the buffers some live graph watches.
#[derive(Default)]
pub(crate) struct Watch {
    /// How many buffers are watched: 0 skips the count (no graph with constants is alive).
    watched: AtomicUsize,
    /// Per buffer: its writes so far, and the graphs watching it.
    counts: Mutex<FxHashMap<wgpu::Buffer, (u64, usize)>>,
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

    /// Counts the writes of `c` (not of a nested graph: its commands are counted as encoded).
    pub(crate) fn note(&self, c: &Command) {
        if self.watched.load(Ordering::Relaxed) == 0 {
            return;
        }
        let written: &[wgpu::Buffer] = match c {
            Command::Dispatch { storage, reads, .. } => &storage[*reads..],
            Command::Copy { dst, .. } => std::slice::from_ref(dst),
            Command::Clear { buffer, .. } => std::slice::from_ref(buffer),
            Command::Graph(..) => return,
        };
        let mut counts = lock(&self.counts);
        for b in written {
            if let Some(e) = counts.get_mut(b) {
                e.0 += 1;
            }
        }
    }
}

/// A graph's run-once work encoded again, with its constants' write counts then: noted as
/// what it ran with ([`Constants::commit`]) once the crate's submission of it succeeded.
pub(crate) type Rerun = (Arc<Constants>, Vec<u64>);

impl Constants {
    /// The constants' write counts now, where one of them was written since the run-once work
    /// last ran in a submission of the crate's (`None`: nothing was).
    pub(crate) fn stale(&self) -> Option<Vec<u64>> {
        let counts = lock(&self.watch.counts);
        let seen = lock(&self.seen);
        let now: Vec<u64> = seen.iter().map(|(b, writes)| counts.get(b).map_or(*writes, |&(n, _)| n)).collect();
        seen.iter().zip(&now).any(|((_, writes), n)| n != writes).then_some(now)
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
