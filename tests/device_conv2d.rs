//! conv2d on the device against the CPU reference: random geometry (kernel sizes, stride,
//! padding, dilation, groups, depthwise), bias, ReLU and input layouts through every kernel
//! family the tuner can pick (the GPU-shaped ones forced on software adapters too), compared
//! with a tolerance scaled to each output's sum of |terms|; edges of the tiles and grids.

mod common;

use common::conv::{abs, to_device, vals};
use common::gpu::{contexts, limited, name};
use common::rng::Rng;
use strided_wgpu::{Conv2dOptions, DType, DeviceTensor, Elementwise, Error, GpuContext, HostTensor, MemoryFormat, Strided, TuningPolicy};
use strided_wgpu::advanced::{conv2d_with, ConvKernel};
use strided_wgpu::advanced::internal::conv2d_cpu;

/// Runs one convolution through `kernel` and compares every output with the CPU reference.
/// Returns how many outputs were compared.
fn check(ctx: &GpuContext, x: &HostTensor, wt: &HostTensor, b: Option<&HostTensor>, o: &Conv2dOptions, kernel: ConvKernel, label: &str) -> usize {
    let want = conv2d_cpu(x, wt, b, o).unwrap();
    let scale = conv2d_cpu(&abs(x), &abs(wt), b.map(abs).as_ref(), &Conv2dOptions { relu: false, ..*o }).unwrap();
    let got = conv2d_with(&to_device(ctx, x), &to_device(ctx, wt), b.map(|b| to_device(ctx, b)).as_ref(), o, kernel).unwrap_or_else(|e| panic!("{} {label} {kernel:?}: {e}", name(ctx)));
    assert_eq!(got.layout(), want.layout(), "{label}: output layout");
    let (g, wv, s) = (got.download().unwrap().to_vec::<f32>().unwrap(), want.to_vec::<f32>().unwrap(), scale.to_vec::<f32>().unwrap());
    for i in 0..g.len() {
        assert!(
            approx::abs_diff_eq!(g[i], wv[i], epsilon = 1e-5 * s[i] + 1e-6),
            "{} {label} x {:?} strides {:?} w {:?} {o:?} {kernel:?}: output {i}: {} vs {}",
            name(ctx),
            x.shape(),
            x.strides(),
            wt.shape(),
            g[i],
            wv[i]
        );
    }
    g.len()
}

/// A call of `kernel` captured: the work that runs once, at capture, beside its kernel's
/// dispatches (dispatches, copies and clears: a weight's packing) and the kernels a replay
/// dispatches.
fn captured_call(ctx: &GpuContext, x: &DeviceTensor, w: &DeviceTensor, b: Option<&DeviceTensor>, o: &Conv2dOptions, kernel: ConvKernel) -> (u64, Vec<&'static str>) {
    let graph = ctx.capture(&[x], || conv2d_with(x, w, b, o, kernel)).unwrap();
    let constants = graph.constant_counts();
    (constants.dispatches + constants.transfers, graph.dispatches().into_iter().map(|(_, k)| k).collect())
}

/// The input in one of four layouts: NCHW, channels-last, flipped, and non-dense.
fn layout(rng: &mut Rng, x: HostTensor) -> HostTensor {
    match rng.below(4) {
        0 => x,
        1 => x.contiguous(MemoryFormat::ChannelsLast).unwrap(),
        2 => x.flip(3).unwrap().contiguous(MemoryFormat::Contiguous).unwrap().flip(3).unwrap(),
        _ => {
            let [n, c, h, w] = [x.shape()[0], x.shape()[1], x.shape()[2], x.shape()[3]];
            // NaN outside the view (zeros there would pass for a read of the padding).
            let big = HostTensor::zeros(&[n, h, c + 1, w + 2], x.dtype(), MemoryFormat::Contiguous).unwrap().add(f64::NAN).unwrap();
            let v = big.narrow(2, 1, c).and_then(|v| v.narrow(3, 2, w)).and_then(|v| v.permute(&[0, 2, 1, 3])).unwrap();
            v.copy_(&x).unwrap();
            v
        }
    }
}

const KERNELS: [ConvKernel; 8] = [ConvKernel::Auto, ConvKernel::GemmNchw, ConvKernel::GemmNhwc, ConvKernel::Nchw, ConvKernel::NhwcTiled, ConvKernel::Direct, ConvKernel::GemmNchwSplit, ConvKernel::GemmNhwcSplit];

#[test]
fn random_convolutions_match_cpu() {
    for ctx in contexts() {
        let mut rng = Rng(7);
        let mut compared = 0;
        for case in 0..50 {
            let groups = [1, 1, 2, 3][rng.below(4)];
            let (kh, kw) = (1 + rng.below(4), 1 + rng.below(4));
            let dil = (1 + rng.below(2), 1 + rng.below(2));
            let pad = (rng.below(3), rng.below(3));
            let n = 1 + rng.below(2);
            // Big enough for the kernel's extent.
            let h = (dil.0 * (kh - 1) + 1).saturating_sub(2 * pad.0).max(1) + rng.below(8);
            let w = (dil.1 * (kw - 1) + 1).saturating_sub(2 * pad.1).max(1) + rng.below(8);
            let c = groups * (1 + rng.below(9));
            let k = groups * (1 + rng.below(9));
            let o = Conv2dOptions { stride: (1 + rng.below(2), 1 + rng.below(3)), padding: pad, dilation: dil, groups, relu: rng.below(2) == 0, output_format: None };
            let x = HostTensor::from_vec(vals(&mut rng, n * c * h * w), &[n, c, h, w]).unwrap();
            let x = layout(&mut rng, x);
            let wt = HostTensor::from_vec(vals(&mut rng, k * (c / groups) * kh * kw), &[k, c / groups, kh, kw]).unwrap();
            let wt = if rng.below(3) == 0 { wt.contiguous(MemoryFormat::ChannelsLast).unwrap() } else { wt };
            let b = (rng.below(2) == 0).then(|| HostTensor::from_vec(vals(&mut rng, k), &[k]).unwrap());
            compared += check(ctx, &x, &wt, b.as_ref(), &o, KERNELS[case % KERNELS.len()], &format!("case {case}"));
        }
        assert!(compared > 1000, "only {compared} outputs compared");
    }
}

#[test]
fn depthwise_convolutions_match_cpu() {
    for ctx in contexts() {
        let mut rng = Rng(11);
        for case in 0..32 {
            let c = 1 + rng.below(9);
            let mult = 1 + rng.below(2);
            let (kh, kw) = (1 + rng.below(4), 1 + rng.below(4));
            let (n, h, w) = (1 + rng.below(2), kh + rng.below(7), kw + rng.below(7));
            let o = Conv2dOptions { stride: (1 + rng.below(2), 1 + rng.below(2)), padding: (rng.below(2), rng.below(2)), dilation: (1, 1), groups: c, relu: rng.below(2) == 0, output_format: None };
            let x = HostTensor::from_vec(vals(&mut rng, n * c * h * w), &[n, c, h, w]).unwrap();
            let x = layout(&mut rng, x);
            let wt = HostTensor::from_vec(vals(&mut rng, c * mult * kh * kw), &[c * mult, 1, kh, kw]).unwrap();
            let b = (rng.below(2) == 0).then(|| HostTensor::from_vec(vals(&mut rng, c * mult), &[c * mult]).unwrap());
            let kernel = [ConvKernel::DepthwiseNchw, ConvKernel::DepthwiseNhwc, ConvKernel::DepthwiseRows, ConvKernel::Auto][case % 4];
            check(ctx, &x, &wt, b.as_ref(), &o, kernel, &format!("depthwise case {case}"));
        }
    }
}

/// The tall depthwise kernel (3x3, unit stride and dilation, 16 output rows per invocation):
/// heights and widths around its 16-row blocks and 8-pixel strips, channel multipliers,
/// paddings 0 to 2, 1-pixel images, every layout; other windows are refused by its
/// eligibility check, with nothing dispatched.
#[test]
fn tall_depthwise_matches_cpu() {
    for ctx in contexts() {
        let mut rng = Rng(23);
        for case in 0..24 {
            let c = 1 + rng.below(9);
            let mult = 1 + rng.below(2);
            let (n, h, w) = if case < 2 { (1 + case, 1, 1) } else { (1 + rng.below(2), 1 + rng.below(19), 1 + rng.below(19)) };
            let p = rng.below(3);
            let o = Conv2dOptions { padding: (p, p), groups: c, relu: rng.below(2) == 0, ..Default::default() };
            if h + 2 * p < 3 || w + 2 * p < 3 {
                continue;
            }
            let x = HostTensor::from_vec(vals(&mut rng, n * c * h * w), &[n, c, h, w]).unwrap();
            let x = layout(&mut rng, x);
            let wt = HostTensor::from_vec(vals(&mut rng, c * mult * 9), &[c * mult, 1, 3, 3]).unwrap();
            let b = (rng.below(2) == 0).then(|| HostTensor::from_vec(vals(&mut rng, c * mult), &[c * mult]).unwrap());
            check(ctx, &x, &wt, b.as_ref(), &o, ConvKernel::DepthwiseTall, &format!("tall depthwise case {case} [{n},{c},{h},{w}] x{mult} pad {p}"));
        }
        let x = to_device(ctx, &HostTensor::from_vec(vals(&mut rng, 4 * 10 * 10), &[1, 4, 10, 10]).unwrap());
        for (k, stride, dilation) in [(5, 1, 1), (3, 2, 1), (3, 1, 2)] {
            let wt = to_device(ctx, &HostTensor::from_vec(vals(&mut rng, 4 * k * k), &[4, 1, k, k]).unwrap());
            let o = Conv2dOptions { stride: (stride, stride), dilation: (dilation, dilation), groups: 4, ..Default::default() };
            let e = conv2d_with(&x, &wt, None, &o, ConvKernel::DepthwiseTall).unwrap_err();
            assert!(matches!(&e, Error::Unsupported { .. }) && e.to_string().contains("3x3"), "{}: {k}x{k} stride {stride} dilation {dilation}: {e}", name(ctx));
        }
    }
}

/// Grids past the per-dimension workgroup limit fold into two dimensions (a device with a
/// limit of 16 per dimension, and a real 70,000-workgroup GEMM); one past the square of the
/// limit is an error; inputs over one binding (64 KiB) run by ranges of images; 1-pixel images.
/// The direct kernel's windows: more input channels than one weight block holds with every
/// tap (windows that add into the output), more than 64 output channels (several output
/// blocks), channel counts that are not multiples of 4, groups, and kernels large enough to
/// shrink the output quads an invocation holds; a kernel of more taps than a block holds is
/// refused with a typed error.
#[test]
fn direct_windows_match_cpu() {
    for ctx in contexts() {
        let mut rng = Rng(29);
        let x = |rng: &mut Rng, s: &[usize]| HostTensor::from_vec(vals(rng, s.iter().product()), s).unwrap();
        // (n, c, h, w, k, kh, kw, stride, padding, dilation, groups)
        for (case, &(n, c, h, w, k, kh, kw, s, p, d, g)) in [
            (1, 100, 7, 6, 36, 3, 3, 1, 1, 1, 1),
            (2, 64, 6, 5, 70, 3, 3, 1, 1, 1, 1),
            (1, 66, 5, 7, 130, 3, 2, 2, 1, 2, 2),
            (1, 9, 9, 9, 20, 7, 7, 2, 3, 1, 1),
            (1, 6, 12, 12, 40, 11, 11, 1, 5, 1, 1),
            (2, 12, 5, 5, 9, 1, 1, 1, 0, 1, 3),
        ]
        .iter()
        .enumerate()
        {
            let xt = x(&mut rng, &[n, c, h, w]);
            let xt = layout(&mut rng, xt);
            let o = Conv2dOptions { stride: (s, s), padding: (p, p), dilation: (d, d), groups: g, relu: case % 2 == 0, output_format: None };
            check(ctx, &xt, &x(&mut rng, &[k, c / g, kh, kw]), Some(&x(&mut rng, &[k])), &o, ConvKernel::Direct, &format!("direct case {case}"));
        }
        let (xt, wt) = (x(&mut rng, &[1, 1, 33, 33]), x(&mut rng, &[1, 1, 33, 33]));
        let e = conv2d_with(&to_device(ctx, &xt), &to_device(ctx, &wt), None, &Conv2dOptions::default(), ConvKernel::Direct).unwrap_err();
        assert!(matches!(e, Error::Unsupported { .. }) && e.to_string().contains("1089 taps"), "{e}");
    }
}

/// The rows form of the direct kernel (3 taps wide, unit stride and dilation along W): rows
/// shorter than and not a multiple of its 8 pixels, padding wider than a tap, kernel heights,
/// strides and dilations along H other than 1, groups, more than 64 output channels (two
/// output-channel blocks) and input channels in several windows; a kernel of another width is
/// refused with a typed error.
#[test]
fn direct_rows_match_cpu() {
    for ctx in contexts() {
        let mut rng = Rng(31);
        let x = |rng: &mut Rng, s: &[usize]| HostTensor::from_vec(vals(rng, s.iter().product()), s).unwrap();
        // (n, c, h, w, k, kh, stride h, padding (h, w), dilation h, groups)
        for (case, &(n, c, h, w, k, kh, sh, p, dh, g)) in [
            (1, 100, 7, 6, 36, 3, 1, (1, 1), 1, 1),
            (2, 64, 6, 19, 70, 3, 1, (1, 1), 1, 1),
            (1, 66, 9, 10, 130, 5, 2, (2, 1), 2, 2),
            (1, 8, 4, 9, 12, 1, 1, (0, 0), 1, 1),
            (2, 12, 5, 17, 9, 3, 1, (0, 2), 1, 3),
            (1, 20, 3, 8, 8, 7, 1, (3, 1), 1, 1),
        ]
        .iter()
        .enumerate()
        {
            let xt = x(&mut rng, &[n, c, h, w]);
            let xt = layout(&mut rng, xt);
            let o = Conv2dOptions { stride: (sh, 1), padding: p, dilation: (dh, 1), groups: g, relu: case % 2 == 1, output_format: None };
            check(ctx, &xt, &x(&mut rng, &[k, c / g, kh, 3]), Some(&x(&mut rng, &[k])), &o, ConvKernel::DirectRows, &format!("direct rows case {case}"));
        }
        let (xt, wt) = (x(&mut rng, &[1, 4, 6, 6]), x(&mut rng, &[4, 4, 3, 3]));
        let e = conv2d_with(&to_device(ctx, &xt), &to_device(ctx, &wt), None, &Conv2dOptions { stride: (1, 2), ..Default::default() }, ConvKernel::DirectRows).unwrap_err();
        assert!(matches!(e, Error::Unsupported { .. }) && e.to_string().contains("3 wide with stride 1"), "{e}");
    }
}

