//! The main program's ResNet. `bench --only resnet`: ResNet-18 (widths 64..512, two BasicBlocks a stage, 1000 classes),
//! batch 8, 224x224, formula weights, batch norms folded (the network of
//! `examples/resnet/model.rs`), on the chosen adapter with default settings:
//! * images per second at steady state in NCHW and in channels-last (float32), and in
//!   channels-last float16 (`"dtype": "f16"`: parameters rounded once after folding, f16
//!   activations; its convolutions on tensor cores where the device has them and
//!   `STRIDED_WGPU_COOPERATIVE_MATRIX=all`), eager (`"mode": "eager"`: the calls held back and
//!   submitted in pieces, `SubmitPolicy::Deferred`, a context's default; `"eager_each_call"`:
//!   a submission a call, `SubmitPolicy::EachCall`) and as a replayed graph, all timed
//!   round-robin (each timed forward after one untimed; wall clock around the forward pass and
//!   the download of its logits, which waits for the GPU);
//! * each variant's first inference in a fresh process (`resnet-first nchw|nhwc [graph] [f16]`)
//!   with an empty Mesa shader cache, and the pipelines that forward pass created.
//!
//! The small ResNet of `tests/data/resnet_small.json` runs in the main program's walk-through
//! (`walkthrough_resnet`).

use std::time::Instant;

use strided_wgpu::{DType, DeviceTensor, Elementwise, Error, GpuContext, Graph, HostTensor, MemoryFormat, Result};
use strided_wgpu::advanced::SubmitPolicy;

use crate::resnet_model::{formula_params, max_abs_diff, Description, ModelError, Net};

const BATCH: usize = 8;
const SIZE: usize = 224;
const RUNS: usize = 5;

/// The modes of a forward: two eager policies, then the graph.
const MODES: [(&str, Option<SubmitPolicy>); 3] = [("eager", Some(SubmitPolicy::Deferred)), ("eager_each_call", Some(SubmitPolicy::EachCall)), ("graph", None)];

/// A model error as the crate's (the bench's rows report crate errors).
pub(crate) fn err(e: ModelError) -> Error {
    match e {
        ModelError::Crate(e) => e,
        other => Error::InvalidArgument { op: "resnet", detail: other.to_string() },
    }
}

fn format_of(layout: &str) -> MemoryFormat {
    if layout == "nhwc" {
        MemoryFormat::ChannelsLast
    } else {
        MemoryFormat::Contiguous
    }
}

/// The bench's variants: (layout, element type).
const VARIANTS: [(&str, DType); 3] = [("nchw", DType::F32), ("nhwc", DType::F32), ("nhwc", DType::F16)];

/// A device network in `dtype` and its input batch.
fn setup(ctx: &GpuContext, d: &Description, format: MemoryFormat, dtype: DType) -> Result<(Net<DeviceTensor>, DeviceTensor)> {
    let params = formula_params(d).map_err(err)?;
    let host = Net::build(d, &params, format).map_err(err)?;
    let host = if dtype == DType::F32 { host } else { host.with_dtype(dtype).map_err(err)? };
    let net = host.to_device(ctx).map_err(err)?;
    let rgba = DeviceTensor::upload(ctx, &HostTensor::from_vec(d.image(), &[d.batch, d.size, d.size, 4])?)?;
    Ok((net, rgba))
}

/// The logits as f32 values (a float16 network's widened exactly).
fn logits_f32(logits: &DeviceTensor) -> Result<Vec<f32>> {
    logits.download()?.to(DType::F32)?.to_vec::<f32>()
}

/// One forward pass, waited for: the seconds it took and the logits.
fn forward(net: &Net<DeviceTensor>, rgba: &DeviceTensor) -> Result<(f64, Vec<f32>)> {
    let t = Instant::now();
    let out = net.forward(rgba).map_err(err)?;
    let logits = logits_f32(&out.logits)?;
    Ok((t.elapsed().as_secs_f64(), logits))
}

use crate::cli::measure::median;

/// A captured forward pass of `net` over `rgba`, its logits among its outputs.
fn capture(ctx: &GpuContext, net: &Net<DeviceTensor>, rgba: &DeviceTensor) -> Result<Graph<crate::resnet_model::Outputs<DeviceTensor>>> {
    ctx.capture(&[rgba], || net.forward(rgba).map_err(err))
}

/// One replay, waited for by reading its logits: the seconds it took and the logits.
fn replay(graph: &Graph<crate::resnet_model::Outputs<DeviceTensor>>) -> Result<(f64, Vec<f32>)> {
    let t = Instant::now();
    graph.replay(&[])?;
    let logits = logits_f32(&graph.output().logits)?;
    Ok((t.elapsed().as_secs_f64(), logits))
}

