//! The convolution family's tuning inputs: its shape classes, the candidates the tuner
//! compares for a class on an adapter, and the default kernel a class runs without a kept
//! choice. Host code only: the tuner (`crate::tune`) measures, the tensors' layer
//! (`gpu/conv.rs`, `gpu/context.rs`) wires the two.

use serde::{Deserialize, Serialize};

use crate::conv::{Conv2dOptions, Conv2dShape};
use crate::kernels::conv::ConvKernel;
use crate::layout::Layout;
use crate::runtime::AdapterReport;

/// The most output elements a convolution tuning run writes (one image of the batch when a
/// single image holds more).
pub const TUNE_ELEMENTS: usize = 1 << 20;

/// How many images of a convolution's batch the tuner convolves: the whole batch, or as many
/// images as keep the output within [`TUNE_ELEMENTS`] (at least one). How fast a kernel is
/// depends on how much work one dispatch has to spread over the adapter's cores, so the
/// measurement runs at the call's size, and the class records it.
pub(crate) fn tune_images(g: &Conv2dShape) -> usize {
    g.n.min(TUNE_ELEMENTS / g.k.saturating_mul(g.oh).saturating_mul(g.ow).max(1)).max(1)
}

/// The convolution as a tuned family: shape classes [`ConvClass`], choices [`ConvKernel`].
pub(crate) struct Conv;

impl crate::tune::Family for Conv {
    const NAME: &'static str = "conv2d";
    type Class = ConvClass;
    type Choice = ConvKernel;
    fn candidates(class: &ConvClass) -> Vec<ConvKernel> {
        class.kernels.iter().map(|(k, _)| *k).collect()
    }
}

/// A convolution shape class: the candidate kernels with the vec4 paths each gets, the kernel
/// window, and the magnitudes of the channels per group, output channels per group and output
/// pixels of the images a tuning run convolves.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ConvClass {
    /// The candidates ([`conv_candidates`]) and, for each, (vec4 input, vec4 output).
    pub kernels: Vec<(ConvKernel, (bool, bool))>,
    /// floor(log2) of C/groups, K/groups and the output pixels of the images the tuner
    /// convolves (OH*OW times the batch, or as much of it as a tuning run takes).
    pub log2: [u32; 3],
    /// kh, kw, sh, sw, dh, dw.
    pub window: [usize; 6],
    /// Whether the convolution is depthwise (groups == C).
    pub depthwise: bool,
    /// Whether its channels come in several groups short of depthwise: on CPU adapters `Nchw`
    /// runs such 1x1 convolutions of small images as batched matrix products
    /// (`kernels/conv/grouped.rs`), so their kept choices stay apart from ungrouped ones'.
    #[serde(default)]
    pub grouped: bool,
    /// floor(log2) of the groups: a GPU's default counts each group's output tiles when it
    /// decides on split-K (`split::conv_wants_split`). 0 in classes kept before it was recorded.
    #[serde(default)]
    pub groups_log2: u32,
    /// Whether the weight's reduction dims are one unit-stride run in the NCHW GEMM kernels'
    /// order (C, kh, kw: a contiguous weight) and in the NHWC ones' (kh, kw, C: a channels-last
    /// weight), where those kernels read it in place instead of packing it at each call
    /// (`gemm::read_in_place`): the timings a kept choice rests on include the packing or not.
    /// Both false in classes kept before it was recorded.
    #[serde(default)]
    pub weight_runs: [bool; 2],
    /// Whether the output is channels-last (channel stride 1, more than one channel): the
    /// default kernel follows the output's orientation, so a choice kept for one orientation
    /// is not another's. False in classes kept before it was recorded.
    #[serde(default)]
    pub channels_last_out: bool,
}

/// The kernels the tuner compares for a convolution on the adapter of `report`: on a CPU
/// adapter every eligible kernel it runs within its loop bound but the wide GEMM tiles,
/// elsewhere the GPU-shaped ones only (see [`ConvKernel::gpu_shaped`]). Eligibility is
/// [`ConvKernel::eligible`], [`ConvKernel::runs_on`] and [`ConvKernel::within_loop_bound`],
/// as for forced kernels.
pub fn conv_candidates(report: &AdapterReport, g: &Conv2dShape, o: &Conv2dOptions) -> Vec<ConvKernel> {
    let cpu = report.device_type == wgpu::DeviceType::Cpu;
    // Not the tensor-core kernel: 16-bit convolutions take it by its own rule
    // (`gpu::conv::coop_applies`); every other one takes the kernel of the f32 shape's class
    // (those of `ConvKernel::reads_half` read its operands as they are, the others f32 copies).
    // The wide GEMM tiles only on GPUs (a CPU adapter's tuner would only compile and time them;
    // forced, they run there too). Kernels past a CPU adapter's loop bound are left out (GEMM
    // ones past `CPU_GEMM_K`: the CPU-shaped ones serve the shape; a window of more taps than
    // the bound: none is left, and the call is `Error::Limit`).
    ConvKernel::ALL.into_iter().filter(|&k| k != ConvKernel::Coop && (cpu || k.gpu_shaped()) && !(cpu && k.wide()) && k.admits(report, g, o).is_ok()).collect()
}

