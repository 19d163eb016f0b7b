//! 1x1 convolution on the device against the CPU reference: random geometry, groups, ReLU,
//! bias, input layouts and every kernel, compared with a tolerance scaled to each output's sum
//! of |terms|; channel and image windows; bad input.

mod common;

use common::conv::{abs, to_device, vals};
use common::gpu::{contexts, name};
use common::rng::Rng;
use strided_wgpu::{DeviceTensor, DType, Error, GpuContext, HostTensor, MemoryFormat, Strided};
use strided_wgpu::ops::{conv1x1, Conv1x1Options};
use strided_wgpu::advanced::{conv1x1_with, ConvKernel};
use strided_wgpu::advanced::internal::conv1x1_cpu;

/// Runs one convolution on the device through `kernel` and compares every output with the CPU
/// reference. Returns how many outputs were compared.
fn check(ctx: &GpuContext, x: &HostTensor, wt: &HostTensor, b: Option<&HostTensor>, o: &Conv1x1Options, kernel: ConvKernel, label: &str) -> usize {
    let want = conv1x1_cpu(x, wt, b, o).unwrap();
    let scale = conv1x1_cpu(&abs(x), &abs(wt), b.map(abs).as_ref(), &Conv1x1Options { relu: false, ..*o }).unwrap();
    let got = conv1x1_with(&to_device(ctx, x), &to_device(ctx, wt), b.map(|b| to_device(ctx, b)).as_ref(), o, kernel).unwrap();
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

const KERNELS: [ConvKernel; 5] = [ConvKernel::Auto, ConvKernel::Nchw, ConvKernel::Nhwc, ConvKernel::NchwTiled, ConvKernel::NhwcTiled];

#[test]
fn random_convolutions_match_cpu() {
    for ctx in contexts() {
        let mut rng = Rng(42);
        let mut compared = 0;
        for case in 0..60 {
            let groups = [1, 1, 2, 4][rng.below(4)];
            let (n, h, w) = (1 + rng.below(3), 1 + rng.below(9), 1 + rng.below(9));
            let c = groups * (1 + rng.below(12));
            let k = groups * (1 + rng.below(12));
            let o = Conv1x1Options {
                stride: (1 + rng.below(3), 1 + rng.below(3)),
                padding: (rng.below(2), rng.below(2)),
                groups,
                relu: rng.below(2) == 0,
                output_format: None,
                dilation: (1, 1),
            };
            let x = HostTensor::from_vec(vals(&mut rng, n * c * h * w), &[n, c, h, w]).unwrap();
            let x = match rng.below(4) {
                0 => x,
                1 => x.contiguous(MemoryFormat::ChannelsLast).unwrap(),
                2 => x.flip(3).unwrap(),
                _ => x.permute(&[0, 1, 3, 2]).unwrap().contiguous(MemoryFormat::Contiguous).unwrap().transpose(2, 3).unwrap(),
            };
            let wt = HostTensor::from_vec(vals(&mut rng, k * (c / groups)), &[k, c / groups, 1, 1]).unwrap();
            let wt = if rng.below(2) == 0 { wt } else { wt.view(&[k as isize, (c / groups) as isize]).unwrap() };
            let b = (rng.below(2) == 0).then(|| HostTensor::from_vec(vals(&mut rng, k), &[k]).unwrap());
            compared += check(ctx, &x, &wt, b.as_ref(), &o, KERNELS[case % KERNELS.len()], &format!("case {case}"));
        }
        assert!(compared > 1000, "only {compared} outputs compared");
    }
}

/// Many channels (several input-channel windows, which add into the output), many output
/// channels (several weight windows), groups, and dense layouts where the kernels move vec4
/// words (H*W a multiple of 4, C and K multiples of 4) next to ones where they cannot.
#[test]
fn channel_windows_and_vector_paths_match_cpu() {
    for ctx in contexts() {
        let mut rng = Rng(7);
        let cases: [(usize, usize, usize, usize, usize, usize); 8] = [
            (2, 132, 4, 6, 12, 1),  // 3 channel windows (64 + 64 + 4), vec4 along pixels and channels
            (1, 72, 5, 3, 260, 1),  // 2 channel x 2 weight windows (256 + 4 outputs), odd plane
            (2, 136, 4, 4, 264, 2), // groups of 68 channels (2 windows each), 132 outputs each
            (1, 1, 7, 7, 1, 1),     // C = K = 1
            (3, 64, 1, 1, 260, 1),  // OH = OW = 1, 2 weight windows (256 + 4 outputs)
            (1, 40, 8, 8, 600, 1),  // 40 channels held as 16 quads, 3 weight windows
            (1, 72, 2, 6, 8, 1),    // 3 quads: an invocation whose second quad is past the work, 2 windows
            (1, 24, 5, 3, 8, 1),    // 24 channels held as 8 quads (6 of them loaded), odd plane
        ];
        for (i, &(n, c, h, w, k, groups)) in cases.iter().enumerate() {
            let x = HostTensor::from_vec(vals(&mut rng, n * c * h * w), &[n, c, h, w]).unwrap();
            let wt = HostTensor::from_vec(vals(&mut rng, k * (c / groups)), &[k, c / groups]).unwrap();
            let b = HostTensor::from_vec(vals(&mut rng, k), &[k]).unwrap();
            for (fi, format) in [MemoryFormat::Contiguous, MemoryFormat::ChannelsLast].into_iter().enumerate() {
                let xf = x.contiguous(format).unwrap();
                for kernel in KERNELS {
                    let o = Conv1x1Options { groups, relu: (i + fi) % 2 == 0, ..Default::default() };
                    check(ctx, &xf, &wt, Some(&b), &o, kernel, &format!("case {i}"));
                }
            }
        }
    }
}

/// Grouped 1x1 convolutions at unit stride, which the NCHW kernel runs on CPU adapters as one
/// batched matrix product over the images and groups (the bias read per output channel and
/// group) where the images have at most 2048 output pixels in all: many groups, channels per
/// group that are and are not whole quads or whole chunks of 64 (weights read in place or
/// packed), a transposed weight, a strided bias, ReLU, several images, negative strides, and
/// layouts whose pixels do not merge into one dim, or too many pixels (the per-group windows
/// then).
#[test]
fn grouped_pointwise_convolutions_match_cpu() {
    for ctx in contexts() {
        let mut rng = Rng(11);
        // (n, groups, channels per group, outputs per group, h, w)
        let cases: [(usize, usize, usize, usize, usize, usize); 7] = [
            (1, 4, 8, 8, 48, 48), // 2304 pixels: the per-group windows
            (3, 8, 5, 7, 5, 7),
            (2, 16, 64, 12, 4, 4),
            (1, 3, 24, 40, 6, 6),
            (2, 6, 4, 4, 1, 9),
            (1, 96, 8, 16, 3, 5),
            (2, 4, 130, 6, 2, 3),
        ];
        for (i, &(n, groups, cg, kg, h, w)) in cases.iter().enumerate() {
            let (c, k) = (groups * cg, groups * kg);
            let x = HostTensor::from_vec(vals(&mut rng, n * c * h * w), &[n, c, h, w]).unwrap();
            // Every other case: the weight stored transposed ([C/G, K] seen as [K, C/G]) and the
            // bias every second element of a longer vector.
            let wt = if i % 2 == 0 {
                HostTensor::from_vec(vals(&mut rng, k * cg), &[k, cg, 1, 1]).unwrap()
            } else {
                HostTensor::from_vec(vals(&mut rng, k * cg), &[cg, k]).unwrap().transpose(0, 1).unwrap()
            };
            let b = if i % 2 == 0 {
                HostTensor::from_vec(vals(&mut rng, k), &[k]).unwrap()
            } else {
                HostTensor::from_vec(vals(&mut rng, 2 * k), &[2 * k]).unwrap().slice(0, 0, 2 * k as isize, 2).unwrap()
            };
            // Contiguous and channels flipped (negative strides): the route where it applies;
            // channels-last and a flipped row: pixels that do not merge, or a channels-last
            // output (the per-group windows).
            let layouts = [x.clone(), x.flip(1).unwrap(), x.contiguous(MemoryFormat::ChannelsLast).unwrap(), x.flip(3).unwrap()];
            for (li, xl) in layouts.iter().enumerate() {
                for (bi, bias) in [None, Some(&b)].into_iter().enumerate() {
                    let o = Conv1x1Options { groups, relu: (i + li + bi) % 2 == 0, ..Default::default() };
                    for kernel in [ConvKernel::Auto, ConvKernel::Nchw] {
                        check(ctx, xl, &wt, bias, &o, kernel, &format!("grouped case {i} layout {li}"));
                    }
                }
            }
        }
    }
}

/// Inputs and outputs larger than one binding run as several image ranges; one image over the
/// limit is an error naming it. Uses a device opened with a 64 KiB binding limit.
#[test]
fn inputs_over_one_binding_are_split_by_image() {
    for ctx in contexts() {
        let Some(adapter) = common::gpu::adapter_again(ctx) else { continue };
        let limits = wgpu::Limits { max_storage_buffer_binding_size: 64 << 10, ..adapter.limits() };
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: None,
            required_features: adapter.features() & (wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS),
            required_limits: limits,
            experimental_features: wgpu::ExperimentalFeatures::disabled(),
            memory_hints: wgpu::MemoryHints::default(),
            trace: wgpu::Trace::Off,
        }))
        .unwrap();
        let small = GpuContext::from_device(device, queue, &adapter.get_info());
        assert_eq!(small.adapter().max_storage_buffer_binding_size, 64 << 10);
        let mut rng = Rng(3);
        // 16 x 20 x 20 floats = 25.6 KB per image; 6 images = 154 KB in, 8 outputs = 77 KB out.
        let x = HostTensor::from_vec(vals(&mut rng, 6 * 16 * 20 * 20), &[6, 16, 20, 20]).unwrap();
        let wt = HostTensor::from_vec(vals(&mut rng, 8 * 16), &[8, 16]).unwrap();
        for format in [MemoryFormat::Contiguous, MemoryFormat::ChannelsLast] {
            for kernel in KERNELS {
                check(&small, &x.contiguous(format).unwrap(), &wt, None, &Conv1x1Options::default(), kernel, "split");
            }
        }
        let big = DeviceTensor::zeros(&small, &[1, 64, 20, 20], DType::F32, MemoryFormat::Contiguous).unwrap();
        let w = DeviceTensor::zeros(&small, &[8, 64], DType::F32, MemoryFormat::Contiguous).unwrap();
        let e = conv1x1(&big, &w, None, &Conv1x1Options::default()).unwrap_err();
        assert!(matches!(&e, Error::Limit { limit: "max_storage_buffer_binding_size", .. }), "{e}");
    }
}

