//! A recording as values: the commands of a batch or of a captured graph, their uniforms in one
//! arena written once, and what the recording holds.
//!
//! Kernel families append [`Command`]s to a [`Recorder`] (a dispatch with its pipeline, bind
//! group and grid; a buffer copy; a clear); nothing reaches an encoder until the recording is
//! encoded ([`Recorder::encode`]). Encoding puts consecutive dispatches into one compute pass,
//! opening a new pass only after a copy or a clear (commands of the encoder itself, which wgpu
//! does not take inside a pass). The same commands encode again for every replay of a captured
//! graph: wgpu cannot resubmit a command buffer, so a replay re-encodes from what was cached
//! (pipelines, bind groups, uniforms, buffers), which costs the host a few calls a dispatch.
//!
//! Uniforms go into slots of [`SLOT_BYTES`] in a few pooled buffers ("chunks") whose bytes are
//! kept on the host and written once when the recording is encoded or captured, before its
//! command buffer runs: a batch of the crate's own encoder copies them from its device-loss
//! probe's buffer ahead of its commands ([`Recorder::take_unwritten`],
//! `submit::encode_recording`); captures, batches in the caller's encoder and the timer's
//! recordings with queue writes ([`Recorder::flush`]: a queue's writes land before the command
//! buffers submitted after them).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::error::Result;
use crate::runtime::pool::Pooled;
pub(crate) use crate::runtime::watch::{Constants, Rerun, Watch};

/// Everything a recording holds until the GPU has finished with it: values boxed, and shared
/// ones (a tensor's storage, held by every op that binds it) as they are, without a box each.
#[derive(Default)]
pub(crate) struct Keep {
    boxed: Vec<Box<dyn std::any::Any + Send + Sync>>,
    shared: Vec<Arc<dyn std::any::Any + Send + Sync>>,
    /// The graphs' run-once work encoded again into the crate's command buffer, committed when
    /// the crate submits it ([`Keep::take_reruns`]); not part of what is held.
    pub(crate) reruns: Vec<Rerun>,
}

impl Keep {
    /// Holds `t` until the recording's work is done.
    pub fn hold<T: Send + Sync + 'static>(&mut self, t: T) {
        self.boxed.push(Box::new(t));
    }
    /// Holds the shared `t` until the recording's work is done (no allocation but the list's).
    pub fn hold_shared<T: Send + Sync + 'static>(&mut self, t: Arc<T>) {
        self.shared.push(t);
    }
    /// The shared things held (tensors' storages among them).
    pub fn shared(&self) -> impl Iterator<Item = &(dyn std::any::Any + Send + Sync)> {
        self.shared.iter().map(|a| &**a)
    }
    /// Takes over everything `other` holds.
    pub fn absorb(&mut self, mut other: Keep) {
        self.boxed.append(&mut other.boxed);
        self.shared.append(&mut other.shared);
        self.reruns.append(&mut other.reruns);
    }
    /// The run-once work encoded again ([`Keep::reruns`]), for the submission to commit.
    pub fn take_reruns(&mut self) -> Vec<Rerun> {
        std::mem::take(&mut self.reruns)
    }
    /// Hands everything held to `encoder`: it is dropped when the encoder's command buffer has
    /// finished on the GPU, or with the encoder if that is never submitted.
    pub fn attach(&mut self, encoder: &wgpu::CommandEncoder) {
        if !self.boxed.is_empty() || !self.shared.is_empty() {
            let reruns = self.take_reruns();
            let held = std::mem::replace(self, Keep { reruns, ..Keep::default() });
            encoder.on_submitted_work_done(move || drop(held));
        }
    }
}

/// Bytes of one uniform slot (the largest uniform offset alignment WebGPU allows).
pub(crate) const SLOT_BYTES: u64 = 256;

/// Slots of the largest uniform chunk (64 KiB).
const CHUNK_SLOTS: u64 = 256;

