//! A whole ResNet (torchvision's BasicBlock layout) end to end on the default adapter, built
//! with the crate's public API only (`examples/resnet/model.rs` holds the network).
//!
//! ```text
//! cargo run --release --example resnet -- tests/data/resnet_small.json [--layout nchw|channels-last]
//!     [--dtype f32|f16|bf16] [--weights FILE.safetensors] [--cpu | --graph]
//! cargo run --release --example resnet -- tests/data/resnet_small.json --write-weights FILE.safetensors
//! ```
//!
//! The description file gives the image size, batch, stage widths and blocks, and classes (the
//! format of `tests/data/resnet_small.json`, see tests/data/README.md). The parameters come
//! from the description's closed formulas, or with `--weights` from a safetensors file by their
//! torchvision names (`safetensors.torch.save_file(model.state_dict(), FILE)` in PyTorch);
//! `--write-weights` writes the formula parameters to such a file and exits. Activations are
//! kept channels-last unless `--layout nchw`; `--dtype f16` (or `bf16`) rounds the folded
//! parameters to that type and keeps the activations in it (convolutions accumulate in f32);
//! `--cpu` runs the crate's CPU reference instead
//! of the adapter; `--graph` captures the forward pass once (over a blank input) and replays
//! the graph on the image: one submit ([`strided_wgpu::Graph`]).
//!
//! Prints `logits: [..]` (a JSON array, row-major `[batch, classes]`, a NaN or infinity as
//! `null`), `top1: [..]`, and, when
//! the file has PyTorch's logits and the parameters are its formulas' (no `--weights`),
//! `max_abs_diff: D` (the largest difference from them); it then exits 1 where D passes
//! 1e-4 (float32; 5e-4 float16, 4e-3 bfloat16: about 5x what the host reaches on the small
//! network's weights) times 1 + the largest |logit|, or where the top-1 differs from the
//! file's.

#[path = "resnet/model.rs"]
mod model;
#[path = "resnet/weights.rs"]
mod weights;

use model::{Description, ModelError, Net, Outputs, Params, Result, Tensor};
use strided_wgpu::{DType, DeviceTensor, Elementwise, GpuContext, HostTensor, MemoryFormat, Strided};

/// The command line.
struct Args {
    description: String,
    format: MemoryFormat,
    dtype: DType,
    weights: Option<String>,
    write_weights: Option<String>,
    cpu: bool,
    graph: bool,
}

const USAGE: &str = "usage: resnet <description.json> [--layout nchw|channels-last] [--dtype f32|f16|bf16] [--weights FILE.safetensors] [--write-weights FILE.safetensors] [--cpu | --graph]";

fn parse_args(args: &[String]) -> std::result::Result<Args, String> {
    let mut it = args.iter();
    let mut a = Args { description: String::new(), format: MemoryFormat::ChannelsLast, dtype: DType::F32, weights: None, write_weights: None, cpu: false, graph: false };
    // The flags of a run given (which `--write-weights`, running nothing, refuses).
    let mut run_flags: Vec<&str> = Vec::new();
    while let Some(arg) = it.next() {
        if matches!(arg.as_str(), "--layout" | "--dtype" | "--weights" | "--cpu" | "--graph") {
            run_flags.push(arg.as_str());
        }
        match arg.as_str() {
            "--layout" => {
                a.format = match it.next().map(String::as_str) {
                    Some("nchw") => MemoryFormat::Contiguous,
                    Some("channels-last" | "nhwc") => MemoryFormat::ChannelsLast,
                    other => return Err(format!("--layout takes nchw or channels-last, got {other:?}")),
                }
            }
            "--dtype" => {
                a.dtype = match it.next().map(String::as_str) {
                    Some("f32") => DType::F32,
                    Some("f16") => DType::F16,
                    Some("bf16") => DType::BF16,
                    other => return Err(format!("--dtype takes f32, f16 or bf16, got {other:?}")),
                }
            }
            "--weights" => a.weights = Some(it.next().ok_or("--weights needs a file")?.clone()),
            "--write-weights" => a.write_weights = Some(it.next().ok_or("--write-weights needs a file")?.clone()),
            "--cpu" => a.cpu = true,
            "--graph" => a.graph = true,
            f if f.starts_with("--") => return Err(format!("unknown flag {f}")),
            f if a.description.is_empty() => a.description = f.to_string(),
            f => return Err(format!("one description file only, got a second: {f}")),
        }
    }
    if a.description.is_empty() {
        return Err("no description file".into());
    }
    if a.cpu && a.graph {
        return Err("--graph replays on the adapter: not with --cpu".into());
    }
    // Writing the formula's parameters runs nothing: flags of a run with it were ignored.
    if a.write_weights.is_some() && !run_flags.is_empty() {
        return Err(format!("--write-weights writes the description's formula parameters and runs nothing: not with {}", run_flags.join(", ")));
    }
    Ok(a)
}

