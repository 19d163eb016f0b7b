//! The crate inside a host program: recordings hold their operands until the GPU is done, host
//! tensors copy both ways on two threads, the host's error handlers and device stay the host's,
//! a lost device is its own error, the async API runs on an executor that never blocks, tuning
//! happens outside recordings and persists, and the buffer pool can be capped and trimmed.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use common::gpu::{contexts, name, own_device, spin};
use strided_wgpu::{Conv2dOptions, DeviceTensor, DType, Elementwise, Error, GpuContext, HostTensor, Layout, MemoryFormat, Reduce, ShapeOps, Strided, TuningPolicy};
use strided_wgpu::advanced::GpuTimer;
use strided_wgpu::ops::{conv1x1, conv2d, Conv1x1Options};
use strided_wgpu::advanced::CopyPath;
use strided_wgpu::advanced::MatmulKernel;
use strided_wgpu::advanced::internal::addmm_plan;

/// The tests of this file run one at a time. Each makes devices of its own, and several destroy
/// theirs; run side by side on NVIDIA's Vulkan driver (580.159, an H200) they hung in 3 of 5
/// runs, every thread waiting inside the driver (`vkDestroyDevice`, `vkDestroyQueryPool`,
/// `vkCreateFence` of a new device, queue submits), none in the crate's locks. Keeping only the
/// destroys apart was not enough (the fifth run hung among tests that create, use and drop
/// devices); the same binary passed twice when run alone.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// Installs the host's own uncaptured-error handler, which counts the errors it sees.
fn count_host_errors(device: &wgpu::Device) -> Arc<AtomicUsize> {
    let seen = Arc::new(AtomicUsize::new(0));
    let s = seen.clone();
    device.on_uncaptured_error(Arc::new(move |_: wgpu::Error| {
        s.fetch_add(1, Ordering::SeqCst);
    }));
    seen
}

#[test]
fn a_batch_holds_its_operands_until_the_work_is_done() {
    let _serial = one_at_a_time();
    // Record dst.copy_(src), drop src, upload another tensor of src's size (which would take
    // src's pooled buffer, its upload running before the batch), then submit.
    let n = 65_536;
    for ctx in contexts() {
        let want: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let src = DeviceTensor::from_slice(ctx, &want, &[256, 256]).unwrap();
        let dst = DeviceTensor::zeros(ctx, &[256, 256], DType::F32, MemoryFormat::Contiguous).unwrap();
        let mut batch = ctx.batch();
        batch.copy_(&dst, &src.transpose(0, 1).unwrap().transpose(0, 1).unwrap()).unwrap();
        drop(src);
        let other = DeviceTensor::from_slice(ctx, &vec![-1f32; n], &[256, 256]).unwrap();
        batch.submit_and_wait().unwrap();
        let got = dst.download().unwrap().to_vec::<f32>().unwrap();
        let wrong = got.iter().zip(&want).filter(|(a, b)| a != b).count();
        assert_eq!(wrong, 0, "{}: {wrong} of {n} elements hold another tensor's values", name(ctx));
        assert_eq!(other.download().unwrap().to_vec::<f32>().unwrap(), vec![-1f32; n]);
    }
}

#[test]
fn host_copies_both_ways_on_two_threads_do_not_deadlock() {
    let _serial = one_at_a_time();
    let a = HostTensor::from_vec(vec![1f32; 1 << 16], &[1 << 16]).unwrap();
    let b = HostTensor::from_vec(vec![2f32; 1 << 16], &[1 << 16]).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    for (x, y) in [(a.clone(), b.clone()), (b.clone(), a.clone())] {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for _ in 0..2000 {
                x.copy_(&y).unwrap();
            }
            tx.send(()).unwrap();
        });
    }
    for _ in 0..2 {
        rx.recv_timeout(std::time::Duration::from_secs(60)).expect("a.copy_(&b) and b.copy_(&a) on two threads deadlocked");
    }
}

#[test]
fn the_hosts_error_handler_stays_and_its_errors_are_not_ours() {
    let _serial = one_at_a_time();
    for ctx in contexts() {
        let Some((device, queue, info)) = own_device(ctx) else { continue };
        let seen = count_host_errors(&device);
        let mine = GpuContext::from_device(device.clone(), queue, &info);
        // The host's own invalid work (a mappable storage buffer) reaches the host's handler.
        let _bad = device.create_buffer(&wgpu::BufferDescriptor { label: Some("host's bad buffer"), size: 64, usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::STORAGE, mapped_at_creation: false });
        assert_eq!(seen.load(Ordering::SeqCst), 1, "{}: the host's handler did not see the host's error", name(ctx));
        // ... and never fails a later call of the crate.
        let t = DeviceTensor::from_slice(&mine, &[1f32, 2., 3., 4., 5., 6.], &[2, 3]).unwrap();
        let out = t.transpose(0, 1).unwrap().contiguous(MemoryFormat::Contiguous).unwrap();
        assert_eq!(out.download().unwrap().to_vec::<f32>().unwrap(), vec![1., 4., 2., 5., 3., 6.]);
        // The crate's own bad input is the crate's typed error, not the host's.
        let e = DeviceTensor::from_slice(&mine, &[0f32; 6], &[2, 3]).unwrap().copy_with(&t, CopyPath::TransposeTile { wg: 256, tile: 32 }).unwrap_err();
        assert!(matches!(e, Error::Unsupported { op: "copy_", .. }), "{e}");
        assert_eq!(seen.load(Ordering::SeqCst), 1, "{}: the crate's work reached the host's handler", name(ctx));
    }
}

#[test]
fn a_device_the_crate_created_has_a_handler_that_never_panics() {
    let _serial = one_at_a_time();
    for ctx in contexts() {
        let c = pollster::block_on(GpuContext::for_backends(ctx.adapter().backend.into())).unwrap();
        // The caller's own invalid work on the crate's device, outside any error scope: wgpu's
        // default handler panics.
        let _bad = c.device().create_buffer(&wgpu::BufferDescriptor { label: Some("caller's bad buffer"), size: 64, usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::STORAGE, mapped_at_creation: false });
        // The crate's calls go on, and their errors are still theirs.
        let t = DeviceTensor::from_slice(&c, &[1f32, 2., 3., 4., 5., 6.], &[2, 3]).unwrap();
        assert_eq!(t.transpose(0, 1).unwrap().download().unwrap().to_vec::<f32>().unwrap(), vec![1., 4., 2., 5., 3., 6.], "{}", name(ctx));
        let e = DeviceTensor::from_slice(&c, &[0f32; 6], &[2, 3]).unwrap().copy_with(&t, CopyPath::TransposeTile { wg: 256, tile: 32 }).unwrap_err();
        assert!(matches!(e, Error::Unsupported { op: "copy_", .. }), "{e}");
    }
}

#[test]
fn every_call_after_device_loss_returns_device_lost() {
    let _serial = one_at_a_time();
    // Each call is the first after the loss on a context of its own (no call learns of the
    // loss from an earlier one), then the loss sticks. The error names the call (an eager
    // op's, not its submission's).
    type Call = fn(&GpuContext, &DeviceTensor, &DeviceTensor, &DeviceTensor) -> Result<(), Error>;
    let calls: [(&str, &str, Call); 12] = [
        ("copy_ (dense)", "copy_", |_, x, _, out| out.copy_(&x.select(0, 0).unwrap())),
        ("copy_ (transpose)", "copy_", |_, x, _, out| out.copy_(&x.select(0, 0).unwrap().permute(&[1, 2, 0]).unwrap())),
        ("add_ into out=", "add", |_, x, _, out| out.add_(&x.select(0, 0).unwrap())),
        ("sum into out=", "sum", |_, x, _, out| x.sum_out(0, false, out)),
        ("download", "download", |_, x, _, _| x.download().map(|_| ())),
        ("pad", "pad", |_, x, _, _| x.pad(&[1, 1], strided_wgpu::ops::PadMode::Constant(0.0)).map(drop)),
        ("cat", "cat", |_, x, _, _| strided_wgpu::ops::cat(&[x, x], 0).map(drop)),
        ("from_slice", "from_slice", |c, _, _, _| DeviceTensor::from_slice(c, &[1f32; 4], &[4]).map(|_| ())),
        ("zeros", "zeros", |c, _, _, _| DeviceTensor::zeros(c, &[4], DType::F32, MemoryFormat::Contiguous).map(|_| ())),
        ("conv1x1", "conv1x1", |_, x, w, _| conv1x1(x, w, None, &Conv1x1Options::default()).map(|_| ())),
        ("download_async", "download", |_, x, _, _| spin(x.download_async()).map(|_| ())),
        ("Batch::submit", "submit", |c, x, _, out| {
            let mut b = c.batch();
            b.copy_(out, &x.select(0, 0).unwrap())?;
            b.submit().map(|_| ())
        }),
    ];
    for ctx in contexts() {
        for (what, op, call) in calls {
            let Some((device, queue, info)) = own_device(ctx) else { continue };
            let mine = GpuContext::from_device(device.clone(), queue, &info);
            let x = DeviceTensor::from_slice(&mine, &(0..64).map(|i| i as f32).collect::<Vec<_>>(), &[1, 4, 4, 4]).unwrap();
            let w = DeviceTensor::from_slice(&mine, &[1f32; 16], &[4, 4]).unwrap();
            let out = DeviceTensor::zeros(&mine, &[4, 4, 4], DType::F32, MemoryFormat::Contiguous).unwrap();
            device.destroy();
            let r = call(&mine, &x, &w, &out);
            assert!(matches!(r, Err(Error::DeviceLost { op: o, .. }) if o == op), "{} {what}: {r:?}, expected DeviceLost naming {op}", name(ctx));
            let again = DeviceTensor::from_slice(&mine, &[1f32; 4], &[4]).map(|_| ());
            assert!(matches!(again, Err(Error::DeviceLost { .. })), "{} after {what}: {again:?}", name(ctx));
        }
    }
}

