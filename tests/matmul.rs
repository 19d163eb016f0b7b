//! The matrix products on host tensors: PyTorch's shape rules (dot, 1-d promotion and removal,
//! batch broadcast, mm, bmm, linear, addmm), checked against a plain triple loop written here
//! over each operand's logical values, the fused activations, and every bad input a typed error
//! that writes nothing.

mod common;

use common::rng::Rng;
use strided_wgpu::{Activation, DType, Elementwise, Error, HostTensor, Matmul, MemoryFormat, Strided};

fn rand(rng: &mut Rng, shape: &[usize]) -> HostTensor {
    let n: usize = shape.iter().product();
    HostTensor::from_vec((0..n).map(|_| (rng.below(33) as f32 - 16.0) / 8.0).collect(), shape).unwrap()
}

/// `a @ b` of two 2-d host tensors by a triple loop over their logical values.
fn naive(a: &HostTensor, b: &HostTensor) -> Vec<f32> {
    let (m, k, n) = (a.shape()[0], a.shape()[1], b.shape()[1]);
    let (av, bv) = (a.to_vec::<f32>().unwrap(), b.to_vec::<f32>().unwrap());
    let mut out = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            out[i * n + j] = (0..k).map(|p| av[i * k + p] as f64 * bv[p * n + j] as f64).sum::<f64>() as f32;
        }
    }
    out
}

fn close(got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= 1e-5 * (1.0 + w.abs()), "element {i}: got {g}, want {w}");
    }
}

#[test]
fn shape_rules_follow_pytorch() {
    // An empty product whose broadcast batch dims multiply past a usize: an overflow error, as
    // PyTorch's numel of [2^40, 2^40, 1, 0] (an overflow's panic in the host's batch count
    // before); the same dims after a zero: PyTorch's empty result.
    let zeros = |s: &[usize]| HostTensor::zeros(s, DType::F32, MemoryFormat::Contiguous).unwrap();
    let r = zeros(&[1 << 40, 1, 1, 0]).matmul(&zeros(&[1 << 40, 0, 0]));
    assert!(matches!(r, Err(Error::Overflow { .. })), "{:?}", r.map(|t| t.shape().to_vec()));
    assert_eq!(zeros(&[0, 1 << 40, 1, 1]).matmul(&zeros(&[1 << 40, 1, 0])).unwrap().shape(), &[0, 1 << 40, 1, 0]);
    let mut rng = Rng(1);
    let (m, k, n) = (3, 5, 4);
    let a = rand(&mut rng, &[m, k]);
    let b = rand(&mut rng, &[k, n]);
    let v = rand(&mut rng, &[k]);
    // 2-d x 2-d, and mm.
    close(&a.matmul(&b).unwrap().to_vec().unwrap(), &naive(&a, &b));
    assert_eq!(a.mm(&b).unwrap().to_vec::<f32>().unwrap(), a.matmul(&b).unwrap().to_vec::<f32>().unwrap());
    // 1-d x 1-d: a 0-d dot product.
    let d = v.matmul(&v).unwrap();
    assert_eq!(d.shape(), &[] as &[usize]);
    close(&d.to_vec().unwrap(), &naive(&v.unsqueeze(0).unwrap(), &v.unsqueeze(1).unwrap()));
    // 2-d x 1-d: [m]; 1-d x 2-d: [n].
    let mv = a.matmul(&v).unwrap();
    assert_eq!(mv.shape(), &[m]);
    close(&mv.to_vec().unwrap(), &naive(&a, &v.unsqueeze(1).unwrap()));
    let vm = v.matmul(&b).unwrap();
    assert_eq!(vm.shape(), &[n]);
    close(&vm.to_vec().unwrap(), &naive(&v.unsqueeze(0).unwrap(), &b));
    // Batch broadcast: [3, 1, m, k] @ [1, 2, k, n] is [3, 2, m, n], each batch a plain product.
    let ba = rand(&mut rng, &[3, 1, m, k]);
    let bb = rand(&mut rng, &[1, 2, k, n]);
    let r = ba.matmul(&bb).unwrap();
    assert_eq!(r.shape(), &[3, 2, m, n]);
    for i in 0..3 {
        for j in 0..2 {
            let (x, y) = (ba.select(0, i).unwrap().select(0, 0).unwrap(), bb.select(0, 0).unwrap().select(0, j).unwrap());
            close(&r.select(0, i).unwrap().select(0, j).unwrap().to_vec().unwrap(), &naive(&x, &y));
        }
    }
    // A batched left operand with a 1-d right one: [2, m, k] @ [k] is [2, m].
    let b3 = rand(&mut rng, &[2, m, k]);
    assert_eq!(b3.matmul(&v).unwrap().shape(), &[2, m]);
    // bmm with a transposed, negative-step right operand.
    let c = rand(&mut rng, &[2, n, k]).transpose(1, 2).unwrap().flip(2).unwrap();
    let r = b3.bmm(&c).unwrap();
    for i in 0..2 {
        close(&r.select(0, i).unwrap().to_vec().unwrap(), &naive(&b3.select(0, i).unwrap(), &c.select(0, i).unwrap()));
    }
}

