//! The matrix-product rows of `bench` (`--only matmul`), each in float32 and float16: `mm`
//! [1024,1024] @ [1024,1024]; `linear` [512,768] x [3072,768]^T + bias (a transformer MLP);
//! `bmm` [96,128,64] @ [96,64,128] (attention scores), and the same with the right operand a
//! transposed view of [96,128,64]; `bmm_heads`, the same product as attention scores over heads
//! that PyTorch code reaches by permuting: q [8,128,12,64] seen as [8,12,128,64] @ k
//! [8,128,12,64] seen as [8,12,64,128] (batch dims that do not merge); the matrix-vector product [1,4096] @ [4096,4096]^T (GB/s of
//! the weight's bytes and `ratio_to_copy`: a contiguous copy kernel moving as many bytes, read
//! plus written). Every float32 row is timed alternately, run by run, with the 1x1 convolution
//! of the same m, n, k (input [batch, k, m, 1], weight [n, k], the convolution's default
//! kernel; `mm`'s reads and writes the product's own buffers: B as its input [1, k, n, 1], A as
//! its weight, the output as [1, m, n, 1]), and the matrix-vector rows with their copy too, so
//! that `ratio_to_conv` and `ratio_to_copy` compare like with like. Products run the adapter's
//! default kernel (nothing tuned). GFLOP/s counts 2 * batch * m * n * k. GPU timestamps around
//! the recorded work; medians of 15 runs after 2 warm-up runs. `ratio_to_conv` and
//! `ratio_to_copy` are the medians of the runs' own ratios (each run times the product and its
//! references one after another), so that a stall of the host during some runs moves both sides
//! of a ratio, not one: they can differ slightly from the ratio of the two medians.

use strided_wgpu::{Batch, Conv2dOptions, DeviceTensor, DType, Elementwise, GpuContext, Matmul, MemoryFormat, Result, Strided};
use strided_wgpu::advanced::GpuTimer;

const WARMUP: usize = 2;
const RUNS: usize = 15;

/// One measured row.
pub struct MatmulRow {
    pub op: &'static str,
    pub dtype: DType,
    pub shape: String,
    pub flops: f64,
    pub times_ms: Vec<f64>,
    /// The same product as a 1x1 convolution (float32 rows), timed alternately.
    pub conv_ms: Option<Vec<f64>>,
    /// Matrix-vector rows: the weight's bytes and a same-bytes copy's times.
    pub bytes: Option<f64>,
    pub copy_ms: Option<Vec<f64>>,
    pub kernel: String,
}

use crate::cli::measure::median;

impl MatmulRow {
    pub fn gflops(&self) -> f64 {
        self.flops / (median(&self.times_ms) * 1e-3) / 1e9
    }

    /// The median over runs of the reference's time over the product's, run by run.
    fn paired(&self, reference: Option<&Vec<f64>>) -> Option<f64> {
        reference.map(|r| median(&r.iter().zip(&self.times_ms).map(|(r, t)| r / t).collect::<Vec<_>>()))
    }

    /// Throughput over the 1x1 convolution's of the same product (float32 rows).
    pub fn ratio_to_conv(&self) -> Option<f64> {
        self.paired(self.conv_ms.as_ref())
    }

    /// Time of the same-bytes copy over the product's (matrix-vector rows).
    pub fn ratio_to_copy(&self) -> Option<f64> {
        self.paired(self.copy_ms.as_ref())
    }
}

/// Deterministic values in [-1, 1) of `dtype`.
fn filled(ctx: &GpuContext, shape: &[usize], seed: usize, dtype: DType) -> Result<DeviceTensor> {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n).map(|i| ((i * 37 + seed) % 101) as f32 / 50.5 - 1.0).collect();
    DeviceTensor::from_slice(ctx, &v, shape)?.to(dtype)
}

