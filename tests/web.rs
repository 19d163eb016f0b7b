//! The async API on WebGPU in a browser (wasm32 only): a copy, a 1x1 convolution, 3x3
//! convolutions through every GPU-shaped kernel, elementwise ops through both elementwise
//! kernels (browsers' shader compilers are stricter than naga), a softmax and column sums, and a
//! matmul, a linear and a matrix-vector product, checked against the CPU reference, with nothing that blocks. Run headless by `.ci/run` (Chromium's
//! WebGPU on SwiftShader):
//! `CHROMEDRIVER=/usr/bin/chromedriver CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner
//! cargo test --target wasm32-unknown-unknown --features webgpu --test web`
#![cfg(target_arch = "wasm32")]

use strided_wgpu::{Conv2dOptions, DeviceTensor, DType, GpuContext, HostTensor, MemoryFormat, Strided};
use strided_wgpu::ops::Conv1x1Options;
use strided_wgpu::advanced::ConvKernel;
use strided_wgpu::advanced::internal::{conv1x1_cpu, conv2d_cpu};
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
    let measured = ctx.tune_copy_async(&nhwc, &x).await.unwrap();
    // Chromium writes timestamps only at compute passes' bounds: the timer brackets the work
    // with two empty passes there, so tuning measures wherever the adapter has timestamps.
    assert!(measured || !ctx.adapter().pass_timestamps, "tuning measured nothing on an adapter with pass timestamps");
    let mut b = ctx.batch();
    b.copy_(&nhwc, &x).unwrap();
    b.submit().unwrap().finished().await.unwrap();
    assert_eq!(nhwc.download_async().await.unwrap().to_vec::<f32>().unwrap(), h.to_vec::<f32>().unwrap());
    // A 1x1 convolution of the channels-last input, against the CPU reference.
    let wh = HostTensor::from_vec((0..3 * 6).map(|i| (i % 7) as f32 * 0.5 - 1.0).collect(), &[3, 6, 1, 1]).unwrap();
    let w = DeviceTensor::upload(&ctx, &wh).unwrap();
    let o = Conv1x1Options::default();
    ctx.tune_conv1x1_async(&nhwc, &w, None, &o).await.unwrap();
    let y = strided_wgpu::ops::conv1x1(&nhwc, &w, None, &o).unwrap();
    let got = y.download_async().await.unwrap().to_vec::<f32>().unwrap();
    let want = conv1x1_cpu(&h, &wh, None, &o).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!((g - w).abs() <= 1e-5 * w.abs().max(1.0), "element {i}: {g} vs {w}");
    }
    // 3x3 convolutions through the GEMM and depthwise kernels, forced, in both layouts.
    let o3 = Conv2dOptions { padding: (1, 1), ..Default::default() };
    let od = Conv2dOptions { groups: 6, ..o3 };
    let w3h = HostTensor::from_vec((0..5 * 6 * 9).map(|i| (i % 11) as f32 * 0.25 - 1.0).collect(), &[5, 6, 3, 3]).unwrap();
    let wdh = HostTensor::from_vec((0..6 * 9).map(|i| (i % 5) as f32 * 0.5 - 1.0).collect(), &[6, 1, 3, 3]).unwrap();
    let bh = HostTensor::from_vec(vec![0.5f32; 6], &[6]).unwrap();
    let (w3, wd, b) = (DeviceTensor::upload(&ctx, &w3h).unwrap(), DeviceTensor::upload(&ctx, &wdh).unwrap(), DeviceTensor::upload(&ctx, &bh).unwrap());
    let b5 = b.narrow(0, 0, 5).unwrap();
    let cases = [
        (ConvKernel::GemmNchw, &w3, &w3h, &o3),
        (ConvKernel::GemmNhwc, &w3, &w3h, &o3),
        (ConvKernel::DepthwiseNchw, &wd, &wdh, &od),
        (ConvKernel::DepthwiseNhwc, &wd, &wdh, &od),
    ];
    for (kernel, w, wh, o) in cases {
        for input in [&x, &nhwc] {
            let k = wh.shape()[0];
            let bias = if k == 5 { b5.clone() } else { b.clone() };
            let want = conv2d_cpu(&h, wh, Some(&bh.narrow(0, 0, k).unwrap()), o).unwrap().to_vec::<f32>().unwrap();
            let y = DeviceTensor::empty(&ctx, &[2, k, 5, 4], DType::F32, MemoryFormat::Contiguous).unwrap();
            let mut batch = ctx.batch();
            batch.conv2d_out_with(input, w, Some(&bias), o, &y, kernel).unwrap();
            batch.submit().unwrap().finished().await.unwrap();
            let got = y.download_async().await.unwrap().to_vec::<f32>().unwrap();
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!((g - w).abs() <= 1e-4 * w.abs().max(1.0), "{kernel:?} element {i}: {g} vs {w}");
            }
        }
    }
}

