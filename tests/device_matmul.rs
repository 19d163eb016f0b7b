//! The matrix products on every adapter, in lockstep with the CPU reference: random shapes (m,
//! n, k not multiples of the 64 x 64 tile, k = 1, 1 x 1 outputs), transposed, sliced,
//! negative-step and broadcast (batch stride 0) operands, f32/f16/bf16, every kernel (the tiled
//! GEMM, the matrix-vector kernel with 1 and 16 lanes per row), bias, alpha/beta, ReLU/GELU, out=
//! views; more than 65,535 workgroups; operands over one binding (split into batch ranges or
//! runs of rows, or an Error::Limit); bad input a typed error on the device as on the host.

mod common;

use common::gpu::{contexts, limited, name};
use common::rng::Rng;
use strided_wgpu::advanced::MatmulKernel;
use strided_wgpu::advanced::internal::{addmm_plan, linear_plan, matmul_plan, MatmulPlan};
use strided_wgpu::advanced::internal::matmul_cpu;
use strided_wgpu::{Activation, DeviceTensor, DType, Elementwise, Error, GpuContext, HostTensor, Layout, Matmul, MemoryFormat, Strided};

/// A random host tensor of `shape` (values k/8, exact in every float type), as `dtype`.
fn rand(rng: &mut Rng, shape: &[usize], dtype: DType) -> HostTensor {
    let n: usize = shape.iter().product();
    HostTensor::from_vec((0..n).map(|_| (rng.below(33) as f32 - 16.0) / 8.0).collect(), shape).unwrap().to(dtype).unwrap()
}

fn f64s(t: &HostTensor) -> Vec<f64> {
    let t = t.to(DType::F32).unwrap();
    t.to_vec::<f32>().unwrap().into_iter().map(f64::from).collect()
}

/// Compares a device result with the reference of `plan` within f32 accumulation's bound,
/// scaled per element by |alpha| |A| @ |B| + |beta| |C| (plus one unit in the last place of a
/// 16-bit result).
fn compare(what: &str, plan: &MatmulPlan, a: &HostTensor, b: &HostTensor, c: Option<&HostTensor>, got: &HostTensor) {
    compare_abs(what, plan, [a, b], c, None, got)
}

/// [`compare`] with the operands' absolute values given (`abs_ops`, seen through the same
/// views as the operands), or made here where the operands are contiguous (`None`).
fn compare_abs(what: &str, plan: &MatmulPlan, [a, b]: [&HostTensor; 2], c: Option<&HostTensor>, abs_ops: Option<&[HostTensor]>, got: &HostTensor) {
    let want = matmul_cpu(plan, a, b, c).unwrap();
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    assert_eq!(got.dtype(), want.dtype(), "{what}: dtype");
    let abs = |t: &HostTensor| t.to(DType::F32).unwrap().abs().unwrap().to(t.dtype()).unwrap();
    let mut sp = plan.clone();
    sp.alpha = plan.alpha.abs();
    sp.beta = plan.beta.abs();
    sp.activation = Activation::None;
    let scale = match abs_ops {
        Some(t) => matmul_cpu(&sp, &t[0], &t[1], t.get(2)),
        // Contiguous operands: their absolute values have the same layouts.
        None => matmul_cpu(&sp, &abs(a), &abs(b), c.map(abs).as_ref()),
    };
    let scale = f64s(&scale.unwrap());
    let ulp = match plan.dtype {
        DType::F16 => 1.0 / 1024.0,
        DType::BF16 => 1.0 / 128.0,
        _ => 0.0,
    };
    for (i, ((g, w), s)) in f64s(got).iter().zip(f64s(&want)).zip(scale).enumerate() {
        let tol = 1e-5 * s + 1e-6 + ulp * w.abs();
        assert!((g - w).abs() <= tol || (g.is_nan() && w.is_nan()), "{what}: element {i}: got {g}, want {w} (tol {tol})");
    }
}

/// One random case: operands built on the host and uploaded, seen through the same views on
/// both sides.
struct Case {
    plan: MatmulPlan,
    host: Vec<HostTensor>,
    /// The host operands' absolute values, through the same views.
    abs: Vec<HostTensor>,
    dev: Vec<DeviceTensor>,
}

/// A random view of a fresh `[.., rows, cols]` operand: stored transposed half of the time, a
/// step-2 slice or a flip of a dim now and then.
fn operand(rng: &mut Rng, ctx: &GpuContext, shape: &[usize], dtype: DType) -> (HostTensor, HostTensor, DeviceTensor) {
    let r = shape.len();
    let transposed = r >= 2 && rng.below(2) == 0;
    let mut base_shape = shape.to_vec();
    if transposed {
        base_shape.swap(r - 1, r - 2);
    }
    let sliced = rng.below(4) == 0;
    if sliced {
        base_shape[r - 1] *= 2;
    }
    let h = rand(rng, &base_shape, dtype);
    let d = DeviceTensor::upload(ctx, &h).unwrap();
    // A flip of any dim (k's and n's too: a stride of -1 along the reduction).
    let flip = (rng.below(4) == 0).then(|| rng.below(r));
    let habs = h.to(DType::F32).unwrap().abs().unwrap().to(dtype).unwrap();
    let view = |t: &HostTensor| -> HostTensor { view_of(t, sliced, transposed, flip, base_shape[r - 1]) };
    let dv = {
        let mut d = d;
        if sliced {
            d = d.slice(-1, 0, base_shape[r - 1] as isize, 2).unwrap();
        }
        if transposed {
            d = d.transpose(-1, -2).unwrap();
        }
        if let Some(dim) = flip {
            d = d.flip(dim as isize).unwrap();
        }
        d
    };
    (view(&h), view(&habs), dv)
}

fn view_of(t: &HostTensor, sliced: bool, transposed: bool, flip: Option<usize>, last: usize) -> HostTensor {
    let mut h = t.clone();
    if sliced {
        h = h.slice(-1, 0, last as isize, 2).unwrap();
    }
    if transposed {
        h = h.transpose(-1, -2).unwrap();
    }
    if let Some(dim) = flip {
        h = h.flip(dim as isize).unwrap();
    }
    h
}

fn random_case(rng: &mut Rng, ctx: &GpuContext, dtype: DType) -> Case {
    let dim = |rng: &mut Rng| match rng.below(5) {
        0 => 1,
        1 => 64 + rng.below(80),
        _ => 1 + rng.below(40),
    };
    let (m, n, k) = (dim(rng), dim(rng), if rng.below(6) == 0 { 1 } else { dim(rng) });
    match rng.below(3) {
        // matmul with broadcast batch dims: [b0, 1, m, k] @ [b1, k, n] (or unbatched).
        0 => {
            let (b0, b1) = (1 + rng.below(3), 1 + rng.below(3));
            let (ha, aa, da) = operand(rng, ctx, &[b0, 1, m, k], dtype);
            let (hb, ab, db) = operand(rng, ctx, &[b1, k, n], dtype);
            let plan = matmul_plan(ha.layout(), hb.layout(), [dtype, dtype]).unwrap();
            Case { plan, host: vec![ha, hb], abs: vec![aa, ab], dev: vec![da, db] }
        }
        // linear over [b, m, in] with a bias and maybe an activation.
        1 => {
            let b = 1 + rng.below(3);
            let (hx, ax, dx) = operand(rng, ctx, &[b, m, k], dtype);
            let (hw, aw, dw) = operand(rng, ctx, &[n, k], dtype);
            let hb = rand(rng, &[n], dtype);
            let ab = hb.to(DType::F32).unwrap().abs().unwrap().to(dtype).unwrap();
            let db = DeviceTensor::upload(ctx, &hb).unwrap();
            let act = [Activation::None, Activation::Relu, Activation::Gelu][rng.below(3)];
            let plan = linear_plan(hx.layout(), hw.layout(), Some(hb.layout()), [Some(dtype); 3]).unwrap().with_activation(act);
            Case { plan, host: vec![hx, hw, hb], abs: vec![ax, aw, ab], dev: vec![dx, dw, db] }
        }
        // addmm with an input broadcast from [1, n] or [m, n], beta 0 now and then.
        _ => {
            let (h1, a1, d1) = operand(rng, ctx, &[m, k], dtype);
            let (h2, a2, d2) = operand(rng, ctx, &[k, n], dtype);
            let ishape = if rng.below(2) == 0 { vec![1, n] } else { vec![m, n] };
            let (hi, ai, di) = operand(rng, ctx, &ishape, dtype);
            let (beta, alpha) = ([0.0, 0.5, 1.0][rng.below(3)], [1.0, -0.5, 2.0][rng.below(3)]);
            let plan = addmm_plan(hi.layout(), h1.layout(), h2.layout(), beta, alpha, [dtype; 3]).unwrap();
            Case { plan, host: vec![h1, h2, hi], abs: vec![a1, a2, ai], dev: vec![d1, d2, di] }
        }
    }
}

/// A destination of `shape` filled with NaN: a kernel that leaves an element unwritten fails
/// the comparison (the pool hands out recycled buffers, which may hold the answer already).
fn nan_out(ctx: &GpuContext, shape: &[usize], dtype: DType) -> Result<DeviceTensor, Error> {
    let host = HostTensor::from_vec(vec![f32::NAN; shape.iter().product()], shape)?.to(dtype)?;
    DeviceTensor::upload(ctx, &host)
}

/// The result bits of `plan` on `a` and `b` through every kernel that takes it (into a fresh
/// output filled with NaN), each with its kernel; kernels that refuse the plan are skipped.
fn on_each_kernel(ctx: &GpuContext, plan: &MatmulPlan, a: &DeviceTensor, b: &DeviceTensor) -> Vec<(MatmulKernel, Vec<u32>)> {
    let mut ran = Vec::new();
    for kernel in MatmulKernel::ALL {
        let out = nan_out(ctx, &plan.out_shape, plan.dtype).unwrap();
        let mut batch = ctx.batch();
        if batch.run_plan_with(plan, a, b, None, &out, kernel).is_err() {
            continue;
        }
        batch.submit_and_wait().unwrap();
        ran.push((kernel, common::elementwise::bits(&out.download().unwrap())));
    }
    ran
}

/// Runs a case's plan on the device through `kernel` into a fresh `out` (a transposed view
/// half of the time, filled with NaN): the result downloaded.
fn run_device(ctx: &GpuContext, rng: &mut Rng, case: &Case, kernel: MatmulKernel) -> Result<HostTensor, Error> {
    let p = &case.plan;
    let shape = &p.out_shape;
    let out = if shape.len() >= 2 && rng.below(2) == 0 {
        let mut s = shape.clone();
        let r = s.len();
        s.swap(r - 1, r - 2);
        nan_out(ctx, &s, p.dtype)?.transpose(-1, -2)?
    } else {
        nan_out(ctx, shape, p.dtype)?
    };
    let mut batch = ctx.batch();
    let d = &case.dev;
    batch.run_plan_with(p, &d[0], &d[1], d.get(2), &out, kernel)?;
    batch.submit_and_wait()?;
    out.download()
}

#[test]
fn random_products_match_the_reference_on_every_kernel() {
    for ctx in contexts() {
        let mut rng = Rng(11);
        let mut counts = [0usize; MatmulKernel::ALL.len()];
        for i in 0..60 {
            let dtype = [DType::F32, DType::F16, DType::BF16][i % 3];
            let case = random_case(&mut rng, ctx, dtype);
            let hc = case.host.get(2);
            for (ki, kernel) in MatmulKernel::ALL.into_iter().enumerate() {
                if kernel.eligible(case.plan.m, case.plan.n).is_err() && kernel != MatmulKernel::Gemm {
                    continue;
                }
                // The Conv1x1 route and the Blocked kernel compile the convolution's CPU kernels
                // (seconds each on a software adapter): every sixth case (float32) takes them.
                if matches!(kernel, MatmulKernel::Conv1x1 | MatmulKernel::Blocked) && i % 6 != 0 {
                    continue;
                }
                let what = format!("{} case {i} {kernel:?} {dtype} m={} n={} k={} batch={:?} op={}", name(ctx), case.plan.m, case.plan.n, case.plan.k, case.plan.batch, case.plan.op);
                match run_device(ctx, &mut rng, &case, kernel) {
                    Ok(got) => {
                        compare_abs(&what, &case.plan, [&case.host[0], &case.host[1]], hc, Some(&case.abs), &got);
                        counts[ki] += 1;
                    }
                    // A batch folded into the rows can make a 1-row product a matrix one; the
                    // special kernels' limits (a CPU adapter's loop bound, an f32 output, the
                    // 1x1 route's and the tensor cores' shapes). The GEMMs take every product.
                    Err(Error::Unsupported { .. }) if !matches!(kernel, MatmulKernel::Gemm | MatmulKernel::GemmSplit | MatmulKernel::GemmWide) => {}
                    Err(e) => panic!("{what}: {e}"),
                }
            }
        }
        // The Conv1x1 route is a CPU-adapter kernel; the Blocked kernel needs subgroups too
        // (lavapipe has them, llvmpipe's GL not); the tensor-core kernel (float16, multiples of
        // 16: random shapes rarely) has its own test below.
        let cpu = ctx.adapter().device_type == wgpu::DeviceType::Cpu;
        let subgroups = cpu && ctx.adapter().backend == wgpu::Backend::Vulkan;
        let optional = |k: MatmulKernel| (k == MatmulKernel::Conv1x1 && !cpu) || (k == MatmulKernel::Blocked && !subgroups) || k == MatmulKernel::Coop;
        assert!(counts.iter().zip(MatmulKernel::ALL).all(|(&c, k)| c > 0 || optional(k)), "{}: every kernel ran: {counts:?}", name(ctx));
    }
}

