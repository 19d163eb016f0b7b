//! The rows and columns reduction kernels (`reduce_rows.wgsl`, `reduce_cols.wgsl`): f32
//! reductions, softmax and log_softmax whose innermost reduced dim (rows: a workgroup per
//! output, or several for a few long outputs: on GPUs, and on CPU adapters as
//! [`kernel_for`] says) or a kept dim (columns: one invocation, or on GPUs several invocations
//! and workgroups, per four neighbouring outputs) is contiguous in the input, loading whole 16-byte words where they are aligned. [`kernel_for`] is the one
//! eligibility check; everything else runs `reduce_general.wgsl`.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::dispatch::{self, Dispatch};
use crate::kernels::reduce::abi::{code, indices_binding, indices_fit, plan_uniform, Buffers, Types, Work, MAX_DIMS};
use crate::kernels::shaders::PipelineSpec;
use crate::plan::{Cuts, IterPlan};
use crate::reduce::{ReduceClass, ReduceOp, ReducePlan, ScanOp};
use crate::runtime::record::Recorder;
use crate::runtime::{PipelineKey, Runtime, Slot};


/// Invocations per workgroup of both kernels.
const WG: u64 = 64;

/// Iterations one loop of an invocation may run.
const LOOP_CAP: usize = 16_384;

/// The loop turns an invocation of the rows or columns kernel may take on a CPU adapter,
/// within [`SOFTWARE_LOOP_ITERATIONS`](crate::kernels::SOFTWARE_LOOP_ITERATIONS) (Mesa's
/// llvmpipe counts every loop's turns of an invocation against one bound and leaves them past
/// it, silently: `sum` of a transposed [16384, 4] gave half the total). The estimates of
/// [`cpu_turns`] are upper bounds; past this the general kernel's parts run.
const CPU_TURNS: u64 = crate::kernels::SOFTWARE_LOOP_BUDGET;

/// An upper bound of the loop turns one invocation of `kernel` (RowThreads, Rows or Columns)
/// takes over `rp` on a CPU adapter: its walks (two for the two-pass ops; softmax's columns
/// three, the last writing) over every run, each run costing its loop entries, the offsets'
/// loop over the reduced dims and its share of the run's words (step 1 a thread's, 64 words
/// apart a workgroup's, four a turn), a column's every element the offsets' loop; a row
/// scan's write one more walk of its words.
fn cpu_turns(rp: &ReducePlan, work: Work, kernel: ReduceKernel) -> u64 {
    let two_pass = matches!(work, Work::Reduce(ReduceOp::Var { .. } | ReduceOp::Std { .. } | ReduceOp::Logsumexp));
    let scan = matches!(work, Work::Scan(_));
    let (extent, rrank) = (rp.extent as u64, rp.rrank as u64);
    match kernel {
        ReduceKernel::Columns => (1 + two_pass as u64 + 2 * scan as u64) * extent * (rrank + 3),
        _ => {
            let n0 = rp.plan.sizes()[0] as u64;
            let runs = extent / n0.max(1);
            let per_turn = if kernel == ReduceKernel::RowThreads { 16 } else { 4 * 4 * WG };
            let walk = runs * (rrank + 16 + n0 / per_turn);
            (1 + two_pass as u64) * walk + if scan { n0 / (per_turn / 4) + 16 } else { 0 }
        }
    }
}

/// Elements of a reduction above which a handful of outputs run, on CPU adapters and outside
/// the rows class, the general kernel's parts (many invocations per output) rather than a
/// workgroup each.
const FEW_OUTPUTS_EXTENT: usize = 1 << 16;

/// The fewest elements of one output in one run that CPU adapters split across workgroups
/// (lavapipe, calls with their download: `sum` of 16M elements 35-37 -> 28.5-31.8 ms, `mean` of
/// 9.6M 21-28 -> 14, `amax` of 3M 6.6-6.8 -> 5.2-6.0; of 1M 2.3-2.5 -> 2.7-4.7, slower).
const CPU_SPLIT_ONE: usize = 1 << 21;

