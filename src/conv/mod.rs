//! 2-d convolution: options and shape checks (host values only), and the CPU reference
//! (`cpu`, on host tensors).
//!
//! `input` is logically [N, C, H, W] in any strides, `weight` [K, C/groups, kh, kw] (`conv1x1`'s
//! weight may also be \[K, C/groups\]), `bias` \[K\]. The output is [N, K, OH, OW] with
//! OH = (H + 2*ph - dh*(kh-1) - 1) / sh + 1 (OW likewise), channels_last where the input or
//! the weight is (a channels-last model on NCHW images too), else contiguous, unless the
//! options name a format: PyTorch's
//! `torch.nn.functional.conv2d`. The reference reads every operand through its strides and
//! accumulates in f64: a plain loop that is obviously correct, which every device result is
//! compared with.

mod cpu;

pub use cpu::{conv1x1_cpu, conv2d_cpu};

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::{Layout, MemoryFormat, Overlap};

/// Options of a convolution: stride, zero padding, dilation, groups, fused ReLU, and the
/// output's memory format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conv2dOptions {
    /// (sh, sw), each >= 1.
    pub stride: (usize, usize),
    /// (ph, pw): zero padding on each side.
    pub padding: (usize, usize),
    /// (dh, dw), each >= 1: the spacing of the kernel's taps.
    pub dilation: (usize, usize),
    /// Channel groups; C and K must be divisible by it (depthwise: groups == C).
    pub groups: usize,
    /// Apply ReLU to the output, as `Op::Relu` and PyTorch's relu: x where x > 0, NaN stays
    /// NaN, 0 elsewhere.
    pub relu: bool,
    /// The output's memory format; `None`: channels_last where the input or the weight is
    /// channels_last (PyTorch's rule), else contiguous.
    pub output_format: Option<MemoryFormat>,
}

/// The options of [`conv1x1`](crate::ops::conv1x1): a convolution's, whose dilation does not matter.
pub type Conv1x1Options = Conv2dOptions;

impl Default for Conv2dOptions {
    fn default() -> Self {
        Conv2dOptions { stride: (1, 1), padding: (0, 0), dilation: (1, 1), groups: 1, relu: false, output_format: None }
    }
}

/// The checked geometry of a convolution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conv2dShape {
    /// Batch.
    pub n: usize,
    /// Input channels.
    pub c: usize,
    /// Input height.
    pub h: usize,
    /// Input width.
    pub w: usize,
    /// Output channels: the weight's K, or 0 for an input of no channels (PyTorch's
    /// `calc_output_size`).
    pub k: usize,
    /// Kernel height.
    pub kh: usize,
    /// Kernel width.
    pub kw: usize,
    /// Output height.
    pub oh: usize,
    /// Output width.
    pub ow: usize,
    /// The output's memory format.
    pub format: MemoryFormat,
    /// The element type of every operand and of the output: f32, f16 or bf16 (16-bit
    /// convolutions accumulate in f32 and round the result once).
    pub dtype: DType,
}

/// The geometry of a 1x1 convolution (kh = kw = 1).
pub type Conv1x1Shape = Conv2dShape;

impl Conv2dShape {
    /// Multiply-adds counted as 2 flops: 2 * N * K * (C / groups) * kh * kw * OH * OW.
    pub fn flops(&self, groups: usize) -> f64 {
        [self.n, self.k, self.c / groups.max(1), self.kh, self.kw, self.oh, self.ow].iter().fold(2.0, |a, &v| a * v as f64)
    }
    /// The output's shape, [N, K, OH, OW].
    pub fn out_shape(&self) -> [usize; 4] {
        [self.n, self.k, self.oh, self.ow]
    }
}

/// Checks shapes, types and options of `conv2d`; returns the geometry. Every failure names the
/// op, the shapes involved and what was expected.
pub fn conv2d_shape(input: &Layout, weight: &Layout, bias: Option<&Layout>, dtypes: [Option<DType>; 3], o: &Conv2dOptions) -> Result<Conv2dShape> {
    shape_of("conv2d", input, weight, bias, dtypes, o)
}

