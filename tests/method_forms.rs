//! PyTorch's shape for every op: each elementwise op as `x.op(..)`, `x.op_(..)` and
//! `x.op_out(.., &out)` on host and device tensors, convolution as a method of both
//! (`Conv2d`), the `Batch` methods that record the same calls, and `Error::Unsupported` for
//! what is valid but not served here.

mod common;

use common::conv::{abs, to_device, vals};
use common::elementwise::close;
use common::gpu::{contexts, name};
use common::rng::Rng;
use strided_wgpu::{Conv2d, Conv2dOptions, DeviceTensor, DType, Elementwise, Error, HostTensor, MemoryFormat, Op, Scalar, Strided};
use strided_wgpu::ops::{Input, Target};
use strided_wgpu::advanced::{conv2d_with, ConvKernel, CopyPath, ElementwisePath};
use strided_wgpu::advanced::internal::conv2d_cpu;

fn host(v: Vec<f32>, shape: &[usize]) -> HostTensor {
    HostTensor::from_vec(v, shape).unwrap()
}

fn f32s(t: &HostTensor) -> Vec<f32> {
    t.contiguous(MemoryFormat::Contiguous).unwrap().to_vec::<f32>().unwrap()
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Positive values in [0.1, 2.1] (no NaN from log or sqrt).
fn positive(rng: &mut Rng, n: usize) -> Vec<f32> {
    vals(rng, n).into_iter().map(|v| v.abs() + 0.1).collect()
}

/// Every op of the trait in its three forms, named here one by one (a form missing from the
/// trait does not compile): `x.op(..)`, `x.op_(..)` on a fresh copy of `x`, and
/// `x.op_out(.., &out)` into a transposed view must agree bit for bit; and `x.op(..)` must
/// equal `Elementwise::run` of the op, so that each form computes the op it is named after.
macro_rules! three_forms {
    ($fresh:ident, $out:ident, $fetch:ident, $label:expr; $($name:ident, $name_:ident, $name_out:ident ($($arg:expr),*) => $op:expr, [$($inp:expr),*];)*) => {{
        let mut n = 0;
        $(
            let x = $fresh();
            let new = x.$name($($arg),*).unwrap();
            let inplace = $fresh();
            inplace.$name_($($arg),*).unwrap();
            let out = $out();
            x.$name_out($($arg,)* &out).unwrap();
            let run = T::run($op, &[Input::Tensor(&x) $(, $inp)*], Target::New).unwrap();
            let want = bits(&$fetch(&run));
            assert_eq!(bits(&$fetch(&new)), want, "{}: {}", $label, stringify!($name));
            assert_eq!(bits(&$fetch(&inplace)), want, "{}: {}", $label, stringify!($name_));
            assert_eq!(bits(&$fetch(&out)), want, "{}: {}", $label, stringify!($name_out));
            n += 1;
        )*
        n
    }};
}

/// The three forms of every op on tensors of type `T`, [4, 6] f32.
fn every_op_in_three_forms<T: Elementwise>(label: &str, make: impl Fn(&HostTensor) -> T, fetch: impl Fn(&T) -> Vec<f32>) {
    let mut rng = Rng(7);
    let xv = positive(&mut rng, 24);
    let (ov, tv) = (positive(&mut rng, 24), vals(&mut rng, 6));
    let fresh = || make(&host(xv.clone(), &[4, 6]));
    let out = || make(&HostTensor::zeros(&[6, 4], DType::F32, MemoryFormat::Contiguous).unwrap()).transpose(0, 1).unwrap();
    let other = make(&host(ov, &[4, 6]));
    let row = make(&host(tv, &[6])); // broadcast along dim 0
    let (lo, hi) = (Some(Scalar::Float(0.5)), Some(Scalar::Float(1.5)));
    let n = three_forms! { fresh, out, fetch, label;
        neg, neg_, neg_out () => Op::Neg, [];
        abs, abs_, abs_out () => Op::Abs, [];
        relu, relu_, relu_out () => Op::Relu, [];
        sigmoid, sigmoid_, sigmoid_out () => Op::Sigmoid, [];
        tanh, tanh_, tanh_out () => Op::Tanh, [];
        exp, exp_, exp_out () => Op::Exp, [];
        log, log_, log_out () => Op::Log, [];
        sqrt, sqrt_, sqrt_out () => Op::Sqrt, [];
        rsqrt, rsqrt_, rsqrt_out () => Op::Rsqrt, [];
        floor, floor_, floor_out () => Op::Floor, [];
        ceil, ceil_, ceil_out () => Op::Ceil, [];
        round, round_, round_out () => Op::Round, [];
        trunc, trunc_, trunc_out () => Op::Trunc, [];
        gelu, gelu_, gelu_out () => Op::Gelu, [];
        gelu_tanh, gelu_tanh_, gelu_tanh_out () => Op::GeluTanh, [];
        silu, silu_, silu_out () => Op::Silu, [];
        clamp, clamp_, clamp_out (lo, hi) => Op::Clamp { min: lo, max: hi }, [];
        add, add_, add_out (&other) => Op::Add { alpha: Scalar::Int(1) }, [Input::Tensor(&other)];
        add_scaled, add_scaled_, add_scaled_out (&row, 2.5) => Op::Add { alpha: Scalar::Float(2.5) }, [Input::Tensor(&row)];
        sub, sub_, sub_out (0.75) => Op::Sub { alpha: Scalar::Int(1) }, [Input::Scalar(Scalar::Float(0.75))];
        sub_scaled, sub_scaled_, sub_scaled_out (&other, -0.5) => Op::Sub { alpha: Scalar::Float(-0.5) }, [Input::Tensor(&other)];
        mul, mul_, mul_out (&row) => Op::Mul, [Input::Tensor(&row)];
        div, div_, div_out (&other) => Op::Div, [Input::Tensor(&other)];
        maximum, maximum_, maximum_out (&row) => Op::Maximum, [Input::Tensor(&row)];
        minimum, minimum_, minimum_out (&row) => Op::Minimum, [Input::Tensor(&row)];
        addcmul, addcmul_, addcmul_out (&other, &row, 0.5) => Op::Addcmul { value: Scalar::Float(0.5) }, [Input::Tensor(&other), Input::Tensor(&row)];
    };
    assert_eq!(n, 26, "{label}: ops checked");
}

#[test]
fn every_op_has_three_forms_on_host() {
    every_op_in_three_forms("host", |h| h.clone(), f32s);
}

/// The new forms against plain arithmetic on the host, including a strided `out=` that must
/// leave the elements between its own alone.
#[test]
fn new_forms_compute_what_pytorch_does_on_host() {
    let x = host(vec![1.0, -2.0, 3.0, -4.0, 5.0, -6.0], &[2, 3]);
    let y = host(vec![0.5, 0.25, -1.0], &[3]);
    let t2 = host(vec![2.0, 4.0], &[2, 1]);
    let store = HostTensor::from_vec(vec![-9.0f32; 12], &[2, 6]).unwrap();
    let out = store.slice(1, 0, 6, 2).unwrap(); // every other column
    let xs = [1.0f32, -2.0, 3.0, -4.0, 5.0, -6.0];
    let ys = [0.5f32, 0.25, -1.0];
    let each = |f: &dyn Fn(usize) -> f32| (0..6).map(f).collect::<Vec<f32>>();
    let cases: Vec<(&str, Vec<f32>)> = vec![
        ("add_scaled", each(&|i| xs[i] + 3.0 * ys[i % 3])),
        ("sub_scaled", each(&|i| xs[i] - 3.0 * ys[i % 3])),
        ("addcmul", each(&|i| xs[i] + -0.5 * ys[i % 3] * [2.0, 4.0][i / 3])),
        ("clamp", each(&|i| xs[i].clamp(-2.5, 4.0))),
    ];
    for (op, want) in cases {
        type Form<'a> = Box<dyn Fn(&HostTensor) -> strided_wgpu::Result<()> + 'a>;
        let (new, run_out, run_in): (HostTensor, Form, Form) = match op {
            "add_scaled" => (x.add_scaled(&y, 3).unwrap(), Box::new(|o| x.add_scaled_out(&y, 3, o)), Box::new(|t| t.add_scaled_(&y, 3))),
            "sub_scaled" => (x.sub_scaled(&y, 3).unwrap(), Box::new(|o| x.sub_scaled_out(&y, 3, o)), Box::new(|t| t.sub_scaled_(&y, 3))),
            "addcmul" => (x.addcmul(&y, &t2, -0.5).unwrap(), Box::new(|o| x.addcmul_out(&y, &t2, -0.5, o)), Box::new(|t| t.addcmul_(&y, &t2, -0.5))),
            _ => (x.clamp(Some(Scalar::Float(-2.5)), Some(4.into())).unwrap(), Box::new(|o| x.clamp_out(Some(Scalar::Float(-2.5)), Some(4.into()), o)), Box::new(|t| t.clamp_(Some(Scalar::Float(-2.5)), Some(4.into())))),
        };
        assert_eq!(f32s(&new), want, "{op}");
        run_out(&out).unwrap();
        assert_eq!(f32s(&out), want, "{op}_out");
        let between: Vec<f32> = f32s(&store).into_iter().skip(1).step_by(2).collect();
        assert!(between.iter().all(|&v| v == -9.0), "{op}_out wrote between its columns: {between:?}");
        let inplace = host(xs.to_vec(), &[2, 3]);
        run_in(&inplace).unwrap();
        assert_eq!(f32s(&inplace), want, "{op}_");
        // A destination of another shape is refused and left as it was.
        let wrong = HostTensor::from_vec(vec![7.0f32; 6], &[3, 2]).unwrap();
        assert!(matches!(run_out(&wrong), Err(Error::InvalidArgument { .. })), "{op}_out into [3, 2]");
        assert_eq!(f32s(&wrong), vec![7.0; 6], "{op}_out: the refused destination changed");
    }
    // In place, the result type must fit the tensor: an integer tensor with a float alpha or
    // value is refused (PyTorch: "result type Float can't be cast to Int"), untouched.
    let xi = HostTensor::from_vec(vec![1i32, 2, 3], &[3]).unwrap();
    assert!(matches!(xi.add_scaled_(&xi, 0.5), Err(Error::DType { .. })));
    assert!(matches!(xi.addcmul_(&xi, &y, 1), Err(Error::DType { .. })));
    assert_eq!(xi.to_vec::<i32>().unwrap(), vec![1, 2, 3]);
    // Integers with an integer alpha stay integers, wrapping as PyTorch's do.
    let r = xi.add_scaled(&xi, i32::MAX).unwrap();
    assert_eq!((r.dtype(), r.to_vec::<i32>().unwrap()), (DType::I32, vec![1i32.wrapping_add(i32::MAX), 2i32.wrapping_add(2i32.wrapping_mul(i32::MAX)), 3i32.wrapping_add(3i32.wrapping_mul(i32::MAX))]));
}

/// The new forms on tensors of type `T`: for each op, whether its f32 results are exact, and
/// `[x.op(..), fresh().op_(..), out() after x.op_out(.., out)]`.
#[allow(clippy::type_complexity)]
fn new_forms<T: Elementwise>(x: &T, y: &T, z: &T, fresh: &dyn Fn() -> T, out: &dyn Fn() -> T) -> Vec<(&'static str, bool, [T; 3])> {
    let three = |new: T, inplace: &dyn Fn(&T) -> strided_wgpu::Result<()>, into: &dyn Fn(&T) -> strided_wgpu::Result<()>| {
        let (i, o) = (fresh(), out());
        inplace(&i).unwrap();
        into(&o).unwrap();
        [new, i, o]
    };
    let (lo, hi) = (Some(Scalar::Float(-0.5)), Some(Scalar::Float(0.75)));
    vec![
        ("add_scaled", false, three(x.add_scaled(y, -1.5).unwrap(), &|i| i.add_scaled_(y, -1.5), &|o| x.add_scaled_out(y, -1.5, o))),
        ("sub_scaled", false, three(x.sub_scaled(z, 0.3).unwrap(), &|i| i.sub_scaled_(z, 0.3), &|o| x.sub_scaled_out(z, 0.3, o))),
        ("addcmul", false, three(x.addcmul(y, z, 0.5).unwrap(), &|i| i.addcmul_(y, z, 0.5), &|o| x.addcmul_out(y, z, 0.5, o))),
        ("clamp", true, three(x.clamp(lo, hi).unwrap(), &|i| i.clamp_(lo, hi), &|o| x.clamp_out(lo, hi, o))),
        // alpha = 1 is plain add / sub, exact.
        ("add_scaled alpha=1", true, three(x.add_scaled(z, 1).unwrap(), &|i| i.add_scaled_(z, 1), &|o| x.add_scaled_out(z, 1, o))),
    ]
}

/// The new forms on the device equal the host's: exact for clamp, alpha = 1 and integers,
/// within the data README's tolerance for other alphas and addcmul (f32: atol 1e-6, rtol 4e-7
/// with alpha, 1e-5 otherwise).
#[test]
fn new_forms_on_device_equal_host() {
    for ctx in contexts() {
        let mut rng = Rng(11);
        let (xv, yv, zv) = (vals(&mut rng, 24), vals(&mut rng, 24), vals(&mut rng, 6));
        let (hx, hy, hz) = (host(xv.clone(), &[4, 6]), host(yv, &[4, 6]), host(zv, &[6]));
        let (dx, dy, dz) = (to_device(ctx, &hx), to_device(ctx, &hy), to_device(ctx, &hz));
        let hout = || HostTensor::zeros(&[6, 4], DType::F32, MemoryFormat::Contiguous).unwrap().transpose(0, 1).unwrap();
        let dout = || DeviceTensor::zeros(ctx, &[6, 4], DType::F32, MemoryFormat::Contiguous).unwrap().transpose(0, 1).unwrap();
        let hfresh = || host(xv.clone(), &[4, 6]);
        let dfresh = || DeviceTensor::from_slice(ctx, &xv, &[4, 6]).unwrap();
        let dl = |t: &DeviceTensor| f32s(&t.download().unwrap());
        let want = new_forms(&hx, &hy, &hz, &hfresh, &hout);
        let got = new_forms(&dx, &dy, &dz, &dfresh, &dout);
        for ((op, exact, w), (_, _, g)) in want.iter().zip(&got) {
            for (k, (w, g)) in w.iter().zip(g).enumerate() {
                let form = ["", "_", "_out"][k];
                let (w, g) = (f32s(w), dl(g));
                assert_eq!(g.len(), 24);
                if *exact {
                    assert_eq!(bits(&g), bits(&w), "{}: {op}{form}", name(ctx));
                } else {
                    let tight = *op != "addcmul";
                    for (i, (&gv, &wv)) in g.iter().zip(&w).enumerate() {
                        assert!(close(DType::F32, gv as f64, wv as f64, tight), "{}: {op}{form}[{i}]: {gv} vs {wv}", name(ctx));
                    }
                }
            }
        }
        // Integer arithmetic with alpha is exact (and wraps) on the device too.
        let hi = HostTensor::from_vec(vec![i32::MAX, -7, 1 << 30, 5], &[4]).unwrap();
        let di = DeviceTensor::from_slice(ctx, &[i32::MAX, -7, 1 << 30, 5], &[4]).unwrap();
        let hio = HostTensor::zeros(&[4], DType::I32, MemoryFormat::Contiguous).unwrap();
        let dio = DeviceTensor::zeros(ctx, &[4], DType::I32, MemoryFormat::Contiguous).unwrap();
        hi.add_scaled_out(&hi, 3, &hio).unwrap();
        di.add_scaled_out(&di, 3, &dio).unwrap();
        assert_eq!(dio.download().unwrap().to_vec::<i32>().unwrap(), hio.to_vec::<i32>().unwrap(), "{}: i32 add_scaled_out", name(ctx));
        hi.addcmul_(&hi, &hi, -2).unwrap();
        di.addcmul_(&di, &di, -2).unwrap();
        assert_eq!(di.download().unwrap().to_vec::<i32>().unwrap(), hi.to_vec::<i32>().unwrap(), "{}: i32 addcmul_", name(ctx));
        // A refused out= leaves the destination alone on the device too.
        let wrong = DeviceTensor::from_slice(ctx, &[7f32; 6], &[3, 2]).unwrap();
        assert!(matches!(dx.addcmul_out(&dy, &dz, 0.5, &wrong), Err(Error::InvalidArgument { .. })));
        assert!(matches!(dx.clamp_out(None, None, &dout()), Err(Error::InvalidArgument { .. })));
        assert_eq!(dl(&wrong), vec![7.0; 6], "{}: a refused addcmul_out wrote", name(ctx));
    }
}

/// `Conv2d` on the host is the CPU reference; `conv2d_out` writes only its view, and bad
/// destinations are refused before anything is written.
#[test]
fn conv2d_method_on_host() {
    let mut rng = Rng(3);
    let x = host(vals(&mut rng, 2 * 4 * 5 * 6), &[2, 4, 5, 6]);
    let w = host(vals(&mut rng, 6 * 2 * 3 * 3), &[6, 2, 3, 3]);
    let b = host(vals(&mut rng, 6), &[6]);
    let o = Conv2dOptions { padding: (1, 0), stride: (1, 2), groups: 2, ..Default::default() };
    let want = conv2d_cpu(&x, &w, Some(&b), &o).unwrap();
    let y = x.conv2d(&w, Some(&b), &o).unwrap();
    assert_eq!((y.shape(), y.strides()), (want.shape(), want.strides()));
    assert_eq!(bits(&f32s(&y)), bits(&f32s(&want)));
    // Channels-last input: channels-last output, same values.
    let xl = x.contiguous(MemoryFormat::ChannelsLast).unwrap();
    let yl = xl.conv2d(&w, Some(&b), &o).unwrap();
    assert!(yl.is_contiguous_for(MemoryFormat::ChannelsLast));
    assert_eq!(bits(&f32s(&yl)), bits(&f32s(&want)));
    // Into every other row of a larger tensor.
    let store = HostTensor::from_vec(vec![-9f32; 2 * 6 * 10 * 2], &[2, 6, 10, 2]).unwrap();
    let view = store.slice(2, 0, 10, 2).unwrap();
    x.conv2d_out(&w, Some(&b), &o, &view).unwrap();
    assert_eq!(bits(&f32s(&view)), bits(&f32s(&want)));
    let all = f32s(&store);
    assert_eq!(all.iter().filter(|&&v| v == -9.0).count(), all.len() / 2, "rows between the view's were written");
    // Refused, and untouched: another shape, another type, an overlap with the input.
    let wrong = HostTensor::from_vec(vec![5f32; 2 * 6 * 5 * 3], &[2, 6, 5, 3]).unwrap();
    assert!(matches!(x.conv2d_out(&w, Some(&b), &o, &wrong), Err(Error::InvalidArgument { .. })));
    assert!(f32s(&wrong).iter().all(|&v| v == 5.0));
    let wrong_t = HostTensor::zeros(&[2, 6, 5, 2], DType::F16, MemoryFormat::Contiguous).unwrap();
    assert!(matches!(x.conv2d_out(&w, Some(&b), &o, &wrong_t), Err(Error::InvalidArgument { .. })));
    let shared = host(vals(&mut rng, 240), &[240]);
    let xin = shared.view(&[2, 4, 5, 6]).unwrap();
    let over = shared.narrow(0, 0, 120).unwrap().view(&[2, 6, 5, 2]).unwrap();
    let before = f32s(&shared);
    assert!(matches!(xin.conv2d_out(&w, Some(&b), &o, &over), Err(Error::Overlap { .. })));
    assert_eq!(bits(&f32s(&shared)), bits(&before), "a refused conv2d_out wrote");
    // An f16 input with an f32 weight: PyTorch raises (input and weight types differ).
    let xh = x.to(DType::F16).unwrap();
    let e = xh.conv2d(&w, None, &o).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { op: "conv2d", .. }) && e.to_string().contains("f16") && e.to_string().contains("one dtype"), "{e}");
}

