//! The copy kernels: which path moves a plan ([`auto_path`], from the plan's class and, for
//! batched transposes, a tuned or default choice given by the caller), whether a path applies
//! ([`prepare`], the one eligibility check of every path, used by the automatic choice and by
//! forced paths alike), and recording a prepared path into an encoder ([`record`]): the plan is
//! split into pieces whose bindings fit the adapter, and each piece is one dispatch.


use bytemuck::Zeroable;
use serde::{Deserialize, Serialize};

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::abi::uniform;
use crate::kernels::dispatch::{self, Dispatch};
use crate::kernels::shaders::PipelineSpec;
use crate::plan::{CopyKind, CopyPlan, Cuts};
use crate::runtime::record::Recorder;
use crate::runtime::{AdapterReport, PipelineKey, Runtime, Slot};

/// The bindings of every copy kernel: the plan uniform, a read-only source, a read-write
/// destination.
const SLOTS: &[Slot] = &[Slot::Uniform, Slot::Read, Slot::Write];

/// Dims a kernel's uniform holds; plans with more are split along their outer dims.
pub const MAX_DIMS: usize = 8;

uniform! {
    /// The uniform every copy kernel reads (`Plan` in shaders/preludes/plan.wgsl).
    #[derive(Debug)]
    pub(crate) struct PlanUniform {
        sizes: [u32; MAX_DIMS],
        dst_strides: [i32; MAX_DIMS],
        src_strides: [i32; MAX_DIMS],
        rank: u32,
        dst_offset: u32,
        src_offset: u32,
        inner_chunks: u32,
        threads: u32,
        grid_row: u32,
        aux: u32,
        aux2: u32,
    }
}

/// Which kernel variant moves a plan, and how it is shaped. Tests and benchmarks can force one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CopyPath {
    /// The path the plan's class selects.
    Auto,
    /// `copy_buffer_to_buffer` (dense, same type, 4-byte aligned).
    BufferCopy,
    /// `copy_vec4.wgsl` with the given workgroup size and words per invocation.
    Vec4 {
        /// Workgroup size.
        wg: u32,
        /// vec4 words per invocation.
        wpt: u32,
    },
    /// `transpose_block.wgsl` (batched transposes of 4-byte elements): workgroup size, block
    /// edge, and which neighbouring blocks neighbouring invocations take (0: along the
    /// destination's contiguous dim, 1: along the source's).
    Transpose {
        /// Workgroup size.
        wg: u32,
        /// Block edge (elements).
        tile: u32,
        /// Block order.
        order: u32,
    },
    /// `transpose_vec4.wgsl`: like `Transpose`, with vec4 loads and stores; needs dims 0 and 1,
    /// the strides and the offsets aligned to 4 elements. `tile` is a multiple of 4.
    TransposeVec4 {
        /// Workgroup size.
        wg: u32,
        /// Block edge (elements, a multiple of 4).
        tile: u32,
        /// Block order.
        order: u32,
    },
    /// `transpose_narrow.wgsl`: a batched transpose of 4-byte elements in which one transposed
    /// dim has 2 or 3 elements (NHWC <-> NCHW with 3 channels), packed on its side, with the
    /// other dim, the narrow side's row strides and both offsets multiples of 4.
    TransposeNarrow {
        /// Workgroup size.
        wg: u32,
    },
    /// `transpose_tile.wgsl` (batched transposes of 1-, 2- or 4-byte elements of one type):
    /// one `tile` x `tile` block per workgroup through padded workgroup memory. `tile` <= 32
    /// and `wg` a multiple of `tile`.
    TransposeTile {
        /// Workgroup size.
        wg: u32,
        /// Block edge (elements).
        tile: u32,
    },
    /// `transpose_cast.wgsl`: a batched transpose that converts between two element types,
    /// one 4 x 4 block per invocation, its destination runs written as whole words: the
    /// destination-contiguous dim, the destination's offset and its other strides must be
    /// multiples of the elements in a word (2 for 2-byte, 4 for 1-byte elements;
    /// `transpose_cast_plan`).
    TransposeCast {
        /// Workgroup size.
        wg: u32,
    },
    /// `strided_rows.wgsl` (4-byte elements of one type, rows contiguous in the destination
    /// and strided in the source): workgroup size and rows per invocation. Needs plan dim 0
    /// of destination stride 1, its size, the other destination strides and the destination
    /// offset multiples of 4.
    StridedRows {
        /// Workgroup size.
        wg: u32,
        /// Rows (along plan dim 1) each invocation moves one vec4 word of.
        rows: u32,
    },
    /// `copy_rows_vec4.wgsl`: rows of whole 16-byte aligned vec4 words, contiguous in the
    /// destination and contiguous or stepped by 2 elements (a slice `::2`) in the source, with
    /// the workgroup size and rows per invocation. The automatic choice for contiguous rows
    /// under `SHORT_ROW_WORDS` words, where `Vec4`'s runs of `wg * wpt` words would leave most
    /// invocations idle, and for slices `::2` of 2- and 1-byte elements.
    Vec4Rows {
        /// Workgroup size.
        wg: u32,
        /// Rows (along plan dim 1) each invocation moves one vec4 word of.
        rows: u32,
    },
    /// `gather.wgsl` with the given workgroup size and elements per invocation.
    Gather {
        /// Workgroup size.
        wg: u32,
        /// Elements of dim 0 per invocation.
        ept: u32,
    },
}