/// `resnet-first nchw|nhwc [graph] [f16]`: the first inference of ResNet-18 in this (fresh)
/// process, eager or captured and replayed, in float32 or float16; prints one JSON line with its
/// wall time and the pipelines it created.
pub fn first_inference(layout: &str, graph: bool, dtype: DType) -> Result<()> {
    let ctx = GpuContext::new()?;
    let d = Description::resnet18(BATCH, SIZE);
    let (net, rgba) = setup(&ctx, &d, format_of(layout), dtype)?;
    // The setup's uploads and weight layout copies (held back under the deferred policy) done
    // before the clock starts: the first inference alone is timed.
    ctx.flush()?.wait()?;
    let before = ctx.pipeline_count();
    let (s, second) = if graph {
        let t = Instant::now();
        let g = capture(&ctx, &net, &rgba)?;
        replay(&g)?;
        (t.elapsed().as_secs_f64(), replay(&g)?.0)
    } else {
        (forward(&net, &rgba)?.0, forward(&net, &rgba)?.0)
    };
    let pipelines = ctx.pipeline_count() - before;
    println!("{}", serde_json::json!({ "first_inference_ms": s * 1e3, "second_inference_ms": second * 1e3, "pipelines": pipelines }));
    Ok(())
}

/// The bench rows: each variant eager and as a replayed graph, timed round-robin.
pub fn run(ctx: &GpuContext, json: bool) -> Result<()> {
    let d = Description::resnet18(BATCH, SIZE);
    let a = ctx.adapter();
    let nets = VARIANTS.iter().map(|&(l, t)| setup(ctx, &d, format_of(l), t)).collect::<Result<Vec<_>>>()?;
    // One untimed pass each (pipelines, buffers) and its counts, and the float32 layouts'
    // logits compared (and float16's with them); then each captured, and its replay compared
    // with eager bit for bit.
    let mut first = Vec::new();
    let mut eager_counts = Vec::new();
    let policy = ctx.submit_policy();
    for (n, x) in &nets {
        let mut counts = [Default::default(); 2];
        for (m, &(_, p)) in MODES[..2].iter().enumerate() {
            ctx.set_submit_policy(p.expect("an eager mode"))?;
            // The forward's own work (flushed), without its logits' download.
            let c = ctx.record_counts();
            let out = n.forward(x).map_err(err)?;
            ctx.flush()?;
            counts[m] = ctx.record_counts() - c;
            let logits = logits_f32(&out.logits)?;
            if m == 0 {
                first.push(logits);
            } else if logits.iter().map(|v| v.to_bits()).ne(first.last().expect("the first mode's logits").iter().map(|v| v.to_bits())) {
                return Err(Error::Gpu { op: "bench resnet", message: "the logits of a submission a call differ from those of calls held back".into() });
            }
        }
        eager_counts.push(counts);
    }
    ctx.set_submit_policy(policy)?;
    let graphs = nets.iter().map(|(n, x)| capture(ctx, n, x)).collect::<Result<Vec<_>>>()?;
    for (i, g) in graphs.iter().enumerate() {
        let logits = replay(g)?.1;
        if logits.iter().map(|v| v.to_bits()).ne(first[i].iter().map(|v| v.to_bits())) {
            return Err(Error::Gpu { op: "bench resnet", message: format!("{:?}: the replayed logits differ from the eager ones", VARIANTS[i]) });
        }
    }
    let wide = |v: &[f32]| v.iter().map(|&x| x as f64).collect::<Vec<_>>();
    let layout_diff = max_abs_diff(&wide(&first[0]), &wide(&first[1]));
    let half_diff = max_abs_diff(&wide(&first[1]), &wide(&first[2]));
    // Times of (variant, mode), as MODES.
    let mut times = vec![[Vec::new(), Vec::new(), Vec::new()]; VARIANTS.len()];
    for _ in 0..RUNS {
        for (i, (n, x)) in nets.iter().enumerate() {
            for (m, &(_, p)) in MODES[..2].iter().enumerate() {
                ctx.set_submit_policy(p.expect("an eager mode"))?;
                forward(n, x)?;
                times[i][m].push(forward(n, x)?.0);
            }
            ctx.set_submit_policy(policy)?;
            replay(&graphs[i])?;
            times[i][2].push(replay(&graphs[i])?.0);
        }
    }
    let cold = cold()?;
    if !json {
        println!();
        println!("resnet rows; adapter: {} ({:?}, {:?}); ResNet-18, batch {BATCH}, {SIZE}x{SIZE}, formula weights, default settings; wall clock of a forward and its logits' download", a.name, a.backend, a.device_type);
        println!("{:<14} {:<5} {:<15} {:>10} {:>10} {:>9} {:>10} {:>8} {:>7} {:>10}", "layout", "type", "mode", "images/s", "median ms", "first s", "pipelines", "submits", "passes", "dispatches");
    }
    for (i, &(l, dtype)) in VARIANTS.iter().enumerate() {
        let name = if l == "nhwc" { "channels-last" } else { "NCHW" };
        let op = if dtype == DType::F32 { format!("resnet18_{l}") } else { format!("resnet18_{l}_{dtype}") };
        for (m, &(mode, _)) in MODES.iter().enumerate() {
            // The first inference in a fresh process: eager (its context's default) and graph.
            let none = serde_json::Value::Null;
            let c = match m {
                0 => &cold[i][0],
                2 => &cold[i][1],
                _ => &none,
            };
            let (first_ms, pipelines) = (c["first_inference_ms"].as_f64(), c["pipelines"].as_u64());
            let counts = if m < 2 { eager_counts[i][m] } else { graphs[i].counts() };
            let ms = median(&times[i][m]) * 1e3;
            let ips = BATCH as f64 / ms * 1e3;
            if json {
                println!(
                    "{}",
                    serde_json::json!({ "part": "resnet", "op": op, "layout": l, "dtype": dtype.to_string(), "mode": mode, "batch": BATCH, "size": SIZE, "images_per_s": ips, "ms": ms, "median_ms": ms,
                        "first_inference_ms": first_ms, "pipelines": pipelines, "submits": counts.submits, "passes": counts.passes, "dispatches": counts.dispatches, "transfers": counts.transfers, "error": c.get("error") })
                );
            } else {
                let first = match c.get("error") {
                    Some(e) => format!("error: {e}"),
                    None => first_ms.map_or("-".into(), |ms| format!("{:.2}", ms / 1e3)),
                };
                println!("{:<14} {:<5} {:<15} {:>10.2} {:>10.1} {:>9} {:>10} {:>8} {:>7} {:>10}", name, dtype.to_string(), mode, ips, ms, first, pipelines.map_or("-".into(), |p| p.to_string()), counts.submits, counts.passes, counts.dispatches);
            }
        }
    }
    if !json {
        println!("the two float32 layouts' logits differ by at most {layout_diff:.2e}, float16's from float32's by {half_diff:.2e}; each graph's replay equals its eager pass bit for bit");
    }
    let failed = cold.iter().flatten().filter(|c| c.get("error").is_some()).count();
    crate::cli::measure::child_failures("bench resnet", failed, 2 * VARIANTS.len())
}

