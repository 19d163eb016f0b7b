//! What an adapter's cooperative matrices (wgpu's `EXPERIMENTAL_COOPERATIVE_MATRIX`, tensor cores
//! on NVIDIA GPUs) compute and how fast, in raw wgpu: the smallest cases first (one 16 x 16 x
//! 16 product loaded, multiplied and stored each way, `coop_probe/probes.wgsl`), then f16 GEMMs
//! checked against f64 and timed with timestamp queries in interleaved rounds on one set of
//! buffers: variants whose fragments come straight from storage (`coop_probe/gemm_direct.wgsl`;
//! the first two, or all with `COOP_PROBE_ALL=1`) beside the crate's own kernel
//! (`shaders/kernels/matmul_coop.wgsl`, its pitches compiled in or read from the uniform, and
//! with its tiles walked in the other order); with `COOP_PROBE_STAGED=1` also the variants that
//! stage operands through workgroup memory (`coop_probe/gemm.wgsl`). One JSON line each; where no
//! adapter has the feature it says so and exits 0; where any line says `"ok": false` it exits 1
//! after the last. docs/cooperative-matrices.md has the results.
//!
//! `cargo run --release --example coop_probe [-- SIZE]` (SIZE: the timed square GEMM, 4096).

use std::time::Instant;

use half::f16;
use wgpu::util::DeviceExt;

/// Whether any probe or product computed something else than it should, or raised an error.
static FAILED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Prints a result line and remembers a failure.
fn report(ok: bool, line: serde_json::Value) {
    if !ok {
        FAILED.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    println!("{line}");
}

/// Whether an environment variable is set to `1` (the flags this probe reads).
fn flag(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| v == "1")
}

const PROBES: &str = include_str!("coop_probe/probes.wgsl");
const GEMM: &str = include_str!("coop_probe/gemm.wgsl");
const GEMM_DIRECT: &str = include_str!("coop_probe/gemm_direct.wgsl");

struct Gpu {
    device: wgpu::Device,
    queue: wgpu::Queue,
    timestamps: bool,
}