impl CopyPath {
    /// The path's workgroup size and per-invocation counts, by name: each must be positive.
    fn counts(self) -> Vec<(&'static str, u32)> {
        match self {
            CopyPath::Auto | CopyPath::BufferCopy => vec![],
            CopyPath::Vec4 { wg, wpt } => vec![("wg", wg), ("wpt", wpt)],
            CopyPath::Transpose { wg, tile, .. } | CopyPath::TransposeVec4 { wg, tile, .. } | CopyPath::TransposeTile { wg, tile } => vec![("wg", wg), ("tile", tile)],
            CopyPath::TransposeNarrow { wg } | CopyPath::TransposeCast { wg } => vec![("wg", wg)],
            CopyPath::StridedRows { wg, rows } | CopyPath::Vec4Rows { wg, rows } => vec![("wg", wg), ("rows", rows)],
            CopyPath::Gather { wg, ept } => vec![("wg", wg), ("ept", ept)],
        }
    }

    /// An error naming the first count that is zero, or the Vec4 workgroup's words when they
    /// overflow u32 (a forced path; a loaded tuning file holds only the tuner's candidates).
    pub(crate) fn check_counts(self) -> Result<()> {
        if let Some((name, _)) = self.counts().into_iter().find(|&(_, v)| v == 0) {
            return Err(Error::invalid("copy_", format!("{self:?}: {name} must be positive")));
        }
        if let CopyPath::Vec4 { wg, wpt } = self {
            wg.checked_mul(wpt).ok_or_else(|| Error::overflow("copy_", format!("{self:?}: {wg} x {wpt} words per workgroup")))?;
        }
        Ok(())
    }
}

/// Default shapes of the kernels (see the `bench` subcommand for how they were chosen).
pub(crate) const GATHER_DEFAULT: CopyPath = CopyPath::Gather { wg: 256, ept: 16 };

/// The vec4 copy kernel's shape on an adapter of `device_type`: on GPUs, workgroups of 256
/// invocations moving 4 words each; on CPU adapters (lavapipe, llvmpipe, WARP), where each
/// invocation's fixed cost dominates, workgroups of 8 (one SIMD batch) moving 32 words each,
/// about 10% faster on lavapipe (`bench` lists both as `copy_kernel_vec4` rows).
pub fn vec4_default(device_type: wgpu::DeviceType) -> CopyPath {
    if device_type == wgpu::DeviceType::Cpu {
        CopyPath::Vec4 { wg: 8, wpt: 32 }
    } else {
        CopyPath::Vec4 { wg: 256, wpt: 4 }
    }
}
/// The automatic choice for a converting batched transpose that [`transpose_cast_plan`] admits.
pub(crate) const TRANSPOSE_CAST_DEFAULT: CopyPath = CopyPath::TransposeCast { wg: TRANSPOSE_CAST_WG };
const TRANSPOSE_CAST_WG: u32 = 64;

/// Whether the automatic choice runs `dst.copy_(src)` as the elementwise `to` rather than a
/// copy kernel: every converting copy but a converting batched transpose between two buffers
/// (`same_storage`: the operands share one).
pub(crate) fn converts_as_elementwise(plan: &CopyPlan, dst: DType, src: DType, same_storage: bool) -> bool {
    dst != src && (same_storage || transpose_cast_plan(plan, dst, src).is_none())
}

/// The plan `transpose_cast.wgsl` runs for a copy from `src` into `dst` elements (in transpose
/// order), or `None` when it cannot: the plan must be a batched transpose between two types
/// whose destination-contiguous dim, destination offset and other destination strides are
/// multiples of the elements in a word (1 for 4-byte, 2 for 2-byte, 4 for 1-byte elements),
/// so that the kernel's runs of destination elements fill whole words.
pub(crate) fn transpose_cast_plan(plan: &CopyPlan, dst: DType, src: DType) -> Option<CopyPlan> {
    let CopyKind::BatchedTranspose { dim } = plan.kind() else { return None };
    if dst == src {
        return None;
    }
    let p = plan.transpose_order(dim);
    let per_word = 4 / dst.size();
    let whole = |x: isize| x.rem_euclid(per_word as isize) == 0;
    let words = p.sizes()[0].is_multiple_of(per_word) && p.dst_offset().is_multiple_of(per_word) && p.dst_strides()[1..].iter().all(|&s| whole(s));
    words.then_some(p)
}

/// Rows of fewer vec4 words than this go through `copy_rows_vec4.wgsl` rather than
/// `copy_vec4.wgsl` (whose workgroups move runs of `wg * wpt` words: 1024 on GPUs, 256 on CPU
/// adapters).
pub(crate) const SHORT_ROW_WORDS: usize = 256;

/// Words of `unit` elements in a row of `n0` elements, padded to a multiple of 8: the word
/// columns of one row (plan.wgsl's `word_column`).
fn padded_words(n0: u64, unit: u64) -> u64 {
    (n0 / unit.max(1)).div_ceil(8) * 8
}

/// Rows per invocation for a word-column kernel over a plan whose words are `unit` elements
/// of dim 0: as many as leave about 4096 invocations on a CPU adapter (16 workgroups of 256,
/// enough to keep every core busy) and 2^18 on a GPU (an H200 holds 270,336 resident
/// invocations; at 4096 a `cat` of two [8, 64, 56, 56] channels-last tensors ran at 0.36 of a
/// copy there), between 1 and 32.
fn column_rows(r: &AdapterReport, plan: &CopyPlan, unit: u64) -> u32 {
    let n0 = plan.sizes()[0].max(1) as u64;
    let invocations: u64 = if r.device_type == wgpu::DeviceType::Cpu { 4096 } else { 1 << 18 };
    (padded_words(n0, unit) * (plan.numel() as u64 / n0) / invocations).clamp(1, 32) as u32
}

