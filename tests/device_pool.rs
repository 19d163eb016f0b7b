//! Pooling, bilinear resampling and the shape ops on every adapter against the CPU reference:
//! random geometry, options, element types and input layouts (NCHW, channels-last, strided),
//! NaN through max pooling, the edges of windows (padding, ceil_mode, dilation, adaptive bins
//! that overlap), and bad input as typed errors. Copies (every shape op but bilinear) bit for
//! bit; arithmetic within a tolerance scaled to the window's sum of magnitudes.

mod common;

use common::elementwise::{bits, bits_of, value};
use common::gpu::{contexts, name};
use common::rng::Rng;
use strided_wgpu::{AvgPool2dOptions, DeviceTensor, DType, Elementwise, Error, GpuContext, HostTensor, Layout, MaxPool2dOptions, MemoryFormat, Pool2d, ShapeOps, Strided};
use strided_wgpu::ops::{cat, stack, InterpolateMode, InterpolateOptions, PadMode};
use strided_wgpu::advanced::{group_norm_with, layer_norm_with, NormKernel, NORM_MAX_CHUNKS};
use strided_wgpu::advanced::internal::norm_split_chunks;

/// A random host tensor of `shape` and `dtype` (values multiples of 1/8 in [-8, 8), every
/// 13th a NaN when `nan`), seen as `layout`: 0 contiguous, 1 channels-last, 2 strided along W
/// (every other column of a wider tensor), 3 a permuted [N, H, C, W] base.
fn tensor(rng: &mut Rng, shape: &[usize], dtype: DType, layout: usize, nan: bool) -> HostTensor {
    let mut base_shape = shape.to_vec();
    if layout == 2 {
        base_shape[3] *= 2;
    }
    let n: usize = base_shape.iter().product();
    let bytes: Vec<u8> = (0..n)
        .flat_map(|_| {
            let v = if dtype.is_float() && nan && rng.below(13) == 0 { f64::NAN } else if dtype.is_float() { rng.below(128) as f64 / 8.0 - 8.0 } else { rng.below(200) as f64 };
            bits_of(dtype, v).to_le_bytes()[..dtype.size()].to_vec()
        })
        .collect();
    let t = HostTensor::from_bytes(dtype, bytes, Layout::contiguous(&base_shape).unwrap()).unwrap();
    match layout {
        1 if shape.len() == 4 => t.contiguous(MemoryFormat::ChannelsLast).unwrap(),
        2 => t.slice(3, 0, base_shape[3] as isize, 2).unwrap(),
        3 if shape.len() == 4 => t.permute(&[0, 2, 1, 3]).unwrap().contiguous(MemoryFormat::Contiguous).unwrap().permute(&[0, 2, 1, 3]).unwrap(),
        _ => t,
    }
}

/// Within f32 arithmetic's error over terms of magnitude up to `scale` (the window's sum of
/// magnitudes over its count, at most 8 here), plus one unit in the last place of the 16-bit
/// types at the result's own magnitude (two roundings of nearly equal f32 values may straddle
/// a rounding boundary).
fn close(dtype: DType, got: f64, want: f64, scale: f64) -> bool {
    if want.is_nan() || got.is_nan() {
        return want.is_nan() && got.is_nan();
    }
    let ulp = |mantissa: i32, least: f64| if want == 0.0 { least } else { 2f64.powi(want.abs().log2().floor() as i32 - mantissa).max(least) };
    let tol = 4e-6 * scale + 1e-6
        + match dtype {
            DType::F32 => 0.0,
            DType::F16 => ulp(10, 2f64.powi(-24)),
            _ => ulp(7, 2f64.powi(-133)),
        };
    (got - want).abs() <= tol
}

/// Device against host: the same error class, or the same shape, dtype and values (bit for
/// bit when `exact`, else within the tolerance of values up to 8 in magnitude). Returns whether
/// values were compared (not two errors), for the callers to count.
fn same(what: &str, host: Result<Vec<HostTensor>, Error>, dev: Result<Vec<DeviceTensor>, Error>, exact: bool) -> bool {
    match (host, dev) {
        (Err(a), Err(b)) => {
            assert_eq!(std::mem::discriminant(&a), std::mem::discriminant(&b), "{what}: host {a} device {b}");
            false
        }
        (Ok(h), Ok(d)) => {
            assert_eq!(h.len(), d.len(), "{what}");
            for (h, d) in h.iter().zip(&d) {
                assert_eq!(h.shape(), d.shape(), "{what}");
                assert_eq!(h.strides(), d.strides(), "{what}: the output's memory format");
                assert_eq!(h.dtype(), d.dtype(), "{what}");
                let (hb, db) = (bits(h), bits(&d.download().unwrap()));
                if exact {
                    assert_eq!(hb, db, "{what}: bits");
                } else {
                    for (k, (&a, &b)) in hb.iter().zip(&db).enumerate() {
                        let (a, b) = (value(h.dtype(), a), value(h.dtype(), b));
                        assert!(close(h.dtype(), b, a, 8.0), "{what}: element {k}: device {b}, host {a}");
                    }
                }
            }
            true
        }
        (h, d) => panic!("{what}: host {:?}, device {:?}", h.map(|_| ()), d.map(|_| ())),
    }
}

/// A device tensor with the host tensor's exact layout (built by the same view ops).
fn mirror(ctx: &GpuContext, h: &HostTensor, layout: usize) -> DeviceTensor {
    let shape = h.shape().to_vec();
    let c = h.contiguous(MemoryFormat::Contiguous).unwrap();
    let d = DeviceTensor::upload(ctx, &c).unwrap();
    let d = match layout {
        1 if shape.len() == 4 => d.contiguous(MemoryFormat::ChannelsLast).unwrap(),
        2 => {
            // Interleave into a tensor twice as wide, then view every other column.
            let mut wide = shape.clone();
            wide[3] *= 2;
            // NaN between the columns (zeros there would pass for a read of the padding).
            let w = DeviceTensor::zeros(ctx, &wide, h.dtype(), MemoryFormat::Contiguous).unwrap();
            let w = if h.dtype().is_float() { w.add(f64::NAN).unwrap() } else { w };
            let v = w.slice(3, 0, wide[3] as isize, 2).unwrap();
            v.copy_(&d).unwrap();
            v
        }
        3 if shape.len() == 4 => d.permute(&[0, 2, 1, 3]).unwrap().contiguous(MemoryFormat::Contiguous).unwrap().permute(&[0, 2, 1, 3]).unwrap(),
        _ => d,
    };
    assert_eq!(d.strides(), h.strides(), "mirrored layout");
    d
}

fn float(rng: &mut Rng) -> DType {
    [DType::F32, DType::F16, DType::BF16][rng.below(3)]
}

#[test]
fn pooling_and_bilinear_match_the_cpu_reference() {
    for ctx in contexts() {
        let mut compared = 0;
        let mut rng = Rng(0x9001);
        for case in 0..120 {
            let dtype = float(&mut rng);
            let layout = rng.below(4);
            let shape = [1 + rng.below(2), 1 + rng.below(6), 1 + rng.below(11), 1 + rng.below(11)];
            let nan = rng.below(4) == 0;
            let h = tensor(&mut rng, &shape, dtype, layout, nan);
            let d = mirror(ctx, &h, layout);
            let k = (1 + rng.below(4), 1 + rng.below(4));
            let stride = Some((1 + rng.below(3), 1 + rng.below(3)));
            let padding = (rng.below(k.0 / 2 + 1), rng.below(k.1 / 2 + 1));
            let ceil_mode = rng.below(2) == 1;
            let what = format!("{} case {case}: {shape:?} {dtype} layout {layout}", name(ctx));
            match rng.below(5) {
                0 => {
                    let o = MaxPool2dOptions { kernel: k, stride, padding, dilation: (1 + rng.below(2), 1 + rng.below(2)), ceil_mode };
                    if rng.below(2) == 0 {
                        compared += same(&format!("{what} max {o:?}"), h.max_pool2d_with_indices(&o).map(|(a, b)| vec![a, b]), d.max_pool2d_with_indices(&o).map(|(a, b)| vec![a, b]), true) as usize;
                    } else {
                        compared += same(&format!("{what} max {o:?}"), h.max_pool2d(&o).map(|a| vec![a]), d.max_pool2d(&o).map(|a| vec![a]), true) as usize;
                    }
                }
                1 => {
                    let divisor_override = (rng.below(4) == 0).then(|| 1 + rng.below(5));
                    let o = AvgPool2dOptions { kernel: k, stride, padding, ceil_mode, count_include_pad: rng.below(2) == 0, divisor_override };
                    compared += same(&format!("{what} avg {o:?}"), h.avg_pool2d(&o).map(|a| vec![a]), d.avg_pool2d(&o).map(|a| vec![a]), false) as usize;
                }
                2 => {
                    let out = (1 + rng.below(shape[2] + 2), 1 + rng.below(shape[3] + 2));
                    compared += same(&format!("{what} adaptive avg {out:?}"), h.adaptive_avg_pool2d(out).map(|a| vec![a]), d.adaptive_avg_pool2d(out).map(|a| vec![a]), false) as usize;
                }
                3 => {
                    let out = (1 + rng.below(shape[2] + 2), 1 + rng.below(shape[3] + 2));
                    compared += same(&format!("{what} adaptive max {out:?}"), h.adaptive_max_pool2d_with_indices(out).map(|(a, b)| vec![a, b]), d.adaptive_max_pool2d_with_indices(out).map(|(a, b)| vec![a, b]), true) as usize;
                }
                _ => {
                    let mode = InterpolateMode::Bilinear { align_corners: rng.below(2) == 0 };
                    let o = if rng.below(2) == 0 { InterpolateOptions::size((1 + rng.below(20), 1 + rng.below(20)), mode) } else { InterpolateOptions::scale((0.5 + rng.below(8) as f64 * 0.375, 0.5 + rng.below(8) as f64 * 0.375), mode) };
                    let (hh, dd) = (h.interpolate(&o), d.interpolate(&o));
                    compared += same(&format!("{what} bilinear {o:?}"), hh.map(|a| vec![a]), dd.map(|a| vec![a]), false) as usize;
                }
            }
        }
        // Most cases compute (a case both sides refuse alike compares no values).
        assert!(compared >= 80, "{}: only {compared} of 120 cases compared values", name(ctx));
    }
}

#[test]
fn shape_ops_match_the_cpu_reference_bit_for_bit() {
    let dtypes = [DType::F32, DType::F16, DType::BF16, DType::I32, DType::U32, DType::U8, DType::I8];
    for ctx in contexts() {
        let mut compared = 0;
        let mut rng = Rng(0x5a9e);
        for case in 0..80 {
            let dtype = dtypes[rng.below(dtypes.len())];
            let layout = rng.below(4);
            let shape = [1 + rng.below(2), rng.below(5), 1 + rng.below(7), 1 + rng.below(7)];
            let h = tensor(&mut rng, &shape, dtype, layout, false);
            let d = mirror(ctx, &h, layout);
            let what = format!("{} case {case}: {shape:?} {dtype} layout {layout}", name(ctx));
            let one = |r: Result<HostTensor, Error>| r.map(|t| vec![t]);
            let oned = |r: Result<DeviceTensor, Error>| r.map(|t| vec![t]);
            match rng.below(6) {
                0 => {
                    // cat with a second input of another type and layout along a random dim.
                    let dim = rng.below(4);
                    let mut s2 = shape;
                    s2[dim] = rng.below(4);
                    let t2 = dtypes[rng.below(3)];
                    let l2 = rng.below(4);
                    let h2 = tensor(&mut rng, &s2, t2, l2, false);
                    let d2 = mirror(ctx, &h2, l2);
                    let nd = dim as isize - if rng.below(2) == 0 { 4 } else { 0 };
                    compared += same(&format!("{what} cat {s2:?} {t2} dim {nd}"), one(cat(&[&h, &h2], nd)), oned(cat(&[&d, &d2], nd)), true) as usize;
                }
                1 => {
                    let dim = rng.below(5) as isize;
                    compared += same(&format!("{what} stack {dim}"), one(stack(&[&h, &h], dim)), oned(stack(&[&d, &d], dim)), true) as usize;
                }
                2 => {
                    let mode = [PadMode::Constant(-1.5), PadMode::Reflect, PadMode::Replicate, PadMode::Circular][rng.below(4)];
                    let mut pad: Vec<isize> = (0..4).map(|_| rng.below(4) as isize).collect();
                    if matches!(mode, PadMode::Constant(_)) {
                        pad[rng.below(4)] = -(rng.below(2) as isize);
                    }
                    compared += same(&format!("{what} pad {pad:?} {mode:?}"), one(h.pad(&pad, mode)), oned(d.pad(&pad, mode)), true) as usize;
                }
                3 => {
                    let reps: Vec<usize> = (0..4 + rng.below(2)).map(|_| rng.below(3)).collect();
                    compared += same(&format!("{what} repeat {reps:?}"), one(h.repeat(&reps)), oned(d.repeat(&reps)), true) as usize;
                }
                4 => {
                    let dim = rng.below(4);
                    let index: Vec<i64> = (0..rng.below(6)).map(|_| rng.below(shape[dim] + 1) as i64).collect();
                    compared += same(&format!("{what} index_select {dim} {index:?}"), one(h.index_select(dim as isize, &index)), oned(d.index_select(dim as isize, &index)), true) as usize;
                }
                _ => {
                    let mode = if rng.below(2) == 0 { InterpolateMode::Nearest } else { InterpolateMode::NearestExact };
                    let o = if rng.below(2) == 0 { InterpolateOptions::size((1 + rng.below(15), 1 + rng.below(15)), mode) } else { InterpolateOptions::scale((0.5 + rng.below(6) as f64 * 0.5, 0.5 + rng.below(6) as f64 * 0.5), mode) };
                    compared += same(&format!("{what} interpolate {o:?}"), one(h.interpolate(&o)), oned(d.interpolate(&o)), true) as usize;
                }
            }
        }
        // Most cases compute (a case both sides refuse alike compares no values).
        assert!(compared >= 50, "{}: only {compared} of 80 cases compared values", name(ctx));
    }
}

/// Nearest resizing against a plain loop over the definitions (the conformance data checks the
/// PyTorch rule; this checks the copies' runs and the whole-multiple path on larger sizes), on
/// the host and recorded in a device batch.
#[test]
fn nearest_resize_is_a_gather_of_the_source_rule() {
    let h = HostTensor::from_vec((0..2 * 3 * 9 * 7).map(|i| i as f32).collect(), &[2, 3, 9, 7]).unwrap();
    for (oh, ow) in [(18, 14), (27, 7), (13, 5), (4, 20), (9, 7)] {
        for exact in [false, true] {
            let mode = if exact { InterpolateMode::NearestExact } else { InterpolateMode::Nearest };
            let got = h.interpolate(&InterpolateOptions::size((oh, ow), mode)).unwrap().to_vec::<f32>().unwrap();
            let src = |o: usize, i: usize, out: usize| -> usize {
                let r = i as f32 / out as f32;
                let s = if exact { ((o as f32 + 0.5) * r).floor() } else if out == 2 * i { (o / 2) as f32 } else { (o as f32 * r).floor() };
                (s as usize).min(i - 1)
            };
            let mut want = Vec::new();
            for p in 0..6 {
                for y in 0..oh {
                    for x in 0..ow {
                        want.push((p * 63 + src(y, 9, oh) * 7 + src(x, 7, ow)) as f32);
                    }
                }
            }
            assert_eq!(got, want, "{oh}x{ow} exact {exact}");
            // Recorded in a batch (the method's copies, in order), in either memory format.
            for ctx in contexts() {
                for format in [MemoryFormat::Contiguous, MemoryFormat::ChannelsLast] {
                    let d = DeviceTensor::upload(ctx, &h).unwrap().contiguous(format).unwrap();
                    let mut b = ctx.batch();
                    let y = b.interpolate(&d, &InterpolateOptions::size((oh, ow), mode)).unwrap();
                    b.submit().unwrap();
                    assert!(y.layout().is_contiguous_for(format), "{}: {format:?} output strides {:?}", name(ctx), y.strides());
                    let got = y.contiguous(MemoryFormat::Contiguous).unwrap().download().unwrap().to_vec::<f32>().unwrap();
                    assert_eq!(got, want, "{}: recorded {oh}x{ow} exact {exact} {format:?}", name(ctx));
                }
            }
        }
    }
}

/// Legacy nearest resizing with a scale factor that keeps or doubles a size: PyTorch's CPU
/// kernel copies (or halves the index) only on its vectorized path (channels-last with more
/// than 3 channels, or OH + OW <= 128); elsewhere it takes `floor(k * (1 / factor))`, rows
/// [0, 0, 1, ..] for a factor of 1.005 on 100 rows. Host and every adapter, eager.
#[test]
fn nearest_resize_takes_the_shortcuts_only_where_pytorchs_cpu_kernel_does() {
    let cases = [
        // (channels, size, factor, format, whether the shortcut applies)
        (1, 100, 1.005, MemoryFormat::Contiguous, false),
        (4, 100, 1.005, MemoryFormat::Contiguous, false),
        (4, 100, 1.005, MemoryFormat::ChannelsLast, true),
        (3, 100, 1.005, MemoryFormat::ChannelsLast, false),
        (1, 30, 1.005, MemoryFormat::Contiguous, true),
        (1, 70, 2.005, MemoryFormat::Contiguous, false),
        (1, 30, 2.005, MemoryFormat::Contiguous, true),
    ];
    for (c, size, factor, format, shortcut) in cases {
        let h = HostTensor::from_vec((0..c * size * size).map(|i| i as f32).collect(), &[1, c, size, size]).unwrap().contiguous(format).unwrap();
        let o = (size as f64 * factor).floor() as usize;
        let r = (1.0 / factor) as f32;
        let src: Vec<usize> = (0..o).map(|k| if shortcut && o == size { k } else if shortcut && o == 2 * size { k >> 1 } else { ((k as f32 * r).floor() as usize).min(size - 1) }).collect();
        assert!(src.iter().enumerate().any(|(k, &s)| s != if o == size { k } else { k >> 1 }) != shortcut, "case {c} {size} {factor}: the rules differ here");
        let mut want = Vec::new();
        for p in 0..c {
            for &y in &src {
                want.extend(src.iter().map(|&x| (p * size * size + y * size + x) as f32));
            }
        }
        let opts = InterpolateOptions::scale((factor, factor), InterpolateMode::Nearest);
        let got = h.interpolate(&opts).unwrap().contiguous(MemoryFormat::Contiguous).unwrap().to_vec::<f32>().unwrap();
        let first = |got: &[f32]| got.iter().zip(&want).position(|(a, b)| a != b);
        assert!(got.len() == want.len() && first(&got).is_none(), "host: {c} channels, {size}, factor {factor}, {format:?}: first difference at {:?}", first(&got));
        for ctx in contexts() {
            let d = DeviceTensor::upload(ctx, &h.contiguous(MemoryFormat::Contiguous).unwrap()).unwrap().contiguous(format).unwrap();
            let got = d.interpolate(&opts).unwrap().contiguous(MemoryFormat::Contiguous).unwrap().download().unwrap().to_vec::<f32>().unwrap();
            assert!(got.len() == want.len() && first(&got).is_none(), "{}: {c} channels, {size}, factor {factor}, {format:?}: first difference at {:?}", name(ctx), first(&got));
        }
    }
}

