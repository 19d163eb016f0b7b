//! The WGSL sources under `shaders/`: one kernel per file, each compiled with the preludes it
//! names. `plan.wgsl` (the plan uniform and the one WGSL index formula) comes first in every
//! copy kernel; `packed.wgsl` holds the 1/2/4-byte element loads and stores; `transpose.wgsl` the
//! block arithmetic shared by the transpose kernels; `cast.wgsl` the element conversions (after
//! the generated `dtypes` prelude, the element-type codes of [`DType::code`]); `conv.wgsl` the
//! register-blocked convolutions' uniform and pixel arithmetic (`conv1x1_block.wgsl` the 1x1
//! kernels' inner product, `conv2d_direct_acc.wgsl` the direct kernels' accumulators,
//! `conv2d_direct_span.wgsl` the spans of input pixels that their rows forms slide along), and
//! `conv_weights*.wgsl` two ways of reading their weights (a file compiled with each is two
//! registered kernels); `conv_relu.wgsl` every convolution's fused ReLU;
//! `conv2d_depthwise_block.wgsl` the uniform, loads and stores of the depthwise kernels that
//! hold blocks of pixels x 4 channels, and `conv2d_depthwise_cols*.wgsl` two ways the tall
//! one gets the input columns its neighbour also reads (loaded, or through subgroup shuffles);
//! `subgroup_slot.wgsl` the work slot of a lane, for the kernels that hand out work by lane;
//! `elementwise_rows.wgsl` what the three rows kernels (one traversal each) share.

use crate::dtype::DType;

/// Shared preludes, by name.
pub const PRELUDES: &[(&str, &str)] = &[
    ("plan", include_str!("../../shaders/plan.wgsl")),
    ("packed", include_str!("../../shaders/packed.wgsl")),
    ("cast", include_str!("../../shaders/cast.wgsl")),
    ("iter", include_str!("../../shaders/iter.wgsl")),
    ("elementwise_ops", include_str!("../../shaders/elementwise_ops.wgsl")),
    ("elementwise_slots", include_str!("../../shaders/elementwise_slots.wgsl")),
    ("elementwise_gather", include_str!("../../shaders/elementwise_gather.wgsl")),
    ("elementwise_rows", include_str!("../../shaders/elementwise_rows.wgsl")),
    ("transpose", include_str!("../../shaders/transpose.wgsl")),
    ("conv", include_str!("../../shaders/conv.wgsl")),
    ("conv_weights", include_str!("../../shaders/conv_weights.wgsl")),
    ("conv_weights_shuffled", include_str!("../../shaders/conv_weights_shuffled.wgsl")),
    ("conv1x1_block", include_str!("../../shaders/conv1x1_block.wgsl")),
    ("conv2d_direct_acc", include_str!("../../shaders/conv2d_direct_acc.wgsl")),
    ("conv2d_direct_span", include_str!("../../shaders/conv2d_direct_span.wgsl")),
    ("conv_relu", include_str!("../../shaders/conv_relu.wgsl")),
    ("conv2d_depthwise_block", include_str!("../../shaders/conv2d_depthwise_block.wgsl")),
    ("conv2d_depthwise_cols", include_str!("../../shaders/conv2d_depthwise_cols.wgsl")),
    ("conv2d_depthwise_cols_shuffled", include_str!("../../shaders/conv2d_depthwise_cols_shuffled.wgsl")),
    ("subgroup_slot", include_str!("../../shaders/subgroup_slot.wgsl")),
];

/// A prelude generated from Rust definitions (it has no file), by name: `dtypes`
/// ([`dtypes_prelude`]). `None` for any other name.
pub fn generated(name: &str) -> Option<String> {
    match name {
        "dtypes" => Some(dtypes_prelude()),
        "ops" => Some(crate::elementwise::wgsl_op_codes()),
        _ => None,
    }
}

/// The `dtypes` prelude: one WGSL constant per element type holding its [`DType::code`]
/// (`const DT_F32: u32 = 0u;` ...), so that Rust and WGSL cannot disagree on the codes.
pub fn dtypes_prelude() -> String {
    DType::ALL.iter().map(|t| format!("const DT_{}: u32 = {}u;\n", t.to_string().to_uppercase(), t.code())).collect()
}

/// The plan prelude, which every copy kernel starts with.
pub const PRELUDE: &str = include_str!("../../shaders/plan.wgsl");

/// The preludes of the general elementwise kernel's two output forms.
const EW_GATHER_PRELUDES: &[&str] = &["iter", "dtypes", "ops", "cast", "elementwise_ops", "elementwise_slots", "elementwise_gather"];

/// The preludes of the rows kernels (one per traversal).
const EW_ROWS_PRELUDES: &[&str] = &["iter", "dtypes", "ops", "cast", "elementwise_ops", "elementwise_slots", "elementwise_rows"];

