//! [`ShapeOps`] on host tensors: the CPU reference copies.

use crate::dtype::DType;
use crate::elementwise::Elementwise;
use crate::error::Result;
use crate::host::HostTensor;
use crate::layout::MemoryFormat;
use crate::shape::{fill_fits, ShapeOps};

impl ShapeOps for HostTensor {
    fn new_tensor(&self, op: &'static str, shape: &[usize], dtype: DType, format: MemoryFormat) -> Result<HostTensor> {
        HostTensor::zeros_for(op, shape, dtype, format)
    }
    fn beside(&self, _other: &HostTensor) -> bool {
        true
    }
    fn scalar_tensor(&self, value: f64, dtype: DType) -> Result<HostTensor> {
        scalar(value, dtype)
    }
    fn copy_pieces(_op: &'static str, pieces: &[(HostTensor, HostTensor)]) -> Result<()> {
        for (dst, src) in pieces {
            dst.copy_(src)?;
        }
        Ok(())
    }
}

/// A \[1\] host tensor of `dtype` holding `value` (a constant pad's fill): PyTorch's `fill_`
/// converts it with `checked_convert`, so a value outside the type's range (a finite one past
/// its largest; for integers also a NaN or an infinity) is an error, and an integer type takes
/// the value truncated. Floats round through f32, as PyTorch's 16-bit types' constructors do.
pub(crate) fn scalar(value: f64, dtype: DType) -> Result<HostTensor> {
    fill_fits(value, dtype)?;
    if dtype.is_float() {
        HostTensor::from_vec(vec![value as f32], &[1])?.to(dtype)
    } else {
        // Exact in i64 (truncated toward zero, within the type's range).
        let v = value as i64;
        match dtype {
            DType::U32 => HostTensor::from_vec(vec![v as u32], &[1]),
            _ => HostTensor::from_vec(vec![v as i32], &[1])?.to(dtype),
        }
    }
}
