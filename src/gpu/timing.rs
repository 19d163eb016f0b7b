//! Timing recorded GPU work: timestamp queries written around it when the adapter has
//! `TIMESTAMP_QUERY_INSIDE_ENCODERS`, else the wall clock around submit and wait. Used by
//! the autotuner and the benchmarks.

use crate::error::{Error, Result};
use crate::gpu::context::GpuContext;
use crate::gpu::tensor::Batch;

/// Reusable timestamp resources for one context.
pub struct GpuTimer {
    ctx: GpuContext,
    queries: Option<wgpu::QuerySet>,
    resolve: wgpu::Buffer,
    read: wgpu::Buffer,
}

impl GpuTimer {
    /// A timer for `ctx`.
    pub fn new(ctx: &GpuContext) -> Result<GpuTimer> {
        let d = ctx.device();
        ctx.scoped("timer", || {
            let queries = ctx
                .adapter()
                .timestamps
                .then(|| d.create_query_set(&wgpu::QuerySetDescriptor { label: Some("timer"), ty: wgpu::QueryType::Timestamp, count: 2 }));
            let buffer = |usage| d.create_buffer(&wgpu::BufferDescriptor { label: Some("timer"), size: 16, usage, mapped_at_creation: false });
            Ok(GpuTimer {
                ctx: ctx.clone(),
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

    /// Records what `record` adds to a batch, submits it, waits, and returns the time it took
    /// on the GPU in milliseconds.
    pub fn time(&self, record: impl FnOnce(&mut Batch) -> Result<()>) -> Result<f64> {
        let ctx = &self.ctx;
        let mut batch = ctx.batch();
        if let Some(q) = &self.queries {
            batch.write_timestamp(q, 0)?;
        }
        let t0 = std::time::Instant::now();
        record(&mut batch)?;
        let Some(q) = &self.queries else {
            batch.submit_and_wait()?;
            return Ok(t0.elapsed().as_secs_f64() * 1e3);
        };
        batch.write_timestamp(q, 1)?;
        batch.resolve_timestamps(q, 2, &self.resolve)?;
        batch.submit_and_wait()?;
        let ticks = ctx.scoped("timer", || {
            let mut enc = ctx.device().create_command_encoder(&Default::default());
            enc.copy_buffer_to_buffer(&self.resolve, 0, &self.read, 0, 16);
            let idx = ctx.queue().submit([enc.finish()]);
            let slice = self.read.slice(..);
            let (tx, rx) = futures_intrusive::channel::shared::oneshot_channel();
            slice.map_async(wgpu::MapMode::Read, move |r| {
                let _ = tx.send(r);
            });
            ctx.wait("timer", idx)?;
            match pollster::block_on(rx.receive()) {
                Some(Ok(())) => {}
                _ => return Err(Error::Gpu { op: "timer", message: "mapping the timestamps failed".into() }),
            }
            let ticks = {
                let view = slice.get_mapped_range().map_err(|e| Error::Gpu { op: "timer", message: e.to_string() })?;
                let v: &[u64] = bytemuck::cast_slice(&view);
                v[1].saturating_sub(v[0])
            };
            self.read.unmap();
            Ok(ticks)
        })?;
        Ok(ticks as f64 * ctx.queue().get_timestamp_period() as f64 / 1e6)
    }
}