/// Workgroups [`ReduceKernel::RowSplits`] aims for over a call (a large GPU's fill, as
/// [`column_splits`]), and the fewest elements one of them walks.
const SPLIT_FILL: u64 = 1024;
const SPLIT_LEAST: u64 = 2048;

/// The fewest reduced steps a walker of a [`ReduceKernel::ColumnSplits`] block walks (four
/// loads in flight, four times), and the most blocks a quad.
const COLUMN_LEAST: u64 = 16;
const MOST_BLOCKS: u64 = 1024;

/// The longest rows [`ReduceKernel::RowTeams`] takes: 128 words, four a lane of a team of 32.
const TEAM_ROWS: usize = 512;

/// The bindings: the uniform, the output, the input as f32 and as 16-byte words (the same
/// window), the indices of `max` / `min`, the output as 16-byte words (the rows kernel's scans
/// where [`words_out`] allows; the output is bound writable once, the other gets a spare), the
/// part states of [`ReduceKernel::RowSplits`] and of [`ReduceKernel::ColumnSplits`] with
/// blocks (else a spare).
const SLOTS: &[Slot] = &[Slot::Uniform, Slot::Write, Slot::Read, Slot::Read, Slot::Write, Slot::Write, Slot::Write];

/// Whether a rows scan over piece `p` (rows of `extent`) may store its output as 16-byte
/// words: the output contiguous along the row, every element in the same place of its word as
/// its input element (strides and window-relative offsets equal modulo 4; the input's words
/// are 16-byte aligned in its window), the output's window rounded up to whole words within
/// its buffer, and every row whole words (its start aligned, its extent a multiple of 4): an
/// element stored alone into a component of a word that another invocation's row shares is a
/// data race in WGSL's memory model (a component store may access the whole vector; Metal may
/// read, modify and write it), so rows with such edges store elements through `out`.
fn words_out(p: &IterPlan, extent: usize, offsets: [u32; 2], out_window: (u64, u64), out_size: u64) -> bool {
    let (so, si) = (p.strides_of(0), p.strides_of(1));
    let whole_rows = extent.is_multiple_of(4) && offsets[0].is_multiple_of(4) && (1..p.rank()).all(|d| so[d].rem_euclid(4) == 0);
    so[0] == 1 && si[0] == 1 && whole_rows && (0..p.rank()).all(|d| (so[d] - si[d]).rem_euclid(4) == 0) && offsets[0] % 4 == offsets[1] % 4 && out_window.0 + out_window.1.next_multiple_of(16) <= out_size
}

/// The kernel a reduction or op along a dim runs (more may come: match with a wildcard arm).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReduceKernel {
    /// `reduce_rows`: the innermost reduced dim contiguous; a workgroup per output, its
    /// invocations' states combined in a fixed tree (through subgroup shuffles where
    /// `AdapterReport::subgroup_reduce`, else in workgroup memory).
    Rows,
    /// `reduce_rows` with `PER_THREAD`: the same rows, an invocation per output (no workgroup
    /// memory or barrier: what the CPU adapters run fastest, and short rows on GPUs).
    RowThreads,
    /// `reduce_rows` with `SPLIT` (GPUs; CPU adapters for fewer than 16 outputs of more than
    /// 65,536 elements in several runs each, and reductions into one output of one run of at
    /// least 2^21): the same rows, a few long outputs (fewer than
    /// 1024, at least 4096 elements each) of `row_splits` workgroups each, whose states a second
    /// dispatch combines in a fixed order (two more for two-pass ops, one more for scans):
    /// a workgroup per output would leave most of a GPU idle (64 outputs: 64 workgroups).
    RowSplits,
    /// `reduce_rows` with `TEAMS` (GPUs): the same rows of 65 to 512 elements, a team of
    /// `row_team` invocations per output and several outputs a workgroup, where a workgroup
    /// per output would leave most of its invocations without a word.
    RowTeams,
    /// `reduce_cols`: a kept dim contiguous; an invocation per four outputs (CPU adapters).
    Columns,
    /// `reduce_cols` with `SPLIT`: a kept dim contiguous; 2 to 32 invocations per four
    /// outputs, each walking every `parts`-th reduced element, their states combined in a
    /// fixed tree in workgroup memory (`column_splits` picks how many): what GPUs run, whose lanes a few
    /// hundred outputs would otherwise leave idle. Reductions of few quads or long columns
    /// take [`column_blocks`] workgroups a quad, whose states a second dispatch combines in a
    /// fixed order (two more for two-pass ops).
    ColumnSplits,
    /// `reduce_general`: anything (any type, op, layout and length).
    General,
}

