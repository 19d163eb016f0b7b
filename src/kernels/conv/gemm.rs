//! The tiled implicit-GEMM convolution (`conv2d_gemm.wgsl`), shaped for GPUs: 64 x 64 output
//! tiles per workgroup and a 4 x 4 register block per invocation (the wide kernels: 128 x 128
//! or 128 x 64 tiles of 8 x 8 or 8 x 4 blocks, [`ConvKernel::tile_parts`]), the reduction
//! staged through workgroup memory. The input is read in place. So is a weight whose
//! reduction dims, in the kernel's order, are one run of unit stride ([`read_in_place`]:
//! PyTorch's contiguous weight under NCHW, its channels-last weight under NHWC, either for a 1x1
//! kernel), so a call is its kernel's dispatches alone; any other weight is packed at each call into
//! [group][r][K/groups rounded up to 4] rows of vec4 words in the kernel's reduction order (a
//! copy of the weight, K*C/groups*kh*kw elements, recorded ahead of the kernel).
//!
//! Float16 and bfloat16 calls run the same kernel text composed with `conv_io16.wgsl` and
//! `conv_gemm_io16.wgsl` (`conv2d_gemm16`, `conv2d_gemm_sum16`): the input, bias and residual read as they are, the
//! weight too (widened exactly) or packed into the same f32 rows, the output rounded once and
//! written in its type. The arithmetic is the f32 kernel's step for step, so the result is the
//! f32 convolution of the same values rounded to the type, bit for bit.
//!
//! The split-K kernels ([`ConvKernel::GemmNchwSplit`], [`ConvKernel::GemmNhwcSplit`]) cut the
//! reduction into slices (`kernels/split.rs`) where a call has too few tiles to fill a GPU: each
//! workgroup walks one slice of one tile and stores its partial sums in a scratch buffer, then
//! a second dispatch (`conv2d_gemm_sum.wgsl`) adds each output's slices in slice order (the
//! same bits at every run) and applies the epilogue.


use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::abi::uniform;
use crate::kernels::conv::common::{bias_binding, check_packed, dispatch, pack, packed_buffer, i32_of, out_bindings_of, reduction_stride, u32_of, weight_reaches, ElementForm, Operands};
use crate::kernels::dispatch::{read_words, Dispatch};
use crate::kernels::conv::kernel::OP;
use crate::layout::Layout;
use crate::runtime::record::Recorder;
use crate::runtime::{PipelineKey, Runtime, Slot};

/// The bindings: the parameters, the input, the packed weight, the bias, the output, the
/// input and output windows again as vec4 words, and the residual.
const SLOTS: &[Slot] = &[Slot::Uniform, Slot::Read, Slot::Read, Slot::Read, Slot::Write, Slot::Read, Slot::Write, Slot::Read];

/// The output tile of a workgroup is PM x PN parts of this many pixels x output channels
/// (`ConvKernel::tile_parts`, the engine's PM and PN).
const PART: usize = 64;

uniform! {
    /// The uniform of `shaders/kernels/conv2d_gemm.wgsl` and `conv2d_coop.wgsl` (`GemmParams` of
    /// `shaders/preludes/conv_gemm_params.wgsl`).
    pub(crate) struct GemmParams {
        pub(super) xs: [i32; 4],
        pub(super) ys: [i32; 4],
        pub(super) geo: [u32; 4],
        pub(super) conv: [i32; 4],
        pub(super) taps: [i32; 4],
        pub(super) red: [u32; 4],
        pub(super) base: [i32; 4],
        pub(super) work: [u32; 4],
        pub(super) res: [i32; 4],
        pub(super) split: [u32; 4],
        pub(super) inv: [f32; 4],
    }
}

