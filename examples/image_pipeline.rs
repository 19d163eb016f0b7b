//! The image pipeline users ask for: an RGBA8 HWC batch (`u8`, shape `[N, H, W, 4]`,
//! contiguous) becomes normalized `f32` NCHW (shape `[N, 3, H, W]`, contiguous NCHW),
//! `(x / 255 - mean[c]) / std[c]` on the RGB channels with ImageNet's mean and std, the alpha
//! channel dropped, in **one dispatch** on the device.
//!
//! How it works:
//!
//! * The input is a view, not a copy: `img.narrow(3, 0, 3)?.permute(&[0, 3, 1, 2])?` is the
//!   `[N, 3, H, W]` `u8` view over the RGBA storage (strides `[4HW, 1, 4W, 4]`): alpha is never
//!   part of it, so it is never read.
//! * The formula is rewritten as one fused multiply-add per element,
//!   `(x/255 - mean)/std = x * scale[c] + shift[c]` with `scale = 1/(255 std)` and
//!   `shift = -mean/std` (each computed in f64 and rounded once to f32), which is PyTorch's
//!   `addcmul`: `shift.addcmul(x, scale, value=1)`, with `shift` and `scale` `[1, 3, 1, 1]`
//!   tensors broadcast against `x`, and the `u8` input promoted to `f32` inside the kernel.
//! * The out-of-place result would follow the inputs' memory order (the view's channels-last
//!   order), so the op writes into a preallocated contiguous NCHW `f32` tensor (`out=`).
//!
//! The whole pipeline is therefore one call, `shift.addcmul_out(&x, &scale, 1.0, &out)` (on
//! the device it runs at once; `batch.addcmul_out(&shift, &x, &scale, 1.0, &out)` records the
//! same op into a batch): one elementwise kernel, one dispatch (the
//! kernel splits an op into several dispatches only when a binding exceeds the adapter's
//! `max_storage_buffer_binding_size`, far beyond any image batch here). The same code,
//! generic over [`Elementwise`], runs on [`HostTensor`]s (the CPU reference path).
//!
//! Rounding: the kernel computes `shift + (1 * x) * scale` in f32 (a multiply and an add, which
//! a driver may fuse), where the literal formula computes `(x / 255 - mean) / std` in f32 (a
//! division, a subtraction and a division, after rounding `mean` and `std` to f32). Over every
//! `u8` value and channel, against an f64 reference, the rewrite is off by at most 3.4e-7
//! (2.6 ulp, ulp taken at `max(|want|, 1)`) and the literal formula by at most 3.7e-7 (1.9 ulp):
//! both are a few ulp, but they round to the same f32 on only about a quarter of the values: the
//! result is not bit-identical to the literal formula (torchvision's `ToTensor` + `Normalize`). Near
//! `x / 255 = mean` both cancel: the absolute error stays that small, the relative error of the
//! (small) result does not. The example prints these figures.
//!
//! `cargo run --example image_pipeline` (any adapter; `WGPU_BACKEND` picks one; without an
//! adapter the device part is skipped loudly, and the host part still runs). It also runs as a
//! test under `cargo test`.

use std::time::Instant;

use strided_wgpu::{DeviceTensor, DType, Elementwise, Error, GpuContext, HostTensor, MemoryFormat, Result, Strided};
use strided_wgpu::advanced::GpuTimer;

/// ImageNet's per-channel mean and standard deviation (RGB).
pub const MEAN: [f64; 3] = [0.485, 0.456, 0.406];
/// ImageNet's per-channel standard deviation (RGB).
pub const STD: [f64; 3] = [0.229, 0.224, 0.225];

/// `(scale, shift)` with `scale[c] = 1 / (255 std[c])` and `shift[c] = -mean[c] / std[c]`,
/// computed in f64 and rounded once to f32.
pub fn coefficients() -> ([f32; 3], [f32; 3]) {
    let scale = std::array::from_fn(|c| (1.0 / (255.0 * STD[c])) as f32);
    let shift = std::array::from_fn(|c| (-MEAN[c] / STD[c]) as f32);
    (scale, shift)
}

