//! The reduction rows of `bench` (f32): `sum(dim=-1)` and `sum(dim=0)` of [4096, 4096];
//! `mean(dim=(2,3))` of [8,64,56,56] in NCHW and channels-last (global average pooling);
//! `amax(dim=1)` of [8,64,56,56]; `softmax(dim=-1)` of [4096, 1000] and [8,12,128,128];
//! `var(dim=(0,2,3))` of [8,64,56,56] (a batch-norm statistic); `argmax(dim=-1)` of
//! [4096, 1000]; `layer_norm` of [4096, 768] over its last dim (BERT-base's, 8 x 512 tokens)
//! and `group_norm` of [1, 512, 64, 64] in 32 groups (a diffusion VAE's), both affine, one
//! kernel each. Each reduction and scan writes a preallocated result (`out=`). GB/s counts the input read;
//! `ratio_to_copy` compares with a contiguous copy kernel reading (and writing) the same input
//! bytes, timed in the same run with the same warm-up.

use strided_wgpu::{DeviceTensor, Dims, GpuContext, MemoryFormat, Result, Strided};
use strided_wgpu::advanced::{GpuTimer, NormKernel};
use strided_wgpu::ops::{ReduceOp, ScanOp};

use crate::cli::measure::{measure, Case, Row};

/// Deterministic values in [-1, 1).
fn filled(ctx: &GpuContext, shape: &[usize], format: MemoryFormat) -> Result<DeviceTensor> {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n).map(|i| ((i * 37) % 101) as f32 / 50.5 - 1.0).collect();
    DeviceTensor::from_slice(ctx, &v, shape)?.contiguous(format)
}

/// A reduction case. `bytes` is twice the input's, so that the reference copy reads (and
/// writes) the input's bytes; [`print`] reports the input's.
fn reduction(ctx: &GpuContext, name: &str, x: DeviceTensor, op: ReduceOp, dims: Dims) -> Result<Case> {
    let (probe, _) = {
        let mut b = ctx.batch();
        let r = b.reduce(&x, op, dims.clone(), false, None, None, None)?;
        b.submit_and_wait()?;
        r
    };
    let out = DeviceTensor::empty(ctx, probe.shape(), probe.dtype(), MemoryFormat::Contiguous)?;
    Ok(Case {
        op: name.into(),
        shape: x.shape().to_vec(),
        dtype: x.dtype(),
        bytes: 2.0 * (x.numel() * x.dtype().size()) as f64,
        note: format!("{:?}", x.strides()),
        work: Box::new(move |b| b.reduce(&x, op, dims.clone(), false, None, Some(&out), None).map(drop)),
    })
}

fn scan(ctx: &GpuContext, name: &str, x: DeviceTensor, op: ScanOp, dim: isize) -> Result<Case> {
    let out = DeviceTensor::empty(ctx, x.shape(), x.dtype(), MemoryFormat::Contiguous)?;
    Ok(Case {
        op: name.into(),
        shape: x.shape().to_vec(),
        dtype: x.dtype(),
        bytes: 2.0 * (x.numel() * x.dtype().size()) as f64,
        note: String::new(),
        work: Box::new(move |b| b.scan(&x, op, dim, Some(&out)).map(drop)),
    })
}

/// A layer norm over the last dim (`groups` 0) or a group norm in `groups` groups, with a
/// weight and a bias.
fn norm(ctx: &GpuContext, name: &str, x: DeviceTensor, groups: usize, kernel: NormKernel) -> Result<Case> {
    let len = if groups == 0 { x.shape()[x.rank() - 1] } else { x.shape()[1] };
    let w = filled(ctx, &[len], MemoryFormat::Contiguous)?;
    let b = filled(ctx, &[len], MemoryFormat::Contiguous)?;
    Ok(Case {
        op: name.into(),
        shape: x.shape().to_vec(),
        dtype: x.dtype(),
        bytes: 2.0 * (x.numel() * x.dtype().size()) as f64,
        note: String::new(),
        work: Box::new(move |batch| {
            match groups {
                0 => batch.layer_norm_with(&x, &[len], Some(&w), Some(&b), 1e-5, kernel),
                g => batch.group_norm_with(&x, g, Some(&w), Some(&b), 1e-5, kernel),
            }
            .map(drop)
        }),
    })
}

