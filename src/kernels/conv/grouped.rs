//! Grouped 1x1 convolutions on the CPU adapters' NCHW kernel ([`ConvKernel::Nchw`]) as one
//! batched matrix product over the images and groups: out as [N, G, K/G, P] = W as [1, G, K/G,
//! C/G] (repeated over the images) @ x as [N, G, C/G, P] (P the pixels; the bias, read per
//! output channel, and ReLU the product's addend and activation), through this family's
//! `Blocked` kernel (`matmul_blocked.wgsl`): the same register-blocked inner product as
//! `conv1x1_nchw`, with the weights of every group read from storage and the batch in two
//! levels (images, groups), so that each dispatch (one per 64 input channels of a group)
//! covers every image and group. The convolution's window path (`kernels/conv/blocked.rs`)
//! packs each group's weights into a 64 KiB uniform block and records a dispatch per group, a
//! single workgroup where the images are small: the [1, 6144, 128, 1] x [12288, 64, 1, 1]
//! convolution with 96 groups (the product of `bmm [96, 128, 64] @ [96, 64, 128]`) took
//! 29.6-29.9 ms that way on lavapipe without a bias, 31-32 ms with one, and 4.0-4.5 ms and
//! 5.6-5.7 ms as the batched product. The route applies up to `ROUTE_PIXELS`.

use crate::dtype::DType;
use crate::error::Result;
use crate::kernels::conv::class::tune_images;
use crate::kernels::conv::{ConvCall, ConvKernel};
use crate::layout::Layout;
use crate::matmul::Activation;
use crate::runtime::record::Recorder;
use crate::runtime::Runtime;

use crate::kernels::matmul::{kernel_eligible, record as record_product, MatmulKernel, Operand, Product};

/// The most output pixels, of the images a tuning run convolves (`tune_images`: the whole
/// batch unless its output exceeds 2^20 elements, the pixels the shape class records, so that
/// the tuner times the route the call takes; a call whose images do not fit one binding, where
/// the tuning run's do, falls back to the windows), for which the route applies. Each dispatch of
/// the window path covers every image's pixels for one group, 512 a workgroup (64 invocations
/// of 8 pixels): with few pixels a CPU adapter's other cores idle, group after group. Lavapipe
/// on 2 cores, bias and ReLU, ms for the route against the window path (alternating runs,
/// medians of 10-20; the host was noisy): [1, 6144, 128, 1] g=96 5.6-7.7 against 31;
/// [1, 544, 14, 14] g=4 2.1-2.3 against 5.8-5.9; 784 pixels: [1, 240, 28, 28] g=8 0.6-1.1
/// against 1.2-2.0, [4, 1024, 14, 14] g=32 2.4-4.9 against 3.7-7.0; 1568: [2, 480, 28, 28]
/// g=3 8.2-12.7 against 9.9-14.2, [8, 128, 14, 14] g=4 0.65-0.69 against 0.72-0.99. From 3136
/// the two are level or the windows ahead: [1, 64, 56, 56] K=256 g=2 1.6-2.7 against 1.6-1.7,
/// [8, 256, 28, 28] g=8 4.7-5.9 against 4.4-5.2, [8, 240, 28, 28] g=8 4.5-8.3 against 4.8-6.1.
const ROUTE_PIXELS: usize = 2048;

/// Whether the call is a grouped 1x1 convolution on `Nchw` at unit stride without padding, of
/// at most `ROUTE_PIXELS` output pixels (of the images a tuning run takes).
fn applies(ops: &ConvCall<'_>) -> bool {
    let (g, o) = (ops.g, ops.options);
    let small = tune_images(g).saturating_mul(g.oh).saturating_mul(g.ow) <= ROUTE_PIXELS;
    ops.kernel == ConvKernel::Nchw && small && o.groups > 1 && o.groups < g.c && g.kh == 1 && g.kw == 1 && o.stride == (1, 1) && o.padding == (0, 0)
}

/// The views of the call's product (weight, input, bias, output) over [N, G] batch matrices,
/// for a call the route [`applies`] to, or `None` where its pixels do not merge into one dim in
/// the input or the output.
fn views(ops: &ConvCall<'_>) -> Option<[Option<Layout>; 4]> {
    let (g, groups) = (ops.g, ops.options.groups);
    let (n, cg, kg, px) = (g.n as isize, (g.c / groups) as isize, (g.k / groups) as isize, (g.oh * g.ow) as isize);
    let gs = groups as isize;
    let w = ops.weight.layout.view(&[1, gs, kg, cg]).ok()?.expand(&[n, gs, kg, cg]).ok()?;
    let x = ops.input.layout.view(&[n, gs, cg, px]).ok()?;
    let y = ops.out.layout.view(&[n, gs, kg, px]).ok()?;
    let b = match ops.bias {
        Some(b) => Some(b.layout.view(&[1, gs, kg, 1]).ok()?.expand(&[n, gs, kg, px]).ok()?),
        None => None,
    };
    Some([Some(w), Some(x), b, Some(y)])
}

/// The product over the views `v` (from [`views`]).
fn product<'a>(ops: &ConvCall<'a>, v: &'a [Option<Layout>; 4]) -> Option<Product<'a>> {
    let operand = |buffer, layout: &'a Option<Layout>| layout.as_ref().map(|layout| Operand { buffer, layout });
    Some(Product {
        out_half: false,
        op: ops.op,
        dtype: DType::F32,
        a: operand(ops.weight.buffer, &v[0])?,
        b: operand(ops.input.buffer, &v[1])?,
        c: match ops.bias {
            Some(b) => Some(operand(b.buffer, &v[2])?),
            None => None,
        },
        out: operand(ops.out.buffer, &v[3])?,
        alpha: 1.0,
        beta: 1.0,
        activation: if ops.options.relu { Activation::Relu } else { Activation::None },
    })
}

/// Records `ops` as one batched product where it is a grouped 1x1 convolution on `Nchw`
/// (which the adapter runs and the shape allows) that the `Blocked` matrix kernel serves;
/// `false` where not, with nothing recorded (the caller then records the convolution's own
/// way, which reports any error).
pub(crate) fn record(rt: &Runtime, rec: &mut Recorder, ops: &ConvCall<'_>) -> Result<bool> {
    if !applies(ops) || ops.kernel.admits(&rt.report, ops.g, ops.options).is_err() {
        return Ok(false);
    }
    let Some(v) = views(ops) else { return Ok(false) };
    let Some(p) = product(ops, &v) else { return Ok(false) };
    if kernel_eligible(&rt.report, &p, MatmulKernel::Blocked).is_err() {
        return Ok(false);
    }
    record_product(rt, rec, &p, MatmulKernel::Blocked)?;
    Ok(true)
}
