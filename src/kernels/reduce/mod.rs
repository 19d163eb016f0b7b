//! The reduction kernels: reductions, softmax, log_softmax and cumsum recorded from a
//! [`ReducePlan`] into a caller's encoder. f32 calls whose plan has a contiguous innermost
//! reduced dim (rows) or a contiguous kept dim (columns) run the vector kernels of
//! [`reduce_vec`](crate::kernels::reduce::kernel) (its `kernel_for` is the one eligibility check);
//! everything else runs `reduce_general.wgsl`, recorded here. The plan is cut into pieces along
//! kept dims only (each output's reduction stays whole) whose bindings fit the adapter; each
//! piece is one dispatch of the general kernel: one invocation per output (per row of a scan),
//! walking its elements in the plan's (memory) order with one accumulator, so every run gives
//! the same bits. One general pipeline serves every op and type (they are uniforms), and one
//! per op serves f32.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::dispatch::{self, Dispatch};
pub mod abi;
pub mod kernel;

use abi::{code, indices_binding, indices_fit, plan_uniform};
pub(crate) use abi::{Buffers, Types, Work, MAX_DIMS};
use kernel::ReduceKernel;
use crate::kernels::shaders::PipelineSpec;
use crate::plan::{Cuts, IterPlan};
use crate::reduce::ReducePlan;
use crate::runtime::record::Recorder;
use crate::runtime::{PipelineKey, Runtime, Slot};


/// Invocations per workgroup.
const WG: u64 = 64;

/// The bindings: the uniform, the output, the input, the indices of `max` / `min`, the part
/// states.
const SLOTS: &[Slot] = &[Slot::Uniform, Slot::Write, Slot::Read, Slot::Write, Slot::Write];

/// Elements one invocation walks at most (fewer on CPU adapters for many reduced dims):
/// software adapters cap a loop's turns (llvmpipe leaves a loop after 65,535; the kernels
/// budget [`SOFTWARE_LOOP_BUDGET`](crate::kernels::SOFTWARE_LOOP_BUDGET)), and longer reductions
/// spread over more invocations.
pub const CHUNK: usize = 4096;

/// Interleaved parts of a contiguous row.
const IPARTS: usize = 64;

