//! Tensors on top of the runtime: the context, device tensors, batches, the convolution API,
//! and the tuning calls that wire the kernel families to the tuner.

pub mod batch;
pub mod context;
pub mod conv;
pub mod elementwise;
pub mod graph;
pub mod matmul;
pub mod reduce;
pub mod pool;
pub mod shape;
pub mod tensor;
pub mod timing;
pub mod tuning;
