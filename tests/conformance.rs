//! PyTorch conformance: replays tests/data/views.jsonl (or the file named by
//! `CONFORMANCE_VIEWS`) on host tensors, then on every GPU adapter for f32, f16 and u8, and
//! prints `conformance views: N passed, M failed` and `conformance views (device): N passed,
//! M failed`; then conv1x1.jsonl and conv2d.jsonl (`CONFORMANCE_CONV1X1`, `CONFORMANCE_CONV2D`)
//! on the host and every adapter, printing `conformance conv1x1: ...` and `conformance conv2d:
//! N passed, M failed`. Exits non-zero on any failure.

mod common;

use common::conv::{self as convcase, to_device};
use common::elementwise as ew;
use common::gpu::{contexts, name};
use common::views::{self, Case, Replay};
use strided_wgpu::{conv1x1, conv1x1_cpu, conv2d, conv2d_cpu, DType, DeviceTensor, Error, GpuContext, HostTensor, MemoryFormat, Strided};

impl Replay for HostTensor {
    fn contiguous_fmt(&self, f: MemoryFormat) -> Result<Self, Error> {
        self.contiguous(f)
    }
    fn flatten_(&self, a: isize, b: isize) -> Result<Self, Error> {
        self.flatten(a, b)
    }
    fn as_strided_(&self, shape: &[usize], strides: &[isize], offset: usize) -> Result<Self, Error> {
        self.as_strided(shape, strides, offset)
    }
    fn same_storage(&self, other: &Self) -> bool {
        self.shares_storage(other)
    }
    fn values(&self) -> Result<Vec<f64>, Error> {
        Ok(self.to_vec::<f32>()?.into_iter().map(f64::from).collect())
    }
}

impl Replay for DeviceTensor {
    fn contiguous_fmt(&self, f: MemoryFormat) -> Result<Self, Error> {
        self.contiguous(f)
    }
    fn flatten_(&self, a: isize, b: isize) -> Result<Self, Error> {
        self.flatten(a, b)
    }
    fn as_strided_(&self, shape: &[usize], strides: &[isize], offset: usize) -> Result<Self, Error> {
        self.as_strided(shape, strides, offset)
    }
    fn same_storage(&self, other: &Self) -> bool {
        self.shares_storage(other)
    }
    /// Materialized on the GPU, then downloaded.
    fn values(&self) -> Result<Vec<f64>, Error> {
        let host = self.materialize(MemoryFormat::Contiguous, self.dtype())?.download()?;
        Ok(match self.dtype() {
            DType::F32 => host.to_vec::<f32>()?.into_iter().map(f64::from).collect(),
            DType::F16 => host.to_vec::<half::f16>()?.into_iter().map(|x| x.to_f64()).collect(),
            DType::U8 => host.to_vec::<u8>()?.into_iter().map(f64::from).collect(),
            t => panic!("no replay for {t}"),
        })
    }
}

/// elementwise.jsonl on the host, then on every adapter: one line for all of them.
fn elementwise_suite() -> bool {
    let (path, cases) = ew::load("elementwise.jsonl", "CONFORMANCE_ELEMENTWISE");
    assert!(!cases.is_empty(), "{path} holds no cases");
    let (mut pass, mut fail) = (0, 0);
    let mut tally = |what: &str, run: &dyn Fn(&ew::Case) -> Vec<String>| {
        let (mut p, mut f) = (0, 0);
        for case in &cases {
            let errs = run(case);
            if errs.is_empty() {
                p += 1;
            } else {
                f += 1;
                eprintln!("FAIL elementwise {what} {} ({path}): {}\n  {}", case.id, case.line, errs.join("\n  "));
            }
        }
        eprintln!("  elementwise {what}: {p} passed, {f} failed");
        pass += p;
        fail += f;
    };
    tally("host", &|case| ew::check(case, |h: &HostTensor| h.clone(), |t: &HostTensor| t.clone()));
    for ctx in contexts() {
        tally(&name(ctx), &|case| ew::check(case, |h: &HostTensor| DeviceTensor::upload(ctx, h).expect("upload"), |t: &DeviceTensor| t.download().expect("download")));
    }
    println!("conformance elementwise: {pass} passed, {fail} failed");
    fail == 0
}

fn report(what: &str, path: &str, cases: &[Case], run: impl Fn(&Case) -> Vec<String>) -> (usize, usize) {
    let (mut pass, mut fail) = (0, 0);
    for case in cases {
        let errs = run(case);
        if errs.is_empty() {
            pass += 1;
        } else {
            fail += 1;
            eprintln!("FAIL {what} {} ({path}) ops {:?}:\n  {}", case.id, case.ops, errs.join("\n  "));
        }
    }
    (pass, fail)
}

