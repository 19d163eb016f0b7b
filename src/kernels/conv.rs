//! 1x1 convolution on the device, as an implicit GEMM: every operand is read through its strides
//! (no im2col buffer, no hidden copy of the input).
//!
//! The work is cut into windows: 4*CQ input channels of one group (CQ, the channel quads an
//! invocation holds, is C/groups rounded up to a power of two, at most 16 quads = 64 channels)
//! x 16384 / (4*CQ) output channels, and a range of images small enough that input and output
//! bind within `max_storage_buffer_binding_size`. Each window's weights are packed by the
//! host-side plan into a 64 KiB uniform block (a copy of K*C elements, tiny next to the
//! N*K*C*H*W work), which every invocation reads at the same address: the cheapest operand on
//! any adapter. Channel windows after the first add into the output. Kernels: see [`ConvKernel`].

use std::num::NonZeroU64;

use bytemuck::{Pod, Zeroable};

use serde::{Deserialize, Serialize};

use crate::conv::{Conv1x1Options, Conv1x1Shape};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::copy;
use crate::kernels::shaders;
use crate::layout::Layout;
use crate::plan::CopyPlan;
use crate::runtime::submit::Keep;
use crate::runtime::{PipelineKey, Runtime, Slot};

/// The bindings of the convolution kernels: the parameters (uniform), the input (read-only), a
/// window's packed weights (uniform), the bias (read-only), the output, and the input and
/// output windows again as vec4 words.
const SLOTS: &[Slot] = &[Slot::Uniform, Slot::Read, Slot::Uniform, Slot::Read, Slot::Write, Slot::Read, Slot::Write];

/// One operand of a convolution: its buffer and the view of it.
#[derive(Clone, Copy)]
pub(crate) struct View<'a> {
    pub buffer: &'a wgpu::Buffer,
    pub layout: &'a Layout,
}

const OP: &str = "conv1x1";
/// Floats in one window's weight block (64 KiB, the uniform array of `shaders/conv.wgsl`).
const BLOCK: usize = 16384;
/// The most channel quads an invocation holds (the `xm` array of the kernels).
const MAX_CQ: usize = 16;
/// Output pixels per invocation (two quads).
const PIXELS: usize = 8;

/// A 1x1 convolution kernel. Every kernel reads any input and output strides; they differ in
/// which dim they vectorize and whether they stage the input through workgroup memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ConvKernel {
    /// Chosen per adapter and shape class by a one-time measurement.
    Auto,
    /// `conv1x1_nchw.wgsl`: vectors over 4 pixels (the NCHW orientation), barrier-free.
    Nchw,
    /// `conv1x1_nhwc.wgsl`: vectors over 4 channels (the NHWC orientation), barrier-free.
    Nhwc,
    /// [`ConvKernel::Nchw`] with each channel quad of the workgroup's input staged through
    /// workgroup memory (consecutive invocations load consecutive quads).
    NchwTiled,
    /// [`ConvKernel::Nhwc`] with the input staged through workgroup memory.
    NhwcTiled,
}

impl ConvKernel {
    /// Whether the kernel vectorizes over channels (the NHWC orientation).
    fn channels(self) -> bool {
        matches!(self, ConvKernel::Nhwc | ConvKernel::NhwcTiled)
    }
    /// The registered kernel: its file, with the weights prelude the adapter wants.
    fn shader(self, shuffled_weights: bool) -> &'static str {
        match (self.channels(), shuffled_weights) {
            (true, false) => "conv1x1_nhwc",
            (false, false) => "conv1x1_nchw",
            (true, true) => "conv1x1_nhwc_shuffled",
            (false, true) => "conv1x1_nchw_shuffled",
        }
    }
    fn tiled(self) -> bool {
        matches!(self, ConvKernel::NchwTiled | ConvKernel::NhwcTiled)
    }
    /// Element (k, c) of a window's weight block, as (row stride of k, of c).
    fn block_strides(self, t: Tiling) -> [isize; 2] {
        if self.channels() {
            [1, t.chunk_k() as isize]
        } else {
            [t.chunk_c() as isize, 1]
        }
    }

    /// Whether the kernel's 4-vectors of input, and of output, are contiguous and 16-byte
    /// aligned in every dispatch of `images` images (then they move as vec4 words).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn vectors(self, g: &Conv1x1Shape, o: &Conv1x1Options, xs: &[isize], ys: &[isize], xbase: isize, ybase: isize, images: usize) -> (bool, bool) {
        let m4 = |v: isize| v % 4 == 0;
        let batch = |s: isize| images == 1 || m4(s);
        let groups = o.groups.max(1);
        if self.channels() {
            return (
                xs[1] == 1 && (g.c / groups).is_multiple_of(4) && batch(xs[0]) && m4(xs[2]) && m4(xs[3]) && m4(xbase),
                ys[1] == 1 && (g.k / groups).is_multiple_of(4) && batch(ys[0]) && m4(ys[2]) && m4(ys[3]) && m4(ybase),
            );
        }
        let plane = (g.oh * g.ow).is_multiple_of(4);
        let direct = o.stride == (1, 1) && o.padding == (0, 0);
        (
            direct && plane && xs[3] == 1 && xs[2] == g.w as isize && batch(xs[0]) && m4(xs[1]) && m4(xbase),
            plane && ys[3] == 1 && ys[2] == g.ow as isize && batch(ys[0]) && m4(ys[1]) && m4(ybase),
        )
    }
}

