//! The image pipeline of examples/image_pipeline.rs: an RGBA8 `[N, H, W, 4]` batch becomes
//! normalized f32 NCHW `[N, 3, H, W]`, `(x / 255 - mean[c]) / std[c]` with ImageNet's mean and
//! std, alpha dropped, as one `addcmul` from a `u8` view into a preallocated contiguous NCHW
//! tensor. Checked on every adapter against a plain f64 loop, on host tensors too; the output's
//! layout; alpha never changing a bit of the result; and one recorded op, one dispatch.
//!
//! The dispatch count: the crate has no dispatch counter, so the test holds it by construction.
//! The whole pipeline is recorded into the test's own encoder (`record_into`) by exactly one
//! `Batch::elementwise` call, the only recording call, and submitted once; the elementwise
//! kernel records one dispatch per piece of the op and splits an op into pieces only when a
//! binding exceeds the adapter's `max_storage_buffer_binding_size` (or a count exceeds u32 or
//! the workgroup grid), which the test asserts does not happen for its sizes. The upload of the
//! image and the constants is `write_buffer`, and the download of a contiguous tensor a buffer
//! copy: no other kernel runs.

mod common;

use common::gpu::{contexts, name};
use strided_wgpu::{DeviceTensor, DType, Elementwise, GpuContext, HostTensor, MemoryFormat, Op, Scalar, Strided};
use strided_wgpu::ops::{Input, Target};

const MEAN: [f64; 3] = [0.485, 0.456, 0.406];
const STD: [f64; 3] = [0.229, 0.224, 0.225];

/// `[N, H, W]`: odd sizes (W = 1, H = 3, N = 1, widths not a multiple of 4) and one image batch
/// in which every channel takes every u8 value.
const SIZES: &[[usize; 3]] = &[[1, 1, 1], [1, 3, 1], [1, 1, 7], [2, 3, 5], [3, 7, 1], [1, 16, 16], [2, 64, 48]];

/// `scale = 1 / (255 std)`, `shift = -mean / std`, rounded once to f32.
fn coefficients() -> (Vec<f32>, Vec<f32>) {
    ((0..3).map(|c| (1.0 / (255.0 * STD[c])) as f32).collect(), (0..3).map(|c| (-MEAN[c] / STD[c]) as f32).collect())
}

/// A deterministic RGBA pattern; `alpha` gives the alpha of pixel `i`.
fn pattern(n: usize, h: usize, w: usize, alpha: impl Fn(usize) -> u8) -> Vec<u8> {
    (0..n * h * w).flat_map(|i| [i as u8, (i * 7 + 3) as u8, (255 - i % 256) as u8, alpha(i)]).collect()
}

/// The plain CPU loop in f64.
fn reference(rgba: &[u8], n: usize, h: usize, w: usize) -> Vec<f64> {
    let mut out = vec![0.0; n * 3 * h * w];
    for b in 0..n {
        for c in 0..3 {
            for y in 0..h {
                for x in 0..w {
                    let v = rgba[((b * h + y) * w + x) * 4 + c] as f64;
                    out[((b * 3 + c) * h + y) * w + x] = (v / 255.0 - MEAN[c]) / STD[c];
                }
            }
        }
    }
    out
}

fn check_close(what: &str, got: &[f32], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: element count");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let err = (g as f64 - w).abs();
        assert!(err <= 1e-6 + 1e-5 * w.abs(), "{what}: element {i}: got {g}, want {w} (|err| {err:.3e})");
    }
}

fn check_layout<T: Strided>(what: &str, out: &T, [n, h, w]: [usize; 3]) {
    assert_eq!(out.dtype(), DType::F32, "{what}");
    assert_eq!(out.shape(), &[n, 3, h, w], "{what}");
    assert_eq!(out.strides(), &[(3 * h * w) as isize, (h * w) as isize, w as isize, 1], "{what}: contiguous NCHW strides");
    assert_eq!(out.storage_offset(), 0, "{what}");
    assert!(out.is_contiguous(), "{what}");
}

