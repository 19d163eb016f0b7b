//! `cargo run --release`: the seeds' worked examples on the host (and the GPU).

mod cli {
    pub mod walkthrough;
}

fn main() {
    if let Err(e) = cli::walkthrough::run_host() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
