//! The matrix products on the device ([`MatmulKernel`]): the tiled GEMM (`matmul_gemm.wgsl`,
//! on the GEMM engine that `conv2d_gemm.wgsl` also runs on: 64 x 64 tiles of 4 x 4 register
//! blocks, or the wide kernel's 128 x 128 tiles of 8 x 8, either with split-K), memory-bound
//! matrix-vector kernels (`matmul_vec.wgsl`, for m == 1 or n == 1), the CPU adapters' blocked
//! kernel and 1x1-convolution route, and the tensor cores (`matmul_coop.wgsl`). The GEMM and
//! matrix-vector kernels read every operand in place through its strides: transposed, sliced,
//! negative-step and broadcast (stride-0 batch) views alike, float16 and bfloat16 as packed
//! 32-bit words (the blocked kernel packs W; the caller widens 16-bit operands for the CPU
//! adapters' kernels, and reads an operand that shares the output's buffer from a copy). The
//! output is written through its strides: f32, or a 16-bit type rounded once from f32 by the
//! kernels that write one as they go ([`MatmulKernel::writes_half`]; the caller converts an
//! f32 scratch for the others). The kernels index a window in i32: one of more than 2^31
//! elements is an [`Error::Limit`].
//!
//! Batch dims that merge in every operand are merged, a batch whose right operand is broadcast
//! (stride 0) folds into the rows where A and the output allow, two batch dims go to the
//! kernel and any further ones become separate dispatches; a dispatch's operand windows must
//! each fit one binding (`max_storage_buffer_binding_size`), so the batch splits into ranges
//! that do; a single matrix that does not runs in pieces that do ([`pieces`]): runs of rows,
//! and runs of columns where B's columns are apart (B = Wᵀ of a weight W stored [n, k], as
//! `linear` reads it); a product one row of whose A (or one column of B) passes a binding
//! with a single column of B (row of A) beside it is an [`Error::Limit`] (that takes a split
//! of k).

use serde::{Deserialize, Serialize};

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::abi::uniform;
use crate::kernels::dispatch::{self, i32_of, u32_of, Dispatch};
use crate::kernels::shaders::PipelineSpec;
use crate::layout::Layout;
use crate::matmul::Activation;
use crate::runtime::record::Recorder;
use crate::runtime::{AdapterReport, PipelineKey, Runtime, Slot};

mod blocked;
mod class;
mod coop;
mod product;

pub(crate) use class::{matmul_class, Matmul};
pub use class::MatmulClass;
pub(crate) use product::{Operand, Product};
use product::{window, Shapes};

/// Bindings: the uniform, A, B, C (the addend) as 32-bit words, the f32 output, A and B as
/// vec4 words.
const SLOTS: &[Slot] = &[Slot::Uniform, Slot::Read, Slot::Read, Slot::Read, Slot::Write, Slot::Read, Slot::Read];

/// The GEMM kernel's output tile is PM x PN parts of this many rows x columns
/// ([`MatmulKernel::tile_parts`], the engine's PM and PN).
const PART: usize = 64;
/// The matrix-vector kernel's workgroup size.
const VEC_WG: usize = 64;
/// Rows per team of 8 lanes of the one-lane matrix-vector kernel: 16 for 16-bit types, 8 for
/// float32, the rule `matmul_vec.wgsl` applies to the dtype word (the grid is sized by it).
fn vec_rows(dtype: DType) -> usize {
    if dtype == DType::F32 {
        8
    } else {
        16
    }
}

uniform! {
    /// The uniform of the matrix-product kernels (`MatmulParams` in `shaders/preludes/matmul_params.wgsl`).
    pub(crate) struct MatmulParams {
        dims: [u32; 4],
        work: [u32; 4],
        sa: [i32; 4],
        sb: [i32; 4],
        sc: [i32; 4],
        so: [i32; 4],
        base: [i32; 4],
        epi: [u32; 4],
        split: [u32; 4],
    }
}

