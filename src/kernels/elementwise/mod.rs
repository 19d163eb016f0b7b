//! The elementwise kernels: which one runs a resolved op ([`ElementwisePath`]; [`rows_eligible`]
//! is the one check of the rows kernel, used by the automatic choice and forced paths alike)
//! and recording it into an encoder: the plan is split into pieces whose bindings fit the
//! adapter, and each piece is one dispatch.

use bytemuck::Zeroable;
use serde::{Deserialize, Serialize};

use crate::dtype::DType;
use crate::elementwise::resolve::{Repr, Resolved, Slot as InSlot};
use crate::error::{Error, Result};
use crate::kernels::abi::uniform;
use crate::kernels::copy::MAX_DIMS;
use crate::kernels::dispatch::{self, Dispatch};
use crate::plan::{Cuts, IterPlan, MAX_OPERANDS};
use crate::runtime::record::Recorder;
use crate::runtime::{PipelineKey, Runtime, Slot};

const OP: &str = "elementwise";

/// The bindings of both kernels: the uniform, the output, three inputs.
const SLOTS: &[Slot] = &[Slot::Uniform, Slot::Write, Slot::Read, Slot::Read, Slot::Read];

/// Which elementwise kernel runs an op. Tests and benchmarks can force one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ElementwisePath {
    /// The rows kernel when [`rows_eligible`] holds (but on CPU adapters, rows under 32 quads
    /// with an input gathered along them), else the general one.
    Auto,
    /// The general kernel: any strides and types, `ept` elements of plan dim 0 per invocation
    /// (`elementwise.wgsl`, with `elementwise_out_words.wgsl` for outputs of 4-byte elements,
    /// with `elementwise_out_packed.wgsl` else).
    Gather {
        /// Workgroup size.
        wg: u32,
        /// Elements per invocation.
        ept: u32,
    },
    /// The rows kernels: quads of 4 elements along a dim contiguous in the output, each input
    /// read along it as quads, broadcast, transposed 4 x 4 blocks or element by element. On a plan of one dim, `ept` quads per
    /// invocation (`wg` quads apart: a workgroup takes a run of `wg * ept` quads;
    /// `elementwise_rows_runs.wgsl`); on plans of more dims, one quad column through `ept` rows
    /// per invocation (`elementwise_rows_columns.wgsl`, or `elementwise_rows_blocks.wgsl` with
    /// inputs transposed in registers).
    Rows {
        /// Workgroup size.
        wg: u32,
        /// Quads per invocation.
        ept: u32,
    },
    /// `elementwise_rows_runs.wgsl` on plans of any rank (same eligibility as `Rows`):
    /// each workgroup takes a run of `wg * ept` quads of one row, each invocation `ept` of
    /// them, `wg` apart. The shape for CPU adapters, where an invocation's fixed cost
    /// dominates: one SIMD batch (8) per workgroup, 32 quads per invocation.
    Runs {
        /// Workgroup size.
        wg: u32,
        /// Quads per invocation.
        ept: u32,
    },
}

/// Quads of a row each invocation of the rows kernel takes per row, in quad-column mode.
const QPR: u64 = 4;

/// The general kernel's shape on an adapter of `device_type`: 256 invocations of 8 elements
/// on GPUs; on CPU adapters 16 invocations of 32 elements, 8-10% faster on lavapipe
/// (`add_mixed_layouts` 14.4 against 15.6 ms, `image_pipeline` 28.4 against 31.6 ms).
pub fn gather_default(device_type: wgpu::DeviceType) -> ElementwisePath {
    if device_type == wgpu::DeviceType::Cpu {
        ElementwisePath::Gather { wg: 16, ept: 32 }
    } else {
        ElementwisePath::Gather { wg: 256, ept: 8 }
    }
}

