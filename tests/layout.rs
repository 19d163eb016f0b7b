//! Unit tests: the seeds' worked examples and PyTorch facts, on the host layer alone.

use strided_wgpu::{DType, Elementwise, Error, HostTensor, Layout, MemoryFormat, Strided};
use strided_wgpu::layout::{CopyPlan, Overlap, Reshape};
use strided_wgpu::layout::CopyKind;
use strided_wgpu::advanced::internal::output_layout;

fn l(shape: &[usize]) -> Layout {
    Layout::contiguous(shape).unwrap()
}

#[test]
fn nchw_strides_and_channels_last() {
    let x = l(&[1, 64, 5, 4]);
    assert_eq!(x.strides(), &[1280, 20, 4, 1]);
    assert!(x.is_contiguous());
    assert!(!x.is_contiguous_for(MemoryFormat::ChannelsLast));
    let cl = Layout::with_format(&[1, 64, 5, 4], MemoryFormat::ChannelsLast).unwrap();
    assert_eq!(cl.shape(), &[1, 64, 5, 4]);
    assert_eq!(cl.strides(), &[1280, 1, 256, 64]);
    assert!(cl.is_contiguous_for(MemoryFormat::ChannelsLast));
    assert_eq!(cl.suggest_memory_format(), MemoryFormat::ChannelsLast);
    assert_eq!(x.suggest_memory_format(), MemoryFormat::Contiguous);
    let cl3 = MemoryFormat::ChannelsLast3d.strides(&[2, 3, 4, 5, 6]).unwrap();
    assert_eq!(cl3, vec![360, 1, 90, 18, 3]);
    assert_eq!(MemoryFormat::ChannelsLast.strides(&[2, 0, 3, 3]).unwrap(), vec![0, 1, 0, 0]);
    assert!(MemoryFormat::ChannelsLast.strides(&[2, 3]).is_err());
}

#[test]
fn contiguity_skips_size_one_dims() {
    let p = l(&[1, 2, 3, 4]).permute(&[1, 2, 3, 0]).unwrap();
    assert_eq!(p.strides(), &[12, 4, 1, 24]);
    assert!(p.is_contiguous());
    assert!(Layout::new(vec![2, 1, 3], vec![3, 7, 1], 0).unwrap().is_contiguous());
    assert!(Layout::new(vec![2, 0], vec![5, 9], 3).unwrap().is_contiguous());
    assert!(!l(&[2, 3]).transpose(0, 1).unwrap().is_contiguous());
}

#[test]
fn select_moves_the_offset() {
    let s = l(&[1, 2, 3, 4]).select(3, 2).unwrap();
    assert_eq!((s.shape(), s.strides(), s.offset()), (&[1usize, 2, 3][..], &[24isize, 12, 4][..], 2));
    assert_eq!(s.storage_indices().unwrap(), vec![2, 6, 10, 14, 18, 22]);
    assert_eq!(l(&[3]).select(0, -1).unwrap().offset(), 2);
    assert!(matches!(l(&[3]).select(0, 3), Err(Error::InvalidArgument { op: "select", .. })));
    assert!(matches!(l(&[]).select(0, 0), Err(Error::DimOutOfRange { .. })));
}

#[test]
fn expand_gives_stride_zero() {
    let e = l(&[1, 64, 1, 1]).expand(&[8, 64, 56, 56]).unwrap();
    assert_eq!(e.strides(), &[0, 1, 0, 0]);
    assert_eq!(l(&[3]).expand(&[1, 3]).unwrap().strides(), &[3, 1]);
    assert_eq!(l(&[]).expand(&[1, 2]).unwrap().strides(), &[0, 0]);
    assert_eq!(l(&[2, 1]).expand(&[-1, 4]).unwrap().strides(), &[1, 0]);
    let err = l(&[2, 3]).expand(&[4, 3]).unwrap_err();
    assert_eq!(err.op(), "expand");
    assert!(err.to_string().contains("[2, 3]") && err.to_string().contains("[4, 3]"), "{err}");
    assert!(l(&[2, 3]).expand(&[3]).is_err());
}

#[test]
fn unsqueeze_stride_rule() {
    let t = Layout::new(vec![2, 2, 4], vec![12, 8, 1], 0).unwrap();
    assert_eq!(t.unsqueeze(1).unwrap().strides(), &[12, 16, 8, 1]);
    assert_eq!(t.unsqueeze(3).unwrap().strides(), &[12, 8, 1, 1]);
    assert_eq!(t.unsqueeze(-1).unwrap().strides(), &[12, 8, 1, 1]);
}

#[test]
fn view_tells_impossible_from_needs_a_copy() {
    let t = l(&[2, 3, 4]).transpose(1, 2).unwrap();
    let e = t.view(&[6, 4]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "view: shape [6, 4] is not compatible with size [2, 4, 3] and strides [12, 1, 4]; use reshape"
    );
    assert!(matches!(t.view(&[5, 5]), Err(Error::IncompatibleShape { .. })));
    assert!(matches!(t.reshape(&[6, 4]).unwrap(), Reshape::Copy(s) if s == vec![6, 4]));
    assert!(matches!(t.reshape(&[2, -1]).unwrap(), Reshape::Copy(s) if s == vec![2, 12]));
    assert_eq!(l(&[2, 3, 4]).view(&[-1, 4]).unwrap().shape(), &[6, 4]);
    assert!(l(&[2, 3, 4]).view(&[-1, -1]).is_err());
    assert!(l(&[0, 3]).view(&[-1, 0]).is_err());
    assert_eq!(l(&[]).view(&[1, 1]).unwrap().strides(), &[1, 1]);
}

