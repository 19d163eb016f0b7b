//! # strided-wgpu
//!
//! PyTorch-style strided tensor views for Rust, materialized by WGSL compute shaders on any
//! adapter wgpu drives (Vulkan, Metal, DX12, GL) and on software adapters.
//!
//! * [`Layout`]: shape, strides and storage offset: pure host values whose operations
//!   (permute, slice, select, expand, view, ...) match PyTorch's exactly.
//! * [`IterPlan`]: what an elementwise traversal of an output and its inputs reduces to, as
//!   PyTorch's TensorIterator builds it; a copy ([`CopyPlan`]) is its one-input case, and
//!   every copy and elementwise kernel, CPU or GPU, receives one.
//! * [`Elementwise`]: PyTorch's elementwise ops and casts on host and device tensors, with its
//!   type promotion ([`result_type`]).
//! * [`HostTensor`]: views over shared host memory, and the CPU reference path that every
//!   device result is checked against.
//!
//! ```
//! use strided_wgpu::{HostTensor, MemoryFormat, Strided};
//! let x = HostTensor::from_vec((0..24).map(|i| i as f32).collect(), &[1, 2, 3, 4]).unwrap();
//! let nhwc = x.contiguous(MemoryFormat::ChannelsLast).unwrap();
//! assert_eq!(nhwc.shape(), &[1, 2, 3, 4]);          // the logical shape stays NCHW
//! assert_eq!(nhwc.strides(), &[24, 1, 8, 2]);        // only the strides change
//! assert_eq!(nhwc.to_vec::<f32>().unwrap(), x.to_vec::<f32>().unwrap());
//! ```

#![deny(missing_docs)]

/// The README's examples run as doctests, so the README stays true.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

pub mod conv;
mod cpu;
pub mod dtype;
pub mod elementwise;
mod error;
mod gpu;
mod host;
mod kernels;
pub mod layout;
pub mod matmul;
mod norm;
mod plan;
pub mod pool;
pub mod reduce;
mod runtime;
pub mod shape;
mod strided;
mod tune;

// What a user writes: tensors, the context and its recordings, types, layouts, errors, the op
// traits and their options, the convolution.
pub use conv::{Conv1x1Options, Conv2d, Conv2dOptions};
pub use gpu::conv::{conv1x1, conv2d};
pub use dtype::{DType, Element};
pub use elementwise::{can_cast, result_type, Elementwise, Input, Op, Scalar, Target};
pub use error::{Error, Result};
pub use gpu::batch::Batch;
pub use gpu::context::GpuContext;
pub use gpu::graph::Graph;
pub use gpu::tensor::DeviceTensor;
pub use gpu::timing::GpuTimer;
pub use host::HostTensor;
pub use layout::{Layout, MemoryFormat, Overlap, Reshape};
pub use matmul::{Activation, Matmul};
pub use norm::{batch_norm, fold_batch_norm};
pub use plan::{CopyPlan, IterPlan};
pub use pool::{AvgPool2dOptions, MaxPool2dOptions, Pool2d};
pub use reduce::{Dims, Reduce, ReduceOp, ScanOp};
pub use shape::{cat, stack, InterpolateMode, InterpolateOptions, PadMode, ShapeOps};
pub use runtime::submit::Submission;
pub use runtime::AdapterReport;
pub use strided::Strided;
pub use tune::TuningPolicy;

/// For advanced use: forced kernels, the tuner's shape classes and candidates, the plan's
/// classification, and the limits kernels work within. A call with a forced kernel checks it
/// as the automatic choice does (the same eligibility check), and returns
/// [`Error::Unsupported`](crate::Error) where the kernel cannot run the call or the adapter.
pub mod advanced {
    pub use crate::conv::{conv1x1_shape, conv2d_shape, Conv2dShape};
    pub use crate::gpu::conv::{conv1x1_with, conv2d_add_with, conv2d_with};
    pub use crate::gpu::pool::window_with;
    pub use crate::runtime::record::RecordCounts;
    pub use crate::kernels::pool::{classify as pool_classify, PoolKernel};
    pub use crate::kernels::conv::class::{conv_candidates, ConvClass, TUNE_ELEMENTS};
    pub use crate::kernels::conv::ConvKernel;
    pub use crate::kernels::copy::{vec4_default, CopyPath, ShapeClass, MAX_DIMS};
    pub use crate::kernels::elementwise::{gather_default, rows_default, rows_eligible, ElementwisePath};
    pub use crate::kernels::matmul::{MatmulClass, MatmulKernel};
    pub use crate::kernels::reduce_abi::Work as ReduceWork;
    pub use crate::kernels::reduce_vec::{reduce_kernel, ReduceKernel};
    pub use crate::matmul::{addmm_plan, bmm_plan, linear_plan, matmul_plan, mm_plan, MatmulPlan};
    pub use crate::plan::{CopyKind, MAX_OPERANDS};

    /// What only the crate's own tests and benches need: every pipeline the tuner may pick on a
    /// GPU (the register-budget test compiles them with a GPU compiler) and the shader
    /// registry. Not a stable interface.
    #[doc(hidden)]
    pub mod internal {
        pub use crate::kernels::conv::gpu_pipelines as conv_gpu_pipelines;
        pub use crate::kernels::copy::gpu_pipelines as copy_gpu_pipelines;
        pub use crate::kernels::elementwise::gpu_pipelines as elementwise_gpu_pipelines;
        pub use crate::kernels::matmul::gpu_pipelines as matmul_gpu_pipelines;
        pub use crate::kernels::reduce::gpu_pipelines as reduce_gpu_pipelines;
        pub use crate::kernels::pool::gpu_pipelines as pool_gpu_pipelines;
        pub use crate::kernels::shaders;
        pub use crate::kernels::shaders::PipelineSpec;
    }
}