/// The word plan and `STEP` constant of `copy_rows_vec4.wgsl` for a plan of `esize`-byte
/// elements of one type: rows of whole 16-byte words contiguous in both operands (step 1), or
/// taking every other source element (step 2, a slice `::2`).
pub(crate) fn vec4_rows_plan(plan: &CopyPlan, esize: usize) -> Option<(CopyPlan, u32)> {
    let unit = 16 / esize;
    plan.in_words(unit, 1).map(|w| (w, 1)).or_else(|| plan.in_words(unit, 2).map(|w| (w, 2)))
}

/// The `STEP` constant of `strided_rows.wgsl` for a plan of `esize`-byte elements, when that
/// kernel can move it: 0 for broadcast rows, -1 for any other source stride.
pub(crate) fn strided_rows_step(plan: &CopyPlan, esize: usize) -> Option<i64> {
    let CopyKind::StridedRows { step } = plan.kind() else { return None };
    let whole = |x: isize| x.rem_euclid(4) == 0;
    let ok = esize == 4 && plan.sizes()[0].is_multiple_of(4) && plan.dst_offset().is_multiple_of(4) && plan.dst_strides()[1..].iter().all(|&s| whole(s));
    ok.then_some(if step == 0 { 0 } else { -1 })
}

/// Bytes per plan element in each operand, and how many consecutive source elements a kernel
/// reads from each source index of the plan (`copy_rows_vec4.wgsl` with STEP 2 reads two
/// words), which the source binding must cover.
#[derive(Clone, Copy)]
pub(crate) struct Units {
    dst: usize,
    src: usize,
    src_run: usize,
}

impl Units {
    fn of(dst: usize, src: usize) -> Units {
        Units { dst, src, src_run: 1 }
    }
}

/// The plan of a batched transpose with the source-contiguous dim moved to position 1, when
/// the vec4 transpose kernel can move it: with U = 16 / element size elements per vec4 word,
/// the sizes of dims 0 and 1, every other stride and both offsets are multiples of U, and one
/// matrix fits a binding (`binds_one_block`).
fn transpose_vec4_plan(r: &AdapterReport, plan: &CopyPlan, esize: usize) -> Option<CopyPlan> {
    let CopyKind::BatchedTranspose { dim } = plan.kind() else { return None };
    let p = plan.transpose_order(dim);
    let u = 16 / esize;
    let whole = |x: isize| x.rem_euclid(u as isize) == 0;
    let ok = p.sizes()[0].is_multiple_of(u)
        && p.sizes()[1].is_multiple_of(u)
        && p.dst_offset().is_multiple_of(u)
        && p.src_offset().is_multiple_of(u)
        && p.dst_strides()[1..].iter().all(|&s| whole(s))
        && whole(p.src_strides()[0])
        && p.src_strides()[2..].iter().all(|&s| whole(s));
    ok.then_some(p).filter(|p| binds_one_block(r, p, esize))
}

/// The plan of a batched transpose with the source-contiguous dim moved to position 1, and the
/// `NARROW` and `C` constants of `transpose_narrow.wgsl`, when that kernel can move it: 4-byte
/// elements; dim 1 (NARROW 1) or dim 0 (NARROW 0) of 2 or 3 elements, packed on the side where
/// it is contiguous (its neighbour's stride there equals its size); the other dim, the strides
/// of the narrow dim's rows on the other side, every batch stride and both offsets multiples
/// of 4; and one matrix fits a binding (`binds_one_block`).
fn transpose_narrow_plan(r: &AdapterReport, plan: &CopyPlan, esize: usize) -> Option<(CopyPlan, u32, u32)> {
    let CopyKind::BatchedTranspose { dim } = plan.kind() else { return None };
    let p = plan.transpose_order(dim);
    let (m, n) = (p.sizes()[0], p.sizes()[1]);
    let four = |x: isize| x.rem_euclid(4) == 0;
    let narrow = |k: usize| (2..=3).contains(&k);
    let aligned = p.dst_offset().is_multiple_of(4) && p.src_offset().is_multiple_of(4) && p.dst_strides()[2..].iter().chain(&p.src_strides()[2..]).all(|&s| four(s));
    let (side, c) = if narrow(n) && m.is_multiple_of(4) && p.src_strides()[0] == n as isize && four(p.dst_strides()[1]) {
        (1, n)
    } else if narrow(m) && n.is_multiple_of(4) && p.dst_strides()[1] == m as isize && four(p.src_strides()[0]) {
        (0, m)
    } else {
        return None;
    };
    (esize == 4 && aligned && binds_one_block(r, &p, esize)).then_some((p, side, c as u32))
}

/// Whether one matrix (plan dims 0 and 1) of a transposed plan fits a binding in each
/// operand, so that splitting the plan for the binding limit only splits batch dims: the
/// vec4 and narrow transpose kernels rely on the sizes and alignment of dims 0 and 1.
fn binds_one_block(r: &AdapterReport, p: &CopyPlan, esize: usize) -> bool {
    p.rank() >= 2 && binds_block(r, p, esize, &p.sizes()[..2])
}

/// Whether a block of `sizes` along the plan's inner dims (a piece no cut may shrink) fits a
/// binding in each operand, with room for the window's alignment.
fn binds_block(r: &AdapterReport, p: &CopyPlan, esize: usize, sizes: &[usize]) -> bool {
    let slack = 2 * (r.min_storage_buffer_offset_alignment as u128).max(16);
    let max_bind = r.max_storage_buffer_binding_size.min(u32::MAX as u64 + 1) as u128;
    let extent = |s: &[isize]| sizes.iter().zip(s).map(|(&n, &st)| (n.max(1) as u128 - 1) * st.unsigned_abs() as u128).sum::<u128>() + 1;
    p.rank() >= sizes.len() && [p.dst_strides(), p.src_strides()].iter().all(|s| extent(s) * esize as u128 + slack <= max_bind)
}

