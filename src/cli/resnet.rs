//! The main program's ResNet. `bench --only resnet`: ResNet-18 (widths 64..512, two BasicBlocks a stage, 1000 classes),
//! batch 8, 224x224, formula weights, batch norms folded (the network of
//! `examples/resnet/model.rs`), on the chosen adapter with default settings:
//! * images per second at steady state in NCHW and in channels-last, the two layouts timed
//!   round-robin (each timed forward after one untimed; wall clock around the forward pass and
//!   the download of its logits, which waits for the GPU);
//! * each layout's first inference in a fresh process (`resnet-first nchw|nhwc`) with an empty
//!   Mesa shader cache, and the pipelines that forward pass created.
//!
//! The small ResNet of `tests/data/resnet_small.json` runs in the main program's walk-through
//! (`walkthrough_resnet`).

use std::time::Instant;

use strided_wgpu::{DeviceTensor, Error, GpuContext, HostTensor, MemoryFormat, Result};

use crate::resnet_model::{formula_params, max_abs_diff, Description, ModelError, Net};

const BATCH: usize = 8;
const SIZE: usize = 224;
const RUNS: usize = 5;

fn err(e: ModelError) -> Error {
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

/// A device network and its input batch.
fn setup(ctx: &GpuContext, d: &Description, format: MemoryFormat) -> Result<(Net<DeviceTensor>, DeviceTensor)> {
    let params = formula_params(d).map_err(err)?;
    let net = Net::build(d, &params, format).and_then(|n| n.to_device(ctx)).map_err(err)?;
    let rgba = DeviceTensor::upload(ctx, &HostTensor::from_vec(d.image(), &[d.batch, d.size, d.size, 4])?)?;
    Ok((net, rgba))
}

/// One forward pass, waited for: the seconds it took and the logits.
fn forward(net: &Net<DeviceTensor>, rgba: &DeviceTensor) -> Result<(f64, Vec<f32>)> {
    let t = Instant::now();
    let out = net.forward(rgba).map_err(err)?;
    let logits = out.logits.download()?.to_vec::<f32>()?;
    Ok((t.elapsed().as_secs_f64(), logits))
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// `resnet-first nchw|nhwc`: the first inference of ResNet-18 in this (fresh) process; prints
/// one JSON line with its wall time and the pipelines it created.
pub fn first_inference(layout: &str) -> Result<()> {
    let ctx = GpuContext::new()?;
    let d = Description::resnet18(BATCH, SIZE);
    let (net, rgba) = setup(&ctx, &d, format_of(layout))?;
    let before = ctx.pipeline_count();
    let (s, _) = forward(&net, &rgba)?;
    let pipelines = ctx.pipeline_count() - before;
    let (second, _) = forward(&net, &rgba)?;
    println!("{}", serde_json::json!({ "first_inference_ms": s * 1e3, "second_inference_ms": second * 1e3, "pipelines": pipelines }));
    Ok(())
}

/// The bench rows.
pub fn run(ctx: &GpuContext, json: bool) -> Result<()> {
    let d = Description::resnet18(BATCH, SIZE);
    let a = ctx.adapter();
    let layouts = ["nchw", "nhwc"];
    let nets = layouts.iter().map(|l| setup(ctx, &d, format_of(l))).collect::<Result<Vec<_>>>()?;
    // One untimed pass each (pipelines, buffers), and the two layouts' logits compared.
    let first: Vec<Vec<f32>> = nets.iter().map(|(n, x)| forward(n, x).map(|r| r.1)).collect::<Result<_>>()?;
    let wide = |v: &[f32]| v.iter().map(|&x| x as f64).collect::<Vec<_>>();
    let layout_diff = max_abs_diff(&wide(&first[0]), &wide(&first[1]));
    let mut times = vec![Vec::new(); layouts.len()];
    for _ in 0..RUNS {
        for (i, (n, x)) in nets.iter().enumerate() {
            forward(n, x)?;
            times[i].push(forward(n, x)?.0);
        }
    }
    let cold = cold(layouts)?;
    let ips: Vec<f64> = times.iter_mut().map(|t| BATCH as f64 / median(t)).collect();
    let faster = if ips[0] >= ips[1] { "NCHW" } else { "channels-last" };
    if !json {
        println!();
        println!("resnet rows; adapter: {} ({:?}, {:?}); ResNet-18, batch {BATCH}, {SIZE}x{SIZE}, formula weights, default settings", a.name, a.backend, a.device_type);
        println!("{:<14} {:>12} {:>12} {:>12} {:>10}", "layout", "images/s", "median ms", "first s", "pipelines");
    }
    for (i, l) in layouts.iter().enumerate() {
        let name = if *l == "nhwc" { "channels-last" } else { "NCHW" };
        let (first_ms, pipelines) = (cold[i]["first_inference_ms"].as_f64(), cold[i]["pipelines"].as_u64());
        if json {
            println!(
                "{}",
                serde_json::json!({ "part": "resnet", "op": format!("resnet18_{l}"), "batch": BATCH, "size": SIZE, "images_per_s": ips[i], "median_ms": BATCH as f64 / ips[i] * 1e3, "first_inference_ms": first_ms, "pipelines": pipelines, "error": cold[i].get("error") })
            );
        } else {
            let first = first_ms.map_or_else(|| format!("error: {}", cold[i]["error"]), |ms| format!("{:.2}", ms / 1e3));
            println!("{:<14} {:>12.2} {:>12.1} {:>12} {:>10}", name, ips[i], BATCH as f64 / ips[i] * 1e3, first, pipelines.map_or("-".into(), |p| p.to_string()));
        }
    }
    if !json {
        println!("faster layout: {faster} ({:.2}x); the two layouts' logits differ by at most {layout_diff:.2e}", ips[0].max(ips[1]) / ips[0].min(ips[1]));
    }
    Ok(())
}

/// Each layout's first inference in a fresh process with an empty shader cache.
fn cold(layouts: [&str; 2]) -> Result<Vec<serde_json::Value>> {
    let exe = std::env::current_exe().map_err(|e| Error::InvalidArgument { op: "bench", detail: format!("the program's own path: {e}") })?;
    let mut out = Vec::new();
    for layout in layouts {
        let cache = std::env::temp_dir().join(format!("strided-wgpu-resnet-cold-{}-{layout}", std::process::id()));
        let _ = std::fs::remove_dir_all(&cache);
        std::fs::create_dir_all(&cache).map_err(|e| Error::InvalidArgument { op: "bench", detail: format!("{}: {e}", cache.display()) })?;
        let run = std::process::Command::new(&exe).args(["resnet-first", layout]).env("XDG_CACHE_HOME", &cache).env("MESA_SHADER_CACHE_DISABLE", "true").output();
        let _ = std::fs::remove_dir_all(&cache);
        let line = match run {
            Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).lines().last().unwrap_or_default().to_string(),
            Ok(o) => serde_json::json!({ "error": String::from_utf8_lossy(&o.stderr).trim() }).to_string(),
            Err(e) => serde_json::json!({ "error": e.to_string() }).to_string(),
        };
        out.push(serde_json::from_str(&line).unwrap_or_else(|_| serde_json::json!({ "error": line })));
    }
    Ok(out)
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
    let before = ctx.pipeline_count();
    let (first, _) = forward(&net, &drgba)?;
    let pipelines = ctx.pipeline_count() - before;
    let t = Instant::now();
    let out = net.forward(&drgba).map_err(err)?;
    let logits = out.logits.download()?.to_vec::<f32>()?;
    let top1 = out.top1.download()?.to_vec::<i32>()?;
    let second = t.elapsed().as_secs_f64();
    let wide = |v: &[f32]| v.iter().map(|&x| x as f64).collect::<Vec<_>>();
    let vs_cpu = max_abs_diff(&wide(&logits), &wide(&reference));
    let vs_torch = d.logits.as_ref().map_or(f64::NAN, |want| max_abs_diff(&wide(&logits), want));
    println!(
        "\nA small ResNet (tests/data/resnet_small.json: {} images of {}x{}, widths {:?}, BasicBlocks {:?}, {} classes), channels-last, batch norms folded:",
        d.batch, d.size, d.size, d.widths, d.blocks, d.classes
    );
    println!("  top-1 {top1:?}; logits' largest difference from the CPU reference {vs_cpu:.2e}, from PyTorch's {vs_torch:.2e}");
    println!("  first forward pass {:.1} ms (compiling {pipelines} pipelines), second {:.2} ms", first * 1e3, second * 1e3);
    if vs_cpu > 1e-4 || d.top1.as_ref().is_some_and(|t| t.iter().zip(&top1).any(|(&a, &b)| a as i32 != b)) {
        return Err(Error::Gpu { op: "walkthrough", message: format!("the ResNet's device logits differ from the CPU reference by {vs_cpu:e}") });
    }
    Ok(())
}
