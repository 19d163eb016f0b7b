//! The normalization family: `layer_norm` and `group_norm` of float rows in one dispatch of
//! `norm_rows.wgsl`, a workgroup per row (the elements one mean and variance cover; on CPU
//! adapters an invocation per row where its walks fit their loop bound), where the
//! composed ops (src/norm.rs) record about eight dispatches; few long rows on a GPU in three
//! dispatches of `norm_split.wgsl`, a workgroup per chunk of a row ([`NormKernel`]). [`rows_of`] is the one check of
//! an input's layout (rows of dense elements at one stride); `gpu::norm` brings any other input,
//! type or output format to it with copies. Rows go in pieces whose byte windows fit a binding.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::abi::uniform;
use crate::kernels::dispatch::{self, grid, u32_of, Dispatch};
use crate::kernels::shaders::PipelineSpec;
use crate::layout::Layout;
use crate::runtime::record::Recorder;
use crate::runtime::{AdapterReport, PipelineKey, Runtime, Slot};

/// The bindings: the parameters, the input, the weight, the bias, the output, the input's
/// 16-byte words.
const SLOTS: &[Slot] = &[Slot::Uniform, Slot::Read, Slot::Read, Slot::Read, Slot::Write, Slot::Read];
/// `norm_split.wgsl`'s: those, then the chunks' sums.
const SPLIT_SLOTS: &[Slot] = &[Slot::Uniform, Slot::Read, Slot::Read, Slot::Read, Slot::Write, Slot::Read, Slot::Write];

uniform! {
    /// The uniform of `norm_rows.wgsl` (`NormParams` there, which says what each member holds).
    pub(crate) struct NormParams {
        geo: [u32; 4],
        offs: [u32; 4],
        aff: [u32; 4],
        eps: [f32; 4],
        split: [u32; 4],
    }
}

/// How a call's rows are normalized.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NormKernel {
    /// [`NormKernel::Split`] into [`split_chunks`] chunks where a GPU has few long rows, else
    /// [`NormKernel::Rows`].
    #[default]
    Auto,
    /// `norm_rows.wgsl`: a workgroup (or an invocation) a row, one dispatch.
    Rows,
    /// `norm_split.wgsl`: each row cut into about `chunks` chunks (of a multiple of 4
    /// elements), a workgroup of 256 a chunk, three dispatches.
    Split {
        /// The chunks a row is cut into: 1 to [`MAX_CHUNKS`] (rows of few elements get fewer).
        chunks: usize,
    },
}

impl NormKernel {
    /// A forced kernel's own check: `Split` takes 1 to [`MAX_CHUNKS`] chunks.
    pub(crate) fn check(self, op: &'static str) -> Result<()> {
        match self {
            NormKernel::Split { chunks } if chunks == 0 || chunks > MAX_CHUNKS => Err(Error::invalid(op, format!("NormKernel::Split of {chunks} chunks: expected 1 to {MAX_CHUNKS}"))),
            _ => Ok(()),
        }
    }
}

/// The most chunks a row is cut into (every workgroup of a row folds its chunks' sums).
pub const MAX_CHUNKS: usize = 256;
/// Workgroups a GPU's call aims for when it cuts rows into chunks: rows of a few thousand
/// workgroups fill any GPU's multiprocessors several times over (132 on an H200).
const SPLIT_FILL: usize = 1024;
/// The fewest elements an automatic chunk holds: 16 an invocation of a workgroup of 256.
const MIN_CHUNK: usize = 4096;

/// The chunks of [`NormKernel::Auto`] for `rows` rows of `n` on this adapter: on GPUs, where
/// fewer than 1,024 rows leave it underfilled and rows hold two chunks of 4,096 elements or
/// more, enough chunks a row for about 1,024 workgroups; else 1 (a
/// workgroup a row). A diffusion VAE's group norm of [1, 512, 64, 64] in 32 groups: 16 chunks
/// of 4,096 (512 workgroups, where a workgroup a row runs 32).
pub fn split_chunks(report: &AdapterReport, rows: usize, n: usize) -> usize {
    if report.device_type == wgpu::DeviceType::Cpu || rows >= SPLIT_FILL {
        return 1;
    }
    SPLIT_FILL.div_ceil(rows).min(n / MIN_CHUNK).max(1)
}

