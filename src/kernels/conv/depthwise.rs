//! The depthwise convolutions (`conv2d_depthwise.wgsl` and `conv2d_depthwise_rows.wgsl`,
//! groups == C): each output channel reads
//! one input channel, so the kernel is a per-channel stencil bound by memory. `DepthwiseNchw`
//! and `DepthwiseNhwc` read every operand, the weight included, in place through its strides;
//! the rows and tall kernels pack the weight into f32 [tap][K rounded up to 4] rows at each call
//! (a tap's 4 channels one vec4 load; PyTorch stores a depthwise weight's taps innermost, any
//! memory format). Float16 and bfloat16 operands are read and written as they are
//! (`conv2d_depthwise16`, `conv2d_depthwise_rows16`), widened exactly: the f32 kernel's
//! arithmetic, step for step.


use crate::dtype::DType;
use crate::error::Result;
use crate::kernels::abi::uniform;
use crate::kernels::conv::common::{bias_binding, finish, check_packed, dispatch, pack, packed_buffer, i32_of, out_bindings_of, u32_of, ElementForm, Operands};
use crate::kernels::dispatch::{read_words, Dispatch};
use crate::kernels::conv::kernel::{ConvKernel, OP};
use crate::layout::Layout;
use crate::runtime::record::Recorder;
use crate::runtime::{PipelineKey, Runtime, Slot};

/// The bindings: the parameters, the input, the weight, the bias, the output, and the input and
/// output windows again as vec4 words.
const SLOTS: &[Slot] = &[Slot::Uniform, Slot::Read, Slot::Read, Slot::Read, Slot::Write, Slot::Read, Slot::Write];

/// Invocations per workgroup.
pub(crate) const WG: u32 = 64;

uniform! {
    /// The uniform of `shaders/kernels/conv2d_depthwise.wgsl` (`DepthwiseParams` there).
    pub(crate) struct DepthwiseParams {
        xs: [i32; 4],
        ys: [i32; 4],
        geo: [u32; 4],
        conv: [i32; 4],
        taps: [i32; 4],
        ws: [i32; 4],
        base: [i32; 4],
        work: [u32; 4],
        finish: [u32; 4],
    }
}

/// Records the convolution of `ops` (depthwise: checked by the caller) through a depthwise
/// kernel.
pub(crate) fn record(rt: &Runtime, rec: &mut Recorder, ops: &Operands<'_>) -> Result<()> {
    if matches!(ops.kernel, ConvKernel::DepthwiseRows | ConvKernel::DepthwiseTall) {
        return record_rows(rt, rec, ops);
    }
    let (g, o, kernel) = (ops.g, ops.options, ops.kernel);
    let form = ElementForm::of(g, kernel)?;
    let xs = ops.input.layout.strides();
    let ys = ops.out.layout.strides();
    let wl = ops.weight.layout;
    // Weight strides of (k, -, ky, kx); a 2-d weight [K, 1] is a 1x1 kernel.
    let ws = match wl.strides() {
        &[k, c, y, x] => [k, c, y, x],
        &[k, c] => [k, c, 0, 0],
        s => unreachable!("weight strides {s:?} of a checked convolution"),
    };
    let bs = ops.bias.map_or(0, |b| b.layout.strides()[0]);
    let geom = ops.geometry()?;
    let mut plan = Vec::new();
    for r in ops.ranges {
        let images = r.n1 - r.n0;
        let units = if kernel.channels() { images * g.oh * g.ow * g.k.div_ceil(4) } else { images * g.k * g.oh * g.ow.div_ceil(4) };
        let grid = crate::kernels::conv::common::grid(rt, (units as u64).div_ceil(WG as u64), &format!("{units} depthwise invocations"))?;
        let (xbase, ybase) = ops.bases(r);
        let (vin, vout) = kernel.vectors(g, o, xs, ys, xbase, ybase, images);
        let params = DepthwiseParams {
            xs: geom.xs,
            ys: geom.ys,
            geo: geom.geo,
            conv: geom.conv,
            taps: geom.taps,
            ws: [i32_of(ws[0], "weight stride k")?, i32_of(ws[1], "weight stride c")?, i32_of(ws[2], "weight stride kh")?, i32_of(ws[3], "weight stride kw")?],
            base: [i32_of(xbase, "input offset")?, i32_of(ybase, "output offset")?, i32_of(wl.offset() as isize, "weight offset")?, i32_of(ops.bias.map_or(0, |b| b.layout.offset() as isize), "bias offset")?],
            work: [u32_of(units, "depthwise invocations")?, u32_of(g.k / g.c, "K / C")?, u32_of(g.k, "K")?, i32_of(bs, "bias stride")? as u32],
            finish: finish(ops.bias.is_some() as u32, o.relu),
        };
        let constants = form.constants(vec![("CHANNELS", kernel.channels() as i64), ("VIN", vin as i64), ("VOUT", vout as i64), ("WG", WG as i64)]);
        plan.push((r, params, PipelineKey { shader: form.shader("conv2d_depthwise", "conv2d_depthwise16"), constants }, vout, grid));
    }
    let unused = rt.held_scratch(rec, OP, 16, wgpu::BufferUsages::STORAGE)?;
    let wbuf = ops.weight.buffer;
    let bias = bias_binding(ops.bias, wbuf);
    let dispatches: Vec<Dispatch<'_, DepthwiseParams>> = plan
        .into_iter()
        .map(|(r, params, key, vout, grid)| {
            let [o4, o6] = out_bindings_of(ops.out.buffer, r.y, &unused, vout, form.unit);
            Dispatch { key, params, bindings: vec![(ops.input.buffer, r.x), (wbuf, (0, wbuf.size())), bias, o4, read_words(rt, ops.input.buffer, r.x, form.unit), o6], grid }
        })
        .collect();
    dispatch(rt, rec, SLOTS, &dispatches)?;
    Ok(())
}

