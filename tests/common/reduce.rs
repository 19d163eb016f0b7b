//! Replays `reduce.jsonl` cases (format and comparison rules: tests/data/README.md) on any
//! tensor type that implements `Reduce`.

use serde_json::Value;
use strided_wgpu::{Dims, DType, Error, HostTensor, Layout, Reduce, Strided};

use super::elementwise::{bits, bits_of, dtype_of, value};
use super::views::{self, usizes, Replay};

pub struct Case {
    pub id: String,
    pub line: Value,
}

pub fn load(default: &str, env: &str) -> (String, Vec<Case>) {
    let (path, lines) = views::jsonl(default, env);
    (path, lines.into_iter().map(|v| Case { id: v["id"].as_str().unwrap_or("?").to_string(), line: v }).collect())
}

/// A value of the data: a number, or "nan", "inf", "-inf".
fn number(v: &Value) -> f64 {
    match v.as_str() {
        Some("nan") => f64::NAN,
        Some("inf") => f64::INFINITY,
        Some("-inf") => f64::NEG_INFINITY,
        _ => v.as_f64().unwrap_or_else(|| panic!("not a value: {v}")),
    }
}

/// The base tensor of an input spec: the elementwise fills, plus `"nan"` (`"signed"` with NaN
/// at every storage index i where (i*7) % 23 == 5).
pub fn base(input: &Value) -> HostTensor {
    let dtype = dtype_of(input["dtype"].as_str().expect("dtype"));
    let shape = usizes(&input["base_shape"]);
    let n: usize = shape.iter().product();
    let fill = input["fill"].as_str().unwrap_or("signed");
    let value = |i: usize| -> f64 {
        let m = ((i * 7) % 23) as f64;
        match dtype {
            DType::U8 => m * 11.0,
            DType::U32 => m * 3.0,
            DType::I32 | DType::I8 => if fill == "positive" { m + 1.0 } else { m - 11.0 },
            _ if fill == "nan" && m == 5.0 => f64::NAN,
            _ => if fill == "positive" { (m + 1.0) / 4.0 } else { (m - 11.0) / 4.0 },
        }
    };
    let bytes: Vec<u8> = (0..n).flat_map(|i| bits_of(dtype, value(i)).to_le_bytes()[..dtype.size()].to_vec()).collect();
    HostTensor::from_bytes(dtype, bytes, Layout::contiguous(&shape).unwrap()).expect("base")
}

fn dims_of(args: &Value) -> Dims {
    match &args["dim"] {
        Value::Null => Dims::All,
        Value::Array(a) => Dims::List(a.iter().map(|d| d.as_i64().expect("dim") as isize).collect()),
        d => Dims::List(vec![d.as_i64().expect("dim") as isize]),
    }
}

fn one_dim(args: &Value) -> Option<isize> {
    args["dim"].as_i64().map(|d| d as isize)
}

