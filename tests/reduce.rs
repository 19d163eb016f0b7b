//! Reductions on the host: PyTorch's rules the conformance file does not reach (errors that
//! write nothing, empty reductions, wrapping integer sums, signed zeros, NaN positions, views
//! with negative steps and broadcast inputs), against plain loops.

use strided_wgpu::{Dims, DType, Elementwise, Error, HostTensor, MemoryFormat, Reduce, Strided};

fn t(v: Vec<f32>, shape: &[usize]) -> HostTensor {
    HostTensor::from_vec(v, shape).unwrap()
}

#[test]
fn bad_dims_and_types_are_typed_errors() {
    let x = t((0..24).map(|i| i as f32).collect(), &[2, 3, 4]);
    assert!(matches!(
        x.sum(3, false),
        Err(Error::DimOutOfRange {
            op: "sum",
            dim: 3,
            rank: 3
        })
    ));
    assert!(matches!(x.sum(-4, false), Err(Error::DimOutOfRange { .. })));
    assert!(matches!(
        x.amax([0, -3], false),
        Err(Error::InvalidArgument { op: "amax", .. })
    ));
    assert!(matches!(
        x.norm(3.0, 0, false),
        Err(Error::Unsupported { op: "norm", .. })
    ));
    assert!(matches!(x.softmax(3), Err(Error::DimOutOfRange { .. })));
    let i = HostTensor::from_vec((0..6).collect::<Vec<i32>>(), &[2, 3]).unwrap();
    assert!(i.mean(0, false).is_err());
    assert!(i.var(0, 1.0, false).is_err());
    assert!(i.softmax(0).is_err());
    assert!(i.mean_dtype(0, false, DType::I32).is_err());
    let u = HostTensor::from_vec(vec![1u32, 2, 3], &[3]).unwrap();
    for r in [
        u.amax(0, false),
        u.argmax(None, false),
        u.max_dim(0, false).map(|p| p.0),
    ] {
        assert!(matches!(r, Err(Error::DType { .. })), "{r:?}");
    }
    // An empty reduction has no maximum; a sum of nothing is 0.
    let e = HostTensor::zeros(&[3, 0], DType::F32, MemoryFormat::Contiguous).unwrap();
    assert!(
        e.amax(1, false).is_err()
            && e.argmax(None, false).is_err()
            && e.max_dim(1, false).is_err()
            && e.norm(f64::INFINITY, 1, false).is_err()
    );
    assert_eq!(e.amax(0, false).unwrap().shape(), &[0]);
}