#[test]
fn negative_steps_flip_without_copy() {
    let x = HostTensor::from_vec((0..6).map(|i| i as f32).collect(), &[2, 3]).unwrap();
    let f = x.flip(1).unwrap();
    assert_eq!(f.strides(), &[3, -1]);
    assert_eq!(f.to_vec::<f32>().unwrap(), vec![2., 1., 0., 5., 4., 3.]);
    assert!(f.shares_storage(&x));
    let s = x.slice(1, -1, -4, -2).unwrap();
    assert_eq!(s.to_vec::<f32>().unwrap(), vec![2., 0., 5., 3.]);
    assert!(x.slice(0, 0, 2, 0).is_err());
}

#[test]
fn diagonal_unfold_as_strided() {
    let d = l(&[3, 4]).diagonal(1, 0, 1).unwrap();
    assert_eq!((d.shape(), d.strides(), d.offset()), (&[3usize][..], &[5isize][..], 1));
    let u = l(&[7]).unfold(0, 3, 2).unwrap();
    assert_eq!((u.shape(), u.strides()), (&[3usize, 3][..], &[2isize, 1][..]));
    assert!(u.has_internal_overlap());
    assert!(Layout::as_strided(&[2, 2], &[1, 2], 0, 4).is_ok());
    let e = Layout::as_strided(&[2, 2], &[1, 2], 1, 4).unwrap_err();
    assert!(matches!(e, Error::OutOfBounds { hi: 4, storage_len: 4, .. }), "{e}");
    // Empty windows every element of a dim of isize::MAX elements (the tensor is empty): the
    // window count (isize::MAX + 1) does not fit, an error rather than a wrap (found by
    // no_op_panics, with a dim of usize::MAX elements, which is now an error itself).
    let huge = Layout::new(vec![isize::MAX as usize, 0], vec![0, 1], 0).unwrap();
    let e = huge.unfold(0, 0, 1).unwrap_err();
    assert!(matches!(e, Error::Overflow { .. }), "{e}");
}

#[test]
fn overlap_checks_are_exact() {
    let x = l(&[4, 6]);
    let even = x.slice(1, 0, 6, 2).unwrap();
    let odd = x.slice(1, 1, 6, 2).unwrap();
    assert_eq!(even.overlap(&odd), Overlap::Disjoint);
    assert_eq!(even.overlap(&even.clone()), Overlap::Full);
    assert_eq!(x.narrow(0, 0, 3).unwrap().overlap(&x.narrow(0, 1, 3).unwrap()), Overlap::Partial);
    // Interleaved but disjoint, beyond the simple nested-stride test.
    assert!(!Layout::as_strided(&[3, 2], &[2, 3], 0, 8).unwrap().has_internal_overlap());
    assert!(Layout::as_strided(&[3, 2], &[1, 2], 0, 8).unwrap().has_internal_overlap());
}

#[test]
fn walking_a_view_whose_strides_reach_the_end_of_isize_does_not_overflow() {
    // Positions 0 and isize::MAX - 1: a walk that stepped past its last position would
    // overflow (proptest found this through `overlap`, in a debug build).
    let big = isize::MAX - 1;
    let v = Layout::new(vec![2, 1], vec![big, 1], 0).unwrap();
    let mut seen = Vec::new();
    v.for_each_index(|i| seen.push(i));
    assert_eq!(seen, vec![0, big as usize]);
    // Spans meeting in one element, decided exactly by walking `v`.
    let at = |offset| Layout::new(vec![1], vec![1], offset).unwrap();
    assert_eq!(v.overlap(&at(1)), Overlap::Disjoint);
    assert_eq!(v.overlap(&at(0)), Overlap::Partial);
}

#[test]
fn copy_plan_seed_example() {
    let src = l(&[1, 64, 5, 4]);
    let dst = Layout::with_format(&[1, 64, 5, 4], MemoryFormat::ChannelsLast).unwrap();
    let p = CopyPlan::new(&dst, &src).unwrap();
    assert_eq!(p.sizes(), &[64, 20]);
    assert_eq!(p.dst_strides(), &[1, 64]);
    assert_eq!(p.src_strides(), &[20, 1]);
    assert_eq!(p.kind(), CopyKind::BatchedTranspose { dim: 1 });
}

