//! The elementwise rows of `bench` (f32 unless named): `add` of two [8,64,56,56]; `add` of a
//! [1,64,1,1] bias to [8,64,56,56]; `add` of a channels-last and an NCHW [8,64,56,56] (mixed
//! layouts); in-place `relu_`; `to(f16)` of [32,256,56,56] (and the same conversion through
//! `copy_`); f32 NCHW into f16 NHWC through `copy_` (the converting transpose kernel) and
//! through the elementwise general kernel; the image pipeline (RGBA8 HWC u8 [16,224,224,4] to normalized f32 NCHW, one
//! `addcmul`). Each row writes a preallocated destination (`out=`), so that timing measures
//! the kernels, not allocation. GB/s counts every byte read and written; timing, warm-up and
//! the same-bytes copy ratio as for the copy rows.

use strided_wgpu::{DeviceTensor, DType, GpuContext, MemoryFormat, Op, Result, Scalar, Strided};
use strided_wgpu::advanced::GpuTimer;
use strided_wgpu::ops::{Input, Target};
use strided_wgpu::advanced::{CopyPath, ElementwisePath};

use crate::cli::measure::{measure, Case, Row};

/// Deterministic values in [-1, 1).
fn filled(ctx: &GpuContext, shape: &[usize], format: MemoryFormat) -> Result<DeviceTensor> {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n).map(|i| ((i * 37) % 101) as f32 / 50.5 - 1.0).collect();
    let t = DeviceTensor::from_slice(ctx, &v, shape)?;
    t.contiguous(format)
}

/// A case running `op` on `inputs` into `out`.
fn case(op: &str, shape: &[usize], dtype: DType, the_op: Op, inputs: Vec<DeviceTensor>, out: DeviceTensor, in_place: bool) -> Case {
    let bytes = (inputs.iter().map(|t| t.numel() * t.dtype().size()).sum::<usize>() + out.numel() * out.dtype().size()) as f64;
    Case {
        op: op.into(),
        shape: shape.to_vec(),
        dtype,
        bytes,
        note: String::new(),
        work: Box::new(move |b| {
            let ins: Vec<Input<'_, DeviceTensor>> = inputs.iter().map(Input::Tensor).collect();
            let target = if in_place { Target::InPlace } else { Target::Out(&out) };
            b.elementwise(the_op, &ins, target).map(drop)
        }),
    }
}

/// Every elementwise row.
pub fn rows(ctx: &GpuContext, warm: usize) -> Result<Vec<Row>> {
    let timer = GpuTimer::new(ctx)?;
    let nchw = MemoryFormat::Contiguous;
    let s = [8, 64, 56, 56];
    let x = filled(ctx, &s, nchw)?;
    let y = filled(ctx, &s, nchw)?;
    let out = DeviceTensor::empty(ctx, &s, DType::F32, nchw)?;
    let add = Op::Add { alpha: Scalar::Int(1) };
    let mut cases = vec![case("add", &s, DType::F32, add, vec![x.clone(), y.clone()], out.clone(), false)];
    let bias = filled(ctx, &[1, 64, 1, 1], nchw)?;
    cases.push(case("add_bias", &s, DType::F32, add, vec![x.clone(), bias], out.clone(), false));
    let xl = filled(ctx, &s, MemoryFormat::ChannelsLast)?;
    let outl = DeviceTensor::empty(ctx, &s, DType::F32, MemoryFormat::ChannelsLast)?;
    cases.push(case("add_mixed_layouts", &s, DType::F32, add, vec![xl, y.clone()], outl, false));
    let r = filled(ctx, &s, nchw)?;
    cases.push(case("relu_", &s, DType::F32, Op::Relu, vec![r.clone()], r, true));
    let big = [32, 256, 56, 56];
    let xb = filled(ctx, &big, nchw)?;
    let half = DeviceTensor::empty(ctx, &big, DType::F16, nchw)?;
    cases.push(case("to_f16", &big, DType::F32, Op::To(DType::F16), vec![xb.clone()], half.clone(), false));
    // The same conversion through copy_ (the copy kernels' converting path).
    cases.push(Case::copy("copy_f32_to_f16", &big, &half, &xb, CopyPath::Auto));
    // A converting batched transpose: f32 NCHW into f16 NHWC through copy_ (the converting
    // transpose kernel), and the same through the elementwise `to`'s general kernel.
    let nhwc = DeviceTensor::empty(ctx, &s, DType::F16, MemoryFormat::ChannelsLast)?;
    cases.push(Case::copy("copy_nchw_f32_to_nhwc_f16", &s, &nhwc, &x, CopyPath::Auto));
    let (h4, x4) = (nhwc.clone(), x.clone());
    cases.push(Case {
        note: "elementwise general kernel".into(),
        work: Box::new(move |b| b.elementwise_with(Op::To(DType::F16), &[Input::Tensor(&x4)], Target::Out(&h4), ElementwisePath::Gather { wg: 256, ept: 8 }).map(drop)),
        ..Case::copy("to_nhwc_f16_gather", &s, &nhwc, &x, CopyPath::Auto)
    });
    // The image pipeline: (x / 255 - mean[c]) / std[c] = x * scale[c] + shift[c].
    let img_shape = [16, 224, 224, 4];
    let n: usize = img_shape.iter().product();
    let img = DeviceTensor::from_slice(ctx, &(0..n).map(|i| (i * 7 % 256) as u8).collect::<Vec<_>>(), &img_shape)?;
    let view = img.narrow(3, 0, 3)?.permute(&[0, 3, 1, 2])?;
    let (mean, std) = ([0.485f32, 0.456, 0.406], [0.229f32, 0.224, 0.225]);
    let scale = DeviceTensor::from_slice(ctx, &std.map(|s| 1.0 / (255.0 * s)), &[1, 3, 1, 1])?;
    let shift = DeviceTensor::from_slice(ctx, &[0, 1, 2].map(|c| -mean[c] / std[c]), &[1, 3, 1, 1])?;
    let planes = DeviceTensor::empty(ctx, &[16, 3, 224, 224], DType::F32, nchw)?;
    let mut pipeline = case("image_pipeline", &img_shape, DType::U8, Op::Addcmul { value: Scalar::Int(1) }, vec![shift, view.clone(), scale], planes, false);
    // Bytes: the three channels read, the planes written (the 24 bytes of scale and shift aside).
    pipeline.bytes = (view.numel() + view.numel() * 4) as f64;
    cases.push(pipeline);
    measure(ctx, &timer, cases, warm)
}