#[test]
fn the_async_api_runs_on_an_executor_that_never_blocks() {
    let _serial = one_at_a_time();
    for ctx in contexts() {
        let h = HostTensor::from_vec((0..2 * 8 * 6 * 4).map(|i| i as f32 * 0.5 - 7.0).collect(), &[2, 8, 6, 4]).unwrap();
        let x = DeviceTensor::upload(ctx, &h).unwrap();
        let nhwc = DeviceTensor::empty(ctx, &[2, 8, 6, 4], DType::F32, MemoryFormat::ChannelsLast).unwrap();
        spin(async {
            ctx.tune_copy_async(&nhwc, &x).await.unwrap();
            let mut b = ctx.batch();
            b.copy_(&nhwc, &x).unwrap();
            b.submit().unwrap().finished().await.unwrap();
            let got = nhwc.download_async().await.unwrap();
            assert_eq!(got.to_vec::<f32>().unwrap(), h.to_vec::<f32>().unwrap(), "{}", name(ctx));
            let mut raw = vec![0f32; nhwc.storage_len()];
            nhwc.as_strided(&[nhwc.storage_len()], &[1], 0).unwrap().download_into_async(&mut raw).await.unwrap();
            let want = h.contiguous(MemoryFormat::ChannelsLast).unwrap();
            assert_eq!(raw, want.as_strided(&[want.storage_len()], &[1], 0).unwrap().to_vec::<f32>().unwrap());
            let timer = GpuTimer::new(ctx).unwrap();
            let ms = timer.time_async(|b| b.copy_(&nhwc, &x)).await.unwrap();
            assert!(ms.is_finite() && ms > 0.0, "{}: a copy took {ms} ms", name(ctx));
            let w = DeviceTensor::from_slice(ctx, &(0..5 * 8).map(|i| i as f32 * 0.1).collect::<Vec<_>>(), &[5, 8]).unwrap();
            ctx.tune_conv1x1_async(&nhwc, &w, None, &Conv1x1Options::default()).await.unwrap();
            assert!(!ctx.tuned_conv_choices().is_empty());
        });
    }
}

#[test]
fn recordings_never_tune_and_tuning_persists() {
    let _serial = one_at_a_time();
    for ctx in contexts() {
        // A context of its own, so that no other test has tuned its classes.
        let Some((device, queue, info)) = own_device(ctx) else { continue };
        let fresh = GpuContext::from_device(device, queue, &info);
        let x = DeviceTensor::from_slice(&fresh, &(0..3 * 40 * 24).map(|i| i as f32).collect::<Vec<_>>(), &[3, 40, 24]).unwrap();
        let out = DeviceTensor::empty(&fresh, &[3, 24, 40], DType::F32, MemoryFormat::Contiguous).unwrap();
        // Recording an untuned transpose runs the default kernel and measures nothing.
        let mut b = fresh.batch();
        b.copy_(&out, &x.transpose(1, 2).unwrap()).unwrap();
        b.submit_and_wait().unwrap();
        assert!(fresh.tuned_choices().is_empty(), "{}: a recording tuned", name(ctx));
        assert_eq!(out.download().unwrap().to_vec::<f32>().unwrap(), x.download().unwrap().transpose(1, 2).unwrap().to_vec::<f32>().unwrap());
        // Tuning outside the recording measures once, and the file carries it to another context.
        assert!(fresh.tune_copy(&out, &x.transpose(1, 2).unwrap()).unwrap());
        assert!(!fresh.tune_copy(&out, &x.transpose(1, 2).unwrap()).unwrap());
        let path = std::env::temp_dir().join(format!("strided-wgpu-tuning-{}-{:?}.json", std::process::id(), info.backend));
        let _ = std::fs::remove_file(&path);
        fresh.save_tuning(&path).unwrap();
        let Some((device, queue, info)) = own_device(ctx) else { continue };
        let loaded = GpuContext::from_device(device, queue, &info);
        assert_eq!(loaded.load_tuning(&path).unwrap(), 1);
        assert_eq!(loaded.tuned_choices(), fresh.tuned_choices());
        let y = DeviceTensor::from_slice(&loaded, &(0..3 * 40 * 24).map(|i| i as f32).collect::<Vec<_>>(), &[3, 40, 24]).unwrap();
        let out2 = DeviceTensor::empty(&loaded, &[3, 24, 40], DType::F32, MemoryFormat::Contiguous).unwrap();
        assert!(!loaded.tune_copy(&out2, &y.transpose(1, 2).unwrap()).unwrap(), "{}: a loaded class was measured again", name(ctx));
        // A class with a choice keeps it: the file again takes nothing.
        assert_eq!(loaded.load_tuning(&path).unwrap(), 0, "{}", name(ctx));
        // A hand-edited file (class keys pretty-printed) keys its classes as the tuner does:
        // they were counted as taken and never matched a call.
        let mut file: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let classes = file[0]["choices"]["copy.transpose"].as_object_mut().unwrap();
        let pretty: serde_json::Map<String, serde_json::Value> = classes.iter().map(|(k, v)| (serde_json::to_string_pretty(&serde_json::from_str::<serde_json::Value>(k).unwrap()).unwrap(), v.clone())).collect();
        assert!(pretty.keys().all(|k| k.contains('\n')));
        *classes = pretty;
        let Some((device, queue, info)) = own_device(ctx) else { continue };
        let edited = GpuContext::from_device(device, queue, &info);
        assert_eq!(edited.load_tuning_json(&file.to_string()).unwrap(), 1);
        assert_eq!(edited.tuned_choices(), fresh.tuned_choices());
        let z = DeviceTensor::from_slice(&edited, &(0..3 * 40 * 24).map(|i| i as f32).collect::<Vec<_>>(), &[3, 40, 24]).unwrap();
        let out3 = DeviceTensor::empty(&edited, &[3, 24, 40], DType::F32, MemoryFormat::Contiguous).unwrap();
        assert!(!edited.tune_copy(&out3, &z.transpose(1, 2).unwrap()).unwrap(), "{}: an edited file's class did not match its calls", name(ctx));
        // Another adapter's or crate version's section is not taken; garbage is a typed error.
        let text = std::fs::read_to_string(&path).unwrap().replace(&info.name, "another adapter");
        assert_eq!(loaded.load_tuning_json(&text).unwrap(), 0);
        assert!(matches!(loaded.load_tuning_json("{not json"), Err(Error::Tuning { .. })));
        // A section without the tuning format in its version (written before it: its classes
        // may mean others) is not taken; another version's section of another shape neither
        // fails the load nor is lost by a save over the file; a list holding a non-section is
        // not a tuning file.
        let original = std::fs::read_to_string(&path).unwrap();
        let mut old: serde_json::Value = serde_json::from_str(&original).unwrap();
        assert!(old[0]["crate_version"].as_str().unwrap().contains("+tuning"), "a saved section names its format");
        old[0]["crate_version"] = serde_json::Value::String(env!("CARGO_PKG_VERSION").to_string());
        let Some((device, queue, info)) = own_device(ctx) else { continue };
        let unformatted = GpuContext::from_device(device, queue, &info);
        assert_eq!(unformatted.load_tuning_json(&old.to_string()).unwrap(), 0, "{}: a section of format 0", name(ctx));
        assert!(matches!(unformatted.load_tuning_json("[1, \"x\"]"), Err(Error::Tuning { .. })), "{}: a list of non-sections", name(ctx));
        let foreign = serde_json::json!({"adapter": "another adapter", "crate_version": "9.9.9+tuning99", "choices": {"copy.transpose": {"a class": {"of": "another shape"}}}});
        let mut mixed: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        mixed.as_array_mut().unwrap().insert(0, foreign.clone());
        assert_eq!(unformatted.load_tuning_json(&mixed.to_string()).unwrap(), 1, "{}: beside a section of another shape", name(ctx));
        std::fs::write(&path, mixed.to_string()).unwrap();
        fresh.save_tuning(&path).unwrap();
        let saved: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert!(saved.as_array().unwrap().contains(&foreign), "{}: a save dropped another version's section", name(ctx));
        assert_eq!(saved.as_array().unwrap().len(), 2, "{}", name(ctx));
        std::fs::write(&path, original).unwrap();
        // A choice the tuner never compares for its class (a zero workgroup size; a Vec4 path,
        // whose words per workgroup overflow besides) is refused at load, naming it, and nothing
        // of the file is taken.
        for bad in [CopyPath::TransposeTile { wg: 0, tile: 32 }, CopyPath::Vec4 { wg: 1 << 16, wpt: 1 << 16 }] {
            let mut file: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            for choice in file[0]["choices"]["copy.transpose"].as_object_mut().unwrap().values_mut() {
                *choice = serde_json::Value::String(serde_json::to_string(&bad).unwrap());
            }
            let Some((device, queue, info)) = own_device(ctx) else { continue };
            let strict = GpuContext::from_device(device, queue, &info);
            let e = strict.load_tuning_json(&file.to_string()).unwrap_err();
            assert!(matches!(e, Error::Tuning { op: "load_tuning", .. }) && e.to_string().contains("copy.transpose"), "{}: {e}", name(ctx));
            assert!(strict.tuned_choices().is_empty(), "{}", name(ctx));
        }
        // A class no call makes (elements of 0 or 32 bytes, the vec4 kernels' words of them
        // divided by zero) is refused the same way, not a panic.
        for bytes in [0, 32] {
            let mut file: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let classes = file[0]["choices"]["copy.transpose"].as_object_mut().unwrap();
            let choice = classes.values().next().unwrap().clone();
            *classes = serde_json::Map::from_iter([(format!("{{\"element_bytes\":{bytes},\"vec4\":true,\"narrow\":false,\"log2\":[1,1,0]}}"), choice)]);
            let Some((device, queue, info)) = own_device(ctx) else { continue };
            let strict = GpuContext::from_device(device, queue, &info);
            let e = strict.load_tuning_json(&file.to_string()).unwrap_err();
            assert!(matches!(e, Error::Tuning { op: "load_tuning", .. }), "{}: {e}", name(ctx));
        }
        let _ = std::fs::remove_file(&path);
    }
}