/// The issue's bad input: typed errors, before anything is allocated or recorded.
#[test]
fn bad_input_is_a_typed_error() {
    let h = HostTensor::from_vec(vec![0f32; 2 * 3 * 4 * 5], &[2, 3, 4, 5]).unwrap();
    type Checks = Box<dyn Fn() -> Vec<Result<(), Error>>>;
    let mut targets: Vec<Checks> = Vec::new();
    fn checks<T: ShapeOps>(x: &T) -> Vec<Result<(), Error>> {
        let drop1 = |r: Result<T, Error>| r.map(drop);
        vec![
            // a window over half the kernel in padding
            drop1(x.max_pool2d(&MaxPool2dOptions { padding: (2, 0), ..MaxPool2dOptions::new((3, 3)) })),
            drop1(x.avg_pool2d(&AvgPool2dOptions { padding: (0, 2), ..AvgPool2dOptions::new((2, 2)) })),
            // an output size below 1
            drop1(x.max_pool2d(&MaxPool2dOptions::new((5, 5)))),
            drop1(x.interpolate(&InterpolateOptions::scale((0.2, 1.0), InterpolateMode::Nearest))),
            // cat of mismatched shapes
            drop1(cat(&[x, &x.narrow(1, 0, 2).unwrap()], 3)),
            drop1(stack(&[x, &x.narrow(1, 0, 2).unwrap()], 0)),
            // an out-of-range index
            drop1(x.index_select(1, &[0, 3])),
            drop1(x.index_select(1, &[-1])),
            // a reflect pad wider than the input
            drop1(x.pad(&[5, 0, 0, 0], PadMode::Reflect)),
            drop1(x.pad(&[0, 0, 0, 4], PadMode::Reflect)),
            drop1(x.pad(&[6, 0, 0, 0], PadMode::Circular)),
            // a crop past the size
            drop1(x.pad(&[-3, -3], PadMode::Constant(0.0))),
            // reflect padding of one dim of a 4-d tensor (PyTorch raises: it was Unsupported)
            drop1(x.pad(&[1, 1], PadMode::Reflect)),
        ]
    }
    let hh = h.clone();
    targets.push(Box::new(move || checks(&hh)));
    for ctx in contexts() {
        let d = DeviceTensor::upload(ctx, &h).unwrap();
        targets.push(Box::new(move || checks(&d)));
    }
    for t in targets {
        for (k, r) in t().into_iter().enumerate() {
            match r {
                Err(Error::InvalidArgument { .. } | Error::DimOutOfRange { .. }) => {}
                other => panic!("check {k}: {other:?}"),
            }
        }
    }
    // cat and stack of tensors of two contexts: Error::Device before the result is allocated
    // (it was allocated, then the copies refused it: no idle bytes may appear in the pool).
    if let [a, b, ..] = contexts() {
        let (da, db) = (DeviceTensor::upload(a, &h).unwrap(), DeviceTensor::upload(b, &h).unwrap());
        type Join<'a> = Box<dyn Fn() -> Result<DeviceTensor, Error> + 'a>;
        let joins: [(&str, Join); 3] = [("cat", Box::new(|| cat(&[&da, &db], 0))), ("stack", Box::new(|| stack(&[&da, &db], 0))), ("cat 1", Box::new(|| cat(&[&db, &da], 1)))];
        for (what, join) in joins {
            let idle = (a.pool_idle_bytes(), b.pool_idle_bytes());
            let r = join();
            assert!(matches!(r, Err(Error::Device { .. })), "{what}: {r:?}");
            assert_eq!((a.pool_idle_bytes(), b.pool_idle_bytes()), idle, "{what}: a result was allocated");
        }
    }
    // Integer pooling is served by no kernel: Unsupported, not a wrong answer.
    let i = HostTensor::from_vec(vec![0i32; 16], &[1, 1, 4, 4]).unwrap();
    assert!(matches!(i.max_pool2d(&MaxPool2dOptions::new((2, 2))), Err(Error::Unsupported { .. })));
}

/// `index_select` of a 0-d input takes one index, 0, along dim 0 or -1, and gives a 0-d copy
/// (PyTorch's rule; it was Unsupported); another index or dim is an error, on host and device.
/// A constant pad's value must fit the type even where the result is empty (PyTorch's `fill_`
/// checks it: it was accepted).
#[test]
fn index_select_of_a_0d_input_and_an_empty_pads_value() {
    let h = HostTensor::from_vec(vec![-2.5f32], &[]).unwrap();
    type Select = Box<dyn Fn(isize, &[i64]) -> Result<Vec<f32>, Error>>;
    let mut all: Vec<Select> = Vec::new();
    let hh = h.clone();
    all.push(Box::new(move |dim, index| hh.index_select(dim, index).and_then(|t| { assert_eq!(t.shape(), &[] as &[usize]); t.to_vec::<f32>() })));
    for ctx in contexts() {
        let d = DeviceTensor::upload(ctx, &h).unwrap();
        all.push(Box::new(move |dim, index| d.index_select(dim, index).and_then(|t| { assert_eq!(t.shape(), &[] as &[usize]); t.download()?.to_vec::<f32>() })));
    }
    for f in &all {
        assert_eq!(f(0, &[0]).unwrap(), vec![-2.5]);
        assert_eq!(f(-1, &[0]).unwrap(), vec![-2.5]);
        for (dim, index) in [(0, &[1i64][..]), (0, &[0, 0]), (0, &[]), (0, &[-1]), (1, &[0]), (-2, &[0])] {
            let r = f(dim, index);
            assert!(matches!(r, Err(Error::InvalidArgument { .. } | Error::DimOutOfRange { .. })), "dim {dim} index {index:?}: {r:?}");
        }
    }
    let e = HostTensor::zeros(&[0, 3], DType::U8, MemoryFormat::Contiguous).unwrap();
    type Pad = Box<dyn Fn(f64) -> Result<Vec<usize>, Error>>;
    let mut pads: Vec<Pad> = Vec::new();
    let he = e.clone();
    pads.push(Box::new(move |v| he.pad(&[1, 1], PadMode::Constant(v)).map(|t| t.shape().to_vec())));
    for ctx in contexts() {
        let d = DeviceTensor::upload(ctx, &e).unwrap();
        pads.push(Box::new(move |v| d.pad(&[1, 1], PadMode::Constant(v)).map(|t| t.shape().to_vec())));
    }
    for f in &pads {
        assert!(matches!(f(300.0), Err(Error::InvalidArgument { .. })), "{:?}", f(300.0));
        assert_eq!(f(255.0).unwrap(), vec![0, 5]);
    }
}

/// `batch_norm` on host and every adapter against a plain f64 loop over the definition, for
/// NCHW, channels-last and strided inputs of the three float types, with and without the
/// affine parameters; its output keeps the input's type and memory format.
#[test]
fn batch_norm_matches_the_definition() {
    let mut rng = Rng(0xb40);
    for case in 0..16 {
        let dtype = float(&mut rng);
        let layout = rng.below(3);
        let shape = [1 + rng.below(2), 1 + rng.below(6), 1 + rng.below(5), 1 + rng.below(5)];
        let c = shape[1];
        let x = tensor(&mut rng, &shape, dtype, layout, false);
        let vec = |rng: &mut Rng, lo: f32| HostTensor::from_vec((0..c).map(|_| lo + rng.below(64) as f32 / 16.0).collect::<Vec<f32>>(), &[c]).unwrap();
        let (mean, var, w, b) = (vec(&mut rng, -2.0), vec(&mut rng, 0.25), vec(&mut rng, -2.0), vec(&mut rng, -2.0));
        let affine = rng.below(2) == 0;
        let eps = 1e-5;
        let xs: Vec<f64> = bits(&x).into_iter().map(|b| value(dtype, b)).collect();
        let (m, v, wv, bv) = (mean.to_vec::<f32>().unwrap(), var.to_vec::<f32>().unwrap(), w.to_vec::<f32>().unwrap(), b.to_vec::<f32>().unwrap());
        let plane = shape[2] * shape[3];
        let want: Vec<f64> = xs
            .iter()
            .enumerate()
            .map(|(i, &x)| {
                let k = (i / plane) % c;
                let y = (x - m[k] as f64) / (v[k] as f64 + eps).sqrt();
                if affine { y * wv[k] as f64 + bv[k] as f64 } else { y }
            })
            .collect();
        let check = |what: &str, y: &HostTensor, strides: &[isize]| {
            assert_eq!(y.dtype(), dtype, "{what}");
            assert_eq!(y.shape(), x.shape(), "{what}");
            assert_eq!(y.strides(), strides, "{what}: memory format");
            for (k, (&g, &w)) in bits(y).iter().map(|&b| value(dtype, b)).collect::<Vec<_>>().iter().zip(&want).enumerate() {
                assert!(close(dtype, g, w, 16.0), "{what}: element {k}: {g}, want {w}");
            }
        };
        let (wo, bo) = if affine { (Some(&w), Some(&b)) } else { (None, None) };
        let y = strided_wgpu::ops::batch_norm(&x, &mean, &var, wo, bo, eps).unwrap();
        let dense = Layout::with_format(&shape, x.layout().suggest_memory_format()).unwrap();
        check(&format!("host case {case}"), &y, dense.strides());
        for ctx in contexts() {
            let up = |t: &HostTensor| DeviceTensor::upload(ctx, t).unwrap();
            let (dm, dv, dw, db) = (up(&mean), up(&var), up(&w), up(&b));
            let (dwo, dbo) = if affine { (Some(&dw), Some(&db)) } else { (None, None) };
            let dy = strided_wgpu::ops::batch_norm(&mirror(ctx, &x, layout), &dm, &dv, dwo, dbo, eps).unwrap();
            check(&format!("{} case {case}", name(ctx)), &dy.download().unwrap().contiguous(x.layout().suggest_memory_format()).unwrap(), dense.strides());
            assert_eq!(dy.strides(), dense.strides());
        }
    }
    let x = HostTensor::from_vec(vec![0f32; 12], &[1, 3, 2, 2]).unwrap();
    let two = HostTensor::from_vec(vec![0f32; 2], &[2]).unwrap();
    assert!(matches!(strided_wgpu::ops::batch_norm(&x, &two, &two, None, None, 1e-5), Err(Error::InvalidArgument { .. })));
    // PyTorch 2.15: weight and bias need C elements in any shape (the statistics [C]); an
    // empty input is a clone, whatever its parameters (a negative eps still refused).
    let f = |v: Vec<f32>, s: &[usize]| HostTensor::from_vec(v, s).unwrap();
    let x = f((0..24).map(|i| i as f32 / 4.0).collect(), &[2, 3, 4]);
    let (m, v) = (f(vec![0.5, 1.0, -1.0], &[3]), f(vec![1.0, 4.0, 0.25], &[3]));
    let (w, b) = (f(vec![2.0, -1.0, 0.5], &[3]), f(vec![0.0, 1.0, 3.0], &[3]));
    let want = strided_wgpu::ops::batch_norm(&x, &m, &v, Some(&w), Some(&b), 1e-5).unwrap().to_vec::<f32>().unwrap();
    let reshaped = strided_wgpu::ops::batch_norm(&x, &m, &v, Some(&w.reshape(&[3, 1]).unwrap()), Some(&b.reshape(&[1, 3]).unwrap()), 1e-5).unwrap();
    assert_eq!(reshaped.to_vec::<f32>().unwrap(), want);
    assert!(matches!(strided_wgpu::ops::batch_norm(&x, &m.reshape(&[1, 3]).unwrap(), &v, None, None, 1e-5), Err(Error::InvalidArgument { .. })));
    let one = f(vec![2.0], &[]);
    let x1 = f(vec![1.0, 2.0], &[2, 1]);
    assert_eq!(strided_wgpu::ops::batch_norm(&x1, &f(vec![0.0], &[1]), &f(vec![1.0], &[1]), Some(&one), Some(&one), 0.0).unwrap().to_vec::<f32>().unwrap(), vec![4.0, 6.0]);
    let empty = HostTensor::zeros(&[0, 3, 4, 5], DType::F32, MemoryFormat::Contiguous).unwrap();
    for (mean, var) in [(&two, &two), (&m.to(DType::F16).unwrap(), &v)] {
        let y = strided_wgpu::ops::batch_norm(&empty, mean, var, None, None, 1e-5).unwrap();
        assert_eq!((y.shape(), y.dtype()), (&[0usize, 3, 4, 5][..], DType::F32));
    }
    assert!(matches!(strided_wgpu::ops::batch_norm(&empty, &m, &v, None, None, -0.5), Err(Error::InvalidArgument { .. })));
    // PyTorch's `clone() * weight[0] + bias[0]`: an int32 input with float32 parameters gives
    // float32, a float16 bias float16; a weight without an element 0 is an error.
    let empty_int = HostTensor::zeros(&[0, 3], DType::I32, MemoryFormat::Contiguous).unwrap();
    assert_eq!(strided_wgpu::ops::batch_norm(&empty_int, &m, &v, Some(&w), Some(&b), 1e-5).unwrap().dtype(), DType::F32);
    assert_eq!(strided_wgpu::ops::batch_norm(&empty_int, &m, &v, None, Some(&b.to(DType::F16).unwrap()), 1e-5).unwrap().dtype(), DType::F16);
    assert_eq!(strided_wgpu::ops::batch_norm(&empty_int, &m, &v, None, None, 1e-5).unwrap().dtype(), DType::I32);
    // A weight of more dims: its row 0 promotes as a tensor with dims and broadcasts.
    let empty16 = HostTensor::zeros(&[0, 3], DType::F16, MemoryFormat::Contiguous).unwrap();
    assert_eq!(strided_wgpu::ops::batch_norm(&empty16, &m, &v, Some(&w.reshape(&[3, 1]).unwrap()), None, 1e-5).unwrap().dtype(), DType::F32);
    let flat = HostTensor::zeros(&[0], DType::F32, MemoryFormat::Contiguous).unwrap();
    assert_eq!(strided_wgpu::ops::batch_norm(&flat, &m, &v, Some(&w.reshape(&[1, 3, 1]).unwrap()), None, 1e-5).unwrap().shape(), &[3, 0]);
    assert!(matches!(strided_wgpu::ops::batch_norm(&empty, &m, &v, Some(&w.reshape(&[1, 3]).unwrap()), None, 1e-5), Err(Error::Broadcast { .. })));
    // A weight [3, 0] has an element 0 (of shape [0]); an empty uint32 input has no
    // accumulation type in PyTorch.
    let empty_hw = HostTensor::zeros(&[2, 3, 0], DType::F32, MemoryFormat::Contiguous).unwrap();
    assert_eq!(strided_wgpu::ops::batch_norm(&empty_hw, &m, &v, Some(&HostTensor::zeros(&[3, 0], DType::F32, MemoryFormat::Contiguous).unwrap()), None, 1e-5).unwrap().shape(), &[2, 3, 0]);
    let empty_u32 = HostTensor::zeros(&[0, 3], DType::U32, MemoryFormat::Contiguous).unwrap();
    assert!(matches!(strided_wgpu::ops::batch_norm(&empty_u32, &m, &v, None, None, 1e-5), Err(Error::DType { .. })));
    for bad in [HostTensor::zeros(&[0], DType::F32, MemoryFormat::Contiguous).unwrap(), f(vec![1.0], &[])] {
        assert!(matches!(strided_wgpu::ops::batch_norm(&empty, &m, &v, Some(&bad), None, 1e-5), Err(Error::InvalidArgument { .. })), "{:?}", bad.shape());
    }
    for ctx in contexts() {
        let up = |t: &HostTensor| DeviceTensor::upload(ctx, t).unwrap();
        let y = strided_wgpu::ops::batch_norm(&up(&x), &up(&m), &up(&v), Some(&up(&w.reshape(&[3, 1]).unwrap())), Some(&up(&b.reshape(&[1, 3]).unwrap())), 1e-5).unwrap();
        let got = y.download().unwrap().to_vec::<f32>().unwrap();
        assert!(got.len() == want.len() && got.iter().zip(&want).all(|(g, w)| (g - w).abs() <= 1e-5 * (1.0 + w.abs())), "{}: {got:?} against {want:?}", name(ctx));
        assert_eq!(strided_wgpu::ops::batch_norm(&up(&empty), &up(&two), &up(&two), None, None, 1e-5).unwrap().shape(), &[0, 3, 4, 5]);
    }
}