#[test]
fn linear_and_addmm() {
    let mut rng = Rng(2);
    let x = rand(&mut rng, &[2, 3, 6]);
    let w = rand(&mut rng, &[4, 6]);
    let bias = rand(&mut rng, &[4]);
    let y = x.linear(&w, Some(&bias)).unwrap();
    assert_eq!(y.shape(), &[2, 3, 4]);
    let flat = x.reshape(&[6, 6]).unwrap();
    let want: Vec<f32> = naive(&flat, &w.transpose(0, 1).unwrap()).iter().enumerate().map(|(i, v)| v + bias.to_vec::<f32>().unwrap()[i % 4]).collect();
    close(&y.to_vec().unwrap(), &want);
    // The fused activations equal the elementwise ops on the result.
    for (act, want) in [(Activation::Relu, y.relu().unwrap()), (Activation::Gelu, y.gelu().unwrap())] {
        let fused = x.linear_act(&w, Some(&bias), act).unwrap();
        close(&fused.to_vec().unwrap(), &want.to_vec().unwrap());
    }
    // addmm: beta * input + alpha * (m1 @ m2), the input broadcast from [1, n].
    let (m1, m2) = (rand(&mut rng, &[5, 6]), rand(&mut rng, &[6, 4]));
    let input = rand(&mut rng, &[1, 4]);
    let r = input.addmm(&m1, &m2, 0.5, -2.0).unwrap();
    let iv = input.to_vec::<f32>().unwrap();
    let want: Vec<f32> = naive(&m1, &m2).iter().enumerate().map(|(i, p)| 0.5 * iv[i % 4] + -2.0 * p).collect();
    close(&r.to_vec().unwrap(), &want);
    // beta == 0: the input is not read (NaN does not propagate).
    let nan = HostTensor::from_vec(vec![f32::NAN; 20], &[5, 4]).unwrap();
    let r = nan.addmm(&m1, &m2, 0.0, 1.0).unwrap();
    close(&r.to_vec().unwrap(), &naive(&m1, &m2));
}

#[test]
fn half_types_round_once_from_f32() {
    let mut rng = Rng(3);
    let (a, b) = (rand(&mut rng, &[7, 9]), rand(&mut rng, &[9, 5]));
    let want = naive(&a, &b);
    for dt in [DType::F16, DType::BF16] {
        let (ah, bh) = (a.to(dt).unwrap(), b.to(dt).unwrap());
        let r = ah.matmul(&bh).unwrap();
        assert_eq!(r.dtype(), dt);
        // The inputs are exact in both types and the sums in f32: one rounding at the end.
        let expect = HostTensor::from_vec(want.clone(), &[7, 5]).unwrap().to(dt).unwrap();
        assert_eq!(r.to(DType::F32).unwrap().to_vec::<f32>().unwrap(), expect.to(DType::F32).unwrap().to_vec::<f32>().unwrap());
    }
}

