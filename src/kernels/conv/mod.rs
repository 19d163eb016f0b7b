//! Convolution on the device, as implicit GEMM: every operand is read through its strides (no
//! im2col buffer, no hidden copy of the input). Four kernel families, one eligibility function
//! ([`ConvKernel::eligible`]) used by the tuner's candidates and by forced kernels alike:
//!
//! * [`blocked`]: register-blocked kernels shaped for CPU adapters (an invocation holds 8 pixels
//!   x up to 64 input channels); a kh x kw kernel runs as kh*kw shifted 1x1 passes that add into
//!   the output.
//! * [`direct`]: shaped for CPU adapters too, for any kernel size: an invocation holds 8 pixels
//!   x up to 64 output channels and walks every tap and input channel, writing each output once.
//! * [`gemm`]: tiled implicit GEMM shaped for GPUs (64 x 64 output tiles, 4 x 4 register
//!   blocks, the reduction staged through workgroup memory), with the im2col mapping inside the
//!   input loads.
//! * [`depthwise`]: one input channel per output channel, memory-bound.
//!
//! The shared part: the kernel enum, the image ranges that keep input and output within one
//! binding, and the dispatch of a family's uniforms and bind groups.

pub(crate) mod blocked;
pub(crate) mod class;
pub(crate) mod depthwise;
mod direct;
pub(crate) mod gemm;

use std::num::NonZeroU64;

use serde::{Deserialize, Serialize};

use crate::conv::{Conv2dOptions, Conv2dShape};
use crate::dtype::DType;
use crate::kernels::copy;
use crate::plan::CopyPlan;
use crate::runtime::pool::Pooled;
use crate::error::{Error, Result};
use crate::kernels::abi::{self, Uniform};
use crate::kernels::shaders::{self, PipelineSpec};
use crate::layout::Layout;
use crate::runtime::submit::Keep;
use crate::runtime::{AdapterReport, PipelineKey, Runtime, Slot};

/// One operand of a convolution: its buffer and the view of it.
#[derive(Clone, Copy)]
pub(crate) struct View<'a> {
    pub buffer: &'a wgpu::Buffer,
    pub layout: &'a Layout,
}

pub(crate) const OP: &str = "conv2d";

/// A convolution kernel. Every kernel reads any input and output strides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ConvKernel {
    /// Chosen per adapter and shape class by a one-time measurement.
    Auto,
    /// CPU-shaped, register-blocked: `conv1x1_nchw.wgsl`, vectors over 4 pixels (the NCHW
    /// orientation), barrier-free.
    Nchw,
    /// CPU-shaped: `conv1x1_nhwc.wgsl`, vectors over 4 channels (the NHWC orientation).
    Nhwc,
    /// [`ConvKernel::Nchw`] with each channel quad of the workgroup's input staged through
    /// workgroup memory.
    NchwTiled,
    /// [`ConvKernel::Nhwc`] with the input staged through workgroup memory.
    NhwcTiled,
    /// GPU-shaped tiled implicit GEMM (`conv2d_gemm.wgsl`), lanes along pixels (NCHW).
    GemmNchw,
    /// GPU-shaped tiled implicit GEMM, lanes along channels (NHWC).
    GemmNhwc,
    /// Depthwise (`conv2d_depthwise.wgsl`, groups == C): 4 pixels of a row per invocation.
    DepthwiseNchw,
    /// Depthwise: 4 channels of a pixel per invocation.
    DepthwiseNhwc,
    /// Depthwise (`conv2d_depthwise_rows.wgsl`): 4 channels x 8 pixels of a row per invocation,
    /// the input columns sliding from tap to tap (NHWC orientation).
    DepthwiseRows,
    /// Depthwise 3x3 with unit stride and dilation (`conv2d_depthwise_tall.wgsl`): 4 channels
    /// x 8 pixels of 16 consecutive rows per invocation, three input rows held in registers
    /// while it walks down. Shaped for CPU adapters (a tuner candidate only there).
    DepthwiseTall,
    /// CPU-shaped (`conv2d_direct.wgsl`), any kernel size: 8 pixels x up to 64 output channels
    /// per invocation accumulated over every tap and input channel, each output written once
    /// (the NHWC orientation).
    Direct,
    /// [`ConvKernel::Direct`] for kernels 3 wide at unit stride and dilation along W
    /// (`conv2d_direct_rows.wgsl`): the 8 pixels are consecutive in an output row, and the three
    /// taps of a kernel row share the 10 input pixels they span, loaded once. CPU-shaped.
    DirectRows,
    /// [`ConvKernel::DirectRows`] for 3x3 kernels at unit stride and dilation
    /// (`conv2d_direct_band.wgsl`): the 8 lanes of an aligned subgroup group hold 8 consecutive
    /// output rows, and take the input rows they share from each other by subgroup shuffles
    /// (10 rows loaded for a band, not 24). CPU-shaped; needs full subgroups of at least 8 lanes.
    DirectBand,
}

