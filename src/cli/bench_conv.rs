//! The 1x1 convolution rows of `bench`: each shape in NCHW, in NHWC, and NCHW converted to NHWC
//! then convolved (conversion included), with the kernel the autotuner picks. GFLOP/s counts
//! 2 * N * K * (C / groups) * OH * OW per convolution. Timing as for the copy rows: GPU
//! timestamps around the recorded work, medians of 15 runs after 2 warm-up runs.

use strided_wgpu::{conv1x1_shape, Conv1x1Options, ConvKernel, DType, DeviceTensor, GpuContext, GpuTimer, MemoryFormat, Result, Strided};

const WARMUP: usize = 2;
const RUNS: usize = 15;

/// The shapes the bench reports: input [N, C, H, W], K, stride.
pub const SHAPES: [([usize; 4], usize, usize); 4] = [([8, 64, 56, 56], 256, 1), ([8, 256, 56, 56], 64, 1), ([8, 256, 56, 56], 512, 2), ([1, 32, 112, 112], 64, 1)];

/// One measured row.
pub struct ConvRow {
    pub op: &'static str,
    pub shape: [usize; 4],
    pub k: usize,
    pub stride: usize,
    pub times_ms: Vec<f64>,
    pub flops: f64,
}

impl ConvRow {
    pub fn median(&self) -> f64 {
        let mut t = self.times_ms.clone();
        t.sort_by(f64::total_cmp);
        t[t.len() / 2]
    }
    pub fn gflops(&self) -> f64 {
        self.flops / (self.median() * 1e-3) / 1e9
    }
}

/// Deterministic values in [-1, 1).
fn filled(ctx: &GpuContext, shape: &[usize], seed: usize) -> Result<DeviceTensor> {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n).map(|i| ((i * 37 + seed) % 101) as f32 / 50.5 - 1.0).collect();
    DeviceTensor::from_slice(ctx, &v, shape)
}

/// Every convolution row, shape by shape.
pub fn rows(ctx: &GpuContext) -> Result<Vec<ConvRow>> {
    let timer = GpuTimer::new(ctx)?;
    let mut out = Vec::new();
    for (shape, k, s) in SHAPES {
        let o = Conv1x1Options { stride: (s, s), ..Default::default() };
        let x = filled(ctx, &shape, 1)?;
        let w = filled(ctx, &[k, shape[1]], 2)?;
        let b = filled(ctx, &[k], 3)?;
        let xl = DeviceTensor::empty(ctx, &shape, DType::F32, MemoryFormat::ChannelsLast)?;
        xl.copy_(&x)?;
        let g = conv1x1_shape(x.layout(), w.layout(), Some(b.layout()), [None; 3], &o)?;
        let oshape = [g.n, g.k, g.oh, g.ow];
        let yn = DeviceTensor::empty(ctx, &oshape, DType::F32, MemoryFormat::Contiguous)?;
        let yl = DeviceTensor::empty(ctx, &oshape, DType::F32, MemoryFormat::ChannelsLast)?;
        let mut time = |op: &'static str, convert: bool, xin: &DeviceTensor, y: &DeviceTensor| -> Result<()> {
            // Recordings never tune: measure this class's kernels (and the conversion's) first.
            ctx.tune_copy(&xl, &x)?;
            ctx.tune_conv1x1(xin, &w, Some(&b), &Conv1x1Options { output_format: Some(if y.is_contiguous() { MemoryFormat::Contiguous } else { MemoryFormat::ChannelsLast }), ..o })?;
            let mut times_ms = Vec::new();
            for run in 0..WARMUP + RUNS {
                let ms = timer.time(|bt| {
                    if convert {
                        bt.copy_(&xl, &x)?;
                    }
                    bt.conv1x1(y, xin, &w, Some(&b), &o, ConvKernel::Auto)
                })?;
                if run >= WARMUP {
                    times_ms.push(ms);
                }
            }
            out.push(ConvRow { op, shape, k, stride: s, times_ms, flops: g.flops(1) });
            Ok(())
        };
        time("conv1x1_nchw", false, &x, &yn)?;
        time("conv1x1_nhwc", false, &xl, &yl)?;
        time("conv1x1_nchw_via_nhwc", true, &xl, &yl)?;
    }
    Ok(out)
}

/// Prints the rows as JSON lines, or as a table with one line per shape.
pub fn print(ctx: &GpuContext, rows: &[ConvRow], json: bool) {
    if json {
        for r in rows {
            let (min, max) = r.times_ms.iter().fold((f64::MAX, f64::MIN), |(lo, hi), &t| (lo.min(t), hi.max(t)));
            let line = serde_json::json!({
                "op": r.op, "shape": r.shape, "k": r.k, "stride": r.stride, "median_ms": r.median(), "min_ms": min, "max_ms": max, "gflops": r.gflops(),
            });
            println!("{line}");
        }
        return;
    }
    println!();
    println!("{:<20} {:>4} {:>6} {:>22} {:>22} {:>22}", "conv1x1 input", "K", "stride", "NCHW ms (GFLOP/s)", "NHWC ms (GFLOP/s)", "NCHW->NHWC+conv");
    for chunk in rows.chunks(3) {
        let cell = |r: &ConvRow| format!("{:.2} ({:.1})", r.median(), r.gflops());
        let r = &chunk[0];
        println!("{:<20} {:>4} {:>6} {:>22} {:>22} {:>22}", format!("{:?}", r.shape), r.k, r.stride, cell(&chunk[0]), cell(&chunk[1]), cell(&chunk[2]));
    }
    for (class, kernel) in ctx.tuned_conv_choices() {
        println!("tuned conv: {class:?} -> {kernel:?}");
    }
}
