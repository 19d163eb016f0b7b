//! The pooling and shape rows of `bench` (`--only pool`): max pooling 3x3 s2 of
//! [8, 64, 112, 112], average pooling 2x2 of [8, 64, 56, 56], adaptive average pooling to 1x1
//! of [8, 512, 7, 7], a `cat` of two [8, 64, 56, 56] along C (the copies `cat` records) and a
//! bilinear x2 resize of [8, 64, 56, 56], each on an NCHW and a channels-last input, f32. Each
//! row's `ratio_to_copy` compares it with a contiguous copy moving the same bytes (input read
//! plus output written), timed in the same run.

use strided_wgpu::{AvgPool2dOptions, DeviceTensor, DType, GpuContext, MaxPool2dOptions, MemoryFormat, Result, Strided};
use strided_wgpu::advanced::GpuTimer;
use strided_wgpu::ops::{InterpolateMode, InterpolateOptions};

use crate::cli::measure::{measure, Case};

/// Every row of the pooling benchmark.
pub fn rows(ctx: &GpuContext, warm: usize) -> Result<Vec<crate::cli::measure::Row>> {
    let timer = GpuTimer::new(ctx)?;
    let mut cases = Vec::new();
    for (format, tag) in [(MemoryFormat::Contiguous, "nchw"), (MemoryFormat::ChannelsLast, "nhwc")] {
        let input = |shape: &[usize]| DeviceTensor::zeros(ctx, shape, DType::F32, format);
        let bytes = |x: &[usize], y: &[usize]| ((x.iter().product::<usize>() + y.iter().product::<usize>()) * 4) as f64;
        let case = |op: &str, shape: &[usize], out: &[usize], work: crate::cli::measure::Work| Case { op: format!("{op}_{tag}"), shape: shape.to_vec(), dtype: DType::F32, bytes: bytes(shape, out), note: String::new(), work };

        let x = input(&[8, 64, 112, 112])?;
        let o = MaxPool2dOptions { stride: Some((2, 2)), padding: (1, 1), ..MaxPool2dOptions::new((3, 3)) };
        cases.push(case("max_pool2d_3x3s2", &[8, 64, 112, 112], &[8, 64, 56, 56], Box::new(move |b| b.max_pool2d(&x, &o).map(drop))));

        let x = input(&[8, 64, 56, 56])?;
        let o = AvgPool2dOptions::new((2, 2));
        cases.push(case("avg_pool2d_2x2", &[8, 64, 56, 56], &[8, 64, 28, 28], Box::new(move |b| b.avg_pool2d(&x, &o).map(drop))));

        let x = input(&[8, 512, 7, 7])?;
        cases.push(case("adaptive_avg_1x1", &[8, 512, 7, 7], &[8, 512, 1, 1], Box::new(move |b| b.adaptive_avg_pool2d(&x, (1, 1)).map(drop))));

        // What cat(&[&a, &c], 1) records: one copy into each narrowed view of the output.
        let (a, c) = (input(&[8, 64, 56, 56])?, input(&[8, 64, 56, 56])?);
        let out = DeviceTensor::empty(ctx, &[8, 128, 56, 56], DType::F32, format)?;
        let (lo, hi) = (out.narrow(1, 0, 64)?, out.narrow(1, 64, 64)?);
        let mut cat = case("cat_dim1", &[8, 64, 56, 56], &[8, 128, 56, 56], Box::new(move |b| b.copy_(&lo, &a).and_then(|_| b.copy_(&hi, &c))));
        cat.bytes = bytes(&[16, 64, 56, 56], &[8, 128, 56, 56]);
        cases.push(cat);

        let x = input(&[8, 64, 56, 56])?;
        let o = InterpolateOptions::scale((2.0, 2.0), InterpolateMode::Bilinear { align_corners: false });
        cases.push(case("bilinear_x2", &[8, 64, 56, 56], &[8, 64, 112, 112], Box::new(move |b| b.interpolate(&x, &o).map(drop))));
    }
    measure(ctx, &timer, cases, warm)
}