#[test]
fn out_forms_check_before_writing() {
    let x = t(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let wrong = t(vec![9.0; 3], &[3]);
    assert!(x.sum_out(0, false, &wrong).is_err());
    assert_eq!(wrong.to_vec::<f32>().unwrap(), vec![9.0; 3]);
    let int_out = HostTensor::from_vec(vec![7i32; 2], &[2]).unwrap();
    assert!(x.sum_out(0, false, &int_out).is_err());
    assert_eq!(int_out.to_vec::<i32>().unwrap(), vec![7, 7]);
    // Overlapping the input, or itself.
    assert!(matches!(
        x.sum_out(0, false, &x.select(0, 0).unwrap()),
        Err(Error::Overlap { .. })
    ));
    let expanded = t(vec![5.0], &[1]).expand(&[2]).unwrap();
    assert!(matches!(
        x.sum_out(0, false, &expanded),
        Err(Error::Overlap { .. })
    ));
    assert!(matches!(x.softmax_out(1, &x), Err(Error::Overlap { .. })));
    // max(dim) into values and indices.
    let (v, i) = (
        t(vec![0.0; 2], &[2]),
        HostTensor::from_vec(vec![0i32; 2], &[2]).unwrap(),
    );
    x.max_dim_out(1, false, &v, &i).unwrap();
    assert_eq!(
        (v.to_vec::<f32>().unwrap(), i.to_vec::<i32>().unwrap()),
        (vec![2.0, 4.0], vec![1, 1])
    );
    let out = t(vec![0.0; 4], &[2, 2]).transpose(0, 1).unwrap();
    x.softmax_out(0, &out).unwrap();
    assert_eq!(
        out.to_vec::<f32>().unwrap(),
        x.softmax(0).unwrap().to_vec::<f32>().unwrap()
    );
}

#[test]
fn empty_and_scalar_reductions() {
    let e = HostTensor::zeros(&[2, 0, 3], DType::F32, MemoryFormat::Contiguous).unwrap();
    assert_eq!(
        e.sum(1, false).unwrap().to_vec::<f32>().unwrap(),
        vec![0.0; 6]
    );
    assert_eq!(e.prod(Some(1), true).unwrap().shape(), &[2, 1, 3]);
    assert_eq!(
        e.prod(Some(1), true).unwrap().to_vec::<f32>().unwrap(),
        vec![1.0; 6]
    );
    let (mean, var) = (e.mean(1, false).unwrap().to_vec::<f32>().unwrap(), e.var(1, 0.0, false).unwrap().to_vec::<f32>().unwrap());
    assert!(mean.len() == 6 && mean.iter().all(|v| v.is_nan()), "{mean:?}");
    assert!(var.len() == 6 && var.iter().all(|v| v.is_nan()), "{var:?}");
    assert_eq!(
        e.logsumexp(1, false).unwrap().to_vec::<f32>().unwrap(),
        vec![f32::NEG_INFINITY; 6]
    );
    assert_eq!(e.norm(2.0, Dims::All, true).unwrap().shape(), &[1, 1, 1]);
    let s = t(vec![-2.5], &[]).squeeze(0).unwrap();
    assert_eq!(s.rank(), 0);
    assert_eq!(
        s.sum(0, false).unwrap().to_vec::<f32>().unwrap(),
        vec![-2.5]
    );
    assert_eq!(
        s.argmax(Some(-1), true).unwrap().to_vec::<i32>().unwrap(),
        vec![0]
    );
    assert_eq!(s.softmax(0).unwrap().to_vec::<f32>().unwrap(), vec![1.0]);
    assert_eq!(s.cumsum(-1).unwrap().to_vec::<f32>().unwrap(), vec![-2.5]);
}

#[test]
fn integers_nan_and_zeros() {
    // int32 sums wrap as PyTorch's dtype=torch.int32 sum does.
    let i = HostTensor::from_vec(vec![i32::MAX, 1, 5], &[3]).unwrap();
    assert_eq!(
        i.sum(0, false).unwrap().to_vec::<i32>().unwrap(),
        vec![i32::MAX.wrapping_add(6)]
    );
    let u8s = HostTensor::from_vec(vec![200u8, 100, 50], &[3]).unwrap();
    let s = u8s.sum(0, false).unwrap();
    assert_eq!(
        (s.dtype(), s.to_vec::<i32>().unwrap()),
        (DType::I32, vec![350])
    );
    assert_eq!(
        u8s.cumsum(0).unwrap().to_vec::<i32>().unwrap(),
        vec![200, 300, 350]
    );
    assert_eq!(
        u8s.sum_dtype(0, false, DType::F16)
            .unwrap()
            .to_vec::<half::f16>()
            .unwrap(),
        vec![half::f16::from_f32(350.0)]
    );
    // NaN: amax propagates it, argmax points at the first one.
    let x = t(vec![1.0, f32::NAN, 3.0, f32::NAN], &[4]);
    assert!(x.amax(0, false).unwrap().to_vec::<f32>().unwrap()[0].is_nan());
    assert_eq!(
        x.argmin(Some(0), false).unwrap().to_vec::<i32>().unwrap(),
        vec![1]
    );
    let (v, i) = x.max_dim(0, false).unwrap();
    assert!(v.to_vec::<f32>().unwrap()[0].is_nan());
    assert_eq!(i.to_vec::<i32>().unwrap(), vec![1]);
    // Signed zeros: amax orders -0.0 below +0.0 whatever the order; ties give the first index.
    for v in [vec![-0.0f32, 0.0], vec![0.0, -0.0]] {
        let z = t(v, &[2]);
        assert_eq!(
            z.amax(0, false).unwrap().to_vec::<f32>().unwrap()[0].to_bits(),
            0
        );
        assert_eq!(
            z.amin(0, false).unwrap().to_vec::<f32>().unwrap()[0].to_bits(),
            (-0.0f32).to_bits()
        );
        assert_eq!(
            z.argmax(None, false).unwrap().to_vec::<i32>().unwrap(),
            vec![0]
        );
    }
}

#[test]
fn views_with_steps_and_broadcasts_against_loops() {
    let base = t(
        (0..60).map(|i| ((i * 37) % 23) as f32 - 11.0).collect(),
        &[3, 4, 5],
    );
    let x = base
        .flip(2)
        .unwrap()
        .slice(1, 0, 4, 2)
        .unwrap()
        .permute(&[2, 0, 1])
        .unwrap(); // [5, 3, 2]
    let dense = x
        .contiguous(MemoryFormat::Contiguous)
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    let at = |a: usize, b: usize, c: usize| dense[(a * 3 + b) * 2 + c] as f64;
    let s = x.sum([0, 2], false).unwrap().to_vec::<f32>().unwrap();
    for (b, &got) in s.iter().enumerate() {
        let want: f64 = (0..5).flat_map(|a| (0..2).map(move |c| (a, c))).map(|(a, c)| at(a, b, c)).sum();
        assert_eq!(got as f64, want);
    }
    let am = x.argmax(Some(0), true).unwrap();
    assert_eq!(am.shape(), &[1, 3, 2]);
    let am = am.to_vec::<i32>().unwrap();
    for (j, &k) in am.iter().enumerate() {
        let (b, c) = (j / 2, j % 2);
        let col: Vec<f64> = (0..5).map(|a| at(a, b, c)).collect();
        let first_max = col
            .iter()
            .position(|&v| v == col.iter().cloned().fold(f64::MIN, f64::max))
            .unwrap();
        assert_eq!(k as usize, first_max);
    }
    // A broadcast input reads each element many times.
    let row = t(vec![1.0, 2.0, 3.0], &[3]).expand(&[4, 3]).unwrap();
    assert_eq!(
        row.sum(0, false).unwrap().to_vec::<f32>().unwrap(),
        vec![4.0, 8.0, 12.0]
    );
    assert_eq!(
        row.var(Dims::All, 0.0, false)
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        vec![2.0 / 3.0]
    );
    // softmax, log_softmax and cumsum return contiguous tensors whatever the input's memory
    // order, as PyTorch's (`_softmax`'s LEGACY_CONTIGUOUS_MEMORY_FORMAT), so that a `view`
    // after them works as there.
    let cl = t((0..24).map(|i| i as f32 / 8.0).collect(), &[1, 2, 3, 4])
        .contiguous(MemoryFormat::ChannelsLast)
        .unwrap();
    let plain = cl.contiguous(MemoryFormat::Contiguous).unwrap();
    for (y, want) in [(cl.softmax(1), plain.softmax(1)), (cl.log_softmax(1), plain.log_softmax(1)), (cl.cumsum(1), plain.cumsum(1))] {
        let y = y.unwrap();
        assert_eq!(y.strides(), &[24, 12, 4, 1]);
        assert_eq!(y.to_vec::<f32>().unwrap(), want.unwrap().to_vec::<f32>().unwrap());
        assert!(y.view(&[24]).is_ok());
    }
    let tr = t((0..6).map(|i| i as f32).collect(), &[3, 2]).transpose(0, 1).unwrap();
    assert_eq!(tr.softmax(1).unwrap().strides(), &[3, 1]);
}

/// Sums start from +0.0, as PyTorch's do: a sum or mean of negative zeros and an empty sum or
/// norm are +0.0 (Rust's `Iterator::sum` of floats starts from -0.0). A 0-d input takes dim 0
/// (or -1) once in a list of dims.
#[test]
fn sums_start_from_positive_zero_and_scalar_dims_once() {
    let z = t(vec![-0.0, -0.0], &[2]);
    let empty = HostTensor::zeros(&[0], DType::F32, MemoryFormat::Contiguous).unwrap();
    let cases = [
        ("sum", z.sum(0, false)),
        ("mean", z.mean(0, false)),
        ("norm 1", z.norm(1.0, 0, false)),
        ("empty sum", empty.sum(Dims::All, false)),
        ("empty norm 2", empty.norm(2.0, Dims::All, false)),
        ("empty norm 1", empty.norm(1.0, Dims::All, false)),
    ];
    for (what, r) in cases {
        assert_eq!(r.unwrap().to_vec::<f32>().unwrap()[0].to_bits(), 0, "{what}");
    }
    let s = t(vec![2.0], &[]);
    assert_eq!(s.sum([0], false).unwrap().to_vec::<f32>().unwrap(), vec![2.0]);
    for dims in [[0isize, -1], [0, 0]] {
        assert!(matches!(s.sum(dims, false), Err(Error::InvalidArgument { op: "sum", .. })), "{dims:?}");
        assert!(matches!(s.amax(dims, false), Err(Error::InvalidArgument { op: "amax", .. })), "{dims:?}");
    }
}

/// Float32 sums, norms and products keep a float32 accumulator's range, as PyTorch 2.15's CPU
/// does: a running sum past float32's range is infinite, a product or a square below it 0 (an
/// f64 accumulator gave 3e38, 1e30 and 1e-30); `std` squares in f64, as PyTorch; the 2-norm of
/// one element is its absolute value, as PyTorch's (values from PyTorch but where said). Means
/// stay finite (the normalizations' statistics; PyTorch's mean is inf there).
#[test]
fn float32_reductions_overflow_and_underflow_as_pytorch() {
    let inf = f32::INFINITY;
    let one = |r: strided_wgpu::Result<HostTensor>| r.unwrap().to(DType::F32).unwrap().to_vec::<f32>().unwrap()[0];
    let big = t(vec![3e38, 3e38, -3e38], &[3]);
    assert_eq!(one(big.sum(Dims::All, false)), inf);
    assert_eq!(one(big.sum(0, false)), inf);
    assert_eq!(one(big.mean(Dims::All, false)), 1e38);
    assert_eq!(one(t(vec![1e30, 1e30, 1e-30], &[3]).prod(Some(0), false)), inf);
    assert_eq!(one(t(vec![1e-30, 1e-30, 1e30], &[3]).prod(Some(0), false)), 0.0);
    assert_eq!(one(t(vec![1e20, 1e20], &[2]).norm(2.0, 0, false)), inf);
    assert_eq!(one(t(vec![1e-30, 1e-30], &[2]).norm(2.0, 0, false)), 0.0);
    assert_eq!(one(t(vec![1e-30, 1e-30], &[2]).norm(1.0, 0, false)), 2e-30);
    assert_eq!(one(t(vec![1e20, -1e20], &[2]).std(0, 0.0, false)), 1e20);
    assert_eq!(one(t(vec![3e38, 3e38, -3e38], &[3]).to(DType::BF16).unwrap().sum(0, false)), inf);
    assert_eq!(one(t(vec![1e20], &[1]).norm(2.0, Dims::All, false)), 1e20);
    // A 0-d input: its absolute value for every dim, squared with dim 0 (PyTorch's size check
    // reads past the shape there).
    assert_eq!(one(t(vec![1e20], &[]).norm(2.0, Dims::All, false)), 1e20);
    assert_eq!(one(t(vec![1e20], &[]).norm(2.0, 0, false)), inf);
    assert_eq!(one(t(vec![1e20, 1e-23, 3e-23], &[3, 1]).norm(2.0, 1, false)), 1e20);
    let tiny = t(vec![1e20, 1e-23, 3e-23], &[3, 1]).norm(2.0, 1, false).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(tiny, vec![1e20, 1e-23, 3e-23]);
    // Finite sums keep f64's digits: 2^24 + 1 + 1 + 1 + 1 (PyTorch's float32 sum: 2^24).
    assert_eq!(one(t(vec![16_777_216.0, 1.0, 1.0, 1.0, 1.0], &[5]).sum(0, false)), 16_777_220.0);
}

/// An empty input whose reduced dims multiply past usize: where no output is (a kept dim of
/// 0), an empty result, as PyTorch 2.15's (`sum`, `amax`, `mean`, `var`, `vector_norm` of
/// `zeros(0, 1, 1).expand(0, 2**32, 2**32)` over (1, 2): shape [0]; it was an overflow
/// error here), not a panic or a wrapped count; below that (past isize, or past memory), an
/// empty result with no work listed.
#[test]
fn reduced_sizes_past_usize_with_no_output_are_empty_results() {
    let e = HostTensor::zeros(&[0, 1, 1], DType::F32, MemoryFormat::Contiguous).unwrap();
    let wide = e.expand(&[0, 1 << 32, 1 << 32]).unwrap();
    for r in [wide.sum([1, 2], false), wide.amax([1, 2], false), wide.mean([1, 2], false), wide.var([1, 2], 1.0, false), wide.norm(2.0, [1, 2], false)] {
        assert_eq!(r.unwrap().shape(), &[0]);
    }
    for shape in [[0isize, 1 << 32, 1 << 31], [0, 1 << 32, 1]] {
        assert_eq!(e.expand(&shape).unwrap().sum([1, 2], false).unwrap().shape(), &[0]);
    }
    // A zero among the reduced dims: nothing reduced, whatever the others multiply to.
    let z = HostTensor::zeros(&[0, 1, 1, 0], DType::F32, MemoryFormat::Contiguous).unwrap();
    assert_eq!(z.expand(&[0, 1 << 40, 1 << 40, 0]).unwrap().sum([1, 2, 3], false).unwrap().shape(), &[0]);
}

/// Empty inputs whose outputs are empty or too large: no work listed, or an overflow error.
#[test]
fn empty_inputs_with_huge_dims_list_no_work() {
    let e = HostTensor::zeros(&[1, 0, 1], DType::F32, MemoryFormat::Contiguous).unwrap();
    let x = e.expand(&[1 << 32, 0, 1 << 32]).unwrap();
    assert!(matches!(x.sum(1, false), Err(Error::Overflow { .. })));
    assert_eq!(x.sum(0, false).unwrap().shape(), &[0, 1 << 32]);
    assert_eq!(x.amax([0, 2], true).unwrap().shape(), &[1, 0, 1]);
    assert_eq!(x.amax(2, true).unwrap().shape(), &[1 << 32, 0, 1]);
    // An empty reduced dim leaving more outputs than the host can hold: an error naming the
    // op (a sum of nothing is 0 for each), not a capacity overflow's panic or an abort.
    // A few outputs of an empty input whose other dims are huge: each the sum of nothing (the
    // host listed offsets past a usize: a debug overflow's panic).
    let e = HostTensor::zeros(&[0, 3, 1, 2], DType::F32, MemoryFormat::Contiguous).unwrap();
    let s = e.expand(&[0, 3, 1 << 62, 2]).unwrap().sum([0, 2], false).unwrap();
    assert_eq!((s.shape(), s.to_vec::<f32>().unwrap()), (&[3usize, 2][..], vec![0f32; 6]));
    for shape in [[1usize << 62, 0], [1 << 44, 0]] {
        let x = HostTensor::zeros(&shape, DType::F32, MemoryFormat::Contiguous).unwrap();
        for (op, r) in [("sum", x.sum(1, false)), ("mean", x.mean(1, false)), ("prod", x.prod(Some(1), false))] {
            assert!(matches!(&r, Err(Error::HostMemory { op: o, .. } | Error::Overflow { op: o, .. }) if *o == op), "{shape:?} {op}: {:?}", r.map(|t| t.shape().to_vec()));
        }
    }
}