/// The kernel for `work` over `rp` with types `t` on an adapter of `device_type`: the one
/// eligibility check. Rows and columns take f32 reductions (f32 or index results), softmax and
/// log_softmax, whose plan is of their class, within the loop caps. Rows run an invocation per
/// output where each run fits one invocation's loops and either the adapter is a CPU and there
/// are at least 64 outputs (barriers cost a CPU adapter more than a workgroup's parallelism
/// gains) or the rows are at most 64 elements; on GPUs, [`row_splits`] workgroups per output
/// where that is at least 2, and a team of [`row_team`] invocations per output for rows of at
/// most 512 elements; else a workgroup each. CPU adapters split too where fewer than 16 outputs
/// of more than [`FEW_OUTPUTS_EXTENT`] elements have several runs each (a per-channel
/// statistic of NCHW: `var` over (0, 2, 3) of [64, 8, 56, 56] 13.7-14.1 -> 5.3-5.8 ms on
/// lavapipe), and reductions into a single output of one run of at least [`CPU_SPLIT_ONE`]
/// elements (a whole-tensor `sum`; scans not measured so); other outputs of one run each
/// (several of them, or fewer elements, or scans) keep the general kernel (`amax` of
/// [8, 300000] took 6.3-7.3 ms split against 5.4-5.5). Columns of at least 16 reduced elements
/// split each output's walk on GPUs: reductions of up to 33,554,432 elements (2 x
/// [`MOST_BLOCKS`] x the loop cap; in [`column_blocks`] workgroups a quad where needed), scans
/// within the loop cap. Elsewhere a reduction of more
/// than [`FEW_OUTPUTS_EXTENT`] elements into fewer than 16 outputs runs the general kernel's parts.
pub fn kernel_for(rp: &ReducePlan, work: Work, t: Types, device_type: wgpu::DeviceType) -> ReduceKernel {
    let f32s = t.input == DType::F32 && t.cast == DType::F32 && matches!(t.out, DType::F32 | DType::I32);
    if !f32s || matches!(work, Work::Scan(ScanOp::Cumsum)) || rp.rrank > MAX_DIMS {
        return ReduceKernel::General;
    }
    let gpu = device_type != wgpu::DeviceType::Cpu;
    let few = rp.outputs < 16 && rp.extent > FEW_OUTPUTS_EXTENT;
    match rp.class() {
        ReduceClass::Rows => {
            let n0 = rp.plan.sizes()[0];
            let runs = rp.extent / n0;
            let threads = if gpu { rp.extent <= 64 } else { rp.outputs >= 64 };
            let splits = row_splits(rp.outputs as u64, rp.extent as u64);
            // On CPU adapters, within the loop bound (`cpu_turns`).
            let fits = |k: ReduceKernel| gpu || cpu_turns(rp, work, k) <= CPU_TURNS;
            if runs > LOOP_CAP {
                ReduceKernel::General
            } else if n0 <= LOOP_CAP && threads && fits(ReduceKernel::RowThreads) {
                ReduceKernel::RowThreads
            } else if (gpu || (few && (runs > 1 || (rp.outputs == 1 && rp.extent >= CPU_SPLIT_ONE && matches!(work, Work::Reduce(_)))))) && splits >= 2 && n0 as u64 <= (if runs as u64 >= splits { 1 } else { splits }) * WG * LOOP_CAP as u64 {
                ReduceKernel::RowSplits
            } else if gpu && rp.extent <= TEAM_ROWS && !few {
                ReduceKernel::RowTeams
            } else if n0 <= WG as usize * LOOP_CAP && !few && fits(ReduceKernel::Rows) {
                ReduceKernel::Rows
            } else {
                ReduceKernel::General
            }
        }
        // GPUs split reductions of up to 2 x MOST_BLOCKS x LOOP_CAP elements (blocks of
        // workgroups where the quads are few or the walks long: `column_blocks`); scans
        // within one workgroup.
        ReduceClass::Columns if gpu && rp.extent >= 16 && matches!(work, Work::Reduce(_)) && rp.extent as u64 <= 2 * MOST_BLOCKS * LOOP_CAP as u64 => ReduceKernel::ColumnSplits,
        ReduceClass::Columns if rp.extent <= LOOP_CAP && !few && (gpu || cpu_turns(rp, work, ReduceKernel::Columns) <= CPU_TURNS) => {
            if gpu && rp.extent >= 16 {
                ReduceKernel::ColumnSplits
            } else {
                ReduceKernel::Columns
            }
        }
        _ => ReduceKernel::General,
    }
}