/// [`conv2d_shape`] for a 1x1 convolution: the weight must be [K, C/groups, 1, 1] or [K, C/groups].
pub fn conv1x1_shape(input: &Layout, weight: &Layout, bias: Option<&Layout>, dtypes: [Option<DType>; 3], o: &Conv1x1Options) -> Result<Conv1x1Shape> {
    if !matches!(weight.shape(), [_, _] | [_, _, 1, 1]) {
        return Err(Error::invalid("conv1x1", format!("weight must be [K, C/groups, 1, 1] or [K, C/groups], got shape {:?}", weight.shape())));
    }
    shape_of("conv1x1", input, weight, bias, dtypes, o)
}

fn shape_of(op: &'static str, input: &Layout, weight: &Layout, bias: Option<&Layout>, dtypes: [Option<DType>; 3], o: &Conv2dOptions) -> Result<Conv2dShape> {
    let bad = |d: String| Error::invalid(op, d);
    let dtype = dtypes[0].unwrap_or(DType::F32);
    for (name, t) in [("input", dtypes[0]), ("weight", dtypes[1]), ("bias", dtypes[2])] {
        if let Some(t) = t {
            if !matches!(t, DType::F32 | DType::F16 | DType::BF16) {
                return Err(Error::unsupported(op, format!("the convolution is implemented for f32, f16 and bf16 operands; the {name} is {t}")));
            }
            if t != dtype {
                return Err(bad(format!("input, weight and bias must have one dtype, got input {dtype} and {name} {t}")));
            }
        }
    }
    let &[n, c, h, w] = input.shape() else {
        return Err(bad(format!("input must be [N, C, H, W] (or an unbatched [C, H, W]), got shape {:?}", input.shape())));
    };
    let (k, cg, kh, kw) = match weight.shape() {
        // PyTorch's conv2d wants a 4-d weight ("weight should have at least three dimensions");
        // the 2-d form is this crate's `conv1x1`'s only.
        &[k, cg] if op == "conv1x1" => (k, cg, 1, 1),
        &[k, cg, kh, kw] => (k, cg, kh, kw),
        s => return Err(bad(format!("weight must be [K, C/groups, kh, kw], got shape {s:?}"))),
    };
    if o.groups == 0 || c % o.groups != 0 || k % o.groups != 0 {
        return Err(bad(format!("groups = {} must be >= 1 and divide C = {c} (input {:?}) and K = {k} (weight {:?})", o.groups, input.shape(), weight.shape())));
    }
    // PyTorch's `check_shape_forward`: at least `groups` filters (K = 0 divides by any).
    if k < o.groups {
        return Err(bad(format!("Given groups={}, expected weight to be at least {} at dimension 0, but got weight of size {:?} instead", o.groups, o.groups, weight.shape())));
    }
    if cg != c / o.groups {
        return Err(bad(format!("weight shape {:?} has {cg} input channels per group, but input {:?} with groups = {} has {}", weight.shape(), input.shape(), o.groups, c / o.groups)));
    }
    if let Some(b) = bias {
        if b.shape() != [k] {
            return Err(bad(format!("bias must have shape [{k}] (K of weight {:?}), got {:?}", weight.shape(), b.shape())));
        }
    }
    if o.stride.0 == 0 || o.stride.1 == 0 {
        return Err(bad(format!("stride must be >= 1 in both dims, got {:?}", o.stride)));
    }
    if o.dilation.0 == 0 || o.dilation.1 == 0 {
        return Err(bad(format!("dilation must be >= 1 in both dims, got {:?}", o.dilation)));
    }
    if kh == 0 || kw == 0 {
        return Err(bad(format!("the kernel must be at least 1x1, got weight {:?}", weight.shape())));
    }
    let ovf = |what: String| Error::overflow(op, what);
    let out = |len: usize, pad: usize, dil: usize, ks: usize, s: usize, dim: &str| -> Result<usize> {
        let padded = pad.checked_mul(2).and_then(|p| p.checked_add(len)).ok_or_else(|| ovf(format!("{len} + 2 * {pad}")))?;
        let span = dil.checked_mul(ks - 1).and_then(|v| v.checked_add(1)).ok_or_else(|| ovf(format!("{dil} * ({ks} - 1) + 1")))?;
        if span > padded {
            return Err(bad(format!(
                "the kernel's {dim} extent {span} (size {ks}, dilation {dil}) exceeds the padded input's {padded} (input {:?}, padding {:?}, weight {:?})",
                input.shape(),
                o.padding,
                weight.shape()
            )));
        }
        Ok((padded - span) / s + 1)
    };
    let oh = out(h, o.padding.0, o.dilation.0, kh, o.stride.0, "height")?;
    let ow = out(w, o.padding.1, o.dilation.1, kw, o.stride.1, "width")?;
    // PyTorch's `_select_conv_backend`: of empty inputs only an empty batch or no channels is
    // served (an empty image with padding has an output size, but no pixel to read); and
    // `calc_output_size` gives a zero-channel input's output 0 channels, whatever K is.
    let k_out = if c == 0 { 0 } else { k };
    if n > 0 && c > 0 && (h == 0 || w == 0) {
        return Err(bad(format!("Only zero batch or zero channel inputs are supported, but got input shape: {:?}", input.shape())));
    }
    // PyTorch's rule (`_determine_backend_memory_format`): channels-last where the input or
    // the weight suggests it (a channels-last model on NCHW images), else contiguous.
    let channels_last = [input, weight].iter().any(|l| l.suggest_memory_format() == MemoryFormat::ChannelsLast);
    let format = o.output_format.unwrap_or(if channels_last { MemoryFormat::ChannelsLast } else { MemoryFormat::Contiguous });
    if format == MemoryFormat::ChannelsLast3d {
        return Err(bad(format!("output_format {format:?} does not apply to a 4-d output")));
    }
    // Every index the kernels form stays within i32/u32: checked here once.
    for (what, v) in [("N*K*OH*OW", n.checked_mul(k).and_then(|v| v.checked_mul(oh)).and_then(|v| v.checked_mul(ow))), ("C/groups*kh*kw", cg.checked_mul(kh).and_then(|v| v.checked_mul(kw)))] {
        if v.is_none_or(|v| v > i32::MAX as usize) {
            return Err(ovf(format!("{what} of input {:?} and weight {:?}", input.shape(), weight.shape())));
        }
    }
    Ok(Conv2dShape { n, c, h, w, k: k_out, kh, kw, oh, ow, format, dtype })
}

