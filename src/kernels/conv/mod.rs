//! Convolution on the device, as implicit GEMM: every operand is read through its strides (no
//! im2col buffer, no hidden copy of the input). Four kernel families, one eligibility function
//! ([`ConvKernel::eligible`]) used by the tuner's candidates and by forced kernels alike:
//!
//! * [`blocked`]: register-blocked kernels shaped for CPU adapters (an invocation holds 8 pixels,
//!   or 4, x up to 64 input channels); a kh x kw kernel runs as kh*kw shifted 1x1 passes that
//!   add into the output.
//! * [`direct`]: shaped for CPU adapters too, for any kernel size: an invocation holds 8 pixels
//!   x up to 16 output channels and walks every tap and input channel, writing each output once.
//! * [`gemm`]: tiled implicit GEMM shaped for GPUs (64 x 64 output tiles, 4 x 4 register
//!   blocks, the reduction staged through workgroup memory), with the im2col mapping inside the
//!   input loads.
//! * [`depthwise`]: one input channel per output channel, memory-bound.
//!
//! A grouped 1x1 convolution of small images on [`ConvKernel::Nchw`] runs, where it can, as
//! one batched matrix product over its images and groups (`kernels/conv/grouped.rs`, which
//! the tensors call first): dispatches that each cover every image and group rather than one
//! per group.
//!
//! The kernels and their one check: `kernel`; what the families share (views, image ranges,
//! the dispatch of uniforms and bind groups): `common`; the tuner's classes: `class`. This
//! file records a call through its kernel's family.

pub(crate) mod blocked;
pub(crate) mod class;
pub(crate) mod common;
pub(crate) mod coop;
pub(crate) mod depthwise;
mod direct;
pub(crate) mod gemm;
pub(crate) mod grouped;
pub(crate) mod kernel;

pub(crate) use common::{ConvCall, View};
pub use kernel::ConvKernel;

use crate::error::{Error, Result};
use crate::kernels::conv::common::{image_ranges, Operands};
use crate::kernels::conv::kernel::{Family, OP};
use crate::kernels::shaders::PipelineSpec;
use crate::runtime::record::Recorder;
use crate::runtime::Runtime;


/// Records a validated convolution through `call.kernel` (not `Auto`) into `rec`: f32
/// operands, or 16-bit ones on a kernel that reads them ([`ConvKernel::reads_half`]). The caller holds the operands until the work is done.
pub(crate) fn record(rt: &Runtime, rec: &mut Recorder, call: &ConvCall<'_>) -> Result<()> {
    let &ConvCall { out, input, weight, bias, options, g, kernel, residual, .. } = call;
    kernel.admits(&rt.report, g, options)?;
    if let Some(r) = residual {
        if !kernel.fuses_residual() || r.layout.strides() != out.layout.strides() || r.buffer.size() > rt.report.conv_binding_limit() {
            return Err(Error::unsupported(call.op, format!("{kernel:?} cannot add a residual of strides {:?} in its epilogue (the GEMM kernels add one of the output's strides {:?} that fits one binding)", r.layout.strides(), out.layout.strides())));
        }
    }
    if g.n * g.k * g.oh * g.ow == 0 {
        return Ok(());
    }
    if kernel == ConvKernel::Coop {
        // f16 operands bound whole: no image ranges of f32 windows.
        return coop::record(rt, rec, call);
    }
    if g.dtype != crate::dtype::DType::F32 && !kernel.reads_half() {
        return Err(Error::unsupported(call.op, format!("{kernel:?} convolves float32 operands, got {:?} (16-bit calls reach it through f32 copies)", g.dtype)));
    }
    let report = &rt.report;
    for (name, t) in [("bias", bias), ("weight", Some(weight))] {
        if let Some(t) = t {
            if t.buffer.size() > report.conv_binding_limit() {
                return Err(Error::Limit { op: OP, what: format!("binding the {name} ({} bytes)", t.buffer.size()), limit: "max_storage_buffer_binding_size", requested: t.buffer.size(), max: report.conv_binding_limit() });
            }
        }
    }
    let ranges = image_ranges(input.layout, out.layout, g.n, report.conv_binding_limit(), report.min_storage_buffer_offset_alignment as u64, g.dtype.size() as u64)?;
    let ops = Operands { call: *call, ranges: &ranges };
    match kernel.family() {
        Family::Blocked => blocked::record(rt, rec, &ops),
        Family::Direct => direct::record(rt, rec, &ops),
        Family::Gemm => gemm::record(rt, rec, &ops),
        Family::Depthwise => depthwise::record(rt, rec, &ops),
        Family::Coop => coop::record(rt, rec, call),
    }
}