/// The op and its inputs over the `[N, 3, H, W]` u8 view of the RGBA image (no copy).
fn addcmul<'a, T: Strided>(shift: &'a T, x: &'a T, scale: &'a T) -> (Op, [Input<'a, T>; 3]) {
    (Op::Addcmul { value: Scalar::Float(1.0) }, [Input::Tensor(shift), Input::Tensor(x), Input::Tensor(scale)])
}

/// The pipeline through the `Elementwise` trait, the same code for host and device tensors.
fn normalize_into<T: Elementwise>(rgba: &T, shift: &T, scale: &T, out: &T) -> T {
    let x = rgba.narrow(3, 0, 3).unwrap().permute(&[0, 3, 1, 2]).unwrap();
    assert_eq!(x.dtype(), DType::U8);
    let (op, inputs) = addcmul(shift, &x, scale);
    T::run(op, &inputs, Target::Out(out)).unwrap()
}

fn host(rgba: &[u8], [n, h, w]: [usize; 3]) -> HostTensor {
    let (scale, shift) = coefficients();
    let img = HostTensor::from_vec(rgba.to_vec(), &[n, h, w, 4]).unwrap();
    let out = HostTensor::zeros(&[n, 3, h, w], DType::F32, MemoryFormat::Contiguous).unwrap();
    let scale = HostTensor::from_vec(scale, &[1, 3, 1, 1]).unwrap();
    let shift = HostTensor::from_vec(shift, &[1, 3, 1, 1]).unwrap();
    normalize_into(&img, &shift, &scale, &out)
}

/// The pipeline on the device, recorded into the test's own encoder by one `elementwise`
/// call and submitted once; returns the output's elements.
fn device(ctx: &GpuContext, rgba: &[u8], [n, h, w]: [usize; 3]) -> (DeviceTensor, Vec<f32>) {
    let (scale, shift) = coefficients();
    let img = DeviceTensor::from_slice(ctx, rgba, &[n, h, w, 4]).unwrap();
    let scale = DeviceTensor::from_slice(ctx, &scale, &[1, 3, 1, 1]).unwrap();
    let shift = DeviceTensor::from_slice(ctx, &shift, &[1, 3, 1, 1]).unwrap();
    let out = DeviceTensor::empty(ctx, &[n, 3, h, w], DType::F32, MemoryFormat::Contiguous).unwrap();
    let x = img.narrow(3, 0, 3).unwrap().permute(&[0, 3, 1, 2]).unwrap();
    assert!(x.shares_storage(&img), "the RGB view is a view of the RGBA storage, not a copy");
    assert_eq!(x.strides(), &[(4 * h * w) as isize, 1, (4 * w) as isize, 4]);

    // One piece, hence one dispatch: every binding within the adapter's limit, counts in u32.
    let limits = ctx.adapter();
    for bytes in [img.buffer().size(), out.buffer().size()] {
        assert!(bytes <= limits.max_storage_buffer_binding_size, "{}: a binding of {bytes} bytes would split the op", name(ctx));
    }
    assert!(out.numel() < u32::MAX as usize / 8 && out.numel().div_ceil(256) <= limits.max_compute_workgroups_per_dimension as usize);

    let mut encoder = ctx.device().create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("image pipeline") });
    let mut batch = ctx.record_into(&mut encoder);
    let (op, inputs) = addcmul(&shift, &x, &scale);
    let written = batch.elementwise(op, &inputs, Target::Out(&out)).unwrap(); // the one recorded op
    batch.end().unwrap();
    ctx.queue().submit([encoder.finish()]);
    assert!(written.shares_storage(&out));
    check_layout(&name(ctx), &written, [n, h, w]);
    let got = out.download().unwrap().to_vec::<f32>().unwrap();
    (out, got)
}