fn main() {
    // The timed GEMM's tiles are 128 x 128: SIZE must be a positive multiple of 128.
    let size: usize = match std::env::args().nth(1) {
        None => 4096,
        Some(s) => match s.parse::<usize>() {
            Ok(n) if n > 0 && n % 128 == 0 => n,
            _ => {
                eprintln!("coop_probe: SIZE must be a positive multiple of 128 (the timed kernel's tile), got {s:?}");
                std::process::exit(2);
            }
        },
    };
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor { backends: wgpu::Backends::from_env().unwrap_or(wgpu::Backends::all()), ..wgpu::InstanceDescriptor::new_without_display_handle() });
    let adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::all()));
    let want = wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX | wgpu::Features::SHADER_F16 | wgpu::Features::SUBGROUP;
    for a in &adapters {
        let info = a.get_info();
        println!(
            "{}",
            serde_json::json!({"adapter": info.name, "backend": format!("{:?}", info.backend), "driver": info.driver_info, "coop": a.features().contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX), "f16": a.features().contains(wgpu::Features::SHADER_F16), "subgroup": [info.subgroup_min_size, info.subgroup_max_size],
                "configs": a.cooperative_matrix_properties().iter().map(|p| format!("{}x{}x{} {:?}->{:?}", p.m_size, p.n_size, p.k_size, p.ab_type, p.cr_type)).collect::<Vec<_>>()})
        );
    }
    let Some(adapter) = adapters.into_iter().find(|a| a.features().contains(want)) else {
        println!("{}", serde_json::json!({"skipped": "no adapter has cooperative matrices, f16 and subgroups"}));
        return;
    };
    let ts = wgpu::Features::TIMESTAMP_QUERY;
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("coop_probe"),
        required_features: want | (adapter.features() & ts),
        required_limits: adapter.limits(),
        // SAFETY: the experimental feature is used as wgpu documents it; the probes exist to
        // find out whether it computes what it should.
        experimental_features: unsafe { wgpu::ExperimentalFeatures::enabled() },
        memory_hints: wgpu::MemoryHints::Performance,
        trace: wgpu::Trace::Off,
    }))
    .unwrap_or_else(|e| {
        eprintln!("coop_probe: the adapter refused a device with cooperative matrices: {e}");
        std::process::exit(1);
    });
    let gpu = Gpu { timestamps: device.features().contains(ts), device, queue };
    probes(&gpu);
    // The staged variants (entry point, whether it reads A and B as vec4<f16>), checked on small
    // products with edges, then timed.
    let general = [(128, 128, 32), (200, 136, 72), (384, 256, 1000)];
    let staged = [("gemm_base", false), ("gemm_clamp", false), ("gemm_wide", false), ("gemm_vec", true)];
    for (entry, vec) in staged.into_iter().filter(|_| flag("COOP_PROBE_STAGED")) {
        for (m, n, k) in general {
            gemm(&gpu, GEMM, entry, vec, (128, 128), m, n, k, false);
        }
        gemm(&gpu, GEMM, entry, vec, (128, 128), size, size, size, true);
    }
    // The unstaged variants (m, n multiples of the tile, k of 64; `const` reads pitches of 4096
    // compiled in: the timed size only), each checked on a small product, then timed.
    let direct = [
        ("d4x4_2x2_plain", 128, 128),
        ("d4x4_2x2_const", 128, 128),
        ("d4x4_2x2_m8", 128, 128),
        ("d4x4_2x2_fn", 128, 128),
        ("d4x4_2x2_i32", 128, 128),
        ("d4x4_2x2_crate", 128, 128),
        ("d4x4_2x2_k32", 128, 128),
        ("d4x4_2x2_k64", 128, 128),
        ("d4x4_2x2_pf", 128, 128),
        ("d2x4_4x2_plain", 128, 128),
        ("d2x4_4x2_pf", 128, 128),
        ("d2x4_2x2_pf", 64, 128),
        ("d4x2_2x4_pf", 128, 128),
        ("d4x4_2x4_plain", 128, 256),
        ("d4x4_1x1_plain", 64, 64),
        ("d4x4_2x1_plain", 128, 64),
    ];
    let all = flag("COOP_PROBE_ALL");
    let timed: Vec<_> = direct.iter().filter(|d| size == 4096 || !d.0.ends_with("const")).take(if all { direct.len() } else { 2 }).collect();
    for (entry, tm, tn) in timed.iter().filter(|d| !d.0.ends_with("const")) {
        gemm(&gpu, GEMM_DIRECT, entry, false, (*tm, *tn), 256, 512, 1024, false);
    }
    let module = gpu.device.create_shader_module(wgpu::ShaderModuleDescriptor { label: Some("gemm_direct"), source: wgpu::ShaderSource::Wgsl(GEMM_DIRECT.into()) });
    // The crate's own kernel (shaders/kernels/matmul_coop.wgsl as the crate compiles it for a
    // GPU), as registered and with workgroups walking along n first (tile order swapped).
    let crate_src = strided_wgpu::advanced::internal::shaders::source_for("matmul_coop", false).expect("matmul_coop");
    let swapped = crate_src.replace("let tile_m = id % mp_u.work.x;\n    let rest = id / mp_u.work.x;\n    let tile_n = rest % mp_u.work.y;", "let tile_n = id % mp_u.work.y;\n    let rest = id / mp_u.work.y;\n    let tile_m = rest % mp_u.work.x;");
    assert_ne!(crate_src, swapped, "the tile order lines moved");
    let crate_module = gpu.device.create_shader_module(wgpu::ShaderModuleDescriptor { label: Some("matmul_coop"), source: wgpu::ShaderSource::Wgsl(crate_src.into()) });
    let swapped_module = gpu.device.create_shader_module(wgpu::ShaderModuleDescriptor { label: Some("matmul_coop_swapped"), source: wgpu::ShaderSource::Wgsl(swapped.into()) });
    let first = Operands::new(&gpu, size);
    for round in 0..3 {
        for (entry, tm, tn) in &timed {
            first.time(&gpu, &module, entry, (*tm, *tn), round, None);
        }
        for (name, m, pitches) in [("crate", &crate_module, true), ("crate_uniform_pitch", &crate_module, false), ("crate_n_first", &swapped_module, true)] {
            first.time(&gpu, m, name, (128, 128), round, Some(pitches));
        }
    }
    if FAILED.load(std::sync::atomic::Ordering::Relaxed) {
        std::process::exit(1);
    }
}

/// One square product's operands and output, for timing variants on the same buffers.
struct Operands {
    n: usize,
    a: Vec<f32>,
    b: Vec<f32>,
    bufs: [wgpu::Buffer; 4],
}