/// `bench --only resnet --profile`: per dispatch of one forward pass (captured, so the weight
/// packing is not among them) in each layout, its op, kernel and GPU time by timestamps, each
/// dispatch in a pass of its own; then their sum against the median wall time of a replay and
/// its logits' download.
pub fn profile(ctx: &GpuContext, json: bool) -> Result<()> {
    let d = Description::resnet18(BATCH, SIZE);
    let a = ctx.adapter();
    if !json {
        println!("resnet profile; adapter: {} ({:?}, {:?}); ResNet-18, batch {BATCH}, {SIZE}x{SIZE}; GPU timestamps around each dispatch", a.name, a.backend, a.device_type);
    }
    for layout in ["nchw", "nhwc"] {
        let (net, rgba) = setup(ctx, &d, format_of(layout), DType::F32)?;
        let graph = capture(ctx, &net, &rgba)?;
        replay(&graph)?;
        let rows = graph.profile()?;
        let walls: Vec<f64> = (0..RUNS).map(|_| replay(&graph).map(|r| r.0)).collect::<Result<_>>()?;
        let wall_ms = median(&walls) * 1e3;
        let sum: f64 = rows.iter().map(|r| r.2).sum();
        for (i, (op, kernel, ms)) in rows.iter().enumerate() {
            if json {
                println!("{}", serde_json::json!({ "part": "resnet_profile", "layout": layout, "index": i, "op": op, "kernel": kernel, "gpu_ms": ms }));
            } else {
                println!("{layout:<5} {i:>3} {op:<14} {kernel:<32} {ms:>9.3} ms");
            }
        }
        let c = graph.counts();
        if json {
            println!("{}", serde_json::json!({ "part": "resnet_profile", "layout": layout, "dispatches": rows.len(), "gpu_ms_sum": sum, "replay_wall_ms": wall_ms, "passes": c.passes, "submits": c.submits }));
        } else {
            println!("{layout}: {} dispatches, GPU {sum:.3} ms in all (a pass each); a replay and its download take {wall_ms:.3} ms of wall time ({} submit(s), {} pass(es))", rows.len(), c.submits, c.passes);
        }
    }
    Ok(())
}