/// The parameters: from `weights` (safetensors bytes) when given, else the formulas.
fn params(d: &Description, weights: Option<&[u8]>) -> Result<Params> {
    match weights {
        Some(bytes) => weights::load(bytes, d),
        None => model::formula_params(d),
    }
}

/// What a run prints and the tests check, on the host.
struct Report {
    logits: Vec<f32>,
    #[cfg_attr(not(test), allow(dead_code))]
    probs: Vec<f32>,
    top1: Vec<i32>,
}

fn report<T: Tensor>(o: Outputs<T>, download: impl Fn(&T) -> Result<HostTensor>) -> Result<Report> {
    let f32s = |t: &T| -> Result<Vec<f32>> { Ok(download(t)?.to(DType::F32)?.to_vec()?) };
    Ok(Report { logits: f32s(&o.logits)?, probs: f32s(&o.probs)?, top1: download(&o.top1)?.to_vec()? })
}

/// Runs the network of `d` in `dtype` on the host (the CPU reference) or on `ctx`, eagerly or
/// (`graph`) captured once over a blank input and replayed on the image.
fn run(d: &Description, params: &Params, format: MemoryFormat, dtype: DType, ctx: Option<&GpuContext>, graph: bool) -> Result<Report> {
    let net = Net::build(d, params, format)?;
    let net = if dtype == DType::F32 { net } else { net.with_dtype(dtype)? };
    let rgba = HostTensor::from_vec(d.image(), &[d.batch, d.size, d.size, 4])?;
    match ctx {
        None => report(net.forward(&rgba)?, |t| Ok(t.clone())),
        Some(ctx) if graph => {
            let net = net.to_device(ctx)?;
            let blank = DeviceTensor::zeros(ctx, rgba.shape(), rgba.dtype(), MemoryFormat::Contiguous)?;
            let g = ctx.capture(&[&blank], || net.forward(&blank))?;
            g.replay(&[&DeviceTensor::upload(ctx, &rgba)?])?;
            report(Outputs { logits: g.output().logits.clone(), probs: g.output().probs.clone(), top1: g.output().top1.clone() }, |t| Ok(t.download()?))
        }
        Some(ctx) => {
            let net = net.to_device(ctx)?;
            let rgba = DeviceTensor::upload(ctx, &rgba)?;
            report(net.forward(&rgba)?, |t| Ok(t.download()?))
        }
    }
}

fn json_list<T: std::fmt::Display>(v: &[T]) -> String {
    format!("[{}]", v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", "))
}

/// The logits as a JSON array: a NaN or an infinity (weights that make one, a float16 logit
/// past 65504), which JSON cannot hold, is `null`, as serde_json writes it.
fn json_floats(v: &[f32]) -> String {
    format!("[{}]", v.iter().map(|x| if x.is_finite() { x.to_string() } else { "null".to_string() }).collect::<Vec<_>>().join(", "))
}

