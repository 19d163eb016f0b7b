//! `cargo run --release`: the seeds' worked examples on the host and the GPU.
//! `cargo run --release -- bench [--json] [--interleave]`: copy and 1x1 convolution throughput
//! on the chosen adapter.

mod cli {
    pub mod bench;
    pub mod bench_conv;
    pub mod walkthrough;
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("bench") => cli::bench::run(args.iter().any(|a| a == "--json"), args.iter().any(|a| a == "--interleave")),
        None => cli::walkthrough::run(),
        Some(other) => {
            eprintln!("unknown command {other:?}; usage: strided-wgpu [bench [--json] [--interleave]]");
            std::process::exit(2);
        }
    };
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
