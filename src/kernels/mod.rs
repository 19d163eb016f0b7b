//! Kernel families. Each records into a caller's encoder, given a resolved kernel choice, and
//! holds its temporaries in the recording's `Keep`; none submits or waits. Each path has one
//! eligibility check (`copy::prepare`, the convolution's `vectors` and shape checks), used by
//! the automatic choice and by forced paths alike.

pub(crate) mod abi;
pub(crate) mod dispatch;
pub mod conv;
pub(crate) mod coop;
pub mod copy;
pub mod elementwise;
pub mod matmul;
pub mod reduce;
pub mod pool;
pub mod shaders;
pub(crate) mod split;
