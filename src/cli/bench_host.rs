//! `bench --only host`: the host time of a call, on wgpu's `noop` backend (every command is
//! validated and recorded, nothing runs), posing as a discrete GPU so that the GPU kernels are
//! chosen. What no GPU is needed to see: the crate's own cost per call, per recorded op and per
//! forward pass of ResNet-18 (batch 8, 224x224, channels-last), eager and replayed as a graph,
//! and of a layer norm (one kernel).

use std::time::Instant;

use strided_wgpu::{Conv2d, Conv2dOptions, DeviceTensor, DType, Elementwise, GpuContext, Graph, HostTensor, MemoryFormat, Result};
use strided_wgpu::advanced::SubmitPolicy;
use strided_wgpu::ops::{group_norm, layer_norm};

use crate::cli::resnet::err;
use strided_wgpu::advanced::internal::noop_context;
use crate::resnet_model::{formula_params, Description, Net, Outputs, Residual};

/// Median microseconds of `f` over `rounds` rounds of `per` calls each (after one warming
/// round), divided by `ops` per call.
fn time_us(rounds: usize, per: usize, ops: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    for _ in 0..per {
        f()?;
    }
    let mut v = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let t = Instant::now();
        for _ in 0..per {
            f()?;
        }
        v.push(t.elapsed().as_secs_f64() * 1e6 / (per * ops) as f64);
    }
    Ok(crate::cli::measure::median(&v))
}

/// The rows: (op, host microseconds, note).
pub fn rows() -> Result<Vec<(&'static str, f64, String)>> {
    let ctx = noop_context()?;
    let mut rows = Vec::new();
    let a = DeviceTensor::from_slice(&ctx, &[1f32], &[1])?;
    let b = DeviceTensor::from_slice(&ctx, &[2f32], &[1])?;
    // A submission a call, whatever STRIDED_WGPU_SUBMIT says (the rows' labels name it).
    ctx.set_submit_policy(SubmitPolicy::EachCall)?;
    rows.push(("add_one_element", time_us(9, 200, 1, || a.add(&b).map(drop))?, "a.add(&b), eager: recorded and submitted (SubmitPolicy::EachCall)".to_string()));
    ctx.set_submit_policy(SubmitPolicy::Deferred)?;
    rows.push(("add_one_element_deferred", time_us(9, 200, 1, || a.add(&b).map(drop))?, "a.add(&b), eager, held back (SubmitPolicy::Deferred: a submission each 32 calls)".to_string()));
    ctx.set_submit_policy(SubmitPolicy::EachCall)?;
    const CHAIN: usize = 100;
    rows.push((
        "batch_op",
        time_us(9, 5, CHAIN, || {
            let mut batch = ctx.batch();
            let mut x = a.clone();
            for _ in 0..CHAIN {
                x = batch.add(&x, &b)?;
            }
            batch.submit().map(drop)
        })?,
        format!("{CHAIN} dependent one-element adds in one Batch, submitted; per op"),
    ));
    let x = DeviceTensor::empty(&ctx, &[8, 64, 56, 56], DType::F32, MemoryFormat::ChannelsLast)?;
    let w = DeviceTensor::empty(&ctx, &[64, 64, 3, 3], DType::F32, MemoryFormat::Contiguous)?;
    let bias = DeviceTensor::empty(&ctx, &[64], DType::F32, MemoryFormat::Contiguous)?;
    let o = Conv2dOptions { padding: (1, 1), relu: true, ..Default::default() };
    rows.push(("conv2d_3x3", time_us(9, 50, 1, || x.conv2d(&w, Some(&bias), &o).map(drop))?, "[8,64,56,56] channels-last, 64 3x3 filters, bias and ReLU, eager".to_string()));
    let tokens = DeviceTensor::empty(&ctx, &[4096, 768], DType::F32, MemoryFormat::Contiguous)?;
    let (lw, lb) = (DeviceTensor::empty(&ctx, &[768], DType::F32, MemoryFormat::Contiguous)?, DeviceTensor::empty(&ctx, &[768], DType::F32, MemoryFormat::Contiguous)?);
    let ln = || layer_norm(&tokens, &[768], Some(&lw), Some(&lb), 1e-5).map(drop);
    let before = ctx.record_counts();
    ln()?;
    let c = ctx.record_counts() - before;
    rows.push(("layer_norm", time_us(9, 50, 1, ln)?, format!("[4096, 768] over its last dim, weight and bias (BERT-base's), eager: {} submit, {} pass, {} dispatch", c.submits, c.passes, c.dispatches)));
    let vae = DeviceTensor::empty(&ctx, &[1, 512, 64, 64], DType::F32, MemoryFormat::Contiguous)?;
    let (gw, gb) = (DeviceTensor::empty(&ctx, &[512], DType::F32, MemoryFormat::Contiguous)?, DeviceTensor::empty(&ctx, &[512], DType::F32, MemoryFormat::Contiguous)?);
    let gn = || group_norm(&vae, 32, Some(&gw), Some(&gb), 1e-5).map(drop);
    let before = ctx.record_counts();
    gn()?;
    let c = ctx.record_counts() - before;
    rows.push(("group_norm_vae", time_us(9, 50, 1, gn)?, format!("[1, 512, 64, 64] in 32 groups (a diffusion VAE's), eager: {} submit, {} pass, {} dispatches (its 32 rows cut into chunks on a GPU)", c.submits, c.passes, c.dispatches)));
    let d = Description::resnet18(8, 224);
    let params = formula_params(&d).map_err(err)?;
    let net = Net::build(&d, &params, MemoryFormat::ChannelsLast).and_then(|n| n.to_device(&ctx)).map_err(err)?;
    let rgba = DeviceTensor::upload(&ctx, &HostTensor::from_vec(d.image(), &[8, 224, 224, 4])?)?;
    let graph = forward_rows(&ctx, &net, &rgba, Residual::Fused, ["resnet18_eager", "resnet18_graph_replay"], ["ResNet-18 b8 forward, channels-last", "the same forward captured, replayed"], &mut rows)?;
    ctx.set_submit_policy(SubmitPolicy::Deferred)?;
    let before = ctx.record_counts();
    net.forward(&rgba).map_err(err)?;
    ctx.flush()?;
    let c = ctx.record_counts() - before;
    let us = time_us(7, 3, 1, || net.forward(&rgba).map_err(err).and_then(|_| ctx.flush().map(drop)))?;
    ctx.set_submit_policy(SubmitPolicy::EachCall)?;
    rows.push(("resnet18_eager_deferred", us, format!("the forward eager, its calls held back (SubmitPolicy::Deferred: submitted after 1, 2, 4 and 8 calls, the rest by the flush after the forward): {} submits, {} passes, {} dispatches", c.submits, c.passes, c.dispatches)));
    if std::env::var_os("STRIDED_WGPU_DUMP").is_some() {
        let mut h = std::collections::BTreeMap::new();
        for k in graph.dispatches() {
            *h.entry(k).or_insert(0) += 1;
        }
        eprintln!("{h:#?}");
    }
    // The same in float16 (what the GPU kernels read as they are: fewer dispatches than the
    // f32 forward wherever a kernel converts nothing).
    let half = Net::build(&d, &params, MemoryFormat::ChannelsLast).and_then(|n| n.with_dtype(DType::F16)).and_then(|n| n.to_device(&ctx)).map_err(err)?;
    forward_rows(&ctx, &half, &rgba, Residual::Fused, ["resnet18_f16_eager", "resnet18_f16_graph_replay"], ["the forward in float16, channels-last", "the float16 forward captured, replayed"], &mut rows)?;
    // The blocks' sums and ReLUs as torchvision's code writes them (in place, after the
    // convolution): two more dispatches a block eagerly, folded back into the convolutions
    // when captured (issue 53: a graph with fewer dispatches than the eager forward).
    forward_rows(&ctx, &net, &rgba, Residual::InPlace, ["resnet18_unfused_eager", "resnet18_unfused_graph_replay"], ["the forward with each block's `out += identity; relu_(out)` in place, as torchvision's BasicBlock", "the same captured (the adds and ReLUs folded into the convolutions), replayed"], &mut rows)?;
    rows.push((
        "resnet18_graph_encode",
        time_us(7, 10, 1, || {
            let mut b = ctx.batch();
            b.replay(&graph, &[])?;
            b.finish().map(drop)
        })?,
        "the replay encoded into a command buffer, not submitted (the noop backend's submit zeroes and copies buffers in host memory for the clears and copies)".to_string(),
    ));
    Ok(rows)
}

