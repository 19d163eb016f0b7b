//! `cargo run --release -- bench [--json] [--warm N | --interleave]`: copy throughput on the
//! chosen adapter, in one run, then the convolution rows (`bench_conv`); `--only copy|conv` runs
//! one of the two.
//!
//! Each row is timed with GPU timestamps around the recorded work when the adapter has them
//! (else wall clock around submit + wait), after warm-up, and reported as the median of
//! several runs. Rows are timed round-robin, each round timing every row once, so that slow
//! periods of a shared machine fall on all rows alike rather than on whichever row was being
//! timed. Each timed run directly follows `warm` untimed runs of the same copy (default
//! [`DEFAULT_WARM`]), which bring the copy's data back into the caches after the previous row
//! (the 64 MiB rows evict everything). A copy whose source the caches only just hold needs
//! several: on lavapipe, `slice_step` run over and over right after the 64 MiB copy took
//! 1.35-1.39, 1.12-1.25, 0.95-1.09, ... 0.60-0.65 ms on its 1st, 2nd, 3rd, ... 8th run, while a
//! contiguous copy of its output was steady from its 2nd run. `--warm 0`
//! (or `--interleave`) times every run with the caches the other rows left. GB/s counts
//! bytes read plus bytes written (each element moved is read once and written once).

use strided_wgpu::{CopyPath, DType, DeviceTensor, GpuContext, GpuTimer, MemoryFormat, Result, Strided};

const WARMUP: usize = 3;
const RUNS: usize = 15;
/// Untimed runs of a copy directly before each of its timed runs, unless `--warm` says.
pub const DEFAULT_WARM: usize = 8;

/// One measured row.
pub struct Row {
    pub op: String,
    pub shape: Vec<usize>,
    pub dtype: DType,
    pub times_ms: Vec<f64>,
    pub bytes: f64,
    pub note: String,
}

impl Row {
    fn median(&self) -> f64 {
        let mut t = self.times_ms.clone();
        t.sort_by(f64::total_cmp);
        t[t.len() / 2]
    }
    pub fn gbps(&self) -> f64 {
        self.bytes / (self.median() * 1e-3) / 1e9
    }
}

/// A benchmark case: a copy to time, and how to report it.
struct Case {
    op: String,
    shape: Vec<usize>,
    dst: DeviceTensor,
    src: DeviceTensor,
    path: CopyPath,
    note: String,
}

/// Times every case RUNS times after WARMUP rounds, round-robin; each timed run directly
/// follows `warm` untimed runs of the same case.
fn measure(timer: &GpuTimer, cases: &[Case], warm: usize) -> Result<Vec<Row>> {
    // Recordings never tune: measure the automatic paths' kernels first.
    for c in cases.iter().filter(|c| c.path == CopyPath::Auto) {
        c.dst.context().tune_copy(&c.dst, &c.src)?;
    }
    let mut times = vec![Vec::new(); cases.len()];
    for round in 0..WARMUP + RUNS {
        for (c, t) in cases.iter().zip(&mut times) {
            for _ in 0..warm {
                timer.time(|b| b.copy_with(&c.dst, &c.src, c.path))?;
            }
            let ms = timer.time(|b| b.copy_with(&c.dst, &c.src, c.path))?;
            if round >= WARMUP {
                t.push(ms);
            }
        }
    }
    Ok(cases
        .iter()
        .zip(times)
        .map(|(c, times_ms)| Row {
            op: c.op.clone(),
            shape: c.shape.clone(),
            dtype: c.src.dtype(),
            times_ms,
            bytes: 2.0 * (c.dst.numel() * c.dst.dtype().size()) as f64,
            note: c.note.clone(),
        })
        .collect())
}