/// Elementwise ops through both kernels (the rows kernel in both modes), forced, in Chromium
/// (Tint/Dawn compile the override constants, the packed sub-word stores and the quad
/// columns), against the CPU reference; and a converting transpose (f32 NCHW into f16 NHWC,
/// `transpose_cast.wgsl`), bit for bit.
#[wasm_bindgen_test]
async fn elementwise_ops_on_webgpu_match_the_cpu() {
    use strided_wgpu::{Elementwise, Op, Scalar};
    use strided_wgpu::ops::{Input, Target};
    use strided_wgpu::advanced::ElementwisePath;
    let ctx = GpuContext::new_async().await.expect("a WebGPU adapter");
    let xh = HostTensor::from_vec((0..2 * 8 * 3 * 4).map(|i| (i % 13) as f32 * 0.5 - 3.0).collect(), &[2, 8, 3, 4]).unwrap();
    let bh = HostTensor::from_vec((0..8).map(|i| i as f32 * 0.25).collect(), &[1, 8, 1, 1]).unwrap();
    let uh = HostTensor::from_vec((0..96).map(|i| (i * 37 % 256) as u8).collect(), &[2, 8, 3, 2]).unwrap();
    let (x, b, u) = (DeviceTensor::upload(&ctx, &xh).unwrap(), DeviceTensor::upload(&ctx, &bh).unwrap(), DeviceTensor::upload(&ctx, &uh).unwrap());
    let add = Op::Add { alpha: Scalar::Int(1) };
    let cases: Vec<(Op, Vec<Input<'_, HostTensor>>, Vec<Input<'_, DeviceTensor>>, DType)> = vec![
        (add, vec![Input::Tensor(&xh), Input::Tensor(&bh)], vec![Input::Tensor(&x), Input::Tensor(&b)], DType::F32),
        (Op::Sigmoid, vec![Input::Tensor(&xh)], vec![Input::Tensor(&x)], DType::F32),
        (Op::Mul, vec![Input::Tensor(&xh), Input::Scalar(Scalar::Float(0.5))], vec![Input::Tensor(&x), Input::Scalar(Scalar::Float(0.5))], DType::F16),
        (Op::To(DType::F32), vec![Input::Tensor(&uh)], vec![Input::Tensor(&u)], DType::F32),
        (Op::Sigmoid, vec![Input::Tensor(&xh)], vec![Input::Tensor(&x)], DType::BF16),
    ];
    for (op, hin, din, out_dtype) in cases {
        let want_t = HostTensor::run(op, &hin, Target::New).unwrap();
        let shape = want_t.shape().to_vec();
        let want = want_t.to(DType::F32).unwrap().to_vec::<f32>().unwrap();
        for path in [ElementwisePath::Gather { wg: 64, ept: 3 }, ElementwisePath::Rows { wg: 64, ept: 2 }, ElementwisePath::Runs { wg: 8, ept: 3 }] {
            let out = DeviceTensor::empty(&ctx, &shape, out_dtype, MemoryFormat::Contiguous).unwrap();
            let mut batch = ctx.batch();
            batch.elementwise_with(op, &din, Target::Out(&out), path).unwrap();
            batch.submit().unwrap().finished().await.unwrap();
            let got = out.download_async().await.unwrap().to(DType::F32).unwrap().to_vec::<f32>().unwrap();
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                let tol = if out_dtype == DType::F32 { 1e-5 } else { 1e-2 };
                assert!((g - w).abs() <= tol * w.abs().max(1.0), "{op:?} {path:?} element {i}: {g} vs {w}");
            }
        }
    }
    let want = HostTensor::zeros(&[2, 8, 3, 4], DType::F16, MemoryFormat::ChannelsLast).unwrap();
    want.copy_(&xh).unwrap();
    for path in [strided_wgpu::advanced::CopyPath::Auto, strided_wgpu::advanced::CopyPath::TransposeCast { wg: 64 }] {
        let out = DeviceTensor::zeros(&ctx, &[2, 8, 3, 4], DType::F16, MemoryFormat::ChannelsLast).unwrap();
        let mut batch = ctx.batch();
        batch.copy_with(&out, &x, path).unwrap();
        batch.submit().unwrap().finished().await.unwrap();
        let got = out.download_async().await.unwrap();
        assert_eq!(got.to_vec::<half::f16>().unwrap().iter().map(|h| h.to_bits()).collect::<Vec<_>>(), want.to_vec::<half::f16>().unwrap().iter().map(|h| h.to_bits()).collect::<Vec<_>>(), "{path:?}");
    }
}