/// `layer_norm` and `group_norm` on host and every adapter against plain f64 loops over their
/// definitions (biased variance, NaN spreading over its slice or group), for NCHW,
/// channels-last, strided and permuted inputs of the three float types, with and without the
/// affine parameters; layer_norm's output is contiguous, group_norm's keeps the input's memory
/// format; bad arguments are the same typed errors everywhere.
#[test]
fn layer_norm_and_group_norm_match_the_definition() {
    use strided_wgpu::ops::{group_norm, layer_norm};
    let mut rng = Rng(0x1a7e);
    for case in 0..24 {
        let dtype = float(&mut rng);
        let layout = rng.below(4);
        let shape = [1 + rng.below(2), 2 * (1 + rng.below(3)), 1 + rng.below(5), 1 + rng.below(5)];
        let nan = rng.below(4) == 0;
        let x = tensor(&mut rng, &shape, dtype, layout, nan);
        let xs: Vec<f64> = bits(&x).into_iter().map(|b| value(dtype, b)).collect();
        let affine = rng.below(3);
        let eps = [1e-5, 0.5][rng.below(2)];
        // The affine parameters: float32, or the input's 16-bit type (exact either way).
        let param_dtype = if dtype != DType::F32 && rng.below(2) == 0 { dtype } else { DType::F32 };
        let params = |rng: &mut Rng, len: usize| {
            let t = |rng: &mut Rng| HostTensor::from_vec((0..len).map(|_| rng.below(64) as f32 / 16.0 - 2.0).collect::<Vec<f32>>(), &[len]).unwrap();
            (t(rng), t(rng))
        };
        let typed = |t: &HostTensor| t.to(param_dtype).unwrap();
        // `slice_of(i)`: which normalized slice element i (row-major) belongs to; `param_of(i)`:
        // which weight element scales it.
        let normalize = |slice_of: &dyn Fn(usize) -> usize, param_of: &dyn Fn(usize) -> usize, w: &[f32], b: &[f32]| -> Vec<f64> {
            let slices = xs.len() / xs.iter().enumerate().filter(|&(i, _)| slice_of(i) == 0).count();
            let (mut sum, mut count) = (vec![0f64; slices], vec![0f64; slices]);
            for (i, &v) in xs.iter().enumerate() {
                sum[slice_of(i)] += v;
                count[slice_of(i)] += 1.0;
            }
            let mean: Vec<f64> = sum.iter().zip(&count).map(|(s, c)| s / c).collect();
            let mut var = vec![0f64; slices];
            for (i, &v) in xs.iter().enumerate() {
                var[slice_of(i)] += (v - mean[slice_of(i)]).powi(2) / count[slice_of(i)];
            }
            (0..xs.len())
                .map(|i| {
                    let y = (xs[i] - mean[slice_of(i)]) / (var[slice_of(i)] + eps).sqrt();
                    match affine {
                        0 => y,
                        1 => y * w[param_of(i)] as f64,
                        _ => y * w[param_of(i)] as f64 + b[param_of(i)] as f64,
                    }
                })
                .collect()
        };
        let check = |what: &str, y: &HostTensor, strides: &[isize], want: &[f64]| {
            assert_eq!((y.dtype(), y.shape()), (dtype, x.shape()), "{what}");
            assert_eq!(y.strides(), strides, "{what}: memory format");
            let got: Vec<f64> = bits(y).iter().map(|&b| value(dtype, b)).collect();
            assert_eq!(got.len(), want.len(), "{what}");
            for (k, (&g, &w)) in got.iter().zip(want).enumerate() {
                assert!(close(dtype, g, w, 16.0 * (1.0 + w.abs())), "{what}: element {k}: {g}, want {w}");
            }
        };
        let opt = |t: &HostTensor, on: bool| if on { Some(t.clone()) } else { None };

        // layer_norm over the last k dims.
        let k = 1 + rng.below(3);
        let norm_shape = &shape[4 - k..];
        let inner: usize = norm_shape.iter().product();
        let (w, b) = params(&mut rng, inner);
        let (w3, b3) = (typed(&w.view(&norm_shape.iter().map(|&d| d as isize).collect::<Vec<_>>()).unwrap()), typed(&b.view(&norm_shape.iter().map(|&d| d as isize).collect::<Vec<_>>()).unwrap()));
        let want = normalize(&|i| i / inner, &|i| i % inner, &w.to_vec::<f32>().unwrap(), &b.to_vec::<f32>().unwrap());
        let (wo, bo) = (opt(&w3, affine >= 1), opt(&b3, affine == 2));
        let dense = Layout::contiguous(&shape).unwrap();
        let y = layer_norm(&x, norm_shape, wo.as_ref(), bo.as_ref(), eps).unwrap();
        check(&format!("layer_norm host case {case}"), &y, dense.strides(), &want);
        for ctx in contexts() {
            let up = |t: &Option<HostTensor>| t.as_ref().map(|t| DeviceTensor::upload(ctx, t).unwrap());
            let (dw, db) = (up(&wo), up(&bo));
            let dy = layer_norm(&mirror(ctx, &x, layout), norm_shape, dw.as_ref(), db.as_ref(), eps).unwrap();
            assert_eq!(dy.strides(), dense.strides());
            check(&format!("layer_norm {} case {case}", name(ctx)), &dy.download().unwrap(), dense.strides(), &want);
        }

        // group_norm in G groups of the channels.
        let c = shape[1];
        let groups = [1, 2, c][rng.below(3)];
        let plane = shape[2] * shape[3];
        let (w, b) = params(&mut rng, c);
        let want = normalize(&|i| i / (plane * c / groups), &|i| (i / plane) % c, &w.to_vec::<f32>().unwrap(), &b.to_vec::<f32>().unwrap());
        let (wo, bo) = (opt(&typed(&w), affine >= 1), opt(&typed(&b), affine == 2));
        if shape[0] * (c / groups) * plane == 1 {
            // One value per group over the batch: F.group_norm's ValueError.
            assert!(matches!(group_norm(&x, groups, wo.as_ref(), bo.as_ref(), eps), Err(Error::InvalidArgument { .. })), "case {case}");
            continue;
        }
        let format = x.layout().suggest_memory_format();
        let dense = Layout::with_format(&shape, format).unwrap();
        let y = group_norm(&x, groups, wo.as_ref(), bo.as_ref(), eps).unwrap();
        check(&format!("group_norm host case {case}"), &y.contiguous(MemoryFormat::Contiguous).unwrap(), Layout::contiguous(&shape).unwrap().strides(), &want);
        assert_eq!(y.strides(), dense.strides(), "group_norm host case {case}: memory format");
        for ctx in contexts() {
            let up = |t: &Option<HostTensor>| t.as_ref().map(|t| DeviceTensor::upload(ctx, t).unwrap());
            let (dw, db) = (up(&wo), up(&bo));
            let dy = group_norm(&mirror(ctx, &x, layout), groups, dw.as_ref(), db.as_ref(), eps).unwrap();
            assert_eq!(dy.strides(), dense.strides(), "group_norm {} case {case}: memory format", name(ctx));
            check(&format!("group_norm {} case {case}", name(ctx)), &dy.download().unwrap().contiguous(MemoryFormat::Contiguous).unwrap(), Layout::contiguous(&shape).unwrap().strides(), &want);
        }
    }

    // Bad arguments: the same typed errors on the host and every adapter.
    let x = HostTensor::from_vec((0..24).map(|v| v as f32).collect::<Vec<f32>>(), &[2, 6, 2]).unwrap();
    let three = HostTensor::from_vec(vec![1f32; 3], &[3]).unwrap();
    let ints = HostTensor::from_vec(vec![1i32; 24], &[2, 6, 2]).unwrap();
    type Calls<T> = Vec<Result<T, Error>>;
    fn bad<T: ShapeOps + strided_wgpu::Reduce>(x: &T, three: &T) -> Calls<T> {
        vec![
            layer_norm(x, &[], None, None, 1e-5),
            layer_norm(x, &[6], None, None, 1e-5),
            layer_norm(x, &[1, 2, 6, 2], None, None, 1e-5),
            layer_norm(x, &[2], Some(three), None, 1e-5),
            layer_norm(x, &[2], None, None, f64::NAN),
            group_norm(x, 0, None, None, 1e-5),
            group_norm(x, 4, None, None, 1e-5),
            group_norm(x, 3, None, Some(three), 1e-5),
            group_norm(&x.select(0, 0).unwrap().select(0, 0).unwrap(), 1, None, None, 1e-5),
            group_norm(x, 2, None, None, -1.0),
        ]
    }
    let unsupported = |x: Result<HostTensor, Error>| assert!(matches!(x, Err(Error::Unsupported { .. })), "{:?}", x.map(|_| ()));
    unsupported(layer_norm(&ints, &[2], None, None, 1e-5));
    unsupported(group_norm(&ints, 2, None, None, 1e-5));
    // Affine parameters of another type than the input's (float32 only beside 16-bit inputs),
    // or weight and bias of two types: PyTorch's mixed-type check.
    let two = |d: DType| HostTensor::from_vec(vec![1f32; 2], &[2]).unwrap().to(d).unwrap();
    let six = |d: DType| HostTensor::from_vec(vec![1f32; 6], &[6]).unwrap().to(d).unwrap();
    let x16 = x.to(DType::F16).unwrap();
    let dtype_error = |r: Result<HostTensor, Error>, what: &str| assert!(matches!(r, Err(Error::DType { .. })), "{what}: {:?}", r.map(|_| ()));
    dtype_error(layer_norm(&x, &[2], Some(&two(DType::F16)), None, 1e-5), "f16 weight, f32 input");
    dtype_error(layer_norm(&x16, &[2], Some(&two(DType::BF16)), None, 1e-5), "bf16 weight, f16 input");
    dtype_error(group_norm(&x16, 3, Some(&six(DType::F32)), Some(&six(DType::F16)), 1e-5), "f32 weight, f16 bias");
    assert!(layer_norm(&x16, &[2], Some(&two(DType::F32)), Some(&two(DType::F32)), 1e-5).is_ok());
    // Empty inputs: empty results of the input's shape; rank 1: every dim normalized.
    let empty = HostTensor::zeros(&[0, 3], DType::F32, MemoryFormat::Contiguous).unwrap();
    assert_eq!(layer_norm(&empty, &[3], None, None, 1e-5).unwrap().shape(), &[0, 3]);
    assert_eq!(group_norm(&HostTensor::zeros(&[0, 4, 2, 2], DType::F32, MemoryFormat::Contiguous).unwrap(), 2, None, None, 1e-5).unwrap().shape(), &[0, 4, 2, 2]);
    // PyTorch 2.15: "Expected HxW to be greater than 0".
    assert!(matches!(group_norm(&HostTensor::zeros(&[2, 4, 0, 2], DType::F32, MemoryFormat::Contiguous).unwrap(), 2, None, None, 1e-5), Err(Error::InvalidArgument { .. })));
    let line = HostTensor::from_vec(vec![1f32, 3.0, 0.0, 4.0], &[4]).unwrap();
    let want: Vec<f32> = [1f32, 3.0, 0.0, 4.0].iter().map(|v| (v - 2.0) / 2.5f32.sqrt()).collect();
    let near = |got: Vec<f32>, what: &str| assert!(got.len() == want.len() && got.iter().zip(&want).all(|(g, w)| (g - w).abs() <= 1e-6), "{what}: {got:?}, want {want:?}");
    near(layer_norm(&line, &[4], None, None, 0.0).unwrap().to_vec::<f32>().unwrap(), "host rank 1");
    // group_norm of rank 2, 3 and 5 inputs equals that of the same values seen as [N, C, S, 1].
    let mut rng = Rng(0x9e);
    for shape in [vec![3, 4], vec![2, 4, 5], vec![2, 4, 2, 3, 2]] {
        let n: usize = shape.iter().product();
        let t = HostTensor::from_vec((0..n).map(|_| rng.below(128) as f32 / 8.0 - 8.0).collect::<Vec<f32>>(), &shape).unwrap();
        let flat = t.reshape(&[shape[0] as isize, shape[1] as isize, -1, 1]).unwrap();
        let want = group_norm(&flat, 2, None, None, 1e-5).unwrap().to_vec::<f32>().unwrap();
        let got = group_norm(&t, 2, None, None, 1e-5).unwrap();
        assert_eq!((got.shape(), got.to_vec::<f32>().unwrap()), (&shape[..], want.clone()), "host rank {}", shape.len());
        for ctx in contexts() {
            let d = group_norm(&DeviceTensor::upload(ctx, &t).unwrap(), 2, None, None, 1e-5).unwrap().download().unwrap().to_vec::<f32>().unwrap();
            assert!(d.len() == want.len() && d.iter().zip(&want).all(|(g, w)| (g - w).abs() <= 1e-5 * (1.0 + w.abs())), "{} rank {}", name(ctx), shape.len());
        }
    }
    for ctx in contexts() {
        near(layer_norm(&DeviceTensor::upload(ctx, &line).unwrap(), &[4], None, None, 0.0).unwrap().download().unwrap().to_vec::<f32>().unwrap(), &name(ctx));
    }
    let host = bad(&x, &three);
    for (k, r) in host.iter().enumerate() {
        assert!(matches!(r, Err(Error::InvalidArgument { .. })), "host call {k}: {:?}", r.as_ref().map(|_| ()));
    }
    let host: Vec<_> = host.into_iter().map(|r| r.map(|_| ()).map_err(|e| std::mem::discriminant(&e))).collect();
    for ctx in contexts() {
        let up = |t: &HostTensor| DeviceTensor::upload(ctx, t).unwrap();
        let dev: Vec<_> = bad(&up(&x), &up(&three)).into_iter().map(|r| r.map(|_| ()).map_err(|e| std::mem::discriminant(&e))).collect();
        assert_eq!(dev, host, "{}", name(ctx));
    }
}

/// A folded convolution equals the convolution followed by the batch norm (host reference and
/// every adapter's convolution of the folded weight).
#[test]
fn folding_a_batch_norm_into_a_convolution_keeps_its_output() {
    use strided_wgpu::advanced::internal::conv2d_cpu;
    use strided_wgpu::{Conv2d, Conv2dOptions};
    use strided_wgpu::ops::fold_batch_norm;
    let mut rng = Rng(0xf01d);
    let (n, c, k) = (2, 3, 5);
    let x = tensor(&mut rng, &[n, c, 6, 7], DType::F32, 0, false);
    let wt = tensor(&mut rng, &[k, c, 3, 3], DType::F32, 0, false);
    let vec = |rng: &mut Rng, lo: f32| HostTensor::from_vec((0..k).map(|_| lo + rng.below(64) as f32 / 16.0).collect::<Vec<f32>>(), &[k]).unwrap();
    let (bias, mean, var, g, beta) = (vec(&mut rng, -2.0), vec(&mut rng, -2.0), vec(&mut rng, 0.5), vec(&mut rng, -2.0), vec(&mut rng, -2.0));
    let opts = Conv2dOptions { padding: (1, 1), ..Default::default() };
    let want = strided_wgpu::ops::batch_norm(&conv2d_cpu(&x, &wt, Some(&bias), &opts).unwrap(), &mean, &var, Some(&g), Some(&beta), 1e-5).unwrap().to_vec::<f32>().unwrap();
    let scale: f64 = want.iter().map(|v| v.abs() as f64).fold(0.0, f64::max) + 64.0 * 8.0;
    let (fw, fb) = fold_batch_norm(&wt, Some(&bias), &mean, &var, Some(&g), Some(&beta), 1e-5).unwrap();
    let got = conv2d_cpu(&x, &fw, Some(&fb), &opts).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(got.len(), want.len());
    for (a, b) in got.iter().zip(&want) {
        assert!(((a - b).abs() as f64) <= 1e-5 * scale, "host: {a} against {b}");
    }
    // A channels-last weight folds into a channels-last weight of the same values.
    let (cfw, cfb) = fold_batch_norm(&wt.contiguous(strided_wgpu::MemoryFormat::ChannelsLast).unwrap(), Some(&bias), &mean, &var, Some(&g), Some(&beta), 1e-5).unwrap();
    assert_eq!(cfw.layout().suggest_memory_format(), strided_wgpu::MemoryFormat::ChannelsLast);
    assert!(cfw.is_contiguous_for(strided_wgpu::MemoryFormat::ChannelsLast), "{:?}", cfw.strides());
    assert_eq!((cfw.to_vec::<f32>().unwrap(), cfb.to_vec::<f32>().unwrap()), (fw.to_vec::<f32>().unwrap(), fb.to_vec::<f32>().unwrap()));
    for ctx in contexts() {
        let up = |t: &HostTensor| DeviceTensor::upload(ctx, t).unwrap();
        let (dfw, dfb) = fold_batch_norm(&up(&wt), Some(&up(&bias)), &up(&mean), &up(&var), Some(&up(&g)), Some(&up(&beta)), 1e-5).unwrap();
        let got = up(&x).conv2d(&dfw, Some(&dfb), &opts).unwrap().download().unwrap().to_vec::<f32>().unwrap();
        assert_eq!(got.len(), want.len(), "{}", name(ctx));
        for (a, b) in got.iter().zip(&want) {
            assert!(((a - b).abs() as f64) <= 1e-5 * scale, "{}: {a} against {b}", name(ctx));
        }
    }
    // A 16-bit weight and bias fold in f32 and round once: the f32 fold rounded to the type,
    // bit for bit, on the host and on each adapter. An integer weight is refused.
    use strided_wgpu::Elementwise;
    for dtype in [DType::F16, DType::BF16] {
        let (w16, b16) = (wt.to(dtype).unwrap(), bias.to(dtype).unwrap());
        let (fw32, fb32) = fold_batch_norm(&w16.to(DType::F32).unwrap(), Some(&b16.to(DType::F32).unwrap()), &mean, &var, Some(&g), Some(&beta), 1e-5).unwrap();
        let bits = |t: &HostTensor| t.to(DType::F32).unwrap().to_vec::<f32>().unwrap().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        let (want_w, want_b) = (bits(&fw32.to(dtype).unwrap()), bits(&fb32.to(dtype).unwrap()));
        let (fw, fb) = fold_batch_norm(&w16, Some(&b16), &mean, &var, Some(&g), Some(&beta), 1e-5).unwrap();
        assert_eq!((fw.dtype(), fb.dtype()), (dtype, dtype));
        assert_eq!((bits(&fw), bits(&fb)), (want_w.clone(), want_b.clone()), "host {dtype}");
        let (cfw, _) = fold_batch_norm(&w16.contiguous(strided_wgpu::MemoryFormat::ChannelsLast).unwrap(), Some(&b16), &mean, &var, Some(&g), Some(&beta), 1e-5).unwrap();
        assert!(cfw.is_contiguous_for(strided_wgpu::MemoryFormat::ChannelsLast) && bits(&cfw) == want_w, "host {dtype}: a channels-last weight's fold, strides {:?}", cfw.strides());
        for ctx in contexts() {
            let up = |t: &HostTensor| DeviceTensor::upload(ctx, t).unwrap();
            let (dfw, dfb) = fold_batch_norm(&up(&w16), Some(&up(&b16)), &up(&mean), &up(&var), Some(&up(&g)), Some(&up(&beta)), 1e-5).unwrap();
            assert_eq!((bits(&dfw.download().unwrap()), bits(&dfb.download().unwrap())), (want_w.clone(), want_b.clone()), "{} {dtype}", name(ctx));
        }
    }
    let wi = wt.to(DType::I32).unwrap();
    assert!(matches!(fold_batch_norm(&wi, None, &mean, &var, Some(&g), Some(&beta), 1e-5), Err(strided_wgpu::Error::InvalidArgument { op: "fold_batch_norm", .. })));
}

/// Max pooling windows with no tap inside the image (padding and dilation step over it): -inf,
/// and the index each scan starts from (the first row and column at or past 0), as PyTorch, on
/// both window kernels; in both layouts, with and without the kept column of 3-column windows.
#[test]
fn max_pooling_windows_without_an_inside_tap() {
    use strided_wgpu::advanced::internal::{window_with, PoolKernel};
    use strided_wgpu::advanced::internal::max_pool2d_window;
    // (input shape, kernel, stride, padding, dilation): rows 2 apart from -1 over a 1-row image,
    // columns the same, and 3-column windows at stride 2 (the kept column) over such rows.
    type Pair = (usize, usize);
    let cases: [([usize; 4], Pair, Pair, Pair, Pair); 3] = [
        ([1, 1, 1, 3], (2, 1), (1, 1), (1, 0), (2, 1)),
        ([1, 1, 3, 1], (1, 2), (1, 1), (0, 1), (1, 2)),
        ([1, 4, 1, 5], (2, 3), (1, 2), (1, 1), (2, 1)),
    ];
    for ctx in contexts() {
        let mut rng = Rng(0x9003);
        for (shape, kernel, stride, padding, dilation) in cases {
            for layout in [0, 1] {
                let h = tensor(&mut rng, &shape, DType::F32, layout, false);
                let d = mirror(ctx, &h, layout);
                let o = MaxPool2dOptions { kernel, stride: Some(stride), padding, dilation, ceil_mode: false };
                let mut g = max_pool2d_window(h.layout(), DType::F32, &o, true).unwrap();
                g.format = if layout == 1 { MemoryFormat::ChannelsLast } else { MemoryFormat::Contiguous };
                let want = Pool2d::window(&h, &g).map(|(a, b)| [Some(a), b].into_iter().flatten().collect::<Vec<_>>());
                for kernel in [PoolKernel::General, PoolKernel::Vec4] {
                    let got = window_with(&d, &g, kernel).map(|(a, b)| [Some(a), b].into_iter().flatten().collect());
                    same(&format!("{} {shape:?} {o:?} layout {layout} {kernel:?}", name(ctx)), want.clone(), got, true);
                }
            }
        }
    }
}

