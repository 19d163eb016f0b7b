//! The WGSL sources, in two folders: `shaders/kernels/` holds one kernel per file (each has
//! exactly one `@compute` entry point), `shaders/preludes/` the code kernels share (no entry
//! point); a kernel is compiled with the preludes it names, in order, then its own file. A
//! kernel file compiled with different preludes is several registered kernels (the `_shuffled`
//! convolutions, `elementwise` / `elementwise_words`).
//!
//! Preludes: `plan` (the copy plan uniform and the one WGSL index formula) comes first in every
//! copy kernel; `packed` holds the 1/2/4-byte element loads and stores; `packed_store` the one
//! sub-word store through atomics (of `packed`, `elementwise_out_packed` and `reduce_io`, each
//! binding the output as `out`); `transpose` the block arithmetic shared by the transpose
//! kernels; `cast` the element conversions (after the generated `dtypes` prelude, the
//! element-type codes of [`DType::code`]); `iter` the
//! elementwise kernels' plan uniform, `elementwise_out_*` the general elementwise kernel's two
//! output forms; `conv` the register-blocked convolutions' uniform and pixel arithmetic
//! (`conv1x1_block` the 1x1 kernels' inner product, `conv1x1_nchw_step` its NCHW-orientation
//! step, which `matmul_blocked` shares, `conv2d_direct_acc` the direct kernels'
//! accumulators, `conv2d_direct_span` the spans of input pixels that their rows forms slide
//! along), and `conv_weights*` two ways of reading their weights (`matmul_weights` a third:
//! a batch of weights in storage; `shuffled_rows` what the two shuffled ones share); `conv_io`
//! the bindings every convolution kernel shares and their loads and stores, `conv_io16` the
//! same for float16 and bfloat16 operands (the GEMM and depthwise kernels' `16` forms), `conv_relu` every convolution's fused ReLU; `conv2d_depthwise_block` the uniform, loads and stores of the
//! depthwise kernels that hold blocks of pixels x 4 channels, and `conv2d_depthwise_cols*` two
//! ways the tall one gets the input columns its neighbour also reads (loaded, or through
//! subgroup shuffles); `subgroup_slot` the work slot of a lane, for the kernels that hand out
//! work by lane; `elementwise_rows` what the three rows kernels (one traversal each) share;
//! `gemm_engine` the tiled GEMM's tile loop that `conv2d_gemm` (A through the im2col mapping)
//! and `matmul_gemm` (A and B through their strides; `matmul_gemm_sum` a split-K product's
//! second dispatch) share, `conv_gemm` the bindings and
//! epilogue of `conv2d_gemm` and `conv2d_gemm_sum` (a split-K call's second dispatch),
//! `conv_gemm_io` / `conv_gemm_io16` what those two read and write beyond `conv_io` / `conv_io16`
//! (the residual, split-K's partial sums) in float32 or 16-bit operands (`conv2d_gemm16`,
//! `conv2d_gemm_sum16`),
//! `conv_gemm_params` the uniform, specializations and output index they share with the
//! tensor-core `conv2d_coop`, `conv_gemm_taps` the im2col mapping (pixels, taps) of
//! `conv2d_gemm` and `conv2d_coop`, `matmul_params` the matrix products'
//! uniform, `matmul_epilogue` their addend and epilogue, `matmul_out` / `matmul_out16` their
//! output in float32 or the operands' 16-bit type (`matmul_gemm16`, `matmul_gemm_sum16`,
//! `matmul_vec16`), `matmul_io` the SIMT kernels' packed operand loads; `pool` the uniform of the three window kernels,
//! `pool_window` the windows, taps and element loads of `pool2d` and `pool2d_vec`;
//! `compensated` the compensated sum of the reductions and the normalization kernels, `norm`
//! the uniform, operands, walks and writes `norm_rows` and `norm_split` share;
//! `coop_frag16` / `coop_frag8` the tensor-core kernels' fragment types and side (each such
//! kernel is registered once per fragment size), `matmul_coop_out` / `matmul_coop_out16` how
//! `matmul_coop` stores an accumulator into an f32 or a float16 output (`matmul_coop_half`).
//!
//! Every uniform struct a kernel declares has a Rust twin that the host writes (`kernels::abi`,
//! whose test compares the two through naga's reflected layout).

use crate::dtype::DType;

/// The text of `shaders/preludes/<name>.wgsl`.
macro_rules! prelude {
    ($name:literal) => {
        include_str!(concat!("../../shaders/preludes/", $name, ".wgsl"))
    };
}

