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
mod plan;
mod runtime;
mod strided;
mod tune;

pub use conv::{conv1x1_cpu, conv1x1_shape, conv2d_cpu, conv2d_shape, Conv1x1Options, Conv2d, Conv1x1Shape, Conv2dOptions, Conv2dShape};
pub use dtype::{DType, Element};
pub use elementwise::api::{Elementwise, Target};
pub use elementwise::resolve::Input;
pub use elementwise::types::{can_cast, result_type, Arg as PromoteArg};
pub use elementwise::{output_layout, Op, Scalar};
pub use error::{Error, Result};
pub use gpu::batch::Batch;
pub use gpu::context::GpuContext;
pub use gpu::conv::{conv1x1, conv1x1_with, conv2d, conv2d_with};
pub use gpu::tensor::DeviceTensor;
pub use gpu::timing::GpuTimer;
pub use gpu::tuning::{conv_candidates, ConvClass, TUNE_ELEMENTS};
pub use kernels::conv::{gpu_pipelines as conv_gpu_pipelines, ConvKernel, PipelineSpec};
pub use kernels::copy::{gpu_pipelines as copy_gpu_pipelines, vec4_default, CopyPath, ShapeClass, MAX_DIMS};
pub use kernels::elementwise::{gather_default, gpu_pipelines as elementwise_gpu_pipelines, rows_default, rows_eligible, ElementwisePath};
pub use kernels::shaders;
pub use runtime::submit::Submission;
pub use runtime::AdapterReport;
pub use host::HostTensor;
pub use layout::{Layout, MemoryFormat, Overlap, Reshape};
pub use plan::{CopyKind, CopyPlan, IterPlan, MAX_OPERANDS};
pub use strided::Strided;