/// Recording into a caller's output view inside a batch, and outputs that overlap an operand.
#[test]
fn batched_convolution_into_a_view() {
    for ctx in contexts() {
        // Small integers (exact sums), a weight of 6 distinct rows: a channel or stride mix-up
        // in the view's writes shows.
        let hx = HostTensor::from_vec((0..2 * 4 * 3 * 3).map(|i| i as f32).collect::<Vec<_>>(), &[2, 4, 3, 3]).unwrap();
        let hw = HostTensor::from_vec((0..6 * 4).map(|i| (i % 7) as f32 - 3.0).collect::<Vec<_>>(), &[6, 4]).unwrap();
        let (x, w) = (DeviceTensor::upload(ctx, &hx).unwrap(), DeviceTensor::upload(ctx, &hw).unwrap());
        let o = Conv1x1Options::default();
        let want = conv1x1_cpu(&hx, &hw, None, &o).unwrap().to_vec::<f32>().unwrap();
        // The output: every other row of a larger buffer, filled with a marker.
        let store = DeviceTensor::from_slice(ctx, &vec![-7.25f32; 2 * 6 * 6 * 3], &[2, 6, 6, 3]).unwrap();
        let view = store.slice(2, 0, 6, 2).unwrap();
        let mut batch = ctx.batch();
        batch.conv1x1_out_with(&x, &w, None, &o, &view, ConvKernel::Auto).unwrap();
        batch.submit_and_wait().unwrap();
        assert_eq!(view.download().unwrap().to_vec::<f32>().unwrap(), want);
        let all = store.download().unwrap().to_vec::<f32>().unwrap();
        assert_eq!(all.iter().filter(|&&v| v == -7.25).count(), all.len() / 2, "rows between the view's were written");
        // The output may not overlap an input, nor itself.
        let mut batch = ctx.batch();
        let xs = DeviceTensor::zeros(ctx, &[1, 4, 3, 3], DType::F32, MemoryFormat::Contiguous).unwrap();
        let alias = xs.as_strided(&[1, 4, 3, 3], &[36, 9, 3, 1], 0).unwrap();
        let wsq = DeviceTensor::zeros(ctx, &[4, 4], DType::F32, MemoryFormat::Contiguous).unwrap();
        assert!(matches!(batch.conv1x1_out_with(&xs, &wsq, None, &o, &alias, ConvKernel::Auto), Err(Error::Overlap { .. })));
        let selfish = DeviceTensor::zeros(ctx, &[9], DType::F32, MemoryFormat::Contiguous).unwrap().as_strided(&[1, 4, 3, 3], &[0, 0, 3, 1], 0).unwrap();
        assert!(matches!(batch.conv1x1_out_with(&xs, &wsq, None, &o, &selfish, ConvKernel::Nchw), Err(Error::Overlap { .. })));
        assert!(matches!(batch.conv1x1_out_with(&xs, &wsq, None, &o, &view, ConvKernel::Nchw), Err(Error::InvalidArgument { .. })));
    }
}