#[test]
fn copy_plan_classes() {
    let x = l(&[8, 64, 56, 56]);
    assert_eq!(CopyPlan::new(&x, &x).unwrap().kind(), CopyKind::Dense);
    assert_eq!(CopyPlan::new(&x, &x).unwrap().sizes(), &[8 * 64 * 56 * 56]);
    let sliced = l(&[8, 64, 56, 112]).narrow(3, 0, 56).unwrap();
    assert_eq!(CopyPlan::new(&x, &sliced).unwrap().kind(), CopyKind::InnerContiguous);
    let step = l(&[8, 64, 112, 112]).slice(2, 0, 112, 2).unwrap().slice(3, 0, 112, 2).unwrap();
    assert_eq!(CopyPlan::new(&x, &step).unwrap().kind(), CopyKind::StridedRows { step: 2 });
    // Reversed, the same rows walk the source backwards.
    assert_eq!(CopyPlan::new(&x, &step.flip(3).unwrap()).unwrap().kind(), CopyKind::StridedRows { step: -2 });
    // A destination that is not contiguous in any dim gathers element by element.
    assert_eq!(CopyPlan::new(&step, &x).unwrap().kind(), CopyKind::Gather);
    let flipped = x.flip(3).unwrap();
    let p = CopyPlan::new(&flipped, &x).unwrap();
    assert!(p.dst_strides().iter().all(|&s| s > 0), "{p:?}");
    let bc = l(&[1, 64, 1, 1]).expand(&[8, 64, 56, 56]).unwrap();
    let p = CopyPlan::new(&x, &bc).unwrap();
    assert_eq!(p.sizes(), &[56 * 56, 64, 8]);
    assert_eq!(p.src_strides(), &[0, 1, 0]);
    let e = CopyPlan::new(&l(&[2, 3]), &l(&[4])).unwrap_err();
    assert_eq!(e.to_string(), "copy_: shape [4] cannot be broadcast to [2, 3]: at dim 1, size 4 must equal 3 or be 1");
}

#[test]
fn host_copy_semantics() {
    let x = HostTensor::from_vec((0..12).map(|i| i as f32).collect(), &[3, 4]).unwrap();
    // Full self-copy is a no-op; partial overlap is refused and leaves the data alone.
    x.copy_(&x.clone()).unwrap();
    let before = x.to_vec::<f32>().unwrap();
    let e = x.narrow(0, 0, 2).unwrap().copy_(&x.narrow(0, 1, 2).unwrap()).unwrap_err();
    assert!(matches!(e, Error::Overlap { op: "copy_", .. }), "{e}");
    assert_eq!(x.to_vec::<f32>().unwrap(), before);
    // An expanded destination reaches elements twice.
    let row = HostTensor::zeros(&[4], DType::F32, MemoryFormat::Contiguous).unwrap();
    assert!(matches!(row.expand(&[3, 4]).unwrap().copy_(&x), Err(Error::Overlap { .. })));
    // Disjoint views of one storage copy fine.
    x.slice(1, 0, 4, 2).unwrap().copy_(&x.slice(1, 1, 4, 2).unwrap()).unwrap();
    assert_eq!(x.to_vec::<f32>().unwrap(), vec![1., 1., 3., 3., 5., 5., 7., 7., 9., 9., 11., 11.]);
    // Broadcasting source; types convert.
    let ones = HostTensor::from_vec(vec![1u32], &[1]).unwrap();
    let u = HostTensor::zeros(&[2, 2], DType::U32, MemoryFormat::Contiguous).unwrap();
    u.copy_(&ones).unwrap();
    assert_eq!(u.to_vec::<u32>().unwrap(), vec![1; 4]);
    u.copy_(&x.narrow(0, 0, 2).unwrap().narrow(1, 0, 2).unwrap()).unwrap();
    assert_eq!(u.to_vec::<u32>().unwrap(), vec![1, 1, 5, 5]);
    assert!(HostTensor::from_vec(vec![1f32; 5], &[2, 3]).is_err());
}

#[test]
fn float_conversions_round_to_nearest_even() {
    let vals = [0.0f32, -0.0, 1.0, 65504.0, 65520.0, 1e-8, 5.96e-8, 3.0e-5, -2.5, f32::INFINITY, 1.0009766, 1.0014648];
    let x = HostTensor::from_vec(vals.to_vec(), &[vals.len()]).unwrap();
    let h = x.materialize(MemoryFormat::Contiguous, DType::F16).unwrap().to_vec::<half::f16>().unwrap();
    let b = x.materialize(MemoryFormat::Contiguous, DType::BF16).unwrap().to_vec::<half::bf16>().unwrap();
    for (i, &v) in vals.iter().enumerate() {
        assert_eq!(h[i].to_bits(), half::f16::from_f32(v).to_bits(), "f16 of {v}");
        assert_eq!(b[i].to_bits(), half::bf16::from_f32(v).to_bits(), "bf16 of {v}");
    }
    // NaN payloads survive widening exactly.
    let nan = HostTensor::from_vec(vec![half::f16::from_bits(0x7d23)], &[1]).unwrap();
    let w = nan.materialize(MemoryFormat::Contiguous, DType::F32).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(w[0].to_bits(), 0x7fa4_6000);
}