/// The class of a convolution of `g` from `input` with `weight` into `out` on the adapter of
/// `report`.
pub(crate) fn conv_class(report: &AdapterReport, g: &Conv2dShape, o: &Conv2dOptions, input: &Layout, weight: &Layout, out: &Layout) -> ConvClass {
    let log2 = |v: usize| usize::BITS - 1 - v.max(1).leading_zeros();
    let groups = o.groups.max(1);
    // The reduction dims (C/groups, kh, kw) of a [K, C/groups, kh, kw] weight (how its first
    // dim splits into groups does not matter), or of the matrix products' 1x1 route's [K, C].
    let dims = match (weight.shape(), weight.strides()) {
        (&[_, c, kh, kw], &[_, sc, sh, sw]) => Some([(c, sc), (kh, sh), (kw, sw)]),
        (&[_, c], &[_, sc]) => Some([(c, sc), (1, 0), (1, 0)]),
        _ => None,
    };
    let runs = |channels: bool| dims.is_some_and(|d| crate::kernels::conv::common::reduction_run(d, channels).is_some());
    let kernels = conv_candidates(report, g, o).into_iter().map(|k| (k, k.vectors(g, o, input.strides(), out.strides(), input.offset() as isize, out.offset() as isize, g.n))).collect();
    ConvClass {
        kernels,
        log2: [log2(g.c / o.groups), log2(g.k / o.groups), log2(tune_images(g).saturating_mul(g.oh).saturating_mul(g.ow))],
        window: [g.kh, g.kw, o.stride.0, o.stride.1, o.dilation.0, o.dilation.1],
        depthwise: o.groups == g.c && g.c > 1,
        grouped: o.groups > 1 && o.groups < g.c,
        groups_log2: log2(groups),
        weight_runs: [runs(false), runs(true)],
        channels_last_out: out.strides()[1] == 1 && out.shape()[1] > 1,
    }
}