/// An upload of new uniform bytes into a chunk: its buffer, the offset there, the offset in the
/// uploaded bytes, the length ([`Recorder::take_unwritten`]).
pub(crate) type UniformCopy = (wgpu::Buffer, u64, u64, u64);

/// One recorded command.
#[derive(Clone)]
pub(crate) enum Command {
    /// A dispatch of `pipeline` with bind group 0 `group` over `grid` workgroups; `op` names the
    /// crate operation that recorded it (for profiles).
    /// `storage` holds the storage buffers it binds, those bound read-only first: the first
    /// `reads` of them are read, the rest written (one list, one allocation a dispatch).
    Dispatch { op: &'static str, kernel: &'static str, pipeline: Arc<wgpu::ComputePipeline>, group: wgpu::BindGroup, grid: (u32, u32), storage: Vec<wgpu::Buffer>, reads: usize },
    /// `size` bytes from `src` at `src_offset` to `dst` at `dst_offset`.
    Copy { src: wgpu::Buffer, src_offset: u64, dst: wgpu::Buffer, dst_offset: u64, size: u64 },
    /// Zeroes `buffer` from `offset` (to its end when `size` is `None`).
    Clear { buffer: wgpu::Buffer, offset: u64, size: Option<u64> },
    /// A captured graph's commands, replayed in place (shared, not copied), and its run-once
    /// work with the constants it read (run again first where one was written since).
    Graph(Arc<[Command]>, Option<Arc<Constants>>),
}

/// What a recording cost the GPU: counted when it is encoded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecordCounts {
    /// Command buffers submitted.
    pub submits: u64,
    /// Compute passes encoded.
    pub passes: u64,
    /// Dispatches encoded.
    pub dispatches: u64,
    /// Buffer copies and clears encoded.
    pub transfers: u64,
}

/// The runtime's running totals of [`RecordCounts`].
#[derive(Default)]
pub(crate) struct Counters {
    submits: AtomicU64,
    passes: AtomicU64,
    dispatches: AtomicU64,
    transfers: AtomicU64,
}

impl Counters {
    pub fn add(&self, c: RecordCounts) {
        self.submits.fetch_add(c.submits, Ordering::Relaxed);
        self.passes.fetch_add(c.passes, Ordering::Relaxed);
        self.dispatches.fetch_add(c.dispatches, Ordering::Relaxed);
        self.transfers.fetch_add(c.transfers, Ordering::Relaxed);
    }
    pub fn get(&self) -> RecordCounts {
        RecordCounts {
            submits: self.submits.load(Ordering::Relaxed),
            passes: self.passes.load(Ordering::Relaxed),
            dispatches: self.dispatches.load(Ordering::Relaxed),
            transfers: self.transfers.load(Ordering::Relaxed),
        }
    }
}

/// The counts since `o` (`after - before`); each saturates at 0 (an earlier count minus a later
/// one is not an overflow panic).
impl std::ops::Sub for RecordCounts {
    type Output = RecordCounts;
    fn sub(self, o: RecordCounts) -> RecordCounts {
        RecordCounts {
            submits: self.submits.saturating_sub(o.submits),
            passes: self.passes.saturating_sub(o.passes),
            dispatches: self.dispatches.saturating_sub(o.dispatches),
            transfers: self.transfers.saturating_sub(o.transfers),
        }
    }
}

/// A pooled uniform buffer of `slots` slots and the bytes of the slots used so far; `written`
/// of them are in the buffer already.
struct Chunk {
    buffer: Arc<Pooled>,
    slots: u64,
    bytes: Vec<u8>,
    written: usize,
}

/// Commands being recorded, the uniforms they bind, and what they hold.
#[derive(Default)]
pub(crate) struct Recorder {
    commands: Vec<Command>,
    chunks: Vec<Chunk>,
    keep: Keep,
    /// Buffers made while this recording was captured (see [`split_constants`]).
    pub fresh: Vec<wgpu::Buffer>,
    /// In a graph being captured: the last op appended, for fusing the next one into it (the
    /// index of its first command, and the tensor layer's description of it, `gpu/fuse.rs`).
    pub tail: Option<Tail>,
}