/// A matrix-product kernel. `Auto` lets the context choose (the kept choice of the call's
/// shape class, else [`MatmulKernel::default_for`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MatmulKernel {
    /// The context's choice.
    Auto,
    /// The tiled GEMM (any shape).
    Gemm,
    /// The tiled GEMM with its reduction split into slices (split-K, `kernels/split.rs`) where
    /// the product has fewer than 1024 output tiles of 64 x 64 and k is at least 128: each
    /// workgroup walks one slice of one tile, and a second dispatch (`matmul_gemm_sum.wgsl`)
    /// adds the slices in a fixed order and applies the epilogue. For products with few rows
    /// or columns and a long k (a classifier's `linear` on a small batch), whose few tiles leave
    /// most of a GPU idle. Elsewhere it runs as `Gemm`.
    GemmSplit,
    /// [`MatmulKernel::Gemm`] on wider tiles: 128 x 128 outputs per workgroup (128 x 64 or 64 x
    /// 128 where n or m is at most 64), each invocation a register block of 8 x 8 (8 x 4)
    /// outputs, so each value read from workgroup memory feeds twice the multiply-adds. Its
    /// reduction is cut by the rule a GPU's default takes `GemmSplit` by (fewer than 128 tiles
    /// of 64 x 64 and k of at least 256, `split::matmul_wants_split`) on the product's own
    /// sizes, into that kernel's slices: the bits of `GemmSplit` there and of `Gemm` elsewhere.
    /// (The default applies the rule to its class's magnitudes: near the rule's edges the two
    /// can decide differently.) A tuner candidate on GPUs, and their default under
    /// `STRIDED_WGPU_GEMM_TILES=wide` ([`AdapterReport::wide_gemm`]).
    GemmWide,
    /// The matrix-vector kernel for CPU adapters (m == 1 or n == 1): a team of 8 lanes walks k
    /// over 8 rows (16 for 16-bit types; `shaders/kernels/matmul_vec.wgsl`, `TEAMS`).
    Vec1,
    /// The matrix-vector kernel with 16 lanes per row, their partial sums meeting in workgroup
    /// memory: shaped for GPUs (neighbouring lanes read neighbouring elements).
    Vec16,
    /// The convolution family's CPU-adapter kernels: the product as a 1x1 convolution (A^T
    /// the input [1, k, m, 1] read in place, B the weight [n, k], a bias-like addend the bias),
    /// through the convolution's default kernel for that shape; one convolution per batch
    /// matrix. CPU adapters, float32, alpha == 1, no addend or a bias (beta == 1, the same for
    /// every row), no activation but ReLU, at most 128 batch matrices.
    Conv1x1,
    /// The convolution's CPU-adapter inner product over a batch of weights
    /// (`matmul_blocked.wgsl`): one dispatch per 64 reduction steps covers the whole batch.
    /// CPU adapters with subgroups of at least 8 invocations, float32, alpha == 1, no addend or
    /// an addend with beta == 1 (the same for every row of a matrix, its buffer within one
    /// binding, or any where the output's columns have unit stride), no activation but ReLU, at most two batch dims
    /// after merging, X, the output and the packed B each within one binding. Also runs
    /// grouped 1x1 convolutions on CPU adapters (one product over the images and groups).
    Blocked,
    /// The tensor-core product (`matmul_coop.wgsl`): float16 operands on cooperative matrices
    /// (16 x 16 x 16 fragments, f32 accumulation, 128 x 128 tiles; 8 x 8 x 8 and 64 x 64 where
    /// the device offers only those, as Mesa 26's lavapipe), fragments loaded straight from the
    /// operands' storage, the epilogue (alpha, addend, activation) as the other kernels'.
    /// Devices that run cooperative matrices ([`AdapterReport::cooperative_matrix`]), m, n and k
    /// multiples of the fragment side, A and B row- or column-major with 16-byte-aligned pitch,
    /// batch strides and offset (the output too where there is no epilogue). The automatic
    /// choice where it applies (after the CPU adapters' large-product kernels and split-K for
    /// few tiles) to a product without an epilogue whose f32 scratch (where the device does not
    /// take every path) fits a binding; with an epilogue, only when forced unless the device
    /// takes every tensor-core path (that path has not run on a GPU yet).
    Coop,
}

/// The floor(log2) of the multiply-adds (m, n, k and batch together) from which a CPU adapter's
/// default is the [`MatmulKernel::Conv1x1`] route.
pub const CONV_MIN_LOG2: u32 = 22;

/// The most batch matrices the [`MatmulKernel::Conv1x1`] route records (one convolution each).
pub const CONV_BATCHES: usize = 128;

impl MatmulKernel {
    /// Every kernel but `Auto`.
    pub const ALL: [MatmulKernel; 8] = [MatmulKernel::Gemm, MatmulKernel::GemmSplit, MatmulKernel::GemmWide, MatmulKernel::Vec1, MatmulKernel::Vec16, MatmulKernel::Conv1x1, MatmulKernel::Blocked, MatmulKernel::Coop];

    /// The one eligibility check on m and n, for the automatic choice and forced kernels
    /// alike: the matrix-vector kernels need m == 1 or n == 1 (the `Conv1x1` route's and the
    /// `Blocked` kernel's own checks look at the whole product, at the class and at record).
    pub fn eligible(self, m: usize, n: usize) -> Result<()> {
        match self {
            MatmulKernel::Conv1x1 | MatmulKernel::Blocked | MatmulKernel::Coop => Ok(()),
            MatmulKernel::Vec1 | MatmulKernel::Vec16 if m != 1 && n != 1 => Err(Error::unsupported("matmul", format!("the matrix-vector kernel {self:?} needs m == 1 or n == 1, got m = {m}, n = {n}"))),
            _ => Ok(()),
        }
    }

    /// The GEMM's tile parts for an m x n output: (PM, PN), its tile 64PM x 64PN.
    pub(crate) fn tile_parts(self, m: usize, n: usize) -> (usize, usize) {
        match self {
            MatmulKernel::GemmWide => (if m > PART { 2 } else { 1 }, if n > PART { 2 } else { 1 }),
            _ => (1, 1),
        }
    }