/// The tensor-core kernel on float16 products it takes (m, n, k multiples of 16; row- and
/// column-major operands; several tiles with partial ones at the edges; one, two and three
/// batch dims; a sliced operand at an offset; `linear`'s transposed weight; the epilogue: a
/// bias, alpha and beta, ReLU and GELU): against the reference, and the same bits on a second
/// run. Where the
/// device runs no cooperative matrices the forced kernel is an `Unsupported` error naming why,
/// and the automatic choice is another kernel.
#[test]
fn tensor_core_products_match_the_reference() {
    for ctx in contexts() {
        let mut rng = Rng(31);
        let coop = ctx.adapter().cooperative_matrix.is_some();
        if !coop {
            common::skips::say(&format!("!!! {}: no cooperative matrices: the tensor-core kernels' values not tested (only that they are Unsupported)", name(ctx)));
        }
        // (batch dims, m, n, k, A stored transposed, B stored transposed, A a slice: its
        // columns at offset 8 of rows 16 longer)
        type Case<'a> = (&'a [usize], usize, usize, usize, bool, bool, bool);
        let cases: [Case; 8] = [
            (&[1], 16, 16, 16, false, false, false),
            (&[1], 144, 272, 96, false, false, false),
            (&[1], 128, 256, 64, true, false, false),
            (&[1], 64, 48, 32, false, true, false),
            (&[3], 48, 160, 80, true, true, false),
            (&[2], 256, 128, 528, false, false, false),
            (&[2], 80, 64, 48, false, false, true),
            (&[2, 2, 2], 32, 48, 64, false, true, true),
        ];
        for (batch, m, n, k, ta, tb, sliced) in cases {
            let stored = |rows: usize, cols: usize, t: bool| -> Vec<usize> { batch.iter().copied().chain(if t { [cols, rows] } else { [rows, cols] }).collect() };
            let a_stored = if sliced { stored(m, k + 16, ta) } else { stored(m, k, ta) };
            let (ha, hb) = (rand(&mut rng, &a_stored, DType::F16), rand(&mut rng, &stored(k, n, tb), DType::F16));
            let (da, db) = (DeviceTensor::upload(ctx, &ha).unwrap(), DeviceTensor::upload(ctx, &hb).unwrap());
            // The absolute values through the same views, for the tolerance.
            let abs = |t: &HostTensor| t.to(DType::F32).unwrap().abs().unwrap().to(DType::F16).unwrap();
            let (aa, ab) = (abs(&ha), abs(&hb));
            let cut = if ta { m } else { k };
            let view_a = |t: &HostTensor| -> HostTensor {
                let t = if sliced { t.narrow(-1, 8, cut).unwrap() } else { t.clone() };
                if ta { t.transpose(-1, -2).unwrap() } else { t }
            };
            let view_b = |t: &HostTensor| if tb { t.transpose(-1, -2).unwrap() } else { t.clone() };
            let da = if sliced { da.narrow(-1, 8, cut).unwrap() } else { da };
            let da = if ta { da.transpose(-1, -2).unwrap() } else { da };
            let db = if tb { db.transpose(-1, -2).unwrap() } else { db };
            let (ha, hb, abs_ops) = (view_a(&ha), view_b(&hb), [view_a(&aa), view_b(&ab)]);
            let plan = matmul_plan(ha.layout(), hb.layout(), [DType::F16; 2]).unwrap();
            let what = format!("{} coop batch {batch:?} m={m} n={n} k={k} A^T {ta} B^T {tb} sliced {sliced}", name(ctx));
            let out_shape: Vec<usize> = batch.iter().copied().chain([m, n]).collect();
            let run = || -> Result<HostTensor, Error> {
                let out = nan_out(ctx, &out_shape, DType::F16)?;
                let mut bt = ctx.batch();
                bt.run_plan_with(&plan, &da, &db, None, &out, MatmulKernel::Coop)?;
                bt.submit_and_wait()?;
                out.download()
            };
            // The default: split-K where few 64 x 64 tiles (under 128) meet a long k (>= 256),
            // as the kernels' class sees the sizes (powers of two below them).
            let p2 = |v: usize| 1usize << (usize::BITS - 1 - v.leading_zeros());
            let few = p2(m).div_ceil(64) * p2(n).div_ceil(64) * p2(batch.iter().product()) < 128 && p2(k) >= 256;
            // On CPU adapters (lavapipe has 8 x 8 x 8 fragments) products of at least 2^22
            // multiply-adds take the Blocked kernel instead, and nothing splits k.
            let cpu = ctx.adapter().device_type == wgpu::DeviceType::Cpu;
            let large = p2(m) * p2(n) * p2(k) * p2(batch.iter().product()) >= 1 << 22;
            let want = match (cpu, few, large) {
                (true, _, true) => MatmulKernel::Blocked,
                (false, true, _) => MatmulKernel::GemmSplit,
                _ => MatmulKernel::Coop,
            };
            match run() {
                Ok(got) => {
                    assert!(coop, "{what}: ran without cooperative matrices");
                    compare_abs(&what, &plan, [&ha, &hb], None, Some(&abs_ops), &got);
                    let bits = |t: &HostTensor| t.to_vec::<half::f16>().unwrap().iter().map(|h| h.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&got), bits(&run().unwrap()), "{what}: same bits on a second run");
                    // The same product into a view of a buffer that also holds A's data: an
                    // output sharing an operand's buffer takes the f32 scratch and its rounding
                    // copy, the route of devices that do not take every tensor-core path, where
                    // the others write the float16 output as it is: the same bits either way.
                    let storage = da.storage_len();
                    let numel: usize = out_shape.iter().product();
                    let joint = DeviceTensor::zeros(ctx, &[storage + numel], DType::F16, MemoryFormat::Contiguous).unwrap();
                    joint.narrow(0, 0, storage).unwrap().copy_(&da.as_strided(&[storage], &[1], 0).unwrap()).unwrap();
                    let ja = joint.as_strided(da.shape(), da.strides(), da.storage_offset()).unwrap();
                    let row_major: Vec<isize> = (0..out_shape.len()).map(|d| out_shape[d + 1..].iter().product::<usize>() as isize).collect();
                    let jout = joint.as_strided(&out_shape, &row_major, storage).unwrap();
                    let mut bt = ctx.batch();
                    bt.run_plan_with(&plan, &ja, &db, None, &jout, MatmulKernel::Coop).unwrap();
                    bt.submit_and_wait().unwrap();
                    assert_eq!(bits(&got), bits(&jout.download().unwrap()), "{what}: the output sharing A's buffer (the rounded f32 scratch)");
                    // Into outputs whose neighbours along n are no whole word (column-major, and
                    // row-major at an odd offset): stored element by element, the same bits.
                    let col_major: Vec<isize> = {
                        let nb = out_shape.len() - 2;
                        let mut st = row_major.clone();
                        st[nb] = 1;
                        st[nb + 1] = m as isize;
                        st
                    };
                    for (strides, offset, how) in [(col_major, 0usize, "column-major"), (row_major.clone(), 1, "at an odd offset")] {
                        let store = DeviceTensor::zeros(ctx, &[numel + 1], DType::F16, MemoryFormat::Contiguous).unwrap();
                        let view = store.as_strided(&out_shape, &strides, offset).unwrap();
                        let mut bt = ctx.batch();
                        bt.run_plan_with(&plan, &da, &db, None, &view, MatmulKernel::Coop).unwrap();
                        bt.submit_and_wait().unwrap();
                        assert_eq!(bits(&got), bits(&view.download().unwrap()), "{what}: an output {how}");
                    }
                    // Its own output: one dispatch where the device takes every tensor-core path
                    // (`MatmulKernel::writes_half`), else the product into the scratch and a copy.
                    let graph = ctx
                        .capture(&[&da, &db], || {
                            let out = nan_out(ctx, &out_shape, DType::F16)?;
                            let mut bt = ctx.batch();
                            bt.run_plan_with(&plan, &da, &db, None, &out, MatmulKernel::Coop)?;
                            bt.submit()?;
                            Ok::<_, Error>(out)
                        })
                        .unwrap();
                    let kernels: Vec<&str> = graph.dispatches().into_iter().map(|(_, k)| k).collect();
                    let direct = ctx.adapter().cooperative_matrix.is_some_and(|c| c.all_paths);
                    assert_eq!(kernels.len(), if direct { 1 } else { 2 }, "{what}: {kernels:?}");
                    assert_eq!(kernels[0].ends_with("_half"), direct, "{what}: {kernels:?}");
                    assert_eq!(ctx.matmul_choice_of(&da, &db).unwrap(), want, "{what}: the default");
                }
                Err(Error::Unsupported { detail, .. }) if !coop => {
                    assert!(detail.contains("cooperative"), "{what}: {detail}");
                    assert_ne!(ctx.matmul_choice_of(&da, &db).unwrap(), MatmulKernel::Coop, "{what}: the default");
                }
                Err(e) => panic!("{what}: {e}"),
            }
        }
        // Through the epilogue: linear with a bias and an activation (a transposed weight, the
        // bias broadcast down the rows), addmm with alpha, beta and a full addend.
        for (ci, act) in [Activation::None, Activation::Relu, Activation::Gelu].into_iter().enumerate() {
            let (m, n, k) = (144, 96 + 32 * ci, 48);
            let (hx, hw, hb) = (rand(&mut rng, &[m, k], DType::F16), rand(&mut rng, &[n, k], DType::F16), rand(&mut rng, &[n], DType::F16));
            let (dx, dw, db) = (DeviceTensor::upload(ctx, &hx).unwrap(), DeviceTensor::upload(ctx, &hw).unwrap(), DeviceTensor::upload(ctx, &hb).unwrap());
            let plan = linear_plan(hx.layout(), hw.layout(), Some(hb.layout()), [Some(DType::F16); 3]).unwrap().with_activation(act);
            let hi = rand(&mut rng, &[m, n], DType::F16);
            let di = DeviceTensor::upload(ctx, &hi).unwrap();
            let (h1, h2) = (rand(&mut rng, &[m, k], DType::F16), rand(&mut rng, &[k, n], DType::F16));
            let (d1, d2) = (DeviceTensor::upload(ctx, &h1).unwrap(), DeviceTensor::upload(ctx, &h2).unwrap());
            let addmm = addmm_plan(hi.layout(), h1.layout(), h2.layout(), 0.5, -1.5, [DType::F16; 3]).unwrap().with_activation(act);
            for (plan, host, dev) in [(plan, [&hx, &hw, &hb], [&dx, &dw, &db]), (addmm, [&h1, &h2, &hi], [&d1, &d2, &di])] {
                let what = format!("{} coop {} {act:?} m={m} n={n} k={k}", name(ctx), plan.op);
                let run = || -> Result<HostTensor, Error> {
                    let out = nan_out(ctx, &plan.out_shape, DType::F16)?;
                    let mut bt = ctx.batch();
                    bt.run_plan_with(&plan, dev[0], dev[1], Some(dev[2]), &out, MatmulKernel::Coop)?;
                    bt.submit_and_wait()?;
                    out.download()
                };
                match run() {
                    Ok(got) => {
                        assert!(coop, "{what}: ran without cooperative matrices");
                        compare(&what, &plan, host[0], host[1], Some(host[2]), &got);
                        // Not the automatic choice yet (kernels/matmul/coop.rs, `automatic`).
                        let out = nan_out(ctx, &plan.out_shape, DType::F16).unwrap();
                        let mut bt = ctx.batch();
                        bt.run_plan_with(&plan, dev[0], dev[1], Some(dev[2]), &out, MatmulKernel::Auto).unwrap();
                        bt.submit_and_wait().unwrap();
                        compare(&format!("{what} (auto)"), &plan, host[0], host[1], Some(host[2]), &out.download().unwrap());
                    }
                    Err(Error::Unsupported { detail, .. }) if !coop => assert!(detail.contains("cooperative"), "{what}: {detail}"),
                    Err(e) => panic!("{what}: {e}"),
                }
            }
        }
        if coop {
            // Not taken: float32, a k that is no multiple of the fragment side (16 or 8).
            let (a32, b32) = (DeviceTensor::zeros(ctx, &[32, 32], DType::F32, MemoryFormat::Contiguous).unwrap(), DeviceTensor::zeros(ctx, &[32, 32], DType::F32, MemoryFormat::Contiguous).unwrap());
            assert_ne!(ctx.matmul_choice_of(&a32, &b32).unwrap(), MatmulKernel::Coop);
            let (a, b) = (DeviceTensor::zeros(ctx, &[32, 20], DType::F16, MemoryFormat::Contiguous).unwrap(), DeviceTensor::zeros(ctx, &[20, 32], DType::F16, MemoryFormat::Contiguous).unwrap());
            assert_ne!(ctx.matmul_choice_of(&a, &b).unwrap(), MatmulKernel::Coop);
            // A matrix past a binding runs in runs of rows, each a whole number of fragments
            // (a run shorter than a fragment read and wrote past its windows): [456, 72] float16
            // (64.1 KiB) on a 64 KiB binding (455 rows of 144 bytes fit: runs of 455 and 1
            // rows before, now 448 and 8).
            let small = common::gpu::limited_tensor_cores(ctx, |l| wgpu::Limits { max_storage_buffer_binding_size: 64 << 10, ..l });
            assert!(small.adapter().cooperative_matrix.is_some(), "{}: the lowered device keeps its tensor cores", name(ctx));
            let (ha, hb) = (rand(&mut rng, &[456, 72], DType::F16), rand(&mut rng, &[72, 16], DType::F16));
            let plan = matmul_plan(ha.layout(), hb.layout(), [DType::F16; 2]).unwrap();
            let out = nan_out(&small, &[456, 16], DType::F16).unwrap();
            let mut bt = small.batch();
            bt.run_plan_with(&plan, &DeviceTensor::upload(&small, &ha).unwrap(), &DeviceTensor::upload(&small, &hb).unwrap(), None, &out, MatmulKernel::Coop).unwrap();
            bt.submit_and_wait().unwrap();
            compare(&format!("{} coop in runs of rows", name(ctx)), &plan, &ha, &hb, None, &out.download().unwrap());
            // B = W.T of a weight W [456, 72] float16 past the binding: runs of columns, each a
            // whole number of fragments (an Error::Limit before).
            let (hx, hw) = (rand(&mut rng, &[16, 72], DType::F16), rand(&mut rng, &[456, 72], DType::F16));
            let wc = hw.transpose(0, 1).unwrap().contiguous(MemoryFormat::Contiguous).unwrap();
            let plan = matmul_plan(hx.layout(), wc.layout(), [DType::F16; 2]).unwrap();
            let out = nan_out(&small, &[16, 456], DType::F16).unwrap();
            let dw = DeviceTensor::upload(&small, &hw).unwrap().transpose(0, 1).unwrap();
            let mut bt = small.batch();
            let dplan = matmul_plan(hx.layout(), dw.layout(), [DType::F16; 2]).unwrap();
            bt.run_plan_with(&dplan, &DeviceTensor::upload(&small, &hx).unwrap(), &dw, None, &out, MatmulKernel::Coop).unwrap();
            bt.submit_and_wait().unwrap();
            compare(&format!("{} coop in runs of columns", name(ctx)), &plan, &hx, &wc, None, &out.download().unwrap());
            // A device of the caller's, opened with the tensor cores' features, wrapped with
            // its adapter (`from_adapter_device`): the context uses them as the crate's own
            // does; `from_device`, which has no adapter to ask, does not.
            let adapter = common::gpu::adapter_again(ctx).expect("the adapter again");
            let open = || {
                pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
                    label: None,
                    required_features: wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX | wgpu::Features::SHADER_F16 | wgpu::Features::SUBGROUP,
                    required_limits: adapter.limits(),
                    // SAFETY: the caller's acceptance of wgpu's experimental features, as the
                    // crate gives it for its own context on this adapter.
                    experimental_features: unsafe { wgpu::ExperimentalFeatures::enabled() },
                    memory_hints: wgpu::MemoryHints::default(),
                    trace: wgpu::Trace::Off,
                }))
                .unwrap()
            };
            let (device, queue) = open();
            let theirs = GpuContext::from_adapter_device(&adapter, device, queue);
            assert_eq!(theirs.adapter().cooperative_matrix, ctx.adapter().cooperative_matrix, "{}", name(ctx));
            let (ha, hb) = (rand(&mut rng, &[48, 32], DType::F16), rand(&mut rng, &[32, 64], DType::F16));
            let plan = matmul_plan(ha.layout(), hb.layout(), [DType::F16; 2]).unwrap();
            let out = nan_out(&theirs, &[48, 64], DType::F16).unwrap();
            let mut bt = theirs.batch();
            bt.run_plan_with(&plan, &DeviceTensor::upload(&theirs, &ha).unwrap(), &DeviceTensor::upload(&theirs, &hb).unwrap(), None, &out, MatmulKernel::Coop).unwrap();
            bt.submit_and_wait().unwrap();
            compare(&format!("{} coop on the caller's device", name(ctx)), &plan, &ha, &hb, None, &out.download().unwrap());
            let (device, queue) = open();
            assert_eq!(GpuContext::from_device(device, queue, &adapter.get_info()).adapter().cooperative_matrix, None, "{}", name(ctx));
        }
    }
}

