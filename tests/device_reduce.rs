//! Reductions, softmax, log_softmax and cumsum on every adapter in lockstep with the CPU
//! reference: random views (permuted, stepped, flipped, broadcast, offset), the seven types,
//! every op and dims form, through every kernel class (rows, columns, general, identity),
//! with NaN, infinities and signed zeros; the edges of grids (a device allowing 16 workgroups
//! per dimension), bindings (a device with 4 KiB bindings: pieces, and a typed Limit error),
//! 0-d, single-element and empty inputs; determinism (two runs, the same bits); bad input
//! (typed errors, nothing written).

mod common;

use common::elementwise::{bits, value};
use common::gpu::{contexts, limited, limited_as, name, posing_as_gpu};
use common::rng::Rng;
use strided_wgpu::advanced::internal::{reduce_spec, ReduceClass, ReducePlan};
use strided_wgpu::{DeviceTensor, Dims, DType, Error, GpuContext, HostTensor, Layout, MemoryFormat, Reduce, Strided};
use strided_wgpu::ops::{ReduceOp, ScanOp};

/// Random element bits of `dtype`: small floats (some NaN, infinities and signed zeros when
/// `specials`), integers of the type's range.
fn data(rng: &mut Rng, dtype: DType, n: usize, specials: bool) -> HostTensor {
    let bytes: Vec<u8> = (0..n)
        .flat_map(|_| {
            let v: f64 = match rng.below(40) {
                0 if specials => f64::NAN,
                1 if specials => -0.0,
                2 if specials => 0.0,
                3 if specials => f64::INFINITY,
                _ => (rng.below(1601) as f64 - 800.0) / 200.0,
            };
            let b: u32 = match dtype {
                DType::F32 => (v as f32).to_bits(),
                DType::F16 => half::f16::from_f64(v).to_bits() as u32,
                DType::BF16 => half::bf16::from_f64(v).to_bits() as u32,
                DType::I32 => (rng.below(2001) as i32 - 1000) as u32,
                DType::U32 => rng.below(3000) as u32,
                DType::U8 => rng.below(256) as u32,
                DType::I8 => rng.below(256) as u32,
            };
            b.to_le_bytes()[..dtype.size()].to_vec()
        })
        .collect();
    HostTensor::from_bytes(dtype, bytes, Layout::contiguous(&[n]).unwrap()).unwrap()
}

/// One view op of a random case, replayed on host and device tensors alike.
enum V {
    Slice(isize, isize, isize, isize),
    View(Vec<isize>),
    Flip(isize),
    Permute(Vec<isize>),
    Unsqueeze0,
    Expand(Vec<isize>),
}

fn apply<T: Strided>(mut t: T, ops: &[V]) -> T {
    for op in ops {
        t = match op {
            V::Slice(d, a, b, k) => t.slice(*d, *a, *b, *k),
            V::View(s) => t.view(s),
            V::Flip(d) => t.flip(*d),
            V::Permute(p) => t.permute(p),
            V::Unsqueeze0 => t.unsqueeze(0),
            V::Expand(s) => t.expand(s),
        }
        .unwrap();
    }
    t
}

/// A random view of rank 0-4 over fresh data (permuted, stepped, flipped, broadcast, at an
/// offset): the host tensor and the same view of the same data on `ctx`.
fn view(ctx: &GpuContext, rng: &mut Rng, dtype: DType, big: bool) -> (HostTensor, DeviceTensor) {
    let rank = rng.below(5);
    let mut shape: Vec<usize> = (0..rank).map(|_| match rng.below(10) { 0 => 0, 1 => 1, 2 if big => 70 + rng.below(200), _ => 1 + rng.below(7) }).collect();
    if shape.iter().product::<usize>() > 30_000 {
        shape.iter_mut().for_each(|n| *n = (*n).min(9));
    }
    // Base with room for steps: every dim up to twice as long.
    let base_shape: Vec<usize> = shape.iter().map(|&n| n * (1 + rng.below(2))).collect();
    let n: usize = base_shape.iter().product();
    let specials = rng.below(3) == 0;
    let base = data(rng, dtype, n + 3, specials);
    let mut ops = vec![V::Slice(0, 3, (n + 3) as isize, 1), V::View(base_shape.iter().map(|&x| x as isize).collect())];
    for d in 0..rank {
        let step = if base_shape[d] >= 2 * shape[d] && shape[d] > 0 { 2 } else { 1 };
        ops.push(V::Slice(d as isize, 0, (shape[d] * step) as isize, step as isize));
        if rng.below(4) == 0 {
            ops.push(V::Flip(d as isize));
        }
    }
    if rank >= 2 {
        let mut perm: Vec<isize> = (0..rank as isize).collect();
        for i in (1..rank).rev() {
            perm.swap(i, rng.below(i + 1));
        }
        ops.push(V::Permute(perm));
    }
    if rng.below(5) == 0 {
        // Broadcast: a new leading dim read with stride 0.
        let mut sizes: Vec<isize> = vec![1 + rng.below(4) as isize];
        sizes.extend(apply(base.clone(), &ops).shape().iter().map(|&n| n as isize));
        ops.push(V::Unsqueeze0);
        ops.push(V::Expand(sizes));
    }
    let d = DeviceTensor::upload(ctx, &base).unwrap();
    (apply(base, &ops), apply(d, &ops))
}

fn random_dims(rng: &mut Rng, rank: usize) -> Dims {
    match rng.below(3) {
        0 => Dims::All,
        1 if rank > 0 => Dims::from(rng.below(rank) as isize - if rng.below(2) == 0 { rank as isize } else { 0 }),
        _ => Dims::List((0..rank as isize).filter(|_| rng.below(2) == 0).collect()),
    }
}

const OPS: [ReduceOp; 15] = [
    ReduceOp::Sum,
    ReduceOp::Mean,
    ReduceOp::Prod,
    ReduceOp::Amax,
    ReduceOp::Amin,
    ReduceOp::Argmax,
    ReduceOp::Argmin,
    ReduceOp::Max,
    ReduceOp::Min,
    ReduceOp::Var { correction: 1.0 },
    ReduceOp::Std { correction: 0.0 },
    ReduceOp::Norm { p: 1.0 },
    ReduceOp::Norm { p: 2.0 },
    ReduceOp::Norm { p: f64::INFINITY },
    ReduceOp::Logsumexp,
];

/// The elements of a host tensor as f64, logical order.
fn values(t: &HostTensor) -> Vec<f64> {
    bits(t).into_iter().map(|b| value(t.dtype(), b)).collect()
}

/// Compares a device result with the host's: exact where the op picks or counts (integers,
/// indices, amax/amin/max/min), else within `tol[i]` (plus one unit of f16/bf16).
fn compare(what: &str, got: &HostTensor, want: &HostTensor, tol: &[f64]) -> Result<(), String> {
    if got.dtype() != want.dtype() || got.shape() != want.shape() {
        return Err(format!("{what}: {} {:?} != {} {:?}", got.dtype(), got.shape(), want.dtype(), want.shape()));
    }
    let (g, w) = (values(got), values(want));
    let ulp = match want.dtype() {
        DType::F16 => 2f64.powi(-10),
        DType::BF16 => 2f64.powi(-7),
        _ => 0.0,
    };
    for (i, (&g, &w)) in g.iter().zip(&w).enumerate() {
        let t = tol.get(i).copied().unwrap_or(0.0);
        let ok = if w.is_nan() || g.is_nan() || w.is_infinite() { (w.is_nan() && g.is_nan()) || g == w } else { (g - w).abs() <= t + ulp * w.abs() };
        if !ok {
            return Err(format!("{what}[{i}]: got {g}, want {w} (tol {t})"));
        }
    }
    Ok(())
}

/// `op` over `dims` of the device tensor `d` against the host's `x`: run twice, the same bits
/// both times, within the tolerances, and the indices exactly where the op gives them.
fn check_reduction(what: &str, x: &HostTensor, d: &DeviceTensor, op: ReduceOp, dims: &Dims) {
    let want = x.reduce(op, dims.clone(), false, None, None, None).unwrap();
    let a = d.reduce(op, dims.clone(), false, None, None, None).unwrap();
    let b = d.reduce(op, dims.clone(), false, None, None, None).unwrap();
    let (a0, b0) = (a.0.download().unwrap(), b.0.download().unwrap());
    assert_eq!(bits(&a0), bits(&b0), "{what}: two runs differ");
    let tol = tolerances(x, op, dims, false, &want.0);
    compare(what, &a0, &want.0, &tol).unwrap();
    match (want.1, a.1) {
        (Some(w), Some(g)) => compare(&format!("{what} indices"), &g.download().unwrap(), &w, &[]).unwrap(),
        (None, None) => {}
        (w, g) => panic!("{what}: indices from the host {}, from the device {}", w.is_some(), g.is_some()),
    }
}