/// `Conv2d` on the device is the device path, within the data README's f32 bound of the
/// reference, into a new tensor or a given one.
#[test]
fn conv2d_method_on_device() {
    for ctx in contexts() {
        let mut rng = Rng(5);
        let x = host(vals(&mut rng, 2 * 8 * 4 * 4), &[2, 8, 4, 4]);
        let w = host(vals(&mut rng, 8 * 8), &[8, 8, 1, 1]);
        let b = host(vals(&mut rng, 8), &[8]);
        let o = Conv2dOptions::default();
        let want = f32s(&x.conv2d(&w, Some(&b), &o).unwrap());
        let scale = f32s(&abs(&x).conv2d(&abs(&w), Some(&abs(&b)), &o).unwrap());
        let (dx, dw, db) = (to_device(ctx, &x), to_device(ctx, &w), to_device(ctx, &b));
        let check = |got: &[f32], what: &str| {
            for (i, ((&g, &wv), &s)) in got.iter().zip(&want).zip(&scale).enumerate() {
                assert!((g - wv).abs() <= 1e-5 * s + 1e-6, "{} {what}[{i}]: {g} vs {wv}", name(ctx));
            }
        };
        let y = dx.conv2d(&dw, Some(&db), &o).unwrap();
        assert_eq!(y.shape(), &[2, 8, 4, 4]);
        check(&f32s(&y.download().unwrap()), "conv2d");
        let out = DeviceTensor::from_slice(ctx, &vec![-9f32; 256], &[2, 8, 4, 4]).unwrap();
        dx.conv2d_out(&dw, Some(&db), &o, &out).unwrap();
        check(&f32s(&out.download().unwrap()), "conv2d_out");
        // Refused before anything is tuned or written.
        let wrong = DeviceTensor::from_slice(ctx, &[5f32; 2 * 8 * 4 * 3], &[2, 8, 4, 3]).unwrap();
        assert!(matches!(dx.conv2d_out(&dw, Some(&db), &o, &wrong), Err(Error::InvalidArgument { .. })));
        assert!(f32s(&wrong.download().unwrap()).iter().all(|&v| v == 5.0));
        let shared = DeviceTensor::from_slice(ctx, &vec![1f32; 512], &[512]).unwrap();
        let (xin, over) = (shared.narrow(0, 0, 256).unwrap().view(&[2, 8, 4, 4]).unwrap(), shared.narrow(0, 128, 256).unwrap().view(&[2, 8, 4, 4]).unwrap());
        assert!(matches!(xin.conv2d_out(&dw, None, &o, &over), Err(Error::Overlap { .. })));
        assert!(f32s(&shared.download().unwrap()).iter().all(|&v| v == 1.0));
    }
}

