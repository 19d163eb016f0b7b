//! Replays `elementwise.jsonl` cases (format and comparison rules: tests/data/README.md) on any
//! tensor type, and the comparisons the randomized elementwise tests share.

use serde_json::Value;
use strided_wgpu::{DType, Elementwise, Error, HostTensor, Layout, Op, Scalar, Strided};
use strided_wgpu::ops::{Input, Target};

use super::views::{self, usizes, Replay};

pub struct Case {
    pub id: String,
    pub line: Value,
}

pub fn load(default: &str, env: &str) -> (String, Vec<Case>) {
    let (path, lines) = views::jsonl(default, env);
    (path, lines.into_iter().map(|v| Case { id: v["id"].as_str().unwrap_or("?").to_string(), line: v }).collect())
}

pub fn dtype_of(name: &str) -> DType {
    match name {
        "float32" => DType::F32,
        "float16" => DType::F16,
        "bfloat16" => DType::BF16,
        "int32" => DType::I32,
        "uint32" => DType::U32,
        "uint8" => DType::U8,
        "int8" => DType::I8,
        other => panic!("unknown dtype {other}"),
    }
}

fn scalar(v: &Value) -> Scalar {
    match v.as_i64() {
        Some(i) if !v.is_f64() => Scalar::Int(i),
        _ => Scalar::Float(v.as_f64().expect("a number")),
    }
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

/// The op a case names, with its arguments.
pub fn op_of(case: &Value) -> Op {
    let args = &case["args"];
    let opt = |k: &str| (!args[k].is_null()).then(|| scalar(&args[k]));
    let alpha = opt("alpha").unwrap_or(Scalar::Int(1));
    match case["op"].as_str().unwrap_or("") {
        "to" => Op::To(dtype_of(args["dtype"].as_str().expect("to's dtype"))),
        "neg" => Op::Neg,
        "abs" => Op::Abs,
        "relu" => Op::Relu,
        "sigmoid" => Op::Sigmoid,
        "tanh" => Op::Tanh,
        "exp" => Op::Exp,
        "log" => Op::Log,
        "sqrt" => Op::Sqrt,
        "rsqrt" => Op::Rsqrt,
        "floor" => Op::Floor,
        "ceil" => Op::Ceil,
        "round" => Op::Round,
        "trunc" => Op::Trunc,
        "clamp" => Op::Clamp { min: opt("min"), max: opt("max") },
        "gelu" => Op::Gelu,
        "gelu_tanh" => Op::GeluTanh,
        "silu" => Op::Silu,
        "add" => Op::Add { alpha },
        "sub" => Op::Sub { alpha },
        "mul" => Op::Mul,
        "div" => Op::Div,
        "maximum" => Op::Maximum,
        "minimum" => Op::Minimum,
        other => panic!("unknown op {other}"),
    }
}

/// The base tensor of a case's input: `base_shape` of `dtype`, element i made from
/// m = (i*7) % 23 by the fill rule.
pub fn base(input: &Value) -> HostTensor {
    let dtype = dtype_of(input["dtype"].as_str().expect("dtype"));
    let shape = usizes(&input["base_shape"]);
    let n: usize = shape.iter().product();
    let positive = input["fill"].as_str() == Some("positive");
    let value = |i: usize| -> f64 {
        let m = ((i * 7) % 23) as f64;
        match dtype {
            DType::U8 => m * 11.0,
            DType::U32 => m * 3.0,
            DType::I32 | DType::I8 => if positive { m + 1.0 } else { m - 11.0 },
            _ => if positive { (m + 1.0) / 4.0 } else { (m - 11.0) / 4.0 },
        }
    };
    let bytes: Vec<u8> = (0..n).flat_map(|i| bits_of(dtype, value(i)).to_le_bytes()[..dtype.size()].to_vec()).collect();
    HostTensor::from_bytes(dtype, bytes, Layout::contiguous(&shape).unwrap()).expect("base")
}

/// The bits of the element of `dtype` holding the (representable) value `v`.
pub fn bits_of(dtype: DType, v: f64) -> u32 {
    match dtype {
        DType::F32 => (v as f32).to_bits(),
        DType::F16 => half::f16::from_f64(v).to_bits() as u32,
        DType::BF16 => half::bf16::from_f64(v).to_bits() as u32,
        DType::I32 => v as i32 as u32,
        DType::U32 => v as u32,
        DType::U8 => v as u8 as u32,
        DType::I8 => v as i8 as u8 as u32,
    }
}

/// A host tensor's elements in logical order, as bits.
pub fn bits(t: &HostTensor) -> Vec<u32> {
    let t = t.contiguous(strided_wgpu::MemoryFormat::Contiguous).unwrap();
    match t.dtype() {
        DType::F32 => t.to_vec::<f32>().unwrap().iter().map(|x| x.to_bits()).collect(),
        DType::F16 => t.to_vec::<half::f16>().unwrap().iter().map(|x| x.to_bits() as u32).collect(),
        DType::BF16 => t.to_vec::<half::bf16>().unwrap().iter().map(|x| x.to_bits() as u32).collect(),
        DType::I32 => t.to_vec::<i32>().unwrap().iter().map(|&x| x as u32).collect(),
        DType::U32 => t.to_vec::<u32>().unwrap(),
        DType::U8 => t.to_vec::<u8>().unwrap().iter().map(|&x| x as u32).collect(),
        DType::I8 => t.to_vec::<i8>().unwrap().iter().map(|&x| x as u8 as u32).collect(),
    }
}

/// The value of an element's bits.
pub fn value(dtype: DType, b: u32) -> f64 {
    match dtype {
        DType::F32 => f32::from_bits(b) as f64,
        DType::F16 => half::f16::from_bits(b as u16).to_f64(),
        DType::BF16 => half::bf16::from_bits(b as u16).to_f64(),
        DType::I32 => b as i32 as f64,
        DType::U32 => b as f64,
        DType::U8 => (b & 0xff) as f64,
        DType::I8 => b as u8 as i8 as f64,
    }
}

/// Whether `got` is within the data README's tolerance of `want` for a result of `dtype`
/// (`tight`: the rtol of div and alpha), with bfloat16 subnormals allowed to flush to zero.
/// NaN matches NaN; infinities match exactly.
pub fn close(dtype: DType, got: f64, want: f64, tight: bool) -> bool {
    if want.is_nan() || got.is_nan() || want.is_infinite() || got.is_infinite() {
        return (want.is_nan() && got.is_nan()) || got == want;
    }
    let ulp = |p: i32, min: f64| if want == 0.0 { min } else { (2f64.powi(p) * 2f64.powi(want.abs().log2().floor() as i32)).max(min) };
    let tol = match dtype {
        DType::F16 => ulp(-10, 2f64.powi(-24)),
        // At least f32's smallest normal: bfloat16 is computed in f32, whose subnormal results
        // WGSL lets a GPU flush to zero (an H200 gave 0 for 1 / 3.39e38, 2.9e-39).
        DType::BF16 => ulp(-7, 2f64.powi(-126)),
        _ => 1e-6 + if tight { 4e-7 } else { 1e-5 } * want.abs(),
    };
    (got - want).abs() <= tol
}

/// Whether an op's results of `dtype` compare bit for bit.
pub fn exact(op: Op, dtype: DType) -> bool {
    !dtype.is_float() || op.is_exact()
}

/// Replays one case on tensors of type `T`: `make` turns a host base tensor into a `T`, `fetch`
/// reads a `T` back. Returns what differs from PyTorch's answer.
pub fn check<T: Replay + Elementwise>(case: &Case, make: impl Fn(&HostTensor) -> T, fetch: impl Fn(&T) -> HostTensor) -> Vec<String> {
    let v = &case.line;
    let op = op_of(v);
    let mut bases = Vec::new();
    let mut tensors = Vec::new();
    let mut scalars = Vec::new();
    for input in v["inputs"].as_array().expect("inputs") {
        if !input["scalar"].is_null() {
            scalars.push(Some(scalar(&input["scalar"])));
            continue;
        }
        scalars.push(None);
        let b = make(&base(input));
        let mut t = b.clone();
        for o in input["ops"].as_array().cloned().unwrap_or_default() {
            t = match views::apply(&t, &o) {
                Ok(t) => t,
                Err(e) => return vec![format!("view op {o} failed: {e}")],
            };
        }
        bases.push(b);
        tensors.push(t);
    }
    let mut it = tensors.iter();
    let inputs: Vec<Input<'_, T>> = scalars.iter().map(|s| match s {
        Some(s) => Input::Scalar(*s),
        None => Input::Tensor(it.next().unwrap()),
    }).collect();
    let inplace = v["inplace"].as_bool().unwrap_or(false);
    let result: Result<T, Error> = match (op, &inputs[..]) {
        // `x.to(dtype)` returns `x` itself when the type already matches.
        (Op::To(d), [Input::Tensor(x)]) if !inplace => x.to(d),
        _ => T::run(op, &inputs, if inplace { Target::InPlace } else { Target::New }),
    };
    let expect = &v["expect"];
    if expect["error"].as_bool() == Some(true) {
        return super::raises::check(result, expect);
    }
    let r = match result {
        Ok(r) => r,
        Err(e) => return vec![format!("unexpected error: {e}")],
    };
    let mut errs = Vec::new();
    let dtype = dtype_of(expect["dtype"].as_str().unwrap_or(""));
    if r.dtype() != dtype {
        errs.push(format!("dtype {} != {dtype}", r.dtype()));
        return errs;
    }
    if r.shape() != usizes(&expect["shape"]).as_slice() {
        errs.push(format!("shape {:?} != {:?}", r.shape(), expect["shape"]));
    }
    if r.strides() != views::isizes(&expect["strides"]).as_slice() {
        errs.push(format!("strides {:?} != {:?}", r.strides(), expect["strides"]));
    }
    let tight = matches!(op, Op::Div) || !op.is_exact() && matches!(op, Op::Add { .. } | Op::Sub { .. });
    let mut compare = |what: &str, got: &HostTensor, want: &Value| {
        let want: Vec<f64> = want.as_array().map(|a| a.iter().map(number).collect()).unwrap_or_default();
        let got = bits(got);
        if got.len() != want.len() {
            errs.push(format!("{what}: {} values, expected {}", got.len(), want.len()));
            return;
        }
        for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
            let ok = if exact(op, dtype) && !w.is_nan() { g == bits_of(dtype, w) } else { close(dtype, value(dtype, g), w, tight) };
            if !ok {
                errs.push(format!("{what}[{i}]: got {} ({g:#x}), want {w}", value(dtype, g)));
                break;
            }
        }
    };
    compare("values", &fetch(&r), &expect["values"]);
    if inplace {
        compare("base_values", &fetch(&bases[0]), &expect["base_values"]);
    }
    errs
}