/// Per-output tolerances of a reduction, from the sums of |x| and x^2 that each output reads
/// (f32 accumulation in any order meets 4e-6 of them; exp and log within 1e-5).
fn tolerances(x: &HostTensor, op: ReduceOp, dims: &Dims, keepdim: bool, out: &HostTensor) -> Vec<f64> {
    let exact = matches!(op, ReduceOp::Amax | ReduceOp::Amin | ReduceOp::Argmax | ReduceOp::Argmin | ReduceOp::Max | ReduceOp::Min) || !out.dtype().is_float();
    if exact || out.numel() == 0 {
        return vec![0.0; out.numel()];
    }
    let f = x.to(DType::F32).unwrap();
    let fin = |v: f64| if v.is_finite() { v } else { 0.0 };
    let s1 = values(&f.norm(1.0, dims.clone(), keepdim).unwrap());
    let s2 = values(&f.mul(&f).unwrap().norm(1.0, dims.clone(), keepdim).unwrap());
    let m = (x.numel() as f64 / out.numel() as f64).max(1.0);
    let want = values(out);
    (0..out.numel())
        .map(|i| {
            let (a, q, w) = (fin(s1[i]), fin(s2[i]), fin(want[i]).abs());
            1e-6 + match op {
                ReduceOp::Mean => 4e-6 * a / m,
                ReduceOp::Norm { p: 2.0 } => 4e-6 * q.sqrt(),
                ReduceOp::Var { correction } => 4e-6 * q / (m - correction).max(1.0),
                ReduceOp::Std { correction } => (4e-6 * q / (m - correction).max(1.0)).sqrt(),
                ReduceOp::Logsumexp => 1e-5 * (w + 1.0),
                ReduceOp::Prod => 1e-5 * w,
                _ => 4e-6 * a,
            }
        })
        .collect()
}

use strided_wgpu::Elementwise;

/// One random reduction on `ctx` against the host: the error, if any.
fn reduction_case(ctx: &GpuContext, rng: &mut Rng, big: bool) -> Result<bool, String> {
    let dtype = DType::ALL[rng.below(7)];
    let (x, d) = view(ctx, rng, dtype, big);
    let op = OPS[rng.below(OPS.len())];
    let dims = random_dims(rng, x.rank());
    let keepdim = rng.below(2) == 0;
    let dims = if matches!(op, ReduceOp::Max | ReduceOp::Min | ReduceOp::Argmax | ReduceOp::Argmin | ReduceOp::Prod) {
        match dims {
            Dims::List(l) if l.len() == 1 => Dims::List(l),
            _ if matches!(op, ReduceOp::Max | ReduceOp::Min) => Dims::from(0),
            _ => Dims::All,
        }
    } else {
        dims
    };
    let desc = format!("{op:?} dims {dims:?} keepdim {keepdim} of {dtype} {:?} strides {:?}", x.shape(), x.strides());
    let host = x.reduce(op, dims.clone(), keepdim, None, None, None);
    let dev = d.reduce(op, dims.clone(), keepdim, None, None, None);
    match (host, dev) {
        // The same kind of error (an integer mean: Error::DType on both).
        (Err(h), Err(e)) if std::mem::discriminant(&h) == std::mem::discriminant(&e) => Ok(false),
        (Err(h), Err(e)) => Err(format!("{desc}: host error {h}, device error {e}")),
        (Ok(_), Err(e)) => Err(format!("{desc}: device error {e}")),
        (Err(e), Ok(_)) => Err(format!("{desc}: host error {e}, device ok")),
        (Ok((hv, hi)), Ok((dv, di))) => {
            let tol = tolerances(&x, op, &dims, keepdim, &hv);
            compare(&desc, &dv.download().unwrap(), &hv, &tol)?;
            match (hi, di) {
                (Some(hi), Some(di)) => compare(&format!("{desc} indices"), &di.download().unwrap(), &hi, &[]).map(|()| true),
                (None, None) => Ok(true),
                (h, d) => Err(format!("{desc}: indices from the host {}, from the device {}", h.is_some(), d.is_some())),
            }
        }
    }
}

/// One random scan on `ctx` against the host.
fn scan_case(ctx: &GpuContext, rng: &mut Rng) -> Result<bool, String> {
    let dtype = DType::ALL[rng.below(7)];
    let (x, d) = view(ctx, rng, dtype, false);
    let op = [ScanOp::Softmax, ScanOp::LogSoftmax, ScanOp::Cumsum][rng.below(3)];
    let dim = if x.rank() == 0 { 0 } else { rng.below(x.rank()) as isize };
    let desc = format!("{op:?} dim {dim} of {dtype} {:?} strides {:?}", x.shape(), x.strides());
    match (x.scan(op, dim, None), d.scan(op, dim, None)) {
        (Err(h), Err(e)) if std::mem::discriminant(&h) == std::mem::discriminant(&e) => Ok(false),
        (Err(h), Err(e)) => Err(format!("{desc}: host error {h}, device error {e}")),
        (Ok(_), Err(e)) => Err(format!("{desc}: device error {e}")),
        (Err(e), Ok(_)) => Err(format!("{desc}: host error {e}, device ok")),
        (Ok(h), Ok(g)) => {
            if g.strides() != h.strides() {
                return Err(format!("{desc}: strides {:?} != {:?}", g.strides(), h.strides()));
            }
            let scale = if op == ScanOp::Cumsum && dtype.is_float() { values(&x.to(DType::F32).unwrap().norm(1.0, Dims::All, false).unwrap())[0] } else { 0.0 };
            // Integer results (cumsum of integers) exactly.
            let tol: Vec<f64> = match h.dtype().is_float() {
                true => values(&h).iter().map(|w| 4e-6 * if scale.is_finite() { scale } else { 0.0 } + 1e-5 * (if w.is_finite() { w.abs() } else { 0.0 } + 1.0)).collect(),
                false => vec![0.0; h.numel()],
            };
            compare(&desc, &g.download().unwrap(), &h, &tol).map(|()| true)
        }
    }
}