/// Records the convolution of `ops` through the GEMM kernel.
pub(crate) fn record(rt: &Runtime, rec: &mut Recorder, ops: &Operands<'_>) -> Result<()> {
    let (g, o, kernel) = (ops.g, ops.options, ops.kernel);
    // float32, or 16-bit operands read as they are (`conv2d_gemm16`).
    let form = ElementForm::of(g, kernel)?;
    let unit = form.unit;
    let groups = o.groups;
    let (cg, kg) = (g.c / groups, g.k / groups);
    let r_len = cg * g.kh * g.kw;
    let row = kg.div_ceil(4);
    // The weight as [groups, K/groups, C/groups, kh, kw] (a split of dim 0 is always a view).
    let w = ops.weight.layout.view(&[groups as isize, kg as isize, cg as isize, g.kh as isize, g.kw as isize])?;
    // Read where it lies, or packed: [groups][r][row] vec4 words, r in the kernel's order.
    let in_place = read_in_place(ops, &w, g.dtype.size() as u64);
    let packed_elems = groups.checked_mul(r_len).and_then(|v| v.checked_mul(row * 4)).ok_or_else(|| Error::overflow(OP, format!("packing weight {:?}", ops.weight.layout.shape())))?;
    let packed_bytes = packed_elems as u64 * 4;
    if in_place.is_none() {
        check_packed(rt, packed_elems, ops.weight.layout)?;
    }
    let xs = ops.input.layout.strides();
    let ys = ops.out.layout.strides();
    let bs = ops.bias.map_or(0, |b| b.layout.strides()[0]);
    let geom = ops.geometry()?;
    // Split-K: the slices, from the largest image range (the partial buffer serves each range
    // in turn), and the partial buffer's rows and words per (group, slice).
    let (pm, pn) = kernel.tile_parts(kg);
    let (bm, bn) = (PART * pm, PART * pn);
    let most_pixels = ops.ranges.iter().map(|r| (r.n1 - r.n0) * g.oh * g.ow).max().unwrap_or(0);
    let (prows, pwords) = (most_pixels.div_ceil(bm) * bm, kg.div_ceil(bn) * (bn / 4));
    let slice_bytes = (groups as u64).saturating_mul(prows as u64).saturating_mul(pwords as u64 * 16);
    // Counted in 64 x 64 tiles, so a wide kernel's call is cut into the split kernel's slices
    // (within the binding limit) and gives its bits.
    let tiles = most_pixels.div_ceil(PART) * kg.div_ceil(PART) * groups;
    let (nslices, chunk) = if kernel.split() && (!kernel.wide() || crate::kernels::split::conv_wants_split(tiles, r_len)) {
        crate::kernels::split::slices(tiles as u64, r_len, slice_bytes, rt.report.conv_binding_limit())
    } else {
        (1, r_len)
    };
    let split = nslices > 1;
    let mut plan = Vec::new();
    for r in ops.ranges {
        let pixels = (r.n1 - r.n0) * g.oh * g.ow;
        let (tm, tn) = (pixels.div_ceil(bm), kg.div_ceil(bn));
        let total = tm as u64 * tn as u64 * groups as u64 * nslices as u64;
        let grid = crate::kernels::conv::common::grid(rt, total, &format!("{total} workgroups of {bm} x {bn} outputs"))?;
        let (xbase, ybase) = ops.bases(r);
        let (vin, vout) = kernel.vectors(g, o, xs, ys, xbase, ybase, r.n1 - r.n0);
        let params = GemmParams {
            xs: geom.xs,
            ys: geom.ys,
            geo: geom.geo,
            conv: geom.conv,
            taps: geom.taps,
            red: [u32_of(cg, "C/groups")?, u32_of(kg, "K/groups")?, u32_of(r_len, "C/groups*kh*kw")?, u32_of(row, "packed row")?],
            base: [i32_of(xbase, "input offset")?, i32_of(ybase, "output offset")?, i32_of(ops.bias.map_or(0, |b| b.layout.offset() as isize), "bias offset")?, i32_of(bs, "bias stride")?],
            work: [u32_of(pixels, "output pixels per dispatch")?, tm as u32, tn as u32, u32_of(total as usize, "workgroups")?],
            // The residual (the output's strides): its element index minus the output's
            // window index of the same element.
            res: [ops.residual.map_or(Ok(0), |res| i32_of(res.layout.offset() as isize + (r.y.0 / r.esize) as isize - ops.out.layout.offset() as isize, "residual offset"))?, in_place.map_or(-1, |w| w.base), in_place.map_or(0, |w| w.ks), in_place.map_or(0, |w| w.rs)],
            split: [nslices as u32, u32_of(chunk, "reduction steps per slice")?, u32_of(prows, "partial rows")?, u32_of(pwords, "partial row words")?],
            inv: crate::kernels::conv::common::tap_reciprocals(g, cg),
        };
        let (channels, bias, relu, resid) = (kernel.channels() as i64, ops.bias.is_some() as i64, o.relu as i64, ops.residual.is_some() as i64);
        // The engine's constants: the tile's parts, a long reduction's integer division, the
        // weight read where it lies (each only where set).
        let parts = |mut c: Vec<(&'static str, i64)>| {
            if (pm, pn) != (1, 1) {
                c.extend([("PM", pm as i64), ("PN", pn as i64)]);
            }
            crate::kernels::conv::common::long_reduction(r_len, &mut c);
            if in_place.is_some() {
                c.push(("IN_PLACE", 1));
            }
            c
        };
        if split {
            // The slices' partial sums, then their sum and the epilogue, one invocation per
            // pixel and channel quad.
            let constants = parts(vec![("CHANNELS", channels), ("MODE", 0), ("RELU", 0), ("RESID", 0), ("VIN", vin as i64), ("VOUT", 1), ("SPLIT", 1)]);
            plan.push((r, params, PipelineKey { shader: form.shader("conv2d_gemm", "conv2d_gemm16"), constants: form.constants(constants) }, Step::Slices, grid));
            let invocations = groups as u64 * pixels as u64 * row as u64;
            let sum_grid = crate::kernels::conv::common::grid(rt, invocations.div_ceil(256), &format!("{invocations} sums of partial outputs"))?;
            let sum_params = GemmParams { work: [params.work[0], 0, 0, u32_of(invocations as usize, "partial sums")?], ..params };
            // The sum stores a pixel's 4 channels: one vec4 word channels-last only.
            let vout = vout && kernel.channels();
            let constants = vec![("CHANNELS", channels), ("MODE", bias), ("RELU", relu), ("RESID", resid), ("VOUT", vout as i64)];
            plan.push((r, sum_params, PipelineKey { shader: form.shader("conv2d_gemm_sum", "conv2d_gemm_sum16"), constants: form.constants(constants) }, Step::Sum(vout), sum_grid));
        } else {
            let constants = parts(vec![("CHANNELS", channels), ("MODE", bias), ("RELU", relu), ("RESID", resid), ("VIN", vin as i64), ("VOUT", vout as i64)]);
            plan.push((r, params, PipelineKey { shader: form.shader("conv2d_gemm", "conv2d_gemm16"), constants: form.constants(constants) }, Step::Whole(vout), grid));
        }
    }
    // The weight's binding: its buffer's whole vec4 words, or the packed rows, into which it
    // is copied: element (g, k, c, ky, kx) at ((g * R + r) * row) * 4 + k.
    let packed;
    let (weight, weight_bytes) = match in_place {
        Some(_) => (ops.weight.buffer, ops.weight.buffer.size() / 16 * 16),
        None => {
            let rs = (row * 4) as isize;
            let (sc, sy, sx) = if kernel.channels() { (rs, (g.kw * cg) as isize * rs, cg as isize * rs) } else { ((g.kh * g.kw) as isize * rs, g.kw as isize * rs, rs) };
            let dst = Layout::as_strided(&[groups, kg, cg, g.kh, g.kw], &[r_len as isize * rs, 1, sc, sy, sx], 0, packed_elems)?;
            packed = packed_buffer(rt, rec, packed_elems, groups * kg * r_len, DType::F32, wgpu::BufferUsages::empty())?;
            pack(rt, rec, ops, &dst, &w, &packed, DType::F32)?;
            (&packed, packed_bytes)
        }
    };
    let unused = rt.held_scratch(rec, OP, 16, wgpu::BufferUsages::STORAGE)?;
    let partial_bytes = slice_bytes * nslices as u64;
    let partial = if split { Some(rt.held_scratch(rec, OP, partial_bytes, wgpu::BufferUsages::STORAGE)?) } else { None };
    let bias = bias_binding(ops.bias, weight);
    // Without a residual (never read) a few bytes of the weight's binding, bound read-only
    // already (the scratch word is bound writable).
    let res = ops.residual.map_or((weight, (0, weight_bytes.min(16))), |res| (res.buffer, (0, res.buffer.size())));
    let dispatches: Vec<Dispatch<'_, GemmParams>> = plan
        .into_iter()
        .map(|(r, params, key, step, grid)| {
            let input = [(ops.input.buffer, r.x), read_words(rt, ops.input.buffer, r.x, unit)];
            // Only split steps use the partial buffer (then it exists).
            let whole = partial.as_ref().map_or((&unused, (0, 16)), |p| (p, (0, partial_bytes)));
            let ([x, x4], [o4, o6]) = match step {
                Step::Whole(vout) => (input, out_bindings_of(ops.out.buffer, r.y, &unused, vout, unit)),
                Step::Slices => (input, [(&unused, (0, 16)), whole]),
                Step::Sum(vout) => ([whole, whole], out_bindings_of(ops.out.buffer, r.y, &unused, vout, unit)),
            };
            Dispatch { key, params, bindings: vec![x, (weight, (0, weight_bytes)), bias, o4, x4, o6, res], grid }
        })
        .collect();
    dispatch(rt, rec, SLOTS, &dispatches)?;
    Ok(())
}

