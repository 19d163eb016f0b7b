//! The batched transpose's tuning inputs: its shape class, the candidates the tuner compares,
//! the kernel it runs untuned, its `Family` impl, and the automatic choice of a copy's path
//! ([`auto_path`]), which asks for the transpose's kept or default kernel.

use serde::{Deserialize, Serialize};

use crate::dtype::DType;
use crate::plan::{CopyKind, CopyPlan};
use crate::runtime::AdapterReport;

use super::path::*;

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
    // No class of another element size exists (one read from a tuning file admits nothing).
    if !matches!(c.element_bytes, 1 | 2 | 4) {
        return v;
    }
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