/// A family of convolution kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Family {
    Blocked,
    Direct,
    Gemm,
    Depthwise,
}

impl ConvKernel {
    /// Every kernel but `Auto`.
    pub const ALL: [ConvKernel; 13] = [
        ConvKernel::Nchw,
        ConvKernel::Nhwc,
        ConvKernel::NchwTiled,
        ConvKernel::NhwcTiled,
        ConvKernel::GemmNchw,
        ConvKernel::GemmNhwc,
        ConvKernel::DepthwiseNchw,
        ConvKernel::DepthwiseNhwc,
        ConvKernel::DepthwiseRows,
        ConvKernel::DepthwiseTall,
        ConvKernel::Direct,
        ConvKernel::DirectRows,
        ConvKernel::DirectBand,
    ];

    pub(crate) fn family(self) -> Family {
        match self {
            ConvKernel::GemmNchw | ConvKernel::GemmNhwc => Family::Gemm,
            ConvKernel::DepthwiseNchw | ConvKernel::DepthwiseNhwc | ConvKernel::DepthwiseRows | ConvKernel::DepthwiseTall => Family::Depthwise,
            ConvKernel::Direct | ConvKernel::DirectRows | ConvKernel::DirectBand => Family::Direct,
            _ => Family::Blocked,
        }
    }

    /// Whether the kernel's lanes (or vectors) run along channels: the NHWC orientation.
    pub(crate) fn channels(self) -> bool {
        matches!(self, ConvKernel::Nhwc | ConvKernel::NhwcTiled | ConvKernel::GemmNhwc | ConvKernel::DepthwiseNhwc | ConvKernel::DepthwiseRows | ConvKernel::DepthwiseTall | ConvKernel::Direct | ConvKernel::DirectRows | ConvKernel::DirectBand)
    }

    /// Whether the kernel is shaped for a GPU (the tuner's candidates on adapters that are not
    /// CPUs; the register-budget test compiles every one of them).
    pub fn gpu_shaped(self) -> bool {
        matches!(self.family(), Family::Gemm | Family::Depthwise) && self != ConvKernel::DepthwiseTall
    }

    /// Whether this kernel can compute the convolution: the one check, used by the tuner's
    /// candidates and by forced kernels. Depthwise kernels need groups == C.
    pub fn eligible(self, g: &Conv2dShape, o: &Conv2dOptions) -> Result<()> {
        match self {
            ConvKernel::Auto => Err(Error::invalid(OP, "no kernel was resolved for the convolution")),
            ConvKernel::DepthwiseNchw | ConvKernel::DepthwiseNhwc | ConvKernel::DepthwiseRows | ConvKernel::DepthwiseTall if o.groups != g.c => Err(Error::unsupported(
                OP,
                format!("{self:?} needs a depthwise convolution (groups == C), got groups = {} with input channels C = {} and K = {}", o.groups, g.c, g.k),
            )),
            ConvKernel::DepthwiseTall if (g.kh, g.kw, o.stride, o.dilation) != (3, 3, (1, 1), (1, 1)) => Err(Error::unsupported(
                OP,
                format!("{self:?} needs a 3x3 kernel with stride 1 and dilation 1, got {}x{} with stride {:?} and dilation {:?}", g.kh, g.kw, o.stride, o.dilation),
            )),
            ConvKernel::Direct => direct::tiling(g, o.groups).map(|_| ()),
            ConvKernel::DirectRows if (g.kw, o.stride.1, o.dilation.1) != (3, 1, 1) => Err(Error::unsupported(
                OP,
                format!("{self:?} needs a kernel 3 wide with stride 1 and dilation 1 along W, got {}x{} with stride {:?} and dilation {:?}", g.kh, g.kw, o.stride, o.dilation),
            )),
            ConvKernel::DirectRows => direct::tiling(g, o.groups).map(|_| ()),
            ConvKernel::DirectBand if (g.kh, g.kw, o.stride, o.dilation) != (3, 3, (1, 1), (1, 1)) => Err(Error::unsupported(
                OP,
                format!("{self:?} needs a 3x3 kernel with stride 1 and dilation 1, got {}x{} with stride {:?} and dilation {:?}", g.kh, g.kw, o.stride, o.dilation),
            )),
            ConvKernel::DirectBand => direct::tiling(g, o.groups).map(|_| ()),
            _ => Ok(()),
        }
    }

