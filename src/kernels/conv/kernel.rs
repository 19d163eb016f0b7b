//! The convolution kernels (`ConvKernel`) and the one check of whether a kernel can run a
//! call: the shape (`ConvKernel::eligible`, with the direct kernels' tiling of their weight
//! block), the adapter (`ConvKernel::runs_on`), and which operands move as vec4 words
//! (`ConvKernel::vectors`). Host code only: the families' files record.

use serde::{Deserialize, Serialize};

use crate::conv::{Conv2dOptions, Conv2dShape};
use crate::error::{Error, Result};
use crate::runtime::AdapterReport;

pub(crate) const OP: &str = "conv2d";

/// Floats in one window's weight block (64 KiB, the uniform array of `shaders/preludes/conv.wgsl`).
pub(crate) const BLOCK: usize = 16384;

/// A convolution kernel. Every kernel reads any input and output strides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ConvKernel {
    /// The kernel kept for the call's shape class (measured by the tuner or loaded from a
    /// tuning file), else the adapter's default (`GpuContext::conv2d_default`).
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
    /// GPU-shaped tiled implicit GEMM (`conv2d_gemm.wgsl`), lanes along pixels (NCHW). Float16
    /// and bfloat16 operands are read and written as they are (`conv2d_gemm16`).
    GemmNchw,
    /// GPU-shaped tiled implicit GEMM, lanes along channels (NHWC).
    GemmNhwc,
    /// [`ConvKernel::GemmNchw`] with the reduction split into slices (split-K) where the call
    /// has fewer than 1024 output tiles and a reduction of at least 128 steps (C/groups * kh *
    /// kw): each workgroup walks one slice of one tile, and a second dispatch
    /// (`conv2d_gemm_sum.wgsl`) adds the slices in a fixed order and applies the epilogue. For
    /// the deep, small layers of a network, whose few tiles leave most of a GPU idle. Where the
    /// call has enough tiles, or too short a reduction, it runs as `GemmNchw`.
    GemmNchwSplit,
    /// [`ConvKernel::GemmNhwc`] with the reduction split as [`ConvKernel::GemmNchwSplit`] says.
    GemmNhwcSplit,
    /// [`ConvKernel::GemmNchw`] on wider tiles: 128 pixels x 128 output channels per workgroup
    /// (128 x 64 where K/groups <= 64), each invocation a register block of 8 x 8 (8 x 4)
    /// outputs, so each value read from workgroup memory feeds twice the multiply-adds. Its
    /// reduction is cut by the rule a GPU's default takes `GemmNchwSplit` by (fewer than 256
    /// tiles of 64 x 64 and at least 1024 steps, `split::conv_wants_split`) on the call's own
    /// sizes, into that kernel's slices: the bits of `GemmNchwSplit` there and of `GemmNchw`
    /// elsewhere. (The default applies the rule to its class's magnitudes: near the rule's
    /// edges the two can decide differently.) A tuner candidate on GPUs, and their default
    /// under `STRIDED_WGPU_GEMM_TILES=wide` ([`AdapterReport::wide_gemm`]).
    GemmNchwWide,
    /// [`ConvKernel::GemmNhwc`] on the wider tiles of [`ConvKernel::GemmNchwWide`], split as it is.
    GemmNhwcWide,
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
    /// CPU-shaped (`conv2d_direct.wgsl`), any kernel size: 8 pixels x up to 16 output channels
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
    /// Float16 on tensor cores (`conv2d_coop.wgsl`, devices with cooperative matrices:
    /// [`AdapterReport::cooperative_matrix`]): the implicit GEMM with its inner product on
    /// cooperative matrices, f16 operands read and the f16 output written directly (bias,
    /// residual and ReLU in its epilogue), any kernel size, stride, dilation, padding, groups
    /// and strides. The GEMM and GPU-shaped depthwise kernels read 16-bit operands as they are
    /// too, on SIMT cores ([`ConvKernel::reads_half`]); the others run a 16-bit convolution on
    /// f32 copies of its operands.
    /// The automatic choice of f16 convolutions only where the device takes every tensor-core
    /// path (`CooperativeMatrix::all_paths`: no GPU has run it yet; it passed its device tests
    /// on Mesa 26's lavapipe).
    Coop,
}

/// A family of convolution kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Family {
    Blocked,
    Direct,
    Gemm,
    Depthwise,
    Coop,
}

