//! The window family: max, average and adaptive pooling and bilinear resampling of
//! [N, C, H, W] inputs read in place through their strides, by three kernels ([`PoolKernel`]):
//! `pool2d_vec.wgsl`, four channels of a run of output pixels per invocation (the window's
//! bookkeeping paid once per 4 outputs), where [`classify`] admits it (within its calls,
//! `pool2d_rows.wgsl` takes aligned float32 NCHW rows a 16-byte word at a time), else the general
//! `pool2d.wgsl`, consecutive 32-bit words of the dense output per invocation. One pipeline
//! per mode and element type (for the vec kernel also output layout, 16-byte words and max
//! pooling's unrolled 3 x 3 windows, where the call allows them): override constants, as
//! lavapipe runs every branch of a shader, so a mode in the uniform cost every mode's work;
//! the rest is in the uniform. Max modes also write the int32 indices.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::abi::uniform;
use crate::kernels::dispatch::{self, grid, i32_of, u32_of, Dispatch};
use crate::kernels::shaders::PipelineSpec;
use crate::layout::{Layout, MemoryFormat};
use crate::pool::{Window, WindowMode};
use crate::runtime::record::Recorder;
use serde::{Deserialize, Serialize};
use crate::runtime::{PipelineKey, Runtime, Slot};

/// The bindings: the parameters, the input, the output words, the indices.
const SLOTS: &[Slot] = &[Slot::Uniform, Slot::Read, Slot::Write, Slot::Write];

/// The vec kernel's bindings: those of [`SLOTS`], then the input and the output as 16-byte
/// words.
const VEC_SLOTS: &[Slot] = &[Slot::Uniform, Slot::Read, Slot::Write, Slot::Write, Slot::Read, Slot::Write];

/// Invocations per workgroup.
const WG: u32 = 64;

uniform! {
    /// The uniform of the three window kernels, `pool2d.wgsl`, `pool2d_vec.wgsl` and
    /// `pool2d_rows.wgsl` (`PoolParams` of `shaders/preludes/pool.wgsl`, which says what each
    /// kernel reads in each member).
    pub(crate) struct PoolParams {
        xs: [i32; 4],
        geo: [u32; 4],
        dims: [u32; 4],
        win: [i32; 4],
        pad: [i32; 4],
        mode: [u32; 4],
        scale: [f32; 4],
        base: [u32; 4],
    }
}

/// The rows kernel's bindings: the parameters, the input and the output as 16-byte words.
const ROWS_SLOTS: &[Slot] = &[Slot::Uniform, Slot::Read, Slot::Write];

/// Which kernel computes a window op. Tests and benchmarks can force one
/// (`advanced::internal::window_with`); a forced kernel goes through the same [`classify`] check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PoolKernel {
    /// `Vec4` where [`classify`] admits it, else `General`.
    Auto,
    /// `pool2d.wgsl`: any float type and layout, one output word after another.
    General,
    /// `pool2d_vec.wgsl`: 4 consecutive channels of a run of output pixels per invocation.
    /// Needs a float32 output (either layout), or a 16-bit channels-last output with C even.
    Vec4,
}

/// The pipeline of a family (`pool2d.wgsl`'s MODE_* codes: 0 max, 1 average, 2 adaptive max,
/// 3 adaptive average, 4 bilinear) and element type.
fn constants(family: u32, dtype: DType) -> Vec<(&'static str, i64)> {
    vec![("WG", WG as i64), ("FAMILY", family as i64), ("DT", dtype.code() as i64)]
}

/// The vec kernel's specializations (override constants) besides family and element type.
#[derive(Clone, Copy, PartialEq)]
struct VecVariant {
    /// The output is channels-last (`CL`).
    cl: bool,
    /// Max pooling over at most 3 x 3 taps unrolled: 1, or 2 keeping an output's last column
    /// for the next (`TAPS3`); 0 not.
    taps3: u32,
    /// Indices computed and written (`INDICES`; only TAPS3 pipelines leave them out).
    indices: bool,
    /// Channels as 16-byte words (`WORDS`).
    words: bool,
    /// Bilinear x2 along W (`X2`).
    x2: bool,
}

