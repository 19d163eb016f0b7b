//! Replays `shape.jsonl` and `pool.jsonl` cases (format: tests/data/README.md) on any tensor
//! type: the inputs are built on the host, moved by `make`, viewed by the case's ops, and the
//! result fetched back by `fetch` and compared value by value (exact where `tol` is 0).

use serde_json::Value;
use strided_wgpu::{AvgPool2dOptions, DType, HostTensor, Layout, MaxPool2dOptions, Pool2d, ShapeOps, Strided};
use strided_wgpu::ops::{cat, stack, InterpolateMode, InterpolateOptions, PadMode};

use super::elementwise::{bits, bits_of, dtype_of, value};
use super::views::{self, usizes, Replay};

/// A case's input (`dtype`, `fill` with "nan", `base_shape`) as a host tensor, before its ops.
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
            _ if fill == "nan" && (i * 7) % 23 == 5 => f64::NAN,
            _ => if fill == "positive" { (m + 1.0) / 4.0 } else { (m - 11.0) / 4.0 },
        }
    };
    let bytes: Vec<u8> = (0..n).flat_map(|i| bits_of(dtype, value(i)).to_le_bytes()[..dtype.size()].to_vec()).collect();
    HostTensor::from_bytes(dtype, bytes, Layout::contiguous(&shape).unwrap()).expect("base")
}

fn input<T: Replay>(spec: &Value, make: &impl Fn(&HostTensor) -> T) -> T {
    let mut t = make(&base(spec));
    for op in spec["ops"].as_array().into_iter().flatten() {
        t = views::apply(&t, op).expect("an input's view op");
    }
    t
}

fn pair(v: &Value) -> (usize, usize) {
    let u = usizes(v);
    (u[0], u[1])
}

fn num(v: &Value) -> f64 {
    match v.as_str() {
        Some("nan") => f64::NAN,
        Some("inf") => f64::INFINITY,
        Some("-inf") => f64::NEG_INFINITY,
        _ => v.as_f64().unwrap_or_else(|| panic!("not a value: {v}")),
    }
}

/// Runs a shape.jsonl case's op on its inputs.
pub fn run_shape<T: Replay + ShapeOps>(line: &Value, make: &impl Fn(&HostTensor) -> T) -> Result<Vec<T>, strided_wgpu::Error> {
    let inputs: Vec<T> = line["inputs"].as_array().expect("inputs").iter().map(|s| input(s, make)).collect();
    let refs: Vec<&T> = inputs.iter().collect();
    let a = &line["args"];
    let dim = || a["dim"].as_i64().expect("dim") as isize;
    let x = &inputs[0];
    Ok(vec![match line["op"].as_str().unwrap_or("") {
        "cat" => cat(&refs, dim())?,
        "stack" => stack(&refs, dim())?,
        "pad" => {
            let pad: Vec<isize> = a["pad"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap() as isize).collect();
            let mode = match a["mode"].as_str().unwrap() {
                "constant" => PadMode::Constant(a["value"].as_f64().unwrap_or(0.0)),
                "reflect" => PadMode::Reflect,
                "replicate" => PadMode::Replicate,
                "circular" => PadMode::Circular,
                m => panic!("pad mode {m}"),
            };
            x.pad(&pad, mode)?
        }
        "repeat" => x.repeat(&usizes(&a["repeats"]))?,
        "index_select" => x.index_select(dim(), &a["index"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).collect::<Vec<_>>())?,
        "interpolate" => {
            let mode = match a["mode"].as_str().unwrap() {
                "nearest" => InterpolateMode::Nearest,
                "nearest-exact" => InterpolateMode::NearestExact,
                "bilinear" => InterpolateMode::Bilinear { align_corners: a["align_corners"].as_bool().unwrap_or(false) },
                m => panic!("interpolate mode {m}"),
            };
            let opts = if a["size"].is_null() {
                let f = &a["scale_factor"];
                let (h, w) = match f.as_array() {
                    Some(l) => (l[0].as_f64().unwrap(), l[1].as_f64().unwrap()),
                    None => (f.as_f64().unwrap(), f.as_f64().unwrap()),
                };
                InterpolateOptions::scale((h, w), mode)
            } else {
                InterpolateOptions::size(pair(&a["size"]), mode)
            };
            x.interpolate(&opts)?
        }
        op => panic!("unknown shape op {op}"),
    }])
}