/// The band form of the direct kernel (3x3, unit stride and dilation; 8 output rows of a band
/// share their input rows through subgroup shuffles): images whose height and width are not
/// multiples of 8 (bands past the image, blocks past the row), several images (bands next to
/// each other in one subgroup), 1-row and 1-column images, padding 0 and wider than a tap,
/// groups, more than 64 output channels and input channels in several windows. Other windows
/// are refused with a typed error; adapters without subgroups (GL) refuse it too.
#[test]
fn direct_band_matches_cpu() {
    for ctx in contexts() {
        let mut rng = Rng(37);
        let x = |rng: &mut Rng, s: &[usize]| HostTensor::from_vec(vals(rng, s.iter().product()), s).unwrap();
        let subgroups = ConvKernel::DirectBand.runs_on(ctx.adapter()).is_ok();
        // lavapipe has subgroups of 8: the band must run there, not only be refused.
        let report = ctx.adapter();
        assert!(subgroups || !(report.backend == wgpu::Backend::Vulkan && report.name.contains("llvmpipe")), "{}: DirectBand refused on lavapipe", name(ctx));
        // (n, c, h, w, k, padding (h, w), groups)
        for (case, &(n, c, h, w, k, p, g)) in [
            (1, 100, 7, 6, 36, (1, 1), 1),
            (3, 64, 13, 19, 70, (1, 1), 1),
            (2, 16, 1, 9, 12, (1, 1), 1),
            (2, 12, 10, 1, 9, (1, 1), 3),
            (1, 8, 17, 17, 16, (0, 2), 2),
            (2, 130, 9, 8, 24, (2, 0), 1),
        ]
        .iter()
        .enumerate()
        {
            let xt = x(&mut rng, &[n, c, h, w]);
            let xt = layout(&mut rng, xt);
            let o = Conv2dOptions { padding: p, groups: g, relu: case % 2 == 1, ..Default::default() };
            let wt = x(&mut rng, &[k, c / g, 3, 3]);
            if subgroups {
                check(ctx, &xt, &wt, Some(&x(&mut rng, &[k])), &o, ConvKernel::DirectBand, &format!("direct band case {case}"));
            } else {
                let e = conv2d_with(&to_device(ctx, &xt), &to_device(ctx, &wt), None, &o, ConvKernel::DirectBand).unwrap_err();
                assert!(matches!(e, Error::Unsupported { .. }) && e.to_string().contains("needs subgroups"), "{e}");
            }
        }
        let (xt, wt) = (x(&mut rng, &[1, 4, 6, 6]), x(&mut rng, &[4, 4, 3, 3]));
        for o in [Conv2dOptions { stride: (2, 1), ..Default::default() }, Conv2dOptions { dilation: (1, 2), ..Default::default() }] {
            let e = conv2d_with(&to_device(ctx, &xt), &to_device(ctx, &wt), None, &o, ConvKernel::DirectBand).unwrap_err();
            assert!(matches!(e, Error::Unsupported { .. }) && e.to_string().contains("3x3 kernel with stride 1 and dilation 1"), "{e}");
        }
        let e = conv2d_with(&to_device(ctx, &xt), &to_device(ctx, &x(&mut rng, &[4, 4, 3, 1])), None, &Conv2dOptions::default(), ConvKernel::DirectBand).unwrap_err();
        assert!(matches!(e, Error::Unsupported { .. }) && e.to_string().contains("got 3x1"), "{e}");
    }
}

#[test]
fn grids_bindings_and_tiny_images() {
    for ctx in contexts() {
        let mut rng = Rng(5);
        let o3 = Conv2dOptions { padding: (1, 1), ..Default::default() };
        let x = |rng: &mut Rng, s: &[usize]| HostTensor::from_vec(vals(rng, s.iter().product()), s).unwrap();
        let small = limited(ctx, |l| wgpu::Limits { max_compute_workgroups_per_dimension: 16, ..l });
        let (big, mid) = (x(&mut rng, &[2, 8, 80, 80]), x(&mut rng, &[2, 8, 40, 40]));
        let w = x(&mut rng, &[8, 8, 3, 3]);
        let dw = x(&mut rng, &[8, 1, 3, 3]);
        for format in [MemoryFormat::Contiguous, MemoryFormat::ChannelsLast] {
            for kernel in [ConvKernel::GemmNchw, ConvKernel::GemmNhwc, ConvKernel::Nchw, ConvKernel::NhwcTiled, ConvKernel::DirectRows, ConvKernel::DirectBand] {
                if kernel.runs_on(small.adapter()).is_ok() {
                    check(&small, &big.contiguous(format).unwrap(), &w, None, &o3, kernel, "2-d grid");
                }
            }
            for kernel in [ConvKernel::DepthwiseNchw, ConvKernel::DepthwiseNhwc, ConvKernel::DepthwiseRows, ConvKernel::DepthwiseTall] {
                check(&small, &mid.contiguous(format).unwrap(), &dw, None, &Conv2dOptions { groups: 8, ..o3 }, kernel, "2-d grid");
            }
        }
        let too_big = to_device(&small, &x(&mut rng, &[8, 8, 80, 80]));
        let e = conv2d_with(&too_big, &to_device(&small, &w), None, &o3, ConvKernel::GemmNchw).unwrap_err();
        assert!(matches!(&e, Error::Limit { limit: "max_compute_workgroups_per_dimension", .. }), "{e}");

        // 70,000 groups of one channel: 70,000 GEMM workgroups on the real device.
        let n = 70_000;
        let xg = x(&mut rng, &[1, n, 1, 1]);
        let wg = x(&mut rng, &[n, 1, 1, 1]);
        check(ctx, &xg, &wg, None, &Conv2dOptions { groups: n, ..Default::default() }, ConvKernel::GemmNchw, "70,000 workgroups");

        // 16 x 20 x 20 floats = 25.6 KB per image: 6 images do not fit one 64 KiB binding.
        let tight = limited(ctx, |l| wgpu::Limits { max_storage_buffer_binding_size: 64 << 10, ..l });
        let xs = x(&mut rng, &[6, 16, 20, 20]);
        let ws = x(&mut rng, &[8, 16, 3, 3]);
        let wd = x(&mut rng, &[16, 1, 3, 3]);
        for format in [MemoryFormat::Contiguous, MemoryFormat::ChannelsLast] {
            for kernel in [ConvKernel::GemmNchw, ConvKernel::GemmNhwc, ConvKernel::NchwTiled, ConvKernel::Nhwc, ConvKernel::DirectRows, ConvKernel::DirectBand] {
                if kernel.runs_on(tight.adapter()).is_ok() {
                    check(&tight, &xs.contiguous(format).unwrap(), &ws, None, &o3, kernel, "split by image");
                }
            }
            for kernel in [ConvKernel::DepthwiseNchw, ConvKernel::DepthwiseNhwc, ConvKernel::DepthwiseRows, ConvKernel::DepthwiseTall] {
                check(&tight, &xs.contiguous(format).unwrap(), &wd, None, &Conv2dOptions { groups: 16, ..o3 }, kernel, "split by image");
            }
        }

        // 1-pixel images, with and without padding around them.
        let one = x(&mut rng, &[3, 5, 1, 1]);
        // Coop takes float16 only (tensor_core_convolutions_match_the_reference).
        for kernel in ConvKernel::ALL.into_iter().filter(|k| !matches!(k, ConvKernel::DepthwiseNchw | ConvKernel::DepthwiseNhwc | ConvKernel::DepthwiseRows | ConvKernel::DepthwiseTall | ConvKernel::Coop) && k.runs_on(ctx.adapter()).is_ok()) {
            // DirectRows needs a kernel 3 wide, DirectBand 3x3.
            if !matches!(kernel, ConvKernel::DirectRows | ConvKernel::DirectBand) {
                check(ctx, &one, &x(&mut rng, &[7, 5, 1, 1]), None, &Conv2dOptions::default(), kernel, "1 pixel");
            }
            check(ctx, &one, &x(&mut rng, &[7, 5, 3, 3]), Some(&x(&mut rng, &[7])), &o3, kernel, "1 pixel, padded");
        }
    }
}

/// Rows past the kernels' i32 arithmetic: an input whose H (a broadcast view, one element in
/// memory) puts the last output's row past 2^31 is an overflow error on every adapter and for
/// every kernel the call may take, where the kernels' i32 row index wrapped (a wrong zero);
/// the CPU reference computes huge strides and paddings exactly.
#[test]
fn rows_past_i32_are_overflow_errors_and_huge_strides_exact_on_the_host() {
    let one = HostTensor::from_vec(vec![1f32], &[1, 1, 1, 1]).unwrap();
    let o = Conv2dOptions { stride: (1 << 63, 1), padding: (3 << 61, 0), ..Default::default() };
    let y = strided_wgpu::advanced::internal::conv2d_cpu(&one, &one, None, &o).unwrap();
    assert_eq!((y.shape(), y.to_vec::<f32>().unwrap()), (&[1usize, 1, 2, 1][..], vec![0.0, 0.0]));
    for ctx in contexts() {
        let d = DeviceTensor::upload(ctx, &one).unwrap();
        let tall = d.expand(&[1, 1, 3 << 30, 1]).unwrap();
        let o = Conv2dOptions { stride: (1 << 30, 1), ..Default::default() };
        for kernel in std::iter::once(None).chain(ConvKernel::ALL.map(Some)) {
            let r = match kernel {
                None => strided_wgpu::Conv2d::conv2d(&tall, &d, None, &o),
                Some(k) => conv2d_with(&tall, &d, None, &o, k),
            };
            assert!(matches!(r, Err(Error::Overflow { .. }) | Err(Error::Unsupported { .. })), "{} {kernel:?}: {:?}", name(ctx), r.map(|t| t.shape().to_vec()));
            if kernel.is_none() {
                assert!(matches!(r, Err(Error::Overflow { .. })), "{}", name(ctx));
            }
        }
    }
}

/// Bad input: a typed error naming the problem, and nothing dispatched (the output a batch was
/// given keeps its contents).
#[test]
fn bad_input_is_a_typed_error_and_writes_nothing() {
    for ctx in contexts() {
        let f = |s: &[usize], v: f32| DeviceTensor::from_slice(ctx, &vec![v; s.iter().product()], s).unwrap();
        let x = f(&[2, 4, 5, 5], 1.0);
        let w = f(&[6, 4, 3, 3], 1.0);
        let o = Conv2dOptions::default();
        let out = f(&[2, 6, 3, 3], 7.0);
        let msg = |r: Result<(), Error>| r.unwrap_err().to_string();
        let record = |x: &DeviceTensor, w: &DeviceTensor, b: Option<&DeviceTensor>, o: &Conv2dOptions, out: &DeviceTensor| -> Result<(), Error> {
            let mut batch = ctx.batch();
            let r = batch.conv2d_out(x, w, b, o, out);
            batch.submit()?.wait()?;
            r
        };
        let cases: Vec<(String, &str)> = vec![
            (msg(record(&x, &f(&[6, 3, 3, 3], 1.0), None, &o, &out)), "input channels per group"),
            (msg(record(&x, &w, None, &Conv2dOptions { groups: 3, ..o }, &out)), "groups = 3"),
            (msg(record(&x, &w, None, &Conv2dOptions { stride: (0, 1), ..o }, &out)), "stride"),
            (msg(record(&x, &w, None, &Conv2dOptions { dilation: (1, 0), ..o }, &out)), "dilation"),
            (msg(record(&x, &f(&[6, 4, 7, 3], 1.0), None, &o, &out)), "exceeds the padded input"),
            (msg(record(&x, &w, None, &Conv2dOptions { dilation: (3, 1), ..o }, &out)), "exceeds the padded input"),
            (msg(record(&x, &w, Some(&f(&[5], 1.0)), &o, &out)), "bias must have shape [6]"),
            (msg(record(&x, &w, None, &o, &f(&[2, 6, 4, 3], 7.0))), "output must be f32 of shape [2, 6, 3, 3]"),
            (msg(record(&x, &w, None, &Conv2dOptions { groups: 2, ..o }, &out)), "input channels per group"),
        ];
        for (m, want) in &cases {
            assert!(m.contains(want), "{}: {m:?} should name {want:?}", name(ctx));
            assert!(m.starts_with("conv2d"), "{m:?} should name the op");
        }
        let xh = DeviceTensor::from_slice(ctx, &[half::f16::ONE; 200], &[2, 4, 5, 5]).unwrap();
        assert!(matches!(record(&xh, &w, None, &o, &out), Err(Error::InvalidArgument { op: "conv2d", .. })));
        // An output overlapping the input, or itself.
        let shared = f(&[2 * 6 * 3 * 3 + 200], 1.0);
        let xin = shared.narrow(0, 0, 200).unwrap().view(&[2, 4, 5, 5]).unwrap();
        let yov = shared.narrow(0, 100, 108).unwrap().view(&[2, 6, 3, 3]).unwrap();
        assert!(matches!(record(&xin, &w, None, &o, &yov), Err(Error::Overlap { .. })));
        let selfish = f(&[9], 7.0).as_strided(&[2, 6, 3, 3], &[0, 0, 3, 1], 0).unwrap();
        assert!(matches!(record(&x, &w, None, &o, &selfish), Err(Error::Overlap { .. })));
        // Forcing a depthwise kernel on a convolution that is not depthwise.
        let e = conv2d_with(&x, &w, None, &o, ConvKernel::DepthwiseNchw).unwrap_err();
        assert!(e.to_string().contains("groups == C"), "{e}");
        // Nothing was written anywhere.
        assert!(out.download().unwrap().to_vec::<f32>().unwrap().iter().all(|&v| v == 7.0));
        assert!(shared.download().unwrap().to_vec::<f32>().unwrap().iter().all(|&v| v == 1.0));
        // A good call on the same context still works afterwards: 4 * 9 ones.
        record(&x, &w, None, &o, &out).unwrap();
        assert!(out.download().unwrap().to_vec::<f32>().unwrap().iter().all(|&v| v == 36.0));
    }
}