#[test]
fn bad_input_is_a_typed_error_and_writes_nothing() {
    let mut rng = Rng(4);
    let (a, b) = (rand(&mut rng, &[3, 4]), rand(&mut rng, &[5, 2]));
    assert!(matches!(a.matmul(&b), Err(Error::InvalidArgument { .. })));
    let (x, y) = (rand(&mut rng, &[2, 3, 4]), rand(&mut rng, &[3, 4, 2]));
    assert!(matches!(x.matmul(&y), Err(Error::InvalidArgument { .. })), "batch dims 2 and 3 do not broadcast");
    assert!(matches!(x.bmm(&rand(&mut rng, &[3, 4, 2])), Err(Error::InvalidArgument { .. })));
    assert!(matches!(a.mm(&x), Err(Error::InvalidArgument { .. })));
    let s = HostTensor::from_vec(vec![1f32], &[]).unwrap();
    assert!(matches!(s.matmul(&a), Err(Error::InvalidArgument { .. })));
    let good = rand(&mut rng, &[4, 2]);
    assert!(matches!(a.matmul(&good.to(DType::F16).unwrap()), Err(Error::DType { .. })));
    assert!(matches!(a.to(DType::I32).unwrap().matmul(&good.to(DType::I32).unwrap()), Err(Error::Unsupported { .. })));
    assert!(matches!(a.linear(&rand(&mut rng, &[2, 4]), Some(&rand(&mut rng, &[3]))), Err(Error::InvalidArgument { .. })));
    // out=: wrong shape or type, self-overlapping, overlapping an operand.
    let sentinel = |t: &HostTensor| t.to(DType::F32).unwrap().to_vec::<f32>().unwrap();
    let out = HostTensor::from_vec(vec![7f32; 6], &[3, 2]).unwrap();
    assert!(matches!(a.matmul_out(&good, &HostTensor::zeros(&[2, 3], DType::F32, MemoryFormat::Contiguous).unwrap()), Err(Error::InvalidArgument { .. })));
    assert!(matches!(a.matmul_out(&good, &out.to(DType::F16).unwrap()), Err(Error::InvalidArgument { .. })));
    let expanded = HostTensor::from_vec(vec![7f32; 2], &[1, 2]).unwrap().expand(&[3, 2]).unwrap();
    assert!(matches!(a.matmul_out(&good, &expanded), Err(Error::Overlap { .. })));
    // The output is a view of the left operand's storage.
    let big = rand(&mut rng, &[3, 4]);
    let before = sentinel(&big);
    let alias = big.narrow(1, 0, 2).unwrap();
    assert!(matches!(big.matmul_out(&good, &alias), Err(Error::Overlap { .. })));
    assert_eq!(sentinel(&big), before);
    // A disjoint view of the same storage is fine.
    let store = HostTensor::zeros(&[3, 6], DType::F32, MemoryFormat::Contiguous).unwrap();
    let (left, right) = (store.narrow(1, 0, 4).unwrap(), store.narrow(1, 4, 2).unwrap());
    left.copy_(&a).unwrap();
    left.matmul_out(&good, &right).unwrap();
    close(&right.to_vec().unwrap(), &naive(&a, &good));
    assert_eq!(sentinel(&out), vec![7.0; 6]);
}

/// The public CPU reference takes a plan and tensors: a plan made for other tensors, whose
/// views reach past these storages or whose types they do not hold, is a typed error (it
/// panicked inside a copy).
#[test]
fn the_cpu_reference_refuses_tensors_that_are_not_its_plans() {
    use strided_wgpu::advanced::internal::matmul_plan;
    use strided_wgpu::advanced::internal::matmul_cpu;
    let mut rng = Rng(5);
    let big = rand(&mut rng, &[600]);
    let a = big.view(&[300, 2]).unwrap().select(1, 1).unwrap().view(&[1, 300]).unwrap();
    let b = rand(&mut rng, &[300, 7]);
    let plan = matmul_plan(a.layout(), b.layout(), [DType::F32; 2]).unwrap();
    let want = matmul_cpu(&plan, &a, &b, None).unwrap();
    close(&want.to_vec::<f32>().unwrap(), &naive(&a.contiguous(MemoryFormat::Contiguous).unwrap(), &b));
    // Dense copies of the operands hold 300 and 2100 elements: the plan's A reaches element 599.
    let dense = a.contiguous(MemoryFormat::Contiguous).unwrap();
    let e = matmul_cpu(&plan, &dense, &b, None).unwrap_err();
    assert!(matches!(e, Error::OutOfBounds { .. }), "{e}");
    let ints = HostTensor::from_vec(vec![1i32; 600], &[600]).unwrap();
    let e = matmul_cpu(&plan, &ints, &b, None).unwrap_err();
    assert!(matches!(e, Error::DType { op: "matmul_cpu", .. }), "{e}");
    // float16 operands for a float32 plan; a plan that adds an input, given none.
    let e = matmul_cpu(&plan, &big.to(DType::F16).unwrap(), &b, None).unwrap_err();
    assert!(matches!(e, Error::DType { op: "matmul_cpu", .. }), "{e}");
    let c = rand(&mut rng, &[1, 7]);
    let plan = strided_wgpu::advanced::internal::addmm_plan(c.layout(), a.layout(), b.layout(), 1.0, 1.0, [DType::F32; 3]).unwrap();
    assert!(matmul_cpu(&plan, &a, &b, Some(&c)).is_ok());
    let e = matmul_cpu(&plan, &a, &b, None).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { op: "matmul_cpu", .. }), "{e}");
}