#[test]
fn exhaustive_f16_roundtrip_and_widening() {
    use strided_wgpu::advanced::internal::{f16_to_f32_bits, f32_to_f16_bits};
    for bits in 0..=u16::MAX {
        let h = half::f16::from_bits(bits);
        let w = f16_to_f32_bits(bits);
        if h.is_nan() {
            assert!(f32::from_bits(w).is_nan());
        } else {
            assert_eq!(w, h.to_f32().to_bits(), "widening {bits:#x}");
        }
        assert_eq!(f32_to_f16_bits(w), bits | if h.is_nan() { 0x200 } else { 0 }, "round trip {bits:#x}");
    }
}

#[test]
fn overflow_is_an_error() {
    let e = Layout::contiguous(&[usize::MAX, 2]).unwrap_err();
    assert!(matches!(e, Error::Overflow { .. }), "{e}");
    let big = Layout::new(vec![2, 2], vec![isize::MAX, 1], 0).unwrap_err();
    assert!(big.to_string().contains("layout"), "{big}");
}

#[test]
fn to_memory_format_keeps_the_logical_shape() {
    let x = HostTensor::from_vec((0..24).map(|i| i as f32).collect(), &[1, 2, 3, 4]).unwrap();
    let cl = x.to_memory_format(MemoryFormat::ChannelsLast).unwrap();
    assert_eq!((cl.shape(), cl.strides()), (&[1usize, 2, 3, 4][..], &[24isize, 1, 8, 2][..]));
    assert_eq!(cl.to_vec::<f32>().unwrap(), x.to_vec::<f32>().unwrap());
    assert!(cl.to_memory_format(MemoryFormat::ChannelsLast).unwrap().shares_storage(&cl));
    let back = cl.to_memory_format(MemoryFormat::Contiguous).unwrap();
    assert_eq!(back.strides(), &[24, 12, 4, 1]);
    assert!(x.to_memory_format(MemoryFormat::ChannelsLast3d).is_err());
}

#[test]
fn conv1x1_checks_its_input_and_follows_the_input_format() {
    use strided_wgpu::ops::Conv1x1Options;
    use strided_wgpu::advanced::internal::conv1x1_cpu;
    let x = HostTensor::from_vec(vec![1f32; 2 * 4 * 3 * 3], &[2, 4, 3, 3]).unwrap();
    let w = HostTensor::from_vec(vec![0.5f32; 6 * 4], &[6, 4, 1, 1]).unwrap();
    let b = HostTensor::from_vec(vec![-1f32; 6], &[6]).unwrap();
    let o = Conv1x1Options::default();
    let y = conv1x1_cpu(&x, &w, Some(&b), &o).unwrap();
    assert_eq!(y.shape(), &[2, 6, 3, 3]);
    assert!(y.is_contiguous());
    assert_eq!(y.to_vec::<f32>().unwrap()[0], 1.0); // 4 * 0.5 - 1
    let relu = conv1x1_cpu(&x, &w, Some(&HostTensor::from_vec(vec![-5f32; 6], &[6]).unwrap()), &Conv1x1Options { relu: true, ..o }).unwrap();
    assert!(relu.to_vec::<f32>().unwrap().iter().all(|&v| v == 0.0));
    let cl = conv1x1_cpu(&x.contiguous(MemoryFormat::ChannelsLast).unwrap(), &w, None, &o).unwrap();
    assert!(cl.is_contiguous_for(MemoryFormat::ChannelsLast) && !cl.is_contiguous());
    // Stride and padding: OH = (H + 2*ph - 1) / sh + 1.
    let s = conv1x1_cpu(&x, &w, None, &Conv1x1Options { stride: (2, 3), padding: (1, 0), ..o }).unwrap();
    assert_eq!(s.shape(), &[2, 6, 3, 1]);
    // Groups: weight [K, C/groups].
    let wg = HostTensor::from_vec(vec![1f32; 6 * 2], &[6, 2]).unwrap();
    assert_eq!(conv1x1_cpu(&x, &wg, None, &Conv1x1Options { groups: 2, ..o }).unwrap().to_vec::<f32>().unwrap()[0], 2.0);
    // Bad input: typed errors naming the op and the shapes.
    let err = |r: Result<HostTensor, Error>| r.unwrap_err().to_string();
    assert!(err(conv1x1_cpu(&x, &HostTensor::from_vec(vec![0f32; 6 * 3], &[6, 3]).unwrap(), None, &o)).contains("conv1x1: weight shape [6, 3]"));
    assert!(err(conv1x1_cpu(&x, &w, None, &Conv1x1Options { stride: (0, 1), ..o })).contains("stride"));
    assert!(err(conv1x1_cpu(&x, &w, None, &Conv1x1Options { groups: 3, ..o })).contains("groups = 3"));
    assert!(err(conv1x1_cpu(&x, &w, Some(&HostTensor::from_vec(vec![0f32; 5], &[5]).unwrap()), &o)).contains("bias must have shape [6]"));
    let xu = HostTensor::from_vec(vec![1u8; 36 * 2], &[2, 4, 3, 3]).unwrap();
    assert!(matches!(conv1x1_cpu(&xu, &w, None, &o), Err(Error::Unsupported { op: "conv1x1", .. })));
    assert!(conv1x1_cpu(&HostTensor::from_vec(vec![1f32; 4], &[4]).unwrap(), &w, None, &o).is_err());
}

