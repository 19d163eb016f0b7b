//! Timing recorded GPU work: timestamp queries written around it when the adapter has
//! `TIMESTAMP_QUERY_INSIDE_ENCODERS`; where it has only `TIMESTAMP_QUERY` (Chromium's WebGPU),
//! the same two timestamps written by two empty compute passes around the work (the first at
//! its beginning, the last at its end); else (native only) the wall clock around submit and
//! completion. The tuner and the benchmarks use it, never inside a recording.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::runtime::record::{self, Command, Keep, RecordCounts, Recorder};
use crate::runtime::submit::{encode_submit_and_map, submit_and_map, Drive};
use crate::runtime::submit::MapGuard;
use crate::runtime::Runtime;

/// Times recorded work on one runtime. Each measurement has its own query set and buffers, so
/// measurements may run concurrently, and one that is dropped half-way leaves nothing behind.
pub(crate) struct Timer {
    rt: Arc<Runtime>,
}

impl Timer {
    pub fn new(rt: &Arc<Runtime>) -> Result<Timer> {
        Ok(Timer { rt: rt.clone() })
    }

    /// Whether GPU timestamps (rather than the wall clock) time the work.
    pub fn uses_timestamps(&self) -> bool {
        self.rt.report.timestamps || self.rt.report.pass_timestamps
    }

    /// Records what `record` adds to a fresh recording, submits it, and resolves to the time
    /// it took on the GPU in milliseconds.
    pub async fn time_recording(&self, drive: Drive, record: impl FnOnce(&mut Recorder) -> Result<()>) -> Result<f64> {
        let rt = self.rt.clone();
        self.time(drive, |enc, keep| {
            let mut rec = Recorder::default();
            record(&mut rec)?;
            rt.scoped("timer", || {
                let (commands, held) = rec.finish(&rt.queue);
                // Not committed (this submission is the timer's): a later replay runs the
                // run-once work again if this one did.
                rt.encode(&commands, enc, Some(&mut Vec::new()));
                keep.hold(held);
                Ok(())
            })?;
            Ok(())
        })
        .await
    }

    /// Records what `record` adds to a fresh encoder, submits it, and resolves to the time it
    /// took on the GPU in milliseconds. An error while this thread captures a graph.
    pub async fn time(&self, drive: Drive, record: impl FnOnce(&mut wgpu::CommandEncoder, &mut Keep) -> Result<()>) -> Result<f64> {
        let rt = &self.rt;
        rt.check_not_capturing("timer")?;
        let mut keep = Keep::default();
        let mut enc = rt.scoped("timer", || Ok(rt.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("timer") })))?;
        let in_encoder = rt.report.timestamps;
        if !in_encoder && !rt.report.pass_timestamps {
            record(&mut enc, &mut keep)?;
            return wall_clock(rt, enc, keep, drive).await;
        }
        let (queries, resolve, read) = rt.scoped("timer", || {
            let q = rt.device.create_query_set(&wgpu::QuerySetDescriptor { label: Some("timer"), ty: wgpu::QueryType::Timestamp, count: 2 });
            let resolve = rt.buffer("timer", 16, wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC)?;
            let read = MapGuard::new(rt, rt.buffer("timer", 16, wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST)?);
            stamp(&mut enc, &q, 0, in_encoder);
            Ok((q, resolve, read))
        })?;
        record(&mut enc, &mut keep)?;
        rt.scoped("timer", || {
            stamp(&mut enc, &queries, 1, in_encoder);
            enc.resolve_query_set(&queries, 0..2, resolve.buffer(), 0);
            enc.copy_buffer_to_buffer(resolve.buffer(), 0, read.buffer(), 0, 16);
            Ok(())
        })?;
        keep.hold(resolve);
        keep.hold(read.held());
        keep.hold(queries);
        submit_and_map(rt, "timer", enc, keep, &read, 0..16, drive).await?;
        let ticks = {
            let view = read.buffer().slice(0..16).get_mapped_range().map_err(|e| Error::Gpu { op: "timer", message: e.to_string() })?;
            let v: &[u64] = bytemuck::cast_slice(&view);
            // A pair out of order or unwritten reads 0 ms, not an error: Metal on Apple
            // silicon resolves the empty passes' stamps (`stamp` without the in-encoder
            // feature) as 0 (wgpu-native #625), and tuning there keeps its first candidate.
            v[1].saturating_sub(v[0])
        };
        Ok(ticks as f64 * rt.queue.get_timestamp_period() as f64 / 1e6)
    }
}

