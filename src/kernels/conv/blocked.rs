//! The register-blocked convolution kernels, shaped for CPU adapters (`conv1x1_nchw.wgsl`,
//! `conv1x1_nhwc.wgsl`, prelude `conv.wgsl`).
//!
//! The work is cut into windows: 4*CQ input channels of one group (CQ, the channel quads an
//! invocation holds, is C/groups rounded up to a power of two, at most 16 quads = 64 channels)
//! x 16384 / (4*CQ) output channels, one tap (ky, kx) of the kernel, and the image ranges that
//! bind within `max_storage_buffer_binding_size`. Each window's weights are packed into a 64 KiB
//! uniform block (a copy of K*C elements per tap, tiny next to the work), which every invocation
//! reads at the same address: the cheapest operand on a CPU. A tap is the 1x1 convolution of the
//! input shifted by (ky*dh - ph, kx*dw - pw); windows after the first of an output channel block
//! add into the output, and the last applies ReLU.


use crate::conv::Conv2dShape;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::abi::uniform;
use crate::kernels::conv::common::{bias_binding, dispatch, i32_of, out_bindings, pack, packed_buffer, u32_of, Images, Operands};
use crate::kernels::dispatch::{read_words, Dispatch};
use crate::kernels::conv::kernel::{blocked_vectors as vectors, ConvKernel, BLOCK, OP};
use crate::layout::Layout;
use crate::runtime::record::Recorder;
use crate::runtime::{PipelineKey, Runtime, Slot};

/// The bindings: the parameters (uniform), the input (read-only), a window's packed weights
/// (uniform), the bias (read-only), the output, and the input and output windows again as vec4
/// words.
const SLOTS: &[Slot] = &[Slot::Uniform, Slot::Read, Slot::Uniform, Slot::Read, Slot::Write, Slot::Read, Slot::Write];

/// The most channel quads an invocation holds (the `xm` array of the kernels).
const MAX_CQ: usize = 16;
/// Output pixels per invocation of the direct kernels (two quads; the blocked kernels own
/// [`Tiling::quads`]).
pub(crate) const PIXELS: usize = 8;
/// Invocations per workgroup (the tiled kernels' stage holds 2 * WG quads).
pub(crate) const WG: u32 = 64;

fn shader(kernel: ConvKernel, shuffled_weights: bool) -> &'static str {
    match (kernel.channels(), shuffled_weights) {
        (true, false) => "conv1x1_nhwc",
        (false, false) => "conv1x1_nchw",
        (true, true) => "conv1x1_nhwc_shuffled",
        (false, true) => "conv1x1_nchw_shuffled",
    }
}

fn tiled(kernel: ConvKernel) -> bool {
    matches!(kernel, ConvKernel::NchwTiled | ConvKernel::NhwcTiled)
}

/// Element (k, c) of a window's weight block, as (row stride of k, of c).
fn block_strides(kernel: ConvKernel, t: Tiling) -> [isize; 2] {
    if kernel.channels() {
        [1, t.chunk_k() as isize]
    } else {
        [t.chunk_c() as isize, 1]
    }
}

uniform! {
    /// The uniform of `shaders/preludes/conv.wgsl` (`ConvParams` there).
    pub(crate) struct ConvParams {
        pub xs: [i32; 4],
        pub ys: [i32; 4],
        pub geo: [u32; 4],
        pub conv: [i32; 4],
        pub base: [i32; 4],
        pub work: [u32; 4],
        /// kh, kw, dh, dw (read by the direct kernel; `matmul_blocked.wgsl` reads its batch
        /// levels here).
        pub taps: [i32; 4],
        /// 1 applies ReLU to what the dispatch writes; the window's mode where the pipeline's
        /// MODE is 3 (else 0); 0; and 0, added to the kernels' rolled loop bounds (`four` in
        /// conv.wgsl).
        pub finish: [u32; 4],
    }
}

/// One window: output channels [k0, k0 + kn), input channels [c0, c0 + cn), tap (ky, kx)
/// (the direct kernel's windows hold every tap: (0, 0)).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Window {
    pub k0: usize,
    pub kn: usize,
    pub c0: usize,
    pub cn: usize,
    /// c0 within the group (the weight's channel index).
    pub cw: usize,
    pub ky: usize,
    pub kx: usize,
    pub first: bool,
    pub last: bool,
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
    /// Quads of output pixels an invocation owns (`QUADS` in conv.wgsl): `Nhwc` holding 16
    /// channel quads owns one. Its compile on lavapipe grows with what an invocation holds: the
    /// first call of a channels-last 1x1 [8, 64, 56, 56] K=256 with an empty shader cache took
    /// 1.5-1.8 s against 2.7-3.0 s with two, and the same speed once compiled (16.2-16.4 ms
    /// against 15.9-17.5, alternating runs). `Nchw` ran 1.1-1.8x slower with one and keeps two.
    fn quads(self, kernel: ConvKernel) -> usize {
        if kernel == ConvKernel::Nhwc && self.cq == MAX_CQ {
            1
        } else {
            2
        }
    }
    fn chunk_c(self) -> usize {
        4 * self.cq
    }
    fn chunk_k(self) -> usize {
        BLOCK / self.chunk_c()
    }
}