/// The uniform of `shaders/conv.wgsl` (`ConvParams` there).
#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct ConvParams {
    xs: [i32; 4],
    ys: [i32; 4],
    geo: [u32; 4],
    conv: [u32; 4],
    base: [i32; 4],
    work: [u32; 4],
}

/// One window: output channels [k0, k0 + kn) and input channels [c0, c0 + cn).
#[derive(Clone, Copy, Debug)]
struct Window {
    k0: usize,
    kn: usize,
    c0: usize,
    cn: usize,
    /// c0 within the group (the weight's channel index).
    cw: usize,
    first: bool,
    last: bool,
}

/// How a window is cut: CQ channel quads per invocation (a power of two); a weight block holds
/// 4*CQ input channels x BLOCK / (4*CQ) output channels.
#[derive(Clone, Copy, Debug)]
struct Tiling {
    cq: usize,
}

impl Tiling {
    fn new(cg: usize) -> Tiling {
        Tiling { cq: cg.div_ceil(4).max(1).next_power_of_two().min(MAX_CQ) }
    }
    fn chunk_c(self) -> usize {
        4 * self.cq
    }
    fn chunk_k(self) -> usize {
        BLOCK / self.chunk_c()
    }
}

fn windows(g: &Conv1x1Shape, groups: usize, t: Tiling) -> Vec<Window> {
    let (kg, cg) = (g.k / groups, g.c / groups);
    let mut out = Vec::new();
    for gi in 0..groups {
        for k0 in (0..kg).step_by(t.chunk_k()) {
            let chunks = cg.div_ceil(t.chunk_c()).max(1);
            for ci in 0..chunks {
                let c0 = ci * t.chunk_c();
                out.push(Window { k0: gi * kg + k0, kn: (kg - k0).min(t.chunk_k()), c0: gi * cg + c0, cw: c0, cn: cg.saturating_sub(c0).min(t.chunk_c()), first: ci == 0, last: ci + 1 == chunks });
            }
        }
    }
    out
}

/// A range of images and the byte windows of input and output that it binds.
struct Images {
    n0: usize,
    n1: usize,
    x: (u64, u64),
    y: (u64, u64),
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

fn bind(b: &wgpu::Buffer, (offset, size): (u64, u64)) -> wgpu::BindingResource<'_> {
    wgpu::BindingResource::Buffer(wgpu::BufferBinding { buffer: b, offset, size: NonZeroU64::new(size.div_ceil(4) * 4) })
}

/// A window as whole vec4 words (every vec4 the kernels move lies inside it).
fn words((offset, size): (u64, u64)) -> (u64, u64) {
    (offset, (size / 16 * 16).max(16))
}

fn i32_of(v: isize, what: &str) -> Result<i32> {
    i32::try_from(v).map_err(|_| Error::overflow(OP, format!("{what} = {v} in i32")))
}

fn u32_of(v: usize, what: &str) -> Result<u32> {
    u32::try_from(v).map_err(|_| Error::overflow(OP, format!("{what} = {v} in u32")))
}

