//! The reduction kernels: reductions, softmax, log_softmax and cumsum recorded from a
//! [`ReducePlan`] into a caller's encoder. The plan is cut into pieces along kept dims only
//! (each output's reduction stays whole) whose bindings fit the adapter; each piece is one
//! dispatch of `reduce_general.wgsl`: one invocation per output (per row of a scan), walking its
//! elements in the plan's (memory) order with one accumulator, so every run gives the same
//! bits. One pipeline serves every op and type (they are uniforms, not override constants).

use bytemuck::Zeroable;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::abi::uniform;
use crate::kernels::dispatch::{self, Dispatch};
use crate::kernels::shaders::PipelineSpec;
use crate::plan::{Cuts, IterPlan};
use crate::reduce::{ReduceOp, ReducePlan, ScanOp};
use crate::runtime::submit::Keep;
use crate::runtime::{PipelineKey, Runtime, Slot};

const OP: &str = "reduce";

/// Dims a piece's plan may have.
const MAX_DIMS: usize = 8;

/// Invocations per workgroup.
const WG: u64 = 64;

/// The bindings: the uniform, the output, the input, the indices of `max` / `min`, the part
/// states.
const SLOTS: &[Slot] = &[Slot::Uniform, Slot::Write, Slot::Read, Slot::Write, Slot::Write];

/// Elements one invocation walks at most: software adapters cap a loop's iterations (lavapipe
/// stops a loop after about 32,000), and longer reductions spread over more invocations.
pub const CHUNK: usize = 4096;

/// Interleaved parts of a contiguous row.
const IPARTS: usize = 64;

uniform! {
    /// The uniform of the reduction kernels (`Red` in shaders/preludes/reduce.wgsl).
    pub(crate) struct RedUniform {
        sizes: [u32; MAX_DIMS],
        strides: [i32; 3 * MAX_DIMS],
        offsets: [u32; 4],
        rank: u32,
        rrank: u32,
        outputs: u32,
        extent: u32,
        op: u32,
        in_t: u32,
        cast_t: u32,
        out_t: u32,
        grid_row: u32,
        correction: f32,
        mode: u32,
        parts: u32,
        chunk: u32,
        pad0: u32,
        pad1: u32,
        pad2: u32,
    }
}

/// What a kernel computes: a reduction or a scan, with its op code.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Work {
    /// A reduction.
    Reduce(ReduceOp),
    /// An op along a dim.
    Scan(ScanOp),
}

/// The op code of `reduce.wgsl` (its `R_*` constants) and the correction of var / std.
fn code(w: Work) -> (u32, f32) {
    match w {
        Work::Reduce(op) => match op {
            ReduceOp::Sum => (0, 0.0),
            ReduceOp::Mean => (1, 0.0),
            ReduceOp::Prod => (2, 0.0),
            ReduceOp::Amax => (3, 0.0),
            ReduceOp::Amin => (4, 0.0),
            ReduceOp::Argmax => (5, 0.0),
            ReduceOp::Argmin => (6, 0.0),
            ReduceOp::Max => (7, 0.0),
            ReduceOp::Min => (8, 0.0),
            ReduceOp::Var { correction } => (9, correction as f32),
            ReduceOp::Std { correction } => (10, correction as f32),
            ReduceOp::Norm { p: 1.0 } => (11, 0.0),
            ReduceOp::Norm { p: 2.0 } => (12, 0.0),
            ReduceOp::Norm { .. } => (13, 0.0),
            ReduceOp::Logsumexp => (14, 0.0),
        },
        Work::Scan(ScanOp::Softmax) => (20, 0.0),
        Work::Scan(ScanOp::LogSoftmax) => (21, 0.0),
        Work::Scan(ScanOp::Cumsum) => (22, 0.0),
    }
}

/// The types of a call: the input's, the one it is converted to before the arithmetic, the
/// output's.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Types {
    pub input: DType,
    pub cast: DType,
    pub out: DType,
}

/// The buffers of a call: output, input, and the indices of `max` / `min` (`indices_offset`
/// its element of linear index 0; it has the output's strides).
pub(crate) struct Buffers<'a> {
    pub out: &'a wgpu::Buffer,
    pub input: &'a wgpu::Buffer,
    pub indices: Option<(&'a wgpu::Buffer, usize)>,
}