impl Operands {
    fn new(gpu: &Gpu, n: usize) -> Operands {
        let (a, b) = (values(n * n, 7), values(n * n, 8));
        let storage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC;
        let params = GemmParams { m: n as u32, n: n as u32, k: n as u32, lda: n as u32, ldb: n as u32, ldc: n as u32, pad: [0; 2] };
        // Cleared before each variant runs (`time`): a kernel that writes nothing must not pass
        // on the product the previous one left.
        let out = gpu.device.create_buffer(&wgpu::BufferDescriptor { label: None, size: (n * n * 4) as u64, usage: storage | wgpu::BufferUsages::COPY_DST, mapped_at_creation: false });
        let bufs = [buffer(gpu, bytemuck::bytes_of(&params), wgpu::BufferUsages::UNIFORM), buffer(gpu, &halves(&a), storage), buffer(gpu, &halves(&b), storage), out];
        Operands { n, a, b, bufs }
    }

    /// Times `entry` (20 products in one pass, GPU timestamps) and checks 4096 sampled outputs.
    /// `crate_kernel`: the crate's `matmul_coop` (its uniform, its bindings 0-4 with A's buffer
    /// again as the unread addend, its one-dimensional grid), with the pitches compiled in or not.
    fn time(&self, gpu: &Gpu, module: &wgpu::ShaderModule, entry: &str, tile: (usize, usize), round: usize, crate_kernel: Option<bool>) {
        let n = self.n;
        let scope = gpu.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let nn = n as f64;
        let constants: Vec<(&str, f64)> = match crate_kernel {
            Some(true) => vec![("A_PITCH", nn), ("B_PITCH", nn), ("Y_PITCH", nn), ("WG", 128.0)],
            Some(false) => vec![("WG", 128.0)],
            None => vec![],
        };
        let options = wgpu::PipelineCompilationOptions { constants: &constants, ..Default::default() };
        let entry_point = if crate_kernel.is_some() { "main" } else { entry };
        let pipeline = gpu.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor { label: Some(entry), layout: None, module, entry_point: Some(entry_point), compilation_options: options, cache: None });
        let layout = pipeline.get_bind_group_layout(0);
        let tiles = (n / 128) as u32;
        // MatmulParams: dims, work, sa, sb, sc, so, base, epi, split (vec4 each).
        let words: [u32; 36] = [n as u32, n as u32, n as u32, 1, tiles, tiles, 1, tiles * tiles, n as u32, 1, 0, 0, n as u32, 1, 0, 0, 0, 0, 0, 0, n as u32, 1, 0, 0, 0, 0, 0, 0, 1f32.to_bits(), 0, 0, 0, 1, n as u32, 0, 0];
        let params = buffer(gpu, bytemuck::cast_slice(&words), wgpu::BufferUsages::UNIFORM);
        let entries: Vec<wgpu::BindGroupEntry> = match crate_kernel {
            Some(_) => vec![
                wgpu::BindGroupEntry { binding: 0, resource: params.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 1, resource: self.bufs[1].as_entire_binding() },
                wgpu::BindGroupEntry { binding: 2, resource: self.bufs[2].as_entire_binding() },
                wgpu::BindGroupEntry { binding: 3, resource: self.bufs[1].as_entire_binding() },
                wgpu::BindGroupEntry { binding: 4, resource: self.bufs[3].as_entire_binding() },
            ],
            None => self.bufs.iter().enumerate().map(|(i, b)| wgpu::BindGroupEntry { binding: i as u32, resource: b.as_entire_binding() }).collect(),
        };
        let bind = gpu.device.create_bind_group(&wgpu::BindGroupDescriptor { label: None, layout: &layout, entries: &entries });
        // Without timestamp queries the products still run and are checked; `gpu_ms` is null.
        let query = gpu.timestamps.then(|| gpu.device.create_query_set(&wgpu::QuerySetDescriptor { label: None, ty: wgpu::QueryType::Timestamp, count: 2 }));
        let resolve = gpu.device.create_buffer(&wgpu::BufferDescriptor { label: None, size: 16, usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC, mapped_at_creation: false });
        let reps = 20;
        for timed in [false, true] {
            let mut enc = gpu.device.create_command_encoder(&Default::default());
            if !timed {
                enc.clear_buffer(&self.bufs[3], 0, None);
            }
            {
                let tw = query.as_ref().filter(|_| timed).map(|query| wgpu::ComputePassTimestampWrites { query_set: query, beginning_of_pass_write_index: Some(0), end_of_pass_write_index: Some(1) });
                let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor { label: None, timestamp_writes: tw });
                pass.set_pipeline(&pipeline);
                pass.set_bind_group(0, &bind, &[]);
                for _ in 0..if timed { reps } else { 2 } {
                    match crate_kernel {
                        Some(_) => pass.dispatch_workgroups(tiles * tiles, 1, 1),
                        None => pass.dispatch_workgroups(n.div_ceil(tile.1) as u32, n.div_ceil(tile.0) as u32, 1),
                    }
                }
            }
            if let Some(query) = query.as_ref().filter(|_| timed) {
                enc.resolve_query_set(query, 0..2, &resolve, 0);
            }
            gpu.queue.submit([enc.finish()]);
        }
        let err = pollster::block_on(scope.pop());
        let s = query.is_some().then(|| {
            let ticks: Vec<u64> = bytemuck::cast_slice(&read_bytes(gpu, &resolve, 16)).to_vec();
            ticks[1].saturating_sub(ticks[0]) as f64 * gpu.queue.get_timestamp_period() as f64 * 1e-9 / reps as f64
        });
        let got = read(gpu, &self.bufs[3], (n * n * 4) as u64);
        let wrong = (0..4096)
            .map(|i| (i * 2654435761usize) % (n * n))
            .filter(|&e| {
                let (i, j) = (e / n, e % n);
                let want: f64 = (0..n).map(|r| self.a[i * n + r] as f64 * self.b[r * n + j] as f64).sum();
                want as f32 != got[e]
            })
            .count();
        // A wrong product or an error of a timed kernel (the crate's own among them, checked
        // only here) fails the probe as the small checks do.
        let ok = wrong == 0 && err.is_none();
        report(ok, serde_json::json!({"timed": entry, "round": round, "n": n, "gpu_ms": s.map(|s| s * 1e3), "tflops": s.map(|s| 2.0 * (n * n * n) as f64 / s * 1e-12), "wrong": wrong, "error": err.map(|e| e.to_string()), "ok": ok}));
    }
}

