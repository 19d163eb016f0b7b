//! Pooling and bilinear resampling on device tensors (the kernel is `crate::kernels::pool`).

use crate::dtype::DType;
use crate::error::Result;
use crate::gpu::batch::Batch;
use crate::gpu::tensor::DeviceTensor;
use crate::kernels::pool;
use crate::pool::{Pool2d, Window};
use crate::strided::Strided;

impl Pool2d for DeviceTensor {
    /// Records the window kernel into a new output (and indices) and submits it, not waiting.
    fn window(&self, g: &Window) -> Result<(DeviceTensor, Option<DeviceTensor>)> {
        let ctx = self.context();
        let out = DeviceTensor::empty(ctx, &g.out_shape(), self.dtype(), g.format)?;
        let idx = if g.indices { Some(DeviceTensor::empty(ctx, &g.out_shape(), DType::I32, g.format)?) } else { None };
        let mut batch = ctx.batch();
        batch.window(g, self, &out, idx.as_ref())?;
        let _ = batch.submit()?;
        Ok((out, idx))
    }
}

impl Batch<'_> {
    /// Records the window `g` of `x` into `out` (new, dense) and `idx`.
    pub(crate) fn window(&mut self, g: &Window, x: &DeviceTensor, out: &DeviceTensor, idx: Option<&DeviceTensor>) -> Result<()> {
        let operands: Vec<&DeviceTensor> = [Some(x), Some(out), idx].into_iter().flatten().collect();
        self.check_context(g.op, &operands)?;
        pool::eligible(g, x.dtype(), out.layout())?;
        let ctx = self.context().clone();
        let (enc, keep) = self.parts(g.op)?;
        for t in operands {
            keep.hold(t.storage());
        }
        pool::record(&ctx.rt, enc, keep, g, x.dtype(), x.layout(), x.buffer(), out.layout(), out.buffer(), idx.map(|i| i.buffer()))
    }
}