/// Records `work` over `rp` into `enc`. Fails (recording nothing) when one output's
/// reduction does not fit a binding ([`Error::Limit`]) or its plan has more than 8 reduced
/// dims ([`Error::Unsupported`]).
pub(crate) fn record(rt: &Runtime, enc: &mut wgpu::CommandEncoder, keep: &mut Keep, rp: &ReducePlan, work: Work, t: Types, b: &Buffers<'_>) -> Result<()> {
    if rp.outputs == 0 {
        return Ok(());
    }
    if rp.rrank > MAX_DIMS {
        return Err(Error::unsupported(OP, format!("a reduction over {} dims that cannot be merged (at most {MAX_DIMS}); plan {:?}", rp.rrank, rp.plan)));
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
    let interleave = !scan && rp.rrank == 1 && rp.plan.strides_of(1)[0] == 1 && rp.extent >= 8 * IPARTS && rp.extent <= IPARTS * CHUNK;
    let parts = if interleave { IPARTS as u64 } else { rp.extent.div_ceil(CHUNK).max(1) as u64 };
    let state_bytes = |outputs: u64| if parts > 1 { outputs * (parts + 1) * 16 } else { 16 };
    let fits = |p: &IterPlan| {
        let outputs = (p.numel() / extent) as u64;
        let groups = (outputs * parts).div_ceil(WG);
        let gx = groups.min(max_groups);
        p.rank() <= MAX_DIMS
            && windows(p).iter().all(|&(_, len)| len <= max_bind)
            && state_bytes(outputs) <= max_bind
            && p.numel() <= u32::MAX as usize
            && outputs * (parts + 1) <= u32::MAX as u64
            && groups.div_ceil(gx.max(1)) <= max_groups
            && (0..3).all(|k| p.strides_of(k).iter().all(|&x| i32::try_from(x).is_ok()))
    };
    let cuts = Cuts { keep: rp.rrank, grain0: 1, max_rank: MAX_DIMS };
    let pieces = rp.plan.pieces(cuts, fits).map_err(|p| {
        let len = windows(&p).iter().map(|w| w.1).max().unwrap_or(0);
        Error::Limit { op: OP, what: format!("binding the input of one output's reduction (plan {p:?})"), limit: "max_storage_buffer_binding_size", requested: len, max: max_bind }
    })?;
    // Bindings a call does not use get buffers of their own (a buffer bound writable may not
    // be bound twice in a dispatch). Pieces run one after another, so they share the states.
    let most = pieces.iter().map(|p| (p.numel() / extent) as u64).max().unwrap_or(0);
    let states = rt.buffer(OP, state_bytes(most), wgpu::BufferUsages::STORAGE)?;
    let spare = rt.buffer(OP, 16, wgpu::BufferUsages::STORAGE)?;
    let spare_in = rt.buffer(OP, 16, wgpu::BufferUsages::STORAGE)?;
    let (op, correction) = code(work);
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
        let mut u = RedUniform::zeroed();
        u.sizes = [1; MAX_DIMS];
        for d in 0..p.rank() {
            u.sizes[d] = p.sizes()[d] as u32;
            for k in 0..3 {
                u.strides[MAX_DIMS * k + d] = p.strides_of(k)[d] as i32;
            }
        }
        u.offsets[0] = (p.offset_of(0) as u64 - w[0].0 / sizes[0]) as u32;
        u.offsets[1] = if reads { (p.offset_of(1) as u64 - w[1].0 / sizes[1]) as u32 } else { 0 };
        u.offsets[2] = p.offset_of(2) as u32;
        u.rank = p.rank() as u32;
        u.rrank = rp.rrank as u32;
        u.outputs = outputs as u32;
        u.extent = rp.extent as u32;
        u.op = op;
        u.in_t = t.input.code();
        u.cast_t = t.cast.code();
        u.out_t = t.out.code();
        u.correction = correction;
        u.parts = parts as u32;
        u.chunk = if interleave { 0 } else { CHUNK as u32 };
        let input = if reads { (b.input, w[1]) } else { (spare_in.buffer(), (0, 16)) };
        let indices = match b.indices {
            Some((buf, off)) if !scan => {
                // The indices have the output's strides, `delta` elements from it.
                let delta = off as i64 - rp.plan.offset_of(0) as i64;
                let (slo, shi) = p.span(0).unwrap_or((0, 0));
                let (lo, hi) = ((slo as i64 + delta) as u64, (shi as i64 + delta) as u64);
                let start = lo * 4 / align * align;
                u.offsets[3] = ((p.offset_of(0) as i64 + delta) as u64 - start / 4) as u32;
                (buf, (start, ((hi + 1) * 4).min(buf.size()) - start))
            }
            _ => (spare.buffer(), (0, 16)),
        };
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
    dispatch::record(rt, enc, keep, OP, SLOTS, &dispatches)?;
    drop(dispatches);
    keep.hold(spare);
    keep.hold(spare_in);
    keep.hold(states);
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

/// Every reduction pipeline a GPU may run, for the register-budget test (one: ops and types
/// are uniforms).
pub fn gpu_pipelines() -> Vec<PipelineSpec> {
    let mut v = vec![PipelineSpec { kernel: "reduce_general", constants: vec![] }];
    let f32s = Types { input: DType::F32, cast: DType::F32, out: DType::F32 };
    for op in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 20, 21, 22] {
        v.push(PipelineSpec { kernel: "reduce_general", constants: specialize(op, f32s) });
    }
    v
}

#[cfg(test)]
mod tests {
    use super::{code, Work};
    use crate::reduce::{ReduceOp, ScanOp};

    /// The op codes `code` gives are the `R_*` constants of reduce.wgsl, one for one.
    #[test]
    fn op_codes_are_the_wgsl_constants() {
        let text = include_str!("../../shaders/preludes/reduce.wgsl");
        let wgsl: Vec<(&str, u32)> = text
            .lines()
            .filter_map(|l| l.strip_prefix("const R_"))
            .map(|l| {
                let (name, rest) = l.split_once(": u32 = ").expect("const R_<NAME>: u32 = <n>u;");
                (name, rest.trim_end_matches("u;").parse().expect("a u32 code"))
            })
            .collect();
        let ours = [
            ("SUM", Work::Reduce(ReduceOp::Sum)),
            ("MEAN", Work::Reduce(ReduceOp::Mean)),
            ("PROD", Work::Reduce(ReduceOp::Prod)),
            ("AMAX", Work::Reduce(ReduceOp::Amax)),
            ("AMIN", Work::Reduce(ReduceOp::Amin)),
            ("ARGMAX", Work::Reduce(ReduceOp::Argmax)),
            ("ARGMIN", Work::Reduce(ReduceOp::Argmin)),
            ("MAX", Work::Reduce(ReduceOp::Max)),
            ("MIN", Work::Reduce(ReduceOp::Min)),
            ("VAR", Work::Reduce(ReduceOp::Var { correction: 1.0 })),
            ("STD", Work::Reduce(ReduceOp::Std { correction: 1.0 })),
            ("NORM1", Work::Reduce(ReduceOp::Norm { p: 1.0 })),
            ("NORM2", Work::Reduce(ReduceOp::Norm { p: 2.0 })),
            ("NORMINF", Work::Reduce(ReduceOp::Norm { p: f64::INFINITY })),
            ("LOGSUMEXP", Work::Reduce(ReduceOp::Logsumexp)),
            ("SOFTMAX", Work::Scan(ScanOp::Softmax)),
            ("LOG_SOFTMAX", Work::Scan(ScanOp::LogSoftmax)),
            ("CUMSUM", Work::Scan(ScanOp::Cumsum)),
        ];
        assert_eq!(wgsl.len(), ours.len(), "reduce.wgsl's R_* constants: {wgsl:?}");
        for (name, work) in ours {
            let Some(&(_, v)) = wgsl.iter().find(|(n, _)| *n == name) else { panic!("no R_{name} in reduce.wgsl") };
            assert_eq!(code(work).0, v, "R_{name}");
        }
    }
}
