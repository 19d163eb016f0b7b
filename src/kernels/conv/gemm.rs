//! The tiled implicit-GEMM convolution (`conv2d_gemm.wgsl`), shaped for GPUs: 64 x 64 output
//! tiles per workgroup, a 4 x 4 register block per invocation, the reduction staged through
//! workgroup memory. The weight is packed once per call into [group][r][K/groups rounded up
//! to 4] rows of vec4 words in the kernel's reduction order (a copy of the weight: K*C/groups*
//! kh*kw elements, tiny next to the work); the input is read in place.


use crate::error::{Error, Result};
use crate::kernels::abi::uniform;
use crate::kernels::conv::common::{bias_binding, check_packed, dispatch, pack, packed_buffer, i32_of, out_bindings, u32_of, words, Operands};
use crate::kernels::dispatch::Dispatch;
use crate::kernels::conv::kernel::{OP};
use crate::layout::Layout;
use crate::runtime::record::Recorder;
use crate::runtime::{PipelineKey, Runtime, Slot};

/// The bindings: the parameters, the input, the packed weight, the bias, the output, the
/// input and output windows again as vec4 words, and the residual.
const SLOTS: &[Slot] = &[Slot::Uniform, Slot::Read, Slot::Read, Slot::Read, Slot::Write, Slot::Read, Slot::Write, Slot::Read];

/// The output tile of a workgroup: pixels x output channels (`BM`, `BN` of the kernel).
const TILE: usize = 64;

uniform! {
    /// The uniform of `shaders/kernels/conv2d_gemm.wgsl` (`GemmParams` there).
    pub(crate) struct GemmParams {
        xs: [i32; 4],
        ys: [i32; 4],
        geo: [u32; 4],
        conv: [i32; 4],
        taps: [i32; 4],
        red: [u32; 4],
        base: [i32; 4],
        work: [u32; 4],
        res: [i32; 4],
    }
}

/// Records the convolution of `ops` through the GEMM kernel.
pub(crate) fn record(rt: &Runtime, rec: &mut Recorder, ops: &Operands<'_>) -> Result<()> {
    let (g, o, kernel) = (ops.g, ops.options, ops.kernel);
    let groups = o.groups;
    let (cg, kg) = (g.c / groups, g.k / groups);
    let r_len = cg * g.kh * g.kw;
    let row = kg.div_ceil(4);
    // The packed weight: [groups][r][row] vec4 words, r in the kernel's order.
    let packed_elems = groups.checked_mul(r_len).and_then(|v| v.checked_mul(row * 4)).ok_or_else(|| Error::overflow(OP, format!("packing weight {:?}", ops.weight.layout.shape())))?;
    let packed_bytes = packed_elems as u64 * 4;
    check_packed(rt, packed_elems, ops.weight.layout)?;
    let xs = ops.input.layout.strides();
    let ys = ops.out.layout.strides();
    let bs = ops.bias.map_or(0, |b| b.layout.strides()[0]);
    let geom = ops.geometry()?;
    let mut plan = Vec::new();
    for r in ops.ranges {
        let pixels = (r.n1 - r.n0) * g.oh * g.ow;
        let (tm, tn) = (pixels.div_ceil(TILE), kg.div_ceil(TILE));
        let total = tm as u64 * tn as u64 * groups as u64;
        let grid = crate::kernels::conv::common::grid(rt, total, &format!("{total} workgroups of 64 x 64 outputs"))?;
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
            res: [ops.residual.map_or(Ok(0), |res| i32_of(res.layout.offset() as isize + (r.y.0 / 4) as isize - ops.out.layout.offset() as isize, "residual offset"))?, 0, 0, 0],
        };
        let constants = vec![("CHANNELS", kernel.channels() as i64), ("MODE", ops.bias.is_some() as i64), ("RELU", o.relu as i64), ("RESID", ops.residual.is_some() as i64), ("VIN", vin as i64), ("VOUT", vout as i64)];
        plan.push((r, params, PipelineKey { shader: "conv2d_gemm", constants }, vout, grid));
    }
    // The weight as [groups, K/groups, C/groups, kh, kw] (a split of dim 0 is always a view),
    // copied into the packed rows: element (g, k, c, ky, kx) at ((g * R + r) * row) * 4 + k.
    let w = ops.weight.layout.view(&[groups as isize, kg as isize, cg as isize, g.kh as isize, g.kw as isize])?;
    let rs = (row * 4) as isize;
    let (sc, sy, sx) = if kernel.channels() { (rs, (g.kw * cg) as isize * rs, cg as isize * rs) } else { ((g.kh * g.kw) as isize * rs, g.kw as isize * rs, rs) };
    let dst = Layout::as_strided(&[groups, kg, cg, g.kh, g.kw], &[r_len as isize * rs, 1, sc, sy, sx], 0, packed_elems)?;
    let packed = packed_buffer(rt, rec, packed_elems, groups * kg * r_len, wgpu::BufferUsages::empty())?;
    pack(rt, rec, ops, &dst, &w, packed.buffer())?;
    let unused = rt.scoped(OP, || rt.buffer(OP, 16, wgpu::BufferUsages::STORAGE))?;
    let bias = bias_binding(ops.bias, packed.buffer());
    let dispatches: Vec<Dispatch<'_, GemmParams>> = plan
        .into_iter()
        .map(|(r, params, key, vout, grid)| {
            let [o4, o6] = out_bindings(ops.out.buffer, r.y, unused.buffer(), vout);
            // Without a residual (never read) a few bytes of the packed weight, bound read-only
            // already (the scratch word is bound writable).
            let res = ops.residual.map_or((packed.buffer(), (0, packed_bytes.min(16))), |res| (res.buffer, (0, res.buffer.size())));
            Dispatch { key, params, bindings: vec![(ops.input.buffer, r.x), (packed.buffer(), (0, packed_bytes)), bias, o4, (ops.input.buffer, words(r.x)), o6, res], grid }
        })
        .collect();
    dispatch(rt, rec, SLOTS, &dispatches)?;
    rec.hold(unused);
    rec.hold(packed);
    Ok(())
}
