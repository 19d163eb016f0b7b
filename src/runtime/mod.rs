//! The runtime: a wgpu device and queue, what the crate caches for them (compiled pipelines,
//! bind group layouts, the buffer pool), error capture, and completion of submitted work.
//!
//! It knows no kernel. Kernel modules (`crate::kernels`) record into an encoder through it, the
//! tuner (`crate::tune`) measures them beside it, and tensors (`crate::gpu`) sit on top. Its
//! invariants:
//!
//! 1. Every crate call that reaches the device runs inside [`Runtime::scoped`]: the crate's own
//!    error scopes catch what the call caused; the host program's handlers are never replaced
//!    (a device the crate created gets a handler that never panics), and nothing reaches them.
//! 2. Nothing here waits inside a recording: waiting happens only on a [`submit::Completion`].
//! 3. A pooled buffer returns to the pool only when no tensor and no unfinished recording holds
//!    it.

pub mod errors;
pub(crate) mod bind;
pub mod deferred;
pub(crate) mod env;
pub(crate) mod fxhash;
pub mod lock;
pub mod pool;
pub mod record;
pub mod submit;
pub mod timing;
pub(crate) mod watch;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};
use lock::lock;
use pool::{BufferPool, Pooled};

/// Adapter facts and the limits this crate works within.
#[derive(Clone, Debug)]
pub struct AdapterReport {
    /// Adapter name, e.g. `llvmpipe (LLVM 15.0.6, 256 bits)`.
    pub name: String,
    /// The driver and its version, as the adapter reports them.
    pub driver: String,
    /// Backend (Vulkan, Metal, Dx12, Gl, BrowserWebGpu).
    pub backend: wgpu::Backend,
    /// Discrete, integrated, CPU, ...
    pub device_type: wgpu::DeviceType,
    /// Largest storage-buffer binding, bytes.
    pub max_storage_buffer_binding_size: u64,
    /// Largest buffer, bytes.
    pub max_buffer_size: u64,
    /// Required alignment of storage-binding offsets, bytes.
    pub min_storage_buffer_offset_alignment: u32,
    /// Workgroups per dispatch dimension.
    pub max_compute_workgroups_per_dimension: u32,
    /// Invocations per workgroup.
    pub max_compute_invocations_per_workgroup: u32,
    /// A workgroup's size along x.
    pub max_compute_workgroup_size_x: u32,
    /// Whether GPU timestamps can be written inside command encoders
    /// (`TIMESTAMP_QUERY_INSIDE_ENCODERS`).
    pub timestamps: bool,
    /// Whether compute passes can write timestamps (`TIMESTAMP_QUERY`): where encoders cannot
    /// (Chromium's WebGPU today), the timer brackets the work with two empty compute passes
    /// that write them.
    pub pass_timestamps: bool,
    /// Whether the convolution kernels read their weights through subgroup shuffles
    /// (`shaders/preludes/conv_weights_shuffled.wgsl`): on CPU adapters whose device has
    /// `Features::SUBGROUP` with subgroups of at least 8 invocations. There a uniform-buffer read
    /// at a loop-dependent offset costs a read per lane; GPUs broadcast it.
    pub shuffled_weights: bool,
    /// Whether the rows reduction kernel combines a workgroup's states through subgroup
    /// shuffles (`shaders/preludes/reduce_tree_subgroup.wgsl`): a native device with
    /// `Features::SUBGROUP` whose subgroups hold 4 to 64 invocations (a workgroup's worth).
    /// Browsers need `enable subgroups;`, which naga does not take yet; they and GL combine in
    /// workgroup memory.
    pub subgroup_reduce: bool,
    /// The cooperative matrices a device runs the tensor-core matrix product
    /// (`MatmulKernel::Coop`) on, else `None`: a native device opened by the crate
    /// (`GpuContext::from_adapter`) with `EXPERIMENTAL_COOPERATIVE_MATRIX` and `SHADER_F16`, on
    /// an adapter that reports the 16 x 16 x 16 or the 8 x 8 x 8 f16 x f16 + f32 configuration
    /// and one subgroup size of 8 to 64 invocations. `STRIDED_WGPU_COOPERATIVE_MATRIX=0` in the
    /// environment turns it off.
    pub cooperative_matrix: Option<CooperativeMatrix>,
    /// Whether the defaults of GPUs (adapters that are not CPUs) take the GEMM engine's wide
    /// tiles (`ConvKernel::GemmNchwWide` / `GemmNhwcWide`, `MatmulKernel::GemmWide`: 128 x 128
    /// outputs a workgroup) where they would take its 64 x 64 ones (the bits of the 64 x 64
    /// kernel that cuts the reduction as they do: split where the split rule holds for the
    /// call's own sizes). No GPU has timed them yet, so off unless
    /// `STRIDED_WGPU_GEMM_TILES=wide` is in the environment (a GPU's tuner compares both either
    /// way).
    pub wide_gemm: bool,
    /// Whether the crate's shader modules keep wgpu's loop counters (`force_loop_bounding`):
    /// on CPU adapters, where the CPU-shaped kernels were tuned with them; on GPUs only under
    /// `STRIDED_WGPU_LOOP_COUNTERS=1`, so that a run can time the kernels both ways
    /// (`Runtime::pipeline`).
    pub loop_counters: bool,
}