/// Channels past a window's chunk (C/groups a multiple of 4 but not a power of two, so the
/// channel-vectorized kernels read whole quads) must read zeros: an infinity in the next
/// pixel's channels stays out of this pixel's outputs.
#[test]
fn channels_past_the_chunk_stay_out_of_the_sum() {
    for ctx in contexts() {
        let mut v: Vec<f32> = (0..12 * 2).map(|i| (i % 5) as f32 - 2.0).collect();
        v[1] = f32::INFINITY; // x[0, 0, 0, 1]
        let x = HostTensor::from_vec(v, &[1, 12, 1, 2]).unwrap().contiguous(MemoryFormat::ChannelsLast).unwrap();
        let w = HostTensor::from_vec((0..4 * 12).map(|i| (i % 3) as f32 - 1.0).collect(), &[4, 12, 1, 1]).unwrap();
        let want = conv2d_cpu(&x, &w, None, &Conv2dOptions::default()).unwrap().to_vec::<f32>().unwrap();
        let kernels: Vec<ConvKernel> = ConvKernel::ALL.into_iter().filter(|k| k.eligible(&strided_wgpu::advanced::conv2d_shape(x.layout(), w.layout(), None, [None; 3], &Conv2dOptions::default()).unwrap(), &Conv2dOptions::default()).is_ok() && k.runs_on(ctx.adapter()).is_ok()).collect();
        // The direct, channel-vectorized and GEMM kernels at least (an over-strict eligibility
        // check would leave this test checking nothing).
        assert!(kernels.len() >= 3, "{}: only {kernels:?} run a dense 1x1 convolution", name(ctx));
        for kernel in kernels {
            let got = conv2d_with(&to_device(ctx, &x), &to_device(ctx, &w), None, &Conv2dOptions::default(), kernel).unwrap().download().unwrap().to_vec::<f32>().unwrap();
            for k in 0..4 {
                // Pixel 0 of channel k is finite and equal; pixel 1 holds what the reference has.
                assert_eq!(got[2 * k], want[2 * k], "{} {kernel:?} channel {k} pixel 0", name(ctx));
                let (g, w) = (got[2 * k + 1], want[2 * k + 1]);
                assert!(g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()), "{} {kernel:?} channel {k} pixel 1: {g} vs {w}", name(ctx));
            }
        }
    }
}

/// The fused ReLU keeps NaN (as `Op::Relu` and PyTorch's relu), zeroes negatives and -0.0, on
/// every kernel that can run a dense 1x1 and a depthwise 3x3 convolution.
#[test]
fn fused_relu_keeps_nan() {
    for ctx in contexts() {
        let mut v: Vec<f32> = (0..4 * 5 * 6).map(|i| (i % 7) as f32 - 3.0).collect();
        v[0] = f32::NAN;
        let x = HostTensor::from_vec(v, &[1, 4, 5, 6]).unwrap();
        let w1 = HostTensor::from_vec((0..16).map(|i| (i % 3) as f32 - 1.0).collect(), &[4, 4, 1, 1]).unwrap();
        let w3 = HostTensor::from_vec((0..36).map(|i| (i % 5) as f32 - 2.0).collect(), &[4, 1, 3, 3]).unwrap();
        let dense = Conv2dOptions { relu: true, ..Default::default() };
        let depthwise = Conv2dOptions { relu: true, padding: (1, 1), groups: 4, ..Default::default() };
        for (w, o) in [(&w1, &dense), (&w3, &depthwise)] {
            let want = conv2d_cpu(&x, w, None, o).unwrap().to_vec::<f32>().unwrap();
            assert!(want.iter().any(|v| v.is_nan()) && want.contains(&0.0), "the reference has NaN and zeros");
            let g = strided_wgpu::advanced::conv2d_shape(x.layout(), w.layout(), None, [None; 3], o).unwrap();
            let kernels: Vec<ConvKernel> = ConvKernel::ALL.into_iter().filter(|k| k.eligible(&g, o).is_ok() && k.runs_on(ctx.adapter()).is_ok()).collect();
            assert!(kernels.len() >= 2, "{}: only {kernels:?} run groups {}", name(ctx), o.groups);
            for kernel in kernels {
                let got = conv2d_with(&to_device(ctx, &x), &to_device(ctx, w), None, o, kernel).unwrap().download().unwrap().to_vec::<f32>().unwrap();
                for (i, (a, b)) in got.iter().zip(&want).enumerate() {
                    assert!(a.is_nan() == b.is_nan() && (a.is_nan() || a.to_bits() == b.to_bits()), "{} {kernel:?} groups {} output {i}: {a} vs {b}", name(ctx), o.groups);
                }
            }
        }
    }
}

/// An output in the same buffer as its input (disjoint views) is written correctly: the input
/// is read from a copy (one buffer cannot be bound for reading and writing in one dispatch).
/// A packed weight over one binding is an error before anything is recorded.
#[test]
fn an_output_sharing_the_inputs_buffer_and_a_packed_weight_over_a_binding() {
    for ctx in contexts() {
        let mut rng = Rng(9);
        let xv = vals(&mut rng, 200);
        let mut storage = xv.clone();
        storage.extend(std::iter::repeat_n(7.0f32, 108));
        let shared = DeviceTensor::from_slice(ctx, &storage, &[308]).unwrap();
        let xin = shared.narrow(0, 0, 200).unwrap().view(&[2, 4, 5, 5]).unwrap();
        let out = shared.narrow(0, 200, 108).unwrap().view(&[2, 6, 3, 3]).unwrap();
        let wh = HostTensor::from_vec(vals(&mut rng, 6 * 4 * 9), &[6, 4, 3, 3]).unwrap();
        let w = to_device(ctx, &wh);
        let mut batch = ctx.batch();
        batch.conv2d_out(&xin, &w, None, &Conv2dOptions::default(), &out).unwrap();
        batch.submit().unwrap().wait().unwrap();
        let want = conv2d_cpu(&HostTensor::from_vec(xv.clone(), &[2, 4, 5, 5]).unwrap(), &wh, None, &Conv2dOptions::default()).unwrap().to_vec::<f32>().unwrap();
        let got = shared.download().unwrap().to_vec::<f32>().unwrap();
        assert_eq!(&got[..200], &xv[..], "{}: the input changed", name(ctx));
        for (i, (g, w)) in got[200..].iter().zip(&want).enumerate() {
            assert!((g - w).abs() <= 1e-4 * w.abs().max(1.0), "{} output {i}: {g} vs {w}", name(ctx));
        }

        let tight = limited(ctx, |l| wgpu::Limits { max_storage_buffer_binding_size: 64 << 10, ..l });
        let c = 4096;
        let x = DeviceTensor::zeros(&tight, &[1, c, 1, 1], strided_wgpu::DType::F32, MemoryFormat::Contiguous).unwrap();
        // One 3x3 filter for every channel, its taps' rows apart (so every kernel packs it).
        let w = DeviceTensor::zeros(&tight, &[1, 1, 3, 6], strided_wgpu::DType::F32, MemoryFormat::Contiguous).unwrap().narrow(3, 0, 3).unwrap().expand(&[c as isize, 1, 3, 3]).unwrap();
        let o = Conv2dOptions { padding: (1, 1), groups: c, ..Default::default() };
        for kernel in [ConvKernel::DepthwiseRows, ConvKernel::DepthwiseTall, ConvKernel::GemmNchw] {
            let e = conv2d_with(&x, &w, None, &o, kernel).unwrap_err();
            assert!(matches!(&e, Error::Limit { limit: "max_storage_buffer_binding_size", .. }), "{kernel:?}: {e}");
        }
        // Its taps in one run: the GEMM kernel reads it where it lies, with nothing to pack.
        let dense = DeviceTensor::from_slice(&tight, &[1.0f32; 9], &[1, 1, 3, 3]).unwrap().expand(&[c as isize, 1, 3, 3]).unwrap();
        let ones = DeviceTensor::from_slice(&tight, &vec![1.0f32; c], &[1, c, 1, 1]).unwrap();
        let got = conv2d_with(&ones, &dense, None, &o, ConvKernel::GemmNchw).unwrap().download().unwrap().to_vec::<f32>().unwrap();
        assert!(got.len() == c && got.iter().all(|&v| v == 1.0), "{}: the expanded weight read in place: {:?}", name(ctx), &got[..8]);
    }
}

/// A weight and bias that are small views into one buffer larger than a binding (a model's
/// weights in one arena): every kernel convolves with them (each binds a dense copy of what it
/// reads), where every kernel refused the buffer's size. Against the CPU reference, eagerly
/// (the automatic kernel and each forced one the adapter runs) and in a captured graph.
#[test]
fn weights_in_a_buffer_past_a_binding_convolve() {
    for ctx in contexts() {
        let tight = limited(ctx, |l| wgpu::Limits { max_storage_buffer_binding_size: 64 << 10, ..l });
        let mut rng = Rng(0xa4e);
        // 32,768 floats (128 KiB): the bias at its start, the weight [8, 16, 3, 3] at its end.
        let len = 32_768;
        let arena: Vec<f32> = (0..len).map(|_| rng.below(64) as f32 / 16.0 - 2.0).collect();
        let (kw, nb) = (8 * 16 * 9, 8);
        let wh = HostTensor::from_vec(arena[len - kw..].to_vec(), &[8, 16, 3, 3]).unwrap();
        let bh = HostTensor::from_vec(arena[..nb].to_vec(), &[8]).unwrap();
        let xh = HostTensor::from_vec((0..2 * 16 * 10 * 10).map(|_| rng.below(64) as f32 / 16.0 - 2.0).collect::<Vec<f32>>(), &[2, 16, 10, 10]).unwrap();
        let o = Conv2dOptions { padding: (1, 1), relu: true, ..Default::default() };
        let want = conv2d_cpu(&xh, &wh, Some(&bh), &o).unwrap().to_vec::<f32>().unwrap();
        let scale = conv2d_cpu(&abs(&xh), &abs(&wh), Some(&abs(&bh)), &Conv2dOptions { relu: false, ..o }).unwrap().to_vec::<f32>().unwrap();
        let all = DeviceTensor::from_slice(&tight, &arena, &[len]).unwrap();
        let w = all.narrow(0, (len - kw) as isize, kw).unwrap().view(&[8, 16, 3, 3]).unwrap();
        let b = all.narrow(0, 0, nb).unwrap();
        for format in [MemoryFormat::Contiguous, MemoryFormat::ChannelsLast] {
            let x = DeviceTensor::upload(&tight, &xh.contiguous(format).unwrap()).unwrap();
            let g = strided_wgpu::advanced::conv2d_shape(x.layout(), w.layout(), Some(b.layout()), [Some(DType::F32); 3], &o).unwrap();
            let kernels = std::iter::once(ConvKernel::Auto).chain(ConvKernel::ALL.into_iter().filter(|k| k.eligible(&g, &o).is_ok() && k.runs_on(tight.adapter()).is_ok()));
            for kernel in kernels {
                let what = format!("{} {format:?} {kernel:?}", name(ctx));
                let got = conv2d_with(&x, &w, Some(&b), &o, kernel).unwrap_or_else(|e| panic!("{what}: {e}")).download().unwrap().to_vec::<f32>().unwrap();
                for (i, ((g, wv), s)) in got.iter().zip(&want).zip(&scale).enumerate() {
                    assert!((g - wv).abs() <= 1e-5 * s + 1e-6, "{what}: output {i}: {g} vs {wv}");
                }
            }
            let graph = tight.capture(&[&x], || strided_wgpu::Conv2d::conv2d(&x, &w, Some(&b), &o)).unwrap();
            graph.replay_and_wait(&[&x]).unwrap();
            let got = graph.output().download().unwrap().to_vec::<f32>().unwrap();
            for (i, ((g, wv), s)) in got.iter().zip(&want).zip(&scale).enumerate() {
                assert!((g - wv).abs() <= 1e-5 * s + 1e-6, "{} {format:?} graph: output {i}: {g} vs {wv}", name(ctx));
            }
        }
        // Measured on the first call (the candidates on the weight's dense copy): a kept
        // choice, then computing with it.
        tight.set_tuning_policy(TuningPolicy::OnFirstCall);
        let x = DeviceTensor::upload(&tight, &xh).unwrap();
        let kept = tight.tuned_conv_choices().len();
        let got = strided_wgpu::Conv2d::conv2d(&x, &w, Some(&b), &o).unwrap_or_else(|e| panic!("{} tuned: {e}", name(ctx))).download().unwrap().to_vec::<f32>().unwrap();
        assert_eq!(tight.tuned_conv_choices().len(), kept + 1, "{}: the first call kept a choice", name(ctx));
        for (i, ((g, wv), s)) in got.iter().zip(&want).zip(&scale).enumerate() {
            assert!((g - wv).abs() <= 1e-5 * s + 1e-6, "{} tuned: output {i}: {g} vs {wv}", name(ctx));
        }
        // A weight past a binding by its own elements (102,400 bytes): the Limit error, as
        // before (no copy would bind either).
        let huge = DeviceTensor::zeros(&tight, &[32, 16, 5, 10], DType::F32, MemoryFormat::Contiguous).unwrap();
        let r = strided_wgpu::Conv2d::conv2d(&x, &huge, None, &Conv2dOptions::default());
        assert!(matches!(&r, Err(Error::Limit { .. })), "{}: {:?}", name(ctx), r.map(|t| t.shape().to_vec()));
    }
}

/// Under `OnFirstCall` an eager `conv2d_add` measures its class as `conv2d` does (it ran the
/// default and kept nothing, so a later `conv2d` of the class could keep another kernel and
/// change its bits), and both then compute with the kept kernel.
#[test]
fn an_eager_conv2d_add_measures_on_its_first_call() {
    for shared in contexts() {
        let ctx = &limited(shared, |l| l);
        ctx.set_tuning_policy(TuningPolicy::OnFirstCall);
        let mut rng = Rng(43);
        let t = |rng: &mut Rng, s: &[usize]| to_device(ctx, &HostTensor::from_vec(vals(rng, s.iter().product()), s).unwrap());
        let (x, w, b, r) = (t(&mut rng, &[2, 5, 9, 9]), t(&mut rng, &[7, 5, 3, 3]), t(&mut rng, &[7]), t(&mut rng, &[2, 7, 9, 9]));
        let o = Conv2dOptions { padding: (1, 1), relu: true, ..Default::default() };
        assert!(ctx.tuned_conv_choices().is_empty());
        let fused = strided_wgpu::Conv2d::conv2d_add(&x, &w, Some(&b), &r, &o).unwrap();
        assert_eq!(ctx.tuned_conv_choices().len(), 1, "{}: the first conv2d_add measured its class", name(ctx));
        let plain = strided_wgpu::Conv2d::conv2d(&x, &w, Some(&b), &Conv2dOptions { relu: false, ..o }).unwrap();
        assert_eq!(ctx.tuned_conv_choices().len(), 1, "{}: conv2d found the class measured", name(ctx));
        let want = strided_wgpu::Elementwise::relu(&strided_wgpu::Elementwise::add(&plain, &r).unwrap()).unwrap();
        assert_eq!(fused.download().unwrap().to_vec::<f32>().unwrap(), want.download().unwrap().to_vec::<f32>().unwrap(), "{}", name(ctx));
    }
}