/// The last op of a capture: the index of its first command and what the tensor layer knows
/// of it (opaque here).
pub(crate) type Tail = (usize, Box<dyn std::any::Any + Send + Sync>);

impl Recorder {
    /// Holds `t` until the recording's work is done (for a captured graph: as long as the graph).
    pub fn hold<T: Send + Sync + 'static>(&mut self, t: T) {
        self.keep.hold(t)
    }

    /// [`Recorder::hold`] of a shared value (a tensor's storage), without a box of its own.
    pub fn hold_shared<T: Send + Sync + 'static>(&mut self, t: Arc<T>) {
        self.keep.hold_shared(t)
    }

    /// Whether the recording replays a captured graph.
    pub fn replays_graph(&self) -> bool {
        self.commands.iter().any(|c| matches!(c, Command::Graph(..)))
    }

    /// The commands recorded so far.
    pub fn len(&self) -> usize {
        self.commands.len()
    }

    /// Takes out the commands from index `from` on (what they hold stays held: a captured op
    /// recorded again, its first recording replaced; see `gpu/fuse.rs`).
    pub fn split_off(&mut self, from: usize) -> Vec<Command> {
        self.commands.split_off(from.min(self.commands.len()))
    }

    /// Records a dispatch.
    pub fn dispatch(&mut self, dispatch: Command) {
        debug_assert!(matches!(dispatch, Command::Dispatch { .. }));
        self.commands.push(dispatch);
    }

    /// Records a buffer-to-buffer copy (the pass in progress ends before it).
    pub fn copy_buffer_to_buffer(&mut self, src: &wgpu::Buffer, src_offset: u64, dst: &wgpu::Buffer, dst_offset: u64, size: u64) {
        self.commands.push(Command::Copy { src: src.clone(), src_offset, dst: dst.clone(), dst_offset, size });
    }

    /// Records a replay of a captured graph's `commands` (after its run-once work again where
    /// one of its `constants` was written since that ran); `held` keeps what they use.
    pub fn replay<T: Send + Sync + 'static>(&mut self, commands: &Arc<[Command]>, constants: Option<&Arc<Constants>>, held: T) {
        self.commands.push(Command::Graph(commands.clone(), constants.cloned()));
        self.keep.hold(held);
    }

    /// Records zeroing `buffer` from `offset` (to its end for `None`).
    pub fn clear_buffer(&mut self, buffer: &wgpu::Buffer, offset: u64, size: Option<u64>) {
        self.commands.push(Command::Clear { buffer: buffer.clone(), offset, size });
    }

    /// Places `bytes` (at most [`SLOT_BYTES`]) in a uniform slot; returns its buffer and
    /// offset. `chunk(size)` makes a uniform buffer (`UNIFORM | COPY_DST`) of `size` bytes when
    /// the last is full: call inside the runtime's error scopes.
    pub fn uniform(&mut self, bytes: &[u8], chunk: impl FnOnce(u64) -> Result<Pooled>) -> Result<(wgpu::Buffer, u64)> {
        debug_assert!(bytes.len() as u64 <= SLOT_BYTES);
        let full = self.chunks.last().is_none_or(|c| c.bytes.len() as u64 >= c.slots * SLOT_BYTES);
        if full {
            // A recording of one op gets one slot's chunk; longer ones chunks of 4, 16, .. slots.
            let slots = self.chunks.last().map_or(1, |c| (c.slots * 4).min(CHUNK_SLOTS));
            let buffer = chunk(slots * SLOT_BYTES)?;
            self.chunks.push(Chunk { buffer: Arc::new(buffer), slots, bytes: Vec::with_capacity((slots * SLOT_BYTES) as usize), written: 0 });
        }
        let c = self.chunks.last_mut().expect("a chunk with room");
        let offset = c.bytes.len() as u64;
        c.bytes.extend_from_slice(bytes);
        c.bytes.resize((offset + SLOT_BYTES) as usize, 0);
        Ok((c.buffer.buffer().clone(), offset))
    }

    /// Writes the uniforms placed since the last flush into their buffers (one queue write a
    /// chunk). They land before any command buffer submitted after this call.
    pub fn flush(&mut self, queue: &wgpu::Queue) {
        for c in &mut self.chunks {
            if c.written < c.bytes.len() {
                queue.write_buffer(c.buffer.buffer(), c.written as u64, &c.bytes[c.written..]);
                c.written = c.bytes.len();
            }
        }
    }

    /// The bytes of the uniforms placed since the last flush.
    pub fn unwritten_bytes(&self) -> usize {
        self.chunks.iter().map(|c| c.bytes.len() - c.written).sum()
    }

    /// The uniforms placed since the last flush, for an upload the caller records instead of
    /// the queue writes of [`Recorder::flush`]: their bytes end to end, and for each chunk with
    /// new bytes (its buffer, the offset there, the offset in the bytes, the length; all whole
    /// slots, so multiples of 4). They count as written from then on.
    pub fn take_unwritten(&mut self) -> (Vec<u8>, Vec<UniformCopy>) {
        let mut bytes = Vec::new();
        let mut copies = Vec::new();
        for c in &mut self.chunks {
            if c.written < c.bytes.len() {
                let len = (c.bytes.len() - c.written) as u64;
                copies.push((c.buffer.buffer().clone(), c.written as u64, bytes.len() as u64, len));
                bytes.extend_from_slice(&c.bytes[c.written..]);
                c.written = c.bytes.len();
            }
        }
        (bytes, copies)
    }

    /// Appends another recording whose uniforms are not written yet (an eager call held back,
    /// `runtime/deferred.rs`): its uniform chunks join this recording's, and are written with
    /// them when it is encoded.
    pub fn append_unwritten(&mut self, mut other: Recorder) {
        self.fresh.append(&mut other.fresh);
        self.commands.append(&mut other.commands);
        self.chunks.append(&mut other.chunks);
        self.keep.absorb(std::mem::take(&mut other.keep));
    }

    /// Appends another recording's commands and holdings after this one's; its uniforms must
    /// have been flushed (they are bound where they are).
    pub fn append(&mut self, mut other: Recorder) {
        debug_assert!(other.chunks.iter().all(|c| c.written == c.bytes.len()), "appending a recording whose uniforms were not written");
        self.fresh.append(&mut other.fresh);
        self.commands.append(&mut other.commands);
        for c in other.chunks.drain(..) {
            self.keep.hold(c.buffer);
        }
        // Absorbed, not boxed: a capture finds the caller's buffers among what it holds.
        self.keep.absorb(other.keep);
    }

    /// Ends the recording: its uniforms flushed, its commands, and everything it holds
    /// (its uniform buffers included).
    pub fn finish(mut self, queue: &wgpu::Queue) -> (Vec<Command>, Keep) {
        self.flush(queue);
        for c in self.chunks.drain(..) {
            self.keep.hold(c.buffer);
        }
        (std::mem::take(&mut self.commands), std::mem::take(&mut self.keep))
    }
}

