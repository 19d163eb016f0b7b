//! The float16 tensor-core convolution (`conv2d_coop.wgsl`, [`ConvKernel::Coop`]): the implicit
//! GEMM of `gemm.rs` with its inner product on cooperative matrices (16 x 16 x 16, or 8 x 8 x 8
//! where the adapter has only that, f32 accumulation), reading f16 operands and writing the f16
//! output with bias, residual and ReLU in its epilogue, as the SIMT GEMM and depthwise kernels
//! do too (`conv2d_gemm16`; the CPU-shaped kernels need conversions to f32 and back,
//! `Batch::convolve_in_f32`). The weight is read where it lies when R and K/groups are whole
//! fragments and its reduction dims, in the kernel's order, one run of unit stride
//! ([`read_in_place`]: PyTorch's contiguous weight under NCHW, its channels-last one under
//! NHWC), else packed at each call into [group][Rp][Kp] f16 rows (R and K/groups rounded up to
//! the fragment side, zero in the padding); input, output, bias and residual are bound whole
//! and read through their strides.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::conv::common::{grid, i32_of, pack, packed_buffer, reduction_stride, u32_of, weight_reaches, ConvCall, Operands};
use crate::kernels::conv::gemm::GemmParams;
use crate::kernels::conv::kernel::{ConvKernel, OP};
use crate::kernels::coop;
use crate::kernels::dispatch::{self, Dispatch};
use crate::layout::Layout;
use crate::runtime::record::Recorder;
use crate::runtime::{AdapterReport, PipelineKey, Runtime, Slot};

/// The bindings: the parameters, the input, the packed weight, the bias, the output and the
/// residual, all f16.
const SLOTS: &[Slot] = &[Slot::Uniform, Slot::Read, Slot::Read, Slot::Read, Slot::Write, Slot::Read];

/// Whether every buffer the kernel binds fits one binding (input, bias, output and residual are
/// bound whole; the weight only through its packed copy), with the limit error where one does
/// not.
pub(crate) fn fits(report: &AdapterReport, call: &ConvCall<'_>) -> Result<()> {
    let max = report.conv_binding_limit();
    for (name, view) in [("input", Some(call.input)), ("bias", call.bias), ("output", Some(call.out)), ("residual", call.residual)] {
        if let Some(v) = view {
            if v.buffer.size() > max {
                return Err(Error::Limit { op: OP, what: format!("binding the {name} of {:?} whole ({ConvKernel:?} kernel)", v.layout.shape(), ConvKernel = ConvKernel::Coop), limit: "max_storage_buffer_binding_size", requested: v.buffer.size(), max });
            }
        }
    }
    Ok(())
}

