//! What the convolution families share: an operand's view, the operands a family records, the
//! image ranges that keep input and output within one binding, and the convolutions' use of
//! the shared dispatch loop (`kernels::dispatch`).

use crate::conv::{Conv2dOptions, Conv2dShape};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::abi::Uniform;
use crate::kernels::dispatch::{self, Dispatch};
use crate::kernels::conv::kernel::{ConvKernel, OP};
use crate::kernels::copy;
use crate::layout::Layout;
use crate::plan::CopyPlan;
use crate::runtime::record::Recorder;
use crate::runtime::{Runtime, Slot};

/// One operand of a convolution: its buffer and the view of it.
#[derive(Clone, Copy)]
pub(crate) struct View<'a> {
    pub buffer: &'a wgpu::Buffer,
    pub layout: &'a Layout,
}

/// A convolution as the tensors record it (`record` in this family's `mod.rs`): its operands,
/// options, shape and kernel (not `Auto`), and the name of the call for errors.
#[derive(Clone, Copy)]
pub(crate) struct ConvCall<'a> {
    pub op: &'static str,
    pub out: View<'a>,
    pub input: View<'a>,
    pub weight: View<'a>,
    pub bias: Option<View<'a>>,
    pub options: &'a Conv2dOptions,
    pub g: &'a Conv2dShape,
    pub kernel: ConvKernel,
    /// A tensor of the output's shape and strides added before the ReLU (the GEMM family's
    /// epilogue only: [`ConvKernel::fuses_residual`]).
    pub residual: Option<View<'a>>,
}

/// What a family's `record` receives: the checked call (its fields read through `Deref`) and
/// the image ranges.
pub(crate) struct Operands<'a> {
    pub call: ConvCall<'a>,
    pub ranges: &'a [Images],
}

impl<'a> std::ops::Deref for Operands<'a> {
    type Target = ConvCall<'a>;

    fn deref(&self) -> &ConvCall<'a> {
        &self.call
    }
}

impl Operands<'_> {
    /// Element offsets of images `r.n0` within the bound windows of input and output.
    pub fn bases(&self, r: &Images) -> (isize, isize) {
        let (xs, ys) = (self.input.layout.strides(), self.out.layout.strides());
        let e = r.esize;
        (self.input.layout.offset() as isize + r.n0 as isize * xs[0] - (r.x.0 / e) as isize, self.out.layout.offset() as isize + r.n0 as isize * ys[0] - (r.y.0 / e) as isize)
    }
}

/// The fields every convolution uniform starts with, checked once: input strides (n, c, h, w),
/// output strides (n, k, oh, ow), (h, w, oh, ow), (sh, sw, ph, pw) and (kh, kw, dh, dw).
pub(crate) struct Geometry {
    pub xs: [i32; 4],
    pub ys: [i32; 4],
    pub geo: [u32; 4],
    pub conv: [i32; 4],
    pub taps: [i32; 4],
}

impl Operands<'_> {
    pub fn geometry(&self) -> Result<Geometry> {
        let (xs, ys, g, o) = (self.input.layout.strides(), self.out.layout.strides(), self.g, self.options);
        let i = |v: usize, what: &str| i32_of(v as isize, what);
        // The kernels find an input row as `oy * stride - padding + ky * dilation` in i32 and
        // compare it with H in i32: the last output's last tap, and H and W, must fit.
        for (what, size, outs, stride, k, dilation) in [("H", g.h, g.oh, o.stride.0, g.kh, o.dilation.0), ("W", g.w, g.ow, o.stride.1, g.kw, o.dilation.1)] {
            i(size, what)?;
            let reach = outs.saturating_sub(1) as u128 * stride as u128 + k.saturating_sub(1) as u128 * dilation as u128;
            if reach > i32::MAX as u128 {
                return Err(Error::overflow(OP, format!("input {:?} (strides {:?}): the last output's last tap along {what} ({} outputs of stride {stride}, {k} taps of dilation {dilation}) lies {reach} elements past its window's start, past the kernels' i32 arithmetic", self.input.layout.shape(), self.input.layout.strides(), outs)));
            }
        }
        Ok(Geometry {
            xs: [i32_of(xs[0], "input stride n")?, i32_of(xs[1], "input stride c")?, i32_of(xs[2], "input stride h")?, i32_of(xs[3], "input stride w")?],
            ys: [i32_of(ys[0], "output stride n")?, i32_of(ys[1], "output stride k")?, i32_of(ys[2], "output stride oh")?, i32_of(ys[3], "output stride ow")?],
            geo: [u32_of(g.h, "H")?, u32_of(g.w, "W")?, u32_of(g.oh, "OH")?, u32_of(g.ow, "OW")?],
            conv: [i(o.stride.0, "stride")?, i(o.stride.1, "stride")?, i(o.padding.0, "padding")?, i(o.padding.1, "padding")?],
            taps: [i(g.kh, "kh")?, i(g.kw, "kw")?, i(o.dilation.0, "dilation")?, i(o.dilation.1, "dilation")?],
        })
    }
}