/// Encodes `commands` into `enc`: consecutive dispatches in one compute pass, a copy or a clear
/// between passes; a graph's run-once work first where one of its constants was written since
/// it ran (`watch` counts the writes, in the order they are encoded). `reruns`: for a command
/// buffer the crate submits, where the run-once work encoded again is listed, to be committed
/// once submitted (`runtime/watch.rs`); `None` for one the caller submits, where that work is
/// encoded whatever the counts, and the buffers it writes are pending until its work is done
/// ([`Watch::pending_until_done`]). Returns what it encoded.
pub(crate) fn encode(commands: &[Command], enc: &mut wgpu::CommandEncoder, watch: &Watch, mut reruns: Option<&mut Vec<Rerun>>) -> RecordCounts {
    let mut counts = RecordCounts::default();
    let mut pass: Option<wgpu::ComputePass<'static>> = None;
    let mut caller = reruns.is_none().then(crate::runtime::fxhash::FxHashSet::default);
    encode_into(commands, enc, &mut pass, &mut counts, watch, &mut reruns, &mut caller);
    drop(pass);
    if let Some(written) = caller {
        watch.pending_until_done(written, enc);
    }
    counts
}

#[allow(clippy::too_many_arguments)]
#[allow(clippy::mutable_key_type)]
fn encode_into(commands: &[Command], enc: &mut wgpu::CommandEncoder, pass: &mut Option<wgpu::ComputePass<'static>>, counts: &mut RecordCounts, watch: &Watch, reruns: &mut Option<&mut Vec<Rerun>>, caller: &mut Option<crate::runtime::fxhash::FxHashSet<wgpu::Buffer>>) {
    for c in commands {
        watch.note(c, caller.as_mut());
        match c {
            Command::Dispatch { pipeline, group, grid, .. } => {
                let p = pass.get_or_insert_with(|| {
                    counts.passes += 1;
                    enc.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("strided-wgpu"), timestamp_writes: None }).forget_lifetime()
                });
                p.set_pipeline(pipeline);
                p.set_bind_group(0, group, &[]);
                p.dispatch_workgroups(grid.0, grid.1, 1);
                counts.dispatches += 1;
            }
            Command::Copy { src, src_offset, dst, dst_offset, size } => {
                *pass = None;
                enc.copy_buffer_to_buffer(src, *src_offset, dst, *dst_offset, *size);
                counts.transfers += 1;
            }
            Command::Clear { buffer, offset, size } => {
                *pass = None;
                enc.clear_buffer(buffer, *offset, *size);
                counts.transfers += 1;
            }
            Command::Graph(commands, constants) => {
                if let Some(k) = constants {
                    // In the crate's submission, again where a constant was written; in the
                    // caller's, always.
                    let now = if reruns.is_some() { k.stale() } else { Some(Vec::new()) };
                    if let Some(now) = now {
                        encode_into(&k.once, enc, pass, counts, watch, reruns, caller);
                        if let Some(list) = reruns.as_deref_mut() {
                            list.push((k.clone(), now));
                        }
                    }
                }
                encode_into(commands, enc, pass, counts, watch, reruns, caller)
            }
        }
    }
}