/// The rows kernel's shape for an eligible `plan` on an adapter of `device_type`. On GPUs,
/// runs of 4 quads per invocation on a plan of one dim, and quad columns through 2 rows on
/// plans of more. On CPU adapters, runs of 32 quads per invocation in workgroups of 8 (about
/// 10-30% faster on lavapipe than the GPU shapes, broadcast rows most), unless the plan has 2
/// or more dims and its rows are shorter than 32 quads; then, with an input read as transposed blocks,
/// quad columns through 8 rows in workgroups of 64 (`add` of a channels-last and an NCHW
/// \[8,64,56,56\] on lavapipe: 2.8-3.0 ms, against 4.4-6.0 ms through the general kernel;
/// 8 / 16 / 64 / 256 invocations x 4 / 8 / 16 rows measured 2.8-3.6 ms).
pub fn rows_default(device_type: wgpu::DeviceType, plan: &IterPlan) -> ElementwisePath {
    let quads = plan.sizes().first().map_or(0, |&n| n / 4);
    let cpu = device_type == wgpu::DeviceType::Cpu;
    if cpu && (plan.rank() < 2 || quads >= 32) {
        ElementwisePath::Runs { wg: 8, ept: 32 }
    } else if cpu && (1..plan.operands()).any(|k| row_read(plan, k, true) == RowRead::Transposed) {
        TRANSPOSED_ROWS
    } else if plan.rank() >= 2 {
        ElementwisePath::Rows { wg: 256, ept: 2 }
    } else {
        ElementwisePath::Rows { wg: 256, ept: 4 }
    }
}

/// The general kernel's file for an output of `dtype`: `elementwise_words` (plain stores) for
/// 4-byte elements, else `elementwise` (sub-word stores through atomics).
fn gather_kernel(dtype: DType) -> &'static str {
    if dtype.size() == 4 {
        "elementwise_words"
    } else {
        "elementwise"
    }
}

/// How the rows kernel reads an input along plan dim 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RowRead {
    /// Contiguous, with its offset and every other stride multiples of 4: a quad is one
    /// piece of a vec4 word.
    Quad,
    /// Stride 0: one element per row.
    Broadcast,
    /// Contiguous along dim 1 instead, with its offset and every other stride multiples of 4
    /// and dim 1's size a multiple of 4 ([`transposable`]): 4 x 4 blocks transposed in
    /// registers (quad-column mode through groups of 4 rows only).
    Transposed,
    /// Any other stride: four element loads per quad.
    Gathered,
}

/// How the rows kernel reads plan operand `k` (an input) along dim 0; `blocks`: whether the
/// dispatch walks whole groups of 4 rows (quad-column mode, rows per invocation a multiple of 4).
fn row_read(plan: &IterPlan, k: usize, blocks: bool) -> RowRead {
    match plan.strides_of(k)[0] {
        0 => RowRead::Broadcast,
        1 if aligned_rows(plan, k) => RowRead::Quad,
        _ if blocks && transposable(plan, k) => RowRead::Transposed,
        _ => RowRead::Gathered,
    }
}

/// Whether operand `k` can be read as 4 x 4 blocks: contiguous along plan dim 1, whose size is
/// a multiple of 4, its offset and every other stride multiples of 4.
fn transposable(plan: &IterPlan, k: usize) -> bool {
    let s = plan.strides_of(k);
    plan.rank() >= 2 && s[1] == 1 && plan.sizes()[1].is_multiple_of(4) && plan.offset_of(k).is_multiple_of(4) && s.iter().enumerate().all(|(d, &x)| d == 1 || x.rem_euclid(4) == 0)
}

/// The rows kernel's quad-column shape on CPU adapters for plans with a transposed input.
const TRANSPOSED_ROWS: ElementwisePath = ElementwisePath::Rows { wg: 64, ept: 8 };

/// Whether operand `k`'s offset and strides other than dim 0's are multiples of 4.
fn aligned_rows(plan: &IterPlan, k: usize) -> bool {
    plan.offset_of(k).is_multiple_of(4) && plan.strides_of(k)[1..].iter().all(|&s| s.rem_euclid(4) == 0)
}