/// Records a validated 1x1 convolution of f32 operands through `kernel` (not `Auto`) into `enc`;
/// its temporaries go to `keep`. The caller holds the operands until the work is done.
#[allow(clippy::too_many_arguments)]
pub(crate) fn record(rt: &Runtime, enc: &mut wgpu::CommandEncoder, keep: &mut Keep, out: View<'_>, input: View<'_>, weight: View<'_>, bias: Option<View<'_>>, options: &Conv1x1Options, g: &Conv1x1Shape, kernel: ConvKernel) -> Result<()> {
    if kernel == ConvKernel::Auto {
        return Err(Error::invalid(OP, "no kernel was resolved for the convolution"));
    }
    if g.n * g.k * g.oh * g.ow == 0 {
        return Ok(());
    }
    let report = &rt.report;
    let cg = g.c / options.groups;
    let tiling = Tiling::new(cg);
    let wins = windows(g, options.groups, tiling);
    let ranges = image_ranges(input.layout, out.layout, g.n, report.max_storage_buffer_binding_size, report.min_storage_buffer_offset_alignment as u64)?;
    if let Some(b) = bias {
        if b.buffer.size() > report.max_storage_buffer_binding_size {
            return Err(Error::Limit { op: OP, what: format!("binding the bias ({} bytes)", b.buffer.size()), limit: "max_storage_buffer_binding_size", requested: b.buffer.size(), max: report.max_storage_buffer_binding_size });
        }
    }
    let max_groups = report.max_compute_workgroups_per_dimension as u64;
    // The tiled kernels' stage holds 2 * WG quads (`shaders/conv.wgsl`).
    let wg: u32 = 64;
    // Every parameter is checked before anything is recorded.
    // The weight as [K, C/groups] (its trailing 1x1 dims dropped).
    let mut w2 = weight.layout.clone();
    while w2.rank() > 2 {
        w2 = w2.select(-1, 0)?;
    }
    let bs = bias.map_or(0, |b| b.layout.strides()[0]);
    let xs = input.layout.strides();
    let ys = out.layout.strides();
    let mut params = Vec::new();
    let mut specs = Vec::new();
    let mut grids = Vec::new();
    for r in &ranges {
        let pixels = (r.n1 - r.n0) * g.oh * g.ow;
        let groups = (pixels.div_ceil(PIXELS) as u64).div_ceil(wg as u64);
        let gx = groups.min(max_groups);
        let gy = groups.div_ceil(gx);
        if gy > max_groups {
            return Err(Error::Limit { op: OP, what: format!("{pixels} output pixels in one dispatch"), limit: "max_compute_workgroups_per_dimension", requested: gy, max: max_groups });
        }
        grids.push((gx as u32, gy as u32));
        for w in &wins {
            let xbase = input.layout.offset() as isize + r.n0 as isize * xs[0] + w.c0 as isize * xs[1] - (r.x.0 / 4) as isize;
            let ybase = out.layout.offset() as isize + r.n0 as isize * ys[0] + w.k0 as isize * ys[1] - (r.y.0 / 4) as isize;
            let bbase = bias.map_or(0, |b| b.layout.offset() as isize + w.k0 as isize * bs);
            let mode = if !w.first { 2 } else if bias.is_some() { 1 } else { 0 };
            let (vin, vout) = kernel.vectors(g, options, xs, ys, xbase, ybase, r.n1 - r.n0);
            specs.push([("MODE", mode), ("RELU", (options.relu && w.last) as i64), ("VIN", vin as i64), ("VOUT", vout as i64)]);
            params.push(ConvParams {
                xs: [i32_of(xs[0], "input stride n")?, i32_of(xs[1], "input stride c")?, i32_of(xs[2], "input stride h")?, i32_of(xs[3], "input stride w")?],
                ys: [i32_of(ys[0], "output stride n")?, i32_of(ys[1], "output stride k")?, i32_of(ys[2], "output stride oh")?, i32_of(ys[3], "output stride ow")?],
                geo: [u32_of(g.h, "H")?, u32_of(g.w, "W")?, u32_of(g.oh, "OH")?, u32_of(g.ow, "OW")?],
                conv: [u32_of(options.stride.0, "stride")?, u32_of(options.stride.1, "stride")?, u32_of(options.padding.0, "padding")?, u32_of(options.padding.1, "padding")?],
                base: [i32_of(xbase, "input offset")?, i32_of(ybase, "output offset")?, i32_of(bbase, "bias offset")?, i32_of(bs, "bias stride")?],
                work: [u32_of(pixels, "output pixels per dispatch")?, w.cn as u32, w.kn as u32, (gx * wg as u64) as u32],
            });
        }
    }
    let mut pipelines = Vec::new();
    for spec in &specs {
        let mut constants = vec![("WG", wg as i64), ("CQ", tiling.cq as i64), ("TILED", kernel.tiled() as i64)];
        constants.extend_from_slice(spec);
        let key = PipelineKey { shader: kernel.shader(report.shuffled_weights), constants };
        pipelines.push(rt.pipeline(&key, SLOTS, || shaders::source(key.shader))?);
    }
    let bgl = rt.bind_group_layout(SLOTS)?;
    // The weight blocks, zero-padded, filled by copies recorded ahead of the dispatches.
    let block_elems = wins.len() * BLOCK;
    let blocks = rt.scoped(OP, || {
        let b = rt.buffer(OP, (block_elems * 4) as u64, wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST)?;
        enc.clear_buffer(b.buffer(), 0, None);
        Ok(b)
    })?;
    let [sk, sc] = kernel.block_strides(tiling);
    for (i, w) in wins.iter().enumerate() {
        let dst = Layout::as_strided(&[w.kn, w.cn], &[sk, sc], i * BLOCK, block_elems)?;
        let src = w2.narrow(0, w.k0 as isize, w.kn)?.narrow(1, w.cw as isize, w.cn)?;
        let plan = CopyPlan::new(&dst, &src)?;
        let Some(path) = copy::auto_path(report, &plan, DType::F32, DType::F32, weight.buffer.usage().contains(wgpu::BufferUsages::COPY_SRC), |c| copy::transpose_default(report, c)) else { continue };
        let prepared = copy::prepare(report, &plan, DType::F32, DType::F32, path)?;
        copy::record(rt, enc, keep, prepared, blocks.buffer(), weight.buffer)?;
    }
    let stride = 256u64;
    rt.scoped(OP, || {
        let d = &rt.device;
        let ubuf = rt.buffer(OP, params.len() as u64 * stride, wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST)?;
        let mut bytes = vec![0u8; params.len() * stride as usize];
        for (i, p) in params.iter().enumerate() {
            bytes[i * stride as usize..][..std::mem::size_of::<ConvParams>()].copy_from_slice(bytemuck::bytes_of(p));
        }
        rt.queue.write_buffer(ubuf.buffer(), 0, &bytes);
        let bias_buf = bias.map_or(blocks.buffer(), |b| b.buffer);
        // The output is bound once as writable storage: as f32 (binding 4) or as vec4 words
        // (binding 6), as the pipeline's VOUT says; the other binding gets a scratch word that
        // the kernel never touches (WebGPU forbids two writable bindings of one range).
        let unused = rt.buffer(OP, 16, wgpu::BufferUsages::STORAGE)?;
        let mut groups_bound = Vec::new();
        for (ri, r) in ranges.iter().enumerate() {
            for wi in 0..wins.len() {
                let pi = ri * wins.len() + wi;
                let vout = specs[pi][3] == ("VOUT", 1);
                let bg = d.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some(OP),
                    layout: &bgl,
                    entries: &[
                        wgpu::BindGroupEntry { binding: 0, resource: bind(ubuf.buffer(), (pi as u64 * stride, std::mem::size_of::<ConvParams>() as u64)) },
                        wgpu::BindGroupEntry { binding: 1, resource: bind(input.buffer, r.x) },
                        wgpu::BindGroupEntry { binding: 2, resource: bind(blocks.buffer(), ((wi * BLOCK * 4) as u64, (BLOCK * 4) as u64)) },
                        wgpu::BindGroupEntry { binding: 3, resource: bind(bias_buf, (0, bias_buf.size())) },
                        wgpu::BindGroupEntry { binding: 4, resource: if vout { bind(unused.buffer(), (0, 16)) } else { bind(out.buffer, r.y) } },
                        wgpu::BindGroupEntry { binding: 5, resource: bind(input.buffer, words(r.x)) },
                        wgpu::BindGroupEntry { binding: 6, resource: if vout { bind(out.buffer, words(r.y)) } else { bind(unused.buffer(), (0, 16)) } },
                    ],
                });
                groups_bound.push((bg, grids[ri], &pipelines[pi]));
            }
        }
        let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some(OP), timestamp_writes: None });
        for (bg, (gx, gy), pipeline) in &groups_bound {
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, bg, &[]);
            pass.dispatch_workgroups(*gx, *gy, 1);
        }
        drop(pass);
        keep.hold(ubuf);
        keep.hold(unused);
        Ok(())
    })?;
    keep.hold(blocks);
    Ok(())
}