impl ConvKernel {
    /// Whether the kernel adds a residual in its epilogue (`conv2d_add`): the GEMM kernels and
    /// [`ConvKernel::Coop`].
    /// Others record the convolution, then the add and the ReLU.
    pub fn fuses_residual(self) -> bool {
        matches!(self.family(), Family::Gemm | Family::Coop)
    }

    /// Every kernel but `Auto`.
    pub const ALL: [ConvKernel; 18] = [
        ConvKernel::Nchw,
        ConvKernel::Nhwc,
        ConvKernel::NchwTiled,
        ConvKernel::NhwcTiled,
        ConvKernel::GemmNchw,
        ConvKernel::GemmNhwc,
        ConvKernel::GemmNchwSplit,
        ConvKernel::GemmNhwcSplit,
        ConvKernel::GemmNchwWide,
        ConvKernel::GemmNhwcWide,
        ConvKernel::DepthwiseNchw,
        ConvKernel::DepthwiseNhwc,
        ConvKernel::DepthwiseRows,
        ConvKernel::DepthwiseTall,
        ConvKernel::Direct,
        ConvKernel::DirectRows,
        ConvKernel::DirectBand,
        ConvKernel::Coop,
    ];

    pub(crate) fn family(self) -> Family {
        match self {
            ConvKernel::GemmNchw | ConvKernel::GemmNhwc | ConvKernel::GemmNchwSplit | ConvKernel::GemmNhwcSplit | ConvKernel::GemmNchwWide | ConvKernel::GemmNhwcWide => Family::Gemm,
            ConvKernel::DepthwiseNchw | ConvKernel::DepthwiseNhwc | ConvKernel::DepthwiseRows | ConvKernel::DepthwiseTall => Family::Depthwise,
            ConvKernel::Direct | ConvKernel::DirectRows | ConvKernel::DirectBand => Family::Direct,
            ConvKernel::Coop => Family::Coop,
            _ => Family::Blocked,
        }
    }

    /// Whether the kernel's lanes (or vectors) run along channels: the NHWC orientation.
    pub(crate) fn channels(self) -> bool {
        matches!(self, ConvKernel::Nhwc | ConvKernel::NhwcTiled | ConvKernel::GemmNhwc | ConvKernel::GemmNhwcSplit | ConvKernel::GemmNhwcWide | ConvKernel::DepthwiseNhwc | ConvKernel::DepthwiseRows | ConvKernel::DepthwiseTall | ConvKernel::Direct | ConvKernel::DirectRows | ConvKernel::DirectBand)
    }

    /// Whether the kernel may split its reduction (split-K): the split kernels by
    /// `split::slices` alone, the wide ones where `split::conv_wants_split` says so too.
    pub(crate) fn split(self) -> bool {
        matches!(self, ConvKernel::GemmNchwSplit | ConvKernel::GemmNhwcSplit | ConvKernel::GemmNchwWide | ConvKernel::GemmNhwcWide)
    }

    /// Whether the kernel runs the GEMM engine's wide tiles ([`ConvKernel::GemmNchwWide`],
    /// [`ConvKernel::GemmNhwcWide`]).
    pub(crate) fn wide(self) -> bool {
        matches!(self, ConvKernel::GemmNchwWide | ConvKernel::GemmNhwcWide)
    }

    /// A GEMM kernel's tile parts for `kg` output channels a group: (PM, PN), its output tile
    /// 64PM pixels x 64PN channels (`shaders/preludes/gemm_engine.wgsl`).
    pub(crate) fn tile_parts(self, kg: usize) -> (usize, usize) {
        match self {
            ConvKernel::GemmNchwWide | ConvKernel::GemmNhwcWide => (2, if kg > 64 { 2 } else { 1 }),
            _ => (1, 1),
        }
    }

    /// Whether the kernel is shaped for a GPU (the tuner's candidates on adapters that are not
    /// CPUs; the register-budget test compiles every one of them).
    pub fn gpu_shaped(self) -> bool {
        matches!(self.family(), Family::Gemm | Family::Depthwise) && self != ConvKernel::DepthwiseTall
    }

