//! The one-time choice between the convolution kernels, per adapter and shape class.
//!
//! Which orientation wins depends on the adapter and on which operands each kernel can move as
//! vec4 words. The first convolution of a shape class times every kernel on one image of the
//! real input (read-only) into a scratch output, and the context keeps the winner, as the
//! layout kernels' autotuner does.

use crate::conv::{Conv1x1Options, Conv1x1Shape};
use crate::dtype::DType;
use crate::error::Result;
use crate::gpu::context::{lock, GpuContext};
use crate::gpu::conv::ConvKernel;
use crate::gpu::tensor::DeviceTensor;
use crate::gpu::timing::GpuTimer;
use crate::strided::Strided;

/// A convolution shape class: the vec4 paths each kernel gets, and the magnitudes of the
/// channels per group, output channels per group and output pixels per image.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ConvClass {
    /// For each of [`CONV_CANDIDATES`]: (vec4 input, vec4 output).
    pub vectors: [(bool, bool); 4],
    /// floor(log2) of C/groups, K/groups and OH*OW.
    pub log2: [u32; 3],
    /// Whether stride and padding are trivial.
    pub direct: bool,
}

/// The kernels the tuner compares.
pub const CONV_CANDIDATES: [ConvKernel; 4] = [ConvKernel::Nchw, ConvKernel::Nhwc, ConvKernel::NchwTiled, ConvKernel::NhwcTiled];

impl GpuContext {
    /// The kernel for this convolution, measured once per shape class.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn tuned_conv(&self, class: ConvClass, input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv1x1Options, g: &Conv1x1Shape, out: &DeviceTensor) -> Result<ConvKernel> {
        if let Some(&k) = lock(&self.inner.tuned_conv).get(&class) {
            return Ok(k);
        }
        let one = input.narrow(0, 0, 1)?;
        // A scratch output with the same strides as `out` within one image.
        let os = out.strides();
        let span = (0..4).filter(|&d| d > 0).map(|d| (out.shape()[d].max(1) - 1) * os[d].unsigned_abs()).sum::<usize>() + 1;
        let scratch = DeviceTensor::empty(self, &[span], DType::F32, crate::layout::MemoryFormat::Contiguous)?;
        let min_offset: isize = (1..4).map(|d| if os[d] < 0 { -(os[d]) * (out.shape()[d].max(1) as isize - 1) } else { 0 }).sum();
        let dst = scratch.as_strided(&[1, g.k, g.oh, g.ow], &[0, os[1], os[2], os[3]], min_offset as usize)?;
        let timer = GpuTimer::new(self)?;
        let mut best: Option<(f64, ConvKernel)> = None;
        for kernel in CONV_CANDIDATES {
            let mut times = Vec::new();
            for _ in 0..3 {
                match timer.time(|b| b.conv1x1(&dst, &one, weight, bias, options, kernel)) {
                    Ok(ms) => times.push(ms),
                    Err(_) => break,
                }
            }
            // The first run compiles the pipelines; keep the best of the rest.
            if let Some(t) = times.iter().skip(1).copied().reduce(f64::min) {
                if best.is_none_or(|(b, _)| t < b) {
                    best = Some((t, kernel));
                }
            }
        }
        let choice = best.map_or(ConvKernel::Nchw, |(_, k)| k);
        lock(&self.inner.tuned_conv).insert(class, choice);
        Ok(choice)
    }

    /// The convolution kernels chosen so far on this context, by shape class.
    pub fn tuned_conv_choices(&self) -> Vec<(ConvClass, ConvKernel)> {
        lock(&self.inner.tuned_conv).iter().map(|(k, v)| (k.clone(), *v)).collect()
    }
}