/// Small integers over 4: exact in f16, their products and sums exact in f32.
fn values(n: usize, seed: u32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(2654435761).wrapping_add(12345);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(1664525).wrapping_add(1013904223);
            ((s >> 24) % 9) as f32 / 4.0 - 1.0
        })
        .collect()
}

fn mm(a: &[f32], b: &[f32], n: usize) -> Vec<f32> {
    let mut o = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            o[i * n + j] = (0..n).map(|k| a[i * n + k] * b[k * n + j]).sum();
        }
    }
    o
}

fn t(x: &[f32], n: usize) -> Vec<f32> {
    (0..n * n).map(|e| x[(e % n) * n + e / n]).collect()
}

fn add(x: &[f32], y: &[f32]) -> Vec<f32> {
    x.iter().zip(y).map(|(p, q)| p + q).collect()
}

fn buffer(gpu: &Gpu, bytes: &[u8], usage: wgpu::BufferUsages) -> wgpu::Buffer {
    gpu.device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: None, contents: bytes, usage })
}

fn read(gpu: &Gpu, src: &wgpu::Buffer, len: u64) -> Vec<f32> {
    let staging = gpu.device.create_buffer(&wgpu::BufferDescriptor { label: None, size: len, usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST, mapped_at_creation: false });
    let mut enc = gpu.device.create_command_encoder(&Default::default());
    enc.copy_buffer_to_buffer(src, 0, &staging, 0, len);
    gpu.queue.submit([enc.finish()]);
    staging.slice(..).map_async(wgpu::MapMode::Read, |r| r.expect("map"));
    gpu.device.poll(wgpu::PollType::wait_indefinitely()).expect("poll");
    let out = bytemuck::cast_slice(&staging.slice(..).get_mapped_range().expect("mapped")).to_vec();
    out
}

fn halves(x: &[f32]) -> Vec<u8> {
    let h: Vec<f16> = x.iter().map(|&v| f16::from_f32(v)).collect();
    bytemuck::cast_slice(&h).to_vec()
}

