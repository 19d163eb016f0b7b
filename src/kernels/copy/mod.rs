//! The copy kernels: which path moves a plan ([`auto_path`], from the plan's class and, for
//! batched transposes, a tuned or default choice given by the caller), whether a path applies
//! ([`prepare`], the one eligibility check of every path, used by the automatic choice and by
//! forced paths alike), and recording a prepared path into an encoder ([`record`]): the plan is
//! split into pieces whose bindings fit the adapter, and each piece is one dispatch.


use bytemuck::Zeroable;

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
mod class;
mod path;

pub(crate) use class::{auto_path, transpose_candidates, transpose_class, transpose_default, Transpose};
pub use class::ShapeClass;
pub(crate) use path::*;
pub use path::{vec4_default, CopyPath};

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
    if let CopyPath::Vec4 { wpt: n, .. } | CopyPath::StridedRows { rows: n, .. } | CopyPath::Vec4Rows { rows: n, .. } | CopyPath::Gather { ept: n, .. } = path {
        crate::kernels::check_cpu_count(r, OP, format!("{path:?}'s count an invocation"), n)?;
    }
    if let Some(wg) = path.workgroup() {
        r.check_workgroup(OP, || format!("{path:?}"), wg)?;
    }
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
                    format!("the vec4 rows kernel needs rows of one type, 16-byte aligned, contiguous in the destination and contiguous in the source, or stepped by 2 there for 2- and 1-byte elements; plan {plan:?}, rows {rows}"),
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