#[test]
fn the_host_path_matches_the_f64_loop() {
    for &[n, h, w] in SIZES {
        let rgba = pattern(n, h, w, |i| (i * 13) as u8);
        let out = host(&rgba, [n, h, w]);
        check_layout("host", &out, [n, h, w]);
        check_close(&format!("host {:?}", [n, h, w]), &out.to_vec::<f32>().unwrap(), &reference(&rgba, n, h, w));
    }
}

#[test]
fn the_device_path_matches_the_f64_loop_and_the_host() {
    for ctx in contexts() {
        for &[n, h, w] in SIZES {
            let what = format!("{} {:?}", name(ctx), [n, h, w]);
            let rgba = pattern(n, h, w, |i| (i * 13) as u8);
            let want = reference(&rgba, n, h, w);
            let (out, got) = device(ctx, &rgba, [n, h, w]);
            check_layout(&what, &out, [n, h, w]);
            check_close(&what, &got, &want);
            // The host runs the same code over HostTensor; both within the tolerance of the f64
            // loop, and of each other (a driver may fuse the multiply-add, the host does not).
            let on_host = host(&rgba, [n, h, w]).to_vec::<f32>().unwrap();
            check_close(&format!("{what} against the host"), &got, &on_host.iter().map(|&v| v as f64).collect::<Vec<_>>());
            let same = got.iter().zip(&on_host).filter(|(a, b)| a.to_bits() == b.to_bits()).count();
            println!("{what}: {same} of {} elements bit-identical to the host's", got.len());
        }
    }
}

#[test]
fn the_out_of_place_run_form_matches_the_recorded_one() {
    // `DeviceTensor::run(.., Target::Out(&out))` (the Elementwise trait) records the same op.
    for ctx in contexts() {
        let [n, h, w] = [2, 3, 5];
        let rgba = pattern(n, h, w, |i| i as u8);
        let (_, recorded) = device(ctx, &rgba, [n, h, w]);
        let (scale, shift) = coefficients();
        let img = DeviceTensor::from_slice(ctx, &rgba, &[n, h, w, 4]).unwrap();
        let scale = DeviceTensor::from_slice(ctx, &scale, &[1, 3, 1, 1]).unwrap();
        let shift = DeviceTensor::from_slice(ctx, &shift, &[1, 3, 1, 1]).unwrap();
        let out = DeviceTensor::empty(ctx, &[n, 3, h, w], DType::F32, MemoryFormat::Contiguous).unwrap();
        let written = normalize_into(&img, &shift, &scale, &out);
        check_layout(&name(ctx), &written, [n, h, w]);
        let got = out.download().unwrap().to_vec::<f32>().unwrap();
        assert_eq!(got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), recorded.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), "{}", name(ctx));
    }
}

#[test]
fn alpha_never_changes_a_bit_of_the_result() {
    let alphas: [fn(usize) -> u8; 4] = [|_| 0, |_| 255, |i| (i * 131 + 17) as u8, |i| if i % 2 == 0 { 0x80 } else { 0x7f }];
    for &[n, h, w] in SIZES {
        let bits = |v: Vec<f32>| v.into_iter().map(f32::to_bits).collect::<Vec<_>>();
        let host_first = bits(host(&pattern(n, h, w, alphas[0]), [n, h, w]).to_vec::<f32>().unwrap());
        for a in &alphas[1..] {
            assert_eq!(bits(host(&pattern(n, h, w, a), [n, h, w]).to_vec::<f32>().unwrap()), host_first, "host {:?}", [n, h, w]);
        }
        for ctx in contexts() {
            let first = bits(device(ctx, &pattern(n, h, w, alphas[0]), [n, h, w]).1);
            for a in &alphas[1..] {
                assert_eq!(bits(device(ctx, &pattern(n, h, w, a), [n, h, w]).1), first, "{} {:?}", name(ctx), [n, h, w]);
            }
        }
    }
}