/// The cooperative-matrix configuration of a device's tensor-core kernel
/// ([`AdapterReport::cooperative_matrix`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CooperativeMatrix {
    /// The side of its square fragments: 16 (16 x 16 x 16, f16 x f16 + f32: NVIDIA's tensor
    /// cores, AMD's) or 8 (8 x 8 x 8, where the adapter reports no 16: Mesa's lavapipe).
    pub size: u32,
    /// The device's one subgroup size (a workgroup of the kernel is four subgroups).
    pub subgroup_size: u32,
    /// Whether the automatic choice also takes the tensor-core paths that no GPU has run yet:
    /// products with an epilogue and convolutions (`ConvKernel::Coop`), which passed their
    /// device tests on Mesa 26's lavapipe (8 x 8 x 8) only. `STRIDED_WGPU_COOPERATIVE_MATRIX=all`
    /// sets it; without it they run only when forced.
    pub all_paths: bool,
}

/// A compiled kernel: its registered name and override constants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PipelineKey {
    pub shader: &'static str,
    pub constants: Vec<(&'static str, i64)>,
}

/// Hashes the shader's name and the constants' values, not their names (a key is looked up at
/// every recorded dispatch; equal keys have equal names, so equal hashes).
impl std::hash::Hash for PipelineKey {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.shader.hash(h);
        h.write_usize(self.constants.len());
        for &(_, v) in &self.constants {
            h.write_i64(v);
        }
    }
}

/// One binding of a kernel's bind group layout, in binding order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Slot {
    /// A uniform buffer.
    Uniform,
    /// A read-only storage buffer.
    Read,
    /// A read-write storage buffer.
    Write,
}

/// The runtime checks of the crate's shader modules on GPUs: wgpu's own, but for
/// `force_loop_bounding`, the 64-bit counter naga adds to every loop so that a driver may not
/// take a loop without end for unreachable code. The crate's loops all end, and the counter
/// cost the hot loops their tightness: in the convolutions' GEMM engine (unrolled by the
/// driver) a scalar decrement, compares and a branch between every two of a stage's 16
/// reduction steps (RADV; BENCHMARKS.md has the instruction counts). CPU adapters keep every
/// check: their CPU-shaped kernels were tuned with the counters, and lavapipe ran some of them
/// (the grouped 1x1 convolution on `Nhwc`) slower without.
const GPU_CHECKS: wgpu::ShaderRuntimeChecks = {
    let mut c = wgpu::ShaderRuntimeChecks::checked();
    c.force_loop_bounding = false;
    c
};

/// The device features the tensor-core kernel needs beside `SUBGROUP`.
pub const COOPERATIVE_FEATURES: wgpu::Features = wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX.union(wgpu::Features::SHADER_F16);

/// The values of `STRIDED_WGPU_COOPERATIVE_MATRIX`: tensor cores off, on where the automatic
/// choice takes them (the default), or on every path that has them.
const COOPERATIVE_SWITCH: &[&str] = &["0", "1", "all"];