/// Every reduction row.
pub fn rows(ctx: &GpuContext, warm: usize) -> Result<Vec<Row>> {
    let timer = GpuTimer::new(ctx)?;
    let nchw = |s: &[usize]| filled(ctx, s, MemoryFormat::Contiguous);
    let square = nchw(&[4096, 4096])?;
    let logits = nchw(&[4096, 1000])?;
    let act = nchw(&[8, 64, 56, 56])?;
    let cases = vec![
        reduction(ctx, "sum_dim-1", square.clone(), ReduceOp::Sum, Dims::from(-1))?,
        reduction(ctx, "sum_dim0", square.clone(), ReduceOp::Sum, Dims::from(0))?,
        reduction(ctx, "sum_all", square, ReduceOp::Sum, Dims::All)?,
        reduction(ctx, "mean_hw_nchw", act.clone(), ReduceOp::Mean, Dims::from([2, 3]))?,
        reduction(ctx, "mean_hw_nhwc", filled(ctx, &[8, 64, 56, 56], MemoryFormat::ChannelsLast)?, ReduceOp::Mean, Dims::from([2, 3]))?,
        reduction(ctx, "amax_dim1", act.clone(), ReduceOp::Amax, Dims::from(1))?,
        scan(ctx, "softmax_dim-1", logits.clone(), ScanOp::Softmax, -1)?,
        scan(ctx, "softmax_attention", nchw(&[8, 12, 128, 128])?, ScanOp::Softmax, -1)?,
        reduction(ctx, "var_batchnorm", act, ReduceOp::Var { correction: 0.0 }, Dims::from([0, 2, 3]))?,
        reduction(ctx, "var_batchnorm_nhwc", filled(ctx, &[8, 64, 56, 56], MemoryFormat::ChannelsLast)?, ReduceOp::Var { correction: 0.0 }, Dims::from([0, 2, 3]))?,
        reduction(ctx, "argmax_dim-1", logits, ReduceOp::Argmax, Dims::from(-1))?,
        norm(ctx, "layer_norm_bert", nchw(&[4096, 768])?, 0, NormKernel::Auto)?,
        norm(ctx, "group_norm_vae", nchw(&[1, 512, 64, 64])?, 32, NormKernel::Auto)?,
        // Its 32 rows a workgroup each, and each cut into 16 chunks (a GPU's own choice).
        norm(ctx, "group_norm_vae_rows", nchw(&[1, 512, 64, 64])?, 32, NormKernel::Rows)?,
        norm(ctx, "group_norm_vae_split", nchw(&[1, 512, 64, 64])?, 32, NormKernel::Split { chunks: 16 })?,
    ];
    measure(ctx, &timer, cases, warm)
}

/// Prints the rows: GB/s of input read and the ratio to the same-bytes copy.
pub fn print(ctx: &GpuContext, rows: &[Row], json: bool, warm: usize) {
    let a = ctx.adapter();
    if !json {
        println!("reduce rows; adapter: {} ({:?}, {:?}); timing: {}; GB/s of input read; each timed run after {warm} warming run(s)", a.name, a.backend, a.device_type, crate::cli::measure::timing(ctx));
        println!("{:<20} {:<20} {:<5} {:>10} {:>10} {:>10} {:>8} {:>9}  strides", "op", "shape", "dtype", "median_ms", "min_ms", "max_ms", "GB/s", "to_copy");
    }
    for r in rows {
        let (min, max) = r.times_ms.iter().fold((f64::MAX, f64::MIN), |(lo, hi), &t| (lo.min(t), hi.max(t)));
        let g = r.gbps() / 2.0;
        if json {
            println!("{}", serde_json::json!({"part": "reduce", "timing": crate::cli::measure::timing(ctx), "op": r.op, "shape": r.shape, "dtype": r.dtype.to_string(), "median_ms": r.median(), "min_ms": min, "max_ms": max, "gbps": g, "input_bytes": r.bytes / 2.0, "copy_median_ms": r.copy_ms, "ratio_to_copy": r.ratio_to_copy(), "warm": warm}));
        } else {
            println!("{:<20} {:<20} {:<5} {:>10.3} {:>10.3} {:>10.3} {:>8.2} {:>9.2}  {}", r.op, format!("{:?}", r.shape), r.dtype, r.median(), min, max, g, r.ratio_to_copy(), r.note);
        }
    }
}