/// Calls `f` on each command of `commands` in order, the commands of captured graphs inlined.
fn each(commands: &[Command], f: &mut impl FnMut(&Command)) {
    for c in commands {
        match c {
            Command::Graph(inner, _) => each(inner, f),
            other => f(other),
        }
    }
}

/// What encoding `commands` costs, without encoding them.
pub(crate) fn count(commands: &[Command]) -> RecordCounts {
    let mut counts = RecordCounts::default();
    let mut open = false;
    each(commands, &mut |c| match c {
        Command::Dispatch { .. } => {
            counts.passes += !open as u64;
            open = true;
            counts.dispatches += 1;
        }
        _ => {
            open = false;
            counts.transfers += 1;
        }
    });
    counts
}

/// The op and kernel of each dispatch of `commands`, in order.
pub(crate) fn dispatches(commands: &[Command]) -> Vec<(&'static str, &'static str)> {
    let mut out = Vec::new();
    each(commands, &mut |c| {
        if let Command::Dispatch { op, kernel, .. } = c {
            out.push((*op, *kernel));
        }
    });
    out
}

impl Command {
    /// The buffers the command reads and those it writes (`None` for a nested graph, whose
    /// effects are not itemized).
    fn effects(&self) -> Option<(Vec<&wgpu::Buffer>, Vec<&wgpu::Buffer>)> {
        match self {
            Command::Dispatch { storage, reads, .. } => {
                let (r, w) = storage.split_at(*reads);
                Some((r.iter().collect(), w.iter().collect()))
            }
            Command::Copy { src, dst, .. } => Some((vec![src], vec![dst])),
            Command::Clear { buffer, .. } => Some((vec![], vec![buffer])),
            Command::Graph(..) => None,
        }
    }
}