/// A plan's fields are public: one whose sizes disagree with its layouts (an edited `k`, a
/// batch, an addend of another shape, a result shape) is a typed error, on the host and on a
/// device (the host indexed past its operands and panicked).
#[test]
fn a_plan_whose_sizes_disagree_with_its_layouts_is_a_typed_error() {
    use strided_wgpu::advanced::internal::{addmm_plan, matmul_cpu, MatmulPlan};
    let mut rng = Rng(6);
    let (a, b, c) = (rand(&mut rng, &[2, 3]), rand(&mut rng, &[3, 4]), rand(&mut rng, &[2, 4]));
    let plan = addmm_plan(c.layout(), a.layout(), b.layout(), 1.0, 1.0, [DType::F32; 3]).unwrap();
    assert!(matmul_cpu(&plan, &a, &b, Some(&c)).is_ok());
    type Edit = (&'static str, fn(&mut MatmulPlan));
    let edits: [Edit; 6] = [
        ("k", |p| p.k = 4),
        ("m", |p| p.m = 3),
        ("batch", |p| p.batch = vec![2]),
        ("addend", |p| p.c = Some(strided_wgpu::Layout::contiguous(&[2, 2]).unwrap())),
        ("result shape", |p| p.out_shape = vec![8]),
        ("1-d operand", |p| p.promoted = (true, false)),
    ];
    // Each device as it is, and on a context of its own that tunes on a first call (the tuner
    // reads the plan's sizes before the call records anything).
    let devices: Vec<strided_wgpu::GpuContext> = common::gpu::contexts()
        .iter()
        .flat_map(|c| {
            let own = common::gpu::limited(c, |l| l);
            own.set_tuning_policy(strided_wgpu::TuningPolicy::OnFirstCall);
            [c.clone(), own]
        })
        .collect();
    for (what, edit) in edits {
        let mut p = plan.clone();
        edit(&mut p);
        let e = matmul_cpu(&p, &a, &b, Some(&c)).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { op: "addmm", .. }), "{what}: {e}");
        for ctx in &devices {
            let up = |t: &HostTensor| strided_wgpu::DeviceTensor::upload(ctx, t).unwrap();
            let (da, db, dc) = (up(&a), up(&b), up(&c));
            let e = <strided_wgpu::DeviceTensor as Matmul>::run_plan(&p, &da, &db, Some(&dc), None).unwrap_err();
            assert!(matches!(e, Error::InvalidArgument { op: "addmm", .. }), "{what}: {e}");
        }
    }
}