/// Several ops recorded into one batch through the methods named as the tensors' (every kind:
/// new, in place, out=, `to`, `copy_`, `conv2d`, `conv2d_out`), nothing run before the
/// submission, then the same sequence on the host.
#[test]
fn batch_records_what_the_methods_run() {
    for ctx in contexts() {
        let mut rng = Rng(21);
        let (hx, hz) = (host(vals(&mut rng, 12), &[3, 4]), host(vals(&mut rng, 4), &[4]));
        let (dx, dz) = (to_device(ctx, &hx), to_device(ctx, &hz));
        let marker = |shape: &[usize]| DeviceTensor::from_slice(ctx, &vec![-9f32; shape.iter().product()], shape).unwrap();
        let dout = marker(&[4, 3]).transpose(0, 1).unwrap();
        let ddst = marker(&[4, 3]);
        let img = host(vals(&mut rng, 2 * 4 * 3 * 3), &[1, 4, 3, 6]).slice(3, 0, 6, 2).unwrap(); // strided input
        let w = host(vals(&mut rng, 4 * 4 * 3 * 3), &[4, 4, 3, 3]);
        let co = Conv2dOptions { padding: (1, 1), ..Default::default() };
        let (dimg, dw) = (to_device(ctx, &img), to_device(ctx, &w));
        let dcout = marker(&[1, 4, 3, 3]);

        let mut batch = ctx.batch();
        let y = batch.add_scaled(&dx, &dz, 2.0).unwrap(); // y = x + 2 z
        batch.clamp_(&y, Some(Scalar::Float(-1.5)), Some(Scalar::Float(1.5))).unwrap();
        batch.addcmul_out(&y, &dx, &dz, 0.5, &dout).unwrap(); // out = y + 0.5 x z
        batch.sub_scaled_(&dx, &dz, 0.25).unwrap(); // x changes after its uses above
        let half = batch.to(&dout, DType::F16).unwrap();
        let same = batch.to(&dx, DType::F32).unwrap();
        assert!(same.shares_storage(&dx) && same.layout() == dx.layout(), "to() of the same dtype is the same view");
        batch.copy_(&ddst, &dout.transpose(0, 1).unwrap()).unwrap();
        let r = batch.relu(&dx).unwrap();
        batch.neg_out(&r, &r).unwrap();
        let c = batch.conv2d(&dimg, &dw, None, &co).unwrap();
        batch.conv2d_out(&dimg, &dw, None, &co, &dcout).unwrap();
        // Recording runs nothing: the destinations hold their markers until the submission.
        assert!(f32s(&dout.download().unwrap()).iter().all(|&v| v == -9.0), "{}: recorded work ran before submit", name(ctx));
        batch.submit_and_wait().unwrap();

        let hy = hx.add_scaled(&hz, 2.0).unwrap();
        hy.clamp_(Some(Scalar::Float(-1.5)), Some(Scalar::Float(1.5))).unwrap();
        let hout = hy.addcmul(&hx, &hz, 0.5).unwrap();
        let hx2 = hx.sub_scaled(&hz, 0.25).unwrap();
        let hr = hx2.relu().unwrap().neg().unwrap();
        let near = |what: &str, got: &[f32], want: &[f32], tight: bool| {
            assert_eq!(got.len(), want.len(), "{what}");
            for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
                assert!(close(DType::F32, g as f64, w as f64, tight), "{} {what}[{i}]: {g} vs {w}", name(ctx));
            }
        };
        near("add_scaled + clamp_", &f32s(&y.download().unwrap()), &f32s(&hy), true);
        near("addcmul_out", &f32s(&dout.download().unwrap()), &f32s(&hout), false);
        near("sub_scaled_", &f32s(&dx.download().unwrap()), &f32s(&hx2), true);
        near("relu, neg_out", &f32s(&r.download().unwrap()), &f32s(&hr), true);
        assert_eq!(half.dtype(), DType::F16);
        let halves: Vec<f32> = half.download().unwrap().to(DType::F32).unwrap().to_vec::<f32>().unwrap();
        let want_halves: Vec<f32> = dout.download().unwrap().to(DType::F16).unwrap().to(DType::F32).unwrap().contiguous(MemoryFormat::Contiguous).unwrap().to_vec::<f32>().unwrap();
        assert_eq!(bits(&halves), bits(&want_halves), "{}: to(f16) of the recorded out", name(ctx));
        assert_eq!(bits(&f32s(&ddst.download().unwrap())), bits(&f32s(&dout.download().unwrap().transpose(0, 1).unwrap())), "{}: copy_", name(ctx));
        let wantc = f32s(&img.conv2d(&w, None, &co).unwrap());
        let scale = f32s(&abs(&img.contiguous(MemoryFormat::Contiguous).unwrap()).conv2d(&abs(&w), None, &co).unwrap());
        for (what, got) in [("conv2d", f32s(&c.download().unwrap())), ("conv2d_out", f32s(&dcout.download().unwrap()))] {
            for (i, ((&g, &wv), &s)) in got.iter().zip(&wantc).zip(&scale).enumerate() {
                assert!((g - wv).abs() <= 1e-5 * s + 1e-6, "{} batch {what}[{i}]: {g} vs {wv}", name(ctx));
            }
        }
        // A bad call records nothing and leaves the batch usable.
        let mut batch = ctx.batch();
        let keep = marker(&[3, 4]);
        assert!(matches!(batch.add_scaled_out(&dx, &dz, 1, &marker(&[4, 4])), Err(Error::InvalidArgument { .. })));
        batch.mul_out(&dx, 0.0, &keep).unwrap();
        batch.submit_and_wait().unwrap();
        assert!(f32s(&keep.download().unwrap()).iter().all(|&v| v == 0.0 || v == -0.0));
    }
}