    /// Whether the adapter of `report` can run the kernel (whatever the shape): the one check,
    /// used by the tuner's candidates and by forced kernels. [`ConvKernel::DirectBand`] needs
    /// the subgroup shuffles of a native CPU adapter with subgroups of at least 8 lanes
    /// ([`AdapterReport::shuffled_weights`]).
    pub fn runs_on(self, report: &AdapterReport) -> Result<()> {
        match self {
            ConvKernel::DirectBand if !report.shuffled_weights => Err(Error::unsupported(
                OP,
                format!("{self:?} needs subgroups of at least 8 invocations on a native CPU adapter; {} ({:?}, {:?}) has none", report.name, report.backend, report.device_type),
            )),
            _ => Ok(()),
        }
    }

    /// Whether the kernel's 4-vectors of input, and of output, are contiguous and 16-byte
    /// aligned in every dispatch of `images` images (then they move as vec4 words).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn vectors(self, g: &Conv2dShape, o: &Conv2dOptions, xs: &[isize], ys: &[isize], xbase: isize, ybase: isize, images: usize) -> (bool, bool) {
        let m4 = |v: isize| v % 4 == 0;
        let batch = |s: isize| images == 1 || m4(s);
        let groups = o.groups.max(1);
        let (cg, kg) = (g.c / groups, g.k / groups);
        // 4 consecutive channels of a pixel, and 4 consecutive pixels of a row.
        let x_channels = xs[1] == 1 && batch(xs[0]) && m4(xs[2]) && m4(xs[3]) && m4(xbase);
        let y_channels = ys[1] == 1 && batch(ys[0]) && m4(ys[2]) && m4(ys[3]) && m4(ybase);
        let y_pixels = ys[3] == 1 && g.ow.is_multiple_of(4) && batch(ys[0]) && m4(ys[1]) && m4(ys[2]) && m4(ybase);
        match self {
            ConvKernel::Auto => (false, false),
            ConvKernel::Nchw | ConvKernel::Nhwc | ConvKernel::NchwTiled | ConvKernel::NhwcTiled | ConvKernel::Direct | ConvKernel::DirectRows | ConvKernel::DirectBand => blocked::vectors(self, g, o, xs, ys, xbase, ybase, images),
            ConvKernel::GemmNchw => (false, y_pixels),
            ConvKernel::GemmNhwc => (x_channels && cg.is_multiple_of(4), y_channels && kg.is_multiple_of(4)),
            ConvKernel::DepthwiseNchw => (false, y_pixels),
            ConvKernel::DepthwiseNhwc | ConvKernel::DepthwiseRows | ConvKernel::DepthwiseTall => (x_channels && g.k == g.c && g.c.is_multiple_of(4), y_channels && g.k.is_multiple_of(4)),
        }
    }
}

/// Records a validated convolution of f32 operands through `kernel` (not `Auto`) into `enc`;
/// its temporaries go to `keep`. The caller holds the operands until the work is done.
#[allow(clippy::too_many_arguments)]
pub(crate) fn record(rt: &Runtime, enc: &mut wgpu::CommandEncoder, keep: &mut Keep, out: View<'_>, input: View<'_>, weight: View<'_>, bias: Option<View<'_>>, options: &Conv2dOptions, g: &Conv2dShape, kernel: ConvKernel) -> Result<()> {
    kernel.eligible(g, options)?;
    kernel.runs_on(&rt.report)?;
    if g.n * g.k * g.oh * g.ow == 0 {
        return Ok(());
    }
    let report = &rt.report;
    for (name, t) in [("bias", bias), ("weight", Some(weight))] {
        if let Some(t) = t {
            if t.buffer.size() > report.max_storage_buffer_binding_size {
                return Err(Error::Limit { op: OP, what: format!("binding the {name} ({} bytes)", t.buffer.size()), limit: "max_storage_buffer_binding_size", requested: t.buffer.size(), max: report.max_storage_buffer_binding_size });
            }
        }
    }
    let ranges = image_ranges(input.layout, out.layout, g.n, report.max_storage_buffer_binding_size, report.min_storage_buffer_offset_alignment as u64)?;
    let ops = Operands { out, input, weight, bias, options, g, kernel, ranges: &ranges };
    match kernel.family() {
        Family::Blocked => blocked::record(rt, enc, keep, &ops),
        Family::Direct => direct::record(rt, enc, keep, &ops),
        Family::Gemm => gemm::record(rt, enc, keep, &ops),
        Family::Depthwise => depthwise::record(rt, enc, keep, &ops),
    }
}