/// The tuner measures a convolution at the call's batch (a kernel's speed depends on how much
/// work a dispatch spreads over the cores): one image and six images of the same geometry are
/// two classes, each measured on its own images, channels-last or not, and Auto then computes
/// each correctly; `conv2d_choice` names the kernel tuned for the six images' class, and
/// nothing for an empty output.
#[test]
fn tuning_measures_the_calls_batch() {
    for shared in contexts() {
        // A context of its own that measures at the first call of a class (not the default).
        let ctx = &limited(shared, |l| l);
        ctx.set_tuning_policy(TuningPolicy::OnFirstCall);
        let mut rng = Rng(41);
        let x = |rng: &mut Rng, s: &[usize]| HostTensor::from_vec(vals(rng, s.iter().product()), s).unwrap();
        let (wt, bt) = (x(&mut rng, &[7, 5, 3, 3]), x(&mut rng, &[7]));
        let o = Conv2dOptions { padding: (1, 1), ..Default::default() };
        for (n, format) in [(1, MemoryFormat::Contiguous), (6, MemoryFormat::ChannelsLast)] {
            let xt = x(&mut rng, &[n, 5, 9, 9]).contiguous(format).unwrap();
            check(ctx, &xt, &wt, Some(&bt), &o, ConvKernel::Auto, &format!("{n} images, tuned"));
        }
        let classes: Vec<_> = ctx.tuned_conv_choices().into_iter().filter(|(c, _)| c.window == [3, 3, 1, 1, 1, 1] && c.log2[..2] == [2, 2]).collect();
        let pixels: Vec<u32> = classes.iter().map(|(c, _)| c.log2[2]).collect();
        // 81 pixels (floor(log2) 6) for one image, 486 (8) for six.
        assert!(pixels.contains(&6) && pixels.contains(&8), "{}: tuned classes' pixel magnitudes {pixels:?}", name(ctx));
        let cl = |t: HostTensor| to_device(ctx, &t.contiguous(MemoryFormat::ChannelsLast).unwrap());
        let (xd, wd, bd) = (cl(x(&mut rng, &[6, 5, 9, 9])), to_device(ctx, &wt), to_device(ctx, &bt));
        let out = DeviceTensor::empty(ctx, &[6, 7, 9, 9], strided_wgpu::DType::F32, MemoryFormat::ChannelsLast).unwrap();
        let k = ctx.conv2d_choice(&xd, &wd, Some(&bd), &o, &out).unwrap().unwrap();
        let tuned: Vec<ConvKernel> = classes.iter().filter(|(c, _)| c.log2[2] == 8).map(|(_, k)| *k).collect();
        assert!(tuned.contains(&k), "{}: conv2d_choice {k:?}, tuned for six images {tuned:?}", name(ctx));
        let e = ctx.conv2d_choice(&xd, &wd, Some(&bd), &o, &DeviceTensor::empty(ctx, &[6, 7, 8, 9], strided_wgpu::DType::F32, MemoryFormat::Contiguous).unwrap()).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }) && e.to_string().contains("[6, 7, 9, 9]"), "{e}");
        let e = ctx.conv2d_choice(&xd, &wd, Some(&bd), &o, &DeviceTensor::empty(ctx, &[6, 7, 9, 9], strided_wgpu::DType::I32, MemoryFormat::Contiguous).unwrap()).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }) && e.to_string().contains("must be f32"), "{e}");
        let empty = DeviceTensor::empty(ctx, &[0, 7, 9, 9], strided_wgpu::DType::F32, MemoryFormat::Contiguous).unwrap();
        let xe = DeviceTensor::empty(ctx, &[0, 5, 9, 9], strided_wgpu::DType::F32, MemoryFormat::Contiguous).unwrap();
        assert_eq!(ctx.conv2d_choice(&xe, &wd, Some(&bd), &o, &empty).unwrap(), None);
        // The weight's layout is part of the class (a kept choice's timings include packing it
        // or reading it where it lies): the contiguous weight's classes say its reduction dims
        // run in the NCHW kernels' order; a channels-last weight makes a class of its own.
        assert!(classes.iter().all(|(c, _)| c.weight_runs == [true, false] && c.groups_log2 == 0), "{}: {classes:?}", name(ctx));
        let xt = x(&mut rng, &[6, 5, 9, 9]).contiguous(MemoryFormat::ChannelsLast).unwrap();
        check(ctx, &xt, &wt.contiguous(MemoryFormat::ChannelsLast).unwrap(), Some(&bt), &o, ConvKernel::Auto, "6 images, a channels-last weight, tuned");
        let runs: Vec<[bool; 2]> = ctx.tuned_conv_choices().into_iter().filter(|(c, _)| c.window == [3, 3, 1, 1, 1, 1] && c.log2 == [2, 2, 8]).map(|(c, _)| c.weight_runs).collect();
        assert!(runs.contains(&[true, false]) && runs.contains(&[false, true]), "{}: the six images' classes' weight runs {runs:?}", name(ctx));
    }
}

/// A GPU's default counts every group's output tiles when it decides on split-K: a 3x3
/// convolution of 16 groups of 128 channels over a 32 x 32 image has 16 tiles of 64 x 64 a
/// group, 256 in all, and is not split, where one group of the same size (16 tiles, 1152
/// reduction steps) is. Asked of an adapter posing as a GPU; nothing runs.
#[test]
fn the_split_rule_counts_every_groups_tiles() {
    for ctx in contexts() {
        let Some(gpu) = common::gpu::posing_as_gpu(ctx) else { continue };
        let o = Conv2dOptions { padding: (1, 1), ..Default::default() };
        for (groups, split) in [(1, true), (16, false)] {
            let x = DeviceTensor::empty(&gpu, &[1, 128 * groups, 32, 32], strided_wgpu::DType::F32, MemoryFormat::Contiguous).unwrap();
            let w = DeviceTensor::empty(&gpu, &[64 * groups, 128, 3, 3], strided_wgpu::DType::F32, MemoryFormat::Contiguous).unwrap();
            let out = DeviceTensor::empty(&gpu, &[1, 64 * groups, 32, 32], strided_wgpu::DType::F32, MemoryFormat::Contiguous).unwrap();
            let og = Conv2dOptions { groups, ..o };
            let k = gpu.conv2d_default(&x, &w, None, &og, &out).unwrap().unwrap();
            let want = if split { ConvKernel::GemmNchwSplit } else { ConvKernel::GemmNchw };
            assert_eq!(k, want, "{} groups {groups}", name(&gpu));
        }
    }
}

/// A GPU's default for a single input channel (groups == C == 1, a grayscale stem) is the GEMM,
/// not a depthwise kernel (which read the input again for each of its 64 output channels); a
/// depthwise class of 4 channels keeps its depthwise kernel. Asked of an adapter posing as a
/// GPU; nothing runs.
#[test]
fn a_gpus_single_channel_stem_is_no_depthwise_class() {
    for ctx in contexts() {
        let Some(gpu) = common::gpu::posing_as_gpu(ctx) else { continue };
        let f32 = strided_wgpu::DType::F32;
        for (c, k, groups, depthwise) in [(1, 64, 1, false), (4, 8, 4, true)] {
            let o = Conv2dOptions { stride: (2, 2), padding: (3, 3), groups, ..Default::default() };
            let x = DeviceTensor::empty(&gpu, &[8, c, 32, 32], f32, MemoryFormat::Contiguous).unwrap();
            let w = DeviceTensor::empty(&gpu, &[k, c / groups, 7, 7], f32, MemoryFormat::Contiguous).unwrap();
            let out = DeviceTensor::empty(&gpu, &[8, k, 16, 16], f32, MemoryFormat::Contiguous).unwrap();
            let got = gpu.conv2d_default(&x, &w, None, &o, &out).unwrap().unwrap();
            assert_eq!(format!("{got:?}").starts_with("Depthwise"), depthwise, "{} C = {c}, groups {groups}: {got:?}", name(&gpu));
        }
    }
}

/// `conv2d_add`: fused into the GEMM kernels' epilogue (the residual of the output's strides)
/// and recorded as three ops elsewhere (other kernels, or a residual of other strides); each
/// equal bit for bit to the device's own conv2d, add_ and relu_, and to the CPU reference
/// within the tolerance. A NaN in the residual stays NaN through the fused ReLU.
#[test]
fn residual_epilogue_matches_the_unfused_ops() {
    use strided_wgpu::advanced::conv2d_add_with;
    use strided_wgpu::{Conv2d, Elementwise};
    let mut rng = Rng(0xadd);
    for ctx in contexts() {
        for (i, (n, c, h, w, k, kh, stride, pad)) in [(2, 8, 9, 7, 12, 3, 1, 1), (1, 16, 12, 12, 32, 1, 2, 0), (3, 3, 8, 10, 8, 3, 1, 0), (2, 64, 14, 14, 64, 3, 1, 1)].into_iter().enumerate() {
            let xv = vals(&mut rng, n * c * h * w);
            let x = layout(&mut rng, HostTensor::from_vec(xv, &[n, c, h, w]).unwrap());
            let wt = HostTensor::from_vec(vals(&mut rng, k * c * kh * kh), &[k, c, kh, kh]).unwrap();
            let b = HostTensor::from_vec(vals(&mut rng, k), &[k]).unwrap();
            for format in [MemoryFormat::Contiguous, MemoryFormat::ChannelsLast] {
                for relu in [false, true] {
                    let o = Conv2dOptions { stride: (stride, stride), padding: (pad, pad), relu, output_format: Some(format), ..Default::default() };
                    let shape = conv2d_cpu(&x, &wt, Some(&b), &o).unwrap().shape().to_vec();
                    let mut rv = vals(&mut rng, shape.iter().product());
                    rv[3] = f32::NAN;
                    // The residual in the output's layout (fusable), and transposed (not).
                    let res = HostTensor::from_vec(rv, &shape).unwrap().contiguous(format).unwrap();
                    let other = if format == MemoryFormat::Contiguous { MemoryFormat::ChannelsLast } else { MemoryFormat::Contiguous };
                    let want = x.conv2d_add(&wt, Some(&b), &res, &o).unwrap().to_vec::<f32>().unwrap();
                    let scale = conv2d_cpu(&abs(&x), &abs(&wt), Some(&abs(&b)), &Conv2dOptions { relu: false, ..o }).unwrap().add(&abs(&res)).unwrap().to_vec::<f32>().unwrap();
                    let (dx, dw, db) = (to_device(ctx, &x), to_device(ctx, &wt), to_device(ctx, &b));
                    for kernel in [ConvKernel::Auto, ConvKernel::GemmNchw, ConvKernel::GemmNhwc, ConvKernel::Direct, ConvKernel::GemmNchwSplit, ConvKernel::GemmNhwcSplit] {
                        let unfused = conv2d_with(&dx, &dw, Some(&db), &Conv2dOptions { relu: false, ..o }, kernel).unwrap();
                        let dres = to_device(ctx, &res);
                        unfused.add_(&dres).unwrap();
                        if relu {
                            unfused.relu_().unwrap();
                        }
                        let unfused = unfused.download().unwrap().to_vec::<f32>().unwrap();
                        for res_format in [format, other] {
                            let label = format!("{} case {i} {format:?} relu {relu} {kernel:?} residual {res_format:?}", name(ctx));
                            let dres = to_device(ctx, &res.contiguous(res_format).unwrap());
                            let got = conv2d_add_with(&dx, &dw, Some(&db), &dres, &o, kernel).unwrap().download().unwrap().to_vec::<f32>().unwrap();
                            for j in 0..got.len() {
                                assert_eq!(got[j].to_bits(), unfused[j].to_bits(), "{label}: output {j}: fused {} vs unfused {}", got[j], unfused[j]);
                                assert!(approx::abs_diff_eq!(got[j], want[j], epsilon = 1e-5 * scale[j] + 1e-6) || (got[j].is_nan() && want[j].is_nan() && j == 3), "{label}: output {j}: {} vs {}", got[j], want[j]);
                            }
                            assert!(got[3].is_nan(), "{label}: the residual's NaN");
                        }
                    }
                }
            }
        }
        // A residual of another shape is a typed error naming the op.
        let x = to_device(ctx, &HostTensor::from_vec(vec![1f32; 2 * 4 * 5 * 5], &[2, 4, 5, 5]).unwrap());
        let wt = to_device(ctx, &HostTensor::from_vec(vec![1f32; 4 * 4], &[4, 4, 1, 1]).unwrap());
        let bad = to_device(ctx, &HostTensor::from_vec(vec![1f32; 2 * 4 * 5 * 4], &[2, 4, 5, 4]).unwrap());
        let r = x.conv2d_add(&wt, None, &bad, &Conv2dOptions::default());
        assert!(matches!(r, Err(Error::InvalidArgument { op: "conv2d_add", .. })), "{}: {r:?}", name(ctx));
    }
}

