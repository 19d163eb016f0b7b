//! 1x1 convolution on the device against the CPU reference: random geometry, groups, ReLU,
//! bias, and input layouts, compared with a tolerance scaled to each output's sum of |terms|.

mod common;

use common::gpu::{contexts, name};
use common::rng::Rng;
use strided_wgpu::{conv1x1, conv1x1_cpu, Conv1x1Options, DType, DeviceTensor, Error, GpuContext, HostTensor, MemoryFormat, Strided};

fn to_device(ctx: &GpuContext, h: &HostTensor) -> DeviceTensor {
    let storage = h.as_strided(&[h.storage_len()], &[1], 0).and_then(|s| s.to_vec::<f32>()).unwrap();
    DeviceTensor::from_slice(ctx, &storage, &[storage.len()]).and_then(|d| d.as_strided(h.shape(), h.strides(), h.storage_offset())).unwrap()
}

fn abs(h: &HostTensor) -> HostTensor {
    let v: Vec<f32> = h.to_vec::<f32>().unwrap().into_iter().map(f32::abs).collect();
    HostTensor::from_vec(v, h.shape()).unwrap()
}

#[test]
fn random_convolutions_match_cpu() {
    for ctx in contexts() {
        let mut rng = Rng(42);
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
            };
            let vals = |rng: &mut Rng, len: usize| -> Vec<f32> { (0..len).map(|_| (rng.below(2001) as f32 - 1000.0) / 500.0).collect() };
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
            let want = conv1x1_cpu(&x, &wt, b.as_ref(), &o).unwrap();
            let scale = conv1x1_cpu(&abs(&x), &abs(&wt), b.as_ref().map(abs).as_ref(), &Conv1x1Options { relu: false, ..o }).unwrap();
            let got = conv1x1(&to_device(ctx, &x), &to_device(ctx, &wt), b.as_ref().map(|b| to_device(ctx, b)).as_ref(), &o).unwrap();
            assert_eq!(got.layout(), want.layout(), "case {case}: output layout");
            let (g, wv, s) = (got.download().unwrap().to_vec::<f32>().unwrap(), want.to_vec::<f32>().unwrap(), scale.to_vec::<f32>().unwrap());
            for i in 0..g.len() {
                assert!(
                    approx::abs_diff_eq!(g[i], wv[i], epsilon = 1e-5 * s[i] + 1e-6),
                    "{} case {case} ({n},{c},{h},{w}) k {k} {o:?}: output {i}: {} vs {}",
                    name(ctx),
                    g[i],
                    wv[i]
                );
            }
        }
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
        assert!(matches!(conv1x1(&xh, &w, None, &o), Err(Error::DType { .. })));
        // A good call on the same context still works afterwards.
        let y = conv1x1(&x, &w, None, &o).unwrap();
        assert_eq!(y.download().unwrap().to_vec::<f32>().unwrap(), vec![4.0; 2 * 6 * 9]);
        let z = DeviceTensor::zeros(ctx, &[1, 4, 0, 3], DType::F32, MemoryFormat::Contiguous).unwrap();
        assert_eq!(conv1x1(&z, &w, None, &o).unwrap().shape(), &[1, 6, 0, 3]);
    }
}