/// The windows of a convolution, in recording order: per group, per block of `chunk_k` output
/// channels, every pass of `taps` taps (1: all taps in one dispatch, as the direct kernel
/// walks them) x chunks of `chunk_c` input channels; the first pass starts the outputs and the
/// last finishes them.
pub(crate) fn windows(g: &Conv2dShape, groups: usize, chunk_c: usize, chunk_k: usize, taps: usize) -> Vec<Window> {
    let (kg, cg) = (g.k / groups, g.c / groups);
    let chunks = cg.div_ceil(chunk_c).max(1);
    let passes = chunks * taps;
    let mut out = Vec::new();
    for gi in 0..groups {
        for k0 in (0..kg).step_by(chunk_k) {
            for pass in 0..passes {
                let (tap, ci) = (pass / chunks, pass % chunks);
                let c0 = ci * chunk_c;
                out.push(Window {
                    k0: gi * kg + k0,
                    kn: (kg - k0).min(chunk_k),
                    c0: gi * cg + c0,
                    cw: c0,
                    cn: cg.saturating_sub(c0).min(chunk_c),
                    ky: tap / g.kw,
                    kx: tap % g.kw,
                    first: pass == 0,
                    last: pass + 1 == passes,
                });
            }
        }
    }
    out
}

/// Records the convolution of `ops` through a register-blocked kernel.
pub(crate) fn record(rt: &Runtime, rec: &mut Recorder, ops: &Operands<'_>) -> Result<()> {
    let (g, options, kernel) = (ops.g, ops.options, ops.kernel);
    let report = &rt.report;
    let tiling = Tiling::new(g.c / options.groups);
    let wins = windows(g, options.groups, tiling.chunk_c(), tiling.chunk_k(), g.kh * g.kw);
    let w4 = ops.weight4()?;
    let bs = ops.bias.map_or(0, |b| b.layout.strides()[0]);
    let xs = ops.input.layout.strides();
    let ys = ops.out.layout.strides();
    // Every parameter is checked before anything is recorded.
    let geom = ops.geometry()?;
    let quads = tiling.quads(kernel);
    // One pipeline for every window of a call: where its windows start in different modes
    // (some add into what earlier ones wrote), the mode is a uniform word (MODE 3). The NCHW
    // 1x1 [8, 256, 56, 56] K=64 (4 windows) compiled two pipelines before (the first window's,
    // the others'): its first call with an empty shader cache took 2.6-2.7 s against 4.9-5.4
    // s, and 28.5-28.6 ms once compiled against 31.9-37.5 (alternating runs). Windows that all
    // start alike keep the mode a constant: as a word, the channels-last 1x1 [8, 64, 56, 56]
    // K=256 (one window) ran 1.4x slower (the stores branch on it). The NCHW-orientation
    // kernels at a stride above 1 take the word even with one window, so that ResNet-18's
    // strided convolutions (its first 1x1 downsample has one window, the others several) share
    // one pipeline (not timed apart: the network's steady forward pass did not move).
    let strided = options.stride.0 > 1 || options.stride.1 > 1;
    let uniform_mode = wins.iter().any(|w| !w.first) || (!kernel.channels() && strided);
    let mut plan: Vec<Planned<'_>> = Vec::new();
    for r in ops.ranges {
        let pixels = (r.n1 - r.n0) * g.oh * g.ow;
        let grid = crate::kernels::conv::common::grid(rt, (pixels.div_ceil(4 * quads) as u64).div_ceil(WG as u64), &format!("{pixels} output pixels in one dispatch"))?;
        let (x0, y0) = ops.bases(r);
        for (wi, w) in wins.iter().enumerate() {
            let xbase = x0 + w.c0 as isize * xs[1];
            let ybase = y0 + w.k0 as isize * ys[1];
            let bbase = ops.bias.map_or(0, |b| b.layout.offset() as isize + w.k0 as isize * bs);
            let mode = if !w.first { 2 } else if ops.bias.is_some() { 1 } else { 0 };
            let (vin, vout) = vectors(kernel, g, options, xs, ys, xbase, ybase, r.n1 - r.n0);
            let origin = |k: usize, d: usize, p: usize, what| i32_of((k * d) as isize - p as isize, what);
            let params = ConvParams {
                xs: geom.xs,
                ys: geom.ys,
                geo: geom.geo,
                conv: [i32_of(options.stride.0 as isize, "stride")?, i32_of(options.stride.1 as isize, "stride")?, origin(w.ky, options.dilation.0, options.padding.0, "tap row")?, origin(w.kx, options.dilation.1, options.padding.1, "tap column")?],
                base: [i32_of(xbase, "input offset")?, i32_of(ybase, "output offset")?, i32_of(bbase, "bias offset")?, i32_of(bs, "bias stride")?],
                work: [u32_of(pixels, "output pixels per dispatch")?, w.cn as u32, w.kn as u32, grid.0 * WG],
                taps: geom.taps,
                finish: [(options.relu && w.last) as u32, if uniform_mode { mode as u32 } else { 0 }, 0, 0],
            };
            let constants = vec![("WG", WG as i64), ("CQ", tiling.cq as i64), ("TILED", tiled(kernel) as i64), ("MODE", if uniform_mode { 3 } else { mode }), ("VIN", vin as i64), ("VOUT", vout as i64), ("QUADS", quads as i64)];
            plan.push((r, wi, params, PipelineKey { shader: shader(kernel, report.shuffled_weights), constants }, vout, grid));
        }
    }
    let [sk, sc] = block_strides(kernel, tiling);
    record_blocks(rt, rec, ops, plan, wins.len(), |i, block_elems| {
        let w = &wins[i];
        let dst = Layout::as_strided(&[w.kn, w.cn], &[sk, sc], i * BLOCK, block_elems)?;
        let src = w4.select(3, w.kx as isize)?.select(2, w.ky as isize)?.narrow(0, w.k0 as isize, w.kn)?.narrow(1, w.cw as isize, w.cn)?;
        Ok((dst, src))
    })
}

