//! The copy kernels' paths: [`CopyPath`] (which kernel variant moves a plan, and how it is
//! shaped), the defaults of the untuned paths, and the plan checks the paths and the
//! transpose class share (vec4 rows, strided rows, the vec4 and narrow transposes, what one
//! binding holds).

use serde::{Deserialize, Serialize};

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::plan::{CopyKind, CopyPlan};
use crate::runtime::AdapterReport;

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
    /// destination and contiguous in the source, or stepped by 2 elements there (a slice `::2`)
    /// for 2- and 1-byte elements, with
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

    /// The path's workgroup size (`None`: Auto and buffer copies).
    pub(crate) fn workgroup(self) -> Option<u32> {
        self.counts().into_iter().find(|&(name, _)| name == "wg").map(|(_, v)| v)
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
pub(super) const TRANSPOSE_CAST_WG: u32 = 64;

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
pub(super) fn padded_words(n0: u64, unit: u64) -> u64 {
    (n0 / unit.max(1)).div_ceil(8) * 8
}

/// Rows per invocation for a word-column kernel over a plan whose words are `unit` elements
/// of dim 0: as many as leave about 4096 invocations on a CPU adapter (16 workgroups of 256,
/// enough to keep every core busy) and 2^18 on a GPU (an H200 holds 270,336 resident
/// invocations; at 4096 a `cat` of two [8, 64, 56, 56] channels-last tensors ran at 0.36 of a
/// copy there), between 1 and 32.
pub(super) fn column_rows(r: &AdapterReport, plan: &CopyPlan, unit: u64) -> u32 {
    let n0 = plan.sizes()[0].max(1) as u64;
    let invocations: u64 = if r.device_type == wgpu::DeviceType::Cpu { 4096 } else { 1 << 18 };
    (padded_words(n0, unit) * (plan.numel() as u64 / n0) / invocations).clamp(1, 32) as u32
}

/// The word plan and `STEP` constant of `copy_rows_vec4.wgsl` for a plan of `esize`-byte
/// elements of one type: rows of whole 16-byte words contiguous in both operands (step 1), or
/// taking every other source element (step 2, a slice `::2`) of 2- and 1-byte elements. Not of
/// 4-byte ones (`strided_rows.wgsl` moves those): a row's last source word reaches one
/// element past the view's last, which the padding to 4 bytes covers for narrower elements
/// only (a caller's buffer ending at the view read a clamped word in its place).
pub(crate) fn vec4_rows_plan(plan: &CopyPlan, esize: usize) -> Option<(CopyPlan, u32)> {
    let unit = 16 / esize;
    plan.in_words(unit, 1).map(|w| (w, 1)).or_else(|| if esize < 4 { plan.in_words(unit, 2).map(|w| (w, 2)) } else { None })
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
    pub(super) dst: usize,
    pub(super) src: usize,
    pub(super) src_run: usize,
}

impl Units {
    pub(super) fn of(dst: usize, src: usize) -> Units {
        Units { dst, src, src_run: 1 }
    }
}

/// The plan of a batched transpose with the source-contiguous dim moved to position 1, when
/// the vec4 transpose kernel can move it: with U = 16 / element size elements per vec4 word,
/// the sizes of dims 0 and 1, every other stride and both offsets are multiples of U, and one
/// matrix fits a binding (`binds_one_block`).
pub(super) fn transpose_vec4_plan(r: &AdapterReport, plan: &CopyPlan, esize: usize) -> Option<CopyPlan> {
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
pub(super) fn transpose_narrow_plan(r: &AdapterReport, plan: &CopyPlan, esize: usize) -> Option<(CopyPlan, u32, u32)> {
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
pub(super) fn binds_one_block(r: &AdapterReport, p: &CopyPlan, esize: usize) -> bool {
    p.rank() >= 2 && binds_block(r, p, esize, &p.sizes()[..2])
}

/// Whether a block of `sizes` along the plan's inner dims (a piece no cut may shrink) fits a
/// binding in each operand, with room for the window's alignment.
pub(super) fn binds_block(r: &AdapterReport, p: &CopyPlan, esize: usize, sizes: &[usize]) -> bool {
    let slack = 2 * (r.min_storage_buffer_offset_alignment as u128).max(16);
    let max_bind = r.max_storage_buffer_binding_size.min(u32::MAX as u64 + 1) as u128;
    let extent = |s: &[isize]| sizes.iter().zip(s).map(|(&n, &st)| (n.max(1) as u128 - 1) * st.unsigned_abs() as u128).sum::<u128>() + 1;
    p.rank() >= sizes.len() && [p.dst_strides(), p.src_strides()].iter().all(|s| extent(s) * esize as u128 + slack <= max_bind)
}