/// Blocks per invocation of the narrow transpose on CPU adapters.
const NARROW_GROUP: u32 = 4;

/// How a kernel's invocations cover a plan piece.
#[derive(Clone, Copy)]
pub(crate) enum Grid {
    /// Each invocation moves `per` consecutive elements of dim 0.
    Runs { per: u32 },
    /// Each workgroup moves `per` consecutive elements of dim 0.
    WorkgroupRuns { per: u32 },
    /// Each invocation moves a `tile` x `tile` block of dims 0 and 1.
    Blocks { tile: u32 },
    /// Each invocation moves `group` consecutive `tile` x `tile` blocks (a divisor of the
    /// blocks of one matrix).
    BlockGroups { tile: u32, group: u32 },
    /// Each workgroup moves a `tile` x `tile` block of dims 0 and 1.
    WorkgroupBlocks { tile: u32 },
    /// Each invocation moves one word of `unit` elements of dim 0 in `rows` consecutive rows
    /// along dim 1; the words of a row are padded to a multiple of 8, so that 8 neighbouring
    /// invocations share a row (plan.wgsl's `word_column`).
    WordColumns { rows: u32, unit: u32 },
}

/// What a grid gives one piece: the plan uniform's `threads`, `inner_chunks`, `aux` and `aux2`.
#[derive(Clone, Copy)]
struct Cover {
    /// Invocations with work.
    threads: u64,
    /// Chunks along dim 0.
    inner_chunks: u64,
    /// Chunks along dim 1.
    aux: u64,
    /// Rows per invocation (word columns), else 0.
    aux2: u32,
}

impl Cover {
    /// Workgroups along x and y: the linear count spread over rows of at most `max_groups`.
    fn groups(self, wg: u32, max_groups: u64) -> (u64, u64) {
        let groups = self.threads.div_ceil(wg as u64);
        let gx = groups.min(max_groups);
        (gx, groups.div_ceil(gx.max(1)))
    }
}

impl Grid {
    /// How the grid covers a piece.
    fn of(self, p: &CopyPlan, wg: u32) -> Cover {
        let n0 = p.sizes().first().copied().unwrap_or(1).max(1) as u64;
        let n1 = p.sizes().get(1).copied().unwrap_or(1).max(1) as u64;
        let numel = p.numel() as u64;
        let cover = |threads, inner_chunks, aux| Cover { threads, inner_chunks, aux, aux2: 0 };
        match self {
            Grid::Runs { per } => cover(numel / n0 * n0.div_ceil(per as u64), n0.div_ceil(per as u64), 0),
            Grid::WorkgroupRuns { per } => cover(numel / n0 * n0.div_ceil(per as u64) * wg as u64, n0.div_ceil(per as u64), 0),
            Grid::Blocks { tile } => {
                let (bm, bn) = (n0.div_ceil(tile as u64), n1.div_ceil(tile as u64));
                cover(numel / (n0 * n1) * bm * bn, bm, bn)
            }
            Grid::BlockGroups { tile, group } => {
                let c = Grid::Blocks { tile }.of(p, wg);
                Cover { threads: c.threads / group as u64, ..c }
            }
            Grid::WorkgroupBlocks { tile } => {
                let c = Grid::Blocks { tile }.of(p, wg);
                Cover { threads: c.threads * wg as u64, ..c }
            }
            Grid::WordColumns { rows, unit } => {
                let padded = padded_words(n0, unit as u64);
                let blocks = n1.div_ceil(rows.max(1) as u64);
                Cover { aux2: rows, ..cover(numel / (n0 * n1) * blocks * padded, padded, blocks) }
            }
        }
    }
}

/// The shape class of a batched transpose, under which the tuner keeps its kernel choice: the
/// element size, whether the vec4 and narrow kernels apply, and the magnitudes of the two
/// transposed dims and of the batch.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ShapeClass {
    /// Bytes per element.
    pub element_bytes: usize,
    /// Whether the vec4 transpose kernel applies.
    pub vec4: bool,
    /// Whether the narrow transpose kernel (a transposed dim of 2 or 3) applies.
    pub narrow: bool,
    /// floor(log2) of the destination-contiguous dim, the source-contiguous dim, the batch.
    pub log2: [u32; 3],
}

/// The batched transpose as a tuned family: shape classes [`ShapeClass`], choices [`CopyPath`].
pub(crate) struct Transpose;

impl crate::tune::Family for Transpose {
    const NAME: &'static str = "copy.transpose";
    type Class = ShapeClass;
    type Choice = CopyPath;
    fn candidates(class: &ShapeClass) -> Vec<CopyPath> {
        transpose_candidates(class)
    }
}

/// The shape class of `plan` when it is a batched transpose of one type.
pub(crate) fn transpose_class(r: &AdapterReport, plan: &CopyPlan, dst: DType, src: DType) -> Option<ShapeClass> {
    let CopyKind::BatchedTranspose { dim } = plan.kind() else { return None };
    if dst != src {
        return None;
    }
    let es = dst.size();
    let (m, n) = (plan.sizes()[0], plan.sizes()[dim]);
    let batch = plan.numel() / (m * n).max(1);
    let log2 = |x: usize| usize::BITS - 1 - x.max(1).leading_zeros();
    Some(ShapeClass {
        element_bytes: es,
        vec4: transpose_vec4_plan(r, plan, es).is_some(),
        narrow: transpose_narrow_plan(r, plan, es).is_some(),
        log2: [log2(m), log2(n), log2(batch)],
    })
}