/// Split-K (`GemmNchwSplit`, `GemmNhwcSplit`): reductions of 144 to 1152 steps cut into 2 to 18
/// slices (a captured call shows the sum dispatch), with groups, a stride, bias and ReLU, into
/// both output layouts, and a reduction of 16 steps too short to cut (run whole): each output
/// within the tolerance of the CPU reference, and a second call equal to the first bit for bit
/// (the slices are added in a fixed order).
#[test]
fn split_k_matches_cpu_and_repeats_bit_for_bit() {
    let mut rng = Rng(0x5b117);
    for ctx in contexts() {
        let mut compared = 0;
        for (n, c, h, w, k, kh, stride, groups) in [(1, 64, 7, 7, 128, 3, 1, 1), (2, 32, 9, 9, 48, 3, 1, 2), (1, 128, 8, 8, 64, 3, 2, 1), (3, 16, 5, 6, 20, 1, 1, 1)] {
            let xv = vals(&mut rng, n * c * h * w);
            let x = layout(&mut rng, HostTensor::from_vec(xv, &[n, c, h, w]).unwrap());
            let wt = HostTensor::from_vec(vals(&mut rng, k * (c / groups) * kh * kh), &[k, c / groups, kh, kh]).unwrap();
            let b = HostTensor::from_vec(vals(&mut rng, k), &[k]).unwrap();
            for kernel in [ConvKernel::GemmNchwSplit, ConvKernel::GemmNhwcSplit] {
                for format in [MemoryFormat::Contiguous, MemoryFormat::ChannelsLast] {
                    let o = Conv2dOptions { stride: (stride, stride), padding: (kh / 2, kh / 2), groups, relu: true, output_format: Some(format), ..Default::default() };
                    let label = format!("{} split [{n}, {c}, {h}, {w}] K={k} {kh}x{kh} stride {stride} groups {groups} {kernel:?} {format:?}", name(ctx));
                    compared += check(ctx, &x, &wt, Some(&b), &o, kernel, &label);
                    let (dx, dw, db) = (to_device(ctx, &x), to_device(ctx, &wt), to_device(ctx, &b));
                    let run = || conv2d_with(&dx, &dw, Some(&db), &o, kernel).unwrap().download().unwrap().to_vec::<f32>().unwrap();
                    let (a, again) = (run(), run());
                    assert!(a.iter().zip(&again).all(|(p, q)| p.to_bits() == q.to_bits()), "{label}: a second call gave other bits");
                    let graph = ctx.capture(&[&dx], || conv2d_with(&dx, &dw, Some(&db), &o, kernel)).unwrap();
                    let sums = graph.dispatches().iter().filter(|(_, k)| *k == "conv2d_gemm_sum").count();
                    assert_eq!(sums, usize::from(c * kh * kh / groups >= 128), "{label}: sum dispatches");
                }
            }
        }
        assert!(compared > 10_000, "only {compared} outputs compared");
    }
}

/// The wide GEMM kernels (`GemmNchwWide`, `GemmNhwcWide`: 128 x 128 tiles of 8 x 8 register
/// blocks, 128 x 64 where K/groups <= 64) against the 64 x 64 kernels: the same bits as the
/// split kernel where the reduction is long enough for a GPU's default to cut it (1152 steps
/// here: the call shows a sum dispatch), else as the plain kernel (no sum dispatch); in f32,
/// float16 and bfloat16, with bias and ReLU and with a residual (`conv2d_add`), into both
/// output layouts, over partial tiles in both dims, groups, a stride and a 7x7 stem of 3
/// channels (inputs not in vec4 words); each f32 output also within the tolerance of the CPU
/// reference.
#[test]
fn wide_tiles_equal_the_64_tile_kernels_bit_for_bit() {
    use strided_wgpu::advanced::conv2d_add_with;
    use strided_wgpu::{DType, Elementwise};
    let mut rng = Rng(0x3d1de);
    for ctx in contexts() {
        let mut compared = 0;
        // (N, C, H, W, K, kernel size, stride, groups)
        for (n, c, h, w, k, kh, stride, groups) in [(2, 16, 10, 8, 24, 3, 1, 1), (1, 64, 12, 12, 96, 3, 1, 1), (3, 8, 11, 9, 130, 1, 1, 1), (2, 32, 9, 8, 72, 3, 2, 2), (1, 3, 23, 21, 16, 7, 2, 1), (1, 128, 8, 8, 72, 3, 1, 1)] {
            // Cut where a GPU's default would cut it (a few tiles here, so by the reduction).
            let cut = c / groups * kh * kh >= 1024;
            let xv = vals(&mut rng, n * c * h * w);
            let x = layout(&mut rng, HostTensor::from_vec(xv, &[n, c, h, w]).unwrap());
            let wt = HostTensor::from_vec(vals(&mut rng, k * (c / groups) * kh * kh), &[k, c / groups, kh, kh]).unwrap();
            let b = HostTensor::from_vec(vals(&mut rng, k), &[k]).unwrap();
            for (wide, plain, split) in [(ConvKernel::GemmNchwWide, ConvKernel::GemmNchw, ConvKernel::GemmNchwSplit), (ConvKernel::GemmNhwcWide, ConvKernel::GemmNhwc, ConvKernel::GemmNhwcSplit)] {
                let twin = if cut { split } else { plain };
                for format in [MemoryFormat::Contiguous, MemoryFormat::ChannelsLast] {
                    let o = Conv2dOptions { stride: (stride, stride), padding: (kh / 2, kh / 2), groups, relu: true, output_format: Some(format), ..Default::default() };
                    let label = format!("{} wide [{n}, {c}, {h}, {w}] K={k} {kh}x{kh} stride {stride} groups {groups} {wide:?} {format:?}", name(ctx));
                    compared += check(ctx, &x, &wt, Some(&b), &o, wide, &label);
                    let (dx, dw, db) = (to_device(ctx, &x), to_device(ctx, &wt), to_device(ctx, &b));
                    let graph = ctx.capture(&[&dx], || conv2d_with(&dx, &dw, Some(&db), &o, wide)).unwrap();
                    let sums = graph.dispatches().iter().filter(|(_, k)| *k == "conv2d_gemm_sum").count();
                    assert_eq!(sums, usize::from(cut), "{label}: sum dispatches");
                    for dtype in [DType::F32, DType::F16, DType::BF16] {
                        let t = |v: &HostTensor| to_device(ctx, &v.to(dtype).unwrap());
                        let (dx, dw, db) = (t(&x), t(&wt), t(&b));
                        let oh = (h + 2 * (kh / 2) - kh) / stride + 1;
                        let ow = (w + 2 * (kh / 2) - kh) / stride + 1;
                        let dr = t(&HostTensor::from_vec(vals(&mut rng, n * k * oh * ow), &[n, k, oh, ow]).unwrap().contiguous(format).unwrap());
                        let bits = |t: DeviceTensor| t.download().unwrap().to(DType::F32).unwrap().to_vec::<f32>().unwrap().into_iter().map(f32::to_bits).collect::<Vec<u32>>();
                        let run = |kernel| bits(conv2d_with(&dx, &dw, Some(&db), &o, kernel).unwrap_or_else(|e| panic!("{label} {dtype}: {e}")));
                        assert_eq!(run(wide), run(twin), "{label} {dtype}: wide and 64 x 64 tiles gave other bits");
                        let add = |kernel| bits(conv2d_add_with(&dx, &dw, Some(&db), &dr, &o, kernel).unwrap_or_else(|e| panic!("{label} {dtype} add: {e}")));
                        assert_eq!(add(wide), add(twin), "{label} {dtype} conv2d_add: wide and 64 x 64 tiles gave other bits");
                    }
                }
            }
        }
        assert!(compared > 5_000, "only {compared} outputs compared");
    }
}

/// The GEMM kernels read a weight where it lies when its reduction dims, in the kernel's order,
/// are one run of unit stride (PyTorch's contiguous weight under the NCHW kernels, its
/// channels-last weight under the NHWC ones, either for 1x1): a call is then its kernel's
/// dispatches alone, with no copy (a capture finds no constant work), and gives the bits of the
/// same weight packed (spread over a wider buffer, which every kernel packs), in float32,
/// float16 and bfloat16. Over an offset, groups, a K that is no multiple of 4 (22), a 7x7 stem
/// of 3 channels, a 1x1 kernel, split-K and wide tiles (K = 130: 128 x 128), with bias, ReLU and
/// a residual; each f32 call also against the CPU reference.
#[test]
fn weights_read_where_they_lie_equal_packed_weights_bit_for_bit() {
    use strided_wgpu::advanced::conv2d_add_with;
    use strided_wgpu::Elementwise;
    let mut rng = Rng(0x1a7e);
    for ctx in contexts() {
        let mut compared = 0;
        // (N, C, H, W, K, kernel size, stride, groups)
        for (n, c, h, w, k, kh, stride, groups) in [(2, 16, 9, 8, 22, 3, 1, 1), (1, 64, 8, 8, 64, 1, 1, 1), (1, 3, 21, 19, 16, 7, 2, 1), (2, 32, 9, 8, 24, 3, 2, 2), (1, 128, 6, 6, 130, 3, 1, 1)] {
            let cg = c / groups;
            let xv = vals(&mut rng, n * c * h * w);
            let x = layout(&mut rng, HostTensor::from_vec(xv, &[n, c, h, w]).unwrap());
            let dense = HostTensor::from_vec(vals(&mut rng, k * cg * kh * kh), &[k, cg, kh, kh]).unwrap();
            let b = HostTensor::from_vec(vals(&mut rng, k), &[k]).unwrap();
            let (oh, ow) = ((h + 2 * (kh / 2) - kh) / stride + 1, (w + 2 * (kh / 2) - kh) / stride + 1);
            let resv = HostTensor::from_vec(vals(&mut rng, n * k * oh * ow), &[n, k, oh, ow]).unwrap();
            for (kernel, channels) in [(ConvKernel::GemmNchw, false), (ConvKernel::GemmNhwc, true), (ConvKernel::GemmNchwSplit, false), (ConvKernel::GemmNhwcSplit, true), (ConvKernel::GemmNchwWide, false), (ConvKernel::GemmNhwcWide, true)] {
                let format = if channels { MemoryFormat::ChannelsLast } else { MemoryFormat::Contiguous };
                let o = Conv2dOptions { stride: (stride, stride), padding: (kh / 2, kh / 2), groups, relu: true, output_format: Some(format), ..Default::default() };
                for dtype in [DType::F32, DType::F16, DType::BF16] {
                    // The kernel's natural weight behind 3 more output channels' worth of
                    // elements, and its packed twin: each row of taps followed by a gap.
                    let padded = HostTensor::zeros(&[k + 3, cg, kh, kh], dtype, format).unwrap().narrow(0, 3, k).unwrap();
                    let spread = HostTensor::zeros(&[k, cg, kh, 2 * kh], dtype, MemoryFormat::Contiguous).unwrap().narrow(3, 0, kh).unwrap();
                    padded.copy_(&dense).unwrap();
                    spread.copy_(&dense).unwrap();
                    let label = format!("[{n}, {c}, {h}, {w}] K={k} {kh}x{kh} stride {stride} groups {groups} {kernel:?} {dtype}");
                    if dtype == DType::F32 {
                        compared += check(ctx, &x, &padded, Some(&b), &o, kernel, &label);
                    }
                    let t = |v: &HostTensor| to_device(ctx, &v.to(dtype).unwrap());
                    let (dx, db, res) = (t(&x), t(&b), t(&resv.contiguous(format).unwrap()));
                    let bits = |t: DeviceTensor| common::elementwise::bits(&t.download().unwrap());
                    let mut outs = Vec::new();
                    for (weight, in_place) in [(&padded, true), (&spread, false)] {
                        let dw = to_device(ctx, weight);
                        let out = conv2d_with(&dx, &dw, Some(&db), &o, kernel).unwrap_or_else(|e| panic!("{label}: {e}"));
                        let added = conv2d_add_with(&dx, &dw, Some(&db), &res, &o, kernel).unwrap_or_else(|e| panic!("{label} add: {e}"));
                        // What a call records beside its kernel's dispatches (none where the
                        // weight is read in place).
                        let (constants, kernels) = captured_call(ctx, &dx, &dw, Some(&db), &o, kernel);
                        assert_eq!(constants == 0, in_place, "{label}: in place {in_place}: {constants} commands beside its kernel");
                        assert!(kernels.iter().all(|k| k.starts_with("conv2d_gemm")), "{label}: {kernels:?}");
                        outs.push((bits(out), bits(added)));
                    }
                    assert!(outs[0] == outs[1], "{label}: the weight read in place and packed gave other bits");
                }
            }
        }
        assert!(compared > 3_000, "only {compared} outputs compared");
    }
}

/// The strided depthwise kernels (`DepthwiseNchw`, `DepthwiseNhwc`) read the weight where it
/// lies, through its strides, in each type (a 16-bit weight with no f32 copy): no call records
/// work beside its kernel (a capture finds no constant work), and a weight behind an offset in
/// another layout gives the same bits; each f32 call also against the CPU reference.
#[test]
fn depthwise_weights_read_where_they_lie() {
    use strided_wgpu::Elementwise;
    let mut rng = Rng(0xd3e9);
    for ctx in contexts() {
        let mut compared = 0;
        // (N, C, H, W, channel multiplier, kernel size, stride)
        for (n, c, h, w, mult, kh, stride) in [(2, 16, 9, 10, 1, 3, 1), (1, 8, 12, 11, 2, 5, 2), (1, 12, 7, 9, 1, 1, 1)] {
            let k = c * mult;
            let xv = vals(&mut rng, n * c * h * w);
            let x = layout(&mut rng, HostTensor::from_vec(xv, &[n, c, h, w]).unwrap());
            let dense = HostTensor::from_vec(vals(&mut rng, k * kh * kh), &[k, 1, kh, kh]).unwrap();
            let b = HostTensor::from_vec(vals(&mut rng, k), &[k]).unwrap();
            let o = Conv2dOptions { stride: (stride, stride), padding: (kh / 2, kh / 2), groups: c, relu: true, ..Default::default() };
            for kernel in [ConvKernel::DepthwiseNchw, ConvKernel::DepthwiseNhwc] {
                for dtype in [DType::F32, DType::F16, DType::BF16] {
                    // Contiguous, and tap-major behind an offset of 4 output channels.
                    let shifted = HostTensor::zeros(&[kh, kh, 1, k + 4], dtype, MemoryFormat::Contiguous).unwrap().narrow(3, 4, k).unwrap().permute(&[3, 2, 0, 1]).unwrap();
                    shifted.copy_(&dense).unwrap();
                    let label = format!("depthwise [{n}, {c}, {h}, {w}] K={k} {kh}x{kh} stride {stride} {kernel:?} {dtype}");
                    if dtype == DType::F32 {
                        compared += check(ctx, &x, &shifted, Some(&b), &o, kernel, &label);
                    }
                    let t = |v: &HostTensor| to_device(ctx, &v.to(dtype).unwrap());
                    let (dx, db) = (t(&x), t(&b));
                    let mut outs = Vec::new();
                    for weight in [t(&dense), to_device(ctx, &shifted)] {
                        let out = conv2d_with(&dx, &weight, Some(&db), &o, kernel).unwrap_or_else(|e| panic!("{label}: {e}"));
                        let (constants, _) = captured_call(ctx, &dx, &weight, Some(&db), &o, kernel);
                        assert_eq!(constants, 0, "{label}: commands beside its kernel");
                        outs.push(common::elementwise::bits(&out.download().unwrap()));
                    }
                    assert!(outs[0] == outs[1], "{label}: the weight in two layouts gave other bits");
                }
            }
        }
        assert!(compared > 2_000, "only {compared} outputs compared");
    }
}

