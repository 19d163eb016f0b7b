//! [`GpuTimer`]: the time recorded work takes on the GPU, for benchmarks.

use crate::error::Result;
use crate::gpu::batch::Batch;
use crate::gpu::context::GpuContext;
use crate::runtime::submit::Drive;
use crate::runtime::timing::Timer;

/// Measures recorded work on one context's GPU (by timestamp queries where the adapter has
/// them, else by wall clock on native targets; on WebGPU without timestamps a measurement is
/// [`crate::Error::Unsupported`], and a browser may round its timestamps, Chrome's to 100 us
/// unless its developer features are on). Each measurement is its own submission, with query
/// resources of its own: never call it inside a recording.
pub struct GpuTimer {
    ctx: GpuContext,
    timer: Timer,
}

impl GpuTimer {
    /// A timer for `ctx`.
    pub fn new(ctx: &GpuContext) -> Result<GpuTimer> {
        Ok(GpuTimer { ctx: ctx.clone(), timer: Timer::new(&ctx.rt)? })
    }

    /// Whether GPU timestamps (rather than the wall clock) time the work.
    pub fn uses_timestamps(&self) -> bool {
        self.timer.uses_timestamps()
    }

    /// Records what `record` adds to a batch between two timestamps, submits it, and resolves
    /// to the time it took on the GPU in milliseconds.
    pub async fn time_async(&self, record: impl FnOnce(&mut Batch<'_>) -> Result<()>) -> Result<f64> {
        self.time_with(Drive::Poll, record).await
    }

    /// [`GpuTimer::time_async`], blocking (native only).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn time(&self, record: impl FnOnce(&mut Batch<'_>) -> Result<()>) -> Result<f64> {
        pollster::block_on(self.time_with(Drive::Wait, record))
    }

    async fn time_with(&self, drive: Drive, record: impl FnOnce(&mut Batch<'_>) -> Result<()>) -> Result<f64> {
        self.timer
            .time(drive, |enc, _| {
                let mut b = self.ctx.record_into(enc);
                record(&mut b)
            })
            .await
    }
}
