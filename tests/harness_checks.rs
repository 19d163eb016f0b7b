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