/// float16 and bfloat16 convolutions (accumulated in f32, rounded once) in every form: eager,
/// `conv2d_add` with a residual and ReLU, `conv2d_out` into a channels-last view, and a captured
/// graph's replay (equal to eager bit for bit); each within one unit in the last place plus the
/// f32 accumulation bound of the CPU reference on the same 16-bit values. Mixed types are
/// `InvalidArgument`, other types `Unsupported`, as on the host.
#[test]
fn half_convolutions_match_the_reference_in_every_form() {
    use strided_wgpu::{Conv2d, DType, Elementwise};
    let mut rng = Rng(0x16);
    for ctx in contexts() {
        for dtype in [DType::F16, DType::BF16] {
            let u = if dtype == DType::F16 { 1.0 / 1024.0 } else { 1.0 / 128.0 };
            let h = |v: Vec<f32>, s: &[usize]| HostTensor::from_vec(v, s).unwrap().to(dtype).unwrap();
            let xv = vals(&mut rng, 2 * 8 * 9 * 7);
            let x = layout(&mut rng, h(xv, &[2, 8, 9, 7]));
            let w = h(vals(&mut rng, 12 * 8 * 9), &[12, 8, 3, 3]);
            let b = h(vals(&mut rng, 12), &[12]);
            let res = h(vals(&mut rng, 2 * 12 * 9 * 7), &[2, 12, 9, 7]);
            let o = Conv2dOptions { padding: (1, 1), relu: true, ..Default::default() };
            let f32s = |t: &HostTensor| t.to(DType::F32).unwrap().contiguous(MemoryFormat::Contiguous).unwrap().to_vec::<f32>().unwrap();
            let scale = f32s(&conv2d_cpu(&abs(&x.to(DType::F32).unwrap()), &abs(&w.to(DType::F32).unwrap()), Some(&abs(&b.to(DType::F32).unwrap())), &Conv2dOptions { relu: false, ..o }).unwrap()).iter().zip(f32s(&abs(&res.to(DType::F32).unwrap()))).map(|(s, r)| s + r).collect::<Vec<f32>>();
            // One rounding of the result (the reference's f64 sum rounds twice: to f32, then to
            // the type); `conv2d_add` rounds the convolution before the add, as the separate
            // 16-bit ops do, so its bound has that rounding too (at most u/2 of the sum S).
            let near = |label: &str, got: &HostTensor, want: &HostTensor| {
                assert_eq!((got.dtype(), got.shape()), (dtype, want.shape()), "{} {dtype} {label}", name(ctx));
                let add = label == "conv2d_add";
                for (i, ((g, w), s)) in f32s(got).iter().zip(f32s(want)).zip(&scale).enumerate() {
                    let tol = 2.0 * u * w.abs() + if add { u * s } else { 1e-5 * s } + 6e-8;
                    assert!((g - w).abs() <= tol, "{} {dtype} {label}: output {i}: got {g}, want {w}", name(ctx));
                }
            };
            let (dx, dw, db, dr) = (to_device(ctx, &x), to_device(ctx, &w), to_device(ctx, &b), to_device(ctx, &res));
            let eager = dx.conv2d(&dw, Some(&db), &o).unwrap();
            near("conv2d", &eager.download().unwrap(), &x.conv2d(&w, Some(&b), &o).unwrap());
            near("conv2d_add", &dx.conv2d_add(&dw, Some(&db), &dr, &o).unwrap().download().unwrap(), &x.conv2d_add(&w, Some(&b), &res, &o).unwrap());
            let out = DeviceTensor::zeros(ctx, &[2, 12, 9, 7], dtype, MemoryFormat::ChannelsLast).unwrap();
            dx.conv2d_out(&dw, Some(&db), &o, &out).unwrap();
            near("conv2d_out channels-last", &out.download().unwrap(), &x.conv2d(&w, Some(&b), &o).unwrap());
            let graph = ctx.capture(&[&dx], || dx.conv2d(&dw, Some(&db), &o)).unwrap();
            graph.replay_and_wait(&[]).unwrap();
            let (a, e) = (graph.output().download().unwrap(), eager.download().unwrap());
            assert_eq!(a.to_vec::<half::f16>().ok().map(|v| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>()).or_else(|| a.to_vec::<half::bf16>().ok().map(|v| v.iter().map(|x| x.to_bits()).collect())), e.to_vec::<half::f16>().ok().map(|v| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>()).or_else(|| e.to_vec::<half::bf16>().ok().map(|v| v.iter().map(|x| x.to_bits()).collect())), "{} {dtype}: the replay differs from eager", name(ctx));
            // Mixed types, and a type the convolution does not take.
            let w32 = to_device(ctx, &w.to(DType::F32).unwrap());
            assert!(matches!(dx.conv2d(&w32, Some(&db), &o), Err(Error::InvalidArgument { op: "conv2d", .. })));
            let xi = DeviceTensor::zeros(ctx, &[2, 8, 9, 7], DType::I32, MemoryFormat::Contiguous).unwrap();
            let wi = DeviceTensor::zeros(ctx, &[12, 8, 3, 3], DType::I32, MemoryFormat::Contiguous).unwrap();
            assert!(matches!(xi.conv2d(&wi, None, &o), Err(Error::Unsupported { op: "conv2d", .. })));
        }
    }
}

/// The tensor-core convolution ([`ConvKernel::Coop`], float16 on cooperative matrices) against
/// the CPU reference, forced and (under `STRIDED_WGPU_COOPERATIVE_MATRIX=all`) as the automatic
/// choice, with bias, residual and ReLU in its
/// epilogue: kernel sizes 1x1 to 7x7, strides, padding, dilation, groups, both layouts, an
/// input view that is neither, a channels-last (non-contiguous) weight, a bias at an offset, a
/// residual in the output's strides (in the epilogue) or not (added after), channel counts and
/// pixel counts off the fragments and tiles. Within two units in the last place of the f16
/// result plus the f32 accumulation bound (R terms, R * 2^-23 of the sum of magnitudes). Where the device has no cooperative matrices the
/// forced kernel is an `Unsupported` error naming why and the automatic choice is another
/// kernel; a float32 convolution never takes it.
#[test]
fn tensor_core_convolutions_match_the_reference() {
    use strided_wgpu::advanced::conv2d_add_with;
    use strided_wgpu::{Conv2d, DType, Elementwise};
    let mut rng = Rng(0xc0);
    for ctx in contexts() {
        let coop = ctx.adapter().cooperative_matrix.is_some();
        if !coop {
            common::skips::say(&format!("!!! {}: no cooperative matrices: the tensor-core kernels' values not tested (only that they are Unsupported)", name(ctx)));
        }
        // ([N, C, H, W], K, (kh, kw), stride, padding, dilation, groups, channels-last input)
        type Case = ([usize; 4], usize, (usize, usize), (usize, usize), (usize, usize), (usize, usize), usize, bool);
        let cases: [Case; 7] = [
            ([2, 16, 10, 9], 24, (3, 3), (1, 1), (1, 1), (1, 1), 1, false),
            ([1, 8, 15, 13], 40, (1, 1), (1, 1), (0, 0), (1, 1), 1, true),
            ([2, 3, 23, 21], 16, (7, 7), (2, 2), (3, 3), (1, 1), 1, true),
            ([1, 12, 11, 11], 36, (3, 3), (2, 1), (1, 2), (2, 1), 3, true),
            ([3, 32, 9, 8], 130, (3, 3), (1, 1), (1, 1), (1, 1), 1, false),
            ([2, 20, 12, 7], 18, (2, 3), (1, 2), (0, 1), (1, 1), 2, false),
            // R and K whole fragments of 16 (and 8), a contiguous weight under NCHW: read in place.
            ([2, 32, 9, 8], 32, (3, 3), (1, 1), (1, 1), (1, 1), 1, false),
        ];
        let mut in_place = 0;
        for (i, (xs, k, (kh, kw), stride, padding, dilation, groups, cl)) in cases.into_iter().enumerate() {
            let h = |s: &[usize], rng: &mut Rng| HostTensor::from_vec(vals(rng, s.iter().product()), s).unwrap().to(DType::F16).unwrap();
            let x = h(&xs, &mut rng);
            let x = if cl { x.contiguous(MemoryFormat::ChannelsLast).unwrap() } else if i == 5 { layout(&mut rng, x) } else { x };
            let w = h(&[k, xs[1] / groups, kh, kw], &mut rng);
            let w = if i % 3 == 1 { w.contiguous(MemoryFormat::ChannelsLast).unwrap() } else { w };
            let b = h(&[2 * k], &mut rng);
            let b = if i % 2 == 0 { b.narrow(0, k as isize, k).unwrap() } else { b.narrow(0, 0, k).unwrap() };
            let o = Conv2dOptions { stride, padding, dilation, groups, relu: true, ..Default::default() };
            let want = x.conv2d(&w, Some(&b), &o).unwrap();
            // Even cases: the residual in the output's strides (the epilogue adds it); odd ones
            // contiguous (added after the convolution where the output is channels-last).
            let res = h(want.shape(), &mut rng);
            let res = if i % 2 == 0 { res.contiguous(want.layout().suggest_memory_format()).unwrap() } else { res };
            let want_add = x.conv2d_add(&w, Some(&b), &res, &o).unwrap();
            let f32s = |t: &HostTensor| t.to(DType::F32).unwrap().contiguous(MemoryFormat::Contiguous).unwrap().to_vec::<f32>().unwrap();
            let scale = f32s(&conv2d_cpu(&abs(&x.to(DType::F32).unwrap()), &abs(&w.to(DType::F32).unwrap()), Some(&abs(&b.to(DType::F32).unwrap())), &Conv2dOptions { relu: false, ..o }).unwrap());
            let r_len = (xs[1] / groups * kh * kw) as f32;
            let u = 1.0 / 1024.0;
            let what = format!("{} coop case {i}: x {xs:?} K {k} {kh}x{kw} stride {stride:?} padding {padding:?} dilation {dilation:?} groups {groups}", name(ctx));
            let near = |label: &str, got: &HostTensor, want: &HostTensor, add: bool| {
                assert_eq!((got.dtype(), got.shape()), (DType::F16, want.shape()), "{what} {label}");
                let res = f32s(&abs(&res.to(DType::F32).unwrap()));
                for (j, ((g, w), s)) in f32s(got).iter().zip(f32s(want)).zip(&scale).enumerate() {
                    let s = if add { s + res[j] } else { *s };
                    let tol = 2.0 * u * w.abs() + r_len * s / 8_388_608.0 + if add { u * s } else { 0.0 } + 6e-8;
                    assert!((g - w).abs() <= tol, "{what} {label}: output {j}: got {g}, want {w} (tolerance {tol})");
                }
            };
            let (dx, dw, db, dr) = (to_device(ctx, &x), to_device(ctx, &w), to_device(ctx, &b), to_device(ctx, &res));
            match conv2d_with(&dx, &dw, Some(&db), &o, ConvKernel::Coop) {
                Ok(got) => {
                    assert!(coop, "{what}: ran without cooperative matrices");
                    near("conv2d", &got.download().unwrap(), &want, false);
                    // The weight read where it lies (no constant work in a capture) or packed:
                    // the same bits as its twin spread over a wider buffer, which is packed.
                    let spread = HostTensor::zeros(&[k, xs[1] / groups, kh, 2 * kw], DType::F16, MemoryFormat::Contiguous).unwrap().narrow(3, 0, kw).unwrap();
                    spread.copy_(&w).unwrap();
                    let ds = to_device(ctx, &spread);
                    let twin = conv2d_with(&dx, &ds, Some(&db), &o, ConvKernel::Coop).unwrap();
                    assert_eq!(twin.download().unwrap().to_vec::<half::f16>().unwrap(), got.download().unwrap().to_vec::<half::f16>().unwrap(), "{what}: the weight packed and as it lies");
                    let constants = |dw: &DeviceTensor| captured_call(ctx, &dx, dw, Some(&db), &o, ConvKernel::Coop).0;
                    assert!(constants(&ds) > 0, "{what}: the spread weight was not packed");
                    in_place += usize::from(constants(&dw) == 0);
                    near("conv2d_add", &conv2d_add_with(&dx, &dw, Some(&db), &dr, &o, ConvKernel::Coop).unwrap().download().unwrap(), &want_add, true);
                    // The automatic choice (only where the device takes every tensor-core path:
                    // STRIDED_WGPU_COOPERATIVE_MATRIX=all), then the same bits as forced.
                    let all = ctx.adapter().cooperative_matrix.is_some_and(|c| c.all_paths);
                    let out = DeviceTensor::zeros(ctx, want.shape(), DType::F16, MemoryFormat::ChannelsLast).unwrap();
                    assert_eq!(ctx.conv2d_choice(&dx, &dw, Some(&db), &o, &out).unwrap() == Some(ConvKernel::Coop), all, "{what}: the automatic choice");
                    if all {
                        let auto = dx.conv2d(&dw, Some(&db), &o).unwrap().download().unwrap();
                        assert_eq!(auto.to_vec::<half::f16>().unwrap(), got.download().unwrap().to_vec::<half::f16>().unwrap(), "{what}: automatic and forced");
                    }
                    dx.conv2d_out(&dw, Some(&db), &o, &out).unwrap();
                    near("conv2d_out channels-last", &out.download().unwrap(), &want, false);
                }
                Err(Error::Unsupported { detail, .. }) if !coop => {
                    assert!(detail.contains("cooperative"), "{what}: {detail}");
                    let out = DeviceTensor::zeros(ctx, want.shape(), DType::F16, MemoryFormat::Contiguous).unwrap();
                    assert_ne!(ctx.conv2d_choice(&dx, &dw, Some(&db), &o, &out).unwrap(), Some(ConvKernel::Coop), "{what}: the automatic choice");
                }
                Err(e) => panic!("{what}: {e}"),
            }
            // Float32 never takes it.
            let (x32, w32) = (to_device(ctx, &x.to(DType::F32).unwrap()), to_device(ctx, &w.to(DType::F32).unwrap()));
            assert!(matches!(conv2d_with(&x32, &w32, None, &o, ConvKernel::Coop), Err(Error::Unsupported { .. })), "{what}: float32 forced");
            let out32 = DeviceTensor::zeros(ctx, want.shape(), DType::F32, MemoryFormat::Contiguous).unwrap();
            assert_ne!(ctx.conv2d_choice(&x32, &w32, None, &o, &out32).unwrap(), Some(ConvKernel::Coop), "{what}: float32 automatic");
        }
        assert!(!coop || in_place >= 1, "{}: no weight was read in place", name(ctx));
        // Rounded once to nearest even on the bits (WGSL's f16(v) may round either way, and a
        // driver may flush subnormals): a 1x1 convolution of ones whose sums are exact in f32:
        // 1 + 3 * 2^-12 (between two halves, nearer the upper one), 2^-17 (a subnormal half),
        // 70016 (past the largest half: infinity) and their negatives; the host's bits.
        if coop {
            let row = |k: usize| -> Vec<f32> {
                let v: Vec<f32> = match k % 4 {
                    0 => [1.0, 3.0 / 4096.0].into_iter().chain([0.0; 6]).collect(),
                    1 => vec![1.0 / 1048576.0; 8],
                    _ => vec![8752.0; 8],
                };
                if k % 8 >= 4 { v.iter().map(|x| -x).collect() } else { v }
            };
            let w = HostTensor::from_vec((0..8).flat_map(row).collect(), &[8, 8, 1, 1]).unwrap().to(DType::F16).unwrap();
            let x = HostTensor::from_vec(vec![1f32; 8 * 16], &[1, 8, 4, 4]).unwrap().to(DType::F16).unwrap();
            let o = Conv2dOptions::default();
            let want = x.conv2d(&w, None, &o).unwrap().to_vec::<half::f16>().unwrap();
            assert_eq!((want[0].to_f32(), want[16].to_f32(), want[32].is_infinite()), (1.0 + 1.0 / 1024.0, 1.0 / 131072.0, true), "the host's rounding");
            let got = conv2d_with(&to_device(ctx, &x), &to_device(ctx, &w), None, &o, ConvKernel::Coop).unwrap().download().unwrap().to_vec::<half::f16>().unwrap();
            let bits = |v: &[half::f16]| v.iter().map(|h| h.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got), bits(&want), "{}: the tensor cores' rounding", name(ctx));
        }
    }
}