#[wasm_bindgen_test]
async fn a_softmax_and_a_column_sum_on_webgpu_match_the_cpu() {
    use strided_wgpu::Reduce;
    let ctx = GpuContext::new_async().await.expect("a WebGPU adapter");
    // Rows of 37 logits (softmax along the last dim); a column sum of [300, 13] (outputs
    // contiguous, each walking its column), and of a transposed view (rows in memory).
    let xh = HostTensor::from_vec((0..5 * 37).map(|i| ((i * 29) % 31) as f32 * 0.25 - 3.0).collect(), &[5, 37]).unwrap();
    let ch = HostTensor::from_vec((0..300 * 13).map(|i| ((i * 7) % 23) as f32 - 11.0).collect(), &[300, 13]).unwrap();
    let (x, c) = (DeviceTensor::upload(&ctx, &xh).unwrap(), DeviceTensor::upload(&ctx, &ch).unwrap());
    let mut batch = ctx.batch();
    let sm = batch.softmax(&x, -1).unwrap();
    let cs = batch.sum(&c, 0, false).unwrap();
    let ts = batch.sum(&c.transpose(0, 1).unwrap(), 1, false).unwrap();
    batch.submit().unwrap().finished().await.unwrap();
    let want = xh.softmax(-1).unwrap().to_vec::<f32>().unwrap();
    let got = sm.download_async().await.unwrap().to_vec::<f32>().unwrap();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!((g - w).abs() <= 1e-5 * (w.abs() + 1.0), "softmax element {i}: {g} vs {w}");
    }
    // Sums of small integers: exact in f32 whatever the order.
    let want = ch.sum(0, false).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(cs.download_async().await.unwrap().to_vec::<f32>().unwrap(), want);
    assert_eq!(ts.download_async().await.unwrap().to_vec::<f32>().unwrap(), want);
}

#[wasm_bindgen_test]
async fn a_matmul_and_a_linear_on_webgpu_match_the_cpu() {
    use strided_wgpu::Matmul;
    let ctx = GpuContext::new_async().await.expect("a WebGPU adapter");
    // A batched matmul with a transposed right operand ([3, 5, 37] @ [20, 37]^T: the tiled GEMM)
    // and a linear with a bias over [7, 33] (weight [10, 33]); a matrix-vector product too.
    let val = |n: usize, s: usize| (0..n).map(|i| ((i * 13 + s) % 17) as f32 * 0.125 - 1.0).collect::<Vec<f32>>();
    let ah = HostTensor::from_vec(val(3 * 5 * 37, 1), &[3, 5, 37]).unwrap();
    let bh = HostTensor::from_vec(val(20 * 37, 2), &[20, 37]).unwrap();
    let xh = HostTensor::from_vec(val(7 * 33, 3), &[7, 33]).unwrap();
    let wh = HostTensor::from_vec(val(10 * 33, 4), &[10, 33]).unwrap();
    let ch = HostTensor::from_vec(val(10, 5), &[10]).unwrap();
    let vh = HostTensor::from_vec(val(33, 6), &[33]).unwrap();
    let up = |t: &HostTensor| DeviceTensor::upload(&ctx, t).unwrap();
    let (a, b, x, w, c, v) = (up(&ah), up(&bh), up(&xh), up(&wh), up(&ch), up(&vh));
    let mut batch = ctx.batch();
    let mm = batch.matmul(&a, &b.transpose(0, 1).unwrap()).unwrap();
    let lin = batch.linear(&x, &w, Some(&c)).unwrap();
    let mv = batch.matmul(&w, &v).unwrap();
    batch.submit().unwrap().finished().await.unwrap();
    let checks = [(mm, ah.matmul(&bh.transpose(0, 1).unwrap()).unwrap()), (lin, xh.linear(&wh, Some(&ch)).unwrap()), (mv, wh.matmul(&vh).unwrap())];
    for (ci, (got, want)) in checks.into_iter().enumerate() {
        assert_eq!(got.shape(), want.shape(), "product {ci}: shape");
        let got = got.download_async().await.unwrap().to_vec::<f32>().unwrap();
        // Products of multiples of 1/8 summed in f32: within a few units of the sum's magnitude.
        for (i, (g, w)) in got.iter().zip(want.to_vec::<f32>().unwrap()).enumerate() {
            assert!((g - w).abs() <= 1e-5 * (w.abs() + 4.0), "product {ci} element {i}: {g} vs {w}");
        }
    }
}
