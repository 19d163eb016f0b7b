//! 2-d pooling and bilinear resampling: options and shape checks (host values only, which the
//! kernels use), the [`Pool2d`] trait, and the CPU reference (`cpu`, on host tensors).
//!
//! Every op here reads each output from a window of one (n, c) plane of a logical
//! [N, C, H, W] input in any strides (NCHW, channels-last, sliced: read in place), and writes a
//! new output in the input's memory format (PyTorch's `suggest_memory_format`). The element
//! types are float32, float16 and bfloat16; windows accumulate in f64 on the host and f32 on
//! the device, and a 16-bit result is rounded once at the store.

mod cpu;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::{Layout, MemoryFormat};
use crate::strided::Strided;

/// Options of [`Pool2d::max_pool2d`]: PyTorch's `F.max_pool2d(x, kernel_size, stride, padding,
/// dilation, ceil_mode)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MaxPool2dOptions {
    /// (kh, kw), each >= 1.
    pub kernel: (usize, usize),
    /// (sh, sw), each >= 1; `None` is the kernel size (PyTorch's `stride=None`).
    pub stride: Option<(usize, usize)>,
    /// (ph, pw): implicit -inf padding on each side, at most half the kernel.
    pub padding: (usize, usize),
    /// (dh, dw), each >= 1: the spacing of the window's taps.
    pub dilation: (usize, usize),
    /// Round the output size up (a last window must still start inside the input or its left
    /// padding).
    pub ceil_mode: bool,
}

impl MaxPool2dOptions {
    /// A `kh x kw` window at stride equal to the kernel, no padding, no dilation.
    pub fn new(kernel: (usize, usize)) -> Self {
        MaxPool2dOptions { kernel, stride: None, padding: (0, 0), dilation: (1, 1), ceil_mode: false }
    }
}

/// Options of [`Pool2d::avg_pool2d`]: PyTorch's `F.avg_pool2d(x, kernel_size, stride, padding,
/// ceil_mode, count_include_pad, divisor_override)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AvgPool2dOptions {
    /// (kh, kw), each >= 1.
    pub kernel: (usize, usize),
    /// (sh, sw), each >= 1; `None` is the kernel size.
    pub stride: Option<(usize, usize)>,
    /// (ph, pw): implicit zero padding on each side, at most half the kernel.
    pub padding: (usize, usize),
    /// Round the output size up.
    pub ceil_mode: bool,
    /// Divide by the window clipped to the padded input (true, PyTorch's default) or by the
    /// number of input elements in it (false).
    pub count_include_pad: bool,
    /// Divide every window's sum by this instead (>= 1).
    pub divisor_override: Option<usize>,
}

impl AvgPool2dOptions {
    /// A `kh x kw` window at stride equal to the kernel, no padding, PyTorch's defaults.
    pub fn new(kernel: (usize, usize)) -> Self {
        AvgPool2dOptions { kernel, stride: None, padding: (0, 0), ceil_mode: false, count_include_pad: true, divisor_override: None }
    }
}

/// What one output reads.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum WindowMode {
    /// The largest value of a dilated window (NaN wins), and optionally its `h * W + w`.
    Max,
    /// The mean of a window: `divisor` overrides, else the clipped window (`count_include_pad`)
    /// or the elements inside the input.
    Avg {
        /// Count the padding in the divisor.
        count_include_pad: bool,
        /// The divisor, when overridden.
        divisor: Option<usize>,
    },
    /// The largest value of bin `[floor(i*H/OH), ceil((i+1)*H/OH))` (rows; columns likewise).
    AdaptiveMax,
    /// The mean of that bin.
    AdaptiveAvg,
    /// Bilinear interpolation (`F.interpolate(mode="bilinear")`): source coordinate
    /// `scale * o` (align_corners) or `max(scale * (o + 0.5) - 0.5, 0)`, in f32 as PyTorch.
    Bilinear {
        /// (rows, columns) scale: input over output.
        scale: (f32, f32),
        /// PyTorch's `align_corners`.
        align_corners: bool,
    },
}