/// The vec kernel's pipeline of a family, element type and variant.
fn vec_constants(family: u32, dtype: DType, v: VecVariant) -> Vec<(&'static str, i64)> {
    let mut c = constants(family, dtype);
    c.push(("CL", v.cl as i64));
    for (name, on, value) in [("TAPS3", v.taps3 > 0, v.taps3 as i64), ("INDICES", v.taps3 > 0 && !v.indices, 0), ("WORDS", v.words, 1), ("X2", v.x2, 1)] {
        if on {
            c.push((name, value));
        }
    }
    c
}

/// Every pipeline a GPU may run (the register budget): five families by three float types of
/// the general kernel, and of the vec kernel in channels-last (three types), NCHW (f32) and
/// channels-last words (f32); in each of those also max pooling's unrolled 3 x 3 windows (with
/// and without the kept column) and bilinear x2.
pub fn gpu_pipelines() -> Vec<PipelineSpec> {
    let mut v = Vec::new();
    for family in 0..5 {
        let plain = VecVariant { cl: true, taps3: 0, indices: true, words: false, x2: false };
        let special: Vec<VecVariant> = match family {
            0 => [(0, true), (1, true), (1, false), (2, true), (2, false)].iter().map(|&(taps3, indices)| VecVariant { taps3, indices, ..plain }).collect(),
            4 => vec![plain, VecVariant { x2: true, ..plain }],
            _ => vec![plain],
        };
        for variant in special {
            for dtype in [DType::F32, DType::F16, DType::BF16] {
                if variant == plain {
                    v.push(PipelineSpec { kernel: "pool2d", constants: constants(family, dtype) });
                }
                v.push(PipelineSpec { kernel: "pool2d_vec", constants: vec_constants(family, dtype, variant) });
            }
            v.push(PipelineSpec { kernel: "pool2d_vec", constants: vec_constants(family, DType::F32, VecVariant { cl: false, ..variant }) });
            v.push(PipelineSpec { kernel: "pool2d_vec", constants: vec_constants(family, DType::F32, VecVariant { words: true, ..variant }) });
        }
    }
    v.extend([0, 1, 4].map(|family| PipelineSpec { kernel: "pool2d_rows", constants: rows_constants(family) }));
    v
}

/// The kernel that runs `g` (of element type `dtype`) into the dense output `out` when
/// `kernel` is asked for: the one eligibility check of both kernels, used by the automatic
/// choice and forced kernels alike. The family's checks come first (a float type, a dense
/// NCHW or channels-last output from an offset of a multiple of [`OUT_ALIGN`] bytes, counts
/// within u32); the vec kernel needs a
/// float32 output, or a channels-last 16-bit one with an even C (its 4 channels fill whole
/// words).
pub fn classify(g: &Window, dtype: DType, out: &Layout, kernel: PoolKernel) -> Result<PoolKernel> {
    eligible(g, dtype, out)?;
    let vec = dtype == DType::F32 || (!out.is_contiguous() && g.input[1].is_multiple_of(2));
    match kernel {
        PoolKernel::Auto if vec => Ok(PoolKernel::Vec4),
        PoolKernel::Auto | PoolKernel::General => Ok(PoolKernel::General),
        PoolKernel::Vec4 if vec => Ok(PoolKernel::Vec4),
        PoolKernel::Vec4 => Err(Error::unsupported(
            g.op,
            format!("the vec4 window kernel needs a float32 output or a channels-last one with an even C; got {dtype}, C = {}, output strides {:?}", g.input[1], out.strides()),
        )),
    }
}