/// A tensor past the adapter's buffer size is an error naming the call that asked for it.
#[test]
fn allocations_past_a_buffer_name_their_call() {
    for ctx in contexts() {
        let huge = [1usize << 40];
        for (op, r) in [("empty", DeviceTensor::empty(ctx, &huge, DType::F32, MemoryFormat::Contiguous)), ("zeros", DeviceTensor::zeros(ctx, &huge, DType::F32, MemoryFormat::Contiguous))] {
            match r {
                Err(Error::Limit { op: got, limit: "max_buffer_size", .. }) => assert_eq!(got, op, "{}", name(ctx)),
                other => panic!("{}: {op}: {:?}", name(ctx), other.map(|_| ())),
            }
        }
    }
}

#[test]
fn caller_buffers_are_checked_and_never_pooled() {
    let _serial = one_at_a_time();
    for ctx in contexts() {
        let d = ctx.device();
        let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
        let buf = d.create_buffer(&wgpu::BufferDescriptor { label: Some("caller's"), size: 64, usage, mapped_at_creation: false });
        let e = DeviceTensor::from_buffer(ctx, buf.clone(), DType::F32, Layout::contiguous(&[17]).unwrap()).unwrap_err();
        assert!(matches!(e, Error::OutOfBounds { op: "from_buffer", .. }), "{e}");
        let uniform = d.create_buffer(&wgpu::BufferDescriptor { label: None, size: 64, usage: wgpu::BufferUsages::UNIFORM, mapped_at_creation: false });
        assert!(matches!(DeviceTensor::from_buffer(ctx, uniform, DType::F32, Layout::contiguous(&[16]).unwrap()), Err(Error::InvalidArgument { .. })));
        let t = DeviceTensor::from_buffer(ctx, buf.clone(), DType::F32, Layout::contiguous(&[4, 4]).unwrap()).unwrap();
        t.copy_(&DeviceTensor::from_slice(ctx, &(0..16).map(|i| i as f32).collect::<Vec<_>>(), &[4, 4]).unwrap().transpose(0, 1).unwrap()).unwrap();
        let got = t.download().unwrap().to_vec::<f32>().unwrap();
        assert_eq!(got, (0..16).map(|i| ((i % 4) * 4 + i / 4) as f32).collect::<Vec<_>>());
        // Dropping the tensor leaves the caller's buffer usable, and out of the pool.
        drop(t);
        ctx.trim_pool();
        let again = DeviceTensor::from_buffer(ctx, buf.clone(), DType::F32, Layout::contiguous(&[16]).unwrap()).unwrap();
        assert_eq!(again.download().unwrap().to_vec::<f32>().unwrap(), got);
        // Two views of the buffer as different types overlap by bytes, not element indices:
        // f32 elements 4..8 (bytes 16..32) and u8 elements 4..8 (bytes 4..8) are disjoint...
        let bytes = DeviceTensor::from_buffer(ctx, buf.clone(), DType::U8, Layout::contiguous(&[64]).unwrap()).unwrap();
        bytes.copy_(&DeviceTensor::from_slice(ctx, &(0..64).map(|i| i as u8).collect::<Vec<_>>(), &[64]).unwrap()).unwrap();
        let f = DeviceTensor::from_buffer(ctx, buf.clone(), DType::F32, Layout::new(vec![4], vec![1], 4).unwrap()).unwrap();
        let u = DeviceTensor::from_buffer(ctx, buf.clone(), DType::U8, Layout::new(vec![4], vec![1], 4).unwrap()).unwrap();
        f.copy_(&u).unwrap();
        assert_eq!(f.download().unwrap().to_vec::<f32>().unwrap(), vec![4.0, 5.0, 6.0, 7.0], "{}", name(ctx));
        // ... while f32 elements 0..4 (bytes 0..16) hold them: an error, on every path, and the
        // buffer keeps its bytes.
        let f0 = DeviceTensor::from_buffer(ctx, buf.clone(), DType::F32, Layout::contiguous(&[4]).unwrap()).unwrap();
        let before = bytes.download().unwrap().to_vec::<u8>().unwrap();
        for path in [CopyPath::Auto, CopyPath::Gather { wg: 64, ept: 4 }] {
            let e = f0.copy_with(&u, path).unwrap_err();
            assert!(matches!(e, Error::Overlap { op: "copy_", .. }), "{}: {path:?}: {e}", name(ctx));
        }
        assert_eq!(bytes.download().unwrap().to_vec::<u8>().unwrap(), before, "{}", name(ctx));
        // The same bytes as f32 and as i32 (one size): every element converts in place, as
        // PyTorch's `a.view(torch.int32).copy_(a)`.
        let vals = [1.5f32, -2.75, 1e9, -0.0];
        f0.copy_(&DeviceTensor::from_slice(ctx, &vals, &[4]).unwrap()).unwrap();
        let i0 = DeviceTensor::from_buffer(ctx, buf.clone(), DType::I32, Layout::contiguous(&[4]).unwrap()).unwrap();
        i0.copy_(&f0).unwrap();
        assert_eq!(i0.download().unwrap().to_vec::<i32>().unwrap(), vec![1, -2, 1_000_000_000, 0], "{}", name(ctx));
    }
}