#[test]
fn trait_forms_agree_with_the_host() {
    for ctx in contexts() {
        let mut rng = Rng(12);
        let a = rand(&mut rng, &[3, 5, 7], DType::F32);
        let b = rand(&mut rng, &[7, 4], DType::F32);
        let v = rand(&mut rng, &[7], DType::F32);
        let (da, db, dv) = (DeviceTensor::upload(ctx, &a).unwrap(), DeviceTensor::upload(ctx, &b).unwrap(), DeviceTensor::upload(ctx, &v).unwrap());
        let same = |d: DeviceTensor, h: HostTensor| {
            let p = d.download().unwrap();
            assert_eq!(p.shape(), h.shape());
            for (g, w) in f64s(&p).iter().zip(f64s(&h)) {
                assert!((g - w).abs() <= 1e-4 * (1.0 + w.abs()), "got {g}, want {w}");
            }
        };
        same(da.matmul(&db).unwrap(), a.matmul(&b).unwrap());
        same(da.matmul(&dv).unwrap(), a.matmul(&v).unwrap());
        same(dv.matmul(&dv).unwrap(), v.matmul(&v).unwrap());
        same(dv.matmul(&db).unwrap(), v.matmul(&b).unwrap());
        same(da.bmm(&da.transpose(1, 2).unwrap()).unwrap(), a.bmm(&a.transpose(1, 2).unwrap()).unwrap());
        // Matrix-vector products whose matrix rows move as vec4 words (float32, unit stride
        // along k, 4-aligned), with a k that is no multiple of 4 (the tail) and one that is.
        for k in [66, 64] {
            let w = rand(&mut rng, &[48, k], DType::F32);
            let x = rand(&mut rng, &[1, k], DType::F32);
            let (dw, dx) = (DeviceTensor::upload(ctx, &w).unwrap(), DeviceTensor::upload(ctx, &x).unwrap());
            same(dx.matmul(&dw.transpose(0, 1).unwrap()).unwrap(), x.matmul(&w.transpose(0, 1).unwrap()).unwrap());
            same(dw.matmul(&dx.transpose(0, 1).unwrap()).unwrap(), w.matmul(&x.transpose(0, 1).unwrap()).unwrap());
            same(dx.linear(&dw, None).unwrap(), x.linear(&w, None).unwrap());
        }
        let w = b.transpose(0, 1).unwrap();
        let dw = db.transpose(0, 1).unwrap();
        same(da.linear(&dw, None).unwrap(), a.linear(&w, None).unwrap());
        let nan = HostTensor::from_vec(vec![f32::NAN; 20], &[5, 4]).unwrap();
        let dnan = DeviceTensor::upload(ctx, &nan).unwrap();
        let a0 = a.select(0, 0).unwrap();
        let da0 = da.select(0, 0).unwrap();
        same(dnan.addmm(&da0, &db, 0.0, 1.5).unwrap(), nan.addmm(&a0, &b, 0.0, 1.5).unwrap());
        // Bad input: typed errors, nothing written.
        let out = DeviceTensor::from_slice(ctx, &[9f32; 20], &[5, 4]).unwrap();
        assert!(matches!(da0.matmul(&da0), Err(Error::InvalidArgument { .. })));
        assert!(matches!(da0.matmul(&db.to(DType::F16).unwrap()), Err(Error::DType { .. })));
        assert!(matches!(da0.to(DType::I32).unwrap().matmul(&db.to(DType::I32).unwrap()), Err(Error::Unsupported { .. })));
        assert!(matches!(da0.matmul_out(&db, &out.expand(&[5, 4]).unwrap().transpose(0, 1).unwrap()), Err(Error::InvalidArgument { .. })));
        let store = DeviceTensor::from_slice(ctx, &[9f32; 40], &[5, 8]).unwrap();
        let (left, right) = (store.narrow(1, 0, 7).unwrap(), store.narrow(1, 3, 4).unwrap());
        assert!(matches!(left.matmul_out(&db, &right), Err(Error::Overlap { .. })));
        assert_eq!(store.download().unwrap().to_vec::<f32>().unwrap(), vec![9.0; 40]);
        // A disjoint view of the operand's buffer is fine (read from a copy).
        let store = DeviceTensor::zeros(ctx, &[5, 11], DType::F32, MemoryFormat::Contiguous).unwrap();
        let (left, right) = (store.narrow(1, 0, 7).unwrap(), store.narrow(1, 7, 4).unwrap());
        left.copy_(&da0).unwrap();
        left.matmul_out(&db, &right).unwrap();
        same(right, a0.matmul(&b).unwrap());
    }
}

#[test]
fn many_workgroups_and_split_bindings() {
    for ctx in contexts() {
        let mut rng = Rng(13);
        // 70,000 products: more workgroups than one grid dimension holds, on both kernels.
        let a = rand(&mut rng, &[70_000, 1, 3], DType::F32);
        let b = rand(&mut rng, &[70_000, 3, 2], DType::F32);
        let (da, db) = (DeviceTensor::upload(ctx, &a).unwrap(), DeviceTensor::upload(ctx, &b).unwrap());
        let plan = matmul_plan(a.layout(), b.layout(), [DType::F32; 2]).unwrap();
        for kernel in [MatmulKernel::Gemm, MatmulKernel::Vec1] {
            let out = nan_out(ctx, &plan.out_shape, DType::F32).unwrap();
            let mut batch = ctx.batch();
            batch.run_plan_with(&plan, &da, &db, None, &out, kernel).unwrap();
            batch.submit_and_wait().unwrap();
            compare(&format!("{} 70000 batches {kernel:?}", name(ctx)), &plan, &a, &b, None, &out.download().unwrap());
        }
        // A device whose bindings hold 64 KiB: a batch of 16 KiB matrices splits into ranges.
        let small = limited(ctx, |l| wgpu::Limits { max_storage_buffer_binding_size: 64 << 10, ..l });
        let a = rand(&mut rng, &[12, 64, 64], DType::F32);
        let b = rand(&mut rng, &[12, 64, 64], DType::F32).transpose(1, 2).unwrap();
        let (da, db) = (DeviceTensor::upload(&small, &a).unwrap(), DeviceTensor::upload(&small, &b.contiguous(MemoryFormat::Contiguous).unwrap()).unwrap());
        let got = da.bmm(&db).unwrap().download().unwrap();
        let plan = matmul_plan(a.layout(), b.layout(), [DType::F32; 2]).unwrap();
        compare(&format!("{} split bindings", name(&small)), &plan, &a, &b, None, &got);
        // A single matrix past a binding runs in runs of rows (it was an Error::Limit: a
        // `linear` whose input's batch folds into its rows too); B past one alone, or one row
        // of A past it, still is one.
        let zeros = |s: &[usize]| DeviceTensor::zeros(&small, s, DType::F32, MemoryFormat::Contiguous).unwrap();
        for (a, b) in [([2, 256], [256, 128]), ([2, 20_000], [20_000, 1])] {
            let r = zeros(&a).matmul(&zeros(&b));
            assert!(matches!(r, Err(Error::Limit { .. })), "{} {a:?} {b:?}: {r:?}", name(ctx));
        }
        let up = |h: &HostTensor| DeviceTensor::upload(&small, h).unwrap();
        for dtype in [DType::F32, DType::F16] {
            // A of 300 rows (75 KiB in f32): stored, flipped along its rows, and a slice of
            // every other row of a taller one.
            let store = rand(&mut rng, &[300, 64], dtype);
            let tall = rand(&mut rng, &[600, 64], dtype);
            let b = rand(&mut rng, &[64, 24], dtype);
            let c = rand(&mut rng, &[300, 24], dtype);
            let views: [(&str, HostTensor, DeviceTensor); 3] = [
                ("rows", store.clone(), up(&store)),
                ("flipped", store.flip(0).unwrap(), up(&store).flip(0).unwrap()),
                ("stepped", tall.slice(0, 0, 600, 2).unwrap(), up(&tall).slice(0, 0, 600, 2).unwrap()),
            ];
            for (what, ha, da) in &views {
                let what = format!("{} {dtype} {what} A past a binding", name(ctx));
                // (The reference from a contiguous copy: `compare` takes the absolute values
                // of contiguous operands.)
                let ha = &ha.contiguous(MemoryFormat::Contiguous).unwrap();
                let plan = matmul_plan(ha.layout(), b.layout(), [dtype; 2]).unwrap();
                compare(&what, &plan, ha, &b, None, &da.matmul(&up(&b)).unwrap().download().unwrap());
                let plan = addmm_plan(c.layout(), ha.layout(), b.layout(), 0.5, 2.0, [dtype; 3]).unwrap();
                compare(&format!("{what}, addmm"), &plan, ha, &b, Some(&c), &up(&c).addmm(da, &up(&b), 0.5, 2.0).unwrap().download().unwrap());
            }
            // `linear` of [3, 100, 64] with a bias (its batch folds into 300 rows).
            let (x, w, bias) = (rand(&mut rng, &[3, 100, 64], dtype), rand(&mut rng, &[24, 64], dtype), rand(&mut rng, &[24], dtype));
            let plan = linear_plan(x.layout(), w.layout(), Some(bias.layout()), [Some(dtype); 3]).unwrap();
            let got = up(&x).linear(&up(&w), Some(&up(&bias))).unwrap().download().unwrap();
            compare(&format!("{} {dtype} linear past a binding", name(ctx)), &plan, &x, &w, Some(&bias), &got);
            // Matrix-vector products: A [600, 64] times a vector, a vector times B [64, 600].
            let (a, v) = (rand(&mut rng, &[600, 64], dtype), rand(&mut rng, &[64], dtype));
            let plan = matmul_plan(a.layout(), v.layout(), [dtype; 2]).unwrap();
            compare(&format!("{} {dtype} matrix-vector past a binding", name(ctx)), &plan, &a, &v, None, &up(&a).matmul(&up(&v)).unwrap().download().unwrap());
            // Batched A and B, each matrix of A past a binding: runs of rows measured an
            // alignment below the limit (another batch's window is aligned down from its own
            // offset: a run that fit batch 0 exactly passed the binding in batch 1).
            for (m, k) in [(300, 127), (520, 35)] {
                let (a, b) = (rand(&mut rng, &[2, m, k], dtype), rand(&mut rng, &[2, k, 24], dtype));
                let plan = matmul_plan(a.layout(), b.layout(), [dtype; 2]).unwrap();
                compare(&format!("{} {dtype} bmm [2, {m}, {k}] past a binding", name(ctx)), &plan, &a, &b, None, &up(&a).bmm(&up(&b)).unwrap().download().unwrap());
            }
            // A vector times a weight's transpose (`linear` of one row by [600, 64]: the
            // product runs transposed, over the weight's rows).
            let (h, w) = (rand(&mut rng, &[1, 64], dtype), rand(&mut rng, &[600, 64], dtype));
            let plan = linear_plan(h.layout(), w.layout(), None, [Some(dtype), Some(dtype), None]).unwrap();
            compare(&format!("{} {dtype} vector-matrix past a binding", name(ctx)), &plan, &h, &w, None, &up(&h).linear(&up(&w), None).unwrap().download().unwrap());
            // B = W.T of a weight W past a binding (W [600, 64], 150 KiB in f32): runs of
            // columns (was an Error::Limit), with runs of rows within them where A and the
            // output pass a binding too (A [300, 64], output [300, 600]): `linear` with a bias,
            // `matmul` of the transposed view and `addmm` into a C of the output's shape.
            let (wt, x) = (rand(&mut rng, &[600, 64], dtype), rand(&mut rng, &[8, 64], dtype));
            let bias = rand(&mut rng, &[600], dtype);
            for (what, x) in [("8 rows", &x), ("300 rows", &store)] {
                let what = format!("{} {dtype} W.T past a binding, {what}", name(ctx));
                let plan = linear_plan(x.layout(), wt.layout(), Some(bias.layout()), [Some(dtype); 3]).unwrap();
                compare(&format!("{what}, linear"), &plan, x, &wt, Some(&bias), &up(x).linear(&up(&wt), Some(&up(&bias))).unwrap().download().unwrap());
                let wc = wt.transpose(0, 1).unwrap().contiguous(MemoryFormat::Contiguous).unwrap();
                let plan = matmul_plan(x.layout(), wc.layout(), [dtype; 2]).unwrap();
                let dw = up(&wt).transpose(0, 1).unwrap();
                compare(&format!("{what}, matmul"), &plan, x, &wc, None, &up(x).matmul(&dw).unwrap().download().unwrap());
                let c = rand(&mut rng, &[x.layout().shape()[0], 600], dtype);
                let plan = addmm_plan(c.layout(), x.layout(), wc.layout(), 0.5, 2.0, [dtype; 3]).unwrap();
                compare(&format!("{what}, addmm"), &plan, x, &wc, Some(&c), &up(&c).addmm(&up(x), &dw, 0.5, 2.0).unwrap().download().unwrap());
            }
            // A matrix whose every row spans past a binding (a transposed view of a [64, 300]
            // store): rows do not help, an Error::Limit.
            let st = up(&rand(&mut rng, &[64, 300], dtype)).transpose(0, 1).unwrap();
            let r = st.matmul(&up(&b));
            assert!(matches!(r, Err(Error::Limit { .. })) || dtype != DType::F32, "{} {dtype}: {r:?}", name(ctx));
        }
    }
}

#[test]
fn tuning_measures_only_when_asked() {
    for shared in contexts() {
        // A context of its own: the policy and the kept choices are the context's.
        let own = limited(shared, |l| l);
        let ctx = &own;
        let mut rng = Rng(14);
        let a = DeviceTensor::upload(ctx, &rand(&mut rng, &[1, 96], DType::F32)).unwrap();
        let b = DeviceTensor::upload(ctx, &rand(&mut rng, &[96, 80], DType::F32)).unwrap();
        // The default policy: a call runs the default kernel and keeps nothing.
        let default = ctx.matmul_default(&a, &b).unwrap();
        assert_eq!(ctx.matmul_choice_of(&a, &b).unwrap(), default);
        // The same of 16-bit operands, which a CPU adapter runs widened to f32 on the f32
        // class's default where that is a CPU kernel (a [256, 256] square: `Conv1x1` there).
        let mut halves = Vec::new();
        for dtype in [DType::F16, DType::BF16] {
            let h = DeviceTensor::upload(ctx, &rand(&mut rng, &[256, 256], dtype)).unwrap();
            assert_eq!(ctx.matmul_default(&h, &h).unwrap(), ctx.matmul_choice_of(&h, &h).unwrap(), "{}: {dtype}", name(ctx));
            let bits = common::elementwise::bits(&h.matmul(&h).unwrap().download().unwrap());
            let kernel = ctx.matmul_choice_of(&h, &h).unwrap();
            halves.push((h, kernel, bits));
        }
        // The f32 class of that square given another kernel (a tuning file's, every candidate
        // but its default in turn) leaves the 16-bit calls as they were: their kernel and bits
        // are their own class's (it widened on the f32 class's kept choice, which changed them).
        let sq = DeviceTensor::upload(ctx, &rand(&mut rng, &[256, 256], DType::F32)).unwrap();
        let probe = limited(shared, |l| l);
        let sq_probe = DeviceTensor::upload(&probe, &sq.download().unwrap()).unwrap();
        probe.tune_matmul(&sq_probe, &sq_probe).unwrap();
        let (class, _) = probe.tuned_matmul_choices().into_iter().next().unwrap();
        let f32_default = ctx.matmul_default(&sq, &sq).unwrap();
        for other in class.kernels.iter().filter(|&&k| k != f32_default) {
            let mut file: serde_json::Value = serde_json::from_str(&probe.tuning_json("").unwrap()).unwrap();
            for choice in file[0]["choices"]["matmul"].as_object_mut().unwrap().values_mut() {
                *choice = serde_json::Value::String(serde_json::to_string(other).unwrap());
            }
            let edited = limited(shared, |l| l);
            assert_eq!(edited.load_tuning_json(&file.to_string()).unwrap(), 1);
            let sq_e = DeviceTensor::upload(&edited, &sq.download().unwrap()).unwrap();
            assert_eq!(edited.matmul_choice_of(&sq_e, &sq_e).unwrap(), *other);
            for (h, kernel, bits) in &halves {
                let he = DeviceTensor::upload(&edited, &h.download().unwrap()).unwrap();
                assert_eq!(edited.matmul_choice_of(&he, &he).unwrap(), *kernel, "{}: {} after the f32 class took {other:?}", name(ctx), h.dtype());
                assert_eq!(&common::elementwise::bits(&he.matmul(&he).unwrap().download().unwrap()), bits, "{}: {} bits after the f32 class took {other:?}", name(ctx), h.dtype());
            }
        }
        a.matmul(&b).unwrap();
        assert!(ctx.tuned_matmul_choices().is_empty(), "{}: a call measured under the default policy", name(ctx));
        // Asked to, the tuner measures the class's candidates once and keeps one of them.
        assert!(ctx.tune_matmul(&a, &b).unwrap());
        assert!(!ctx.tune_matmul(&a, &b).unwrap(), "a tuned class measures again");
        let kept = ctx.tuned_matmul_choices();
        assert_eq!(kept.len(), 1);
        assert!(kept[0].0.kernels.contains(&kept[0].1));
        assert_eq!(ctx.matmul_choice_of(&a, &b).unwrap(), kept[0].1);
        // Under OnFirstCall the first call of a new class measures.
        ctx.set_tuning_policy(strided_wgpu::TuningPolicy::OnFirstCall);
        let c = DeviceTensor::upload(ctx, &rand(&mut rng, &[40, 1], DType::F32)).unwrap();
        let bt = DeviceTensor::upload(ctx, &rand(&mut rng, &[7, 40], DType::F32)).unwrap();
        bt.matmul(&c).unwrap();
        ctx.set_tuning_policy(strided_wgpu::TuningPolicy::Defaults);
        assert_eq!(ctx.tuned_matmul_choices().len(), 2, "{}: the first call did not measure", name(ctx));

        // A product into an `out=` view measures that output's class, the one its calls look
        // up (a transposed out stops the batch folding into m), not the contiguous output's
        // (which it measured before, its own class then running the default): a fresh
        // context's first call keeps a class other than a plain call's, the same call again
        // measures nothing, and the result is the product.
        let (xh, wh) = (rand(&mut rng, &[4, 16, 64], DType::F32), rand(&mut rng, &[64, 48], DType::F32));
        let first_class = |into_view: bool| {
            let fresh = limited(shared, |l| l);
            fresh.set_tuning_policy(strided_wgpu::TuningPolicy::OnFirstCall);
            let (x, w) = (DeviceTensor::upload(&fresh, &xh).unwrap(), DeviceTensor::upload(&fresh, &wh).unwrap());
            let call = || {
                if into_view {
                    let out = DeviceTensor::empty(&fresh, &[16, 4, 48], DType::F32, MemoryFormat::Contiguous).unwrap().transpose(0, 1).unwrap();
                    x.matmul_out(&w, &out).unwrap();
                    out
                } else {
                    x.matmul(&w).unwrap()
                }
            };
            let y = call();
            let kept = fresh.tuned_matmul_choices();
            call();
            assert_eq!(fresh.tuned_matmul_choices().len(), kept.len(), "{}: the same call measured again (into a view: {into_view})", name(ctx));
            let want = xh.matmul(&wh).unwrap().to_vec::<f32>().unwrap();
            let got = y.download().unwrap().contiguous(MemoryFormat::Contiguous).unwrap().to_vec::<f32>().unwrap();
            assert!(got.len() == want.len() && got.iter().zip(&want).all(|(g, w)| (g - w).abs() <= 1e-4 * (1.0 + w.abs())), "{}: into a view: {into_view}", name(ctx));
            kept
        };
        let (plain, viewed) = (first_class(false), first_class(true));
        assert_eq!((plain.len(), viewed.len()), (1, 1), "{}: each first call measured its class", name(ctx));
        assert_ne!(plain[0].0, viewed[0].0, "{}: the out= view's call measured the contiguous output's class", name(ctx));
    }
}