/// The text of `shaders/kernels/<name>.wgsl`.
macro_rules! kernel {
    ($name:literal) => {
        include_str!(concat!("../../shaders/kernels/", $name, ".wgsl"))
    };
}

/// Shared preludes (`shaders/preludes/<name>.wgsl`), by name.
pub const PRELUDES: &[(&str, &str)] = &[
    // First: every kernel's source starts with it (`source`).
    ("uniform_index", prelude!("uniform_index")),
    ("plan", prelude!("plan")),
    ("packed", prelude!("packed")),
    ("packed_store", prelude!("packed_store")),
    ("cast", prelude!("cast")),
    ("iter", prelude!("iter")),
    ("elementwise_ops", prelude!("elementwise_ops")),
    ("elementwise_slots", prelude!("elementwise_slots")),
    ("elementwise_out_packed", prelude!("elementwise_out_packed")),
    ("elementwise_out_words", prelude!("elementwise_out_words")),
    ("elementwise_rows", prelude!("elementwise_rows")),
    ("elementwise_rows_out4", prelude!("elementwise_rows_out4")),
    ("elementwise_rows_out_narrow", prelude!("elementwise_rows_out_narrow")),
    ("transpose", prelude!("transpose")),
    ("conv", prelude!("conv")),
    ("conv_weights", prelude!("conv_weights")),
    ("shuffled_rows", prelude!("shuffled_rows")),
    ("conv_weights_shuffled", prelude!("conv_weights_shuffled")),
    ("conv1x1_block", prelude!("conv1x1_block")),
    ("conv1x1_nchw_step", prelude!("conv1x1_nchw_step")),
    ("matmul_weights", prelude!("matmul_weights")),
    ("conv2d_direct_acc", prelude!("conv2d_direct_acc")),
    ("conv2d_direct_span", prelude!("conv2d_direct_span")),
    ("conv_io", prelude!("conv_io")),
    ("conv_relu", prelude!("conv_relu")),
    ("conv2d_depthwise_block", prelude!("conv2d_depthwise_block")),
    ("conv2d_depthwise_cols", prelude!("conv2d_depthwise_cols")),
    ("conv2d_depthwise_cols_shuffled", prelude!("conv2d_depthwise_cols_shuffled")),
    ("subgroup_slot", prelude!("subgroup_slot")),
    ("gemm_engine", prelude!("gemm_engine")),
    ("conv_gemm_params", prelude!("conv_gemm_params")),
    ("conv_gemm", prelude!("conv_gemm")),
    ("conv_gemm_io", prelude!("conv_gemm_io")),
    ("conv_gemm_io16", prelude!("conv_gemm_io16")),
    ("conv_io16", prelude!("conv_io16")),
    ("conv_gemm_taps", prelude!("conv_gemm_taps")),
    ("matmul_params", prelude!("matmul_params")),
    ("matmul_epilogue", prelude!("matmul_epilogue")),
    ("matmul_io", prelude!("matmul_io")),
    ("matmul_out", prelude!("matmul_out")),
    ("matmul_out16", prelude!("matmul_out16")),
    ("compensated", prelude!("compensated")),
    ("norm", prelude!("norm")),
    ("reduce", prelude!("reduce")),
    ("reduce_io", prelude!("reduce_io")),
    ("reduce_vec", prelude!("reduce_vec")),
    ("reduce_tree", prelude!("reduce_tree")),
    ("reduce_tree_subgroup", prelude!("reduce_tree_subgroup")),
    ("pool", prelude!("pool")),
    ("pool_window", prelude!("pool_window")),
    ("coop_frag16", prelude!("coop_frag16")),
    ("coop_frag8", prelude!("coop_frag8")),
    ("matmul_coop_out", prelude!("matmul_coop_out")),
    ("matmul_coop_out16", prelude!("matmul_coop_out16")),
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
pub const PRELUDE: &str = prelude!("plan");

/// The preludes of the general elementwise kernel in its two output forms (the last prelude).
const EW_PACKED_PRELUDES: &[&str] = &["iter", "dtypes", "ops", "cast", "elementwise_ops", "elementwise_slots", "elementwise_out_packed", "packed_store"];
const EW_WORDS_PRELUDES: &[&str] = &["iter", "dtypes", "ops", "cast", "elementwise_ops", "elementwise_slots", "elementwise_out_words"];

/// The preludes of the rows kernels (one per traversal) in their two output forms: 4-byte
/// elements as vec4 words, 2- and 1-byte ones as u32 words.
const EW_ROWS_PRELUDES: &[&str] = &["iter", "dtypes", "ops", "cast", "elementwise_ops", "elementwise_slots", "elementwise_rows_out4", "elementwise_rows"];
const EW_ROWS_NARROW_PRELUDES: &[&str] = &["iter", "dtypes", "ops", "cast", "elementwise_ops", "elementwise_slots", "elementwise_rows_out_narrow", "elementwise_rows"];

/// Every kernel: its name, the preludes it is compiled with (in order), and the text of its file
/// under `shaders/kernels/`.
pub const KERNELS: &[(&str, &[&str], &str)] = &[
    ("gather", &["plan", "packed", "packed_store", "dtypes", "cast"], kernel!("gather")),
    ("copy_vec4", &["plan"], kernel!("copy_vec4")),
    ("strided_rows", &["plan"], kernel!("strided_rows")),
    ("copy_rows_vec4", &["plan"], kernel!("copy_rows_vec4")),
    ("transpose_block", &["plan", "transpose"], kernel!("transpose_block")),
    ("transpose_tile", &["plan", "transpose", "packed", "packed_store"], kernel!("transpose_tile")),
    ("transpose_vec4", &["plan", "transpose"], kernel!("transpose_vec4")),
    ("transpose_narrow", &["plan", "transpose"], kernel!("transpose_narrow")),
    ("transpose_cast", &["plan", "transpose", "dtypes", "cast"], kernel!("transpose_cast")),
    ("conv1x1_nchw", &["conv_io", "conv", "conv_weights", "conv1x1_nchw_step", "conv1x1_block", "conv_relu"], kernel!("conv1x1_nchw")),
    ("conv1x1_nhwc", &["conv_io", "conv", "conv_weights", "conv1x1_block", "conv_relu"], kernel!("conv1x1_nhwc")),
    // The same kernels reading their weights through subgroup shuffles (adapters with SUBGROUP).
    ("conv1x1_nchw_shuffled", &["conv_io", "conv", "shuffled_rows", "conv_weights_shuffled", "conv1x1_nchw_step", "conv1x1_block", "conv_relu"], kernel!("conv1x1_nchw")),
    ("conv1x1_nhwc_shuffled", &["conv_io", "conv", "shuffled_rows", "conv_weights_shuffled", "conv1x1_block", "conv_relu"], kernel!("conv1x1_nhwc")),
    ("conv2d_direct", &["conv_io", "conv", "conv_weights", "conv2d_direct_acc", "conv_relu"], kernel!("conv2d_direct")),
    ("conv2d_direct_shuffled", &["conv_io", "conv", "shuffled_rows", "conv_weights_shuffled", "conv2d_direct_acc", "conv_relu"], kernel!("conv2d_direct")),
    ("conv2d_direct_rows", &["conv_io", "conv", "conv_weights", "conv2d_direct_acc", "conv2d_direct_span", "conv_relu"], kernel!("conv2d_direct_rows")),
    ("conv2d_direct_rows_shuffled", &["conv_io", "conv", "shuffled_rows", "conv_weights_shuffled", "conv2d_direct_acc", "conv2d_direct_span", "conv_relu"], kernel!("conv2d_direct_rows")),
    // Subgroup shuffles carry its input rows too: only with shuffled weights.
    ("conv2d_direct_band", &["conv_io", "conv", "shuffled_rows", "conv_weights_shuffled", "conv2d_direct_acc", "conv2d_direct_span", "subgroup_slot", "conv_relu"], kernel!("conv2d_direct_band")),
    // One kernel file in two output forms: any element type through atomics, or 4-byte words.
    ("elementwise", EW_PACKED_PRELUDES, kernel!("elementwise")),
    ("elementwise_words", EW_WORDS_PRELUDES, kernel!("elementwise")),
    ("elementwise_rows_runs", EW_ROWS_PRELUDES, kernel!("elementwise_rows_runs")),
    ("elementwise_rows_columns", EW_ROWS_PRELUDES, kernel!("elementwise_rows_columns")),
    ("elementwise_rows_blocks", EW_ROWS_PRELUDES, kernel!("elementwise_rows_blocks")),
    ("elementwise_rows_runs_narrow", EW_ROWS_NARROW_PRELUDES, kernel!("elementwise_rows_runs")),
    ("elementwise_rows_columns_narrow", EW_ROWS_NARROW_PRELUDES, kernel!("elementwise_rows_columns")),
    ("elementwise_rows_blocks_narrow", EW_ROWS_NARROW_PRELUDES, kernel!("elementwise_rows_blocks")),
    // One GEMM engine (the tile loop) under the convolution and the matrix products.
    ("conv2d_gemm", &["conv_io", "conv_gemm_io", "conv_relu", "conv_gemm_params", "conv_gemm", "conv_gemm_taps", "gemm_engine"], kernel!("conv2d_gemm")),
    ("conv2d_gemm_sum", &["conv_io", "conv_gemm_io", "conv_relu", "conv_gemm_params", "conv_gemm"], kernel!("conv2d_gemm_sum")),
    // The same two reading and writing float16 or bfloat16 operands (HALF) as they are.
    ("conv2d_gemm16", &["dtypes", "cast", "conv_io16", "conv_gemm_io16", "packed_store", "conv_relu", "conv_gemm_params", "conv_gemm", "conv_gemm_taps", "gemm_engine"], kernel!("conv2d_gemm")),
    ("conv2d_gemm_sum16", &["dtypes", "cast", "conv_io16", "conv_gemm_io16", "packed_store", "conv_relu", "conv_gemm_params", "conv_gemm"], kernel!("conv2d_gemm_sum")),
    // The f16 convolution on tensor cores, in both fragment sizes.
    ("conv2d_coop", &["dtypes", "cast", "conv_gemm_params", "conv_gemm_taps", "coop_frag16"], kernel!("conv2d_coop")),
    ("conv2d_coop8", &["dtypes", "cast", "conv_gemm_params", "conv_gemm_taps", "coop_frag8"], kernel!("conv2d_coop")),
    ("matmul_gemm", &["dtypes", "matmul_params", "matmul_epilogue", "matmul_out", "matmul_io", "gemm_engine"], kernel!("matmul_gemm")),
    ("matmul_gemm_sum", &["dtypes", "matmul_params", "matmul_epilogue", "matmul_out", "matmul_io"], kernel!("matmul_gemm_sum")),
    ("matmul_vec", &["dtypes", "matmul_params", "matmul_epilogue", "matmul_out", "matmul_io"], kernel!("matmul_vec")),
    // The same three writing a float16 or bfloat16 output as it is (split-K's slices stay f32).
    ("matmul_gemm16", &["dtypes", "cast", "matmul_params", "matmul_epilogue", "matmul_out16", "packed_store", "matmul_io", "gemm_engine"], kernel!("matmul_gemm")),
    ("matmul_gemm_sum16", &["dtypes", "cast", "matmul_params", "matmul_epilogue", "matmul_out16", "packed_store", "matmul_io"], kernel!("matmul_gemm_sum")),
    ("matmul_vec16", &["dtypes", "cast", "matmul_params", "matmul_epilogue", "matmul_out16", "packed_store", "matmul_io"], kernel!("matmul_vec")),
    // Tensor cores: float16 operands through cooperative matrices (adapters with the feature).
    ("matmul_coop", &["dtypes", "matmul_params", "matmul_epilogue", "matmul_out", "coop_frag16", "matmul_coop_out"], kernel!("matmul_coop")),
    // The same on 8 x 8 x 8 fragments (adapters that report no 16 x 16 x 16).
    ("matmul_coop8", &["dtypes", "matmul_params", "matmul_epilogue", "matmul_out", "coop_frag8", "matmul_coop_out"], kernel!("matmul_coop")),
    // Both writing the float16 output as it is.
    ("matmul_coop_half", &["dtypes", "cast", "matmul_params", "matmul_epilogue", "matmul_out16", "packed_store", "coop_frag16", "matmul_coop_out16"], kernel!("matmul_coop")),
    ("matmul_coop8_half", &["dtypes", "cast", "matmul_params", "matmul_epilogue", "matmul_out16", "packed_store", "coop_frag8", "matmul_coop_out16"], kernel!("matmul_coop")),
    // The 1x1 convolution's CPU-adapter inner product over a batch of weights (subgroups).
    ("matmul_blocked", &["conv_io", "conv", "shuffled_rows", "matmul_weights", "conv1x1_nchw_step", "conv1x1_block", "conv_relu"], kernel!("matmul_blocked")),
    ("conv2d_depthwise", &["conv_io", "conv_relu"], kernel!("conv2d_depthwise")),
    ("conv2d_depthwise_rows", &["conv_io", "conv2d_depthwise_block", "conv_relu"], kernel!("conv2d_depthwise_rows")),
    // The same two reading and writing float16 or bfloat16 operands (HALF) as they are.
    ("conv2d_depthwise16", &["dtypes", "cast", "conv_io16", "packed_store", "conv_relu"], kernel!("conv2d_depthwise")),
    ("conv2d_depthwise_rows16", &["dtypes", "cast", "conv_io16", "packed_store", "conv2d_depthwise_block", "conv_relu"], kernel!("conv2d_depthwise_rows")),
    ("conv2d_depthwise_tall", &["conv_io", "conv2d_depthwise_block", "conv2d_depthwise_cols", "conv_relu"], kernel!("conv2d_depthwise_tall")),
    // Columns shared through subgroup shuffles: only where the weights are shuffled too.
    ("reduce_general", &["dtypes", "cast", "compensated", "reduce", "reduce_io", "packed_store"], kernel!("reduce_general")),
    ("reduce_rows", &["compensated", "reduce", "reduce_vec", "reduce_tree"], kernel!("reduce_rows")),
    // The same rows kernel combining a workgroup's states through subgroup shuffles.
    ("reduce_rows_subgroup", &["compensated", "reduce", "reduce_vec", "reduce_tree_subgroup"], kernel!("reduce_rows")),
    ("reduce_cols", &["compensated", "reduce", "reduce_vec"], kernel!("reduce_cols")),
    // Pooling and bilinear resampling: one pipeline, specialized by its uniform.
    ("pool2d", &["dtypes", "cast", "pool", "pool_window"], kernel!("pool2d")),
    ("pool2d_vec", &["dtypes", "cast", "pool", "pool_window"], kernel!("pool2d_vec")),
    ("pool2d_rows", &["pool"], kernel!("pool2d_rows")),
    // layer_norm and group_norm: a workgroup per row, or a workgroup per chunk of few long rows.
    ("norm_rows", &["dtypes", "cast", "compensated", "norm"], kernel!("norm_rows")),
    ("norm_split", &["dtypes", "cast", "compensated", "norm"], kernel!("norm_split")),
    ("conv2d_depthwise_tall_shuffled", &["conv_io", "conv2d_depthwise_block", "subgroup_slot", "conv2d_depthwise_cols_shuffled", "conv_relu"], kernel!("conv2d_depthwise_tall")),
];

/// The full source of kernel `name`: the kernel's `enable` directives (WGSL wants them before
/// any declaration), the `uniform_index` prelude (every kernel's), its own preludes (from files
/// or generated), then the rest of the kernel.
pub fn source(name: &str) -> Option<String> {
    let (_, preludes, kernel) = KERNELS.iter().find(|(n, _, _)| *n == name)?;
    let (enables, body): (Vec<&str>, Vec<&str>) = kernel.lines().partition(|l| l.starts_with("enable "));
    let mut out: String = enables.iter().map(|l| format!("{l}\n")).collect();
    out.push_str(PRELUDES[0].1);
    out.push('\n');
    for p in *preludes {
        match PRELUDES.iter().find(|(n, _)| n == p) {
            Some((_, text)) => out.push_str(text),
            None => out.push_str(&generated(p)?),
        }
        out.push('\n');
    }
    if enables.is_empty() {
        out.push_str(kernel);
    } else {
        out.push_str(&body.join("\n"));
        out.push('\n');
    }
    Some(out)
}

/// The source of kernel `name` as an adapter compiles it: as [`source`] on CPU adapters (`cpu`),
/// which read the kernel's uniform at `pz()` (`shaders/preludes/uniform_index.wgsl`); GPUs read
/// it as a plain struct, at constant offsets (an NVIDIA H200 ran depthwise convolutions 15%
/// slower through `pz()`; with the plain struct, at their earlier speed).
pub fn source_for(name: &str, cpu: bool) -> Option<String> {
    let s = source(name)?;
    Some(if cpu { s } else { plain_uniform(&s) })
}

/// `src` with its one-element uniform array (`var<uniform> N: array<T, 1>;`, read as `N[pz()].`
/// and, in `pz()`, `N[0].`) as the struct itself (`var<uniform> N: T;`, read as `N.`).
fn plain_uniform(src: &str) -> String {
    let mut out = src.replace("[pz()].", ".");
    let mut from = 0;
    while let Some(at) = out[from..].find("var<uniform> ").map(|i| from + i) {
        let decl_end = out[at..].find(';').map_or(out.len(), |i| at + i);
        let decl = out[at..decl_end].to_string();
        from = decl_end;
        let Some((name, ty)) = decl["var<uniform> ".len()..].split_once(": array<") else { continue };
        let Some(ty) = ty.strip_suffix(", 1>") else { continue };
        let plain = format!("var<uniform> {name}: {ty}");
        out.replace_range(at..decl_end, &plain);
        out = out.replace(&format!("{name}[0]."), &format!("{name}."));
        from = at + plain.len();
    }
    out
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
    /// The whole module as a GPU compiles it ([`source_for`]): preludes and kernel.
    pub fn source(&self) -> String {
        source_for(self.kernel, false).unwrap_or_default()
    }
}