/// Whether Auto leaves an eligible plan to the general kernel: on CPU adapters, rows too short
/// for run mode (under 32 quads) with an input gathered along them. Quad columns read such an
/// input no faster than the general kernel there (lavapipe, `add` of a channels-last and an
/// NCHW [8,64,56,56]: 4.7-5.9 ms in columns of 2 to 16 rows against 4.4-4.9 ms).
fn gathers_short_rows(device_type: wgpu::DeviceType, plan: &IterPlan) -> bool {
    device_type == wgpu::DeviceType::Cpu && plan.rank() >= 2 && plan.sizes()[0] < 128 && (1..plan.operands()).any(|k| row_read(plan, k, true) == RowRead::Gathered)
}

/// Whether the rows kernel can run `plan`: plan dim 0 contiguous in the output (operand 0),
/// its size a multiple of 4, the output's offset and every other stride multiples of 4 (so
/// that the output's quad is whole words of its binding). Inputs may have any strides
/// (`RowRead`: quads, broadcast, transposed 4 x 4 blocks, or element by element).
pub fn rows_eligible(plan: &IterPlan) -> bool {
    plan.numel() > 0 && plan.rank() > 0 && plan.strides_of(0)[0] == 1 && plan.sizes()[0].is_multiple_of(4) && aligned_rows(plan, 0)
}

uniform! {
    /// The uniform both kernels read (`Iter` in shaders/preludes/iter.wgsl).
    pub(crate) struct IterUniform {
        sizes: [u32; MAX_DIMS],
        strides: [i32; 4 * MAX_DIMS],
        offsets: [u32; 4],
        rank: u32,
        threads: u32,
        inner_chunks: u32,
        grid_row: u32,
        scalars: [u32; 4],
        args: [u32; 4],
        extra: [u32; 4],
    }
}


