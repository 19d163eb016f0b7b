//! The last test target of `cargo test` (cargo runs integration test binaries in name order;
//! `harness = false`, so nothing it prints is captured): which GPU suites ran on an adapter in
//! this run and which skipped for want of one, from the records they left
//! (`tests/common/skips.rs`). A suite of this package that left no record in this run is named
//! as not run. It never fails: `STRIDED_WGPU_REQUIRE_ADAPTER=1` is what makes a missing adapter
//! a failure. The examples and doc tests run after it and are not counted.

#[cfg(not(target_arch = "wasm32"))]
#[allow(dead_code)]
#[path = "common/skips.rs"]
mod skips;

#[cfg(target_arch = "wasm32")]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    // `cargo test -- --list` lists tests: this target has none.
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let known = skips::known_suites(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests"));
    for line in skips::summary(&skips::read_all(&skips::dir()), &skips::run_id(), &known) {
        eprintln!("{line}");
    }
}
