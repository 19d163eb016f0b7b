//! Recording and captured graphs on every adapter: a batch encodes one compute pass; a graph
//! captured from eager calls replays in one submit and one pass, equal to the eager calls bit
//! for bit on new inputs; wrong inputs, captures that wait, and a lost device are typed errors;
//! a graph's buffers outlive a replay of a dropped graph; a convolution's in-place residual add
//! and ReLU fold into it in a graph, to the eager calls' bits.

mod common;

use common::gpu::{contexts, doomed_device, name};
use strided_wgpu::advanced::ConvKernel;
use strided_wgpu::{Conv2d, Conv2dOptions, DeviceTensor, DType, Elementwise, Error, GpuContext, Matmul, MaxPool2dOptions, MemoryFormat, Pool2d, Reduce, Strided};
use strided_wgpu::advanced::SubmitPolicy;

/// Deterministic pseudo-random values in [-1, 1).
fn vals(n: usize, seed: u32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(2654435761).wrapping_add(12345);
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s % 2000) as f32 / 1000.0 - 1.0
        })
        .collect()
}

struct Params {
    w1: DeviceTensor,
    b1: DeviceTensor,
    w2: DeviceTensor,
    fc: DeviceTensor,
    fcb: DeviceTensor,
}

fn params(ctx: &GpuContext) -> Params {
    let t = |n: usize, shape: &[usize], seed| DeviceTensor::from_slice(ctx, &vals(n, seed), shape).unwrap();
    Params { w1: t(8 * 3 * 9, &[8, 3, 3, 3], 1), b1: t(8, &[8], 2), w2: t(8 * 8 * 9, &[8, 8, 3, 3], 3), fc: t(10 * 8, &[10, 8], 4), fcb: t(10, &[10], 5) }
}

/// A small network of every op family: a strided view made channels-last, two convolutions
/// (bias and ReLU, then a residual add and ReLU), max pooling, a mean, a linear layer and a
/// softmax. Returns the logits and the probabilities.
fn forward(p: &Params, x: &DeviceTensor) -> strided_wgpu::Result<(DeviceTensor, DeviceTensor)> {
    let x = x.permute(&[0, 3, 1, 2])?.contiguous(MemoryFormat::ChannelsLast)?;
    let o = Conv2dOptions { padding: (1, 1), relu: true, ..Default::default() };
    let h = x.conv2d(&p.w1, Some(&p.b1), &o)?;
    let h2 = h.conv2d(&p.w2, None, &Conv2dOptions { relu: false, ..o })?;
    h2.add_(&h)?;
    h2.relu_()?;
    let pooled = h2.max_pool2d(&MaxPool2dOptions { kernel: (2, 2), stride: None, padding: (0, 0), dilation: (1, 1), ceil_mode: false })?;
    let feat = pooled.mean([2, 3], false)?;
    let logits = feat.linear(&p.fc, Some(&p.fcb))?;
    let probs = logits.softmax(-1)?;
    Ok((logits, probs))
}

/// The tests run one at a time: the counts some of them read are the context's, over every
/// thread.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// The elements' bits, widened to f32 (exactly) from a 16-bit type.
fn bits(t: &DeviceTensor) -> Vec<u32> {
    t.download().unwrap().to(DType::F32).unwrap().to_vec::<f32>().unwrap().iter().map(|v| v.to_bits()).collect()
}

fn image(ctx: &GpuContext, seed: u32) -> DeviceTensor {
    // NHWC data seen as NCHW by `forward`'s permute.
    DeviceTensor::from_slice(ctx, &vals(2 * 12 * 12 * 3, seed), &[2, 12, 12, 3]).unwrap()
}

#[test]
fn a_batch_records_one_pass() {
    let _serial = one_at_a_time();
    for ctx in contexts() {
        let x = DeviceTensor::from_slice(ctx, &vals(4096, 7), &[64, 64]).unwrap();
        let before = ctx.record_counts();
        let mut b = ctx.batch();
        let mut y = b.add(&x, 1.0).unwrap();
        for _ in 0..9 {
            y = b.mul(&y, 0.5).unwrap();
        }
        b.submit_and_wait().unwrap();
        let c = ctx.record_counts() - before;
        // The uniforms' upload (copied from the probe's buffer) is no transfer of the counts.
        assert_eq!((c.submits, c.passes, c.dispatches, c.transfers), (1, 1, 10, 0), "{}: {c:?}", name(ctx));
        let want: Vec<f32> = vals(4096, 7).iter().map(|v| (0..9).fold(v + 1.0, |a, _| a * 0.5)).collect();
        assert_eq!(y.download().unwrap().to_vec::<f32>().unwrap(), want, "{}", name(ctx));
    }
}

#[test]
fn uniform_uploads_and_batches_past_the_upload_cap() {
    let _serial = one_at_a_time();
    // On a GPU (the noop backend posing as one) an eager call counts its dispatch and nothing
    // else, whatever its uniforms' upload took.
    let noop = strided_wgpu::advanced::internal::noop_context().unwrap();
    let (a, b) = (DeviceTensor::from_slice(&noop, &[1f32], &[1]).unwrap(), DeviceTensor::from_slice(&noop, &[2f32], &[1]).unwrap());
    let before = noop.record_counts();
    a.add(&b).unwrap();
    let c = noop.record_counts() - before;
    assert_eq!((c.submits, c.passes, c.dispatches, c.transfers), (1, 1, 1, 0), "{c:?}");
    // A batch of more new uniform bytes than one upload takes (4 MiB: 16,384 dispatches) writes
    // them with queue writes instead; one under the cap and one past it compute the same chain.
    for ctx in contexts() {
        for n in [100usize, 16_500] {
            let one = DeviceTensor::from_slice(ctx, &[1f32], &[1]).unwrap();
            let mut x = DeviceTensor::from_slice(ctx, &[0f32], &[1]).unwrap();
            let mut batch = ctx.batch();
            for _ in 0..n {
                x = batch.add(&x, &one).unwrap();
            }
            batch.submit_and_wait().unwrap();
            assert_eq!(x.download().unwrap().to_vec::<f32>().unwrap(), vec![n as f32], "{} n {n}", name(ctx));
        }
    }
}

#[test]
fn replays_equal_eager_calls_bit_for_bit() {
    let _serial = one_at_a_time();
    for ctx in contexts() {
        let p = params(ctx);
        let x = image(ctx, 11);
        let graph = ctx.capture(&[&x], || forward(&p, &x)).unwrap();
        let counts = graph.counts();
        assert_eq!(counts.submits, 1, "{}", name(ctx));
        assert!(counts.dispatches >= 8, "{}: {counts:?}", name(ctx));
        // Passes: one, plus at most one after each copy or clear the captured work holds; the
        // weight packing of the convolutions (when their kernels pack) ran once, at capture.
        assert_eq!((counts.passes, counts.transfers), (1, 0), "{}: {counts:?}, constants {:?}", name(ctx), graph.constant_counts());
        for seed in [11, 12, 13] {
            let new = image(ctx, seed);
            let before = ctx.record_counts();
            graph.replay_and_wait(&[&new]).unwrap();
            let c = ctx.record_counts() - before;
            assert_eq!(c.submits, 1, "{} seed {seed}: {c:?}", name(ctx));
            assert_eq!(c.dispatches + c.transfers, counts.dispatches + counts.transfers + 1, "{} seed {seed}: the graph's commands and the input copy: {c:?}", name(ctx));
            let (logits, probs) = graph.output();
            let (want_logits, want_probs) = forward(&p, &new).unwrap();
            assert_eq!(bits(logits), bits(&want_logits), "{} seed {seed}: logits", name(ctx));
            assert_eq!(bits(probs), bits(&want_probs), "{} seed {seed}: probabilities", name(ctx));
            assert!(bits(probs).iter().all(|&b| f32::from_bits(b).is_finite()), "{}", name(ctx));
        }
        // Written into the input tensor directly, then replayed on it.
        x.copy_(&image(ctx, 14)).unwrap();
        graph.replay_and_wait(&[]).unwrap();
        let (want, _) = forward(&p, &image(ctx, 14)).unwrap();
        assert_eq!(bits(&graph.output().0), bits(&want), "{}: replay on the input's contents", name(ctx));
    }
}

/// The normalizations, composed of reductions and elementwise ops, captured: a layer norm over
/// the last dim and a group norm of a channels-last input (f32 and f16, with affine
/// parameters), replayed on new inputs, equal the eager calls bit for bit.
#[test]
fn captured_normalizations_replay_the_eager_bits() {
    use strided_wgpu::ops::{group_norm, layer_norm};
    let _serial = one_at_a_time();
    for ctx in contexts() {
        for dtype in [DType::F32, DType::F16] {
            let t = |n: usize, shape: &[usize], seed| DeviceTensor::from_slice(ctx, &vals(n, seed), shape).unwrap().to(dtype).unwrap();
            let (w, b) = (t(8, &[8], 3), t(8, &[8], 4));
            let x = t(2 * 8 * 5 * 5, &[2, 8, 5, 5], 5).contiguous(MemoryFormat::ChannelsLast).unwrap();
            let f = |x: &DeviceTensor| -> strided_wgpu::Result<(DeviceTensor, DeviceTensor)> {
                let g = group_norm(x, 4, Some(&w), Some(&b), 1e-5)?;
                let rows = g.permute(&[0, 2, 3, 1])?;
                Ok((g.clone(), layer_norm(&rows, &[8], Some(&w), None, 1e-5)?))
            };
            let graph = ctx.capture(&[&x], || f(&x)).unwrap();
            for seed in [6, 7] {
                let new = t(2 * 8 * 5 * 5, &[2, 8, 5, 5], seed).contiguous(MemoryFormat::ChannelsLast).unwrap();
                graph.replay_and_wait(&[&new]).unwrap();
                let (g, l) = f(&new).unwrap();
                assert_eq!(bits(&graph.output().0), bits(&g), "{} {dtype} seed {seed}: group_norm", name(ctx));
                assert_eq!(bits(&graph.output().1), bits(&l), "{} {dtype} seed {seed}: layer_norm", name(ctx));
                assert!(bits(&l).iter().all(|&v| f32::from_bits(v).is_finite()), "{}", name(ctx));
            }
        }
    }
}

