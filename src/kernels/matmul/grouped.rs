//! Grouped 1x1 convolutions on the CPU adapters' NCHW kernel ([`ConvKernel::Nchw`]) as one
//! batched matrix product per image: out[n] as [G, K/G, P] = W as [G, K/G, C/G] @ x[n] as
//! [G, C/G, P] (P the pixels, the bias and ReLU the product's addend and activation), through
//! this family's `Blocked` kernel (`matmul_blocked.wgsl`): the same register-
//! blocked inner product as `conv1x1_nchw`, with the weights of every group read from storage,
//! so that each dispatch (one per 64 input channels of a group, per image) covers all the
//! groups. The convolution's window path (`kernels/conv/blocked.rs`) packs each group's weights
//! into a 64 KiB uniform block and records a dispatch per group, a single workgroup where the
//! images are small: the [1, 6144, 128, 1] x [12288, 64, 1, 1] convolution with 96 groups (the
//! product of `bmm [96, 128, 64] @ [96, 64, 128]`) took 29.6-29.9 ms that way on lavapipe
//! without a bias, 31-32 ms with one (`ROUTE_PIXELS`), and 4.0-4.5 ms and 5.6-5.7 ms as the
//! batched product. The route applies to small images only (`ROUTE_PIXELS`).

use crate::dtype::DType;
use crate::error::Result;
use crate::kernels::conv::class::tune_images;
use crate::kernels::conv::{ConvCall, ConvKernel};
use crate::layout::Layout;
use crate::matmul::Activation;
use crate::runtime::submit::Keep;
use crate::runtime::Runtime;

use super::{blocked_eligible, record as record_product, MatmulKernel, Operand, Product};

/// The most output pixels, of the images a tuning run convolves (`tune_images`: the whole
/// batch unless its output exceeds 2^20 elements, the pixels the shape class records, so that
/// the tuner times the route the call takes), for which the route applies: each
/// dispatch of the window path covers every image's pixels for one group, 512 a workgroup (64
/// invocations of 8 pixels), so up to 512 it is a single workgroup, and a CPU adapter's other
/// cores idle, group after group. Lavapipe on 2 cores, ms for the route against the window
/// path (alternating runs): [1, 6144, 128, 1] g=96 5.6-5.7 against 31-32, [1, 544, 14, 14] g=4
/// 2.1 against 5.4-5.7. Beyond it the route did not pay: [1, 256, 28, 28] g=8 0.9-1.4 against
/// 0.9-1.0, [4, 1024, 14, 14] g=32 4.0-6.1 against 3.3-6.3 (784 pixels each), [1, 64, 56, 56]
/// K=256 g=2 2.4-4.5 against 1.5-1.7, [8, 256, 28, 28] g=8 7.4 against 4.6-6.3: one product
/// per image, each first copying the bias into its output, where the window path adds it in
/// the kernel.
const ROUTE_PIXELS: usize = 512;

/// Whether the call is a grouped 1x1 convolution on `Nchw` at unit stride without padding, of
/// at most `ROUTE_PIXELS` output pixels (of the images a tuning run takes).
fn applies(ops: &ConvCall<'_>) -> bool {
    let (g, o) = (ops.g, ops.options);
    let small = tune_images(g).saturating_mul(g.oh).saturating_mul(g.ow) <= ROUTE_PIXELS;
    ops.kernel == ConvKernel::Nchw && small && o.groups > 1 && o.groups < g.c && g.kh == 1 && g.kw == 1 && o.stride == (1, 1) && o.padding == (0, 0)
}

/// The views of image `n`'s product (weight, input, bias, output) of a call the route
/// [`applies`] to, or `None` where its pixels do not merge into one dim in the input or the
/// output.
fn views(ops: &ConvCall<'_>, n: usize) -> Option<[Option<Layout>; 4]> {
    let (g, groups) = (ops.g, ops.options.groups);
    let (cg, kg, px) = ((g.c / groups) as isize, (g.k / groups) as isize, (g.oh * g.ow) as isize);
    let gs = groups as isize;
    let w = ops.weight.layout.view(&[gs, kg, cg]).ok()?;
    let x = ops.input.layout.select(0, n as isize).ok()?.view(&[gs, cg, px]).ok()?;
    let y = ops.out.layout.select(0, n as isize).ok()?.view(&[gs, kg, px]).ok()?;
    let b = match ops.bias {
        Some(b) => Some(b.layout.view(&[gs, kg, 1]).ok()?.expand(&[gs, kg, px]).ok()?),
        None => None,
    };
    Some([Some(w), Some(x), b, Some(y)])
}

/// The product of image `n` over the views `v` (from [`views`]).
fn product<'a>(ops: &ConvCall<'a>, v: &'a [Option<Layout>; 4]) -> Option<Product<'a>> {
    let operand = |buffer, layout: &'a Option<Layout>| layout.as_ref().map(|layout| Operand { buffer, layout });
    Some(Product {
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

/// Records `ops` as batched products where it is a grouped 1x1 convolution on `Nchw` (which
/// the adapter runs and the shape allows) that the `Blocked` matrix kernel serves for every
/// image, all checked before anything is recorded; `false` where not, with nothing recorded
/// (the caller then records the convolution's own way, which reports any error).
pub(crate) fn record(rt: &Runtime, enc: &mut wgpu::CommandEncoder, keep: &mut Keep, ops: &ConvCall<'_>) -> Result<bool> {
    if !applies(ops) || ops.kernel.eligible(ops.g, ops.options).is_err() || ops.kernel.runs_on(&rt.report).is_err() {
        return Ok(false);
    }
    let mut all = Vec::with_capacity(ops.g.n);
    for n in 0..ops.g.n {
        let Some(v) = views(ops, n) else { return Ok(false) };
        all.push(v);
    }
    let mut products = Vec::with_capacity(all.len());
    for v in &all {
        let Some(p) = product(ops, v) else { return Ok(false) };
        if blocked_eligible(&rt.report, &p).is_err() {
            return Ok(false);
        }
        products.push(p);
    }
    for p in &products {
        record_product(rt, enc, keep, p, MatmulKernel::Blocked)?;
    }
    Ok(true)
}
