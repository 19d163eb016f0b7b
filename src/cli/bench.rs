//! `cargo run --release -- bench [--json]`: copy throughput on the chosen adapter, in one run.
//!
//! Each row is timed with GPU timestamps around the recorded work when the adapter has them
//! (else wall clock around submit + wait), after warm-up, and reported as the median of
//! several runs. GB/s counts bytes read plus bytes written (each element moved is read once
//! and written once).

use strided_wgpu::{CopyPath, DType, DeviceTensor, GpuContext, MemoryFormat, Result, Strided};

const WARMUP: usize = 3;
const RUNS: usize = 15;

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

/// Times `record` (which records one operation into a batch) RUNS times after WARMUP.
pub fn time(ctx: &GpuContext, mut record: impl FnMut(&mut strided_wgpu::Batch) -> Result<()>) -> Result<Vec<f64>> {
    let ts = ctx.adapter().timestamps;
    let qs = ts.then(|| ctx.device().create_query_set(&wgpu::QuerySetDescriptor { label: Some("bench"), ty: wgpu::QueryType::Timestamp, count: 2 }));
    let resolve = ctx.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some("bench resolve"),
        size: 16,
        usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let read = ctx.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some("bench read"),
        size: 16,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let period = ctx.queue().get_timestamp_period() as f64;
    let mut out = Vec::new();
    for i in 0..WARMUP + RUNS {
        let mut b = ctx.batch();
        if let Some(qs) = &qs {
            b.write_timestamp(qs, 0)?;
        }
        let t0 = std::time::Instant::now();
        record(&mut b)?;
        if let Some(qs) = &qs {
            b.write_timestamp(qs, 1)?;
            b.resolve_timestamps(qs, 2, &resolve)?;
        }
        b.submit_and_wait()?;
        let wall = t0.elapsed().as_secs_f64() * 1e3;
        let ms = if qs.is_some() {
            let mut enc = ctx.device().create_command_encoder(&Default::default());
            enc.copy_buffer_to_buffer(&resolve, 0, &read, 0, 16);
            ctx.queue().submit([enc.finish()]);
            let slice = read.slice(..);
            slice.map_async(wgpu::MapMode::Read, |_| {});
            let _ = ctx.device().poll(wgpu::PollType::wait_indefinitely());
            let v: Vec<u64> = match slice.get_mapped_range() {
                Ok(view) => bytemuck::cast_slice(&view).to_vec(),
                Err(_) => vec![0, 0],
            };
            read.unmap();
            v[1].saturating_sub(v[0]) as f64 * period / 1e6
        } else {
            wall
        };
        if i >= WARMUP {
            out.push(ms);
        }
    }
    Ok(out)
}

fn copy_row(ctx: &GpuContext, op: &str, shape: &[usize], dst: &DeviceTensor, src: &DeviceTensor, path: CopyPath) -> Result<Row> {
    let times_ms = time(ctx, |b| b.copy_with(dst, src, path))?;
    Ok(Row { op: op.into(), shape: shape.to_vec(), dtype: src.dtype(), times_ms, bytes: 2.0 * (dst.numel() * dst.dtype().size()) as f64, note: String::new() })
}

