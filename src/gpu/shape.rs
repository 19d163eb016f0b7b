//! [`ShapeOps`] on device tensors: the copies of one op recorded into one batch.

use crate::dtype::DType;
use crate::error::Result;
use crate::gpu::tensor::DeviceTensor;
use crate::layout::MemoryFormat;
use crate::shape::ShapeOps;

impl ShapeOps for DeviceTensor {
    fn new_tensor(&self, op: &'static str, shape: &[usize], dtype: DType, format: MemoryFormat) -> Result<DeviceTensor> {
        DeviceTensor::empty_for(op, self.context(), shape, dtype, format)
    }
    fn beside(&self, other: &DeviceTensor) -> bool {
        self.context().same_device(other.context())
    }
    fn scalar_tensor(&self, value: f64, dtype: DType) -> Result<DeviceTensor> {
        DeviceTensor::upload(self.context(), &crate::shape::cpu::scalar(value, dtype)?)
    }
    /// Every copy in one batch, submitted once (or held back under `SubmitPolicy::Deferred`),
    /// never waited for.
    fn copy_pieces(op: &'static str, pieces: &[(DeviceTensor, DeviceTensor)]) -> Result<()> {
        let Some((first, _)) = pieces.first() else { return Ok(()) };
        let mut batch = first.context().batch();
        for (dst, src) in pieces {
            batch.copy_(dst, src)?;
        }
        batch.submit_eager(op)?;
        Ok(())
    }
    /// One kernel (`Batch::layer_norm` / `Batch::group_norm`) in a batch of its own, submitted
    /// (or held back under `SubmitPolicy::Deferred`), never waited for; `None` past a binding,
    /// and on a software adapter past rows an invocation walks whole (`kernels::norm::eager_fits`),
    /// where the composed ops run it.
    fn fused_norm(&self, call: &crate::shape::NormCall<'_, DeviceTensor>) -> Result<Option<DeviceTensor>> {
        if !crate::gpu::norm::fused_fits(self, call) {
            return Ok(None);
        }
        let mut batch = self.context().batch();
        let y = batch.norm(self, call)?;
        batch.submit_eager(crate::gpu::norm::name(call.kind))?;
        Ok(Some(y))
    }
}