uniform! {
    /// The uniform of the depthwise rows and tall kernels (`RowsParams` in
    /// `shaders/preludes/conv2d_depthwise_block.wgsl`).
    pub(crate) struct RowsParams {
        xs: [i32; 4],
        ys: [i32; 4],
        geo: [u32; 4],
        conv: [i32; 4],
        taps: [i32; 4],
        base: [i32; 4],
        work: [u32; 4],
        strips: [u32; 4],
        finish: [u32; 4],
    }
}

/// Output pixels along a row per invocation of the rows and tall kernels.
const STRIP: usize = 8;

/// Output rows per invocation of the tall kernel (its `TALL`).
const TALL: usize = 16;

/// [`ConvKernel::DepthwiseRows`] and [`ConvKernel::DepthwiseTall`]: the weight packed as
/// [tap][K rounded up to 4] (vec4 words of 4 channels), then 4 channels x 8 pixels of a row
/// (of [`TALL`] rows) per invocation.
fn record_rows(rt: &Runtime, rec: &mut Recorder, ops: &Operands<'_>) -> Result<()> {
    let (g, o, kernel) = (ops.g, ops.options, ops.kernel);
    let form = ElementForm::of(g, kernel)?;
    let xs = ops.input.layout.strides();
    let ys = ops.out.layout.strides();
    let kq = g.k.div_ceil(4);
    let taps = g.kh * g.kw;
    let packed_elems = taps * kq * 4;
    check_packed(rt, packed_elems, ops.weight.layout)?;
    let bs = ops.bias.map_or(0, |b| b.layout.strides()[0]);
    let strips = g.ow.div_ceil(STRIP);
    let tall = kernel == ConvKernel::DepthwiseTall;
    // Output rows per invocation, and blocks of them per output column.
    let rows = if tall { TALL } else { 1 };
    let blocks = g.oh.div_ceil(rows);
    let geom = ops.geometry()?;
    let mut plan = Vec::new();
    for r in ops.ranges {
        let images = r.n1 - r.n0;
        let units = images * blocks * strips * kq;
        let grid = crate::kernels::conv::common::grid(rt, (units as u64).div_ceil(WG as u64), &format!("{units} depthwise invocations"))?;
        let (xbase, ybase) = ops.bases(r);
        let (vin, vout) = kernel.vectors(g, o, xs, ys, xbase, ybase, images);
        let params = RowsParams {
            xs: geom.xs,
            ys: geom.ys,
            geo: geom.geo,
            conv: geom.conv,
            taps: geom.taps,
            base: [i32_of(xbase, "input offset")?, i32_of(ybase, "output offset")?, i32_of(bs, "bias stride")?, i32_of(ops.bias.map_or(0, |b| b.layout.offset() as isize), "bias offset")?],
            work: [u32_of(units, "depthwise invocations")?, u32_of(g.k / g.c, "K / C")?, u32_of(g.k, "K")?, u32_of(kq, "channel quads")?],
            strips: [u32_of(strips, "strips")?, u32_of(blocks, "row blocks")?, 0, 0],
            finish: finish(ops.bias.is_some() as u32, o.relu),
        };
        let mut constants = form.constants(vec![("VIN", vin as i64), ("VOUT", vout as i64), ("WG", WG as i64)]);
        let shader = if tall {
            constants.push(("TALL", TALL as i64));
            if rt.report.shuffled_weights {
                "conv2d_depthwise_tall_shuffled"
            } else {
                "conv2d_depthwise_tall"
            }
        } else {
            constants.push(("SLIDE", (o.stride.1 == 1 && o.dilation.1 == 1) as i64));
            form.shader("conv2d_depthwise_rows", "conv2d_depthwise_rows16")
        };
        plan.push((r, params, PipelineKey { shader, constants }, vout, grid));
    }
    // The weight as [K, 1, kh, kw], copied to element (ky * kw + kx) * 4 * kq + k.
    let w4 = ops.weight4()?;
    let row = (4 * kq) as isize;
    let dst = Layout::as_strided(&[g.k, 1, g.kh, g.kw], &[1, 0, g.kw as isize * row, row], 0, packed_elems)?;
    let packed = packed_buffer(rt, rec, packed_elems, g.k * g.kh * g.kw, DType::F32, wgpu::BufferUsages::empty())?;
    pack(rt, rec, ops, &dst, &w4, &packed, DType::F32)?;
    let unused = rt.held_scratch(rec, OP, 16, wgpu::BufferUsages::STORAGE)?;
    let bias = bias_binding(ops.bias, &packed);
    let dispatches: Vec<Dispatch<'_, RowsParams>> = plan
        .into_iter()
        .map(|(r, params, key, vout, grid)| {
            let [o4, o6] = out_bindings_of(ops.out.buffer, r.y, &unused, vout, form.unit);
            Dispatch { key, params, bindings: vec![(ops.input.buffer, r.x), (&packed, (0, packed_elems as u64 * 4)), bias, o4, read_words(rt, ops.input.buffer, r.x, form.unit), o6], grid }
        })
        .collect();
    dispatch(rt, rec, SLOTS, &dispatches)?;
    Ok(())
}