/// What one planned dispatch does: the whole convolution (writing the output, as vec4 words
/// or not), a split call's slices (writing the partial buffer), or their sum (reading it).
#[derive(Clone, Copy)]
enum Step {
    Whole(bool),
    Slices,
    Sum(bool),
}

/// Where the kernel reads the weight without a packed copy: B[r, k] of group g is element
/// `base + (g * K/groups + k) * ks + r * rs` of the weight's buffer, bound whole as vec4 words.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct InPlace {
    pub base: i32,
    pub ks: i32,
    pub rs: i32,
}

/// Whether the weight `w` (viewed [groups, K/groups, C/groups, kh, kw], elements of `esize`
/// bytes) is read where it lies: its reduction dims in the kernel's order ((c, ky, kx), or
/// (ky, kx, c) under CHANNELS) one run of unit stride, so that neighbouring lanes read
/// neighbouring elements (PyTorch's contiguous weight for NCHW, its channels-last weight for
/// NHWC, and either for 1x1), within the whole vec4 words of a buffer of at least one, not the
/// output's, its offset and strides within i32. Otherwise it is packed.
pub(crate) fn read_in_place(ops: &Operands<'_>, w: &Layout, esize: u64) -> Option<InPlace> {
    let size = ops.weight.buffer.size();
    if size < 16 || !weight_reaches(ops, w, size / 16 * (16 / esize)) {
        return None;
    }
    let (shape, strides) = (w.shape(), w.strides());
    let rs = reduction_stride(w, ops.kernel.channels())?;
    // Output channel g * K/groups + k at (g * K/groups + k) * ks: the stride of the groups
    // where a group has one output channel (that of a size-1 dim is any), else of the channels
    // (the groups' is then K/groups times it, a split of one dim).
    let ks = if shape[1] == 1 { strides[0] } else { strides[1] };
    Some(InPlace { base: i32::try_from(w.offset()).ok()?, ks: i32::try_from(ks).ok()?, rs: rs as i32 })
}