impl Timer {
    /// Runs `commands` once with each dispatch in a compute pass of its own whose beginning
    /// and end write timestamps (copies and clears run untimed between them), and resolves to
    /// each dispatch's GPU time in milliseconds, in order. Needs `TIMESTAMP_QUERY`. A pass per
    /// dispatch serializes the dispatches, so the sum is at least what one pass takes. `once`:
    /// a graph's run-once work, encoded first (untimed) where one of its constants was written
    /// since it ran, the check made under the lock the encoding takes (`runtime/watch.rs`).
    pub async fn profile<H: Send + Sync + 'static>(&self, drive: Drive, commands: &[Command], held: H, once: Option<&Arc<crate::runtime::watch::Constants>>) -> Result<Vec<f64>> {
        const OP: &str = "profile";
        let rt = &self.rt;
        rt.check_not_capturing(OP)?;
        if !rt.report.pass_timestamps {
            return Err(Error::unsupported(OP, format!("{} has no timestamp queries (TIMESTAMP_QUERY)", rt.report.name)));
        }
        let flat = record::flatten(commands);
        let n = flat.iter().filter(|c| matches!(c, Command::Dispatch { .. })).count();
        if n == 0 {
            return Ok(Vec::new());
        }
        // WebGPU's limit on a query set's size.
        if 2 * n > 4096 {
            return Err(Error::Limit { op: OP, what: format!("timing {n} dispatches"), limit: "queries per query set", requested: 2 * n as u64, max: 4096 });
        }
        let bytes = 16 * n as u64;
        let (mut enc, queries, resolve, read) = rt.scoped(OP, || {
            let enc = rt.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(OP) });
            let q = rt.device.create_query_set(&wgpu::QuerySetDescriptor { label: Some(OP), ty: wgpu::QueryType::Timestamp, count: 2 * n as u32 });
            let resolve = rt.buffer(OP, bytes, wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC)?;
            let read = MapGuard::new(rt, rt.buffer(OP, bytes, wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST)?);
            Ok((enc, q, resolve, read))
        })?;
        // Encoded under the held calls' lock, the writes counted as they run (`runtime/watch.rs`).
        let encode = || {
            let mut keep = Keep::default();
            rt.scoped(OP, || {
                if let Some(k) = once {
                    if let Some(now) = k.stale() {
                        rt.encode(&k.once, &mut enc, Some(&mut keep.reruns));
                        keep.reruns.push((k.clone(), now));
                    }
                }
                let mut i = 0u32;
                for c in &flat {
                    match c {
                        Command::Dispatch { pipeline, group, grid, .. } => {
                            rt.watch.note(c, None);
                            let writes = wgpu::ComputePassTimestampWrites { query_set: &queries, beginning_of_pass_write_index: Some(2 * i), end_of_pass_write_index: Some(2 * i + 1) };
                            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some(OP), timestamp_writes: Some(writes) });
                            pass.set_pipeline(pipeline);
                            pass.set_bind_group(0, group, &[]);
                            pass.dispatch_workgroups(grid.0, grid.1, 1);
                            i += 1;
                            rt.counters.add(RecordCounts { passes: 1, dispatches: 1, ..RecordCounts::default() });
                        }
                        other => {
                            rt.encode(std::slice::from_ref(other), &mut enc, Some(&mut Vec::new()));
                        }
                    }
                }
                enc.resolve_query_set(&queries, 0..2 * n as u32, resolve.buffer(), 0);
                enc.copy_buffer_to_buffer(resolve.buffer(), 0, read.buffer(), 0, bytes);
                rt.counters.add(RecordCounts { transfers: 1, ..RecordCounts::default() });
                Ok(())
            })?;
            keep.hold(resolve);
            keep.hold(read.held());
            keep.hold(queries);
            keep.hold(held);
            Ok((enc, keep))
        };
        encode_submit_and_map(rt, OP, encode, &read, 0..bytes, drive).await?;
        let view = read.buffer().slice(0..bytes).get_mapped_range().map_err(|e| Error::Gpu { op: OP, message: e.to_string() })?;
        let v: &[u64] = bytemuck::cast_slice(&view);
        let period = rt.queue.get_timestamp_period() as f64 / 1e6;
        Ok(v.chunks(2).map(|t| t[1].saturating_sub(t[0]) as f64 * period).collect())
    }
}

/// Writes timestamp `index` of `queries` at this point of `enc`: directly where encoders take
/// timestamps, else through an empty compute pass whose beginning (index 0) or end (index 1)
/// writes it.
fn stamp(enc: &mut wgpu::CommandEncoder, queries: &wgpu::QuerySet, index: u32, in_encoder: bool) {
    if in_encoder {
        enc.write_timestamp(queries, index);
        return;
    }
    let (beginning_of_pass_write_index, end_of_pass_write_index) = if index == 0 { (Some(0), None) } else { (None, Some(index)) };
    let _ = enc.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("timer"), timestamp_writes: Some(wgpu::ComputePassTimestampWrites { query_set: queries, beginning_of_pass_write_index, end_of_pass_write_index }) });
}

/// Submits `enc` and resolves to the milliseconds until its work finished, by the wall clock:
/// from when everything submitted before (eager calls held back included) has finished, so
/// that the measurement is `enc`'s work alone.
#[cfg(not(target_arch = "wasm32"))]
async fn wall_clock(rt: &Arc<Runtime>, enc: wgpu::CommandEncoder, keep: Keep, drive: Drive) -> Result<f64> {
    let mut before = rt.flush("timer")?;
    if let Some(done) = &mut before.done {
        done.drive = drive;
    }
    before.finished().await?;
    let t0 = std::time::Instant::now();
    let mut sub = crate::runtime::submit::submit(rt, "timer", enc, keep)?;
    if let Some(done) = &mut sub.done {
        done.drive = drive;
    }
    sub.finished().await?;
    Ok(t0.elapsed().as_secs_f64() * 1e3)
}

/// On wasm the wall clock is not read: timing needs timestamp queries.
#[cfg(target_arch = "wasm32")]
async fn wall_clock(_: &Arc<Runtime>, _: wgpu::CommandEncoder, _: Keep, _: Drive) -> Result<f64> {
    Err(Error::unsupported("timer", "the adapter has no timestamp queries inside encoders, and the wall clock is not read on wasm"))
}