/// A range of images and the byte windows of input and output that it binds (elements of
/// `esize` bytes: 4, or 2 for the GEMM's 16-bit form).
pub(crate) struct Images {
    pub n0: usize,
    pub n1: usize,
    pub x: (u64, u64),
    pub y: (u64, u64),
    pub esize: u64,
}

/// The byte window (aligned offset, size) that binds images [n0, n1) of `t`, elements of
/// `esize` bytes: whole 32-bit words (a 16-bit element is read and written within its word).
fn window_of(t: &Layout, n0: usize, n1: usize, align: u64, esize: u64) -> Result<(u64, u64)> {
    let part = t.narrow(0, n0 as isize, n1 - n0)?;
    let (lo, hi) = part.span().unwrap_or((0, 0));
    let start = lo as u64 * esize / align * align;
    Ok((start, ((hi as u64 + 1) * esize).next_multiple_of(4) - start))
}

/// Splits the images into ranges whose input and output windows each fit one binding of `max`
/// bytes (`AdapterReport::conv_binding_limit`).
pub(crate) fn image_ranges(input: &Layout, out: &Layout, n: usize, max: u64, align: u64, esize: u64) -> Result<Vec<Images>> {
    let mut ranges = Vec::new();
    let mut n0 = 0;
    let window_of = |t: &Layout, n0: usize, n1: usize| window_of(t, n0, n1, align, esize);
    while n0 < n {
        let fits = |n1: usize| -> Result<bool> { Ok(window_of(input, n0, n1)?.1 <= max && window_of(out, n0, n1)?.1 <= max) };
        if !fits(n0 + 1)? {
            let need = window_of(input, n0, n0 + 1)?.1.max(window_of(out, n0, n0 + 1)?.1);
            return Err(Error::Limit { op: OP, what: format!("binding one image of input {:?} (strides {:?}) or output {:?}", input.shape(), input.strides(), out.shape()), limit: "max_storage_buffer_binding_size", requested: need, max });
        }
        // The largest n1 that fits (windows grow with n1).
        let lo = dispatch::most_that_fit(n0 + 1, n, fits)?;
        ranges.push(Images { n0, n1: lo, x: window_of(input, n0, lo)?, y: window_of(out, n0, lo)?, esize });
        n0 = lo;
    }
    Ok(ranges)
}

/// The form a family's kernel takes for the call's element type: float32 (`conv_io.wgsl`), or
/// float16 / bfloat16 read and written as they are (the `16` kernels, `conv_io16.wgsl`, given
/// the type as their `HALF` constant).
pub(crate) struct ElementForm {
    half: Option<(&'static str, i64)>,
    /// Bytes of the words the kernel moves 4 elements in: a vec4 of f32, or a vec2 of u32.
    pub unit: u64,
}

impl ElementForm {
    /// The form of `g`'s type for `kernel` (one that reads 16-bit operands, for those types).
    pub fn of(g: &Conv2dShape, kernel: ConvKernel) -> Result<ElementForm> {
        match g.dtype {
            DType::F32 => Ok(ElementForm { half: None, unit: 16 }),
            DType::F16 | DType::BF16 if kernel.reads_half() => Ok(ElementForm { half: Some(("HALF", g.dtype.code() as i64)), unit: 8 }),
            other => Err(Error::unsupported(OP, format!("{kernel:?} convolves float32 operands{}, got {other:?}", if kernel.reads_half() { ", float16 or bfloat16" } else { "" }))),
        }
    }

    /// Whether the operands are 16-bit.
    pub fn half(&self) -> bool {
        self.half.is_some()
    }

    /// The registered kernel of this form.
    pub fn shader(&self, f32_form: &'static str, half_form: &'static str) -> &'static str {
        if self.half() { half_form } else { f32_form }
    }