/// Every convolution pipeline the tuner may choose on an adapter that is not a CPU: each
/// GPU-shaped kernel with each set of override constants it can be given. The register-budget
/// test compiles each of them with a GPU compiler.
pub fn gpu_pipelines() -> Vec<PipelineSpec> {
    let mut out = Vec::new();
    for kernel in ConvKernel::ALL.into_iter().filter(|k| k.gpu_shaped()) {
        let channels = kernel.channels() as i64;
        // Only the NHWC orientations move their input as vec4 words.
        let vins: &[i64] = if kernel.channels() { &[0, 1] } else { &[0] };
        for &vin in vins {
            for vout in [0, 1] {
                // The GEMM's finish is still two pipeline constants; the others' a uniform.
                let finishes: &[(i64, i64, i64)] = if kernel.family() == Family::Gemm { &[(0, 0, 0), (0, 1, 0), (1, 0, 0), (1, 1, 0), (0, 1, 1), (1, 1, 1), (1, 0, 1)] } else { &[(0, 0, 0)] };
                for &(mode, relu, resid) in finishes {
                    let mut constants = vec![("VIN", vin), ("VOUT", vout)];
                    if kernel.family() == Family::Gemm {
                        constants.splice(0..0, [("MODE", mode), ("RELU", relu), ("RESID", resid)]);
                    }
                    if kernel.wide() {
                        // The wide kernels: their tiles of each shape, whole (each epilogue)
                        // and as split-K slices, in f32 and each 16-bit type (their sums are
                        // the split kernels' below).
                        for kg in [64, 128] {
                            let (pm, pn) = kernel.tile_parts(kg);
                            let parts = [("PM", pm as i64), ("PN", pn as i64)];
                            let whole = vec![("CHANNELS", channels), ("MODE", mode), ("RELU", relu), ("RESID", resid), ("VIN", vin), ("VOUT", vout)];
                            let slices = vec![("CHANNELS", channels), ("MODE", 0), ("RELU", 0), ("RESID", 0), ("VIN", vin), ("VOUT", 1), ("SPLIT", 1)];
                            let mut forms = vec![whole];
                            if (mode, relu, resid, vout) == (0, 0, 0, 1) {
                                forms.push(slices);
                            }
                            for c in forms {
                                for (name, half) in [("conv2d_gemm", None), ("conv2d_gemm16", Some(crate::dtype::DType::F16)), ("conv2d_gemm16", Some(crate::dtype::DType::BF16))] {
                                    let half: Vec<(&'static str, i64)> = half.map(|d| ("HALF", d.code() as i64)).into_iter().collect();
                                    out.push(PipelineSpec { kernel: name, constants: [c.clone(), parts.to_vec(), half].concat() });
                                }
                            }
                        }
                        continue;
                    }
                    if kernel.split() {
                        // The slices' pass (no epilogue, stores to the partial buffer), and
                        // the sum with each epilogue.
                        if (mode, relu, resid, vout) == (0, 0, 0, 1) {
                            out.push(PipelineSpec { kernel: "conv2d_gemm", constants: vec![("CHANNELS", channels), ("MODE", 0), ("RELU", 0), ("RESID", 0), ("VIN", vin), ("VOUT", 1), ("SPLIT", 1)] });
                        }
                        if vin == 0 && (channels == 1 || vout == 0) {
                            out.push(PipelineSpec { kernel: "conv2d_gemm_sum", constants: vec![("CHANNELS", channels), ("MODE", mode), ("RELU", relu), ("RESID", resid), ("VOUT", vout)] });
                        }
                        continue;
                    }
                    if kernel.family() == Family::Gemm {
                        // The 16-bit forms (every pipeline of the f32 ones above, in each type).
                        half_forms(&mut out, channels, vin, vout, (mode, relu, resid));
                    }
                    if kernel != ConvKernel::DepthwiseRows {
                        constants.insert(0, ("CHANNELS", channels));
                    }
                    if kernel.family() == Family::Depthwise {
                        constants.push(("WG", depthwise::WG as i64));
                    }
                    let forms: Vec<Vec<(&'static str, i64)>> = if kernel == ConvKernel::DepthwiseRows {
                        [0, 1].into_iter().map(|slide| [constants.clone(), vec![("SLIDE", slide)]].concat()).collect()
                    } else {
                        vec![constants]
                    };
                    for c in forms {
                        // The depthwise kernels' 16-bit forms, in each type.
                        if kernel.family() == Family::Depthwise {
                            for dtype in [crate::dtype::DType::F16, crate::dtype::DType::BF16] {
                                out.push(PipelineSpec { kernel: shader16_of(kernel), constants: [c.clone(), vec![("HALF", dtype.code() as i64)]].concat() });
                            }
                        }
                        out.push(PipelineSpec { kernel: shader_of(kernel), constants: c });
                    }
                }
            }
        }
    }
    // The GEMM kernels' weight read where it lies (`IN_PLACE`), in every form of theirs above.
    let in_place: Vec<PipelineSpec> = out
        .iter()
        .filter(|p| matches!(p.kernel, "conv2d_gemm" | "conv2d_gemm16"))
        .map(|p| PipelineSpec { kernel: p.kernel, constants: [p.constants.clone(), vec![("IN_PLACE", 1)]].concat() })
        .collect();
    out.extend(in_place);
    out
}

/// The 16-bit forms (`conv2d_gemm16`, `conv2d_gemm_sum16`) of a whole GEMM pipeline, in
/// float16 and bfloat16: the kernel with this epilogue, and, once per orientation and vector
/// form, the split-K slices and sums as `gpu_pipelines` lists them for f32.
fn half_forms(out: &mut Vec<PipelineSpec>, channels: i64, vin: i64, vout: i64, (mode, relu, resid): (i64, i64, i64)) {
    for dtype in [crate::dtype::DType::F16, crate::dtype::DType::BF16] {
        let half = ("HALF", dtype.code() as i64);
        out.push(PipelineSpec { kernel: "conv2d_gemm16", constants: vec![("CHANNELS", channels), ("MODE", mode), ("RELU", relu), ("RESID", resid), ("VIN", vin), ("VOUT", vout), half] });
        if (mode, relu, resid, vout) == (0, 0, 0, 1) {
            out.push(PipelineSpec { kernel: "conv2d_gemm16", constants: vec![("CHANNELS", channels), ("MODE", 0), ("RELU", 0), ("RESID", 0), ("VIN", vin), ("VOUT", 1), ("SPLIT", 1), half] });
        }
        if vin == 0 && (channels == 1 || vout == 0) {
            out.push(PipelineSpec { kernel: "conv2d_gemm_sum16", constants: vec![("CHANNELS", channels), ("MODE", mode), ("RELU", relu), ("RESID", resid), ("VOUT", vout), half] });
        }
    }
}

/// The registered 16-bit form of a GPU-shaped depthwise kernel.
fn shader16_of(kernel: ConvKernel) -> &'static str {
    match kernel {
        ConvKernel::DepthwiseRows => "conv2d_depthwise_rows16",
        _ => "conv2d_depthwise16",
    }
}

/// The registered kernel of a GPU-shaped kernel.
fn shader_of(kernel: ConvKernel) -> &'static str {
    match kernel {
        ConvKernel::DepthwiseRows => "conv2d_depthwise_rows",
        k if k.family() == Family::Gemm => "conv2d_gemm",
        _ => "conv2d_depthwise",
    }
}
