//! Adapter selection errors are typed, never panics. Its own test binary: it sets an
//! environment variable, which no other test in this process may race with.

mod common;

use strided_wgpu::{DeviceTensor, DType, Error, GpuContext, MemoryFormat, Strided};

#[test]
fn adapter_selection_and_caller_owned_devices() {
    // A caller-owned device wrapped in a context works like one the crate opened.
    for ctx in common::gpu::contexts() {
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle());
        let adapters = pollster::block_on(instance.enumerate_adapters(ctx.adapter().backend.into()));
        let Some(adapter) = adapters.into_iter().next() else { continue };
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: None,
            required_features: wgpu::Features::empty(),
            required_limits: adapter.limits(),
            experimental_features: wgpu::ExperimentalFeatures::disabled(),
            memory_hints: wgpu::MemoryHints::default(),
            trace: wgpu::Trace::Off,
        }))
        .unwrap();
        let mine = GpuContext::from_device(device, queue, &adapter.get_info());
        let t = DeviceTensor::from_slice(&mine, &[1f32, 2., 3., 4.], &[2, 2]).unwrap();
        let out = DeviceTensor::zeros(&mine, &[2, 2], DType::F32, MemoryFormat::Contiguous).unwrap();
        out.copy_(&t.transpose(0, 1).unwrap()).unwrap();
        assert_eq!(out.download().unwrap().to_vec::<f32>().unwrap(), vec![1., 3., 2., 4.]);
        // Tensors of two contexts do not mix.
        let other = DeviceTensor::zeros(ctx, &[2, 2], DType::F32, MemoryFormat::Contiguous).unwrap();
        assert!(matches!(other.copy_(&t), Err(Error::Device { .. })));
    }
    // SAFETY (edition 2021: set_var is safe): this binary's only test; nothing reads the
    // environment concurrently.
    std::env::set_var("WGPU_ADAPTER_NAME", "no-such-adapter-anywhere");
    let e = GpuContext::new().unwrap_err();
    assert!(matches!(&e, Error::Adapter(m) if m.contains("no-such-adapter-anywhere")), "{e}");
}