#[test]
fn plan_accessors_never_panic() {
    // An empty plan reaches nothing: no span, and the index formula divides by no zero.
    let e = l(&[0]);
    let p = CopyPlan::new(&e, &e).unwrap();
    assert_eq!(p.numel(), 0);
    assert_eq!(p.span(0), None);
    assert_eq!(p.spans(), None);
    let _ = p.offsets(0);
    // Operands past the plan's.
    let x = l(&[2, 3]);
    let p = CopyPlan::new(&x, &x.transpose(0, 1).unwrap().transpose(0, 1).unwrap()).unwrap();
    assert_eq!(p.operands(), 2);
    assert_eq!(p.strides(2), None);
    assert_eq!(p.offset(2), None);
    assert_eq!(p.span(2), None);
    assert_eq!(p.spans(), Some(((0, 5), (0, 5))));
    // Strides whose products with a size overflow do not merge (and do not panic).
    let src = Layout::new(vec![2, 2], vec![1, 1 << 62], 0).unwrap();
    let p = CopyPlan::new(&l(&[2, 2]), &src).unwrap();
    assert_eq!(p.sizes(), &[2, 2]);
    assert_eq!(p.src_strides(), &[1 << 62, 1]);
}

#[test]
fn output_layout_checks_that_its_inputs_broadcast() {
    let e = output_layout(&[4], &[&l(&[2, 4])], 0).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { op: "output_layout", .. }), "{e}");
    let e = output_layout(&[4], &[&l(&[3])], 0).unwrap_err();
    assert_eq!(e.to_string(), "output_layout: shape [3] cannot be broadcast to [4]: at dim 0, size 3 must equal 4 or be 1");
    assert_eq!(output_layout(&[2, 4], &[&l(&[4]), &l(&[2, 1])], 0).unwrap(), l(&[2, 4]));
}

#[test]
fn to_keeps_the_strides_of_empty_views() {
    // PyTorch counts every empty tensor contiguous, so non-overlapping and dense: `to` keeps
    // its strides (zeros(3, 4).t()[:0] gives strides (1, 4) in PyTorch).
    let t = HostTensor::zeros(&[3, 4], DType::F32, MemoryFormat::Contiguous).unwrap().transpose(0, 1).unwrap().narrow(0, 0, 0).unwrap();
    assert_eq!(t.strides(), &[1, 4]);
    assert_eq!(t.to(DType::F16).unwrap().strides(), &[1, 4]);
    let base = HostTensor::zeros(&[3, 5], DType::F32, MemoryFormat::Contiguous).unwrap();
    let x = base.narrow(0, 0, 0).unwrap().narrow(1, 0, 3).unwrap();
    assert_eq!(x.to(DType::F16).unwrap().strides(), &[5, 1]);
    // A non-empty view that is not dense still gets dense strides in the order of its own.
    let y = HostTensor::zeros(&[3, 8], DType::F32, MemoryFormat::Contiguous).unwrap().transpose(0, 1).unwrap().slice(0, 0, 8, 2).unwrap();
    assert_eq!(y.strides(), &[2, 8]);
    assert_eq!(y.to(DType::F16).unwrap().strides(), &[1, 4]);
}

#[test]
fn view_errors_say_why() {
    let e = l(&[6]).view(&[0, -1]).unwrap_err();
    assert!(e.to_string().contains("the other dims hold 0 elements, and no size of dim 1 (-1) makes that 6"), "{e}");
    let e = l(&[0]).view(&[0, -1]).unwrap_err();
    assert!(e.to_string().contains("ambiguous with 0 elements"), "{e}");
    let e = l(&[6]).view(&[4, -1]).unwrap_err();
    assert!(e.to_string().contains("no size of dim 1 (-1) makes that 6"), "{e}");
}

/// A host result that fits the address space's integers but no machine's memory is a typed
/// error, not an abort of the process (the allocation is tried, not assumed).
#[test]
fn a_host_result_larger_than_memory_is_a_typed_error() {
    use strided_wgpu::ops::PadMode;
    use strided_wgpu::ShapeOps;
    // 2^50 f32 elements: 4 PiB, past any machine's memory and a 48-bit address space.
    match HostTensor::zeros(&[1 << 50], DType::F32, MemoryFormat::Contiguous) {
        Err(Error::HostMemory { op: "zeros", bytes, .. }) => assert_eq!(bytes, 1 << 52),
        other => panic!("expected HostMemory, got {:?}", other.map(|t| t.shape().to_vec())),
    }
    let x = HostTensor::from_vec(vec![1f32, 2.0], &[1, 2]).unwrap();
    match x.pad(&[0, 1 << 55], PadMode::Constant(0.0)) {
        Err(Error::HostMemory { .. }) => {}
        other => panic!("expected HostMemory, got {:?}", other.map(|t| t.shape().to_vec())),
    }
}