#[test]
fn bad_convolution_input_is_a_typed_error() {
    for ctx in contexts() {
        let x = DeviceTensor::from_slice(ctx, &[1f32; 2 * 4 * 3 * 3], &[2, 4, 3, 3]).unwrap();
        let w = DeviceTensor::from_slice(ctx, &[1f32; 6 * 4], &[6, 4, 1, 1]).unwrap();
        let o = Conv1x1Options::default();
        let e = conv1x1(&x, &DeviceTensor::from_slice(ctx, &[1f32; 18], &[6, 3]).unwrap(), None, &o).unwrap_err();
        assert!(e.to_string().starts_with("conv1x1: weight shape [6, 3]"), "{e}");
        assert!(conv1x1(&x, &w, None, &Conv1x1Options { stride: (1, 0), ..o }).is_err());
        assert!(conv1x1(&x, &w, None, &Conv1x1Options { groups: 4, ..o }).is_err());
        assert!(conv1x1(&x, &w, Some(&DeviceTensor::from_slice(ctx, &[1f32; 5], &[5]).unwrap()), &o).is_err());
        let xh = DeviceTensor::from_slice(ctx, &[half::f16::ONE; 72], &[2, 4, 3, 3]).unwrap();
        assert!(matches!(conv1x1(&xh, &w, None, &o), Err(Error::InvalidArgument { .. })));
        // A 2-d weight is conv1x1's form only: PyTorch's conv2d refuses it ("weight should have
        // at least three dimensions"), on the host and the device alike.
        use strided_wgpu::{Conv2d, Conv2dOptions};
        let w2 = DeviceTensor::from_slice(ctx, &[1f32; 6 * 4], &[6, 4]).unwrap();
        let r = x.conv2d(&w2, None, &Conv2dOptions::default()).map(drop);
        assert!(matches!(r, Err(Error::InvalidArgument { .. })), "{}: {r:?}", name(ctx));
        let r = x.download().unwrap().conv2d(&w2.download().unwrap(), None, &Conv2dOptions::default()).map(drop);
        assert!(matches!(r, Err(Error::InvalidArgument { .. })), "host: {r:?}");
        assert_eq!(conv1x1(&x, &w2, None, &o).unwrap().download().unwrap().to_vec::<f32>().unwrap(), vec![4.0; 2 * 6 * 9]);
        // A good call on the same context still works afterwards.
        let y = conv1x1(&x, &w, None, &o).unwrap();
        assert_eq!(y.download().unwrap().to_vec::<f32>().unwrap(), vec![4.0; 2 * 6 * 9]);
        // PyTorch rejects an empty image (the kernel exceeds the padded input) and accepts an
        // empty batch.
        let z = DeviceTensor::zeros(ctx, &[1, 4, 0, 3], DType::F32, MemoryFormat::Contiguous).unwrap();
        assert!(conv1x1(&z, &w, None, &o).unwrap_err().to_string().contains("exceeds the padded input"));
        let z = DeviceTensor::zeros(ctx, &[0, 4, 3, 3], DType::F32, MemoryFormat::Contiguous).unwrap();
        assert_eq!(conv1x1(&z, &w, None, &o).unwrap().shape(), &[0, 6, 3, 3]);
    }
}

