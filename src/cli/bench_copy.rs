//! The copy rows of `bench`: 64 MiB dense copies (the adapter's buffer copy and the crate's
//! vec4 kernel at its fastest shape), strided views, and memory-format conversions, each
//! batched transpose also through the adapter's default kernel.

use strided_wgpu::{DeviceTensor, DType, GpuContext, MemoryFormat, Result, Strided};
use strided_wgpu::advanced::GpuTimer;
use strided_wgpu::advanced::CopyPath;

use crate::cli::measure::{measure, Case, Row};

/// Every row of the copy benchmark.
pub fn rows(ctx: &GpuContext, warm: usize) -> Result<Vec<Row>> {
    let timer = GpuTimer::new(ctx)?;
    let f32s = |shape: &[usize]| DeviceTensor::zeros(ctx, shape, DType::F32, MemoryFormat::Contiguous);
    // 64 MiB dense copies: the adapter's buffer copy, and the crate's vec4 kernel with the
    // workgroup size and words per invocation that measure fastest here.
    let n = 16 << 20;
    let (a, b) = (f32s(&[n])?, f32s(&[n])?);
    let shapes = || [(8, 32), (64, 1), (64, 4), (64, 8), (256, 1), (256, 4), (256, 8)].into_iter().map(|(wg, wpt)| Case { note: format!("wg={wg} wpt={wpt}"), ..Case::copy("copy_kernel_vec4", &[n], &b, &a, CopyPath::Vec4 { wg, wpt }) });
    let tuned = measure(ctx, &timer, shapes().collect(), warm)?;
    let best = tuned.iter().enumerate().min_by(|x, y| x.1.median().total_cmp(&y.1.median())).map_or(0, |(i, _)| i);
    let mut cases = vec![Case::copy("device_copy", &[n], &b, &a, CopyPath::BufferCopy)];
    cases.extend(shapes().nth(best));
    // The crate's strided copies, through the path each plan selects (tuned first: recordings
    // never tune).
    // A batched transpose, whose kernel the tuner picks, is also timed through the adapter's
    // default kernel (what runs untuned), as the row `{op}_default`.
    let mut auto = |op: &str, shape: &[usize], dst: &DeviceTensor, src: &DeviceTensor| -> Result<()> {
        let default = ctx.copy_default(dst, src)?;
        let measured = ctx.tune_copy(dst, src)?;
        cases.push(Case::copy(op, shape, dst, src, CopyPath::Auto));
        if let (true, Some(path)) = (measured, default) {
            cases.push(Case { note: format!("{path:?}"), ..Case::copy(&format!("{op}_default"), shape, dst, src, path) });
        }
        Ok(())
    };
    let x = f32s(&[8, 64, 56, 56])?;
    let p = f32s(&[64, 128, 32, 8])?;
    let pv = p.permute(&[2, 0, 3, 1])?;
    auto("permute", &[64, 128, 32, 8], &DeviceTensor::empty(ctx, pv.shape(), DType::F32, MemoryFormat::Contiguous)?, &pv)?;
    let sv = x.slice(2, 0, 56, 2)?.slice(3, 0, 56, 2)?;
    auto("slice_step", &[8, 64, 56, 56], &DeviceTensor::empty(ctx, sv.shape(), DType::F32, MemoryFormat::Contiguous)?, &sv)?;
    let ev = f32s(&[1, 64, 1, 1])?.expand(&[8, 64, 56, 56])?;
    auto("expand", &[1, 64, 1, 1], &x, &ev)?;
    // Memory-format conversions (each a batched transpose; the kernel is tuned on first use).
    let formats: [(&[usize], DType, MemoryFormat); 5] = [
        (&[8, 64, 56, 56], DType::F32, MemoryFormat::ChannelsLast),
        (&[32, 256, 56, 56], DType::F32, MemoryFormat::ChannelsLast),
        (&[16, 3, 224, 224], DType::F32, MemoryFormat::ChannelsLast),
        (&[2, 32, 16, 56, 56], DType::F32, MemoryFormat::ChannelsLast3d),
        (&[32, 256, 56, 56], DType::F16, MemoryFormat::ChannelsLast),
    ];
    for (shape, dtype, format) in formats {
        let first = DeviceTensor::zeros(ctx, shape, dtype, MemoryFormat::Contiguous)?;
        let last = DeviceTensor::zeros(ctx, shape, dtype, format)?;
        let (to, back) = if shape.len() == 4 { ("nchw_to_nhwc", "nhwc_to_nchw") } else { ("ncdhw_to_ndhwc", "ndhwc_to_ncdhw") };
        auto(to, shape, &last, &first)?;
        if dtype == DType::F32 && shape.len() == 4 {
            auto(back, shape, &first, &last)?;
        }
    }
    measure(ctx, &timer, cases, warm)
}