/// Every row of the copy benchmark.
pub fn rows(ctx: &GpuContext, warm: usize) -> Result<Vec<Row>> {
    let timer = GpuTimer::new(ctx)?;
    let f32s = |shape: &[usize]| DeviceTensor::zeros(ctx, shape, DType::F32, MemoryFormat::Contiguous);
    let case = |op: &str, shape: &[usize], dst: &DeviceTensor, src: &DeviceTensor, path: CopyPath| Case {
        op: op.into(),
        shape: shape.to_vec(),
        dst: dst.clone(),
        src: src.clone(),
        path,
        note: String::new(),
    };
    // 64 MiB dense copies: the adapter's buffer copy, and the crate's vec4 kernel with the
    // workgroup size and words per invocation that measure fastest here.
    let n = 16 << 20;
    let (a, b) = (f32s(&[n])?, f32s(&[n])?);
    let shapes: Vec<Case> = [(64, 1), (64, 4), (64, 8), (256, 1), (256, 4), (256, 8)]
        .into_iter()
        .map(|(wg, wpt)| Case { note: format!("wg={wg} wpt={wpt}"), ..case("copy_kernel_vec4", &[n], &b, &a, CopyPath::Vec4 { wg, wpt }) })
        .collect();
    let tuned = measure(&timer, &shapes, warm)?;
    let best = tuned.iter().enumerate().min_by(|x, y| x.1.median().total_cmp(&y.1.median())).map_or(0, |(i, _)| i);
    let mut cases = vec![case("device_copy", &[n], &b, &a, CopyPath::BufferCopy)];
    cases.extend(shapes.into_iter().nth(best));
    // The crate's strided copies, through the path each plan selects.
    let x = f32s(&[8, 64, 56, 56])?;
    let p = f32s(&[64, 128, 32, 8])?;
    let pv = p.permute(&[2, 0, 3, 1])?;
    cases.push(case("permute", &[64, 128, 32, 8], &DeviceTensor::empty(ctx, pv.shape(), DType::F32, MemoryFormat::Contiguous)?, &pv, CopyPath::Auto));
    let sv = x.slice(2, 0, 56, 2)?.slice(3, 0, 56, 2)?;
    cases.push(case("slice_step", &[8, 64, 56, 56], &DeviceTensor::empty(ctx, sv.shape(), DType::F32, MemoryFormat::Contiguous)?, &sv, CopyPath::Auto));
    let ev = f32s(&[1, 64, 1, 1])?.expand(&[8, 64, 56, 56])?;
    cases.push(case("expand", &[1, 64, 1, 1], &x, &ev, CopyPath::Auto));
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
        cases.push(case(to, shape, &last, &first, CopyPath::Auto));
        if dtype == DType::F32 && shape.len() == 4 {
            cases.push(case(back, shape, &first, &last, CopyPath::Auto));
        }
    }
    measure(&timer, &cases, warm)
}

/// Runs the benchmark and prints it as a table or as JSON lines.
pub fn run(json: bool, warm: usize, only: Option<String>) -> Result<()> {
    let ctx = GpuContext::new()?;
    if only.as_deref() != Some("conv") {
        copies(&ctx, json, warm)?;
    }
    if only.as_deref() != Some("copy") {
        let conv = crate::cli::bench_conv::rows(&ctx)?;
        crate::cli::bench_conv::print(&ctx, &conv, json);
    }
    Ok(())
}

/// The copy rows.
fn copies(ctx: &GpuContext, json: bool, warm: usize) -> Result<()> {
    let a = ctx.adapter();
    let rows = rows(ctx, warm)?;
    let gb = |op: &str| rows.iter().find(|r| r.op == op).map_or(f64::NAN, Row::gbps);
    let (kernel, device) = (gb("copy_kernel_vec4"), gb("device_copy"));
    if !json {
        println!(
            "adapter: {} ({:?}, {:?}); timing: {}, rows round-robin, each timed run after {} warming run(s) of the same copy",
            a.name,
            a.backend,
            a.device_type,
            if a.timestamps { "GPU timestamps" } else { "wall clock" },
            warm
        );
        println!("{:<18} {:<20} {:<5} {:>10} {:>10} {:>10} {:>8} {:>9} {:>9}  note", "op", "shape", "dtype", "median_ms", "min_ms", "max_ms", "GB/s", "x kernel", "x device");
    }
    for r in &rows {
        let (min, max) = r.times_ms.iter().fold((f64::MAX, f64::MIN), |(lo, hi), &t| (lo.min(t), hi.max(t)));
        let g = r.gbps();
        if json {
            let line = serde_json::json!({
                "op": r.op, "shape": r.shape, "dtype": r.dtype.to_string(), "median_ms": r.median(), "min_ms": min, "max_ms": max,
                "gbps": g, "ratio_to_copy_kernel": g / kernel, "ratio_to_device_copy": g / device,
            });
            println!("{line}");
        } else {
            println!(
                "{:<18} {:<20} {:<5} {:>10.3} {:>10.3} {:>10.3} {:>8.2} {:>9.2} {:>9.2}  {}",
                r.op, format!("{:?}", r.shape), r.dtype, r.median(), min, max, g, g / kernel, g / device, r.note
            );
        }
    }
    if !json {
        for (class, path) in ctx.tuned_choices() {
            println!("tuned: {class:?} -> {path:?}");
        }
    }
    Ok(())
}
