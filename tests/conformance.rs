//! PyTorch conformance: replays tests/data/views.jsonl (or the file named by
//! `CONFORMANCE_VIEWS`) on host tensors, then on every GPU adapter for f32, f16 and u8, and
//! prints `conformance views: N passed, M failed` and `conformance views (device): N passed,
//! M failed`; then conv1x1.jsonl, conv2d.jsonl and conv2d_half.jsonl (`CONFORMANCE_CONV1X1`,
//! `CONFORMANCE_CONV2D`, `CONFORMANCE_CONV2D_HALF`) on the host and every adapter, each for an
//! NCHW, a channels-last and a strided input (16-bit cases on an adapter also forced onto the
//! GEMM kernel that reads them as they are), printing `conformance conv1x1: ...`,
//! `conformance conv2d: N passed, M failed` and `conformance conv2d_half: N passed, M failed`;
//! then matmul.jsonl (`CONFORMANCE_MATMUL`), shape.jsonl and pool.jsonl
//! (`CONFORMANCE_SHAPE`, `CONFORMANCE_POOL`) on the host and every adapter, printing
//! `conformance matmul: N passed, M failed`, `conformance shape: N passed, M failed` and
//! `conformance pool: N passed, M failed`; then reduce.jsonl (`CONFORMANCE_REDUCE`), printing
//! `conformance reduce: N passed, M failed`. Exits non-zero on any failure. The host and each adapter replay on threads
//! of their own.

mod common;

use common::conv::{self as convcase, to_device};
use common::elementwise as ew;
use common::matmul as mm;
use common::reduce as rc;
use common::gpu::{contexts, name};
use common::views::{self, Case, Replay};
use common::window;
use strided_wgpu::{DeviceTensor, DType, Elementwise, Error, GpuContext, HostTensor, MemoryFormat, Strided};
use strided_wgpu::ops::conv1x1;
use strided_wgpu::advanced::{conv2d_with, ConvKernel};
use strided_wgpu::advanced::internal::{conv1x1_cpu, conv2d_cpu};

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

/// Runs `check` on every case of a JSON Lines file (`id` and `line` name a failing case) and
/// prints the failures and `  <label> <target>: N passed, M failed`: (passed, failed).
fn tally<C>(label: &str, what: &str, path: &str, cases: &[C], name: impl Fn(&C) -> (&str, &serde_json::Value), check: impl Fn(&C) -> Vec<String>) -> (usize, usize) {
    let (mut p, mut f) = (0, 0);
    for case in cases {
        let errs = check(case);
        if errs.is_empty() {
            p += 1;
        } else {
            f += 1;
            let (id, line) = name(case);
            eprintln!("FAIL {label} {what} {id} ({path}): {line}\n  {}", errs.join("\n  "));
        }
    }
    eprintln!("  {label} {what}: {p} passed, {f} failed");
    (p, f)
}