/// The kernel a reduction or op along a dim runs for `work` over `rp` of an input of `dtype`
/// (computed in `dtype`; indices int32) on an adapter of `device_type`: the same check the
/// recording uses. Rows and columns take f32 reductions, softmax and log_softmax of their plan
/// class within the loop caps; rows run an invocation per output on CPU adapters with at least
/// 64 outputs and on GPUs for rows of at most 64 elements, several workgroups per output for
/// a few long outputs (on GPUs; on CPU adapters as `kernel_for` says), a team of invocations per output on GPUs for rows of at most
/// 512 elements, else a workgroup per output; columns of at least 16 elements
/// split each output's walk on GPUs (reductions also across workgroups).
pub fn reduce_kernel(rp: &ReducePlan, work: Work, dtype: DType, device_type: wgpu::DeviceType) -> ReduceKernel {
    let indices = matches!(work, Work::Reduce(op) if matches!(op, crate::reduce::ReduceOp::Argmax | crate::reduce::ReduceOp::Argmin));
    kernel_for(rp, work, Types { input: dtype, cast: dtype, out: if indices { DType::I32 } else { dtype } }, device_type)
}

/// The shader and override constants of `kernel` (not General) for op code `op`; `subgroups`:
/// the rows kernel's workgroup tree through subgroup shuffles
/// ([`AdapterReport::subgroup_reduce`](crate::AdapterReport::subgroup_reduce)).
fn pipeline(kernel: ReduceKernel, op: u32, subgroups: bool) -> PipelineKey {
    match kernel {
        ReduceKernel::RowThreads => PipelineKey { shader: "reduce_rows", constants: vec![("OPC", op as i64), ("PER_THREAD", 1)] },
        ReduceKernel::Rows if subgroups => PipelineKey { shader: "reduce_rows_subgroup", constants: vec![("OPC", op as i64)] },
        ReduceKernel::Rows => PipelineKey { shader: "reduce_rows", constants: vec![("OPC", op as i64)] },
        ReduceKernel::RowSplits if subgroups => PipelineKey { shader: "reduce_rows_subgroup", constants: vec![("OPC", op as i64), ("SPLIT", 1)] },
        ReduceKernel::RowSplits => PipelineKey { shader: "reduce_rows", constants: vec![("OPC", op as i64), ("SPLIT", 1)] },
        ReduceKernel::RowTeams => PipelineKey { shader: "reduce_rows", constants: vec![("OPC", op as i64), ("TEAMS", 1)] },
        ReduceKernel::ColumnSplits => PipelineKey { shader: "reduce_cols", constants: vec![("OPC", op as i64), ("SPLIT", 1)] },
        _ => PipelineKey { shader: "reduce_cols", constants: vec![("OPC", op as i64)] },
    }
}