    /// `constants` with the type's `HALF` constant (16-bit forms).
    pub fn constants(&self, mut constants: Vec<(&'static str, i64)>) -> Vec<(&'static str, i64)> {
        constants.extend(self.half);
        constants
    }
}

/// `v` as a uniform's i32 (an overflow error of the convolution otherwise).
/// The implicit-GEMM kernels' `LONG_R` constant, where a reduction of `r_len` steps needs it:
/// `tap_of` (shaders/preludes/conv_gemm_taps.wgsl) divides indices below 2^20 through a float
/// reciprocal ([`tap_reciprocals`]), exact there, and reductions whose index (R, and up to a tile's steps past it,
/// 64 at most) may reach 2^20 divide as integers. Pushed only where set, so that every other
/// call keeps its pipeline key.
pub(crate) fn long_reduction(r_len: usize, constants: &mut Vec<(&'static str, i64)>) {
    if r_len + 64 >= 1 << 20 {
        constants.push(("LONG_R", 1));
    }
}

/// `GemmParams::inv`: 1 / (C/groups), 1 / kw and 1 / (kh * kw), correctly rounded to f32, through
/// which `tap_of` divides the reduction index (uniform values, so a GPU reads them from its
/// constant or scalar registers rather than holding them per lane).
pub(crate) fn tap_reciprocals(g: &crate::conv::Conv2dShape, cg: usize) -> [f32; 4] {
    let inv = |d: usize| (1.0 / d.max(1) as f64) as f32;
    [inv(cg), inv(g.kw), inv(g.kh * g.kw), 0.0]
}

pub(crate) fn i32_of(v: isize, what: &str) -> Result<i32> {
    dispatch::i32_of(OP, v, what)
}

/// `v` as a uniform's u32 (an overflow error of the convolution otherwise).
pub(crate) fn u32_of(v: usize, what: &str) -> Result<u32> {
    dispatch::u32_of(OP, v, what)
}

/// A grid of `groups` workgroups (see [`dispatch::grid`]).
pub(crate) fn grid(rt: &Runtime, groups: u64, what: &str) -> Result<(u32, u32)> {
    dispatch::grid(rt, OP, groups, what)
}

/// The `finish` word of the depthwise kernels' uniforms: x = 1 adds the bias, y = 1 applies
/// ReLU after. A uniform there (those kernels are small); the direct kernels (`conv.wgsl`) keep
/// how a window starts as the pipeline constant MODE: as a uniform, lavapipe compiled each of
/// their hundreds of unrolled stores with every branch, and their first call with an empty
/// shader cache took about twice as long (the 7x7 stem 29 s against 11.7 s, a 3x3
/// `DirectRows` 2.1 s against 1.1 s, before their stores became loops). The register-blocked
/// kernels keep the constant where a call's windows all start alike and read the mode from
/// their uniform (MODE 3) where they do not (`blocked.rs`). Their ReLU is the uniform's `finish.x`,
/// applied by a select at each store (no branch).
pub(crate) fn finish(mode: u32, relu: bool) -> [u32; 4] {
    [mode, relu as u32, 0, 0]
}

/// An output window as whole words of `unit` bytes (16: vec4 of f32; 8: the GEMM's 16-bit
/// form, 4 elements as a vec2 of u32), bound where the kernel writes words (which lie inside
/// the window: such an output holds at least one). Read windows: [`read_words`].
///
/// [`read_words`]: crate::kernels::dispatch::read_words
pub(crate) fn words_of((offset, size): (u64, u64), unit: u64) -> (u64, u64) {
    (offset, (size / unit * unit).max(unit))
}

/// Records a family's dispatches through the one dispatch loop (the convolution's slots: the
/// output is bound once as writable storage, as f32 (binding 4) or as vec4 words (binding 6);
/// the other writable binding gets a scratch word the kernel never touches, since WebGPU
/// forbids two writable bindings of one range).
pub(crate) fn dispatch<P: Uniform>(rt: &Runtime, rec: &mut Recorder, slots: &'static [Slot], dispatches: &[Dispatch<'_, P>]) -> Result<()> {
    dispatch::record(rt, rec, OP, slots, dispatches)
}

/// The output's two writable bindings (4: f32, 6: vec4 words): the real window on the one the
/// pipeline writes, `scratch` (16 bytes) on the other.
pub(crate) fn out_bindings<'a>(out: &'a wgpu::Buffer, window: (u64, u64), scratch: &'a wgpu::Buffer, vout: bool) -> [(&'a wgpu::Buffer, (u64, u64)); 2] {
    out_bindings_of(out, window, scratch, vout, 16)
}