/// Both window kernels, forced (`advanced::window_with`), on random windows against the CPU
/// reference: the vec4 kernel in either output layout over any input strides (channels-last,
/// NCHW, strided along W, permuted, offset by a narrowed batch), float32 channels-last read and
/// written as 16-byte words (views 4 channels in; 1 channel in takes the scalar path), C not a
/// multiple of 4 (its last group masked), bilinear x2 along W, NCHW rows as 16-byte words (the
/// rows kernel: max pooling of 3 columns at stride 2, 2x2 average pooling, bilinear x2; views 4
/// and 1 columns in), runs of pixels crossing rows, NaN through max, indices; where the vec4
/// kernel cannot serve a call (16-bit NCHW output, 16-bit odd C) it is `Unsupported`, exactly
/// as `pool_classify` says.
#[test]
fn both_window_kernels_match_the_cpu_reference() {
    use strided_wgpu::advanced::internal::{pool_classify, window_with, PoolKernel};
    use strided_wgpu::advanced::internal::{adaptive_window, avg_pool2d_window, max_pool2d_window, Window, WindowMode};
    for ctx in contexts() {
        let mut rng = Rng(0x9002);
        let (mut served, mut tried) = ([0usize; 2], 0);
        for case in 0..96 {
            // Two dtypes (f32 twice as often), so that few pipelines are made. Cases 48-71:
            // float32 channels-last with C a multiple of 4 (the vec kernel's 16-byte words),
            // sometimes a view of C - 4 channels from channel 4 (aligned) or 1 (not aligned).
            // Cases 72-95: float32 NCHW rows of 8, 16 or 24 (a view 4 columns in, or 1: not
            // aligned) into NCHW, max pooling of 3 columns at stride 2, 2x2 average pooling and
            // bilinear x2 (the rows kernel's calls).
            let words = (48..72).contains(&case);
            let rows = case >= 72;
            let dtype = if words || rows { DType::F32 } else { [DType::F32, DType::F32, DType::F16][rng.below(3)] };
            let layout = if words { 1 } else if rows { 0 } else { rng.below(4) };
            let c = if words { 4 * (1 + rng.below(2)) + 4 * (case % 3 != 0) as usize } else { 1 + rng.below(9) };
            // One rows case in 8 is 136 wide: 17 output words or pairs, two runs a row on CPU
            // adapters (the second starting mid-row).
            let width = if case % 8 == 5 { 136 } else { 8 * (1 + rng.below(3)) };
            let height = if width > 24 { 8 } else { 1 + rows as usize + rng.below(13 - rows as usize) };
            let shape = [1 + rng.below(3) + rows as usize, c, height, if rows { width + 4 } else { 1 + rng.below(13) }];
            let nan = rng.below(3) == 0;
            let h = tensor(&mut rng, &shape, dtype, layout, nan);
            let d = mirror(ctx, &h, layout);
            // Half the time a view offset by one image (the input's first element not aligned).
            let (h, d) = if shape[0] > 1 && rng.below(2) == 0 { (h.narrow(0, 1, shape[0] - 1).unwrap(), d.narrow(0, 1, shape[0] - 1).unwrap()) } else { (h, d) };
            let first: usize = [4, 1][case % 2];
            let (h, d) = if words && case % 3 != 0 { (h.narrow(1, first as isize, c - 4).unwrap(), d.narrow(1, first as isize, c - 4).unwrap()) } else { (h, d) };
            let column = if case % 4 == 3 { 1 } else { 4 };
            let (h, d) = if rows { (h.narrow(3, column, width).unwrap(), d.narrow(3, column, width).unwrap()) } else { (h, d) };
            // A third of the rows cases drop the last channel (image stride not C planes).
            let (h, d) = if rows && case % 3 == 0 && c > 1 { (h.narrow(1, 0, c - 1).unwrap(), d.narrow(1, 0, c - 1).unwrap()) } else { (h, d) };
            let shape: [usize; 4] = h.shape().try_into().unwrap();
            let x = h.layout();
            let k = (1 + rng.below(4), if rows { 3 } else { 1 + rng.below(4) });
            let stride = Some((1 + rng.below(3), if rows { 2 } else { 1 + rng.below(3) }));
            // The wide rows cases pad 1 column (their second run reads the column before it).
            let padding = (rng.below(k.0 / 2 + 1), if width > 24 { 1 } else { rng.below(k.1 / 2 + 1) });
            let ceil = rng.below(2) == 1;
            let dilation = (1 + rng.below(2), if rows { 1 } else { 1 + rng.below(2) });
            let family = if rows { [0, 1, 4][(case / 2) % 3] } else { case % 5 };
            // Rows average pooling in ceil mode: odd heights give windows partly outside (not
            // the rows kernel's). Rows max pooling with padding 1 is the rows kernel's only
            // without ceil mode (its output width, W / 2 + 1, is odd with it); the wide cases
            // take none.
            let ceil_mode = if rows { family == 1 || (ceil && width <= 24) } else { ceil };
            // The rows kernel's average pooling: 2x2 windows at stride 2, no padding.
            let (k, stride, padding) = if rows && family == 1 { ((2, 2), Some((2, 2)), (0, 0)) } else { (k, stride, padding) };
            let g: Result<Window, Error> = match family {
                0 => max_pool2d_window(x, dtype, &MaxPool2dOptions { kernel: k, stride, padding, dilation, ceil_mode }, !rows && rng.below(2) == 0),
                1 => avg_pool2d_window(x, dtype, &AvgPool2dOptions { kernel: k, stride, padding, ceil_mode, count_include_pad: rng.below(2) == 0, divisor_override: (rng.below(4) == 0).then(|| 1 + rng.below(5)) }),
                2 => adaptive_window("adaptive_avg_pool2d", x, dtype, (1 + rng.below(shape[2] + 2), 1 + rng.below(shape[3] + 2)), false, false),
                3 => adaptive_window("adaptive_max_pool2d", x, dtype, (1 + rng.below(shape[2] + 2), 1 + rng.below(shape[3] + 2)), true, rng.below(2) == 0),
                _ => {
                    // Half the time twice as wide (the vec kernel's x2 runs when not align_corners).
                    let out = (1 + rng.below(2 * shape[2] + 1), if rows || rng.below(2) == 0 { 2 * shape[3] } else { 1 + rng.below(2 * shape[3] + 1) });
                    let align_corners = !rows && rng.below(2) == 0;
                    let sc = |i: usize, o: usize| if align_corners { if o > 1 { (i as f32 - 1.0) / (o as f32 - 1.0) } else { 0.0 } } else { i as f32 / o as f32 };
                    let mode = WindowMode::Bilinear { scale: (sc(shape[2], out.0), sc(shape[3], out.1)), align_corners };
                    Ok(Window { op: "interpolate", mode, input: h.shape().try_into().unwrap(), out, kernel: (1, 1), stride: (1, 1), padding: (0, 0), dilation: (1, 1), indices: false, format: MemoryFormat::Contiguous })
                }
            };
            let Ok(mut g) = g else { continue };
            tried += 1;
            g.format = if words || (!rows && rng.below(2) == 0) { MemoryFormat::ChannelsLast } else { MemoryFormat::Contiguous };
            let what = format!("{} case {case}: {:?} {dtype} layout {layout} {g:?}", name(ctx), h.shape());
            let want = Pool2d::window(&h, &g).map(|(a, b)| [Some(a), b].into_iter().flatten().collect::<Vec<_>>());
            let exact = !matches!(g.mode, WindowMode::Avg { .. } | WindowMode::AdaptiveAvg | WindowMode::Bilinear { .. });
            for (i, kernel) in [PoolKernel::General, PoolKernel::Vec4].into_iter().enumerate() {
                let out = Layout::with_format(&g.out_shape(), g.format).unwrap();
                let got = window_with(&d, &g, kernel);
                match pool_classify(&g, dtype, &out, kernel) {
                    Ok(_) => {
                        // Counted where values were compared (not where both sides refused).
                        served[i] += same(&format!("{what} {kernel:?}"), want.clone(), got.map(|(a, b)| [Some(a), b].into_iter().flatten().collect()), exact) as usize;
                    }
                    Err(e) => {
                        assert!(matches!(e, Error::Unsupported { .. }), "{what}: {e}");
                        assert!(matches!(got, Err(Error::Unsupported { .. })), "{what} {kernel:?}: forced where classify refuses");
                    }
                }
            }
        }
        assert!(served[0] == tried && tried >= 80 && served[1] >= 65, "{}: of {tried} cases each kernel served {served:?}", name(ctx));
    }
}

/// Pooling over an empty channel or spatial dim is PyTorch's error on the host and on every
/// adapter (it panicked on the device, and returned values on the host); an empty batch is
/// an empty result; a dilation whose window arithmetic leaves i64 is an overflow error (it
/// wrapped negative and returned a result on the host).
#[test]
fn empty_dims_and_huge_dilations_are_typed_errors() {
    let max = MaxPool2dOptions { kernel: (2, 2), stride: None, padding: (1, 1), dilation: (1, 1), ceil_mode: false };
    let avg = AvgPool2dOptions { padding: (1, 1), ..AvgPool2dOptions::new((2, 2)) };
    for shape in [[1usize, 1, 0, 3], [1, 1, 3, 0], [2, 0, 3, 3]] {
        let h = HostTensor::zeros(&shape, DType::F32, MemoryFormat::Contiguous).unwrap();
        let check = |what: &str, r: Result<(), Error>| match r {
            Err(Error::InvalidArgument { detail, .. }) => assert!(detail.contains("Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size"), "{what} {shape:?}: {detail}"),
            other => panic!("{what} {shape:?}: {other:?}"),
        };
        check("host max", h.max_pool2d(&max).map(drop));
        check("host avg", h.avg_pool2d(&avg).map(drop));
        for ctx in contexts() {
            let d = DeviceTensor::upload(ctx, &h).unwrap();
            check(&format!("{} max", name(ctx)), d.max_pool2d(&max).map(drop));
            check(&format!("{} avg", name(ctx)), d.avg_pool2d(&avg).map(drop));
        }
    }
    let h = HostTensor::zeros(&[0, 2, 4, 4], DType::F32, MemoryFormat::Contiguous).unwrap();
    assert_eq!(h.max_pool2d(&max).unwrap().shape(), &[0, 2, 3, 3]);
    for ctx in contexts() {
        assert_eq!(DeviceTensor::upload(ctx, &h).unwrap().max_pool2d(&max).unwrap().shape(), &[0, 2, 3, 3], "{}", name(ctx));
    }
    let x = HostTensor::zeros(&[1, 1, 4, 4], DType::F32, MemoryFormat::Contiguous).unwrap();
    for dilation in [usize::MAX, 1 << 62] {
        let r = x.max_pool2d(&MaxPool2dOptions { dilation: (dilation, 1), ..max });
        assert!(matches!(r, Err(Error::Overflow { op: "max_pool2d", .. }) | Err(Error::InvalidArgument { op: "max_pool2d", .. })), "dilation {dilation}: {r:?}");
    }
    let r = x.max_pool2d(&MaxPool2dOptions { dilation: (usize::MAX, 1), ..max });
    assert!(matches!(r, Err(Error::Overflow { op: "max_pool2d", .. })), "{r:?}");
}

/// Shape-op arguments whose sizes leave the integer types are overflow errors naming the op,
/// on the host and on every adapter: pads near `isize::MAX` (their sum with the size
/// overflowed `isize`), `isize::MIN` (negated), results of more bytes than one allocation can
/// hold (`pad`, `repeat`, `cat` and `stack` of expanded views, a huge `interpolate`, which
/// panicked or failed in another op's name). A crop past the size on one side is PyTorch's
/// error (it narrows the input first) even where the other side pads; the result was filled.
#[test]
fn huge_and_negative_shape_arguments_are_typed_errors() {
    type Check = (String, Result<(), Error>, &'static str, &'static str);
    fn checks<T: ShapeOps>(x: &T, one: &T) -> Vec<Check> {
        let drop1 = |r: Result<T, Error>| r.map(drop);
        let c = |p: &[isize]| PadMode::Constant(p.len() as f64);
        let (max, min) = (isize::MAX, isize::MIN);
        let mut out: Vec<Check> = Vec::new();
        for p in [[max, 0], [0, max], [max, max], [max / 2 + 1, max / 2 + 1], [1 << 58, 0]] {
            out.push((format!("pad {p:?}"), drop1(x.pad(&p, c(&p))), "pad", "overflow"));
        }
        out.push(("replicate pad [max, 0, 0, 0]".into(), drop1(x.pad(&[max, 0, 0, 0], PadMode::Replicate)), "pad", "overflow"));
        out.push(("pad [1 << 61, 0] of [1]".into(), drop1(one.pad(&[1 << 61, 0], PadMode::Constant(0.0))), "pad", "overflow"));
        for p in [[min, max], [max, min], [min, 0], [7, -6], [-6, 7], [-3, -3], [min, min]] {
            out.push((format!("pad {p:?}"), drop1(x.pad(&p, c(&p))), "pad", "invalid"));
        }
        out.push(("repeat [1 << 61] of [1]".into(), drop1(one.repeat(&[1 << 61])), "repeat", "overflow"));
        out.push(("repeat [1, 1, 1, 1 << 57]".into(), drop1(x.repeat(&[1, 1, 1, 1 << 57])), "repeat", "overflow"));
        out.push(("repeat [usize::MAX, 2]".into(), drop1(one.repeat(&[usize::MAX, 2])), "repeat", "overflow"));
        let big = one.expand(&[1 << 60]).unwrap();
        out.push(("cat of two [2^60]".into(), drop1(cat(&[&big, &big], 0)), "cat", "overflow"));
        out.push(("stack of two [2^60]".into(), drop1(stack(&[&big, &big], 0)), "stack", "overflow"));
        let huge = one.expand(&[1 << 62]).unwrap();
        out.push(("cat of three [2^62]".into(), drop1(cat(&[&huge, &huge, &huge], 0)), "cat", "overflow"));
        let pixel = one.view(&[1, 1, 1, 1]).unwrap();
        for (what, o) in [
            ("scale 1e300", InterpolateOptions::scale((1e300, 1.0), InterpolateMode::Nearest)),
            ("scale 1e300 bilinear", InterpolateOptions::scale((1.0, 1e300), InterpolateMode::Bilinear { align_corners: false })),
            ("size 2^61", InterpolateOptions::size((1 << 61, 1), InterpolateMode::NearestExact)),
            ("size usize::MAX", InterpolateOptions::size((usize::MAX, usize::MAX), InterpolateMode::Nearest)),
        ] {
            out.push((format!("interpolate {what}"), drop1(pixel.interpolate(&o)), "interpolate", "overflow"));
        }
        out
    }
    let h = HostTensor::from_vec((0..2 * 3 * 4 * 5).map(|i| i as f32).collect(), &[2, 3, 4, 5]).unwrap();
    let one = HostTensor::from_vec(vec![1f32], &[1]).unwrap();
    let mut all = vec![("host".to_string(), checks(&h, &one))];
    for ctx in contexts() {
        all.push((name(ctx), checks(&DeviceTensor::upload(ctx, &h).unwrap(), &DeviceTensor::upload(ctx, &one).unwrap())));
    }
    for (target, list) in all {
        for (what, r, op, kind) in list {
            let ok = match (&r, kind) {
                (Err(e @ Error::Overflow { what: w, .. }), "overflow") => e.op() == op && w.contains('['),
                (Err(e @ Error::InvalidArgument { detail, .. }), "invalid") => e.op() == op && detail.contains("[2, 3, 4, 5]"),
                _ => false,
            };
            assert!(ok, "{target} {what}: want {kind} error of {op} naming the shape, got {r:?}");
        }
    }
}

/// Max-pooling indices are int32 `h * W + w` of a plane: a plane of more than 2^31 elements
/// (here an expanded view, which costs no memory) is a `Limit` error naming the op on the host
/// and every adapter, before anything is allocated; the host's indices wrapped.
#[test]
fn indices_past_int32_are_limit_errors() {
    fn checks<T: Pool2d + ShapeOps>(one: &T) -> Vec<(&'static str, Result<(), Error>)> {
        let plane = one.expand(&[1, 1, 65536, 32769]).unwrap();
        vec![
            ("max_pool2d", plane.max_pool2d_with_indices(&MaxPool2dOptions::new((2, 2))).map(drop)),
            ("adaptive_max_pool2d", plane.adaptive_max_pool2d_with_indices((1, 1)).map(drop)),
        ]
    }
    let one = HostTensor::from_vec(vec![1f32], &[1, 1, 1, 1]).unwrap();
    let mut all = vec![("host".to_string(), checks(&one))];
    for ctx in contexts() {
        all.push((name(ctx), checks(&DeviceTensor::upload(ctx, &one).unwrap())));
    }
    for (target, list) in all {
        for (op, r) in list {
            let ok = matches!(&r, Err(e @ Error::Limit { limit: "int32 indices", requested, .. }) if e.op() == op && *requested == 65536 * 32769 - 1);
            assert!(ok, "{target} {op}: want an int32-indices Limit error, got {r:?}");
        }
    }
}

/// Pooling of flipped inputs (negative strides, which reach the rows kernels directly): equal
/// to the host's pooling of the same views.
#[test]
fn pooling_of_flipped_inputs_matches_the_host() {
    let h = HostTensor::from_vec((0..2 * 4 * 8 * 16).map(|i| ((i * 37) % 101) as f32 * 0.25 - 12.0).collect::<Vec<_>>(), &[2, 4, 8, 16]).unwrap();
    let max = MaxPool2dOptions { padding: (1, 1), stride: Some((2, 2)), ..MaxPool2dOptions::new((3, 3)) };
    let avg = AvgPool2dOptions::new((2, 2));
    for ctx in contexts() {
        let d = DeviceTensor::upload(ctx, &h).unwrap();
        for dim in [0isize, 1, 2, 3] {
            let (hv, dv) = (h.flip(dim).unwrap(), d.flip(dim).unwrap());
            assert_eq!(dv.max_pool2d(&max).unwrap().download().unwrap().to_vec::<f32>().unwrap(), hv.max_pool2d(&max).unwrap().to_vec::<f32>().unwrap(), "{}: max, flip {dim}", name(ctx));
            let (got, want) = (dv.avg_pool2d(&avg).unwrap().download().unwrap().to_vec::<f32>().unwrap(), hv.avg_pool2d(&avg).unwrap().to_vec::<f32>().unwrap());
            for (g, e) in got.iter().zip(&want) {
                assert!((g - e).abs() <= 1e-5 * e.abs().max(1.0), "{}: avg, flip {dim}: {g} vs {e}", name(ctx));
            }
        }
    }
}