fn probes(gpu: &Gpu) {
    let n = 16;
    let (a, b, c) = (values(512, 1), values(512, 2), values(256, 3));
    let (a16, b16) = (&a[..256], &b[..256]);
    let ab = mm(a16, b16, n);
    // A [16, 32] @ B [32, 16] for mma_k32.
    let ab32: Vec<f32> = (0..256).map(|e| (0..32).map(|k| a[(e / 16) * 32 + k] * b[k * 16 + e % 16]).sum()).collect();
    let candidates: Vec<(&str, Vec<f32>)> = vec![
        ("cin", c.clone()),
        ("cin^T", t(&c, n)),
        ("AB", ab.clone()),
        ("AB+cin", add(&ab, &c)),
        ("BA+cin", add(&mm(b16, a16, n), &c)),
        ("A^TB+cin", add(&mm(&t(a16, n), b16, n), &c)),
        ("AB^T+cin", add(&mm(a16, &t(b16, n), n), &c)),
        ("A^TB^T+cin", add(&mm(&t(a16, n), &t(b16, n), n), &c)),
        ("(AB)^T+cin", add(&t(&ab, n), &c)),
        ("A32B32+cin", add(&ab32, &c)),
    ];
    let module = gpu.device.create_shader_module(wgpu::ShaderModuleDescriptor { label: Some("probes"), source: wgpu::ShaderSource::Wgsl(PROBES.into()) });
    let storage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC;
    let (ba, bb, bc) = (buffer(gpu, &halves(&a), storage), buffer(gpu, &halves(&b), storage), buffer(gpu, bytemuck::cast_slice(&c), storage));
    for (entry, expect) in [("store_rm", "cin"), ("store_cm", "cin"), ("store_mixed", "cin^T"), ("mma_rr", "AB+cin"), ("mma_cc", "BA+cin"), ("mma_zero", "AB"), ("mma_k32", "A32B32+cin"), ("mma_wg", "AB+cin")] {
        let scope = gpu.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let pipeline = gpu.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor { label: Some(entry), layout: None, module: &module, entry_point: Some(entry), compilation_options: Default::default(), cache: None });
        let out = buffer(gpu, &[0u8; 1024], storage);
        let layout = pipeline.get_bind_group_layout(0);
        // Each entry point's auto layout holds only the bindings it uses.
        let uses: Vec<(u32, &wgpu::Buffer)> = match entry {
            "store_rm" | "store_cm" | "store_mixed" => vec![(2, &bc), (3, &out)],
            "mma_zero" => vec![(0, &ba), (1, &bb), (3, &out)],
            _ => vec![(0, &ba), (1, &bb), (2, &bc), (3, &out)],
        };
        let entries: Vec<wgpu::BindGroupEntry> = uses.iter().map(|&(binding, buf)| wgpu::BindGroupEntry { binding, resource: buf.as_entire_binding() }).collect();
        let bind = gpu.device.create_bind_group(&wgpu::BindGroupDescriptor { label: None, layout: &layout, entries: &entries });
        let mut enc = gpu.device.create_command_encoder(&Default::default());
        {
            let mut pass = enc.begin_compute_pass(&Default::default());
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &bind, &[]);
            pass.dispatch_workgroups(1, 1, 1);
        }
        gpu.queue.submit([enc.finish()]);
        let err = pollster::block_on(scope.pop());
        let got = read(gpu, &out, 1024);
        let equals: Vec<&str> = candidates.iter().filter(|(_, v)| v.iter().zip(&got).all(|(p, q)| p == q)).map(|(k, _)| *k).collect();
        let wrong = candidates.iter().find(|(k, _)| *k == expect).map(|(_, v)| v.iter().zip(&got).filter(|(p, q)| p != q).count()).unwrap_or(256);
        report(wrong == 0 && err.is_none(), serde_json::json!({"probe": entry, "expect": expect, "ok": wrong == 0 && err.is_none(), "wrong": wrong, "equals": equals, "error": err.map(|e| e.to_string()), "first": &got[..8]}));
    }
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct GemmParams {
    m: u32,
    n: u32,
    k: u32,
    lda: u32,
    ldb: u32,
    ldc: u32,
    pad: [u32; 2],
}

