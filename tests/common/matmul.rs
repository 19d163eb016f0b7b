//! Replays `matmul.jsonl` cases (format and comparison rule: tests/data/README.md) on any
//! tensor type.

use serde_json::Value;
use strided_wgpu::{DType, Error, HostTensor, Matmul};

use super::elementwise::{base, bits, dtype_of, value};
use super::views::{self, usizes, Replay};

pub struct Case {
    pub id: String,
    pub line: Value,
}

pub fn load(default: &str, env: &str) -> (String, Vec<Case>) {
    let (path, lines) = views::jsonl(default, env);
    (path, lines.into_iter().map(|v| Case { id: v["id"].as_str().unwrap_or("?").to_string(), line: v }).collect())
}

/// Runs the case's op on its inputs (already made `T`s).
pub fn run<T: Matmul>(case: &Value, t: &[T]) -> Result<T, Error> {
    let args = &case["args"];
    let f = |k: &str| args[k].as_f64().unwrap_or(1.0);
    match (case["op"].as_str().unwrap_or(""), t) {
        ("matmul", [a, b]) => a.matmul(b),
        ("bmm", [a, b]) => a.bmm(b),
        ("linear", [x, w]) => x.linear(w, None),
        ("linear", [x, w, bias]) => x.linear(w, Some(bias)),
        ("addmm", [input, m1, m2]) => input.addmm(m1, m2, f("beta"), f("alpha")),
        (op, _) => panic!("unknown op {op} with {} inputs", t.len()),
    }
}

/// Replays one case on tensors of type `T`: `make` turns a host base tensor into a `T`, `fetch`
/// reads a `T` back. Returns what differs from PyTorch's answer.
pub fn check<T: Replay + Matmul>(case: &Case, make: impl Fn(&HostTensor) -> T, fetch: impl Fn(&T) -> HostTensor) -> Vec<String> {
    let v = &case.line;
    let mut tensors = Vec::new();
    for input in v["inputs"].as_array().expect("inputs") {
        let mut t = make(&base(input));
        for o in input["ops"].as_array().cloned().unwrap_or_default() {
            t = match views::apply(&t, &o) {
                Ok(t) => t,
                Err(e) => return vec![format!("view op {o} failed: {e}")],
            };
        }
        tensors.push(t);
    }
    let result = run(v, &tensors);
    let expect = &v["expect"];
    if expect["error"].as_bool() == Some(true) {
        return super::raises::check(result, expect);
    }
    let r = match result {
        Ok(r) => r,
        Err(e) => return vec![format!("unexpected error: {e}")],
    };
    let dtype = dtype_of(expect["dtype"].as_str().unwrap_or(""));
    if r.dtype() != dtype {
        return vec![format!("dtype {} != {dtype}", r.dtype())];
    }
    if r.shape() != usizes(&expect["shape"]).as_slice() {
        return vec![format!("shape {:?} != {:?}", r.shape(), expect["shape"])];
    }
    compare(dtype, &fetch(&r), &expect["values"], expect["tol"].as_f64().expect("tol"))
}

/// Compares a result with PyTorch's values: `|got - want| <= tol`.
pub fn compare(dtype: DType, got: &HostTensor, want: &Value, tol: f64) -> Vec<String> {
    let want: Vec<f64> = want.as_array().map(|a| a.iter().map(|x| x.as_f64().expect("a value")).collect()).unwrap_or_default();
    let got: Vec<f64> = bits(got).into_iter().map(|b| value(dtype, b)).collect();
    if got.len() != want.len() {
        return vec![format!("{} values, expected {}", got.len(), want.len())];
    }
    match got.iter().zip(&want).enumerate().find(|(_, (g, w))| (*g - *w).abs() > tol || g.is_nan() != w.is_nan()) {
        Some((i, (g, w))) => vec![format!("values[{i}]: got {g}, want {w} (tol {tol})")],
        None => vec![],
    }
}
