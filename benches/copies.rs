//! Criterion benchmarks of the device copies (wall clock of record + submit + wait; the
//! `bench` subcommand of the main program gives GPU-timestamp medians and ratios).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use strided_wgpu::{DeviceTensor, DType, GpuContext, MemoryFormat, Strided};

fn copies(c: &mut Criterion) {
    let ctx = match GpuContext::new() {
        Ok(ctx) => ctx,
        Err(e) => {
            eprintln!("!!! no GPU adapter ({e}); skipping the copy benchmarks");
            return;
        }
    };
    let zeros = |shape: &[usize]| DeviceTensor::zeros(&ctx, shape, DType::F32, MemoryFormat::Contiguous).expect("alloc");
    let x = zeros(&[8, 64, 56, 56]);
    let nhwc = DeviceTensor::empty(&ctx, &[8, 64, 56, 56], DType::F32, MemoryFormat::ChannelsLast).expect("alloc");
    let flat = zeros(&[8 * 64 * 56 * 56]);
    let flat2 = zeros(&[8 * 64 * 56 * 56]);
    let slice = x.slice(2, 0, 56, 2).and_then(|v| v.slice(3, 0, 56, 2)).expect("view");
    let slice_dst = zeros(slice.shape());
    let expand = zeros(&[1, 64, 1, 1]).expand(&[8, 64, 56, 56]).expect("view");
    // Rows of 28 contiguous elements (7 vec4 words) from every other source row.
    let short_rows = x.slice(2, 0, 56, 2).and_then(|v| v.slice(3, 0, 28, 1)).expect("view");
    let bytes = 2 * 8 * 64 * 56 * 56 * 4;
    let mut g = c.benchmark_group("copy_f32_8x64x56x56");
    g.sample_size(20);
    let cases: [(&str, &DeviceTensor, &DeviceTensor, u64); 5] = [
        ("contiguous", &flat2, &flat, bytes),
        ("nchw_to_nhwc", &nhwc, &x, bytes),
        ("slice_step", &slice_dst, &slice, bytes / 4),
        ("expand", &x, &expand, bytes),
        ("short_rows", &slice_dst, &short_rows, bytes / 4),
    ];
    for (name, dst, src, b) in cases {
        g.throughput(Throughput::Bytes(b));
        g.bench_function(name, |bench| {
            bench.iter(|| {
                let mut batch = ctx.batch();
                batch.copy_(dst, src).expect("copy");
                batch.submit_and_wait().expect("submit");
            })
        });
    }
    g.finish();
}

criterion_group!(benches, copies);
criterion_main!(benches);
