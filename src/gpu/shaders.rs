//! The WGSL sources under `shaders/`: one kernel per file, each prefixed with the shared plan
//! prelude (`plan.wgsl`), which holds the one WGSL index formula.

/// The prelude every kernel is compiled with.
pub const PRELUDE: &str = include_str!("../../shaders/plan.wgsl");

/// Every kernel file, by name.
pub const KERNELS: &[(&str, &str)] = &[
    ("gather", include_str!("../../shaders/gather.wgsl")),
    ("copy_vec4", include_str!("../../shaders/copy_vec4.wgsl")),
    ("transpose_block", include_str!("../../shaders/transpose_block.wgsl")),
    ("transpose_tile", include_str!("../../shaders/transpose_tile.wgsl")),
    ("transpose_vec4", include_str!("../../shaders/transpose_vec4.wgsl")),
];

/// The full source of kernel `name`: the prelude followed by the kernel.
pub fn source(name: &str) -> Option<String> {
    KERNELS.iter().find(|(n, _)| *n == name).map(|(_, k)| format!("{PRELUDE}\n{k}"))
}