/// The chunks of rows of `n` cut into about `chunks`, and the elements of each (a multiple of
/// 4, the last chunk shorter): (1, n) for 1 chunk.
fn chunking(n: usize, chunks: usize) -> (usize, usize) {
    if chunks <= 1 {
        return (1, n);
    }
    let len = n.div_ceil(chunks.min(MAX_CHUNKS)).next_multiple_of(4);
    (n.div_ceil(len), len)
}

/// The rows of one call: `rows` rows of `n` elements, row `s * groups + g` of the input at
/// element `s * sample_stride + g * n` (a sample's `groups` rows dense one after the other).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rows {
    pub rows: usize,
    pub n: usize,
    pub groups: usize,
    pub sample_stride: usize,
    /// group_norm: the channels of a group and the elements of a channel; `None`: layer_norm
    /// (weight and bias indexed by the element of the row).
    pub channels: Option<(usize, usize)>,
}

/// The sample stride of `layout` seen as samples over its first `lead` dims, each a dense
/// row-major block of the remaining dims (dims of size 1 at any stride): the leading dims must
/// step through memory as one dim (size-1 dims aside) at a non-negative stride. `None` where
/// the input is not so (the caller copies it into a contiguous tensor first).
pub(crate) fn rows_of(layout: &Layout, lead: usize) -> Option<usize> {
    let (shape, strides) = (layout.shape(), layout.strides());
    let mut expect = 1isize;
    for d in (lead..shape.len()).rev() {
        if shape[d] != 1 && strides[d] != expect {
            return None;
        }
        expect = expect.checked_mul(shape[d] as isize)?;
    }
    // The leading dims (size 1 aside), innermost first: each stride the next one's times its size.
    let lead: Vec<(usize, isize)> = (0..lead).rev().filter(|&d| shape[d] != 1).map(|d| (shape[d], strides[d])).collect();
    let Some(&(_, inner)) = lead.first() else { return Some(0) };
    let mut step = inner;
    for &(size, stride) in &lead {
        if stride != step {
            return None;
        }
        step = step.checked_mul(size as isize)?;
    }
    usize::try_from(inner).ok()
}

/// Invocations a workgroup for rows of `n`: 256 for long rows on GPUs, else 64 (what the
/// software adapters run fastest, and short rows fill).
fn workgroup(report: &AdapterReport, n: usize) -> u32 {
    if report.device_type != wgpu::DeviceType::Cpu && n >= 4096 {
        256
    } else {
        64
    }
}

/// An upper bound of the loop turns of an invocation that walks `share` of a row's elements
/// three times (and two trees of at most 8 levels).
fn turns(share: usize) -> u64 {
    3 * share as u64 + 2 * 8
}

/// Whether an invocation normalizes a whole row of `n` (`PER_THREAD`): on CPU adapters, where
/// its walks stay within the loop bound (no barriers: what they run fastest); never on GPUs.
fn per_thread(report: &AdapterReport, n: usize) -> bool {
    report.device_type == wgpu::DeviceType::Cpu && turns(n) <= crate::kernels::SOFTWARE_LOOP_BUDGET
}

/// Whether the kernel takes rows of `n` elements in samples of `sample` elements (float32
/// bytes: the widest the kernel binds, its output's) on this adapter: a sample's bytes fit a
/// binding, and on CPU adapters an invocation's three walks of a row, or of its share of a
/// row, (and its two trees) stay within the loop bound
/// ([`SOFTWARE_LOOP_BUDGET`](crate::kernels::SOFTWARE_LOOP_BUDGET)).
pub(crate) fn fits(report: &AdapterReport, n: usize, sample: usize) -> bool {
    let max_bind = report.max_storage_buffer_binding_size.min(u32::MAX as u64 + 1);
    let bytes_fit = (sample as u64).saturating_mul(4).saturating_add(report.min_storage_buffer_offset_alignment as u64) <= max_bind;
    let shared = turns(n.div_ceil(workgroup(report, n) as usize)) <= crate::kernels::SOFTWARE_LOOP_BUDGET;
    bytes_fit && (report.device_type != wgpu::DeviceType::Cpu || shared)
}