/// Records `work` over `rp` into `enc`. Fails (recording nothing) when one output's
/// reduction does not fit a binding ([`Error::Limit`]) or its plan has more than 8 reduced
/// dims ([`Error::Unsupported`]).
pub(crate) fn record(rt: &Runtime, rec: &mut Recorder, rp: &ReducePlan, work: Work, t: Types, b: &Buffers<'_>) -> Result<()> {
    if rp.outputs == 0 {
        return Ok(());
    }
    if rp.rrank > MAX_DIMS {
        return Err(Error::unsupported(work.name(), format!("a reduction over {} dims that cannot be merged (at most {MAX_DIMS}); plan {:?}", rp.rrank, rp.plan)));
    }
    let kernel = kernel::kernel_for(rp, work, t, rt.report.device_type);
    if kernel != ReduceKernel::General {
        return kernel::record(rt, rec, rp, work, kernel, b);
    }
    let scan = matches!(work, Work::Scan(_));
    let reads = rp.extent > 0;
    let rep = &rt.report;
    let align = rep.min_storage_buffer_offset_alignment as u64;
    let max_bind = rep.max_storage_buffer_binding_size.min(u32::MAX as u64 + 1);
    let max_groups = rep.max_compute_workgroups_per_dimension as u64;
    let sizes = [t.out.size() as u64, t.input.size() as u64];
    let bufs = [b.out, b.input];
    // The bound byte window (start, length) of the output (0) and the input (1).
    let windows = |p: &IterPlan| -> [(u64, u64); 2] {
        [0, 1].map(|k| {
            if k == 1 && !reads {
                return (0, 16);
            }
            let (lo, hi) = p.span(k).unwrap_or((0, 0));
            let (lo, hi) = (lo as u64 * sizes[k], (hi as u64 + 1) * sizes[k]);
            let start = lo / align * align;
            (start, hi.div_ceil(4).saturating_mul(4).min(bufs[k].size()) - start)
        })
    };
    let extent = rp.extent.max(1);
    // Parts per output, and the part states' bytes for `outputs` outputs (one more state per
    // row holds a softmax row's combined state).
    // Rows contiguous in memory (not scans) go in interleaved parts: part p of a row takes
    // elements p, p + parts, ..., so that neighbouring invocations read neighbouring elements
    // (on lavapipe, 8 lanes of one vector load).
    // On CPU adapters an invocation's walk stays within the loop bound
    // (`SOFTWARE_LOOP_ITERATIONS`): each element's offsets take a loop over the reduced dims,
    // and a scan walks its part twice (its state, then its writes).
    let chunk = if rep.device_type == wgpu::DeviceType::Cpu { (crate::kernels::SOFTWARE_LOOP_BUDGET as usize / (2 * (rp.rrank + 3))).min(CHUNK) } else { CHUNK };
    let interleave = !scan && rp.rrank == 1 && rp.plan.strides_of(1)[0] == 1 && rp.extent >= 8 * IPARTS && rp.extent <= IPARTS * chunk;
    let parts = if interleave { IPARTS as u64 } else { rp.extent.div_ceil(chunk).max(1) as u64 };
    let state_bytes = |outputs: u64| if parts > 1 { outputs * (parts + 1) * 16 } else { 16 };
    let fits = |p: &IterPlan| {
        let outputs = (p.numel() / extent) as u64;
        let groups = (outputs * parts).div_ceil(WG);
        let gx = groups.min(max_groups);
        p.rank() <= MAX_DIMS
            && windows(p).iter().all(|&(_, len)| len <= max_bind)
            && indices_fit(b.indices.filter(|_| !scan), p, align, max_bind)
            && state_bytes(outputs) <= max_bind
            && p.numel() <= u32::MAX as usize
            && outputs * (parts + 1) <= u32::MAX as u64
            && groups.div_ceil(gx.max(1)) <= max_groups
            && (0..3).all(|k| p.strides_of(k).iter().all(|&x| i32::try_from(x).is_ok()))
    };
    let cuts = Cuts { keep: rp.rrank, grain0: 1, max_rank: MAX_DIMS };
    let pieces = rp.plan.pieces(cuts, fits).map_err(|p| {
        let len = windows(&p).iter().map(|w| w.1).max().unwrap_or(0);
        Error::Limit { op: work.name(), what: format!("binding the input of one output's reduction (plan {p:?})"), limit: "max_storage_buffer_binding_size", requested: len, max: max_bind }
    })?;
    // Bindings a call does not use get buffers of their own (a buffer bound writable may not
    // be bound twice in a dispatch). Pieces run one after another, so they share the states.
    let most = pieces.iter().map(|p| (p.numel() / extent) as u64).max().unwrap_or(0);
    let states = rt.buffer(work.name(), state_bytes(most), wgpu::BufferUsages::STORAGE)?;
    let spare = rt.buffer(work.name(), 16, wgpu::BufferUsages::STORAGE)?;
    let spare_in = rt.buffer(work.name(), 16, wgpu::BufferUsages::STORAGE)?;
    let (op, divisor) = code(work, rp.extent);
    let key = PipelineKey { shader: "reduce_general", constants: specialize(op, t) };
    let modes: &[u32] = match (parts > 1, scan) {
        (false, _) => &[0],
        (true, false) => &[1, 2],
        (true, true) => &[1, 2, 3],
    };
    let mut dispatches = Vec::with_capacity(pieces.len() * modes.len());
    for p in &pieces {
        let w = windows(p);
        let outputs = (p.numel() / extent) as u64;
        let mut u = plan_uniform(p);
        u.offsets[0] = (p.offset_of(0) as u64 - w[0].0 / sizes[0]) as u32;
        u.offsets[1] = if reads { (p.offset_of(1) as u64 - w[1].0 / sizes[1]) as u32 } else { 0 };
        u.offsets[2] = p.offset_of(2) as u32;
        u.rrank = rp.rrank as u32;
        u.outputs = outputs as u32;
        u.extent = rp.extent as u32;
        u.op = op;
        u.in_t = t.input.code();
        u.cast_t = t.cast.code();
        u.out_t = t.out.code();
        u.divisor = divisor;
        u.parts = parts as u32;
        u.chunk = if interleave { 0 } else { chunk as u32 };
        let input = if reads { (b.input, w[1]) } else { (spare_in.buffer(), (0, 16)) };
        let indices = indices_binding(b.indices.filter(|_| !scan), rp, p, align, &mut u, spare.buffer());
        for &mode in modes {
            let threads = if mode == 1 || mode == 3 { outputs * parts } else { outputs };
            let groups = threads.div_ceil(WG);
            let gx = groups.min(max_groups);
            let gy = groups.div_ceil(gx.max(1));
            u.mode = mode;
            u.grid_row = (gx * WG) as u32;
            let st = (states.buffer(), (0, state_bytes(outputs)));
            dispatches.push(Dispatch { key: key.clone(), params: u, bindings: vec![(b.out, w[0]), input, indices, st], grid: (gx as u32, gy as u32) });
        }
    }
    dispatch::record(rt, rec, work.name(), SLOTS, &dispatches)?;
    drop(dispatches);
    rec.hold(spare);
    rec.hold(spare_in);
    rec.hold(states);
    Ok(())
}

/// The override constants of a call: f32 reductions (f32 in, f32 or index out) get a pipeline
/// per op with every branch on the op and the types folded (the software adapters' compilers
/// then run 5-10x faster); any other call runs the one general pipeline, which reads both from
/// the uniform.
fn specialize(op: u32, t: Types) -> Vec<(&'static str, i64)> {
    let f32_only = t.input == DType::F32 && t.cast == DType::F32 && matches!(t.out, DType::F32 | DType::I32);
    if f32_only {
        vec![("OPC", op as i64), ("F32", 1)]
    } else {
        vec![]
    }
}

/// Every reduction pipeline a GPU may run, for the register-budget test: the general kernel's
/// (one for any op and type, one per op of f32), the rows and columns kernels' (one per op).
pub fn gpu_pipelines() -> Vec<PipelineSpec> {
    let mut v = vec![PipelineSpec { kernel: "reduce_general", constants: vec![] }];
    let f32s = Types { input: DType::F32, cast: DType::F32, out: DType::F32 };
    for op in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 20, 21, 22] {
        v.push(PipelineSpec { kernel: "reduce_general", constants: specialize(op, f32s) });
    }
    v.extend(kernel::gpu_pipelines());
    v
}