/// Every kernel: its name, the preludes it is compiled with (in order), and its file's text.
pub const KERNELS: &[(&str, &[&str], &str)] = &[
    ("gather", &["plan", "packed", "dtypes", "cast"], include_str!("../../shaders/gather.wgsl")),
    ("copy_vec4", &["plan"], include_str!("../../shaders/copy_vec4.wgsl")),
    ("strided_rows", &["plan"], include_str!("../../shaders/strided_rows.wgsl")),
    ("copy_rows_vec4", &["plan"], include_str!("../../shaders/copy_rows_vec4.wgsl")),
    ("transpose_block", &["plan", "transpose"], include_str!("../../shaders/transpose_block.wgsl")),
    ("transpose_tile", &["plan", "transpose", "packed"], include_str!("../../shaders/transpose_tile.wgsl")),
    ("transpose_vec4", &["plan", "transpose"], include_str!("../../shaders/transpose_vec4.wgsl")),
    ("transpose_narrow", &["plan", "transpose"], include_str!("../../shaders/transpose_narrow.wgsl")),
    ("transpose_cast", &["plan", "transpose", "dtypes", "cast"], include_str!("../../shaders/transpose_cast.wgsl")),
    ("conv1x1_nchw", &["conv", "conv_weights", "conv1x1_block", "conv_relu"], include_str!("../../shaders/conv1x1_nchw.wgsl")),
    ("conv1x1_nhwc", &["conv", "conv_weights", "conv1x1_block", "conv_relu"], include_str!("../../shaders/conv1x1_nhwc.wgsl")),
    // The same kernels reading their weights through subgroup shuffles (adapters with SUBGROUP).
    ("conv1x1_nchw_shuffled", &["conv", "conv_weights_shuffled", "conv1x1_block", "conv_relu"], include_str!("../../shaders/conv1x1_nchw.wgsl")),
    ("conv1x1_nhwc_shuffled", &["conv", "conv_weights_shuffled", "conv1x1_block", "conv_relu"], include_str!("../../shaders/conv1x1_nhwc.wgsl")),
    ("conv2d_direct", &["conv", "conv_weights", "conv2d_direct_acc", "conv_relu"], include_str!("../../shaders/conv2d_direct.wgsl")),
    ("conv2d_direct_shuffled", &["conv", "conv_weights_shuffled", "conv2d_direct_acc", "conv_relu"], include_str!("../../shaders/conv2d_direct.wgsl")),
    ("conv2d_direct_rows", &["conv", "conv_weights", "conv2d_direct_acc", "conv2d_direct_span", "conv_relu"], include_str!("../../shaders/conv2d_direct_rows.wgsl")),
    ("conv2d_direct_rows_shuffled", &["conv", "conv_weights_shuffled", "conv2d_direct_acc", "conv2d_direct_span", "conv_relu"], include_str!("../../shaders/conv2d_direct_rows.wgsl")),
    // Subgroup shuffles carry its input rows too: only with shuffled weights.
    ("conv2d_direct_band", &["conv", "conv_weights_shuffled", "conv2d_direct_acc", "conv2d_direct_span", "subgroup_slot", "conv_relu"], include_str!("../../shaders/conv2d_direct_band.wgsl")),
    ("elementwise", EW_GATHER_PRELUDES, include_str!("../../shaders/elementwise.wgsl")),
    ("elementwise_words", EW_GATHER_PRELUDES, include_str!("../../shaders/elementwise_words.wgsl")),
    ("elementwise_rows_runs", EW_ROWS_PRELUDES, include_str!("../../shaders/elementwise_rows_runs.wgsl")),
    ("elementwise_rows_columns", EW_ROWS_PRELUDES, include_str!("../../shaders/elementwise_rows_columns.wgsl")),
    ("elementwise_rows_blocks", EW_ROWS_PRELUDES, include_str!("../../shaders/elementwise_rows_blocks.wgsl")),
    ("conv2d_gemm", &["conv_relu"], include_str!("../../shaders/conv2d_gemm.wgsl")),
    ("conv2d_depthwise", &["conv_relu"], include_str!("../../shaders/conv2d_depthwise.wgsl")),
    ("conv2d_depthwise_rows", &["conv2d_depthwise_block", "conv_relu"], include_str!("../../shaders/conv2d_depthwise_rows.wgsl")),
    ("conv2d_depthwise_tall", &["conv2d_depthwise_block", "conv2d_depthwise_cols", "conv_relu"], include_str!("../../shaders/conv2d_depthwise_tall.wgsl")),
    // Columns shared through subgroup shuffles: only where the weights are shuffled too.
    ("conv2d_depthwise_tall_shuffled", &["conv2d_depthwise_block", "subgroup_slot", "conv2d_depthwise_cols_shuffled", "conv_relu"], include_str!("../../shaders/conv2d_depthwise_tall.wgsl")),
];

/// The full source of kernel `name`: its preludes (from files or generated) followed by the kernel.
pub fn source(name: &str) -> Option<String> {
    let (_, preludes, kernel) = KERNELS.iter().find(|(n, _, _)| *n == name)?;
    let mut out = String::new();
    for p in *preludes {
        match PRELUDES.iter().find(|(n, _)| n == p) {
            Some((_, text)) => out.push_str(text),
            None => out.push_str(&generated(p)?),
        }
        out.push('\n');
    }
    out.push_str(kernel);
    Some(out)
}

/// One pipeline: a registered kernel (see [`source`]) and the
/// override constants it is compiled with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PipelineSpec {
    /// The registered kernel's name.
    pub kernel: &'static str,
    /// Its override constants, by name.
    pub constants: Vec<(&'static str, i64)>,
}

impl PipelineSpec {
    /// The whole module: preludes and kernel.
    pub fn source(&self) -> String {
        source(self.kernel).unwrap_or_default()
    }
}