/// PyTorch 2.15's `F.linear` takes `addmm` (the bias in the product, rounded once) for a 2-d
/// input, or a contiguous input with a contiguous bias that is or squeezes to 1-d, and
/// otherwise `matmul` then `add_` (a 16-bit product rounded before the bias is added);
/// `linear_out` takes `addmm` for a 2-d input only. Every value and error here is PyTorch's.
#[test]
fn linear_takes_pytorchs_route_for_its_bias() {
    for (dt, t) in [(DType::BF16, 2f32.powi(-8)), (DType::F16, 2f32.powi(-11))] {
        let h = |v: Vec<f32>, s: &[usize]| HostTensor::from_vec(v, s).unwrap().to(dt).unwrap();
        let val = |y: &HostTensor| y.to(DType::F32).unwrap().to_vec::<f32>().unwrap();
        let w = h(vec![1.0, t], &[1, 2]);
        let contiguous = h(vec![1.0, 1.0], &[1, 1, 2]);
        let strided = h(vec![1.0, 1.0, 1.0, 1.0], &[1, 1, 4]).slice(2, 0, 4, 2).unwrap();
        let b1 = h(vec![t], &[1]);
        let once = 1.0 + 2.0 * t;
        // 1 + t rounds to 1 (a tie to even) before 1 + t is added: 1 again.
        let cases: [(&HostTensor, HostTensor, f32); 5] = [
            (&contiguous, b1.clone(), once),
            (&strided, b1.clone(), 1.0),
            (&contiguous, b1.reshape(&[]).unwrap(), 1.0),
            (&contiguous, b1.reshape(&[1, 1, 1]).unwrap(), 1.0),
            (&strided, b1.to(DType::F32).unwrap(), 1.0),
        ];
        for (i, (x, b, want)) in cases.iter().enumerate() {
            let y = x.linear(&w, Some(b)).unwrap();
            assert_eq!((y.shape(), y.dtype(), val(&y)), (&[1usize, 1, 1][..], dt, vec![*want]), "{dt} case {i}");
            assert_eq!(val(&x.linear_act(&w, Some(b), Activation::Relu).unwrap()), vec![*want], "{dt} case {i} relu");
        }
        assert_eq!(val(&contiguous.reshape(&[1, 2]).unwrap().linear(&w, Some(&b1)).unwrap()), vec![once], "{dt} 2-d");
        // linear_out: matmul then add_ for every input that is not 2-d.
        let out = h(vec![7.0], &[1, 1, 1]);
        contiguous.linear_out(&w, Some(&b1), &out).unwrap();
        assert_eq!(val(&out), vec![1.0], "{dt} linear_out");
    }
    // addmm's route: the bias expands to [rows, out], rows the input's leading dims flattened.
    let x = HostTensor::from_vec((0..24).map(|i| i as f32 / 8.0).collect(), &[2, 3, 4]).unwrap();
    let w = HostTensor::from_vec((0..20).map(|i| i as f32 / 16.0).collect(), &[5, 4]).unwrap();
    let rows = HostTensor::from_vec((0..6).map(|i| i as f32).collect(), &[6, 1]).unwrap();
    let y = x.linear(&w, Some(&rows)).unwrap();
    assert_eq!(y.shape(), &[2, 3, 5]);
    assert_eq!(y.to_vec::<f32>().unwrap()[25..30], [6.046875, 8.734375, 11.421875, 14.109375, 16.796875]);
    let e = x.linear(&w, Some(&HostTensor::from_vec(vec![0f32; 3], &[3, 1]).unwrap())).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }) && e.to_string().contains("[6, 5]"), "{e}");
    // The same bias beside a strided input broadcasts to the result.
    let xt = x.transpose(1, 2).unwrap().contiguous(MemoryFormat::Contiguous).unwrap().transpose(1, 2).unwrap();
    assert_eq!(xt.linear(&w, Some(&HostTensor::from_vec(vec![0f32; 3], &[3, 1]).unwrap())).unwrap().shape(), &[2, 3, 5]);
    // A 1-d input with a [1, out] bias: [out].
    let ones = |s: &[usize]| HostTensor::from_vec(vec![1f32; s.iter().product()], s).unwrap();
    assert_eq!(ones(&[4]).linear(&ones(&[5, 4]), Some(&ones(&[1, 5]))).unwrap().shape(), &[5]);
    // A 1-d weight: addmm's "mat2 must be a matrix" with a [3] bias, a [2, 3] result with a 0-d one.
    assert!(matches!(ones(&[2, 3, 4]).linear(&ones(&[4]), Some(&ones(&[3]))), Err(Error::InvalidArgument { .. })));
    assert_eq!(ones(&[2, 3, 4]).linear(&ones(&[4]), Some(&ones(&[]))).unwrap().shape(), &[2, 3]);
    // A bias of another type: refused on addmm's route, promoted and cast on matmul's.
    let b16 = ones(&[5]).to(DType::F16).unwrap();
    assert!(matches!(ones(&[2, 3, 4]).linear(&ones(&[5, 4]), Some(&b16)), Err(Error::DType { .. })));
    let y = ones(&[2, 3, 4]).linear(&ones(&[5, 4]), Some(&b16.narrow(0, 0, 1).unwrap().reshape(&[]).unwrap())).unwrap();
    assert_eq!((y.dtype(), y.to_vec::<f32>().unwrap()), (DType::F32, vec![5.0; 30]));
    // linear_out off addmm's route adds the bias after writing out: a bias in out's elements is refused.
    let out = HostTensor::from_vec(vec![7f32; 30], &[2, 3, 5]).unwrap();
    assert!(matches!(ones(&[2, 3, 4]).linear_out(&ones(&[5, 4]), Some(&out), &out), Err(Error::Overlap { .. })));
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![7.0; 30]);
}