/// Every row of the copy benchmark.
pub fn rows(ctx: &GpuContext) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    let f32s = |shape: &[usize]| DeviceTensor::zeros(ctx, shape, DType::F32, MemoryFormat::Contiguous);
    // 64 MiB dense copies: the adapter's buffer copy, and the crate's vec4 kernel, tuned.
    let n = 16 << 20;
    let (a, b) = (f32s(&[n])?, f32s(&[n])?);
    rows.push(copy_row(ctx, "device_copy", &[n], &b, &a, CopyPath::BufferCopy)?);
    let mut best: Option<Row> = None;
    for wg in [64, 256] {
        for wpt in [1, 4, 8] {
            let mut r = copy_row(ctx, "copy_kernel_vec4", &[n], &b, &a, CopyPath::Vec4 { wg, wpt })?;
            r.note = format!("wg={wg} wpt={wpt}");
            if best.as_ref().is_none_or(|b| r.median() < b.median()) {
                best = Some(r);
            }
        }
    }
    rows.extend(best);
    // The crate's strided copies, through the path each plan selects.
    // (nchw_to_nhwc of [8,64,56,56] comes with the memory-format rows below.)
    let x = f32s(&[8, 64, 56, 56])?;
    let p = f32s(&[64, 128, 32, 8])?;
    let pv = p.permute(&[2, 0, 3, 1])?;
    let pd = DeviceTensor::empty(ctx, pv.shape(), DType::F32, MemoryFormat::Contiguous)?;
    rows.push(copy_row(ctx, "permute", &[64, 128, 32, 8], &pd, &pv, CopyPath::Auto)?);
    let sv = x.slice(2, 0, 56, 2)?.slice(3, 0, 56, 2)?;
    let sd = DeviceTensor::empty(ctx, sv.shape(), DType::F32, MemoryFormat::Contiguous)?;
    rows.push(copy_row(ctx, "slice_step", &[8, 64, 56, 56], &sd, &sv, CopyPath::Auto)?);
    let e = f32s(&[1, 64, 1, 1])?;
    let ev = e.expand(&[8, 64, 56, 56])?;
    rows.push(copy_row(ctx, "expand", &[1, 64, 1, 1], &x, &ev, CopyPath::Auto)?);
    drop((x, p, pv, pd, sv, sd, e, ev));
    // Memory-format conversions (each a batched transpose; the kernel is tuned on first use).
    let formats: [(&[usize], DType, MemoryFormat, &str); 5] = [
        (&[8, 64, 56, 56], DType::F32, MemoryFormat::ChannelsLast, "nhwc"),
        (&[32, 256, 56, 56], DType::F32, MemoryFormat::ChannelsLast, "nhwc"),
        (&[16, 3, 224, 224], DType::F32, MemoryFormat::ChannelsLast, "nhwc"),
        (&[2, 32, 16, 56, 56], DType::F32, MemoryFormat::ChannelsLast3d, "ndhwc"),
        (&[32, 256, 56, 56], DType::F16, MemoryFormat::ChannelsLast, "nhwc"),
    ];
    for (shape, dtype, format, name) in formats {
        let first = DeviceTensor::zeros(ctx, shape, dtype, MemoryFormat::Contiguous)?;
        let last = DeviceTensor::empty(ctx, shape, dtype, format)?;
        let (to, back) = if name == "nhwc" { ("nchw_to_nhwc", "nhwc_to_nchw") } else { ("ncdhw_to_ndhwc", "ndhwc_to_ncdhw") };
        rows.push(copy_row(ctx, to, shape, &last, &first, CopyPath::Auto)?);
        if dtype == DType::F32 && name == "nhwc" {
            rows.push(copy_row(ctx, back, shape, &first, &last, CopyPath::Auto)?);
        }
    }
    Ok(rows)
}

/// Runs the benchmark and prints it as a table or as JSON lines.
pub fn run(json: bool) -> Result<()> {
    let ctx = GpuContext::new()?;
    let a = ctx.adapter();
    let rows = rows(&ctx)?;
    let gb = |op: &str| rows.iter().find(|r| r.op == op).map_or(f64::NAN, Row::gbps);
    let (kernel, device) = (gb("copy_kernel_vec4"), gb("device_copy"));
    if !json {
        println!("adapter: {} ({:?}, {:?}); timing: {}", a.name, a.backend, a.device_type, if a.timestamps { "GPU timestamps" } else { "wall clock" });
        println!("{:<18} {:<20} {:<5} {:>10} {:>10} {:>10} {:>8} {:>9} {:>9}  note", "op", "shape", "dtype", "median_ms", "min_ms", "max_ms", "GB/s", "x kernel", "x device");
    }
    for r in &rows {
        let (min, max) = r.times_ms.iter().fold((f64::MAX, f64::MIN), |(lo, hi), &t| (lo.min(t), hi.max(t)));
        let g = r.gbps();
        if json {
            println!(
                "{{\"op\":\"{}\",\"shape\":{:?},\"dtype\":\"{}\",\"median_ms\":{:.4},\"min_ms\":{:.4},\"max_ms\":{:.4},\"gbps\":{:.3},\"ratio_to_copy_kernel\":{:.3},\"ratio_to_device_copy\":{:.3}}}",
                r.op, r.shape, r.dtype, r.median(), min, max, g, g / kernel, g / device
            );
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