/// What is valid but not served here is `Error::Unsupported`, not `InvalidArgument`: a forced
/// kernel not eligible for the shape, a feature the adapter lacks, a type not implemented.
#[test]
fn unsupported_is_its_own_error() {
    // Host: a result type PyTorch widens to int16.
    let u = HostTensor::from_vec(vec![1u8, 2], &[2]).unwrap();
    let i = HostTensor::from_vec(vec![-1i8, 2], &[2]).unwrap();
    let e = u.add(&i).unwrap_err();
    assert!(matches!(e, Error::Unsupported { op: "add", .. }) && e.to_string().contains("int16"), "{e}");
    for ctx in contexts() {
        let mut rng = Rng(13);
        let x = to_device(ctx, &host(vals(&mut rng, 2 * 4 * 5 * 5), &[2, 4, 5, 5]));
        let w = to_device(ctx, &host(vals(&mut rng, 6 * 4 * 3 * 3), &[6, 4, 3, 3]));
        let o = Conv2dOptions::default();
        // A depthwise kernel forced on a dense convolution.
        let e = conv2d_with(&x, &w, None, &o, ConvKernel::DepthwiseNchw).unwrap_err();
        assert!(matches!(e, Error::Unsupported { op: "conv2d", .. }) && e.to_string().contains("groups == C"), "{}: {e}", name(ctx));
        // The same through a batch: nothing recorded, the output untouched.
        let out = DeviceTensor::from_slice(ctx, &vec![3f32; 2 * 6 * 3 * 3], &[2, 6, 3, 3]).unwrap();
        let mut batch = ctx.batch();
        let e = batch.conv2d_out_with(&x, &w, None, &o, &out, ConvKernel::DepthwiseTall).unwrap_err();
        assert!(matches!(e, Error::Unsupported { .. }), "{}: {e}", name(ctx));
        let e = batch.conv2d_out_with(&x, &w, None, &Conv2dOptions { stride: (2, 2), ..o }, &DeviceTensor::zeros(ctx, &[2, 6, 2, 2], DType::F32, MemoryFormat::Contiguous).unwrap(), ConvKernel::DirectBand).unwrap_err();
        assert!(matches!(e, Error::Unsupported { .. }) && e.to_string().contains("3x3 kernel with stride 1"), "{}: {e}", name(ctx));
        batch.submit_and_wait().unwrap();
        assert!(f32s(&out.download().unwrap()).iter().all(|&v| v == 3.0), "{}: a refused convolution wrote", name(ctx));
        // A kernel the adapter cannot run (subgroup shuffles, where it has none).
        if !ctx.adapter().shuffled_weights {
            let e = conv2d_with(&x, &w, None, &o, ConvKernel::DirectBand).unwrap_err();
            assert!(matches!(e, Error::Unsupported { .. }) && e.to_string().contains("needs subgroups"), "{}: {e}", name(ctx));
        }
        // A bad argument stays InvalidArgument: stride 0 with a forced kernel.
        let e = conv2d_with(&x, &w, None, &Conv2dOptions { stride: (0, 1), ..o }, ConvKernel::GemmNchw).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{}: {e}", name(ctx));
        // An f16 input with an f32 weight (PyTorch raises: the types differ).
        let xh = DeviceTensor::zeros(ctx, &[2, 4, 5, 5], DType::F16, MemoryFormat::Contiguous).unwrap();
        assert!(matches!(xh.conv2d(&w, None, &o), Err(Error::InvalidArgument { .. })));
        // A forced copy path that does not apply to the plan (a dense copy, not a transpose).
        let dst = DeviceTensor::from_slice(ctx, &[0f32; 6], &[2, 3]).unwrap();
        let src = DeviceTensor::from_slice(ctx, &[1f32; 6], &[2, 3]).unwrap();
        let e = dst.copy_with(&src, CopyPath::TransposeTile { wg: 256, tile: 32 }).unwrap_err();
        assert!(matches!(e, Error::Unsupported { op: "copy_", .. }), "{}: {e}", name(ctx));
        // ... while bad kernel parameters are a bad argument.
        let e = dst.copy_with(&src.transpose(0, 1).unwrap().contiguous(MemoryFormat::Contiguous).unwrap().view(&[3, 2]).unwrap().transpose(0, 1).unwrap(), CopyPath::TransposeTile { wg: 100, tile: 32 }).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { op: "copy_", .. }), "{}: {e}", name(ctx));
        assert!(f32s(&dst.download().unwrap()).iter().all(|&v| v == 0.0));
        // A forced rows kernel on a plan whose rows are not whole quads.
        let odd = DeviceTensor::from_slice(ctx, &[1f32; 9], &[3, 3]).unwrap();
        let e = DeviceTensor::run_with(Op::Neg, &[Input::Tensor(&odd.transpose(0, 1).unwrap())], Target::New, ElementwisePath::Rows { wg: 64, ept: 1 }).unwrap_err();
        assert!(matches!(e, Error::Unsupported { .. }), "{}: {e}", name(ctx));
    }
}

