//! Timing recorded GPU work: timestamp queries written around it when the adapter has
//! `TIMESTAMP_QUERY_INSIDE_ENCODERS`, else (native only) the wall clock around submit and
//! completion. The tuner and the benchmarks use it, never inside a recording.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::runtime::submit::{submit_and_map, Drive, Keep};
use crate::runtime::Runtime;

/// Reusable timestamp resources for one runtime.
pub(crate) struct Timer {
    rt: Arc<Runtime>,
    queries: Option<wgpu::QuerySet>,
    resolve: wgpu::Buffer,
    read: wgpu::Buffer,
}

impl Timer {
    pub fn new(rt: &Arc<Runtime>) -> Result<Timer> {
        let d = &rt.device;
        rt.scoped("timer", || {
            let queries = rt.report.timestamps.then(|| d.create_query_set(&wgpu::QuerySetDescriptor { label: Some("timer"), ty: wgpu::QueryType::Timestamp, count: 2 }));
            let buffer = |usage| d.create_buffer(&wgpu::BufferDescriptor { label: Some("timer"), size: 16, usage, mapped_at_creation: false });
            Ok(Timer {
                rt: rt.clone(),
                queries,
                resolve: buffer(wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC),
                read: buffer(wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST),
            })
        })
    }

    /// Whether GPU timestamps (rather than the wall clock) time the work.
    pub fn uses_timestamps(&self) -> bool {
        self.queries.is_some()
    }

    /// Records what `record` adds to a fresh encoder, submits it, and resolves to the time it
    /// took on the GPU in milliseconds.
    pub async fn time(&self, drive: Drive, record: impl FnOnce(&mut wgpu::CommandEncoder, &mut Keep) -> Result<()>) -> Result<f64> {
        let rt = &self.rt;
        let mut keep = Keep::default();
        let mut enc = rt.scoped("timer", || Ok(rt.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("timer") })))?;
        let Some(q) = &self.queries else {
            record(&mut enc, &mut keep)?;
            return wall_clock(rt, enc, keep, drive).await;
        };
        rt.scoped("timer", || {
            enc.write_timestamp(q, 0);
            Ok(())
        })?;
        record(&mut enc, &mut keep)?;
        rt.scoped("timer", || {
            enc.write_timestamp(q, 1);
            enc.resolve_query_set(q, 0..2, &self.resolve, 0);
            enc.copy_buffer_to_buffer(&self.resolve, 0, &self.read, 0, 16);
            Ok(())
        })?;
        submit_and_map(rt, "timer", enc, keep, &self.read, 0..16, drive).await?;
        let ticks = {
            let view = self.read.slice(..).get_mapped_range().map_err(|e| Error::Gpu { op: "timer", message: e.to_string() })?;
            let v: &[u64] = bytemuck::cast_slice(&view);
            v[1].saturating_sub(v[0])
        };
        self.read.unmap();
        Ok(ticks as f64 * rt.queue.get_timestamp_period() as f64 / 1e6)
    }
}

/// Submits `enc` and resolves to the milliseconds until its work finished, by the wall clock.
#[cfg(not(target_arch = "wasm32"))]
async fn wall_clock(rt: &Arc<Runtime>, enc: wgpu::CommandEncoder, keep: Keep, drive: Drive) -> Result<f64> {
    let t0 = std::time::Instant::now();
    let mut sub = crate::runtime::submit::submit(rt, "timer", enc, keep)?;
    sub.done.drive = drive;
    sub.finished().await?;
    Ok(t0.elapsed().as_secs_f64() * 1e3)
}

/// On wasm the wall clock is not read: timing needs timestamp queries.
#[cfg(target_arch = "wasm32")]
async fn wall_clock(_: &Arc<Runtime>, _: wgpu::CommandEncoder, _: Keep, _: Drive) -> Result<f64> {
    Err(Error::invalid("timer", "the adapter has no timestamp queries inside encoders, and the wall clock is not read on wasm"))
}