/// The fragment size of the tensor-core kernel on `adapter` (16, else 8), where it offers what
/// the kernel needs (its features, the 16 x 16 x 16 or 8 x 8 x 8 f16 x f16 + f32 configuration,
/// one subgroup size, a native backend) and the environment does not turn it off
/// (`STRIDED_WGPU_COOPERATIVE_MATRIX=0`); else `None`.
pub fn cooperative_wanted(adapter: &wgpu::Adapter) -> Option<u32> {
    let info = adapter.get_info();
    let has = |size: u32| {
        adapter.cooperative_matrix_properties().iter().any(|p| {
            (p.m_size, p.n_size, p.k_size) == (size, size, size) && p.ab_type == wgpu::CooperativeScalarType::F16 && p.cr_type == wgpu::CooperativeScalarType::F32
        })
    };
    let off = env::switch("STRIDED_WGPU_COOPERATIVE_MATRIX", COOPERATIVE_SWITCH) == Some("0");
    let usable = !off && info.backend != wgpu::Backend::BrowserWebGpu && adapter.features().contains(COOPERATIVE_FEATURES | wgpu::Features::SUBGROUP) && info.subgroup_min_size == info.subgroup_max_size;
    [16, 8].into_iter().find(|&size| usable && has(size))
}

/// The device, its queue and the crate's caches for them.
pub(crate) struct Runtime {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub report: AdapterReport,
    /// Compiled pipelines, each with the late-error count it was compiled at (one that
    /// failed is reported late on WebGPU: a pipeline from before a late error is compiled
    /// again, `errors::Capture::epoch`).
    pipelines: Mutex<fxhash::FxHashMap<PipelineKey, (Arc<wgpu::ComputePipeline>, u64)>>,
    /// The late-error count the bind groups were cached at (they are dropped where it moved:
    /// one may bind a buffer whose creation failed).
    bind_epoch: std::sync::atomic::AtomicU64,
    layouts: Mutex<fxhash::FxHashMap<&'static [Slot], Arc<wgpu::BindGroupLayout>>>,
    /// Bind groups by what they bind (`bind`).
    pub bind_groups: Mutex<bind::BindGroups>,
    pub pool: Arc<Mutex<BufferPool>>,
    pub errors: errors::Capture,
    /// Submits, passes and dispatches encoded so far (`GpuContext::record_counts`).
    pub counters: record::Counters,
    /// The write counts of live graphs' constants (`runtime/watch.rs`).
    pub(crate) watch: Arc<watch::Watch>,
    /// The graphs being captured, by the thread capturing each (see [`Runtime::capture_begin`]).
    /// Lock order: never take a GL turn (or make a device call) while holding it.
    capture: Mutex<HashMap<std::thread::ThreadId, record::Recorder>>,
    /// The buffers each capture made (fresh to its graph: `record::split_constants`), by the
    /// thread capturing: apart from `capture`, whose recorder a poll sets aside, so that a
    /// buffer another thread takes meanwhile is struck off them too. Lock order: after
    /// `capture`, never while holding it. A stack a thread: a callback that a poll inside a
    /// capture runs may capture a graph of its own, whose list is on top until it ends.
    fresh: Mutex<HashMap<std::thread::ThreadId, Vec<Vec<wgpu::Buffer>>>>,
    /// Eager calls held back, and whether they are (`deferred.rs`). Lock order: a GL turn
    /// before its lock (`Runtime::lock_held`; a poll holds the turn while it runs callbacks,
    /// which may call the crate and take the lock).
    pub(crate) deferral: deferred::Deferral,
    /// 16 bytes of storage nothing writes, bound read-only where a kernel's word binding has
    /// no whole word to bind ([`crate::kernels::dispatch::read_words`]).
    spare_words: wgpu::Buffer,
}

impl AdapterReport {
    /// The most bytes a convolution binds in one binding: the adapter's limit and 4 GiB (the
    /// kernels index their bindings in 32 bits; Metal's limit may be larger).
    pub(crate) fn conv_binding_limit(&self) -> u64 {
        self.max_storage_buffer_binding_size.min(u32::MAX as u64 + 1)
    }

    /// `wg` invocations as a forced kernel's one-dimensional workgroup, or an
    /// [`Error::Limit`] of `op` naming `what()` (formatted only then: this runs at every
    /// call; a workgroup past the adapter's limits fails
    /// pipeline creation, a wgpu error, where the adapter's limits say why).
    pub(crate) fn check_workgroup(&self, op: &'static str, what: impl FnOnce() -> String, wg: u32) -> Result<()> {
        for (limit, max) in [("max_compute_invocations_per_workgroup", self.max_compute_invocations_per_workgroup), ("max_compute_workgroup_size_x", self.max_compute_workgroup_size_x)] {
            if wg > max {
                return Err(Error::Limit { op, what: format!("{}'s workgroup of {wg} invocations", what()), limit, requested: wg as u64, max: max as u64 });
            }
        }
        Ok(())
    }
}