/// Sizes are PyTorch's int64: a size above `isize::MAX` is an overflow error even where the
/// layout is empty, and every index a layout reaches fits an `isize` (so that the 32-bit
/// targets' bounds checks cannot wrap). Strides of a one-element result are not multiplied.
/// An overflowing broadcast is an overflow, not a shape mismatch. A huge view's `to_vec` is an
/// error, not an abort.
#[test]
fn huge_sizes_are_errors_not_wraps() {
    for shape in [vec![0, 1usize << 63], vec![0, usize::MAX]] {
        let e = Layout::new(shape.clone(), vec![1, 1], 0).unwrap_err();
        assert!(matches!(e, Error::Overflow { .. }), "{shape:?}: {e}");
    }
    assert!(Layout::new(vec![0, isize::MAX as usize], vec![1, 1], 0).is_ok());
    let x = HostTensor::from_vec(vec![0f32; 8], &[8]).unwrap();
    assert!(x.as_strided(&[0, 1usize << 63], &[1, 1], 0).is_err());
    // x[0:4:isize::MAX] of a [4, 4]: one row.
    let s = Layout::contiguous(&[4, 4]).unwrap().slice(0, 0, 4, isize::MAX).unwrap();
    assert_eq!(s.shape(), &[1, 4]);
    assert_eq!(s.storage_indices().unwrap(), vec![0, 1, 2, 3]);
    // One window, a one-element diagonal: the stride products that overflow are not used
    // (with two or more, the layout's own span would not fit).
    let big = Layout::new(vec![4, 2], vec![isize::MAX / 8, isize::MAX / 2], 0).unwrap();
    assert_eq!(big.unfold(0, 4, usize::MAX).unwrap().shape(), &[1, 2, 4]);
    let d = Layout::new(vec![1, 1], vec![isize::MAX, isize::MAX], 0).unwrap().diagonal(0, 0, 1).unwrap();
    assert_eq!(d.shape(), &[1]);
    let e = Layout::contiguous(&[1]).unwrap().broadcast_to(&[1 << 40, 1 << 40]).unwrap_err();
    assert!(matches!(e, Error::Overflow { .. }), "{e}");
    let one = HostTensor::from_vec(vec![1f32], &[1]).unwrap();
    let huge = one.expand(&[1 << 62]).unwrap();
    assert!(matches!(huge.to_vec::<f32>(), Err(Error::Overflow { .. } | Error::HostMemory { .. })));
    assert!(matches!(huge.layout().storage_indices(), Err(Error::HostMemory { .. })));
}

/// A view copied onto itself does nothing, even one that reaches an element twice (PyTorch's
/// `copy_` returns before its overlap checks when source and destination are the same data).
#[test]
fn a_view_copied_onto_itself_does_nothing() {
    let row = HostTensor::from_vec(vec![1f32, 2., 3., 4.], &[4]).unwrap();
    let e = row.expand(&[3, 4]).unwrap();
    e.copy_(&e).unwrap();
    e.copy_(&e.clone()).unwrap();
    assert_eq!(row.to_vec::<f32>().unwrap(), vec![1., 2., 3., 4.]);
    // Another view of the same elements is still an overlap.
    assert!(matches!(e.copy_(&row.expand(&[3, 4]).unwrap().transpose(0, 1).unwrap().transpose(0, 1).unwrap().flip(1).unwrap()), Err(Error::Overlap { .. })));
}

/// An empty shape has strides whatever its other sizes (PyTorch's `torch.zeros(2**32, 0,
/// 2**32)`): only a stride a dim takes must fit isize, not the product past the outermost dim
/// (a false overflow error); a non-empty shape past isize is still an error. An empty view at
/// an offset of 2^62 elements (any offset is in bounds for no element) reads as empty: the
/// host's reductions multiplied the offset into bytes and panicked on the overflow.
#[test]
fn empty_shapes_have_strides_and_empty_views_any_offset() {
    use strided_wgpu::Reduce;
    let shape = [1usize << 32, 0, 1 << 32];
    assert_eq!(Layout::contiguous(&shape).unwrap().strides(), &[1isize << 32, 1 << 32, 1]);
    assert!(HostTensor::zeros(&shape, DType::F32, MemoryFormat::Contiguous).unwrap().to_vec::<f32>().unwrap().is_empty());
    assert!(matches!(Layout::contiguous(&[1 << 62, 4]), Err(Error::Overflow { .. })));
    let x = HostTensor::from_vec(vec![1f32; 4], &[4]).unwrap();
    let far = x.as_strided(&[0], &[1], 1 << 62).unwrap();
    assert_eq!(far.sum(-1, false).unwrap().to_vec::<f32>().unwrap(), vec![0.0]);
    assert!(far.amax(-1, false).is_err(), "max of nothing is PyTorch's error");
    assert!(far.contiguous(MemoryFormat::Contiguous).unwrap().to_vec::<f32>().unwrap().is_empty());
    assert!(far.add(&far).unwrap().to_vec::<f32>().unwrap().is_empty());
}