fn device_base(ctx: &GpuContext, dtype: DType, shape: &[usize]) -> DeviceTensor {
    let n: usize = shape.iter().product();
    match dtype {
        DType::F32 => DeviceTensor::from_slice(ctx, &(0..n).map(|i| i as f32).collect::<Vec<_>>(), shape),
        // Every index below 2048 is exact in f16.
        DType::F16 => DeviceTensor::from_slice(ctx, &(0..n).map(|i| half::f16::from_f32(i as f32)).collect::<Vec<_>>(), shape),
        DType::U8 => DeviceTensor::from_slice(ctx, &(0..n).map(|i| (i % 256) as u8).collect::<Vec<_>>(), shape),
        t => panic!("no replay for {t}"),
    }
    .expect("device base tensor")
}

fn main() {
    let (path, cases) = views::load("views.jsonl", "CONFORMANCE_VIEWS");
    assert!(!cases.is_empty(), "{path} holds no cases");
    let (pass, fail) = report("host", &path, &cases, |case| {
        let numel: usize = case.base_shape.iter().product();
        let base = HostTensor::from_vec((0..numel).map(|i| i as f32).collect(), &case.base_shape).expect("base tensor");
        views::check(case, &base)
    });
    println!("conformance views: {pass} passed, {fail} failed");
    let mut ok = fail == 0;

    let ctxs = contexts();
    if ctxs.is_empty() {
        println!("conformance views (device): skipped, no GPU adapter");
    } else {
        let (mut dp, mut df) = (0, 0);
        for ctx in ctxs {
            for dtype in [DType::F32, DType::F16, DType::U8] {
                let reduce = move |x: f64| if dtype == DType::U8 { x % 256.0 } else { x };
                let (p, f) = report(&format!("{} {dtype}", name(ctx)), &path, &cases, |case| {
                    views::check_with(case, &device_base(ctx, dtype, &case.base_shape), reduce)
                });
                eprintln!("  device {} {dtype}: {p} passed, {f} failed", name(ctx));
                dp += p;
                df += f;
            }
        }
        println!("conformance views (device): {dp} passed, {df} failed");
        ok &= df == 0;
    }
    ok &= elementwise_suite();
    ok &= conv_suite("conv1x1", "conv1x1.jsonl", "CONFORMANCE_CONV1X1");
    ok &= conv_suite("conv2d", "conv2d.jsonl", "CONFORMANCE_CONV2D");
    if !ok {
        std::process::exit(1);
    }
}

/// Replays a convolution file (conv1x1.jsonl or conv2d.jsonl, or the file its env var names)
/// through the CPU reference and on every GPU adapter, for an NCHW, a channels-last and a
/// non-dense input; prints `conformance <label>: N passed, M failed`. A case PyTorch rejects
/// must be an error on every path.
fn conv_suite(label: &str, file: &str, env: &str) -> bool {
    let (path, cases) = convcase::load(file, env);
    assert!(!cases.is_empty(), "{path} holds no cases");
    let one = label == "conv1x1";
    let (mut pass, mut fail) = (0, 0);
    let mut tally = |errs: Vec<String>, what: &str, id: &str, layout: &str| {
        if errs.is_empty() {
            pass += 1;
        } else {
            fail += 1;
            eprintln!("FAIL {label} {id} ({path}) {what} {layout}:\n  {}", errs.join("\n  "));
        }
    };
    let judge = |case: &convcase::ConvCase, x: &[f32], w: &[f32], b: Option<&[f32]>, got: Result<(Vec<usize>, Vec<f32>), Error>| -> Vec<String> {
        match got {
            Err(_) if case.expect_error => vec![],
            Err(e) => vec![e.to_string()],
            Ok(_) if case.expect_error => vec!["succeeded, but PyTorch rejects it".into()],
            Ok((shape, _)) if shape != case.expect_shape => vec![format!("shape {shape:?}, want {:?}", case.expect_shape)],
            Ok((_, values)) => convcase::compare(case, x, w, b, &values),
        }
    };
    for case in &cases {
        let (x, w, b) = convcase::inputs(case);
        let weight = HostTensor::from_slice(&w, &case.weight_shape()).expect("weight");
        let bias = b.as_ref().map(|b| HostTensor::from_slice(b, &[case.k]).expect("bias"));
        let opts = case.options();
        for (layout, input) in convcase::input_variants(case, &x) {
            let host = if one { conv1x1_cpu(&input, &weight, bias.as_ref(), &opts) } else { conv2d_cpu(&input, &weight, bias.as_ref(), &opts) };
            let got = host.and_then(|out| Ok((out.shape().to_vec(), out.to_vec::<f32>()?)));
            tally(judge(case, &x, &w, b.as_deref(), got), "host", &case.id, layout);
            for ctx in contexts() {
                let (di, dw) = (to_device(ctx, &input), to_device(ctx, &weight));
                let db = bias.as_ref().map(|b| to_device(ctx, b));
                let out = if one { conv1x1(&di, &dw, db.as_ref(), &opts) } else { conv2d(&di, &dw, db.as_ref(), &opts) };
                let got = out.and_then(|out| Ok((out.shape().to_vec(), out.download()?.to_vec::<f32>()?)));
                tally(judge(case, &x, &w, b.as_deref(), got), &name(ctx), &case.id, layout);
            }
        }
    }
    println!("conformance {label}: {pass} passed, {fail} failed");
    fail == 0
}