/// [`out_bindings`] with words of `unit` bytes ([`words_of`]).
pub(crate) fn out_bindings_of<'a>(out: &'a wgpu::Buffer, window: (u64, u64), scratch: &'a wgpu::Buffer, vout: bool, unit: u64) -> [(&'a wgpu::Buffer, (u64, u64)); 2] {
    if vout {
        [(scratch, (0, 16)), (out, words_of(window, unit))]
    } else {
        [(out, window), (scratch, (0, 16))]
    }
}

impl Operands<'_> {
    /// The weight as [K, C/groups, kh, kw] (a 2-d 1x1 weight [K, C/groups] gains its 1x1 dims).
    pub fn weight4(&self) -> Result<Layout> {
        match self.weight.layout.rank() {
            2 => self.weight.layout.unsqueeze(-1)?.unsqueeze(-1),
            _ => Ok(self.weight.layout.clone()),
        }
    }
}

/// Checks that a packed weight of `elems` f32, bound whole, fits one storage binding (before
/// anything is recorded).
pub(crate) fn check_packed(rt: &Runtime, elems: usize, weight: &Layout) -> Result<()> {
    let (bytes, max) = (elems as u64 * 4, rt.report.conv_binding_limit());
    if bytes > max {
        return Err(Error::Limit { op: OP, what: format!("binding the packed weight of {:?}", weight.shape()), limit: "max_storage_buffer_binding_size", requested: bytes, max });
    }
    Ok(())
}

/// A scratch buffer of `elems` elements of `dtype` (its bytes rounded up to whole words) into
/// which a family packs the weight, of which the packing copies write `packed` (distinct)
/// elements: zeroed first (a clear recorded ahead of the copies, which also ends the compute
/// pass) only where the copies leave padding. The recording holds it from the start (no error
/// path returns it to the pool while a recorded command still writes it); the handle is what
/// the family binds.
pub(crate) fn packed_buffer(rt: &Runtime, rec: &mut Recorder, elems: usize, packed: usize, dtype: DType, usage: wgpu::BufferUsages) -> Result<wgpu::Buffer> {
    let b = rt.held_scratch(rec, OP, (elems as u64 * dtype.size() as u64).next_multiple_of(4), usage | wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST)?;
    if packed < elems {
        rec.clear_buffer(&b, 0, None);
    }
    Ok(b)
}

/// Records the copy of the weight view `src` (of `ops.weight`'s buffer, elements of the call's
/// type) into the view `dst` of `packed`, converted to `dtype` (exactly, or rounded to nearest
/// even as `copy_` rounds), through the copy path the adapter's default choice gives.
pub(crate) fn pack(rt: &Runtime, rec: &mut Recorder, ops: &Operands<'_>, dst: &Layout, src: &Layout, packed: &wgpu::Buffer, dtype: DType) -> Result<()> {
    let report = &rt.report;
    let plan = CopyPlan::new(dst, src)?;
    let from = ops.g.dtype;
    let buffer_copy = ops.weight.buffer.usage().contains(wgpu::BufferUsages::COPY_SRC);
    let Some(path) = copy::auto_path(report, &plan, dtype, from, buffer_copy, |c| copy::transpose_default(report, c)) else { return Ok(()) };
    let prepared = copy::prepare(report, &plan, dtype, from, path)?;
    copy::record(rt, rec, prepared, packed, ops.weight.buffer)
}

/// The bias binding: the bias's buffer, or, without a bias (which the kernels then never read),
/// a few bytes of `fallback`.
pub(crate) fn bias_binding<'a>(bias: Option<View<'a>>, fallback: &'a wgpu::Buffer) -> (&'a wgpu::Buffer, (u64, u64)) {
    match bias {
        Some(b) => (b.buffer, (0, b.buffer.size())),
        None => (fallback, (0, fallback.size().min(16))),
    }
}