/// `linear_plan` without the input's or the weight's type is an error, not a panic.
#[test]
fn linear_plan_without_operand_types_is_an_error() {
    use strided_wgpu::advanced::internal::linear_plan;
    use strided_wgpu::Layout;
    let (x, w) = (Layout::contiguous(&[2, 3]).unwrap(), Layout::contiguous(&[4, 3]).unwrap());
    assert!(matches!(linear_plan(&x, &w, None, [Some(DType::F32), None, None]), Err(Error::InvalidArgument { .. })));
    assert!(matches!(linear_plan(&x, &w, None, [None, Some(DType::F32), None]), Err(Error::InvalidArgument { .. })));
    assert_eq!(linear_plan(&x, &w, None, [Some(DType::F32), Some(DType::F32), None]).unwrap().out_shape, vec![2, 4]);
}

/// The host references' float32 accumulators keep float32's range as PyTorch 2.15's CPU
/// (and the device kernels) do: a product past it is infinite (`[1e30, 1e30] @ [1e10, -1e10]`
/// NaN in `matmul`, `linear`, `addmm` and `conv2d`; the f64 sums gave 0), a sum past it
/// infinite (`avg_pool2d` of [3e38, 3e38]: inf, was 3e38), while sums that come back within
/// it keep f64's digits (`[3e38, 3e38] @ [1, -1]`: 0, as PyTorch's).
#[test]
fn float32_accumulators_keep_float32s_range_as_pytorch() {
    use strided_wgpu::{AvgPool2dOptions, Conv2d, Conv2dOptions, Pool2d};
    let t = |v: Vec<f32>, s: &[usize]| HostTensor::from_vec(v, s).unwrap();
    let one = |x: HostTensor| x.to_vec::<f32>().unwrap()[0];
    let (a, b) = (t(vec![1e30, 1e30], &[1, 2]), t(vec![1e10, -1e10], &[2, 1]));
    assert!(one(a.matmul(&b).unwrap()).is_nan());
    assert!(one(a.linear(&b.transpose(0, 1).unwrap(), None).unwrap()).is_nan());
    assert!(one(t(vec![0.0], &[1, 1]).addmm(&a, &b, 1.0, 1.0).unwrap()).is_nan());
    let conv = a.view(&[1, 1, 1, 2]).unwrap().conv2d(&b.view(&[1, 1, 1, 2]).unwrap(), None, &Conv2dOptions::default()).unwrap();
    assert!(one(conv).is_nan());
    let big = t(vec![3e38, 3e38], &[1, 2]);
    assert_eq!(one(big.matmul(&t(vec![1.0, -1.0], &[2, 1])).unwrap()), 0.0);
    assert_eq!(one(big.matmul(&t(vec![1.0, 1.0], &[2, 1])).unwrap()), f32::INFINITY);
    let o = AvgPool2dOptions { kernel: (1, 2), stride: None, padding: (0, 0), ceil_mode: false, count_include_pad: true, divisor_override: None };
    assert_eq!(one(big.view(&[1, 1, 1, 2]).unwrap().avg_pool2d(&o).unwrap()), f32::INFINITY);
    // (Not to (1, 1): that is `mean`, whose host reference stays in f64 for the normalizations'
    // statistics; PyTorch's is inf there.)
    let bins = t(vec![3e38; 4], &[1, 1, 1, 4]).adaptive_avg_pool2d((1, 2)).unwrap();
    assert_eq!(bins.to_vec::<f32>().unwrap(), vec![f32::INFINITY; 2]);
    // A bias of -0.0 over products of +-0.0 stays -0.0 (PyTorch's 1x1 conv2d gives -0.).
    let z = t(vec![0.0], &[1, 1, 1, 1]).conv2d(&t(vec![-1.0], &[1, 1, 1, 1]), Some(&t(vec![-0.0], &[1])), &Conv2dOptions::default()).unwrap();
    let v = one(z);
    assert!(v == 0.0 && v.is_sign_negative(), "{v}");
    // Within range the digits stay f64's: 2^24 + 1 + 1 (PyTorch's float32 sum may give 2^24).
    let fine = t(vec![16_777_216.0, 1.0, 1.0], &[1, 3]).matmul(&t(vec![1.0; 3], &[3, 1])).unwrap();
    assert_eq!(one(fine), 16_777_218.0);
}