/// The longest rows an eager call on a CPU adapter runs the kernel for (an invocation a row);
/// longer ones run the composed ops, whose reductions spread a row over more invocations. On
/// lavapipe (2 cores), the kernel in a batch against the composed ops, one run: [64, 256] 0.37
/// ms against 1.05, BERT's [4096, 768] 14.8 against 21.2; a group norm of [8, 64, 56, 56] in 32
/// groups (rows of 6,272, an invocation a row) 6.3 against 4.7, and a diffusion VAE's
/// [1, 512, 64, 64] (32 rows of 65,536, a workgroup a row) 23.2 against 16.3.
const CPU_EAGER_ROW: usize = 1024;

/// The [`Error::Limit`] of rows of `n` elements in samples of `sample` past [`fits`]: a
/// sample's bytes past a binding, or an invocation's loop turns past a software adapter's
/// bound.
pub(crate) fn limit_error(report: &AdapterReport, op: &'static str, n: usize, sample: usize) -> Error {
    let max_bind = report.max_storage_buffer_binding_size.min(u32::MAX as u64 + 1);
    let bytes = (sample as u64).saturating_mul(4).saturating_add(report.min_storage_buffer_offset_alignment as u64);
    if bytes > max_bind {
        return Error::Limit { op, what: format!("binding a sample of {sample} float32 elements (and its alignment)"), limit: "max_storage_buffer_binding_size", requested: bytes, max: max_bind };
    }
    Error::Limit {
        op,
        what: format!("the loop turns of an invocation walking its share of a row of {n} elements three times"),
        limit: "loop turns an invocation runs on a software adapter (Mesa's llvmpipe leaves a loop after 65,535 turns)",
        requested: turns(n.div_ceil(workgroup(report, n) as usize)),
        max: crate::kernels::SOFTWARE_LOOP_BUDGET,
    }
}

/// Whether an eager call takes the kernel (else it runs the composed ops): where it [`fits`],
/// on CPU adapters only for rows up to [`CPU_EAGER_ROW`].
pub(crate) fn eager_fits(report: &AdapterReport, n: usize, sample: usize) -> bool {
    fits(report, n, sample) && (report.device_type != wgpu::DeviceType::Cpu || n <= CPU_EAGER_ROW)
}

/// What a pipeline is specialized for besides its workgroup size.
#[derive(Clone, Copy)]
struct Variant {
    /// group_norm's per-channel affine, or layer_norm's.
    grouped: bool,
    /// An invocation a row (CPU adapters), or a workgroup.
    per_thread: bool,
    /// float32 rows loaded as 16-byte words.
    vec4: bool,
    /// The input's element type.
    input: DType,
    /// The output in the input's 16-bit type, else float32.
    out_half: bool,
    /// 0: `norm_rows.wgsl`; 1, 2, 3: the dispatch of `norm_split.wgsl`.
    phase: u32,
}

/// The kernel of a variant.
fn shader(v: Variant) -> &'static str {
    if v.phase == 0 {
        "norm_rows"
    } else {
        "norm_split"
    }
}

/// The pipeline of a workgroup size and variant.
fn constants(wg: u32, v: Variant) -> Vec<(&'static str, i64)> {
    let mut c = vec![("WG", wg as i64), ("GROUPED", v.grouped as i64)];
    for (name, on, value) in [("PER_THREAD", v.per_thread, 1), ("VEC4", v.vec4, 1), ("IN_DT", v.input != DType::F32, v.input.code() as i64), ("OUT_HALF", v.out_half, 1), ("PHASE", v.phase > 0, v.phase as i64)] {
        if on {
            c.push((name, value));
        }
    }
    c
}