/// The stride of the reduction index r over the weight `w` (viewed [groups, K/groups,
/// C/groups, kh, kw]) where its reduction dims, in a kernel's order ((c, ky, kx), or
/// (ky, kx, c) for `channels`), are one run of unit stride: 1, or 0 where r has one value.
/// None otherwise.
pub(crate) fn reduction_stride(w: &Layout, channels: bool) -> Option<isize> {
    let (shape, strides) = (w.shape(), w.strides());
    let dim = |d: usize| (shape[d], strides[d]);
    reduction_run([dim(2), dim(3), dim(4)], channels)
}

/// [`reduction_stride`] of the reduction dims (C/groups, kh, kw) given as (size, stride) each,
/// in a kernel's order ((c, ky, kx), or (ky, kx, c) for `channels`).
pub(crate) fn reduction_run([c, ky, kx]: [(usize, isize); 3], channels: bool) -> Option<isize> {
    let order = if channels { [ky, kx, c] } else { [c, ky, kx] };
    // The reduction dims of more than one element, outermost first, each stride the next one's
    // times its size, the innermost 1.
    let mut inner: Option<(usize, isize)> = None;
    for &(n, st) in order.iter().rev().filter(|&&(n, _)| n > 1) {
        match inner {
            None if st != 1 => return None,
            Some((m, s)) if st != s * m as isize => return None,
            _ => inner = Some((n, st)),
        }
    }
    Some(inner.map_or(0, |_| 1))
}

/// Whether a kernel can bind the weight's buffer and read the view `w` where it lies: the
/// buffer is not the output's, and `w`'s highest element lies within the first `elems` elements
/// the binding reaches and within i32 (so does every partial sum of a kernel's index, which
/// lie between the span's ends).
pub(crate) fn weight_reaches(call: &ConvCall<'_>, w: &Layout, elems: u64) -> bool {
    call.weight.buffer != call.out.buffer && w.span().is_some_and(|(_, hi)| (hi as u64) < elems && i32::try_from(hi).is_ok())
}

#[cfg(test)]
mod tests {
    /// The twin of `div_small` in shaders/preludes/conv_gemm_taps.wgsl (f32 as WGSL computes
    /// it: `u32(f32)` saturates, as `as u32` does).
    fn div_small(n: u32, d: u32, inv: f32) -> u32 {
        let q = (n as f32 * inv) as u32;
        let rem = n as i32 - (q.wrapping_mul(d)) as i32;
        (q as i32 - (rem < 0) as i32 + (rem >= d as i32) as i32) as u32
    }

    #[test]
    fn the_float_division_of_tap_of_is_exact_below_the_long_reduction() {
        let wgsl = include_str!("../../../shaders/preludes/conv_gemm_taps.wgsl");
        for line in ["let q = u32(f32(n) * inv);", "let rem = i32(n) - i32(q * d);", "return u32(i32(q) - i32(rem < 0) + i32(rem >= i32(d)));"] {
            assert!(wgsl.contains(line), "conv_gemm_taps.wgsl's div_small no longer has `{line}`: update its twin here");
        }
        // LONG_R from a reduction whose index (R plus up to 64 steps past it) may reach 2^20.
        let (mut short, mut long) = (Vec::new(), Vec::new());
        super::long_reduction((1 << 20) - 65, &mut short);
        super::long_reduction((1 << 20) - 64, &mut long);
        assert_eq!((short, long), (vec![], vec![("LONG_R", 1)]));
        // Every index a reduction without it reaches.
        let top = (1u32 << 20) - 1;
        // Divisors: the small ones a convolution's kw and kh * kw take, C/groups of every size,
        // and the largest; each quotient's ends (q * d - 1, q * d, q * d + d - 1), with the
        // reciprocal a GPU may compute up to 3 ulp off either way.
        let divisors: Vec<u32> = (1..=300).chain((9..20).map(|k| (1u32 << k) - 1)).chain((9..=20).map(|k| 1 << k)).chain([3 * 512, 9 * 512, 49 * 3, 9 * 2048, 1_000_003, top]).collect();
        for d in divisors {
            let exact = 1.0f32 / d as f32;
            for k in -3i32..=3 {
                let inv = f32::from_bits((exact.to_bits() as i32 + k) as u32);
                let mut q = 0u32;
                while q * d <= top {
                    for n in [q * d, q * d + d - 1, (q * d).wrapping_sub(1)] {
                        if n <= top {
                            assert_eq!(div_small(n, d, inv), n / d, "n {n} d {d} inv {k} ulp off");
                        }
                    }
                    q += 1;
                }
            }
        }
    }
}
