//! `cargo run --release`: the seeds' worked examples on the host and the GPU.
//! `cargo run --release -- bench [--json] [--warm N | --interleave]`: copy and 1x1 convolution
//! throughput on the chosen adapter.

#[cfg(not(target_arch = "wasm32"))]
mod cli {
    pub mod bench;
    pub mod bench_conv;
    pub mod walkthrough;
}

/// The main program drives the GPU with the blocking API, which exists on native targets only.
#[cfg(target_arch = "wasm32")]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("bench") => match bench_warm(&args[1..]) {
            Ok(warm) => cli::bench::run(args.iter().any(|a| a == "--json"), warm),
            Err(e) => {
                eprintln!("{e}; usage: strided-wgpu [bench [--json] [--warm N | --interleave]]");
                std::process::exit(2);
            }
        },
        None => cli::walkthrough::run(),
        Some(other) => {
            eprintln!("unknown command {other:?}; usage: strided-wgpu [bench [--json] [--warm N | --interleave]]");
            std::process::exit(2);
        }
    };
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

#[cfg(not(target_arch = "wasm32"))]
/// The bench's warming runs per timed run: `--warm N`, `--interleave` (0), or the default.
fn bench_warm(args: &[String]) -> Result<usize, String> {
    let mut warm = cli::bench::DEFAULT_WARM;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--json" => {}
            "--interleave" => warm = 0,
            "--warm" => {
                let v = it.next().ok_or("--warm needs a count")?;
                warm = v.parse().map_err(|_| format!("--warm needs a count, got {v:?}"))?;
            }
            other => return Err(format!("unknown bench option {other:?}")),
        }
    }
    Ok(warm)
}