/// The transpose kernels the tuner measures for a class.
pub(crate) fn transpose_candidates(c: &ShapeClass) -> Vec<CopyPath> {
    let mut v = Vec::new();
    if c.narrow {
        for wg in [64, 256] {
            v.push(CopyPath::TransposeNarrow { wg });
        }
    }
    if c.vec4 {
        // Block edges that are whole vec4 words of U = 16 / element_bytes elements; 32 for
        // sub-word elements (a block row then spans a whole 64-byte line of the source).
        for tile in [32, 16, 8] {
            if tile % (16 / c.element_bytes as u32) == 0 && (tile < 32 || c.element_bytes < 4) {
                for wg in [64, 256] {
                    v.push(CopyPath::TransposeVec4 { wg, tile, order: 0 });
                }
            }
        }
    }
    if c.element_bytes == 4 {
        v.push(CopyPath::Transpose { wg: 64, tile: 8, order: 0 });
    }
    v.push(CopyPath::TransposeTile { wg: 256, tile: 32 });
    v.push(CopyPath::TransposeTile { wg: 64, tile: 16 });
    v.push(GATHER_DEFAULT);
    v
}

/// The transpose kernel used before (or without) tuning.
///
/// On a CPU adapter, where barriers are dear, the register-blocked kernels: 32 x 32 blocks of
/// 2-byte elements (NCHW -> NHWC of [32, 256, 56, 56] f16 on lavapipe 0.75 -> 0.87 of the copy
/// kernel against 16 x 16), 16 x 16 blocks of 4-byte elements in workgroups of 256, the tuner's
/// pick for every f32 class in the bench's runs (NCHW -> NHWC of [8, 64, 56, 56] by default
/// 0.77-1.02 of the copy kernel in five runs with workgroups of 64, 0.99 and 1.02 in two
/// alternating runs with 256, the larger rows alike).
///
/// On a GPU the workgroup-memory tile, which coalesces both sides, but for 2-byte elements in
/// whole words the vec4 kernel (an H200 moved NCHW -> NHWC of [32, 256, 56, 56] f16 in 0.125
/// ms through the tile, 0.039-0.041 ms through it, the tuner's pick in three runs).
pub(crate) fn transpose_default(r: &AdapterReport, c: &ShapeClass) -> CopyPath {
    match (r.device_type == wgpu::DeviceType::Cpu, c) {
        (_, c) if c.narrow => CopyPath::TransposeNarrow { wg: 64 },
        (true, c) if c.vec4 && c.element_bytes == 2 => CopyPath::TransposeVec4 { wg: 64, tile: 32, order: 0 },
        (true, c) if c.vec4 => CopyPath::TransposeVec4 { wg: 256, tile: 16, order: 0 },
        (false, c) if c.vec4 && c.element_bytes == 2 => CopyPath::TransposeVec4 { wg: 256, tile: 8, order: 0 },
        (true, c) if c.element_bytes == 4 => CopyPath::Transpose { wg: 64, tile: 8, order: 0 },
        _ => CopyPath::TransposeTile { wg: 256, tile: 32 },
    }
}

/// The path the plan's class selects; `transpose` gives the kernel of a batched transpose
/// (tuned, or [`transpose_default`]); `buffer_copy` says whether the buffers' usages allow
/// `copy_buffer_to_buffer` (COPY_SRC on the source, COPY_DST on the destination). `None` for an
/// empty plan.
pub(crate) fn auto_path(r: &AdapterReport, plan: &CopyPlan, dst: DType, src: DType, buffer_copy: bool, transpose: impl FnOnce(&ShapeClass) -> CopyPath) -> Option<CopyPath> {
    let (de, se) = (dst.size(), src.size());
    let same_type = dst == src;
    Some(match plan.kind() {
        CopyKind::Empty => return None,
        // A buffer copy on CPU adapters (lavapipe: several times the vec4 kernel's speed), and
        // on GPUs where the vec4 kernel does not apply: NVIDIA's H200 copied 64 MiB at 818 GB/s
        // by `copy_buffer_to_buffer` and at 3064 GB/s by the vec4 kernel (BENCHMARKS.md).
        CopyKind::Dense
            if buffer_copy
                && same_type
                && (plan.dst_offset() * de).is_multiple_of(4)
                && (plan.src_offset() * se).is_multiple_of(4)
                && (plan.numel() * de).is_multiple_of(4)
                && (r.device_type == wgpu::DeviceType::Cpu || plan.in_words(16 / de, 1).is_none()) =>
        {
            CopyPath::BufferCopy
        }
        CopyKind::Dense | CopyKind::InnerContiguous if same_type => match plan.in_words(16 / de, 1) {
            Some(w) if w.sizes()[0] < SHORT_ROW_WORDS => CopyPath::Vec4Rows { wg: 256, rows: column_rows(r, &w, 1) },
            Some(_) => vec4_default(r.device_type),
            None => GATHER_DEFAULT,
        },
        CopyKind::BatchedTranspose { .. } if !same_type && transpose_cast_plan(plan, dst, src).is_some() => TRANSPOSE_CAST_DEFAULT,
        CopyKind::BatchedTranspose { .. } if same_type => match transpose_class(r, plan, dst, src) {
            Some(c) => transpose(&c),
            None => GATHER_DEFAULT,
        },
        // 4-byte elements through strided_rows.wgsl (on lavapipe, as fast as the vec4 pairs of
        // a stepped word plan); 2- and 1-byte elements of a slice ::2 through vec4 words
        // (several times faster there than gathering them one by one).
        CopyKind::StridedRows { .. } if same_type => match (strided_rows_step(plan, de), vec4_rows_plan(plan, de)) {
            (Some(_), _) if binds_block(r, plan, de, &[4]) => CopyPath::StridedRows { wg: 256, rows: column_rows(r, plan, 4) },
            (None, Some((w, _))) => CopyPath::Vec4Rows { wg: 256, rows: column_rows(r, &w, 1) },
            _ => GATHER_DEFAULT,
        },
        _ => GATHER_DEFAULT,
    })
}