/// One planned dispatch of a kernel reading a 64 KiB weight block (`conv.wgsl`): its image
/// range, the index of its window's block, its uniform, pipeline and grid, and whether it
/// writes vec4 words.
pub(crate) type Planned<'r> = (&'r Images, usize, ConvParams, PipelineKey, bool, (u32, u32));

/// Packs each of `windows` weight blocks (zero-padded, by copies recorded ahead of the
/// dispatches; `views(i, total floats)` gives block i's view and the weight view packed into
/// it), then records `plan`.
pub(crate) fn record_blocks(rt: &Runtime, rec: &mut Recorder, ops: &Operands<'_>, plan: Vec<Planned<'_>>, windows: usize, views: impl Fn(usize, usize) -> Result<(Layout, Layout)>) -> Result<()> {
    let block_elems = windows.saturating_mul(BLOCK);
    // One buffer holds every window's block (a long window packs many): past the adapter's
    // largest buffer, a `Limit` naming the weight, not wgpu's validation error.
    let bytes = (block_elems as u64).saturating_mul(4);
    if bytes > rt.report.max_buffer_size {
        return Err(Error::Limit { op: OP, what: format!("the {windows} packed 64 KiB weight blocks of {:?} (one a window of taps)", ops.weight.layout.shape()), limit: "max_buffer_size", requested: bytes, max: rt.report.max_buffer_size });
    }
    // The blocks' copies leave padding: always cleared.
    let blocks = packed_buffer(rt, rec, block_elems, 0, DType::F32, wgpu::BufferUsages::UNIFORM)?;
    for i in 0..windows {
        let (dst, src) = views(i, block_elems)?;
        pack(rt, rec, ops, &dst, &src, &blocks, DType::F32)?;
    }
    let unused = rt.held_scratch(rec, OP, 16, wgpu::BufferUsages::STORAGE)?;
    let bias = bias_binding(ops.bias, &blocks);
    let dispatches: Vec<Dispatch<'_, ConvParams>> = plan
        .into_iter()
        .map(|(r, wi, params, key, vout, grid)| {
            let [o4, o6] = out_bindings(ops.out.buffer, r.y, &unused, vout);
            Dispatch {
                key,
                params,
                bindings: vec![(ops.input.buffer, r.x), (&blocks, ((wi * BLOCK * 4) as u64, (BLOCK * 4) as u64)), bias, o4, read_words(rt, ops.input.buffer, r.x, 16), o6],
                grid,
            }
        })
        .collect();
    dispatch(rt, rec, SLOTS, &dispatches)?;
    Ok(())
}
