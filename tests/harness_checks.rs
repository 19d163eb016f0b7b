//! Tests of the test harness itself (no GPU): how a conformance case that PyTorch raises on is
//! judged (`tests/common/raises.rs`), and how GPU suites that did not run are recorded and
//! summed up (`tests/common/skips.rs`).

#[path = "common/raises.rs"]
mod raises;

use serde_json::json;
use strided_wgpu::Error;

fn unsupported() -> Error {
    Error::Unsupported { op: "pad", detail: "reflect padding of 1 dims needs a tensor of rank 2 or 3".into() }
}

#[test]
fn a_raises_case_fails_on_unsupported() {
    let expect = json!({"error": true, "message": "Padding length should be less than or equal to two times the input dimension"});
    let errs = raises::check(Err::<(), _>(unsupported()), &expect);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(errs[0].contains("Unsupported") && errs[0].contains("Padding length"), "{errs:?}");
    assert!(raises::bad_input(&unsupported()).is_err());
}

#[test]
fn a_raises_case_fails_on_device_and_environment_errors() {
    let expect = json!({"error": true, "message": "m"});
    for e in [
        Error::Gpu { op: "copy_", message: "validation".into() },
        Error::DeviceLost { op: "copy_", detail: "destroyed".into() },
        Error::Adapter("none".into()),
        Error::Limit { op: "matmul", what: "a binding".into(), limit: "max_storage_buffer_binding_size", requested: 2, max: 1 },
        Error::Device { op: "copy_", detail: "another context".into() },
    ] {
        assert_eq!(raises::check(Err::<(), _>(e.clone()), &expect).len(), 1, "{e:?} passed a raises case");
    }
}

#[test]
fn a_raises_case_passes_on_bad_input_and_fails_on_success() {
    let expect = json!({"error": true, "message": "m"});
    for e in [
        Error::InvalidArgument { op: "cat", detail: "sizes".into() },
        Error::DimOutOfRange { op: "cat", dim: 3, rank: 2 },
        Error::DType { op: "cat", got: "uint32".into(), expected: "no uint32 with a signed type".into() },
        Error::Overflow { op: "pad", what: "the size".into() },
        Error::Broadcast { op: "add", from: vec![2], to: vec![3], dim: 0, from_size: 2, to_size: 3 },
    ] {
        assert_eq!(raises::check(Err::<(), _>(e.clone()), &expect), Vec::<String>::new(), "{e:?}");
    }
    assert_eq!(raises::check(Ok::<_, Error>(()), &expect).len(), 1);
}

#[test]
fn a_result_type_outside_the_crates_wants_unsupported() {
    // elementwise.jsonl marks uint8 + int8 (int16 in PyTorch) `torch_dtype`: there Unsupported
    // is the answer, and an invalid argument is not.
    let expect = json!({"error": true, "message": "m", "torch_dtype": "torch.int16"});
    assert_eq!(raises::check(Err::<(), _>(unsupported()), &expect), Vec::<String>::new());
    assert_eq!(raises::check(Err::<(), _>(Error::InvalidArgument { op: "add", detail: "x".into() }), &expect).len(), 1);
}

#[path = "common/skips.rs"]
#[allow(dead_code)]
mod skips;

use skips::{Outcome, Record};

fn rec(suite: &str, run: &str, outcome: Outcome) -> Record {
    Record { suite: suite.into(), run: run.into(), outcome }
}

fn known() -> Vec<String> {
    ["conformance", "device_copy", "device_pool", "gpu_budget"].map(String::from).to_vec()
}

#[test]
fn a_record_reads_back_as_written() {
    for r in [rec("device_pool", "12:345", Outcome::Ran(vec!["Vulkan".into(), "Gl".into()])), rec("conformance", "12:345", Outcome::Skipped("no GPU adapter exists (install x)".into()))] {
        assert_eq!(skips::parse(&r.suite, &skips::render(&r)), Some(r.clone()));
    }
    assert_eq!(skips::parse("x", "garbage"), None);
}

#[test]
fn the_summary_names_the_suites_that_skipped_in_this_run() {
    let no = || Outcome::Skipped("no GPU adapter exists".into());
    let records = [rec("conformance", "now", no()), rec("device_copy", "now", no()), rec("device_pool", "earlier", no()), rec("gpu_budget", "now", Outcome::Ran(vec!["RADV".into()]))];
    let lines = skips::summary(&records, "now", &known());
    let text = lines.join("\n");
    assert!(lines[0].starts_with("!!! GPU suites that did not run") && lines[0].ends_with(": conformance, device_copy"), "{text}");
    assert!(text.contains("why: no GPU adapter exists"), "{text}");
    assert!(text.contains("GPU suites that ran on RADV: gpu_budget"), "{text}");
    // device_pool skipped in an earlier run, and did not run in this one: not run, not skipped.
    assert!(text.contains("not run in this `cargo test` (filtered out, or no test of theirs asked for an adapter): device_pool"), "{text}");
    assert!(!text.contains("all "), "{text}");
}

#[test]
fn the_summary_says_when_every_suite_ran() {
    let both = || Outcome::Ran(vec!["Vulkan".into(), "Gl".into()]);
    let records: Vec<Record> = known().iter().map(|s| rec(s, "now", both())).collect();
    assert_eq!(skips::summary(&records, "now", &known()), vec!["GPU suites: all 4 that asked for an adapter ran on one (Vulkan, Gl)".to_string()]);
    // gpu_budget runs on a compiler of its own.
    let mut mixed = records.clone();
    mixed[3].outcome = Outcome::Ran(vec!["RADV".into()]);
    assert_eq!(skips::summary(&mixed, "now", &known()), vec!["GPU suites: all 4 that asked for an adapter ran on one (Vulkan, Gl: conformance, device_copy, device_pool; RADV: gpu_budget)".to_string()]);
    // The same records seen from another run: nothing of this run is known.
    let lines = skips::summary(&records, "later", &known());
    assert_eq!(lines, vec!["GPU suites: none asked for an adapter in this `cargo test` (filtered out or not run: conformance, device_copy, device_pool, gpu_budget)".to_string()]);
}

#[test]
fn the_gpu_suites_of_the_package_are_known() {
    let known = skips::known_suites(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests"));
    for s in ["conformance", "device_copy", "device_pool", "graph", "embedding", "gpu_budget", "adapter_env"] {
        assert!(known.iter().any(|k| k == s), "{s} missing from {known:?}");
    }
    for s in ["layout", "harness_checks", "zz_gpu_summary", "web", "shaders"] {
        assert!(!known.iter().any(|k| k == s), "{s} is no GPU suite: {known:?}");
    }
}
