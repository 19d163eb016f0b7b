//! Kernel families. Each records into a caller's encoder, given a resolved kernel choice, and
//! holds its temporaries in the recording's `Keep`; none submits or waits. Each path has one
//! eligibility check (`copy::prepare`, the convolution's `vectors` and shape checks), used by
//! the automatic choice and by forced paths alike.

pub(crate) mod abi;
pub(crate) mod dispatch;
pub mod conv;
pub(crate) mod coop;
pub mod copy;
pub mod elementwise;
pub mod matmul;
pub mod norm;
pub mod reduce;
pub mod pool;
pub mod shaders;
pub(crate) mod split;

/// The loop iterations one invocation may run on Mesa's software adapters (lavapipe and GL's
/// llvmpipe): their compiler bounds every loop with a counter set once per invocation and
/// leaves the loop, silently, when it runs out (an inner loop's count adds up over the outer
/// loop's turns, with about two more a turn). Kernels bound the work a loop of theirs takes
/// on CPU adapters (reductions and products in chunks; a pooling window is refused past it).
pub(crate) const SOFTWARE_LOOP_ITERATIONS: u64 = 65_535;

/// What a kernel's upper bound of an invocation's loop turns may reach on a CPU adapter: the
/// bound less a margin for the few turns the estimates leave out.
pub(crate) const SOFTWARE_LOOP_BUDGET: u64 = SOFTWARE_LOOP_ITERATIONS - 5_535;

/// The longest k one invocation of the GEMM engine (`preludes/gemm_engine.wgsl`: matrix
/// products and convolutions) walks on a CPU adapter: about 18 loop turns a stage of 16 steps
/// (Mesa's llvmpipe keeps the stage's loop), within the loop bound; a product's longer k is
/// cut into split-K slices of at most this (a [4, 65536] x [65536, 8] product gave 58,255 for
/// 65,536 on lavapipe), a convolution's longer reduction refused to the GEMM kernels.
pub const CPU_GEMM_K: usize = 32_768;

/// The most elements, words or rows a forced copy or elementwise path may give one invocation
/// on a CPU adapter: each of them a few loop turns (offsets carried over up to 8 dims), within
/// [`SOFTWARE_LOOP_BUDGET`] (the automatic choices give at most 32).
pub(crate) const CPU_PER_INVOCATION: u32 = 4096;

/// [`CPU_PER_INVOCATION`] checked for a forced path's per-invocation `count` (named `what`)
/// on a CPU adapter: past it an [`Error::Limit`](crate::Error::Limit) of `op`, not a loop cut short.
pub(crate) fn check_cpu_count(report: &crate::runtime::AdapterReport, op: &'static str, what: String, count: u32) -> crate::error::Result<()> {
    if report.device_type == wgpu::DeviceType::Cpu && count > CPU_PER_INVOCATION {
        return Err(crate::error::Error::Limit { op, what, limit: "elements an invocation walks on a software adapter (Mesa's llvmpipe leaves a loop after 65,535 turns)", requested: count as u64, max: CPU_PER_INVOCATION as u64 });
    }
    Ok(())
}