/// A view made the same way of a host tensor and of its device copy.
type ViewFn = fn(&HostTensor) -> HostTensor;

/// A Blocked case: A's stored shape and view, B's, and the bias length (linear with ReLU).
type BlockedCase = (Vec<usize>, ViewFn, Vec<usize>, ViewFn, Option<usize>);

/// The Blocked kernel with an addend of any strides (beta == 1, alpha == 1): where the output's
/// columns have unit stride it starts the output as a copy of C (full, per row, per column,
/// transposed), and those products match the reference; where they do not (a transposed out),
/// or beta != 1, a forced Blocked is Error::Unsupported, nothing written. Grouped 1x1
/// convolutions (tests/device_conv.rs) take this path with their bias per group.
#[test]
fn blocked_kernel_takes_any_addend_along_n() {
    let (m, n, k) = (37, 45, 70);
    for ctx in contexts() {
        let mut rng = Rng(21);
        let subgroups = ctx.adapter().device_type == wgpu::DeviceType::Cpu && ctx.adapter().backend == wgpu::Backend::Vulkan;
        let (h1, h2) = (rand(&mut rng, &[m, k], DType::F32), rand(&mut rng, &[k, n], DType::F32));
        let (d1, d2) = (DeviceTensor::upload(ctx, &h1).unwrap(), DeviceTensor::upload(ctx, &h2).unwrap());
        let full = rand(&mut rng, &[m, n], DType::F32);
        let stored_t = rand(&mut rng, &[n, m], DType::F32);
        let inputs = [full.clone(), rand(&mut rng, &[m, 1], DType::F32), rand(&mut rng, &[1, n], DType::F32), stored_t.transpose(0, 1).unwrap()];
        for (ii, hi) in inputs.iter().enumerate() {
            let di = if ii == 3 { DeviceTensor::upload(ctx, &stored_t).unwrap().transpose(0, 1).unwrap() } else { DeviceTensor::upload(ctx, hi).unwrap() };
            for (beta, transposed) in [(1.0, false), (1.0, true), (0.5, false)] {
                let plan = addmm_plan(hi.layout(), h1.layout(), h2.layout(), beta, 1.0, [DType::F32; 3]).unwrap();
                let sevens = |shape: &[usize]| DeviceTensor::upload(ctx, &HostTensor::from_vec(vec![7.0f32; m * n], shape).unwrap()).unwrap();
                let out = if transposed { sevens(&[n, m]).transpose(0, 1).unwrap() } else { sevens(&[m, n]) };
                let mut batch = ctx.batch();
                let r = batch.run_plan_with(&plan, &d1, &d2, Some(&di), &out, MatmulKernel::Blocked);
                let what = format!("{} Blocked addend {ii} beta {beta} transposed out {transposed}", name(ctx));
                // Along m the kernel adds a bias per output only: C the same for every row.
                let per_column = ii == 2;
                if !subgroups || beta != 1.0 || (transposed && !per_column) {
                    assert!(matches!(r, Err(Error::Unsupported { .. })), "{what}: {r:?}");
                    batch.submit_and_wait().unwrap();
                    assert!(out.download().unwrap().to_vec::<f32>().unwrap().iter().all(|&v| v == 7.0), "{what}: written");
                    continue;
                }
                r.unwrap();
                batch.submit_and_wait().unwrap();
                compare_abs(&what, &plan, [&h1, &h2], Some(hi), None, &out.download().unwrap());
            }
        }
    }
}

/// The Blocked kernel (one dispatch over the batch, CPU adapters with subgroups) at its edges:
/// reductions over one chunk (k = 65, 130: partial last chunk) and of one step, rows and
/// columns no multiple of 4 or of a unit, a 1 x 1 output, a batch stride 0 (a broadcast right
/// operand, packed once), negative steps, a bias with ReLU in both orientations, operands moved
/// as vec4 words, a transposed operand read as words along the reduction, weights read in
/// place, units of two tiles, more than 65,535 workgroups, and two batch levels (three are
/// Error::Unsupported, the output untouched; `matmul` over permuted attention heads takes
/// Blocked by default). Elsewhere a forced Blocked is Error::Unsupported.
#[test]
fn blocked_kernel_edges() {
    fn same<T: Strided>(t: &T, f: fn(&HostTensor) -> HostTensor) -> Result<T, Error> {
        // Applies the host view's layout to `t` (same storage shape).
        let probe = HostTensor::zeros(&[t.storage_len()], DType::F32, MemoryFormat::Contiguous)
            .unwrap()
            .as_strided(t.shape(), t.strides(), t.storage_offset())
            .unwrap();
        let v = f(&probe);
        t.as_strided(v.shape(), v.strides(), v.storage_offset())
    }
    let id: ViewFn = |t| t.clone();
    let flip: ViewFn = |t| t.flip(0).unwrap().flip(1).unwrap();
    let tr: ViewFn = |t| t.transpose(1, 2).unwrap();
    let bcast: ViewFn = |t| t.expand(&[4, -1, -1]).unwrap();
    let narrow_tr: ViewFn = |t| t.narrow(2, 0, t.shape()[2] - 2).unwrap().transpose(1, 2).unwrap();
    let lead3: ViewFn = |t| t.unsqueeze(0).unwrap().expand(&[3, -1, -1, -1]).unwrap();
    let inner2: ViewFn = |t| t.unsqueeze(1).unwrap().expand(&[-1, 2, -1, -1]).unwrap();
    let flip0: ViewFn = |t| t.flip(0).unwrap();
    let flip1: ViewFn = |t| t.flip(1).unwrap();
    // (a stored shape, its view, b stored shape, its view, bias length: linear with ReLU)
    let cases: Vec<BlockedCase> = vec![
        (vec![3, 70, 65], id, vec![3, 65, 37], id, None),
        (vec![2, 9, 130], flip, vec![2, 130, 6], flip, None),
        (vec![4, 20, 33], tr, vec![1, 20, 9], bcast, None),
        (vec![5, 1, 1], id, vec![5, 1, 1], id, None),
        (vec![2, 8, 16], id, vec![2, 16, 12], id, None),
        // A read in place over two chunks, its rows 32 vec4 words apart.
        (vec![2, 9, 128], id, vec![2, 128, 12], id, None),
        (vec![2, 37, 70], id, vec![45, 70], id, Some(45)),
        // A transposed right operand whose reduction is unit-stride 16-byte words (XT: a quad
        // of 4 steps x 4 columns loads as 4 words), over one and two chunks, and linear's
        // weight with a bias; a reduction of 66 (not whole words) loads as before, from rows 68
        // apart or 66 apart.
        (vec![3, 20, 64], id, vec![3, 36, 64], tr, None),
        (vec![2, 9, 128], id, vec![2, 12, 128], tr, None),
        (vec![2, 37, 68], id, vec![45, 68], id, Some(45)),
        (vec![2, 5, 66], id, vec![2, 7, 68], narrow_tr, None),
        (vec![2, 5, 66], id, vec![2, 7, 66], tr, None),
        // Batches enough for units of two tiles (TILES = 2: 128 pixels a unit), the last unit
        // short: pixels along n as vec4 words (132: the second unit's second tile empty), and
        // along m (n == 1; 200: the second unit's second tile partial) read as XT words.
        (vec![64, 9, 33], id, vec![64, 33, 132], id, None),
        (vec![64, 200, 20], id, vec![64, 20, 1], id, None),
        // Two tiles with scalar loads along n; and (transposed out: 65 matrices of 100 rows,
        // 65 units, 7 of them padding) two chunks (MODE 1 then 2), a bias with ReLU, and one
        // weight for every batch matrix. These rely on MIN_UNITS = 64 in blocked.rs.
        (vec![64, 33, 9], tr, vec![64, 132, 33], tr, None),
        (vec![65, 100, 70], id, vec![72, 70], id, Some(72)),
        // Two batch levels (dims that do not merge): batch matrix z is (z / inner, z % inner),
        // each operand with its own strides at each level. A weight moving at both levels
        // (packed: k = 33; in place: k = 64), one repeating over the outer level (in place), one
        // repeating over the inner level (packed once per outer matrix), the other operand
        // repeating; a negative outer stride in one operand and a negative inner one in the
        // other; pixels along m (n == 1).
        (vec![3, 2, 9, 33], id, vec![2, 33, 12], lead3, None),
        (vec![3, 4, 20, 64], id, vec![4, 64, 16], lead3, None),
        (vec![4, 20, 64], lead3, vec![3, 4, 64, 16], id, None),
        (vec![3, 9, 33], inner2, vec![3, 2, 33, 12], id, None),
        (vec![2, 3, 9, 40], flip0, vec![2, 3, 40, 8], flip1, None),
        (vec![3, 2, 50, 20], id, vec![2, 20, 1], lead3, None),
    ];
    for ctx in contexts() {
        let mut rng = Rng(15);
        let subgroups = ctx.adapter().device_type == wgpu::DeviceType::Cpu
            && ctx.adapter().backend == wgpu::Backend::Vulkan;
        for (ci, (sa, va, sb, vb, bias)) in cases.iter().enumerate() {
            let (ha, hb) = (
                rand(&mut rng, sa, DType::F32),
                rand(&mut rng, sb, DType::F32),
            );
            let (da, db) = (
                DeviceTensor::upload(ctx, &ha).unwrap(),
                DeviceTensor::upload(ctx, &hb).unwrap(),
            );
            // The absolute values (the tolerance's scale) through the same views.
            let abs = |t: &HostTensor| t.abs().unwrap();
            let abs_ops = [va(&abs(&ha)), vb(&abs(&hb))];
            let (ha, hb, da, db) = (
                va(&ha),
                vb(&hb),
                same(&da, *va).unwrap(),
                same(&db, *vb).unwrap(),
            );
            let hc = bias.map(|n| rand(&mut rng, &[n], DType::F32));
            let dc = hc.as_ref().map(|c| DeviceTensor::upload(ctx, c).unwrap());
            let plan = match &hc {
                Some(c) => linear_plan(
                    ha.layout(),
                    hb.layout(),
                    Some(c.layout()),
                    [Some(DType::F32); 3],
                )
                .unwrap()
                .with_activation(Activation::Relu),
                None => matmul_plan(ha.layout(), hb.layout(), [DType::F32; 2]).unwrap(),
            };
            // The bias case also into a transposed out: the orientation with the rows as
            // pixels, the bias added per output (MODE 1) rather than copied in first.
            for transposed in [false, true] {
                if transposed && bias.is_none() {
                    continue;
                }
                let shape = &plan.out_shape;
                let out = if transposed {
                    let r = shape.len();
                    let mut s = shape.clone();
                    s.swap(r - 1, r - 2);
                    nan_out(ctx, &s, DType::F32).unwrap().transpose(-1, -2).unwrap()
                } else {
                    nan_out(ctx, shape, DType::F32).unwrap()
                };
                let mut batch = ctx.batch();
                let r = batch.run_plan_with(&plan, &da, &db, dc.as_ref(), &out, MatmulKernel::Blocked);
                if !subgroups {
                    assert!(matches!(r, Err(Error::Unsupported { .. })), "{}: {r:?}", name(ctx));
                    continue;
                }
                r.unwrap();
                batch.submit_and_wait().unwrap();
                let abs_ops = abs_ops.iter().cloned().chain(hc.as_ref().map(abs)).collect::<Vec<_>>();
                compare_abs(&format!("{} Blocked case {ci} transposed out {transposed}", name(ctx)), &plan, [&ha, &hb], hc.as_ref(), Some(&abs_ops), &out.download().unwrap());
            }
        }
        // A 16-bit product of 2^22 multiply-adds on a CPU adapter runs widened to f32 through
        // the f32 CPU-adapter kernels (Blocked where subgroups allow, else Conv1x1).
        for dtype in [DType::F16, DType::BF16] {
            let (ha, hb) = (rand(&mut rng, &[4, 128, 64], dtype), rand(&mut rng, &[4, 64, 128], dtype));
            let (da, db) = (DeviceTensor::upload(ctx, &ha).unwrap(), DeviceTensor::upload(ctx, &hb.transpose(1, 2).unwrap().contiguous(MemoryFormat::Contiguous).unwrap()).unwrap().transpose(1, 2).unwrap());
            let cpu = ctx.adapter().device_type == wgpu::DeviceType::Cpu;
            let want = if subgroups { MatmulKernel::Blocked } else { MatmulKernel::Conv1x1 };
            assert!(!cpu || ctx.matmul_choice_of(&da, &db).unwrap() == want, "{}: {dtype} choice", name(ctx));
            let plan = matmul_plan(ha.layout(), hb.layout(), [dtype; 2]).unwrap();
            compare(&format!("{} {dtype} widened", name(ctx)), &plan, &ha, &hb, None, &da.bmm(&db).unwrap().download().unwrap());
        }
        // Attention scores over heads reached by permuting (2^23 multiply-adds, batch dims that
        // do not merge): `matmul`'s default on a CPU adapter with subgroups is Blocked, over two
        // batch levels.
        let (hq, hk) = (rand(&mut rng, &[2, 128, 4, 64], DType::F32), rand(&mut rng, &[2, 128, 4, 64], DType::F32));
        let (q, k) = (hq.permute(&[0, 2, 1, 3]).unwrap(), hk.permute(&[0, 2, 3, 1]).unwrap());
        let (dq, dk) = (DeviceTensor::upload(ctx, &hq).unwrap().permute(&[0, 2, 1, 3]).unwrap(), DeviceTensor::upload(ctx, &hk).unwrap().permute(&[0, 2, 3, 1]).unwrap());
        assert!(!subgroups || ctx.matmul_choice_of(&dq, &dk).unwrap() == MatmulKernel::Blocked, "{}: heads choice", name(ctx));
        let plan = matmul_plan(q.layout(), k.layout(), [DType::F32; 2]).unwrap();
        compare(&format!("{} heads", name(ctx)), &plan, &q, &k, None, &dq.matmul(&dk).unwrap().download().unwrap());
        if subgroups {
            // 530,000 products of [1, 1] x [1, 2]: more than 65,535 workgroups of 8 units.
            let a = rand(&mut rng, &[530_000, 1, 1], DType::F32);
            let b = rand(&mut rng, &[530_000, 1, 2], DType::F32);
            let (da, db) = (
                DeviceTensor::upload(ctx, &a).unwrap(),
                DeviceTensor::upload(ctx, &b).unwrap(),
            );
            let plan = matmul_plan(a.layout(), b.layout(), [DType::F32; 2]).unwrap();
            let out =
                nan_out(ctx, &plan.out_shape, DType::F32)
                    .unwrap();
            let mut batch = ctx.batch();
            batch
                .run_plan_with(&plan, &da, &db, None, &out, MatmulKernel::Blocked)
                .unwrap();
            batch.submit_and_wait().unwrap();
            compare(
                &format!("{} Blocked 530000 batches", name(ctx)),
                &plan,
                &a,
                &b,
                None,
                &out.download().unwrap(),
            );
            // Three batch levels that do not merge (the middle one flipped): Unsupported,
            // naming the reason, the output untouched.
            let a = rand(&mut rng, &[2, 3, 4, 5, 6], DType::F32).flip(1).unwrap();
            let b = rand(&mut rng, &[2, 3, 4, 6, 7], DType::F32);
            let da = DeviceTensor::upload(ctx, &a.flip(1).unwrap()).unwrap().flip(1).unwrap();
            let db = DeviceTensor::upload(ctx, &b).unwrap();
            let plan = matmul_plan(a.layout(), b.layout(), [DType::F32; 2]).unwrap();
            let n: usize = plan.out_shape.iter().product();
            let out = DeviceTensor::from_slice(ctx, &vec![7.0f32; n], &plan.out_shape).unwrap();
            let mut batch = ctx.batch();
            let r = batch.run_plan_with(&plan, &da, &db, None, &out, MatmulKernel::Blocked);
            assert!(matches!(&r, Err(Error::Unsupported { detail, .. }) if detail.contains("two batch dims at most")), "{}: {r:?}", name(ctx));
            batch.submit_and_wait().unwrap();
            assert!(out.download().unwrap().to_vec::<f32>().unwrap().iter().all(|&v| v == 7.0), "{}: output written", name(ctx));
        }
    }
}