/// What a family's `record` receives: the checked operands and the image ranges.
pub(crate) struct Operands<'a> {
    pub out: View<'a>,
    pub input: View<'a>,
    pub weight: View<'a>,
    pub bias: Option<View<'a>>,
    pub options: &'a Conv2dOptions,
    pub g: &'a Conv2dShape,
    pub kernel: ConvKernel,
    pub ranges: &'a [Images],
}

impl Operands<'_> {
    /// Element offsets of images `r.n0` within the bound windows of input and output.
    pub fn bases(&self, r: &Images) -> (isize, isize) {
        let (xs, ys) = (self.input.layout.strides(), self.out.layout.strides());
        (self.input.layout.offset() as isize + r.n0 as isize * xs[0] - (r.x.0 / 4) as isize, self.out.layout.offset() as isize + r.n0 as isize * ys[0] - (r.y.0 / 4) as isize)
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
        Ok(Geometry {
            xs: [i32_of(xs[0], "input stride n")?, i32_of(xs[1], "input stride c")?, i32_of(xs[2], "input stride h")?, i32_of(xs[3], "input stride w")?],
            ys: [i32_of(ys[0], "output stride n")?, i32_of(ys[1], "output stride k")?, i32_of(ys[2], "output stride oh")?, i32_of(ys[3], "output stride ow")?],
            geo: [u32_of(g.h, "H")?, u32_of(g.w, "W")?, u32_of(g.oh, "OH")?, u32_of(g.ow, "OW")?],
            conv: [i(o.stride.0, "stride")?, i(o.stride.1, "stride")?, i(o.padding.0, "padding")?, i(o.padding.1, "padding")?],
            taps: [i(g.kh, "kh")?, i(g.kw, "kw")?, i(o.dilation.0, "dilation")?, i(o.dilation.1, "dilation")?],
        })
    }
}

/// A range of images and the byte windows of input and output that it binds.
pub(crate) struct Images {
    pub n0: usize,
    pub n1: usize,
    pub x: (u64, u64),
    pub y: (u64, u64),
}

/// The byte window (aligned offset, size) that binds images [n0, n1) of `t`.
fn window_of(t: &Layout, n0: usize, n1: usize, align: u64) -> Result<(u64, u64)> {
    let part = t.narrow(0, n0 as isize, n1 - n0)?;
    let (lo, hi) = part.span().unwrap_or((0, 0));
    let start = lo as u64 * 4 / align * align;
    Ok((start, (hi as u64 + 1) * 4 - start))
}

/// Splits the images into ranges whose input and output windows each fit one binding.
fn image_ranges(input: &Layout, out: &Layout, n: usize, max: u64, align: u64) -> Result<Vec<Images>> {
    let mut ranges = Vec::new();
    let mut n0 = 0;
    while n0 < n {
        let fits = |n1: usize| -> Result<bool> { Ok(window_of(input, n0, n1, align)?.1 <= max && window_of(out, n0, n1, align)?.1 <= max) };
        if !fits(n0 + 1)? {
            let need = window_of(input, n0, n0 + 1, align)?.1.max(window_of(out, n0, n0 + 1, align)?.1);
            return Err(Error::Limit { op: OP, what: format!("binding one image of input {:?} (strides {:?}) or output {:?}", input.shape(), input.strides(), out.shape()), limit: "max_storage_buffer_binding_size", requested: need, max });
        }
        // The largest n1 that fits (windows grow with n1).
        let (mut lo, mut hi) = (n0 + 1, n);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            if fits(mid)? {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        ranges.push(Images { n0, n1: lo, x: window_of(input, n0, lo, align)?, y: window_of(out, n0, lo, align)? });
        n0 = lo;
    }
    Ok(ranges)
}

pub(crate) fn bind(b: &wgpu::Buffer, (offset, size): (u64, u64)) -> wgpu::BindingResource<'_> {
    wgpu::BindingResource::Buffer(wgpu::BufferBinding { buffer: b, offset, size: NonZeroU64::new(size.div_ceil(4) * 4) })
}