/// Records `r` (resolved, with its plan) writing `out` and reading plan operand k from
/// `inputs[k - 1]`, through `path`. Inputs in `out`'s buffer are read through the output's
/// binding. The caller has validated the op and holds the operands until the work is done.
pub(crate) fn record(rt: &Runtime, rec: &mut Recorder, r: &Resolved, path: ElementwisePath, out: &wgpu::Buffer, inputs: &[&wgpu::Buffer]) -> Result<()> {
    let plan = &r.plan;
    // The rows kernel binds vec4 arrays: every buffer it binds must be whole 16-byte words,
    // so that a window rounded up to whole words stays inside its buffer.
    let whole = |b: &wgpu::Buffer| b.size() >= 16 && b.size().is_multiple_of(16);
    let words = whole(out) && inputs.iter().all(|b| whole(b));
    let path = match path {
        ElementwisePath::Auto if rows_eligible(plan) && words && !gathers_short_rows(rt.report.device_type, plan) => rows_default(rt.report.device_type, plan),
        ElementwisePath::Rows { .. } | ElementwisePath::Runs { .. } if !words => {
            return Err(Error::unsupported(OP, format!("the rows kernel binds whole 16-byte words, but a buffer's size is not a multiple of 16 bytes (output {} bytes, inputs {:?})", out.size(), inputs.iter().map(|b| b.size()).collect::<Vec<_>>())));
        }
        ElementwisePath::Auto => gather_default(rt.report.device_type),
        ElementwisePath::Rows { .. } | ElementwisePath::Runs { .. } if !rows_eligible(plan) && plan.numel() > 0 => {
            return Err(Error::unsupported(OP, format!("the rows kernel needs plan dim 0 contiguous in the output, of a size that is a multiple of 4, with the output's offset and other strides multiples of 4; plan {plan:?}")));
        }
        p => p,
    };
    if plan.numel() == 0 {
        return Ok(());
    }
    // The rows kernel walks quad columns through rows when the plan has rows to walk.
    let columns = matches!(path, ElementwisePath::Rows { .. }) && plan.rank() >= 2;
    let (mut shader, wg, ept, quad) = match path {
        ElementwisePath::Gather { wg, ept } => (gather_kernel(r.out_dtype), wg, ept, 1u64),
        ElementwisePath::Rows { wg, ept } | ElementwisePath::Runs { wg, ept } => ("elementwise_rows", wg, ept, 4u64),
        ElementwisePath::Auto => unreachable!("resolved above"),
    };
    if wg == 0 || ept == 0 {
        return Err(Error::invalid(OP, format!("workgroup size and elements per invocation must be positive, got {path:?}")));
    }
    crate::kernels::check_cpu_count(&rt.report, OP, format!("{path:?}'s elements (quads) an invocation"), ept)?;
    rt.report.check_workgroup(OP, || format!("{path:?}"), wg)?;
    let n_ops = plan.operands();
    // Whether input k (0-based) is the output's buffer (at most three inputs).
    let alias: [bool; 3] = std::array::from_fn(|k| k + 1 < n_ops && inputs[k] == out);
    // The kernel's constants.
    let slot_operand = |j: usize| match r.slots.get(j) {
        Some(InSlot::Tensor(k)) => *k as i64,
        _ => 0,
    };
    let ty = |k: usize| r.types.get(k).map_or(0, |t| t.code()) as i64;
    // Room for the rows kernel's four more (no reallocation when they are added).
    let mut constants = Vec::with_capacity(20);
    constants.extend([
        ("WG", wg as i64),
        ("EPT", ept as i64),
        ("OP", r.op.code() as i64),
        ("REPR", Repr::of(r.compute).dtype().code() as i64),
        ("ARITY", r.slots.len() as i64),
        ("COMPUTE", r.compute.code() as i64),
        ("OUT_T", r.out_dtype.code() as i64),
        ("IN0", slot_operand(0)),
        ("IN1", slot_operand(1)),
        ("IN2", slot_operand(2)),
        ("T1", ty(1)),
        ("T2", ty(2)),
        ("T3", ty(3)),
        ("ALIAS1", alias[0] as i64),
        ("ALIAS2", alias[1] as i64),
        ("ALIAS3", alias[2] as i64),
    ]);
    let rep = &rt.report;
    let align = (rep.min_storage_buffer_offset_alignment as u64).max(16);
    let max_bind = rep.max_storage_buffer_binding_size.min(u32::MAX as u64 + 1);
    let max_groups = rep.max_compute_workgroups_per_dimension as u64;
    let size = |k: usize| r.types[k].size() as u64;
    // The bound byte window (start, length) of each binding of a piece: the output's covers
    // the inputs read through it.
    // (Operands past `n_ops` get an empty window.)
    let windows = |p: &IterPlan| -> [(u64, u64); MAX_OPERANDS] {
        let span = |k: usize| {
            // Empty plans return before any dispatch (see `record`).
            let (lo, hi) = p.span(k).unwrap_or((0, 0));
            (lo as u64 * size(k), (hi as u64 + 1) * size(k))
        };
        let mut w = [(0u64, 0u64); MAX_OPERANDS];
        for (k, wk) in w.iter_mut().enumerate().take(n_ops) {
            *wk = span(k);
        }
        for k in 1..n_ops {
            if alias[k - 1] {
                w[0] = (w[0].0.min(w[k].0), w[0].1.max(w[k].1));
            }
        }
        for (k, wk) in w.iter_mut().enumerate().take(n_ops) {
            let buf = if k == 0 || alias[k - 1] { out } else { inputs[k - 1] };
            let start = wk.0 / align * align;
            // Whole 16-byte words: the rows kernel reads and writes vec4 words.
            *wk = (start, wk.1.div_ceil(16).saturating_mul(16).min(buf.size()) - start);
        }
        w
    };
    // (chunks per row, invocations, row blocks along dim 1): the general kernel's invocations
    // each take a run of `ept` elements; the rows kernel's workgroups each take a run of
    // `wg * ept` quads, or its invocations each a quad column through `ept` rows (the quads
    // of a row padded to a multiple of 8).
    let cover = |p: &IterPlan| -> (u64, u64, u64) {
        let n0 = p.sizes().first().map_or(1, |&n| n.max(1)) as u64 / quad;
        let rows = p.numel() as u64 / quad / n0.max(1);
        let ept = ept as u64;
        match (quad, columns) {
            (1, _) => (n0.div_ceil(ept), rows * n0.div_ceil(ept), 0),
            (_, false) => (n0.div_ceil(ept * wg as u64), rows * n0.div_ceil(ept * wg as u64) * wg as u64, 0),
            (_, true) => {
                let n1 = p.sizes().get(1).map_or(1, |&n| n.max(1)) as u64;
                let (pad, blocks) = (n0.div_ceil(QPR).div_ceil(8) * 8, n1.div_ceil(ept));
                (pad, rows / n1 * blocks * pad, blocks)
            }
        }
    };
    let fits = |p: &IterPlan| {
        let small = |k: usize| p.strides_of(k).iter().all(|&x| i32::try_from(x).is_ok());
        let (_, threads, _) = cover(p);
        let groups = threads.div_ceil(wg as u64);
        let gx = groups.min(max_groups);
        p.rank() <= MAX_DIMS
            && windows(p).iter().all(|&(_, len)| len <= max_bind)
            && p.numel() <= u32::MAX as usize
            && threads <= u32::MAX as u64
            && groups.div_ceil(gx.max(1)) <= max_groups
            && (0..n_ops).all(small)
    };
    let cuts = Cuts { keep: 0, grain0: quad as usize, max_rank: MAX_DIMS };
    let pieces = plan.pieces(cuts, fits).map_err(|p| {
        let len = windows(&p).iter().map(|w| w.1).max().unwrap_or(0);
        Error::Limit { op: OP, what: format!("binding the smallest piece the {shader} kernel can run (plan {p:?})"), limit: "max_storage_buffer_binding_size", requested: len, max: max_bind }
    })?;
    if quad == 4 {
        // Transposed blocks need whole groups of 4 rows in every invocation of every piece.
        let blocks = columns && ept.is_multiple_of(4) && pieces.iter().all(|p| (1..n_ops).all(|k| row_read(p, k, true) == row_read(plan, k, true)));
        let mask = |read: RowRead| (1..n_ops).filter(|&k| row_read(plan, k, blocks) == read).map(|k| 1i64 << k).sum();
        let trans = mask(RowRead::Transposed);
        constants.extend([("QPR", QPR as i64), ("BCAST", mask(RowRead::Broadcast)), ("GATHER", mask(RowRead::Gathered)), ("TRANS", trans)]);
        shader = rows_kernel(columns, trans != 0, r.out_dtype.size() < 4);
    }
    let key = PipelineKey { shader, constants };
    // Unused and aliased input bindings get a buffer that is not the output's.
    let spare = match inputs.iter().find(|b| **b != out && b.size() >= 16) {
        Some(b) => (*b).clone(),
        None => {
            let s = rt.buffer(OP, 16, wgpu::BufferUsages::STORAGE)?;
            let b = s.buffer().clone();
            rec.hold(s);
            b
        }
    };
    // Every piece's uniform first (the dispatch loop makes every bind group before it records), so that a failure records nothing.
    let mut dispatches = Vec::with_capacity(pieces.len());
    // The key cloned for every piece but the last, which takes it.
    for (p, key) in pieces.iter().zip(std::iter::repeat_n(key, pieces.len())) {
        let w = windows(p);
        let (chunks, threads, blocks) = cover(p);
        let groups = threads.div_ceil(wg as u64);
        let gx = groups.min(max_groups);
        let gy = groups.div_ceil(gx.max(1));
        let mut u = IterUniform::zeroed();
        u.sizes = [1; MAX_DIMS];
        for d in 0..p.rank() {
            u.sizes[d] = p.sizes()[d] as u32;
            for k in 0..n_ops {
                u.strides[8 * k + d] = p.strides_of(k)[d] as i32;
            }
        }
        for k in 0..n_ops {
            let base = if k > 0 && alias[k - 1] { w[0].0 } else { w[k].0 };
            u.offsets[k] = (p.offset_of(k) as u64 - base / size(k)) as u32;
        }
        u.rank = p.rank() as u32;
        u.threads = threads as u32;
        u.inner_chunks = chunks as u32;
        u.grid_row = (gx * wg as u64) as u32;
        for (j, s) in r.slots.iter().enumerate() {
            if let InSlot::Scalar(b) = s {
                u.scalars[j] = *b;
            }
        }
        u.args = r.args;
        u.extra[0] = blocks as u32;
        let input = |k: usize| if k < n_ops && !alias[k - 1] { (inputs[k - 1], w[k]) } else { (&spare, (0, 16)) };
        dispatches.push(Dispatch { key, params: u, bindings: vec![(out, w[0]), input(1), input(2), input(3)], grid: (gx as u32, gy as u32) });
    }
    dispatch::record(rt, rec, OP, SLOTS, &dispatches)
}