impl Runtime {
    /// Encodes `commands` into `enc` ([`record::encode`]: the graphs' run-once work again where
    /// their constants were written, the writes counted in `watch`), and counts what it encoded.
    /// `reruns`: where the crate submits `enc`, the run-once work it encoded again, to commit
    /// once submitted; `None` where the caller submits it (that work then always runs).
    pub(crate) fn encode(&self, commands: &[record::Command], enc: &mut wgpu::CommandEncoder, reruns: Option<&mut Vec<watch::Rerun>>) {
        self.counters.add(record::encode(commands, enc, &self.watch, reruns));
    }

    /// `coop`: the fragment size of the cooperative-matrix configuration the adapter reported
    /// for the tensor-core kernel ([`cooperative_wanted`]; the device's features say the rest).
    /// `policy`: how eager calls reach the GPU ([`deferred::SubmitPolicy`]).
    pub fn new(device: wgpu::Device, queue: wgpu::Queue, info: &wgpu::AdapterInfo, coop: Option<u32>, policy: deferred::SubmitPolicy) -> Runtime {
        let limits = device.limits();
        // Subgroup kernels, native only: browsers need `enable subgroups;`, which naga does
        // not take yet.
        let subgroups = info.backend != wgpu::Backend::BrowserWebGpu && device.features().contains(wgpu::Features::SUBGROUP);
        let report = AdapterReport {
            name: info.name.clone(),
            driver: format!("{} {}", info.driver, info.driver_info).trim().to_string(),
            backend: info.backend,
            device_type: info.device_type,
            max_storage_buffer_binding_size: limits.max_storage_buffer_binding_size,
            max_buffer_size: limits.max_buffer_size,
            min_storage_buffer_offset_alignment: limits.min_storage_buffer_offset_alignment,
            max_compute_workgroups_per_dimension: limits.max_compute_workgroups_per_dimension,
            max_compute_invocations_per_workgroup: limits.max_compute_invocations_per_workgroup,
            max_compute_workgroup_size_x: limits.max_compute_workgroup_size_x,
            timestamps: device.features().contains(wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS),
            pass_timestamps: device.features().contains(wgpu::Features::TIMESTAMP_QUERY),
            shuffled_weights: info.device_type == wgpu::DeviceType::Cpu && subgroups && info.subgroup_min_size >= 8,
            subgroup_reduce: subgroups && info.subgroup_min_size >= 4 && info.subgroup_max_size <= 64,
            // Four subgroups a workgroup; the kernels' gathers assume subgroups of 8 to 64.
            cooperative_matrix: coop
                .filter(|_| subgroups && device.features().contains(COOPERATIVE_FEATURES) && info.subgroup_min_size == info.subgroup_max_size)
                .filter(|_| (8..=64).contains(&info.subgroup_min_size) && 4 * info.subgroup_min_size <= limits.max_compute_invocations_per_workgroup)
                .map(|size| CooperativeMatrix { size, subgroup_size: info.subgroup_min_size, all_paths: env::switch("STRIDED_WGPU_COOPERATIVE_MATRIX", COOPERATIVE_SWITCH) == Some("all") }),
            wide_gemm: env::switch("STRIDED_WGPU_GEMM_TILES", &["default", "wide"]) == Some("wide"),
            loop_counters: info.device_type == wgpu::DeviceType::Cpu || env::on("STRIDED_WGPU_LOOP_COUNTERS"),
        };
        let errors = errors::Capture::new(info.backend == wgpu::Backend::Gl);
        let spare_words = device.create_buffer(&wgpu::BufferDescriptor { label: Some("strided-wgpu spare words"), size: 16, usage: wgpu::BufferUsages::STORAGE, mapped_at_creation: false });
        Runtime {
            device,
            queue,
            report,
            pipelines: Mutex::new(fxhash::FxHashMap::default()),
            layouts: Mutex::new(fxhash::FxHashMap::default()),
            bind_groups: Mutex::new(bind::BindGroups::default()),
            bind_epoch: Default::default(),
            pool: Arc::new(Mutex::new(BufferPool::new(errors.gl_lock(), errors.epoch()))),
            errors,
            counters: record::Counters::default(),
            watch: Arc::default(),
            capture: Mutex::new(HashMap::new()),
            fresh: Mutex::new(HashMap::new()),
            deferral: deferred::Deferral::new(policy),
            spare_words,
        }
    }