/// The result of a closure over the input `x`, for the fusion test.
type Forward<'a> = Box<dyn Fn(&DeviceTensor) -> strided_wgpu::Result<DeviceTensor> + 'a>;

/// In a captured graph a convolution's in-place `relu_` folds into it, and so does an in-place
/// `add_` of a same-shape tensor before it where the kernel takes a residual (forced GEMM
/// kernels here, the default on GPUs): the graph then has the convolution's dispatches only,
/// and every graph computes the eager calls' bits. Ops that must not fold (a scaled add, a ReLU
/// of another tensor, an add after a convolution's own ReLU, an add of the output into itself,
/// a ReLU after something else) add their dispatch. In float32, float16 and bfloat16 alike: a
/// 16-bit convolution on f32 copies (the CPU adapters' default kernels) ends with a conversion,
/// into which nothing folds.
#[test]
fn in_place_residual_and_relu_fold_into_the_convolution() {
    let _serial = one_at_a_time();
    for ctx in contexts() {
        for (format, dtype) in [(MemoryFormat::Contiguous, DType::F32), (MemoryFormat::ChannelsLast, DType::F32), (MemoryFormat::Contiguous, DType::F16), (MemoryFormat::ChannelsLast, DType::BF16)] {
            let gemm = if format == MemoryFormat::ChannelsLast { ConvKernel::GemmNhwc } else { ConvKernel::GemmNchw };
            for kernel in [ConvKernel::Auto, gemm] {
                let typed = |t: DeviceTensor| if dtype == DType::F32 { t } else { t.to(dtype).unwrap() };
                let t = |shape: &[usize], seed| typed(DeviceTensor::from_slice(ctx, &vals(shape.iter().product(), seed), shape).unwrap().contiguous(format).unwrap());
                let (x, r, q) = (t(&[2, 8, 10, 10], 21), t(&[2, 8, 10, 10], 22), t(&[2, 8, 10, 10], 27));
                let w = typed(DeviceTensor::from_slice(ctx, &vals(8 * 8 * 9, 23), &[8, 8, 3, 3]).unwrap());
                let b = typed(DeviceTensor::from_slice(ctx, &vals(8, 24), &[8]).unwrap());
                let o = Conv2dOptions { padding: (1, 1), ..Default::default() };
                let what = format!("{} {format:?} {dtype} {kernel:?}", name(ctx));
                let conv = |x: &DeviceTensor, relu: bool| -> strided_wgpu::Result<DeviceTensor> {
                    let y = DeviceTensor::empty(ctx, &[2, 8, 10, 10], dtype, format)?;
                    let mut bt = ctx.batch();
                    bt.conv2d_out_with(x, &w, Some(&b), &Conv2dOptions { relu, ..o }, &y, kernel)?;
                    bt.submit()?;
                    Ok(y)
                };
                let conv_only = ctx.capture(&[&x], || conv(&x, false)).unwrap();
                let c = conv_only.counts().dispatches;
                let residual = conv_only.dispatches().iter().any(|(_, k)| k.starts_with("conv2d_gemm"));
                // A 16-bit convolution on f32 copies ends with their conversion.
                let folds = dtype == DType::F32 || residual;
                // (name, the closure, the dispatches its graph should have)
                let cases: Vec<(&str, Forward<'_>, u64)> = vec![
                    ("relu_", Box::new(|x| { let y = conv(x, false)?; y.relu_()?; Ok(y) }), if folds { c } else { c + 1 }),
                    ("add_ relu_", Box::new(|x| { let y = conv(x, false)?; y.add_(&r)?; y.relu_()?; Ok(y) }), if residual { c } else { c + 2 }),
                    ("scaled add_", Box::new(|x| { let y = conv(x, false)?; y.add_scaled_(&r, 2.0)?; Ok(y) }), c + 1),
                    ("another's relu_", Box::new(|x| { let y = conv(x, false)?; q.relu_()?; y.add_(&q)?; Ok(y) }), c + 2),
                    ("add_ after relu", Box::new(|x| { let y = conv(x, true)?; y.add_(&r)?; Ok(y) }), c + 1),
                    ("add_ of itself", Box::new(|x| { let y = conv(x, false)?; y.add_(&y)?; Ok(y) }), c + 1),
                    ("out of place", Box::new(|x| { let y = conv(x, false)?; let z = y.relu()?; z.add_(&y)?; Ok(z) }), c + 2),
                ];
                for (case, f, want) in &cases {
                    let graph = ctx.capture(&[&x], || f(&x)).unwrap();
                    assert_eq!(graph.counts().dispatches, *want, "{what} {case}: {:?}", graph.dispatches());
                    for seed in [25, 26] {
                        let new = t(&[2, 8, 10, 10], seed);
                        graph.replay_and_wait(&[&new]).unwrap();
                        assert_eq!(bits(graph.output()), bits(&f(&new).unwrap()), "{what} {case} seed {seed}: the eager calls' bits");
                    }
                }
            }
        }
    }
}

/// A capture whose closure panics ends with it: the thread can capture again.
#[test]
fn a_panicking_capture_ends() {
    let _serial = one_at_a_time();
    for ctx in contexts() {
        let x = DeviceTensor::from_slice(ctx, &vals(64, 31), &[8, 8]).unwrap();
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| ctx.capture(&[&x], || -> strided_wgpu::Result<DeviceTensor> {
            x.relu_()?;
            panic!("the model's own bug");
        })));
        assert!(caught.is_err(), "{}", name(ctx));
        let graph = ctx.capture(&[&x], || x.add(1.0)).unwrap();
        graph.replay_and_wait(&[&x]).unwrap();
        let want: Vec<f32> = x.download().unwrap().to_vec::<f32>().unwrap().iter().map(|v| v + 1.0).collect();
        assert_eq!(graph.output().download().unwrap().to_vec::<f32>().unwrap(), want, "{}", name(ctx));
    }
}

/// A capture made in a destructor while the thread unwinds (a wrapper that captures again as
/// it goes) captures as anywhere else: it ended before its own end, an error that said "the
/// capture ended on another thread".
#[test]
fn a_capture_in_a_destructor_during_a_panic() {
    let _serial = one_at_a_time();
    struct Recapture<'a>(&'a GpuContext, &'a DeviceTensor, &'a std::sync::Mutex<Option<strided_wgpu::Result<Vec<f32>>>>);
    impl Drop for Recapture<'_> {
        fn drop(&mut self) {
            let r = self.0.capture(&[self.1], || self.1.add(1.0)).and_then(|g| {
                g.replay_and_wait(&[self.1])?;
                g.output().download()?.to_vec::<f32>()
            });
            *self.2.lock().unwrap() = Some(r);
        }
    }
    for ctx in contexts() {
        let x = DeviceTensor::from_slice(ctx, &vals(64, 32), &[8, 8]).unwrap();
        let got = std::sync::Mutex::new(None);
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _wrapper = Recapture(ctx, &x, &got);
            panic!("the model's own bug");
        }));
        assert!(caught.is_err(), "{}", name(ctx));
        let want: Vec<f32> = vals(64, 32).iter().map(|v| v + 1.0).collect();
        let got = got.lock().unwrap().take().unwrap_or_else(|| panic!("{}: the destructor did not run", name(ctx)));
        assert_eq!(got.unwrap_or_else(|e| panic!("{}: {e}", name(ctx))), want, "{}", name(ctx));
    }
}