/// A reduction or scan into a view of its input's buffer that the input does not reach reads
/// a copy of the input (one dispatch cannot bind a buffer for reading and writing): the host's
/// answers, on every adapter. Views of one buffer as types of different sizes overlap by
/// their bytes: an i32 `out` over an i8 input's bytes is an error, and the buffer keeps them.
#[test]
fn reductions_and_scans_into_the_inputs_buffer() {
    let _serial = one_at_a_time();
    for ctx in contexts() {
        let vals: Vec<f32> = (0..40).map(|i| (i * 7 % 11) as f32 * 0.5 - 2.0).collect();
        let m = DeviceTensor::from_slice(ctx, &vals, &[4, 10]).unwrap();
        let h = HostTensor::from_vec(vals.clone(), &[4, 10]).unwrap();
        // Columns 0..8 summed into column 9; softmax of rows 0..2 into rows 2..4.
        m.narrow(1, 0, 8).unwrap().sum_out(1, false, &m.select(1, 9).unwrap()).unwrap();
        h.narrow(1, 0, 8).unwrap().sum_out(1, false, &h.select(1, 9).unwrap()).unwrap();
        m.narrow(0, 0, 2).unwrap().softmax_out(1, &m.narrow(0, 2, 2).unwrap()).unwrap();
        h.narrow(0, 0, 2).unwrap().softmax_out(1, &h.narrow(0, 2, 2).unwrap()).unwrap();
        let (got, want) = (m.download().unwrap().to_vec::<f32>().unwrap(), h.to_vec::<f32>().unwrap());
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!((g - w).abs() <= 1e-5 * (1.0 + w.abs()), "{}: element {i}: {g} against {w}", name(ctx));
        }
        let d = ctx.device();
        let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
        let buf = d.create_buffer(&wgpu::BufferDescriptor { label: Some("caller's"), size: 128, usage, mapped_at_creation: false });
        let bytes = DeviceTensor::from_buffer(ctx, buf.clone(), DType::I8, Layout::contiguous(&[128]).unwrap()).unwrap();
        bytes.copy_(&DeviceTensor::from_slice(ctx, &(0..128).map(|i| (i % 7) as i8).collect::<Vec<_>>(), &[128]).unwrap()).unwrap();
        // i8 [4, 16] at bytes 64..128; i32 [4] at bytes 64..80 (elements 16..20): the bytes overlap.
        let x = DeviceTensor::from_buffer(ctx, buf.clone(), DType::I8, Layout::new(vec![4, 16], vec![16, 1], 64).unwrap()).unwrap();
        let out = DeviceTensor::from_buffer(ctx, buf.clone(), DType::I32, Layout::new(vec![4], vec![1], 16).unwrap()).unwrap();
        let before = bytes.download().unwrap().to_vec::<i8>().unwrap();
        let e = x.sum_out(1, false, &out).unwrap_err();
        assert!(matches!(e, Error::Overlap { .. }), "{}: {e}", name(ctx));
        let part = x.narrow(0, 0, 2).unwrap().narrow(1, 0, 8).unwrap();
        let e = part.cumsum_out(1, &DeviceTensor::from_buffer(ctx, buf.clone(), DType::I32, Layout::new(vec![2, 8], vec![8, 1], 16).unwrap()).unwrap()).unwrap_err();
        assert!(matches!(e, Error::Overlap { .. }), "{}: {e}", name(ctx));
        assert_eq!(bytes.download().unwrap().to_vec::<i8>().unwrap(), before, "{}", name(ctx));
        // i32 [4] at bytes 0..16, before the input: disjoint, and the sums land there.
        let out = DeviceTensor::from_buffer(ctx, buf.clone(), DType::I32, Layout::contiguous(&[4]).unwrap()).unwrap();
        x.sum_out(1, false, &out).unwrap();
        let want: Vec<i32> = (0..4).map(|r| (0..16).map(|c| (64 + r * 16 + c) % 7).sum()).collect();
        assert_eq!(out.download().unwrap().to_vec::<i32>().unwrap(), want, "{}", name(ctx));
    }
}

#[test]
fn the_pool_is_capped_and_trimmed() {
    let _serial = one_at_a_time();
    for ctx in contexts() {
        let Some((device, queue, info)) = own_device(ctx) else { continue };
        let mine = GpuContext::from_device(device, queue, &info);
        let ts: Vec<DeviceTensor> = (0..4).map(|_| DeviceTensor::zeros(&mine, &[1 << 18], DType::F32, MemoryFormat::Contiguous).unwrap()).collect();
        ts[0].download().unwrap();
        drop(ts);
        assert!(mine.pool_idle_bytes() >= 4 << 20, "{}: {}", name(ctx), mine.pool_idle_bytes());
        mine.set_pool_limit(2 << 20);
        assert!(mine.pool_idle_bytes() <= 2 << 20);
        assert!(mine.trim_pool() <= 2 << 20);
        assert_eq!(mine.pool_idle_bytes(), 0);
        // Two sizes of one class (1000 and 990 floats: 4096 bytes) share a buffer.
        mine.set_pool_limit(64 << 20);
        drop(DeviceTensor::zeros(&mine, &[1000], DType::F32, MemoryFormat::Contiguous).unwrap());
        // Its clearing has finished (and released it) once later work has.
        mine.batch().submit_and_wait().unwrap();
        let before = mine.pool_idle_bytes();
        let t = DeviceTensor::zeros(&mine, &[990], DType::F32, MemoryFormat::Contiguous).unwrap();
        assert!(mine.pool_idle_bytes() < before, "{}: 990 floats did not reuse the buffer of 1000", name(ctx));
        drop(t);
    }
}

#[test]
fn a_finished_batch_is_submitted_by_the_caller_with_its_own_work() {
    let _serial = one_at_a_time();
    for ctx in contexts() {
        let h = HostTensor::from_vec((0..6 * 10).map(|i| i as u32).collect(), &[6, 10]).unwrap();
        let src = DeviceTensor::upload(ctx, &h).unwrap();
        let dst = DeviceTensor::zeros(ctx, &[10, 6], DType::U32, MemoryFormat::Contiguous).unwrap();
        let mut batch = ctx.batch();
        batch.copy_(&dst, &src.transpose(0, 1).unwrap()).unwrap();
        let ours = batch.finish().unwrap();
        drop(src);
        // The caller's own command buffer, submitted with ours.
        let mut enc = ctx.device().create_command_encoder(&Default::default());
        let scratch = ctx.device().create_buffer(&wgpu::BufferDescriptor { label: None, size: 256, usage: wgpu::BufferUsages::COPY_DST, mapped_at_creation: false });
        enc.clear_buffer(&scratch, 0, None);
        ctx.queue().submit([enc.finish(), ours]);
        assert_eq!(dst.download().unwrap().to_vec::<u32>().unwrap(), h.transpose(0, 1).unwrap().to_vec::<u32>().unwrap(), "{}", name(ctx));
        // A batch recording into the caller's encoder is submitted by the caller, not by us.
        let mut enc = ctx.device().create_command_encoder(&Default::default());
        let b = ctx.record_into(&mut enc);
        assert!(matches!(b.submit(), Err(Error::InvalidArgument { op: "submit", .. })));
    }
}