/// The checked geometry of a windowed op on a [N, C, H, W] input: what the CPU reference and
/// the device kernel both receive.
#[doc(hidden)]
#[derive(Clone, Debug, PartialEq)]
pub struct Window {
    /// The operation's name, for errors.
    pub op: &'static str,
    /// What each output computes.
    pub mode: WindowMode,
    /// Input [N, C, H, W].
    pub input: [usize; 4],
    /// Output (OH, OW).
    pub out: (usize, usize),
    /// (kh, kw) (max and average).
    pub kernel: (usize, usize),
    /// (sh, sw).
    pub stride: (usize, usize),
    /// (ph, pw).
    pub padding: (usize, usize),
    /// (dh, dw).
    pub dilation: (usize, usize),
    /// Whether the indices of the maxima are returned too.
    pub indices: bool,
    /// The output's memory format.
    pub format: MemoryFormat,
}

impl Window {
    /// [N, C, OH, OW].
    pub fn out_shape(&self) -> [usize; 4] {
        [self.input[0], self.input[1], self.out.0, self.out.1]
    }

    /// The rows (or columns: `axis` 1) an output `o` reads: (first, end, step), clipped to the
    /// input, and, for average pooling, the divisor's extent of that axis (the window clipped
    /// to the padded input).
    pub fn span(&self, axis: usize, o: usize) -> (i64, i64, i64, i64) {
        let pick = |t: (usize, usize)| if axis == 0 { t.0 } else { t.1 } as i64;
        let size = self.input[2 + axis] as i64;
        let outs = pick(self.out);
        let o = o as i64;
        match self.mode {
            WindowMode::AdaptiveMax | WindowMode::AdaptiveAvg => {
                let start = o * size / outs;
                let end = ((o + 1) * size + outs - 1) / outs;
                (start, end, 1, end - start)
            }
            WindowMode::Bilinear { .. } => (0, 0, 1, 0),
            _ => {
                let (k, s, p, d) = (pick(self.kernel), pick(self.stride), pick(self.padding), pick(self.dilation));
                let start = o * s - p;
                match self.mode {
                    WindowMode::Avg { .. } => {
                        let end = (start + k).min(size + p);
                        let extent = end - start;
                        (start.max(0), end.min(size), 1, extent)
                    }
                    _ => {
                        let end = (start + (k - 1) * d + 1).min(size);
                        (first_tap(start, d), end, d, 0)
                    }
                }
            }
        }
    }

    /// At most how many rows (`axis` 0) or columns (1) of the input one output's window walks.
    pub(crate) fn most_taps(&self, axis: usize) -> u64 {
        let pick = |t: (usize, usize)| if axis == 0 { t.0 } else { t.1 } as u64;
        let size = self.input[2 + axis] as u64;
        match self.mode {
            WindowMode::AdaptiveMax | WindowMode::AdaptiveAvg => size.min(size.div_ceil(pick(self.out).max(1)) + 1),
            WindowMode::Bilinear { .. } => 2,
            WindowMode::Avg { .. } => pick(self.kernel).min(size),
            WindowMode::Max => pick(self.kernel).min(size.div_ceil(pick(self.dilation).max(1))),
        }
    }

