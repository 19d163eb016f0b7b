//! Tensors on top of the runtime: the context, device tensors, batches and graphs, and one
//! file per op family (`copy`, `elementwise`, `reduce`, `matmul`, `conv`, `pool`, `shape`)
//! with its device entry points (`impl Batch`, the trait's `impl` for `DeviceTensor`, `*_with`)
//! and, for the tuned families, its kernel choice and `tune_*` calls.

pub mod batch;
pub mod context;
pub mod conv;
pub mod copy;
pub mod elementwise;
pub(crate) mod fuse;
pub mod graph;
pub mod matmul;
pub mod norm;
#[cfg(not(target_arch = "wasm32"))]
pub mod noop;
pub mod reduce;
pub mod pool;
pub mod shape;
pub mod tensor;
pub mod timing;