/// Runs a pool.jsonl case's op: the output, and the indices where asked.
pub fn run_pool<T: Replay + Pool2d>(line: &Value, make: &impl Fn(&HostTensor) -> T) -> Result<Vec<T>, strided_wgpu::Error> {
    let x = input(&line["input"], make);
    let a = &line["args"];
    let indices = a["return_indices"].as_bool().unwrap_or(false);
    let both = |(y, i): (T, T)| vec![y, i];
    Ok(match line["op"].as_str().unwrap_or("") {
        "max_pool2d" => {
            let o = MaxPool2dOptions { kernel: pair(&a["kernel"]), stride: Some(pair(&a["stride"])), padding: pair(&a["padding"]), dilation: pair(&a["dilation"]), ceil_mode: a["ceil_mode"].as_bool().unwrap() };
            if indices { both(x.max_pool2d_with_indices(&o)?) } else { vec![x.max_pool2d(&o)?] }
        }
        "avg_pool2d" => {
            let o = AvgPool2dOptions {
                kernel: pair(&a["kernel"]),
                stride: Some(pair(&a["stride"])),
                padding: pair(&a["padding"]),
                ceil_mode: a["ceil_mode"].as_bool().unwrap(),
                count_include_pad: a["count_include_pad"].as_bool().unwrap(),
                divisor_override: a["divisor_override"].as_u64().map(|d| d as usize),
            };
            vec![x.avg_pool2d(&o)?]
        }
        "adaptive_avg_pool2d" => vec![x.adaptive_avg_pool2d(pair(&a["output_size"]))?],
        "adaptive_max_pool2d" => {
            if indices { both(x.adaptive_max_pool2d_with_indices(pair(&a["output_size"]))?) } else { vec![x.adaptive_max_pool2d(pair(&a["output_size"]))?] }
        }
        op => panic!("unknown pool op {op}"),
    })
}

/// Compares a case's results (fetched to the host) with its `expect`: errors, dtype, shape,
/// PyTorch's strides where given (those of dims longer than 1: the memory format), values
/// within `tol` (exact at 0, the sign of a zero included; NaN matches NaN), and the indices
/// where given.
pub fn compare(line: &Value, got: Result<Vec<HostTensor>, strided_wgpu::Error>) -> Vec<String> {
    let e = &line["expect"];
    let expect_error = e["error"].as_bool() == Some(true);
    if expect_error {
        return super::raises::check(got, e);
    }
    let got = match got {
        Err(err) => return vec![format!("error: {err}")],
        Ok(g) => g,
    };
    let mut errs = Vec::new();
    let y = &got[0];
    let want_dtype = dtype_of(e["dtype"].as_str().unwrap());
    if y.dtype() != want_dtype {
        errs.push(format!("dtype {}, want {want_dtype}", y.dtype()));
        return errs;
    }
    let want_shape = usizes(&e["shape"]);
    if y.shape() != want_shape.as_slice() {
        errs.push(format!("shape {:?}, want {want_shape:?}", y.shape()));
        return errs;
    }
    if let Some(strides) = e["strides"].as_array() {
        let want: Vec<i64> = strides.iter().map(|s| s.as_i64().unwrap()).collect();
        let differ = y.numel() > 0 && y.shape().iter().zip(y.strides()).zip(&want).any(|((&n, &s), &w)| n > 1 && s as i64 != w);
        if differ {
            errs.push(format!("strides {:?}, want {want:?} (PyTorch's memory format)", y.strides()));
        }
    }
    let tol = e["tol"].as_f64().unwrap_or(0.0);
    let vals: Vec<f64> = bits(y).into_iter().map(|b| value(y.dtype(), b)).collect();
    let want: Vec<f64> = e["values"].as_array().unwrap().iter().map(num).collect();
    if vals.len() != want.len() {
        errs.push(format!("{} values, want {}", vals.len(), want.len()));
    }
    for (k, (&g, &w)) in vals.iter().zip(&want).enumerate() {
        let ok = if w.is_nan() || g.is_nan() || w.is_infinite() {
            (w.is_nan() && g.is_nan()) || g == w
        } else if tol == 0.0 {
            g == w && g.is_sign_negative() == w.is_sign_negative()
        } else {
            (g - w).abs() <= tol
        };
        if !ok {
            errs.push(format!("value {k}: {g}, want {w} (tol {tol})"));
            if errs.len() > 4 {
                break;
            }
        }
    }
    if let Some(idx) = e["indices"].as_array() {
        match got.get(1) {
            None => errs.push("no indices".into()),
            Some(i) => {
                let gi: Vec<i64> = bits(i).into_iter().map(|b| b as i32 as i64).collect();
                let wi: Vec<i64> = idx.iter().map(|v| v.as_i64().unwrap()).collect();
                if gi != wi {
                    errs.push(format!("indices {gi:?}, want {wi:?}"));
                }
            }
        }
    }
    errs
}
