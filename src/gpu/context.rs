//! The GPU context: a runtime (device, queue, caches) and the tuner's choices, shared by every
//! tensor and batch made from it.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::kernels::conv::ConvKernel;
use crate::kernels::copy::{CopyPath, ShapeClass, Transpose};
use crate::kernels::matmul::Matmul as MatmulFamily;
use crate::tune::{admits, Family};
use crate::runtime::lock::lock;
use crate::runtime::deferred::SubmitPolicy;
use crate::runtime::submit::Submission;
use crate::runtime::{AdapterReport, Runtime};
use crate::tune::{Tuner, TuningPolicy};

use crate::kernels::conv::class::{Conv, ConvClass};

/// Owns (or shares) a wgpu device and queue and everything this crate caches for them. Cheap
/// to clone (all clones share one device); usable from several threads at once.
#[derive(Clone)]
pub struct GpuContext {
    pub(crate) rt: Arc<Runtime>,
    pub(crate) tuner: Arc<Tuner>,
}

impl std::fmt::Debug for GpuContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuContext").field("adapter", &self.rt.report).finish()
    }
}

impl GpuContext {
    /// Opens the adapter wgpu's conventions select: `WGPU_BACKEND` (e.g. `vulkan`, `gl`),
    /// `WGPU_ADAPTER_NAME` (a case-insensitive substring of the name) and `WGPU_POWER_PREF`
    /// (`low`, `high`, `none`). Requests the adapter's own limits. A typed error, never a panic,
    /// when no adapter exists or none matches. Native only; see [`GpuContext::new_async`].
    #[cfg(not(target_arch = "wasm32"))]
    pub fn new() -> Result<GpuContext> {
        pollster::block_on(Self::new_async())
    }

    /// [`GpuContext::new`] as a future (on the web, the browser's WebGPU adapter).
    pub async fn new_async() -> Result<GpuContext> {
        Self::for_backends(wgpu::Backends::from_env().unwrap_or(wgpu::Backends::all())).await
    }

    /// Like [`GpuContext::new_async`], restricted to `backends` (tests use it to open each
    /// software adapter in turn); `WGPU_ADAPTER_NAME` and `WGPU_POWER_PREF` still apply.
    pub async fn for_backends(backends: wgpu::Backends) -> Result<GpuContext> {
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
        desc.backends = backends;
        let instance = wgpu::Instance::new(desc);
        let adapter = match std::env::var("WGPU_ADAPTER_NAME") {
            Ok(want) => {
                let all = instance.enumerate_adapters(backends).await;
                let names: Vec<String> = all.iter().map(|a| a.get_info().name).collect();
                all.into_iter()
                    .find(|a| a.get_info().name.to_lowercase().contains(&want.to_lowercase()))
                    .ok_or_else(|| Error::Adapter(format!("WGPU_ADAPTER_NAME={want:?} matches none of the adapters {names:?} (backends {backends:?})")))?
            }
            Err(_) => instance
                .request_adapter(&wgpu::RequestAdapterOptions { power_preference: wgpu::PowerPreference::from_env().unwrap_or_default(), ..Default::default() })
                .await
                .map_err(|e| Error::Adapter(format!("no adapter for backends {backends:?}: {e} (on a machine without a GPU driver, install mesa-vulkan-drivers)")))?,
        };
        Self::from_adapter(&adapter).await
    }

    /// Opens a device on `adapter` with the adapter's own limits and the optional features
    /// this crate uses when present (timestamp queries, subgroups, and, where the adapter
    /// reports the configuration the tensor-core kernel needs, wgpu's experimental
    /// `EXPERIMENTAL_COOPERATIVE_MATRIX` with `SHADER_F16`: see
    /// [`AdapterReport::cooperative_matrix`]; `STRIDED_WGPU_COOPERATIVE_MATRIX=0` leaves them out).
    /// The context owns the device's uncaptured-error handler: one that ignores errors, where
    /// wgpu's default panics; and its device-lost callback, which makes every later call
    /// [`Error::DeviceLost`] (a callback of yours set on [`GpuContext::device`] replaces it:
    /// the crate then learns a loss from its probes, as on a host's device). Work of your own on [`GpuContext::device`] catches its errors in
    /// its own error scopes (or install a handler of yours with `device().on_uncaptured_error(..)`).
    pub async fn from_adapter(adapter: &wgpu::Adapter) -> Result<GpuContext> {
        Self::from_adapter_with_limits(adapter, adapter.limits()).await
    }

