//! `cargo run --release -- bench [--json] [--warm N | --interleave] [--only host|calls|copy|elementwise|reduce|pool|conv|matmul|resnet [--profile]|cold]`:
//! the host cost of calls on wgpu's `noop` backend (`bench_host`), the copy rows
//! (`bench_copy`), the elementwise rows (`bench_elementwise`), the reduction rows
//! (`bench_reduce`), the pooling and shape rows (`bench_pool`), the convolution rows
//! (`bench_conv`), the matrix products (`bench_matmul`), ResNet-18 in both layouts
//! (`resnet`), each convolution's first call with an empty shader cache (`cold`), on the chosen
//! adapter in one run; `--only` runs one part, and the whole calls' wall times
//! (`bench_calls`) and ResNet's per-dispatch profile (`--only resnet --profile`) run only when
//! asked. A row that could not be measured (a child process that failed) is printed as an
//! error and makes the program exit 1 after the rest. How rows are timed: `measure`.

use strided_wgpu::{GpuContext, Result};

use crate::cli::measure::Row;

/// Runs the benchmark and prints it as a table or as JSON lines.
pub fn run(json: bool, warm: usize, only: Option<String>, profile: bool) -> Result<()> {
    if matches!(only.as_deref(), None | Some("host")) {
        crate::cli::bench_host::print(&crate::cli::bench_host::rows()?, json);
        if only.is_some() {
            return Ok(());
        }
    }
    let ctx = GpuContext::new()?;
    if only.as_deref() == Some("calls") {
        let rows = crate::cli::bench_calls::rows(&ctx)?;
        crate::cli::bench_calls::print(&ctx, &rows, json);
        return Ok(());
    }
    if matches!(only.as_deref(), None | Some("copy")) {
        let rows = crate::cli::bench_copy::rows(&ctx, warm)?;
        print(&ctx, "copy", &rows, json, warm);
    }
    if matches!(only.as_deref(), None | Some("elementwise")) {
        let rows = crate::cli::bench_elementwise::rows(&ctx, warm)?;
        print(&ctx, "elementwise", &rows, json, warm);
    }
    if matches!(only.as_deref(), None | Some("reduce")) {
        let rows = crate::cli::bench_reduce::rows(&ctx, warm)?;
        crate::cli::bench_reduce::print(&ctx, &rows, json, warm);
    }
    if matches!(only.as_deref(), None | Some("pool")) {
        let rows = crate::cli::bench_pool::rows(&ctx, warm)?;
        print(&ctx, "pool", &rows, json, warm);
    }
    if matches!(only.as_deref(), None | Some("conv")) {
        let conv = crate::cli::bench_conv::rows(&ctx)?;
        crate::cli::bench_conv::print(&ctx, &conv, json);
    }
    if matches!(only.as_deref(), None | Some("matmul")) {
        let rows = crate::cli::bench_matmul::rows(&ctx)?;
        crate::cli::bench_matmul::print(&ctx, &rows, json);
    }
    if profile {
        return crate::cli::resnet::profile(&ctx, json);
    }
    // Both parts print every row, whatever failed; the first error is the program's. The
    // network runs on a context of its own: the parts above tuned their shapes' classes in
    // `ctx` (some are ResNet-18's layers), and its rows are labelled the default settings'.
    let resnet = if matches!(only.as_deref(), None | Some("resnet")) { GpuContext::new().and_then(|fresh| crate::cli::resnet::run(&fresh, json)) } else { Ok(()) };
    let cold = if matches!(only.as_deref(), None | Some("cold")) { crate::cli::bench_conv::cold_rows(json) } else { Ok(()) };
    resnet.and(cold)
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
            crate::cli::measure::timing(ctx),
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
                "timing": crate::cli::measure::timing(ctx),
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
