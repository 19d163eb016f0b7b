//! `bench --only calls`: the rows of `tools/peers/torch_cuda_bench.py` (PyTorch on CUDA, the
//! anchor), timed by its rule so that the two read side by side: wall clock around each whole
//! call and a wait for the GPU (`ctx.flush()?.wait()`, PyTorch's `torch.cuda.synchronize()`: what
//! eager calls held back submitted, then a polling wait for everything submitted), 3
//! warm-up calls, then calls until at least `STRIDED_WGPU_BENCH_MIN_S` seconds (default 0.3)
//! and 5 calls; the median. Each row runs two ways: `eager` (the call as a user writes it:
//! recorded, submitted or held back as the context's policy says, then waited for) and `graph`
//! (the same call captured once
//! with [`GpuContext::capture`], then each timed call `Graph::replay_and_wait`, the crate's own
//! wait): their difference is what a call costs beyond its recorded work. Rows F0 and F1 are
//! the floor under any call on the adapter: raw wgpu, an empty submission and a blocking or a
//! polling wait. Rows: L1 (one-element add), L2 (100 chained
//! one-element adds; also `batch`, all 100 in one [`strided_wgpu::Batch`]), P2 (permute to
//! NHWC), E1 (`a + b`), R1-R3 (sum, softmax, mean), PL1 (max pooling), C1-C7 (convolutions,
//! NCHW and channels-last, input and weight in one format as the peer script stores them, bias), M1-M3 (`mm`, `linear`, `q @ k^T`).
//! float32 throughout; `work` is the same count the peer script divides by (FLOPs or bytes).

use std::time::Instant;

use strided_wgpu::{Conv2d, Conv2dOptions, DeviceTensor, Elementwise, GpuContext, HostTensor, Matmul, MaxPool2dOptions, MemoryFormat, Pool2d, Reduce, Result, Strided};

/// One timed row.
pub struct CallRow {
    pub op: &'static str,
    pub variant: String,
    pub mode: &'static str,
    pub shape: Vec<usize>,
    pub times_s: Vec<f64>,
    /// FLOPs, bytes or calls per call, divided by the median into `unit` (per 1e9).
    pub work: f64,
    pub unit: &'static str,
    pub first_call_ms: f64,
}

impl CallRow {
    fn median(&self) -> f64 {
        crate::cli::measure::median(&self.times_s)
    }
}

fn min_seconds() -> f64 {
    std::env::var("STRIDED_WGPU_BENCH_MIN_S").ok().and_then(|v| v.parse().ok()).filter(|v: &f64| *v > 0.0).unwrap_or(0.3)
}

/// Submits what eager calls held back, and waits until the GPU has finished everything
/// submitted so far.
fn sync(ctx: &GpuContext) -> Result<()> {
    ctx.flush()?.wait()
}

/// The peer script's rule: 3 warm-ups, then calls until >= `min_s` and >= 5 calls.
fn time_calls(ctx: &GpuContext, min_s: f64, mut f: impl FnMut() -> Result<()>) -> Result<(f64, Vec<f64>)> {
    let t = Instant::now();
    f()?;
    sync(ctx)?;
    let first = t.elapsed().as_secs_f64() * 1e3;
    for _ in 0..2 {
        f()?;
        sync(ctx)?;
    }
    let mut v = Vec::new();
    while v.len() < 5 || v.iter().sum::<f64>() < min_s {
        let t = Instant::now();
        f()?;
        sync(ctx)?;
        v.push(t.elapsed().as_secs_f64());
    }
    Ok((first, v))
}

/// Deterministic values in [-0.5, 0.5) in `format`.
fn rnd(ctx: &GpuContext, shape: &[usize], format: MemoryFormat) -> Result<DeviceTensor> {
    let n: usize = shape.iter().product();
    let mut s = 0x9e37_79b9_7f4a_7c15u64 ^ n as u64;
    let v: Vec<f32> = (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        })
        .collect();
    let t = DeviceTensor::upload(ctx, &HostTensor::from_vec(v, shape)?)?;
    if format == MemoryFormat::Contiguous { Ok(t) } else { t.contiguous(format) }
}

type Call = Box<dyn Fn() -> Result<DeviceTensor>>;