    /// Checks that this window is what the constructors ([`max_pool2d_window`],
    /// [`avg_pool2d_window`], [`adaptive_window`], bilinear `interpolate`) build for an input
    /// `x` of `dtype`: its fields are public (`advanced::internal`), and a window of another
    /// input's shape, or a zero dilation, would read outside the input or never end.
    pub(crate) fn check(&self, x: &Layout, dtype: DType) -> Result<()> {
        let op = self.op;
        if x.shape() != self.input {
            return Err(Error::invalid(op, format!("a window built for {:?} applied to an input of shape {:?}", self.input, x.shape())));
        }
        if self.format == MemoryFormat::ChannelsLast3d {
            return Err(Error::invalid(op, format!("a window's output format {:?} (contiguous or channels-last for a 4-d output)", self.format)));
        }
        let unlike = || Error::invalid(op, format!("a window ({self:?}) that no pooling of an input of shape {:?} in {dtype} builds", self.input));
        let ok = match self.mode {
            WindowMode::Max | WindowMode::Avg { .. } => {
                let (divisor, dilation) = match self.mode {
                    WindowMode::Avg { divisor, .. } => (divisor, (1, 1)),
                    _ => (None, self.dilation),
                };
                if divisor == Some(0) {
                    return Err(Error::invalid(op, "divisor_override must be at least 1"));
                }
                if self.indices && self.mode != WindowMode::Max {
                    return Err(Error::invalid(op, "indices of an average pooling"));
                }
                let build = |ceil| windowed(op, x, dtype, self.kernel, Some(self.stride), self.padding, dilation, ceil, self.mode, self.indices).map(|g| Window { format: self.format, ..g });
                // Either rounding of the output size (`ceil_mode` is not kept); the error of
                // the plain one when neither builds.
                match (build(false), build(true)) {
                    (Err(e), Err(_)) => return Err(e),
                    (a, b) => [a, b].into_iter().any(|g| g.is_ok_and(|g| g == *self)),
                }
            }
            WindowMode::AdaptiveMax | WindowMode::AdaptiveAvg => {
                let max = self.mode == WindowMode::AdaptiveMax;
                let built = |x: &Layout| adaptive_window(op, x, dtype, self.out, max, self.indices).map(|g| Window { format: self.format, ..g } == *self);
                // A window built for a 3-d [C, H, W] input runs on [1, C, H, W] (where adaptive
                // max pooling takes C = 0, PyTorch's unbatched check, as a 4-d input does not).
                match (built(x), (x.rank() == 4 && self.input[0] == 1).then(|| x.squeeze(0)).transpose()?) {
                    (Ok(true), _) => true,
                    (first, Some(three)) => built(&three).or(first)?,
                    (first, None) => first?,
                }
            }
            WindowMode::Bilinear { scale, .. } => {
                input4(op, x, dtype)?;
                let inert = self.kernel == (1, 1) && self.stride == (1, 1) && self.padding == (0, 0) && self.dilation == (1, 1) && !self.indices;
                let sized = self.input[2] > 0 && self.input[3] > 0 && self.out.0 > 0 && self.out.1 > 0;
                inert && sized && [scale.0, scale.1].iter().all(|s| s.is_finite() && *s >= 0.0)
            }
        };
        if !ok {
            return Err(unlike());
        }
        Ok(())
    }
}

/// A window's first row (or column) at or past 0: its start `s` advanced by whole dilations `d`,
/// as PyTorch's kernels start their index (inside the image or not); `first_tap` of
/// `pool_window.wgsl`, in closed form (a loop of `-s / d` steps could run 2^61 times).
fn first_tap(s: i64, d: i64) -> i64 {
    if s >= 0 {
        return s;
    }
    // In i128 (-s + d - 1 can pass i64); the result is below s + d, within i64.
    let (s, d) = (s as i128, d as i128);
    (s + (-s + d - 1) / d * d) as i64
}

/// PyTorch's `pooling_output_shape`: the output size of one axis (`None` below 1), or an
/// overflow error of `op` when the arithmetic leaves i64 (a dilation of `usize::MAX`, say).
fn pooled(op: &'static str, size: usize, k: usize, pad: usize, stride: usize, dilation: usize, ceil: bool) -> Result<Option<usize>> {
    let ovf = || Error::overflow(op, format!("the output size of an axis of {size} with kernel {k}, padding {pad}, stride {stride}, dilation {dilation}"));
    let i = |v: usize| i64::try_from(v).map_err(|_| ovf());
    let (size, k, pad, stride, dilation) = (i(size)?, i(k)?, i(pad)?, i(stride)?, i(dilation)?);
    let num = (|| size.checked_add(pad.checked_mul(2)?)?.checked_sub(dilation.checked_mul(k - 1)?)?.checked_sub(1)?.checked_add(if ceil { stride - 1 } else { 0 }))().ok_or_else(ovf)?;
    let mut out = num.div_euclid(stride) + 1;
    if ceil && (out - 1).checked_mul(stride).ok_or_else(ovf)? >= size.checked_add(pad).ok_or_else(ovf)? {
        out -= 1;
    }
    Ok((out >= 1).then_some(out as usize))
}

/// The [N, C, H, W] a pooling of `x` runs on: a 4-d input's shape, a 3-d [C, H, W] one's
/// [1, C, H, W] (PyTorch's unbatched pooling; its checks and messages read `x`'s own shape);
/// a float type, or a typed error naming `op`.
fn input4(op: &'static str, x: &Layout, dtype: DType) -> Result<[usize; 4]> {
    let s = x.shape();
    if !matches!(dtype, DType::F32 | DType::F16 | DType::BF16) {
        return Err(Error::unsupported(op, format!("element type {dtype} (float32, float16 and bfloat16 are served)")));
    }
    match *s {
        [n, c, h, w] => Ok([n, c, h, w]),
        [c, h, w] => Ok([1, c, h, w]),
        _ => Err(Error::unsupported(op, format!("only 3-d [C, H, W] and 4-d [N, C, H, W] inputs are served here, got shape {s:?}"))),
    }
}

