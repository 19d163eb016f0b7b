//! GPU contexts for tests: one per available backend among Vulkan/Metal/DX12 and GL.
//!
//! Without an adapter the tests say so loudly and skip, unless `STRIDED_WGPU_REQUIRE_ADAPTER=1`
//! (CI), which makes a missing adapter a failure. `STRIDED_WGPU_REQUIRE_BACKENDS=vulkan,gl`
//! additionally requires each named backend. `WGPU_BACKEND` restricts the run to one backend.
//! `STRIDED_WGPU_REQUIRE_COOPERATIVE_MATRIX=1` requires every context to run the tensor-core
//! kernels (CI's run on Mesa 26's lavapipe, `tools/coop/lavapipe.sh`), so that their tests
//! cannot pass through the `Unsupported` branch there.
//! "Loudly": straight to stderr, past libtest's capture, and recorded for the summary that
//! `tests/zz_gpu_summary.rs` prints at the end of `cargo test` (`tests/common/skips.rs`).

use std::sync::OnceLock;
use strided_wgpu::GpuContext;

fn open(b: wgpu::Backends) -> Result<GpuContext, String> {
    pollster::block_on(GpuContext::for_backends(b)).map_err(|e| e.to_string())
}

/// The contexts to test on, opened once per test binary.
pub fn contexts() -> &'static [GpuContext] {
    static CTXS: OnceLock<Vec<GpuContext>> = OnceLock::new();
    CTXS.get_or_init(|| {
        let candidates: Vec<(&str, wgpu::Backends)> = match wgpu::Backends::from_env() {
            Some(b) => vec![("WGPU_BACKEND", b)],
            None => vec![("primary", wgpu::Backends::PRIMARY), ("gl", wgpu::Backends::GL)],
        };
        let required: Vec<String> = std::env::var("STRIDED_WGPU_REQUIRE_BACKENDS")
            .map(|s| s.split(',').map(|x| x.trim().to_lowercase()).filter(|x| !x.is_empty()).collect())
            .unwrap_or_default();
        let mut out = Vec::new();
        for (name, b) in candidates {
            match open(b) {
                Ok(c) => out.push(c),
                Err(e) => super::skips::say(&format!("!!! {}: no {name} adapter ({b:?}): {e}", super::skips::suite())),
            }
        }
        for r in &required {
            assert!(
                out.iter().any(|c| format!("{:?}", c.adapter().backend).to_lowercase() == *r),
                "STRIDED_WGPU_REQUIRE_BACKENDS names {r}, but no such adapter opened"
            );
        }
        if std::env::var("STRIDED_WGPU_REQUIRE_COOPERATIVE_MATRIX").as_deref() == Ok("1") {
            for c in &out {
                assert!(c.adapter().cooperative_matrix.is_some(), "STRIDED_WGPU_REQUIRE_COOPERATIVE_MATRIX=1 but {} ({:?}) runs no cooperative matrices", c.adapter().name, c.adapter().backend);
            }
        }
        if out.is_empty() {
            assert!(
                std::env::var("STRIDED_WGPU_REQUIRE_ADAPTER").as_deref() != Ok("1"),
                "STRIDED_WGPU_REQUIRE_ADAPTER=1 but no GPU adapter exists (install mesa-vulkan-drivers)"
            );
            super::skips::skipped("no GPU adapter exists (install mesa-vulkan-drivers for a software one)");
        } else {
            super::skips::record(super::skips::Outcome::Ran(out.iter().map(|c| format!("{:?}", c.adapter().backend)).collect()));
        }
        out
    })
}

pub fn name(c: &GpuContext) -> String {
    format!("{} ({:?})", c.adapter().name, c.adapter().backend)
}

/// `ctx`'s adapter, enumerated afresh: the one of its backend with its name and device type
/// (the first of the backend could be another GPU, or a software adapter beside a GPU).
fn same_adapter(ctx: &GpuContext) -> Option<wgpu::Adapter> {
    // As the crate's contexts enumerate (WGPU_* settings honoured), so that the lists agree.
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let a = ctx.adapter();
    let adapters = pollster::block_on(instance.enumerate_adapters(a.backend.into()));
    adapters.into_iter().find(|x| {
        let i = x.get_info();
        i.name == a.name && i.device_type == a.device_type
    })
}

