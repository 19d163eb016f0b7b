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

use std::collections::BTreeMap;

use strided_wgpu::{vec4_default, Batch, CopyPath, DType, DeviceTensor, GpuContext, GpuTimer, MemoryFormat, Result, Strided};

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
    /// The median of a contiguous copy kernel moving the same bytes, timed in the same run
    /// with the same warm-up.
    pub copy_ms: f64,
}

impl Row {
    pub fn median(&self) -> f64 {
        median(&self.times_ms)
    }
    pub fn gbps(&self) -> f64 {
        self.bytes / (self.median() * 1e-3) / 1e9
    }
    /// GB/s over the same-bytes copy's GB/s.
    pub fn ratio_to_copy(&self) -> f64 {
        self.copy_ms / self.median()
    }
}

fn median(t: &[f64]) -> f64 {
    let mut t = t.to_vec();
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

/// What a case records into a batch each time it is timed.
pub type Work = Box<dyn Fn(&mut Batch<'_>) -> Result<()>>;

/// A benchmark case: work to time, the bytes it reads and writes, and how to report it.
pub struct Case {
    pub op: String,
    pub shape: Vec<usize>,
    pub dtype: DType,
    pub bytes: f64,
    pub note: String,
    pub work: Work,
}

impl Case {
    /// A copy from `src` into `dst` through `path`.
    pub(crate) fn copy(op: &str, shape: &[usize], dst: &DeviceTensor, src: &DeviceTensor, path: CopyPath) -> Case {
        let (d, s) = (dst.clone(), src.clone());
        Case {
            op: op.into(),
            shape: shape.to_vec(),
            dtype: src.dtype(),
            bytes: (dst.numel() * dst.dtype().size() + src.numel() * src.dtype().size()) as f64,
            note: String::new(),
            work: Box::new(move |b| b.copy_with(&d, &s, path)),
        }
    }
}

/// Times every case RUNS times after WARMUP rounds, round-robin, together with a contiguous
/// copy kernel moving the same bytes as each (half read, half written): each timed run of
/// either directly follows `warm` untimed runs of the same work.
pub fn measure(ctx: &GpuContext, timer: &GpuTimer, cases: Vec<Case>, warm: usize) -> Result<Vec<Row>> {
    // One reference copy per byte count: whole vec4 words of f32, each way.
    let mut refs: BTreeMap<usize, usize> = BTreeMap::new();
    let mut all = Vec::new();
    let mut ref_of = Vec::new();
    for c in &cases {
        let n = ((c.bytes / 8.0) as usize / 4 * 4).max(4);
        let next = cases.len() + refs.len();
        let idx = *refs.entry(n).or_insert(next);
        ref_of.push(idx);
    }
    all.extend(cases);
    for &n in refs.keys() {
        let a = DeviceTensor::zeros(ctx, &[n], DType::F32, MemoryFormat::Contiguous)?;
        let b = DeviceTensor::zeros(ctx, &[n], DType::F32, MemoryFormat::Contiguous)?;
        // The contiguous copy kernel at the shape the crate runs on this adapter.
        all.push(Case::copy("same_bytes_copy", &[n], &b, &a, vec4_default(ctx.adapter().device_type)));
    }
    let mut times = vec![Vec::new(); all.len()];
    for round in 0..WARMUP + RUNS {
        for (c, t) in all.iter().zip(&mut times) {
            for _ in 0..warm {
                timer.time(|b| (c.work)(b))?;
            }
            let ms = timer.time(|b| (c.work)(b))?;
            if round >= WARMUP {
                t.push(ms);
            }
        }
    }
    let n_cases = ref_of.len();
    Ok(all
        .iter()
        .zip(&times)
        .take(n_cases)
        .zip(&ref_of)
        .map(|((c, times_ms), &r)| Row {
            op: c.op.clone(),
            shape: c.shape.clone(),
            dtype: c.dtype,
            times_ms: times_ms.clone(),
            bytes: c.bytes,
            note: c.note.clone(),
            copy_ms: median(&times[r]) * c.bytes / all[r].bytes,
        })
        .collect())
}

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

/// Runs the benchmark and prints it as a table or as JSON lines.
pub fn run(json: bool, warm: usize, only: Option<String>) -> Result<()> {
    let ctx = GpuContext::new()?;
    if matches!(only.as_deref(), None | Some("copy")) {
        let rows = rows(&ctx, warm)?;
        print(&ctx, "copy", &rows, json, warm);
    }
    if matches!(only.as_deref(), None | Some("elementwise")) {
        let rows = crate::cli::bench_elementwise::rows(&ctx, warm)?;
        print(&ctx, "elementwise", &rows, json, warm);
    }
    if matches!(only.as_deref(), None | Some("conv")) {
        let conv = crate::cli::bench_conv::rows(&ctx)?;
        crate::cli::bench_conv::print(&ctx, &conv, json);
    }
    if matches!(only.as_deref(), None | Some("cold")) {
        crate::cli::bench_conv::cold_rows(json)?;
    }
    Ok(())
}

/// Prints rows as a table or as JSON lines: GB/s, the same-bytes copy ratio (`ratio_to_copy`),
/// and, for the copy rows, the ratios to the 64 MiB copies (`x kernel`, `x device`).
pub fn print(ctx: &GpuContext, part: &str, rows: &[Row], json: bool, warm: usize) {
    let a = ctx.adapter();
    let gb = |op: &str| rows.iter().find(|r| r.op == op).map_or(f64::NAN, Row::gbps);
    let (kernel, device) = (gb("copy_kernel_vec4"), gb("device_copy"));
    if !json {
        println!(
            "{part} rows; adapter: {} ({:?}, {:?}); timing: {}, rows round-robin, each timed run after {} warming run(s) of the same work",
            a.name,
            a.backend,
            a.device_type,
            if a.timestamps { "GPU timestamps" } else { "wall clock" },
            warm
        );
        println!("{:<22} {:<20} {:<5} {:>10} {:>10} {:>10} {:>8} {:>9} {:>9} {:>9}  note", "op", "shape", "dtype", "median_ms", "min_ms", "max_ms", "GB/s", "to_copy", "x kernel", "x device");
    }
    for r in rows {
        let (min, max) = r.times_ms.iter().fold((f64::MAX, f64::MIN), |(lo, hi), &t| (lo.min(t), hi.max(t)));
        let g = r.gbps();
        if json {
            let mut line = serde_json::json!({
                "part": part, "op": r.op, "shape": r.shape, "dtype": r.dtype.to_string(), "median_ms": r.median(), "min_ms": min, "max_ms": max,
                "gbps": g, "bytes": r.bytes, "copy_median_ms": r.copy_ms, "ratio_to_copy": r.ratio_to_copy(), "warm": warm,
            });
            if part == "copy" {
                line["ratio_to_copy_kernel"] = (g / kernel).into();
                line["ratio_to_device_copy"] = (g / device).into();
            }
            println!("{line}");
        } else {
            let x = |v: f64| if part == "copy" { format!("{v:>9.2}") } else { format!("{:>9}", "-") };
            println!(
                "{:<22} {:<20} {:<5} {:>10.3} {:>10.3} {:>10.3} {:>8.2} {:>9.2} {} {}  {}",
                r.op, format!("{:?}", r.shape), r.dtype, r.median(), min, max, g, r.ratio_to_copy(), x(g / kernel), x(g / device), r.note
            );
        }
    }
    if !json && part == "copy" {
        for (class, path) in ctx.tuned_choices() {
            println!("tuned: {class:?} -> {path:?}");
        }
    }
}