/// `torch.nn.functional.conv2d` as a method of the input, on host and device tensors alike:
/// `x.conv2d(&weight, bias, &options)` is `F.conv2d(x, weight, bias, stride, padding,
/// dilation, groups)` (with [`Conv2dOptions::relu`] fused). On a [`HostTensor`](crate::HostTensor) it computes the
/// CPU reference ([`conv2d_cpu`]); on a [`DeviceTensor`](crate::DeviceTensor) it runs the
/// device kernels ([`conv2d`](crate::ops::conv2d): the kept or default kernel of its shape class;
/// [`Batch::conv2d`](crate::Batch::conv2d) records the same call). Element types f32, f16 and
/// bf16, one for every operand and the output: a 16-bit convolution accumulates in f32 and
/// rounds its result once (on the device the GPU-shaped kernels, GEMM and depthwise, and the
/// float16 tensor-core kernel read and write the 16-bit operands as they are; the CPU-shaped
/// kernels run on f32 copies made by recorded copies, the result converted back). Operands of another element type are
/// [`Error::Unsupported`]; mixed types, or an `out` of another type or shape, are
/// [`Error::InvalidArgument`]; bad shapes and options are typed errors and nothing is written.
///
/// ```
/// use strided_wgpu::{Conv2d, Conv2dOptions, DType, HostTensor, MemoryFormat, Strided};
/// let x = HostTensor::from_vec((0..2 * 3 * 5 * 5).map(|i| i as f32).collect(), &[2, 3, 5, 5])?;
/// let w = HostTensor::from_vec(vec![1.0f32; 4 * 3 * 3 * 3], &[4, 3, 3, 3])?;
/// let opts = Conv2dOptions { padding: (1, 1), ..Default::default() };
/// let y = x.conv2d(&w, None, &opts)?;
/// assert_eq!(y.shape(), &[2, 4, 5, 5]);
/// // Into a given tensor (here channels-last), as `out=`:
/// let out = HostTensor::zeros(&[2, 4, 5, 5], DType::F32, MemoryFormat::ChannelsLast)?;
/// x.conv2d_out(&w, None, &opts, &out)?;
/// assert_eq!(out.to_vec::<f32>()?, y.to_vec::<f32>()?);
/// # Ok::<(), strided_wgpu::Error>(())
/// ```
pub trait Conv2d: Sized {
    /// `F.conv2d(self, weight, bias, ...)`: `self` is [N, C, H, W] and `weight`
    /// [K, C/groups, kh, kw] in any strides, `bias` `[K]`; returns a new [N, K, OH, OW] tensor,
    /// channels_last where the input or the weight is (else contiguous), unless `options`
    /// names a format. An unbatched [C, H, W] input runs as a batch of one (PyTorch's
    /// `batchify`) into [K, OH, OW] (`out` and a residual then 3-d too).
    fn conv2d(&self, weight: &Self, bias: Option<&Self>, options: &Conv2dOptions) -> Result<Self>;