#[test]
fn random_reductions_and_scans_match_the_host() {
    let cases: usize = std::env::var("REDUCE_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(300);
    for ctx in contexts() {
        let mut rng = Rng(0x5eed_0033);
        let mut fails = Vec::new();
        let (mut compared, mut scans) = (0, 0);
        for i in 0..cases {
            match reduction_case(ctx, &mut rng, i % 4 == 0) {
                Ok(c) => compared += c as usize,
                Err(e) => fails.push(e),
            }
            if i % 3 == 0 {
                match scan_case(ctx, &mut rng) {
                    Ok(c) => scans += c as usize,
                    Err(e) => fails.push(e),
                }
            }
        }
        assert!(fails.is_empty(), "{}: {} failures:\n{}", name(ctx), fails.len(), fails.join("\n"));
        // Most cases compute (a case both sides refuse alike, an integer mean, compares nothing).
        assert!(compared * 2 >= cases && scans * 2 >= cases.div_ceil(3), "{}: {compared} of {cases} reductions and {scans} of {} scans compared values", name(ctx), cases.div_ceil(3));
    }
}

fn f32s(t: &HostTensor) -> Vec<f32> {
    t.to_vec::<f32>().unwrap()
}

#[test]
fn every_class_on_edge_extents_and_determinism() {
    for ctx in contexts() {
        let mut rng = Rng(7);
        // (shape, format, dims, class): extents around the workgroup size, one element.
        let cases: &[(&[usize], MemoryFormat, &[isize], ReduceClass)] = &[
            (&[3, 65], MemoryFormat::Contiguous, &[1], ReduceClass::Rows),
            (&[2, 1], MemoryFormat::Contiguous, &[1], ReduceClass::Identity),
            (&[1, 1], MemoryFormat::Contiguous, &[0, 1], ReduceClass::Identity),
            (&[130, 63], MemoryFormat::Contiguous, &[0], ReduceClass::Columns),
            (&[2, 5, 3, 3], MemoryFormat::ChannelsLast, &[2, 3], ReduceClass::Columns),
            (&[3, 5, 7, 2], MemoryFormat::Contiguous, &[0, 2, 3], ReduceClass::Rows),
            (&[4097], MemoryFormat::Contiguous, &[0], ReduceClass::Rows),
        ];
        for &(shape, format, dims, class) in cases {
            let n: usize = shape.iter().product();
            let x = data(&mut rng, DType::F32, n, true).view(&shape.iter().map(|&s| s as isize).collect::<Vec<_>>()).unwrap().contiguous(format).unwrap();
            let s = reduce_spec(ReduceOp::Sum, x.layout(), DType::F32, &Dims::List(dims.to_vec()), false, None).unwrap();
            let plan = ReducePlan::reduction(&s, x.layout(), &Layout::contiguous(&s.out_shape).unwrap()).unwrap();
            let class_ok = plan.class() == class || (class == ReduceClass::Identity && plan.extent == 1);
            assert!(class_ok, "{shape:?} {format:?} {dims:?}: {:?}", plan.class());
            let d = DeviceTensor::upload(ctx, &x).unwrap();
            for op in OPS {
                let host = x.reduce(op, Dims::List(dims.to_vec()), false, None, None, None).unwrap();
                let a = d.reduce(op, Dims::List(dims.to_vec()), false, None, None, None).unwrap();
                let b = d.reduce(op, Dims::List(dims.to_vec()), false, None, None, None).unwrap();
                let (a0, b0) = (a.0.download().unwrap(), b.0.download().unwrap());
                assert_eq!(bits(&a0), bits(&b0), "{op:?} {shape:?}: two runs differ");
                let tol = tolerances(&x, op, &Dims::List(dims.to_vec()), false, &host.0);
                compare(&format!("{} {op:?} {shape:?} {dims:?}", name(ctx)), &a0, &host.0, &tol).unwrap();
            }
        }
    }
}

/// A few long rows on GPUs (`ReduceKernel::RowSplits`: several workgroups per output, their
/// states combined in a second dispatch, two more for two-pass ops and scans): every op and
/// both scans against the host, with ties, an infinity in one row and a NaN in another, one
/// output, several runs a row and unaligned heads; the same bits twice. Each adapter runs
/// them with its own kernels (asserting the CPU adapters' split cases), and posing as a GPU
/// with the split rows. The last case, one output of 2,200,001 elements in one run (split on
/// CPU adapters too), runs four ops (a sum, a two-pass op, an index, a maximum), no scans and
/// no infinity or NaN.
#[test]
fn few_long_rows_split_across_workgroups() {
    use strided_wgpu::advanced::internal::{reduce_kernel, ReduceKernel, ReduceWork};
    let posing: Vec<GpuContext> = contexts().iter().filter_map(posing_as_gpu).collect();
    assert_eq!(posing.len(), contexts().len(), "a device of each adapter's own");
    // (shape, reduced dims, element offset): 2, 16, 32, 16, 16 and 32 workgroups an output;
    // the fourth with 8 runs an output (each workgroup a share of every run), the fifth 20
    // (whole runs), the sixth 8 runs of more than 65,536 elements in all, the last one output
    // of 2,200,001 elements in one run (1024 workgroups; both split on CPU adapters too).
    let cases: &[(&[usize], &[isize], usize)] = &[(&[3, 5001], &[1], 1), (&[2, 40000], &[1], 3), (&[70001], &[0], 2), (&[8, 2, 64, 66], &[0, 2, 3], 1), (&[20, 2, 32, 64], &[0, 2, 3], 1), (&[8, 3, 96, 96], &[0, 2, 3], 1), (&[2_200_001], &[0], 3)];
    for ctx in contexts().iter().chain(&posing) {
        let gpu = ctx.adapter().device_type != wgpu::DeviceType::Cpu;
        let mut rng = Rng(0x5b1);
        for &(shape, dims, offset) in cases {
            let n: usize = shape.iter().product();
            // Multiples of 1/4 in [-1, 1]: ties everywhere, products that neither overflow nor
            // depend on the order; an infinity in the last output's rows, a NaN in the first's
            // where there are three or more.
            let mut v: Vec<f32> = (0..n + offset).map(|_| (rng.below(9) as f32 - 4.0) / 4.0).collect();
            if shape.len() == 2 {
                v[offset + n - 7] = f32::INFINITY;
                if shape[0] >= 3 {
                    v[offset + 11] = f32::NAN;
                }
            }
            let raw = HostTensor::from_vec(v, &[n + offset]).unwrap();
            let sizes: Vec<isize> = shape.iter().map(|&s| s as isize).collect();
            let x = raw.slice(0, offset as isize, (n + offset) as isize, 1).unwrap().view(&sizes).unwrap();
            let dev = DeviceTensor::upload(ctx, &raw).unwrap();
            let d = dev.slice(0, offset as isize, (n + offset) as isize, 1).unwrap().view(&sizes).unwrap();
            let desc = |what: String| format!("{} {what} of {shape:?} dims {dims:?} offset {offset}", name(ctx));
            // The output of 2,200,001: one op of each kind (a sum, a two-pass op, an index, a
            // maximum), no scans: the host's reference of every op took CI 20 s more.
            let ops: &[ReduceOp] = if n > 1 << 20 { &[ReduceOp::Sum, ReduceOp::Var { correction: 1.0 }, ReduceOp::Argmax, ReduceOp::Amax] } else { &OPS };
            for &op in ops {
                let dims = if matches!(op, ReduceOp::Argmax | ReduceOp::Argmin | ReduceOp::Max | ReduceOp::Min | ReduceOp::Prod) && dims.len() > 1 { &dims[..1] } else { dims };
                let s = reduce_spec(op, x.layout(), DType::F32, &Dims::List(dims.to_vec()), false, None).unwrap();
                let plan = ReducePlan::reduction(&s, x.layout(), &Layout::contiguous(&s.out_shape).unwrap()).unwrap();
                let kernel = reduce_kernel(&plan, ReduceWork::Reduce(op), DType::F32, ctx.adapter().device_type);
                let what = desc(format!("{op:?} ({kernel:?})"));
                // CPU adapters split fewer than 16 outputs of more than 65,536 elements in
                // several runs each (the [8, 3, 96, 96] case).
                // And a single output of one run of at least 2^21 elements.
                let cpu_split = plan.outputs < 16 && plan.extent > 1 << 16 && (plan.extent > plan.plan.sizes()[0] || (plan.outputs == 1 && plan.extent >= 1 << 21));
                if plan.class() == ReduceClass::Rows && (gpu || cpu_split) {
                    assert_eq!(kernel, ReduceKernel::RowSplits, "{what}");
                }
                check_reduction(&what, &x, &d, op, &Dims::List(dims.to_vec()));
            }
            if shape.len() > 2 || n > 1 << 20 {
                continue;
            }
            let dim = shape.len() as isize - 1;
            for op in [ScanOp::Softmax, ScanOp::LogSoftmax] {
                let s = strided_wgpu::advanced::internal::scan_spec(op, x.layout(), DType::F32, dim).unwrap();
                let plan = ReducePlan::scan(&s, x.layout(), &s.out_layout).unwrap();
                let kernel = reduce_kernel(&plan, ReduceWork::Scan(op), DType::F32, ctx.adapter().device_type);
                let what = desc(format!("{op:?} ({kernel:?})"));
                if gpu {
                    assert_eq!(kernel, ReduceKernel::RowSplits, "{what}");
                }
                let want = x.scan(op, dim, None).unwrap();
                let a = d.scan(op, dim, None).unwrap().download().unwrap();
                assert_eq!(bits(&a), bits(&d.scan(op, dim, None).unwrap().download().unwrap()), "{what}: two runs differ");
                let tol: Vec<f64> = values(&want).iter().map(|w| 1e-5 * (if w.is_finite() { w.abs() } else { 0.0 } + 1.0)).collect();
                compare(&what, &a, &want, &tol).unwrap();
            }
        }
    }
}

/// A few long columns on GPUs (`ReduceKernel::ColumnSplits` with blocks: several workgroups
/// per four outputs along the reduction, their states combined in a second dispatch, two more
/// for two-pass ops): every op against the host, with ties, an infinity and a NaN in some
/// columns; a channels-last per-channel statistic, a column count that is not a whole number
/// of quads (and an unaligned view), two kept dims, and columns longer than one workgroup's
/// walkers may walk (more than 16,384 steps: the general kernel's before); the same bits twice. Each adapter runs them posing as a GPU
/// (CPU adapters keep their kernels: also run, as a reference of their own).
#[test]
fn few_long_columns_split_across_workgroups() {
    use strided_wgpu::advanced::internal::{column_blocks, column_splits, reduce_kernel, ReduceKernel, ReduceWork};
    let posing: Vec<GpuContext> = contexts().iter().filter_map(posing_as_gpu).collect();
    assert_eq!(posing.len(), contexts().len(), "a device of each adapter's own");
    // (shape, format, reduced dims, element offset).
    let cases: &[(&[usize], MemoryFormat, &[isize], usize)] = &[
        (&[4096, 8], MemoryFormat::Contiguous, &[0], 0),
        (&[5000, 3], MemoryFormat::Contiguous, &[0], 1),
        (&[3, 3000, 8], MemoryFormat::Contiguous, &[1], 0),
        (&[4, 12, 40, 40], MemoryFormat::ChannelsLast, &[0, 2, 3], 0),
        (&[70_000, 4], MemoryFormat::Contiguous, &[0], 0),
    ];
    for ctx in contexts().iter().chain(&posing) {
        let gpu = ctx.adapter().device_type != wgpu::DeviceType::Cpu;
        let mut rng = Rng(0xc01);
        for &(shape, format, dims, offset) in cases {
            let n: usize = shape.iter().product();
            // Multiples of 1/4 in [-1, 1]: ties everywhere; an infinity in the last column, a
            // NaN in the first.
            let mut v: Vec<f32> = (0..n + offset).map(|_| (rng.below(9) as f32 - 4.0) / 4.0).collect();
            let inner = *shape.last().unwrap();
            v[offset + n - 1 - inner] = f32::INFINITY;
            v[offset + 5 * inner] = f32::NAN;
            let raw = HostTensor::from_vec(v, &[n + offset]).unwrap();
            let view = |t: &HostTensor| -> HostTensor {
                let t = t.slice(0, offset as isize, (n + offset) as isize, 1).unwrap();
                match format {
                    MemoryFormat::ChannelsLast => t.view(&[shape[0] as isize, shape[2] as isize, shape[3] as isize, shape[1] as isize]).unwrap().permute(&[0, 3, 1, 2]).unwrap(),
                    _ => t.view(&shape.iter().map(|&s| s as isize).collect::<Vec<_>>()).unwrap(),
                }
            };
            let x = view(&raw);
            let dev = DeviceTensor::upload(ctx, &raw).unwrap();
            let d = {
                let t = dev.slice(0, offset as isize, (n + offset) as isize, 1).unwrap();
                match format {
                    MemoryFormat::ChannelsLast => t.view(&[shape[0] as isize, shape[2] as isize, shape[3] as isize, shape[1] as isize]).unwrap().permute(&[0, 3, 1, 2]).unwrap(),
                    _ => t.view(&shape.iter().map(|&s| s as isize).collect::<Vec<_>>()).unwrap(),
                }
            };
            let desc = |what: String| format!("{} {what} of {shape:?} {format:?} dims {dims:?} offset {offset}", name(ctx));
            for op in OPS {
                let dims = if matches!(op, ReduceOp::Argmax | ReduceOp::Argmin | ReduceOp::Max | ReduceOp::Min | ReduceOp::Prod) && dims.len() > 1 { &dims[..1] } else { dims };
                let s = reduce_spec(op, x.layout(), DType::F32, &Dims::List(dims.to_vec()), false, None).unwrap();
                let plan = ReducePlan::reduction(&s, x.layout(), &Layout::contiguous(&s.out_shape).unwrap()).unwrap();
                let kernel = reduce_kernel(&plan, ReduceWork::Reduce(op), DType::F32, ctx.adapter().device_type);
                let what = desc(format!("{op:?} ({kernel:?})"));
                if gpu && plan.class() == ReduceClass::Columns {
                    assert_eq!(kernel, ReduceKernel::ColumnSplits, "{what}");
                    let quads = (plan.outputs as u64).div_ceil(4);
                    let parts = column_splits(quads, plan.extent as u64);
                    assert!(column_blocks(quads, parts, plan.extent as u64, true) > 1, "{what}: one block");
                }
                check_reduction(&what, &x, &d, op, &Dims::List(dims.to_vec()));
            }
        }
    }
}

/// Reductions and scans longer than one invocation walks (`CHUNK`, and lavapipe's cap on a
/// loop's iterations, about 32,000): parts, then their states combined in order.
#[test]
fn long_reductions_and_scans_run_in_parts() {
    for ctx in contexts() {
        let mut rng = Rng(99);
        let x = data(&mut rng, DType::F32, 3 * 40_001, true).view(&[3, 40_001]).unwrap();
        let h = x.transpose(0, 1).unwrap();
        let (dx, dh) = {
            let d = DeviceTensor::upload(ctx, &x).unwrap();
            let t = d.transpose(0, 1).unwrap();
            (d, t)
        };
        for (what, host, dev, dims) in [("rows", &x, &dx, Dims::from(1)), ("columns", &h, &dh, Dims::from(0)), ("all", &x, &dx, Dims::All)] {
            for op in OPS {
                let dims = if matches!(op, ReduceOp::Argmax | ReduceOp::Argmin | ReduceOp::Prod) && dims == Dims::All { Dims::All } else { dims.clone() };
                let dims = if matches!(op, ReduceOp::Max | ReduceOp::Min) && dims == Dims::All { Dims::from(1) } else { dims };
                let want = host.reduce(op, dims.clone(), false, None, None, None).unwrap();
                let got = dev.reduce(op, dims.clone(), false, None, None, None).unwrap();
                let tol = tolerances(host, op, &dims, false, &want.0);
                compare(&format!("{} {what} {op:?}", name(ctx)), &got.0.download().unwrap(), &want.0, &tol).unwrap();
                if let (Some(w), Some(g)) = (want.1, got.1) {
                    compare(&format!("{} {what} {op:?} indices", name(ctx)), &g.download().unwrap(), &w, &[]).unwrap();
                }
            }
        }
        // Rows without specials for the scans (a NaN makes a softmax row NaN), one flipped.
        let x = data(&mut rng, DType::F32, 2 * 40_001, false).view(&[2, 40_001]).unwrap();
        let d = DeviceTensor::upload(ctx, &x).unwrap();
        for (xf, df) in [(x.clone(), d.clone()), (x.flip(1).unwrap(), d.flip(1).unwrap())] {
            for op in [ScanOp::Softmax, ScanOp::LogSoftmax, ScanOp::Cumsum] {
                let want = xf.scan(op, 1, None).unwrap();
                let scale = values(&xf.norm(1.0, Dims::All, false).unwrap())[0];
                let tol: Vec<f64> = values(&want).iter().map(|w| 1e-5 * (w.abs() + 1.0) + if op == ScanOp::Cumsum { 4e-6 * scale } else { 0.0 }).collect();
                compare(&format!("{} {op:?} {:?}", name(ctx), xf.strides()), &df.scan(op, 1, None).unwrap().download().unwrap(), &want, &tol).unwrap();
            }
        }
        let i = HostTensor::from_vec((0..50_000).map(|v| v % 7 - 3).collect::<Vec<i32>>(), &[50_000]).unwrap();
        let di = DeviceTensor::upload(ctx, &i).unwrap();
        assert_eq!(di.cumsum(0).unwrap().download().unwrap().to_vec::<i32>().unwrap(), i.cumsum(0).unwrap().to_vec::<i32>().unwrap());
        assert_eq!(di.sum(0, false).unwrap().download().unwrap().to_vec::<i32>().unwrap(), i.sum(0, false).unwrap().to_vec::<i32>().unwrap());
    }
}

/// Split columns in pieces: on a device posing as a GPU whose storage bindings hold 1 MiB, the
/// columns of [3, 20000, 8] over dim 1 (640,000 bytes a piece, 1,920,000 in all) run as three
/// pieces, each its blocks and their combination over the one states buffer; against the host,
/// the same bits as on a device with whole bindings.
#[test]
fn split_columns_in_pieces() {
    use strided_wgpu::advanced::internal::{reduce_kernel, ReduceKernel, ReduceWork};
    let mut rng = Rng(0x91ec);
    let v: Vec<f32> = (0..3 * 20_000 * 8).map(|_| (rng.below(2001) as f32 - 1000.0) / 1000.0).collect();
    let x = HostTensor::from_vec(v, &[3, 20_000, 8]).unwrap();
    for ctx in contexts() {
        let small = limited_as(ctx, |l| wgpu::Limits { max_storage_buffer_binding_size: 1 << 20, ..l }, Some(wgpu::DeviceType::DiscreteGpu));
        let whole = posing_as_gpu(ctx).expect("a device of the adapter's own");
        for op in [ReduceOp::Sum, ReduceOp::Var { correction: 1.0 }, ReduceOp::Argmax, ReduceOp::Max, ReduceOp::Logsumexp] {
            let s = reduce_spec(op, x.layout(), DType::F32, &Dims::from(1), false, None).unwrap();
            let plan = ReducePlan::reduction(&s, x.layout(), &Layout::contiguous(&s.out_shape).unwrap()).unwrap();
            assert_eq!(reduce_kernel(&plan, ReduceWork::Reduce(op), DType::F32, wgpu::DeviceType::DiscreteGpu), ReduceKernel::ColumnSplits);
            let want = x.reduce(op, Dims::from(1), false, None, None, None).unwrap();
            let tol = tolerances(&x, op, &Dims::from(1), false, &want.0);
            let mut got = Vec::new();
            for c in [&small, &whole] {
                let r = DeviceTensor::upload(c, &x).unwrap().reduce(op, Dims::from(1), false, None, None, None).unwrap();
                let what = format!("{} {op:?}", name(c));
                let values = r.0.download().unwrap();
                compare(&what, &values, &want.0, &tol).unwrap();
                if let (Some(w), Some(g)) = (&want.1, r.1) {
                    compare(&format!("{what} indices"), &g.download().unwrap(), w, &[]).unwrap();
                }
                got.push(bits(&values));
            }
            assert_eq!(got[0], got[1], "{} {op:?}: pieces and whole bindings differ", name(ctx));
        }
    }
}

/// Infinities and NaN in the first or the last part of a long reduction, where the kernels sum in parts
/// and combine the parts' states (the general kernel's chunks on CPU adapters, the split rows
/// and columns on GPUs): each output holds its own pattern (an infinity in the first or the last
/// part, both signs, a NaN in the first or the last part, none), as columns of [40000, 8] and
/// as rows of [8, 70000]; every reduction, and softmax, log_softmax and cumsum along the rows.
/// Each adapter runs them with its own kernels and posing as a GPU.
#[test]
fn specials_in_any_part_of_a_long_reduction() {
    let posing: Vec<GpuContext> = contexts().iter().filter_map(posing_as_gpu).collect();
    assert_eq!(posing.len(), contexts().len(), "a device of each adapter's own");
    let (inf, nan) = (f32::INFINITY, f32::NAN);
    // (output, position as a fraction of the reduction, value).
    let patterns: &[(usize, f64, f32)] = &[(0, 0.999, inf), (1, 0.999, -inf), (2, 0.001, inf), (2, 0.999, -inf), (3, 0.998, nan), (4, 0.001, inf), (5, 0.001, nan), (5, 0.999, -inf), (7, 0.002, -inf)];
    for (outputs, extent, columns) in [(8usize, 40_000usize, true), (8, 70_000, false)] {
        let mut rng = Rng(0x5e7);
        let mut v: Vec<f32> = (0..outputs * extent).map(|_| (rng.below(2001) as f32 - 1000.0) / 1000.0).collect();
        for &(o, at, x) in patterns {
            let r = (at * extent as f64) as usize;
            v[if columns { r * outputs + o } else { o * extent + r }] = x;
        }
        let shape = if columns { [extent as isize, outputs as isize] } else { [outputs as isize, extent as isize] };
        let dim: isize = if columns { 0 } else { 1 };
        let x = HostTensor::from_vec(v, &[outputs * extent]).unwrap().view(&shape).unwrap();
        for ctx in contexts().iter().chain(&posing) {
            let d = DeviceTensor::upload(ctx, &x).unwrap();
            for op in OPS {
                check_reduction(&format!("{} {op:?} over dim {dim} of {shape:?}", name(ctx)), &x, &d, op, &Dims::from(dim));
            }
            if columns {
                continue;
            }
            for op in [ScanOp::Softmax, ScanOp::LogSoftmax, ScanOp::Cumsum] {
                let want = x.scan(op, 1, None).unwrap();
                let scale = extent as f64;
                let tol: Vec<f64> = values(&want).iter().map(|w| 1e-5 * (if w.is_finite() { w.abs() } else { 0.0 } + 1.0) + if op == ScanOp::Cumsum { 4e-6 * scale } else { 0.0 }).collect();
                compare(&format!("{} {op:?} of {shape:?}", name(ctx)), &d.scan(op, 1, None).unwrap().download().unwrap(), &want, &tol).unwrap();
            }
        }
    }
}

/// softmax and log_softmax rows through the one-pass state (running maximum, rescaled sum):
/// rows that start with -inf before finite values, that hold only -inf, +inf, a NaN, a maximum
/// rising from -1e30 to 1e30 across words, ties; as many rows as the per-invocation kernel
/// takes on CPU adapters and as few as the workgroup kernel's. NaN matches NaN.
#[test]
fn softmax_rows_with_infinities_and_nan() {
    use strided_wgpu::advanced::internal::{reduce_kernel, ReduceWork};
    let (ninf, inf, nan) = (f32::NEG_INFINITY, f32::INFINITY, f32::NAN);
    let patterns: [[f32; 11]; 7] = [
        [ninf, ninf, ninf, ninf, ninf, 1.0, -2.0, 3.0, ninf, 0.5, 2.0],
        [ninf; 11],
        [1.0, 2.0, inf, 0.0, -1.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0],
        [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, nan, 8.0, 9.0, 10.0, 11.0],
        [-1e30, -1e30, -1e29, -1e30, 0.0, 1.0, 1e30, -1e30, 2.0, 1e30, -0.0],
        [2.0; 11],
        [-3.0, 5.0, -7.0, 0.25, 9.0, -9.0, 8.5, 1.0, 0.0, -0.0, 4.0],
    ];
    for ctx in contexts() {
        for rows in [7usize, 70] {
            let v: Vec<f32> = (0..rows).flat_map(|r| patterns[r % patterns.len()]).collect();
            let x = HostTensor::from_vec(v, &[rows, 11]).unwrap();
            let d = DeviceTensor::upload(ctx, &x).unwrap();
            for op in [ScanOp::Softmax, ScanOp::LogSoftmax] {
                let s = strided_wgpu::advanced::internal::scan_spec(op, x.layout(), DType::F32, 1).unwrap();
                let plan = ReducePlan::scan(&s, x.layout(), &s.out_layout).unwrap();
                let kernel = reduce_kernel(&plan, ReduceWork::Scan(op), DType::F32, ctx.adapter().device_type);
                let want = x.scan(op, 1, None).unwrap();
                let tol: Vec<f64> = values(&want).iter().map(|w| 1e-5 * (if w.is_finite() { w.abs() } else { 0.0 } + 1.0)).collect();
                compare(&format!("{} {op:?} of {rows} rows ({kernel:?})", name(ctx)), &d.scan(op, 1, None).unwrap().download().unwrap(), &want, &tol).unwrap();
            }
        }
        // Long rows, each an invocation's on CPU adapters (over 1,000 elements a lane of the
        // rescaled sum), against a bound relative to each probability.
        let mut rng = Rng(0x50f7);
        let x = data(&mut rng, DType::F32, 64 * 5000, false).view(&[64, 5000]).unwrap();
        let d = DeviceTensor::upload(ctx, &x).unwrap();
        for op in [ScanOp::Softmax, ScanOp::LogSoftmax] {
            let want = x.scan(op, 1, None).unwrap();
            let tol: Vec<f64> = values(&want).iter().map(|w| 1e-5 * w.abs() + 1e-7 * (op == ScanOp::LogSoftmax) as u8 as f64).collect();
            compare(&format!("{} {op:?} of 64 rows of 5000", name(ctx)), &d.scan(op, 1, None).unwrap().download().unwrap(), &want, &tol).unwrap();
        }
    }
}

#[test]
fn grids_bindings_and_bad_input() {
    for ctx in contexts() {
        let mut rng = Rng(11);
        // 16 workgroups per dimension: 3000 outputs need a 2-D grid of 64-invocation groups.
        let small = limited(ctx, |l| wgpu::Limits { max_compute_workgroups_per_dimension: 16, ..l });
        let x = data(&mut rng, DType::F32, 3000 * 3, false).view(&[3000, 3]).unwrap();
        let d = DeviceTensor::upload(&small, &x).unwrap();
        assert_eq!(f32s(&d.amax(1, false).unwrap().download().unwrap()), f32s(&x.amax(1, false).unwrap()));
        let sm = d.softmax(1).unwrap().download().unwrap();
        compare("softmax 2-d grid", &sm, &x.softmax(1).unwrap(), &vec![1e-6; 9000]).unwrap();

        // 4 KiB bindings: row sums over 3000 x 8 f32 (96 KiB) run in pieces of kept dims, and
        // so does a softmax; a column sum, whose every output reads more than a binding, is a
        // typed Limit error.
        let tight = limited(ctx, |l| wgpu::Limits { max_storage_buffer_binding_size: 4 << 10, ..l });
        let x = data(&mut rng, DType::F32, 8 * 3000, false).view(&[3000, 8]).unwrap();
        let d = DeviceTensor::upload(&tight, &x).unwrap();
        let want = x.sum(1, false).unwrap();
        let tol = tolerances(&x, ReduceOp::Sum, &Dims::from(1), false, &want);
        compare("pieces", &d.sum(1, false).unwrap().download().unwrap(), &want, &tol).unwrap();
        compare("softmax pieces", &d.softmax(-1).unwrap().download().unwrap(), &x.softmax(-1).unwrap(), &[1e-6; 24000]).unwrap();
        assert!(matches!(d.sum(0, false), Err(Error::Limit { .. })), "{:?}", d.sum(0, false).map(|t| t.shape().to_vec()));
        // max over rows of uint8: the int32 indices take 4 bytes an output where the values
        // take 1 and the input 2, so the indices' window sizes the pieces (as itself, and
        // posing as a GPU for the GPUs' kernels).
        let bytes: Vec<u8> = (0..3000 * 2).map(|_| rng.below(256) as u8).collect();
        let x = HostTensor::from_bytes(DType::U8, bytes, Layout::contiguous(&[3000, 2]).unwrap()).unwrap();
        let (hv, hi) = x.max_dim(1, false).unwrap();
        for device_type in [None, Some(wgpu::DeviceType::DiscreteGpu)] {
            let tight = limited_as(ctx, |l| wgpu::Limits { max_storage_buffer_binding_size: 4 << 10, ..l }, device_type);
            let (v, i) = DeviceTensor::upload(&tight, &x).unwrap().max_dim(1, false).unwrap();
            assert_eq!(bits(&v.download().unwrap()), bits(&hv), "uint8 max values in pieces, {device_type:?}");
            assert_eq!(i.download().unwrap().to_vec::<i32>().unwrap(), hi.to_vec::<i32>().unwrap(), "uint8 max indices in pieces, {device_type:?}");
        }

        // Bad input: typed errors, the destination untouched.
        let x = DeviceTensor::from_slice(ctx, &[1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
        let out = DeviceTensor::from_slice(ctx, &[9.0f32; 3], &[3]).unwrap();
        assert!(x.sum_out(0, false, &out).is_err());
        assert!(matches!(x.amax([1, -1], false), Err(Error::InvalidArgument { .. })));
        assert!(matches!(x.sum(2, false), Err(Error::DimOutOfRange { .. })));
        assert!(matches!(x.softmax_out(0, &x), Err(Error::Overlap { .. })));
        assert_eq!(out.download().unwrap().to_vec::<f32>().unwrap(), vec![9.0; 3]);
        // out= forms write through any strides; max/min into values and indices.
        let o = DeviceTensor::from_slice(ctx, &[0.0f32; 4], &[2, 2]).unwrap().transpose(0, 1).unwrap();
        x.log_softmax_out(1, &o).unwrap();
        let want = HostTensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap().log_softmax(1).unwrap();
        compare("log_softmax_out", &o.download().unwrap(), &want, &[1e-6; 4]).unwrap();
        let (v, i) = (DeviceTensor::from_slice(ctx, &[0.0f32; 2], &[2]).unwrap(), DeviceTensor::from_slice(ctx, &[0i32; 2], &[2]).unwrap());
        x.min_dim_out(0, false, &v, &i).unwrap();
        assert_eq!((f32s(&v.download().unwrap()), i.download().unwrap().to_vec::<i32>().unwrap()), (vec![1.0, 2.0], vec![0, 0]));
        let s = DeviceTensor::from_slice(ctx, &[0.0f32; 1], &[1]).unwrap().squeeze(0).unwrap();
        x.mean_out(Dims::All, false, &s).unwrap();
        assert_eq!(f32s(&s.download().unwrap()), vec![2.5]);
    }
}

/// The rows kernel (a workgroup per output, and an invocation per output), and the columns
/// kernel on their edges against the host: every op, softmax and log_softmax; row lengths
/// around the vector width and the workgroup (1, 3, 4, 5, 63-65, 257, 1000), rows starting
/// off a 16-byte word, scans whose output words line up with the input's (stored as words) or
/// not, rows made of several runs, columns of 1-9 outputs at offsets, columns of thousands of
/// outputs in whole words (four quads per invocation on CPU adapters) or not, NaN,
/// infinities, signed zeros and ties (few distinct values); each call's kernel is asserted.
/// Each adapter runs them twice: as itself and posing as a GPU (the GPUs' split columns).
#[test]
fn rows_and_columns_kernels_on_their_edges() {
    use strided_wgpu::advanced::internal::{reduce_kernel, ReduceKernel, ReduceWork};
    const SCANS: [ScanOp; 2] = [ScanOp::Softmax, ScanOp::LogSoftmax];
    let posing: Vec<GpuContext> = contexts().iter().filter_map(posing_as_gpu).collect();
    assert_eq!(posing.len(), contexts().len(), "a device of each adapter's own");
    for ctx in contexts().iter().chain(&posing) {
        let cpu = ctx.adapter().device_type;
        let mut rng = Rng(0x33);
        // (shape, format, dims, element offset, few distinct values)
        type Case<'a> = (&'a [usize], MemoryFormat, &'a [isize], usize, bool);
        let cases: &[Case] = &[
            (&[3, 1], MemoryFormat::Contiguous, &[0], 0, false),
            (&[70, 1], MemoryFormat::Contiguous, &[0], 1, false),
            (&[3, 5], MemoryFormat::Contiguous, &[1], 1, false),
            (&[70, 3], MemoryFormat::Contiguous, &[1], 2, true),
            (&[70, 4], MemoryFormat::Contiguous, &[1], 0, false),
            (&[3, 63], MemoryFormat::Contiguous, &[1], 3, true),
            (&[5, 65], MemoryFormat::Contiguous, &[1], 1, false),
            (&[66, 65], MemoryFormat::Contiguous, &[1], 2, false),
            (&[66, 65], MemoryFormat::Contiguous, &[1], 0, false),
            (&[70, 5], MemoryFormat::Contiguous, &[1], 4, false),
            (&[2, 257], MemoryFormat::Contiguous, &[1], 4, true),
            (&[2, 257], MemoryFormat::Contiguous, &[1], 0, true),
            (&[4, 1000], MemoryFormat::Contiguous, &[1], 3, false),
            (&[80, 257], MemoryFormat::Contiguous, &[1], 1, true),
            (&[3, 5, 2, 7], MemoryFormat::Contiguous, &[0, 2, 3], 1, false),
            (&[4, 70, 2, 9], MemoryFormat::Contiguous, &[0, 2, 3], 0, false),
            (&[130, 1], MemoryFormat::Contiguous, &[0], 0, false),
            (&[37, 3], MemoryFormat::Contiguous, &[0], 1, true),
            (&[37, 8], MemoryFormat::Contiguous, &[0], 0, false),
            (&[37, 8], MemoryFormat::Contiguous, &[0], 2, false),
            (&[300, 9], MemoryFormat::Contiguous, &[0], 0, true),
            // Columns of at least 4096 outputs in whole aligned words: four quads per
            // invocation on CPU adapters (one kept dim, and two), or not (offset 1).
            (&[5, 4096], MemoryFormat::Contiguous, &[0], 4, true),
            (&[3, 4, 2048], MemoryFormat::Contiguous, &[1], 0, false),
            (&[3, 4, 2048], MemoryFormat::Contiguous, &[1], 1, false),
            (&[2, 5, 3, 3], MemoryFormat::ChannelsLast, &[2, 3], 3, false),
            (&[2, 8, 4, 3], MemoryFormat::ChannelsLast, &[0, 2, 3], 0, true),
        ];
        let mut seen = Vec::new();
        for &(shape, format, dims, offset, ties) in cases {
            let n: usize = shape.iter().product();
            let raw = data(&mut rng, DType::F32, n + offset, true);
            let raw = if ties {
                // Few distinct values (ties everywhere), a NaN in some rows.
                let v: Vec<f32> = (0..n + offset).map(|_| if rng.below(60) == 0 { f32::NAN } else { rng.below(4) as f32 - 1.0 }).collect();
                HostTensor::from_vec(v, &[n + offset]).unwrap()
            } else {
                raw
            };
            let sizes: Vec<isize> = shape.iter().map(|&s| s as isize).collect();
            let dev = DeviceTensor::upload(ctx, &raw).unwrap();
            let view = |t: &HostTensor| t.slice(0, offset as isize, (n + offset) as isize, 1).unwrap().view(&sizes).unwrap();
            let x = view(&raw);
            // Channels-last views: the same values at the same offset, strides permuted.
            let (x, d) = if format == MemoryFormat::ChannelsLast {
                let inv = [0isize, 3, 1, 2];
                let s = [shape[0] as isize, shape[2] as isize, shape[3] as isize, shape[1] as isize];
                let hx = raw.slice(0, offset as isize, (n + offset) as isize, 1).unwrap().view(&s).unwrap().permute(&inv).unwrap();
                let dx = dev.slice(0, offset as isize, (n + offset) as isize, 1).unwrap().view(&s).unwrap().permute(&inv).unwrap();
                (hx, dx)
            } else {
                (x, dev.slice(0, offset as isize, (n + offset) as isize, 1).unwrap().view(&sizes).unwrap())
            };
            let desc = |what: &str| format!("{} {what} of {shape:?} {format:?} dims {dims:?} offset {offset}", name(ctx));
            for op in OPS {
                let dims = if matches!(op, ReduceOp::Argmax | ReduceOp::Argmin | ReduceOp::Max | ReduceOp::Min | ReduceOp::Prod) && dims.len() > 1 { &dims[..1] } else { dims };
                let s = reduce_spec(op, x.layout(), DType::F32, &Dims::List(dims.to_vec()), false, None).unwrap();
                let plan = ReducePlan::reduction(&s, x.layout(), &Layout::contiguous(&s.out_shape).unwrap()).unwrap();
                let kernel = reduce_kernel(&plan, ReduceWork::Reduce(op), DType::F32, cpu);
                seen.push(kernel);
                let want = x.reduce(op, Dims::List(dims.to_vec()), false, None, None, None).unwrap();
                let got = d.reduce(op, Dims::List(dims.to_vec()), false, None, None, None).unwrap();
                let tol = tolerances(&x, op, &Dims::List(dims.to_vec()), false, &want.0);
                let what = desc(&format!("{op:?} ({kernel:?})"));
                compare(&what, &got.0.download().unwrap(), &want.0, &tol).unwrap();
                if let (Some(w), Some(g)) = (want.1, got.1) {
                    compare(&format!("{what} indices"), &g.download().unwrap(), &w, &[]).unwrap();
                }
            }
            let dim = dims[0];
            for op in SCANS {
                let s = strided_wgpu::advanced::internal::scan_spec(op, x.layout(), DType::F32, dim).unwrap();
                let plan = ReducePlan::scan(&s, x.layout(), &s.out_layout).unwrap();
                let kernel = reduce_kernel(&plan, ReduceWork::Scan(op), DType::F32, cpu);
                seen.push(kernel);
                let want = x.scan(op, dim, None).unwrap();
                let tol: Vec<f64> = values(&want).iter().map(|w| 1e-5 * (if w.is_finite() { w.abs() } else { 0.0 } + 1.0)).collect();
                compare(&desc(&format!("{op:?} dim {dim} ({kernel:?})")), &d.scan(op, dim, None).unwrap().download().unwrap(), &want, &tol).unwrap();
            }
        }
        let expected: &[ReduceKernel] = match cpu {
            wgpu::DeviceType::Cpu => &[ReduceKernel::Rows, ReduceKernel::RowThreads, ReduceKernel::Columns],
            _ => &[ReduceKernel::Rows, ReduceKernel::RowThreads, ReduceKernel::RowTeams, ReduceKernel::Columns, ReduceKernel::ColumnSplits],
        };
        for k in expected {
            assert!(seen.contains(k), "{}: no case ran {k:?}", name(ctx));
        }
        for k in [ReduceKernel::ColumnSplits, ReduceKernel::RowTeams] {
            assert!(cpu != wgpu::DeviceType::Cpu || !seen.contains(&k), "{}: a CPU adapter ran {k:?}", name(ctx));
        }
    }
}

/// A reduction into an `out` in the input's buffer reads a copy of the buffer, recorded first;
/// when the kernel then refuses the call (9 reduced dims that cannot merge: `Unsupported`), the
/// batch is cut back to what it held (the copy stayed recorded, though the docs say a failed
/// call records nothing), and the batch's other work still runs. The host computes the sum.
#[test]
fn a_reduction_that_fails_after_its_copy_records_nothing() {
    // [2; 9] with strides 4^8 .. 1: no two dims merge; the output is the last element.
    let strides: Vec<isize> = (0..9).rev().map(|i| 4isize.pow(i)).collect();
    let len = (4usize.pow(9) - 1) / 3 + 2;
    let h = HostTensor::from_vec((0..len).map(|i| (i % 7) as f32).collect::<Vec<_>>(), &[len]).unwrap();
    let hx = h.as_strided(&[2; 9], &strides, 0).unwrap();
    let want: f32 = hx.contiguous(MemoryFormat::Contiguous).unwrap().to_vec::<f32>().unwrap().iter().sum();
    assert_eq!(hx.sum(Dims::All, false).unwrap().to_vec::<f32>().unwrap(), vec![want]);
    for ctx in contexts() {
        let d = DeviceTensor::upload(ctx, &h).unwrap();
        let x = d.as_strided(&[2; 9], &strides, 0).unwrap();
        let out = d.as_strided(&[], &[], len - 1).unwrap();
        let other = DeviceTensor::from_slice(ctx, &[1.0f32, 2.0], &[2]).unwrap();
        let before = ctx.record_counts();
        let mut b = ctx.batch();
        let kept = b.sum(&other, 0, false).unwrap();
        let r = b.reduce(&x, ReduceOp::Sum, Dims::All, false, None, Some(&out), None);
        assert!(matches!(r, Err(Error::Unsupported { op: "sum", .. })), "{}: {:?}", name(ctx), r.map(drop));
        b.submit_and_wait().unwrap();
        let c = ctx.record_counts() - before;
        assert_eq!(c.transfers, 0, "{}: the copy of the failed call was recorded: {c:?}", name(ctx));
        assert_eq!(kept.download().unwrap().to_vec::<f32>().unwrap(), vec![3.0], "{}", name(ctx));
        assert_eq!(d.download().unwrap().to_vec::<f32>().unwrap(), h.to_vec::<f32>().unwrap(), "{}: the buffer untouched", name(ctx));
    }
}

/// Index results are int32 (PyTorch's int64): a reduction over more than 2^31 elements is a
/// `Limit` error naming the op (an expanded view, no memory), where the index 2^31 wrapped to
/// -2^31 on the device and the host, but not where the input is empty (no index is written:
/// PyTorch returns the empty result, where this was the Limit error too); `var` and `std` over
/// nothing are NaN whatever the correction (a negative one gave 0 on the host).
#[test]
fn indices_past_int32_and_empty_variances() {
    let h = HostTensor::from_vec(vec![0f32, 0.0, 1.0], &[3, 1]).unwrap();
    let big = h.expand(&[3, 1 << 30]).unwrap();
    let limit = |r: Result<HostTensor, Error>| matches!(r, Err(Error::Limit { limit: "int32 indices", .. }));
    assert!(limit(big.argmax(None, false)), "host argmax");
    let none = HostTensor::zeros(&[0, 1], DType::F32, MemoryFormat::Contiguous).unwrap().expand(&[0, 1 << 32]).unwrap();
    assert_eq!(none.argmax(Some(1), false).unwrap().shape(), &[0], "host argmax of an empty input");
    assert_eq!(none.max_dim(1, true).unwrap().1.shape(), &[0, 1], "host max_dim of an empty input");
    let e = HostTensor::zeros(&[2, 0], DType::F32, MemoryFormat::Contiguous).unwrap();
    for c in [-1.0, 0.0, 1.0, 2.5] {
        let (v, s) = (e.var(1, c, false).unwrap(), e.std(1, c, true).unwrap());
        assert_eq!((v.shape(), s.shape()), (&[2][..], &[2, 1][..]), "var and std, correction {c}");
        assert!(v.to_vec::<f32>().unwrap().iter().all(|v| v.is_nan()), "var, correction {c}");
        assert!(s.to_vec::<f32>().unwrap().iter().all(|v| v.is_nan()), "std, correction {c}");
    }
    for ctx in contexts() {
        let d = DeviceTensor::upload(ctx, &h).unwrap().expand(&[3, 1 << 30]).unwrap();
        assert!(matches!(d.argmax(None, false), Err(Error::Limit { limit: "int32 indices", .. })), "{}", name(ctx));
        assert!(matches!(d.argmin(None, true), Err(Error::Limit { limit: "int32 indices", .. })), "{}", name(ctx));
        let dn = DeviceTensor::upload(ctx, &HostTensor::zeros(&[0, 1], DType::F32, MemoryFormat::Contiguous).unwrap()).unwrap().expand(&[0, 1 << 32]).unwrap();
        assert_eq!(dn.argmin(Some(1), false).unwrap().shape(), &[0], "{}: argmin of an empty input", name(ctx));
        assert_eq!(dn.min_dim(-1, false).unwrap().1.shape(), &[0], "{}: min_dim of an empty input", name(ctx));
        let de = DeviceTensor::upload(ctx, &e).unwrap();
        for c in [-1.0, 1.0] {
            let v = de.var(1, c, false).unwrap().download().unwrap().to_vec::<f32>().unwrap();
            assert!(v.len() == 2 && v.iter().all(|v| v.is_nan()), "{} var correction {c}: {v:?}", name(ctx));
        }
        // An empty input whose reduced dims multiply past isize, or past usize: an empty
        // result, as the host's and PyTorch's (where no output is, the count is never made).
        let z = DeviceTensor::zeros(ctx, &[0, 1, 1], DType::F32, MemoryFormat::Contiguous).unwrap();
        assert_eq!(z.expand(&[0, 1 << 32, 1 << 31]).unwrap().sum([1, 2], false).unwrap().shape(), &[0], "{}", name(ctx));
        for r in [z.expand(&[0, 1 << 32, 1 << 32]).unwrap().amax([1, 2], false), z.expand(&[0, 1 << 32, 1 << 32]).unwrap().var([1, 2], 1.0, false)] {
            assert_eq!(r.unwrap().shape(), &[0], "{}", name(ctx));
        }
    }
}

/// Mesa's software adapters count every loop turn of an invocation against one bound and
/// leave the loops past it, silently: a rows kernel walking 16,384 runs of 4 (`sum` of a
/// transposed [16384, 4] gave half the total), 64 outputs of as many runs (a per-channel
/// statistic of [8192, 64, 2, 2] gave 0.8 for a mean of 1), a columns kernel's elements with
/// their offsets' loop over 3 reduced dims, the general kernel's 4,096-element parts over 7
/// dims. On CPU adapters those run kernels whose invocations stay within it; every adapter
/// matches the host.
#[test]
fn walks_within_a_software_adapters_loop_bound() {
    let mut rng = Rng(0x100b);
    // (shape, permutation, dims, dtype)
    type Case = (&'static [usize], &'static [isize], &'static [isize], DType);
    let cases: &[Case] = &[
        (&[16384, 4], &[1, 0], &[0, 1], DType::F32),
        (&[16384, 64, 4], &[0, 1, 2], &[0, 2], DType::F32),
        (&[8192, 64, 2, 2], &[0, 1, 2, 3], &[0, 2, 3], DType::F32),
        (&[16, 32, 32, 4], &[2, 1, 0, 3], &[0, 1, 2], DType::F32),
        (&[128, 128, 4], &[1, 0, 2], &[0, 1], DType::F32),
        (&[4, 4, 4, 4, 4, 4, 4, 4], &[7, 6, 5, 4, 3, 2, 1, 0], &[0, 1, 2, 3, 4, 5, 6], DType::F16),
    ];
    for ctx in contexts() {
        for &(shape, perm, dims, dtype) in cases {
            let n: usize = shape.iter().product();
            let base = data(&mut rng, dtype, n, false).view(&shape.iter().map(|&s| s as isize).collect::<Vec<_>>()).unwrap();
            let x = base.permute(perm).unwrap();
            let d = DeviceTensor::upload(ctx, &base).unwrap().permute(perm).unwrap();
            let dims = Dims::List(dims.to_vec());
            for op in [ReduceOp::Sum, ReduceOp::Var { correction: 1.0 }, ReduceOp::Amax] {
                check_reduction(&format!("{} {op:?} of {shape:?} permuted {perm:?} over {dims:?}", name(ctx)), &x, &d, op, &dims);
            }
        }
    }
}

/// A reduction over 9 dims of a permuted input runs on the device (its index, read by no op
/// that returns none, numbered the reduced dims in logical order and kept them from merging:
/// past the kernels' 8 dims it was `Unsupported`); `argmax`, whose indices are logical, stays
/// `Unsupported` there (a documented limit), as before. var's divisor is PyTorch's `n > c ? n - c : 0` taken in f64: a NaN correction
/// divides by 0 (inf), one a hair under n stays apart from it (float32 in the kernel made it
/// n, and inf).
#[test]
fn permuted_nine_dims_and_corrections_near_n() {
    let h = HostTensor::from_vec((0..512).map(|i| ((i * 7) % 11) as f32).collect::<Vec<_>>(), &[2; 9]).unwrap();
    let rev: Vec<isize> = (0..9).rev().collect();
    let hp = h.permute(&rev).unwrap();
    let want_sum = hp.sum(Dims::All, false).unwrap();
    let want_mean = hp.mean([0, 1, 2, 3, 4, 5, 6, 7, 8], true).unwrap();
    let v = HostTensor::from_vec(vec![1f32, 3.0], &[2]).unwrap();
    let w = HostTensor::from_vec(vec![1f32, 2.0, 4.0], &[3]).unwrap();
    let nan_c = v.var(0, f64::NAN, false).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(nan_c, [f32::INFINITY], "host var, NaN correction");
    let near = w.var(0, 2.9999999, false).unwrap().to_vec::<f32>().unwrap()[0];
    assert!(near.is_finite() && (near / 4.6666664e7 - 1.0).abs() < 1e-3, "host var, correction 2.9999999: {near}");
    for ctx in contexts() {
        for c in std::iter::once(ctx.clone()).chain(posing_as_gpu(ctx)) {
            let d = DeviceTensor::upload(&c, &h).unwrap().permute(&rev).unwrap();
            let sum = d.sum(Dims::All, false).unwrap_or_else(|e| panic!("{}: sum of 9 permuted dims: {e}", name(&c))).download().unwrap();
            assert_eq!(sum.to_vec::<f32>().unwrap(), want_sum.to_vec::<f32>().unwrap(), "{}", name(&c));
            let mean = d.mean([0, 1, 2, 3, 4, 5, 6, 7, 8], true).unwrap().download().unwrap();
            assert_eq!((mean.shape(), mean.to_vec::<f32>().unwrap()), (want_mean.shape(), want_mean.to_vec::<f32>().unwrap()), "{}", name(&c));
            assert!(matches!(d.argmax(None, false), Err(Error::Unsupported { .. })), "{}: argmax of 9 permuted dims", name(&c));
            // Of the unpermuted input its indices are row-major, as the host's.
            let a = DeviceTensor::upload(&c, &h).unwrap().argmax(None, false).unwrap().download().unwrap();
            assert_eq!(a.to_vec::<i32>().unwrap(), h.argmax(None, false).unwrap().to_vec::<i32>().unwrap(), "{}: argmax", name(&c));
            let dv = DeviceTensor::upload(&c, &v).unwrap();
            assert_eq!(dv.var(0, f64::NAN, false).unwrap().download().unwrap().to_vec::<f32>().unwrap(), nan_c, "{}: NaN correction", name(&c));
            assert_eq!(dv.std(0, f64::NAN, false).unwrap().download().unwrap().to_vec::<f32>().unwrap(), nan_c, "{}: std, NaN correction", name(&c));
            let got = DeviceTensor::upload(&c, &w).unwrap().var(0, 2.9999999, false).unwrap().download().unwrap().to_vec::<f32>().unwrap()[0];
            assert!(got.is_finite() && (got / near - 1.0).abs() < 1e-3, "{}: correction 2.9999999: {got} against {near}", name(&c));
        }
    }
}

/// The 2-norm over dims of size 1 is the absolute value on every adapter (PyTorch's rule: no
/// square to overflow or underflow; 1e20 squared in float32 was inf, 1e-23 squared 0).
#[test]
fn the_two_norm_of_one_element_is_its_absolute_value() {
    let x = HostTensor::from_vec(vec![1e20f32, -1e-23, 3e-23], &[3, 1]).unwrap();
    for ctx in contexts() {
        let d = DeviceTensor::upload(ctx, &x).unwrap();
        let got = d.norm(2.0, 1, false).unwrap().download().unwrap().to_vec::<f32>().unwrap();
        assert_eq!(got, vec![1e20, 1e-23, 3e-23], "{}", name(ctx));
        let one = d.narrow(0, 0, 1).unwrap().norm(2.0, Dims::All, false).unwrap().download().unwrap().to_vec::<f32>().unwrap();
        assert_eq!(one, vec![1e20], "{}", name(ctx));
    }
}