    /// [`GpuContext::from_adapter`] with the device's limits given: lower than the adapter's
    /// (to see how the crate serves a smaller device, such as WebGPU's default 128 MiB storage
    /// binding, on a larger one), or any the adapter allows (else `Error::Adapter`).
    pub async fn from_adapter_with_limits(adapter: &wgpu::Adapter, limits: wgpu::Limits) -> Result<GpuContext> {
        let coop = crate::runtime::cooperative_wanted(adapter);
        let mut wanted = wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS | wgpu::Features::SUBGROUP;
        let experimental = if coop.is_some() {
            wanted |= crate::runtime::COOPERATIVE_FEATURES;
            // SAFETY: the token says its holder accepts that wgpu's experimental features may
            // still have bugs that safe calls can hit (naga 30's SPIR-V backend panics on one
            // form of `coopStore`: docs/cooperative-matrices.md). The crate accepts that for its
            // own use, which is one kernel: its every specialization is compiled to SPIR-V by the
            // tests on any machine (tests/shaders.rs), its loads and stores stay within the
            // operands' bound windows for every product its one check admits
            // (kernels/matmul/coop.rs), and on a GPU that has the feature the device tests
            // compare it with the CPU reference. Code of the caller's on `device()` gets a
            // device with the feature enabled: documented there and on this function, and
            // `STRIDED_WGPU_COOPERATIVE_MATRIX=0` opens the device without it.
            unsafe { wgpu::ExperimentalFeatures::enabled() }
        } else {
            wgpu::ExperimentalFeatures::disabled()
        };
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("strided-wgpu"),
                required_features: adapter.features() & wanted,
                required_limits: limits,
                experimental_features: experimental,
                memory_hints: wgpu::MemoryHints::Performance,
                trace: wgpu::Trace::Off,
            })
            .await
            .map_err(|e| Error::Adapter(format!("request_device on {:?}: {e}", adapter.get_info().name)))?;
        let ctx = GpuContext { rt: Arc::new(Runtime::new(device, queue, &adapter.get_info(), coop, SubmitPolicy::from_env(SubmitPolicy::Deferred))), tuner: Arc::new(Tuner::default()) };
        ctx.own_handlers();
        Ok(ctx)
    }

    /// A device the crate created is the crate's: its uncaptured-error handler ignores errors
    /// instead of wgpu's default, which panics. Every call of the crate catches its own errors
    /// in its own error scopes, so what reaches the handler is wgpu's report of work on a device
    /// already lost, or the caller's own work on [`GpuContext::device`] outside error scopes.
    fn own_handlers(&self) {
        self.rt.device.on_uncaptured_error(Arc::new(|_: wgpu::Error| {}));
        // A loss the device reports (a reset, a removed GPU, `destroy`) fails every later call
        // at once: on WebGPU no probe can learn it (a buffer mapped at creation is made on
        // the content timeline), and natively the next poll would panic inside wgpu.
        let lost = self.rt.errors.lost_flag();
        self.rt.device.set_device_lost_callback(move |reason, message| {
            crate::runtime::lock::lock(&lost).get_or_insert_with(|| format!("the device reported its loss ({reason:?}: {message})"));
        });
    }

    /// Wraps a device and queue the caller already owns (a library inside a larger wgpu
    /// program shares its device). The host's uncaptured-error handler and device-lost callback
    /// are left as they are: the crate catches its own errors in its own error scopes, and an
    /// error of the host's work never fails a call of the crate. The tensor-core kernel
    /// (`MatmulKernel::Coop`) is not used on such a device: the device alone does not say which
    /// cooperative-matrix configurations its adapter has ([`GpuContext::from_adapter_device`]
    /// takes the adapter too).
    ///
    /// Each eager call submits its work before it returns ([`SubmitPolicy::EachCall`]), so that
    /// the host's own submissions after it see its results, unless `STRIDED_WGPU_SUBMIT=deferred`
    /// in the environment says otherwise; [`GpuContext::set_submit_policy`]
    /// opts in to holding calls back, with [`GpuContext::flush`] before the host's own
    /// submissions that read the crate's results.
    pub fn from_device(device: wgpu::Device, queue: wgpu::Queue, info: &wgpu::AdapterInfo) -> GpuContext {
        GpuContext { rt: Arc::new(Runtime::new(device, queue, info, None, SubmitPolicy::from_env(SubmitPolicy::EachCall))), tuner: Arc::new(Tuner::default()) }
    }

    /// [`GpuContext::from_device`] for a device of the caller's opened on `adapter`, which says
    /// what the device alone does not: the tensor-core kernel (`MatmulKernel::Coop`) runs where
    /// the adapter has the configuration it needs ([`AdapterReport::cooperative_matrix`]) and
    /// the device was opened with wgpu's `EXPERIMENTAL_COOPERATIVE_MATRIX`, `SHADER_F16` and
    /// `SUBGROUP` features (wgpu's experimental features enabled: the caller's choice, as
    /// [`GpuContext::from_adapter`]'s is the crate's). `STRIDED_WGPU_COOPERATIVE_MATRIX=0`
    /// leaves them unused. Everything else is as `from_device`'s.
    pub fn from_adapter_device(adapter: &wgpu::Adapter, device: wgpu::Device, queue: wgpu::Queue) -> GpuContext {
        let coop = crate::runtime::cooperative_wanted(adapter);
        GpuContext { rt: Arc::new(Runtime::new(device, queue, &adapter.get_info(), coop, SubmitPolicy::from_env(SubmitPolicy::EachCall))), tuner: Arc::new(Tuner::default()) }
    }

    /// The adapter and the limits that matter.
    pub fn adapter(&self) -> &AdapterReport {
        &self.rt.report
    }
    /// Whether two contexts are one (a context and its clones): their tensors mix. Two
    /// contexts made on one wgpu device (`from_device` twice) are not: each has its own pool,
    /// held calls and captures, and a call mixing their tensors is `Error::Device`.
    pub fn same_device(&self, other: &GpuContext) -> bool {
        Arc::ptr_eq(&self.rt, &other.rt)
    }
    /// The wgpu device. A device opened by the crate ([`GpuContext::from_adapter`]) may have
    /// wgpu's experimental `EXPERIMENTAL_COOPERATIVE_MATRIX` feature enabled
    /// ([`AdapterReport::cooperative_matrix`] says so): shaders of your own that use it are
    /// subject to wgpu's experimental-feature caveats.
    ///
    /// Handing out the device submits the eager calls held back and switches the context to
    /// [`SubmitPolicy::EachCall`]: work of the caller's submitted after a call then runs after
    /// it (set [`SubmitPolicy::Deferred`] again to hold calls back, and [`GpuContext::flush`]
    /// before your own submissions).
    pub fn device(&self) -> &wgpu::Device {
        self.rt.hand_out();
        &self.rt.device
    }
    /// The wgpu queue. Handing it out submits the eager calls held back and switches the
    /// context to [`SubmitPolicy::EachCall`], as [`GpuContext::device`] does.
    pub fn queue(&self) -> &wgpu::Queue {
        self.rt.hand_out();
        &self.rt.queue
    }

    /// How eager calls reach the GPU: [`SubmitPolicy::Deferred`] for a context the crate opened
    /// until it hands out its device or queue, [`SubmitPolicy::EachCall`] for one made on the
    /// caller's device (`STRIDED_WGPU_SUBMIT=each` or `deferred` sets either at creation).
    pub fn submit_policy(&self) -> SubmitPolicy {
        self.rt.submit_policy()
    }

    /// Sets how eager calls reach the GPU; what was held back is submitted first (its errors
    /// returned here).
    pub fn set_submit_policy(&self, policy: SubmitPolicy) -> Result<()> {
        self.rt.set_submit_policy(policy)
    }

    /// Submits the eager calls held back ([`SubmitPolicy::Deferred`]), and returns a
    /// submission that finishes when every piece of work the context submitted so far has:
    /// `ctx.flush()?.wait()` is PyTorch's `torch.cuda.synchronize()`. Never needed for the
    /// crate's own results (its downloads, waits and batches submit what was held first); call
    /// it before work of your own reads them, or to start the GPU on calls held back.
    /// An error while this thread captures a graph (as `torch.cuda.synchronize()` is inside a
    /// CUDA graph capture).
    pub fn flush(&self) -> Result<Submission> {
        self.rt.check_not_capturing("flush")?;
        self.rt.flush("flush")
    }

    /// When this context measures kernels ([`TuningPolicy::Defaults`] unless set).
    pub fn tuning_policy(&self) -> TuningPolicy {
        self.tuner.policy()
    }

    /// Whether a blocking call measures an untuned class now: under
    /// [`TuningPolicy::OnFirstCall`], except while this thread captures a graph (a capture
    /// measures nothing; its classes run their kept choice or the default).
    #[cfg(not(target_arch = "wasm32"))]
    pub(crate) fn tunes_on_call(&self) -> bool {
        self.tuner.policy() == TuningPolicy::OnFirstCall && !self.rt.capturing_here()
    }

    /// The kept choice of family `F` for `class`, else `default`'s. While this thread captures
    /// a graph under [`TuningPolicy::OnFirstCall`], the default is kept as the class's choice
    /// (`Tuner::keep_default`: not listed by the `tuned_*` methods, nor saved): the first eager
    /// call after the capture would otherwise measure and might keep another kernel, whose
    /// bits the graph's replays would not give.
    pub(crate) fn choice<F: crate::tune::Family>(&self, class: &F::Class, default: impl FnOnce() -> F::Choice) -> F::Choice {
        if let Some(kept) = self.tuner.get::<F>(class) {
            return kept;
        }
        let choice = default();
        if self.tuner.policy() == TuningPolicy::OnFirstCall && self.rt.capturing_here() {
            return self.tuner.keep_default::<F>(class, &choice);
        }
        choice
    }

    /// Before a tuning call looks at its class (`operands`: its tensors' contexts, each this
    /// one, else [`Error::Device`]): refused while this thread captures a graph (a
    /// measurement submits and waits, and a 16-bit convolution's conversions would be
    /// captured); then the device-loss probe. Cheap: every eager call under `OnFirstCall`
    /// passes here.
    pub(crate) fn ready_to_tune(&self, operands: &[&GpuContext]) -> Result<()> {
        self.rt.check_not_capturing("tune")?;
        if !operands.iter().all(|c| c.same_device(self)) {
            return Err(Error::Device { op: "tune", detail: "the tensors live on another GpuContext than the one tuning".into() });
        }
        self.rt.probe("tune")
    }

    /// Right before the candidates run (a class that measures): what is held back is submitted
    /// and an earlier call's failure returned, and on WebGPU the error scopes still pending
    /// awaited, so that no candidate's submission reports another call's error (which the
    /// tuner would take for the candidate's, and lose).
    pub(crate) async fn settle_before_measuring(&self) -> Result<()> {
        self.rt.submit_held_now("tune")?;
        self.rt.errors.settle().await
    }

    /// Sets when this context (and every clone of it) measures kernels: by default
    /// ([`TuningPolicy::Defaults`]) only at `tune_*` calls; with [`TuningPolicy::OnFirstCall`]
    /// also at the first blocking `copy_`, `conv2d` or matrix product of a shape class.
    pub fn set_tuning_policy(&self, policy: TuningPolicy) {
        self.tuner.set_policy(policy)
    }

    /// The transpose kernels chosen so far (measured or loaded), by shape class.
    pub fn tuned_choices(&self) -> Vec<(ShapeClass, CopyPath)> {
        self.tuner.entries::<Transpose>()
    }
    /// The convolution kernels chosen so far (measured or loaded), by shape class.
    pub fn tuned_conv_choices(&self) -> Vec<(ConvClass, ConvKernel)> {
        self.tuner.entries::<Conv>()
    }

    /// The tuning choices as a tuning file's text: `existing` (a file's text, or "") with this
    /// adapter's section (keyed by adapter name, driver, backend, and crate version with the tuning format; the other sections kept) replaced.
    pub fn tuning_json(&self, existing: &str) -> Result<String> {
        self.tuner.to_json(&self.rt.report, existing)
    }
    /// Takes this adapter's choices from a tuning file's text (other adapters' sections, and
    /// those of other driver or crate versions or tuning formats, whatever they hold, are ignored) for the shape classes that have
    /// no choice yet; returns how many it took. A class's kernel, once kept (measured or
    /// loaded), never changes in a context, so that its calls keep their bits: load a file
    /// into a fresh context to replace choices.
    pub fn load_tuning_json(&self, text: &str) -> Result<usize> {
        // A choice must be one of the kernels the tuner would have compared for its class: any
        // other would fail (or not apply) at every use, with nothing to fall back on.
        self.tuner.load_json(&self.rt.report, text, |family, class, choice| {
            let keys = match family {
                Transpose::NAME => admits::<Transpose>(class, choice)?,
                Conv::NAME => admits::<Conv>(class, choice)?,
                MatmulFamily::NAME => admits::<MatmulFamily>(class, choice)?,
                // Families of other versions: kept as written, and never read by this one.
                _ => Some((class.to_string(), choice.to_string())),
            };
            keys.ok_or_else(|| "not one of the kernels the tuner compares for this class".into())
        })
    }
    /// Saves the tuning choices to `path`, keeping the other adapters' sections in it. The
    /// file is replaced whole (written beside it, then renamed over it): a failed write leaves
    /// the old file as it was. Two processes saving at once keep one's sections.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn save_tuning(&self, path: impl AsRef<std::path::Path>) -> Result<()> {
        let path = path.as_ref();
        let io = |e: std::io::Error| Error::Tuning { op: "save_tuning", detail: format!("{}: {e}", path.display()) };
        let existing = match std::fs::read_to_string(path) {
            Ok(s) => s,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(io(e)),
        };
        let text = self.tuning_json(&existing)?;
        // A name of this call's own (process and a counter): two saves never share one.
        static SAVES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let mut name = path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
        name.push(format!(".{}.{}.tmp", std::process::id(), SAVES.fetch_add(1, std::sync::atomic::Ordering::Relaxed)));
        let temp = path.with_file_name(name);
        let written = std::fs::write(&temp, text).and_then(|()| std::fs::rename(&temp, path));
        if written.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        written.map_err(io)
    }
    /// Loads this adapter's tuning choices from `path` for the classes without one (as
    /// [`GpuContext::load_tuning_json`]); returns how many it took.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn load_tuning(&self, path: impl AsRef<std::path::Path>) -> Result<usize> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| Error::Tuning { op: "load_tuning", detail: format!("{}: {e}", path.display()) })?;
        self.load_tuning_json(&text)
    }

    /// Caps the idle bytes the buffer pool keeps (512 MiB by default). Where the idle bytes
    /// are over the new cap, every idle buffer is destroyed now; later, a buffer that returns
    /// to a pool it would take over the cap is destroyed.
    pub fn set_pool_limit(&self, bytes: u64) {
        let (excess, gl) = {
            let mut pool = lock(&self.rt.pool);
            (pool.set_cap(bytes), pool.gl())
        };
        crate::runtime::pool::destroy(&gl, excess);
    }
    /// Destroys every idle pooled buffer, returning its memory to the driver; returns the bytes
    /// freed. Buffers held by tensors or by unfinished work are not idle. Also empties the cache
    /// of bind groups, which holds the buffers they bind (callers' buffers too).
    pub fn trim_pool(&self) -> u64 {
        let ((freed, idle), gl) = {
            let mut pool = lock(&self.rt.pool);
            (pool.trim(), pool.gl())
        };
        crate::runtime::pool::destroy(&gl, idle);
        // Cached bind groups hold buffers of callers (`DeviceTensor::from_buffer`) too.
        lock(&self.rt.bind_groups).clear();
        freed
    }
    /// How many compute pipelines this context has compiled so far. Each distinct kernel
    /// (shader and override constants) is compiled once per context, at its first use, and
    /// reused after; the count shows what a first call pays (`STRIDED_WGPU_LOG_PIPELINES=1`
    /// prints each one with its compile time).
    pub fn pipeline_count(&self) -> usize {
        self.rt.pipeline_count()
    }
    /// Bytes held by idle pooled buffers.
    pub fn pool_idle_bytes(&self) -> u64 {
        lock(&self.rt.pool).idle_bytes()
    }
}