/// `to_memory_format` is PyTorch's `x.to(memory_format=)`: an alias exactly when the view's
/// suggested format is the one asked for, else a copy dense in it. A contiguous [2, 3, 1, 1]
/// suggests contiguous, so asked for channels-last it is copied to strides [3, 1, 3, 3] (it was
/// returned as it was); a transposed matrix asked for contiguous stays the transposed view (it
/// was copied); `contiguous(format)` keeps its own rule.
#[test]
fn to_memory_format_aliases_as_pytorch_to() {
    let x = HostTensor::from_vec((0..6).map(|i| i as f32).collect::<Vec<_>>(), &[2, 3, 1, 1]).unwrap();
    let cl = x.to_memory_format(MemoryFormat::ChannelsLast).unwrap();
    assert_eq!(cl.strides(), &[3, 1, 3, 3]);
    assert_eq!(cl.to_vec::<f32>().unwrap(), x.to_vec::<f32>().unwrap());
    assert_eq!(x.contiguous(MemoryFormat::ChannelsLast).unwrap().strides(), &[3, 1, 1, 1]);
    let m = HostTensor::from_vec((0..6).map(|i| i as f32).collect::<Vec<_>>(), &[2, 3]).unwrap();
    let t = m.transpose(0, 1).unwrap();
    let same = t.to_memory_format(MemoryFormat::Contiguous).unwrap();
    assert_eq!(same.strides(), &[1, 3]);
    assert_eq!(same.layout(), t.layout());
    assert_eq!(t.contiguous(MemoryFormat::Contiguous).unwrap().strides(), &[2, 1]);
    // A channels-last tensor asked for channels-last is itself; asked for contiguous, a copy.
    let big = HostTensor::zeros(&[2, 3, 4, 5], DType::F32, MemoryFormat::ChannelsLast).unwrap();
    assert_eq!(big.to_memory_format(MemoryFormat::ChannelsLast).unwrap().strides(), big.strides());
    assert_eq!(big.to_memory_format(MemoryFormat::Contiguous).unwrap().strides(), &[60, 20, 5, 1]);
}

/// Views whose offsets differ modulo the gcd of their strides share no element at any size:
/// the two columns of a [2^27, 2] matrix (a span past the exact check's limit) are disjoint
/// (they were `Partial`, so `a.select(1, 0).copy_(&a.select(1, 1))` was an `Overlap` error
/// where PyTorch copies); views that do meet past that span stay `Partial`.
#[test]
fn interleaved_views_of_any_size_are_disjoint() {
    let m = Layout::contiguous(&[1 << 27, 2]).unwrap();
    let (c0, c1) = (m.select(1, 0).unwrap(), m.select(1, 1).unwrap());
    assert_eq!(c0.overlap(&c1), Overlap::Disjoint);
    assert_eq!(c1.flip(0).unwrap().overlap(&c0), Overlap::Disjoint);
    let t = Layout::contiguous(&[1 << 27, 3]).unwrap();
    assert_eq!(t.select(1, 0).unwrap().overlap(&t.narrow(1, 0, 2).unwrap()), Overlap::Partial);
    assert_eq!(t.select(1, 2).unwrap().overlap(&m.select(1, 0).unwrap()), Overlap::Partial, "strides 3 and 2: gcd 1");
    // Small: the exact check agrees.
    let s = Layout::contiguous(&[6, 2]).unwrap();
    assert_eq!(s.select(1, 0).unwrap().overlap(&s.select(1, 1).unwrap()), Overlap::Disjoint);
}

/// Blocks of one tensor (the same strides dim by dim) past the bitmap's span: a block of
/// columns and the next, a channel half of a large activation and the other, are disjoint
/// (they were refused as partial overlaps past 2^27 elements); blocks that share a column are
/// not; a flipped block too.
#[test]
fn blocks_of_one_tensor_of_any_size_are_disjoint() {
    let m = Layout::contiguous(&[1 << 18, 1024]).unwrap();
    let left = m.narrow(1, 0, 512).unwrap();
    assert_eq!(left.overlap(&m.narrow(1, 512, 512).unwrap()), Overlap::Disjoint);
    assert_eq!(m.narrow(1, 512, 512).unwrap().flip(0).unwrap().overlap(&left), Overlap::Disjoint);
    assert_eq!(m.narrow(1, 0, 513).unwrap().overlap(&m.narrow(1, 512, 512).unwrap()), Overlap::Partial);
    let act = Layout::contiguous(&[8, 256, 256, 256]).unwrap();
    assert_eq!(act.narrow(1, 0, 128).unwrap().overlap(&act.narrow(1, 128, 128).unwrap()), Overlap::Disjoint);
    assert_eq!(act.narrow(1, 0, 129).unwrap().overlap(&act.narrow(1, 128, 128).unwrap()), Overlap::Partial);
    let cl = Layout::with_format(&[8, 256, 256, 256], MemoryFormat::ChannelsLast).unwrap();
    assert_eq!(cl.narrow(1, 0, 128).unwrap().overlap(&cl.narrow(1, 128, 128).unwrap()), Overlap::Disjoint);
    // Small views of the same strides (narrowed, flipped, stepped alike) against a walk of
    // both: the search and the bitmap agree on every pair.
    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((self.0 >> 33) % n as u64) as usize
        }
    }
    let mut rng = Rng(0x0b1);
    for case in 0..2000 {
        let rank = 1 + rng.below(3);
        let shape: Vec<usize> = (0..rank).map(|_| 1 + rng.below(7)).collect();
        let base = Layout::contiguous(&shape).unwrap();
        let step = 1 + rng.below(2) as isize;
        let view = |rng: &mut Rng| {
            let mut l = base.clone();
            for (d, &n) in shape.iter().enumerate().take(rank) {
                let start = rng.below(n);
                let len = 1 + rng.below(n - start);
                l = l.narrow(d as isize, start as isize, len).unwrap();
            }
            l
        };
        let (mut a, mut b) = (view(&mut rng), view(&mut rng));
        let d = rng.below(rank) as isize;
        if step > 1 {
            a = a.slice(d, 0, i64::MAX as isize, step).unwrap();
            b = b.slice(d, 0, i64::MAX as isize, step).unwrap();
        }
        if case % 3 == 0 {
            a = a.flip(d).unwrap();
            b = b.flip(d).unwrap();
        }
        if a.strides() != b.strides() {
            continue;
        }
        let mut seen = std::collections::HashSet::new();
        a.for_each_index(|i| {
            seen.insert(i);
        });
        let mut shared = false;
        b.for_each_index(|i| shared |= seen.contains(&i));
        let got = a.overlap(&b);
        let want = if !shared { Overlap::Disjoint } else if got == Overlap::Full { Overlap::Full } else { Overlap::Partial };
        assert_eq!(got, want, "case {case}: {a:?} and {b:?}");
    }
}