    /// The spare 16 bytes ([`Runtime::spare_words`] field): bound read-only, never read.
    pub fn spare_words(&self) -> &wgpu::Buffer {
        &self.spare_words
    }

    /// Starts capturing on this thread: until [`Runtime::capture_end`], every recording this
    /// thread submits through a batch of the crate's is appended to the capture instead of being
    /// submitted. Threads capture independently; a thread's captures do not nest.
    pub fn capture_begin(&self, op: &'static str) -> Result<()> {
        let mut c = lock(&self.capture);
        match c.entry(std::thread::current().id()) {
            std::collections::hash_map::Entry::Occupied(_) => Err(Error::invalid(op, "this thread is already capturing a graph on this context (captures do not nest)")),
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(record::Recorder::default());
                drop(c);
                lock(&self.fresh).entry(std::thread::current().id()).or_default().push(Vec::new());
                Ok(())
            }
        }
    }

    /// Ends this thread's capture and returns what it recorded.
    pub fn capture_end(&self) -> Option<record::Recorder> {
        let me = std::thread::current().id();
        let mut rec = lock(&self.capture).remove(&me)?;
        let mut fresh = lock(&self.fresh);
        if let Some(stack) = fresh.get_mut(&me) {
            rec.fresh = stack.pop().unwrap_or_default();
            if stack.is_empty() {
                fresh.remove(&me);
            }
        }
        Some(rec)
    }

    /// Runs `f`, a wgpu call that may run callbacks of finished work (a poll, a submission),
    /// with this thread's capture set aside: a program's callback that calls the crate (a
    /// readback's `map_async` that starts the next step) makes an eager call, not one recorded
    /// into the graph this thread is capturing. The capture is back when `f` returns.
    pub(crate) fn outside_capture<T>(&self, f: impl FnOnce() -> T) -> T {
        // Put back on every way out of `f`, a panic included (a callback's panic caught
        // inside the capture's closure leaves the capture going).
        struct SetAside<'a> {
            rt: &'a Runtime,
            id: std::thread::ThreadId,
            rec: Option<record::Recorder>,
        }
        impl Drop for SetAside<'_> {
            fn drop(&mut self) {
                if let Some(r) = self.rec.take() {
                    // Whatever a callback left under this thread's id is dropped after the lock
                    // is released (a recording's last reference to a bind group may go).
                    let replaced = lock(&self.rt.capture).insert(self.id, r);
                    drop(replaced);
                }
            }
        }
        let id = std::thread::current().id();
        let rec = {
            let mut c = lock(&self.capture);
            if c.is_empty() { None } else { c.remove(&id) }
        };
        let _back = SetAside { rt: self, id, rec };
        f()
    }

    /// Whether this thread is capturing a graph on this runtime.
    pub fn capturing_here(&self) -> bool {
        let c = lock(&self.capture);
        !c.is_empty() && c.contains_key(&std::thread::current().id())
    }

    /// An error of `op` (a wait, a download, a measurement) while this thread captures a graph:
    /// the captured work has not run.
    pub fn check_not_capturing(&self, op: &'static str) -> Result<()> {
        match self.capturing_here() {
            true => Err(Error::invalid(op, "this thread is capturing a graph, whose work has not run yet: read results after a replay, outside the capture")),
            false => Ok(()),
        }
    }

    /// Appends a submitted recording to this thread's capture. `from`: the capture's commands
    /// from that index on are dropped first (an op recorded again in `rec`, fused with the one
    /// after it: `gpu/fuse.rs`). `tail`: where `rec`'s last op starts in `rec` and what it is,
    /// kept as the capture's tail for the next append (which replaces it either way).
    pub fn capture_append(&self, mut rec: record::Recorder, from: Option<usize>, tail: Option<record::Tail>) -> Result<()> {
        // The device work (the uniforms' writes) first: no device call, and so no GL turn, is
        // taken while the capture map is locked (a thread holding a GL turn may lock it to
        // note a fresh buffer).
        self.scoped("capture", || {
            rec.flush(&self.queue);
            Ok(())
        })?;
        let mut c = lock(&self.capture);
        match c.get_mut(&std::thread::current().id()) {
            Some(r) => {
                // Dropped after the lock is released (a bind group's last reference may go).
                let replaced = from.map(|from| r.split_off(from));
                let start = r.len();
                r.append(rec);
                r.tail = tail.map(|(at, what)| (start + at, what));
                drop(c);
                drop(replaced);
                Ok(())
            }
            None => Err(Error::invalid("submit", "no graph is being captured on this thread")),
        }
    }

    /// Takes this thread's capture's tail (see [`Runtime::capture_append`]).
    pub fn capture_take_tail(&self) -> Option<record::Tail> {
        lock(&self.capture).get_mut(&std::thread::current().id()).and_then(|r| r.tail.take())
    }

    /// Runs `f` inside the crate's error scopes and returns what they caught as an error of
    /// `op` (see [`errors::Capture::scoped`]). A caught error on a device that turns out to be
    /// lost (a `device.destroy()` the crate has not seen yet invalidates its buffers) is
    /// [`Error::DeviceLost`], as every call after a loss.
    pub fn scoped<T>(&self, op: &'static str, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let r = self.errors.scoped(&self.device, op, f);
        self.forget_groups_on_error(&r);
        self.lost_or(r)
    }

    /// A bind group made inside scopes that caught an error may be invalid: the cache keeps
    /// none (the outermost scope catches errors for those nested in it).
    fn forget_groups_on_error<T>(&self, r: &Result<T>) {
        if matches!(r, Err(Error::Gpu { .. })) {
            lock(&self.bind_groups).clear();
        }
    }

    /// A caught error as [`Error::DeviceLost`] when the device turns out to be lost.
    fn lost_or<T>(&self, r: Result<T>) -> Result<T> {
        match r {
            Err(Error::Gpu { op, message }) => match self.probe(op) {
                Err(lost @ Error::DeviceLost { .. }) => Err(lost),
                _ => Err(Error::Gpu { op, message }),
            },
            other => other,
        }
    }

    /// [`Runtime::scoped`] in scopes of its own even inside another call's (see
    /// [`errors::Capture::scoped_fresh`]).
    pub fn scoped_fresh<T>(&self, op: &'static str, f: impl FnOnce() -> Result<T>) -> Result<T> {
        self.scoped_own(op, false, f)
    }

    /// [`Runtime::scoped_fresh`] for a buffer or pipeline the crate keeps (its error found
    /// late counts in [`errors::Capture::epoch`]).
    pub fn scoped_creation<T>(&self, op: &'static str, f: impl FnOnce() -> Result<T>) -> Result<T> {
        self.scoped_own(op, true, f)
    }

    fn scoped_own<T>(&self, op: &'static str, creates: bool, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let r = self.errors.scoped_in(&self.device, op, creates, f);
        self.forget_groups_on_error(&r);
        self.lost_or(r)
    }

    /// A scratch buffer of at least `size` bytes for a recording, made in the op's error scopes
    /// and held by `rec` from the start (no error path returns it to the pool while a command
    /// recorded before the error still binds it); the handle is what the family binds.
    pub(crate) fn held_scratch(&self, rec: &mut record::Recorder, op: &'static str, size: u64, usage: wgpu::BufferUsages) -> Result<wgpu::Buffer> {
        let b = self.scoped(op, || self.buffer(op, size, usage))?;
        let handle = b.buffer().clone();
        rec.hold(b);
        Ok(handle)
    }

    /// A pooled buffer of at least `size` bytes; call inside `scoped`.
    pub fn buffer(&self, op: &'static str, size: u64, usage: wgpu::BufferUsages) -> Result<Pooled> {
        // A new buffer is made in error scopes of its own (inside the call's): one that failed
        // is an error here, not a handle in the pool (WebGPU settles the scopes later).
        let create = |class: u64| self.scoped_creation(op, || Ok(self.device.create_buffer(&wgpu::BufferDescriptor { label: Some("strided-wgpu"), size: class, usage, mapped_at_creation: false })));
        let p = Pooled::get(&self.pool, size, usage, self.report.max_buffer_size, create).ok_or_else(|| Error::overflow(op, format!("a buffer of {size} bytes")))??;
        // A buffer made while this thread captures is fresh to the graph; one that a capture
        // had made fresh, dropped unrecorded and taken from the pool by another thread (or by
        // an eager call of a callback while the capture is set aside), no longer is to that
        // capture: its contents are that call's, which the graph's run-once work must not write
        // or rely on.
        let mut fresh = lock(&self.fresh);
        if !fresh.is_empty() {
            drop(fresh);
            let capturing = self.capturing_here();
            fresh = lock(&self.fresh);
            let me = std::thread::current().id();
            for (id, stack) in fresh.iter_mut() {
                let top = stack.len().saturating_sub(1);
                for (level, list) in stack.iter_mut().enumerate() {
                    if *id == me && capturing && level == top {
                        list.push(p.buffer().clone());
                    } else {
                        list.retain(|b| b != p.buffer());
                    }
                }
            }
        }
        drop(fresh);
        Ok(p)
    }

    /// Notes that the host wrote `buffer` (an upload): while this thread captures, it is no
    /// longer fresh to the graph, so that no run-once work may write it (an in-place update of
    /// an uploaded tensor, run again before a replay, would update it again: the upload itself
    /// is not run again).
    pub fn host_written(&self, buffer: &wgpu::Buffer) {
        if let Some(stack) = lock(&self.fresh).get_mut(&std::thread::current().id()) {
            for list in stack {
                list.retain(|b| b != buffer);
            }
        }
    }

    /// How many pipelines this runtime has compiled (one per distinct shader and constants).
    pub fn pipeline_count(&self) -> usize {
        lock(&self.pipelines).len()
    }

    /// `None` where `key` is compiled, else how many pipelines of its shader are.
    pub fn pipelines_besides(&self, key: &PipelineKey) -> Option<usize> {
        let p = lock(&self.pipelines);
        (!p.contains_key(key)).then(|| p.keys().filter(|k| k.shader == key.shader).count())
    }

    /// The pipeline for `key`, compiled once per runtime from `source` with the layout `slots`.
    pub fn pipeline(&self, key: &PipelineKey, slots: &'static [Slot], source: impl FnOnce() -> Option<String>) -> Result<Arc<wgpu::ComputePipeline>> {
        let epoch = self.errors.epoch_now();
        if let Some((p, _)) = lock(&self.pipelines).get(key).filter(|(_, at)| *at == epoch) {
            return Ok(p.clone());
        }
        let bgl = self.bind_group_layout(slots)?;
        let source = source().ok_or_else(|| Error::invalid("pipeline", format!("no shader named {}", key.shader)))?;
        let log = PipelineLog::start();
        let pipeline = self.scoped_creation("pipeline", || {
            let d = &self.device;
            let desc = wgpu::ShaderModuleDescriptor { label: Some(key.shader), source: wgpu::ShaderSource::Wgsl(source.into()) };
            // SAFETY: the crate's own kernels, whose every loop ends (each runs to a bound the
            // host computes from checked shapes, with a step of at least 1): on GPUs wgpu's
            // loop counters are left out (`GPU_CHECKS`, unless `AdapterReport::loop_counters`).
            // Bounds checks and every other check stay.
            let checks = if self.report.loop_counters { wgpu::ShaderRuntimeChecks::checked() } else { GPU_CHECKS };
            let module = unsafe { d.create_shader_module_trusted(desc, checks) };
            let pl = d.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor { label: Some(key.shader), bind_group_layouts: &[Some(&bgl)], immediate_size: 0 });
            let constants: Vec<(&str, f64)> = key.constants.iter().map(|&(k, v)| (k, v as f64)).collect();
            Ok(d.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(key.shader),
                layout: Some(&pl),
                module: &module,
                entry_point: Some("main"),
                compilation_options: wgpu::PipelineCompilationOptions { constants: &constants, zero_initialize_workgroup_memory: false },
                cache: None,
            }))
        })?;
        log.finish(self.report.backend, key);
        let p = Arc::new(pipeline);
        lock(&self.pipelines).insert(key.clone(), (p.clone(), epoch));
        Ok(p)
    }

    /// The bind group of `slots`' layout `bgl` binding `windows` (binding i: buffer, offset,
    /// size in bytes), made once and then reused while the cache keeps it (`bind`). Call
    /// inside `scoped`.
    pub fn bind_group(&self, slots: &'static [Slot], bgl: &wgpu::BindGroupLayout, label: &'static str, windows: &[(&wgpu::Buffer, u64, u64)]) -> wgpu::BindGroup {
        let key = (slots.as_ptr() as usize, slots.len());
        let epoch = self.errors.epoch_now();
        if self.bind_epoch.load(std::sync::atomic::Ordering::SeqCst) != epoch && self.bind_epoch.swap(epoch, std::sync::atomic::Ordering::SeqCst) != epoch {
            lock(&self.bind_groups).clear();
        }
        if let Some(g) = lock(&self.bind_groups).get(key, windows) {
            return g;
        }
        let entries: Vec<wgpu::BindGroupEntry> = windows
            .iter()
            .enumerate()
            .map(|(i, &(buffer, offset, size))| wgpu::BindGroupEntry { binding: i as u32, resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding { buffer, offset, size: std::num::NonZeroU64::new(size) }) })
            .collect();
        let group = self.device.create_bind_group(&wgpu::BindGroupDescriptor { label: Some(label), layout: bgl, entries: &entries });
        lock(&self.bind_groups).insert(key, windows, group.clone());
        group
    }

    /// The bind group layout of `slots` (binding i is `slots[i]`, visible to compute), created
    /// once per runtime.
    pub fn bind_group_layout(&self, slots: &'static [Slot]) -> Result<Arc<wgpu::BindGroupLayout>> {
        if let Some(l) = lock(&self.layouts).get(slots) {
            return Ok(l.clone());
        }
        let entries: Vec<wgpu::BindGroupLayoutEntry> = slots
            .iter()
            .enumerate()
            .map(|(i, s)| wgpu::BindGroupLayoutEntry {
                binding: i as u32,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: match s {
                        Slot::Uniform => wgpu::BufferBindingType::Uniform,
                        Slot::Read => wgpu::BufferBindingType::Storage { read_only: true },
                        Slot::Write => wgpu::BufferBindingType::Storage { read_only: false },
                    },
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            })
            .collect();
        let l = Arc::new(self.scoped("bind_group_layout", || Ok(self.device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: None, entries: &entries })))?);
        lock(&self.layouts).insert(slots, l.clone());
        Ok(l)
    }
}

