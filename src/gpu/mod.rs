//! Everything that touches wgpu: the context, device tensors, and the copy kernels.

pub mod context;
pub mod conv;
pub mod conv_tune;
pub mod copy;
mod pool;
pub mod shaders;
pub mod tensor;
pub mod timing;
pub mod tune;