/// The convolution kernel used where a class has no kept choice (the default policy measures
/// nothing): a deterministic choice per adapter kind and shape class, the kernel the tuner
/// picked most often for such classes on the adapters measured (BENCHMARKS.md). On GPUs the
/// GEMM kernel in the output's orientation, split-K where the class has few output tiles and a
/// long reduction (the wide tiles instead, in that orientation, under
/// `STRIDED_WGPU_GEMM_TILES=wide`); depthwise, `DepthwiseNchw` into NCHW and the rows kernel channels-last. On
/// CPU adapters: depthwise, the tall kernel for 3x3 at unit stride and dilation in either
/// layout (else the rows kernel channels-last, the NCHW kernel otherwise); 3x3 at unit stride and dilation, the rows form
/// of the direct kernel into channels-last, and the band form into NCHW unless `Nchw` writes
/// vec4 output words and the class has fewer than 2^13 output pixels (`log2[2]`: the pixels of
/// the images the tuner would measure); windows of 25 taps or more, fewer than 4 channels per
/// group (a stem), or, channels-last, more input than output channels per group, the direct
/// kernel; at a stride above 1, `Nhwc` where both operands move as vec4 words, `Nchw` into
/// NCHW where its output does, else the direct kernel; otherwise the register-blocked kernel
/// of the output's orientation, NHWC only where both operands move as vec4 words.
pub(crate) fn conv_default(report: &AdapterReport, c: &ConvClass) -> ConvKernel {
    let channels_last_out = c.channels_last_out;
    let has = |k: ConvKernel| c.kernels.iter().any(|(kk, _)| *kk == k);
    let cpu = report.device_type == wgpu::DeviceType::Cpu;
    // A single input channel (groups == C == 1: a grayscale stem) is no depthwise class
    // (`ConvClass::depthwise`): on GPUs the GEMM serves it, where the depthwise kernels would
    // read the input again for each output channel (CPU adapters keep theirs, as measured).
    if has(ConvKernel::DepthwiseNchw) && (cpu || c.depthwise) {
        return match (channels_last_out, cpu) {
            // The tall kernel reads and writes any strides; on a CPU it wins in both layouts.
            (_, true) if has(ConvKernel::DepthwiseTall) => ConvKernel::DepthwiseTall,
            (false, _) => ConvKernel::DepthwiseNchw,
            // Channels-last on GPUs too: on an NVIDIA H200 the rows kernel ran the depthwise
            // 3x3 [8, 144, 56, 56] in 0.030 ms against 0.067 for `DepthwiseNhwc`, the tuner's
            // choice in four runs (BENCHMARKS.md, 2026-11-28).
            (true, _) if has(ConvKernel::DepthwiseRows) => ConvKernel::DepthwiseRows,
            (true, _) => ConvKernel::DepthwiseNhwc,
        };
    }
    if !cpu {
        // Split-K where the class's output has few 64 x 64 tiles (every group's) and its
        // reduction is long (`split::conv_wants_split`).
        let [cg, kg, pixels] = c.log2.map(|l| 1usize << l);
        let tiles = (pixels.div_ceil(64) * kg.div_ceil(64)) << c.groups_log2;
        let split = crate::kernels::split::conv_wants_split(tiles, cg * c.window[0] * c.window[1]);
        // `STRIDED_WGPU_GEMM_TILES=wide` (`AdapterReport::wide_gemm`): the wide tiles instead,
        // which cut their reduction by the same rule (on the call's own sizes).
        if report.wide_gemm {
            match channels_last_out {
                true if has(ConvKernel::GemmNhwcWide) => return ConvKernel::GemmNhwcWide,
                false if has(ConvKernel::GemmNchwWide) => return ConvKernel::GemmNchwWide,
                _ => {}
            }
        }
        return match (channels_last_out, split) {
            (true, true) if has(ConvKernel::GemmNhwcSplit) => ConvKernel::GemmNhwcSplit,
            (false, true) if has(ConvKernel::GemmNchwSplit) => ConvKernel::GemmNchwSplit,
            (true, _) => ConvKernel::GemmNhwc,
            (false, _) => ConvKernel::GemmNchw,
        };
    }
    let [kh, kw, ..] = c.window;
    // `Nchw` writing its output as vec4 words (4 consecutive pixels of a plane), NCHW.
    let nchw = !channels_last_out && c.kernels.iter().any(|&(k, (_, vout))| k == ConvKernel::Nchw && vout);
    // 3x3 at unit stride (bench, same run, lavapipe): channels-last, the rows kernel beat the
    // band kernel by 11-18% at 56x56, 28x28 and 14x14. NCHW, the band kernel beat `Nchw` by
    // 12% on the largest images measured (2^13 output pixels or more in the class) and ran at
    // 0.87-0.98 of it below (the bench's 28x28 and 14x14 rows), where `Nchw`'s first call is
    // also the shorter (2.2-2.5 s against 2.9 s, 2026-11-26). Large images with many output
    // channels class few pixels (one tuning image) and run `Nchw` too: [8, 256, 56, 56] K=256
    // took 864 ms against 917 on `DirectBand`, [8, 128, 56, 56] K=128 222 against 225 (wall
    // clock, medians of 4 alternating runs).
    if channels_last_out && kh == 3 && has(ConvKernel::DirectRows) {
        return ConvKernel::DirectRows;
    }
    if has(ConvKernel::DirectBand) && !(nchw && c.log2[2] < 13) {
        return ConvKernel::DirectBand;
    }
    // floor(log2(C / groups)) < 2: fewer than 4 input channels per group; or, channels-last,
    // more input than output channels per group (the direct kernel holds the outputs). At a
    // stride above 1, `Nhwc` (channels-last) and `Nchw` (NCHW) where they move vec4 words:
    // 1.00-1.01 of the tuned speed, against 0.77-0.78 (channels-last) and 0.34-0.57 (NCHW) on
    // `Direct`. `Nchw` without vec4 input words (strided or shifted pixels) compiles its input
    // loads as a loop (conv.wgsl's `hold_rolled`): unrolled, the NCHW strided rows' first calls
    // took 4.1-4.4 s and ResNet-18's NCHW first inference 16.5 s; rolled, 2.2-2.4 s (1.3-2.2 s
    // on `Direct`) and 7.2-8.3 s against 7.3-7.5 s before (2026-11-26, empty shader cache,
    // alternating runs). (Before every kernel read its uniform at an index no compiler sees,
    // lavapipe compiled the weight-packing copy of each tap and window anew at every call:
    // ResNet-18 on these kernels then took 5.2-5.8 s an inference instead of 1.2 s;
    // preludes/uniform_index.wgsl.)
    let strided = c.window[2] > 1 || c.window[3] > 1;
    let nhwc = channels_last_out && c.kernels.contains(&(ConvKernel::Nhwc, (true, true)));
    let direct = (strided && !nhwc && !nchw) || kh * kw >= 25 || c.log2[0] < 2 || (channels_last_out && c.log2[0] > c.log2[1]);
    if direct && has(ConvKernel::Direct) {
        return ConvKernel::Direct;
    }
    if nhwc {
        ConvKernel::Nhwc
    } else {
        ConvKernel::Nchw
    }
}

