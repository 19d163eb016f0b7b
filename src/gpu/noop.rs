//! A context on wgpu's `noop` backend posing as a discrete GPU: every command is validated and
//! recorded, nothing runs. What `bench --only host` times the host side of a call on, and what
//! tests use to see the choices a GPU gets without one.

use crate::error::{Error, Result};
use crate::gpu::context::GpuContext;

/// A context on the noop backend, reporting a discrete GPU with the limits of a desktop GPU
/// (subgroups of 32, timestamps). Its kernels never run: downloads give zeros or fail.
pub fn noop_context() -> Result<GpuContext> {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = wgpu::Backends::NOOP;
    desc.backend_options.noop = wgpu::NoopBackendOptions {
        enable: true,
        device_type: Some(wgpu::DeviceType::DiscreteGpu),
        limits: Some(wgpu::Limits { max_storage_buffer_binding_size: 2 << 30, max_buffer_size: 4 << 30, ..wgpu::Limits::default() }),
        features: Some(wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS | wgpu::Features::SUBGROUP),
        subgroup_min_size: Some(32),
        subgroup_max_size: Some(32),
    };
    let instance = wgpu::Instance::new(desc);
    let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions::default())).map_err(|e| Error::Adapter(format!("the noop backend: {e}")))?;
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor { required_features: adapter.features(), required_limits: adapter.limits(), ..Default::default() }))
        .map_err(|e| Error::Adapter(format!("the noop backend's device: {e}")))?;
    device.on_uncaptured_error(std::sync::Arc::new(|_: wgpu::Error| {}));
    // wgpu-hal 30.0.1's noop adapter reports a CPU whatever `device_type` says: the context is
    // told the adapter's type through the info it is given.
    let info = wgpu::AdapterInfo { device_type: wgpu::DeviceType::DiscreteGpu, ..adapter.get_info() };
    Ok(GpuContext::from_device(device, queue, &info))
}