/// Max pooling gives, of equal maxima (+0.0 and -0.0), the first in row-major order and, of
/// NaNs, the last: PyTorch's scan (`val > max || isnan(val)`) and the host's. Every kernel
/// gives the host's bits: the rows kernel (NCHW words), the vec kernel's unrolled 3-column
/// windows (channels-last, with and without indices; without, they combined columns by value
/// only and gave the leftmost column's zero or NaN) and the general kernel.
#[test]
fn max_pooling_orders_zeros_and_nans_as_the_row_major_scan() {
    use strided_wgpu::advanced::internal::{max_pool2d_window, window_with, PoolKernel};
    let shape = [2usize, 4, 8, 16];
    let mut rng = Rng(0x9004);
    let values: Vec<f32> = (0..shape.iter().product())
        .map(|_| match rng.below(16) {
            0..=5 => -1.0,
            6..=9 => -0.0,
            10..=13 => 0.0,
            _ => f32::from_bits(((rng.below(2) as u32) << 31) | 0x7fc0_0000 | rng.below(1 << 22) as u32),
        })
        .collect();
    let host = HostTensor::from_vec(values, &shape).unwrap();
    let options = [((3, 3), (2, 2), (1, 1)), ((3, 3), (2, 2), (0, 1)), ((3, 3), (1, 2), (1, 0)), ((2, 2), (2, 2), (0, 0)), ((3, 3), (1, 1), (1, 1))];
    for ctx in contexts() {
        for layout in [0, 1] {
            let h = if layout == 1 { host.contiguous(MemoryFormat::ChannelsLast).unwrap() } else { host.clone() };
            let d = mirror(ctx, &h, layout);
            for (kernel, stride, padding) in options {
                let o = MaxPool2dOptions { kernel, stride: Some(stride), padding, dilation: (1, 1), ceil_mode: false };
                let what = format!("{} layout {layout} {o:?}", name(ctx));
                let want = h.max_pool2d(&o).unwrap();
                assert_eq!(bits(&d.max_pool2d(&o).unwrap().download().unwrap()), bits(&want), "{what}");
                let (wv, wi) = h.max_pool2d_with_indices(&o).unwrap();
                assert_eq!(bits(&wv), bits(&want), "{what}: the host with and without indices");
                let (gv, gi) = d.max_pool2d_with_indices(&o).unwrap();
                assert_eq!((bits(&gv.download().unwrap()), bits(&gi.download().unwrap())), (bits(&wv), bits(&wi)), "{what}: with indices");
                let g = max_pool2d_window(h.layout(), DType::F32, &o, false).unwrap();
                for kernel in [PoolKernel::General, PoolKernel::Vec4] {
                    match window_with(&d, &g, kernel) {
                        Ok((v, _)) => assert_eq!(bits(&v.download().unwrap()), bits(&want), "{what}: {kernel:?}"),
                        Err(Error::Unsupported { .. }) => assert_ne!(kernel, PoolKernel::General, "{what}: the general kernel serves every window"),
                        Err(e) => panic!("{what}: {kernel:?}: {e}"),
                    }
                }
            }
        }
    }
}

/// Sizes the kernels' i32 arithmetic cannot hold are typed errors, not wrapped results: an
/// average's divisor (a window of 46342 x 46342 taps; an override of 3e9), a row count past
/// 2^31 (an expanded view), and the int32 index a max pooling's last window starts from when
/// it has no tap inside the input (r0 * W + c0 past 2^31; the host wrapped it). The host, which
/// computes in i64 and f64, gives PyTorch's values for the divisors.
#[test]
fn window_arithmetic_past_i32_is_an_error_not_a_wrap() {
    let one = HostTensor::from_vec(vec![1f32], &[1, 1, 1, 1]).unwrap();
    let wide = AvgPool2dOptions { padding: (23171, 23171), ..AvgPool2dOptions::new((46342, 46342)) };
    let over = AvgPool2dOptions { divisor_override: Some(3_000_000_000), ..AvgPool2dOptions::new((1, 1)) };
    let tall = AvgPool2dOptions::new((1 << 30, 1));
    let gap = MaxPool2dOptions { kernel: (2, 1), stride: None, padding: (1, 0), dilation: (65537, 1), ceil_mode: false };
    let host = one.avg_pool2d(&wide).unwrap().to_vec::<f32>().unwrap()[0];
    assert_eq!(host, (1.0f64 / (46342.0 * 46342.0)) as f32);
    assert_eq!(one.avg_pool2d(&over).unwrap().to_vec::<f32>().unwrap(), vec![(1.0f64 / 3e9) as f32]);
    let plane = one.expand(&[1, 1, 65536, 32768]).unwrap();
    let index = |r: Result<(HostTensor, HostTensor), Error>| r.map(drop);
    assert!(matches!(index(plane.max_pool2d_with_indices(&gap)), Err(Error::Limit { limit: "int32 indices", .. })), "host");
    for ctx in contexts() {
        let d = DeviceTensor::upload(ctx, &one).unwrap();
        for (what, r) in [("divisor", d.avg_pool2d(&wide)), ("override", d.avg_pool2d(&over)), ("rows", d.expand(&[1, 1, 1 << 31, 1]).unwrap().avg_pool2d(&tall))] {
            match r.map(|t| t.download().unwrap().to_vec::<f32>().unwrap()) {
                Err(Error::Overflow { op: "avg_pool2d", .. }) => {}
                other => panic!("{} {what}: want an avg_pool2d overflow error, got {other:?}", name(ctx)),
            }
        }
        let r = d.expand(&[1, 1, 1 << 31, 1]).unwrap().max_pool2d(&MaxPool2dOptions::new((1 << 30, 1))).map(drop);
        assert!(matches!(r, Err(Error::Overflow { op: "max_pool2d", .. })), "{}: rows past i32 in max pooling: {r:?}", name(ctx));
        let r = d.expand(&[1, 1, 65536, 32768]).unwrap().max_pool2d_with_indices(&gap).map(drop);
        assert!(matches!(r, Err(Error::Limit { limit: "int32 indices", .. })), "{}: {r:?}", name(ctx));
    }
}

/// A window handed to the doc-hidden `Pool2d::window` or `window_with` (its fields are public)
/// must be one the constructors build for that input: one built for a larger input read outside
/// the view (the host panicked on a slice), and a zero dilation never ended (the host looped
/// forever; the GPU would lose the device). Both are `InvalidArgument` now, before anything is
/// allocated; a window the constructors build still runs.
#[test]
fn hand_built_windows_are_checked_against_their_input() {
    use strided_wgpu::advanced::internal::{max_pool2d_window, window_with, PoolKernel, WindowMode};
    let h = HostTensor::from_vec((0..16).map(|i| i as f32).collect::<Vec<_>>(), &[1, 1, 4, 4]).unwrap();
    let big = HostTensor::zeros(&[1, 1, 64, 64], DType::F32, MemoryFormat::Contiguous).unwrap();
    let fine = max_pool2d_window(h.layout(), DType::F32, &MaxPool2dOptions::new((2, 2)), false).unwrap();
    let larger = max_pool2d_window(big.layout(), DType::F32, &MaxPool2dOptions::new((2, 2)), false).unwrap();
    let mut relabeled = larger.clone();
    relabeled.input = [1, 1, 4, 4];
    let mut undilated = fine.clone();
    undilated.dilation = (0, 1);
    let mut avg_indices = fine.clone();
    avg_indices.mode = WindowMode::Avg { count_include_pad: true, divisor: None };
    avg_indices.indices = true;
    let mut nan_scale = fine.clone();
    nan_scale.mode = WindowMode::Bilinear { scale: (f32::NAN, 1.0), align_corners: false };
    let bad = [("larger", larger), ("relabeled", relabeled), ("undilated", undilated), ("avg indices", avg_indices), ("nan scale", nan_scale)];
    for (what, g) in &bad {
        assert!(matches!(Pool2d::window(&h, g), Err(Error::InvalidArgument { .. })), "host {what}");
    }
    assert_eq!(Pool2d::window(&h, &fine).unwrap().0.to_vec::<f32>().unwrap(), vec![5.0, 7.0, 13.0, 15.0]);
    for ctx in contexts() {
        let d = DeviceTensor::upload(ctx, &h).unwrap();
        for (what, g) in &bad {
            assert!(matches!(Pool2d::window(&d, g), Err(Error::InvalidArgument { .. })), "{} {what}", name(ctx));
            for kernel in [PoolKernel::General, PoolKernel::Vec4] {
                assert!(matches!(window_with(&d, g, kernel), Err(Error::InvalidArgument { .. })), "{} {what} {kernel:?}", name(ctx));
            }
        }
        assert_eq!(Pool2d::window(&d, &fine).unwrap().0.download().unwrap().to_vec::<f32>().unwrap(), vec![5.0, 7.0, 13.0, 15.0]);
    }
}

/// A max pooling whose padding is 2^30 - 1 elements finds its first tap in closed form (the
/// host's loop took as many steps); a kernel, stride, padding or dilation past int32 is an
/// overflow error on the host and every adapter, as PyTorch's (`safe_downcast<int>`: the host
/// pooled a kernel of 2^62); adaptive pooling of an empty spatial dim is PyTorch's error also
/// when the batch is empty, and so is adaptive max pooling of no channels (average pooling of
/// no channels is an empty result).
#[test]
fn huge_paddings_end_and_adaptive_pooling_needs_nonempty_dims() {
    let one = HostTensor::from_vec(vec![2f32], &[1, 1, 1, 1]).unwrap();
    let o = MaxPool2dOptions { kernel: ((1 << 31) - 2, 1), stride: Some((1, 1)), padding: ((1 << 30) - 1, 0), dilation: (1, 1), ceil_mode: false };
    let (done, got) = std::sync::mpsc::channel();
    std::thread::spawn(move || done.send(one.max_pool2d_with_indices(&o).map(|(v, i)| (v.shape().to_vec(), i.to_vec::<i32>().unwrap()))).unwrap());
    let r = got.recv_timeout(std::time::Duration::from_secs(60)).expect("the host's max pooling ended");
    // PyTorch: 2 rows, each window from 2^30 - 1 (and 2^30 - 2) rows before the image over row 0.
    assert_eq!(r.unwrap(), (vec![1, 1, 2, 1], vec![0, 0]));
    let one = HostTensor::from_vec(vec![2f32], &[1, 1, 1, 1]).unwrap();
    let big = 1usize << 31;
    let max = MaxPool2dOptions::new((1, 1));
    let maxes = [MaxPool2dOptions { kernel: (big, 1), ..max }, MaxPool2dOptions { kernel: (1 << 62, 1), padding: (1 << 61, 0), ..max }, MaxPool2dOptions { stride: Some((1, big)), ..max }, MaxPool2dOptions { dilation: (big, 1), ..max }];
    let avgs = [AvgPool2dOptions::new((1, big)), AvgPool2dOptions { stride: Some((big, 1)), ..AvgPool2dOptions::new((1, 1)) }];
    fn tries<T: Pool2d>(x: &T, maxes: &[MaxPool2dOptions], avgs: &[AvgPool2dOptions]) -> Vec<Result<(), Error>> {
        let mut v: Vec<Result<(), Error>> = maxes.iter().map(|o| x.max_pool2d(o).map(drop)).collect();
        v.extend(avgs.iter().map(|o| x.avg_pool2d(o).map(drop)));
        v
    }
    let mut all = vec![("host".to_string(), tries(&one, &maxes, &avgs))];
    for ctx in contexts() {
        all.push((name(ctx), tries(&DeviceTensor::upload(ctx, &one).unwrap(), &maxes, &avgs)));
    }
    for (target, list) in all {
        for (i, r) in list.into_iter().enumerate() {
            assert!(matches!(&r, Err(Error::Overflow { what, .. }) if what.contains("int32")), "{target} case {i}: {r:?}");
        }
    }
    for shape in [[0usize, 3, 0, 4], [1, 0, 4, 4], [0, 0, 2, 2], [2, 3, 4, 0]] {
        let h = HostTensor::zeros(&shape, DType::F32, MemoryFormat::Contiguous).unwrap();
        let no_channels = shape[1] == 0 && shape[2] > 0 && shape[3] > 0;
        let check = |what: String, r: Result<Vec<usize>, Error>, ok: bool| match r {
            Ok(s) if ok => assert_eq!(s, vec![shape[0], shape[1], 2, 2], "{what} {shape:?}"),
            r => assert!(!ok && matches!(&r, Err(Error::InvalidArgument { detail, .. }) if detail.contains("non-zero size for non-batch dimensions")), "{what} {shape:?}: {r:?}"),
        };
        check("host avg".into(), h.adaptive_avg_pool2d((2, 2)).map(|t| t.shape().to_vec()), no_channels);
        check("host max".into(), h.adaptive_max_pool2d((2, 2)).map(|t| t.shape().to_vec()), false);
        for ctx in contexts() {
            let d = DeviceTensor::zeros(ctx, &shape, DType::F32, MemoryFormat::Contiguous).unwrap();
            check(format!("{} avg", name(ctx)), d.adaptive_avg_pool2d((2, 2)).map(|t| t.shape().to_vec()), no_channels);
            check(format!("{} max", name(ctx)), d.adaptive_max_pool2d_with_indices((2, 2)).map(|t| t.0.shape().to_vec()), false);
        }
    }
}

/// A constant pad's value converts to the tensor's type as PyTorch's `fill_` does
/// (`checked_convert`): past the type's range is `InvalidArgument` (it saturated or wrapped:
/// uint32 3e9 gave 2^31 - 1, int8 200 gave -56, float16 1e5 infinity), an integer type takes
/// it truncated, a float type any infinity or NaN; on the host and every adapter alike.
#[test]
fn constant_pad_values_convert_as_pytorch_fill() {
    fn padded<T: ShapeOps>(x: &T, v: f64) -> Result<T, Error> {
        x.pad(&[1, 1], PadMode::Constant(v))
    }
    let ok: [(DType, f64, f64); 7] = [(DType::U32, 3e9, 3e9), (DType::I32, 2.7, 2.0), (DType::I32, -2.7, -2.0), (DType::U8, 255.0, 255.0), (DType::I8, -128.0, -128.0), (DType::F32, f64::INFINITY, f64::INFINITY), (DType::F16, 65504.0, 65504.0)];
    let bad: [(DType, f64); 8] = [(DType::I8, 200.0), (DType::U8, 300.0), (DType::U8, -1.0), (DType::I32, f64::NAN), (DType::I32, f64::INFINITY), (DType::F32, 1e39), (DType::F16, 1e5), (DType::U32, -1.0)];
    for (dtype, v, want) in ok {
        let h = HostTensor::zeros(&[2], dtype, MemoryFormat::Contiguous).unwrap();
        let got = padded(&h, v).unwrap();
        let b = bits(&got);
        assert_eq!((value(dtype, b[0]), value(dtype, b[3]), value(dtype, b[1])), (want, want, 0.0), "host {dtype} {v}");
        for ctx in contexts() {
            let d = padded(&DeviceTensor::upload(ctx, &h).unwrap(), v).unwrap().download().unwrap();
            assert_eq!(bits(&d), bits(&got), "{} {dtype} {v}", name(ctx));
        }
    }
    for (dtype, v) in bad {
        let h = HostTensor::zeros(&[2], dtype, MemoryFormat::Contiguous).unwrap();
        assert!(matches!(padded(&h, v), Err(Error::InvalidArgument { op: "pad", .. })), "host {dtype} {v}");
        for ctx in contexts() {
            let r = padded(&DeviceTensor::upload(ctx, &h).unwrap(), v).map(drop);
            assert!(matches!(r, Err(Error::InvalidArgument { op: "pad", .. })), "{} {dtype} {v}: {r:?}", name(ctx));
        }
    }
}

/// `stack` along an existing dim is PyTorch's cat along it seen with the new dim split off, so
/// channels-last inputs give a channels-last-ordered result (it was contiguous); along a new
/// last dim, a cat of the inputs unsqueezed there. Values as the unsqueezed cat's, on the host
/// and every adapter; empty 1-D inputs still stack.
#[test]
fn stack_keeps_the_layout_cat_gives() {
    let mut rng = Rng(0x9005);
    let a = tensor(&mut rng, &[2, 3, 4, 5], DType::F32, 1, false);
    let b = tensor(&mut rng, &[2, 3, 4, 5], DType::F32, 1, false);
    // PyTorch 2.x: torch.stack of two channels-last [2, 3, 4, 5] tensors.
    for (dim, strides) in [(0isize, vec![120isize, 60, 1, 15, 3]), (1, vec![120, 3, 1, 30, 6]), (4, vec![120, 40, 10, 2, 1])] {
        let s = stack(&[&a, &b], dim).unwrap();
        assert_eq!(s.strides(), &strides[..], "host dim {dim}");
        let want = cat(&[&a.unsqueeze(dim).unwrap(), &b.unsqueeze(dim).unwrap()], dim).unwrap();
        assert_eq!(bits(&s), bits(&want), "host dim {dim}");
        for ctx in contexts() {
            let (da, db) = (mirror(ctx, &a, 1), mirror(ctx, &b, 1));
            let d = stack(&[&da, &db], dim).unwrap();
            assert_eq!(d.strides(), &strides[..], "{} dim {dim}", name(ctx));
            assert_eq!(bits(&d.download().unwrap()), bits(&want), "{} dim {dim}", name(ctx));
        }
    }
    let e = HostTensor::zeros(&[0], DType::F32, MemoryFormat::Contiguous).unwrap();
    assert_eq!(stack(&[&e, &e, &e], 0).unwrap().shape(), &[3, 0]);
}