/// A path that applies to a plan, ready to record.
pub(crate) enum Prepared {
    /// Nothing to move.
    Nothing,
    /// `copy_buffer_to_buffer`: (destination, source, length) in bytes.
    Buffer(u64, u64, u64),
    /// A kernel over the plan as it reads it (in words, transposed order, ...).
    Kernel { plan: CopyPlan, key: PipelineKey, units: Units, wg: u32, grid: Grid, cuts: Cuts },
}

/// Whether `path` can move `plan` from `src` into `dst`, and how: the one eligibility check of
/// every path (its error says what the path needs). `path` is not `Auto`.
pub(crate) fn prepare(r: &AdapterReport, plan: &CopyPlan, dst: DType, src: DType, path: CopyPath) -> Result<Prepared> {
    const OP: &str = "copy_";
    let (de, se) = (dst.size(), src.size());
    let same_type = dst == src;
    path.check_counts()?;
    if plan.numel() == 0 && path != CopyPath::Auto {
        return Ok(Prepared::Nothing);
    }
    let kernel = |plan: CopyPlan, shader: &'static str, constants: Vec<(&'static str, i64)>, units: Units, wg: u32, grid: Grid, cuts: Cuts| {
        Ok(Prepared::Kernel { plan, key: PipelineKey { shader, constants }, units, wg, grid, cuts })
    };
    match path {
        CopyPath::Auto => Err(Error::invalid(OP, "no kernel path was resolved for the plan")),
        CopyPath::BufferCopy => {
            if !same_type || plan.kind() != CopyKind::Dense {
                return Err(Error::unsupported(OP, format!("a buffer copy needs a dense plan of one type, got {:?} from {src} to {dst}", plan.kind())));
            }
            let (d, s, n) = ((plan.dst_offset() * de) as u64, (plan.src_offset() * se) as u64, (plan.numel() * de) as u64);
            if d % 4 != 0 || s % 4 != 0 || n % 4 != 0 {
                return Err(Error::unsupported(OP, format!("a buffer copy needs 4-byte aligned offsets and size, got dst {d}, src {s}, size {n} bytes")));
            }
            Ok(Prepared::Buffer(d, s, n))
        }
        CopyPath::Vec4 { wg, wpt } => {
            let words = if same_type { plan.in_words(16 / de, 1) } else { None }
                .ok_or_else(|| Error::unsupported(OP, format!("the vec4 kernel needs 16-byte aligned contiguous rows of one type; plan {plan:?}")))?;
            // No overflow: `check_counts` above.
            let per = wg * wpt;
            kernel(words, "copy_vec4", vec![("WG", wg as i64), ("WPT", wpt as i64)], Units::of(16, 16), wg, Grid::WorkgroupRuns { per }, Cuts::ANY)
        }
        CopyPath::Vec4Rows { wg, rows } => {
            let (words, step) = if same_type { vec4_rows_plan(plan, de) } else { None }.ok_or_else(|| {
                Error::unsupported(
                    OP,
                    format!("the vec4 rows kernel needs rows of one type, 16-byte aligned, contiguous in the destination and contiguous or stepped by 2 in the source; plan {plan:?}, rows {rows}"),
                )
            })?;
            let units = Units { src_run: step as usize, ..Units::of(16, 16) };
            kernel(words, "copy_rows_vec4", vec![("WG", wg as i64), ("STEP", step as i64), ("EB", de as i64)], units, wg, Grid::WordColumns { rows, unit: 1 }, Cuts::ANY)
        }
        CopyPath::Transpose { wg, tile, order } => {
            let CopyKind::BatchedTranspose { dim } = plan.kind() else {
                return Err(Error::unsupported(OP, format!("the transpose kernel needs a batched-transpose plan, got {:?}", plan.kind())));
            };
            if !same_type || de != 4 {
                return Err(Error::unsupported(OP, format!("the transpose kernel moves 4-byte elements of one type, got {src} to {dst}")));
            }
            kernel(plan.transpose_order(dim), "transpose_block", vec![("WG", wg as i64), ("TILE", tile as i64), ("ORDER", order as i64)], Units::of(de, se), wg, Grid::Blocks { tile }, Cuts::ANY)
        }
        CopyPath::TransposeVec4 { wg, tile, order } => {
            let u = 16 / de as u32;
            let p = if same_type { transpose_vec4_plan(r, plan, de) } else { None }.filter(|_| tile % u == 0).ok_or_else(|| {
                Error::unsupported(OP, format!("the vec4 transpose kernel needs a batched transpose of one type aligned to {u} elements, one matrix of which fits a binding, and a tile that is a multiple of {u}; plan {plan:?}, tile {tile}"))
            })?;
            let constants = vec![("WG", wg as i64), ("TILE", tile as i64), ("ORDER", order as i64), ("EB", de as i64)];
            kernel(p, "transpose_vec4", constants, Units::of(de, se), wg, Grid::Blocks { tile }, Cuts { keep: 2, ..Cuts::ANY })
        }
        CopyPath::TransposeNarrow { wg } => {
            let (p, side, c) = if same_type { transpose_narrow_plan(r, plan, de) } else { None }.ok_or_else(|| {
                Error::unsupported(OP, format!("the narrow transpose kernel needs a batched transpose of 4-byte elements of one type, with one transposed dim of 2 or 3 packed elements, the rest aligned to 4, and one matrix fitting a binding; plan {plan:?}, {src} to {dst}"))
            })?;
            // Blocks per invocation: 4 on CPU adapters where they divide a matrix's blocks (the
            // block arithmetic, divisions, paid once for them), else 1.
            let blocks = (p.sizes()[0].div_ceil(4) * p.sizes()[1].div_ceil(4)) as u64;
            let group = if r.device_type == wgpu::DeviceType::Cpu && blocks.is_multiple_of(NARROW_GROUP as u64) { NARROW_GROUP } else { 1 };
            let constants = vec![("WG", wg as i64), ("TILE", 4), ("ORDER", 0), ("C", c as i64), ("NARROW", side as i64), ("BLOCKS", group as i64)];
            kernel(p, "transpose_narrow", constants, Units::of(de, se), wg, Grid::BlockGroups { tile: 4, group }, Cuts { keep: 2, ..Cuts::ANY })
        }
        CopyPath::TransposeTile { wg, tile } => {
            let CopyKind::BatchedTranspose { dim } = plan.kind() else {
                return Err(Error::unsupported(OP, format!("the tiled transpose kernel needs a batched-transpose plan, got {:?}", plan.kind())));
            };
            if tile > 32 || wg % tile != 0 {
                return Err(Error::invalid(OP, format!("the tiled transpose needs a tile <= 32 dividing wg; got tile {tile}, wg {wg}")));
            }
            if !same_type {
                return Err(Error::unsupported(OP, format!("the tiled transpose moves elements of one type; got {src} to {dst}")));
            }
            let constants = vec![("WG", wg as i64), ("TILE", tile as i64), ("SRC_BYTES", de as i64), ("DST_BYTES", de as i64)];
            kernel(plan.transpose_order(dim), "transpose_tile", constants, Units::of(de, se), wg, Grid::WorkgroupBlocks { tile }, Cuts::ANY)
        }
        CopyPath::TransposeCast { wg } => {
            let p = transpose_cast_plan(plan, dst, src).ok_or_else(|| {
                Error::unsupported(OP, format!("the converting transpose kernel needs a batched transpose between two types and, for 1- or 2-byte destination elements, the destination-contiguous dim, the destination's offset and its other strides multiples of 4 elements; plan {plan:?}, {src} to {dst}"))
            })?;
            let constants = vec![("WG", wg as i64), ("TILE", 4), ("SRC_TYPE", src.code() as i64), ("DST_TYPE", dst.code() as i64)];
            // Dim 0 is cut at multiples of 4 only, so that every piece's runs stay whole words.
            kernel(p, "transpose_cast", constants, Units::of(de, se), wg, Grid::Blocks { tile: 4 }, Cuts { grain0: 4, ..Cuts::ANY })
        }
        CopyPath::StridedRows { wg, rows } => {
            let step = if same_type { strided_rows_step(plan, de) } else { None }.ok_or_else(|| {
                Error::unsupported(OP, format!("the strided-rows kernel needs 4-byte elements of one type, rows contiguous in the destination and 4-aligned there; plan {plan:?}, {src} to {dst}, rows {rows}"))
            })?;
            kernel(plan.clone(), "strided_rows", vec![("WG", wg as i64), ("STEP", step)], Units::of(de, se), wg, Grid::WordColumns { rows, unit: 4 }, Cuts { grain0: 4, ..Cuts::ANY })
        }
        CopyPath::Gather { wg, ept } => {
            // Element types by code (shaders/preludes/cast.wgsl converts between any two). Equal types move
            // bits untouched: both codes 0, so that they share one pipeline per element size.
            let (st, dt) = if same_type { (0, 0) } else { (src.code() as i64, dst.code() as i64) };
            let constants = vec![("WG", wg as i64), ("EPT", ept as i64), ("SRC_BYTES", se as i64), ("DST_BYTES", de as i64), ("SRC_TYPE", st), ("DST_TYPE", dt)];
            kernel(plan.clone(), "gather", constants, Units::of(de, se), wg, Grid::Runs { per: ept }, Cuts::ANY)
        }
    }
}

