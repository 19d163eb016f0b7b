//! The GPU context: adapter, device and queue, plus the caches every operation shares
//! (pipelines, recycled buffers, tuned kernel choices).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::error::{Error, Result};
use crate::gpu::pool::BufferPool;

/// Adapter facts and the limits this crate works within.
#[derive(Clone, Debug)]
pub struct AdapterReport {
    /// Adapter name, e.g. `llvmpipe (LLVM 15.0.6, 256 bits)`.
    pub name: String,
    /// Backend (Vulkan, Metal, Dx12, Gl).
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
    /// Whether GPU timestamps can be written inside command encoders.
    pub timestamps: bool,
    /// Whether the convolution kernels read their weights through subgroup shuffles
    /// (`shaders/conv_weights_shuffled.wgsl`): on CPU adapters whose device has
    /// `Features::SUBGROUP` with subgroups of at least 8 invocations. There a uniform-buffer read
    /// at a loop-dependent offset costs a read per lane; GPUs broadcast it.
    pub shuffled_weights: bool,
}

/// Owns a wgpu device and queue and everything this crate caches for them. Cheap to clone
/// (all clones share one device); usable from several threads at once.
#[derive(Clone)]
pub struct GpuContext {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    pub(crate) report: AdapterReport,
    pub(crate) pipelines: Mutex<HashMap<PipelineKey, Arc<wgpu::ComputePipeline>>>,
    pub(crate) layouts: Mutex<HashMap<&'static str, Arc<wgpu::BindGroupLayout>>>,
    pub(crate) pool: Arc<Mutex<BufferPool>>,
    /// Kernel choices measured once per shape class (see `tune`).
    pub(crate) tuned: Mutex<HashMap<crate::gpu::tune::ShapeClass, crate::gpu::copy::CopyPath>>,
    /// Convolution kernel choices measured once per shape class (see `conv_tune`).
    pub(crate) tuned_conv: Mutex<HashMap<crate::gpu::conv_tune::ConvClass, crate::gpu::conv::ConvKernel>>,
    /// Errors no scope caught (raised on another thread's work, or device loss).
    uncaptured: Arc<Mutex<Option<String>>>,
    /// On the GL backend, one thread at a time does this crate's device work (see `gl_turn`).
    gl_turn: Option<Mutex<()>>,
}

thread_local! {
    /// Whether this thread holds a GL turn of some context (`scoped` nests, and `wait` runs inside
    /// it).
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

/// A compiled kernel: its source file, entry point and override constants.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct PipelineKey {
    pub shader: &'static str,
    pub constants: Vec<(&'static str, i64)>,
}

impl std::fmt::Debug for GpuContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuContext").field("adapter", &self.inner.report).finish()
    }
}

impl GpuContext {
    /// Opens the adapter wgpu's conventions select: `WGPU_BACKEND` (e.g. `vulkan`, `gl`),
    /// `WGPU_ADAPTER_NAME` (a case-insensitive substring of the name) and `WGPU_POWER_PREF`
    /// (`low`, `high`, `none`). Requests the adapter's own limits. A typed error, never a panic,
    /// when no adapter exists or none matches.
    pub fn new() -> Result<GpuContext> {
        pollster::block_on(Self::new_async())
    }

    /// [`GpuContext::new`] as a future.
    pub async fn new_async() -> Result<GpuContext> {
        Self::for_backends(wgpu::Backends::from_env().unwrap_or(wgpu::Backends::all())).await
    }

    /// Like [`GpuContext::new`], restricted to `backends` (tests use it to open each software
    /// adapter in turn); `WGPU_ADAPTER_NAME` and `WGPU_POWER_PREF` still apply.
    pub async fn for_backends(backends: wgpu::Backends) -> Result<GpuContext> {
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
        desc.backends = backends;
        let instance = wgpu::Instance::new(desc);
        let adapter = match std::env::var("WGPU_ADAPTER_NAME") {
            Ok(want) => {
                let all = instance.enumerate_adapters(backends).await;
                let names: Vec<String> = all.iter().map(|a| a.get_info().name).collect();
                all.into_iter().find(|a| a.get_info().name.to_lowercase().contains(&want.to_lowercase())).ok_or_else(|| {
                    Error::Adapter(format!("WGPU_ADAPTER_NAME={want:?} matches none of the adapters {names:?} (backends {backends:?})"))
                })?
            }
            Err(_) => instance
                .request_adapter(&wgpu::RequestAdapterOptions {
                    power_preference: wgpu::PowerPreference::from_env().unwrap_or_default(),
                    ..Default::default()
                })
                .await
                .map_err(|e| Error::Adapter(format!("no adapter for backends {backends:?}: {e} (on a machine without a GPU driver, install mesa-vulkan-drivers)")))?,
        };
        Self::from_adapter(&adapter).await
    }