/// The matrix-vector kernels on rows long enough for every step of their loops (the GPU kernel
/// reads four 16-byte words per lane and step, then one a step, then the tail: 16-bit rows
/// need k >= 392 for the four-word step): m == 1 and n == 1, rows whose
/// words are aligned (a row stride that is a multiple of 4, from element 0 or 4; k a multiple
/// of 4 or not, so that the word loop is followed by a tail) or not (an odd stride, or from
/// element 1), the vector contiguous or strided; float32, and float16 and bfloat16 (whose words
/// hold 8 elements: row strides and starts that are multiples of 8).
#[test]
fn matrix_vector_kernels_on_long_rows() {
    for ctx in contexts() {
        let mut rng = Rng(17);
        // (k, row stride, type)
        let cases = [(300usize, 300usize), (132, 132), (301, 304), (7, 8), (301, 301), (7, 7), (296, 296), (300, 304), (1000, 1000), (1027, 1032)];
        for (k, ks, dtype) in cases.iter().flat_map(|&(k, ks)| [DType::F32, DType::F16, DType::BF16].map(|d| (k, ks, d))) {
            for start in [0usize, 1, 4, 8] {
                for m_is_1 in [true, false] {
                    for strided_vector in [false, true] {
                        // The matrix: 7 rows (or 1: m == n == 1, a dot product; or 150 where
                        // the start is 0 or 1: several workgroups, the last partial, and every
                        // row of a one-lane team of 16, 16-bit types, or 8) of k elements, ks
                        // apart, from `start` of a flat buffer (B = W^T for m == 1, A for n ==
                        // 1); the vector every element or every second one. The same views of
                        // the absolute values scale the tolerance.
                        for rows in [7usize, 1, 150].into_iter().filter(|&r| r != 150 || start <= 1) {
                            let flat = rand(&mut rng, &[start + rows * ks], dtype);
                            let vbase = rand(&mut rng, &[2 * k], dtype);
                            let views = |flat: &HostTensor, vbase: &HostTensor| -> (HostTensor, HostTensor) {
                                let mat = flat.narrow(0, start as isize, rows * ks).unwrap().view(&[rows as isize, ks as isize]).unwrap().narrow(1, 0, k).unwrap();
                                let vec = if strided_vector { vbase.view(&[k as isize, 2]).unwrap().select(1, 1).unwrap() } else { vbase.narrow(0, 0, k).unwrap() };
                                if m_is_1 {
                                    (vec.view(&[1, k as isize]).unwrap(), mat.transpose(0, 1).unwrap())
                                } else {
                                    (mat, vec.view(&[k as isize, 1]).unwrap())
                                }
                            };
                            let (a, b) = views(&flat, &vbase);
                            let (aa, ab) = views(&flat.abs().unwrap(), &vbase.abs().unwrap());
                            let up = |h: &HostTensor, base: &HostTensor| DeviceTensor::upload(ctx, base).unwrap().as_strided(h.shape(), h.strides(), h.storage_offset()).unwrap();
                            let (da, db) = if m_is_1 { (up(&a, &vbase), up(&b, &flat)) } else { (up(&a, &flat), up(&b, &vbase)) };
                            let plan = matmul_plan(a.layout(), b.layout(), [dtype; 2]).unwrap();
                            for kernel in [MatmulKernel::Vec1, MatmulKernel::Vec16] {
                                let out = nan_out(ctx, &plan.out_shape, dtype).unwrap();
                                let mut batch = ctx.batch();
                                batch.run_plan_with(&plan, &da, &db, None, &out, kernel).unwrap();
                                batch.submit_and_wait().unwrap();
                                let what = format!("{} {kernel:?} {dtype} {rows} rows k={k} row stride {ks} start={start} m==1: {m_is_1} strided vector: {strided_vector}", name(ctx));
                                compare_abs(&what, &plan, [&a, &b], None, Some(&[aa.clone(), ab.clone()]), &out.download().unwrap());
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The matrix-vector kernels with an addend, m == 1 (recorded as the transposed product, so the
/// addend and the output are read and written through swapped strides) and n == 1: `linear`
/// of one row with a bias and ReLU, `linear` onto one output feature, and `addmm` with a [1, n]
/// input scaled by beta; float32 and float16.
#[test]
fn matrix_vector_kernels_with_an_addend() {
    for ctx in contexts() {
        let mut rng = Rng(29);
        for dtype in [DType::F32, DType::F16] {
            let up = |h: &HostTensor| DeviceTensor::upload(ctx, h).unwrap();
            let cases: Vec<(MatmulPlan, Vec<HostTensor>)> = {
                let (x1, w1, b1) = (rand(&mut rng, &[1, 37], dtype), rand(&mut rng, &[20, 37], dtype), rand(&mut rng, &[20], dtype));
                let (x2, w2, b2) = (rand(&mut rng, &[20, 37], dtype), rand(&mut rng, &[1, 37], dtype), rand(&mut rng, &[1], dtype));
                let (i3, a3, m3) = (rand(&mut rng, &[1, 24], dtype), rand(&mut rng, &[1, 40], dtype), rand(&mut rng, &[40, 24], dtype));
                vec![
                    (linear_plan(x1.layout(), w1.layout(), Some(b1.layout()), [Some(dtype); 3]).unwrap().with_activation(Activation::Relu), vec![x1, w1, b1]),
                    (linear_plan(x2.layout(), w2.layout(), Some(b2.layout()), [Some(dtype); 3]).unwrap(), vec![x2, w2, b2]),
                    (addmm_plan(i3.layout(), a3.layout(), m3.layout(), 0.5, 2.0, [dtype; 3]).unwrap(), vec![a3, m3, i3]),
                ]
            };
            for (i, (plan, h)) in cases.iter().enumerate() {
                let d: Vec<DeviceTensor> = h.iter().map(up).collect();
                for kernel in [MatmulKernel::Vec1, MatmulKernel::Vec16] {
                    let out = nan_out(ctx, &plan.out_shape, dtype).unwrap();
                    let mut batch = ctx.batch();
                    batch.run_plan_with(plan, &d[0], &d[1], Some(&d[2]), &out, kernel).unwrap();
                    batch.submit_and_wait().unwrap();
                    compare(&format!("{} case {i} {kernel:?} {dtype}", name(ctx)), plan, &h[0], &h[1], Some(&h[2]), &out.download().unwrap());
                }
            }
        }
    }
}

/// `addmm_act`: the residual and the activation in the product's epilogue, on both adapters and
/// through every kernel the automatic choice may take (small and large, f32 and f16): with ReLU
/// equal bit for bit to the device's own `addmm` then `relu_`; host and device forms agree with
/// the CPU reference.
#[test]
fn addmm_with_an_activation_equals_addmm_then_the_activation() {
    let mut rng = Rng(0xadd_ac7);
    for ctx in contexts() {
        for (m, k, n, dtype) in [(5, 7, 3, DType::F32), (64, 96, 80, DType::F32), (300, 128, 200, DType::F32), (33, 40, 17, DType::F16)] {
            let (hc, hc_abs, dc) = operand(&mut rng, ctx, &[m, n], dtype);
            let (ha, ha_abs, da) = operand(&mut rng, ctx, &[m, k], dtype);
            let (hb, hb_abs, db) = operand(&mut rng, ctx, &[k, n], dtype);
            let fused = dc.addmm_act(&da, &db, 1.0, 1.0, Activation::Relu).unwrap();
            let unfused = dc.addmm(&da, &db, 1.0, 1.0).unwrap();
            unfused.relu_().unwrap();
            let bits = |t: &DeviceTensor| t.download().unwrap().to(DType::F32).unwrap().to_vec::<f32>().unwrap().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&fused), bits(&unfused), "{} {m}x{k}x{n} {dtype}", name(ctx));
            let host = hc.addmm_act(&ha, &hb, 1.0, 1.0, Activation::Relu).unwrap();
            let want = hc.addmm(&ha, &hb, 1.0, 1.0).unwrap().relu().unwrap();
            assert_eq!(host.to(DType::F32).unwrap().to_vec::<f32>().unwrap(), want.to(DType::F32).unwrap().to_vec::<f32>().unwrap(), "host {m}x{k}x{n} {dtype}");
            let plan = addmm_plan(hc.layout(), ha.layout(), hb.layout(), 1.0, 1.0, [dtype; 3]).unwrap().with_activation(Activation::Relu);
            compare_abs(&format!("{} addmm_act {m}x{k}x{n} {dtype}", name(ctx)), &plan, [&ha, &hb], Some(&hc), Some(&[ha_abs, hb_abs, hc_abs]), &fused.download().unwrap());
        }
    }
}

/// A 16-bit `linear_act` / `addmm_act` with GELU is PyTorch's `F.gelu(F.linear(..))`: the
/// product rounded to its type, then the activation rounded again. bfloat16 [[1, 1]] x
/// [[1, 2^-8]]^T is 1.00390625, a tie that rounds to 1.0, whose GELU is 0.83984375 (rounding
/// once gave gelu(1.0039) = 0.84375); float16's tie 1 + 2^-11 alike. Host and every adapter,
/// against the composed ops bit for bit, every kernel that runs the plan.
#[test]
fn sixteen_bit_gelu_rounds_the_product_first_as_pytorch() {
    for (dtype, tiny) in [(DType::BF16, 2f32.powi(-8)), (DType::F16, 2f32.powi(-11))] {
        let hx = HostTensor::from_vec(vec![1f32, 1.0, 0.5, 0.5], &[2, 2]).unwrap().to(dtype).unwrap();
        let hw = HostTensor::from_vec(vec![1f32, tiny, -1.0, tiny], &[2, 2]).unwrap().to(dtype).unwrap();
        let composed = common::elementwise::bits(&hx.linear(&hw, None).unwrap().gelu().unwrap());
        let fused = common::elementwise::bits(&hx.linear_act(&hw, None, Activation::Gelu).unwrap());
        assert_eq!(fused, composed, "{dtype}: the host's fused GELU against the composed ops");
        if dtype == DType::BF16 {
            assert_eq!(common::elementwise::value(dtype, fused[0]), 0.83984375, "bf16 gelu(round(1.00390625))");
        }
        let bias = HostTensor::from_vec(vec![0f32, 0.0], &[2]).unwrap().to(dtype).unwrap();
        let host_addmm = common::elementwise::bits(&bias.addmm(&hx, &hw.transpose(0, 1).unwrap(), 1.0, 1.0).unwrap().gelu().unwrap());
        for ctx in contexts() {
            let up = |t: &HostTensor| DeviceTensor::upload(ctx, t).unwrap();
            let (dx, dw, db) = (up(&hx), up(&hw), up(&bias));
            let got = common::elementwise::bits(&dx.linear_act(&dw, None, Activation::Gelu).unwrap().download().unwrap());
            assert_eq!(got, composed, "{} {dtype}: linear_act", name(ctx));
            let got = common::elementwise::bits(&db.addmm_act(&dx, &dw.transpose(0, 1).unwrap(), 1.0, 1.0, Activation::Gelu).unwrap().download().unwrap());
            assert_eq!(got, host_addmm, "{} {dtype}: addmm_act", name(ctx));
            let plan = linear_plan(hx.layout(), hw.layout(), None, [Some(dtype), Some(dtype), None]).unwrap().with_activation(Activation::Gelu);
            let ran = on_each_kernel(ctx, &plan, &dx, &dw);
            for (kernel, got) in &ran {
                assert_eq!(got, &composed, "{} {dtype} {kernel:?}", name(ctx));
            }
            assert!(ran.len() >= 2, "{} {dtype}: {} kernels ran the plan", name(ctx), ran.len());
        }
    }
}

/// GELU in the products' epilogues where erfc's value falls below f32's normal range before
/// the result does (-9 to -14: a flushed subnormal made it -0.0 on GPUs and lavapipe), on every
/// kernel that runs the plan, f32 (the 16-bit types: the product, then the elementwise `gelu`,
/// whose own test covers that range), against the host's.
#[test]
fn gelu_epilogues_keep_results_below_the_exponentials_range() {
    let xs = [-9.5f32, -10.0625, -12.0, -13.0625, -13.125, -14.0, -0.5, 2.0];
    for dtype in [DType::F32, DType::BF16, DType::F16] {
        let ha = HostTensor::from_vec(xs.to_vec(), &[8, 1]).unwrap().to(dtype).unwrap();
        let hb = HostTensor::from_vec(vec![1f32; 16], &[1, 16]).unwrap().to(dtype).unwrap();
        let plan = matmul_plan(ha.layout(), hb.layout(), [dtype; 2]).unwrap().with_activation(Activation::Gelu);
        let want = common::elementwise::bits(&matmul_cpu(&plan, &ha, &hb, None).unwrap());
        // The host's results there are not zero (in f16 they are: below its range).
        assert!(dtype == DType::F16 || want.iter().take(5 * 16).all(|&b| common::elementwise::value(dtype, b) != 0.0), "{dtype}: the host's results are not zero");
        for ctx in contexts() {
            let (da, db) = (DeviceTensor::upload(ctx, &ha).unwrap(), DeviceTensor::upload(ctx, &hb).unwrap());
            for (kernel, got) in on_each_kernel(ctx, &plan, &da, &db) {
                for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
                    let (g, w) = (common::elementwise::value(dtype, g), common::elementwise::value(dtype, w));
                    // WGSL's exp is within 3 + 2|x| ulp: about 1e-5 of e^-43 (1e-4 allowed).
                    // A subnormal result may flush (README): within 2^-126.
                    let tol = (w.abs() * if dtype == DType::F32 { 1e-4 } else { 1e-2 }).max(if w.abs() < f32::MIN_POSITIVE as f64 { f32::MIN_POSITIVE as f64 } else { 0.0 });
                    assert!((g - w).abs() <= tol, "{} {kernel:?} {dtype}: output {i}: {g:e}, want {w:e}", name(ctx));
                }
            }
        }
    }
}

/// Split-K (`GemmSplit`): products with few tiles and k of 300 to 2048 (2 to 32 slices; a
/// captured product shows the sum dispatch): a `linear` with bias and GELU, a batched product
/// with a transposed B, f32 and f16. Each within the reference's tolerance, and a second run
/// equal to the first bit for bit (the slices are added in a fixed order).
#[test]
fn split_k_matches_the_reference_and_repeats_bit_for_bit() {
    for ctx in contexts() {
        let mut rng = Rng(0x5b1);
        for (i, (batch, m, n, k, dtype)) in [(0, 8, 1000, 512, DType::F32), (3, 16, 20, 300, DType::F32), (1, 64, 64, 2048, DType::F32), (0, 5, 70, 777, DType::F16)].into_iter().enumerate() {
            let what = format!("{} split case {i}: batch {batch} m={m} n={n} k={k} {dtype}", name(ctx));
            let (a, w) = if batch == 0 { (rand(&mut rng, &[m, k], dtype), rand(&mut rng, &[n, k], dtype)) } else { (rand(&mut rng, &[batch, m, k], dtype), rand(&mut rng, &[batch, n, k], dtype)) };
            let bias = rand(&mut rng, &[n], dtype);
            let (mut plan, b, c) = if batch == 0 {
                (linear_plan(a.layout(), w.layout(), Some(bias.layout()), [Some(dtype); 3]).unwrap(), w.clone(), Some(bias.clone()))
            } else {
                let wt = w.transpose(-1, -2).unwrap();
                (matmul_plan(a.layout(), wt.layout(), [dtype; 2]).unwrap(), wt, None)
            };
            if batch == 0 && dtype == DType::F32 {
                plan.activation = Activation::Gelu;
            }
            let up = |t: &HostTensor| DeviceTensor::upload(ctx, &t.contiguous(MemoryFormat::Contiguous).unwrap()).unwrap();
            let (da, dw, dc) = (up(&a), up(&w), c.as_ref().map(up));
            let db = if batch == 0 { dw } else { dw.transpose(-1, -2).unwrap() };
            let run = || {
                let out = nan_out(ctx, &plan.out_shape, plan.dtype).unwrap();
                let mut bt = ctx.batch();
                bt.run_plan_with(&plan, &da, &db, dc.as_ref(), &out, MatmulKernel::GemmSplit).unwrap();
                bt.submit_and_wait().unwrap();
                out.download().unwrap()
            };
            let got = run();
            compare(&what, &plan, &a, &b, c.as_ref(), &got);
            let graph = ctx
                .capture(&[&da], || {
                    let out = nan_out(ctx, &plan.out_shape, plan.dtype)?;
                    let mut bt = ctx.batch();
                    bt.run_plan_with(&plan, &da, &db, dc.as_ref(), &out, MatmulKernel::GemmSplit)?;
                    bt.submit()?;
                    Ok::<_, Error>(out)
                })
                .unwrap();
            assert!(graph.dispatches().iter().any(|(_, k)| k.starts_with("matmul_gemm_sum")), "{what}: no sum dispatch");
            let again = run();
            assert!(f64s(&got).iter().zip(f64s(&again)).all(|(p, q)| p.to_bits() == q.to_bits()), "{what}: a second run gave other bits");
        }
    }
}

/// The wide GEMM (`GemmWide`: 128 x 128 tiles of 8 x 8 register blocks, 128 x 64 or 64 x 128
/// where n or m is at most 64) against the 64 x 64 kernels: where it cuts its reduction (few
/// tiles, k >= 256: its capture shows a sum dispatch) the bits of `GemmSplit`, elsewhere those
/// of `Gemm`; on random products (views, broadcast batches, `linear` with bias and activation,
/// `addmm` with alpha and beta; f32, float16 and bfloat16) and on products of several wide tiles
/// with partial ones, cut and whole as the rule says; each also within the reference's
/// tolerance.
#[test]
fn wide_tiles_equal_the_64_tile_gemm_bit_for_bit() {
    for ctx in contexts() {
        let mut rng = Rng(0x1de);
        let bits = |t: &HostTensor| f64s(t).into_iter().map(f64::to_bits).collect::<Vec<u64>>();
        let mut cases: Vec<(String, Case)> = Vec::new();
        for i in 0..24 {
            let dtype = [DType::F32, DType::F16, DType::BF16][i % 3];
            cases.push((format!("random case {i} {dtype}"), random_case(&mut rng, ctx, dtype)));
        }
        let mut cut_expected = Vec::new();
        for (i, (m, n, k, dtype, cut)) in [(300, 200, 96, DType::F32, false), (130, 40, 700, DType::F32, true), (40, 150, 333, DType::F16, true), (129, 129, 17, DType::BF16, false)].into_iter().enumerate() {
            cut_expected.push((24 + i, cut));
            let (ha, aa, da) = operand(&mut rng, ctx, &[m, k], dtype);
            let (hw, aw, dw) = operand(&mut rng, ctx, &[n, k], dtype);
            let hb = rand(&mut rng, &[n], dtype);
            let ab = hb.to(DType::F32).unwrap().abs().unwrap().to(dtype).unwrap();
            let db = DeviceTensor::upload(ctx, &hb).unwrap();
            let plan = linear_plan(ha.layout(), hw.layout(), Some(hb.layout()), [Some(dtype); 3]).unwrap().with_activation(Activation::Relu);
            cases.push((format!("linear case {i} [{m}, {k}] x [{n}, {k}]^T {dtype}"), Case { plan, host: vec![ha, hw, hb], abs: vec![aa, aw, ab], dev: vec![da, dw, db] }));
        }
        for (ci, (what, case)) in cases.iter().enumerate() {
            let what = format!("{} {what} m={} n={} k={} batch={:?} op={}", name(ctx), case.plan.m, case.plan.n, case.plan.k, case.plan.batch, case.plan.op);
            let d = &case.dev;
            let graph = ctx
                .capture(&[&d[0]], || {
                    let out = nan_out(ctx, &case.plan.out_shape, case.plan.dtype)?;
                    let mut bt = ctx.batch();
                    bt.run_plan_with(&case.plan, &d[0], &d[1], d.get(2), &out, MatmulKernel::GemmWide)?;
                    bt.submit()?;
                    Ok::<_, Error>(out)
                })
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let cut = graph.dispatches().iter().any(|(_, k)| k.starts_with("matmul_gemm_sum"));
            if let Some(&(_, want)) = cut_expected.iter().find(|(i, _)| *i == ci) {
                assert_eq!(cut, want, "{what}: cut into slices");
            }
            let wide = run_device(ctx, &mut rng, case, MatmulKernel::GemmWide).unwrap_or_else(|e| panic!("{what}: {e}"));
            let twin = run_device(ctx, &mut rng, case, if cut { MatmulKernel::GemmSplit } else { MatmulKernel::Gemm }).unwrap_or_else(|e| panic!("{what}: {e}"));
            compare_abs(&what, &case.plan, [&case.host[0], &case.host[1]], case.host.get(2), Some(&case.abs), &wide);
            assert_eq!(bits(&wide), bits(&twin), "{what}: wide and 64 x 64 tiles gave other bits");
        }
    }
}

/// float16 and bfloat16 products on the SIMT kernels (`Gemm`, `GemmSplit`, `GemmWide`, and
/// `Vec1` / `Vec16` for matrix-vector products) write their 16-bit output as they compute it:
/// the bits of the same kernel on f32 copies of the operands, rounded to the type (what the
/// f32 scratch and its rounding copy gave before; float16 subnormal inputs widened exactly),
/// each within the reference's tolerance; into
/// an output view at an odd element offset of a larger buffer (row-major, or transposed: each
/// element stored alone), whose neighbouring halves keep their bits; and the call records the
/// product's own dispatches only (no conversion).
#[test]
fn sixteen_bit_products_write_their_output_bit_for_bit() {
    for ctx in contexts() {
        let mut rng = Rng(0x16b);
        for dtype in [DType::F16, DType::BF16] {
            for (i, (m, n, k)) in [(70, 90, 40), (8, 300, 512), (1, 77, 64), (33, 1, 100), (130, 131, 20)].into_iter().enumerate() {
                let kernels: &[MatmulKernel] = if m == 1 || n == 1 { &[MatmulKernel::Vec1, MatmulKernel::Vec16, MatmulKernel::Gemm] } else { &[MatmulKernel::Gemm, MatmulKernel::GemmSplit, MatmulKernel::GemmWide] };
                let (x, w, b) = (rand(&mut rng, &[m, k], dtype), rand(&mut rng, &[n, k], dtype), rand(&mut rng, &[n], dtype));
                // Cases 0 and 2 (a GEMM, a matrix-vector product read as vec4 words): a third of
                // x (case 2: and of w) subnormal in float16 (tiny normals in bfloat16).
                let tiny = |t: HostTensor| HostTensor::from_vec(t.to(DType::F32).unwrap().to_vec::<f32>().unwrap().into_iter().enumerate().map(|(e, v)| if e % 3 == 0 { v * 2f32.powi(-20) } else { v }).collect(), t.shape()).unwrap().to(dtype).unwrap();
                let x = if i == 0 || i == 2 { tiny(x) } else { x };
                let w = if i == 2 { tiny(w) } else { w };
                let act = [Activation::None, Activation::Relu, Activation::Gelu][i % 3];
                let plan = linear_plan(x.layout(), w.layout(), Some(b.layout()), [Some(dtype); 3]).unwrap().with_activation(act);
                // GELU rounds the product first (PyTorch's F.gelu(F.linear(..))): the f32 twin
                // runs without it, and the elementwise op after the rounding.
                let gelu = act == Activation::Gelu;
                let plan32 = linear_plan(x.layout(), w.layout(), Some(b.layout()), [Some(DType::F32); 3]).unwrap().with_activation(if gelu { Activation::None } else { act });
                let up = |t: &HostTensor| DeviceTensor::upload(ctx, t).unwrap();
                let (dx, dw, db) = (up(&x), up(&w), up(&b));
                let f32s = |t: &HostTensor| up(&t.to(DType::F32).unwrap());
                let (fx, fw, fb) = (f32s(&x), f32s(&w), f32s(&b));
                let bits = |t: &HostTensor| t.to(DType::F32).unwrap().to_vec::<f32>().unwrap().into_iter().map(f32::to_bits).collect::<Vec<u32>>();
                for (j, &kernel) in kernels.iter().enumerate() {
                    let what = format!("{} {dtype} [{m}, {k}] x [{n}, {k}]^T + b {act:?} {kernel:?}", name(ctx));
                    // The output: elements 1 .. 1 + m*n of a buffer of m*n + 3 ones, row-major
                    // or (odd j) transposed.
                    let len = m * n + 3;
                    let big = up(&HostTensor::from_vec(vec![1f32; len], &[len]).unwrap().to(dtype).unwrap());
                    let out = if j % 2 == 0 { big.as_strided(&[m, n], &[n as isize, 1], 1).unwrap() } else { big.as_strided(&[m, n], &[1, m as isize], 1).unwrap() };
                    let graph = ctx
                        .capture(&[&dx], || {
                            let mut bt = ctx.batch();
                            bt.run_plan_with(&plan, &dx, &dw, Some(&db), &out, kernel)?;
                            bt.submit()?;
                            Ok::<_, Error>(())
                        })
                        .unwrap_or_else(|e| panic!("{what}: {e}"));
                    let kinds: Vec<bool> = graph.dispatches().iter().map(|(_, k)| k.starts_with("matmul_")).collect();
                    let want_kinds = if gelu { kinds.len() >= 2 && kinds[..kinds.len() - 1].iter().all(|&m| m) && !kinds[kinds.len() - 1] } else { kinds.iter().all(|&m| m) };
                    assert!(want_kinds, "{what}: {:?}", graph.dispatches());
                    graph.replay_and_wait(&[&dx]).unwrap();
                    let out32 = nan_out(ctx, &[m, n], DType::F32).unwrap();
                    let mut bt = ctx.batch();
                    bt.run_plan_with(&plan32, &fx, &fw, Some(&fb), &out32, kernel).unwrap_or_else(|e| panic!("{what} f32: {e}"));
                    bt.submit_and_wait().unwrap();
                    let got = out.download().unwrap();
                    compare(&what, &plan, &x, &w, Some(&b), &got);
                    let rounded = out32.download().unwrap().to(dtype).unwrap();
                    let rounded = if gelu { DeviceTensor::upload(ctx, &rounded).unwrap().gelu().unwrap().download().unwrap() } else { rounded };
                    assert_eq!(bits(&got), bits(&rounded), "{what}: not the f32 kernel's result rounded");
                    let all = bits(&big.download().unwrap());
                    let one = bits(&HostTensor::from_vec(vec![1f32], &[1]).unwrap().to(dtype).unwrap())[0];
                    assert_eq!([all[0], all[len - 2], all[len - 1]], [one; 3], "{what}: a neighbouring element changed");
                }
            }
        }
    }
}

/// A 16-bit product whose f32 twin a CPU adapter runs on its f32 kernels (widened) while the
/// f32 output would pass one binding: the 16-bit kernels run it (the widened call bound its
/// f32 scratch past the device's 1 MiB bindings and returned `Unsupported`).
#[test]
fn a_half_product_whose_f32_output_would_pass_a_binding() {
    for ctx in contexts() {
        let small = limited(ctx, |l| wgpu::Limits { max_storage_buffer_binding_size: 1 << 20, ..l });
        let (m, k, n) = (600, 64, 600);
        let a = HostTensor::from_vec((0..m * k).map(|i| ((i * 7) % 13) as f32 - 6.0).collect::<Vec<_>>(), &[m, k]).unwrap().to(DType::F16).unwrap();
        let b = HostTensor::from_vec((0..k * n).map(|i| ((i * 5) % 11) as f32 - 5.0).collect::<Vec<_>>(), &[k, n]).unwrap().to(DType::F16).unwrap();
        let got = DeviceTensor::upload(&small, &a).unwrap().mm(&DeviceTensor::upload(&small, &b).unwrap()).unwrap_or_else(|e| panic!("{}: {e}", name(ctx)));
        // Small integers: every sum is exact in f32 and in f16.
        assert_eq!(got.download().unwrap().to(DType::F32).unwrap().to_vec::<f32>().unwrap(), a.mm(&b).unwrap().to(DType::F32).unwrap().to_vec::<f32>().unwrap(), "{}", name(ctx));
    }
}

/// Products over k = 0 of empty operands at the end of their storage (their offset is any an
/// empty view may have): zeros for `mm`, `beta * input` for `addmm`, the bias for `linear`, on
/// every kernel that takes the call (they bound a window past the buffer: a validation error),
/// in float32 and float16, as on the host and in PyTorch.
#[test]
fn products_over_an_empty_k_from_views_at_the_end_of_their_storage() {
    for ctx in contexts() {
        for dtype in [DType::F32, DType::F16] {
            let up = |h: &HostTensor| DeviceTensor::upload(ctx, &h.to(dtype).unwrap()).unwrap();
            let store_a = up(&HostTensor::from_vec(vec![1f32; 3 * 64], &[3, 64]).unwrap());
            let store_b = up(&HostTensor::from_vec(vec![1f32; 3 * 5], &[3, 5]).unwrap());
            // [3, 0] at element 192 of 192; [0, 5] at element 15 of 15; a weight [5, 0] at 320.
            for (at_a, at_b) in [(192, 15), (1 << 62, 1 << 40)] {
            let a = store_a.as_strided(&[3, 0], &[64, 1], at_a).unwrap();
            let b = store_b.as_strided(&[0, 5], &[5, 1], at_b).unwrap();
            let w = up(&HostTensor::from_vec(vec![1f32; 5 * 64], &[5, 64]).unwrap()).as_strided(&[5, 0], &[64, 1], 320).unwrap();
            let c = up(&HostTensor::from_vec((0..15).map(|i| i as f32).collect(), &[3, 5]).unwrap());
            let bias = up(&HostTensor::from_vec(vec![1.5f32, -2.0, 0.25, 4.0, -0.5], &[5]).unwrap());
            let mm = matmul_plan(a.layout(), b.layout(), [dtype; 2]).unwrap();
            let addmm = addmm_plan(c.layout(), a.layout(), b.layout(), 0.5, 1.0, [dtype; 3]).unwrap();
            let linear = linear_plan(a.layout(), w.layout(), Some(bias.layout()), [Some(dtype); 3]).unwrap();
            let cases: [(&str, _, &DeviceTensor, Option<&DeviceTensor>, Vec<f32>); 3] = [
                ("mm", mm, &b, None, vec![0.0; 15]),
                ("addmm", addmm, &b, Some(&c), (0..15).map(|i| i as f32 * 0.5).collect()),
                ("linear", linear, &w, Some(&bias), [1.5f32, -2.0, 0.25, 4.0, -0.5].repeat(3)),
            ];
            for (op, plan, other, extra, want) in cases {
                for kernel in [MatmulKernel::Auto].into_iter().chain(MatmulKernel::ALL) {
                    let out = nan_out(ctx, &[3, 5], dtype).unwrap();
                    let mut batch = ctx.batch();
                    match batch.run_plan_with(&plan, &a, other, extra, &out, kernel) {
                        Ok(()) => batch.submit_and_wait().unwrap(),
                        Err(Error::Unsupported { .. }) if kernel != MatmulKernel::Auto => continue,
                        Err(e) => panic!("{} {op} {dtype} {kernel:?}: {e}", name(ctx)),
                    }
                    let got = out.download().unwrap().to(DType::F32).unwrap().to_vec::<f32>().unwrap();
                    assert_eq!(got, want, "{} {op} {dtype} {kernel:?} offsets {at_a} {at_b}", name(ctx));
                }
            }
            }
        }
        // The kernel queries of such products form their class over contiguous stand-ins, as
        // the call does (an empty view's strides multiplied past isize: a debug overflow).
        let base = DeviceTensor::zeros(ctx, &[1], DType::F32, MemoryFormat::Contiguous).unwrap();
        let zeros = |s: &[usize]| DeviceTensor::zeros(ctx, s, DType::F32, MemoryFormat::Contiguous).unwrap();
        for (a, b) in [([2, 2, 0, 3], [2, 2, 3, 4]), ([2, 2, 3, 0], [2, 2, 0, 4])] {
            let wild = base.as_strided(&a, &[1, isize::MAX, 1, 1], 0).unwrap();
            let (tame, b) = (zeros(&a), zeros(&b));
            assert_eq!(ctx.matmul_choice_of(&wild, &b).unwrap(), ctx.matmul_choice_of(&tame, &b).unwrap(), "{} {a:?}", name(ctx));
            assert_eq!(ctx.matmul_default(&wild, &b).unwrap(), ctx.matmul_default(&tame, &b).unwrap(), "{} {a:?}", name(ctx));
            let y = wild.matmul(&b).unwrap();
            assert_eq!((y.shape(), y.download().unwrap().to_vec::<f32>().unwrap()), (&[2, 2, a[2], 4][..], vec![0.0; 16 * a[2]]), "{}", name(ctx));
        }
        // Only the empty operand stands in: a huge broadcast other operand is not made dense
        // (16 GiB here: an Error::Limit) for the query, as the call makes nothing of it.
        let (a, b) = (zeros(&[0, 4096]), base.expand(&[4096, 1 << 20]).unwrap());
        for r in [ctx.matmul_choice_of(&a, &b), ctx.matmul_default(&a, &b)] {
            assert!(r.is_ok(), "{}: {r:?}", name(ctx));
        }
        assert_eq!(a.matmul(&b).unwrap().shape(), &[0, 1 << 20], "{}", name(ctx));
        // The stand-in operands are held by the recording: with no pool to keep them, and
        // in a graph whose context's pool is trimmed before each replay (they were dropped,
        // and the submission bound destroyed buffers).
        let own = pollster::block_on(GpuContext::for_backends(ctx.adapter().backend.into())).unwrap();
        own.set_pool_limit(0);
        let a = DeviceTensor::zeros(&own, &[3, 0], DType::F32, MemoryFormat::Contiguous).unwrap();
        let b = DeviceTensor::zeros(&own, &[0, 5], DType::F32, MemoryFormat::Contiguous).unwrap();
        let mut batch = own.batch();
        let y = batch.mm(&a, &b).unwrap();
        batch.submit_and_wait().unwrap();
        assert_eq!(y.download().unwrap().to_vec::<f32>().unwrap(), vec![0.0; 15], "{}", name(ctx));
        let c = DeviceTensor::from_slice(&own, &[1.5f32; 15], &[3, 5]).unwrap();
        let graph = own.capture(&[&c], || c.addmm(&a, &b, 2.0, 1.0)).unwrap();
        own.trim_pool();
        graph.replay_and_wait(&[]).unwrap();
        assert_eq!(graph.output().download().unwrap().to_vec::<f32>().unwrap(), vec![3.0; 15], "{}", name(ctx));
    }
}

/// `addmm_` (PyTorch's `addmm_out` into its own input, `self.is_same(result)`) equals `addmm`
/// on the host and every adapter, f32 and f16 (it was an overlap error); an `out` that only
/// partly overlaps the input stays one. An empty reduction (k = 0) never multiplies by alpha:
/// an infinite alpha gives `beta * input` (it gave NaN), a negative one +0.0 (it gave -0.0);
/// tuned on first call, its empty operands at any offset tune nothing (debug builds panicked
/// on the window of one at 2^62). A host product whose result cannot be allocated is an error
/// (it aborted), and a k past i32 on a device is an overflow error (the kernels' u32 loops
/// never ended).
#[test]
fn addmm_in_place_empty_reductions_and_huge_products() {
    let host = |v: Vec<f32>, s: &[usize]| HostTensor::from_vec(v, s).unwrap();
    let m1 = host((0..12).map(|i| i as f32 * 0.25 - 1.0).collect(), &[3, 4]);
    let m2 = host((0..20).map(|i| 1.0 - i as f32 * 0.125).collect(), &[4, 5]);
    let c = host((0..15).map(|i| i as f32 * 0.5).collect(), &[3, 5]);
    for dtype in [DType::F32, DType::F16] {
        let (m1, m2, c) = (m1.to(dtype).unwrap(), m2.to(dtype).unwrap(), c.to(dtype).unwrap());
        let want = c.addmm(&m1, &m2, 0.5, 2.0).unwrap().to_vec::<f32>().unwrap_or_else(|_| c.addmm(&m1, &m2, 0.5, 2.0).unwrap().to(DType::F32).unwrap().to_vec::<f32>().unwrap());
        let f32s = |t: &HostTensor| t.to(DType::F32).unwrap().to_vec::<f32>().unwrap();
        // A copy of c of its own (`to` of its own type is c itself).
        let h = HostTensor::zeros(&[3, 5], dtype, MemoryFormat::Contiguous).unwrap();
        h.copy_(&c).unwrap();
        h.addmm_(&m1, &m2, 0.5, 2.0).unwrap();
        assert_eq!(f32s(&h), want, "host {dtype}");
        // Partly overlapping: refused.
        let wide = HostTensor::zeros(&[4, 5], dtype, MemoryFormat::Contiguous).unwrap();
        let (x, o) = (wide.narrow(0, 0, 3).unwrap(), wide.narrow(0, 1, 3).unwrap());
        assert!(matches!(x.addmm_out(&m1, &m2, 0.5, 2.0, &o), Err(Error::Overlap { .. })), "host {dtype}");
        for ctx in contexts() {
            let up = |t: &HostTensor| DeviceTensor::upload(ctx, t).unwrap();
            let d = up(&c);
            d.addmm_(&up(&m1), &up(&m2), 0.5, 2.0).unwrap();
            assert_eq!(f32s(&d.download().unwrap()), want, "{} {dtype}", name(ctx));
            let wide = up(&HostTensor::zeros(&[4, 5], dtype, MemoryFormat::Contiguous).unwrap());
            let (x, o) = (wide.narrow(0, 0, 3).unwrap(), wide.narrow(0, 1, 3).unwrap());
            assert!(matches!(x.addmm_out(&up(&m1), &up(&m2), 0.5, 2.0, &o), Err(Error::Overlap { .. })), "{} {dtype}", name(ctx));
        }
    }
    // k = 0: infinite and negative alphas.
    let (e1, e2) = (HostTensor::zeros(&[3, 0], DType::F32, MemoryFormat::Contiguous).unwrap(), HostTensor::zeros(&[0, 5], DType::F32, MemoryFormat::Contiguous).unwrap());
    let bits = |v: Vec<f32>| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let half: Vec<f32> = (0..15).map(|i| i as f32 * 0.25).collect();
    let cases = [(0.5, f64::INFINITY, half.clone()), (0.5, f64::NAN, half), (0.0, -1.0, vec![0.0; 15])];
    for &(beta, alpha, ref want) in &cases {
        assert_eq!(bits(c.addmm(&e1, &e2, beta, alpha).unwrap().to_vec::<f32>().unwrap()), bits(want.clone()), "host beta {beta} alpha {alpha}");
    }
    for ctx in contexts() {
        let up = |t: &HostTensor| DeviceTensor::upload(ctx, t).unwrap();
        let dc = up(&c);
        for &(beta, alpha, ref want) in &cases {
            assert_eq!(bits(dc.addmm(&up(&e1), &up(&e2), beta, alpha).unwrap().download().unwrap().to_vec::<f32>().unwrap()), bits(want.clone()), "{} beta {beta} alpha {alpha}", name(ctx));
        }
        // Tuned on first call: empty operands far past their storage.
        ctx.set_tuning_policy(strided_wgpu::TuningPolicy::OnFirstCall);
        let store = DeviceTensor::from_slice(ctx, &[1f32; 16], &[16]).unwrap();
        let a = store.as_strided(&[7, 0], &[1, 1], 1 << 62).unwrap();
        let b = store.as_strided(&[0, 9], &[1, 1], 1 << 62).unwrap();
        let r = a.mm(&b).map(|t| t.download().unwrap().to_vec::<f32>().unwrap());
        ctx.set_tuning_policy(strided_wgpu::TuningPolicy::Defaults);
        assert_eq!(r.unwrap(), vec![0.0; 63], "{}", name(ctx));
        // k = 2^31 of expanded operands.
        let one = DeviceTensor::from_slice(ctx, &[1f32], &[1, 1]).unwrap();
        let r = one.expand(&[1, 1 << 31]).unwrap().mm(&one.expand(&[1 << 31, 1]).unwrap()).map(drop);
        assert!(matches!(r, Err(Error::Overflow { .. })), "{}: {r:?}", name(ctx));
    }
    let big = |s: &[usize]| HostTensor::zeros(s, DType::F32, MemoryFormat::Contiguous).unwrap();
    let r = big(&[1 << 20, 0]).matmul(&big(&[0, 1 << 20])).map(drop);
    assert!(matches!(r, Err(Error::HostMemory { .. })), "a 4 TiB result: {r:?}");
    let r = big(&[1 << 33, 0]).matmul(&big(&[0, 1 << 33])).map(drop);
    assert!(matches!(r, Err(Error::Overflow { .. }) | Err(Error::InvalidArgument { .. })), "a result past isize: {r:?}");
}

/// PyTorch 2.15's float16 and bfloat16 `addmm` read mat1 and mat2 with alpha = 0 (a NaN in
/// them propagates; float32's skips them); alpha or beta past float32's range is an error in
/// every type (it was inf on the device and 1e300 * 0 = 0 on the host); an empty product of
/// huge expanded operands reads none on the host (it copied them: a HostMemory error).
#[test]
fn half_alpha_zero_reads_operands_and_scalars_past_float32() {
    let nan = f32::NAN;
    for dtype in [DType::F16, DType::BF16] {
        let host = |v: Vec<f32>, s: &[usize]| HostTensor::from_vec(v, s).unwrap().to(dtype).unwrap();
        let (c, m1, m2) = (host(vec![1.0; 4], &[2, 2]), host(vec![nan, 1.0, 1.0, 1.0], &[2, 2]), host(vec![1.0; 4], &[2, 2]));
        let f = |t: HostTensor| t.to(DType::F32).unwrap().to_vec::<f32>().unwrap();
        // PyTorch: [[nan, nan], [1, 1]] for beta 1, [[nan, nan], [0, 0]] for beta 0.
        for (beta, want) in [(1.0, [nan, nan, 1.0, 1.0]), (0.0, [nan, nan, 0.0, 0.0])] {
            let same = |g: &[f32]| g.iter().zip(&want).all(|(a, b)| a == b || (a.is_nan() && b.is_nan()));
            let g = f(c.addmm(&m1, &m2, beta, 0.0).unwrap());
            assert!(same(&g), "host {dtype} beta {beta}: {g:?}");
            for ctx in contexts() {
                let up = |t: &HostTensor| DeviceTensor::upload(ctx, t).unwrap();
                let g = f(up(&c).addmm(&up(&m1), &up(&m2), beta, 0.0).unwrap().download().unwrap());
                assert!(same(&g), "{} {dtype} beta {beta}: {g:?}", name(ctx));
            }
        }
    }
    for dtype in [DType::F32, DType::F16] {
        let z = |s: &[usize]| HostTensor::zeros(s, dtype, MemoryFormat::Contiguous).unwrap();
        for (alpha, beta) in [(1e300, 1.0), (1.0, 1e39), (-1e39, 0.0)] {
            let r = z(&[2, 5]).addmm(&z(&[2, 3]), &z(&[3, 5]), beta, alpha).map(drop);
            assert!(matches!(&r, Err(Error::InvalidArgument { op: "addmm", detail }) if detail.contains("without overflow")), "{dtype} alpha {alpha} beta {beta}: {r:?}");
        }
        let r = z(&[2, 5]).addmm(&z(&[2, 3]), &z(&[3, 5]), 1.0, f64::INFINITY).map(drop);
        assert!(r.is_ok(), "an infinite alpha is PyTorch's too: {r:?}");
    }
    // A -0.0 product without an addend (beta 0) keeps its sign on the host as on a device
    // (PyTorch's CPU gives +0.0 in float32 and -0.0 in 16-bit types: no one rule to follow).
    let z = HostTensor::zeros(&[2, 2], DType::F32, MemoryFormat::Contiguous).unwrap();
    let host_bits: Vec<u32> = z.addmm(&z, &z, 0.0, -1.0).unwrap().to_vec::<f32>().unwrap().iter().map(|v| v.to_bits()).collect();
    assert_eq!(host_bits, vec![(-0.0f32).to_bits(); 4]);
    for ctx in contexts() {
        let dz = DeviceTensor::upload(ctx, &z).unwrap();
        let got: Vec<u32> = dz.addmm(&dz, &dz, 0.0, -1.0).unwrap().download().unwrap().to_vec::<f32>().unwrap().iter().map(|v| v.to_bits()).collect();
        assert_eq!(got, host_bits, "{}", name(ctx));
    }
    let one = HostTensor::from_vec(vec![1f32], &[1, 1]).unwrap();
    let wide = one.expand(&[1 << 20, 1 << 20]).unwrap();
    let empty = HostTensor::zeros(&[0, 1 << 20], DType::F32, MemoryFormat::Contiguous).unwrap();
    assert_eq!(empty.mm(&wide).unwrap().shape(), &[0, 1 << 20]);
    assert_eq!(wide.mm(&empty.transpose(0, 1).unwrap()).unwrap().shape(), &[1 << 20, 0]);
}

/// `addmm` with alpha = 0 does not read mat1 and mat2 (BLAS's rule, PyTorch's float32 addmm):
/// an inf or NaN in them gives `beta * input`, +0.0 with beta = 0 (it gave NaN). A product into
/// a flipped `out=` view, tuned on its first call, measures and computes (the tuning's scratch
/// view fell below 0: an InvalidArgument). A size-1 dim of a view with a stride past i32
/// (which it never steps over) computes (an Overflow error). Operands whose result passes u64
/// elements are an error where the tuner's queries panicked in debug builds, and the flops of
/// a plan past usize are counted in f64.
#[test]
fn alpha_zero_flipped_outputs_size_one_strides_and_huge_queries() {
    let host = |v: Vec<f32>, s: &[usize]| HostTensor::from_vec(v, s).unwrap();
    let bits = |v: Vec<f32>| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let m1 = host(vec![f32::INFINITY, 1.0, -2.0, f32::NAN, 0.5, 3.0], &[2, 3]);
    let m2 = host(vec![1.0, -1.0, 2.0, 0.25, f32::NAN, 4.0], &[3, 2]);
    let c = host(vec![1.5, -2.0, 0.0, 8.0], &[2, 2]);
    let cases = [(0.5, vec![0.75, -1.0, 0.0, 4.0]), (0.0, vec![0.0; 4])];
    for (beta, want) in &cases {
        assert_eq!(bits(c.addmm(&m1, &m2, *beta, 0.0).unwrap().to_vec::<f32>().unwrap()), bits(want.clone()), "host beta {beta}");
        assert_eq!(bits(c.addmm(&m1, &m2, *beta, -0.0).unwrap().to_vec::<f32>().unwrap()), bits(want.clone()), "host beta {beta}, alpha -0");
    }
    let flops = matmul_plan(&Layout::contiguous(&[1, 1]).unwrap().expand(&[1 << 22, 1 << 22]).unwrap(), &Layout::contiguous(&[1, 1]).unwrap().expand(&[1 << 22, 1 << 22]).unwrap(), [DType::F32; 2]).unwrap().flops();
    assert_eq!(flops, 2.0 * (1u64 << 22) as f64 * (1u64 << 44) as f64);
    for ctx in contexts() {
        let up = |t: &HostTensor| DeviceTensor::upload(ctx, t).unwrap();
        let dc = up(&c);
        for (beta, want) in &cases {
            assert_eq!(bits(dc.addmm(&up(&m1), &up(&m2), *beta, 0.0).unwrap().download().unwrap().to_vec::<f32>().unwrap()), bits(want.clone()), "{} beta {beta}", name(ctx));
        }
        // A flipped out= view, offset 992, on a context that tunes on first call.
        let fresh = limited(ctx, |l| l);
        fresh.set_tuning_policy(strided_wgpu::TuningPolicy::OnFirstCall);
        let mut rng = Rng(0xf11b);
        let (ha, hb) = (rand(&mut rng, &[32, 32], DType::F32), rand(&mut rng, &[32, 32], DType::F32));
        let (a, b) = (DeviceTensor::upload(&fresh, &ha).unwrap(), DeviceTensor::upload(&fresh, &hb).unwrap());
        let o = DeviceTensor::zeros(&fresh, &[32, 32], DType::F32, MemoryFormat::Contiguous).unwrap();
        a.matmul_out(&b, &o.flip(0).unwrap()).unwrap();
        fresh.set_tuning_policy(strided_wgpu::TuningPolicy::Defaults);
        assert_eq!(fresh.tuned_matmul_choices().len(), 1, "{}: the first call did not measure", name(ctx));
        let want = ha.matmul(&hb).unwrap().flip(0).unwrap().contiguous(MemoryFormat::Contiguous).unwrap().to_vec::<f32>().unwrap();
        let got = o.download().unwrap().to_vec::<f32>().unwrap();
        assert!(got.len() == want.len() && got.iter().zip(&want).all(|(g, w)| (g - w).abs() <= 1e-4 * (1.0 + w.abs())), "{}: into a flipped view", name(ctx));
        // A [1, 4] view whose row stride is 2^31.
        let store = DeviceTensor::from_slice(ctx, &[1f32, 2.0, 3.0, 4.0], &[4]).unwrap();
        let row = store.as_strided(&[1, 4], &[1 << 31, 1], 0).unwrap();
        let w = DeviceTensor::from_slice(ctx, &(0..32).map(|i| i as f32).collect::<Vec<_>>(), &[4, 8]).unwrap();
        let want = host(vec![1.0, 2.0, 3.0, 4.0], &[1, 4]).matmul(&w.download().unwrap()).unwrap().to_vec::<f32>().unwrap();
        assert_eq!(row.matmul(&w).unwrap().download().unwrap().to_vec::<f32>().unwrap(), want, "{}: a size-1 dim's huge stride", name(ctx));
        // The tuner's queries of a product whose result passes u64 elements.
        let one = DeviceTensor::from_slice(ctx, &[1f32], &[1, 1]).unwrap();
        let (ta, tb) = (one.expand(&[1 << 32, 1]).unwrap(), one.expand(&[1, 1 << 32]).unwrap());
        assert!(ctx.matmul_choice_of(&ta, &tb).is_err(), "{}", name(ctx));
        assert!(ctx.matmul_default(&ta, &tb).is_err(), "{}", name(ctx));
    }
}

/// Products whose kernels' loops would pass a software adapter's loop bound (Mesa's llvmpipe
/// leaves a loop past 65,535 turns an invocation, silently): a matrix-vector product of
/// k = 2^20 (half its sum, its second output never written), a GEMM of k = 65,536 (58,255 of
/// 65,536 on lavapipe), a blocked batch of 8,192 outputs a matrix (rows past 6,390 unwritten).
/// Small integers, so that every sum is exact: equal to the host's on every adapter; on a CPU
/// adapter a forced matrix-vector kernel past the bound is Unsupported.
#[test]
fn products_within_a_software_adapters_loop_bound() {
    let ints = |s: &[usize], seed: usize| -> HostTensor {
        let n: usize = s.iter().product();
        HostTensor::from_vec((0..n).map(|i| ((i * 7 + seed) % 5) as f32 - 2.0).collect(), s).unwrap()
    };
    let cases: [(&[usize], &[usize]); 3] = [(&[1, 1 << 20], &[1 << 20, 2]), (&[4, 65536], &[65536, 8]), (&[64, 8192, 4], &[64, 4, 2])];
    for ctx in contexts() {
        for (sa, sb) in cases {
            let (a, b) = (ints(sa, 1), ints(sb, 3));
            let want = a.matmul(&b).unwrap().to_vec::<f32>().unwrap();
            let (da, db) = (DeviceTensor::upload(ctx, &a).unwrap(), DeviceTensor::upload(ctx, &b).unwrap());
            let got = da.matmul(&db).unwrap().download().unwrap().to_vec::<f32>().unwrap();
            let off = got.iter().zip(&want).filter(|(g, w)| g != w).count();
            assert_eq!(off, 0, "{} {sa:?} x {sb:?}: {off} of {} outputs differ", name(ctx), want.len());
        }
        if ctx.adapter().device_type == wgpu::DeviceType::Cpu {
            let (a, b) = (DeviceTensor::upload(ctx, &ints(&[1, 1 << 20], 1)).unwrap(), DeviceTensor::upload(ctx, &ints(&[1 << 20, 2], 3)).unwrap());
            let out = DeviceTensor::zeros(ctx, &[1, 2], DType::F32, MemoryFormat::Contiguous).unwrap();
            let mut batch = ctx.batch();
            let r = batch.matmul_out_with(&a, &b, &out, MatmulKernel::Vec1);
            assert!(matches!(r, Err(Error::Unsupported { .. })), "{}: {r:?}", name(ctx));
        }
    }
}

/// Empty products on every device path, as on the host: m = 0, n = 0, a batch of 0, an empty
/// linear input, an addmm into an empty input (k = 0 is its own test).
#[test]
fn empty_products_on_the_device() {
    let host = |s: &[usize]| HostTensor::zeros(s, DType::F32, MemoryFormat::Contiguous).unwrap();
    let cases: [(&[usize], &[usize], &[usize]); 4] = [(&[0, 5], &[5, 3], &[0, 3]), (&[4, 5], &[5, 0], &[4, 0]), (&[0, 4, 5], &[0, 5, 3], &[0, 4, 3]), (&[2, 0, 5], &[5, 3], &[2, 0, 3])];
    for ctx in contexts() {
        let d = |s: &[usize]| DeviceTensor::upload(ctx, &host(s)).unwrap();
        for (a, b, want) in cases {
            assert_eq!(host(a).matmul(&host(b)).unwrap().shape(), want);
            let got = d(a).matmul(&d(b)).unwrap().download().unwrap();
            assert_eq!(got.shape(), want, "{}: {a:?} @ {b:?}", name(ctx));
        }
        let y = d(&[0, 7, 5]).linear(&d(&[3, 5]), Some(&d(&[3]))).unwrap();
        assert_eq!(y.download().unwrap().shape(), &[0, 7, 3], "{}", name(ctx));
        let y = d(&[0, 3]).addmm(&d(&[0, 5]), &d(&[5, 3]), 1.0, 1.0).unwrap();
        assert_eq!(y.shape(), &[0, 3], "{}", name(ctx));
    }
}

/// `linear`'s bias by PyTorch's route (tests/matmul.rs has PyTorch's values): on the device,
/// eager and recorded, bit for bit with the host, in float16 and bfloat16, where the bias is
/// added before or after the product is rounded, with a bias of another type, into `out`.
#[test]
fn linear_routes_match_the_host_bitwise() {
    for ctx in contexts() {
        for (dt, t) in [(DType::BF16, 2f32.powi(-8)), (DType::F16, 2f32.powi(-11))] {
            let mut rng = Rng(31);
            let h = |v: Vec<f32>, s: &[usize]| HostTensor::from_vec(v, s).unwrap().to(dt).unwrap();
            let bits = |y: &HostTensor| y.to(DType::F32).unwrap().to_vec::<f32>().unwrap().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            // Products 1 + t, 1 + 2t, 1 + 3t (ties halfway between two 16-bit values, and not)
            // beside the strided view's columns, random values in the others.
            let w = h((0..18).map(|i| if i % 2 == 0 { 1.0 } else { t * (1 + i % 3) as f32 }).collect(), &[9, 2]);
            let x = h((0..24).map(|i| if i % 2 == 0 { 1.0 } else { (rng.below(9) as f32 - 4.0) / 8.0 }).collect(), &[2, 3, 4]);
            let strided = x.slice(2, 0, 4, 2).unwrap();
            let contiguous = strided.contiguous(MemoryFormat::Contiguous).unwrap();
            let bias = h((0..9).map(|i| t * (i % 4) as f32).collect(), &[9]);
            let biases = [bias.clone(), bias.reshape(&[1, 1, 9]).unwrap().expand(&[2, 3, 9]).unwrap().contiguous(MemoryFormat::Contiguous).unwrap(), bias.narrow(0, 1, 1).unwrap().reshape(&[]).unwrap(), bias.to(DType::F32).unwrap()];
            let up = |t: &HostTensor| DeviceTensor::upload(ctx, t).unwrap();
            let (dw, ds) = (up(&w), up(&x).slice(2, 0, 4, 2).unwrap());
            let dc = up(&contiguous);
            for (i, b) in biases.iter().enumerate() {
                let db = up(b);
                for (xh, xd, form) in [(&strided, &ds, "strided"), (&contiguous, &dc, "contiguous")] {
                    let what = format!("{} {dt} bias {i} {form}", name(ctx));
                    let want = match xh.linear(&w, Some(b)) {
                        Ok(y) => y,
                        Err(e) => {
                            // Refused on both: a bias of another type on addmm's route.
                            assert!(matches!(e, Error::DType { .. }), "{what}: {e}");
                            assert!(matches!(xd.linear(&dw, Some(&db)), Err(Error::DType { .. })), "{what}");
                            continue;
                        }
                    };
                    assert_eq!(bits(&xd.linear(&dw, Some(&db)).unwrap().download().unwrap()), bits(&want), "{what} eager");
                    let mut batch = ctx.batch();
                    let y = batch.linear(xd, &dw, Some(&db)).unwrap();
                    batch.submit().unwrap();
                    assert_eq!(bits(&y.download().unwrap()), bits(&want), "{what} recorded");
                    let relu = xh.linear_act(&w, Some(b), Activation::Relu).unwrap();
                    assert_eq!(bits(&xd.linear_act(&dw, Some(&db), Activation::Relu).unwrap().download().unwrap()), bits(&relu), "{what} relu");
                    let hout = h(vec![f32::NAN; 54], &[2, 3, 9]);
                    xh.linear_out(&w, Some(b), &hout).unwrap();
                    let dout = up(&h(vec![f32::NAN; 54], &[2, 3, 9]));
                    xd.linear_out(&dw, Some(&db), &dout).unwrap();
                    assert_eq!(bits(&dout.download().unwrap()), bits(&hout), "{what} out");
                    let dout2 = up(&h(vec![f32::NAN; 54], &[2, 3, 9]));
                    let mut batch = ctx.batch();
                    batch.linear_out(xd, &dw, Some(&db), &dout2).unwrap();
                    batch.submit().unwrap();
                    assert_eq!(bits(&dout2.download().unwrap()), bits(&hout), "{what} recorded out");
                }
            }
        }
    }
}

/// `linear_out` whose bias is added after the product (a float16 bias of shape [3, 5]) with the
/// bias on another device: an error, and `out` keeps its values (the product was written and
/// the error came from the add).
#[test]
fn linear_out_with_a_bias_elsewhere_writes_nothing() {
    let ctxs = contexts();
    let (Some(a), Some(b)) = (ctxs.first(), ctxs.get(1)) else {
        return;
    };
    let h = |s: &[usize], v: f32| HostTensor::from_vec(vec![v; s.iter().product()], s).unwrap().to(DType::F16).unwrap();
    let (x, w, out) = (DeviceTensor::upload(a, &h(&[2, 3, 4], 1.0)).unwrap(), DeviceTensor::upload(a, &h(&[5, 4], 1.0)).unwrap(), DeviceTensor::upload(a, &h(&[2, 3, 5], 7.0)).unwrap());
    let bias = DeviceTensor::upload(b, &h(&[3, 5], 0.5)).unwrap();
    assert!(matches!(x.linear_out(&w, Some(&bias), &out), Err(Error::Device { .. })));
    // Two fresh contexts of one backend number their buffers alike (wgpu compares buffers by
    // id, not instance): a tensor of each with equal ids shares no storage, and the call is
    // still the other device's error (it was an overlap error now and then).
    let fresh = || pollster::block_on(strided_wgpu::GpuContext::for_backends(a.adapter().backend.into())).unwrap();
    let (c, d) = (fresh(), fresh());
    let out_c = DeviceTensor::upload(&c, &h(&[2, 3, 5], 7.0)).unwrap();
    let bias_d = DeviceTensor::upload(&d, &h(&[3, 5], 0.5)).unwrap();
    if out_c.buffer() == bias_d.buffer() {
        assert!(!out_c.shares_storage(&bias_d));
        let (xc, wc) = (DeviceTensor::upload(&c, &h(&[2, 3, 4], 1.0)).unwrap(), DeviceTensor::upload(&c, &h(&[5, 4], 1.0)).unwrap());
        let r = xc.linear_out(&wc, Some(&bias_d), &out_c);
        assert!(matches!(r, Err(Error::Device { .. })), "{r:?}");
    } else {
        common::skips::say(&format!("!!! {}: two fresh contexts' first buffers got different ids: the id collision not tested", name(a)));
    }
    assert!(matches!(x.linear_act(&w, Some(&bias), Activation::Relu), Err(Error::Device { .. })));
    assert_eq!(out.download().unwrap().to(DType::F32).unwrap().to_vec::<f32>().unwrap(), vec![7.0; 30], "{} and {}", name(a), name(b));
}
