//! The convolution rows of `bench`: each shape with an NCHW and with a channels-last input
//! (output and weight in the same format, as `torch_cuda_bench.py` stores them), through the
//! kernel the autotuner picks, and the best of the two; the 1x1 shapes also NCHW converted to
//! NHWC then convolved (conversion included).
//! GFLOP/s counts 2 * N * K * (C / groups) * kh * kw * OH * OW per convolution. The depthwise
//! row, bound by memory, also reports GB/s (input, weight, bias and output bytes) and the
//! ratio to a contiguous copy kernel moving the same bytes, timed in the same run with the
//! same warm-up. Each row is timed through the adapter's default kernel for its class (what
//! runs when nothing is tuned, the default policy) and through the tuner's choice, alternately
//! run by run; `default_to_tuned` is the default's speed over the tuned one's. Three shapes run
//! again in float16 (`_f16` rows: operands and output f16, accumulated in f32); every JSON row
//! reports GB/s over the bytes its operands and output take in their type, so an f16 row and
//! its f32 twin compare per byte moved. Timing: GPU timestamps around the recorded work (wall clock where the
//! adapter has none), medians of 15 runs after 2 warm-up runs (`--warm` does not apply).

use strided_wgpu::{Conv2dOptions, DeviceTensor, DType, Elementwise, GpuContext, MemoryFormat, Result, Strided};
use strided_wgpu::advanced::GpuTimer;
use strided_wgpu::advanced::{conv2d_shape, ConvKernel};

const WARMUP: usize = 2;
const RUNS: usize = 15;

/// A benchmarked convolution: input [N, C, H, W], K, kernel size, stride, padding, groups,
/// element type.
pub struct Shape {
    pub name: &'static str,
    pub input: [usize; 4],
    pub k: usize,
    pub kernel: usize,
    pub stride: usize,
    pub pad: usize,
    pub groups: usize,
    pub dtype: DType,
}

const fn shape(name: &'static str, input: [usize; 4], k: usize, kernel: usize, stride: usize, pad: usize, groups: usize) -> Shape {
    Shape { name, input, k, kernel, stride, pad, groups, dtype: DType::F32 }
}

const fn half(s: Shape) -> Shape {
    Shape { dtype: DType::F16, ..s }
}

/// The shapes the bench reports.
pub const SHAPES: [Shape; 14] = [
    shape("conv1x1", [8, 64, 56, 56], 256, 1, 1, 0, 1),
    shape("conv1x1", [8, 256, 56, 56], 64, 1, 1, 0, 1),
    shape("conv1x1", [8, 256, 56, 56], 512, 1, 2, 0, 1),
    shape("conv1x1", [1, 32, 112, 112], 64, 1, 1, 0, 1),
    shape("conv3x3", [8, 64, 56, 56], 64, 3, 1, 1, 1),
    shape("conv3x3", [8, 128, 28, 28], 128, 3, 1, 1, 1),
    shape("conv3x3", [8, 256, 14, 14], 256, 3, 1, 1, 1),
    shape("conv3x3_s2", [8, 128, 56, 56], 128, 3, 2, 1, 1),
    shape("depthwise3x3", [8, 144, 56, 56], 144, 3, 1, 1, 144),
    // Grouped pointwise (ShuffleNet's stage 3 at batch 1): 196 output pixels.
    shape("conv1x1_grouped", [1, 544, 14, 14], 544, 1, 1, 0, 4),
    shape("stem7x7_s2", [8, 3, 224, 224], 64, 7, 2, 3, 1),
    half(shape("conv1x1_f16", [8, 64, 56, 56], 256, 1, 1, 0, 1)),
    half(shape("conv3x3_f16", [8, 64, 56, 56], 64, 3, 1, 1, 1)),
    half(shape("depthwise3x3_f16", [8, 144, 56, 56], 144, 3, 1, 1, 144)),
];

/// One measured row.
pub struct ConvRow {
    pub op: String,
    pub shape: &'static Shape,
    pub times_ms: Vec<f64>,
    pub flops: f64,
    /// Bytes read and written by the convolution, and the median of a contiguous copy kernel
    /// moving as many (depthwise rows only).
    pub bytes: f64,
    pub copy_ms: Option<f64>,
    /// The kernel the tuner chose for the row's class.
    pub kernel: ConvKernel,
    /// The adapter's default kernel for the class (what runs without tuning), and its times.
    pub default_kernel: ConvKernel,
    pub default_ms: Vec<f64>,
}

use crate::cli::measure::median;