/// The alignment in bytes of an output's (and its indices') offset in its buffer, which the
/// kernels bind it from: the largest `min_storage_buffer_offset_alignment` an adapter may
/// report, so that one piece of a split call (`Batch::window`) binds on every adapter.
pub(crate) const OUT_ALIGN: u64 = 256;

/// The checks this family makes of a call: a float type, the output dense in NCHW or NHWC
/// order (the caller allocates it so) from an offset of a multiple of [`OUT_ALIGN`] bytes (as
/// are the indices', 4 bytes an element, at the same offset of theirs: a whole output's 0, or
/// the images of one piece of it), and the counts within u32.
pub(crate) fn eligible(g: &Window, dtype: DType, out: &Layout) -> Result<()> {
    if !matches!(dtype, DType::F32 | DType::F16 | DType::BF16) {
        return Err(Error::unsupported(g.op, format!("element type {dtype}")));
    }
    let format = if out.is_contiguous() { MemoryFormat::Contiguous } else { MemoryFormat::ChannelsLast };
    let aligned = |size: u64| (out.offset() as u64 * size).is_multiple_of(OUT_ALIGN);
    if !out.is_contiguous_for(format) || !aligned(dtype.size() as u64) || (g.indices && !aligned(4)) {
        return Err(Error::unsupported(g.op, format!("an output of strides {:?} offset {} (dense NCHW or NHWC from an offset of a multiple of {OUT_ALIGN} bytes is written)", out.strides(), out.offset())));
    }
    u32_of(g.op, out.numel(), "output elements")?;
    Ok(())
}

/// The rows kernel's pipeline of a family (0 max, 1 average, 4 bilinear).
fn rows_constants(family: u32) -> Vec<(&'static str, i64)> {
    vec![("WG", WG as i64), ("FAMILY", family as i64)]
}

/// Bilinear x2 along W, not align_corners (the vec kernel's X2 and the rows kernel's bilinear).
fn x2_columns(g: &Window) -> bool {
    matches!(g.mode, WindowMode::Bilinear { scale: (_, sx), align_corners: false } if sx == 0.5) && g.out.1 == 2 * g.input[3]
}

/// The family the rows kernel (`pool2d_rows.wgsl`) computes `g` with, where it can: float32,
/// an NCHW input whose rows are whole aligned 16-byte words (unit stride along W, W, the other
/// strides and `base`, the input's offset within its binding, multiples of 4) into a dense
/// NCHW output whose rows are whole words, and either max pooling of 3-column windows at column
/// stride 2 (dilation 1, padding 0 or 1, at most 3 rows, no indices: family 0), 2x2 average
/// pooling at stride 2 with every window inside the image (1) or bilinear x2 along W (4).
fn rows_family(g: &Window, dtype: DType, x: &Layout, out: &Layout, base: u32) -> Option<u32> {
    let s = x.strides();
    let words = dtype == DType::F32 && out.is_contiguous() && s[3] == 1 && [s[0], s[1], s[2]].iter().all(|v| v.rem_euclid(4) == 0) && base.is_multiple_of(4) && g.input[3].is_multiple_of(4) && g.out.1.is_multiple_of(4);
    let max = matches!(g.mode, WindowMode::Max) && !g.indices && g.kernel == (g.kernel.0.min(3), 3) && g.stride.1 == 2 && g.dilation.1 == 1 && g.padding.1 <= 1;
    let avg = matches!(g.mode, WindowMode::Avg { .. }) && g.kernel == (2, 2) && g.stride == (2, 2) && g.padding == (0, 0) && 2 * g.out.0 <= g.input[2] && 2 * g.out.1 <= g.input[3];
    match () {
        _ if words && max => Some(0),
        _ if words && avg => Some(1),
        _ if words && x2_columns(g) => Some(4),
        _ => None,
    }
}