fn main_inner(a: &Args) -> Result<()> {
    let text = std::fs::read_to_string(&a.description).map_err(|e| ModelError::Description(format!("{}: {e}", a.description)))?;
    let d = Description::parse(&text)?;
    if let Some(out) = &a.write_weights {
        let bytes = weights::save(&model::formula_params(&d)?)?;
        std::fs::write(out, &bytes).map_err(|e| ModelError::Weights(format!("{out}: {e}")))?;
        println!("wrote {} parameters ({} bytes) to {out}", d.parameters().len(), bytes.len());
        return Ok(());
    }
    let bytes = match &a.weights {
        Some(f) => Some(std::fs::read(f).map_err(|e| ModelError::Weights(format!("{f}: {e}")))?),
        None => None,
    };
    // Errors of the file's contents name it too.
    let params = params(&d, bytes.as_deref()).map_err(|e| match (&a.weights, e) {
        (Some(f), ModelError::Weights(m)) => ModelError::Weights(format!("{f}: {m}")),
        (Some(f), ModelError::Parameter { name, detail }) => ModelError::Parameter { name, detail: format!("{detail} (in {f})") },
        (_, e) => e,
    })?;
    let ctx = if a.cpu { None } else { Some(GpuContext::new()?) };
    let where_ = ctx.as_ref().map_or("the CPU reference".to_string(), |c| format!("{} ({:?})", c.adapter().name, c.adapter().backend));
    eprintln!("resnet: {} images of {}x{}, widths {:?}, blocks {:?}, {} classes, {:?}, {}, on {where_}", d.batch, d.size, d.size, d.widths, d.blocks, d.classes, a.format, a.dtype);
    let r = run(&d, &params, a.format, a.dtype, ctx.as_ref(), a.graph)?;
    println!("logits: {}", json_floats(&r.logits));
    println!("top1: {}", json_list(&r.top1));
    // The file's logits are those of its formula weights: another file's weights compute others.
    match (&d.logits, &a.weights) {
        (Some(want), None) => {
            let got: Vec<f64> = r.logits.iter().map(|&x| x as f64).collect();
            let diff = model::max_abs_diff(&got, want);
            println!("max_abs_diff: {diff:e}");
            // The bounds of this example's tests (about 5x what the host reaches): past them,
            // or with another top-1 than PyTorch's, the run fails (exit 1).
            let scale = 1.0 + want.iter().fold(0f64, |m, v| m.max(v.abs()));
            let bound = scale
                * match a.dtype {
                    DType::F16 => 5e-4,
                    DType::BF16 => 4e-3,
                    _ => 1e-4,
                };
            let top1: Vec<usize> = r.top1.iter().map(|&i| i as usize).collect();
            if diff.is_nan() || diff > bound || d.top1.as_ref().is_some_and(|t| *t != top1) {
                eprintln!("resnet: the logits differ from PyTorch's by {diff:e} (bound {bound:e}), top-1 {top1:?} against {:?}", d.top1);
                std::process::exit(1);
            }
        }
        (Some(_), Some(f)) => eprintln!("resnet: no max_abs_diff: the description's logits are those of its own weights, not {f}'s"),
        (None, _) => {}
    }
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let a = match parse_args(&args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("resnet: {e}\n{USAGE}");
            std::process::exit(2);
        }
    };
    if let Err(e) = main_inner(&a) {
        eprintln!("resnet: {e}");
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strided_wgpu::Strided;

    const SMALL: &str = include_str!("../tests/data/resnet_small.json");

    fn check(d: &Description, r: &Report, what: &str) {
        let logits: Vec<f64> = r.logits.iter().map(|&x| x as f64).collect();
        let probs: Vec<f64> = r.probs.iter().map(|&x| x as f64).collect();
        let (dl, dp) = (model::max_abs_diff(&logits, d.logits.as_ref().unwrap()), model::max_abs_diff(&probs, d.probs.as_ref().unwrap()));
        println!("resnet {what}: logits max |diff| {dl:.2e}, probs {dp:.2e}");
        assert!(dl <= 1e-4, "{what}: logits differ from PyTorch's by {dl:e}");
        assert!(dp <= 1e-5, "{what}: probabilities differ from PyTorch's by {dp:e}");
        let top1: Vec<usize> = r.top1.iter().map(|&i| i as usize).collect();
        assert_eq!(&top1, d.top1.as_ref().unwrap(), "{what}: top-1");
    }

    /// Each adapter the tests open (lavapipe and llvmpipe in CI), or none.
    fn contexts() -> Vec<GpuContext> {
        use std::io::Write;
        let require = std::env::var("STRIDED_WGPU_REQUIRE_ADAPTER").as_deref() == Ok("1");
        // A backend STRIDED_WGPU_REQUIRE_BACKENDS names must open (as tests/common/gpu.rs).
        let required = std::env::var("STRIDED_WGPU_REQUIRE_BACKENDS").unwrap_or_default().to_lowercase();
        let mut out = Vec::new();
        for backends in [wgpu::Backends::PRIMARY, wgpu::Backends::GL] {
            match pollster::block_on(GpuContext::for_backends(backends)) {
                Ok(c) => out.push(c),
                // Straight to stderr: libtest captures eprintln!, and a skip must be seen.
                Err(e) => { let _ = writeln!(std::io::stderr(), "!!! resnet example: SKIPPING {backends:?}: no adapter ({e})"); }
            }
        }
        for r in required.split(',').map(str::trim).filter(|r| !r.is_empty()) {
            assert!(out.iter().any(|c| format!("{:?}", c.adapter().backend).to_lowercase() == r), "STRIDED_WGPU_REQUIRE_BACKENDS names {r}, but no such adapter opened");
        }
        assert!(!out.is_empty() || !require, "STRIDED_WGPU_REQUIRE_ADAPTER=1 but no adapter opened");
        out
    }

    /// PyTorch's logits from the formulas and from a safetensors file, on the host and on each
    /// adapter, in both layouts.
    #[test]
    fn resnet_small_matches_pytorch() {
        let d = Description::parse(SMALL).unwrap();
        let formula = model::formula_params(&d).unwrap();
        let file = weights::save(&formula).unwrap();
        let loaded = params(&d, Some(&file)).unwrap();
        for (name, t) in &formula {
            assert_eq!(t.to_vec::<f32>().unwrap(), loaded[name].to_vec::<f32>().unwrap(), "{name} changed through the file");
        }
        check(&d, &run(&d, &formula, MemoryFormat::Contiguous, DType::F32, None, false).unwrap(), "host NCHW");
        for ctx in contexts() {
            let a = format!("{:?}", ctx.adapter().backend);
            for format in [MemoryFormat::Contiguous, MemoryFormat::ChannelsLast] {
                let eager = run(&d, &formula, format, DType::F32, Some(&ctx), false).unwrap();
                check(&d, &eager, &format!("{a} {format:?} formulas"));
                // Captured over a blank input and replayed on the image: PyTorch's logits, and
                // the eager pass's bits.
                let replayed = run(&d, &formula, format, DType::F32, Some(&ctx), true).unwrap();
                check(&d, &replayed, &format!("{a} {format:?} graph"));
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&replayed.logits), bits(&eager.logits), "{a} {format:?}: graph logits against eager");
                assert_eq!(bits(&replayed.probs), bits(&eager.probs), "{a} {format:?}: graph probabilities against eager");
                assert_eq!(replayed.top1, eager.top1, "{a} {format:?}: graph top1 against eager");
                // A second forward pass (here on parameters read from the file) compiles
                // nothing: every pipeline is made once per context.
                let compiled = ctx.pipeline_count();
                check(&d, &run(&d, &loaded, format, DType::F32, Some(&ctx), false).unwrap(), &format!("{a} {format:?} safetensors"));
                assert_eq!(ctx.pipeline_count(), compiled, "{a} {format:?}: a second forward pass compiled pipelines");
            }
        }
    }

    /// The blocks' sums and ReLUs written as torchvision does (in place after the second
    /// convolution, `Residual::InPlace`) give the fused forward's logits bit for bit: on the
    /// host, and on each adapter in both layouts, eagerly and captured (the CPU adapters'
    /// convolutions take no residual, so their graphs keep the adds and ReLUs), and on Vulkan
    /// posing as a GPU, whose graph folds them into its GEMM convolutions (as many dispatches
    /// as the hand-fused graph).
    #[test]
    fn in_place_residuals_give_the_fused_forwards_bits() {
        use model::Residual;
        let d = Description::parse(SMALL).unwrap();
        let p = model::formula_params(&d).unwrap();
        let rgba = HostTensor::from_vec(d.image(), &[d.batch, d.size, d.size, 4]).unwrap();
        let bits = |t: &HostTensor| t.to_vec::<f32>().unwrap().iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        let host = Net::build(&d, &p, MemoryFormat::Contiguous).unwrap();
        assert_eq!(bits(&host.forward_with(&rgba, Residual::InPlace).unwrap().logits), bits(&host.forward(&rgba).unwrap().logits), "host");
        // Each adapter with its own kernels (CPU adapters' convolutions take no residual: the
        // graph keeps the add and the ReLU), and Vulkan's posing as a GPU, whose GEMM
        // convolutions fold them (channels-last: the GPUs' layout).
        let ctxs = contexts();
        let posing = ctxs.first().map(|c| posing_as_gpu(c).expect("a device of the adapter's own"));
        let runs = ctxs.into_iter().flat_map(|c| [(c.clone(), MemoryFormat::Contiguous), (c, MemoryFormat::ChannelsLast)]).chain(posing.map(|c| (c, MemoryFormat::ChannelsLast)));
        for (ctx, format) in runs {
            {
                let what = format!("{} ({:?}) {format:?}", ctx.adapter().name, ctx.adapter().backend);
                let net = Net::build(&d, &p, format).unwrap().to_device(&ctx).unwrap();
                let x = DeviceTensor::upload(&ctx, &rgba).unwrap();
                let fused = bits(&net.forward(&x).unwrap().logits.download().unwrap());
                let eager = bits(&net.forward_with(&x, Residual::InPlace).unwrap().logits.download().unwrap());
                assert_eq!(eager, fused, "{what}: eager");
                let g = ctx.capture(&[&x], || net.forward_with(&x, Residual::InPlace)).unwrap();
                g.replay_and_wait(&[]).unwrap();
                assert_eq!(bits(&g.output().logits.download().unwrap()), fused, "{what}: graph");
                if ctx.adapter().device_type != wgpu::DeviceType::Cpu {
                    // Folded: the captured forward has the hand-fused one's dispatches.
                    let hand = ctx.capture(&[&x], || net.forward(&x)).unwrap();
                    assert_eq!(g.counts().dispatches, hand.counts().dispatches, "{what}: the graph did not fold the adds and ReLUs");
                }
            }
        }
    }

    /// `ctx`'s adapter on a device of its own that the crate takes for a discrete GPU (so the
    /// GPUs' default kernels run on it).
    fn posing_as_gpu(ctx: &GpuContext) -> Option<GpuContext> {
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle());
        let a = ctx.adapter();
        let adapter = pollster::block_on(instance.enumerate_adapters(a.backend.into())).into_iter().find(|x| x.get_info().name == a.name)?;
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("resnet example test"),
            required_features: wgpu::Features::empty(),
            required_limits: adapter.limits(),
            experimental_features: wgpu::ExperimentalFeatures::disabled(),
            memory_hints: wgpu::MemoryHints::default(),
            trace: wgpu::Trace::Off,
        }))
        .ok()?;
        let mut info = adapter.get_info();
        info.device_type = wgpu::DeviceType::DiscreteGpu;
        info.name = format!("{} posing as a GPU", info.name);
        Some(GpuContext::from_device(device, queue, &info))
    }

    /// The network in float16 and bfloat16 (`--dtype`): on the host and on each adapter, in both
    /// layouts, eager and replayed, PyTorch's top-1 and its float64 logits within 5e-4 (f16) or
    /// 4e-3 (bf16): about 5x what the host reached on these weights (5.3e-5 and 8.6e-4); and the
    /// replay equal to the eager pass bit for bit.
    #[test]
    fn resnet_small_in_half_precision() {
        let d = Description::parse(SMALL).unwrap();
        let formula = model::formula_params(&d).unwrap();
        for (dtype, bound) in [(DType::F16, 5e-4), (DType::BF16, 4e-3)] {
            let near = |r: &Report, what: &str| {
                let logits: Vec<f64> = r.logits.iter().map(|&x| x as f64).collect();
                let dl = model::max_abs_diff(&logits, d.logits.as_ref().unwrap());
                println!("resnet {dtype} {what}: logits max |diff| {dl:.2e}");
                assert!(dl <= bound, "{dtype} {what}: logits differ from PyTorch's by {dl:e}");
                assert_eq!(r.top1.iter().map(|&i| i as usize).collect::<Vec<_>>(), *d.top1.as_ref().unwrap(), "{dtype} {what}: top-1");
            };
            near(&run(&d, &formula, MemoryFormat::ChannelsLast, dtype, None, false).unwrap(), "host");
            for ctx in contexts() {
                for format in [MemoryFormat::Contiguous, MemoryFormat::ChannelsLast] {
                    let what = format!("{:?} {format:?}", ctx.adapter().backend);
                    let eager = run(&d, &formula, format, dtype, Some(&ctx), false).unwrap();
                    near(&eager, &what);
                    let replayed = run(&d, &formula, format, dtype, Some(&ctx), true).unwrap();
                    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&replayed.logits), bits(&eager.logits), "{dtype} {what}: graph logits against eager");
                }
            }
        }
    }

    fn param_error(r: Result<Params>, name: &str) {
        match r {
            Err(ModelError::Parameter { name: n, .. }) => assert_eq!(n, name),
            Err(e) => panic!("expected an error naming {name}, got {e}"),
            Ok(_) => panic!("expected an error naming {name}"),
        }
    }

    /// Bad descriptions and weight files are typed errors naming what is wrong.
    #[test]
    fn bad_descriptions_and_weights() {
        let d = Description::parse(SMALL).unwrap();
        // A description missing a field, with a mis-shaped or missing parameter.
        let mut v: serde_json::Value = serde_json::from_str(SMALL).unwrap();
        v.as_object_mut().unwrap().remove("widths");
        assert!(matches!(Description::parse(&v.to_string()), Err(ModelError::Description(m)) if m.contains("widths")));
        let mut v: serde_json::Value = serde_json::from_str(SMALL).unwrap();
        v["param_shapes"]["layer2.0.conv1.weight"] = serde_json::json!([32, 16, 3, 1]);
        assert!(matches!(Description::parse(&v.to_string()), Err(ModelError::Parameter { name, .. }) if name == "layer2.0.conv1.weight"));
        let mut v: serde_json::Value = serde_json::from_str(SMALL).unwrap();
        v["param_shapes"].as_object_mut().unwrap().remove("fc.bias");
        assert!(matches!(Description::parse(&v.to_string()), Err(ModelError::Parameter { name, .. }) if name == "fc.bias"));
        let mut v: serde_json::Value = serde_json::from_str(SMALL).unwrap();
        v["blocks"] = serde_json::json!([1, 1]);
        assert!(matches!(Description::parse(&v.to_string()), Err(ModelError::Description(_))));
        // A description built in code without stages, or with stages of two lengths: an error
        // where the network is built (it indexed the first width).
        for (widths, blocks) in [(vec![], vec![]), (vec![16, 32], vec![1])] {
            let odd = Description { widths, blocks, ..Description::resnet18(1, 32) };
            let params = model::formula_params(&odd).unwrap_or_default();
            assert!(matches!(Net::build(&odd, &params, MemoryFormat::Contiguous), Err(ModelError::Description(_))), "{:?} {:?}", odd.widths, odd.blocks);
        }
        // Writing the formula's parameters runs nothing: the flags of a run are refused beside it.
        let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(parse_args(&args(&["d.json", "--write-weights", "w.st", "--weights", "v.st"])).is_err());
        assert!(parse_args(&args(&["d.json", "--dtype", "f32", "--write-weights", "w.st"])).is_err());
        assert!(parse_args(&args(&["d.json", "--write-weights", "w.st"])).is_ok());

        let formula = model::formula_params(&d).unwrap();
        let good = weights::save(&formula).unwrap();
        // Truncated: the data ends early.
        assert!(matches!(weights::load(&good[..good.len() - 1], &d), Err(ModelError::Weights(_))));
        // A header that lies about a tensor's byte range.
        let header_len = u64::from_le_bytes(good[..8].try_into().unwrap()) as usize;
        let header = std::str::from_utf8(&good[8..8 + header_len]).unwrap();
        let lying = header.replacen("\"data_offsets\":[0,", "\"data_offsets\":[4,", 1);
        assert_ne!(lying, header, "the header's layout changed: fix the test");
        let mut bad = good.clone();
        bad[8..8 + header_len].copy_from_slice(lying.as_bytes());
        assert!(matches!(weights::load(&bad, &d), Err(ModelError::Weights(_))));
        // A tensor of another shape, of another dtype, and a missing one.
        let mut p = formula.clone();
        p.insert("layer1.0.bn2.bias".into(), HostTensor::from_vec(vec![0f32; 17], &[17]).unwrap());
        param_error(weights::load(&weights::save(&p).unwrap(), &d), "layer1.0.bn2.bias");
        let mut p = formula.clone();
        p.remove("layer3.0.downsample.0.weight");
        param_error(weights::load(&weights::save(&p).unwrap(), &d), "layer3.0.downsample.0.weight");
        // A tensor the network does not have (a deeper network's file) is an error, as
        // PyTorch's strict `load_state_dict`; the batch norms' counters are not.
        let mut p = formula.clone();
        p.insert("layer1.2.conv1.weight".into(), HostTensor::from_vec(vec![0f32; 4], &[4]).unwrap());
        param_error(weights::load(&weights::save(&p).unwrap(), &d), "layer1.2.conv1.weight");
        let mut p = formula.clone();
        p.insert("layer1.0.bn1.num_batches_tracked".into(), HostTensor::from_vec(vec![0f32], &[1]).unwrap());
        assert!(weights::load(&weights::save(&p).unwrap(), &d).is_ok());
        // Counts that do not fit: an error, not an overflow or an allocation the host refuses.
        for (field, value) in [("batch", serde_json::json!(4611686018427387904u64)), ("classes", serde_json::json!(100_000_000_000u64)), ("blocks", serde_json::json!([1, 1, 1u64 << 40]))] {
            let mut v: serde_json::Value = serde_json::from_str(SMALL).unwrap();
            v[field] = value;
            assert!(matches!(Description::parse(&v.to_string()), Err(ModelError::Description(_))), "{field}");
        }
        let f64_file = {
            let data: Vec<u8> = vec![0u8; 10 * 8];
            let view = safetensors::tensor::TensorView::new(safetensors::tensor::Dtype::F64, vec![10], &data).unwrap();
            let mut all: Vec<(String, Vec<usize>, Vec<u8>)> = Vec::new();
            for (name, t) in formula.iter().filter(|(n, _)| *n != "fc.bias") {
                all.push((name.clone(), t.shape().to_vec(), t.to_vec::<f32>().unwrap().iter().flat_map(|v| v.to_le_bytes()).collect()));
            }
            let mut views: Vec<(String, safetensors::tensor::TensorView<'_>)> =
                all.iter().map(|(n, s, b)| (n.clone(), safetensors::tensor::TensorView::new(safetensors::tensor::Dtype::F32, s.clone(), b).unwrap())).collect();
            views.push(("fc.bias".into(), view));
            safetensors::serialize(views, None).unwrap()
        };
        param_error(weights::load(&f64_file, &d), "fc.bias");
        // Building the network checks the parameters before anything runs.
        let mut p = formula.clone();
        p.insert("bn1.weight".into(), HostTensor::from_vec(vec![1f32; 15], &[15]).unwrap());
        assert!(matches!(Net::build(&d, &p, MemoryFormat::ChannelsLast), Err(ModelError::Parameter { name, .. }) if name == "bn1.weight"));
    }
}