/// PyTorch's empty-input rules: an empty batch is an empty result, and so is an input of no
/// channels, whose output has no channels either (`calc_output_size`; it was refused where
/// the batch was not empty, and had K channels where it was); an empty image that padding
/// gives an output size (the depthwise kernels then clamped rows to -1 and read before the
/// input) and fewer filters than groups (K = 0) are `InvalidArgument` on the host and every
/// adapter, through the automatic choice and every forced kernel.
#[test]
fn empty_images_channels_and_filters_are_typed_errors() {
    use strided_wgpu::advanced::{conv2d_with, ConvKernel};
    use strided_wgpu::{Conv2d, Conv2dOptions};
    let pad = |p: (usize, usize), groups: usize| Conv2dOptions { padding: p, groups, ..Conv2dOptions::default() };
    // (input, weight, options)
    let cases: [([usize; 4], [usize; 4], Conv2dOptions); 4] = [
        ([1, 4, 0, 6], [4, 1, 3, 3], pad((2, 1), 4)),
        ([2, 4, 5, 0], [8, 4, 1, 1], pad((0, 1), 1)),
        ([1, 4, 5, 5], [0, 4, 3, 3], pad((1, 1), 1)),
        ([1, 4, 5, 5], [2, 1, 3, 3], pad((1, 1), 4)),
    ];
    let host = |s: &[usize]| HostTensor::zeros(s, DType::F32, MemoryFormat::Contiguous).unwrap();
    for (x, w, o) in &cases {
        let r = host(x).conv2d(&host(w), None, o).map(drop);
        assert!(matches!(r, Err(Error::InvalidArgument { .. })), "host {x:?} {w:?}: {r:?}");
    }
    let empty_batch = host(&[0, 4, 5, 5]).conv2d(&host(&[6, 4, 3, 3]), None, &pad((1, 1), 1)).unwrap();
    assert_eq!(empty_batch.shape(), &[0, 6, 5, 5]);
    // No channels: PyTorch's empty result of no channels (`calc_output_size`), in a batch or
    // not (a batch of images was refused), with a bias of K too.
    for n in [0, 2] {
        assert_eq!(host(&[n, 0, 5, 5]).conv2d(&host(&[4, 0, 3, 3]), Some(&host(&[4])), &pad((0, 0), 1)).unwrap().shape(), &[n, 0, 3, 3]);
    }
    // No channels and no pixels, with padding: PyTorch's empty result (its zero-channel path
    // comes before the empty-image refusal).
    assert_eq!(host(&[1, 0, 0, 0]).conv2d(&host(&[4, 0, 1, 1]), None, &pad((1, 1), 1)).unwrap().shape(), &[1, 0, 2, 2]);
    for ctx in contexts() {
        let dev = |s: &[usize]| DeviceTensor::zeros(ctx, s, DType::F32, MemoryFormat::Contiguous).unwrap();
        for (x, w, o) in &cases {
            let (x, w) = (dev(x), dev(w));
            let r = x.conv2d(&w, None, o).map(drop);
            assert!(matches!(r, Err(Error::InvalidArgument { .. })), "{} {:?} {:?}: {r:?}", name(ctx), x.shape(), w.shape());
            for kernel in ConvKernel::ALL {
                let r = conv2d_with(&x, &w, None, o, kernel).map(drop);
                assert!(matches!(r, Err(Error::InvalidArgument { .. })), "{} {kernel:?} {:?} {:?}: {r:?}", name(ctx), x.shape(), w.shape());
            }
        }
        assert_eq!(dev(&[0, 4, 5, 5]).conv2d(&dev(&[6, 4, 3, 3]), None, &pad((1, 1), 1)).unwrap().shape(), &[0, 6, 5, 5]);
        for n in [0, 2] {
            let (x, w) = (dev(&[n, 0, 5, 5]), dev(&[4, 0, 3, 3]));
            assert_eq!(x.conv2d(&w, Some(&dev(&[4])), &pad((0, 0), 1)).unwrap().shape(), &[n, 0, 3, 3], "{}", name(ctx));
            for kernel in ConvKernel::ALL {
                match conv2d_with(&x, &w, None, &pad((0, 0), 1), kernel) {
                    Ok(y) => assert_eq!(y.shape(), &[n, 0, 3, 3], "{} {kernel:?}", name(ctx)),
                    Err(e) => assert!(matches!(e, Error::Unsupported { .. }), "{} {kernel:?}: {e}", name(ctx)),
                }
            }
        }
        // An empty convolution passes the shape checks with any kernel size (PyTorch's
        // `F.conv2d(empty(0, 0, 1, 1), empty(1, 0, 2**62, 1), padding=(2**61, 0))` is [0, 0, 2,
        // 1]): every kernel's eligibility and the tuner take it without an overflow (the direct
        // kernels' tiling multiplied the taps past usize and divided by 0).
        let (x, w) = (dev(&[0, 0, 1, 1]), dev(&[1, 0, 1 << 62, 1]));
        let huge = pad((1 << 61, 0), 1);
        assert_eq!(x.conv2d(&w, None, &huge).unwrap().shape(), &[0, 0, 2, 1], "{}", name(ctx));
        for kernel in ConvKernel::ALL {
            match conv2d_with(&x, &w, None, &huge, kernel) {
                Ok(y) => assert_eq!(y.shape(), &[0, 0, 2, 1], "{} {kernel:?}", name(ctx)),
                // A forced kernel that cannot walk such a window: refused, as for any input.
                Err(e) => assert!(matches!(e, Error::Unsupported { .. } | Error::Limit { .. }), "{} {kernel:?}: {e}", name(ctx)),
            }
        }
        assert!(!ctx.tune_conv2d(&x, &w, None, &huge).unwrap(), "{}: nothing to measure", name(ctx));
    }
    assert_eq!(host(&[0, 0, 1, 1]).conv2d(&host(&[1, 0, 1 << 62, 1]), None, &pad((1 << 61, 0), 1)).unwrap().shape(), &[0, 0, 2, 1]);
}