/// Each variant's first inference, eager and graph, in a fresh process with an empty shader
/// cache.
fn cold() -> Result<Vec<[serde_json::Value; 2]>> {
    let exe = std::env::current_exe().map_err(|e| Error::InvalidArgument { op: "bench", detail: format!("the program's own path: {e}") })?;
    let mut out = Vec::new();
    for (layout, dtype) in VARIANTS {
        out.push([cold_one(&exe, layout, false, dtype)?, cold_one(&exe, layout, true, dtype)?]);
    }
    Ok(out)
}

fn cold_one(exe: &std::path::Path, layout: &str, graph: bool, dtype: DType) -> Result<serde_json::Value> {
    {
        let cache = std::env::temp_dir().join(format!("strided-wgpu-resnet-cold-{}-{layout}-{dtype}", std::process::id()));
        let _ = std::fs::remove_dir_all(&cache);
        std::fs::create_dir_all(&cache).map_err(|e| Error::InvalidArgument { op: "bench", detail: format!("{}: {e}", cache.display()) })?;
        let mut args = vec!["resnet-first", layout];
        if graph {
            args.push("graph");
        }
        if dtype == DType::F16 {
            args.push("f16");
        }
        let run = std::process::Command::new(exe).args(args).env("XDG_CACHE_HOME", &cache).env("MESA_SHADER_CACHE_DISABLE", "true").output();
        let _ = std::fs::remove_dir_all(&cache);
        let line = match run {
            Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).lines().last().unwrap_or_default().to_string(),
            Ok(o) => serde_json::json!({ "error": String::from_utf8_lossy(&o.stderr).trim() }).to_string(),
            Err(e) => serde_json::json!({ "error": e.to_string() }).to_string(),
        };
        Ok(serde_json::from_str(&line).unwrap_or_else(|_| serde_json::json!({ "error": line })))
    }
}