/// A constant pad with no positive pad is PyTorch's narrow then clone: the result keeps the
/// input's memory order (a transposed matrix padded by zeros stays transposed, a channels-last
/// crop stays channels-last; it was dense in the suggested format), on the host and every
/// adapter, with the values of the crop.
#[test]
fn crops_keep_the_inputs_memory_order() {
    let m = HostTensor::from_vec((0..12).map(|i| i as f32).collect::<Vec<_>>(), &[3, 4]).unwrap();
    let mut rng = Rng(0x9006);
    let cl = tensor(&mut rng, &[2, 4, 5, 6], DType::F32, 1, false);
    // (input, layout for the mirror, pads, PyTorch's strides)
    let cases: [(HostTensor, usize, Vec<isize>, Vec<isize>); 3] = [
        (m.transpose(0, 1).unwrap(), 0, vec![0, 0], vec![1, 4]),
        (m.transpose(0, 1).unwrap(), 0, vec![-1, 0], vec![1, 4]),
        (cl.clone(), 1, vec![-1, -2, 0, -1], vec![48, 1, 12, 4]),
    ];
    for (i, (h, layout, pads, strides)) in cases.into_iter().enumerate() {
        let want = h.pad(&pads, PadMode::Constant(7.0)).unwrap();
        assert_eq!(want.strides(), &strides[..], "host case {i}");
        let mut crop = h.clone();
        for (k, pair) in pads.chunks(2).enumerate() {
            let d = h.rank() - 1 - k;
            crop = crop.narrow(d as isize, -pair[0], (h.shape()[d] as isize + pair[0] + pair[1]) as usize).unwrap();
        }
        assert_eq!(bits(&want), bits(&crop), "host case {i}: values");
        for ctx in contexts() {
            let d = if i < 2 { DeviceTensor::upload(ctx, &m).unwrap().transpose(0, 1).unwrap() } else { mirror(ctx, &h, layout) };
            let got = d.pad(&pads, PadMode::Constant(7.0)).unwrap();
            assert_eq!(got.strides(), &strides[..], "{} case {i}", name(ctx));
            assert_eq!(bits(&got.download().unwrap()), bits(&want), "{} case {i}", name(ctx));
        }
    }
}

/// PyTorch's refusals and layouts at the edges of padding and resizing, on the host and every
/// adapter: reflect and replicate padding need every dim but the batch non-empty; circular
/// padding gives a contiguous tensor whatever the input's format; resizing needs C > 0 (N may
/// be 0).
#[test]
fn padding_and_resizing_edges_follow_pytorch() {
    fn check<T: ShapeOps>(zeros: &dyn Fn(&[usize]) -> T, what: &str) {
        let invalid = |r: Result<T, Error>, case: &str| assert!(matches!(r, Err(Error::InvalidArgument { .. })), "{what}: {case}: {:?}", r.map(|t| t.shape().to_vec()));
        invalid(zeros(&[1, 0, 5]).pad(&[1, 1], PadMode::Reflect), "reflect of an empty channel dim");
        invalid(zeros(&[0, 5]).pad(&[1, 1], PadMode::Replicate), "replicate of an unbatched empty dim");
        assert_eq!(zeros(&[0, 1, 5]).pad(&[1, 1], PadMode::Reflect).unwrap().shape(), &[0, 1, 7], "{what}: an empty batch");
        assert_eq!(zeros(&[1, 0, 5]).pad(&[1, 1], PadMode::Circular).unwrap().shape(), &[1, 0, 7], "{what}: circular of an empty channel dim");
        let opts = InterpolateOptions::size((8, 8), InterpolateMode::Nearest);
        invalid(zeros(&[1, 0, 4, 4]).interpolate(&opts), "a resize of no channels");
        assert_eq!(zeros(&[0, 2, 4, 4]).interpolate(&opts).unwrap().shape(), &[0, 2, 8, 8], "{what}: a resize of no images");
    }
    check(&|s: &[usize]| HostTensor::zeros(s, DType::F32, MemoryFormat::Contiguous).unwrap(), "host");
    for ctx in contexts() {
        check(&|s: &[usize]| DeviceTensor::zeros(ctx, s, DType::F32, MemoryFormat::Contiguous).unwrap(), &name(ctx));
    }
    // Circular padding of a channels-last input: contiguous, with the contiguous input's values.
    let h = HostTensor::from_vec((0..2 * 4 * 3 * 3).map(|v| v as f32).collect::<Vec<f32>>(), &[2, 4, 3, 3]).unwrap();
    let want = h.pad(&[1, 1, 1, 1], PadMode::Circular).unwrap();
    assert_eq!(want.strides(), Layout::contiguous(&[2, 4, 5, 5]).unwrap().strides());
    let cl = h.contiguous(MemoryFormat::ChannelsLast).unwrap().pad(&[1, 1, 1, 1], PadMode::Circular).unwrap();
    assert_eq!((cl.strides(), cl.to_vec::<f32>().unwrap()), (want.strides(), want.to_vec::<f32>().unwrap()));
    for ctx in contexts() {
        let d = DeviceTensor::upload(ctx, &h).unwrap().contiguous(MemoryFormat::ChannelsLast).unwrap().pad(&[1, 1, 1, 1], PadMode::Circular).unwrap();
        assert_eq!((d.strides(), d.download().unwrap().to_vec::<f32>().unwrap()), (want.strides(), want.to_vec::<f32>().unwrap()), "{}", name(ctx));
    }
}

/// Reflect, replicate and circular padding with negative pads (crops) and mixed signs, 1 to 3
/// padded dims (150 random cases), against PyTorch's index rules written out: output j of a padded dim reads the
/// input's j - left reflected (reflect) or clamped (replicate) within the whole input; circular
/// crops first and wraps within what is left. Host and every adapter, bit for bit; the cases
/// PyTorch refuses are InvalidArgument, and a circular pad past what the crops leave (where
/// PyTorch reads memory it never wrote) Unsupported.
#[test]
fn negative_pads_crop_as_pytorchs_index_rules() {
    // A replicate pad near isize's ends (the inside past the output): every output element
    // reads the edge it lies beyond, as PyTorch's clamped index (an overflow's panic before).
    let h = HostTensor::from_vec(vec![1f32, 2., 3.], &[1, 3]).unwrap();
    assert_eq!(h.pad(&[isize::MAX - 1, isize::MIN + 1], PadMode::Replicate).unwrap().to_vec::<f32>().unwrap(), [1.0, 1.0]);
    assert_eq!(h.pad(&[isize::MIN + 1, isize::MAX - 1], PadMode::Replicate).unwrap().to_vec::<f32>().unwrap(), [3.0, 3.0]);
    let mut rng = Rng(0x9ad);
    let modes = [PadMode::Reflect, PadMode::Replicate, PadMode::Circular];
    let (mut computed, mut cropped, mut refused) = (0, 0, 0);
    for case in 0..150 {
        let mode = modes[case % 3];
        let k = 1 + rng.below(3);
        let rank = k + 1 + rng.below(2);
        let shape: Vec<usize> = (0..rank).map(|_| 1 + rng.below(5)).collect();
        let mut pad = Vec::new();
        for i in 0..k {
            let size = shape[rank - 1 - i] as isize;
            for _ in 0..2 {
                pad.push(rng.below(2 * size as usize + 3) as isize - size - 1);
            }
        }
        let n: usize = shape.iter().product();
        let h = HostTensor::from_vec((0..n).map(|v| v as f32).collect::<Vec<f32>>(), &shape).unwrap();
        // The expected result or error kind, from the rules.
        // PyTorch checks every pad first; reflect and replicate refuse where any padded size
        // is 0 (2.15's "must be >= 1 in every dimension"); circular refuses (here: Unsupported) a pad past what the crops leave where
        // the result is not empty.
        let mut out_shape = shape.clone();
        let (mut invalid, mut past_kept) = (false, false);
        for i in 0..k {
            let d = rank - 1 - i;
            let (size, l, r) = (shape[d] as isize, pad[2 * i], pad[2 * i + 1]);
            let m = size + l + r;
            let kept = size - (-l).max(0) - (-r).max(0);
            invalid |= m < 0 || match mode {
                PadMode::Reflect => l >= size || r >= size,
                PadMode::Replicate => false,
                _ => l > size || r > size,
            };
            past_kept |= l.max(0) > kept || r.max(0) > kept;
            out_shape[d] = m.max(0) as usize;
        }
        invalid |= !matches!(mode, PadMode::Circular) && (0..k).any(|i| out_shape[rank - 1 - i] == 0);
        let verdict = if invalid {
            Some("invalid")
        } else if matches!(mode, PadMode::Circular) && past_kept && !out_shape.contains(&0) {
            Some("unsupported")
        } else {
            None
        };
        let got = h.pad(&pad, mode);
        match verdict {
            Some("invalid") => {
                assert!(matches!(got, Err(Error::InvalidArgument { .. })), "case {case}: {mode:?} {shape:?} {pad:?}: {:?}", got.map(|t| t.shape().to_vec()));
                refused += 1;
                continue;
            }
            Some(_) => {
                assert!(matches!(got, Err(Error::Unsupported { .. })), "case {case}: {mode:?} {shape:?} {pad:?}: {:?}", got.map(|t| t.shape().to_vec()));
                continue;
            }
            None => {}
        }
        let got = got.unwrap_or_else(|e| panic!("case {case}: {mode:?} {shape:?} {pad:?}: {e}"));
        assert_eq!(got.shape(), &out_shape[..], "case {case}");
        computed += 1;
        cropped += pad.iter().any(|&p| p < 0) as usize;
        let total: usize = out_shape.iter().product();
        let mut want = Vec::with_capacity(total);
        for flat in 0..total {
            let mut rem = flat;
            let mut src = 0usize;
            let mut stride = 1usize;
            for d in (0..rank).rev() {
                let j = (rem % out_shape[d]) as isize;
                rem /= out_shape[d];
                let size = shape[d] as isize;
                let i = rank - 1 - d;
                let t = if i < k {
                    let (l, r) = (pad[2 * i], pad[2 * i + 1]);
                    match mode {
                        PadMode::Reflect => {
                            let t = j - l;
                            if t < 0 { -t } else if t >= size { 2 * (size - 1) - t } else { t }
                        }
                        PadMode::Replicate => (j - l).clamp(0, size - 1),
                        _ => {
                            let cl = (-l).max(0);
                            let kept = size - cl - (-r).max(0);
                            cl + (j - l.max(0)).rem_euclid(kept)
                        }
                    }
                } else {
                    j
                };
                src += t as usize * stride;
                stride *= shape[d];
            }
            want.push(src as f32);
        }
        assert_eq!(got.to_vec::<f32>().unwrap(), want, "case {case}: host {mode:?} {shape:?} {pad:?}");
        for ctx in contexts() {
            let d = DeviceTensor::upload(ctx, &h).unwrap().pad(&pad, mode).unwrap();
            assert_eq!(d.download().unwrap().to_vec::<f32>().unwrap(), want, "case {case}: {} {mode:?} {shape:?} {pad:?}", name(ctx));
        }
    }
    assert!(computed >= 20 && cropped >= 10 && refused >= 3, "cases computed {computed}, with crops {cropped}, refused {refused}");
}

/// `F.adaptive_avg_pool2d(x, 1)` is PyTorch's mean over H and W (its shortcut): over a
/// 1000 x 1000 plane of 0.1 it is 0.1 to float rounding on the host and every adapter, in
/// f32 and f16, NCHW and channels-last, with PyTorch's strides (channels-last [C, 1, C, C]);
/// an empty plane gives NaN (the shortcut runs before PyTorch's size checks); a batch records
/// it too. One invocation summed a window in f32 (0.10096, 1% off; 0.115 at 4096 x 4096). An
/// output size of 0 is an empty output (PyTorch's), for average and max pooling.
#[test]
fn global_average_pooling_is_a_mean_and_empty_output_sizes() {
    let (h, w) = (1000usize, 1000usize);
    for dtype in [DType::F32, DType::F16] {
        let vals = HostTensor::from_vec(vec![0.1f32; 2 * h * w], &[1, 2, h, w]).unwrap().to(dtype).unwrap();
        for format in [MemoryFormat::Contiguous, MemoryFormat::ChannelsLast] {
            let x = vals.contiguous(format).unwrap();
            let want_strides: &[isize] = if format == MemoryFormat::ChannelsLast { &[2, 1, 2, 2] } else { &[2, 1, 1, 1] };
            let want = value(dtype, bits_of(dtype, 0.1));
            let check = |what: &str, strides: &[isize], t: &HostTensor| {
                assert_eq!((t.shape(), strides, t.dtype()), (&[1usize, 2, 1, 1][..], want_strides, dtype), "{what} {dtype} {format:?}");
                for i in 0..2 {
                    let got = value(dtype, bits(t)[i]);
                    assert!((got - want).abs() <= 1e-6 * want.abs() + if dtype == DType::F16 { 1e-3 } else { 0.0 }, "{what} {dtype} {format:?}: {got} against {want}");
                }
            };
            let host = x.adaptive_avg_pool2d((1, 1)).unwrap();
            check("host", host.strides(), &host);
            for ctx in contexts() {
                let d = DeviceTensor::upload(ctx, &x).unwrap().contiguous(format).unwrap();
                let got = d.adaptive_avg_pool2d((1, 1)).unwrap();
                check(&name(ctx), got.strides(), &got.download().unwrap());
                let mut b = ctx.batch();
                let rec = b.adaptive_avg_pool2d(&d, (1, 1)).unwrap();
                b.submit().unwrap();
                assert_eq!(bits(&rec.download().unwrap()), bits(&got.download().unwrap()), "{} batch {dtype} {format:?}", name(ctx));
            }
        }
    }
    let empty = HostTensor::zeros(&[1, 3, 0, 4], DType::F32, MemoryFormat::Contiguous).unwrap();
    let nan = |t: HostTensor| t.shape() == [1, 3, 1, 1] && t.to_vec::<f32>().unwrap().iter().all(|v| v.is_nan());
    assert!(nan(empty.adaptive_avg_pool2d((1, 1)).unwrap()), "host: the mean of an empty plane");
    for ctx in contexts() {
        assert!(nan(DeviceTensor::upload(ctx, &empty).unwrap().adaptive_avg_pool2d((1, 1)).unwrap().download().unwrap()), "{}: the mean of an empty plane", name(ctx));
    }
    let x = HostTensor::from_vec((0..2 * 3 * 4 * 5).map(|i| i as f32).collect(), &[2, 3, 4, 5]).unwrap();
    fn zeros<T: Pool2d + ShapeOps>(x: &T) -> Vec<Result<Vec<usize>, Error>> {
        let shape = |r: Result<T, Error>| r.map(|t| t.shape().to_vec());
        vec![shape(x.adaptive_avg_pool2d((0, 3))), shape(x.adaptive_max_pool2d((2, 0))), x.adaptive_max_pool2d_with_indices((0, 0)).map(|(v, i)| [v.shape(), i.shape()].concat())]
    }
    let want = vec![vec![2, 3, 0, 3], vec![2, 3, 2, 0], vec![2, 3, 0, 0, 2, 3, 0, 0]];
    let got: Vec<Vec<usize>> = zeros(&x).into_iter().map(|r| r.unwrap()).collect();
    assert_eq!(got, want, "host");
    for ctx in contexts() {
        let got: Vec<Vec<usize>> = zeros(&DeviceTensor::upload(ctx, &x).unwrap()).into_iter().map(|r| r.unwrap()).collect();
        assert_eq!(got, want, "{}", name(ctx));
    }
}

/// Mesa's software adapters leave a loop after 65,535 turns an invocation (an inner loop's
/// turns add up over the outer loop's): a pooling window walked past it was cut short, silently
/// (a 300 x 300 average of 0.1 gave 0.072, its maximum missed the last rows). On CPU adapters
/// such a window is now a Limit error; windows up to the bound are exact with both kernels,
/// f32 channels-last and NCHW, also runs of many outputs an invocation; GPUs run them.
#[test]
fn windows_past_a_software_adapters_loop_bound() {
    use strided_wgpu::advanced::internal::{avg_pool2d_window, max_pool2d_window, window_with, PoolKernel};
    for ctx in contexts() {
        let cpu = ctx.adapter().device_type == wgpu::DeviceType::Cpu;
        // (plane, kernel, stride): 240 x 240 taps (240 * 242 turns) and 64 x 64 at stride 1.
        for (plane, k, s) in [((240usize, 240usize), (240usize, 240usize), (1usize, 1usize)), ((100, 100), (64, 64), (1, 1))] {
            for format in [MemoryFormat::Contiguous, MemoryFormat::ChannelsLast] {
                let c = 4;
                let n = c * plane.0 * plane.1;
                // Ones, with a 3 at each plane's last element (the max, and the average's part).
                let v: Vec<f32> = (0..n).map(|i| if i % (plane.0 * plane.1) == plane.0 * plane.1 - 1 { 3.0 } else { 1.0 }).collect();
                let h = HostTensor::from_vec(v.clone(), &[1, c, plane.0, plane.1]).unwrap().contiguous(format).unwrap();
                let d = DeviceTensor::from_slice(ctx, &v, &[1, c, plane.0, plane.1]).unwrap().contiguous(format).unwrap();
                let gm = max_pool2d_window(d.layout(), DType::F32, &MaxPool2dOptions { stride: Some(s), ..MaxPool2dOptions::new(k) }, false).unwrap();
                let ga = avg_pool2d_window(d.layout(), DType::F32, &AvgPool2dOptions { stride: Some(s), ..AvgPool2dOptions::new(k) }).unwrap();
                for g in [&gm, &ga] {
                    let want = Pool2d::window(&h, g).unwrap().0;
                    let mut ran = 0;
                    for kernel in [PoolKernel::General, PoolKernel::Vec4] {
                        // A kernel that does not serve the window (Vec4 on NCHW) is Unsupported;
                        // any other error fails.
                        let got = match window_with(&d, g, kernel) {
                            Ok((got, _)) => got,
                            Err(Error::Unsupported { .. }) => continue,
                            Err(e) => panic!("{} {plane:?} kernel {k:?} {format:?} {kernel:?}: {e}", name(ctx)),
                        };
                        ran += 1;
                        let (got, want) = (got.download().unwrap().to_vec::<f32>().unwrap(), want.to_vec::<f32>().unwrap());
                        assert_eq!(got.len(), want.len(), "{} {plane:?} kernel {k:?} {format:?} {kernel:?}", name(ctx));
                        // (A NaN counts as off.)
                        let off = got.iter().zip(&want).filter(|(a, b)| a.is_nan() || (**a as f64 - **b as f64).abs() > 1e-6 * b.abs() as f64).count();
                        assert_eq!(off, 0, "{} {plane:?} kernel {k:?} {format:?} {:?} {kernel:?}: {off} of {} outputs differ", name(ctx), g.mode, want.len());
                    }
                    assert!(ran > 0, "{} {plane:?} kernel {k:?} {format:?}: no kernel served the window", name(ctx));
                }
            }
        }
        let x = DeviceTensor::from_slice(ctx, &vec![1f32; 300 * 300], &[1, 1, 300, 300]).unwrap();
        let wide = DeviceTensor::from_slice(ctx, &vec![1f32; 70_000], &[1, 1, 70_000, 1]).unwrap();
        let tall = DeviceTensor::from_slice(ctx, &vec![1f32; 1000 * 300], &[1, 1, 1000, 300]).unwrap();
        // 300 rows of 151 columns a bin: within the bound, and exact.
        assert_eq!(x.adaptive_avg_pool2d((1, 2)).unwrap().download().unwrap().to_vec::<f32>().unwrap(), vec![1.0, 1.0], "{}", name(ctx));
        let tries = [
            ("max_pool2d", x.max_pool2d(&MaxPool2dOptions::new((300, 300))).map(drop)),
            ("avg_pool2d", x.avg_pool2d(&AvgPool2dOptions::new((256, 256))).map(drop)),
            ("avg_pool2d", wide.avg_pool2d(&AvgPool2dOptions::new((70_000, 1))).map(drop)),
            ("adaptive_avg_pool2d", tall.adaptive_avg_pool2d((1, 2)).map(drop)),
            ("adaptive_max_pool2d", x.adaptive_max_pool2d_with_indices((1, 1)).map(drop)),
        ];
        for (op, r) in tries {
            if cpu {
                assert!(matches!(&r, Err(e @ Error::Limit { .. }) if e.op() == op), "{} {op}: {r:?}", name(ctx));
            } else {
                r.unwrap();
            }
        }
        // The mean of a whole plane is a reduction, not a window.
        assert_eq!(x.adaptive_avg_pool2d((1, 1)).unwrap().download().unwrap().to_vec::<f32>().unwrap(), vec![1.0], "{}", name(ctx));
        // Wide windows: the vec kernel's max walks columns outside (3 turns a column of one
        // row), past the bound at 40,000 columns; the automatic choice takes the general
        // kernel there (the vec kernel missed the maximum at the row's end), a forced vec
        // kernel is a Limit error on CPU adapters.
        for (h, w) in [(1usize, 40_000usize), (2, 20_000)] {
            let v: Vec<f32> = (0..4 * h * w).map(|i| (i % (h * w)) as f32).collect();
            let d = DeviceTensor::from_slice(ctx, &v, &[1, 4, h, w]).unwrap();
            let want = vec![(h * w - 1) as f32; 4];
            let got = d.max_pool2d(&MaxPool2dOptions::new((h, w))).unwrap().download().unwrap().to_vec::<f32>().unwrap();
            assert_eq!(got, want, "{} max over {h} x {w}", name(ctx));
            let got = d.adaptive_max_pool2d((1, 1)).unwrap().download().unwrap().to_vec::<f32>().unwrap();
            assert_eq!(got, want, "{} adaptive max over {h} x {w}", name(ctx));
            let g = max_pool2d_window(d.layout(), DType::F32, &MaxPool2dOptions::new((h, w)), false).unwrap();
            let got = window_with(&d, &g, PoolKernel::General).unwrap().0.download().unwrap().to_vec::<f32>().unwrap();
            assert_eq!(got, want, "{} general max over {h} x {w}", name(ctx));
            match window_with(&d, &g, PoolKernel::Vec4) {
                Err(Error::Limit { .. }) if cpu => {}
                Ok((y, _)) if !cpu => assert_eq!(y.download().unwrap().to_vec::<f32>().unwrap(), want, "{}", name(ctx)),
                other => panic!("{} forced vec max over {h} x {w}: {:?}", name(ctx), other.map(drop)),
            }
        }
    }
}