/// Every pipeline a GPU may run (the register budget): both workgroup sizes and forms, float32
/// rows by elements and by words, 16-bit rows into float32 or their own type; the three
/// dispatches of split rows (long rows: workgroups of 256) of each.
pub fn gpu_pipelines() -> Vec<PipelineSpec> {
    let mut v = Vec::new();
    for wg in [64, 256] {
        for grouped in [false, true] {
            let plain = Variant { grouped, per_thread: false, vec4: false, input: DType::F32, out_half: false, phase: 0 };
            let mut variants = vec![plain, Variant { vec4: true, ..plain }];
            for input in [DType::F16, DType::BF16] {
                variants.extend([false, true].map(|out_half| Variant { input, out_half, ..plain }));
            }
            let phases: &[u32] = if wg == 256 { &[0, 1, 2, 3] } else { &[0] };
            for variant in variants {
                // (The sums' dispatches write no output: they take the float32 output's pipeline.)
                let each = phases.iter().map(|&phase| Variant { phase, ..variant }).filter(|v| !(v.out_half && matches!(v.phase, 1 | 2)));
                v.extend(each.map(|variant| PipelineSpec { kernel: shader(variant), constants: constants(wg, variant) }));
            }
        }
    }
    v
}

/// A float32 operand's buffer and its element offset.
pub(crate) type Operand<'a> = (&'a wgpu::Buffer, usize);