/// Records a prepared copy from buffer `src` into buffer `dst` into `enc`; its temporaries go to `keep`.
/// The caller has validated the copy and holds the operands until the work is done.
pub(crate) fn record(rt: &Runtime, rec: &mut Recorder, prepared: Prepared, dst: &wgpu::Buffer, src: &wgpu::Buffer) -> Result<()> {
    match prepared {
        Prepared::Nothing => Ok(()),
        Prepared::Buffer(d, s, n) => rt.scoped("copy_", || {
            rec.copy_buffer_to_buffer(src, s, dst, d, n);
            Ok(())
        }),
        Prepared::Kernel { plan, key, units, wg, grid, cuts } => rt.scoped("copy_", || dispatch_pieces(rt, rec, &plan, dst, src, units, key, wg, grid, cuts)),
    }
}

/// Splits `plan` into pieces whose bound windows, rank and index ranges fit, cutting only
/// where the kernel allows (`cuts`), and records one dispatch per piece, with invocations
/// laid out by `grid`.
#[allow(clippy::too_many_arguments)]
fn dispatch_pieces(rt: &Runtime, rec: &mut Recorder, plan: &CopyPlan, dst: &wgpu::Buffer, src: &wgpu::Buffer, units: Units, key: PipelineKey, wg: u32, grid: Grid, cuts: Cuts) -> Result<()> {
    const OP: &str = "copy_";
    let (de, se, run) = (units.dst, units.src, units.src_run.max(1) - 1);
    let r = &rt.report;
    let align = (r.min_storage_buffer_offset_alignment as u64).max(16);
    let max_bind = r.max_storage_buffer_binding_size.min(u32::MAX as u64 + 1);
    let max_groups = r.max_compute_workgroups_per_dimension as u64;
    let window = |lo: usize, hi: usize, esize: usize, buf_len: u64| -> (u64, u64) {
        let start = (lo * esize) as u64 / align * align;
        // Whole 16-byte words: kernels that read vec4 words may read the rest of the last.
        let end = (((hi + 1) * esize) as u64).div_ceil(16) * 16;
        (start, end.min(buf_len) - start)
    };
    // The bound (start, length) of a piece in each operand: (destination, source).
    let windows = |p: &CopyPlan| {
        // Empty plans never get here: `auto_path` gives no path and `prepare` nothing to record.
        let ((dlo, dhi), (slo, shi)) = p.spans().unwrap_or(((0, 0), (0, 0)));
        (window(dlo, dhi, de, dst.size()), window(slo, shi + run, se, src.size()))
    };
    let fits = |p: &CopyPlan| {
        let ((_, dlen), (_, slen)) = windows(p);
        let small = |s: &[isize]| s.iter().all(|&x| i32::try_from(x).is_ok());
        let cover = grid.of(p, wg);
        p.rank() <= MAX_DIMS
            && dlen <= max_bind
            && slen <= max_bind
            && p.numel() <= u32::MAX as usize
            && cover.threads <= u32::MAX as u64
            && cover.groups(wg, max_groups).1 <= max_groups
            && small(p.dst_strides())
            && small(p.src_strides())
    };
    let cuts = Cuts { max_rank: MAX_DIMS, ..cuts };
    let pieces = plan.pieces(cuts, fits).map_err(|p| {
        let ((_, dlen), (_, slen)) = windows(&p);
        Error::Limit { op: OP, what: format!("binding the smallest piece the {} kernel can move (plan {p:?})", key.shader), limit: "max_storage_buffer_binding_size", requested: dlen.max(slen), max: max_bind }
    })?;
    let mut dispatches = Vec::with_capacity(pieces.len());
    for p in pieces {
        let ((dstart, dlen), (sstart, slen)) = windows(&p);
        let cover = grid.of(&p, wg);
        let (gx, gy) = cover.groups(wg, max_groups);
        let mut u = PlanUniform::zeroed();
        u.sizes = [1; MAX_DIMS];
        for d in 0..p.rank() {
            u.sizes[d] = p.sizes()[d] as u32;
            u.dst_strides[d] = p.dst_strides()[d] as i32;
            u.src_strides[d] = p.src_strides()[d] as i32;
        }
        u.rank = p.rank() as u32;
        u.dst_offset = (p.dst_offset() - (dstart as usize / de)) as u32;
        u.src_offset = (p.src_offset() - (sstart as usize / se)) as u32;
        u.inner_chunks = cover.inner_chunks as u32;
        u.threads = cover.threads as u32;
        u.aux = cover.aux as u32;
        u.aux2 = cover.aux2;
        u.grid_row = (gx * wg as u64) as u32;
        dispatches.push(Dispatch { key: key.clone(), params: u, bindings: vec![(src, (sstart, slen)), (dst, (dstart, dlen))], grid: (gx as u32, gy as u32) });
    }
    dispatch::record(rt, rec, OP, SLOTS, &dispatches)
}