#[test]
fn storage_only_caller_buffers_get_kernels_not_buffer_copies() {
    let _serial = one_at_a_time();
    // A caller's buffer with STORAGE usage alone: a dense copy into it, recorded into the
    // caller's encoder, must not use copy_buffer_to_buffer (the caller's finish would fail, in
    // the host's handler).
    for ctx in contexts() {
        let Some((device, queue, info)) = own_device(ctx) else { continue };
        let seen = count_host_errors(&device);
        let mine = GpuContext::from_device(device.clone(), queue.clone(), &info);
        let buf = device.create_buffer(&wgpu::BufferDescriptor { label: Some("storage only"), size: 64 * 4, usage: wgpu::BufferUsages::STORAGE, mapped_at_creation: false });
        let t = DeviceTensor::from_buffer(&mine, buf.clone(), DType::F32, Layout::contiguous(&[64]).unwrap()).unwrap();
        let src = DeviceTensor::from_slice(&mine, &(0..64).map(|i| i as f32).collect::<Vec<_>>(), &[64]).unwrap();
        let mut enc = device.create_command_encoder(&Default::default());
        let mut b = mine.record_into(&mut enc);
        b.copy_(&t, &src).unwrap();
        assert!(b.copy_with(&t, &src, CopyPath::BufferCopy).is_err(), "a forced buffer copy into a STORAGE-only buffer was accepted");
        b.end().unwrap();
        queue.submit([enc.finish()]);
        assert_eq!(seen.load(Ordering::SeqCst), 0, "{}: the crate's recording failed in the host's handler", name(ctx));
        // Read back (the download copies the view through a kernel, as COPY_SRC is missing).
        assert_eq!(t.download().unwrap().to_vec::<f32>().unwrap(), (0..64).map(|i| i as f32).collect::<Vec<_>>());
        // Two wrappers of one buffer share storage: a partial overlap between them is refused.
        let u = DeviceTensor::from_buffer(&mine, buf, DType::F32, Layout::contiguous(&[64]).unwrap()).unwrap();
        assert!(t.shares_storage(&u));
        assert!(matches!(t.narrow(0, 0, 32).unwrap().copy_(&u.narrow(0, 16, 32).unwrap()), Err(Error::Overlap { .. })));
        // A product with an addend into a STORAGE-only output: the addend reaches the output
        // through a kernel (the CPU adapters' blocked kernel copied it there with a buffer copy).
        let (m, k, n) = (128, 256, 128);
        let a = DeviceTensor::from_slice(&mine, &(0..m * k).map(|i| ((i * 7) % 13) as f32 - 6.0).collect::<Vec<_>>(), &[m, k]).unwrap();
        let w = DeviceTensor::from_slice(&mine, &(0..k * n).map(|i| ((i * 5) % 11) as f32 - 5.0).collect::<Vec<_>>(), &[k, n]).unwrap();
        let c = DeviceTensor::from_slice(&mine, &(0..m * n).map(|i| (i % 9) as f32).collect::<Vec<_>>(), &[m, n]).unwrap();
        let obuf = device.create_buffer(&wgpu::BufferDescriptor { label: Some("storage only out"), size: (m * n * 4) as u64, usage: wgpu::BufferUsages::STORAGE, mapped_at_creation: false });
        let out = DeviceTensor::from_buffer(&mine, obuf, DType::F32, Layout::contiguous(&[m, n]).unwrap()).unwrap();
        let plan = addmm_plan(c.layout(), a.layout(), w.layout(), 1.0, 1.0, [DType::F32; 3]).unwrap();
        let pooled = DeviceTensor::empty(&mine, &[m, n], DType::F32, MemoryFormat::Contiguous).unwrap();
        // Small integers: every sum exact in f32, the reference a plain loop.
        let want: Vec<f32> = (0..m * n)
            .map(|i| {
                let (r, col) = (i / n, i % n);
                (i % 9) as f32 + (0..k).map(|j| (((r * k + j) * 7) % 13) as f32 - 6.0).zip((0..k).map(|j| (((j * n + col) * 5) % 11) as f32 - 5.0)).map(|(x, y)| x * y).sum::<f32>()
            })
            .collect();
        for kernel in [MatmulKernel::Auto, MatmulKernel::Blocked] {
            let mut b = mine.batch();
            match b.run_plan_with(&plan, &a, &w, Some(&c), &out, kernel) {
                // The blocked kernel is the CPU adapters' (with subgroups).
                Err(Error::Unsupported { .. }) if kernel == MatmulKernel::Blocked => continue,
                r => r.unwrap(),
            }
            b.run_plan_with(&plan, &a, &w, Some(&c), &pooled, kernel).unwrap();
            b.submit_and_wait().unwrap_or_else(|e| panic!("{}: {kernel:?}: {e}", name(ctx)));
            assert_eq!(out.download().unwrap().to_vec::<f32>().unwrap(), pooled.download().unwrap().to_vec::<f32>().unwrap(), "{}: {kernel:?}", name(ctx));
            assert_eq!(out.download().unwrap().to_vec::<f32>().unwrap(), want, "{}: {kernel:?} against the reference", name(ctx));
        }
        assert_eq!(seen.load(Ordering::SeqCst), 0, "{}: an error reached the host's handler", name(ctx));
    }
}

/// No call measures kernels unless asked: by default the first blocking `copy_` and `conv2d`
/// of a class run the adapter's default kernel and keep no choice; `OnFirstCall` measures.
#[test]
fn no_call_measures_unless_asked() {
    let _serial = one_at_a_time();
    for ctx in contexts() {
        let Some((device, queue, info)) = own_device(ctx) else { continue };
        let fresh = GpuContext::from_device(device, queue, &info);
        assert_eq!(fresh.tuning_policy(), TuningPolicy::Defaults);
        let data: Vec<f32> = (0..2 * 12 * 10 * 8).map(|i| i as f32 * 0.25 - 7.0).collect();
        let h = HostTensor::from_vec(data.clone(), &[2, 12, 10, 8]).unwrap();
        let x = DeviceTensor::from_slice(&fresh, &data, &[2, 12, 10, 8]).unwrap();
        let nhwc = DeviceTensor::empty(&fresh, &[2, 12, 10, 8], DType::F32, MemoryFormat::ChannelsLast).unwrap();
        nhwc.copy_(&x).unwrap();
        let w = DeviceTensor::from_slice(&fresh, &(0..6 * 12 * 9).map(|i| (i % 7) as f32 - 3.0).collect::<Vec<_>>(), &[6, 12, 3, 3]).unwrap();
        let o = Conv2dOptions { padding: (1, 1), ..Default::default() };
        let y = conv2d(&nhwc, &w, None, &o).unwrap();
        assert!(fresh.tuned_choices().is_empty() && fresh.tuned_conv_choices().is_empty(), "{}: a call measured by default", name(ctx));
        // Untuned, the choice is the adapter's default: a kernel the adapter runs for this call.
        let default = fresh.conv2d_default(&nhwc, &w, None, &o, &y).unwrap().unwrap();
        assert_eq!(fresh.conv2d_choice(&nhwc, &w, None, &o, &y).unwrap(), Some(default), "{}", name(ctx));
        assert!(strided_wgpu::advanced::conv2d_with(&nhwc, &w, None, &o, default).is_ok(), "{}: default {default:?} refused", name(ctx));
        // The transpose's default is a transpose kernel; a converting dense copy has no copy
        // path (it runs as the elementwise `to`).
        let path = fresh.copy_default(&nhwc, &x).unwrap().unwrap();
        assert!(format!("{path:?}").starts_with("Transpose"), "{}: {path:?}", name(ctx));
        let half = DeviceTensor::empty(&fresh, &[2, 12, 10, 8], DType::F16, MemoryFormat::Contiguous).unwrap();
        assert_eq!(fresh.copy_default(&half, &x).unwrap(), None);
        assert_eq!(nhwc.download().unwrap().to_vec::<f32>().unwrap(), h.to_vec::<f32>().unwrap());
        let want = strided_wgpu::advanced::internal::conv2d_cpu(&h, &w.download().unwrap(), None, &o).unwrap().to_vec::<f32>().unwrap();
        for (g, e) in y.download().unwrap().to_vec::<f32>().unwrap().iter().zip(&want) {
            assert!((g - e).abs() <= 1e-4 * e.abs().max(1.0), "{}: {g} vs {e}", name(ctx));
        }
        // Asked to, the first call of a class measures, once.
        fresh.set_tuning_policy(TuningPolicy::OnFirstCall);
        nhwc.copy_(&x).unwrap();
        conv2d(&nhwc, &w, None, &o).unwrap();
        assert_eq!(fresh.tuned_choices().len(), 1, "{}", name(ctx));
        assert_eq!(fresh.tuned_conv_choices().len(), 1, "{}", name(ctx));
    }
}

/// Where encoders take no timestamps but compute passes do (Chromium's WebGPU), the timer
/// brackets the work with two empty compute passes that write them, and tuning measures.
#[test]
fn pass_timestamps_time_and_tune() {
    let _serial = one_at_a_time();
    for ctx in contexts() {
        let Some(adapter) = common::gpu::adapter_again(ctx) else { continue };
        if !adapter.features().contains(wgpu::Features::TIMESTAMP_QUERY) {
            common::skips::say(&format!("!!! {}: no timestamp queries, pass timestamps not tested", name(ctx)));
            continue;
        }
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("pass timestamps only"),
            required_features: wgpu::Features::TIMESTAMP_QUERY,
            required_limits: adapter.limits(),
            experimental_features: wgpu::ExperimentalFeatures::disabled(),
            memory_hints: wgpu::MemoryHints::default(),
            trace: wgpu::Trace::Off,
        }))
        .unwrap();
        let own = GpuContext::from_device(device, queue, &adapter.get_info());
        assert!(!own.adapter().timestamps && own.adapter().pass_timestamps, "{}", name(ctx));
        let timer = GpuTimer::new(&own).unwrap();
        assert!(timer.uses_timestamps());
        let x = DeviceTensor::from_slice(&own, &(0..4 * 40 * 24).map(|i| i as f32).collect::<Vec<_>>(), &[4, 40, 24]).unwrap();
        let out = DeviceTensor::empty(&own, &[4, 24, 40], DType::F32, MemoryFormat::Contiguous).unwrap();
        let ms = timer.time(|b| b.copy_(&out, &x.transpose(1, 2).unwrap())).unwrap();
        assert!(ms.is_finite() && ms > 0.0, "{}: a copy took {ms} ms by pass timestamps", name(ctx));
        assert!(own.tune_copy(&out, &x.transpose(1, 2).unwrap()).unwrap(), "{}: tuning measured nothing", name(ctx));
        assert_eq!(own.tuned_choices().len(), 1);
    }
}