    /// Whether the kernel reads and writes float16 and bfloat16 operands as they are: the GEMM
    /// kernels (`conv2d_gemm16`) and the GPU-shaped depthwise ones ([`ConvKernel::DepthwiseNchw`],
    /// [`ConvKernel::DepthwiseNhwc`], [`ConvKernel::DepthwiseRows`]: `conv2d_depthwise16`,
    /// `conv2d_depthwise_rows16`), each accumulating in f32 exactly as on f32 copies, and
    /// [`ConvKernel::Coop`] (float16). The CPU-shaped kernels run a 16-bit convolution on f32
    /// copies of its operands, converted by recorded copies.
    pub fn reads_half(self) -> bool {
        matches!(self.family(), Family::Gemm | Family::Coop) || matches!(self, ConvKernel::DepthwiseNchw | ConvKernel::DepthwiseNhwc | ConvKernel::DepthwiseRows)
    }

    /// Whether this kernel can compute the convolution: the one check, used by the tuner's
    /// candidates and by forced kernels. Depthwise kernels need groups == C; [`ConvKernel::Coop`]
    /// float16 operands (the others take float32, float16 and bfloat16: see
    /// [`ConvKernel::reads_half`]).
    pub fn eligible(self, g: &Conv2dShape, o: &Conv2dOptions) -> Result<()> {
        match self {
            ConvKernel::Auto => Err(Error::invalid(OP, "no kernel was resolved for the convolution")),
            ConvKernel::Coop if g.dtype != crate::dtype::DType::F16 => Err(Error::unsupported(
                OP,
                format!("{self:?} convolves float16 operands, got {:?} (input {:?}, weight [{}, {}, {}, {}])", g.dtype, [g.n, g.c, g.h, g.w], g.k, g.c / o.groups.max(1), g.kh, g.kw),
            )),
            ConvKernel::DepthwiseNchw | ConvKernel::DepthwiseNhwc | ConvKernel::DepthwiseRows | ConvKernel::DepthwiseTall if o.groups != g.c => Err(Error::unsupported(
                OP,
                format!("{self:?} needs a depthwise convolution (groups == C), got groups = {} with input channels C = {} and K = {}", o.groups, g.c, g.k),
            )),
            ConvKernel::DepthwiseTall if (g.kh, g.kw, o.stride, o.dilation) != (3, 3, (1, 1), (1, 1)) => Err(Error::unsupported(
                OP,
                format!("{self:?} needs a 3x3 kernel with stride 1 and dilation 1, got {}x{} with stride {:?} and dilation {:?}", g.kh, g.kw, o.stride, o.dilation),
            )),
            ConvKernel::Direct => tiling(self, g, o.groups).map(|_| ()),
            ConvKernel::DirectRows if (g.kw, o.stride.1, o.dilation.1) != (3, 1, 1) => Err(Error::unsupported(
                OP,
                format!("{self:?} needs a kernel 3 wide with stride 1 and dilation 1 along W, got {}x{} with stride {:?} and dilation {:?}", g.kh, g.kw, o.stride, o.dilation),
            )),
            ConvKernel::DirectRows => tiling(self, g, o.groups).map(|_| ()),
            ConvKernel::DirectBand if (g.kh, g.kw, o.stride, o.dilation) != (3, 3, (1, 1), (1, 1)) => Err(Error::unsupported(
                OP,
                format!("{self:?} needs a 3x3 kernel with stride 1 and dilation 1, got {}x{} with stride {:?} and dilation {:?}", g.kh, g.kw, o.stride, o.dilation),
            )),
            ConvKernel::DirectBand => tiling(self, g, o.groups).map(|_| ()),
            _ => Ok(()),
        }
    }

    /// Whether the adapter of `report` can run the kernel (whatever the shape): the one check,
    /// used by the tuner's candidates and by forced kernels. [`ConvKernel::DirectBand`] needs
    /// the subgroup shuffles of a native CPU adapter with subgroups of at least 8 lanes
    /// ([`AdapterReport::shuffled_weights`]); [`ConvKernel::Coop`] a device with cooperative
    /// matrices ([`AdapterReport::cooperative_matrix`]).
    pub fn runs_on(self, report: &AdapterReport) -> Result<()> {
        match self {
            ConvKernel::Coop if report.cooperative_matrix.is_none() => Err(Error::unsupported(
                OP,
                format!("{self:?} needs a device that runs cooperative matrices (AdapterReport::cooperative_matrix); {} ({:?}) has none, or was opened without them", report.name, report.backend),
            )),
            ConvKernel::DirectBand if !report.shuffled_weights => Err(Error::unsupported(
                OP,
                format!("{self:?} needs subgroups of at least 8 invocations on a native CPU adapter; {} ({:?}, {:?}) has none", report.name, report.backend, report.device_type),
            )),
            _ => Ok(()),
        }
    }