/// A fresh device of its own on `ctx`'s adapter (tests that destroy it, or that install the
/// host's own handlers), with its adapter's info.
pub fn own_device(ctx: &GpuContext) -> Option<(wgpu::Device, wgpu::Queue, wgpu::AdapterInfo)> {
    let Some(adapter) = same_adapter(ctx) else {
        return unavailable(ctx, "its adapter, enumerated again, was not found");
    };
    let device = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("test host"),
        required_features: adapter.features() & (wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS | wgpu::Features::SUBGROUP),
        required_limits: adapter.limits(),
        experimental_features: wgpu::ExperimentalFeatures::disabled(),
        memory_hints: wgpu::MemoryHints::default(),
        trace: wgpu::Trace::Off,
    }));
    match device {
        Ok((device, queue)) => Some((device, queue, adapter.get_info())),
        Err(e) => unavailable(ctx, &format!("a device of its own could not be opened ({e})")),
    }
}

/// `ctx`'s adapter enumerated again ([`same_adapter`]), for a device of the test's own; where
/// it is not found, as [`unavailable`].
#[allow(dead_code)]
pub fn adapter_again(ctx: &GpuContext) -> Option<wgpu::Adapter> {
    same_adapter(ctx).or_else(|| unavailable(ctx, "its adapter, enumerated again, was not found"))
}

/// A second device on `ctx`'s adapter that could not be had: under
/// `STRIDED_WGPU_REQUIRE_ADAPTER=1` the test fails; else the test's part that needs it is
/// skipped, said on stderr where the user sees it.
fn unavailable<T>(ctx: &GpuContext, why: &str) -> Option<T> {
    let what = format!("{}: {why}", name(ctx));
    assert!(std::env::var("STRIDED_WGPU_REQUIRE_ADAPTER").as_deref() != Ok("1"), "STRIDED_WGPU_REQUIRE_ADAPTER=1 but {what}");
    super::skips::say(&format!("skipped a test's part that needs a second device on {what}"));
    None
}

/// `ctx`'s adapter on a device of its own that the crate takes for a discrete GPU (the host's
/// `AdapterInfo` says so): on a software adapter the kernels GPUs run by default then run, and
/// are checked, too. Its name says it poses.
pub fn posing_as_gpu(ctx: &GpuContext) -> Option<GpuContext> {
    let (device, queue, mut info) = own_device(ctx)?;
    info.device_type = wgpu::DeviceType::DiscreteGpu;
    info.name = format!("{} posing as a GPU", info.name);
    Some(GpuContext::from_device(device, queue, &info))
}

/// Runs a future to completion on this thread without ever blocking it: polled in a loop with
/// a waker that does nothing, yielding between polls.
pub fn spin<F: std::future::Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::yield_now();
    }
}

/// A device on the same adapter as `ctx` with lowered limits (a context of its own).
pub fn limited(ctx: &GpuContext, limits: impl FnOnce(wgpu::Limits) -> wgpu::Limits) -> GpuContext {
    limited_as(ctx, limits, None)
}

/// [`limited`], its adapter taken for a device of `device_type` where given (as
/// [`posing_as_gpu`]).
#[allow(dead_code)]
pub fn limited_as(ctx: &GpuContext, limits: impl FnOnce(wgpu::Limits) -> wgpu::Limits, device_type: Option<wgpu::DeviceType>) -> GpuContext {
    limited_device(ctx, limits, device_type)
}

/// A context of the crate's own (`GpuContext::from_adapter_with_limits`: its tensor cores
/// where the adapter has them) on `ctx`'s adapter with lowered limits.
#[allow(dead_code)]
pub fn limited_tensor_cores(ctx: &GpuContext, limits: impl FnOnce(wgpu::Limits) -> wgpu::Limits) -> GpuContext {
    let adapter = same_adapter(ctx).expect("the adapter again");
    pollster::block_on(GpuContext::from_adapter_with_limits(&adapter, limits(adapter.limits()))).unwrap()
}

fn limited_device(ctx: &GpuContext, limits: impl FnOnce(wgpu::Limits) -> wgpu::Limits, device_type: Option<wgpu::DeviceType>) -> GpuContext {
    let adapter = same_adapter(ctx).expect("the adapter again");
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: None,
        required_features: adapter.features() & (wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS),
        required_limits: limits(adapter.limits()),
        experimental_features: wgpu::ExperimentalFeatures::disabled(),
        memory_hints: wgpu::MemoryHints::default(),
        trace: wgpu::Trace::Off,
    }))
    .unwrap();
    let mut info = adapter.get_info();
    if let Some(t) = device_type {
        info.device_type = t;
        info.name = format!("{} posing as {t:?}", info.name);
    }
    GpuContext::from_device(device, queue, &info)
}

/// A fresh context of the crate's own on `ctx`'s backend, for a test that destroys its device.
#[allow(dead_code)]
pub fn doomed_device(ctx: &GpuContext) -> Option<GpuContext> {
    match pollster::block_on(GpuContext::for_backends(ctx.adapter().backend.into())) {
        Ok(c) => Some(c),
        Err(e) => unavailable(ctx, &format!("a context of its own could not be opened ({e})")),
    }
}