/// A view op's overflow names the op (it named "layout", its inner constructor); a dim out of
/// range gives the range the op takes (one more dim for `unsqueeze` and `stack`, -1 and 0 on
/// a scalar where PyTorch wraps them); `flip` of a 0-d tensor is itself (PyTorch's); a
/// circular crop of `isize::MIN` is refused, not negated.
#[test]
fn view_errors_name_the_op_and_the_dims_it_takes() {
    let one = l(&[1]);
    let e = one.expand(&[1 << 62]).unwrap().unfold(0, 1 << 61, 1).map(drop);
    let e2 = l(&[2, 1]).expand(&[2, isize::MAX]).map(drop);
    let e3 = l(&[1, 1]).broadcast_to(&[1 << 40, 1 << 40]).map(drop);
    for (op, r) in [("unfold", e), ("expand", e2), ("broadcast_to", e3)] {
        match r {
            Err(Error::Overflow { op: got, .. }) => assert_eq!(got, op),
            other => panic!("{op}: {other:?}"),
        }
    }
    let x = l(&[2, 3]);
    let e = x.unsqueeze(5).unwrap_err();
    assert!(matches!(e, Error::DimOutOfRange { op: "unsqueeze", dim: 5, rank: 3 }), "{e:?}");
    assert!(e.to_string().contains("[-3, 2]"), "{e}");
    let e = l(&[]).transpose(1, 0).unwrap_err();
    assert!(e.to_string().contains("[-1, 0]"), "{e}");
    let e = l(&[]).select(0, 0).unwrap_err();
    assert!(e.to_string().contains("0-d tensor has no dim"), "{e}");
    let s = HostTensor::from_vec(vec![5f32], &[]).unwrap();
    for d in [0, -1] {
        let f = s.flip(d).unwrap();
        assert_eq!((f.shape(), f.to_vec::<f32>().unwrap()), (&[][..], vec![5.0]), "flip({d})");
    }
    assert!(matches!(s.flip(1), Err(Error::DimOutOfRange { .. })));
    use strided_wgpu::ShapeOps;
    use strided_wgpu::ops::PadMode;
    let wide = HostTensor::from_vec(vec![7f32], &[1, 1, 1]).unwrap().expand(&[1, 1, isize::MAX]).unwrap();
    let r = wide.pad(&[isize::MIN, 2], PadMode::Circular);
    assert!(r.is_err(), "a crop of 2^63 elements from a dim of 2^63 - 1: {:?}", r.map(|t| t.shape().to_vec()));
}

/// A view whose strides would pass `isize` is an overflow (PyTorch wraps them), not a layout
/// that needs a copy; `reshape` says so too, copying nothing.
#[test]
fn a_view_whose_strides_overflow_is_an_overflow() {
    let empty = Layout::contiguous(&[0]).unwrap();
    let big = 1isize << 62;
    assert!(matches!(empty.view(&[0, 4, big]), Err(Error::Overflow { op: "view", .. })), "{:?}", empty.view(&[0, 4, big]));
    assert!(matches!(empty.reshape(&[0, 4, big]), Err(Error::Overflow { op: "reshape", .. })));
    let wide = Layout::new(vec![2], vec![big], 0).unwrap();
    // A leading size-1 dim's stride would be 2^63.
    assert!(matches!(wide.view(&[1, 2]), Err(Error::Overflow { op: "view", .. })));
    assert_eq!(wide.view(&[2, 1]).unwrap().strides(), &[big, big]);
    // Fresh strides of an empty view that fit stay a view.
    assert_eq!(empty.view(&[0, 4, 3]).unwrap().strides(), &[12, 3, 1]);
}
