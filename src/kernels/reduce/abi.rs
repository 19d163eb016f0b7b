//! What the reduction kernels share: their uniform, the op codes of `reduce.wgsl`, the types
//! and buffers of a call, and the binding of the indices that `max` / `min` write.

use bytemuck::Zeroable;

use crate::dtype::DType;
use crate::kernels::abi::uniform;
use crate::plan::IterPlan;
use crate::reduce::{ReduceOp, ReducePlan, ScanOp};

/// Dims a piece's plan may have.
pub(crate) const MAX_DIMS: usize = 8;

uniform! {
    /// The uniform of the reduction kernels (`Red` in shaders/preludes/reduce.wgsl).
    pub(crate) struct RedUniform {
        pub(crate) sizes: [u32; MAX_DIMS],
        pub(crate) strides: [i32; 3 * MAX_DIMS],
        pub(crate) offsets: [u32; 4],
        pub(crate) rank: u32,
        pub(crate) rrank: u32,
        pub(crate) outputs: u32,
        pub(crate) extent: u32,
        pub(crate) op: u32,
        pub(crate) in_t: u32,
        pub(crate) cast_t: u32,
        pub(crate) out_t: u32,
        pub(crate) grid_row: u32,
        pub(crate) divisor: f32,
        pub(crate) mode: u32,
        pub(crate) parts: u32,
        pub(crate) chunk: u32,
        pub(crate) stage: u32,
        pub(crate) blocks: u32,
        pub(crate) pad2: u32,
    }
}

/// What a kernel computes: a reduction or a scan, with its op code.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Work {
    /// A reduction.
    Reduce(ReduceOp),
    /// An op along a dim.
    Scan(ScanOp),
}

impl Work {
    /// The op's name, for errors.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Work::Reduce(op) => op.name(),
            Work::Scan(op) => op.name(),
        }
    }
}

/// The op code of `reduce.wgsl` (its `R_*` constants) and, for var / std over `extent`
/// elements, the divisor of the squared deviations' sum: PyTorch's `n > correction ? n -
/// correction : 0`, in f64 (a NaN correction divides by 0; one a hair under n stays apart
/// from it, which float32 arithmetic in the kernel could not tell).
pub(crate) fn code(w: Work, extent: usize) -> (u32, f32) {
    let divisor = |c: f64| {
        let n = extent as f64;
        (if n > c { n - c } else { 0.0 }) as f32
    };
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
            ReduceOp::Var { correction } => (9, divisor(correction)),
            ReduceOp::Std { correction } => (10, divisor(correction)),
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

/// The uniform of piece `p`: its rank, sizes (1 past the rank) and every operand's strides; the
/// rest zero.
pub(crate) fn plan_uniform(p: &IterPlan) -> RedUniform {
    let mut u = RedUniform::zeroed();
    u.sizes = [1; MAX_DIMS];
    for d in 0..p.rank() {
        u.sizes[d] = p.sizes()[d] as u32;
        for k in 0..3 {
            u.strides[MAX_DIMS * k + d] = p.strides_of(k)[d] as i32;
        }
    }
    u.rank = p.rank() as u32;
    u
}

/// Whether the indices window [`indices_binding`] makes for piece `p` (4 bytes an output, from
/// an offset aligned down to `align`) fits one binding of `max_bind` bytes; true without indices.
pub(crate) fn indices_fit(indices: Option<(&wgpu::Buffer, usize)>, p: &IterPlan, align: u64, max_bind: u64) -> bool {
    indices.is_none() || {
        let (lo, hi) = p.span(0).unwrap_or((0, 0));
        ((hi - lo) as u64 + 1) * 4 + align <= max_bind
    }
}

/// The binding of the indices (`Buffers::indices`, where the call writes them) for piece `p`
/// of `rp`: the window the piece writes, from its lowest element aligned down to `align` bytes,
/// with `u.offsets[3]` set to the piece's element of linear index 0 within it; else `spare`.
pub(crate) fn indices_binding<'s>(indices: Option<(&'s wgpu::Buffer, usize)>, rp: &ReducePlan, p: &IterPlan, align: u64, u: &mut RedUniform, spare: &'s wgpu::Buffer) -> (&'s wgpu::Buffer, (u64, u64)) {
    let Some((buf, off)) = indices else {
        return (spare, (0, 16));
    };
    // The indices have the output's strides, `delta` elements from it.
    let delta = off as i64 - rp.plan.offset_of(0) as i64;
    let (slo, shi) = p.span(0).unwrap_or((0, 0));
    let (lo, hi) = ((slo as i64 + delta) as u64, (shi as i64 + delta) as u64);
    let start = lo * 4 / align * align;
    u.offsets[3] = ((p.offset_of(0) as i64 + delta) as u64 - start / 4) as u32;
    (buf, (start, ((hi + 1) * 4).min(buf.size()) - start))
}

#[cfg(test)]
mod tests {
    use super::{code, Work};
    use crate::reduce::{ReduceOp, ScanOp};

    /// The op codes `code` gives are the `R_*` constants of reduce.wgsl, one for one.
    #[test]
    fn op_codes_are_the_wgsl_constants() {
        let text = include_str!("../../../shaders/preludes/reduce.wgsl");
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
            assert_eq!(code(work, 1).0, v, "R_{name}");
        }
    }
}
