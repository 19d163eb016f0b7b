//! The direct convolution kernels for CPU adapters (`conv2d_direct.wgsl`; for kernels 3 wide
//! at unit stride along W `conv2d_direct_rows.wgsl`, and for 3x3 at unit stride
//! `conv2d_direct_band.wgsl`; preludes `conv.wgsl`, `conv2d_direct_acc.wgsl`
//! and `conv_weights*.wgsl`). `Direct` runs any kernel size, stride, dilation and groups;
//! `DirectRows` and `DirectBand` the shapes [`ConvKernel::eligible`] names, and `DirectBand`
//! only on the adapters [`ConvKernel::runs_on`] names.
//!
//! An invocation accumulates 8 output pixels x 4*KQ output channels (KQ quads, up to 16) over
//! every tap and every input channel of its window, and writes each output once per window:
//! unlike the 1x1 kernels, which run a tap per dispatch, it never reads the output back between
//! taps. A window is 4*KQ output channels of one group x as many of the group's input channels
//! as fit the 64 KiB uniform weight block with all the taps (kh*kw*CW*4*KQ floats); windows
//! after the first of an output-channel block add into the output, the last applies ReLU.

use crate::error::Result;
use crate::kernels::conv::blocked::{record_blocks, windows, ConvParams, Planned, PIXELS, WG};
use crate::kernels::conv::common::{i32_of, u32_of, Operands};
use crate::kernels::conv::kernel::{blocked_vectors as vectors, tiling, ConvKernel, BLOCK};
use crate::layout::Layout;
use crate::runtime::record::Recorder;
use crate::runtime::PipelineKey;

/// Records the convolution of `ops` through the direct kernel.
pub(crate) fn record(rt: &crate::runtime::Runtime, rec: &mut Recorder, ops: &Operands<'_>) -> Result<()> {
    let (g, options) = (ops.g, ops.options);
    let t = tiling(ops.kernel, g, options.groups)?;
    let wins = windows(g, options.groups, t.cw, 4 * t.kq, 1);
    let w4 = ops.weight4()?;
    let bs = ops.bias.map_or(0, |b| b.layout.strides()[0]);
    let (xs, ys) = (ops.input.layout.strides(), ops.out.layout.strides());
    let geom = ops.geometry()?;
    // DirectBand runs only with shuffled weights (`ConvKernel::runs_on`).
    let shader = match (ops.kernel, rt.report.shuffled_weights) {
        (ConvKernel::DirectBand, _) => "conv2d_direct_band",
        (ConvKernel::DirectRows, false) => "conv2d_direct_rows",
        (ConvKernel::DirectRows, true) => "conv2d_direct_rows_shuffled",
        (_, false) => "conv2d_direct",
        (_, true) => "conv2d_direct_shuffled",
    };
    // How a window starts is a uniform word (MODE 3, conv.wgsl) for `Direct` and `DirectBand`,
    // so that the windows of a call, and calls with one window or several, share one pipeline:
    // ResNet-18 (NCHW) compiled `Direct` and `DirectBand` twice each before, the same speed
    // (bench, alternating runs). `DirectRows` keeps it a constant: as a word, its channels-last
    // 3x3 rows ran 17-20% slower.
    let uniform_mode = ops.kernel != ConvKernel::DirectRows;
    let mut plan: Vec<Planned<'_>> = Vec::new();
    for r in ops.ranges {
        let (images, pixels) = (r.n1 - r.n0, (r.n1 - r.n0) * g.oh * g.ow);
        // Invocations: 8 pixels each, anywhere (Direct), of one output row (DirectRows), or of
        // one row of a band of 8 (DirectBand, rows past OH included).
        let invocations = match ops.kernel {
            ConvKernel::DirectRows => images * g.oh * g.ow.div_ceil(PIXELS),
            ConvKernel::DirectBand => images * g.oh.div_ceil(8) * 8 * g.ow.div_ceil(PIXELS),
            _ => pixels.div_ceil(PIXELS),
        };
        let grid = crate::kernels::conv::common::grid(rt, (invocations as u64).div_ceil(WG as u64), &format!("{pixels} output pixels in one dispatch"))?;
        // The kernels' flat invocation index (u32), past the last workgroup included.
        u32_of(grid.0 as usize * grid.1 as usize * WG as usize, "invocations of one dispatch")?;
        let (x0, y0) = ops.bases(r);
        for (wi, w) in wins.iter().enumerate() {
            let (xbase, ybase) = (x0 + w.c0 as isize * xs[1], y0 + w.k0 as isize * ys[1]);
            let bbase = ops.bias.map_or(0, |b| b.layout.offset() as isize + w.k0 as isize * bs);
            let mode = if !w.first { 2 } else if ops.bias.is_some() { 1 } else { 0 };
            let (vin, vout) = vectors(ops.kernel, g, options, xs, ys, xbase, ybase, r.n1 - r.n0);
            let params = ConvParams {
                xs: geom.xs,
                ys: geom.ys,
                geo: geom.geo,
                conv: [geom.conv[0], geom.conv[1], i32_of(-(options.padding.0 as isize), "padding")?, i32_of(-(options.padding.1 as isize), "padding")?],
                base: [i32_of(xbase, "input offset")?, i32_of(ybase, "output offset")?, i32_of(bbase, "bias offset")?, i32_of(bs, "bias stride")?],
                work: [u32_of(pixels, "output pixels per dispatch")?, w.cn as u32, w.kn as u32, grid.0 * WG],
                taps: geom.taps,
                finish: [(options.relu && w.last) as u32, if uniform_mode { mode as u32 } else { 0 }, 0, 0],
            };
            let constants = vec![("WG", WG as i64), ("CQ", t.kq as i64), ("TILED", 0), ("MODE", if uniform_mode { 3 } else { mode }), ("VIN", vin as i64), ("VOUT", vout as i64)];
            plan.push((r, wi, params, PipelineKey { shader, constants }, vout, grid));
        }
    }
    // The weight blocks: float (t * CW + c) * 4KQ + k of a window's block is w[k0 + k, c0 + c,
    // ky, kx] with t = ky * kw + kx and CW the window's channels rounded up to 4, as the kernel
    // computes it.
    let row = (4 * t.kq) as isize;
    record_blocks(rt, rec, ops, plan, wins.len(), |i, block_elems| {
        let w = &wins[i];
        let tap = w.cn.div_ceil(4) as isize * 4 * row;
        let dst = Layout::as_strided(&[w.kn, w.cn, g.kh, g.kw], &[1, row, g.kw as isize * tap, tap], i * BLOCK, block_elems)?;
        Ok((dst, w4.narrow(0, w.k0 as isize, w.kn)?.narrow(1, w.cw as isize, w.cn)?))
    })
}