/// Indices are int32 `h * W + w` of a plane: a plane of more than 2^31 elements has positions they
/// cannot hold (an error of `op`, not a wrap).
fn indexable(op: &'static str, input: [usize; 4], indices: bool) -> Result<()> {
    let plane = (input[2] as u64).saturating_mul(input[3] as u64);
    if indices && plane > i32::MAX as u64 + 1 {
        return Err(Error::Limit { op, what: format!("the int32 indices h * W + w of a {} x {} plane", input[2], input[3]), limit: "int32 indices", requested: plane - 1, max: i32::MAX as u64 });
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn windowed(op: &'static str, x: &Layout, dtype: DType, kernel: (usize, usize), stride: Option<(usize, usize)>, padding: (usize, usize), dilation: (usize, usize), ceil: bool, mode: WindowMode, indices: bool) -> Result<Window> {
    let input = input4(op, x, dtype)?;
    let stride = stride.unwrap_or(kernel);
    if kernel.0 == 0 || kernel.1 == 0 || stride.0 == 0 || stride.1 == 0 || dilation.0 == 0 || dilation.1 == 0 {
        return Err(Error::invalid(op, format!("kernel {kernel:?}, stride {stride:?} and dilation {dilation:?} must all be at least 1")));
    }
    // PyTorch takes each as an int (`safe_downcast<int, int64_t>`: "value cannot be converted
    // to type int32_t without overflow"); the device kernels too.
    let params = [kernel.0, kernel.1, stride.0, stride.1, padding.0, padding.1, dilation.0, dilation.1];
    if params.iter().any(|&v| v > i32::MAX as usize) {
        return Err(Error::overflow(op, format!("kernel {kernel:?}, stride {stride:?}, padding {padding:?} and dilation {dilation:?}: each must fit an int32 (PyTorch's int)")));
    }
    if padding.0 > kernel.0 / 2 || padding.1 > kernel.1 / 2 {
        return Err(Error::invalid(op, format!("padding {padding:?} must be at most half the kernel {kernel:?}")));
    }
    // PyTorch's pool2d_shape_check: only a 4-d input's batch may be empty.
    if input[1] == 0 || input[2] == 0 || input[3] == 0 {
        return Err(Error::invalid(op, format!("Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got: {:?}", x.shape())));
    }
    indexable(op, input, indices)?;
    let oh = pooled(op, input[2], kernel.0, padding.0, stride.0, dilation.0, ceil)?;
    let ow = pooled(op, input[3], kernel.1, padding.1, stride.1, dilation.1, ceil)?;
    let (Some(oh), Some(ow)) = (oh, ow) else {
        return Err(Error::invalid(op, format!("input {input:?} with kernel {kernel:?}, stride {stride:?}, padding {padding:?}, dilation {dilation:?} gives an output size below 1")));
    };
    let g = Window { op, mode, input, out: (oh, ow), kernel, stride, padding, dilation, indices, format: x.suggest_memory_format() };
    if indices && input[0] > 0 {
        // A window with no tap inside the input keeps the index its scan starts from, r0 * W +
        // c0 with r0 or c0 possibly past the input (PyTorch's): the last window's is the
        // largest, and must be an int32 too.
        let (r0, c0) = (g.span(0, oh - 1).0, g.span(1, ow - 1).0);
        let last = (r0 as i128) * input[3] as i128 + c0 as i128;
        if last > i32::MAX as i128 {
            return Err(Error::Limit { op, what: format!("the int32 index r0 * W + c0 = {last} of the last window of a {} x {} plane (its first tap at ({r0}, {c0}))", input[2], input[3]), limit: "int32 indices", requested: last as u64, max: i32::MAX as u64 });
        }
    }
    Ok(g)
}

/// The geometry of `F.max_pool2d` on `x`, checked.
#[doc(hidden)]
pub fn max_pool2d_window(x: &Layout, dtype: DType, o: &MaxPool2dOptions, indices: bool) -> Result<Window> {
    windowed("max_pool2d", x, dtype, o.kernel, o.stride, o.padding, o.dilation, o.ceil_mode, WindowMode::Max, indices)
}

/// The geometry of `F.avg_pool2d` on `x`, checked.
#[doc(hidden)]
pub fn avg_pool2d_window(x: &Layout, dtype: DType, o: &AvgPool2dOptions) -> Result<Window> {
    if o.divisor_override == Some(0) {
        return Err(Error::invalid("avg_pool2d", "divisor_override must be at least 1"));
    }
    let mode = WindowMode::Avg { count_include_pad: o.count_include_pad, divisor: o.divisor_override };
    windowed("avg_pool2d", x, dtype, o.kernel, o.stride, o.padding, (1, 1), o.ceil_mode, mode, false)
}

/// `F.adaptive_avg_pool2d` to (1, 1) is PyTorch's `x.mean((-1, -2), keepdim=True)` (its
/// shortcut, taken before its size checks: an empty plane gives NaN), seen through the
/// channels-last strides (C, 1, C, C) where the input suggests channels-last: the strides of
/// the [N, C, 1, 1] result, `None` for any other output size. A reduction, not one
/// invocation's walk over the plane (f32 sums of a 1000 x 1000 plane drifted by 1%).
pub(crate) fn global_mean_strides(x: &Layout, dtype: DType, out: (usize, usize)) -> Result<Option<Vec<isize>>> {
    if out != (1, 1) {
        return Ok(None);
    }
    // A 3-d input's [C, 1, 1] is contiguous (PyTorch restrides only 4-d channels-last).
    let unbatched = x.rank() == 3;
    let x = if unbatched { x.unsqueeze(0)? } else { x.clone() };
    let [_, c, _, _] = input4("adaptive_avg_pool2d", &x, dtype)?;
    let c = isize::try_from(c).map_err(|_| Error::overflow("adaptive_avg_pool2d", format!("{c} channels")))?;
    Ok(Some(if unbatched { vec![1, 1, 1] } else if x.suggest_memory_format() == MemoryFormat::ChannelsLast { vec![c, 1, c, c] } else { vec![c, 1, 1, 1] }))
}

/// The geometry of an adaptive pooling to `out` on `x`, checked (an output size of 0 gives an
/// empty output, as PyTorch's).
#[doc(hidden)]
pub fn adaptive_window(op: &'static str, x: &Layout, dtype: DType, out: (usize, usize), max: bool, indices: bool) -> Result<Window> {
    let input = input4(op, x, dtype)?;
    // PyTorch's checks: adaptive max pooling's every dim but the first non-empty (a 3-d
    // input's C may be 0, a 4-d one's not), adaptive average pooling's H and W.
    let s = x.shape();
    let first = if max { 1 } else { s.len() - 2 };
    if let Some(d) = (first..s.len()).find(|&d| s[d] == 0) {
        return Err(Error::invalid(op, format!("Expected input to have non-zero size for non-batch dimensions, but input has sizes {s:?} with dimension {d} being empty")));
    }
    // The output size is the caller's: its bytes must be countable.
    if [input[0], input[1], out.0, out.1].iter().try_fold(dtype.size(), |a, &n| a.checked_mul(n)).is_none_or(|b| isize::try_from(b).is_err()) {
        return Err(Error::overflow(op, format!("an output of [{}, {}, {}, {}] in {dtype}", input[0], input[1], out.0, out.1)));
    }
    indexable(op, input, indices)?;
    let mode = if max { WindowMode::AdaptiveMax } else { WindowMode::AdaptiveAvg };
    Ok(Window { op, mode, input, out, kernel: (1, 1), stride: (1, 1), padding: (0, 0), dilation: (1, 1), indices, format: x.suggest_memory_format() })
}

/// Pooling on host and device tensors, PyTorch's `torch.nn.functional` semantics. The input
/// is [N, C, H, W] in any strides (or an unbatched [C, H, W], whose result is a contiguous
/// [C, OH, OW], PyTorch's), float32, float16 or bfloat16; the output keeps the input's
/// type and memory format. Indices (PyTorch's int64) are int32 here, each maximum's position
/// `h * W + w` in its (n, c) plane (a plane of more than 2^31 elements is `Error::Limit`). Bad
/// input (padding over half the kernel, an output size below 1, a zero kernel, stride or
/// dilation) is a typed error and nothing is written.
///
/// ```
/// use strided_wgpu::{HostTensor, MaxPool2dOptions, Pool2d};
/// let x = HostTensor::from_vec((0..16).map(|i| i as f32).collect(), &[1, 1, 4, 4]).unwrap();
/// let y = x.max_pool2d(&MaxPool2dOptions::new((2, 2))).unwrap();
/// assert_eq!(y.to_vec::<f32>().unwrap(), vec![5.0, 7.0, 13.0, 15.0]);
/// ```
pub trait Pool2d: crate::reduce::Reduce {
    /// Runs the checked window `g` into a new output (and the indices when `g.indices`).
    #[doc(hidden)]
    fn window(&self, g: &Window) -> Result<(Self, Option<Self>)>;

    /// `F.max_pool2d(x, ..)`: the largest value of each window (NaN propagates).
    fn max_pool2d(&self, options: &MaxPool2dOptions) -> Result<Self> {
        Ok(unbatched(self, |x, t| max_pool2d_window(x, t, options, false), |x, g| x.window(g))?.0)
    }
    /// `F.max_pool2d(x, .., return_indices=True)`: the maxima and their `h * W + w` (int32).
    fn max_pool2d_with_indices(&self, options: &MaxPool2dOptions) -> Result<(Self, Self)> {
        let (y, i) = unbatched(self, |x, t| max_pool2d_window(x, t, options, true), |x, g| x.window(g))?;
        Ok((y, i.expect("indices asked for")))
    }
    /// `F.avg_pool2d(x, ..)`: the mean of each window.
    fn avg_pool2d(&self, options: &AvgPool2dOptions) -> Result<Self> {
        Ok(unbatched(self, |x, t| avg_pool2d_window(x, t, options), |x, g| x.window(g))?.0)
    }
    /// `F.adaptive_avg_pool2d(x, (oh, ow))`; to (1, 1) the mean over H and W, as PyTorch's
    /// (a reduction: compensated sums on the device).
    fn adaptive_avg_pool2d(&self, output_size: (usize, usize)) -> Result<Self> {
        if let Some(strides) = global_mean_strides(self.layout(), self.dtype(), output_size)? {
            let m = self.mean([-2isize, -1], true)?;
            return m.as_strided(m.shape(), &strides, m.storage_offset());
        }
        Ok(unbatched(self, |x, t| adaptive_window("adaptive_avg_pool2d", x, t, output_size, false, false), |x, g| x.window(g))?.0)
    }
    /// `F.adaptive_max_pool2d(x, (oh, ow))`.
    fn adaptive_max_pool2d(&self, output_size: (usize, usize)) -> Result<Self> {
        Ok(unbatched(self, |x, t| adaptive_window("adaptive_max_pool2d", x, t, output_size, true, false), |x, g| x.window(g))?.0)
    }
    /// `F.adaptive_max_pool2d(x, (oh, ow), return_indices=True)`.
    fn adaptive_max_pool2d_with_indices(&self, output_size: (usize, usize)) -> Result<(Self, Self)> {
        let (y, i) = unbatched(self, |x, t| adaptive_window("adaptive_max_pool2d", x, t, output_size, true, true), |x, g| x.window(g))?;
        Ok((y, i.expect("indices asked for")))
    }
}

/// Runs the window that `build` makes for `x` through `run`: a 4-d input as it is; a 3-d
/// [C, H, W] input (PyTorch's unbatched pooling, checked as such by `build`) as [1, C, H, W]
/// into a contiguous output (PyTorch's for a 3-d input, whatever its strides), seen as
/// [C, OH, OW] again.
pub(crate) fn unbatched<T: Strided>(x: &T, build: impl FnOnce(&Layout, DType) -> Result<Window>, run: impl FnOnce(&T, &Window) -> Result<(T, Option<T>)>) -> Result<(T, Option<T>)> {
    let g = build(x.layout(), x.dtype())?;
    if x.rank() != 3 {
        return run(x, &g);
    }
    let x = x.unsqueeze(0)?;
    let g = Window { format: MemoryFormat::Contiguous, ..g };
    let (y, i) = run(&x, &g)?;
    Ok((y.squeeze(0)?, i.map(|i| i.squeeze(0)).transpose()?))
}
