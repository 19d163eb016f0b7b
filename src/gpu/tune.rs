//! One-time measurement of kernel variants (autotuning), remembered per context.
//!
//! A batched transpose can run several kernels; which is fastest depends on the adapter (a
//! CPU-backed adapter pays dearly for barriers, a GPU for uncoalesced access) and on the
//! shape. The first copy of each shape class measures the variants that apply, on scratch
//! buffers holding a representative piece of the plan (at most [`TUNE_ELEMENTS`] elements),
//! so that work already recorded in a batch is never disturbed. The winner is kept for the
//! life of the context; [`GpuContext::tuned_choices`] lists them.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::gpu::context::{lock, GpuContext};
use crate::gpu::copy::{CopyPath, Operand};
use crate::gpu::timing::GpuTimer;
use crate::gpu::pool::Pooled;
use crate::plan::{CopyPlan, Cuts};

/// The most elements a tuning run copies.
pub const TUNE_ELEMENTS: usize = 1 << 20;

/// A shape class: element size, whether dims are 4-aligned (the vec4 kernel applies), and the
/// magnitudes of the two transposed dims and of the batch.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ShapeClass {
    /// Bytes per element.
    pub element_bytes: usize,
    /// Whether the vec4 transpose kernel applies.
    pub vec4: bool,
    /// Whether the narrow transpose kernel (a transposed dim of 2 or 3) applies.
    pub narrow: bool,
    /// floor(log2) of the destination-contiguous dim, the source-contiguous dim, the batch.
    pub log2: [u32; 3],
}

/// The variants measured for a batched transpose of `element_bytes`-byte elements.
fn candidates(element_bytes: usize, vec4: bool, narrow: bool) -> Vec<CopyPath> {
    let mut c = Vec::new();
    if narrow {
        for wg in [64, 256] {
            c.push(CopyPath::TransposeNarrow { wg });
        }
    }
    if vec4 {
        // Block edges that are whole vec4 words of U = 16 / element_bytes elements.
        for tile in [16, 8] {
            if tile % (16 / element_bytes as u32) == 0 {
                for wg in [64, 256] {
                    c.push(CopyPath::TransposeVec4 { wg, tile, order: 0 });
                }
            }
        }
    }
    if element_bytes == 4 {
        c.push(CopyPath::Transpose { wg: 64, tile: 8, order: 0 });
    }
    c.push(CopyPath::TransposeTile { wg: 256, tile: 32 });
    c.push(CopyPath::TransposeTile { wg: 64, tile: 16 });
    c.push(CopyPath::Gather { wg: 256, ept: 16 });
    c
}

impl GpuContext {
    /// The kernel for a batched-transpose `plan` (whose source-contiguous plan dim is `dim`),
    /// measured once per shape class.
    pub(crate) fn tuned_transpose(&self, plan: &CopyPlan, dim: usize, dtype: DType, vec4: bool, narrow: bool) -> Result<CopyPath> {
        let m = plan.sizes()[0];
        let n = plan.sizes()[dim];
        let batch = plan.numel() / (m * n);
        let log2 = |x: usize| usize::BITS - 1 - x.max(1).leading_zeros();
        let class = ShapeClass { element_bytes: dtype.size(), vec4, narrow, log2: [log2(m), log2(n), log2(batch)] };
        if let Some(&p) = lock(&self.inner.tuned).get(&class) {
            return Ok(p);
        }
        // A representative piece, moved to scratch buffers.
        let piece = plan.pieces(Cuts::OUTERMOST, |p| p.numel() <= TUNE_ELEMENTS).ok().and_then(|v| v.into_iter().next()).unwrap_or_else(|| plan.clone());
        let ((dlo, dhi), (slo, shi)) = piece.spans();
        // Keep the offsets' alignment (the vec4 kernels need multiples of 4 elements).
        let (dlo, slo) = (dlo / 16 * 16, slo / 16 * 16);
        let piece = piece.rebased(dlo, slo);
        let es = dtype.size() as u64;
        let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST;
        let d = &self.inner.device;
        let dst = self.scoped("tune", || Ok(Pooled::get(d, &self.inner.pool, (dhi - dlo + 1) as u64 * es, usage)))?;
        let src = self.scoped("tune", || Ok(Pooled::get(d, &self.inner.pool, (shi - slo + 1) as u64 * es, usage)))?;
        let timer = GpuTimer::new(self)?;
        let mut best: Option<(f64, CopyPath)> = None;
        for path in candidates(dtype.size(), vec4, narrow) {
            let mut times = Vec::new();
            for _ in 0..4 {
                let run = timer.time(|b| {
                    let rec = b.rec.as_mut().ok_or_else(|| Error::invalid("tune", "batch already submitted"))?;
                    self.scoped("tune", || self.record_plan(rec, &piece, Operand { buffer: dst.buffer(), dtype }, Operand { buffer: src.buffer(), dtype }, path))
                });
                let Ok(ms) = run else { break };
                times.push(ms);
            }
            // The first run compiles the pipeline; keep the best of the rest.
            if let Some(t) = times.iter().skip(1).copied().reduce(f64::min) {
                if best.is_none_or(|(b, _)| t < b) {
                    best = Some((t, path));
                }
            }
        }
        let choice = best.map_or(CopyPath::Gather { wg: 256, ept: 16 }, |(_, p)| p);
        lock(&self.inner.tuned).insert(class, choice);
        Ok(choice)
    }

    /// The kernel choices measured so far on this context, by shape class.
    pub fn tuned_choices(&self) -> Vec<(ShapeClass, CopyPath)> {
        lock(&self.inner.tuned).iter().map(|(k, v)| (k.clone(), *v)).collect()
    }
}
