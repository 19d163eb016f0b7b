//! The async API on WebGPU in a browser (wasm32 only): a copy and a 1x1 convolution, checked
//! against the CPU reference, with nothing that blocks. Run headless by `.ci/run` (Chromium's
//! WebGPU on SwiftShader):
//! `CHROMEDRIVER=/usr/bin/chromedriver CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner
//! cargo test --target wasm32-unknown-unknown --features webgpu --test web`
#![cfg(target_arch = "wasm32")]

use strided_wgpu::{conv1x1_cpu, Conv1x1Options, DType, DeviceTensor, GpuContext, HostTensor, MemoryFormat};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
async fn a_copy_and_a_convolution_on_webgpu_match_the_cpu() {
    let ctx = GpuContext::new_async().await.expect("a WebGPU adapter");
    assert_eq!(ctx.adapter().backend, wgpu::Backend::BrowserWebGpu);
    // NCHW -> channels-last, tuned first (outside any recording), then recorded and awaited.
    let h = HostTensor::from_vec((0..2 * 6 * 5 * 4).map(|i| i as f32 * 0.25 - 3.0).collect(), &[2, 6, 5, 4]).unwrap();
    let x = DeviceTensor::upload(&ctx, &h).unwrap();
    let nhwc = DeviceTensor::empty(&ctx, &[2, 6, 5, 4], DType::F32, MemoryFormat::ChannelsLast).unwrap();
    ctx.tune_copy_async(&nhwc, &x).await.unwrap();
    let mut b = ctx.batch();
    b.copy_(&nhwc, &x).unwrap();
    b.submit().unwrap().finished().await.unwrap();
    assert_eq!(nhwc.download_async().await.unwrap().to_vec::<f32>().unwrap(), h.to_vec::<f32>().unwrap());
    // A 1x1 convolution of the channels-last input, against the CPU reference.
    let wh = HostTensor::from_vec((0..3 * 6).map(|i| (i % 7) as f32 * 0.5 - 1.0).collect(), &[3, 6, 1, 1]).unwrap();
    let w = DeviceTensor::upload(&ctx, &wh).unwrap();
    let o = Conv1x1Options::default();
    ctx.tune_conv1x1_async(&nhwc, &w, None, &o).await.unwrap();
    let y = strided_wgpu::conv1x1(&nhwc, &w, None, &o).unwrap();
    let got = y.download_async().await.unwrap().to_vec::<f32>().unwrap();
    let want = conv1x1_cpu(&h, &wh, None, &o).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!((g - w).abs() <= 1e-5 * w.abs().max(1.0), "element {i}: {g} vs {w}");
    }
}