/// Splits a captured recording into the commands that compute constants of the graph, to run
/// once, and the rest, to run at every replay (both in recorded order). A command is constant
/// when it writes only `fresh` buffers (made during the capture, so that no state persists
/// across replays in them: a kernel that reads what it writes reads there what an earlier
/// constant command wrote, or what an eager call would find in a new buffer), none that a
/// command run at every replay writes or that one recorded before it reads (all constant
/// commands run before the first replay, so a write after such a read would change what the
/// read sees: a scratch tensor filled with one weight, read, then filled with another); and
/// when every buffer it binds read-only is either a fresh buffer an earlier constant command
/// wrote, or one that is not an input and that no command run at every replay writes. A
/// convolution's weight packing (a clear and a copy into a scratch buffer, from a weight the
/// graph never writes) is such work; an in-place update of a tensor made before the capture
/// is not.
// A buffer's `Hash` and `Eq` are those of its id, which never changes.
#[allow(clippy::mutable_key_type)]
pub(crate) fn split_constants(commands: Vec<Command>, inputs: &[&wgpu::Buffer], fresh: &[wgpu::Buffer]) -> (Vec<Command>, Vec<Command>) {
    use std::collections::HashSet;
    let Some(effects) = commands.iter().map(Command::effects).collect::<Option<Vec<_>>>() else {
        return (Vec::new(), commands);
    };
    let fresh: HashSet<&wgpu::Buffer> = fresh.iter().collect();
    let mut constant = vec![true; commands.len()];
    loop {
        // Buffers written at every replay: the inputs (copied in) and the non-constant writes.
        let mut varying: HashSet<&wgpu::Buffer> = inputs.iter().copied().collect();
        for (i, (_, w)) in effects.iter().enumerate() {
            if !constant[i] {
                varying.extend(w.iter().copied());
            }
        }
        let mut changed = false;
        let mut written: HashSet<&wgpu::Buffer> = HashSet::new();
        // Buffers that the commands run at every replay recorded so far read.
        let mut read_before: HashSet<&wgpu::Buffer> = HashSet::new();
        for (i, (r, w)) in effects.iter().enumerate() {
            if !constant[i] {
                read_before.extend(r.iter().copied());
                continue;
            }
            let read_ok = |b: &&wgpu::Buffer| !varying.contains(b) && (!fresh.contains(b) || written.contains(b));
            let ok = r.iter().all(read_ok) && w.iter().all(|b| fresh.contains(b) && !varying.contains(b) && !read_before.contains(b));
            if ok {
                written.extend(w.iter().copied());
            } else {
                constant[i] = false;
                changed = true;
                read_before.extend(r.iter().copied());
            }
        }
        if !changed {
            break;
        }
    }
    let (mut once, mut every) = (Vec::new(), Vec::new());
    for (c, k) in commands.into_iter().zip(constant) {
        if k { once.push(c) } else { every.push(c) }
    }
    (once, every)
}

/// The buffers that `once` (a graph's run-once work, `split_constants`) reads and that were
/// not made during the capture (`fresh`): the graph's constants from outside it, whose writes
/// the runtime counts ([`Watch`]).
#[allow(clippy::mutable_key_type)]
pub(crate) fn external_reads(once: &[Command], fresh: &[wgpu::Buffer]) -> Vec<wgpu::Buffer> {
    let fresh: std::collections::HashSet<&wgpu::Buffer> = fresh.iter().collect();
    let mut out: Vec<wgpu::Buffer> = Vec::new();
    for (reads, _) in once.iter().filter_map(Command::effects) {
        for b in reads {
            if !fresh.contains(b) && !out.contains(b) {
                out.push(b.clone());
            }
        }
    }
    out
}

/// `commands` with captured graphs' commands inlined, in order.
pub(crate) fn flatten(commands: &[Command]) -> Vec<Command> {
    let mut out = Vec::with_capacity(commands.len());
    each(commands, &mut |c| out.push(c.clone()));
    out
}