/// The rows kernel of a traversal: runs along rows, quad columns through rows, or quad columns
/// with transposed 4 x 4 blocks (one file each, so that each pipeline compiles one traversal),
/// writing 4-byte elements as vec4 words, or (`narrow`) 2- and 1-byte ones as u32 words.
fn rows_kernel(columns: bool, blocks: bool, narrow: bool) -> &'static str {
    match (columns, blocks, narrow) {
        (false, _, false) => "elementwise_rows_runs",
        (true, false, false) => "elementwise_rows_columns",
        (true, true, false) => "elementwise_rows_blocks",
        (false, _, true) => "elementwise_rows_runs_narrow",
        (true, false, true) => "elementwise_rows_columns_narrow",
        (true, true, true) => "elementwise_rows_blocks_narrow",
    }
}

/// Every elementwise pipeline the automatic choice may run on a GPU, for the register-budget
/// test: both kernels at their default shapes, each op, with the type sets that change the
/// generated code (f32, f16 and bf16 computations, 32-bit signed and unsigned integers, and
/// converting loads and stores of 1- and 2-byte elements).
pub fn gpu_pipelines() -> Vec<crate::kernels::shaders::PipelineSpec> {
    use crate::elementwise::KINDS;
    let mut out = Vec::new();
    // (computation, input type, output type)
    // The last three: 4-byte outputs from 1-byte and integer inputs, for the general kernel's
    // words form (the first five already reach each load and store path of the rows kernel).
    let types = [
        (DType::F32, DType::F32, DType::F32),
        (DType::F16, DType::F16, DType::F16),
        (DType::BF16, DType::U8, DType::BF16),
        (DType::I32, DType::I8, DType::U8),
        (DType::U32, DType::U32, DType::F16),
        (DType::F32, DType::U8, DType::F32),
        (DType::I32, DType::I8, DType::I32),
        (DType::U32, DType::U32, DType::U32),
    ];
    // (kernel, wg, ept, columns, broadcast mask, gathered mask): the automatic choices.
    let shapes = [
        ("elementwise", 256, 8, 0, 0, 0),
        ("elementwise_words", 256, 8, 0, 0, 0),
        ("elementwise_rows", 256, 4, 0, 0, 0),
        ("elementwise_rows", 256, 2, 1, 0, 0),
        ("elementwise_rows", 256, 2, 1, 4, 0),
        ("elementwise_rows", 256, 4, 0, 4, 0),
        ("elementwise_rows", 256, 2, 1, 0, 2),
        ("elementwise_rows", 256, 4, 0, 4, 2),
    ];
    for (kernel, wg, ept, columns, bcast, gather) in shapes {
        for op in KINDS {
            let rows = kernel == "elementwise_rows";
            let types = if rows { &types[..5] } else { &types[..] };
            for &(compute, input, output) in types {
                // Each general-kernel file runs the outputs gather_kernel gives it.
                if op.computes_in_float() && !compute.is_float() || !rows && gather_kernel(output) != kernel {
                    continue;
                }
                let arity = op.arity() as i64;
                let constants = vec![
                    ("WG", wg as i64),
                    ("EPT", ept as i64),
                    ("OP", op.code() as i64),
                    ("REPR", Repr::of(compute).dtype().code() as i64),
                    ("ARITY", arity),
                    ("COMPUTE", compute.code() as i64),
                    ("OUT_T", output.code() as i64),
                    ("IN0", 1),
                    ("IN1", if arity > 1 { 2 } else { 0 }),
                    ("IN2", if arity > 2 { 3 } else { 0 }),
                    ("T1", input.code() as i64),
                    ("T2", input.code() as i64),
                    ("T3", input.code() as i64),
                ];
                let mut constants = constants;
                let mut kernel = kernel;
                if rows {
                    if bcast != 0 && arity < 2 {
                        continue;
                    }
                    constants.extend([("BCAST", bcast), ("GATHER", gather), ("QPR", QPR as i64)]);
                    kernel = rows_kernel(columns == 1, false, output.size() < 4);
                }
                out.push(crate::kernels::shaders::PipelineSpec { kernel, constants });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Layout;

    fn plan(out: &[usize], input: &[usize]) -> IterPlan {
        let (o, i) = (Layout::contiguous(out).unwrap(), Layout::contiguous(input).unwrap());
        IterPlan::build("test", &o, &[&o, &i]).unwrap()
    }

    #[test]
    fn shapes_by_adapter_and_row_length() {
        use wgpu::DeviceType::{Cpu, DiscreteGpu};
        // A bias over [8,64,56,56]: rows of 3136 elements, 3 plan dims.
        let bias = plan(&[8, 64, 56, 56], &[1, 64, 1, 1]);
        assert!(rows_eligible(&bias) && bias.rank() == 3, "{bias:?}");
        assert_eq!(rows_default(Cpu, &bias), ElementwisePath::Runs { wg: 8, ept: 32 });
        assert_eq!(rows_default(DiscreteGpu, &bias), ElementwisePath::Rows { wg: 256, ept: 2 });
        // Rows of 8 quads: too short for runs of 32 quads, so quad columns on every adapter.
        let short = plan(&[64, 32], &[64, 1]);
        assert_eq!(rows_default(Cpu, &short), ElementwisePath::Rows { wg: 256, ept: 2 });
        // One dim: runs on both, of the adapter's shape.
        let flat = plan(&[4096], &[4096]);
        assert_eq!(rows_default(Cpu, &flat), ElementwisePath::Runs { wg: 8, ept: 32 });
        assert_eq!(rows_default(DiscreteGpu, &flat), ElementwisePath::Rows { wg: 256, ept: 4 });
        // An NCHW input into a channels-last output: plan dims (C, H*W, N), the input
        // contiguous along dim 1, so read as transposed blocks through quad columns on CPU
        // adapters; GPUs keep their shape (2 rows per invocation: element by element).
        let (o, i) = (Layout::contiguous(&[2, 6, 4, 64]).unwrap().permute(&[0, 3, 1, 2]).unwrap(), Layout::contiguous(&[2, 64, 6, 4]).unwrap());
        let mixed = IterPlan::build("test", &o, &[&i]).unwrap();
        assert!(rows_eligible(&mixed) && row_read(&mixed, 1, true) == RowRead::Transposed && row_read(&mixed, 1, false) == RowRead::Gathered, "{mixed:?}");
        assert_eq!(rows_default(Cpu, &mixed), TRANSPOSED_ROWS);
        assert_eq!(rows_default(DiscreteGpu, &mixed), ElementwisePath::Rows { wg: 256, ept: 2 });
        // The general kernel: GPU and CPU-adapter shapes.
        assert_eq!(gather_default(Cpu), ElementwisePath::Gather { wg: 16, ept: 32 });
        assert_eq!(gather_default(DiscreteGpu), ElementwisePath::Gather { wg: 256, ept: 8 });
    }
}