/// The main program's ResNet: the small network of `tests/data/resnet_small.json` on `ctx`
/// and on the CPU reference, channels-last; prints its top-1, the largest difference of its
/// logits from the CPU reference's and from PyTorch's, and the time of its first and second
/// forward pass.
pub fn walkthrough_resnet(ctx: &GpuContext) -> Result<()> {
    let d = Description::parse(include_str!("../../tests/data/resnet_small.json")).map_err(err)?;
    let params = formula_params(&d).map_err(err)?;
    let host = Net::build(&d, &params, MemoryFormat::ChannelsLast).map_err(err)?;
    let rgba = HostTensor::from_vec(d.image(), &[d.batch, d.size, d.size, 4])?;
    let reference = host.forward(&rgba).map_err(err)?.logits.to_vec::<f32>()?;
    let net = host.to_device(ctx).map_err(err)?;
    let drgba = DeviceTensor::upload(ctx, &rgba)?;
    // The weights' uploads and layout copies done before the first pass is timed.
    ctx.flush()?.wait()?;
    let before = ctx.pipeline_count();
    let (first, _) = forward(&net, &drgba)?;
    let pipelines = ctx.pipeline_count() - before;
    let t = Instant::now();
    let out = net.forward(&drgba).map_err(err)?;
    let logits = out.logits.download()?.to_vec::<f32>()?;
    let top1 = out.top1.download()?.to_vec::<i32>()?;
    let second = t.elapsed().as_secs_f64();
    // The same forward captured once and replayed: one submit.
    let counts = ctx.record_counts();
    net.forward(&drgba).map_err(err)?;
    ctx.flush()?;
    let eager = ctx.record_counts() - counts;
    let graph = ctx.capture(&[&drgba], || net.forward(&drgba).map_err(err))?;
    graph.replay(&[])?.wait()?;
    let t = Instant::now();
    graph.replay(&[])?;
    let replayed = graph.output().logits.download()?.to_vec::<f32>()?;
    let replay_s = t.elapsed().as_secs_f64();
    let g = graph.counts();
    let wide = |v: &[f32]| v.iter().map(|&x| x as f64).collect::<Vec<_>>();
    let vs_cpu = max_abs_diff(&wide(&logits), &wide(&reference));
    let vs_torch = d.logits.as_ref().map_or(f64::NAN, |want| max_abs_diff(&wide(&logits), want));
    println!(
        "\nA small ResNet (tests/data/resnet_small.json: {} images of {}x{}, widths {:?}, BasicBlocks {:?}, {} classes), channels-last, batch norms folded:",
        d.batch, d.size, d.size, d.widths, d.blocks, d.classes
    );
    println!("  top-1 {top1:?}; logits' largest difference from the CPU reference {vs_cpu:.2e}, from PyTorch's {vs_torch:.2e}");
    println!("  first forward pass {:.1} ms (compiling {pipelines} pipelines), second {:.2} ms", first * 1e3, second * 1e3);
    println!(
        "  eager: {} submits, {} compute passes, {} dispatches; captured as a graph and replayed: {:.2} ms, {} submit, {} passes ({} copies and clears between them), {} dispatches; logits {} eager's bit for bit",
        eager.submits,
        eager.passes,
        eager.dispatches,
        replay_s * 1e3,
        g.submits,
        g.passes,
        g.transfers,
        g.dispatches,
        if replayed.iter().map(|v| v.to_bits()).eq(logits.iter().map(|v| v.to_bits())) { "equal" } else { "DIFFER FROM" }
    );
    if replayed.iter().map(|v| v.to_bits()).ne(logits.iter().map(|v| v.to_bits())) {
        return Err(Error::Gpu { op: "walkthrough", message: "the ResNet's replayed logits differ from its eager logits".into() });
    }
    if vs_cpu > 1e-4 || d.top1.as_ref().is_some_and(|t| t.iter().zip(&top1).any(|(&a, &b)| a as i32 != b)) {
        return Err(Error::Gpu { op: "walkthrough", message: format!("the ResNet's device logits differ from the CPU reference by {vs_cpu:e}") });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use strided_wgpu::Strided;

    /// A float16 network's logits come back as f32 values through the bench's forward and
    /// replay (they failed as `to_vec::<f32>` of f16 elements before). The noop backend runs
    /// nothing, so only the shapes and the path are checked, on any machine.
    #[test]
    fn a_float16_network_gives_its_logits_as_f32() {
        let ctx = strided_wgpu::advanced::internal::noop_context().unwrap();
        let d = Description::parse(include_str!("../../tests/data/resnet_small.json")).unwrap();
        let (net, rgba) = setup(&ctx, &d, MemoryFormat::ChannelsLast, DType::F16).unwrap();
        assert_eq!(net.forward(&rgba).unwrap().logits.dtype(), DType::F16);
        let n = d.batch * d.classes;
        assert_eq!(forward(&net, &rgba).unwrap().1.len(), n);
        let graph = capture(&ctx, &net, &rgba).unwrap();
        assert_eq!(replay(&graph).unwrap().1.len(), n);
    }

    /// The blocks' sums and ReLUs written as torchvision does (in place after the
    /// convolution: `Residual::InPlace`) cost two dispatches a block eagerly, and a captured
    /// graph folds them back into the convolutions: the graph has the fused forward's
    /// dispatches, fewer than the eager forward's (issue 53). On the noop backend posing as a
    /// GPU, whose GEMM convolutions take a residual in their epilogue; nothing runs.
    #[test]
    fn a_captured_graph_folds_the_blocks_in_place_sums_and_relus() {
        use crate::resnet_model::Residual;
        let ctx = strided_wgpu::advanced::internal::noop_context().unwrap();
        let d = Description::parse(include_str!("../../tests/data/resnet_small.json")).unwrap();
        let (net, rgba) = setup(&ctx, &d, MemoryFormat::ChannelsLast, DType::F32).unwrap();
        let blocks = net.blocks() as u64;
        let eager = |residual| {
            let before = ctx.record_counts();
            net.forward_with(&rgba, residual).unwrap();
            ctx.flush().unwrap();
            (ctx.record_counts() - before).dispatches
        };
        let (fused, unfused) = (eager(Residual::Fused), eager(Residual::InPlace));
        assert!(blocks > 0);
        assert_eq!(unfused, fused + 2 * blocks, "eager: {fused} fused, {unfused} unfused dispatches, {blocks} blocks");
        let graph = |residual| ctx.capture(&[&rgba], || net.forward_with(&rgba, residual)).unwrap().counts().dispatches;
        assert_eq!(graph(Residual::InPlace), graph(Residual::Fused));
        assert!(graph(Residual::InPlace) < unfused);
    }
}