/// Records `g` on the input view `x` (of `xbuf`) into the dense output `out` (of `obuf`: a
/// new tensor or a run of its images, [`eligible`]), and the indices into `ibuf` (at the same
/// element offset) when `g.indices`, through `kernel` as asked (checked by
/// [`classify`]; the automatic choice of a CPU adapter takes the general kernel where the vec
/// kernel's walk would pass the loop bound).
#[allow(clippy::too_many_arguments)]
pub(crate) fn record(rt: &Runtime, rec: &mut Recorder, g: &Window, dtype: DType, x: &Layout, xbuf: &wgpu::Buffer, out: &Layout, obuf: &wgpu::Buffer, ibuf: Option<&wgpu::Buffer>, kernel: PoolKernel) -> Result<()> {
    let asked = kernel;
    let kernel = classify(g, dtype, out, kernel)?;
    let op = g.op;
    let total = out.numel();
    if total == 0 {
        return Ok(());
    }
    let bytes = dtype.size() as u64;
    let per_word = (4 / dtype.size()) as u64;
    let words = (total as u64).div_ceil(per_word);
    // The input's window: from its lowest element (aligned down) to its highest.
    let (lo, hi) = x.span().expect("a non-empty input of a non-empty output");
    let align = rt.report.min_storage_buffer_offset_alignment as u64;
    let start = lo as u64 * bytes / align * align;
    let size = ((hi as u64 + 1) * bytes - start).div_ceil(4) * 4;
    let max = rt.report.max_storage_buffer_binding_size;
    for (what, need) in [("the input's span", size), ("the output", words * 4), ("the indices", if g.indices { total as u64 * 4 } else { 0 })] {
        if need > max {
            return Err(Error::Limit { op, what: format!("binding {what} of {:?}", g.input), limit: "max_storage_buffer_binding_size", requested: need, max });
        }
    }
    // The loop turns one output's window takes (rows, each its columns and about two more;
    // the vec kernel's max walks columns, each its rows), and its stores' few, on software
    // adapters, whose loops stop short past SOFTWARE_LOOP_ITERATIONS turns an invocation,
    // silently (a max missing its last rows, an average of part of its window): within
    // 60,000 (a margin for the loops not counted), an invocation takes no more outputs than
    // fit, and a window past it alone (a word of two 16-bit outputs, for the general kernel)
    // is refused (below, after the arithmetic's own limits).
    let cpu = rt.report.device_type == wgpu::DeviceType::Cpu;
    let bound = crate::kernels::SOFTWARE_LOOP_BUDGET;
    let (rows, cols) = (g.most_taps(0), g.most_taps(1));
    let row_turns = rows.saturating_mul(cols + 2).saturating_add(16);
    let vec_turns = row_turns.max(cols.saturating_mul(rows + 2).saturating_add(16));
    // The automatic choice on a CPU adapter: the general kernel where the vec kernel's walk
    // (columns outside) would pass the bound.
    let kernel = if cpu && asked == PoolKernel::Auto && kernel == PoolKernel::Vec4 && vec_turns > bound { PoolKernel::General } else { kernel };
    let (turns, least) = if kernel == PoolKernel::General { (row_turns, per_word) } else { (vec_turns, 1) };
    // lavapipe pays about 0.2 us per invocation whatever it does: 32 words each there (as
    // many as the loop bound allows).
    let per: u64 = if cpu { (bound / turns.saturating_mul(per_word)).clamp(1, 32) } else { 4 };
    let s = x.strides();
    let (mode, scale) = match g.mode {
        WindowMode::Max => (0, [0.0; 4]),
        WindowMode::Avg { .. } => (1, [0.0; 4]),
        WindowMode::AdaptiveMax => (2, [0.0; 4]),
        WindowMode::AdaptiveAvg => (3, [0.0; 4]),
        WindowMode::Bilinear { scale, align_corners } => (4, [scale.0, scale.1, align_corners as u32 as f32, 0.0]),
    };
    let (include, divisor) = match g.mode {
        WindowMode::Avg { count_include_pad, divisor } => (count_include_pad as u32, u32_of(op, divisor.unwrap_or(0), "divisor_override")?),
        _ => (0, 0),
    };
    let i = |v: usize, what: &str| i32_of(op, v as isize, what);
    let params = PoolParams {
        xs: [i32_of(op, s[0], "input stride n")?, i32_of(op, s[1], "input stride c")?, i32_of(op, s[2], "input stride h")?, i32_of(op, s[3], "input stride w")?],
        geo: [u32_of(op, g.input[1], "C")?, u32_of(op, g.input[2], "H")?, u32_of(op, g.input[3], "W")?, u32_of(op, total, "output elements")?],
        dims: [u32_of(op, g.out.0, "OH")?, u32_of(op, g.out.1, "OW")?, (!out.is_contiguous()) as u32, dtype.code()],
        win: [i(g.kernel.0, "kh")?, i(g.kernel.1, "kw")?, i(g.stride.0, "sh")?, i(g.stride.1, "sw")?],
        pad: [i(g.padding.0, "ph")?, i(g.padding.1, "pw")?, i(g.dilation.0, "dh")?, i(g.dilation.1, "dw")?],
        mode: [mode, include, divisor, g.indices as u32],
        scale,
        base: [u32_of(op, x.offset() - (start / bytes) as usize, "input offset")?, u32_of(op, words as usize, "output words")?, per as u32, 0],
    };
    // The window's indices reach H * W and the plane offsets n * sn + c * sc from the bound
    // window's start: within i32 (not the element's place in the whole buffer: a view of a
    // few images deep in a big one was refused).
    i32_of(op, (hi + 1 - (start / bytes) as usize) as isize, "input extent")?;
    // The kernels take image, channel, row and column numbers, a window's bounds and an
    // average's divisor as i32 (`pool_window.wgsl`): a size past i32 (an expanded view has
    // any), an axis whose window arithmetic (a start o * s - p plus an extent (k - 1) * d + 1,
    // each within size + 2p + s) could pass it, or a divisor past it is an overflow error, not
    // a wrap.
    let within = |v: u128, what: String| if v > i32::MAX as u128 { Err(Error::overflow(op, format!("{what} = {v} in the kernel's i32 arithmetic"))) } else { Ok(()) };
    for (v, what) in [(g.input[0], "N"), (g.input[1], "C"), (g.input[2], "H"), (g.input[3], "W"), (g.out.0, "OH"), (g.out.1, "OW")] {
        within(v as u128, format!("{what} of {:?}", g.input))?;
    }
    for axis in (0..2).filter(|_| matches!(g.mode, WindowMode::Max | WindowMode::Avg { .. })) {
        let pick = |t: (usize, usize)| if axis == 0 { t.0 } else { t.1 } as u128;
        let reach = 2 * (pick((g.input[2], g.input[3])) + 2 * pick(g.padding) + pick(g.stride)) + 2;
        within(reach, format!("the window arithmetic along {} (kernel {:?}, stride {:?}, padding {:?}, dilation {:?})", ["H", "W"][axis], g.kernel, g.stride, g.padding, g.dilation))?;
    }
    if let WindowMode::Avg { divisor, .. } = g.mode {
        within(divisor.map_or(g.kernel.0 as u128 * g.kernel.1 as u128, |d| d as u128), format!("the divisor of a {:?} window (override {divisor:?})", g.kernel))?;
    }
    // An adaptive bin's bounds, (o * size) / outs and ((o + 1) * size + outs - 1) / outs, are
    // formed in i32 (`span` of `pool_window.wgsl`): they must not wrap.
    if matches!(g.mode, WindowMode::AdaptiveAvg | WindowMode::AdaptiveMax) {
        for (outs, size, what) in [(g.out.0, g.input[2], "OH * H"), (g.out.1, g.input[3], "OW * W")] {
            let reach = (outs as u64) * (size as u64) + outs as u64;
            if reach > i32::MAX as u64 {
                return Err(Error::Limit { op, what: format!("an adaptive pooling's bin bounds ({what} + the output size, {outs} outputs of {size} inputs)"), limit: "i32 arithmetic in the kernel", requested: reach, max: i32::MAX as u64 });
            }
        }
    }
    if cpu && turns.saturating_mul(least) > bound {
        return Err(Error::Limit { op, what: format!("a window of up to {rows} x {cols} taps of input {:?} (kernel {:?}, output {:?}): {turns} loop turns an output, {least} an invocation at least", g.input, g.kernel, g.out), limit: "loop turns an invocation on a software adapter (Mesa's llvmpipe leaves a loop after 65,535; `mean` and `amax` reduce whole planes)", requested: turns.saturating_mul(least), max: bound });
    }
    let scratch = rt.held_scratch(rec, op, 16, wgpu::BufferUsages::STORAGE)?;
    // The output and the indices from their (aligned) offsets.
    let (ob, ib) = (out.offset() as u64 * bytes, out.offset() as u64 * 4);
    let idx = ibuf.map_or((&scratch, (0, 16)), |b| (b, (ib, total as u64 * 4)));
    let family = mode;
    let mut bindings = vec![(xbuf, (start, size)), (obuf, (ob, words * 4)), idx];
    let rows = if kernel == PoolKernel::Vec4 { rows_family(g, dtype, x, out, params.base[0]) } else { None };
    if let Some(family) = rows {
        let cpu = rt.report.device_type == wgpu::DeviceType::Cpu;
        let words = (g.out.1 / 4) as u64;
        // Runs of output words along a row, of balanced lengths: up to 16 words on CPU adapters
        // (bilinear's steps are pairs; 16 ran 1.2-1.4x faster than 4 on lavapipe), 1 word (a
        // pair) on GPUs.
        let unit: u64 = if family == 4 { 2 } else { 1 };
        let steps = words / unit;
        let run = unit * if cpu { steps.div_ceil(steps.div_ceil(16 / unit)) } else { 1 };
        let runs = words.div_ceil(run);
        let invocations = (g.input[0] * g.input[1] * g.out.0) as u64 * runs;
        let w = |v: isize, what: &str| i32_of(op, v / 4, what);
        let u = PoolParams {
            xs: [w(s[0], "input stride n")?, w(s[1], "input stride c")?, w(s[2], "input stride h")?, 0],
            geo: [params.geo[0], params.geo[1], params.geo[2], params.geo[2] / 4],
            dims: [params.dims[0], u32_of(op, words as usize, "output words")?, u32_of(op, runs as usize, "runs")?, run as u32],
            win: [params.win[0], params.win[2], params.pad[0], params.pad[2]],
            // Average pooling's divisor: the override, else the 4 taps of a window inside.
            pad: [params.pad[1], i32_of(op, if params.mode[2] == 0 { 4 } else { params.mode[2] as isize }, "divisor")?, 0, 0],
            // Unread by the rows kernel.
            mode: [0; 4],
            scale: [params.scale[0], 0.0, 0.0, 0.0],
            base: [params.base[0] / 4, u32_of(op, invocations as usize, "invocations")?, 0, 0],
        };
        let grid = grid(rt, op, invocations.div_ceil(WG as u64), &format!("{invocations} invocations"))?;
        let bindings = vec![(xbuf, (start, size / 16 * 16)), (obuf, (ob, total as u64 * 4))];
        let d = Dispatch { key: PipelineKey { shader: "pool2d_rows", constants: rows_constants(family) }, params: u, bindings, grid };
        dispatch::record(rt, rec, op, ROWS_SLOTS, &[d])
    } else if kernel == PoolKernel::Vec4 {
        // Pixels per invocation: a run of up to 8 on CPU adapters (along which bilinear and max
        // reuse loaded columns; 2 was slower on lavapipe, 32 no faster; fewer where their
        // windows' loop turns pass the bound), one on GPUs.
        // Runs within a row, of balanced lengths (a row of 28 is 4 runs of 7, not 8, 8, 8, 4).
        let ow = g.out.1 as u64;
        // Bilinear x2 along W runs in whole pairs (X2 in the shader), up to 8 pairs on CPU
        // adapters (minimum times on lavapipe 7.3-7.6 ms against 8.0-8.1 with 4 pairs; max
        // pooling's runs of 16 were slower than 8).
        let x2 = x2_columns(g);
        let most = (bound / turns).clamp(1, 8);
        let run: u64 = match (cpu, x2) {
            (true, false) => ow.div_ceil(ow.div_ceil(most)),
            (true, true) => 2 * (ow / 2).div_ceil((ow / 2).div_ceil(8)),
            (false, false) => 1,
            (false, true) => 2,
        };
        let row_blocks = ow.div_ceil(run);
        let blocks = g.out.0 as u64 * row_blocks;
        let groups = (g.input[1] as u64).div_ceil(4);
        let invocations = g.input[0] as u64 * groups * blocks;
        let cl = !out.is_contiguous();
        let v = PoolParams {
            geo: [params.geo[0], params.geo[1], params.geo[2], u32_of(op, groups as usize, "channel groups")?],
            dims: [params.dims[0], params.dims[1], u32_of(op, row_blocks as usize, "pixel blocks")?, run as u32],
            base: [params.base[0], u32_of(op, invocations as usize, "invocations")?, 0, 0],
            ..params
        };
        let grid = grid(rt, op, invocations.div_ceil(WG as u64), &format!("{invocations} invocations"))?;
        // Max pooling over at most 3 x 3 taps unrolled; 3 columns at a stride of 2 dilations
        // also keep an output's last column for the next output's first.
        let taps3 = match g.mode {
            WindowMode::Max if g.kernel.0 <= 3 && g.kernel.1 == 3 && g.stride.1 == 2 * g.dilation.1 => 2,
            WindowMode::Max if g.kernel.0 <= 3 && g.kernel.1 <= 3 => 1,
            _ => 0,
        };
        // Channels in 16-byte words: float32, channels-last in and out, C a multiple of 4 and
        // every stride and the offset (within the binding) multiples of 4 elements.
        let aligned = s[1] == 1 && [s[0], s[2], s[3]].iter().all(|v| v.rem_euclid(4) == 0) && params.base[0].is_multiple_of(4);
        let wordwise = dtype == DType::F32 && cl && g.input[1].is_multiple_of(4) && aligned;
        // Stand-ins for the unused bindings (one read, one written: a buffer is not both in
        // one dispatch).
        let spare = rt.held_scratch(rec, op, 16, wgpu::BufferUsages::STORAGE)?;
        let spare_in = rt.held_scratch(rec, op, 16, wgpu::BufferUsages::STORAGE)?;
        if wordwise {
            bindings[1] = (&spare, (0, 16));
            bindings.push((xbuf, (start, size / 16 * 16)));
            bindings.push((obuf, (ob, words * 4)));
        } else {
            bindings.push((&spare_in, (0, 16)));
            bindings.push((&spare, (0, 16)));
        }
        let d = Dispatch { key: PipelineKey { shader: "pool2d_vec", constants: vec_constants(family, dtype, VecVariant { cl, taps3, indices: g.indices, words: wordwise, x2 }) }, params: v, bindings, grid };
        dispatch::record(rt, rec, op, VEC_SLOTS, &[d])
    } else {
        let grid = grid(rt, op, words.div_ceil(per).div_ceil(WG as u64), &format!("{words} output words"))?;
        let d = Dispatch { key: PipelineKey { shader: "pool2d", constants: constants(family, dtype) }, params, bindings, grid };
        dispatch::record(rt, rec, op, SLOTS, &[d])
    }
}