impl ConvRow {
    pub fn median(&self) -> f64 {
        median(&self.times_ms)
    }
    pub fn gflops(&self) -> f64 {
        self.flops / (self.median() * 1e-3) / 1e9
    }
    pub fn gbps(&self) -> f64 {
        self.bytes / (self.median() * 1e-3) / 1e9
    }
    /// The default kernel's speed over the tuned one's (1 when they are the same kernel, up to
    /// noise).
    pub fn default_to_tuned(&self) -> f64 {
        self.median() / median(&self.default_ms)
    }
}

/// Deterministic values in [-1, 1).
fn filled(ctx: &GpuContext, shape: &[usize], seed: usize) -> Result<DeviceTensor> {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n).map(|i| ((i * 37 + seed) % 101) as f32 / 50.5 - 1.0).collect();
    DeviceTensor::from_slice(ctx, &v, shape)
}

/// Times `f` WARMUP + RUNS times; returns the timed runs.
fn time(timer: &GpuTimer, mut f: impl FnMut(&mut strided_wgpu::Batch<'_>) -> Result<()>) -> Result<Vec<f64>> {
    let mut times_ms = Vec::new();
    for run in 0..WARMUP + RUNS {
        let ms = timer.time(&mut f)?;
        if run >= WARMUP {
            times_ms.push(ms);
        }
    }
    Ok(times_ms)
}

/// Every convolution row, shape by shape.
pub fn rows(ctx: &GpuContext) -> Result<Vec<ConvRow>> {
    let timer = GpuTimer::new(ctx)?;
    let mut out = Vec::new();
    for s in &SHAPES {
        let o = Conv2dOptions { stride: (s.stride, s.stride), padding: (s.pad, s.pad), groups: s.groups, ..Default::default() };
        let typed = |t: DeviceTensor| if s.dtype == DType::F32 { Ok(t) } else { t.to(s.dtype) };
        let x = typed(filled(ctx, &s.input, 1)?)?;
        let w = typed(filled(ctx, &[s.k, s.input[1] / s.groups, s.kernel, s.kernel], 2)?)?;
        let b = typed(filled(ctx, &[s.k], 3)?)?;
        let xl = DeviceTensor::empty(ctx, &s.input, s.dtype, MemoryFormat::ChannelsLast)?;
        xl.copy_(&x)?;
        let wl = w.contiguous(MemoryFormat::ChannelsLast)?;
        let g = conv2d_shape(x.layout(), w.layout(), Some(b.layout()), [None; 3], &o)?;
        let yn = DeviceTensor::empty(ctx, &g.out_shape(), s.dtype, MemoryFormat::Contiguous)?;
        let yl = DeviceTensor::empty(ctx, &g.out_shape(), s.dtype, MemoryFormat::ChannelsLast)?;
        let bytes = s.dtype.size() as f64 * (x.numel() + w.numel() + b.numel() + yn.numel()) as f64;
        // A contiguous copy of the same bytes (half read, half written), for the depthwise row.
        let copy_ms = if s.groups > 1 && s.groups == s.input[1] {
            let n = (bytes / 8.0) as usize;
            let (a, c) = (DeviceTensor::zeros(ctx, &[n], DType::F32, MemoryFormat::Contiguous)?, DeviceTensor::zeros(ctx, &[n], DType::F32, MemoryFormat::Contiguous)?);
            Some(median(&time(&timer, |bt| bt.copy_with(&c, &a, strided_wgpu::advanced::vec4_default(ctx.adapter().device_type)))?))
        } else {
            None
        };
        let mut row = |op: String, convert: bool, xin: &DeviceTensor, w: &DeviceTensor, y: &DeviceTensor| -> Result<()> {
            // Recordings never tune: the conversion's class is measured first.
            ctx.tune_copy(&xl, &x)?;
            let work = |bt: &mut strided_wgpu::Batch<'_>, kernel: ConvKernel| {
                if convert {
                    bt.copy_(&xl, &x)?;
                }
                bt.conv2d_out_with(xin, w, Some(&b), &o, y, kernel)
            };
            // Some: no bench output is empty. The default kernel (read before tuning) and the
            // tuned choice, timed alternately, run by run, so that the host's drift falls on
            // both alike: the same warm-up and runs.
            let default_kernel = ctx.conv2d_default(xin, w, Some(&b), &o, y)?.unwrap_or(ConvKernel::Auto);
            ctx.tune_conv2d(xin, w, Some(&b), &Conv2dOptions { output_format: Some(if y.is_contiguous() { MemoryFormat::Contiguous } else { MemoryFormat::ChannelsLast }), ..o })?;
            let (mut default_ms, mut times_ms) = (Vec::new(), Vec::new());
            for run in 0..WARMUP + RUNS {
                let d = timer.time(|bt| work(bt, default_kernel))?;
                let t = timer.time(|bt| work(bt, ConvKernel::Auto))?;
                if run >= WARMUP {
                    default_ms.push(d);
                    times_ms.push(t);
                }
            }
            let kernel = ctx.conv2d_choice(xin, w, Some(&b), &o, y)?.unwrap_or(ConvKernel::Auto);
            out.push(ConvRow { op, shape: s, times_ms, flops: g.flops(s.groups), bytes, copy_ms, kernel, default_kernel, default_ms });
            Ok(())
        };
        row(format!("{}_nchw", s.name), false, &x, &w, &yn)?;
        row(format!("{}_nhwc", s.name), false, &xl, &wl, &yl)?;
        if s.kernel == 1 {
            row(format!("{}_nchw_via_nhwc", s.name), true, &xl, &wl, &yl)?;
        }
    }
    Ok(out)
}

