//! The window family (`shaders/kernels/pool2d.wgsl`): max, average and adaptive pooling and
//! bilinear resampling of [N, C, H, W] inputs read in place through their strides: one
//! pipeline per mode and element type (override constants; lavapipe runs every branch of a
//! shader, so a mode in the uniform cost every mode's work), the rest in the uniform. Each
//! invocation writes consecutive 32-bit words of the dense output (two 16-bit elements, or
//! one f32) and, for max modes, the int32 indices.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::abi::uniform;
use crate::kernels::dispatch::{self, grid, i32_of, u32_of, Dispatch};
use crate::kernels::shaders::PipelineSpec;
use crate::layout::{Layout, MemoryFormat};
use crate::pool::{Window, WindowMode};
use crate::runtime::submit::Keep;
use crate::runtime::{PipelineKey, Runtime, Slot};

/// The bindings: the parameters, the input, the output words, the indices.
const SLOTS: &[Slot] = &[Slot::Uniform, Slot::Read, Slot::Write, Slot::Write];

/// Invocations per workgroup.
const WG: u32 = 64;

uniform! {
    /// The uniform of `shaders/kernels/pool2d.wgsl` (`PoolParams` there).
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

/// The pipeline of a family (`pool2d.wgsl`'s MODE_* codes: 0 max, 1 average, 2 adaptive max,
/// 3 adaptive average, 4 bilinear) and element type.
fn constants(family: u32, dtype: DType) -> Vec<(&'static str, i64)> {
    vec![("WG", WG as i64), ("FAMILY", family as i64), ("DT", dtype.code() as i64)]
}

/// Every pipeline a GPU may run (the register budget): five families by three float types.
pub fn gpu_pipelines() -> Vec<PipelineSpec> {
    let mut v = Vec::new();
    for family in 0..5 {
        for dtype in [DType::F32, DType::F16, DType::BF16] {
            v.push(PipelineSpec { kernel: "pool2d", constants: constants(family, dtype) });
        }
    }
    v
}

/// The checks this family makes of a call: a float type, the output dense in NCHW or NHWC
/// order (the caller allocates it so), and the counts within u32.
pub(crate) fn eligible(g: &Window, dtype: DType, out: &Layout) -> Result<()> {
    if !matches!(dtype, DType::F32 | DType::F16 | DType::BF16) {
        return Err(Error::unsupported(g.op, format!("element type {dtype}")));
    }
    let format = if out.is_contiguous() { MemoryFormat::Contiguous } else { MemoryFormat::ChannelsLast };
    if !out.is_contiguous_for(format) || out.offset() != 0 {
        return Err(Error::unsupported(g.op, format!("an output of strides {:?} offset {} (dense NCHW or NHWC from 0 is written)", out.strides(), out.offset())));
    }
    u32_of(g.op, out.numel(), "output elements")?;
    Ok(())
}

/// Records `g` on the input view `x` (of `xbuf`) into the new dense output `out` (of `obuf`),
/// and the indices into `ibuf` when `g.indices`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn record(rt: &Runtime, enc: &mut wgpu::CommandEncoder, keep: &mut Keep, g: &Window, dtype: DType, x: &Layout, xbuf: &wgpu::Buffer, out: &Layout, obuf: &wgpu::Buffer, ibuf: Option<&wgpu::Buffer>) -> Result<()> {
    eligible(g, dtype, out)?;
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
    // lavapipe pays about 0.2 us per invocation whatever it does: 32 words each there.
    let per: u64 = if rt.report.device_type == wgpu::DeviceType::Cpu { 32 } else { 4 };
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
    // The window's indices reach H * W and the plane offsets n * sn + c * sc: within i32.
    i32_of(op, (hi + 1) as isize, "input extent")?;
    let grid = grid(rt, op, words.div_ceil(per).div_ceil(WG as u64), &format!("{words} output words"))?;
    let scratch = rt.scoped(op, || rt.buffer(op, 16, wgpu::BufferUsages::STORAGE))?;
    let idx = ibuf.map_or((scratch.buffer(), (0, 16)), |b| (b, (0, total as u64 * 4)));
    let family = mode;
    let d = Dispatch { key: PipelineKey { shader: "pool2d", constants: constants(family, dtype) }, params, bindings: vec![(xbuf, (start, size)), (obuf, (0, words * 4)), idx], grid };
    let r = dispatch::record(rt, enc, keep, op, SLOTS, &[d]);
    keep.hold(scratch);
    r
}