#[test]
fn in_place_updates_of_constants_run_at_every_replay() {
    let _serial = one_at_a_time();
    for ctx in contexts() {
        let w0 = vals(64, 51);
        let x = DeviceTensor::from_slice(ctx, &vals(64, 52), &[8, 8]).unwrap();
        let w = DeviceTensor::from_slice(ctx, &w0, &[8, 8]).unwrap();
        // w is no input, but the graph writes it in place: each replay doubles it again, as
        // the eager calls would.
        let graph = ctx
            .capture(&[&x], || {
                w.mul_(2.0)?;
                let t = w.transpose(0, 1)?.contiguous(MemoryFormat::Contiguous)?;
                x.mul(&t)
            })
            .unwrap();
        assert_eq!(graph.constant_counts().dispatches, 0, "{}", name(ctx));
        let xs = vals(64, 52);
        for r in 1..=3 {
            graph.replay_and_wait(&[]).unwrap();
            let got = graph.output().download().unwrap().to_vec::<f32>().unwrap();
            let want: Vec<f32> = (0..64).map(|i| xs[i] * (w0[(i % 8) * 8 + i / 8] * (1 << r) as f32)).collect();
            assert_eq!(got, want, "{} replay {r}", name(ctx));
        }
        // A constant copy (the transpose of a weight the graph never writes) runs once.
        let v = DeviceTensor::from_slice(ctx, &w0, &[8, 8]).unwrap();
        let graph = ctx.capture(&[&x], || x.mul(&v.transpose(0, 1)?.contiguous(MemoryFormat::Contiguous)?)).unwrap();
        assert_eq!((graph.constant_counts().dispatches + graph.constant_counts().transfers, graph.counts().dispatches), (1, 1), "{}", name(ctx));
        graph.replay_and_wait(&[]).unwrap();
        let want: Vec<f32> = (0..64).map(|i| xs[i] * w0[(i % 8) * 8 + i / 8]).collect();
        assert_eq!(graph.output().download().unwrap().to_vec::<f32>().unwrap(), want, "{}", name(ctx));
    }
}

#[test]
fn a_replay_in_a_batch_and_a_dropped_graph() {
    let _serial = one_at_a_time();
    for ctx in contexts() {
        let p = params(ctx);
        let x = image(ctx, 21);
        let graph = ctx.capture(&[&x], || forward(&p, &x)).unwrap();
        let logits = graph.output().0.clone();
        // A replay recorded into a batch after other work, then the graph dropped before the
        // GPU has run it: the batch holds the graph's buffers.
        let new = image(ctx, 22);
        let mut b = ctx.batch();
        let scaled = b.mul(&new, 1.0).unwrap();
        b.replay(&graph, &[&scaled]).unwrap();
        let sub = b.submit().unwrap();
        drop(graph);
        sub.wait().unwrap();
        let (want, _) = forward(&p, &new).unwrap();
        assert_eq!(bits(&logits), bits(&want), "{}", name(ctx));
    }
}

#[test]
fn wrong_replays_and_waiting_captures_are_typed_errors() {
    let _serial = one_at_a_time();
    for ctx in contexts() {
        let p = params(ctx);
        let x = image(ctx, 31);
        let graph = ctx.capture(&[&x], || forward(&p, &x)).unwrap();
        graph.replay_and_wait(&[]).unwrap();
        let before = bits(&graph.output().0);
        let other_shape = DeviceTensor::from_slice(ctx, &vals(2 * 12 * 11 * 3, 1), &[2, 12, 11, 3]).unwrap();
        let other_dtype = DeviceTensor::empty(ctx, &[2, 12, 12, 3], DType::F16, MemoryFormat::Contiguous).unwrap();
        let ok = image(ctx, 32);
        for (what, inputs) in [("shape", vec![&other_shape]), ("dtype", vec![&other_dtype]), ("count", vec![&ok, &ok])] {
            let r = graph.replay(&inputs);
            assert!(matches!(r, Err(Error::InvalidArgument { op: "replay", .. })), "{} {what}: {r:?}", name(ctx));
        }
        assert_eq!(bits(&graph.output().0), before, "{}: a refused replay wrote nothing", name(ctx));
        // Waiting inside a capture: the work has not run.
        let r = ctx.capture(&[&x], || x.add(1.0)?.download());
        assert!(matches!(r, Err(Error::InvalidArgument { op: "download", .. })), "{}: download in a capture: {:?}", name(ctx), r.err());
        let r = ctx.capture(&[&x], || x.add(1.0)?.transpose(0, 3)?.download());
        assert!(matches!(r, Err(Error::InvalidArgument { op: "download", .. })), "{}: download of a transposed view in a capture: {:?}", name(ctx), r.err());
        // A wait inside a capture for work submitted before it (it blocked, and succeeded).
        let mut early = ctx.batch();
        early.add(&x, 2.0).unwrap();
        let submitted = early.submit().unwrap();
        let r = ctx.capture(&[&x], || {
            submitted.wait()?;
            x.add(1.0)
        });
        assert!(matches!(r, Err(Error::InvalidArgument { op: "wait", .. })), "{}: a wait in a capture: {:?}", name(ctx), r.err());
        let r = ctx.capture(&[], || graph.replay(&[]));
        assert!(matches!(r, Err(Error::InvalidArgument { op: "replay", .. })), "{}: replay in a capture: {:?}", name(ctx), r.err());
        let r = ctx.capture(&[], || ctx.capture(&[], || Ok(())));
        assert!(matches!(r, Err(Error::InvalidArgument { op: "capture", .. })), "{}: nested capture: {:?}", name(ctx), r.err());
        // A measurement inside a capture (it submits and waits) is refused, before it records
        // any conversion into the graph; it used to read as "tuned already" (Ok(false)).
        let (a, b) = (DeviceTensor::from_slice(ctx, &vals(64 * 64, 3), &[64, 64]).unwrap(), DeviceTensor::from_slice(ctx, &vals(64 * 64, 4), &[64, 64]).unwrap());
        let xt = x.transpose(1, 3).unwrap().contiguous(MemoryFormat::Contiguous).unwrap();
        type Refused<'a> = (&'static str, Box<dyn Fn() -> strided_wgpu::Result<bool> + 'a>);
        let refused: [Refused<'_>; 3] = [
            ("tune_matmul", Box::new(|| ctx.tune_matmul(&a, &b))),
            ("tune_conv2d", Box::new(|| ctx.tune_conv2d(&x.permute(&[0, 3, 1, 2]).unwrap(), &p.w1, None, &Conv2dOptions::default()))),
            ("tune_copy", Box::new(|| ctx.tune_copy(&xt, &x.transpose(1, 3).unwrap()))),
        ];
        for (what, tune) in refused {
            let r = ctx.capture(&[], || tune().map(|_| ()));
            assert!(matches!(r, Err(Error::InvalidArgument { op: "tune", .. })), "{}: {what} in a capture: {:?}", name(ctx), r.err());
        }
        // The context works normally after failed captures.
        let y = x.add(1.0).unwrap();
        assert_eq!(y.download().unwrap().to_vec::<f32>().unwrap(), vals(2 * 12 * 12 * 3, 31).iter().map(|v| v + 1.0).collect::<Vec<_>>());
        // Another thread's calls during a capture run at once and are not captured.
        let graph = ctx
            .capture(&[&x], || {
                let z = std::thread::scope(|s| s.spawn(|| x.mul(2.0).unwrap().download().unwrap()).join().unwrap());
                assert_eq!(z.to_vec::<f32>().unwrap()[0], vals(1, 31)[0] * 2.0);
                x.mul(3.0)
            })
            .unwrap();
        assert_eq!(graph.counts().dispatches, 1, "{}", name(ctx));
    }
}

#[test]
fn a_replay_on_a_lost_device_is_device_lost() {
    for ctx in contexts() {
        let Some(c) = doomed_device(ctx) else { continue };
        let x = DeviceTensor::from_slice(&c, &vals(256, 41), &[16, 16]).unwrap();
        let graph = c.capture(&[&x], || x.transpose(0, 1)?.contiguous(MemoryFormat::Contiguous)?.relu()).unwrap();
        graph.replay_and_wait(&[]).unwrap();
        c.device().destroy();
        let r = graph.replay(&[]).and_then(|s| s.wait());
        assert!(matches!(r, Err(Error::DeviceLost { .. })), "{}: {r:?}", name(ctx));
    }
}

#[test]
fn two_threads_capture_at_once() {
    let _serial = one_at_a_time();
    for ctx in contexts() {
        let p = params(ctx);
        std::thread::scope(|s| {
            let workers: Vec<_> = (0..2u32)
                .map(|t| {
                    let p = &p;
                    s.spawn(move || {
                        for i in 0..4 {
                            let x = image(ctx, 60 + t * 10 + i);
                            let graph = ctx.capture(&[&x], || forward(p, &x)).unwrap();
                            let new = image(ctx, 61 + t * 10 + i);
                            graph.replay_and_wait(&[&new]).unwrap();
                            let (want, _) = forward(p, &new).unwrap();
                            assert_eq!(bits(&graph.output().0), bits(&want), "{} thread {t} round {i}", name(ctx));
                        }
                    })
                })
                .collect();
            for w in workers {
                w.join().unwrap();
            }
        });
    }
}

/// A context of the crate's own on `ctx`'s backend, holding eager calls back.
fn deferring(ctx: &GpuContext) -> Option<GpuContext> {
    let c = doomed_device(ctx)?;
    c.set_submit_policy(SubmitPolicy::Deferred).unwrap();
    Some(c)
}