/// PyTorch rules that the reviews found unmet, on the host and every adapter:
/// - a channels-last weight makes conv2d's output channels-last, as PyTorch's
///   `_determine_backend_memory_format` (a channels-last model on NCHW images);
/// - bilinear interpolation to an unchanged size copies, whatever the factor
///   (`compute_source_index_and_lambda`);
/// - `linear` with a 2-d input, a 1-d weight and a bias is refused (PyTorch's `addmm` needs a
///   matrix);
/// - adaptive pooling to an output the host cannot hold is an error, and one whose bin bounds
///   would wrap the device's 32-bit arithmetic a typed error there (it read wrong elements);
/// - `fold_batch_norm`'s bias keeps the digits of a bias close to the running mean.
#[test]
fn rules_the_reviews_found() {
    use strided_wgpu::ops::{fold_batch_norm, InterpolateMode, InterpolateOptions};
    use strided_wgpu::{Matmul, Pool2d, ShapeOps};
    let x = host((0..2 * 8 * 6 * 6).map(|i| (i % 13) as f32 - 6.0).collect(), &[2, 8, 6, 6]);
    let w = host((0..4 * 8 * 9).map(|i| (i % 7) as f32 * 0.25 - 0.75).collect(), &[4, 8, 3, 3]).contiguous(MemoryFormat::ChannelsLast).unwrap();
    let o = Conv2dOptions { padding: (1, 1), ..Default::default() };
    let y = x.conv2d(&w, None, &o).unwrap();
    assert!(y.is_contiguous_for(MemoryFormat::ChannelsLast) && !y.is_contiguous(), "{:?}", y.strides());
    let small = host(vec![0.0, 1.0, 2.0, 3.0], &[1, 1, 2, 2]);
    let same = InterpolateOptions::scale((1.4, 1.4), InterpolateMode::Bilinear { align_corners: false });
    assert_eq!(small.interpolate(&same).unwrap().to_vec::<f32>().unwrap(), vec![0.0, 1.0, 2.0, 3.0]);
    // The copy reads no neighbour: an infinity does not reach the other pixels.
    let inf = host(vec![1.0, 2.0, f32::INFINITY, 4.0], &[1, 1, 2, 2]);
    let copied = inf.interpolate(&same).unwrap().to_vec::<f32>().unwrap();
    assert_eq!((copied[0], copied[1], copied[3]), (1.0, 2.0, 4.0), "{copied:?}");
    let (a, v, b) = (host(vec![1.0; 12], &[3, 4]), host(vec![1.0; 4], &[4]), host(vec![1.0], &[]));
    assert!(matches!(a.linear(&v, Some(&b)), Err(Error::InvalidArgument { op: "linear", .. })));
    assert_eq!(a.linear(&v, None).unwrap().to_vec::<f32>().unwrap(), vec![4.0; 3]);
    assert!(matches!(small.adaptive_avg_pool2d((1 << 31, 1 << 31)), Err(Error::Overflow { .. })));
    // (bias - mean) * scale + bn_bias: 0.001 * 10 = 0.01 (bias * scale - mean * scale gave
    // 0.0100098, a 2e-3 error).
    let one = |v: f32| host(vec![v], &[1]);
    let (_, folded) = fold_batch_norm(&host(vec![1.0; 9], &[1, 1, 3, 3]), Some(&one(100.001)), &one(100.0), &one(0.01 - 1e-5), Some(&one(1.0)), Some(&one(0.0)), 1e-5).unwrap();
    let got = folded.to_vec::<f32>().unwrap()[0];
    let want = ((100.001f32 as f64) - 100.0) * 10.0;
    assert!((got as f64 - want).abs() < 1e-6, "{got} against {want}");
    for ctx in contexts() {
        let (dx, dw) = (to_device(ctx, &x), to_device(ctx, &w));
        let dy = dx.conv2d(&dw, None, &o).unwrap();
        assert_eq!(dy.strides(), y.strides(), "{}", name(ctx));
        assert_eq!(to_device(ctx, &small).interpolate(&same).unwrap().download().unwrap().to_vec::<f32>().unwrap(), vec![0.0, 1.0, 2.0, 3.0], "{}", name(ctx));
        let d = to_device(ctx, &inf).interpolate(&same).unwrap().download().unwrap().to_vec::<f32>().unwrap();
        assert_eq!(d.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), copied.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), "{}", name(ctx));
        // 50,000 bins of 100,000 inputs: (o + 1) * 100,000 passes 2^32 from o = 42,950.
        let long = DeviceTensor::from_slice(ctx, &vec![1f32; 100_000], &[1, 1, 1, 100_000]).unwrap();
        // (30,000 bins: past i32 from o = 21,475, within u32.)
        for bins in [50_000, 30_000] {
            let r = long.adaptive_avg_pool2d((1, bins));
            assert!(matches!(r, Err(Error::Limit { .. })), "{}: {bins}: {:?}", name(ctx), r.err());
        }
        assert_eq!(long.adaptive_avg_pool2d((1, 20_000)).unwrap().download().unwrap().to_vec::<f32>().unwrap(), vec![1.0; 20_000], "{}", name(ctx));
    }
}