/// Records the f16 convolution `call` through the kernel, after its checks
/// ([`ConvKernel::eligible`], [`ConvKernel::runs_on`], [`ConvKernel::within_loop_bound`],
/// [`fits`]).
pub(crate) fn record(rt: &Runtime, rec: &mut Recorder, call: &ConvCall<'_>) -> Result<()> {
    let report = &rt.report;
    ConvKernel::Coop.admits(report, call.g, call.options)?;
    fits(report, call)?;
    let (g, o) = (call.g, call.options);
    if g.n * g.k * g.oh * g.ow == 0 {
        return Ok(());
    }
    let f = coop::frag(report);
    let groups = o.groups;
    let (cg, kg) = (g.c / groups, g.k / groups);
    let r_len = cg * g.kh * g.kw;
    let (rp, kp) = (r_len.div_ceil(f) * f, kg.div_ceil(f) * f);
    let packed_elems = groups.checked_mul(rp).and_then(|v| v.checked_mul(kp)).ok_or_else(|| Error::overflow(OP, format!("packing weight {:?}", call.weight.layout.shape())))?;
    let packed_bytes = (packed_elems as u64 * 2).next_multiple_of(4);
    let channels = call.input.layout.strides()[1] == 1;
    let w = call.weight.layout.view(&[groups as isize, kg as isize, cg as isize, g.kh as isize, g.kw as isize])?;
    let in_place = read_in_place(report, call, &w, channels, f);
    if in_place.is_none() && packed_bytes > report.conv_binding_limit() {
        return Err(Error::Limit { op: OP, what: format!("binding the packed weight of {:?}", call.weight.layout.shape()), limit: "max_storage_buffer_binding_size", requested: packed_bytes, max: report.conv_binding_limit() });
    }
    let ops = Operands { call: *call, ranges: &[] };
    let geom = ops.geometry()?;
    let pixels = g.n * g.oh * g.ow;
    // The tile (pixels x channels): 8 x 8 fragments, or, where the group's channels fit one
    // column of subgroup blocks (4 fragments), 16 x 4 (NARROW: no block repeats the last
    // fragment; each of the workgroup's invocations gathers at most 4 pixels of it).
    let wg = coop::workgroup(report).1 as usize;
    let narrow = kp <= 4 * f && 16 * f <= 4 * wg;
    let (bm, bn) = if narrow { (16 * f, 4 * f) } else { (8 * f, 8 * f) };
    let (tm, tn) = (pixels.div_ceil(bm), kg.div_ceil(bn));
    let total = tm as u64 * tn as u64 * groups as u64;
    let grid = grid(rt, total, &format!("{total} workgroups of {bm} x {bn} outputs"))?;
    let offset = |l: &Layout, what: &str| i32_of(l.offset() as isize, what);
    let params = GemmParams {
        xs: geom.xs,
        ys: geom.ys,
        geo: geom.geo,
        conv: geom.conv,
        taps: geom.taps,
        red: [u32_of(cg, "C/groups")?, u32_of(kg, "K/groups")?, u32_of(r_len, "C/groups*kh*kw")?, u32_of(kp, "packed row")?],
        base: [offset(call.input.layout, "input offset")?, offset(call.out.layout, "output offset")?, call.bias.map_or(Ok(0), |b| offset(b.layout, "bias offset"))?, i32_of(call.bias.map_or(0, |b| b.layout.strides()[0]), "bias stride")?],
        work: [u32_of(pixels, "output pixels")?, u32_of(tm, "pixel tiles")?, u32_of(tn, "channel tiles")?, u32_of(total as usize, "workgroups")?],
        // The residual has the output's strides: its element index minus the output's.
        res: [call.residual.map_or(Ok(0), |r| i32_of(r.layout.offset() as isize - call.out.layout.offset() as isize, "residual offset"))?, in_place.map_or(-1, |p| p[0]), in_place.map_or(0, |p| p[1]), in_place.map_or(0, |p| p[2])],
        split: [1, 0, 0, 0],
        inv: crate::kernels::conv::common::tap_reciprocals(g, cg),
    };
    let mut constants = vec![("CHANNELS", channels as i64), ("MODE", call.bias.is_some() as i64), ("RELU", o.relu as i64), ("RESID", call.residual.is_some() as i64), coop::workgroup(report), ("NARROW", narrow as i64), ("IN_PLACE", in_place.is_some() as i64)];
    crate::kernels::conv::common::long_reduction(r_len, &mut constants);
    let shader = coop::shader(report, "conv2d_coop", "conv2d_coop8");
    // The weight where it lies, or copied into the packed rows: element (g, k, c, ky, kx) at
    // (g * Rp + r) * Kp + k, r in the kernel's order.
    let whole = |b: &wgpu::Buffer| (0, b.size());
    let packed;
    let weight = match in_place {
        Some(_) => (call.weight.buffer, whole(call.weight.buffer)),
        None => {
            let kpi = kp as isize;
            let (sc, sy, sx) = if channels { (kpi, (g.kw * cg) as isize * kpi, cg as isize * kpi) } else { ((g.kh * g.kw) as isize * kpi, g.kw as isize * kpi, kpi) };
            let dst = Layout::as_strided(&[groups, kg, cg, g.kh, g.kw], &[(rp * kp) as isize, 1, sc, sy, sx], 0, packed_elems)?;
            packed = packed_buffer(rt, rec, packed_elems, groups * kg * r_len, DType::F16, wgpu::BufferUsages::empty())?;
            pack(rt, rec, &ops, &dst, &w, &packed, DType::F16)?;
            (&packed, (0, packed_bytes))
        }
    };
    // Without a bias or residual (never read), the weight's binding again.
    let bias = call.bias.map_or(weight, |b| (b.buffer, whole(b.buffer)));
    let res = call.residual.map_or(weight, |r| (r.buffer, whole(r.buffer)));
    let bindings = vec![(call.input.buffer, whole(call.input.buffer)), weight, bias, (call.out.buffer, whole(call.out.buffer)), res];
    dispatch::record(rt, rec, OP, SLOTS, &[Dispatch { key: PipelineKey { shader, constants }, params, bindings, grid }])?;
    Ok(())
}

/// Where the kernel reads the f16 weight `w` (viewed [groups, K/groups, C/groups, kh, kw])
/// without a packed copy: R and K/groups whole fragments of side `f`, the reduction dims in
/// the kernel's order (`channels`: (ky, kx, c), else (c, ky, kx)) one run of unit stride, the
/// offset and the strides of the output channels and of the groups multiples of `f` (each
/// fragment's first element aligned as the packed rows' are) and positive, the fragments'
/// k rows at least `f` apart, within the buffer, which fits one binding and is not the output's.
/// Gives the offset and those two strides, in f16 elements.
pub(crate) fn read_in_place(report: &AdapterReport, call: &ConvCall<'_>, w: &Layout, channels: bool, f: usize) -> Option<[i32; 3]> {
    let size = call.weight.buffer.size();
    let (shape, strides) = (w.shape(), w.strides());
    let (groups, kg, r_len) = (shape[0], shape[1], shape[2] * shape[3] * shape[4]);
    if size > report.conv_binding_limit() || r_len % f != 0 || kg % f != 0 || !weight_reaches(call, w, size / 2) {
        return None;
    }
    reduction_stride(w, channels)?;
    // K/groups >= f > 1, so the channels' stride is their own; the groups' matters past one.
    let (ks, gs) = (strides[1], if groups > 1 { strides[0] } else { 0 });
    let fi = f as isize;
    let base = w.offset() as isize;
    if ks < fi || ks % fi != 0 || gs < 0 || gs % fi != 0 || base % fi != 0 {
        return None;
    }
    Some([base as i32, ks as i32, gs as i32])
}