/// Unbatched [C, H, W] inputs, as PyTorch takes them: pooling into a contiguous [C, OH, OW]
/// (PyTorch's for a 3-d input, also from a channels-last-like view), every pooling and its
/// indices, and a convolution as a batch of one (`batchify`) into [K, OH, OW], on the host and
/// every adapter, equal to the batch of one's results. They were typed errors.
#[test]
fn unbatched_inputs_pool_and_convolve_as_a_batch_of_one() {
    use strided_wgpu::{Conv2d, Conv2dOptions};
    let vals: Vec<f32> = (0..3 * 6 * 7).map(|i| ((i * 5) % 11) as f32 - 5.0).collect();
    let plain = HostTensor::from_vec(vals.clone(), &[3, 6, 7]).unwrap();
    let hwc = HostTensor::from_vec(vals, &[6, 7, 3]).unwrap().permute(&[2, 0, 1]).unwrap();
    let w = HostTensor::from_vec((0..4 * 3 * 9).map(|i| ((i * 3) % 7) as f32 - 3.0).collect(), &[4, 3, 3, 3]).unwrap();
    let b = HostTensor::from_vec(vec![0.5f32, -1.0, 2.0, 0.0], &[4]).unwrap();
    let mo = MaxPool2dOptions { padding: (1, 1), ..MaxPool2dOptions::new((3, 3)) };
    let ao = AvgPool2dOptions { stride: Some((2, 1)), ..AvgPool2dOptions::new((2, 3)) };
    let co = Conv2dOptions { padding: (1, 0), ..Default::default() };
    fn all<T: Pool2d + Conv2d>(x: &T, w: &T, b: &T, mo: &MaxPool2dOptions, ao: &AvgPool2dOptions, co: &Conv2dOptions) -> Vec<T> {
        let (m, i) = x.max_pool2d_with_indices(mo).unwrap();
        let (am, ai) = x.adaptive_max_pool2d_with_indices((2, 3)).unwrap();
        vec![m, i, x.avg_pool2d(ao).unwrap(), x.adaptive_avg_pool2d((4, 2)).unwrap(), x.adaptive_avg_pool2d((1, 1)).unwrap(), am, ai, x.conv2d(w, Some(b), co).unwrap()]
    }
    for x in [&plain, &hwc] {
        let want: Vec<HostTensor> = all(&x.unsqueeze(0).unwrap(), &w, &b, &mo, &ao, &co).into_iter().map(|t| t.squeeze(0).unwrap()).collect();
        let got = all(x, &w, &b, &mo, &ao, &co);
        for (k, (g, v)) in got.iter().zip(&want).enumerate() {
            assert_eq!((g.shape(), g.dtype()), (v.shape(), v.dtype()), "host result {k} of {:?}", x.strides());
            assert_eq!(bits(g), bits(v), "host result {k} of {:?}", x.strides());
            if k < 7 {
                assert!(g.layout().is_contiguous(), "host pooling result {k} of {:?}: strides {:?}", x.strides(), g.strides());
            }
        }
        for ctx in contexts() {
            let up = |t: &HostTensor| DeviceTensor::upload(ctx, t).unwrap();
            let dx = if x.layout().is_contiguous() { up(x) } else { up(&x.permute(&[1, 2, 0]).unwrap()).permute(&[2, 0, 1]).unwrap() };
            let got = all(&dx, &up(&w), &up(&b), &mo, &ao, &co);
            for (k, (g, v)) in got.iter().zip(&want).enumerate() {
                let h = g.download().unwrap();
                assert_eq!((h.shape(), h.dtype()), (v.shape(), v.dtype()), "{} result {k}", name(ctx));
                if k < 7 {
                    assert!(g.layout().is_contiguous(), "{} pooling result {k}: strides {:?}", name(ctx), g.strides());
                }
                let (hv, vv) = (bits(&h), bits(v));
                let exact = matches!(k, 0 | 1 | 5 | 6);
                for (i, (a, e)) in hv.iter().zip(&vv).enumerate() {
                    let (a, e) = (f32::from_bits(*a), f32::from_bits(*e));
                    assert!(if exact { a.to_bits() == e.to_bits() } else { (a - e).abs() <= 1e-5 * (1.0 + e.abs()) }, "{} result {k}[{i}]: {a} against {e}", name(ctx));
                }
            }
        }
    }
}

/// PyTorch 2.15's checks of empty inputs read the caller's shape: an unbatched [0, H, W] takes
/// adaptive max and average pooling to an empty [0, OH, OW] (a 4-d [N, 0, H, W] is refused by
/// adaptive max pooling only), max and average pooling refuse it; messages name the shape given.
#[test]
fn unbatched_empty_channels_follow_pytorch_checks() {
    let host = |s: &[usize]| HostTensor::from_vec(vec![0f32; s.iter().product()], s).unwrap();
    fn run<T: Pool2d>(x: &T, op: usize) -> strided_wgpu::Result<Vec<usize>> {
        Ok(match op {
            0 => x.adaptive_max_pool2d((2, 2))?.shape().to_vec(),
            1 => x.adaptive_max_pool2d_with_indices((2, 2))?.1.shape().to_vec(),
            2 => x.adaptive_avg_pool2d((2, 2))?.shape().to_vec(),
            3 => x.max_pool2d(&MaxPool2dOptions::new((2, 2)))?.shape().to_vec(),
            _ => x.avg_pool2d(&AvgPool2dOptions::new((2, 2)))?.shape().to_vec(),
        })
    }
    // (input, op, PyTorch's output shape or the message's shape)
    type Case<'a> = (&'a [usize], usize, Result<&'a [usize], &'a str>);
    let cases: [Case; 11] = [
        (&[0, 4, 4], 0, Ok(&[0, 2, 2])),
        (&[0, 4, 4], 1, Ok(&[0, 2, 2])),
        (&[0, 4, 4], 2, Ok(&[0, 2, 2])),
        (&[2, 0, 4, 4], 0, Err("[2, 0, 4, 4] with dimension 1 being empty")),
        (&[2, 0, 4, 4], 2, Ok(&[2, 0, 2, 2])),
        (&[2, 0, 4], 0, Err("[2, 0, 4] with dimension 1 being empty")),
        (&[2, 0, 4], 2, Err("[2, 0, 4] with dimension 1 being empty")),
        (&[3, 4, 0], 0, Err("[3, 4, 0] with dimension 2 being empty")),
        (&[0, 4, 4], 3, Err("but got: [0, 4, 4]")),
        (&[0, 4, 4], 4, Err("but got: [0, 4, 4]")),
        (&[0, 2, 4, 4], 3, Ok(&[0, 2, 2, 2])),
    ];
    for (shape, op, want) in cases {
        let x = host(shape);
        let mut got = vec![("host".to_string(), run(&x, op))];
        for ctx in contexts() {
            got.push((name(ctx), run(&DeviceTensor::upload(ctx, &x).unwrap(), op)));
        }
        for (who, g) in got {
            match (&g, want) {
                (Ok(s), Ok(w)) => assert_eq!(s.as_slice(), w, "{who}: op {op} of {shape:?}"),
                (Err(e), Err(m)) => assert!(e.to_string().contains(m), "{who}: op {op} of {shape:?}: {e}"),
                _ => panic!("{who}: op {op} of {shape:?} gave {g:?}, PyTorch {want:?}"),
            }
        }
    }
}

/// PyTorch 2.15's checks, on the host and every device: reflect and replicate padding refuse
/// any padded dim left empty (one of two was taken: an empty result); a constant pad's integer
/// fill truncates within [lowest, largest + 1) (255.5 to uint8's 255 was refused); group_norm
/// refuses 0 channels or an empty spatial size (gave an empty result); batch_norm's parameters
/// are all of one type, the input's or float32 beside a 16-bit input (mixed ones ran); cat's
/// errors number the tensors as the caller's list (a skipped [0] shifted them).
#[test]
fn pad_group_norm_batch_norm_and_cat_checks_follow_pytorch() {
    use strided_wgpu::ops::{batch_norm, group_norm};
    fn checks<T: ShapeOps + strided_wgpu::Reduce>(x: &T, empty: &T, a: &T, b: &T, u8s: &T, make: &dyn Fn(&[usize], DType) -> T, read: &dyn Fn(&T) -> Vec<f32>) -> Vec<String> {
        let mut errs = Vec::new();
        let mut err = |what: &str, r: strided_wgpu::Result<Vec<usize>>| match r {
            Err(e) => errs.push(e.to_string()),
            Ok(s) => panic!("{what}: {s:?}, PyTorch refuses"),
        };
        for mode in [PadMode::Reflect, PadMode::Replicate] {
            err("pad (-3, 0, 1, 1)", x.pad(&[-3, 0, 1, 1], mode).map(|t| t.shape().to_vec()));
            err("pad (1, 1, -2, 0)", x.pad(&[1, 1, -2, 0], mode).map(|t| t.shape().to_vec()));
        }
        for (dtype, ok, bad) in [(DType::U8, 255.999, 256.0), (DType::I8, 127.5, 128.0), (DType::I8, -128.0, -128.5), (DType::I32, 2147483647.5, 2147483648.0)] {
            let t = u8s.to(dtype).unwrap();
            let got = read(&t.pad(&[1, 0], PadMode::Constant(ok)).unwrap().to(DType::F32).unwrap());
            assert_eq!(got, vec![ok.trunc() as f32, 1.0, 1.0], "{dtype} fill {ok}");
            err("pad fill", t.pad(&[1, 0], PadMode::Constant(bad)).map(|t| t.shape().to_vec()));
        }
        err("group_norm C 0", group_norm(&make(&[2, 0, 3], DType::F32), 2, None, None, 1e-5).map(|t| t.shape().to_vec()));
        err("group_norm HW 0", group_norm(&make(&[2, 4, 0], DType::F32), 2, None, None, 1e-5).map(|t| t.shape().to_vec()));
        assert_eq!(group_norm(&make(&[0, 4, 3], DType::F32), 2, None, None, 1e-5).unwrap().shape(), &[0, 4, 3]);
        let x32 = make(&[2, 3, 4], DType::F32);
        let x16 = make(&[2, 3, 4], DType::F16);
        let p = |d| make(&[3], d).add(1.0).unwrap();
        err("batch_norm f32 with f16 stats", batch_norm(&x32, &p(DType::F16), &p(DType::F16), None, None, 1e-5).map(|t| t.shape().to_vec()));
        err("batch_norm f16 with bf16 stats", batch_norm(&x16, &p(DType::BF16), &p(DType::BF16), None, None, 1e-5).map(|t| t.shape().to_vec()));
        err("batch_norm f16 stats, f32 weight", batch_norm(&x16, &p(DType::F16), &p(DType::F16), Some(&p(DType::F32)), None, 1e-5).map(|t| t.shape().to_vec()));
        assert_eq!(batch_norm(&x16, &p(DType::F32), &p(DType::F32), Some(&p(DType::F32)), None, 1e-5).unwrap().dtype(), DType::F16);
        err("cat", cat(&[empty, a, b], 0).map(|t| t.shape().to_vec()));
        errs
    }
    let host = |s: &[usize], d: DType| HostTensor::zeros(s, d, MemoryFormat::Contiguous).unwrap();
    let x = HostTensor::from_vec((0..6).map(|i| i as f32).collect(), &[1, 2, 3]).unwrap();
    let u8s = HostTensor::from_vec(vec![1u8, 1], &[2]).unwrap();
    let args = |t: &dyn Fn(&HostTensor) -> HostTensor| (t(&x), t(&host(&[0], DType::F32)), t(&host(&[2, 3], DType::F32)), t(&host(&[2, 4], DType::F32)), t(&u8s));
    let (hx, he, ha, hb, hu) = args(&|t| t.clone());
    let errs = checks(&hx, &he, &ha, &hb, &hu, &|s, d| host(s, d), &|t| t.to_vec::<f32>().unwrap());
    assert!(errs.last().unwrap().contains("tensor 2 has shape [2, 4], tensor 1 [2, 3]"), "{errs:?}");
    for ctx in contexts() {
        let up = |t: &HostTensor| DeviceTensor::upload(ctx, t).unwrap();
        let (dx, de, da, db, du) = args(&|t| t.clone());
        let got = checks(&up(&dx), &up(&de), &up(&da), &up(&db), &up(&du), &|s, d| up(&host(s, d)), &|t| t.download().unwrap().to_vec::<f32>().unwrap());
        // The same errors as the host's, message for message.
        assert_eq!(got, errs, "{}", name(ctx));
    }
}