/// Records the normalization of `rows` of input `x` (its first row at element `x.1`, of type
/// `input`: float32, float16 or bfloat16) into the dense rows of `out` (from element `out.1`;
/// float32, or with `out_half` the input's 16-bit type, which takes rows of even length from
/// an even offset), with the weight and bias (dense float32, one per
/// element of a row, or per channel of group_norm, from an offset of whole
/// `min_storage_buffer_offset_alignment` bytes: `gpu::norm` copies any other) where given.
/// Past [`fits`] an [`Error::Limit`] ([`limit_error`]). `kernel` forced or chosen (`Auto`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn record(rt: &Runtime, rec: &mut Recorder, op: &'static str, rows: Rows, eps: f32, (x, input): (Operand<'_>, DType), weight: Option<Operand<'_>>, bias: Option<Operand<'_>>, (out, out_half): (Operand<'_>, bool), kernel: NormKernel) -> Result<()> {
    let Rows { rows: total, n, groups, sample_stride, channels } = rows;
    if total == 0 || n == 0 {
        return Ok(());
    }
    let rep = &rt.report;
    if !fits(rep, n, groups * n) {
        return Err(limit_error(rep, op, n, groups * n));
    }
    let align = rep.min_storage_buffer_offset_alignment as u64;
    for (at, what) in [(weight, "weight"), (bias, "bias")].iter().filter_map(|(o, w)| o.map(|o| (o.1, *w))) {
        if !(at as u64 * 4).is_multiple_of(align) {
            return Err(Error::invalid(op, format!("a {what} from element {at}: expected an offset of whole {align}-byte blocks")));
        }
    }
    let max_bind = rep.max_storage_buffer_binding_size.min(u32::MAX as u64 + 1);
    if out_half && (input == DType::F32 || !n.is_multiple_of(2) || !out.1.is_multiple_of(2)) {
        return Err(Error::invalid(op, format!("a {input} output of rows of {n} from element {}: expected a 16-bit type, rows of even length from an even offset", out.1)));
    }
    let (chunks, chunk) = chunking(n, match kernel {
        NormKernel::Auto => split_chunks(rep, total, n),
        NormKernel::Rows => 1,
        NormKernel::Split { chunks } => chunks,
    });
    // Split rows take workgroups of 256 on every adapter (the register budget's pipelines; on
    // CPU adapters, forced, fewer loop turns than the 64 `fits` counted).
    let wg = if chunks > 1 { 256 } else { workgroup(rep, n) };
    let threads = chunks == 1 && per_thread(rep, n);
    // float32 rows of whole 16-byte words from word boundaries (the windows start on aligned
    // offsets).
    let vec4 = input == DType::F32 && x.1.is_multiple_of(4) && sample_stride.is_multiple_of(4) && n.is_multiple_of(4);
    let variant = Variant { grouped: channels.is_some(), per_thread: threads, vec4, input, out_half, phase: 0 };
    // One dispatch, or the three of split rows (the sums' without the output's type).
    let keys: Vec<PipelineKey> = match chunks {
        1 => vec![PipelineKey { shader: "norm_rows", constants: constants(wg, variant) }],
        _ => (1..=3).map(|phase| Variant { phase, out_half: out_half && phase == 3, ..variant }).map(|v| PipelineKey { shader: shader(v), constants: constants(wg, v) }).collect(),
    };
    let (es_in, es_out) = (input.size() as u64, if out_half { 2 } else { 4 });
    // The byte window of `len` elements of `es` bytes from element `at`, starting at an aligned
    // offset, and the element offset of `at` within it.
    let window = |at: usize, len: usize, es: u64| {
        let start = at as u64 * es / align * align;
        ((start, at as u64 * es + len as u64 * es - start), (at as u64 - start / es) as usize)
    };
    // Samples a piece: its input window (from the first sample's start to the last one's end)
    // and its output rows within a binding.
    let samples = total / groups;
    let slack = (groups * n) as u64 * 4 + align;
    let by_input = if sample_stride == 0 { samples } else { ((max_bind - slack) / (sample_stride as u64 * 4)) as usize + 1 };
    let by_output = ((max_bind - align) / ((groups * n) as u64 * 4)) as usize;
    let per_piece = by_input.min(by_output).clamp(1, samples);
    let plen = channels.map_or(n, |(per, _)| per * groups) as u64 * 4;
    let (has_w, wbind) = match weight {
        Some((b, at)) => (true, (b, (at as u64 * 4, plen))),
        None => (false, (rt.spare_words(), (0, 16))),
    };
    let (has_b, bbind) = match bias {
        Some((b, at)) => (true, (b, (at as u64 * 4, plen))),
        None => (false, (rt.spare_words(), (0, 16))),
    };
    let (per, plane) = channels.unwrap_or((0, 1));
    // The chunks' sums of split rows: two float32 slots a chunk of the longest piece's rows,
    // reused piece after piece (each piece's dispatches follow the last one's). The recording
    // holds it from here (an error below leaves no dispatch of it recorded).
    let part = match chunks {
        1 => None,
        _ => {
            let bytes = (per_piece * groups * chunks) as u64 * 2 * 4;
            let p = rt.buffer(op, bytes, wgpu::BufferUsages::STORAGE)?;
            let b = p.buffer().clone();
            rec.hold(p);
            Some(b)
        }
    };
    let mut dispatches = Vec::new();
    let mut s0 = 0;
    while s0 < samples {
        let s1 = (s0 + per_piece).min(samples);
        let prow = (s1 - s0) * groups;
        let (xw, x_off) = window(x.1 + s0 * sample_stride, (s1 - 1 - s0) * sample_stride + groups * n, es_in);
        let (ow, o_off) = window(out.1 + s0 * groups * n, prow * n, es_out);
        let groups_needed = if threads { prow.div_ceil(wg as usize) } else { prow * chunks };
        let (gx, gy) = grid(rt, op, groups_needed as u64, "rows of one piece")?;
        // (A piece of one sample never steps to another.)
        let stride = if s1 - s0 > 1 { sample_stride } else { 0 };
        let params = NormParams {
            geo: [u32_of(op, prow, "rows")?, u32_of(op, n, "row elements")?, gx, 0],
            offs: [x_off as u32, u32_of(op, stride, "sample stride")?, groups as u32, o_off as u32],
            aff: [per as u32, plane as u32, has_w as u32, has_b as u32],
            eps: [eps, 0.0, 0.0, 0.0],
            split: [chunks as u32, u32_of(op, chunk, "chunk elements")?, 0, 0],
        };
        let x4 = if vec4 { dispatch::read_words(rt, x.0, xw, 16) } else { (rt.spare_words(), (0, 16)) };
        let mut bindings = vec![(x.0, xw), wbind, bbind, (out.0, ow), x4];
        if let Some(p) = &part {
            bindings.push((p, (0, p.size())));
        }
        dispatches.extend(keys.iter().map(|key| Dispatch { key: key.clone(), params, bindings: bindings.clone(), grid: (gx, gy) }));
        s0 = s1;
    }
    let slots = if part.is_some() { SPLIT_SLOTS } else { SLOTS };
    dispatch::record(rt, rec, op, slots, &dispatches)
}