/// Work recorded into a batch.
type Work<'a> = &'a mut dyn FnMut(&mut Batch<'_>) -> Result<()>;

/// How a bench case sees its stored operands.
#[derive(Clone, Copy, PartialEq)]
enum Seen {
    AsStored,
    /// B's last two dims transposed.
    Transposed,
    /// Attention heads: A [b, s, h, d] as [b, h, s, d], B [b, s, h, d] as [b, h, d, s].
    Heads,
}

/// A bench case: op, A's stored shape, B's stored shape, how they are seen, whether a bias is
/// added, and batch, m, n, k.
type Case = (&'static str, Vec<usize>, Vec<usize>, Seen, bool, usize, usize, usize, usize);

/// Times every work of `works` alternately, WARMUP + RUNS runs each: run r times them in the
/// order rotated by r, so that none is always the one timed after another. The times of each,
/// in `works`' order.
fn time(timer: &GpuTimer, works: &mut [Work<'_>]) -> Result<Vec<Vec<f64>>> {
    let n = works.len();
    let mut times = vec![Vec::new(); n];
    for run in 0..WARMUP + RUNS {
        for i in (0..n).map(|i| (i + run) % n) {
            let t = timer.time(|bt| works[i](bt))?;
            if run >= WARMUP {
                times[i].push(t);
            }
        }
    }
    Ok(times)
}

/// Every matrix-product row.
pub fn rows(ctx: &GpuContext) -> Result<Vec<MatmulRow>> {
    let timer = GpuTimer::new(ctx)?;
    let mut out = Vec::new();
    for dtype in [DType::F32, DType::F16] {
        // (op, a shape, b: stored shape and whether it is seen transposed, bias, batch, m, n, k)
        let mut cases: Vec<Case> = vec![
            ("mm", vec![1024, 1024], vec![1024, 1024], Seen::AsStored, false, 1, 1024, 1024, 1024),
            ("linear", vec![512, 768], vec![3072, 768], Seen::Transposed, true, 1, 512, 3072, 768),
            ("bmm", vec![96, 128, 64], vec![96, 64, 128], Seen::AsStored, false, 96, 128, 128, 64),
            ("bmm_transposed", vec![96, 128, 64], vec![96, 128, 64], Seen::Transposed, false, 96, 128, 128, 64),
            ("bmm_heads", vec![8, 128, 12, 64], vec![8, 128, 12, 64], Seen::Heads, false, 96, 128, 128, 64),
            ("matvec", vec![1, 4096], vec![4096, 4096], Seen::Transposed, false, 1, 1, 4096, 4096),
        ];
        // A large square product, the tensor-core kernel's measure (seconds a run on a CPU
        // adapter: GPUs only).
        if ctx.adapter().device_type != wgpu::DeviceType::Cpu {
            cases.push(("mm", vec![4096, 4096], vec![4096, 4096], Seen::AsStored, false, 1, 4096, 4096, 4096));
        }
        for (op, ashape, bshape, seen, bias, batch, m, n, k) in cases {
            let a = filled(ctx, &ashape, 1, dtype)?;
            let bs = filled(ctx, &bshape, 2, dtype)?;
            let r = bshape.len();
            let (a, b) = match seen {
                Seen::AsStored => (a, bs.clone()),
                Seen::Transposed => (a, bs.transpose(r as isize - 2, r as isize - 1)?),
                Seen::Heads => (a.permute(&[0, 2, 1, 3])?, bs.permute(&[0, 2, 3, 1])?),
            };
            let bias_t = if bias { Some(filled(ctx, &[n], 3, dtype)?) } else { None };
            let y = if op == "linear" { a.linear(&bs, bias_t.as_ref())? } else { a.matmul(&b)? };
            let kernel = if op == "linear" { "auto".to_string() } else { format!("{:?}", ctx.matmul_choice_of(&a, &b)?) };
            let mut work = |bt: &mut Batch<'_>| if op == "linear" { bt.linear_out(&a, &bs, bias_t.as_ref(), &y) } else { bt.matmul_out(&a, &b, &y) };
            // The same product as a 1x1 convolution (float32): input [batch, k, m, 1], weight
            // [n, k]. `mm` on its own bytes (the same buffers, so that where they lie in memory
            // cannot favour either): B as the input [1, k, n, 1], A as the weight [m, k], the
            // output as [1, m, n, 1], pixels along n as the product's own route has them (its
            // bias, unused: `mm` adds none).
            let conv = if dtype == DType::F32 && op == "mm" {
                let cb = filled(ctx, &[m], 6, dtype)?;
                Some((b.view(&[1, k as isize, n as isize, 1])?, a.clone(), cb, y.view(&[1, m as isize, n as isize, 1])?))
            } else if dtype == DType::F32 {
                let x = filled(ctx, &[batch, k, m, 1], 4, dtype)?;
                let w = filled(ctx, &[n, k], 5, dtype)?;
                let cb = filled(ctx, &[n], 6, dtype)?;
                let cy = DeviceTensor::empty(ctx, &[batch, n, m, 1], DType::F32, MemoryFormat::Contiguous)?;
                Some((x, w, cb, cy))
            } else {
                None
            };
            let mut conv_work = conv.as_ref().map(|(x, w, cb, cy)| move |bt: &mut Batch<'_>| bt.conv2d_out(x, w, bias.then_some(cb), &Conv2dOptions::default(), cy));
            // Matrix-vector rows: the weight's bytes, and a contiguous copy of as many (half
            // read, half written), timed alternately with the product too.
            let (bytes, copy) = if op == "matvec" {
                let bytes = (n * k * dtype.size()) as f64;
                let len = (bytes / 8.0) as usize;
                let (s, d) = (DeviceTensor::zeros(ctx, &[len], DType::F32, MemoryFormat::Contiguous)?, DeviceTensor::zeros(ctx, &[len], DType::F32, MemoryFormat::Contiguous)?);
                (Some(bytes), Some((s, d)))
            } else {
                (None, None)
            };
            let vec4 = strided_wgpu::advanced::vec4_default(ctx.adapter().device_type);
            let mut copy_work = copy.as_ref().map(|(s, d)| move |bt: &mut Batch<'_>| bt.copy_with(d, s, vec4));
            let mut works: Vec<Work<'_>> = vec![&mut work];
            works.extend(conv_work.as_mut().map(|f| f as Work<'_>));
            works.extend(copy_work.as_mut().map(|f| f as Work<'_>));
            let mut times = time(&timer, &mut works)?.into_iter();
            let times_ms = times.next().unwrap_or_default();
            let conv_ms = conv.is_some().then(|| times.next().unwrap_or_default());
            let copy_ms = copy.is_some().then(|| times.next().unwrap_or_default());
            out.push(MatmulRow {
                op,
                dtype,
                shape: match seen {
                    Seen::Heads => format!("{ashape:?} heads: q @ k^T"),
                    _ => format!("{ashape:?} x {bshape:?}{}{}", if seen == Seen::Transposed { "^T" } else { "" }, if bias { " + bias" } else { "" }),
                },
                flops: 2.0 * (batch * m * n * k) as f64,
                times_ms,
                conv_ms,
                bytes,
                copy_ms,
                kernel,
            });
        }
    }
    Ok(out)
}

/// Prints the rows as JSON lines or as a table.
pub fn print(ctx: &GpuContext, rows: &[MatmulRow], json: bool) {
    let a = ctx.adapter();
    if !json {
        println!();
        println!("matmul rows; adapter: {} ({:?}); timing: {}; default kernels, medians of {RUNS} runs", a.name, a.backend, crate::cli::measure::timing(ctx));
        println!("{:<16} {:<5} {:<36} {:>10} {:>9} {:>14} {:>8} {:>8} {:>9}  kernel", "op", "dtype", "shape", "median_ms", "GFLOP/s", "conv1x1 GFLOP/s", "to_conv", "GB/s", "to_copy");
    }
    for r in rows {
        let conv = r.conv_ms.as_ref().map(|c| r.flops / (median(c) * 1e-3) / 1e9);
        let gbps = r.bytes.map(|b| b / (median(&r.times_ms) * 1e-3) / 1e9);
        let (to_conv, to_copy) = (r.ratio_to_conv(), r.ratio_to_copy());
        if json {
            println!(
                "{}",
                serde_json::json!({ "part": "matmul", "timing": crate::cli::measure::timing(ctx), "op": r.op, "dtype": r.dtype.to_string(), "shape": r.shape, "median_ms": median(&r.times_ms), "gflops": r.gflops(),
                    "conv1x1_gflops": conv, "ratio_to_conv": to_conv, "gbps": gbps, "ratio_to_copy": to_copy, "kernel": r.kernel })
            );
        } else {
            let f = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
            println!("{:<16} {:<5} {:<36} {:>10.2} {:>9.2} {:>14} {:>8} {:>8} {:>9}  {}", r.op, r.dtype, r.shape, median(&r.times_ms), r.gflops(), f(conv), f(to_conv), f(gbps), f(to_copy), r.kernel);
        }
    }
}