/// layer_norm and group_norm on a device run one kernel (`norm_rows.wgsl`, a workgroup per
/// slice): slices at one stride (dense, rows of a wider tensor, one row expanded) of float32,
/// float16 and bfloat16 are one dispatch in one pass of one submit, where the composed ops took
/// about eight; channels-last inputs add a copy in and out, odd-length 16-bit slices one out. Long slices (several turns of a workgroup,
/// a length no multiple of it; on software adapters past what one invocation walks, so a
/// workgroup a slice there too), short ones, NaN rows and absent affine parameters agree with
/// the host's composed ops (the CPU reference) within the tolerance; the same input gives the
/// same bits; a captured graph replays them bit for bit; a slice past a software adapter's loop
/// bound runs the composed ops eagerly there and is a Limit error in a batch.
#[test]
fn normalizations_run_one_kernel_and_match_the_composed_ops() {
    use strided_wgpu::ops::{group_norm, layer_norm};
    let (f32_, f16_, bf16_) = (DType::F32, DType::F16, DType::BF16);
    // (shape, layer_norm's normalized dims or 0 for group_norm's groups, view, dtype): view 0
    // dense, 1 every row the first half of a row twice as long, 2 one row expanded, 3
    // channels-last, 4 a NaN in row 1.
    let cases: &[(&[usize], usize, usize, usize, DType)] = &[
        (&[3, 1000], 1, 0, 0, f32_),
        (&[2, 3, 4097], 1, 0, 0, f32_),
        (&[5, 7], 1, 0, 0, f32_),
        (&[2, 6, 5, 5], 3, 0, 0, f32_),
        (&[4, 300], 1, 0, 1, f32_),
        (&[4, 300], 1, 0, 2, f32_),
        (&[3, 200], 1, 0, 4, f32_),
        (&[3, 200], 1, 0, 0, f16_),
        (&[3, 201], 1, 0, 0, f16_),
        (&[4, 300], 1, 0, 1, bf16_),
        (&[3, 30001], 1, 0, 0, f32_),
        (&[2, 30000], 1, 0, 0, f16_),
        (&[2, 4, 100, 100], 0, 2, 0, f32_),
        (&[2, 8, 9, 9], 0, 4, 0, f32_),
        (&[1, 6, 33, 1], 0, 3, 0, f32_),
        (&[2, 8, 9, 9], 0, 2, 3, f32_),
        (&[2, 4, 5, 5], 0, 4, 0, bf16_),
        (&[2, 8, 4, 4], 0, 4, 0, bf16_),
        (&[2, 8, 9, 9], 0, 2, 3, f16_),
    ];
    let mut rng = Rng(0x4e0b);
    for ctx in contexts() {
        for (case, &(shape, dims, groups, view, dtype)) in cases.iter().enumerate() {
            let what = format!("{} case {case} {shape:?} {dtype}", name(ctx));
            // The input: multiples of 1/8 in [-8, 8) in a base tensor, then viewed.
            let mut base_shape = shape.to_vec();
            match view {
                1 => *base_shape.last_mut().unwrap() *= 2,
                2 => base_shape[0] = 1,
                _ => {}
            }
            let count: usize = base_shape.iter().product();
            let mut vals: Vec<f32> = (0..count).map(|_| rng.below(128) as f32 / 8.0 - 8.0).collect();
            if view == 4 {
                vals[shape[1] + 17] = f32::NAN;
            }
            let hb = HostTensor::from_vec(vals, &base_shape).unwrap().to(dtype).unwrap();
            let db = DeviceTensor::upload(ctx, &hb).unwrap();
            let (hx, dx) = match view {
                1 => {
                    let last = shape.len() as isize - 1;
                    (hb.slice(last, 0, shape[shape.len() - 1] as isize, 1).unwrap(), db.slice(last, 0, shape[shape.len() - 1] as isize, 1).unwrap())
                }
                2 => {
                    let to: Vec<isize> = shape.iter().map(|&d| d as isize).collect();
                    (hb.expand(&to).unwrap(), db.expand(&to).unwrap())
                }
                3 => (hb.contiguous(MemoryFormat::ChannelsLast).unwrap(), db.contiguous(MemoryFormat::ChannelsLast).unwrap()),
                _ => (hb, db.clone()),
            };
            // The affine parameters: none, a weight, or both (the input's type).
            let plen: usize = if dims > 0 { shape[shape.len() - dims..].iter().product() } else { shape[1] };
            let pshape: Vec<usize> = if dims > 0 { shape[shape.len() - dims..].to_vec() } else { vec![shape[1]] };
            let param = |rng: &mut Rng| HostTensor::from_vec((0..plen).map(|_| rng.below(64) as f32 / 16.0 - 2.0).collect::<Vec<f32>>(), &pshape).unwrap().to(dtype).unwrap();
            let (hw, hbias) = (param(&mut rng), param(&mut rng));
            let affine = case % 3;
            let hw = (affine >= 1).then_some(hw);
            let hbias = (affine == 2).then_some(hbias);
            let up = |t: &Option<HostTensor>| t.as_ref().map(|t| DeviceTensor::upload(ctx, t).unwrap());
            let (dw, dbias) = (up(&hw), up(&hbias));
            let eps = 1e-5;
            let norm_shape = if dims > 0 { shape[shape.len() - dims..].to_vec() } else { vec![] };
            let host = if dims > 0 { layer_norm(&hx, &norm_shape, hw.as_ref(), hbias.as_ref(), eps) } else { group_norm(&hx, groups, hw.as_ref(), hbias.as_ref(), eps) }.unwrap();
            // Recorded in a batch.
            let mut b = ctx.batch();
            let dy = if dims > 0 { b.layer_norm(&dx, &norm_shape, dw.as_ref(), dbias.as_ref(), eps) } else { b.group_norm(&dx, groups, dw.as_ref(), dbias.as_ref(), eps) }.unwrap();
            b.submit_and_wait().unwrap();
            assert_eq!((dy.shape(), dy.dtype(), dy.strides()), (host.shape(), host.dtype(), host.strides()), "{what}: shape, type, memory format");
            let (got, want) = (bits(&dy.download().unwrap()), bits(&host));
            let scale = |w: f64| 16.0 * (1.0 + w.abs());
            for (k, (&g, &w)) in got.iter().zip(&want).enumerate() {
                let (g, w) = (value(dtype, g), value(dtype, w));
                assert!(close(dtype, g, w, scale(w)), "{what}: element {k}: {g}, want {w}");
            }
            if view == 4 {
                assert!(got.iter().filter(|&&g| value(dtype, g).is_nan()).count() == shape[1], "{what}: the NaN's row, and only it, is NaN");
            }
            // Captured in a batch (this thread's commands only): what the kernel costs the GPU
            // in commands, and its replay. (An expanded view reaches elements twice: its base is
            // the graph's input.)
            let input = if view == 2 { &db } else { &dx };
            let call = |b: &mut strided_wgpu::Batch| if dims > 0 { b.layer_norm(&dx, &norm_shape, dw.as_ref(), dbias.as_ref(), eps) } else { b.group_norm(&dx, groups, dw.as_ref(), dbias.as_ref(), eps) };
            let graph = ctx
                .capture(&[input], || {
                    let mut b = ctx.batch();
                    let y = call(&mut b)?;
                    b.submit()?;
                    Ok::<_, Error>(y)
                })
                .unwrap();
            let c = graph.counts();
            // The kernel reads every float type as it is and writes it into rows of whole 32-bit
            // words (16-bit rows of even length); a channels-last input and output take a copy
            // each, odd 16-bit rows one for the output (the parameters' copies run once).
            // Few long rows on a GPU: the three dispatches of rows cut into chunks.
            let n = if dims > 0 { plen } else { shape[1..].iter().product::<usize>() / groups };
            let copies = usize::from(view == 3) * 2 + usize::from(view != 3 && dtype != f32_ && n % 2 == 1);
            let kernel = if norm_split_chunks(ctx.adapter(), shape.iter().product::<usize>() / n, n) > 1 { 3 } else { 1 };
            assert_eq!((c.submits, c.passes, c.dispatches, c.transfers), (1, 1, kernel + copies as u64, 0), "{what}: the kernel and {copies} copies");
            graph.replay_and_wait(&[]).unwrap();
            assert_eq!(bits(&graph.output().download().unwrap()), got, "{what}: graph replay against the batch");
            // Eagerly, through the trait's path: within the tolerance, and where it ran the kernel
            // (everywhere but a software adapter's slices too long for an invocation) the batch's
            // bits.
            let eager_call = || if dims > 0 { layer_norm(&dx, &norm_shape, dw.as_ref(), dbias.as_ref(), eps) } else { group_norm(&dx, groups, dw.as_ref(), dbias.as_ref(), eps) };
            let eager = bits(&eager_call().unwrap().download().unwrap());
            for (k, (&g, &w)) in eager.iter().zip(&want).enumerate() {
                let (g, w) = (value(dtype, g), value(dtype, w));
                assert!(close(dtype, g, w, scale(w)), "{what}: eager element {k}: {g}, want {w}");
            }
            let eager_graph = ctx.capture(&[input], eager_call).unwrap();
            if eager_graph.counts().dispatches == c.dispatches {
                assert_eq!(eager, got, "{what}: eager against the batch");
            } else {
                assert_eq!(ctx.adapter().device_type, wgpu::DeviceType::Cpu, "{what}: the composed ops eagerly on a GPU");
            }
            // Rows cut into chunks, forced (few long rows on a GPU take it by themselves): within
            // the tolerance, the same bits twice and replayed, three dispatches (rows of 4
            // elements or fewer are one chunk: the one kernel).
            let chunks = [2, 3, 5, NORM_MAX_CHUNKS][case % 4];
            let split = || if dims > 0 { layer_norm_with(&dx, &norm_shape, dw.as_ref(), dbias.as_ref(), eps, NormKernel::Split { chunks }) } else { group_norm_with(&dx, groups, dw.as_ref(), dbias.as_ref(), eps, NormKernel::Split { chunks }) };
            let got_split = bits(&split().unwrap().download().unwrap());
            for (k, (&g, &w)) in got_split.iter().zip(&want).enumerate() {
                let (g, w) = (value(dtype, g), value(dtype, w));
                assert!(close(dtype, g, w, scale(w)), "{what}: {chunks} chunks, element {k}: {g}, want {w}");
            }
            if view == 4 {
                assert!(got_split.iter().filter(|&&g| value(dtype, g).is_nan()).count() == shape[1], "{what}: {chunks} chunks: the NaN's row, and only it, is NaN");
            }
            assert_eq!(bits(&split().unwrap().download().unwrap()), got_split, "{what}: {chunks} chunks, the same bits twice");
            let split_graph = ctx.capture(&[input], split).unwrap();
            assert_eq!(split_graph.counts().dispatches, (if n > 4 { 3 } else { 1 }) + copies as u64, "{what}: {chunks} chunks: the three dispatches and {copies} copies");
            split_graph.replay_and_wait(&[]).unwrap();
            assert_eq!(bits(&split_graph.output().download().unwrap()), got_split, "{what}: {chunks} chunks, replayed");
        }
        // Rows whose squared deviations overflow float32 (+-1e20): an infinite variance, so
        // outputs of 0 as the reference's (not a compensation's inf - inf, NaN), in both of the
        // kernel's modes on software adapters (an invocation a row, a workgroup a row). (Mesa's
        // adapters gave 0 with the kernel's first compensation, Kahan's, too: what a GPU's
        // compiler keeps of it, theirs drops.)
        for n in [256, 30_000] {
            let hx = HostTensor::from_vec((0..n).map(|i| if i % 2 == 0 { 1e20f32 } else { -1e20 }).collect::<Vec<f32>>(), &[1, n]).unwrap();
            let dx = DeviceTensor::upload(ctx, &hx).unwrap();
            let want = layer_norm(&hx, &[n], None, None, 1e-5).unwrap().to_vec::<f32>().unwrap();
            assert!(want.iter().all(|&v| v == 0.0), "the reference's outputs");
            let mut b = ctx.batch();
            let y = b.layer_norm(&dx, &[n], None, None, 1e-5).unwrap();
            b.submit_and_wait().unwrap();
            let got = y.download().unwrap().to_vec::<f32>().unwrap();
            assert!(got.len() == want.len() && got.iter().zip(&want).all(|(g, w)| g == w), "{}: +-1e20 rows of {n}: {:?}", name(ctx), &got[..4]);
            let got = layer_norm_with(&dx, &[n], None, None, 1e-5, NormKernel::Split { chunks: 7 }).unwrap().download().unwrap().to_vec::<f32>().unwrap();
            assert!(got.len() == want.len() && got.iter().zip(&want).all(|(g, w)| g == w), "{}: +-1e20 rows of {n} in 7 chunks: {:?}", name(ctx), &got[..4]);
            // A row whose sum passes float32's largest (1e36 and 3e36 in turn): a finite mean
            // (each term is scaled by 2^-ceil(log2 n) for the sum), then an infinite variance,
            // so outputs of 0 as the reference's, where an inf mean gave NaN everywhere (as
            // PyTorch 2.15's CPU gives: its float32 statistics overflow); in both kernels, and
            // through group_norm.
            let hb = HostTensor::from_vec((0..n).map(|i| if i % 2 == 0 { 1e36f32 } else { 3e36 }).collect::<Vec<f32>>(), &[1, n]).unwrap();
            let db = DeviceTensor::upload(ctx, &hb).unwrap();
            let want = layer_norm(&hb, &[n], None, None, 1e-5).unwrap().to_vec::<f32>().unwrap();
            assert!(want.iter().all(|&v| v == 0.0), "the reference's outputs of a row of 1e36 and 3e36");
            let gwant = group_norm(&hb.view(&[1, 1, n as isize]).unwrap(), 1, None, None, 1e-5).unwrap().to_vec::<f32>().unwrap();
            for kernel in [NormKernel::Rows, NormKernel::Split { chunks: 5 }] {
                let got = layer_norm_with(&db, &[n], None, None, 1e-5, kernel).unwrap().download().unwrap().to_vec::<f32>().unwrap();
                assert_eq!(got.len(), want.len());
                for (k, (&g, &w)) in got.iter().zip(&want).enumerate() {
                    assert!(close(f32_, g as f64, w as f64, 4.0), "{}: a row of 1e36, {kernel:?}, element {k}: {g}, want {w}", name(ctx));
                }
                let got = group_norm_with(&db.view(&[1, 1, n as isize]).unwrap(), 1, None, None, 1e-5, kernel).unwrap().download().unwrap().to_vec::<f32>().unwrap();
                for (k, (&g, &w)) in got.iter().zip(&gwant).enumerate() {
                    assert!(close(f32_, g as f64, w as f64, 4.0), "{}: group_norm of a row of 1e36, {kernel:?}, element {k}: {g}, want {w}", name(ctx));
                }
            }
            // A constant row with eps = 0: a zero variance, an infinite rstd, NaN outputs as the
            // reference's rsqrt gives (WGSL's inverseSqrt(0) is the driver's), in every form.
            let hc = HostTensor::from_vec(vec![2f32; n], &[1, n]).unwrap();
            let dc = DeviceTensor::upload(ctx, &hc).unwrap();
            let want = layer_norm(&hc, &[n], None, None, 0.0).unwrap().to_vec::<f32>().unwrap();
            assert!(want.len() == n && want.iter().all(|v| v.is_nan()), "the reference's outputs at eps = 0");
            for kernel in [NormKernel::Rows, NormKernel::Split { chunks: 3 }] {
                let got = layer_norm_with(&dc, &[n], None, None, 0.0, kernel).unwrap().download().unwrap().to_vec::<f32>().unwrap();
                assert!(got.len() == n && got.iter().all(|v| v.is_nan()), "{}: a constant row of {n}, eps = 0, {kernel:?}: {:?}", name(ctx), &got[..4.min(got.len())]);
            }
        }
        // A slice past a software adapter's loop bound (about 1.2 million elements an
        // invocation's three walks may take): the composed ops eagerly, an error in a batch.
        if ctx.adapter().device_type == wgpu::DeviceType::Cpu {
            let n = 1 << 21;
            let hx = HostTensor::from_vec((0..n).map(|i| (i % 17) as f32 - 8.0).collect::<Vec<f32>>(), &[1, n]).unwrap();
            let dx = DeviceTensor::upload(ctx, &hx).unwrap();
            let host = layer_norm(&hx, &[n], None, None, 1e-5).unwrap();
            let dev = layer_norm(&dx, &[n], None, None, 1e-5).unwrap();
            for (k, (&g, &w)) in bits(&dev.download().unwrap()).iter().zip(&bits(&host)).enumerate() {
                let (g, w) = (value(f32_, g), value(f32_, w));
                assert!(close(f32_, g, w, 16.0 * (1.0 + w.abs())), "{}: long slice, element {k}: {g}, want {w}", name(ctx));
            }
            let mut b = ctx.batch();
            assert!(matches!(b.layer_norm(&dx, &[n], None, None, 1e-5), Err(Error::Limit { .. })), "{}: a long slice in a batch", name(ctx));
            // Just within the bound: the kernel (a workgroup a slice) in a batch, right to the
            // slice's last element.
            let n = 1_200_000;
            let hx = HostTensor::from_vec((0..n).map(|i| (i % 19) as f32 - 9.0).collect::<Vec<f32>>(), &[1, n]).unwrap();
            let dx = DeviceTensor::upload(ctx, &hx).unwrap();
            let graph = ctx
                .capture(&[&dx], || {
                    let mut b = ctx.batch();
                    let y = b.layer_norm(&dx, &[n], None, None, 1e-5)?;
                    b.submit()?;
                    Ok::<_, Error>(y)
                })
                .unwrap();
            assert_eq!(graph.counts().dispatches, 1, "{}: a slice within the bound is one kernel", name(ctx));
            graph.replay_and_wait(&[]).unwrap();
            let host = layer_norm(&hx, &[n], None, None, 1e-5).unwrap();
            for (k, (&g, &w)) in bits(&graph.output().download().unwrap()).iter().zip(&bits(&host)).enumerate() {
                let (g, w) = (value(f32_, g), value(f32_, w));
                assert!(close(f32_, g, w, 16.0 * (1.0 + w.abs())), "{}: slice within the bound, element {k}: {g}, want {w}", name(ctx));
            }
        }
    }
}

/// Pooling and bilinear resampling whose input span, output or indices pass one storage
/// binding run in runs of whole images that each fit (one dispatch bound them all: an
/// `Error::Limit` for ResNet's stem pooling past about 40 images of [64, 112, 112] f32 under a
/// 128 MiB binding, WebGPU's default); runs whose output starts at no binding alignment are
/// pooled aside and copied into place. Each matches the host, max pooling and its indices bit
/// for bit; an image that does not fit alone is still a Limit error.
#[test]
fn pools_past_one_binding_run_in_runs_of_images() {
    use common::gpu::limited;
    let mut rng = Rng(0x9001);
    let random = |rng: &mut Rng, shape: &[usize], dtype: DType| {
        let n: usize = shape.iter().product();
        let v: Vec<f32> = (0..n).map(|_| (rng.below(2001) as f32 - 1000.0) / 125.0).collect();
        HostTensor::from_vec(v, shape).unwrap().to(dtype).unwrap()
    };
    for ctx in contexts() {
        let tight = limited(ctx, |l| wgpu::Limits { max_storage_buffer_binding_size: 16 << 10, ..l });
        let up = |h: &HostTensor, format: MemoryFormat| DeviceTensor::upload(&tight, h).unwrap().contiguous(format).unwrap();
        // f32 NCHW, 30 KiB, flipped along N: max pooling with indices (768-byte images, runs in
        // place).
        let h = random(&mut rng, &[10, 3, 16, 16], DType::F32);
        let o = MaxPool2dOptions { stride: Some((2, 2)), padding: (1, 1), ..MaxPool2dOptions::new((3, 3)) };
        let (hx, dx) = (h.flip(0).unwrap(), up(&h, MemoryFormat::Contiguous).flip(0).unwrap());
        let host = hx.max_pool2d_with_indices(&o).map(|(v, i)| vec![v, i]);
        let dev = dx.max_pool2d_with_indices(&o).map(|(v, i)| vec![v, i]);
        assert!(same(&format!("{} max_pool2d split", name(ctx)), host, dev, true));
        let graph = tight.capture(&[&dx], || dx.max_pool2d(&o)).unwrap();
        assert!(graph.counts().dispatches >= 2, "{}: {:?}", name(ctx), graph.counts());
        // f16 channels-last, 31.6 KiB: average pooling (160-byte images: runs of 8 in place) and
        // adaptive average pooling to 3 x 3 (90-byte images: pooled aside and copied).
        let h = random(&mut rng, &[40, 5, 9, 9], DType::F16);
        let d = up(&h, MemoryFormat::ChannelsLast);
        let hc = h.contiguous(MemoryFormat::ChannelsLast).unwrap();
        let a = AvgPool2dOptions { kernel: (2, 2), stride: None, padding: (0, 0), ceil_mode: false, count_include_pad: true, divisor_override: None };
        assert!(same(&format!("{} avg_pool2d split", name(ctx)), hc.avg_pool2d(&a).map(|t| vec![t]), d.avg_pool2d(&a).map(|t| vec![t]), false));
        assert!(same(&format!("{} adaptive_avg_pool2d split", name(ctx)), hc.adaptive_avg_pool2d((3, 3)).map(|t| vec![t]), d.adaptive_avg_pool2d((3, 3)).map(|t| vec![t]), false));
        assert!(same(&format!("{} adaptive_max_pool2d split", name(ctx)), hc.adaptive_max_pool2d((3, 3)).map(|t| vec![t]), d.adaptive_max_pool2d((3, 3)).map(|t| vec![t]), true));
        // Bilinear x2 of f32 [12, 2, 8, 8]: 24 KiB out.
        let h = random(&mut rng, &[12, 2, 8, 8], DType::F32);
        let io = InterpolateOptions { size: None, scale_factor: Some((2.0, 2.0)), mode: InterpolateMode::Bilinear { align_corners: false } };
        assert!(same(&format!("{} bilinear split", name(ctx)), h.interpolate(&io).map(|t| vec![t]), up(&h, MemoryFormat::Contiguous).interpolate(&io).map(|t| vec![t]), false));
        // One image past a binding alone: a Limit error naming the op.
        let big = up(&random(&mut rng, &[2, 3, 48, 48], DType::F32), MemoryFormat::Contiguous);
        let r = big.max_pool2d(&o).map(drop);
        assert!(matches!(&r, Err(e @ Error::Limit { .. }) if e.op() == "max_pool2d"), "{}: {r:?}", name(ctx));
    }
}