    /// The one check of whether the kernel can run this convolution on the adapter of
    /// `report`, for forced and automatic kernels and the tuner's candidates:
    /// [`ConvKernel::eligible`], [`ConvKernel::runs_on`] and [`ConvKernel::within_loop_bound`].
    pub(crate) fn admits(self, report: &AdapterReport, g: &Conv2dShape, o: &Conv2dOptions) -> Result<()> {
        self.eligible(g, o)?;
        self.runs_on(report)?;
        self.within_loop_bound(report, g, o)
    }

    /// Whether the kernel's loops stay within a CPU adapter's bound (Mesa's llvmpipe leaves an
    /// invocation's loops after 65,535 turns, silently: a depthwise 256x256 window summed part
    /// of its taps, a GEMM over a reduction of 72,000 steps part of it): every kernel walks
    /// each tap of a window at least once an output, and the depthwise kernels about
    /// `kh * (kw + 2)` turns ([`Error::Limit`] past the budget, as pooling's windows); the GEMM kernels
    /// (split or not: a CPU adapter does not cut them to the bound) and the tensor-core kernel
    /// walk the C/groups * kh * kw steps of the reduction in stages, as the matrix products'
    /// GEMM ([`Error::Unsupported`] past `CPU_GEMM_K`: the CPU-shaped kernels serve it). Other
    /// adapters pass. The one check, with [`ConvKernel::eligible`] and [`ConvKernel::runs_on`],
    /// for forced and automatic kernels and the tuner's candidates.
    pub(crate) fn within_loop_bound(self, report: &AdapterReport, g: &Conv2dShape, o: &Conv2dOptions) -> Result<()> {
        if report.device_type != wgpu::DeviceType::Cpu {
            return Ok(());
        }
        let taps = (g.kh as u64).saturating_mul(g.kw as u64);
        let limit = |what: String, turns: u64| Error::Limit {
            op: OP,
            what,
            limit: "loop turns an invocation on a software adapter (Mesa's llvmpipe leaves a loop after 65,535)",
            requested: turns,
            max: crate::kernels::SOFTWARE_LOOP_BUDGET,
        };
        if taps > crate::kernels::SOFTWARE_LOOP_BUDGET {
            return Err(limit(format!("the {}x{} taps of a window (input {:?}), each walked once an output by every kernel", g.kh, g.kw, [g.n, g.c, g.h, g.w]), taps));
        }
        match self.family() {
            Family::Depthwise => {
                let turns = (g.kh as u64).saturating_mul(g.kw as u64 + 2);
                if turns > crate::kernels::SOFTWARE_LOOP_BUDGET {
                    return Err(limit(format!("{self:?}'s loop turns an output for a {}x{} window (input {:?})", g.kh, g.kw, [g.n, g.c, g.h, g.w]), turns));
                }
                Ok(())
            }
            Family::Gemm | Family::Coop => {
                let k = (g.c / o.groups.max(1)).saturating_mul(g.kh).saturating_mul(g.kw);
                if k > crate::kernels::CPU_GEMM_K {
                    return Err(Error::unsupported(
                        OP,
                        format!("{self:?} walks a reduction of C/groups * kh * kw = {k} steps in one invocation (not cut to a CPU adapter's loop bound), past it (at most {})", crate::kernels::CPU_GEMM_K),
                    ));
                }
                Ok(())
            }
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
            ConvKernel::Auto | ConvKernel::Coop => (false, false),
            ConvKernel::Nchw | ConvKernel::Nhwc | ConvKernel::NchwTiled | ConvKernel::NhwcTiled | ConvKernel::Direct | ConvKernel::DirectRows | ConvKernel::DirectBand => blocked_vectors(self, g, o, xs, ys, xbase, ybase, images),
            ConvKernel::GemmNchw | ConvKernel::GemmNchwSplit | ConvKernel::GemmNchwWide => (false, y_pixels),
            ConvKernel::GemmNhwc | ConvKernel::GemmNhwcSplit | ConvKernel::GemmNhwcWide => (x_channels && cg.is_multiple_of(4), y_channels && kg.is_multiple_of(4)),
            ConvKernel::DepthwiseNchw => (false, y_pixels),
            ConvKernel::DepthwiseNhwc | ConvKernel::DepthwiseRows | ConvKernel::DepthwiseTall => (x_channels && g.k == g.c && g.c.is_multiple_of(4), y_channels && g.k.is_multiple_of(4)),
        }
    }
}