    /// [`conv2d`](Conv2d::conv2d) into `out`: a view of the operands' type and shape [N, K, OH, OW] in any
    /// strides (`out` decides the layout; `options.output_format` is not consulted), which
    /// must not overlap itself or an operand.
    fn conv2d_out(&self, weight: &Self, bias: Option<&Self>, options: &Conv2dOptions, out: &Self) -> Result<()>;

    /// `relu?(conv2d(self, weight) + bias + residual)`: the convolution with a residual added
    /// before the ReLU of `options` (ResNet's `relu(conv(x) + identity)`, cuDNN's
    /// conv-bias-add-activation). `residual` has the operands' type and the output's shape, in
    /// any strides.
    /// The result equals `conv2d` without ReLU, `add_(residual)` and `relu_()` bit for bit; on
    /// the device the GEMM kernels and the tensor-core kernel add it in their epilogue (one pass
    /// over memory instead of three), the others record the three ops; a 16-bit convolution's
    /// result is rounded to its type before the add, as the separate ops round it.
    fn conv2d_add(&self, weight: &Self, bias: Option<&Self>, residual: &Self, options: &Conv2dOptions) -> Result<Self>;
}

/// The output of a convolution of `g` must be of the operands' dtype and shape [N, K, OH, OW].
pub(crate) fn check_output(op: &'static str, shape: &[usize], dtype: DType, g: &Conv2dShape) -> Result<()> {
    if shape != g.out_shape() || dtype != g.dtype {
        return Err(Error::invalid(op, format!("the output must be {} of shape {:?}, got {dtype} of shape {shape:?}", g.dtype, g.out_shape())));
    }
    Ok(())
}

/// A residual of `conv2d_add` must be of the operands' dtype and the output's shape.
pub(crate) fn check_residual(op: &'static str, shape: &[usize], dtype: DType, g: &Conv2dShape) -> Result<()> {
    if shape != g.out_shape() || dtype != g.dtype {
        return Err(Error::invalid(op, format!("the residual must be {} of the output's shape {:?}, got {dtype} of shape {shape:?}", g.dtype, g.out_shape())));
    }
    Ok(())
}

/// A convolution's output must not overlap itself, nor an operand in the same storage
/// (`operands`: the operand's name, its layout, whether it shares the output's storage).
pub(crate) fn check_overlap(op: &'static str, out: &Layout, operands: &[(&str, &Layout, bool)]) -> Result<()> {
    if out.has_internal_overlap() {
        return Err(Error::Overlap { op, detail: format!("the output (shape {:?}, strides {:?}) overlaps itself", out.shape(), out.strides()) });
    }
    for &(name, t, shared) in operands {
        if shared && out.overlap(t) != Overlap::Disjoint {
            return Err(Error::Overlap { op, detail: format!("the output (shape {:?}, strides {:?}) overlaps the {name} (shape {:?}, strides {:?})", out.shape(), out.strides(), t.shape(), t.strides()) });
        }
    }
    Ok(())
}