/// gelu, gelu_tanh and silu take float inputs only, as PyTorch's kernels do (integer inputs
/// were mapped to float32 before the check, which never fired). An op's argument (alpha, a
/// clamp bound) past float32's range is an error for a float computation, as PyTorch's
/// `checked_convert`; an operand scalar past it is infinity, in PyTorch too.
#[test]
fn float_only_ops_and_arguments_past_float32() {
    fn checks<T: Elementwise + Strided>(ints: &T, x: &T) -> Vec<(String, bool)> {
        let is = |r: &Result<T, Error>, op: &str, dtype: bool| match r {
            Err(e @ Error::DType { .. }) => dtype && e.op().contains(op),
            Err(e @ Error::InvalidArgument { .. }) => !dtype && e.op() == op && e.to_string().contains("1e300"),
            _ => false,
        };
        vec![
            ("gelu of int32".into(), is(&ints.gelu(), "gelu", true)),
            ("gelu_tanh of int32".into(), is(&ints.gelu_tanh(), "gelu", true)),
            ("silu of int32".into(), is(&ints.silu(), "silu", true)),
            ("sigmoid of int32 is float32".into(), ints.sigmoid().is_ok_and(|y| y.dtype() == DType::F32)),
            ("clamp max 1e300".into(), is(&x.clamp(None, Some(Scalar::Float(1e300))), "clamp", false)),
            ("clamp min -1e300".into(), is(&x.clamp(Some(Scalar::Float(-1e300)), None), "clamp", false)),
            ("add alpha 1e300".into(), is(&x.add_scaled(x, 1e300), "add", false)),
            ("addcmul value 1e300".into(), is(&x.addcmul(x, x, 1e300), "addcmul", false)),
            ("clamp max inf".into(), x.clamp(None, Some(Scalar::Float(f64::INFINITY))).is_ok()),
            ("add 1e300".into(), x.add(1e300).is_ok()),
        ]
    }
    let ints = HostTensor::from_vec(vec![1i32, -2, 3], &[3]).unwrap();
    let x = host(vec![1.0, -2.0, 3.0], &[3]);
    let mut all = vec![("host".to_string(), checks(&ints, &x))];
    assert_eq!(f32s(&x.add(1e300).unwrap()), vec![f32::INFINITY; 3]);
    for ctx in contexts() {
        let (di, dx) = (DeviceTensor::upload(ctx, &ints).unwrap(), to_device(ctx, &x));
        assert_eq!(dx.add(1e300).unwrap().download().unwrap().to_vec::<f32>().unwrap(), vec![f32::INFINITY; 3], "{}", name(ctx));
        all.push((name(ctx), checks(&di, &dx)));
    }
    for (target, list) in all {
        for (what, ok) in list {
            assert!(ok, "{target}: {what}");
        }
    }
}