/// Prints the rows as JSON lines, or as a table with one line per shape.
pub fn print(ctx: &GpuContext, rows: &[ConvRow], json: bool) {
    if json {
        for r in rows {
            let (min, max) = r.times_ms.iter().fold((f64::MAX, f64::MIN), |(lo, hi), &t| (lo.min(t), hi.max(t)));
            let s = r.shape;
            let mut line = serde_json::json!({
                "part": "conv", "timing": crate::cli::measure::timing(ctx), "op": r.op, "shape": s.input, "k": s.k, "kernel": s.kernel, "stride": s.stride, "padding": s.pad, "groups": s.groups, "dtype": s.dtype.to_string(),
                "median_ms": r.median(), "min_ms": min, "max_ms": max, "gflops": r.gflops(), "gbps": r.gbps(), "tuned": format!("{:?}", r.kernel),
                "default": format!("{:?}", r.default_kernel), "default_median_ms": median(&r.default_ms), "default_to_tuned": r.default_to_tuned(),
            });
            if let Some(c) = r.copy_ms {
                line["copy_median_ms"] = c.into();
                line["ratio_to_copy"] = (c / r.median()).into();
            }
            println!("{line}");
        }
        return;
    }
    println!();
    println!("conv rows; adapter: {} ({:?}); timing: {}", ctx.adapter().name, ctx.adapter().backend, crate::cli::measure::timing(ctx));
    println!("{:<14} {:<18} {:>4} {:>6} {:>20} {:>20} {:>10} {:>20}", "conv", "input", "K", "stride", "NCHW ms (GFLOP/s)", "NHWC ms (GFLOP/s)", "best", "NCHW->NHWC+conv");
    let mut i = 0;
    while i < rows.len() {
        let s = rows[i].shape;
        let n = if s.kernel == 1 { 3 } else { 2 };
        let chunk = &rows[i..i + n];
        let cell = |r: &ConvRow| format!("{:.2} ({:.1})", r.median(), r.gflops());
        let best = chunk[0].gflops().max(chunk[1].gflops());
        let via = chunk.get(2).map_or(String::new(), cell);
        println!("{:<14} {:<18} {:>4} {:>6} {:>20} {:>20} {:>10.1} {:>20}", s.name, format!("{:?}", s.input), s.k, s.stride, cell(&chunk[0]), cell(&chunk[1]), best, via);
        println!("    tuned: {:?} (NCHW), {:?} (NHWC)", chunk[0].kernel, chunk[1].kernel);
        for r in chunk {
            println!("    {}: default {:?} {:.2} ms ({:.1} GFLOP/s), {:.2} of the tuned speed", r.op, r.default_kernel, median(&r.default_ms), r.flops / (median(&r.default_ms) * 1e-3) / 1e9, r.default_to_tuned());
        }
        for r in chunk.iter().take(2) {
            if let Some(c) = r.copy_ms {
                println!("    {}: {:.2} GB/s, a contiguous copy of the same bytes {:.2} GB/s: ratio_to_copy {:.2}", r.op, r.gbps(), r.bytes / (c * 1e-3) / 1e9, c / r.median());
            }
        }
        i += n;
    }
    for (class, kernel) in ctx.tuned_conv_choices() {
        println!("tuned conv: {:?} {:?} {:?} -> {kernel:?}", class.window, class.log2, class.kernels.iter().map(|(k, v)| format!("{k:?}{v:?}")).collect::<Vec<_>>());
    }
}