/// Invocations of [`ReduceKernel::ColumnSplits`] per four outputs, for `quads` groups of four
/// outputs and `extent` reduced elements: a power of two, enough for about 1024 workgroups
/// (a large GPU's fill) where the outputs are few, each invocation walking at least 8
/// elements, and from 2 to 32 (at most 32: a workgroup then still reads two quads, 32
/// contiguous bytes, per row).
pub fn column_splits(quads: u64, extent: u64) -> u64 {
    let want = (WG * 1024 / quads.max(1)).next_power_of_two();
    let most = 1u64 << (extent / 8).max(2).ilog2();
    want.min(most).clamp(2, 32)
}

/// Workgroups of [`ReduceKernel::ColumnSplits`] per four outputs along the reduction, for
/// `quads` groups of four outputs of `extent` reduced elements, `parts` invocations each in a
/// workgroup ([`column_splits`]): a power of two, enough for about `SPLIT_FILL` workgroups
/// where the quads are few (channels-last per-channel statistics: 16 quads), each walker
/// walking at least `COLUMN_LEAST` steps, and enough that none walks more than the loop cap;
/// at most `MOST_BLOCKS`. Scans (`reduction` false) keep one: their writes walk again.
pub fn column_blocks(quads: u64, parts: u64, extent: u64, reduction: bool) -> u64 {
    if !reduction {
        return 1;
    }
    let groups = quads.div_ceil(WG / parts).max(1);
    let want = SPLIT_FILL.div_ceil(groups).next_power_of_two();
    let most = 1u64 << (extent / (parts * COLUMN_LEAST)).max(1).ilog2();
    let least = extent.div_ceil(parts * LOOP_CAP as u64).next_power_of_two();
    want.min(most).max(least).min(MOST_BLOCKS)
}

/// Workgroups of [`ReduceKernel::RowSplits`] per output, for `outputs` outputs of `extent`
/// elements: a power of two, enough for about [`SPLIT_FILL`] workgroups (a large GPU's fill),
/// each walking at least [`SPLIT_LEAST`] elements (32 a lane), at most 1024. Below 2 the
/// rows kernel runs a workgroup per output.
pub fn row_splits(outputs: u64, extent: u64) -> u64 {
    let want = SPLIT_FILL.div_ceil(outputs.max(1)).next_power_of_two();
    let most = 1u64 << (extent / SPLIT_LEAST).max(1).ilog2();
    want.min(most).min(1024)
}

/// Invocations of [`ReduceKernel::RowTeams`] per output of `extent` elements: a power of two
/// near a quarter of its 16-byte words (four a lane, the walk's loads in flight), 8 to 32.
pub fn row_team(extent: u64) -> u64 {
    extent.div_ceil(16).next_power_of_two().clamp(8, 32)
}

/// The op codes the rows and columns kernels serve (every reduction, softmax, log_softmax).
const OPS: [u32; 17] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 20, 21];

/// Every rows and columns pipeline, for the register-budget test.
pub fn gpu_pipelines() -> Vec<PipelineSpec> {
    let kernels = [ReduceKernel::Rows, ReduceKernel::RowThreads, ReduceKernel::RowSplits, ReduceKernel::RowTeams, ReduceKernel::Columns, ReduceKernel::ColumnSplits];
    let subgroup_rows = [ReduceKernel::Rows, ReduceKernel::RowSplits].into_iter().flat_map(|k| OPS.map(|op| pipeline(k, op, true)));
    kernels.into_iter().flat_map(|k| OPS.map(|op| pipeline(k, op, false))).chain(subgroup_rows).map(|p| PipelineSpec { kernel: p.shader, constants: p.constants }).collect()
}