/// The kernels that read float16 and bfloat16 operands as they are (the GEMM kernels,
/// `conv2d_gemm16`, split-K included, and the GPU-shaped depthwise ones, `conv2d_depthwise16`
/// and `conv2d_depthwise_rows16`), each forced: bit for bit the f32 kernel on f32 copies of the
/// same values, rounded to the type by a copy, then the residual added and the ReLU applied by
/// the 16-bit ops (what the other kernels run); and within the tolerance of the CPU reference.
/// Kernel sizes 1x1 to 7x7, strides, padding, dilation, groups, depthwise with K = C and 2C,
/// NCHW, channels-last and non-dense inputs, a channels-last weight, a bias at an offset, a
/// residual in the output's strides (in the GEMM epilogue) or not (added after), channel counts
/// off the vec4 words (element stores) and on them (word stores), reductions long enough to
/// split, subnormal inputs, and a call without bias or ReLU into a view at an odd offset whose
/// neighbouring halves keep their bits. The first case of each family also runs as the automatic choice (its NHWC kernel).
#[test]
fn sixteen_bit_convolutions_equal_their_f32_copies_bit_for_bit() {
    use strided_wgpu::advanced::conv2d_add_with;
    use strided_wgpu::{Conv2d, DType, Elementwise};
    let mut rng = Rng(0x6e);
    const GEMM: &[ConvKernel] = &[ConvKernel::GemmNchw, ConvKernel::GemmNhwc, ConvKernel::GemmNchwSplit, ConvKernel::GemmNhwcSplit];
    const DEPTHWISE: &[ConvKernel] = &[ConvKernel::DepthwiseNchw, ConvKernel::DepthwiseNhwc, ConvKernel::DepthwiseRows];
    for ctx in contexts() {
        // ([N, C, H, W], K, (kh, kw), stride, padding, dilation, groups, input layout: 0 NCHW,
        // 1 channels-last, 2 a non-dense view)
        type Case = ([usize; 4], usize, (usize, usize), (usize, usize), (usize, usize), (usize, usize), usize, u8);
        let cases: [(Case, &[ConvKernel]); 8] = [
            (([2, 16, 10, 8], 24, (3, 3), (1, 1), (1, 1), (1, 1), 1, 1), GEMM),
            (([1, 8, 15, 13], 40, (1, 1), (1, 1), (0, 0), (1, 1), 1, 0), GEMM),
            (([2, 3, 23, 21], 16, (7, 7), (2, 2), (3, 3), (1, 1), 1, 1), GEMM),
            (([1, 12, 11, 11], 36, (3, 3), (2, 1), (1, 2), (2, 1), 3, 2), GEMM),
            (([3, 32, 9, 8], 130, (3, 3), (1, 1), (1, 1), (1, 1), 1, 0), GEMM),
            (([2, 12, 11, 9], 12, (3, 3), (1, 1), (1, 1), (1, 1), 12, 1), DEPTHWISE),
            (([1, 8, 13, 16], 16, (5, 5), (2, 2), (2, 2), (1, 1), 8, 0), DEPTHWISE),
            (([2, 20, 9, 8], 20, (3, 3), (1, 1), (2, 2), (2, 2), 20, 2), DEPTHWISE),
        ];
        for (i, ((xs, k, (kh, kw), stride, padding, dilation, groups, form), kernels)) in cases.into_iter().enumerate() {
            for (j, &kernel) in kernels.iter().enumerate() {
                let dtype = if (i + j) % 2 == 0 { DType::F16 } else { DType::BF16 };
                let u = if dtype == DType::F16 { 1.0 / 1024.0 } else { 1.0 / 128.0 };
                let h = |s: &[usize], rng: &mut Rng| HostTensor::from_vec(vals(rng, s.iter().product()), s).unwrap().to(dtype).unwrap();
                // Case 1: a third of the input subnormal in float16 (and tiny in bfloat16).
                let x = if i == 1 {
                    let v: Vec<f32> = vals(&mut rng, xs.iter().product()).into_iter().enumerate().map(|(e, v)| if e % 3 == 0 { v * 1e-6 } else { v }).collect();
                    HostTensor::from_vec(v, &xs).unwrap().to(dtype).unwrap()
                } else {
                    h(&xs, &mut rng)
                };
                let x = match form {
                    0 => x,
                    1 => x.contiguous(MemoryFormat::ChannelsLast).unwrap(),
                    _ => {
                        let [n, c, hh, ww] = xs;
                        let big = HostTensor::zeros(&[n, hh, c + 1, ww + 2], dtype, MemoryFormat::Contiguous).unwrap().add(f64::NAN).unwrap();
                        let v = big.narrow(2, 1, c).and_then(|v| v.narrow(3, 2, ww)).and_then(|v| v.permute(&[0, 2, 1, 3])).unwrap();
                        v.copy_(&x).unwrap();
                        v
                    }
                };
                let w = h(&[k, xs[1] / groups, kh, kw], &mut rng);
                let w = if i % 2 == 1 { w.contiguous(MemoryFormat::ChannelsLast).unwrap() } else { w };
                let b = h(&[2 * k], &mut rng).narrow(0, (i % 2 * k) as isize, k).unwrap();
                let o = Conv2dOptions { stride, padding, dilation, groups, relu: true, ..Default::default() };
                let want = x.conv2d(&w, Some(&b), &o).unwrap();
                // Even kernels: the residual in the output's strides (the epilogue adds it);
                // odd ones in the other memory format (added after the convolution).
                let res = h(want.shape(), &mut rng);
                let fmt = want.layout().suggest_memory_format();
                let other = if fmt == MemoryFormat::ChannelsLast { MemoryFormat::Contiguous } else { MemoryFormat::ChannelsLast };
                let res = res.contiguous(if j % 2 == 0 { fmt } else { other }).unwrap();
                let want_add = x.conv2d_add(&w, Some(&b), &res, &o).unwrap();
                let what = format!("{} {kernel:?} {dtype} case {i}: x {xs:?} strides {:?} K {k} {kh}x{kw} stride {stride:?} padding {padding:?} dilation {dilation:?} groups {groups}", name(ctx), x.strides());
                let (dx, dw, db, dr) = (to_device(ctx, &x), to_device(ctx, &w), to_device(ctx, &b), to_device(ctx, &res));
                let got = conv2d_with(&dx, &dw, Some(&db), &o, kernel).unwrap_or_else(|e| panic!("{what}: {e}"));
                let got_add = conv2d_add_with(&dx, &dw, Some(&db), &dr, &o, kernel).unwrap_or_else(|e| panic!("{what} add: {e}"));
                // The same kernel on f32 copies, rounded by a copy; the residual and the ReLU
                // by the 16-bit ops.
                let wide = |t: &DeviceTensor| {
                    let w = DeviceTensor::empty(ctx, t.shape(), DType::F32, t.layout().suggest_memory_format()).unwrap();
                    w.copy_(t).unwrap();
                    w
                };
                let (x32, w32, b32) = (wide(&dx), wide(&dw), wide(&db));
                let narrow = |t: &DeviceTensor| {
                    let n = DeviceTensor::empty(ctx, t.shape(), dtype, t.layout().suggest_memory_format()).unwrap();
                    n.copy_(t).unwrap();
                    n
                };
                let via_f32 = narrow(&conv2d_with(&x32, &w32, Some(&b32), &o, kernel).unwrap());
                let via_f32_add = narrow(&conv2d_with(&x32, &w32, Some(&b32), &Conv2dOptions { relu: false, ..o }, kernel).unwrap());
                via_f32_add.add_(&dr).unwrap();
                via_f32_add.relu_().unwrap();
                let same_bits = |label: &str, a: &DeviceTensor, b: &DeviceTensor| {
                    let (a, b) = (common::elementwise::bits(&a.download().unwrap()), common::elementwise::bits(&b.download().unwrap()));
                    assert_eq!(a.len(), b.len(), "{what} {label}");
                    let differ: Vec<usize> = (0..a.len()).filter(|&e| a[e] != b[e]).collect();
                    assert!(differ.is_empty(), "{what} {label}: {} of {} outputs differ from the f32 copies' bits, first {}: {:#06x} against {:#06x}", differ.len(), a.len(), differ[0], a[differ[0]], b[differ[0]]);
                };
                same_bits("conv2d", &got, &via_f32);
                same_bits("conv2d_add", &got_add, &via_f32_add);
                if j == 0 {
                    // Without bias or ReLU, into a view at an odd element offset whose rows
                    // leave a column between them: that column (the other halves of the words
                    // the kernel stores into) keeps its bits.
                    let plain = Conv2dOptions { relu: false, ..o };
                    let [n, kk, oh, ow] = [want.shape()[0], want.shape()[1], want.shape()[2], want.shape()[3]];
                    let ones = HostTensor::from_vec(vec![1.0f32; n * kk * oh * (ow + 1)], &[n, kk, oh, ow + 1]).unwrap().to(dtype).unwrap();
                    let big = DeviceTensor::upload(ctx, &ones).unwrap();
                    let view = big.narrow(3, 1, ow).unwrap();
                    let mut batch = ctx.batch();
                    batch.conv2d_out_with(&dx, &dw, None, &plain, &view, kernel).unwrap_or_else(|e| panic!("{what} into a view: {e}"));
                    batch.submit().unwrap();
                    same_bits("conv2d_out into a view, no bias or ReLU", &view, &narrow(&conv2d_with(&x32, &w32, None, &plain, kernel).unwrap()));
                    let column = common::elementwise::bits(&big.narrow(3, 0, 1).unwrap().download().unwrap());
                    assert!(column.iter().all(|&b| b == common::elementwise::bits(&ones)[0]), "{what}: the column between the view's rows changed");
                }
                if (i == 0 || i == 5) && j == 1 {
                    // The automatic choice, where the class keeps this kernel (the default of
                    // GPUs; here a tuning file that says so, in a context of its own): the
                    // same bits as forced.
                    let own = pollster::block_on(GpuContext::for_backends(ctx.adapter().backend.into())).unwrap();
                    let (ox, ow, ob) = (to_device(&own, &x), to_device(&own, &w), to_device(&own, &b));
                    let out = DeviceTensor::zeros(&own, want.shape(), dtype, want.layout().suggest_memory_format()).unwrap();
                    own.tune_conv2d(&ox, &ow, Some(&ob), &o).unwrap();
                    let tuned = format!("\"{:?}\"", own.conv2d_choice(&ox, &ow, Some(&ob), &o, &out).unwrap().unwrap());
                    let mut file: serde_json::Value = serde_json::from_str(&own.tuning_json("").unwrap()).unwrap();
                    for section in file.as_array_mut().unwrap() {
                        for family in section["choices"].as_object_mut().unwrap().values_mut() {
                            for choice in family.as_object_mut().unwrap().values_mut().filter(|c| c.as_str() == Some(tuned.as_str())) {
                                *choice = serde_json::Value::String(format!("\"{kernel:?}\""));
                            }
                        }
                    }
                    // Into a context of its own again: one that kept a choice for the class keeps it.
                    assert_eq!(own.load_tuning_json(&file.to_string()).unwrap(), 0, "{what}: the tuned context's class");
                    let own = pollster::block_on(GpuContext::for_backends(ctx.adapter().backend.into())).unwrap();
                    let (ox, ow, ob) = (to_device(&own, &x), to_device(&own, &w), to_device(&own, &b));
                    let out = DeviceTensor::zeros(&own, want.shape(), dtype, want.layout().suggest_memory_format()).unwrap();
                    assert_eq!(own.load_tuning_json(&file.to_string()).unwrap(), 1, "{what}: the tuning file");
                    assert_eq!(own.conv2d_choice(&ox, &ow, Some(&ob), &o, &out).unwrap(), Some(kernel), "{what}: the kept choice");
                    // (Counted as encoded: the context holds eager calls back, so each is flushed.)
                    own.flush().unwrap().wait().unwrap();
                    let before = own.record_counts();
                    ox.conv2d_out(&ow, Some(&ob), &o, &out).unwrap();
                    own.flush().unwrap().wait().unwrap();
                    let automatic = own.record_counts() - before;
                    same_bits("automatic", &out, &got);
                    // As the forced kernel records it: no conversions.
                    let before = own.record_counts();
                    conv2d_with(&ox, &ow, Some(&ob), &o, kernel).unwrap();
                    own.flush().unwrap().wait().unwrap();
                    assert_eq!(automatic.dispatches, (own.record_counts() - before).dispatches, "{what}: the automatic call's dispatches");
                }
                // Within one rounding of the reference (plus the accumulation bound, and the
                // rounding before the add).
                let f32s = |t: &HostTensor| t.to(DType::F32).unwrap().contiguous(MemoryFormat::Contiguous).unwrap().to_vec::<f32>().unwrap();
                let scale = f32s(&conv2d_cpu(&abs(&x.to(DType::F32).unwrap()), &abs(&w.to(DType::F32).unwrap()), Some(&abs(&b.to(DType::F32).unwrap())), &Conv2dOptions { relu: false, ..o }).unwrap());
                let resv = f32s(&abs(&res.to(DType::F32).unwrap()));
                for (label, got, want, add) in [("conv2d", &got, &want, false), ("conv2d_add", &got_add, &want_add, true)] {
                    let g = got.download().unwrap();
                    assert_eq!((g.dtype(), g.shape()), (dtype, want.shape()), "{what} {label}");
                    for (e, ((gv, wv), s)) in f32s(&g).iter().zip(f32s(want)).zip(&scale).enumerate() {
                        let s = if add { s + resv[e] } else { *s };
                        let tol = 2.0 * u * wv.abs() + 1e-5 * s + if add { u * s } else { 0.0 } + 6e-8;
                        assert!((gv - wv).abs() <= tol, "{what} {label}: output {e}: got {gv}, want {wv} (tolerance {tol})");
                    }
                }
            }
        }
    }
}

