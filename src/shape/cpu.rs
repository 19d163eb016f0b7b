//! [`ShapeOps`] on host tensors: the CPU reference copies.

use crate::dtype::DType;
use crate::elementwise::Elementwise;
use crate::error::Result;
use crate::host::HostTensor;
use crate::layout::MemoryFormat;
use crate::shape::ShapeOps;

impl ShapeOps for HostTensor {
    fn new_tensor(&self, shape: &[usize], dtype: DType, format: MemoryFormat) -> Result<HostTensor> {
        HostTensor::zeros(shape, dtype, format)
    }
    fn scalar_tensor(&self, value: f64, dtype: DType) -> Result<HostTensor> {
        scalar(value, dtype)
    }
    fn copy_pieces(pieces: &[(HostTensor, HostTensor)]) -> Result<()> {
        for (dst, src) in pieces {
            dst.copy_(src)?;
        }
        Ok(())
    }
}

/// A \[1\] host tensor of `dtype` holding `value`: floats through f32, integers through i32.
pub(crate) fn scalar(value: f64, dtype: DType) -> Result<HostTensor> {
    if dtype.is_float() {
        HostTensor::from_vec(vec![value as f32], &[1])?.to(dtype)
    } else {
        HostTensor::from_vec(vec![value as i32], &[1])?.to(dtype)
    }
}