/// A network's forward as two rows (`names`: eager, then captured and replayed), each note
/// (`notes`) followed by the forward's counts; returns the graph.
#[allow(clippy::too_many_arguments)]
fn forward_rows(ctx: &GpuContext, net: &Net<DeviceTensor>, rgba: &DeviceTensor, residual: Residual, names: [&'static str; 2], notes: [&str; 2], rows: &mut Vec<(&'static str, f64, String)>) -> Result<Graph<Outputs<DeviceTensor>>> {
    let before = ctx.record_counts();
    net.forward_with(rgba, residual).map_err(err)?;
    ctx.flush()?;
    let eager = ctx.record_counts() - before;
    // A whole forward a timed call: its calls, then what they held back submitted.
    rows.push((names[0], time_us(7, 3, 1, || net.forward_with(rgba, residual).map_err(err).and_then(|_| ctx.flush().map(drop)))?, format!("{}: {} submits, {} passes, {} dispatches", notes[0], eager.submits, eager.passes, eager.dispatches)));
    let graph = ctx.capture(&[rgba], || net.forward_with(rgba, residual).map_err(err))?;
    let c = graph.counts();
    rows.push((names[1], time_us(7, 10, 1, || graph.replay(&[]).map(drop))?, format!("{}: {} submit, {} passes, {} dispatches", notes[1], c.submits, c.passes, c.dispatches)));
    Ok(graph)
}

/// Prints the rows as a table or JSON lines.
pub fn print(rows: &[(&'static str, f64, String)], json: bool) {
    if !json {
        println!("host rows; adapter: wgpu noop backend posing as a discrete GPU (nothing runs): host time per call, median of rounds");
        println!("{:<24} {:>10}  note", "op", "host_us");
    }
    for (op, us, note) in rows {
        if json {
            println!("{}", serde_json::json!({ "part": "host", "op": op, "host_us": us, "note": note }));
        } else {
            println!("{op:<24} {us:>10.2}  {note}");
        }
    }
}
