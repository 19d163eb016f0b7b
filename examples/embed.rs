//! A host program that owns its wgpu device embeds the crate: its own compute pass writes an
//! RGBA8 image into its own storage buffer; the crate wraps that buffer without copying and
//! records the HWC -> CHW permute into the host's encoder, after the host's pass; the host
//! submits once; the result is read back asynchronously and checked against the CPU reference.
//!
//! `cargo run --example embed` (any adapter; `WGPU_BACKEND` picks one). It also runs as a test
//! under `cargo test`, on each software adapter.

use strided_wgpu::{DeviceTensor, DType, GpuContext, HostTensor, Layout, MemoryFormat, Result, Strided};

const H: usize = 48;
const W: usize = 40;

/// The host's shader: pixel (y, x) = (x, y, x ^ y, 255) as RGBA8, packed in u32 words.
const HOST_PASS: &str = r#"
@group(0) @binding(0) var<storage, read_write> img: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x;
    if (i >= arrayLength(&img)) { return; }
    let x = i % 40u;
    let y = i / 40u;
    img[i] = x | (y << 8u) | ((x ^ y) << 16u) | (255u << 24u);
}
"#;

/// What the host's pass writes, on the CPU.
fn reference() -> Vec<u8> {
    (0..H * W).flat_map(|i| [(i % W) as u8, (i / W) as u8, ((i % W) ^ (i / W)) as u8, 255]).collect()
}

/// The host program on `backends`: returns the adapter it ran on, or `None` when there is none.
pub fn run(backends: wgpu::Backends) -> Result<Option<String>> {
    // The host's own device, queue and buffer.
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor { backends, ..wgpu::InstanceDescriptor::new_without_display_handle() });
    let Ok(adapter) = pollster::block_on(instance.request_adapter(&Default::default())) else { return Ok(None) };
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("host"),
        required_features: wgpu::Features::empty(),
        required_limits: adapter.limits(),
        experimental_features: wgpu::ExperimentalFeatures::disabled(),
        memory_hints: wgpu::MemoryHints::default(),
        trace: wgpu::Trace::Off,
    }))
    .map_err(|e| strided_wgpu::Error::Adapter(e.to_string()))?;
    let image = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("host image"),
        size: (H * W * 4) as u64,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor { label: Some("host pass"), source: wgpu::ShaderSource::Wgsl(HOST_PASS.into()) });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("host pass"),
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[wgpu::BindGroupEntry { binding: 0, resource: image.as_entire_binding() }],
    });

    // The crate shares the host's device and wraps the host's buffer: [H, W, 4] u8, no copy.
    let ctx = GpuContext::from_device(device.clone(), queue.clone(), &adapter.get_info());
    let hwc = DeviceTensor::from_buffer(&ctx, image, DType::U8, Layout::contiguous(&[H, W, 4])?)?;
    let chw = DeviceTensor::empty(&ctx, &[4, H, W], DType::U8, MemoryFormat::Contiguous)?;

    // One encoder: the host's pass, then the crate's permute; one submission.
    let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("host frame") });
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &bind, &[]);
        pass.dispatch_workgroups((H * W).div_ceil(64) as u32, 1, 1);
    }
    let mut batch = ctx.record_into(&mut encoder);
    batch.copy_(&chw, &hwc.permute(&[2, 0, 1])?)?;
    batch.end()?;
    queue.submit([encoder.finish()]);

    // Read back without blocking: a future polled by a loop that never parks the thread.
    let got = spin(chw.download_async())?;
    let want = HostTensor::from_vec(reference(), &[H, W, 4])?.permute(&[2, 0, 1])?.to_vec::<u8>()?;
    if got.to_vec::<u8>()? != want {
        return Err(strided_wgpu::Error::Gpu { op: "embed", message: "the permuted image differs from the CPU reference".into() });
    }
    Ok(Some(format!("{} ({:?})", adapter.get_info().name, adapter.get_info().backend)))
}

/// Polls a future to completion without blocking the thread (a stand-in for the host's own
/// executor or event loop).
fn spin<F: std::future::Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::yield_now();
    }
}

fn main() {
    match run(wgpu::Backends::from_env().unwrap_or(wgpu::Backends::all())) {
        Ok(Some(adapter)) => println!("embed: the host's RGBA8 image, permuted to CHW by the crate in the host's encoder, matches the CPU reference on {adapter}"),
        Ok(None) => {
            eprintln!("embed: no adapter (install mesa-vulkan-drivers for a software one)");
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!("embed: {e}");
            std::process::exit(1);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn embed_on_each_software_adapter() {
        use std::io::Write;
        let require = std::env::var("STRIDED_WGPU_REQUIRE_ADAPTER").as_deref() == Ok("1");
        // As the test harness (tests/common/gpu.rs): an adapter whose device does not open is
        // skipped loudly, unless STRIDED_WGPU_REQUIRE_BACKENDS names its backend.
        let required = std::env::var("STRIDED_WGPU_REQUIRE_BACKENDS").unwrap_or_default().to_lowercase();
        let mut ran = 0;
        for (backends, names) in [(wgpu::Backends::PRIMARY, &["vulkan", "metal", "dx12"][..]), (wgpu::Backends::GL, &["gl"][..])] {
            match super::run(backends) {
                Ok(Some(adapter)) => {
                    println!("embed: ok on {adapter}");
                    ran += 1;
                }
                Ok(None) if required.split(',').any(|r| names.contains(&r.trim())) => panic!("STRIDED_WGPU_REQUIRE_BACKENDS names {backends:?}, but no such adapter exists"),
                // Straight to stderr: libtest captures eprintln!, and a skip must be seen.
                Ok(None) => { let _ = writeln!(std::io::stderr(), "!!! embed: no adapter for {backends:?}"); }
                Err(e @ strided_wgpu::Error::Adapter(_)) if !required.split(',').any(|r| names.contains(&r.trim())) => {
                    let _ = writeln!(std::io::stderr(), "!!! embed: the {backends:?} adapter did not open a device: {e}");
                }
                Err(e) => panic!("embed on {backends:?}: {e}"),
            }
        }
        assert!(ran > 0 || !require, "STRIDED_WGPU_REQUIRE_ADAPTER=1 but no adapter ran the embed example");
    }
}
