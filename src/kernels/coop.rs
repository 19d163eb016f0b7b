//! What the tensor-core kernels (`matmul_coop.wgsl`, `conv2d_coop.wgsl`) share on the host: the
//! fragment side of the device's cooperative matrices, the registered kernel for it, and the
//! workgroup of four subgroups.

use crate::runtime::AdapterReport;

/// The fragment side of the device's cooperative matrices (16 where it has none: the kernels'
/// checks fail first there).
pub(crate) fn frag(report: &AdapterReport) -> usize {
    report.cooperative_matrix.map_or(16, |c| c.size as usize)
}

/// The registered kernel for the device's fragment side: `sixteen` (preludes `coop_frag16`) or
/// `eight` (`coop_frag8`).
pub(crate) fn shader(report: &AdapterReport, sixteen: &'static str, eight: &'static str) -> &'static str {
    if frag(report) == 8 {
        eight
    } else {
        sixteen
    }
}

/// The `WG` constant: four subgroups of the device's one subgroup size.
pub(crate) fn workgroup(report: &AdapterReport) -> (&'static str, i64) {
    ("WG", 4 * report.cooperative_matrix.map_or(32, |c| c.subgroup_size) as i64)
}