/// The most output-channel quads an invocation of the direct kernels ([`ConvKernel::Direct`],
/// [`ConvKernel::DirectRows`], [`ConvKernel::DirectBand`]) holds. Each step of their tap loops
/// is unrolled over every quad held, so their compile time on a CPU adapter (lavapipe compiles a
/// pipeline's LLVM code at its first dispatch) grows with it: lavapipe compiled
/// `conv2d_direct_band` for [8, 64, 56, 56] K=64 in about 8x less time at 4 quads than at 16,
/// and ran it as fast or faster (same run, alternating, 3x3 at 56x56, 28x28 and 14x14); the
/// 7x7 stem of [8, 3, 224, 224] K=64 (`Direct`) took 3.5-5.3 s to its first result at 4 quads,
/// 8.1-9.0 s at 8 and 14.2-29.4 s at 16, and ran 1.3-1.6x slower at 4 than at 16 once compiled
/// (a shared host, alternating runs): a ResNet's first inference pays the compile, every
/// inference the run.
const MAX_KQ: usize = 4;

/// How the work is cut: KQ output-channel quads per invocation (a power of two) and CW input
/// channels per window (a multiple of 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Tiling {
    pub kq: usize,
    pub cw: usize,
}

/// The tiling of `g` with `groups` for the direct-family `kernel`, or why it cannot run it: a
/// weight block must hold every tap of at least 4 input channels for one output-channel quad.
pub(crate) fn tiling(kernel: ConvKernel, g: &Conv2dShape, groups: usize) -> Result<Tiling> {
    // Saturating: an empty convolution passes the shape checks with any kernel size (PyTorch's
    // `F.conv2d` of [0, 0, 1, 1] by a [1, 0, 2^62, 1] weight is an empty result).
    let (kg, cg, taps) = (g.k / groups.max(1), g.c / groups.max(1), g.kh.saturating_mul(g.kw));
    let block_of = |kq: usize| taps.saturating_mul(16 * kq);
    let mut kq = kg.div_ceil(4).max(1).next_power_of_two().min(MAX_KQ);
    while kq > 1 && block_of(kq) > BLOCK {
        kq /= 2;
    }
    if block_of(kq) > BLOCK {
        return Err(Error::unsupported(OP, format!("{:?} holds every tap of 4 input channels in a {BLOCK}-float weight block: a {}x{} kernel ({taps} taps) needs {}", kernel, g.kh, g.kw, block_of(1))));
    }
    let fit = BLOCK / (taps * 4 * kq) / 4 * 4;
    let chunks = cg.div_ceil(fit).max(1);
    Ok(Tiling { kq, cw: cg.div_ceil(chunks).div_ceil(4) * 4 })
}

/// [`ConvKernel::vectors`] of the register-blocked and direct kernels.
#[allow(clippy::too_many_arguments)]
pub(crate) fn blocked_vectors(kernel: ConvKernel, g: &Conv2dShape, o: &Conv2dOptions, xs: &[isize], ys: &[isize], xbase: isize, ybase: isize, images: usize) -> (bool, bool) {
    let m4 = |v: isize| v % 4 == 0;
    let batch = |s: isize| images == 1 || m4(s);
    let groups = o.groups.max(1);
    if kernel.channels() {
        return (
            xs[1] == 1 && (g.c / groups).is_multiple_of(4) && batch(xs[0]) && m4(xs[2]) && m4(xs[3]) && m4(xbase),
            ys[1] == 1 && (g.k / groups).is_multiple_of(4) && batch(ys[0]) && m4(ys[2]) && m4(ys[3]) && m4(ybase),
        );
    }
    let plane = g.oh.checked_mul(g.ow).is_some_and(|p| p.is_multiple_of(4));
    // 4 consecutive output pixels read 4 consecutive input elements: a 1x1 tap, unit stride,
    // no padding.
    let direct = o.stride == (1, 1) && o.padding == (0, 0) && g.kh == 1 && g.kw == 1;
    (
        direct && plane && xs[3] == 1 && xs[2] == g.w as isize && batch(xs[0]) && m4(xs[1]) && m4(xbase),
        plane && ys[3] == 1 && ys[2] == g.ow as isize && batch(ys[0]) && m4(ys[1]) && m4(ybase),
    )
}
