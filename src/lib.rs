//! # strided-wgpu
//!
//! PyTorch-style strided tensor views for Rust, materialized by WGSL compute shaders on any
//! adapter wgpu drives (Vulkan, Metal, DX12, GL) and on software adapters.
//!
//! * [`Layout`]: shape, strides and storage offset: pure host values whose operations
//!   (permute, slice, select, expand, view, ...) match PyTorch's exactly.
//! * [`layout::IterPlan`]: what an elementwise traversal of an output and its inputs reduces to, as
//!   PyTorch's TensorIterator builds it; a copy ([`layout::CopyPlan`]) is its one-input case, and
//!   every copy and elementwise kernel, CPU or GPU, receives one.
//! * [`Elementwise`]: PyTorch's elementwise ops and casts on host and device tensors, with its
//!   type promotion ([`ops::result_type`]).
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

mod conv;
mod copy;
mod dtype;
mod elementwise;
mod error;
mod gpu;
mod host;
mod kernels;
pub mod layout;
mod matmul;
mod norm;
mod plan;
mod pool;
mod reduce;
mod runtime;
mod shape;
mod strided;
mod tune;

// What a porting user types: tensors, the context, its recordings and graphs, errors, types,
// layouts, the op traits and their common options. At most 30 names here, modules included
// (`tests/public_api.rs` counts them); the rest lives in `ops`, `layout` and `advanced`.
pub use conv::{Conv2d, Conv2dOptions};
pub use dtype::{DType, Element};
pub use elementwise::{Elementwise, Op, Scalar};
pub use error::{Error, Result};
pub use gpu::batch::Batch;
pub use gpu::context::GpuContext;
pub use gpu::graph::Graph;
pub use gpu::tensor::DeviceTensor;
pub use host::HostTensor;
pub use layout::{Layout, MemoryFormat};
pub use matmul::{Activation, Matmul};
pub use pool::{AvgPool2dOptions, MaxPool2dOptions, Pool2d};
pub use reduce::{Dims, Reduce};
pub use runtime::submit::Submission;
pub use shape::ShapeOps;
pub use strided::Strided;
pub use tune::TuningPolicy;

/// The rest of the op surface, as `torch` and `torch.nn.functional` name it: free functions
/// (`cat`, `stack`, `conv2d`, `batch_norm`, `layer_norm`, ...), the general forms behind the traits'
/// shorthands (`Input`, `Target`, `ReduceOp`, `ScanOp`) and the less common option types.
pub mod ops {
    pub use crate::conv::Conv1x1Options;
    pub use crate::elementwise::{can_cast, result_type, Input, PromoteArg, Target};
    pub use crate::gpu::conv::{conv1x1, conv2d};
    pub use crate::norm::{batch_norm, fold_batch_norm, group_norm, layer_norm};
    pub use crate::reduce::{ReduceOp, ScanOp};
    pub use crate::shape::{cat, stack, InterpolateMode, InterpolateOptions, PadMode};
}

/// For advanced use: forced kernels, the tuner's shape classes (`ShapeClass`, `ConvClass`,
/// `MatmulClass`: what `GpuContext::tuned_choices`, `tuned_conv_choices` and
/// `tuned_matmul_choices` return) and candidates, and the limits kernels work within (the
/// plan's classification is [`layout::CopyKind`](crate::layout::CopyKind)). A call with a forced kernel checks it
/// as the automatic choice does (the same eligibility check), and returns
/// [`Error::Unsupported`](crate::Error) where the kernel cannot run the call or the adapter,
/// [`Error::Limit`](crate::Error) where its workgroup size or count passes the adapter's limits,
/// and [`Error::InvalidArgument`](crate::Error) for a zero size or count.
pub mod advanced {
    pub use crate::conv::{conv2d_shape, Conv2dShape};
    pub use crate::gpu::conv::{conv1x1_with, conv2d_add_with, conv2d_with};
    pub use crate::gpu::norm::{group_norm_with, layer_norm_with};
    pub use crate::gpu::timing::GpuTimer;
    pub use crate::kernels::conv::class::ConvClass;
    pub use crate::kernels::conv::ConvKernel;
    pub use crate::kernels::copy::{vec4_default, CopyPath, ShapeClass};
    pub use crate::kernels::elementwise::ElementwisePath;
    pub use crate::kernels::matmul::{MatmulClass, MatmulKernel};
    pub use crate::kernels::norm::{NormKernel, MAX_CHUNKS as NORM_MAX_CHUNKS};
    pub use crate::runtime::deferred::SubmitPolicy;
    pub use crate::runtime::record::RecordCounts;
    pub use crate::runtime::{AdapterReport, CooperativeMatrix};

    /// What only the crate's own tests and benches need: the CPU references on raw values,
    /// the kernel classifications they check, every pipeline the tuner may pick on a GPU (the
    /// register-budget test compiles them with a GPU compiler) and the shader registry. Not a
    /// stable interface.
    #[doc(hidden)]
    pub mod internal {
        pub use crate::conv::{conv1x1_cpu, conv2d_cpu};
        pub use crate::dtype::{cast_bits, f16_to_f32_bits, f32_to_bf16_bits, f32_to_f16_bits};
        pub use crate::elementwise::output_layout;
        pub use crate::gpu::pool::window_with;
        #[cfg(not(target_arch = "wasm32"))]
        pub use crate::gpu::noop::noop_context;
        pub use crate::kernels::conv::gpu_pipelines as conv_gpu_pipelines;
        pub use crate::kernels::copy::gpu_pipelines as copy_gpu_pipelines;
        pub use crate::kernels::elementwise::gpu_pipelines as elementwise_gpu_pipelines;
        pub use crate::kernels::elementwise::rows_eligible;
        pub use crate::kernels::matmul::gpu_pipelines as matmul_gpu_pipelines;
        pub use crate::kernels::pool::gpu_pipelines as pool_gpu_pipelines;
        pub use crate::kernels::norm::gpu_pipelines as norm_gpu_pipelines;
        pub use crate::kernels::norm::split_chunks as norm_split_chunks;
        pub use crate::kernels::pool::{classify as pool_classify, PoolKernel};
        pub use crate::kernels::reduce::gpu_pipelines as reduce_gpu_pipelines;
        pub use crate::kernels::reduce::abi::Work as ReduceWork;
        pub use crate::kernels::reduce::kernel::{column_blocks, column_splits, reduce_kernel, ReduceKernel};
        pub use crate::kernels::shaders;
        pub use crate::kernels::shaders::PipelineSpec;
        pub use crate::matmul::{addmm_plan, linear_plan, linear_route, matmul_plan, matmul_cpu, LinearRoute, MatmulPlan};
        pub use crate::pool::{adaptive_window, avg_pool2d_window, max_pool2d_window, Window, WindowMode};
        pub use crate::reduce::{reduce_spec, scan_spec, ReduceClass, ReducePlan};
    }
}