/// Copy pipelines for the register-budget test (the ones whose register use depends on their
/// constants): the converting transpose between every pair of types, at the automatic
/// choice's shape, the vec4 copy at its GPU shape, the vec4 transpose at every shape the
/// tuner measures on a GPU (the default for 2-byte elements there), and the narrow transpose
/// (one block per invocation on GPUs).
pub fn gpu_pipelines() -> Vec<PipelineSpec> {
    let mut out = vec![PipelineSpec { kernel: "copy_vec4", constants: vec![("WG", 256), ("WPT", 4)] }];
    for wg in [64, 256] {
        for (c, side) in [(2, 0), (2, 1), (3, 0), (3, 1)] {
            out.push(PipelineSpec { kernel: "transpose_narrow", constants: vec![("WG", wg), ("TILE", 4), ("ORDER", 0), ("C", c), ("NARROW", side), ("BLOCKS", 1)] });
        }
    }
    for eb in [1usize, 2, 4] {
        let class = ShapeClass { element_bytes: eb, vec4: true, narrow: false, log2: [8, 8, 0] };
        for path in transpose_candidates(&class) {
            if let CopyPath::TransposeVec4 { wg, tile, order } = path {
                out.push(PipelineSpec { kernel: "transpose_vec4", constants: vec![("WG", wg as i64), ("TILE", tile as i64), ("ORDER", order as i64), ("EB", eb as i64)] });
            }
        }
    }
    for src in DType::ALL {
        for dst in DType::ALL.into_iter().filter(|&d| d != src) {
            out.push(PipelineSpec { kernel: "transpose_cast", constants: vec![("WG", TRANSPOSE_CAST_WG as i64), ("TILE", 4), ("SRC_TYPE", src.code() as i64), ("DST_TYPE", dst.code() as i64)] });
        }
    }
    out
}
