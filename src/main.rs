//! `cargo run --release`: the seeds' worked examples on the host and the GPU.
//! `cargo run --release -- bench [--json] [--warm N | --interleave] [--only host|calls|copy|elementwise|reduce|pool|conv|matmul|resnet [--profile]|cold]`: copy,
//! elementwise and convolution throughput on the chosen adapter, each convolution through its
//! default and its tuned kernel, and (`cold`) each convolution's first call with an empty
//! shader cache, in a fresh process (`first-call I nchw|nhwc`), and (`resnet`) ResNet-18's
//! images per second in both layouts (and channels-last float16) and its first inference
//! (`resnet-first nchw|nhwc [graph] [f16]`).
//! `cargo run --release -- chart WARM.jsonl COLD.jsonl > chart.svg`: the same-bytes copy ratios of
//! two `bench --json` runs (warm and `--warm 0`; the rows `--warm` applies to) as a bar chart.

#[cfg(not(target_arch = "wasm32"))]
mod cli {
    pub mod bench;
    pub mod bench_calls;
    pub mod bench_conv;
    pub mod bench_copy;
    pub mod bench_elementwise;
    pub mod bench_host;
    pub mod bench_matmul;
    pub mod bench_pool;
    pub mod bench_reduce;
    pub mod chart;
    pub mod measure;
    pub mod resnet;
    pub mod walkthrough;
}

/// The ResNet of `examples/resnet.rs` (the crate's public API only), shared with the example.
#[cfg(not(target_arch = "wasm32"))]
#[path = "../examples/resnet/model.rs"]
mod resnet_model;

/// The main program drives the GPU with the blocking API, which exists on native targets only.
#[cfg(target_arch = "wasm32")]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("bench") => match bench_warm(&args[1..]) {
            Ok((warm, only)) => cli::bench::run(args.iter().any(|a| a == "--json"), warm, only, args.iter().any(|a| a == "--profile")),
            Err(e) => {
                eprintln!("{e}; {USAGE}");
                std::process::exit(2);
            }
        },
        Some("chart") if args.len() == 3 => match cli::chart::svg(&args[1], &args[2]) {
            Ok(svg) => {
                print!("{svg}");
                Ok(())
            }
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(1);
            }
        },
        Some("first-call") if args.len() == 3 && matches!(args[2].as_str(), "nchw" | "nhwc") => match args[1].parse() {
            Ok(i) => cli::bench_conv::first_call(i, args[2] == "nhwc"),
            Err(_) => {
                eprintln!("first-call needs a conv row index, got {:?}; {USAGE}", args[1]);
                std::process::exit(2);
            }
        },
        Some("resnet-first") if (2..=4).contains(&args.len()) && matches!(args[1].as_str(), "nchw" | "nhwc") && args[2..].iter().all(|m| m == "graph" || m == "f16") => {
            cli::resnet::first_inference(&args[1], args[2..].iter().any(|m| m == "graph"), if args[2..].iter().any(|m| m == "f16") { strided_wgpu::DType::F16 } else { strided_wgpu::DType::F32 })
        }
        None => cli::walkthrough::run(),
        Some("help" | "--help" | "-h") => {
            println!("{USAGE}");
            return;
        }
        // A known command whose arguments did not match its form above.
        Some(known @ ("chart" | "first-call" | "resnet-first")) => {
            let form = match known {
                "chart" => "chart WARM.jsonl COLD.jsonl",
                "first-call" => "first-call I nchw|nhwc",
                _ => "resnet-first nchw|nhwc [graph] [f16]",
            };
            eprintln!("{known} takes `{form}`, got {:?}; {USAGE}", &args[1..]);
            std::process::exit(2);
        }
        Some(other) => {
            eprintln!("unknown command {other:?}; {USAGE}");
            std::process::exit(2);
        }
    };
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

#[cfg(not(target_arch = "wasm32"))]
const USAGE: &str = "usage: strided-wgpu [bench [--json] [--warm N | --interleave] [--only host|calls|copy|elementwise|reduce|pool|conv|matmul|resnet [--profile]|cold] | chart WARM.jsonl COLD.jsonl | first-call I nchw|nhwc | resnet-first nchw|nhwc [graph] [f16]]";

#[cfg(not(target_arch = "wasm32"))]
/// The bench's warming runs per timed run (`--warm N`, `--interleave` (0), or the default) and
/// which rows it runs (`--only host`, `--only copy`, ...; all but `calls` by default).
fn bench_warm(args: &[String]) -> Result<(usize, Option<String>), String> {
    let mut warm = cli::measure::DEFAULT_WARM;
    let mut only = None;
    let mut warm_given: Option<&str> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if matches!(a.as_str(), "--warm" | "--interleave") {
            if let Some(before) = warm_given {
                return Err(format!("{a} and {before} are alternatives: give one"));
            }
            warm_given = Some(a.as_str());
        }
        match a.as_str() {
            "--json" | "--profile" => {}
            "--only" if only.is_some() => return Err("--only runs one part: give it once".into()),
            "--only" => match it.next().map(String::as_str) {
                Some(v @ ("host" | "calls" | "copy" | "elementwise" | "reduce" | "pool" | "conv" | "matmul" | "resnet" | "cold")) => only = Some(v.to_string()),
                v => return Err(format!("--only needs host, calls, copy, elementwise, reduce, pool, conv, matmul, resnet or cold, got {v:?}")),
            },
            "--interleave" => warm = 0,
            "--warm" => {
                let v = it.next().ok_or("--warm needs a count")?;
                warm = v.parse().map_err(|_| format!("--warm needs a count, got {v:?}"))?;
            }
            other => return Err(format!("unknown bench option {other:?}")),
        }
    }
    if args.iter().any(|a| a == "--profile") && only.as_deref() != Some("resnet") {
        return Err("--profile goes with --only resnet".into());
    }
    // Only the bandwidth parts warm each timed run (the others time first calls or whole
    // forwards, or warm as their rows need).
    if let (Some(flag), Some(part)) = (warm_given, only.as_deref()) {
        if !matches!(part, "copy" | "elementwise" | "reduce" | "pool") {
            return Err(format!("{flag} applies to the copy, elementwise, reduce and pool rows, not to --only {part}"));
        }
    }
    Ok((warm, only))
}

#[cfg(test)]
mod tests {
    use super::bench_warm;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    /// The bench's options as its usage line gives them; anything else is an error.
    #[test]
    fn bench_options() {
        assert_eq!(bench_warm(&args("--json")), Ok((crate::cli::measure::DEFAULT_WARM, None)));
        assert_eq!(bench_warm(&args("--only copy --warm 3")), Ok((3, Some("copy".to_string()))));
        assert_eq!(bench_warm(&args("--interleave --only pool --json")), Ok((0, Some("pool".to_string()))));
        assert_eq!(bench_warm(&args("--only resnet --profile")), Ok((crate::cli::measure::DEFAULT_WARM, Some("resnet".to_string()))));
        for bad in ["--only", "--only gpu", "--warm", "--warm x", "--warm -1", "--fast", "--profile", "--only copy --profile", "--warm 3 --interleave", "--interleave --warm 2", "--only conv --warm 2", "--only resnet --interleave", "--only copy --only conv", "--only copy --only copy"] {
            assert!(bench_warm(&args(bad)).is_err(), "{bad}");
        }
    }
}