/// Records `work` over `rp` with `kernel` (not General, as [`kernel_for`] chose).
pub(crate) fn record(rt: &Runtime, rec: &mut Recorder, rp: &ReducePlan, work: Work, kernel: ReduceKernel, b: &Buffers<'_>) -> Result<()> {
    let rep = &rt.report;
    let align = (rep.min_storage_buffer_offset_alignment as u64).max(16);
    let max_bind = rep.max_storage_buffer_binding_size.min(u32::MAX as u64 + 1);
    let max_groups = rep.max_compute_workgroups_per_dimension as u64;
    let bufs = [b.out, b.input];
    let rows = kernel == ReduceKernel::Rows;
    let threads = kernel == ReduceKernel::RowThreads;
    let row_split = kernel == ReduceKernel::RowSplits;
    // RowSplits: workgroups per output.
    let splits = if row_split { row_splits(rp.outputs as u64, rp.extent as u64) } else { 1 };
    let teams = kernel == ReduceKernel::RowTeams;
    // RowTeams: invocations per output.
    let team = row_team(rp.extent as u64);
    let split = kernel == ReduceKernel::ColumnSplits;
    let rrank = rp.rrank;
    // The bound byte window (start, length) of the output (0) and the input (1).
    let windows = |p: &IterPlan| -> [(u64, u64); 2] {
        [0, 1].map(|k| {
            let (lo, hi) = p.span(k).unwrap_or((0, 0));
            let (lo, hi) = (lo as u64 * 4, (hi as u64 + 1) * 4);
            let start = lo / align * align;
            (start, hi.min(bufs[k].size()) - start)
        })
    };
    // Columns: a piece's groups of four outputs, and the invocations sharing each.
    let quads = |p: &IterPlan| -> u64 {
        let k0 = p.sizes()[rrank] as u64;
        k0.div_ceil(4) * ((p.numel() / rp.extent) as u64 / k0)
    };
    // Columns without splits (CPU adapters; GPUs for fewer than 16 reduced elements): four
    // quads per invocation (`parts` 4), 64 bytes of each reduced step, for one-pass ops over
    // one reduced dim whose every quad is a whole aligned word, where that leaves at least 4
    // workgroups. One-pass: what `two_pass()` of reduce_vec.wgsl leaves (the wide walk has
    // no second pass).
    let one_pass = matches!(work, Work::Reduce(op) if !matches!(op, ReduceOp::Var { .. } | ReduceOp::Std { .. } | ReduceOp::Logsumexp));
    let wide = |p: &IterPlan| {
        let si = p.strides_of(1);
        kernel == ReduceKernel::Columns
            && one_pass
            && rrank == 1
            && p.sizes()[1].is_multiple_of(16)
            && si[1] == 1
            && (0..p.rank()).all(|d| d == 1 || si[d] % 4 == 0)
            && p.offset_of(1).is_multiple_of(4)
            && quads(p) >= 4 * 4 * WG
    };
    let parts = |p: &IterPlan| if split { column_splits(quads(p), rp.extent as u64) } else if wide(p) { 4 } else { 1 };
    // ColumnSplits: workgroups a quad along the reduction (stages as in reduce_cols.wgsl).
    let scan = matches!(work, Work::Scan(_));
    let blocks = |p: &IterPlan| if split { column_blocks(quads(p), parts(p), rp.extent as u64, !scan) } else { 1 };
    // Workgroups of a piece.
    let groups = |p: &IterPlan| -> u64 {
        let outputs = (p.numel() / rp.extent) as u64;
        if rows || row_split {
            outputs * splits
        } else if teams {
            outputs.div_ceil(WG / team)
        } else if threads {
            outputs.div_ceil(WG)
        } else if wide(p) {
            (quads(p) / 4).div_ceil(WG)
        } else {
            quads(p).div_ceil(WG / parts(p)) * blocks(p)
        }
    };
    let fits = |p: &IterPlan| {
        let g = groups(p);
        let gx = g.min(max_groups).max(1);
        p.rank() <= MAX_DIMS
            && windows(p).iter().all(|&(_, len)| len <= max_bind)
            && indices_fit(b.indices.filter(|_| !scan), p, align, max_bind)
            && p.numel() <= u32::MAX as usize
            && g.div_ceil(gx) <= max_groups
            && (blocks(p) == 1 || quads(p) * (blocks(p) + 1) * 64 <= max_bind)
            && (0..3).all(|k| p.strides_of(k).iter().all(|&x| i32::try_from(x).is_ok()))
    };
    let cuts = Cuts { keep: rrank, grain0: 1, max_rank: MAX_DIMS };
    let pieces = rp.plan.pieces(cuts, fits).map_err(|p| {
        let len = windows(&p).iter().map(|w| w.1).max().unwrap_or(0);
        Error::Limit { op: work.name(), what: format!("binding the input of one output's reduction (plan {p:?})"), limit: "max_storage_buffer_binding_size", requested: len, max: max_bind }
    })?;
    let spare = rt.buffer(work.name(), 16, wgpu::BufferUsages::STORAGE)?;
    let spare4 = rt.buffer(work.name(), 16, wgpu::BufferUsages::STORAGE)?;
    let spare_out = rt.buffer(work.name(), 16, wgpu::BufferUsages::STORAGE)?;
    // RowSplits: the part states of the piece with the most outputs (pieces run one after
    // another), then a combined state per output.
    // ColumnSplits with blocks: each quad's lane states of each block, then its combined ones.
    let most = pieces.iter().map(|p| (p.numel() / rp.extent) as u64).max().unwrap_or(0);
    let column_states = |p: &IterPlan| if blocks(p) > 1 { quads(p) * (blocks(p) + 1) * 64 } else { 0 };
    let most_column = pieces.iter().map(|p| column_states(p)).max().unwrap_or(0);
    let states = rt.buffer(work.name(), if row_split { most * (splits + 1) * 16 } else { most_column.max(16) }, wgpu::BufferUsages::STORAGE)?;
    let (op, divisor) = code(work, rp.extent);
    let key = pipeline(kernel, op, rep.subgroup_reduce);
    // RowSplits' stages (reduce_rows.wgsl): pass 0's parts and their combination, then a scan's
    // writes or a two-pass op's pass 1 and its combination.
    let two_pass = matches!(work, Work::Reduce(ReduceOp::Var { .. } | ReduceOp::Std { .. } | ReduceOp::Logsumexp));
    // ColumnSplits with blocks: pass 0's blocks and their combination, then a two-pass op's
    // pass 1 and its combination.
    let stages = |p: &IterPlan| -> &[u32] {
        match (row_split || blocks(p) > 1, scan, two_pass) {
            (false, ..) => &[0],
            (true, true, _) => &[0, 1, 2],
            (true, false, true) => &[0, 1, 2, 3],
            (true, false, false) => &[0, 1],
        }
    };
    let mut dispatches = Vec::with_capacity(pieces.len() * 4);
    for p in &pieces {
        let w = windows(p);
        let mut u = plan_uniform(p);
        u.offsets[0] = (p.offset_of(0) as u64 - w[0].0 / 4) as u32;
        u.offsets[1] = (p.offset_of(1) as u64 - w[1].0 / 4) as u32;
        u.offsets[2] = p.offset_of(2) as u32;
        u.rrank = rrank as u32;
        u.outputs = (p.numel() / rp.extent) as u32;
        u.extent = rp.extent as u32;
        u.op = op;
        u.divisor = divisor;
        // Columns: whether every step along the reduction keeps a 16-byte word aligned.
        u.mode = (0..rrank).all(|d| p.strides_of(1)[d] % 4 == 0) as u32;
        let indices = indices_binding(b.indices.filter(|_| !scan), rp, p, align, &mut u, spare.buffer());
        let words = w[1].1 / 16 * 16;
        let input4 = if words > 0 { (b.input, (w[1].0, words)) } else { (spare4.buffer(), (0, 16)) };
        let row_kernel = rows || threads || teams || row_split;
        let out_words = scan && row_kernel && words_out(p, rp.extent, [u.offsets[0], u.offsets[1]], w[0], b.out.size());
        if row_kernel {
            u.mode = out_words as u32;
        }
        let (out, out4) = if out_words {
            ((spare_out.buffer(), (0, 16)), (b.out, (w[0].0, w[0].1.next_multiple_of(16))))
        } else {
            ((b.out, w[0]), (spare_out.buffer(), (0, 16)))
        };
        let outputs = u.outputs as u64;
        u.parts = if row_split {
            splits
        } else if teams {
            team
        } else {
            parts(p)
        } as u32;
        u.blocks = blocks(p) as u32;
        let st = if row_split {
            (states.buffer(), (0, outputs * (splits + 1) * 16))
        } else {
            (states.buffer(), (0, column_states(p).max(16)))
        };
        for &stage in stages(p) {
            // The split kernels' combinations: a workgroup per output (rows), min(blocks, WG)
            // invocations a quad (columns).
            let combine = stage % 2 == 1;
            let sharers = if combine { blocks(p).min(WG) } else { parts(p) };
            let g = match combine {
                true if row_split => outputs,
                true => quads(p).div_ceil(WG / sharers),
                false => groups(p),
            };
            let gx = g.min(max_groups).max(1);
            u.stage = stage;
            u.grid_row = match kernel {
                ReduceKernel::Columns => gx * WG,
                ReduceKernel::ColumnSplits => gx * (WG / sharers),
                _ => gx,
            } as u32;
            dispatches.push(Dispatch { key: key.clone(), params: u, bindings: vec![out, (b.input, w[1]), input4, indices, out4, st], grid: (gx as u32, g.div_ceil(gx) as u32) });
        }
    }
    dispatch::record(rt, rec, work.name(), SLOTS, &dispatches)?;
    drop(dispatches);
    rec.hold(states);
    rec.hold(spare);
    rec.hold(spare4);
    rec.hold(spare_out);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{column_blocks, column_splits, LOOP_CAP, MOST_BLOCKS, SPLIT_FILL, WG};

    /// Blocks of the columns' split: the channels-last statistics of [8, 64, 56, 56] (per
    /// channel: 16 quads of 25,088 elements; per image and channel: 128 quads of 3136) and
    /// `sum(dim=0)` of [4096, 4096] get enough workgroups to fill a large GPU; many quads keep
    /// one block; every walker stays within the loop cap and walks at least 16 steps where the
    /// fill wants blocks; scans keep one block.
    #[test]
    fn column_blocks_fill_a_gpu_within_the_loop_cap() {
        for (quads, extent, want) in [(16u64, 25_088u64, 32u64), (128, 3136, 4), (1024, 4096, 2), (4096, 64, 1), (1, 70_000, 128)] {
            let parts = column_splits(quads, extent);
            assert_eq!(column_blocks(quads, parts, extent, true), want, "{quads} quads of {extent}");
            assert_eq!(column_blocks(quads, parts, extent, false), 1);
        }
        for quads in [1u64, 3, 16, 100, 1024, 5000, 1 << 20] {
            for extent in [16u64, 100, 4096, 16_385, 100_000, 1 << 22, 2 * MOST_BLOCKS * LOOP_CAP as u64] {
                let parts = column_splits(quads, extent);
                let blocks = column_blocks(quads, parts, extent, true);
                assert!(blocks.is_power_of_two() && blocks <= MOST_BLOCKS, "{quads} quads of {extent}: {blocks}");
                let steps = extent.div_ceil(parts * blocks);
                assert!(steps <= LOOP_CAP as u64, "{quads} quads of {extent}: {steps} steps");
                let groups = quads.div_ceil(WG / parts);
                if blocks > 1 && extent.div_ceil(parts * LOOP_CAP as u64) < blocks {
                    assert!(groups * blocks <= 2 * SPLIT_FILL && extent / (parts * blocks) >= 16, "{quads} quads of {extent}: {blocks} blocks of {groups}");
                }
            }
        }
    }
}
