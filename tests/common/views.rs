//! Replays `views.jsonl` cases (format: tests/data/README.md) on any tensor type.

use serde_json::Value;
use strided_wgpu::{Error, MemoryFormat, Strided};

/// What a replay needs beyond the shared view operations.
pub trait Replay: Strided + Clone {
    fn contiguous_fmt(&self, f: MemoryFormat) -> Result<Self, Error>;
    fn flatten_(&self, a: isize, b: isize) -> Result<Self, Error>;
    fn as_strided_(&self, shape: &[usize], strides: &[isize], offset: usize) -> Result<Self, Error>;
    fn same_storage(&self, other: &Self) -> bool;
    /// Elements in logical order, as f64 (the values are small integers).
    fn values(&self) -> Result<Vec<f64>, Error>;
}

pub struct Case {
    pub id: String,
    pub base_shape: Vec<usize>,
    pub ops: Vec<Value>,
    pub expect: Value,
}

/// The JSON lines of the data file `env` names, else of tests/data/`default`: (path, lines).
pub fn jsonl(default: &str, env: &str) -> (String, Vec<Value>) {
    let path = std::env::var(env).unwrap_or_else(|_| format!("{}/tests/data/{default}", env!("CARGO_MANIFEST_DIR")));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
    let lines: Vec<Value> = text.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{path}: bad JSON line: {e}"))).collect();
    // Every case names itself once: a case repeated (or one without an id) would replay twice
    // under one name, or unnamed in a failure.
    let mut ids = std::collections::HashSet::new();
    for v in &lines {
        let id = v["id"].as_str().unwrap_or_else(|| panic!("{path}: a case without an id: {v}"));
        assert!(ids.insert(id.to_string()), "{path}: the id {id} twice");
    }
    (path, lines)
}

pub fn load(default: &str, env: &str) -> (String, Vec<Case>) {
    let (path, lines) = jsonl(default, env);
    let cases = lines
        .into_iter()
        .map(|v| {
            Case {
                id: v["id"].as_str().unwrap_or("?").to_string(),
                base_shape: usizes(&v["base_shape"]),
                ops: v["ops"].as_array().cloned().unwrap_or_default(),
                expect: v["expect"].clone(),
            }
        })
        .collect();
    (path, cases)
}

pub fn usizes(v: &Value) -> Vec<usize> {
    v.as_array().map(|a| a.iter().map(|x| x.as_u64().expect("size") as usize).collect()).unwrap_or_default()
}
pub fn isizes(v: &Value) -> Vec<isize> {
    v.as_array().map(|a| a.iter().map(|x| x.as_i64().expect("int") as isize).collect()).unwrap_or_default()
}
fn int(op: &Value, k: &str) -> isize {
    op[k].as_i64().unwrap_or_else(|| panic!("op {op} lacks {k}")) as isize
}

fn format_of(name: &str) -> MemoryFormat {
    match name {
        "channels_last" => MemoryFormat::ChannelsLast,
        "channels_last_3d" => MemoryFormat::ChannelsLast3d,
        _ => MemoryFormat::Contiguous,
    }
}

/// Applies one op.
pub fn apply<T: Replay>(t: &T, op: &Value) -> Result<T, Error> {
    let name = op["op"].as_str().unwrap_or("");
    match name {
        "permute" => t.permute(&isizes(&op["dims"])),
        "transpose" => t.transpose(int(op, "dim0"), int(op, "dim1")),
        "slice" => t.slice(int(op, "dim"), int(op, "start"), int(op, "end"), int(op, "step")),
        "narrow" => t.narrow(int(op, "dim"), int(op, "start"), int(op, "length") as usize),
        "select" => t.select(int(op, "dim"), int(op, "index")),
        "unsqueeze" => t.unsqueeze(int(op, "dim")),
        "squeeze" => t.squeeze(int(op, "dim")),
        "expand" => t.expand(&isizes(&op["shape"])),
        "view" => t.view(&isizes(&op["shape"])),
        "flatten" => t.flatten_(int(op, "start_dim"), int(op, "end_dim")),
        "contiguous" => t.contiguous_fmt(format_of(op["memory_format"].as_str().unwrap_or(""))),
        "diagonal" => t.diagonal(int(op, "offset"), int(op, "dim1"), int(op, "dim2")),
        "as_strided" => t.as_strided_(&usizes(&op["size"]), &isizes(&op["stride"]), int(op, "storage_offset") as usize),
        other => panic!("unknown op {other}"),
    }
}

/// Replays a case on `base` and returns a description of every mismatch (empty: pass).
pub fn check<T: Replay>(case: &Case, base: &T) -> Vec<String> {
    check_with(case, base, |x| x)
}

/// Like `check`, with expected values mapped through `reduce` (the base of a narrow type holds
/// each index reduced into the type's exact range).
pub fn check_with<T: Replay>(case: &Case, base: &T, reduce: impl Fn(f64) -> f64) -> Vec<String> {
    let mut errs = Vec::new();
    let mut t = base.clone();
    for (i, op) in case.ops.iter().enumerate() {
        match apply(&t, op) {
            Ok(next) => t = next,
            Err(e) => {
                let want_op = case.expect["error"].as_str();
                let want_at = case.expect["at"].as_u64();
                if want_op != Some(e.op()) || want_at != Some(i as u64) {
                    errs.push(format!("op {i} ({op}) failed: {e}; expected {}", case.expect));
                } else if let Err(why) = super::raises::bad_input(&e) {
                    errs.push(format!("op {i} ({op}): {why}"));
                }
                return errs;
            }
        }
    }
    let x = &case.expect;
    if let Some(op) = x["error"].as_str() {
        errs.push(format!("expected {op} to fail at op {}, but the chain succeeded", x["at"]));
        return errs;
    }
    let mut cmp = |what: &str, got: String, want: String| {
        if got != want {
            errs.push(format!("{what}: got {got}, want {want}"));
        }
    };
    cmp("shape", format!("{:?}", t.shape()), format!("{:?}", usizes(&x["shape"])));
    cmp("strides", format!("{:?}", t.strides()), format!("{:?}", isizes(&x["strides"])));
    cmp("offset", t.storage_offset().to_string(), x["offset"].to_string());
    cmp("is_contiguous", t.is_contiguous().to_string(), x["is_contiguous"].to_string());
    let cl = if t.rank() == 4 { t.is_contiguous_for(MemoryFormat::ChannelsLast).to_string() } else { "null".into() };
    cmp("is_channels_last", cl, x["is_channels_last"].to_string());
    cmp("shares_base_storage", t.same_storage(base).to_string(), x["shares_base_storage"].to_string());
    match t.values() {
        Ok(v) => {
            let want: Vec<f64> = x["values"].as_array().map(|a| a.iter().map(|v| reduce(v.as_f64().unwrap_or(f64::NAN))).collect()).unwrap_or_default();
            if v != want {
                errs.push(format!("values: got {v:?}, want {want:?}"));
            }
        }
        Err(e) => errs.push(format!("values: {e}")),
    }
    errs
}