/// Fresh contexts on `ctx`'s backend whose devices a test destroys: one the crate created
/// (which owns its device's uncaptured-error handler), and one made from the host's device,
/// whose handler stays the host's (here one that counts what reaches it).
fn doomed(ctx: &GpuContext) -> Vec<(&'static str, GpuContext, Option<Arc<AtomicUsize>>)> {
    let mut out = Vec::new();
    if let Ok(c) = pollster::block_on(GpuContext::for_backends(ctx.adapter().backend.into())) {
        out.push(("crate's device", c, None));
    }
    if let Some((device, queue, info)) = own_device(ctx) {
        let seen = count_host_errors(&device);
        out.push(("host's device", GpuContext::from_device(device, queue, &info), Some(seen)));
    }
    assert_eq!(out.len(), 2, "{}: a fresh device", name(ctx));
    out
}

/// Polls a future once, with a waker that does nothing.
fn poll_once<F: std::future::Future>(f: std::pin::Pin<&mut F>) -> std::task::Poll<F::Output> {
    f.poll(&mut std::task::Context::from_waker(std::task::Waker::noop()))
}

/// After a loss: `r` is `DeviceLost`, so is the next call, and nothing of the crate's reached
/// the host's handler.
fn assert_lost<T: std::fmt::Debug>(what: &str, c: &GpuContext, host: &Option<Arc<AtomicUsize>>, r: Result<T, Error>) {
    assert!(matches!(r, Err(Error::DeviceLost { .. })), "{what}: {r:?}");
    let again = DeviceTensor::from_slice(c, &[1f32; 4], &[4]).map(|_| ());
    assert!(matches!(again, Err(Error::DeviceLost { .. })), "{what}, the next call: {again:?}");
    if let Some(seen) = host {
        assert_eq!(seen.load(Ordering::SeqCst), 0, "{what}: the crate's calls reached the host's error handler");
    }
}

/// Polls `f` once (asserting that it is then still under way) and destroys `c`'s device. GL
/// runs submitted work at the submit, so there a future finishes at its first poll: there the
/// device is destroyed before it.
fn destroy_while_pending<F: std::future::Future>(what: &str, c: &GpuContext, f: std::pin::Pin<&mut F>) {
    if c.adapter().backend != wgpu::Backend::Gl {
        assert!(poll_once(f).is_pending(), "{what}: it finished at its first poll");
    }
    c.device().destroy();
}

/// A transpose of 4 MiB.
fn big(c: &GpuContext) -> DeviceTensor {
    square_transposed(c, 1024)
}

/// A transpose big enough that its download is still under way at its first poll: 4 MiB on
/// a CPU adapter, 256 MiB on a GPU (an H200 finished 4 MiB within the first poll).
fn big_for_pending(c: &GpuContext) -> DeviceTensor {
    square_transposed(c, if c.adapter().device_type == wgpu::DeviceType::Cpu { 1024 } else { 8192 })
}

fn square_transposed(c: &GpuContext, n: usize) -> DeviceTensor {
    DeviceTensor::from_slice(c, &(0..n * n).map(|i| i as f32).collect::<Vec<_>>(), &[n, n]).unwrap().transpose(0, 1).unwrap()
}

#[test]
fn losing_the_device_while_a_download_is_pending_is_device_lost() {
    let _serial = one_at_a_time();
    for ctx in contexts() {
        // The download's future polled once, the device destroyed, then the future polled to
        // its end, or dropped unfinished.
        for finish in [true, false] {
            for (who, c, host) in doomed(ctx) {
                let what = format!("{} {who} (finished: {finish})", name(ctx));
                let x = big_for_pending(&c);
                let mut out = vec![0f32; x.numel()];
                let mut f = Box::pin(x.download_into_async(&mut out));
                destroy_while_pending(&what, &c, f.as_mut());
                if finish {
                    let r = spin(f);
                    assert_lost(&what, &c, &host, r);
                } else {
                    drop(f);
                    assert_lost(&what, &c, &host, x.download().map(drop));
                }
            }
        }
    }
}

#[test]
fn losing_the_device_between_submit_and_completion_is_device_lost() {
    let _serial = one_at_a_time();
    for ctx in contexts() {
        for blocking in [true, false] {
            for (who, c, host) in doomed(ctx) {
                let what = format!("{} {who} (blocking: {blocking})", name(ctx));
                let x = big(&c);
                let out = DeviceTensor::empty(&c, &[1024, 1024], DType::F32, MemoryFormat::Contiguous).unwrap();
                let mut b = c.batch();
                b.copy_(&out, &x).unwrap();
                let sub = b.submit().unwrap();
                c.device().destroy();
                let r = if blocking { sub.wait() } else { spin(sub.finished()) };
                assert_lost(&what, &c, &host, r);
            }
        }
    }
}

#[test]
fn losing_the_device_in_the_middle_of_a_recording_is_device_lost() {
    let _serial = one_at_a_time();
    for ctx in contexts() {
        // Into the crate's encoder (then submitted, or finished), and into the host's.
        for how in ["submit", "finish", "record_into"] {
            for (who, c, host) in doomed(ctx) {
                let what = format!("{} {who} ({how})", name(ctx));
                let x = DeviceTensor::from_slice(&c, &(0..4096).map(|i| i as f32).collect::<Vec<_>>(), &[64, 64]).unwrap();
                let out = DeviceTensor::empty(&c, &[64, 64], DType::F32, MemoryFormat::Contiguous).unwrap();
                let mut enc = c.device().create_command_encoder(&Default::default());
                let mut b = if how == "record_into" { c.record_into(&mut enc) } else { c.batch() };
                b.copy_(&out, &x.transpose(0, 1).unwrap()).unwrap();
                c.device().destroy();
                // Recording after the loss: an error or not, never a panic.
                let _ = b.copy_(&out, &x);
                let _ = b.copy_(&out.narrow(0, 0, 32).unwrap(), &x.narrow(1, 0, 32).unwrap().transpose(0, 1).unwrap());
                let r = match how {
                    "submit" => b.submit().map(drop),
                    "finish" => b.finish().map(drop),
                    _ => {
                        let _ = b.end();
                        drop(enc);
                        out.download().map(drop)
                    }
                };
                assert_lost(&what, &c, &host, r);
            }
        }
    }
}

#[test]
fn losing_the_device_before_or_while_tuning_is_device_lost() {
    let _serial = one_at_a_time();
    let conv = Conv2dOptions { padding: (1, 1), ..Default::default() };
    for ctx in contexts() {
        // Destroyed before the blocking call, or after the first poll of the async one.
        for pending in [false, true] {
            for (who, c, host) in doomed(ctx) {
                let what = format!("{} {who} tune_copy (pending: {pending})", name(ctx));
                let x = DeviceTensor::from_slice(&c, &(0..8 * 48 * 40).map(|i| i as f32).collect::<Vec<_>>(), &[8, 48, 40]).unwrap();
                let out = DeviceTensor::empty(&c, &[8, 40, 48], DType::F32, MemoryFormat::Contiguous).unwrap();
                let src = x.transpose(1, 2).unwrap();
                let r = if pending {
                    let mut f = Box::pin(c.tune_copy_async(&out, &src));
                    destroy_while_pending(&what, &c, f.as_mut());
                    spin(f)
                } else {
                    c.device().destroy();
                    c.tune_copy(&out, &src)
                };
                assert_lost(&what, &c, &host, r);
            }
            for (who, c, host) in doomed(ctx) {
                let what = format!("{} {who} tune_conv2d (pending: {pending})", name(ctx));
                let x = DeviceTensor::from_slice(&c, &(0..2 * 8 * 12 * 12).map(|i| (i % 7) as f32).collect::<Vec<_>>(), &[2, 8, 12, 12]).unwrap();
                let w = DeviceTensor::from_slice(&c, &(0..8 * 8 * 9).map(|i| (i % 5) as f32).collect::<Vec<_>>(), &[8, 8, 3, 3]).unwrap();
                let r = if pending {
                    let mut f = Box::pin(c.tune_conv2d_async(&x, &w, None, &conv));
                    destroy_while_pending(&what, &c, f.as_mut());
                    spin(f)
                } else {
                    c.device().destroy();
                    c.tune_conv2d(&x, &w, None, &conv)
                };
                assert_lost(&what, &c, &host, r);
            }
        }
    }
}