/// The RGB channels of an `[N, H, W, 4]` RGBA image as an `[N, 3, H, W]` view (no copy).
pub fn rgb_nchw<T: Strided>(rgba: &T) -> Result<T> {
    rgba.narrow(3, 0, 3)?.permute(&[0, 3, 1, 2])
}

/// The pipeline for any tensor type (host or device): one elementwise op from the `u8` RGBA
/// view into `out`, an `[N, 3, H, W]` `f32` tensor; `shift` and `scale` are `[1, 3, 1, 1]` `f32`.
/// `out = shift + 1 * x * scale` is PyTorch's `torch.addcmul(shift, x, scale, value=1, out=out)`.
pub fn normalize_into<T: Elementwise>(rgba: &T, shift: &T, scale: &T, out: &T) -> Result<()> {
    let x = rgb_nchw(rgba)?;
    shift.addcmul_out(&x, scale, 1.0, out)
}

/// `[N, H, W, 4]` -> `[N, 3, H, W]`.
pub fn nchw_shape(rgba: &[usize]) -> [usize; 4] {
    [rgba[0], 3, rgba[1], rgba[2]]
}

/// The pipeline on host tensors.
pub fn normalize_host(rgba: &HostTensor) -> Result<HostTensor> {
    let (scale, shift) = coefficients();
    let scale = HostTensor::from_vec(scale.to_vec(), &[1, 3, 1, 1])?;
    let shift = HostTensor::from_vec(shift.to_vec(), &[1, 3, 1, 1])?;
    let out = HostTensor::zeros(&nchw_shape(rgba.shape()), DType::F32, MemoryFormat::Contiguous)?;
    normalize_into(rgba, &shift, &scale, &out)?;
    Ok(out)
}

/// The device's constants and output for one image shape.
pub struct DevicePipeline {
    /// `[1, 3, 1, 1]` f32.
    pub scale: DeviceTensor,
    /// `[1, 3, 1, 1]` f32.
    pub shift: DeviceTensor,
    /// `[N, 3, H, W]` f32, contiguous NCHW.
    pub out: DeviceTensor,
}

impl DevicePipeline {
    /// Uploads the constants and allocates the output for `[N, H, W, 4]` images.
    pub fn new(ctx: &GpuContext, rgba_shape: &[usize]) -> Result<DevicePipeline> {
        let (scale, shift) = coefficients();
        Ok(DevicePipeline {
            scale: DeviceTensor::from_slice(ctx, &scale, &[1, 3, 1, 1])?,
            shift: DeviceTensor::from_slice(ctx, &shift, &[1, 3, 1, 1])?,
            out: DeviceTensor::empty(ctx, &nchw_shape(rgba_shape), DType::F32, MemoryFormat::Contiguous)?,
        })
    }

    /// Records the pipeline into `batch`: one op (`addcmul_out`, as [`normalize_into`] runs
    /// it), one dispatch; returns the output.
    pub fn record(&self, batch: &mut strided_wgpu::Batch<'_>, rgba: &DeviceTensor) -> Result<DeviceTensor> {
        let x = rgb_nchw(rgba)?;
        batch.addcmul_out(&self.shift, &x, &self.scale, 1.0, &self.out)?;
        Ok(self.out.clone())
    }

    /// Runs the pipeline on `rgba` and waits for it.
    pub fn run(&self, rgba: &DeviceTensor) -> Result<DeviceTensor> {
        let mut batch = rgba.context().batch();
        let out = self.record(&mut batch, rgba)?;
        batch.submit_and_wait()?;
        Ok(out)
    }
}

/// A deterministic RGBA8 pattern of shape `[n, h, w, 4]`; every channel takes every `u8`
/// value once the image has 256 pixels or more, and alpha varies too (it must not matter).
pub fn pattern(n: usize, h: usize, w: usize) -> Vec<u8> {
    (0..n * h * w)
        .flat_map(|i| {
            let (b, y, x) = (i / (h * w), i / w % h, i % w);
            [(x * 5 + y * 3 + b * 7) as u8, (i * 7 + 3) as u8, (255 - i % 256) as u8, (x ^ (y * 3) ^ b) as u8]
        })
        .collect()
}

