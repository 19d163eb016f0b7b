//! The matrix products' tuning inputs: the shape class of a product, the candidates the
//! tuner compares for it, and the kernel a class runs untuned.

use serde::{Deserialize, Serialize};

use crate::runtime::AdapterReport;

use super::product::{Product, Shapes};
use super::{blocked, conv_route, coop, MatmulKernel, CONV_MIN_LOG2};

impl MatmulKernel {
    /// The kernel a class runs without a kept choice (measuring nothing): matrix-vector
    /// products get their kernel (teams of 8 lanes over 8 rows, 16 for 16-bit types, on CPU
    /// adapters; 16 lanes per row on GPUs); on CPU adapters a product of at least 2^22 multiply-adds takes the `Blocked`
    /// kernel where it applies if it is batched or has an addend, else the `Conv1x1` route where
    /// that applies (then `Blocked`); all others split-K on GPUs where the output has few tiles
    /// and k is long, else the tensor-core kernel where it applies, else the GEMM (on GPUs under
    /// `STRIDED_WGPU_GEMM_TILES=wide`, `GemmWide` for both GEMMs).
    pub fn default_for(report: &AdapterReport, class: &MatmulClass) -> MatmulKernel {
        let vector = class.kernels.contains(&MatmulKernel::Vec1);
        // The convolution's CPU kernels run large products 5-17x faster than the GEMM on
        // lavapipe (docs/benchmarks-log.md), but compile for seconds each: products of at least 2^22
        // multiply-adds take them.
        // The Blocked kernel runs the same inner product with the batch in one dispatch, and
        // with an addend still along the output's columns (any addend where those have unit
        // stride: a recorded copy of it starts the output): it goes first for batched products
        // and products with an addend. A single product without one runs the Conv1x1 route
        // where that applies (its weights in a uniform block: at or above the Blocked kernel's
        // speed there on lavapipe, docs/benchmarks-log.md).
        let large = !vector && class.log2.iter().sum::<u32>() >= CONV_MIN_LOG2;
        let conv = class.kernels.contains(&MatmulKernel::Conv1x1);
        if large && class.kernels.contains(&MatmulKernel::Blocked) && (class.log2[3] > 0 || class.addend || !conv) {
            return MatmulKernel::Blocked;
        }
        if large && class.kernels.contains(&MatmulKernel::Conv1x1) {
            return MatmulKernel::Conv1x1;
        }
        // Split-K on GPUs where the output has few 64 x 64 tiles and k is long
        // (`split::matmul_wants_split`).
        let [lm, ln, lk, lb] = class.log2.map(|l| 1usize << l);
        let few = crate::kernels::split::matmul_wants_split(lm.div_ceil(64) * ln.div_ceil(64) * lb, lk);
        // Split-K goes first: one 128 x 128 tensor-core tile walking a long k leaves the GPU
        // as idle as the SIMT kernel's few tiles do (not measured against each other yet).
        // `STRIDED_WGPU_GEMM_TILES=wide` (`AdapterReport::wide_gemm`): the wide tiles wherever
        // a GPU would run the SIMT GEMM (they split where `GemmSplit` would, with its bits).
        let wide = report.wide_gemm && class.kernels.contains(&MatmulKernel::GemmWide);
        match (vector, report.device_type == wgpu::DeviceType::Cpu) {
            (false, false) if few && wide => MatmulKernel::GemmWide,
            (false, false) if few && class.kernels.contains(&MatmulKernel::GemmSplit) => MatmulKernel::GemmSplit,
            (false, _) if class.kernels.contains(&MatmulKernel::Coop) => MatmulKernel::Coop,
            (false, false) if wide => MatmulKernel::GemmWide,
            (false, _) => MatmulKernel::Gemm,
            (true, true) => MatmulKernel::Vec1,
            (true, false) => MatmulKernel::Vec16,
        }
    }

    /// The candidates of a product whose kernels see m x n: every eligible kernel but, on a CPU
    /// adapter (`cpu`), the wide GEMM (`conv`:
    /// whether the [`MatmulKernel::Conv1x1`] route applies, [`conv_route`]; `blocked`: whether
    /// the [`MatmulKernel::Blocked`] kernel does, `blocked::eligible`; `coop`: whether the
    /// [`MatmulKernel::Coop`] kernel does, `coop::eligible`, and may be taken unasked,
    /// `coop::automatic`).
    fn candidates(m: usize, n: usize, conv: bool, blocked: bool, coop: bool, cpu: bool, log2k: u32) -> Vec<MatmulKernel> {
        Self::ALL
            .into_iter()
            .filter(|&k| match k {
                // On a CPU adapter, a class whose k may pass the lane's loop bound runs no
                // matrix-vector kernel (`CPU_VEC_K`), so that none is kept for it.
                MatmulKernel::Vec1 | MatmulKernel::Vec16 if cpu && (2usize << log2k) > super::CPU_VEC_K => false,
                MatmulKernel::Conv1x1 => conv,
                MatmulKernel::Blocked => blocked,
                MatmulKernel::Coop => coop,
                // GPU-shaped wide tiles: a CPU adapter's tuner would only compile and time them
                // (forced, they run there too).
                MatmulKernel::GemmWide => !cpu,
                _ => k.eligible(m, n).is_ok(),
            })
            .collect()
    }
}

/// The matrix products as a tuned family: shape classes [`MatmulClass`], choices
/// [`MatmulKernel`].
pub(crate) struct Matmul;

impl crate::tune::Family for Matmul {
    const NAME: &'static str = "matmul";
    type Class = MatmulClass;
    type Choice = MatmulKernel;
    fn candidates(class: &MatmulClass) -> Vec<MatmulKernel> {
        class.kernels.clone()
    }
}

/// A matrix-product shape class: the candidates, floor(log2) of m, n, k (as the kernels see
/// them, a broadcast batch folded into m) and of the batch, the element type's code, and
/// whether A and B have unit stride along k (the staging each gets).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MatmulClass {
    /// The kernels the tuner compares: every kernel whose one eligibility check accepts the product.
    pub kernels: Vec<MatmulKernel>,
    /// floor(log2) of m, n, k and the batch.
    pub log2: [u32; 4],
    /// [`DType::code`] of the operands.
    pub dtype: u32,
    /// Whether A's columns (k) and B's rows (k) are its unit-stride dim.
    pub along_k: (bool, bool),
    /// Whether the product reads an addend (a bias or addmm's input).
    #[serde(default)]
    pub addend: bool,
}

/// The class of `p` on the adapter of `report`.
pub(crate) fn matmul_class(report: &AdapterReport, p: &Product<'_>) -> MatmulClass {
    let s = Shapes::of(p);
    let log2 = |v: usize| usize::BITS - 1 - v.max(1).leading_zeros();
    let nb = s.batch.len();
    MatmulClass {
        kernels: MatmulKernel::candidates(s.m, s.n, conv_route(report, p, &s).is_ok(), blocked::eligible(report, p, &s).is_ok(), coop::eligible(report, p, &s).is_ok() && coop::automatic(report, p), report.device_type == wgpu::DeviceType::Cpu, log2(s.k)),
        log2: [log2(s.m), log2(s.n), log2(s.k), log2(s.batch.iter().product())],
        dtype: p.dtype.code(),
        along_k: (s.strides[0][nb + 1].abs() == 1, s.strides[1][nb].abs() == 1),
        addend: p.c.is_some(),
    }
}