#[allow(clippy::too_many_arguments)]
fn gemm(gpu: &Gpu, src: &str, entry: &str, vec: bool, tile: (usize, usize), m: usize, n: usize, k: usize, timed: bool) {
    let a: Vec<f32> = values(m * k, 7);
    let b: Vec<f32> = values(k * n, 8);
    let storage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC;
    let params = GemmParams { m: m as u32, n: n as u32, k: k as u32, lda: k as u32, ldb: n as u32, ldc: n as u32, pad: [0; 2] };
    let bu = buffer(gpu, bytemuck::bytes_of(&params), wgpu::BufferUsages::UNIFORM);
    let (ba, bb) = (buffer(gpu, &halves(&a), storage), buffer(gpu, &halves(&b), storage));
    let out = gpu.device.create_buffer(&wgpu::BufferDescriptor { label: None, size: (m * n * 4) as u64, usage: storage, mapped_at_creation: false });
    let scope = gpu.device.push_error_scope(wgpu::ErrorFilter::Validation);
    let module = gpu.device.create_shader_module(wgpu::ShaderModuleDescriptor { label: Some("gemm"), source: wgpu::ShaderSource::Wgsl(src.into()) });
    let pipeline = gpu.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor { label: Some(entry), layout: None, module: &module, entry_point: Some(entry), compilation_options: Default::default(), cache: None });
    let layout = pipeline.get_bind_group_layout(0);
    let (ia, ib) = if vec { (4, 5) } else { (1, 2) };
    let bind = gpu.device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &layout,
        entries: &[
            wgpu::BindGroupEntry { binding: 0, resource: bu.as_entire_binding() },
            wgpu::BindGroupEntry { binding: ia, resource: ba.as_entire_binding() },
            wgpu::BindGroupEntry { binding: ib, resource: bb.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 3, resource: out.as_entire_binding() },
        ],
    });
    let groups = (n.div_ceil(tile.1) as u32, m.div_ceil(tile.0) as u32);
    let reps = if timed { 20 } else { 1 };
    let query = gpu.timestamps.then(|| gpu.device.create_query_set(&wgpu::QuerySetDescriptor { label: None, ty: wgpu::QueryType::Timestamp, count: 2 }));
    let run = |reps: usize| {
        let mut enc = gpu.device.create_command_encoder(&Default::default());
        {
            let tw = query.as_ref().map(|q| wgpu::ComputePassTimestampWrites { query_set: q, beginning_of_pass_write_index: Some(0), end_of_pass_write_index: Some(1) });
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor { label: None, timestamp_writes: tw });
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &bind, &[]);
            for _ in 0..reps {
                pass.dispatch_workgroups(groups.0, groups.1, 1);
            }
        }
        let resolve = gpu.device.create_buffer(&wgpu::BufferDescriptor { label: None, size: 16, usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC, mapped_at_creation: false });
        if let Some(q) = &query {
            enc.resolve_query_set(q, 0..2, &resolve, 0);
        }
        gpu.queue.submit([enc.finish()]);
        resolve
    };
    run(1);
    let t0 = Instant::now();
    let resolve = run(reps);
    gpu.device.poll(wgpu::PollType::wait_indefinitely()).expect("poll");
    let wall = t0.elapsed().as_secs_f64() / reps as f64;
    let gpu_s = query.as_ref().map(|_| {
        let ticks: Vec<u64> = bytemuck::cast_slice(&read_bytes(gpu, &resolve, 16)).to_vec();
        ticks[1].saturating_sub(ticks[0]) as f64 * gpu.queue.get_timestamp_period() as f64 * 1e-9 / reps as f64
    });
    let err = pollster::block_on(scope.pop());
    let got = read(gpu, &out, (m * n * 4) as u64);
    // Every output of a small product, 4096 sampled ones of a large one, against f64 sums
    // (the inputs are exact in f16 and every partial sum is exact in f32).
    let samples: Vec<usize> = if m * n <= 1 << 18 { (0..m * n).collect() } else { (0..4096).map(|i| (i * 2654435761usize) % (m * n)).collect() };
    let wrong = samples
        .iter()
        .filter(|&&e| {
            let (i, j) = (e / n, e % n);
            let want: f64 = (0..k).map(|r| a[i * k + r] as f64 * b[r * n + j] as f64).sum();
            want as f32 != got[e]
        })
        .count();
    let flops = 2.0 * (m * n * k) as f64;
    report(
        wrong == 0 && err.is_none(),
        serde_json::json!({"gemm": entry, "mnk": [m, n, k], "checked": samples.len(), "wrong": wrong, "ok": wrong == 0 && err.is_none(), "error": err.map(|e| e.to_string()),
            "wall_ms": wall * 1e3, "gpu_ms": gpu_s.map(|s| s * 1e3), "tflops": gpu_s.map(|s| flops / s * 1e-12)}),
    );
}

fn read_bytes(gpu: &Gpu, src: &wgpu::Buffer, len: u64) -> Vec<u8> {
    bytemuck::cast_slice(&read(gpu, src, len)).to_vec()
}