/// The plain CPU loop, in f64: `(x / 255 - mean[c]) / std[c]` into `[n, 3, h, w]`.
pub fn reference(rgba: &[u8], n: usize, h: usize, w: usize) -> Vec<f64> {
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

/// The largest `|got - want|`.
pub fn max_abs_error(got: &[f32], want: &[f64]) -> f64 {
    got.iter().zip(want).map(|(&g, &w)| (g as f64 - w).abs()).fold(0.0, f64::max)
}

/// The largest error of the fused formula and of the literal one, over every `u8` value and
/// channel, in f32 against f64: `(max abs, max ulp)` for each, the ulp taken at
/// `max(|want|, 1)` (1 ulp = 1.19e-7 below 1, 2.38e-7 from 2 to 4), so that the cancellation
/// near `x / 255 = mean` does not make a tiny result's ulp the unit; and how many of the 768
/// values the two formulas round to the same f32.
pub fn rounding_study() -> ([(f64, f64); 2], usize) {
    let (scale, shift) = coefficients();
    let ulp = |w: f64| {
        let f = (w.abs() as f32).max(1.0);
        (f32::from_bits(f.to_bits() + 1) - f) as f64
    };
    let mut worst = [(0.0f64, 0.0f64); 2];
    let mut same = 0;
    for c in 0..3 {
        for v in 0..=255u8 {
            let want = (v as f64 / 255.0 - MEAN[c]) / STD[c];
            let fused = shift[c] + v as f32 * scale[c];
            let literal = (v as f32 / 255.0 - MEAN[c] as f32) / STD[c] as f32;
            same += (fused == literal) as usize;
            for (k, got) in [fused, literal].into_iter().enumerate() {
                let e = (got as f64 - want).abs();
                worst[k] = (worst[k].0.max(e), worst[k].1.max(e / ulp(want)));
            }
        }
    }
    (worst, same)
}

/// What a run found.
pub struct Report {
    /// Max abs error of the host path against the f64 loop.
    pub host_error: f64,
    /// The adapter, max abs error against the f64 loop, wall ms per run, GPU ms (timestamps
    /// or wall clock) of the recorded op; `None` without an adapter.
    pub device: Option<(String, f64, f64, f64)>,
}

/// Runs the pipeline on `[n, h, w, 4]` on the host and (given a context) on the device, and
/// checks both against the f64 loop; an error when either is off by more than
/// `1e-6 + 1e-5 |want|`.
pub fn run(ctx: Option<&GpuContext>, n: usize, h: usize, w: usize) -> Result<Report> {
    let data = pattern(n, h, w);
    let want = reference(&data, n, h, w);
    let check = |what: &'static str, t: &HostTensor| -> Result<f64> {
        let got = t.to_vec::<f32>()?;
        // A NaN never passes the comparison.
        let bad = got.iter().zip(&want).position(|(&g, &w)| (g as f64 - w).is_nan() || (g as f64 - w).abs() > 1e-6 + 1e-5 * w.abs());
        if let Some(i) = bad {
            return Err(Error::Gpu { op: what, message: format!("element {i}: got {}, want {}", got[i], want[i]) });
        }
        Ok(max_abs_error(&got, &want))
    };

    // The host: the same generic code over HostTensor.
    let host = normalize_host(&HostTensor::from_vec(data.clone(), &[n, h, w, 4])?)?;
    assert_eq!(host.shape(), &nchw_shape(&[n, h, w]));
    let host_error = check("image_pipeline (host)", &host)?;

    let Some(ctx) = ctx else { return Ok(Report { host_error, device: None }) };
    let rgba = DeviceTensor::from_slice(ctx, &data, &[n, h, w, 4])?;
    let p = DevicePipeline::new(ctx, rgba.shape())?;
    let out = p.run(&rgba)?; // the first run compiles the kernel
    let reps = 20;
    let t0 = Instant::now();
    for _ in 0..reps {
        p.run(&rgba)?;
    }
    let wall_ms = t0.elapsed().as_secs_f64() * 1e3 / reps as f64;
    let gpu_ms = GpuTimer::new(ctx)?.time(|b| p.record(b, &rgba).map(drop))?;
    if out.shape() != nchw_shape(&[n, h, w]) || !out.is_contiguous() {
        return Err(Error::Gpu { op: "image_pipeline", message: format!("output layout {:?}", out.layout()) });
    }
    let device_error = check("image_pipeline (device)", &out.download()?)?;
    let adapter = format!("{} ({:?})", ctx.adapter().name, ctx.adapter().backend);
    Ok(Report { host_error, device: Some((adapter, device_error, wall_ms, gpu_ms)) })
}