/// A window as whole vec4 words (every vec4 the kernels move lies inside it).
pub(crate) fn words((offset, size): (u64, u64)) -> (u64, u64) {
    (offset, (size / 16 * 16).max(16))
}

pub(crate) fn i32_of(v: isize, what: &str) -> Result<i32> {
    i32::try_from(v).map_err(|_| Error::overflow(OP, format!("{what} = {v} in i32")))
}

pub(crate) fn u32_of(v: usize, what: &str) -> Result<u32> {
    u32::try_from(v).map_err(|_| Error::overflow(OP, format!("{what} = {v} in u32")))
}

/// A grid of `groups` workgroups within the per-dimension limit: (x, y) with x * y >= groups.
pub(crate) fn grid(rt: &Runtime, groups: u64, what: &str) -> Result<(u32, u32)> {
    let max = rt.report.max_compute_workgroups_per_dimension as u64;
    let gx = groups.clamp(1, max);
    let gy = groups.div_ceil(gx);
    if gy > max {
        return Err(Error::Limit { op: OP, what: what.to_string(), limit: "max_compute_workgroups_per_dimension", requested: gy, max });
    }
    Ok((gx as u32, gy as u32))
}

/// One dispatch of a family: its pipeline, uniform, the buffers of bindings 1..=6 (binding 0 is
/// the uniform), and its grid.
pub(crate) struct Dispatch<'a, P: Uniform> {
    pub key: PipelineKey,
    pub params: P,
    pub bindings: [(&'a wgpu::Buffer, (u64, u64)); 6],
    pub grid: (u32, u32),
}

/// Records `dispatches` in one compute pass: their uniforms in one buffer (256-byte slots),
/// their bind groups against the layout of `slots`. The output is bound once as writable
/// storage: as f32 (binding 4) or as vec4 words (binding 6); the other writable binding gets a
/// scratch word the kernel never touches (WebGPU forbids two writable bindings of one range).
pub(crate) fn dispatch<P: Uniform>(rt: &Runtime, enc: &mut wgpu::CommandEncoder, keep: &mut Keep, slots: &'static [Slot], dispatches: &[Dispatch<'_, P>]) -> Result<()> {
    if dispatches.is_empty() {
        return Ok(());
    }
    let mut pipelines = Vec::new();
    for d in dispatches {
        pipelines.push(rt.pipeline(&d.key, slots, || shaders::source(d.key.shader))?);
    }
    let bgl = rt.bind_group_layout(slots)?;
    let stride = abi::SLOT_BYTES as u64;
    let size = std::mem::size_of::<P>() as u64;
    rt.scoped(OP, || {
        let ubuf = rt.buffer(OP, dispatches.len() as u64 * stride, wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST)?;
        let mut bytes = vec![0u8; dispatches.len() * stride as usize];
        for (i, d) in dispatches.iter().enumerate() {
            bytes[i * stride as usize..][..size as usize].copy_from_slice(abi::bytes(&d.params));
        }
        rt.queue.write_buffer(ubuf.buffer(), 0, &bytes);
        let mut groups = Vec::new();
        for (i, d) in dispatches.iter().enumerate() {
            let mut entries = vec![wgpu::BindGroupEntry { binding: 0, resource: bind(ubuf.buffer(), (i as u64 * stride, size)) }];
            for (j, (buffer, window)) in d.bindings.iter().enumerate() {
                entries.push(wgpu::BindGroupEntry { binding: j as u32 + 1, resource: bind(buffer, *window) });
            }
            groups.push(rt.device.create_bind_group(&wgpu::BindGroupDescriptor { label: Some(OP), layout: &bgl, entries: &entries }));
        }
        let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some(OP), timestamp_writes: None });
        for ((bg, d), pipeline) in groups.iter().zip(dispatches).zip(&pipelines) {
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, bg, &[]);
            pass.dispatch_workgroups(d.grid.0, d.grid.1, 1);
        }
        drop(pass);
        keep.hold(ubuf);
        Ok(())
    })
}