/// A first call that measures (`OnFirstCall`) into an output whose batch dim is innermost
/// ([N, K, OH, OW] permuted from [K, OH, OW, N]) times its candidates into a scratch dense
/// within an image: it took an image's span of that output (the whole of it) per image, 256
/// times the output's 1 MiB, past the device's 4 MiB buffers, and the call failed.
#[test]
fn a_measuring_call_into_a_batch_innermost_output() {
    use strided_wgpu::Conv2d;
    for ctx in contexts() {
        let small = limited(ctx, |l| wgpu::Limits { max_buffer_size: 4 << 20, max_storage_buffer_binding_size: 4 << 20, ..l });
        small.set_tuning_policy(TuningPolicy::OnFirstCall);
        let (n, c, k) = (256, 4, 16);
        let mut rng = Rng(7);
        let h = HostTensor::from_vec(vals(&mut rng, n * c * 64), &[n, c, 8, 8]).unwrap();
        let w = HostTensor::from_vec(vals(&mut rng, k * c), &[k, c, 1, 1]).unwrap();
        let out = DeviceTensor::empty(&small, &[k, 8, 8, n], DType::F32, MemoryFormat::Contiguous).unwrap().permute(&[3, 0, 1, 2]).unwrap();
        let x = DeviceTensor::upload(&small, &h).unwrap();
        x.conv2d_out(&DeviceTensor::upload(&small, &w).unwrap(), None, &Conv2dOptions::default(), &out).unwrap_or_else(|e| panic!("{}: {e}", name(ctx)));
        assert_eq!(small.tuned_conv_choices().len(), 1, "{}: the call did not measure", name(ctx));
        let want = conv2d_cpu(&h, &w, None, &Conv2dOptions::default()).unwrap().to_vec::<f32>().unwrap();
        let got = out.download().unwrap().to_vec::<f32>().unwrap();
        for (i, (g, e)) in got.iter().zip(&want).enumerate() {
            assert!((g - e).abs() <= 1e-4 * e.abs().max(1.0), "{}: {i}: {g} vs {e}", name(ctx));
        }
    }
}

/// A convolution's class holds the output's orientation: the default kernel follows it, so a
/// choice measured into NCHW outputs is not taken for channels-last ones (with no vec4 path,
/// C = K = 6 and 7 output columns, both shared one class, and the second tuning measured
/// nothing).
#[test]
fn tuned_classes_keep_the_outputs_orientation_apart() {
    use strided_wgpu::MemoryFormat;
    for ctx in contexts() {
        let own = limited(ctx, |l| l);
        let mut rng = Rng(41);
        let x = DeviceTensor::from_slice(&own, &vals(&mut rng, 2 * 6 * 7 * 7), &[2, 6, 7, 7]).unwrap();
        let w = DeviceTensor::from_slice(&own, &vals(&mut rng, 6 * 6 * 9), &[6, 6, 3, 3]).unwrap();
        let nchw = Conv2dOptions { padding: (1, 1), output_format: Some(MemoryFormat::Contiguous), ..Default::default() };
        let cl = Conv2dOptions { output_format: Some(MemoryFormat::ChannelsLast), ..nchw };
        assert!(own.tune_conv2d(&x, &w, None, &nchw).unwrap(), "{}", name(ctx));
        assert!(own.tune_conv2d(&x, &w, None, &cl).unwrap(), "{}: the channels-last class was the NCHW one", name(ctx));
        let classes = own.tuned_conv_choices();
        assert_eq!(classes.len(), 2, "{}", name(ctx));
        assert_eq!(classes.iter().filter(|(c, _)| c.channels_last_out).count(), 1, "{}", name(ctx));
    }
}

/// Flipped weights (read in place by the GEMM kernels at a negative output-channel stride) and
/// flipped outputs, through every kernel that takes them, within the data README's tolerance of
/// the host.
#[test]
fn flipped_weights_and_outputs_match_cpu() {
    use strided_wgpu::Conv2d;
    let mut rng = Rng(57);
    let x = HostTensor::from_vec(vals(&mut rng, 2 * 8 * 9 * 10), &[2, 8, 9, 10]).unwrap();
    let w = HostTensor::from_vec(vals(&mut rng, 12 * 8 * 9), &[12, 8, 3, 3]).unwrap();
    let o = Conv2dOptions { padding: (1, 1), ..Default::default() };
    let close = |what: &str, got: &[f32], want: &[f32], scale: &[f32]| {
        for i in 0..got.len() {
            assert!((got[i] - want[i]).abs() <= 1e-5 * scale[i] + 1e-6, "{what}: output {i}: {} vs {}", got[i], want[i]);
        }
    };
    for ctx in contexts() {
        let dx = to_device(ctx, &x);
        let mut ran = 0;
        for dim in [0isize, 1, 3] {
            let wf = w.flip(dim).unwrap();
            let want = conv2d_cpu(&x, &wf, None, &o).unwrap().to_vec::<f32>().unwrap();
            let scale = conv2d_cpu(&abs(&x), &abs(&wf), None, &o).unwrap().to_vec::<f32>().unwrap();
            for kernel in ConvKernel::ALL {
                match conv2d_with(&dx, &to_device(ctx, &wf), None, &o, kernel) {
                    Ok(y) => {
                        ran += 1;
                        close(&format!("{} weight flip {dim} {kernel:?}", name(ctx)), &y.download().unwrap().to_vec::<f32>().unwrap(), &want, &scale);
                    }
                    Err(Error::Unsupported { .. }) => {}
                    Err(e) => panic!("{} weight flip {dim} {kernel:?}: {e}", name(ctx)),
                }
            }
        }
        assert!(ran >= 6, "{}: {ran} kernels took a flipped weight", name(ctx));
        // Into an output flipped along its channels and its rows.
        let want = conv2d_cpu(&x, &w, None, &o).unwrap();
        let scale = conv2d_cpu(&abs(&x), &abs(&w), None, &o).unwrap().to_vec::<f32>().unwrap();
        for dim in [1isize, 2] {
            let out = DeviceTensor::zeros(ctx, want.shape(), DType::F32, MemoryFormat::Contiguous).unwrap();
            dx.conv2d_out(&to_device(ctx, &w), None, &o, &out.flip(dim).unwrap()).unwrap_or_else(|e| panic!("{} out flip {dim}: {e}", name(ctx)));
            let got = out.flip(dim).unwrap().download().unwrap().to_vec::<f32>().unwrap();
            close(&format!("{} out flip {dim}", name(ctx)), &got, &want.to_vec::<f32>().unwrap(), &scale);
        }
    }
}

/// Mesa's software adapters leave an invocation's loops after 65,535 turns, silently: a
/// depthwise 256x256 window (the CPU default) summed part of its taps, a forced GEMM over a
/// reduction of 72,000 steps part of it. On CPU adapters the depthwise window past the budget
/// is `Error::Limit` (one of 224x224 still runs and matches the host), GEMM kernels past
/// `CPU_GEMM_K` are `Unsupported` and leave the tuner's candidates, and the default kernel
/// computes the long reduction as the host does.
#[test]
fn loops_past_a_software_adapters_bound_are_refused() {
    let mut rng = Rng(41);
    for ctx in contexts() {
        if ctx.adapter().device_type != wgpu::DeviceType::Cpu {
            continue;
        }
        let dw = Conv2dOptions { groups: 2, ..Default::default() };
        let x = HostTensor::from_vec(vals(&mut rng, 2 * 257 * 257), &[1, 2, 257, 257]).unwrap();
        let w = HostTensor::from_vec(vals(&mut rng, 2 * 256 * 256), &[2, 1, 256, 256]).unwrap();
        let r = strided_wgpu::ops::conv2d(&to_device(ctx, &x), &to_device(ctx, &w), None, &dw);
        assert!(matches!(r, Err(Error::Limit { .. })), "{}: a 256x256 depthwise window: {:?}", name(ctx), r.map(|t| t.shape().to_vec()));
        // A window just within the estimate, kh * (kw + 2) = 58,080 turns, on each depthwise
        // kernel that takes it, NCHW and channels-last: every output as the host's.
        let w240 = w.narrow(2, 0, 240).unwrap().narrow(3, 0, 240).unwrap().contiguous(MemoryFormat::Contiguous).unwrap();
        let x241 = x.narrow(2, 0, 241).unwrap().narrow(3, 0, 243).unwrap();
        for kernel in [ConvKernel::DepthwiseNchw, ConvKernel::DepthwiseNhwc, ConvKernel::DepthwiseRows] {
            for format in [MemoryFormat::Contiguous, MemoryFormat::ChannelsLast] {
                let xf = x241.contiguous(format).unwrap();
                assert_eq!(check(ctx, &xf, &w240.contiguous(format).unwrap(), None, &dw, kernel, "depthwise 240x240"), 2 * 2 * 4);
            }
        }
        let o = Conv2dOptions { padding: (1, 1), ..Default::default() };
        let x = HostTensor::from_vec(vals(&mut rng, 8000 * 9), &[1, 8000, 3, 3]).unwrap();
        let w = HostTensor::from_vec(vals(&mut rng, 4 * 8000 * 9), &[4, 8000, 3, 3]).unwrap();
        for kernel in [ConvKernel::GemmNchw, ConvKernel::GemmNhwc, ConvKernel::GemmNchwSplit] {
            let r = conv2d_with(&to_device(ctx, &x), &to_device(ctx, &w), None, &o, kernel);
            assert!(matches!(r, Err(Error::Unsupported { .. })), "{}: {kernel:?} over 72,000 steps: {:?}", name(ctx), r.map(|t| t.shape().to_vec()));
        }
        assert!(check(ctx, &x, &w, None, &o, ConvKernel::Auto, "a reduction of 72,000 steps") == 36);
        let d = to_device(ctx, &x);
        let dw_ = to_device(ctx, &w);
        let y = strided_wgpu::ops::conv2d(&d, &dw_, None, &o).unwrap();
        // Tuned: the GEMM kernels were no candidates (they measured fast, summing part).
        ctx.tune_conv2d(&d, &dw_, None, &o).unwrap();
        let class = ctx.conv2d_choice(&d, &dw_, None, &o, &y).unwrap();
        assert!(!matches!(class, Some(k) if matches!(k, ConvKernel::GemmNchw | ConvKernel::GemmNhwc | ConvKernel::GemmNchwSplit | ConvKernel::GemmNhwcSplit)), "{}: {class:?}", name(ctx));
        // A 200x200 window of 8 channels on the register-blocked kernel: its 64 KiB blocks,
        // one a window, pass the largest buffer (2.6 GB), a `Limit` (wgpu's validation error
        // before, naming no shape).
        if ctx.adapter().max_buffer_size < 40_000 * 65_536 {
            let x = DeviceTensor::zeros(ctx, &[1, 8, 201, 201], DType::F32, MemoryFormat::Contiguous).unwrap();
            let w = DeviceTensor::zeros(ctx, &[8, 8, 200, 200], DType::F32, MemoryFormat::Contiguous).unwrap();
            let r = conv2d_with(&x, &w, None, &Conv2dOptions::default(), ConvKernel::Nchw);
            assert!(matches!(r, Err(Error::Limit { limit: "max_buffer_size", .. })), "{}: {:?}", name(ctx), r.map(|t| t.shape().to_vec()));
        }
    }
}

/// An unbatched [C, H, W] input, which `conv2d` takes as a batch of one, is taken so by the
/// queries and the tuner too (they refused it, with a message naming it valid).
#[test]
fn unbatched_inputs_in_the_queries_and_the_tuner() {
    let mut rng = Rng(43);
    let x = HostTensor::from_vec(vals(&mut rng, 3 * 5 * 5), &[3, 5, 5]).unwrap();
    let w = HostTensor::from_vec(vals(&mut rng, 2 * 3 * 3 * 3), &[2, 3, 3, 3]).unwrap();
    let o = Conv2dOptions::default();
    for ctx in contexts() {
        let (dx, dw) = (to_device(ctx, &x), to_device(ctx, &w));
        let y = strided_wgpu::ops::conv2d(&dx, &dw, None, &o).unwrap();
        assert_eq!(y.shape(), &[2, 3, 3]);
        let batched = ctx.conv2d_default(&dx.unsqueeze(0).unwrap(), &dw, None, &o, &y.unsqueeze(0).unwrap()).unwrap();
        assert_eq!(ctx.conv2d_default(&dx, &dw, None, &o, &y).unwrap(), batched, "{}", name(ctx));
        assert!(ctx.conv2d_choice(&dx, &dw, None, &o, &y).unwrap().is_some(), "{}", name(ctx));
        ctx.tune_conv2d(&dx, &dw, None, &o).unwrap_or_else(|e| panic!("{}: tune_conv2d of an unbatched input: {e}", name(ctx)));
        let w1 = to_device(ctx, &HostTensor::from_vec(vals(&mut rng, 2 * 3), &[2, 3, 1, 1]).unwrap());
        ctx.tune_conv1x1(&dx, &w1, None, &Default::default()).unwrap_or_else(|e| panic!("{}: tune_conv1x1 of an unbatched input: {e}", name(ctx)));
    }
}