/// `strided-wgpu first-call I nchw|nhwc` (run by [`cold_rows`] in a fresh process): the wall
/// time of the first `conv2d` of shape `I` in a new context with default settings, from the
/// call to its result on the host (pipeline compilation included), after the inputs are
/// uploaded and laid out. Prints one JSON line.
pub fn first_call(index: usize, nhwc: bool) -> Result<()> {
    let s = SHAPES.get(index).ok_or_else(|| strided_wgpu::Error::InvalidArgument { op: "first-call", detail: format!("no conv shape {index}; there are {}", SHAPES.len()) })?;
    let ctx = GpuContext::new()?;
    let o = Conv2dOptions { stride: (s.stride, s.stride), padding: (s.pad, s.pad), groups: s.groups, ..Default::default() };
    let typed = |t: DeviceTensor| if s.dtype == DType::F32 { Ok(t) } else { t.to(s.dtype) };
    let x = typed(filled(&ctx, &s.input, 1)?)?;
    let x = if nhwc { x.contiguous(MemoryFormat::ChannelsLast)? } else { x };
    let w = typed(filled(&ctx, &[s.k, s.input[1] / s.groups, s.kernel, s.kernel], 2)?)?;
    // The weight in the input's format, as the warm rows of the same name store it.
    let w = if nhwc { w.contiguous(MemoryFormat::ChannelsLast)? } else { w };
    let b = typed(filled(&ctx, &[s.k], 3)?)?;
    x.narrow(0, 0, 1)?.download()?;
    let t = std::time::Instant::now();
    let y = strided_wgpu::ops::conv2d(&x, &w, Some(&b), &o)?;
    y.download()?;
    let ms = t.elapsed().as_secs_f64() * 1e3;
    let kernel = ctx.conv2d_choice(&x, &w, Some(&b), &o, &y)?.unwrap_or(ConvKernel::Auto);
    println!("{}", serde_json::json!({ "first_call_ms": ms, "kernel": format!("{kernel:?}") }));
    Ok(())
}

/// The first call's latency of every convolution row with an empty shader cache: each row in
/// a fresh process of this program (`first-call`) with `XDG_CACHE_HOME` pointing at an empty
/// folder and `MESA_SHADER_CACHE_DISABLE=true`, default settings otherwise. A row whose
/// process failed is printed with its error, and the call fails after the last row.
pub fn cold_rows(json: bool) -> Result<()> {
    let exe = std::env::current_exe().map_err(|e| strided_wgpu::Error::InvalidArgument { op: "bench", detail: format!("the program's own path: {e}") })?;
    if !json {
        println!();
        println!("first call with an empty shader cache (a fresh process per row, default settings):");
        println!("{:<14} {:<18} {:>4} {:>6} {:>24} {:>24}", "conv", "input", "K", "stride", "NCHW s (kernel)", "NHWC s (kernel)");
    }
    let mut failed = 0;
    for (i, s) in SHAPES.iter().enumerate() {
        let mut cells = Vec::new();
        for layout in ["nchw", "nhwc"] {
            let cache = std::env::temp_dir().join(format!("strided-wgpu-cold-{}-{i}-{layout}", std::process::id()));
            let _ = std::fs::remove_dir_all(&cache);
            std::fs::create_dir_all(&cache).map_err(|e| strided_wgpu::Error::InvalidArgument { op: "bench", detail: format!("{}: {e}", cache.display()) })?;
            let run = std::process::Command::new(&exe).args(["first-call", &i.to_string(), layout]).env("XDG_CACHE_HOME", &cache).env("MESA_SHADER_CACHE_DISABLE", "true").output();
            let _ = std::fs::remove_dir_all(&cache);
            let line = match run {
                Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).lines().last().unwrap_or_default().to_string(),
                Ok(o) => serde_json::json!({ "error": String::from_utf8_lossy(&o.stderr).trim() }).to_string(),
                Err(e) => serde_json::json!({ "error": e.to_string() }).to_string(),
            };
            let v: serde_json::Value = serde_json::from_str(&line).unwrap_or_else(|_| serde_json::json!({ "error": line }));
            failed += usize::from(v["first_call_ms"].as_f64().is_none());
            if json {
                println!("{}", serde_json::json!({ "part": "first_call", "op": format!("{}_{layout}", s.name), "shape": s.input, "k": s.k, "kernel": s.kernel, "stride": s.stride, "groups": s.groups, "first_call_ms": v["first_call_ms"], "default": v["kernel"], "error": v.get("error") }));
            }
            cells.push(match v["first_call_ms"].as_f64() {
                Some(ms) => format!("{:.2} ({})", ms / 1e3, v["kernel"].as_str().unwrap_or("?")),
                None => format!("error: {}", v["error"]),
            });
        }
        if !json {
            println!("{:<14} {:<18} {:>4} {:>6} {:>24} {:>24}", s.name, format!("{:?}", s.input), s.k, s.stride, cells[0], cells[1]);
        }
    }
    crate::cli::measure::child_failures("bench cold", failed, 2 * SHAPES.len())
}
