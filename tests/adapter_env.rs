//! Adapter selection errors are typed, never panics; `STRIDED_WGPU_GEMM_TILES=wide` moves a GPU's
//! defaults onto the wide GEMM tiles; `STRIDED_WGPU_LOOP_COUNTERS=1` keeps a GPU's loop counters. Its own test binary: it sets environment variables,
//! which no other test in this process may race with.

mod common;

use strided_wgpu::advanced::internal::noop_context;
use strided_wgpu::advanced::{ConvKernel, MatmulKernel};
use strided_wgpu::{Conv2dOptions, DeviceTensor, DType, Error, GpuContext, MemoryFormat, Strided};

#[test]
fn adapter_selection_and_caller_owned_devices() {
    // A caller-owned device wrapped in a context works like one the crate opened.
    for ctx in common::gpu::contexts() {
        let Some(adapter) = common::gpu::adapter_again(ctx) else { continue };
        for with_adapter in [false, true] {
            let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
                label: None,
                required_features: wgpu::Features::empty(),
                required_limits: adapter.limits(),
                experimental_features: wgpu::ExperimentalFeatures::disabled(),
                memory_hints: wgpu::MemoryHints::default(),
                trace: wgpu::Trace::Off,
            }))
            .unwrap();
            // Without the tensor cores' features the adapter's configurations stay unused.
            let mine = if with_adapter { GpuContext::from_adapter_device(&adapter, device, queue) } else { GpuContext::from_device(device, queue, &adapter.get_info()) };
            assert_eq!(mine.adapter().cooperative_matrix, None);
            let t = DeviceTensor::from_slice(&mine, &[1f32, 2., 3., 4.], &[2, 2]).unwrap();
            let out = DeviceTensor::zeros(&mine, &[2, 2], DType::F32, MemoryFormat::Contiguous).unwrap();
            out.copy_(&t.transpose(0, 1).unwrap()).unwrap();
            assert_eq!(out.download().unwrap().to_vec::<f32>().unwrap(), vec![1., 3., 2., 4.]);
            // Tensors of two contexts do not mix.
            let other = DeviceTensor::zeros(ctx, &[2, 2], DType::F32, MemoryFormat::Contiguous).unwrap();
            assert!(matches!(other.copy_(&t), Err(Error::Device { .. })));
        }
    }
    // `STRIDED_WGPU_GEMM_TILES=wide`: a GPU's defaults (the noop backend posing as a discrete
    // GPU) take the wide GEMM tiles where they take the 64 x 64 ones, and nothing else moves.
    let choices = || {
        let ctx = noop_context().unwrap();
        let report = ctx.adapter().clone();
        let x = DeviceTensor::zeros(&ctx, &[8, 64, 56, 56], DType::F32, MemoryFormat::ChannelsLast).unwrap();
        let w = DeviceTensor::zeros(&ctx, &[64, 64, 3, 3], DType::F32, MemoryFormat::ChannelsLast).unwrap();
        let o = Conv2dOptions { padding: (1, 1), ..Default::default() };
        let out = DeviceTensor::zeros(&ctx, &[8, 64, 56, 56], DType::F32, MemoryFormat::ChannelsLast).unwrap();
        let conv = ctx.conv2d_default(&x, &w, None, &o, &out).unwrap();
        let nchw = DeviceTensor::zeros(&ctx, &[8, 64, 56, 56], DType::F32, MemoryFormat::Contiguous).unwrap();
        let conv_nchw = ctx.conv2d_default(&x, &w, None, &o, &nchw).unwrap();
        let dw = DeviceTensor::zeros(&ctx, &[64, 1, 3, 3], DType::F32, MemoryFormat::Contiguous).unwrap();
        let depthwise = ctx.conv2d_default(&x, &dw, None, &Conv2dOptions { groups: 64, ..o }, &out).unwrap();
        let a = DeviceTensor::zeros(&ctx, &[512, 512], DType::F32, MemoryFormat::Contiguous).unwrap();
        let v = DeviceTensor::zeros(&ctx, &[512, 1], DType::F32, MemoryFormat::Contiguous).unwrap();
        (report.wide_gemm, conv, conv_nchw, depthwise, ctx.matmul_choice_of(&a, &a).unwrap(), ctx.matmul_choice_of(&a, &v).unwrap())
    };
    let (wide, conv, conv_nchw, depthwise, mm, mv) = choices();
    assert!(!wide);
    assert_eq!((conv, conv_nchw, mm), (Some(ConvKernel::GemmNhwc), Some(ConvKernel::GemmNchw), MatmulKernel::GemmSplit));
    // SAFETY (edition 2021: set_var is safe): this binary's only test; nothing reads the
    // environment concurrently.
    std::env::set_var("STRIDED_WGPU_GEMM_TILES", "wide");
    assert_eq!(choices(), (true, Some(ConvKernel::GemmNhwcWide), Some(ConvKernel::GemmNchwWide), depthwise, MatmulKernel::GemmWide, mv));
    std::env::remove_var("STRIDED_WGPU_GEMM_TILES");
    // wgpu's loop counters: kept on CPU adapters, left out on GPUs unless
    // `STRIDED_WGPU_LOOP_COUNTERS=1`.
    for ctx in common::gpu::contexts() {
        assert_eq!(ctx.adapter().loop_counters, ctx.adapter().device_type == wgpu::DeviceType::Cpu, "{}", ctx.adapter().name);
    }
    assert!(!noop_context().unwrap().adapter().loop_counters);
    std::env::set_var("STRIDED_WGPU_LOOP_COUNTERS", "1");
    assert!(noop_context().unwrap().adapter().loop_counters);
    std::env::remove_var("STRIDED_WGPU_LOOP_COUNTERS");

    std::env::set_var("WGPU_ADAPTER_NAME", "no-such-adapter-anywhere");
    let e = GpuContext::new().unwrap_err();
    assert!(matches!(&e, Error::Adapter(m) if m.contains("no-such-adapter-anywhere")), "{e}");
}