    /// Whether the kernel writes a float16 or bfloat16 product's output as it is on the adapter
    /// of `report` (the SIMT kernels: `matmul_gemm16`, `matmul_gemm_sum16`, `matmul_vec16`; the
    /// tensor-core kernel where the device takes every tensor-core path, `matmul_coop_half`),
    /// rather than an f32 result that a recorded copy rounds (the CPU-adapter kernels; the
    /// tensor-core kernel elsewhere).
    pub fn writes_half(self, report: &AdapterReport) -> bool {
        match self {
            MatmulKernel::Gemm | MatmulKernel::GemmSplit | MatmulKernel::GemmWide | MatmulKernel::Vec1 | MatmulKernel::Vec16 => true,
            MatmulKernel::Coop => coop::writes_half(report),
            _ => false,
        }
    }

    /// The lanes per row of a matrix-vector kernel (0 for the GEMM).
    fn lanes(self) -> u32 {
        match self {
            MatmulKernel::Vec1 => 1,
            MatmulKernel::Vec16 => 16,
            _ => 0,
        }
    }
}

/// Every matrix-product pipeline a GPU may pick (the register-budget test compiles them): the
/// GEMM (whole, and split-K's two; on 64 x 64 tiles and each wide shape; each staging form, and
/// float32 operands apart), and the matrix-vector kernel with L lanes a row (`Vec16`: float32, and 16-bit types
/// under `HALVES`) and with one (`Vec1`, the CPU adapters' default, a candidate everywhere);
/// every other variation is a uniform. Not the tensor-core kernel (`matmul_coop`): the RADV
/// compiler the budget test drives (Mesa 22.3) has no cooperative matrices.
pub fn gpu_pipelines() -> Vec<PipelineSpec> {
    // The GEMM's tiles (whole, and split-K's slices) in each staging form (`A_STEPS`,
    // `B_STEPS`), and, writing float32, for float32 operands (`F32_IN`) and 16-bit ones.
    let tiles: [&[(&'static str, i64)]; 8] = [&[], &[("SPLIT", 1)], &[("PM", 2), ("PN", 1)], &[("PM", 1), ("PN", 2)], &[("PM", 2), ("PN", 2)], &[("SPLIT", 1), ("PM", 2), ("PN", 1)], &[("SPLIT", 1), ("PM", 1), ("PN", 2)], &[("SPLIT", 1), ("PM", 2), ("PN", 2)]];
    let mut out = Vec::new();
    for (kernel, inputs) in [("matmul_gemm", &[false, true][..]), ("matmul_gemm16", &[false][..])] {
        for tile in tiles {
            // The 16-bit output's split-K sums its slices in float32 (`matmul_gemm_sum16`): its
            // slices run `matmul_gemm`.
            if kernel == "matmul_gemm16" && tile.contains(&("SPLIT", 1)) {
                continue;
            }
            for &f32_in in inputs {
                for (a, b) in [(false, false), (true, false), (false, true), (true, true)] {
                    let set = [("F32_IN", f32_in), ("A_STEPS", a), ("B_STEPS", b)];
                    let constants = tile.iter().copied().chain(set.into_iter().filter(|&(_, on)| on).map(|(name, _)| (name, 1))).collect();
                    out.push(PipelineSpec { kernel, constants });
                }
            }
        }
    }
    out.extend([
        PipelineSpec { kernel: "matmul_gemm_sum", constants: vec![] },
        PipelineSpec { kernel: "matmul_vec", constants: vec![] },
        PipelineSpec { kernel: "matmul_vec", constants: vec![("HALVES", 1)] },
        PipelineSpec { kernel: "matmul_vec", constants: vec![("TEAMS", 1)] },
        PipelineSpec { kernel: "matmul_gemm_sum16", constants: vec![] },
        PipelineSpec { kernel: "matmul_vec16", constants: vec![("HALVES", 1)] },
        PipelineSpec { kernel: "matmul_vec16", constants: vec![("TEAMS", 1)] },
    ]);
    out
}

/// Whether `kernel` (not `Auto`) serves `p`: its one check, as `record` makes it, with the
/// reason where not.
pub(crate) fn kernel_eligible(report: &AdapterReport, p: &Product<'_>, kernel: MatmulKernel) -> Result<()> {
    eligible(report, p, &Shapes::of(p), kernel)
}

/// The longest k a matrix-vector kernel's lane walks on a CPU adapter: k / 8 loop turns (a
/// lane of a team of 8 taking a word a turn, one element where rows are not 16-byte words),
/// within Mesa's loop bound (`SOFTWARE_LOOP_ITERATIONS`: past it the loop is left silently,
/// a [1, 2^20] x [2^20, 2] product gave half its sum and never wrote the second output).
pub const CPU_VEC_K: usize = 400_000;

pub use crate::kernels::CPU_GEMM_K;

fn eligible(report: &AdapterReport, p: &Product<'_>, s: &Shapes, kernel: MatmulKernel) -> Result<()> {
    kernel.eligible(s.m, s.n)?;
    if report.device_type == wgpu::DeviceType::Cpu && matches!(kernel, MatmulKernel::Vec1 | MatmulKernel::Vec16) && s.k > CPU_VEC_K {
        return Err(Error::unsupported(p.op, format!("the matrix-vector kernel {kernel:?} walks k = {} in one lane, past a CPU adapter's loop bound (k at most {CPU_VEC_K})", s.k)));
    }
    if p.out_half && !kernel.writes_half(report) {
        return Err(Error::unsupported(p.op, format!("{kernel:?} writes an f32 output, not the {:?} one asked for", p.dtype)));
    }
    match kernel {
        MatmulKernel::Conv1x1 => conv_route(report, p, s),
        MatmulKernel::Blocked => blocked::eligible(report, p, s),
        MatmulKernel::Coop => coop::eligible(report, p, s),
        _ => Ok(()),
    }
}

/// Records `p` through `kernel` (not `Auto`; eligible) into `enc`; temporaries go to `keep`.
pub(crate) fn record(rt: &Runtime, rec: &mut Recorder, p: &Product<'_>, kernel: MatmulKernel) -> Result<()> {
    let op = p.op;
    let s = Shapes::of(p);
    eligible(&rt.report, p, &s, kernel)?;
    if s.m * s.n == 0 || s.batch.iter().product::<usize>() == 0 {
        return Ok(());
    }
    // The kernels step along k in u32 (r0 + BK, k + lanes): a k near 2^32 (an expanded
    // operand's) would wrap and never end.
    if s.k > i32::MAX as usize {
        return Err(Error::overflow(op, format!("a reduction of k = {} steps (at most {} in the kernels' u32 loops)", s.k, i32::MAX)));
    }
    match kernel {
        MatmulKernel::Conv1x1 => return record_conv(rt, rec, p, &s),
        MatmulKernel::Blocked => return blocked::record(rt, rec, p, &s),
        _ => {}
    }
    // The matrix-vector kernel sees n == 1 only: a product with m == 1 goes as its transpose.
    let flip = kernel.lanes() > 0 && s.m == 1 && s.n != 1;
    let s = if flip { s.transposed() } else { s };
    for piece in pieces(rt, p, &s, kernel)? {
        record_rows(rt, rec, p, piece, kernel, flip)?;
    }
    Ok(())
}

/// The operands' byte windows (A, B, C, the output) of one dispatch's matrices: the first
/// batch of the inner two batch dims (`[1, b1, rows, cols]`), rows `r.0..r.1` of A, C and the
/// output, columns `c.0..c.1` of B, C and the output.
fn piece_windows(s: &Shapes, es: [u64; 4], align: u64, r: (usize, usize), c: (usize, usize)) -> Result<Vec<(u64, u64)>> {
    let nb = s.batch.len();
    let b1 = if nb >= 2 { s.batch[nb - 1] } else { 1 };
    let (rows, cols) = (r.1 - r.0, c.1 - c.0);
    let dims = [[rows, s.k], [s.k, cols], [rows, cols], [rows, cols]];
    (0..4)
        .map(|i| {
            let v = &s.strides[i];
            let z1 = if nb >= 2 { v[nb - 1] } else { 0 };
            let t = [0, z1, v[nb], v[nb + 1]];
            Ok(window(&[1, b1, dims[i][0], dims[i][1]], &t, piece_offset(s, i, r.0, c.0), es[i], align)?.0)
        })
        .collect()
}

/// Operand `i`'s element offset at row `r0` (of A, C and the output) and column `c0` (of B,
/// C and the output).
fn piece_offset(s: &Shapes, i: usize, r0: usize, c0: usize) -> usize {
    let nb = s.batch.len();
    let (dr, dc) = match i {
        0 => (r0, 0),
        1 => (0, c0),
        _ => (r0, c0),
    };
    (s.offsets[i] as isize + dr as isize * s.strides[i][nb] + dc as isize * s.strides[i][nb + 1]) as usize
}

/// The pieces `s` is recorded in: the whole where one batch's operands fit one binding each
/// (every product but a huge single matrix), else runs of rows (a `linear` whose input's
/// batch folds into the rows, as [64, 1024, 768] on a 128 MiB binding, was an
/// `Error::Limit`), each the most rows whose A, C and output windows fit beside B's; where
/// not even one row fits beside the whole of B (B's columns apart: `x @ W.T` of a weight W
/// past a binding, GPT-2's tied [50257, 768] float32 head on WebGPU's default 128 MiB), runs
/// of columns first, each the most columns whose B, C and output windows fit beside one row
/// of A, then runs of rows within each. Runs are a multiple of the tensor cores' fragment side
/// for `Coop` (which reads and writes whole fragments). A window is measured at the first
/// batch's offset and kept an alignment below the limit: another batch's window starts at
/// another offset, aligned down by up to that much. Where not even one row beside one column
/// fits, the whole, which `record_rows` refuses.
fn pieces(rt: &Runtime, p: &Product<'_>, s: &Shapes, kernel: MatmulKernel) -> Result<Vec<Shapes>> {
    let es = [p.dtype.size() as u64, p.dtype.size() as u64, p.dtype.size() as u64, if p.out_half { p.dtype.size() as u64 } else { 4 }];
    let align = rt.report.min_storage_buffer_offset_alignment as u64;
    let max = rt.report.max_storage_buffer_binding_size.min(u32::MAX as u64 + 1);
    let fits = |r: (usize, usize), c: (usize, usize)| -> Result<bool> { Ok(piece_windows(s, es, align, r, c)?.iter().zip(es).all(|(w, e)| w.1.saturating_add(align) <= max && (w.1 + align) / e <= i32::MAX as u64)) };
    let q = if kernel == MatmulKernel::Coop { crate::kernels::coop::frag(&rt.report) } else { 1 };
    let whole = Ok(vec![s.clone()]);
    let (m, n) = (s.m, s.n);
    if fits((0, m), (0, n))? || m < q || n < q {
        return whole;
    }
    // Runs of `q`-multiples over `0..len`, each the most that `ok` takes from its start; None
    // where a run of `q` does not fit.
    let runs = |len: usize, ok: &dyn Fn(usize, usize) -> Result<bool>| -> Result<Option<Vec<(usize, usize)>>> {
        let mut out = Vec::new();
        let mut i0 = 0;
        while i0 < len {
            if !ok(i0, i0 + q)? {
                return Ok(None);
            }
            let hi = dispatch::most_that_fit(i0 + q, len, |i1| ok(i0, i1))?;
            let hi = i0 + (hi - i0) / q * q;
            out.push((i0, hi));
            i0 = hi;
        }
        Ok(Some(out))
    };
    let cols = if fits((0, q), (0, n))? {
        vec![(0, n)]
    } else {
        match runs(n, &|c0, c1| fits((0, q), (c0, c1)))? {
            Some(cols) => cols,
            None => return whole,
        }
    };
    let mut out = Vec::new();
    for c in cols {
        let Some(rows) = runs(m, &|r0, r1| fits((r0, r1), c))? else { return whole };
        for r in rows {
            let mut piece = s.clone();
            piece.m = r.1 - r.0;
            piece.n = c.1 - c.0;
            for i in 0..4 {
                piece.offsets[i] = piece_offset(s, i, r.0, c.0);
            }
            out.push(piece);
        }
    }
    Ok(out)
}

/// Records the rows `s` of `p` (all of them, or one piece of [`pieces`]; transposed where
/// `flip`, for the matrix-vector kernels) through a GEMM or matrix-vector `kernel`.
fn record_rows(rt: &Runtime, rec: &mut Recorder, p: &Product<'_>, s: Shapes, kernel: MatmulKernel, flip: bool) -> Result<()> {
    let op = p.op;
    let nb = s.batch.len();
    // Two batch dims go to the kernel (z0, z1); dims before them are dispatches of their own.
    let inner = nb.saturating_sub(2);
    let outer: Vec<usize> = s.batch[..inner].to_vec();
    let (b0, b1) = match nb {
        0 => (1, 1),
        1 => (s.batch[0], 1),
        _ => (s.batch[nb - 2], s.batch[nb - 1]),
    };
    let es = [p.dtype.size() as u64, p.dtype.size() as u64, p.dtype.size() as u64, if p.out_half { p.dtype.size() as u64 } else { 4 }];
    // The kernels that write the output: float32, or the operands' 16-bit type as it is
    // (split-K's slices write f32 partial sums either way).
    let (gemm_key, sum_key, vec_key) = if p.out_half { ("matmul_gemm16", "matmul_gemm_sum16", "matmul_vec16") } else { ("matmul_gemm", "matmul_gemm_sum", "matmul_vec") };
    let align = rt.report.min_storage_buffer_offset_alignment as u64;
    // The kernels index a binding in 32 bits (Metal's limit may pass 4 GiB).
    let max = rt.report.max_storage_buffer_binding_size.min(u32::MAX as u64 + 1);
    let lanes = kernel.lanes();
    let mut bufs = [p.a.buffer, p.b.buffer, p.c.map_or(p.a.buffer, |c| c.buffer), p.out.buffer];
    if flip {
        bufs.swap(0, 1);
    }
    let (m, n, k) = (s.m, s.n, s.k);
    // The product's m and n as the caller wrote it, for messages.
    let (um, un) = if flip { (n, m) } else { (m, n) };
    // Each operand's strides as (batch z0, batch z1, rows, cols), sizes (b0, b1, rows, cols).
    let dims = [[m, k], [k, n], [m, n], [m, n]];
    let st = |i: usize| -> [isize; 4] {
        let v = &s.strides[i];
        let (z0, z1) = match nb {
            0 => (0, 0),
            1 => (v[0], 0),
            _ => (v[nb - 2], v[nb - 1]),
        };
        [z0, z1, v[nb], v[nb + 1]]
    };
    // Split-K: the slices (from the whole batch's tiles) and a partial buffer every dispatch
    // below reuses in turn: [batch][slice][m rounded up to tiles][n rounded up to tiles] f32.
    let (pm, pn) = kernel.tile_parts(m, n);
    let (bm, bn) = (PART * pm, PART * pn);
    let (prows, pcols) = (m.div_ceil(bm) * bm, n.div_ceil(bn) * bn);
    let slice_bytes = ((b0 * b1) as u64).saturating_mul(prows as u64).saturating_mul(pcols as u64 * 4);
    // Counted in 64 x 64 tiles: a wide product is cut as `GemmSplit` cuts it, where a GPU's
    // default would take that kernel (`split::matmul_wants_split`).
    let tiles = m.div_ceil(PART) * n.div_ceil(PART) * b0 * b1;
    // On CPU adapters a k past CPU_GEMM_K is cut too, into slices within it.
    let cpu_long = rt.report.device_type == wgpu::DeviceType::Cpu && lanes == 0 && k > CPU_GEMM_K;
    let cut = match kernel {
        MatmulKernel::GemmSplit => true,
        MatmulKernel::GemmWide => cpu_long || crate::kernels::split::matmul_wants_split(tiles, k),
        _ => cpu_long,
    };
    let (nslices, chunk) = if cut {
        let (s, c) = crate::kernels::split::slices(tiles as u64, k, slice_bytes, max);
        if cpu_long && c > CPU_GEMM_K {
            // As many slices as the bound asks, where the partial sums fit one binding.
            let s = k.div_ceil(CPU_GEMM_K).max(s);
            let c = (k.div_ceil(s).div_ceil(16) * 16).max(16);
            let s = k.div_ceil(c);
            if slice_bytes.saturating_mul(s as u64) > max {
                return Err(Error::Limit { op, what: format!("the {s} split-K slices of partial sums a CPU adapter needs for k = {k} ({slice_bytes} bytes each)"), limit: "max_storage_buffer_binding_size", requested: slice_bytes.saturating_mul(s as u64), max });
            }
            (s, c)
        } else {
            (s, c)
        }
    } else {
        (1, k)
    };
    let partial = if nslices > 1 { Some(rt.held_scratch(rec, op, slice_bytes * nslices as u64, wgpu::BufferUsages::STORAGE)?) } else { None };
    let mut dispatches = Vec::new();
    let outer_count: usize = outer.iter().product();
    for oi in 0..outer_count {
        // This dispatch's element offsets: the outer index through each operand's strides.
        let mut offs = s.offsets.map(|o| o as isize);
        let mut rem = oi;
        for d in (0..inner).rev() {
            let idx = (rem % outer[d]) as isize;
            rem /= outer[d];
            for (i, o) in offs.iter_mut().enumerate() {
                *o += idx * s.strides[i][d];
            }
        }
        // Split z0 into ranges whose four windows each fit one binding.
        let windows = |z0: usize, z1: usize| -> Result<Vec<((u64, u64), usize)>> {
            (0..4)
                .map(|i| {
                    let t = st(i);
                    let off = offs[i] + z0 as isize * t[0];
                    window(&[z1 - z0, b1, dims[i][0], dims[i][1]], &t, off as usize, es[i], align)
                })
                .collect()
        };
        // A window within one binding, and of at most 2^31 elements: the kernels index it in
        // i32 (a binding past 8 GiB exists on Metal).
        let fits = |z0: usize, z1: usize| -> Result<bool> { Ok(windows(z0, z1)?.iter().zip(es).all(|((w, _), e)| w.1 <= max && w.1 / e <= i32::MAX as u64)) };
        let mut z0 = 0;
        while z0 < b0 {
            if !fits(z0, z0 + 1)? {
                let ws = windows(z0, z0 + 1)?;
                let need = ws.iter().map(|(w, _)| w.1).max().unwrap_or(0);
                let what = format!("binding the operands of one batch of {b1} products of [{um}, {k}] x [{k}, {un}]");
                if need > max {
                    return Err(Error::Limit { op, what, limit: "max_storage_buffer_binding_size", requested: need, max });
                }
                let elements = ws.iter().zip(es).map(|((w, _), e)| w.1 / e).max().unwrap_or(0);
                return Err(Error::Limit { op, what, limit: "elements a kernel indexes in i32", requested: elements, max: i32::MAX as u64 });
            }
            let lo = dispatch::most_that_fit(z0 + 1, b0, |z1| fits(z0, z1))?;
            let ws = windows(z0, lo)?;
            let batches = (lo - z0) * b1;
            let (t, key, work) = if lanes == 0 {
                let ((tile_m, tile_n), key) = if kernel == MatmulKernel::Coop { ((coop::tile(&rt.report), coop::tile(&rt.report)), coop::shader(&rt.report, p.out_half)) } else { ((bm, bn), gemm_key) };
                let (tm, tn) = (m.div_ceil(tile_m), n.div_ceil(tile_n));
                let total = tm as u64 * tn as u64 * batches as u64 * nslices as u64;
                (total, key, [u32_of(op, tm, "tiles along m")?, u32_of(op, tn, "tiles along n")?])
            } else {
                // One lane per row: teams of 8 lanes stream vec_rows rows; more lanes share a row.
                let per = if lanes == 1 { VEC_WG / 8 * vec_rows(p.dtype) } else { VEC_WG / lanes as usize };
                let groups = m.div_ceil(per);
                (groups as u64 * batches as u64, vec_key, [u32_of(op, groups, "row groups")?, 0])
            };
            let grid = dispatch::grid(rt, op, t, &format!("{t} workgroups"))?;
            let strides: Vec<[i32; 4]> = (0..4).map(|i| -> Result<[i32; 4]> { let v = st(i); Ok([i32_of(op, v[2], "row stride")?, i32_of(op, v[3], "column stride")?, i32_of(op, v[0], "batch stride")?, i32_of(op, v[1], "batch stride")?]) }).collect::<Result<_>>()?;
            // The matrix-vector kernel's matrix A as 16-byte words (4 float32 or 8 16-bit
            // elements): unit stride along k, rows and the first element word-aligned
            // within the window.
            let per_word = if p.dtype == DType::F32 { 4 } else { 8 };
            let aligned = |v: isize| v.rem_euclid(per_word) == 0;
            let vec4 = st(0)[3] == 1 && aligned(st(0)[2]) && aligned(st(0)[0]) && aligned(st(0)[1]) && aligned(ws[0].1 as isize) && ws[0].0 .0 % 16 == 0;
            // The vector B as vec4 words too: the same conditions.
            let vvec = vec4 && st(1)[2] == 1 && aligned(st(1)[0]) && aligned(st(1)[1]) && aligned(ws[1].1 as isize) && ws[1].0 .0 % 16 == 0;
            let flags = p.c.is_some() as u32 | ((st(0)[3].abs() == 1 && m > 1) as u32) << 1 | ((st(1)[2].abs() == 1 && n > 1) as u32) << 2 | (vec4 as u32) << 3 | (vvec as u32) << 4 | lanes << 8;
            let params = MatmulParams {
                dims: [u32_of(op, m, "m")?, u32_of(op, n, "n")?, u32_of(op, k, "k")?, p.dtype.code()],
                work: [work[0], work[1], u32_of(op, b1, "batch")?, u32_of(op, t as usize, "workgroups")?],
                sa: strides[0],
                sb: strides[1],
                sc: strides[2],
                so: strides[3],
                base: [i32_of(op, ws[0].1 as isize, "offset")?, i32_of(op, ws[1].1 as isize, "offset")?, i32_of(op, ws[2].1 as isize, "offset")?, i32_of(op, ws[3].1 as isize, "offset")?],
                epi: [(p.alpha as f32).to_bits(), (p.beta as f32).to_bits(), p.activation.code(), flags],
                split: [nslices as u32, u32_of(op, chunk, "reduction steps per slice")?, u32_of(op, prows, "partial rows")?, u32_of(op, pcols, "partial columns")?],
            };
            // Without an addend (never read), binding 3 repeats A's window.
            let mut bindings: Vec<_> = (0..4).map(|i| if i == 2 && p.c.is_none() { (bufs[0], ws[0].0) } else { (bufs[i], ws[i].0) }).collect();
            // A and B again as whole vec4 words (at least one).
            bindings.push(dispatch::read_words(rt, bufs[0], ws[0].0, 16));
            bindings.push(dispatch::read_words(rt, bufs[1], ws[1].0, 16));
            // The pipelines' constants (`gpu_pipelines`): the matrix-vector kernel's one lane a
            // row, or L with the 16-bit path; the GEMM's wide tile parts.
            let mut parts: Vec<(&'static str, i64)> = if (pm, pn) == (1, 1) { vec![] } else { vec![("PM", pm as i64), ("PN", pn as i64)] };
            // The GEMM's specializations (`matmul_params.wgsl`): float32 operands, A and B
            // staged along k (flag bits 1 and 2). Pushed only where set.
            let set = [("F32_IN", p.dtype == DType::F32 && !p.out_half), ("A_STEPS", flags & 2 != 0), ("B_STEPS", flags & 4 != 0)];
            parts.extend(set.into_iter().filter(|&(_, on)| on).map(|(name, _)| (name, 1)));
            let constants = match (lanes, p.dtype) {
                _ if kernel == MatmulKernel::Coop => {
                    // Pitches compiled in, unless that would be one pipeline too many.
                    let with = coop::constants(&rt.report, p, &s, true);
                    if rt.pipelines_besides(&PipelineKey { shader: key, constants: with.clone() }).is_none_or(|count| count < coop::PITCH_SETS) {
                        with
                    } else {
                        coop::constants(&rt.report, p, &s, false)
                    }
                }
                (0, _) => parts.clone(),
                (2.., DType::F32) => vec![],
                (1, _) => vec![("TEAMS", 1)],
                _ => vec![("HALVES", 1)],
            };
            if let Some(part) = &partial {
                // The slices into the partial buffer (bound as the output), then their sum (the
                // partial buffer bound as A) through the epilogue into the output.
                let whole = (part, (0, slice_bytes * nslices as u64));
                let mut slices = bindings.clone();
                slices[3] = whole;
                dispatches.push(Dispatch { key: PipelineKey { shader: "matmul_gemm", constants: [vec![("SPLIT", 1)], parts].concat() }, params, bindings: slices, grid });
                let invocations = batches as u64 * m as u64 * n as u64;
                let sum_grid = dispatch::grid(rt, op, invocations.div_ceil(256), &format!("{invocations} sums of partial outputs"))?;
                let sum = MatmulParams { work: [params.work[0], params.work[1], params.work[2], u32_of(op, invocations as usize, "partial sums")?], ..params };
                bindings[0] = whole;
                bindings[4] = (part, (0, slice_bytes * nslices as u64));
                dispatches.push(Dispatch { key: PipelineKey { shader: sum_key, constants: vec![] }, params: sum, bindings, grid: sum_grid });
            } else {
                dispatches.push(Dispatch { key: PipelineKey { shader: key, constants }, params, bindings, grid });
            }
            z0 = lo;
        }
    }
    dispatch::record(rt, rec, op, SLOTS, &dispatches)?;
    Ok(())
}

/// Whether the [`MatmulKernel::Conv1x1`] route applies (the one check, for the candidates and
/// for forced kernels alike).
fn conv_route(report: &AdapterReport, p: &Product<'_>, s: &Shapes) -> Result<()> {
    let nb = s.batch.len();
    let why = if report.device_type != wgpu::DeviceType::Cpu {
        "it is a CPU-adapter kernel"
    } else if p.dtype != DType::F32 {
        "it reads float32 operands"
    } else if p.alpha != 1.0 {
        "it does not scale the product (alpha != 1)"
    } else if p.c.is_some() && (p.beta != 1.0 || s.strides[2][nb] != 0) {
        "its only addend is a bias (beta == 1, the same for every row)"
    } else if !matches!(p.activation, Activation::None | Activation::Relu) {
        "its only activation is ReLU"
    } else if s.batch.iter().product::<usize>() > CONV_BATCHES {
        "it records one convolution per batch matrix, at most CONV_BATCHES"
    } else if s.k == 0 {
        "a convolution needs at least one input channel"
    } else if [Some(p.a), Some(p.b), p.c, Some(p.out)].iter().flatten().any(|t| t.buffer.size() > report.max_storage_buffer_binding_size) {
        "an operand's buffer exceeds one binding (the GEMM splits such products)"
    } else {
        return Ok(());
    };
    Err(Error::unsupported(p.op, format!("the Conv1x1 route does not apply: {why}")))
}

/// Records `p` as one 1x1 convolution per batch matrix, every operand read in place: the input
/// A^T [1, k, m, 1], the weight B^T [n, k], the bias the addend's row, the output [1, n, m, 1];
/// or, without an addend, the transposed product (input B, weight A, output C^T).
fn record_conv(rt: &Runtime, rec: &mut Recorder, p: &Product<'_>, s: &Shapes) -> Result<()> {
    use crate::conv::{Conv2dOptions, Conv2dShape};
    use crate::kernels::conv::class::{conv_class, conv_default};
    use crate::kernels::conv::{self, ConvCall, View};
    use crate::layout::MemoryFormat;
    let nb = s.batch.len();
    let (m, n, k) = (s.m, s.n, s.k);
    let o = Conv2dOptions { relu: p.activation == Activation::Relu, ..Default::default() };
    let count: usize = s.batch.iter().product();
    for z in 0..count {
        let mut offs = s.offsets.map(|o| o as isize);
        let mut rem = z;
        for d in (0..nb).rev() {
            let idx = (rem % s.batch[d]) as isize;
            rem /= s.batch[d];
            for (i, o) in offs.iter_mut().enumerate() {
                *o += idx * s.strides[i][d];
            }
        }
        let (sa, sb, sc, so) = (&s.strides[0][nb..], &s.strides[1][nb..], &s.strides[2][nb..], &s.strides[3][nb..]);
        // Pixels along m (input A^T [1, k, m, 1], weight B^T [n, k]: the addend a bias per
        // channel n), or, without an addend and with the output's columns unit-stride, along
        // n (input B [1, k, n, 1], weight A [m, k], output C^T [1, m, n, 1]): then a row-major
        // product is an NCHW convolution, pixels contiguous in input and output alike.
        let along_n = p.c.is_none() && so[1] == 1 && n > 1;
        let (pix, ch, (xs, xo, xb), (ws, wo, wb), (ys0, ys1)) = if along_n {
            (n, m, ([sb[0], sb[1]], offs[1], p.b.buffer), ([sa[0], sa[1]], offs[0], p.a.buffer), (so[0], so[1]))
        } else {
            (m, n, ([sa[1], sa[0]], offs[0], p.a.buffer), ([sb[1], sb[0]], offs[1], p.b.buffer), (so[1], so[0]))
        };
        let g = Conv2dShape { n: 1, c: k, h: pix, w: 1, k: ch, kh: 1, kw: 1, oh: pix, ow: 1, format: MemoryFormat::Contiguous, dtype: DType::F32 };
        let x = Layout::new(vec![1, k, pix, 1], vec![1, xs[0], xs[1], 1], xo as usize)?;
        let w = Layout::new(vec![ch, k], vec![ws[0], ws[1]], wo as usize)?;
        let b = Layout::new(vec![n], vec![sc[1]], offs[2] as usize)?;
        let y = Layout::new(vec![1, ch, pix, 1], vec![1, ys0, ys1, 1], offs[3] as usize)?;
        let class = conv_class(&rt.report, &g, &o, &x, &w, &y);
        let kernel = conv_default(&rt.report, &class);
        let bias = p.c.map(|c| View { buffer: c.buffer, layout: &b });
        conv::record(rt, rec, &ConvCall { op: p.op, out: View { buffer: p.out.buffer, layout: &y }, input: View { buffer: xb, layout: &x }, weight: View { buffer: wb, layout: &w }, bias, options: &o, g: &g, kernel, residual: None })?;
    }
    Ok(())
}
