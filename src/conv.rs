//! 1x1 convolution: options, shape checks, and the CPU reference.
//!
//! `input` is logically [N, C, H, W] in any strides, `weight` [K, C/groups, 1, 1] or
//! [K, C/groups], `bias` [K]. The output is [N, K, OH, OW] with OH = (H + 2*ph - 1) / sh + 1
//! (OW likewise), in the input's memory format (channels_last in, channels_last out) unless the
//! options name one. The reference reads every operand through its strides and accumulates in
//! f64: a plain loop that is obviously correct, which every device result is compared with.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::host::HostTensor;
use crate::layout::{Layout, MemoryFormat};
use crate::strided::Strided;

/// Options of [`conv1x1`](crate::conv::conv1x1_cpu): stride, zero padding, groups, fused ReLU,
/// and the output's memory format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conv1x1Options {
    /// (sh, sw), each >= 1.
    pub stride: (usize, usize),
    /// (ph, pw): zero padding on each side.
    pub padding: (usize, usize),
    /// Channel groups; C and K must be divisible by it.
    pub groups: usize,
    /// Apply max(x, 0) to the output.
    pub relu: bool,
    /// The output's memory format; `None` follows the input (channels_last in, channels_last out).
    pub output_format: Option<MemoryFormat>,
}

impl Default for Conv1x1Options {
    fn default() -> Self {
        Conv1x1Options { stride: (1, 1), padding: (0, 0), groups: 1, relu: false, output_format: None }
    }
}

/// The checked geometry of a 1x1 convolution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conv1x1Shape {
    /// Batch.
    pub n: usize,
    /// Input channels.
    pub c: usize,
    /// Input height and width.
    pub h: usize,
    /// Input width.
    pub w: usize,
    /// Output channels.
    pub k: usize,
    /// Output height.
    pub oh: usize,
    /// Output width.
    pub ow: usize,
    /// The output's memory format.
    pub format: MemoryFormat,
}

impl Conv1x1Shape {
    /// Multiply-adds counted as 2 flops: 2 * N * K * (C / groups) * OH * OW.
    pub fn flops(&self, groups: usize) -> f64 {
        2.0 * (self.n * self.k * (self.c / groups.max(1)) * self.oh * self.ow) as f64
    }
}

/// Checks shapes, types and options; returns the geometry. Every failure names the op, the
/// shapes involved and what was expected.
pub fn conv1x1_shape(input: &Layout, weight: &Layout, bias: Option<&Layout>, dtypes: [Option<DType>; 3], o: &Conv1x1Options) -> Result<Conv1x1Shape> {
    const OP: &str = "conv1x1";
    let bad = |d: String| Error::invalid(OP, d);
    for (name, t) in [("input", dtypes[0]), ("weight", dtypes[1]), ("bias", dtypes[2])] {
        if let Some(t) = t {
            if t != DType::F32 {
                return Err(Error::DType { op: OP, got: format!("{t} ({name})"), expected: "f32 for input, weight and bias".into() });
            }
        }
    }
    let &[n, c, h, w] = input.shape() else {
        return Err(bad(format!("input must be [N, C, H, W], got shape {:?}", input.shape())));
    };
    let (k, cg) = match weight.shape() {
        &[k, cg] | &[k, cg, 1, 1] => (k, cg),
        s => return Err(bad(format!("weight must be [K, C/groups, 1, 1] or [K, C/groups], got shape {s:?}"))),
    };
    if o.groups == 0 || c % o.groups != 0 || k % o.groups != 0 {
        return Err(bad(format!("groups = {} must be >= 1 and divide C = {c} and K = {k}", o.groups)));
    }
    if cg != c / o.groups {
        return Err(bad(format!("weight shape {:?} has {cg} input channels per group, but input {:?} with groups = {} has {}", weight.shape(), input.shape(), o.groups, c / o.groups)));
    }
    if let Some(b) = bias {
        if b.shape() != [k] {
            return Err(bad(format!("bias must have shape [{k}] (K), got {:?}", b.shape())));
        }
    }
    if o.stride.0 == 0 || o.stride.1 == 0 {
        return Err(bad(format!("stride must be >= 1 in both dims, got {:?}", o.stride)));
    }
    let out = |len: usize, pad: usize, s: usize| -> Result<usize> {
        let padded = pad.checked_mul(2).and_then(|p| p.checked_add(len)).ok_or_else(|| Error::overflow(OP, format!("{len} + 2 * {pad}")))?;
        Ok(if padded == 0 { 0 } else { (padded - 1) / s + 1 })
    };
    let (oh, ow) = (out(h, o.padding.0, o.stride.0)?, out(w, o.padding.1, o.stride.1)?);
    // PyTorch's rule: the output follows the input's suggested memory format.
    let format = o.output_format.unwrap_or(input.suggest_memory_format());
    if format == MemoryFormat::ChannelsLast3d {
        return Err(bad(format!("output_format {format:?} does not apply to a 4-d output")));
    }
    Ok(Conv1x1Shape { n, c, h, w, k, oh, ow, format })
}

/// The CPU reference: f64 accumulation over every operand read through its strides.
pub fn conv1x1_cpu(input: &HostTensor, weight: &HostTensor, bias: Option<&HostTensor>, o: &Conv1x1Options) -> Result<HostTensor> {
    let g = conv1x1_shape(input.layout(), weight.layout(), bias.map(|b| b.layout()), [Some(input.dtype()), Some(weight.dtype()), bias.map(|b| b.dtype())], o)?;
    let x = input.contiguous(MemoryFormat::Contiguous)?.to_vec::<f32>()?;
    let wt = weight.contiguous(MemoryFormat::Contiguous)?.to_vec::<f32>()?;
    let b = bias.map(|b| b.to_vec::<f32>()).transpose()?;
    let cg = g.c / o.groups;
    let kg = g.k / o.groups;
    let mut y = vec![0f32; g.n * g.k * g.oh * g.ow];
    for ni in 0..g.n {
        for ki in 0..g.k {
            let grp = ki / kg;
            for oy in 0..g.oh {
                for ox in 0..g.ow {
                    let mut acc = b.as_ref().map_or(0.0, |b| b[ki] as f64);
                    // Input position read by this output; outside the image reads zero padding.
                    let iy = (oy * o.stride.0) as isize - o.padding.0 as isize;
                    let ix = (ox * o.stride.1) as isize - o.padding.1 as isize;
                    if iy >= 0 && ix >= 0 && (iy as usize) < g.h && (ix as usize) < g.w {
                        for cj in 0..cg {
                            let ci = grp * cg + cj;
                            let xv = x[((ni * g.c + ci) * g.h + iy as usize) * g.w + ix as usize] as f64;
                            acc += xv * wt[ki * cg + cj] as f64;
                        }
                    }
                    if o.relu {
                        acc = acc.max(0.0);
                    }
                    y[((ni * g.k + ki) * g.oh + oy) * g.ow + ox] = acc as f32;
                }
            }
        }
    }
    // The output is allocated in its format, as on the device, so both give the same layout.
    let out = HostTensor::zeros(&[g.n, g.k, g.oh, g.ow], DType::F32, g.format)?;
    out.copy_(&HostTensor::from_vec(y, &[g.n, g.k, g.oh, g.ow])?)?;
    Ok(out)
}