fn main() {
    let (n, h, w) = (2, 64, 48);
    let ctx = match GpuContext::new() {
        Ok(c) => Some(c),
        Err(e @ Error::Adapter(_)) => {
            eprintln!("!!! image_pipeline: SKIPPING the device run: no adapter ({e})");
            if std::env::var("STRIDED_WGPU_REQUIRE_ADAPTER").as_deref() == Ok("1") {
                std::process::exit(1);
            }
            None
        }
        Err(e) => {
            eprintln!("image_pipeline: {e}");
            std::process::exit(1);
        }
    };
    let report = match run(ctx.as_ref(), n, h, w) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("image_pipeline: {e}");
            std::process::exit(1);
        }
    };
    println!("image_pipeline: RGBA8 [{n}, {h}, {w}, 4] -> normalized f32 NCHW [{n}, 3, {h}, {w}], one addcmul into out=");
    println!("  host   (HostTensor):  max |err| vs f64 loop = {:.3e}", report.host_error);
    match report.device {
        Some((adapter, err, wall, gpu)) => println!("  device ({adapter}): max |err| vs f64 loop = {err:.3e}; {wall:.3} ms per run (record + submit + wait), {gpu:.3} ms on the GPU"),
        None => println!("  device: skipped (no adapter)"),
    }
    let ([fused, literal], same) = rounding_study();
    println!("  rounding, every u8 value and channel in f32 against f64 (ulp at max(|want|, 1)):");
    println!("    x * scale + shift:       max |err| {:.2e} = {:.2} ulp", fused.0, fused.1);
    println!("    (x / 255 - mean) / std:  max |err| {:.2e} = {:.2} ulp", literal.0, literal.1);
    println!("    the two agree bit for bit on {same} of 768 values");
}

#[cfg(test)]
mod tests {
    #[test]
    fn image_pipeline_host_and_device() {
        let require = std::env::var("STRIDED_WGPU_REQUIRE_ADAPTER").as_deref() == Ok("1");
        // A backend STRIDED_WGPU_REQUIRE_BACKENDS names must open (as tests/common/gpu.rs).
        let required = std::env::var("STRIDED_WGPU_REQUIRE_BACKENDS").unwrap_or_default().to_lowercase();
        let mut ran = 0;
        let mut opened = Vec::new();
        for backends in [wgpu::Backends::PRIMARY, wgpu::Backends::GL] {
            let Ok(ctx) = pollster::block_on(strided_wgpu::GpuContext::for_backends(backends)) else {
                // Straight to stderr: libtest captures eprintln!, and a skip must be seen.
                let _ = std::io::Write::write_fmt(&mut std::io::stderr(), format_args!("!!! image_pipeline: no adapter for {backends:?}\n"));
                continue;
            };
            let r = super::run(Some(&ctx), 2, 5, 3).unwrap();
            let (adapter, err, _, _) = r.device.unwrap();
            println!("image_pipeline: ok on {adapter}, max |err| {err:.2e}");
            ran += 1;
            opened.push(format!("{:?}", ctx.adapter().backend).to_lowercase());
        }
        for r in required.split(',').map(str::trim).filter(|r| !r.is_empty()) {
            assert!(opened.iter().any(|b| b == r), "STRIDED_WGPU_REQUIRE_BACKENDS names {r}, but no such adapter ran the example");
        }
        assert!(super::run(None, 1, 3, 1).unwrap().device.is_none());
        assert!(ran > 0 || !require, "STRIDED_WGPU_REQUIRE_ADAPTER=1 but no adapter ran the image pipeline example");
    }
}
