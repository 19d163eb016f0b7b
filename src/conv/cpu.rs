//! The CPU reference of 2-d convolution on host tensors: every operand read through its
//! strides, accumulated in f64 (16-bit operands too; their result rounded once more, to their
//! type).

use crate::elementwise::Elementwise;
use crate::conv::{check_output, check_overlap, conv1x1_shape, conv2d_shape, Conv1x1Options, Conv2d, Conv2dOptions, Conv2dShape};
use crate::layout::Layout;
use crate::dtype::{DType, Sum32};
use crate::error::Result;
use crate::host::HostTensor;
use crate::layout::MemoryFormat;
use crate::strided::Strided;

/// The CPU reference of `conv2d`: f64 accumulation over every operand read through its strides.
/// The same as [`Conv2d::conv2d`] on a [`HostTensor`] (`x.conv2d(&w, bias, &options)`).
pub fn conv2d_cpu(input: &HostTensor, weight: &HostTensor, bias: Option<&HostTensor>, o: &Conv2dOptions) -> Result<HostTensor> {
    let g = conv2d_shape(input.layout(), weight.layout(), bias.map(|b| b.layout()), [Some(input.dtype()), Some(weight.dtype()), bias.map(|b| b.dtype())], o)?;
    reference(input, weight, bias, o, &g)
}

/// The CPU reference of `conv1x1` ([`conv2d_cpu`] with a 1x1 weight).
pub fn conv1x1_cpu(input: &HostTensor, weight: &HostTensor, bias: Option<&HostTensor>, o: &Conv1x1Options) -> Result<HostTensor> {
    let g = conv1x1_shape(input.layout(), weight.layout(), bias.map(|b| b.layout()), [Some(input.dtype()), Some(weight.dtype()), bias.map(|b| b.dtype())], o)?;
    reference(input, weight, bias, o, &g)
}

fn reference(input: &HostTensor, weight: &HostTensor, bias: Option<&HostTensor>, o: &Conv2dOptions, g: &Conv2dShape) -> Result<HostTensor> {
    // 16-bit operands are read exactly as f32; the f64 sum is rounded to f32, then to the
    // operands' type.
    let x = input.contiguous(MemoryFormat::Contiguous)?.to(DType::F32)?.to_vec::<f32>()?;
    let wt = weight.contiguous(MemoryFormat::Contiguous)?.to(DType::F32)?.to_vec::<f32>()?;
    let b = bias.map(|b| b.to(DType::F32)?.to_vec::<f32>()).transpose()?;
    let cg = g.c / o.groups;
    let kg = g.k / o.groups;
    let mut y = vec![0f32; g.n * g.k * g.oh * g.ow];
    for ni in 0..g.n {
        for ki in 0..g.k {
            let grp = ki / kg;
            for oy in 0..g.oh {
                for ox in 0..g.ow {
                    // Float32's range, as PyTorch's and the device's accumulators (a product
                    // past it is infinite); f64's digits within it.
                    let mut sum = Sum32::new(b.as_ref().map_or(0.0, |b| b[ki] as f64));
                    for cj in 0..cg {
                        let ci = grp * cg + cj;
                        for ky in 0..g.kh {
                            // Input row read by this tap; outside the image reads zero padding.
                            // (i128: a huge stride or padding stays exact.)
                            let iy = (oy * o.stride.0) as i128 + (ky * o.dilation.0) as i128 - o.padding.0 as i128;
                            if iy < 0 || iy >= g.h as i128 {
                                continue;
                            }
                            for kx in 0..g.kw {
                                let ix = (ox * o.stride.1) as i128 + (kx * o.dilation.1) as i128 - o.padding.1 as i128;
                                if ix < 0 || ix >= g.w as i128 {
                                    continue;
                                }
                                let xv = x[((ni * g.c + ci) * g.h + iy as usize) * g.w + ix as usize] as f64;
                                sum.add(xv * wt[((ki * cg + cj) * g.kh + ky) * g.kw + kx] as f64);
                            }
                        }
                    }
                    let mut acc = sum.value();
                    // As Op::Relu: NaN stays NaN (f64::max would make it 0).
                    if o.relu && acc <= 0.0 {
                        acc = 0.0;
                    }
                    y[((ni * g.k + ki) * g.oh + oy) * g.ow + ox] = acc as f32;
                }
            }
        }
    }
    // The output is allocated in its format, as on the device, so both give the same layout.
    let out = HostTensor::zeros(&g.out_shape(), g.dtype, g.format)?;
    out.copy_(&HostTensor::from_vec(y, &g.out_shape())?)?;
    Ok(out)
}

impl Conv2d for HostTensor {
    /// The CPU reference, [`conv2d_cpu`].
    fn conv2d(&self, weight: &HostTensor, bias: Option<&HostTensor>, options: &Conv2dOptions) -> Result<HostTensor> {
        if self.rank() == 3 {
            return conv2d_cpu(&self.unsqueeze(0)?, weight, bias, options)?.squeeze(0);
        }
        conv2d_cpu(self, weight, bias, options)
    }

    /// The CPU reference, written into `out` after every check has passed.
    fn conv2d_out(&self, weight: &HostTensor, bias: Option<&HostTensor>, options: &Conv2dOptions, out: &HostTensor) -> Result<()> {
        const OP: &str = "conv2d";
        if self.rank() == 3 {
            return self.unsqueeze(0)?.conv2d_out(weight, bias, options, &out.unsqueeze(0)?);
        }
        let g = conv2d_shape(self.layout(), weight.layout(), bias.map(|b| b.layout()), [Some(self.dtype()), Some(weight.dtype()), bias.map(|b| b.dtype())], options)?;
        check_output(OP, out.shape(), out.dtype(), &g)?;
        let operands: Vec<(&str, &Layout, bool)> = [("input", Some(self)), ("weight", Some(weight)), ("bias", bias)]
            .into_iter()
            .filter_map(|(name, t)| t.map(|t| (name, t.layout(), out.shares_storage(t))))
            .collect();
        check_overlap(OP, out.layout(), &operands)?;
        out.copy_(&reference(self, weight, bias, options, &g)?)
    }

    /// The CPU reference without ReLU, then the add and the ReLU.
    fn conv2d_add(&self, weight: &HostTensor, bias: Option<&HostTensor>, residual: &HostTensor, options: &Conv2dOptions) -> Result<HostTensor> {
        if self.rank() == 3 {
            return self.unsqueeze(0)?.conv2d_add(weight, bias, &residual.unsqueeze(0)?, options)?.squeeze(0);
        }
        let g = conv2d_shape(self.layout(), weight.layout(), bias.map(|b| b.layout()), [Some(self.dtype()), Some(weight.dtype()), bias.map(|b| b.dtype())], options)?;
        super::check_residual("conv2d_add", residual.shape(), residual.dtype(), &g)?;
        let y = conv2d_cpu(self, weight, bias, &Conv2dOptions { relu: false, ..*options })?;
        y.add_(residual)?;
        if options.relu {
            y.relu_()?;
        }
        Ok(y)
    }
}