/// `copy_` between disjoint views of a caller's buffer without `COPY_SRC` (from_buffer needs
/// only `STORAGE`) copies, on the automatic and the vec4 path (it was Unsupported: the source
/// was read from a buffer copy of the whole buffer).
#[test]
fn copies_within_a_callers_buffer_need_no_copy_src() {
    for ctx in contexts() {
        let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST;
        let buffer = ctx.device().create_buffer(&wgpu::BufferDescriptor { label: Some("caller's"), size: 4 * 64, usage, mapped_at_creation: false });
        let vals: Vec<f32> = (0..64).map(|i| i as f32 * 0.5 - 3.0).collect();
        ctx.queue().write_buffer(&buffer, 0, &vals.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>());
        let t = DeviceTensor::from_buffer(ctx, buffer, DType::F32, Layout::contiguous(&[8, 8]).unwrap()).unwrap();
        let want = HostTensor::from_vec(vals.clone(), &[8, 8]).unwrap();
        for path in [CopyPath::Auto, CopyPath::Vec4 { wg: 64, wpt: 1 }] {
            // Rows 0..2 from rows 4..6, then restored.
            let (dst, src) = (t.narrow(0, 0, 2).unwrap(), t.narrow(0, 4, 2).unwrap());
            let r = dst.copy_with(&src, path);
            assert!(r.is_ok(), "{} {path:?}: {r:?}", name(ctx));
            let copy = DeviceTensor::zeros(ctx, &[8, 8], DType::F32, MemoryFormat::Contiguous).unwrap();
            copy.copy_(&t).unwrap();
            let got = copy.download().unwrap().to_vec::<f32>().unwrap();
            let mut expect = vals.clone();
            expect.copy_within(32..48, 0);
            assert_eq!(got, expect, "{} {path:?}", name(ctx));
            dst.copy_(&want.narrow(0, 0, 2).unwrap().contiguous(MemoryFormat::Contiguous).map(|h| DeviceTensor::upload(ctx, &h).unwrap()).unwrap()).unwrap();
        }
    }
}

#[test]
fn a_buffer_of_another_device_is_refused_by_from_buffer() {
    let _serial = one_at_a_time();
    for ctx in contexts() {
        // Two devices of one wgpu instance (a host program's two devices).
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle());
        let adapter = pollster::block_on(instance.enumerate_adapters(ctx.adapter().backend.into())).into_iter().next().unwrap();
        let (mine, other) = (pollster::block_on(GpuContext::from_adapter(&adapter)).unwrap(), pollster::block_on(GpuContext::from_adapter(&adapter)).unwrap());
        let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
        let theirs = other.device().create_buffer(&wgpu::BufferDescriptor { label: Some("another device's"), size: 64, usage, mapped_at_creation: false });
        let e = DeviceTensor::from_buffer(&mine, theirs.clone(), DType::F32, Layout::contiguous(&[16]).unwrap()).unwrap_err();
        assert!(matches!(e, Error::Device { op: "from_buffer", .. }), "{}: {e}", name(ctx));
        // On its own device it is taken; a destroyed one is refused.
        assert!(DeviceTensor::from_buffer(&other, theirs.clone(), DType::F32, Layout::contiguous(&[16]).unwrap()).is_ok());
        theirs.destroy();
        let e = DeviceTensor::from_buffer(&other, theirs, DType::F32, Layout::contiguous(&[16]).unwrap()).unwrap_err();
        assert!(matches!(e, Error::Device { op: "from_buffer", .. }), "{}: {e}", name(ctx));
    }
}

/// A caller's buffer smaller than one vec4 word (4, 8 or 12 bytes) feeds every kernel that
/// reads its input as words too: those bind the window's whole words, and a window without
/// one bound 16 bytes past the buffer's end (a wgpu validation error in `mm` and `conv2d`).
/// Results equal the host's, for float32 and float16, with and without copy usages.
#[test]
fn caller_buffers_smaller_than_a_word_feed_every_kernel() {
    use strided_wgpu::{Conv2d, Elementwise, Matmul, MaxPool2dOptions, Pool2d};
    let _serial = one_at_a_time();
    let storage = wgpu::BufferUsages::STORAGE;
    for ctx in contexts() {
        for usage in [storage, storage | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST] {
            for (dtype, size) in [(DType::F32, 4usize), (DType::F16, 2)] {
                for bytes in [4usize, 8, 12] {
                    let n = bytes / size;
                    let h = HostTensor::from_vec((0..n).map(|i| i as f32 - 1.5).collect::<Vec<_>>(), &[1, n]).unwrap().to(dtype).unwrap();
                    let buf = ctx.device().create_buffer(&wgpu::BufferDescriptor { label: Some("small"), size: bytes as u64, usage, mapped_at_creation: false });
                    let f = DeviceTensor::from_buffer(ctx, buf, dtype, Layout::contiguous(&[1, n]).unwrap()).unwrap();
                    f.copy_(&DeviceTensor::upload(ctx, &h).unwrap()).unwrap();
                    let w = HostTensor::from_vec(vec![2f32], &[1, 1, 1, 1]).unwrap().to(dtype).unwrap();
                    let image = [1, 1, 1, n as isize];
                    let what = format!("{}: {dtype} in {bytes} bytes, {usage:?}", name(ctx));
                    let pairs: Vec<(&str, HostTensor, Result<DeviceTensor, Error>)> = vec![
                        ("mm", h.mm(&h.transpose(0, 1).unwrap()).unwrap(), f.mm(&f.transpose(0, 1).unwrap())),
                        ("matmul of a row", h.transpose(0, 1).unwrap().matmul(&h).unwrap(), f.transpose(0, 1).unwrap().matmul(&f)),
                        ("conv2d", h.view(&image).unwrap().conv2d(&w, None, &Conv2dOptions::default()).unwrap(), f.view(&image).unwrap().conv2d(&DeviceTensor::upload(ctx, &w).unwrap(), None, &Conv2dOptions::default())),
                        ("max_pool2d", h.view(&image).unwrap().max_pool2d(&MaxPool2dOptions::new((1, 1))).unwrap(), f.view(&image).unwrap().max_pool2d(&MaxPool2dOptions::new((1, 1)))),
                        ("sum", h.sum([-1], true).unwrap(), f.sum([-1], true)),
                        ("softmax", h.softmax(-1).unwrap(), f.softmax(-1)),
                        ("relu", h.relu().unwrap(), f.relu()),
                        ("to f32", h.to(DType::F32).unwrap(), f.to(DType::F32)),
                    ];
                    for (op, want, got) in pairs {
                        let got = got.unwrap_or_else(|e| panic!("{what}: {op}: {e}")).download().unwrap();
                        let (g, e) = (got.to(DType::F32).unwrap().to_vec::<f32>().unwrap(), want.to(DType::F32).unwrap().to_vec::<f32>().unwrap());
                        assert_eq!(got.shape(), want.shape(), "{what}: {op}");
                        for (a, b) in g.iter().zip(&e) {
                            assert!((a - b).abs() <= 1e-3 * b.abs().max(1.0), "{what}: {op}: {g:?} vs {e:?}");
                        }
                    }
                }
            }
        }
    }
}

/// A download that fails at its submission (its tensor wraps a buffer the caller destroyed):
/// - the calls held back before it still run: they went in the same queue submission, which
///   wgpu drops whole when one command buffer fails, so their outputs kept stale bytes after
///   returning without an error;
/// - its staging buffer does not return to the pool mapped: the mapping wgpu starts after a
///   failed submission was left pending, and later downloads of its size class failed.
#[test]
fn a_failed_download_loses_no_held_work_and_leaves_the_pool_sound() {
    use strided_wgpu::Elementwise;
    use strided_wgpu::advanced::SubmitPolicy;
    let _serial = one_at_a_time();
    for ctx in contexts() {
        let Some((device, queue, info)) = own_device(ctx) else { continue };
        let seen = count_host_errors(&device);
        let mine = GpuContext::from_device(device.clone(), queue, &info);
        let buf = device.create_buffer(&wgpu::BufferDescriptor { label: Some("destroyed"), size: 64, usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC, mapped_at_creation: false });
        let gone = DeviceTensor::from_buffer(&mine, buf.clone(), DType::F32, Layout::contiguous(&[16]).unwrap()).unwrap();
        buf.destroy();
        mine.set_submit_policy(SubmitPolicy::Deferred).unwrap();
        let x = DeviceTensor::from_slice(&mine, &(0..64).map(|i| i as f32).collect::<Vec<_>>(), &[64]).unwrap();
        // The first call after a submission goes at once; the second is held.
        let y1 = x.add(1.0).unwrap();
        let y2 = x.add(1000.0).unwrap();
        assert!(gone.download().is_err(), "{}: a download of a destroyed buffer", name(ctx));
        assert_eq!(y2.download().unwrap().to_vec::<f32>().unwrap(), (0..64).map(|i| i as f32 + 1000.0).collect::<Vec<_>>(), "{}: the held call", name(ctx));
        assert_eq!(y1.download().unwrap().to_vec::<f32>().unwrap(), (0..64).map(|i| i as f32 + 1.0).collect::<Vec<_>>(), "{}", name(ctx));
        for round in 0..3 {
            let z = DeviceTensor::from_slice(&mine, &[round as f32; 16], &[16]).unwrap();
            assert_eq!(z.download().unwrap().to_vec::<f32>().unwrap(), vec![round as f32; 16], "{}: download {round} after the failed one", name(ctx));
        }
        assert_eq!(seen.load(Ordering::SeqCst), 0, "{}: an error reached the host's handler", name(ctx));
    }
}