/// The output's two writable bindings (4: f32, 6: vec4 words): the real window on the one the
/// pipeline writes, `scratch` (16 bytes) on the other.
pub(crate) fn out_bindings<'a>(out: &'a wgpu::Buffer, window: (u64, u64), scratch: &'a wgpu::Buffer, vout: bool) -> [(&'a wgpu::Buffer, (u64, u64)); 2] {
    if vout {
        [(scratch, (0, 16)), (out, words(window))]
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
    let (bytes, max) = (elems as u64 * 4, rt.report.max_storage_buffer_binding_size);
    if bytes > max {
        return Err(Error::Limit { op: OP, what: format!("binding the packed weight of {:?}", weight.shape()), limit: "max_storage_buffer_binding_size", requested: bytes, max });
    }
    Ok(())
}

/// A zeroed scratch buffer of `elems` f32 into which a family packs the weight (cleared by a
/// command recorded ahead of the copies).
pub(crate) fn packed_buffer(rt: &Runtime, enc: &mut wgpu::CommandEncoder, elems: usize, usage: wgpu::BufferUsages) -> Result<Pooled> {
    rt.scoped(OP, || {
        let b = rt.buffer(OP, elems as u64 * 4, usage | wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST)?;
        enc.clear_buffer(b.buffer(), 0, None);
        Ok(b)
    })
}

/// Records the copy of the weight view `src` (of `ops.weight`'s buffer) into the view `dst`
/// of `packed`, through the copy path the adapter's default choice gives.
pub(crate) fn pack(rt: &Runtime, enc: &mut wgpu::CommandEncoder, keep: &mut Keep, ops: &Operands<'_>, dst: &Layout, src: &Layout, packed: &wgpu::Buffer) -> Result<()> {
    let report = &rt.report;
    let plan = CopyPlan::new(dst, src)?;
    let buffer_copy = ops.weight.buffer.usage().contains(wgpu::BufferUsages::COPY_SRC);
    let Some(path) = copy::auto_path(report, &plan, DType::F32, DType::F32, buffer_copy, |c| copy::transpose_default(report, c)) else { return Ok(()) };
    let prepared = copy::prepare(report, &plan, DType::F32, DType::F32, path)?;
    copy::record(rt, enc, keep, prepared, packed, ops.weight.buffer)
}

/// The bias binding: the bias's buffer, or, without a bias (which the kernels then never read),
/// a few bytes of `fallback`.
pub(crate) fn bias_binding<'a>(bias: Option<View<'a>>, fallback: &'a wgpu::Buffer) -> (&'a wgpu::Buffer, (u64, u64)) {
    match bias {
        Some(b) => (b.buffer, (0, b.buffer.size())),
        None => (fallback, (0, fallback.size().min(16))),
    }
}

/// Every convolution pipeline the tuner may choose on an adapter that is not a CPU: each
/// GPU-shaped kernel with each set of override constants it can be given. The register-budget
/// test compiles each of them with a GPU compiler.
pub fn gpu_pipelines() -> Vec<PipelineSpec> {
    let mut out = Vec::new();
    for kernel in ConvKernel::ALL.into_iter().filter(|k| k.gpu_shaped()) {
        let channels = kernel.channels() as i64;
        // Only the NHWC orientations move their input as vec4 words.
        let vins: &[i64] = if kernel.channels() { &[0, 1] } else { &[0] };
        for &vin in vins {
            for vout in [0, 1] {
                for mode in [0, 1] {
                    for relu in [0, 1] {
                        let mut constants = vec![("MODE", mode), ("RELU", relu), ("VIN", vin), ("VOUT", vout)];
                        if kernel != ConvKernel::DepthwiseRows {
                            constants.insert(0, ("CHANNELS", channels));
                        }
                        if kernel.family() == Family::Depthwise {
                            constants.push(("WG", depthwise::WG as i64));
                        }
                        if kernel == ConvKernel::DepthwiseRows {
                            for slide in [0, 1] {
                                let mut c = constants.clone();
                                c.push(("SLIDE", slide));
                                out.push(PipelineSpec { kernel: shader_of(kernel), constants: c });
                            }
                        } else {
                            out.push(PipelineSpec { kernel: shader_of(kernel), constants });
                        }
                    }
                }
            }
        }
    }
    out
}

/// The registered kernel of a GPU-shaped kernel.
fn shader_of(kernel: ConvKernel) -> &'static str {
    match kernel {
        ConvKernel::DepthwiseRows => "conv2d_depthwise_rows",
        k if k.family() == Family::Gemm => "conv2d_gemm",
        _ => "conv2d_depthwise",
    }
}