struct Spec {
    op: &'static str,
    variant: String,
    shape: Vec<usize>,
    work: f64,
    unit: &'static str,
    /// What a graph's replays treat as changing (everything else is a constant of the graph).
    inputs: Vec<DeviceTensor>,
    call: Call,
}

fn specs(ctx: &GpuContext) -> Result<Vec<Spec>> {
    let mut s = Vec::new();
    let cl = MemoryFormat::ChannelsLast;
    let c = MemoryFormat::Contiguous;
    let (p1, q1) = (rnd(ctx, &[1], c)?, rnd(ctx, &[1], c)?);
    {
        let (p, q) = (p1.clone(), q1.clone());
        s.push(Spec { op: "L1", variant: "a + b of one element".into(), shape: vec![1], work: 1e9, unit: "calls_per_s", inputs: vec![p1.clone(), q1.clone()], call: Box::new(move || p.add(&q)) });
    }
    {
        let (p, q) = (p1.clone(), q1.clone());
        s.push(Spec {
            op: "L2",
            variant: "100 chained one-element adds".into(),
            shape: vec![1],
            work: 100e9,
            unit: "ops_per_s",
            inputs: vec![p1.clone(), q1.clone()],
            call: Box::new(move || {
                let mut x = p.add(&q)?;
                for _ in 0..99 {
                    x = x.add(&q)?;
                }
                Ok(x)
            }),
        });
    }
    {
        let (p, q, cx) = (p1.clone(), q1.clone(), ctx.clone());
        s.push(Spec {
            op: "L2",
            variant: "100 chained one-element adds in one Batch".into(),
            shape: vec![1],
            work: 100e9,
            unit: "ops_per_s",
            inputs: vec![p1.clone(), q1.clone()],
            call: Box::new(move || {
                let mut b = cx.batch();
                let mut x = b.add(&p, &q)?;
                for _ in 0..99 {
                    x = b.add(&x, &q)?;
                }
                b.submit()?;
                Ok(x)
            }),
        });
    }
    let x = rnd(ctx, &[32, 256, 56, 56], c)?;
    s.push(Spec { op: "P2", variant: "permute(0, 2, 3, 1).contiguous()".into(), shape: vec![32, 256, 56, 56], work: 8.0 * x.numel() as f64, unit: "gbps", inputs: vec![x.clone()], call: Box::new(move || x.permute(&[0, 2, 3, 1])?.contiguous(c)) });
    let (x, y) = (rnd(ctx, &[8, 64, 56, 56], c)?, rnd(ctx, &[8, 64, 56, 56], c)?);
    s.push(Spec { op: "E1", variant: "a + b".into(), shape: vec![8, 64, 56, 56], work: 12.0 * x.numel() as f64, unit: "gbps", inputs: vec![x.clone(), y.clone()], call: Box::new(move || x.add(&y)) });
    let x = rnd(ctx, &[4096, 4096], c)?;
    s.push(Spec { op: "R1", variant: "x.sum(-1)".into(), shape: vec![4096, 4096], work: 4.0 * (x.numel() + 4096) as f64, unit: "gbps", inputs: vec![x.clone()], call: Box::new(move || x.sum(-1, false)) });
    let x = rnd(ctx, &[12288, 128], c)?;
    s.push(Spec { op: "R2", variant: "x.softmax(-1)".into(), shape: vec![12288, 128], work: 8.0 * x.numel() as f64, unit: "gbps", inputs: vec![x.clone()], call: Box::new(move || x.softmax(-1)) });
    let x = rnd(ctx, &[8, 64, 56, 56], c)?;
    s.push(Spec { op: "R3", variant: "x.mean((2, 3))".into(), shape: vec![8, 64, 56, 56], work: 4.0 * (x.numel() + 512) as f64, unit: "gbps", inputs: vec![x.clone()], call: Box::new(move || x.mean([2, 3], false)) });
    let x = rnd(ctx, &[8, 64, 112, 112], c)?;
    let po = MaxPool2dOptions { kernel: (3, 3), stride: Some((2, 2)), padding: (1, 1), dilation: (1, 1), ceil_mode: false };
    s.push(Spec { op: "PL1", variant: "max_pool2d(x, 3, 2, 1)".into(), shape: vec![8, 64, 112, 112], work: 4.0 * (x.numel() + 8 * 64 * 56 * 56) as f64, unit: "gbps", inputs: vec![x.clone()], call: Box::new(move || x.max_pool2d(&po)) });
    // (row, input, weight, stride, padding, groups)
    type ConvRow = (&'static str, [usize; 4], [usize; 4], usize, usize, usize);
    let convs: [ConvRow; 7] = [
        ("C1", [8, 64, 56, 56], [256, 64, 1, 1], 1, 0, 1),
        ("C2", [8, 256, 56, 56], [64, 256, 1, 1], 1, 0, 1),
        ("C3", [8, 256, 56, 56], [512, 256, 1, 1], 2, 0, 1),
        ("C4", [1, 32, 112, 112], [64, 32, 1, 1], 1, 0, 1),
        ("C5", [8, 64, 56, 56], [64, 64, 3, 3], 1, 1, 1),
        ("C6", [8, 144, 56, 56], [144, 1, 3, 3], 1, 1, 144),
        ("C7", [8, 3, 224, 224], [64, 3, 7, 7], 2, 3, 1),
    ];
    for (op, xs, ws, st, pad, groups) in convs {
        let [n, _, h, w] = xs;
        let [k, cg, kh, kw] = ws;
        let (oh, ow) = ((h + 2 * pad - kh) / st + 1, (w + 2 * pad - kw) / st + 1);
        let flops = (2 * n * k * cg * kh * kw * oh * ow) as f64;
        let (wt, bias) = (rnd(ctx, &ws, c)?, rnd(ctx, &[k], c)?);
        let o = Conv2dOptions { stride: (st, st), padding: (pad, pad), groups, ..Default::default() };
        for (name, f) in [("conv NCHW", c), ("conv channels_last", cl)] {
            let x = rnd(ctx, &xs, f)?;
            // The weight in the input's format, as the peer script's `.to(memory_format=fmt)`.
            let (wt, bias) = (wt.contiguous(f)?, bias.clone());
            s.push(Spec { op, variant: name.into(), shape: xs.to_vec(), work: flops, unit: "gflops", inputs: vec![x.clone()], call: Box::new(move || x.conv2d(&wt, Some(&bias), &o)) });
        }
    }
    let (a, b) = (rnd(ctx, &[1024, 1024], c)?, rnd(ctx, &[1024, 1024], c)?);
    s.push(Spec { op: "M1", variant: "a @ b".into(), shape: vec![1024, 1024], work: 2.0 * 1024f64.powi(3), unit: "gflops", inputs: vec![a.clone(), b.clone()], call: Box::new(move || a.mm(&b)) });
    let (a, b, bias) = (rnd(ctx, &[512, 768], c)?, rnd(ctx, &[3072, 768], c)?, rnd(ctx, &[3072], c)?);
    s.push(Spec { op: "M2", variant: "linear(x, w, b)".into(), shape: vec![512, 768], work: 2.0 * 512.0 * 768.0 * 3072.0, unit: "gflops", inputs: vec![a.clone()], call: Box::new(move || a.linear(&b, Some(&bias))) });
    let (a, b) = (rnd(ctx, &[8, 12, 128, 64], c)?, rnd(ctx, &[8, 12, 128, 64], c)?);
    s.push(Spec { op: "M3", variant: "q @ k.transpose(-2, -1)".into(), shape: vec![8, 12, 128, 64], work: 2.0 * 96.0 * 128.0 * 128.0 * 64.0, unit: "gflops", inputs: vec![a.clone(), b.clone()], call: Box::new(move || a.matmul(&b.transpose(-2, -1)?)) });
    Ok(s)
}

/// Every row eager, then captured and replayed.
pub fn rows(ctx: &GpuContext) -> Result<Vec<CallRow>> {
    let min_s = min_seconds();
    let mut rows = Vec::new();
    for spec in specs(ctx)? {
        let (first, v) = time_calls(ctx, min_s, || (spec.call)().map(drop))?;
        let row = |mode, first_call_ms, times_s| CallRow { op: spec.op, variant: spec.variant.clone(), mode, shape: spec.shape.clone(), times_s, work: spec.work, unit: spec.unit, first_call_ms };
        rows.push(row("eager", first, v));
        if spec.variant.ends_with("in one Batch") {
            continue;
        }
        let t = Instant::now();
        let inputs: Vec<&DeviceTensor> = spec.inputs.iter().collect();
        let graph = ctx.capture(&inputs, || (spec.call)())?;
        let capture_ms = t.elapsed().as_secs_f64() * 1e3;
        // The replay and the crate's own wait for it (then `sync` returns at once).
        let (_, v) = time_calls(ctx, min_s, || graph.replay_and_wait(&[]))?;
        rows.push(row("graph", capture_ms, v));
    }
    rows.extend(floor(ctx, min_s)?);
    Ok(rows)
}

/// The floor under every call on this adapter, raw wgpu without the crate: an empty command
/// buffer submitted, then a blocking wait on its index (`F0`, `device.poll` with
/// `PollType::Wait`) or a polling one until its `on_submitted_work_done` callback ran (`F1`);
/// in both the timing rule's own wait follows, with nothing left to wait for.
fn floor(ctx: &GpuContext, min_s: f64) -> Result<Vec<CallRow>> {
    let (device, queue) = (ctx.device(), ctx.queue());
    let submit = || {
        let enc = device.create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
        queue.submit([enc.finish()])
    };
    let (first, v) = time_calls(ctx, min_s, || {
        let index = submit();
        device.poll(wgpu::PollType::Wait { submission_index: Some(index), timeout: None }).map_err(|e| strided_wgpu::Error::Gpu { op: "bench calls", message: format!("waiting: {e}") })?;
        Ok(())
    })?;
    let row = |variant: &str, first_call_ms, times_s| CallRow { op: "F0", variant: variant.into(), mode: "raw", shape: vec![], times_s, work: 1e9, unit: "calls_per_s", first_call_ms };
    let mut rows = vec![row("raw wgpu: empty submit, blocking wait", first, v)];
    let (first, v) = time_calls(ctx, min_s, || {
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let d = done.clone();
        submit();
        queue.on_submitted_work_done(move || d.store(true, std::sync::atomic::Ordering::Release));
        while !done.load(std::sync::atomic::Ordering::Acquire) {
            device.poll(wgpu::PollType::Poll).map_err(|e| strided_wgpu::Error::Gpu { op: "bench calls", message: format!("polling: {e}") })?;
        }
        Ok(())
    })?;
    rows.push(CallRow { op: "F1", ..row("raw wgpu: empty submit, polling wait", first, v) });
    Ok(rows)
}

/// Prints the rows as a table or JSON lines (`median_ms`, `min_ms`, `max_ms`, `iters`, the
/// unit's rate, `first_call_ms`: the first call, or for `graph` the capture).
pub fn print(ctx: &GpuContext, rows: &[CallRow], json: bool) {
    let a = ctx.adapter();
    if !json {
        println!("call rows; adapter: {} ({:?}, {:?}); wall clock around each call and a wait for the GPU, median (torch_cuda_bench.py's rule)", a.name, a.backend, a.device_type);
        println!("{:<4} {:<44} {:<6} {:>10} {:>10} {:>12} {:>10}", "op", "variant", "mode", "median_ms", "min_ms", "rate", "first_ms");
    }
    for r in rows {
        let med = r.median();
        let min = r.times_s.iter().copied().fold(f64::MAX, f64::min);
        let max = r.times_s.iter().copied().fold(f64::MIN, f64::max);
        let rate = r.work / med / 1e9;
        if json {
            let mut line = serde_json::json!({
                "part": "calls", "adapter": a.name, "op": r.op, "variant": r.variant, "mode": r.mode, "shape": r.shape,
                "median_ms": med * 1e3, "min_ms": min * 1e3, "max_ms": max * 1e3, "iters": r.times_s.len(), "first_call_ms": r.first_call_ms,
            });
            line[r.unit] = rate.into();
            println!("{line}");
        } else {
            println!("{:<4} {:<44} {:<6} {:>10.4} {:>10.4} {:>12.3} {:>10.2}  {}", r.op, r.variant, r.mode, med * 1e3, min * 1e3, rate, r.first_call_ms, r.unit);
        }
    }
}