#[test]
fn eager_calls_held_back_submit_in_growing_pieces_to_the_same_bits() {
    // A context the crate opens holds eager calls back unless told otherwise; one made on the
    // caller's device submits each.
    if std::env::var_os("STRIDED_WGPU_SUBMIT").is_none() {
        let noop = strided_wgpu::advanced::internal::noop_context().unwrap();
        assert_eq!(noop.submit_policy(), SubmitPolicy::EachCall);
        for ctx in contexts() {
            let c = doomed_device(ctx).unwrap();
            assert_eq!(c.submit_policy(), SubmitPolicy::Deferred, "{}", name(ctx));
        }
    }
    for ctx in contexts() {
        let Some(c) = deferring(ctx) else { continue };
        let x0 = DeviceTensor::from_slice(&c, &vals(1000, 51), &[10, 100]).unwrap();
        let chain = |x0: &DeviceTensor| -> (Vec<u32>, strided_wgpu::advanced::RecordCounts, strided_wgpu::advanced::RecordCounts) {
            c.flush().unwrap().wait().unwrap();
            let before = c.record_counts();
            let mut x = x0.add(1.0).unwrap();
            for i in 1..40 {
                x = if i % 2 == 0 { x.mul(x0).unwrap() } else { x.sub(0.25).unwrap() };
            }
            let held = c.record_counts() - before;
            let bits = x.download().unwrap().to_vec::<f32>().unwrap().iter().map(|v| v.to_bits()).collect();
            (bits, held, c.record_counts() - before)
        };
        let (held_bits, held, all) = chain(&x0);
        // Submitted after calls 1, 3, 7, 15 and 31 (pieces of 1, 2, 4, 8, 16); the last 9 with
        // the download, in a submission of their own ahead of its (a failing download's
        // submission drops nothing held).
        assert_eq!((held.submits, held.dispatches), (5, 31), "{}: {held:?}", name(ctx));
        assert_eq!((all.submits, all.dispatches, all.passes), (7, 40, 6), "{}: {all:?}", name(ctx));
        c.set_submit_policy(SubmitPolicy::EachCall).unwrap();
        let (each_bits, each, _) = chain(&x0);
        assert_eq!((each.submits, each.dispatches), (40, 40), "{}: {each:?}", name(ctx));
        assert_eq!(held_bits, each_bits, "{}: calls held back and calls submitted each differ", name(ctx));
        // At most 32 calls a piece.
        c.set_submit_policy(SubmitPolicy::Deferred).unwrap();
        let one = DeviceTensor::from_slice(&c, &[0f32], &[1]).unwrap();
        let before = c.record_counts();
        for _ in 0..200 {
            one.add_(1.0).unwrap();
        }
        let n = c.record_counts() - before;
        // 1 + 2 + 4 + 8 + 16 = 31 calls, then pieces of 32: 5 more (191 calls), 9 held.
        assert_eq!((n.submits, n.dispatches), (10, 191), "{}: {n:?}", name(ctx));
        assert_eq!(one.download().unwrap().to_vec::<f32>().unwrap(), vec![200.0], "{}", name(ctx));
    }
}

#[test]
fn held_back_calls_run_before_what_follows_them() {
    for ctx in contexts() {
        let Some(c) = deferring(ctx) else { continue };
        let want: Vec<f32> = vals(64, 61).iter().map(|v| (v + 1.0) * 2.0).collect();
        // A batch submitted after held calls: the held calls' submission, then the batch's.
        let x = DeviceTensor::from_slice(&c, &vals(64, 61), &[64]).unwrap();
        c.flush().unwrap().wait().unwrap();
        x.add_(1.0).unwrap();
        x.add_(0.0).unwrap();
        let before = c.record_counts();
        let mut b = c.batch();
        let y = b.mul(&x, 2.0).unwrap();
        b.submit_and_wait().unwrap();
        assert_eq!((c.record_counts() - before).submits, 2, "{}", name(ctx));
        assert_eq!(y.download().unwrap().to_vec::<f32>().unwrap(), want, "{}", name(ctx));
        // Inputs dropped while their calls are held: the recording holds them.
        let z = {
            let a = DeviceTensor::from_slice(&c, &vals(64, 61), &[64]).unwrap();
            let t = a.add(1.0).unwrap();
            t.mul(2.0).unwrap()
        };
        assert_eq!(z.download().unwrap().to_vec::<f32>().unwrap(), want, "{}", name(ctx));
        // A graph captured after held calls, replayed: it reads what they wrote.
        let x = DeviceTensor::from_slice(&c, &vals(64, 61), &[64]).unwrap();
        x.add_(1.0).unwrap();
        x.add_(0.0).unwrap();
        let graph = c.capture(&[], || x.mul(2.0)).unwrap();
        graph.replay_and_wait(&[]).unwrap();
        assert_eq!(graph.output().download().unwrap().to_vec::<f32>().unwrap(), want, "{}", name(ctx));
        // A finished batch goes to the caller after the held calls were submitted; the queue
        // handed out switches the context to a submission a call.
        let x = DeviceTensor::from_slice(&c, &vals(64, 61), &[64]).unwrap();
        x.add_(1.0).unwrap();
        x.add_(0.0).unwrap();
        let mut b = c.batch();
        let y = b.mul(&x, 2.0).unwrap();
        let buffer = b.finish().unwrap();
        assert_eq!(c.submit_policy(), SubmitPolicy::Deferred, "{}", name(ctx));
        c.queue().submit([buffer]);
        assert_eq!(c.submit_policy(), SubmitPolicy::EachCall, "{}", name(ctx));
        assert_eq!(y.download().unwrap().to_vec::<f32>().unwrap(), want, "{}", name(ctx));
        // Held calls are submitted when the device is handed out, before the caller's work.
        c.set_submit_policy(SubmitPolicy::Deferred).unwrap();
        let x = DeviceTensor::from_slice(&c, &vals(64, 61), &[64]).unwrap();
        x.add_(1.0).unwrap();
        x.mul_(2.0).unwrap();
        let before = c.record_counts();
        let device = c.device();
        assert_eq!((c.record_counts() - before).dispatches, 1, "{}: the held call submitted", name(ctx));
        let got = read_f32s(device, c.queue(), x.buffer(), 256);
        assert_eq!(got, want, "{}: the caller's copy saw the held calls' result", name(ctx));
    }
}