/// Runs a case's op on `x`: (result, indices of max/min).
pub fn run<T: Reduce>(v: &Value, x: &T) -> Result<(T, Option<T>), Error> {
    let args = &v["args"];
    let dims = dims_of(args);
    let keepdim = args["keepdim"].as_bool().unwrap_or(false);
    // Where the data's call had no dim, the ops without a `dim=None, keepdim` form
    // (torch.sum(x), torch.prod(x), torch.argmax(x)) give a 0-d result.
    let keep_all = keepdim && dims != Dims::All;
    let dtype = args["dtype"].as_str().map(dtype_of);
    let correction = args["correction"].as_f64().unwrap_or(1.0);
    let one = |r: Result<T, Error>| r.map(|t| (t, None));
    let dim = || one_dim(args).expect("a dim");
    match v["op"].as_str().unwrap_or("") {
        "sum" => one(match dtype {
            Some(d) => x.sum_dtype(dims, keep_all, d),
            None => x.sum(dims, keep_all),
        }),
        "mean" => one(match dtype {
            Some(d) => x.mean_dtype(dims, keep_all, d),
            None => x.mean(dims, keep_all),
        }),
        "prod" => one(x.prod(one_dim(args), keep_all)),
        "amax" => one(x.amax(dims, keepdim)),
        "amin" => one(x.amin(dims, keepdim)),
        "argmax" => one(x.argmax(one_dim(args), keep_all)),
        "argmin" => one(x.argmin(one_dim(args), keep_all)),
        "max" => x.max_dim(dim(), keepdim).map(|(a, b)| (a, Some(b))),
        "min" => x.min_dim(dim(), keepdim).map(|(a, b)| (a, Some(b))),
        "var" => one(x.var(dims, correction, keepdim)),
        "std" => one(x.std(dims, correction, keepdim)),
        "norm" => {
            let p = match &args["p"] {
                Value::String(s) if s == "inf" => f64::INFINITY,
                p => p.as_f64().expect("p"),
            };
            one(x.norm(p, dims, keepdim))
        }
        "logsumexp" => one(x.logsumexp(dims, keepdim)),
        "softmax" => one(x.softmax(dim())),
        "log_softmax" => one(x.log_softmax(dim())),
        "cumsum" => one(x.cumsum(dim())),
        other => panic!("unknown op {other}"),
    }
}

/// Replays one case: `make` turns a host base tensor into a `T`, `fetch` reads a `T` back.
/// Returns what differs from PyTorch's answer.
pub fn check<T: Replay + Reduce>(case: &Case, make: impl Fn(&HostTensor) -> T, fetch: impl Fn(&T) -> HostTensor) -> Vec<String> {
    let v = &case.line;
    let mut x = make(&base(&v["input"]));
    for o in v["input"]["ops"].as_array().cloned().unwrap_or_default() {
        x = match views::apply(&x, &o) {
            Ok(t) => t,
            Err(e) => return vec![format!("view op {o} failed: {e}")],
        };
    }
    let result = run(v, &x);
    let expect = &v["expect"];
    if expect["error"].as_bool() == Some(true) {
        return super::raises::check(result, expect);
    }
    let (r, idx) = match result {
        Ok(r) => r,
        Err(e) => return vec![format!("unexpected error: {e}")],
    };
    let mut errs = Vec::new();
    // int64 results are int32 here (documented).
    let want_dtype = match expect["dtype"].as_str().unwrap_or("") {
        "int64" => DType::I32,
        d => dtype_of(d),
    };
    if r.dtype() != want_dtype {
        return vec![format!("dtype {} != {want_dtype}", r.dtype())];
    }
    if r.shape() != usizes(&expect["shape"]).as_slice() {
        errs.push(format!("shape {:?} != {:?}", r.shape(), expect["shape"]));
    }
    let tol = expect["tol"].as_f64().unwrap_or(0.0);
    let mut compare = |what: &str, got: &HostTensor, want: &Value| {
        let want: Vec<f64> = want.as_array().map(|a| a.iter().map(number).collect()).unwrap_or_default();
        let t = got.dtype();
        let got: Vec<f64> = bits(got).into_iter().map(|b| value(t, b)).collect();
        if got.len() != want.len() {
            errs.push(format!("{what}: {} values, expected {}", got.len(), want.len()));
            return;
        }
        for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
            let ok = if w.is_nan() || g.is_nan() || w.is_infinite() { (w.is_nan() && g.is_nan()) || g == w } else { (g - w).abs() <= tol };
            if !ok {
                errs.push(format!("{what}[{i}]: got {g}, want {w} (tol {tol})"));
                break;
            }
        }
    };
    compare("values", &fetch(&r), &expect["values"]);
    if let Some(i) = idx {
        compare("indices", &fetch(&i), &expect["indices"]);
    } else if !expect["indices"].is_null() {
        errs.push("no indices returned".into());
    }
    errs
}