/// Eager calls held back (`SubmitPolicy::Deferred`) while a batch records into the caller's
/// encoder run before that encoder, as `record_into` promises: those made after the batch
/// started too (they were submitted only at the crate's next submission, after the caller's
/// encoder had read their outputs unwritten).
#[test]
fn calls_held_while_recording_into_the_callers_encoder_run_before_it() {
    use strided_wgpu::advanced::SubmitPolicy;
    use strided_wgpu::Elementwise;
    let _serial = one_at_a_time();
    for ctx in contexts() {
        let Some((device, queue, info)) = own_device(ctx) else { continue };
        let mine = GpuContext::from_device(device.clone(), queue.clone(), &info);
        mine.set_submit_policy(SubmitPolicy::Deferred).unwrap();
        let x = DeviceTensor::from_slice(&mine, &(0..64).map(|i| i as f32).collect::<Vec<_>>(), &[64]).unwrap();
        let mut enc = device.create_command_encoder(&Default::default());
        let mut b = mine.record_into(&mut enc);
        // Eager calls after a submission go in growing groups (1, 2, 4, 8, then 32): most of
        // these 20 are held when the batch ends.
        let mut y = x.clone();
        for _ in 0..20 {
            y = y.add(1.0).unwrap();
        }
        let out = b.add(&y, &x).unwrap();
        b.end().unwrap();
        queue.submit([enc.finish()]);
        let want: Vec<f32> = (0..64).map(|i| 2.0 * i as f32 + 20.0).collect();
        assert_eq!(out.download().unwrap().to_vec::<f32>().unwrap(), want, "{}: the caller's encoder read the held calls' outputs unwritten", name(ctx));
    }
}

/// A float16 convolution writing 4 channels of one pixel (8 bytes) into a caller's buffer of
/// exactly that size, channels-last: the kernels that store 4 channels as one 8-byte word bound
/// 16 bytes (past the buffer: a wgpu validation error). Every kernel that takes it, equal to
/// the host.
#[test]
fn a_half_convolution_into_a_caller_buffer_of_one_word() {
    use strided_wgpu::advanced::ConvKernel;
    use strided_wgpu::Elementwise;
    let _serial = one_at_a_time();
    let cl = MemoryFormat::ChannelsLast;
    let x = HostTensor::from_vec(vec![1.0f32, -2.0, 3.0, -4.0], &[1, 4, 1, 1]).unwrap().materialize(cl, DType::F16).unwrap();
    for (groups, wshape) in [(4usize, [4usize, 1, 1, 1]), (1, [4, 4, 1, 1])] {
        let w = HostTensor::from_vec((0..wshape.iter().product::<usize>()).map(|i| (i % 5) as f32 - 2.0).collect::<Vec<_>>(), &wshape).unwrap().materialize(cl, DType::F16).unwrap();
        let o = Conv2dOptions { groups, ..Default::default() };
        let want = strided_wgpu::advanced::internal::conv2d_cpu(&x, &w, None, &o).unwrap().to(DType::F32).unwrap().to_vec::<f32>().unwrap();
        for ctx in contexts() {
            let (dx, dw) = (DeviceTensor::upload(ctx, &x).unwrap().contiguous(cl).unwrap(), DeviceTensor::upload(ctx, &w).unwrap().contiguous(cl).unwrap());
            let mut ran = 0;
            for kernel in ConvKernel::ALL {
                let buf = ctx.device().create_buffer(&wgpu::BufferDescriptor { label: Some("one word"), size: 8, usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST, mapped_at_creation: false });
                let out = DeviceTensor::from_buffer(ctx, buf, DType::F16, Layout::with_format(&[1, 4, 1, 1], cl).unwrap()).unwrap();
                let mut b = ctx.batch();
                match b.conv2d_out_with(&dx, &dw, None, &o, &out, kernel) {
                    Ok(()) => ran += 1,
                    Err(Error::Unsupported { .. }) => continue,
                    Err(e) => panic!("{}: groups {groups} {kernel:?}: {e}", name(ctx)),
                }
                b.submit_and_wait().unwrap_or_else(|e| panic!("{}: groups {groups} {kernel:?}: {e}", name(ctx)));
                let got = out.download().unwrap().to(DType::F32).unwrap().to_vec::<f32>().unwrap();
                assert_eq!(got, want, "{}: groups {groups} {kernel:?}", name(ctx));
            }
            assert!(ran >= 2, "{}: groups {groups}: {ran} kernels ran", name(ctx));
        }
    }
}

/// The API's edges a review found open: a pooled buffer of this context wrapped by
/// `from_buffer` (it aliased storage the pool recycles) is refused; `tune_*` with tensors of
/// another context is `Error::Device` (it bound their buffers in this device's bind groups); a
/// batch op whose dispatch fails validation (a caller's buffer destroyed under a tensor) leaves
/// the batch's other work to run.
#[test]
fn api_edges_are_typed_errors_and_leave_the_batch_whole() {
    let _serial = one_at_a_time();
    for ctx in contexts() {
        let a = DeviceTensor::zeros(ctx, &[64], DType::F32, MemoryFormat::Contiguous).unwrap();
        let e = DeviceTensor::from_buffer(ctx, a.buffer().clone(), DType::F32, Layout::contiguous(&[64]).unwrap()).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { op: "from_buffer", .. }), "{}: {e}", name(ctx));
        // An idle pooled buffer too.
        let handle = a.buffer().clone();
        drop(a);
        ctx.flush().unwrap().wait().unwrap();
        assert!(DeviceTensor::from_buffer(ctx, handle, DType::F32, Layout::contiguous(&[64]).unwrap()).is_err(), "{}: an idle pooled buffer", name(ctx));

        let Some((device, queue, info)) = own_device(ctx) else { continue };
        let other = GpuContext::from_device(device, queue, &info);
        let (x, w) = (DeviceTensor::from_slice(&other, &[1f32; 64], &[8, 8]).unwrap(), DeviceTensor::from_slice(&other, &[1f32; 64], &[8, 8]).unwrap());
        assert!(matches!(ctx.tune_matmul(&x, &w), Err(Error::Device { .. })), "{}: tune_matmul across contexts", name(ctx));
        let (xi, wk) = (DeviceTensor::from_slice(&other, &[1f32; 2 * 4 * 5 * 5], &[2, 4, 5, 5]).unwrap(), DeviceTensor::from_slice(&other, &[1f32; 3 * 4 * 9], &[3, 4, 3, 3]).unwrap());
        assert!(matches!(ctx.tune_conv2d(&xi, &wk, None, &Conv2dOptions::default()), Err(Error::Device { .. })), "{}: tune_conv2d across contexts", name(ctx));
        let local = DeviceTensor::from_slice(ctx, &[0f32; 64], &[8, 8]).unwrap();
        assert!(matches!(ctx.tune_copy(&local, &x.transpose(0, 1).unwrap()), Err(Error::Device { .. })), "{}: tune_copy across contexts", name(ctx));

        let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
        let buf = ctx.device().create_buffer(&wgpu::BufferDescriptor { label: Some("caller's"), size: 64, usage, mapped_at_creation: false });
        let t = DeviceTensor::from_buffer(ctx, buf.clone(), DType::F32, Layout::contiguous(&[16]).unwrap()).unwrap();
        let v = DeviceTensor::from_slice(ctx, &(0..16).map(|i| i as f32).collect::<Vec<_>>(), &[16]).unwrap();
        let mut batch = ctx.batch();
        let y = batch.mul(&v, 2.0).unwrap();
        buf.destroy();
        assert!(batch.add(&v, &t).is_err(), "{}: an op over a destroyed buffer", name(ctx));
        assert!(batch.max_pool2d(&t.view(&[1, 1, 4, 4]).unwrap(), &strided_wgpu::MaxPool2dOptions::new((2, 2))).is_err(), "{}: pooling a destroyed buffer", name(ctx));
        batch.submit_and_wait().unwrap();
        assert_eq!(y.download().unwrap().to_vec::<f32>().unwrap(), (0..16).map(|i| 2.0 * i as f32).collect::<Vec<_>>(), "{}", name(ctx));
    }
}