/// elementwise.jsonl on `target`: (passed, failed).
fn elementwise_on(target: Target, path: &str, cases: &[ew::Case]) -> (usize, usize) {
    tally("elementwise", &target.name(), path, cases, |c| (&c.id, &c.line), |case| match target {
        Target::Host => ew::check(case, |h: &HostTensor| h.clone(), |t: &HostTensor| t.clone()),
        Target::Device(ctx) => ew::check(case, |h: &HostTensor| DeviceTensor::upload(ctx, h).expect("upload"), |t: &DeviceTensor| t.download().expect("download")),
    })
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

/// Where a suite replays: the host tensors or one GPU adapter. Each target replays every
/// suite on a thread of its own (on a CPU adapter most of the time goes to compiling
/// pipelines, one at a time per adapter).
#[derive(Clone, Copy)]
enum Target {
    Host,
    Device(&'static GpuContext),
}

impl Target {
    fn name(self) -> String {
        match self {
            Target::Host => "host".into(),
            Target::Device(ctx) => name(ctx),
        }
    }
}

/// The cases of every file, loaded once.
struct Files {
    views: (String, Vec<Case>),
    elementwise: (String, Vec<ew::Case>),
    conv1x1: (String, Vec<convcase::ConvCase>),
    conv2d: (String, Vec<convcase::ConvCase>),
    conv2d_half: (String, Vec<convcase::ConvCase>),
    matmul: (String, Vec<mm::Case>),
    shape: (String, Vec<ew::Case>),
    pool: (String, Vec<ew::Case>),
    reduce: (String, Vec<rc::Case>),
}

/// (passed, failed) of one target in each suite: views, elementwise, conv1x1, conv2d, matmul,
/// shape, pool, reduce, conv2d_half.
type Counts = [(usize, usize); 9];

fn replay(target: Target, files: &Files) -> Counts {
    let started = std::time::Instant::now();
    let (path, cases) = &files.views;
    let views = match target {
        Target::Host => report("host", path, cases, |case| {
            let numel: usize = case.base_shape.iter().product();
            let base = HostTensor::from_vec((0..numel).map(|i| i as f32).collect(), &case.base_shape).expect("base tensor");
            views::check(case, &base)
        }),
        Target::Device(ctx) => {
            let (mut dp, mut df) = (0, 0);
            for dtype in [DType::F32, DType::F16, DType::U8] {
                let reduce = move |x: f64| if dtype == DType::U8 { x % 256.0 } else { x };
                let (p, f) = report(&format!("{} {dtype}", name(ctx)), path, cases, |case| views::check_with(case, &device_base(ctx, dtype, &case.base_shape), reduce));
                eprintln!("  device {} {dtype}: {p} passed, {f} failed", name(ctx));
                dp += p;
                df += f;
            }
            (dp, df)
        }
    };
    let elementwise = elementwise_on(target, &files.elementwise.0, &files.elementwise.1);
    let conv1x1 = conv_on(target, "conv1x1", &files.conv1x1.0, &files.conv1x1.1);
    let conv2d = conv_on(target, "conv2d", &files.conv2d.0, &files.conv2d.1);
    let conv2d_half = conv_on(target, "conv2d_half", &files.conv2d_half.0, &files.conv2d_half.1);
    let matmul = matmul_on(target, &files.matmul.0, &files.matmul.1);
    let shape = window_on(target, "shape", &files.shape.0, &files.shape.1);
    let pool = window_on(target, "pool", &files.pool.0, &files.pool.1);
    let reduce = reduce_on(target, &files.reduce.0, &files.reduce.1);
    eprintln!("  {}: every suite replayed in {:.1} s", target.name(), started.elapsed().as_secs_f64());
    [views, elementwise, conv1x1, conv2d, matmul, shape, pool, reduce, conv2d_half]
}

fn main() {
    let files = Files {
        views: views::load("views.jsonl", "CONFORMANCE_VIEWS"),
        elementwise: ew::load("elementwise.jsonl", "CONFORMANCE_ELEMENTWISE"),
        conv1x1: convcase::load("conv1x1.jsonl", "CONFORMANCE_CONV1X1"),
        conv2d: convcase::load("conv2d.jsonl", "CONFORMANCE_CONV2D"),
        conv2d_half: convcase::load("conv2d_half.jsonl", "CONFORMANCE_CONV2D_HALF"),
        matmul: mm::load("matmul.jsonl", "CONFORMANCE_MATMUL"),
        shape: ew::load("shape.jsonl", "CONFORMANCE_SHAPE"),
        pool: ew::load("pool.jsonl", "CONFORMANCE_POOL"),
        reduce: rc::load("reduce.jsonl", "CONFORMANCE_REDUCE"),
    };
    assert!(!files.shape.1.is_empty(), "{} holds no cases", files.shape.0);
    assert!(!files.pool.1.is_empty(), "{} holds no cases", files.pool.0);
    assert!(!files.views.1.is_empty(), "{} holds no cases", files.views.0);
    assert!(!files.elementwise.1.is_empty(), "{} holds no cases", files.elementwise.0);
    assert!(!files.conv1x1.1.is_empty(), "{} holds no cases", files.conv1x1.0);
    assert!(!files.conv2d.1.is_empty(), "{} holds no cases", files.conv2d.0);
    assert!(!files.conv2d_half.1.is_empty(), "{} holds no cases", files.conv2d_half.0);
    assert!(!files.matmul.1.is_empty(), "{} holds no cases", files.matmul.0);
    assert!(!files.reduce.1.is_empty(), "{} holds no cases", files.reduce.0);
    // The crate's own files hold the counts tests/data/README.md gives (a truncated file, or
    // one regenerated in part, fails here); a file named by an override may hold any.
    let documented = [
        ("CONFORMANCE_VIEWS", files.views.1.len(), 400),
        ("CONFORMANCE_ELEMENTWISE", files.elementwise.1.len(), 500),
        ("CONFORMANCE_CONV1X1", files.conv1x1.1.len(), 40),
        ("CONFORMANCE_CONV2D", files.conv2d.1.len(), 60),
        ("CONFORMANCE_CONV2D_HALF", files.conv2d_half.1.len(), 60),
        ("CONFORMANCE_MATMUL", files.matmul.1.len(), 150),
        ("CONFORMANCE_SHAPE", files.shape.1.len(), 204),
        ("CONFORMANCE_POOL", files.pool.1.len(), 200),
        ("CONFORMANCE_REDUCE", files.reduce.1.len(), 400),
    ];
    for (var, got, want) in documented {
        if std::env::var_os(var).is_none() {
            assert_eq!(got, want, "the file {var} would override holds {got} cases, tests/data/README.md says {want}");
        }
    }

    let ctxs = contexts();
    let targets: Vec<Target> = std::iter::once(Target::Host).chain(ctxs.iter().map(Target::Device)).collect();
    let counts: Vec<Counts> = std::thread::scope(|s| {
        let files = &files;
        let handles: Vec<_> = targets.iter().map(|&t| s.spawn(move || replay(t, files))).collect();
        handles.into_iter().map(|h| h.join().expect("a conformance thread panicked")).collect()
    });
    let sum = |suite: usize, from: usize| counts[from..].iter().fold((0, 0), |(p, f), c| (p + c[suite].0, f + c[suite].1));

    let (pass, fail) = counts[0][0];
    println!("conformance views: {pass} passed, {fail} failed");
    let mut ok = fail == 0;
    if ctxs.is_empty() {
        println!("conformance views (device): skipped, no GPU adapter");
    } else {
        let (dp, df) = sum(0, 1);
        println!("conformance views (device): {dp} passed, {df} failed");
        ok &= df == 0;
    }
    for (suite, label) in [(1, "elementwise"), (2, "conv1x1"), (3, "conv2d"), (8, "conv2d_half"), (4, "matmul"), (5, "shape"), (6, "pool"), (7, "reduce")] {
        let (pass, fail) = sum(suite, 0);
        println!("conformance {label}: {pass} passed, {fail} failed");
        ok &= fail == 0;
    }
    if !ok {
        std::process::exit(1);
    }
}

/// matmul.jsonl on `target`: (passed, failed).
fn matmul_on(target: Target, path: &str, cases: &[mm::Case]) -> (usize, usize) {
    tally("matmul", &target.name(), path, cases, |c| (&c.id, &c.line), |case| match target {
        Target::Host => mm::check(case, |h: &HostTensor| h.clone(), |t: &HostTensor| t.clone()),
        Target::Device(ctx) => mm::check(case, |h: &HostTensor| DeviceTensor::upload(ctx, h).expect("upload"), |t: &DeviceTensor| t.download().expect("download")),
    })
}

/// reduce.jsonl on `target`: (passed, failed).
fn reduce_on(target: Target, path: &str, cases: &[rc::Case]) -> (usize, usize) {
    tally("reduce", &target.name(), path, cases, |c| (&c.id, &c.line), |case| match target {
        Target::Host => rc::check(case, |h: &HostTensor| h.clone(), |t: &HostTensor| t.clone()),
        Target::Device(ctx) => rc::check(case, |h: &HostTensor| DeviceTensor::upload(ctx, h).expect("upload"), |t: &DeviceTensor| t.download().expect("download")),
    })
}

/// Replays a convolution file (conv1x1.jsonl, conv2d.jsonl or conv2d_half.jsonl, or the file
/// its env var names) on `target` for an NCHW, a channels-last and a non-dense input, 16-bit
/// cases on a device also forced onto the GEMM kernel: (passed, failed). A case PyTorch rejects
/// must be an error of bad input on every path (`common::raises`).
fn conv_on(target: Target, label: &str, path: &str, cases: &[convcase::ConvCase]) -> (usize, usize) {
    let one = label == "conv1x1";
    let what = target.name();
    let (mut pass, mut fail) = (0, 0);
    for case in cases {
        let (x, w, b) = convcase::inputs(case);
        let weight = HostTensor::from_slice(&w, &case.weight_shape()).and_then(|t| t.to(case.dtype)).expect("weight");
        let bias = b.as_ref().map(|b| HostTensor::from_slice(b, &[case.k]).and_then(|t| t.to(case.dtype)).expect("bias"));
        let opts = case.options();
        // On a device, 16-bit cases run twice: through the automatic choice, and forced onto
        // the GEMM kernel that reads them as they are (`conv2d_gemm16`: the GPUs' default, which
        // the CPU adapters' choice would not reach), in the input's orientation.
        let half = case.dtype != DType::F32 && matches!(target, Target::Device(_));
        let variants = convcase::input_variants(case, &x).into_iter().flat_map(|(layout, input)| {
            let gemm = if input.strides()[1] == 1 { ConvKernel::GemmNhwc } else { ConvKernel::GemmNchw };
            let forced = half.then(|| (format!("{layout} {gemm:?}"), input.clone(), gemm));
            std::iter::once((layout.to_string(), input.clone(), ConvKernel::Auto)).chain(forced)
        });
        for (layout, input, kernel) in variants {
            let got = match target {
                Target::Host => {
                    let out = if one { conv1x1_cpu(&input, &weight, bias.as_ref(), &opts) } else { conv2d_cpu(&input, &weight, bias.as_ref(), &opts) };
                    out.and_then(|out| Ok((out.shape().to_vec(), out.to(DType::F32)?.to_vec::<f32>()?)))
                }
                Target::Device(ctx) => {
                    let (di, dw) = (to_device(ctx, &input), to_device(ctx, &weight));
                    let db = bias.as_ref().map(|b| to_device(ctx, b));
                    let out = if one { conv1x1(&di, &dw, db.as_ref(), &opts) } else { conv2d_with(&di, &dw, db.as_ref(), &opts, kernel) };
                    out.and_then(|out| Ok((out.shape().to_vec(), out.download()?.to(DType::F32)?.to_vec::<f32>()?)))
                }
            };
            let errs = match got {
                got if case.expect_error => common::raises::check(got, &serde_json::json!({"error": true, "message": "an output size below 1"})),
                Err(e) => vec![e.to_string()],
                Ok((shape, _)) if shape != case.expect_shape => vec![format!("shape {shape:?}, want {:?}", case.expect_shape)],
                Ok((_, values)) => convcase::compare(case, &x, &w, b.as_deref(), &values),
            };
            if errs.is_empty() {
                pass += 1;
            } else {
                fail += 1;
                eprintln!("FAIL {label} {} ({path}) {what} {layout}:\n  {}", case.id, errs.join("\n  "));
            }
        }
    }
    (pass, fail)
}

/// Replays shape.jsonl or pool.jsonl (`label`) on `target`: (passed, failed). A case PyTorch
/// rejects must be an error of bad input (`common::raises`).
fn window_on(target: Target, label: &str, path: &str, cases: &[ew::Case]) -> (usize, usize) {
    let pool = label == "pool";
    tally(label, &target.name(), path, cases, |c| (&c.id, &c.line), |case| {
        let line = &case.line;
        let got = match target {
            Target::Host => {
                let make = |h: &HostTensor| h.clone();
                if pool { window::run_pool(line, &make) } else { window::run_shape(line, &make) }
            }
            Target::Device(ctx) => {
                let make = |h: &HostTensor| DeviceTensor::upload(ctx, h).expect("upload");
                let r = if pool { window::run_pool(line, &make) } else { window::run_shape(line, &make) };
                // A download is contiguous: the host copy takes the device result's memory
                // format again, which the comparison checks against PyTorch's strides.
                r.and_then(|ts| ts.iter().map(|t| t.download()?.contiguous(t.layout().suggest_memory_format())).collect())
            }
        };
        window::compare(line, got)
    })
}
