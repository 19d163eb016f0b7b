//! The one judge of a conformance case whose `expect` says PyTorch raised: every family
//! (views, elementwise, convolutions, matrix products, reductions, shape ops, pooling) asks it.
//!
//! PyTorch raising means the input is wrong everywhere, so the crate must reject it as bad
//! input: a dim out of range, an invalid argument, shapes that do not fit, a view outside its
//! storage, an overlap, an element type, an overflow. `Error::Unsupported` (a well-formed
//! request this crate or adapter cannot serve) does not count, nor do errors of the device or
//! the environment (`Gpu`, `DeviceLost`, `Adapter`, `Limit`, `Tuning`, `Device`): a case that
//! PyTorch rejects and the crate merely cannot run would otherwise pass for the wrong reason.
//!
//! The one exception is a case marked `torch_dtype` (elementwise.jsonl): PyTorch did not raise,
//! its result type (int16, say) is outside the crate's seven, and the data asks for an error;
//! there `Unsupported` or a `DType` error is the right answer.

use serde_json::Value;
use strided_wgpu::Error;

/// `Ok(())` when `e` rejects the input as wrong (what a case PyTorch raises on needs), else why
/// not.
pub fn bad_input(e: &Error) -> Result<(), String> {
    match e {
        Error::DimOutOfRange { .. }
        | Error::InvalidArgument { .. }
        | Error::IncompatibleLayout { .. }
        | Error::IncompatibleShape { .. }
        | Error::Broadcast { .. }
        | Error::OutOfBounds { .. }
        | Error::Overlap { .. }
        | Error::DType { .. }
        | Error::Overflow { .. } => Ok(()),
        Error::Unsupported { .. } => Err(format!("PyTorch raises, but the crate says it cannot serve a valid request (Unsupported): {e}")),
        // Device and environment errors, and any variant added later until it is judged here.
        _ => Err(format!("PyTorch raises, but the crate failed for another reason than bad input: {e:?}")),
    }
}

/// Judges `got` against an `expect` of `{"error": true, "message", ["torch_dtype"]}`: the
/// failures (empty: the case passes).
pub fn check<T>(got: Result<T, Error>, expect: &Value) -> Vec<String> {
    let message = &expect["message"];
    match got {
        Ok(_) => vec![format!("succeeded, but PyTorch rejects it ({message})")],
        Err(e) => match expect["torch_dtype"].as_str() {
            Some(_) if matches!(e, Error::Unsupported { .. } | Error::DType { .. }) => vec![],
            Some(t) => vec![format!("PyTorch's result type {t} is outside the crate's types: want Unsupported or a DType error, got {e:?}")],
            None => bad_input(&e).err().map(|why| format!("{why} (PyTorch: {message})")).into_iter().collect(),
        },
    }
}
