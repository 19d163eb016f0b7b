//! [`ShapeOps`] on device tensors: the copies of one op recorded into one batch.

use crate::dtype::DType;
use crate::error::Result;
use crate::gpu::tensor::DeviceTensor;
use crate::layout::MemoryFormat;
use crate::shape::ShapeOps;

impl ShapeOps for DeviceTensor {
    fn new_tensor(&self, shape: &[usize], dtype: DType, format: MemoryFormat) -> Result<DeviceTensor> {
        DeviceTensor::empty(self.context(), shape, dtype, format)
    }
    fn scalar_tensor(&self, value: f64, dtype: DType) -> Result<DeviceTensor> {
        DeviceTensor::upload(self.context(), &crate::shape::cpu::scalar(value, dtype)?)
    }
    /// Every copy in one batch, submitted once (or held back under `SubmitPolicy::Deferred`),
    /// never waited for.
    fn copy_pieces(pieces: &[(DeviceTensor, DeviceTensor)]) -> Result<()> {
        let Some((first, _)) = pieces.first() else { return Ok(()) };
        let mut batch = first.context().batch();
        for (dst, src) in pieces {
            batch.copy_(dst, src)?;
        }
        batch.submit_eager()?;
        Ok(())
    }
}