/// The first `bytes` of `buffer` as f32s, read by the caller's own copy, submission and map
/// (as a host program reads a buffer the crate wrote).
fn read_f32s(device: &wgpu::Device, queue: &wgpu::Queue, buffer: &wgpu::Buffer, bytes: u64) -> Vec<f32> {
    let out = device.create_buffer(&wgpu::BufferDescriptor { label: None, size: bytes, usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ, mapped_at_creation: false });
    let mut enc = device.create_command_encoder(&Default::default());
    enc.copy_buffer_to_buffer(buffer, 0, &out, 0, bytes);
    queue.submit([enc.finish()]);
    out.slice(..).map_async(wgpu::MapMode::Read, |r| r.unwrap());
    device.poll(wgpu::PollType::Wait { submission_index: None, timeout: None }).unwrap();
    let got = out.slice(..).get_mapped_range().unwrap().chunks(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
    got
}

/// Calls held back when the last handle of a context goes (the context and its tensors
/// dropped) are submitted: a caller's buffer they write is written (they were dropped unrun).
#[test]
fn held_calls_are_submitted_when_the_context_goes() {
    for ctx in contexts() {
        let Some(c) = deferring(ctx) else { continue };
        // The device and queue handed out first (that submits each call from then on).
        let (device, queue) = (c.device().clone(), c.queue().clone());
        c.set_submit_policy(SubmitPolicy::Deferred).unwrap();
        let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
        let buf = device.create_buffer(&wgpu::BufferDescriptor { label: None, size: 256, usage, mapped_at_creation: false });
        let t = DeviceTensor::from_buffer(&c, buf.clone(), DType::F32, strided_wgpu::Layout::contiguous(&[64]).unwrap()).unwrap();
        let x = DeviceTensor::from_slice(&c, &vals(64, 61), &[64]).unwrap();
        t.copy_(&x).unwrap();
        t.mul_(2.0).unwrap();
        drop((t, x, c));
        let got = read_f32s(&device, &queue, &buf, 256);
        let want: Vec<f32> = vals(64, 61).iter().map(|v| v * 2.0).collect();
        assert_eq!(got, want, "{}: the held calls ran", name(ctx));
    }
}

#[test]
fn held_back_calls_on_a_lost_device_and_from_two_threads() {
    for ctx in contexts() {
        // Two threads' calls held back together, each chain right.
        let Some(c) = deferring(ctx) else { continue };
        std::thread::scope(|s| {
            let runs: Vec<_> = (0..2u32)
                .map(|t| {
                    let c = &c;
                    s.spawn(move || {
                        let x = DeviceTensor::from_slice(c, &vals(256, 70 + t), &[256]).unwrap();
                        let mut y = x.clone();
                        for _ in 0..20 {
                            y = y.mul(0.5).unwrap().add(&x).unwrap();
                        }
                        let want: Vec<f32> = vals(256, 70 + t).iter().map(|&v| (0..20).fold(v, |a, _| a * 0.5 + v)).collect();
                        assert_eq!(y.download().unwrap().to_vec::<f32>().unwrap(), want, "thread {t}");
                    })
                })
                .collect();
            for r in runs {
                r.join().unwrap();
            }
        });
        // A device lost under held calls: the call that submits them fails with DeviceLost.
        let device = c.device().clone();
        c.set_submit_policy(SubmitPolicy::Deferred).unwrap();
        let x = DeviceTensor::from_slice(&c, &vals(256, 71), &[256]).unwrap();
        c.flush().unwrap().wait().unwrap();
        let y = x.add(1.0).unwrap();
        let _z = y.add(1.0).unwrap();
        device.destroy();
        let r = y.download();
        assert!(matches!(r, Err(Error::DeviceLost { .. })), "{}: {r:?}", name(ctx));
        assert!(matches!(c.flush().and_then(|s| s.wait()), Err(Error::DeviceLost { .. })), "{}", name(ctx));
    }
}

/// A batch finished inside a capture is an error (a command buffer would run outside the
/// graph), and its work is captured all the same: the tensor it returned is written at every
/// replay (it was discarded with the batch).
#[test]
fn a_batch_finished_inside_a_capture_is_captured() {
    let _serial = one_at_a_time();
    for ctx in contexts() {
        let x = DeviceTensor::from_slice(ctx, &vals(64, 61), &[64]).unwrap();
        let graph = ctx
            .capture(&[&x], || {
                let mut b = ctx.batch();
                let y = b.mul(&x, 2.0)?;
                let r = b.finish().map(drop);
                assert!(matches!(&r, Err(Error::InvalidArgument { op: "finish", .. })), "{}: {r:?}", name(ctx));
                Ok::<_, Error>(y)
            })
            .unwrap();
        let fresh = DeviceTensor::from_slice(ctx, &vals(64, 7), &[64]).unwrap();
        graph.replay_and_wait(&[&fresh]).unwrap();
        let want: Vec<f32> = vals(64, 7).iter().map(|v| v * 2.0).collect();
        assert_eq!(graph.output().download().unwrap().to_vec::<f32>().unwrap(), want, "{}", name(ctx));
        // A batch recording into the caller's encoder is not captured by `finish` (the caller
        // finishes and submits that encoder): its error says so (it said the work was captured).
        let mut enc = ctx.device().create_command_encoder(&Default::default());
        let mut b = ctx.record_into(&mut enc);
        b.mul(&x, 2.0).unwrap();
        let xr = &x;
        let graph = ctx
            .capture(&[&x], move || {
                let e = b.finish().map(drop).unwrap_err();
                assert!(e.to_string().contains("the caller finishes it"), "{}: {e}", name(ctx));
                xr.add(1.0)
            })
            .unwrap();
        assert_eq!(graph.counts().dispatches, 1, "{}: only the add is captured", name(ctx));
        ctx.queue().submit([enc.finish()]);
    }
}

/// A replay's input that overlaps its own graph input in another layout (the same buffer one
/// element on) is read before it is written (it was refused as a partial overlap).
#[test]
fn a_replay_input_overlapping_its_own_graph_input() {
    let _serial = one_at_a_time();
    for ctx in contexts() {
        let all = DeviceTensor::from_slice(ctx, &vals(65, 61), &[65]).unwrap();
        let x = all.narrow(0, 0, 64).unwrap();
        let graph = ctx.capture(&[&x], || x.mul(2.0)).unwrap();
        let shifted = all.narrow(0, 1, 64).unwrap();
        graph.replay_and_wait(&[&shifted]).unwrap();
        let want: Vec<f32> = vals(65, 61)[1..].iter().map(|v| v * 2.0).collect();
        assert_eq!(graph.output().download().unwrap().to_vec::<f32>().unwrap(), want, "{}", name(ctx));
    }
}

/// A device the crate opened reports its loss to the crate (wgpu's device-lost callback): the
/// next call fails with that report, without polling or probing the device first (natively a
/// poll of a lost device panics inside wgpu; on WebGPU no probe learns a loss).
#[test]
fn a_reported_device_loss_fails_the_next_call() {
    for ctx in contexts() {
        let Some(c) = doomed_device(ctx) else { continue };
        let x = DeviceTensor::from_slice(&c, &vals(64, 61), &[64]).unwrap();
        c.flush().unwrap().wait().unwrap();
        let device = c.device().clone();
        device.destroy();
        // wgpu reports a destroyed device lost once its queue is empty, at a poll.
        let _ = device.poll(wgpu::PollType::Wait { submission_index: None, timeout: None });
        let r = x.add(1.0).map(drop);
        assert!(matches!(&r, Err(Error::DeviceLost { detail, .. }) if detail.contains("reported its loss")), "{}: {r:?}", name(ctx));
    }
}

/// A wgpu callback that the crate's own submission runs (wgpu fires the callbacks of finished
/// work inside `Queue::submit`) may call the crate: its calls submit at once, after what the
/// submission carried; nothing deadlocks on the held calls' lock, which the submission holds.
#[test]
fn a_callback_fired_inside_the_crates_submission_may_call_the_crate() {
    for ctx in contexts() {
        let Some(c) = deferring(ctx) else { continue };
        let device = c.device().clone();
        let queue = c.queue().clone();
        c.set_submit_policy(SubmitPolicy::Deferred).unwrap();
        let x = DeviceTensor::from_slice(&c, &vals(64, 61), &[64]).unwrap();
        c.flush().unwrap().wait().unwrap();
        // The first call after a submission is submitted, the second held.
        x.add_(1.0).unwrap();
        x.mul_(2.0).unwrap();
        device.poll(wgpu::PollType::Wait { submission_index: None, timeout: None }).unwrap();
        // Everything submitted has finished: wgpu runs this at its next maintenance, which is
        // the crate's submission of the held call below.
        let (tx, rx) = std::sync::mpsc::channel();
        let (c2, x2) = (c.clone(), x.clone());
        queue.on_submitted_work_done(move || {
            let r = (|| {
                let y = x2.mul(1.0)?;
                let _ = c2.device();
                c2.set_submit_policy(SubmitPolicy::Deferred)?;
                y.add_(0.0)?;
                c2.flush()?;
                Ok::<_, Error>(y)
            })();
            tx.send(r).unwrap();
        });
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let c3 = c.clone();
        std::thread::spawn(move || done_tx.send(c3.flush().map(drop)).unwrap());
        let flushed = done_rx.recv_timeout(std::time::Duration::from_secs(60));
        assert!(matches!(flushed, Ok(Ok(()))), "{}: the flush that ran the callback did not return: {flushed:?}", name(ctx));
        let y = rx.recv_timeout(std::time::Duration::from_secs(60)).expect("the callback ran").unwrap();
        let want: Vec<f32> = vals(64, 61).iter().map(|v| (v + 1.0) * 2.0).collect();
        assert_eq!(y.download().unwrap().to_vec::<f32>().unwrap(), want, "{}", name(ctx));
        assert_eq!(x.download().unwrap().to_vec::<f32>().unwrap(), want, "{}", name(ctx));
    }
}

#[test]
fn a_callback_fired_during_a_capture_makes_an_eager_call_not_a_captured_one() {
    for ctx in contexts() {
        let Some(c) = deferring(ctx) else { continue };
        let queue = c.queue().clone();
        let device = c.device().clone();
        let x = DeviceTensor::from_slice(&c, &vals(64, 71), &[64]).unwrap();
        c.flush().unwrap().wait().unwrap();
        let input = DeviceTensor::from_slice(&c, &vals(64, 72), &[64]).unwrap();
        x.add_(0.5).unwrap();
        c.flush().unwrap();
        device.poll(wgpu::PollType::Wait { submission_index: None, timeout: None }).unwrap();
        // Everything submitted has finished: wgpu runs this at its next maintenance, which is
        // a poll of the crate's inside the capture below (a batch returns finished work's
        // buffers to the pool before it allocates).
        let (tx, rx) = std::sync::mpsc::channel();
        let x2 = x.clone();
        queue.on_submitted_work_done(move || tx.send(x2.add_(1.0).map(drop)).unwrap());
        let mut fired_inside = None;
        let graph = c
            .capture(&[&input], || {
                let y = input.mul(2.0)?;
                fired_inside = rx.try_recv().ok();
                Ok::<_, Error>(y)
            })
            .unwrap();
        fired_inside.unwrap_or_else(|| panic!("{}: the callback did not run inside the capture", name(ctx))).unwrap();
        // The callback's call ran eagerly, once: its result is there to read now, and replays
        // do not repeat it (a captured in-place add would run at each replay, and not before).
        let want: Vec<f32> = vals(64, 71).iter().map(|v| v + 0.5 + 1.0).collect();
        assert_eq!(x.download().unwrap().to_vec::<f32>().unwrap(), want, "{}", name(ctx));
        assert_eq!(graph.counts().dispatches, 1, "{}: {:?}", name(ctx), graph.dispatches());
        graph.replay_and_wait(&[&input]).unwrap();
        assert_eq!(x.download().unwrap().to_vec::<f32>().unwrap(), want, "{}", name(ctx));
        let want: Vec<f32> = vals(64, 72).iter().map(|v| v * 2.0).collect();
        assert_eq!(graph.output().download().unwrap().to_vec::<f32>().unwrap(), want, "{}", name(ctx));
    }
}

/// A tensor made in the capture, filled with one weight, read by replayed work, then filled
/// with another and read again: the second fill runs at each replay after the first read (it
/// ran once at capture before, so every replay's first read saw the second weight).
#[test]
fn a_scratch_tensor_refilled_between_reads_replays_as_eager() {
    let _serial = one_at_a_time();
    for ctx in contexts() {
        let x = DeviceTensor::from_slice(ctx, &vals(64, 81), &[8, 8]).unwrap();
        let w1 = DeviceTensor::from_slice(ctx, &vals(64, 82), &[8, 8]).unwrap();
        let w2 = DeviceTensor::from_slice(ctx, &vals(64, 83), &[8, 8]).unwrap();
        let graph = ctx
            .capture(&[&x], || {
                let scratch = DeviceTensor::empty(ctx, &[8, 8], DType::F32, MemoryFormat::Contiguous)?;
                scratch.copy_(&w1.transpose(0, 1)?)?;
                let y1 = x.add(&scratch)?;
                scratch.copy_(&w2.transpose(0, 1)?)?;
                let y2 = x.mul(&scratch)?;
                Ok::<_, Error>((y1, y2))
            })
            .unwrap();
        let new = DeviceTensor::from_slice(ctx, &vals(64, 84), &[8, 8]).unwrap();
        graph.replay_and_wait(&[&new]).unwrap();
        let want1 = new.add(&w1.transpose(0, 1).unwrap()).unwrap();
        let want2 = new.mul(&w2.transpose(0, 1).unwrap()).unwrap();
        assert_eq!(bits(&graph.output().0), bits(&want1), "{}: the first read", name(ctx));
        assert_eq!(bits(&graph.output().1), bits(&want2), "{}: the second read", name(ctx));
    }
}

/// A replay given the graph's own inputs swapped (or a view of one input's buffer for another)
/// runs on the inputs as given: each source is read before any input is written.
#[test]
fn a_replay_given_the_graphs_inputs_swapped() {
    let _serial = one_at_a_time();
    for ctx in contexts() {
        let (va, vb) = (vals(32, 91), vals(32, 92));
        let a = DeviceTensor::from_slice(ctx, &va, &[32]).unwrap();
        let b = DeviceTensor::from_slice(ctx, &vb, &[32]).unwrap();
        let graph = ctx.capture(&[&a, &b], || a.mul(2.0)?.sub(&b)).unwrap();
        graph.replay_and_wait(&[&b, &a]).unwrap();
        let want: Vec<f32> = vb.iter().zip(&va).map(|(&x, &y)| x * 2.0 - y).collect();
        assert_eq!(graph.output().download().unwrap().to_vec::<f32>().unwrap(), want, "{}: swapped", name(ctx));
        assert_eq!(a.download().unwrap().to_vec::<f32>().unwrap(), vb, "{}: a holds b's values", name(ctx));
        // Now a holds vb and b holds va; give (b, b): both inputs become va.
        graph.replay_and_wait(&[&b, &b]).unwrap();
        let want: Vec<f32> = va.iter().map(|&x| x * 2.0 - x).collect();
        assert_eq!(graph.output().download().unwrap().to_vec::<f32>().unwrap(), want, "{}: (b, b)", name(ctx));
        // In a batch: an input copy that fails (from a strided view of a destroyed buffer,
        // which no kernel can bind) after another was recorded leaves nothing recorded.
        let big = DeviceTensor::from_slice(ctx, &vals(40, 93), &[40]).unwrap();
        let c = big.slice(0, 0, 32, 1).unwrap();
        let graph = ctx.capture(&[&a, &c], || a.mul(2.0)?.sub(&c)).unwrap();
        // a and b hold different values, so that a recorded copy into a would show.
        a.copy_(&DeviceTensor::from_slice(ctx, &vb, &[32]).unwrap()).unwrap();
        let mut batch = ctx.batch();
        let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
        let buffer = ctx.device().create_buffer(&wgpu::BufferDescriptor { label: Some("destroyed"), size: 256, usage, mapped_at_creation: false });
        let dead = DeviceTensor::from_buffer(ctx, buffer.clone(), DType::F32, strided_wgpu::Layout::contiguous(&[64]).unwrap()).unwrap().slice(0, 0, 64, 2).unwrap();
        buffer.destroy();
        let r = batch.replay(&graph, &[&b, &dead]);
        assert!(r.is_err(), "{}: {r:?}", name(ctx));
        let before = ctx.record_counts();
        batch.submit_and_wait().unwrap();
        let n = ctx.record_counts() - before;
        assert_eq!((n.dispatches, n.transfers), (0, 0), "{}: {n:?}", name(ctx));
        assert_eq!(a.download().unwrap().to_vec::<f32>().unwrap(), vb, "{}: a untouched", name(ctx));
    }
}

/// An error that a submission without a caller met (held calls that fail when a borrowed
/// encoder's batch submits them first) is the next call's, which then does nothing: a retry
/// runs once.
#[test]
fn a_call_that_gets_an_earlier_error_does_nothing() {
    for ctx in contexts() {
        let Some(c) = deferring(ctx) else { continue };
        let device = c.device().clone();
        let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
        let buffer = device.create_buffer(&wgpu::BufferDescriptor { label: Some("destroyed"), size: 64, usage, mapped_at_creation: false });
        let mut enc = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
        c.set_submit_policy(SubmitPolicy::Deferred).unwrap();
        let f = DeviceTensor::from_buffer(&c, buffer.clone(), DType::F32, strided_wgpu::Layout::contiguous(&[16]).unwrap()).unwrap();
        let y = DeviceTensor::from_slice(&c, &[5f32], &[1]).unwrap();
        c.flush().unwrap().wait().unwrap();
        // The first call after a submission goes at once; the second is held.
        f.add_(1.0).unwrap();
        f.add_(1.0).unwrap();
        buffer.destroy();
        // Submitting the held call fails, with no caller to tell.
        drop(c.record_into(&mut enc));
        let r = y.add_(1.0);
        assert!(r.is_err(), "{}: the earlier error is the next call's", name(ctx));
        y.add_(1.0).unwrap();
        assert_eq!(y.download().unwrap().to_vec::<f32>().unwrap(), vec![6.0], "{}: the failed call ran", name(ctx));
    }
}

/// A callback that a poll of the crate's runs (a batch returns finished work's buffers to the
/// pool first) calls the crate while another thread flushes: on GL the poll holds the
/// runtime's GL turn, and the flush took the held calls' lock before it waited for that turn,
/// so each waited on the other. The lock now comes after the turn.
#[test]
fn a_callback_in_a_poll_calls_the_crate_while_another_thread_flushes() {
    for ctx in contexts() {
        let Some(c) = deferring(ctx) else { continue };
        let device = c.device().clone();
        let queue = c.queue().clone();
        c.set_submit_policy(SubmitPolicy::Deferred).unwrap();
        let x = DeviceTensor::from_slice(&c, &vals(64, 101), &[64]).unwrap();
        let y = DeviceTensor::from_slice(&c, &vals(64, 102), &[64]).unwrap();
        c.flush().unwrap().wait().unwrap();
        device.poll(wgpu::PollType::Wait { submission_index: None, timeout: None }).unwrap();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let (tx, rx) = std::sync::mpsc::channel();
        let x2 = x.clone();
        // Runs at the next maintenance: the poll of the batch below.
        queue.on_submitted_work_done(move || {
            go_tx.send(()).unwrap();
            // Let the other thread reach its flush.
            std::thread::sleep(std::time::Duration::from_millis(300));
            tx.send(x2.add_(1.0)).unwrap();
        });
        let (y2, c2) = (y.clone(), c.clone());
        let other = std::thread::spawn(move || {
            go_rx.recv().unwrap();
            c2.flush()?;
            y2.add_(2.0)
        });
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let c3 = c.clone();
        std::thread::spawn(move || {
            drop(c3.batch());
            done_tx.send(()).unwrap();
        });
        let polled = done_rx.recv_timeout(std::time::Duration::from_secs(60));
        assert!(polled.is_ok(), "{}: the poll whose callback called the crate did not return", name(ctx));
        rx.recv_timeout(std::time::Duration::from_secs(60)).expect("the callback ran").unwrap();
        other.join().unwrap().unwrap();
        assert_eq!(x.download().unwrap().to_vec::<f32>().unwrap(), vals(64, 101).iter().map(|v| v + 1.0).collect::<Vec<_>>(), "{}", name(ctx));
        assert_eq!(y.download().unwrap().to_vec::<f32>().unwrap(), vals(64, 102).iter().map(|v| v + 2.0).collect::<Vec<_>>(), "{}", name(ctx));
    }
}

/// A ReLU in place on a view of another type over a convolution's output (two wrappers of one
/// caller buffer, float32 and float16) is not the convolution's ReLU: it stays its own
/// dispatch, and a replay equals the eager calls (the fold compared storage and layout, not
/// the type, and replays applied the ReLU to the float32 sums).
#[test]
fn a_relu_of_another_types_view_does_not_fold_into_the_convolution() {
    use strided_wgpu::Layout;
    for ctx in contexts() {
        let Some((device, queue, info)) = common::gpu::own_device(ctx) else { continue };
        let mine = GpuContext::from_device(device.clone(), queue, &info);
        let shape = [2usize, 8, 10, 10];
        let buf = device.create_buffer(&wgpu::BufferDescriptor { label: Some("two types"), size: 1600 * 4, usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST, mapped_at_creation: false });
        let y32 = DeviceTensor::from_buffer(&mine, buf.clone(), DType::F32, Layout::contiguous(&shape).unwrap()).unwrap();
        let y16 = DeviceTensor::from_buffer(&mine, buf, DType::F16, Layout::contiguous(&shape).unwrap()).unwrap();
        let x = DeviceTensor::from_slice(&mine, &vals(1600, 31), &shape).unwrap();
        let w = DeviceTensor::from_slice(&mine, &vals(8 * 8 * 9, 32), &[8, 8, 3, 3]).unwrap();
        let o = Conv2dOptions { padding: (1, 1), ..Default::default() };
        let f = |x: &DeviceTensor| -> strided_wgpu::Result<DeviceTensor> {
            let mut b = mine.batch();
            b.conv2d_out_with(x, &w, None, &o, &y32, ConvKernel::Auto)?;
            b.submit()?;
            y16.relu_()?;
            Ok(y32.clone())
        };
        let conv_only = mine.capture(&[&x], || -> strided_wgpu::Result<DeviceTensor> { let mut b = mine.batch(); b.conv2d_out_with(&x, &w, None, &o, &y32, ConvKernel::Auto)?; b.submit()?; strided_wgpu::Result::Ok(y32.clone()) }).unwrap();
        let graph = mine.capture(&[&x], || f(&x)).unwrap();
        assert_eq!(graph.counts().dispatches, conv_only.counts().dispatches + 1, "{}: {:?}", name(ctx), graph.dispatches());
        let new = DeviceTensor::from_slice(&mine, &vals(1600, 33), &shape).unwrap();
        graph.replay_and_wait(&[&new]).unwrap();
        let replayed = bits(&y32);
        f(&new).unwrap();
        assert_eq!(replayed, bits(&y32), "{}: a replay and the eager calls", name(ctx));
    }
}

/// What a capture refuses besides downloads and replays (their work would run outside the
/// graph, or wait for work that has not run), each an `InvalidArgument` that leaves the
/// context working: a batch recording into the caller's encoder (its ops ran once when the
/// caller submitted, outside the graph; the capture's run-once work then ran before them); a
/// wait for a batch submitted in the capture (it returned `Ok` though nothing ran); a flush;
/// and a replay recorded into a batch (`Graph::replay` was refused, `Batch::replay` not).
#[test]
fn a_capture_refuses_work_outside_the_graph_and_waits() {
    let _serial = one_at_a_time();
    for ctx in contexts() {
        let p = params(ctx);
        let x = image(ctx, 41);
        let graph = ctx.capture(&[&x], || forward(&p, &x)).unwrap();
        let w = DeviceTensor::from_slice(ctx, &[1f32, 2.0, 3.0, 4.0], &[4]).unwrap();
        let mut enc = ctx.device().create_command_encoder(&Default::default());
        let r = ctx.capture(&[&w], || {
            let mut b = ctx.record_into(&mut enc);
            let t = b.mul(&w, 2.0)?;
            b.end().unwrap();
            w.add(&t)
        });
        assert!(matches!(&r, Err(Error::InvalidArgument { op: "mul", .. })), "{}: record_into in a capture: {:?}", name(ctx), r.err());
        drop(enc);
        let r = ctx.capture(&[&w], || {
            let mut b = ctx.batch();
            let y = b.add(&w, 1.0)?;
            b.submit_and_wait()?;
            Ok(y)
        });
        assert!(matches!(&r, Err(Error::InvalidArgument { op: "wait", .. })), "{}: a wait in a capture: {:?}", name(ctx), r.err());
        let r = ctx.capture(&[&w], || ctx.flush().map(drop));
        assert!(matches!(&r, Err(Error::InvalidArgument { op: "flush", .. })), "{}: a flush in a capture: {:?}", name(ctx), r.err());
        let r = ctx.capture(&[&x], || {
            let mut b = ctx.batch();
            b.replay(&graph, &[])?;
            b.submit().map(drop)
        });
        assert!(matches!(&r, Err(Error::InvalidArgument { op: "replay", .. })), "{}: a batch's replay in a capture: {:?}", name(ctx), r.err());
        // Outside a capture all of it works.
        let mut enc = ctx.device().create_command_encoder(&Default::default());
        let mut b = ctx.record_into(&mut enc);
        let t = b.mul(&w, 2.0).unwrap();
        b.end().unwrap();
        ctx.queue().submit([enc.finish()]);
        assert_eq!(t.download().unwrap().to_vec::<f32>().unwrap(), vec![2.0, 4.0, 6.0, 8.0], "{}", name(ctx));
        let mut b = ctx.batch();
        b.replay(&graph, &[]).unwrap();
        b.submit_and_wait().unwrap();
        ctx.flush().unwrap().wait().unwrap();
    }
}

/// Under `TuningPolicy::OnFirstCall` a capture measures nothing and runs each untuned class's
/// default; it now keeps that default as the class's choice, so the first eager call after it
/// does not measure and keep another kernel (it did): replays and eager calls give the same
/// bits. The kept defaults are neither listed as tuned choices nor saved. A profile of a graph
/// counts its passes and dispatches in `record_counts`.
#[test]
fn a_capture_keeps_the_defaults_it_ran_and_a_profile_is_counted() {
    use strided_wgpu::TuningPolicy;
    let _serial = one_at_a_time();
    for ctx in contexts() {
        let c = pollster::block_on(GpuContext::for_backends(ctx.adapter().backend.into())).unwrap();
        c.set_tuning_policy(TuningPolicy::OnFirstCall);
        let p = params(&c);
        let x = DeviceTensor::from_slice(&c, &vals(2 * 12 * 12 * 3, 51), &[2, 12, 12, 3]).unwrap();
        let graph = c.capture(&[&x], || forward(&p, &x)).unwrap();
        graph.replay_and_wait(&[]).unwrap();
        let (eager, _) = forward(&p, &x).unwrap();
        assert_eq!(bits(&graph.output().0), bits(&eager), "{}", name(ctx));
        let after = (c.tuned_conv_choices().len(), c.tuned_matmul_choices().len(), c.tuned_choices().len());
        assert_eq!(after, (0, 0, 0), "{}: the eager calls measured classes the capture had run", name(ctx));
        let saved = c.tuning_json("").unwrap();
        assert!(!saved.contains("Gemm") && !saved.contains("Direct") && !saved.contains("Blocked"), "{}: kept defaults saved: {saved}", name(ctx));
        if c.adapter().pass_timestamps {
            let before = c.record_counts();
            let times = graph.profile().unwrap();
            let d = c.record_counts() - before;
            assert_eq!((d.submits, d.passes, d.dispatches), (1, times.len() as u64, times.len() as u64), "{}: {d:?}", name(ctx));
        }
    }
}

/// A graph's run-once work (here a transpose of a weight, folded at capture) runs again before
/// a replay where the crate wrote a constant it read since: after an eager `mul_` of the
/// weight, and after another graph's replay that updates it, replays equal the eager calls
/// bit for bit (they read the stale transpose). A caller's buffer is never a constant: a
/// transpose of it runs at every replay, and sees the caller's `write_buffer`s (it ran once).
/// `x @ v^T`, the transpose of the weight `v` a contiguous copy (run-once work in a graph).
fn x_vt(x: &DeviceTensor, v: &DeviceTensor) -> strided_wgpu::Result<DeviceTensor> {
    x.matmul(&v.transpose(0, 1)?.contiguous(MemoryFormat::Contiguous)?)
}

/// An input x [6, 8] and a weight v [5, 8] (values from `seed` and `seed + 1`), and [`x_vt`]
/// captured over x, its transpose of v checked to be run-once work.
fn folded_transpose(ctx: &GpuContext, seed: u32) -> (DeviceTensor, DeviceTensor, strided_wgpu::Graph<DeviceTensor>) {
    let x = DeviceTensor::from_slice(ctx, &vals(6 * 8, seed), &[6, 8]).unwrap();
    let v = DeviceTensor::from_slice(ctx, &vals(5 * 8, seed + 1), &[5, 8]).unwrap();
    let graph = ctx.capture(&[&x], || x_vt(&x, &v)).unwrap();
    assert!(graph.constant_counts().dispatches + graph.constant_counts().transfers > 0, "{}: the transpose was not folded", name(ctx));
    (x, v, graph)
}

#[test]
fn replays_follow_writes_to_their_constants() {
    use strided_wgpu::Layout;
    let _serial = one_at_a_time();
    for ctx in contexts() {
        let (x, v, graph) = folded_transpose(ctx, 61);
        let forward = || x_vt(&x, &v);
        graph.replay_and_wait(&[]).unwrap();
        assert_eq!(bits(graph.output()), bits(&forward().unwrap()), "{}", name(ctx));
        v.mul_(2.0).unwrap();
        graph.replay_and_wait(&[]).unwrap();
        assert_eq!(bits(graph.output()), bits(&forward().unwrap()), "{}: after an eager write to the weight", name(ctx));
        // Another graph updates the weight at each replay.
        let update = ctx.capture(&[], || v.add_(0.5)).unwrap();
        update.replay_and_wait(&[]).unwrap();
        let mut b = ctx.batch();
        b.replay(&update, &[]).unwrap();
        b.replay(&graph, &[]).unwrap();
        b.submit_and_wait().unwrap();
        assert_eq!(bits(graph.output()), bits(&forward().unwrap()), "{}: after another graph's writes", name(ctx));
        // A caller's buffer: its transpose replays, and follows the caller's writes.
        let buf = ctx.device().create_buffer(&wgpu::BufferDescriptor { label: None, size: 5 * 8 * 4, usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC, mapped_at_creation: false });
        ctx.queue().write_buffer(&buf, 0, bytemuck::cast_slice(&vals(5 * 8, 63)));
        let f = DeviceTensor::from_buffer(ctx, buf.clone(), DType::F32, Layout::contiguous(&[5, 8]).unwrap()).unwrap();
        let graph = ctx.capture(&[], || f.transpose(0, 1)?.contiguous(MemoryFormat::Contiguous)?.mul(2.0)).unwrap();
        ctx.queue().write_buffer(&buf, 0, bytemuck::cast_slice(&vals(5 * 8, 64)));
        graph.replay_and_wait(&[]).unwrap();
        let want = f.transpose(0, 1).unwrap().contiguous(MemoryFormat::Contiguous).unwrap().mul(2.0).unwrap();
        assert_eq!(bits(graph.output()), bits(&want), "{}: a caller's buffer", name(ctx));
    }
}

/// A write to a graph's constant on one thread racing replays on another: after the two are
/// done, a replay equals the eager calls. The crate counted a write as it encoded it and
/// submitted it later, outside the lock that orders its submissions: a replay on the other
/// thread in between saw the count, ran the run-once work on the old weight, and was submitted
/// first; every later replay then kept the old transpose. Rounds of one write against one
/// replay, each checked (eager calls submitted each, so that each write is its own command
/// buffer).
#[test]
fn a_write_on_another_thread_racing_a_replay_is_seen_by_the_next_replays() {
    let _serial = one_at_a_time();
    for ctx in contexts() {
        let Some(c) = doomed_device(ctx) else { continue };
        c.set_submit_policy(SubmitPolicy::EachCall).unwrap();
        let (x, v, graph) = folded_transpose(&c, 81);
        let forward = || x_vt(&x, &v);
        for round in 0..300 {
            let start = std::sync::Barrier::new(2);
            std::thread::scope(|s| {
                s.spawn(|| {
                    start.wait();
                    v.mul_(-1.0).unwrap();
                });
                s.spawn(|| {
                    start.wait();
                    graph.replay(&[]).unwrap();
                });
            });
            graph.replay_and_wait(&[]).unwrap();
            assert_eq!(bits(graph.output()), bits(&forward().unwrap()), "{}: round {round}", name(ctx));
        }
    }
}

/// A buffer that a capture made and dropped unrecorded, taken from the pool by another thread,
/// is that thread's tensor, not the graph's own: an in-place add into it, captured, is work of
/// every replay (it was noted as made in the capture, so the add was run-once work: run at
/// capture, never by a replay).
#[test]
fn a_buffer_the_capture_dropped_and_another_thread_took_is_not_the_graphs() {
    let _serial = one_at_a_time();
    for ctx in contexts() {
        let Some(c) = doomed_device(ctx) else { continue };
        let w = DeviceTensor::from_slice(&c, &vals(777, 91), &[777]).unwrap();
        let mut theirs = None;
        let graph = c
            .capture(&[], || {
                drop(DeviceTensor::empty(&c, &[777], DType::F32, MemoryFormat::Contiguous)?);
                let t = std::thread::scope(|s| s.spawn(|| DeviceTensor::zeros(&c, &[777], DType::F32, MemoryFormat::Contiguous)).join().unwrap())?;
                t.add_(&w)?;
                theirs = Some(t);
                Ok::<_, Error>(())
            })
            .unwrap();
        let t = theirs.unwrap();
        graph.replay_and_wait(&[]).unwrap();
        graph.replay_and_wait(&[]).unwrap();
        let want: Vec<f32> = vals(777, 91).iter().map(|v| v + v).collect();
        assert_eq!(t.download().unwrap().to_vec::<f32>().unwrap(), want, "{}: two replays add twice", name(ctx));
    }
}

/// A replay in a command buffer the caller submits (`Batch::finish`, `record_into`) runs its
/// graph's run-once work whenever it runs: the crate cannot see whether or when that command
/// buffer runs. A run-once work that was encoded but never submitted left later replays
/// reading the old packing, and a write submitted ahead of the finished replay was not seen.
#[test]
fn replays_the_caller_submits_leave_no_stale_constants() {
    let _serial = one_at_a_time();
    for ctx in contexts() {
        let (x, v, graph) = folded_transpose(ctx, 71);
        let forward = || x_vt(&x, &v);
        // A write, then a replay finished into a command buffer that is dropped unsubmitted.
        v.mul_(2.0).unwrap();
        let mut b = ctx.batch();
        b.replay(&graph, &[]).unwrap();
        drop(b.finish().unwrap());
        graph.replay_and_wait(&[]).unwrap();
        assert_eq!(bits(graph.output()), bits(&forward().unwrap()), "{}: after a finished replay never submitted", name(ctx));
        // The same through the caller's encoder, dropped.
        v.mul_(2.0).unwrap();
        let mut enc = ctx.device().create_command_encoder(&Default::default());
        let mut b = ctx.record_into(&mut enc);
        b.replay(&graph, &[]).unwrap();
        drop(b);
        drop(enc);
        graph.replay_and_wait(&[]).unwrap();
        assert_eq!(bits(graph.output()), bits(&forward().unwrap()), "{}: after a recorded replay never submitted", name(ctx));
        // A replay finished before a write that the queue runs ahead of it reads the write.
        let mut b = ctx.batch();
        b.replay(&graph, &[]).unwrap();
        let finished = b.finish().unwrap();
        v.mul_(2.0).unwrap();
        ctx.flush().unwrap().wait().unwrap();
        ctx.queue().submit([finished]);
        ctx.flush().unwrap().wait().unwrap();
        assert_eq!(bits(graph.output()), bits(&forward().unwrap()), "{}: a finished replay submitted after a write", name(ctx));
    }
}

/// A write in a command buffer the caller submits (`Batch::finish`, `record_into`) is seen by
/// every replay until that work is done: a replay between its encoding and the caller's submit
/// noted the write as seen (it was counted when encoded), and the replays after the submit read
/// the old packing. An in-place update of a tensor uploaded inside the closure is not run-once
/// work (run again, it updated the tensor again), a batch holding a replay cannot be submitted
/// inside a capture (the nested graph missed the writes held back before the outer replay), and
/// an input that reaches an element twice is refused at capture (every replay with inputs
/// failed).
#[test]
fn writes_the_caller_submits_uploads_nested_replays_and_overlapping_inputs() {
    let _serial = one_at_a_time();
    for ctx in contexts() {
        let (x, v, graph) = folded_transpose(ctx, 81);
        let forward = || x_vt(&x, &v);
        // Finished, replayed before the caller submits it, then replayed after.
        let mut b = ctx.batch();
        b.mul_(&v, 2.0).unwrap();
        let cb = b.finish().unwrap();
        graph.replay_and_wait(&[]).unwrap();
        ctx.queue().submit([cb]);
        graph.replay_and_wait(&[]).unwrap();
        assert_eq!(bits(graph.output()), bits(&forward().unwrap()), "{}: a write in a finished batch submitted after a replay", name(ctx));
        graph.replay_and_wait(&[]).unwrap();
        assert_eq!(bits(graph.output()), bits(&forward().unwrap()), "{}: the replay after", name(ctx));
        // The same in the caller's encoder.
        let mut enc = ctx.device().create_command_encoder(&Default::default());
        let mut b = ctx.record_into(&mut enc);
        b.mul_(&v, 0.5).unwrap();
        drop(b);
        graph.replay_and_wait(&[]).unwrap();
        ctx.queue().submit([enc.finish()]);
        graph.replay_and_wait(&[]).unwrap();
        assert_eq!(bits(graph.output()), bits(&forward().unwrap()), "{}: a write recorded into the caller's encoder", name(ctx));

        // An in-place update of a tensor uploaded in the closure (written once, at capture)
        // runs at every replay, as the captured calls do: two replays add w twice, whether or
        // not w was written between them (it was run-once work, added again only after a
        // write of w).
        let w = DeviceTensor::from_slice(ctx, &vals(8, 83), &[8]).unwrap();
        let y = DeviceTensor::from_slice(ctx, &vals(8, 84), &[8]).unwrap();
        let graph = ctx
            .capture(&[&y], || -> strided_wgpu::Result<DeviceTensor> {
                let t = DeviceTensor::from_slice(ctx, &[1f32; 8], &[8])?;
                t.add_(&w)?;
                y.mul(&t)
            })
            .unwrap();
        let t = DeviceTensor::from_slice(ctx, &[1f32; 8], &[8]).unwrap();
        for replay in 0..3 {
            graph.replay_and_wait(&[]).unwrap();
            t.add_(&w).unwrap();
            assert_eq!(bits(graph.output()), bits(&y.mul(&t).unwrap()), "{}: an uploaded tensor updated in place, replay {replay}", name(ctx));
            if replay == 1 {
                w.mul_(2.0).unwrap();
            }
        }

        // A batch holding a replay, submitted inside a capture.
        let mut b = ctx.batch();
        b.replay(&graph, &[]).unwrap();
        let nested = ctx.capture(&[], || b.submit().map(drop));
        assert!(matches!(nested, Err(Error::InvalidArgument { .. })), "{}: a replay nested in a capture: {:?}", name(ctx), nested.as_ref().err());

        // An expanded input.
        let e = x.select(0, 0).unwrap().expand(&[6, 8]).unwrap();
        let r = ctx.capture(&[&e], || e.mul(2.0));
        assert!(matches!(r, Err(Error::Overlap { op: "capture", .. })), "{}: an input reaching an element twice: {:?}", name(ctx), r.as_ref().err());
    }
}