    /// Opens a device on `adapter` with the adapter's own limits and the optional features
    /// this crate uses when present (timestamp queries, subgroups).
    pub async fn from_adapter(adapter: &wgpu::Adapter) -> Result<GpuContext> {
        let wanted = wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS | wgpu::Features::SUBGROUP;
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("strided-wgpu"),
                required_features: adapter.features() & wanted,
                required_limits: adapter.limits(),
                experimental_features: wgpu::ExperimentalFeatures::disabled(),
                memory_hints: wgpu::MemoryHints::Performance,
                trace: wgpu::Trace::Off,
            })
            .await
            .map_err(|e| Error::Adapter(format!("request_device on {:?}: {e}", adapter.get_info().name)))?;
        Ok(Self::from_device(device, queue, &adapter.get_info()))
    }

    /// Wraps a device and queue the caller already owns (a library inside a larger wgpu
    /// program shares its device). Installs an uncaptured-error handler so that wgpu never
    /// panics on this crate's behalf; errors reach callers through error scopes.
    pub fn from_device(device: wgpu::Device, queue: wgpu::Queue, info: &wgpu::AdapterInfo) -> GpuContext {
        let limits = device.limits();
        let uncaptured = Arc::new(Mutex::new(None::<String>));
        let sink = uncaptured.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            let mut g = sink.lock().unwrap_or_else(|p| p.into_inner());
            g.get_or_insert_with(|| describe(&e));
        }));
        let sink = uncaptured.clone();
        device.set_device_lost_callback(move |reason, msg| {
            let mut g = sink.lock().unwrap_or_else(|p| p.into_inner());
            g.get_or_insert_with(|| format!("device lost ({reason:?}): {msg}"));
        });
        let report = AdapterReport {
            name: info.name.clone(),
            backend: info.backend,
            device_type: info.device_type,
            max_storage_buffer_binding_size: limits.max_storage_buffer_binding_size,
            max_buffer_size: limits.max_buffer_size,
            min_storage_buffer_offset_alignment: limits.min_storage_buffer_offset_alignment,
            max_compute_workgroups_per_dimension: limits.max_compute_workgroups_per_dimension,
            max_compute_invocations_per_workgroup: limits.max_compute_invocations_per_workgroup,
            timestamps: device.features().contains(wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS),
            shuffled_weights: info.device_type == wgpu::DeviceType::Cpu && device.features().contains(wgpu::Features::SUBGROUP) && info.subgroup_min_size >= 8,
        };
        GpuContext {
            inner: Arc::new(Inner {
                device,
                queue,
                report,
                pipelines: Mutex::new(HashMap::new()),
                layouts: Mutex::new(HashMap::new()),
                pool: Arc::new(Mutex::new(BufferPool::default())),
                tuned: Mutex::new(HashMap::new()),
                tuned_conv: Mutex::new(HashMap::new()),
                gl_turn: (info.backend == wgpu::Backend::Gl).then(|| Mutex::new(())),
                uncaptured,
            }),
        }
    }

    /// The adapter and the limits that matter.
    pub fn adapter(&self) -> &AdapterReport {
        &self.inner.report
    }
    /// Whether two contexts share one device.
    pub fn same_device(&self, other: &GpuContext) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
    /// The wgpu device.
    pub fn device(&self) -> &wgpu::Device {
        &self.inner.device
    }
    /// The wgpu queue.
    pub fn queue(&self) -> &wgpu::Queue {
        &self.inner.queue
    }

    /// Runs `f` inside validation, out-of-memory and internal error scopes and returns what
    /// they caught as [`Error::Gpu`] for `op`.
    pub(crate) fn scoped<T>(&self, op: &'static str, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let _turn = self.gl_turn();
        let d = &self.inner.device;
        let internal = d.push_error_scope(wgpu::ErrorFilter::Internal);
        let oom = d.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = d.push_error_scope(wgpu::ErrorFilter::Validation);
        let out = f();
        let caught = [validation.pop(), oom.pop(), internal.pop()].into_iter().find_map(pollster::block_on);
        if let Some(e) = caught {
            return Err(Error::Gpu { op, message: describe(&e) });
        }
        self.check_lost(op)?;
        out
    }

    /// On the GL backend, waits for this thread's turn at the device. wgpu drives GL through one
    /// context behind a lock that panics when a thread waits for it longer than a few seconds
    /// (`CONTEXT_LOCK_TIMEOUT_SECS` in wgpu-hal), and a shader compile or a wait for a long
    /// dispatch on llvmpipe holds it that long. Every call that reaches the device here runs
    /// inside `scoped` or `wait`, so threads sharing a context queue on this mutex instead, which
    /// has no timeout. `None` on other backends, and when this thread already holds a GL turn
    /// (of any context: nesting inside one never blocks).
    fn gl_turn(&self) -> Option<GlTurn<'_>> {
        let m = self.inner.gl_turn.as_ref()?;
        if IN_GL_TURN.with(|c| c.get()) {
            return None;
        }
        let guard = lock(m);
        IN_GL_TURN.with(|c| c.set(true));
        Some(GlTurn { _guard: guard })
    }

    /// Fails when the device was lost or reported an error no scope caught.
    pub(crate) fn check_lost(&self, op: &'static str) -> Result<()> {
        let g = lock(&self.inner.uncaptured);
        match &*g {
            Some(msg) => Err(Error::Gpu { op, message: msg.clone() }),
            None => Ok(()),
        }
    }

    /// Waits for a submission to finish.
    pub(crate) fn wait(&self, op: &'static str, index: wgpu::SubmissionIndex) -> Result<()> {
        let _turn = self.gl_turn();
        self.inner
            .device
            .poll(wgpu::PollType::Wait { submission_index: Some(index), timeout: None })
            .map_err(|e| Error::Gpu { op, message: e.to_string() })?;
        self.check_lost(op)
    }

    /// The pipeline for `key`, compiled once per context.
    pub(crate) fn pipeline(&self, key: PipelineKey, layout: &'static str) -> Result<Arc<wgpu::ComputePipeline>> {
        if let Some(p) = lock(&self.inner.pipelines).get(&key) {
            return Ok(p.clone());
        }
        let bgl = self.bind_group_layout(layout)?;
        let source = crate::gpu::shaders::source(key.shader)
            .ok_or_else(|| Error::invalid("pipeline", format!("no shader named {}", key.shader)))?;
        let pipeline = self.scoped("pipeline", || {
            let d = &self.inner.device;
            let desc = wgpu::ShaderModuleDescriptor { label: Some(key.shader), source: wgpu::ShaderSource::Wgsl(source.into()) };
            let module = d.create_shader_module(desc);
            let pl = d.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some(key.shader),
                bind_group_layouts: &[Some(&bgl)],
                immediate_size: 0,
            });
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
        let p = Arc::new(pipeline);
        lock(&self.inner.pipelines).insert(key, p.clone());
        Ok(p)
    }

    /// A bind group layout by name. `copy` (every copy kernel): the plan uniform, a read-only
    /// source and a read-write destination. `conv`: the parameters (uniform), the input
    /// (read-only), a window's packed weights (uniform), the bias (read-only), the output, and the
    /// input and output windows again as vec4 words.
    pub(crate) fn bind_group_layout(&self, name: &'static str) -> Result<Arc<wgpu::BindGroupLayout>> {
        if let Some(l) = lock(&self.inner.layouts).get(name) {
            return Ok(l.clone());
        }
        let storage = |binding, read_only| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer { ty: wgpu::BufferBindingType::Storage { read_only }, has_dynamic_offset: false, min_binding_size: None },
            count: None,
        };
        let uniform = |binding| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer { ty: wgpu::BufferBindingType::Uniform, has_dynamic_offset: false, min_binding_size: None },
            count: None,
        };
        let entries = match name {
            "conv" => vec![uniform(0), storage(1, true), uniform(2), storage(3, true), storage(4, false), storage(5, true), storage(6, false)],
            _ => vec![uniform(0), storage(1, true), storage(2, false)],
        };
        let l = Arc::new(self.scoped("bind_group_layout", || {
            Ok(self.inner.device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some(name), entries: &entries }))
        })?);
        lock(&self.inner.layouts).insert(name, l.clone());
        Ok(l)
    }
}

/// A wgpu error with its detail: the `description` of validation and internal errors (the
/// top-level text alone says only "Validation Error"), else the source chain.
fn describe(e: &wgpu::Error) -> String {
    match e {
        wgpu::Error::Validation { description, .. } => format!("validation error: {}", description.trim()),
        wgpu::Error::Internal { description, .. } => format!("internal error: {}", description.trim()),
        wgpu::Error::OutOfMemory { source } => format!("out of memory: {source}"),
    }
}

/// Locks a mutex, taking the data of a poisoned one (every guarded structure stays valid
/// between statements).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