impl Runtime {
    /// Fails when `buffer` (a caller's, with `STORAGE` usage) cannot be bound on this device:
    /// a buffer of another device of the same wgpu instance (wgpu validates that a bind group's
    /// buffers are its device's), or one destroyed. A buffer of another wgpu instance cannot be
    /// told apart (wgpu 30 resolves its id in this instance's registry: a panic or another
    /// buffer); see `DeviceTensor::from_buffer`.
    pub fn check_own_buffer(&self, op: &'static str, buffer: &wgpu::Buffer) -> Result<()> {
        if buffer.size() < 4 {
            return Ok(());
        }
        let layout = self.bind_group_layout(&[Slot::Read])?;
        let bound = self.scoped_fresh(op, || {
            let _ = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("strided-wgpu from_buffer check"),
                layout: &layout,
                entries: &[wgpu::BindGroupEntry { binding: 0, resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding { buffer, offset: 0, size: wgpu::BufferSize::new(4) }) }],
            });
            Ok(())
        });
        match bound {
            Err(Error::Gpu { message, .. }) => Err(Error::Device { op, detail: format!("the buffer cannot be bound on the context's device (a buffer of another device, or a destroyed one): {message}") }),
            other => other,
        }
    }
}

/// `STRIDED_WGPU_LOG_PIPELINES=1`: one line on stderr per pipeline created, with its backend,
/// shader, constants and creation time. Off on wasm, which has neither environment nor clock.
struct PipelineLog(#[cfg(not(target_arch = "wasm32"))] Option<std::time::Instant>);

impl PipelineLog {
    #[cfg(not(target_arch = "wasm32"))]
    fn start() -> Self {
        Self(env::on("STRIDED_WGPU_LOG_PIPELINES").then(std::time::Instant::now))
    }

    #[cfg(target_arch = "wasm32")]
    fn start() -> Self {
        Self()
    }

    #[cfg(not(target_arch = "wasm32"))]
    fn finish(self, backend: wgpu::Backend, key: &PipelineKey) {
        if let Some(t) = self.0 {
            eprintln!("pipeline {backend:?} {} {:?} {:.1} ms", key.shader, key.constants, t.elapsed().as_secs_f64() * 1e3);
        }
    }

    #[cfg(target_arch = "wasm32")]
    fn finish(self, _: wgpu::Backend, _: &PipelineKey) {}
}
