//! The CPU reference of pooling and bilinear resampling on host tensors: every output read
//! from its window through the input's strides, accumulated in f64.

use crate::dtype::{DType, Sum32};
use crate::elementwise::Elementwise;
use crate::error::{reserved, Result};
use crate::host::HostTensor;
use crate::pool::{Pool2d, Window, WindowMode};
use crate::strided::Strided;

/// Bilinear taps of output `o` along one axis of `size` inputs: (i0, i1, l0, l1), computed in
/// f32 as PyTorch's `area_pixel_compute_source_index` (the device kernel does the same).
pub(crate) fn bilinear_taps(scale: f32, align_corners: bool, o: usize, size: usize) -> (usize, usize, f32, f32) {
    let real = if align_corners { scale * o as f32 } else { (scale * (o as f32 + 0.5) - 0.5).max(0.0) };
    let i0 = (real as usize).min(size - 1);
    // A scale of 1 (an unchanged size): the same index twice, as PyTorch's copy, so that a
    // non-finite neighbour does not meet a weight of 0.
    let i1 = if i0 < size - 1 && scale != 1.0 { i0 + 1 } else { i0 };
    let l1 = real - i0 as f32;
    (i0, i1, 1.0 - l1, l1)
}

impl Pool2d for HostTensor {
    /// The CPU reference: reads the input through its strides, accumulates in f64, rounds once
    /// to f32 and then (float16, bfloat16) to the input's type.
    fn window(&self, g: &Window) -> Result<(HostTensor, Option<HostTensor>)> {
        g.check(self.layout(), self.dtype())?;
        let [n, c, h, w] = g.input;
        let (oh, ow) = g.out;
        let x: Vec<f64> = self.to(DType::F32)?.to_vec::<f32>()?.into_iter().map(f64::from).collect();
        let planes = n * c;
        // An adaptive pooling's output size is the caller's: more than host memory holds is an
        // error, not an abort.
        let len = planes * oh * ow;
        let mut out = reserved(g.op, || format!("an output of {len} elements"), len)?;
        out.resize(len, 0f32);
        let nidx = if g.indices { len } else { 0 };
        let mut idx = reserved(g.op, || format!("the indices of {len} outputs"), nidx)?;
        idx.resize(nidx, 0i32);
        for p in 0..planes {
            let plane = &x[p * h * w..(p + 1) * h * w];
            for y in 0..oh {
                for z in 0..ow {
                    let e = (p * oh + y) * ow + z;
                    let (v, i) = one(g, plane, w, y, z);
                    out[e] = v as f32;
                    if g.indices {
                        idx[e] = i as i32;
                    }
                }
            }
        }
        let shape = g.out_shape();
        let y = HostTensor::from_vec(out, &shape)?.materialize(g.format, self.dtype())?;
        let i = if g.indices { Some(HostTensor::from_vec(idx, &shape)?.materialize(g.format, DType::I32)?) } else { None };
        Ok((y, i))
    }
}

/// Output (y, z) of one plane (`w` columns): its value and, for max modes, its index.
fn one(g: &Window, plane: &[f64], w: usize, y: usize, z: usize) -> (f64, i64) {
    if let WindowMode::Bilinear { scale, align_corners } = g.mode {
        let (h0, h1, a0, a1) = bilinear_taps(scale.0, align_corners, y, g.input[2]);
        let (w0, w1, b0, b1) = bilinear_taps(scale.1, align_corners, z, g.input[3]);
        let at = |r: usize, c: usize| plane[r * w + c];
        let v = a0 as f64 * (b0 as f64 * at(h0, w0) + b1 as f64 * at(h0, w1)) + a1 as f64 * (b0 as f64 * at(h1, w0) + b1 as f64 * at(h1, w1));
        return (v, 0);
    }
    let (r0, r1, rs, rext) = g.span(0, y);
    let (c0, c1, cs, cext) = g.span(1, z);
    match g.mode {
        WindowMode::Max | WindowMode::AdaptiveMax => {
            let mut best = f64::NEG_INFINITY;
            let mut at = r0 * w as i64 + c0;
            let mut r = r0;
            while r < r1 {
                let mut c = c0;
                while c < c1 {
                    let v = plane[(r * w as i64 + c) as usize];
                    if v > best || v.is_nan() {
                        best = v;
                        at = r * w as i64 + c;
                    }
                    c += cs;
                }
                r += rs;
            }
            (best, at)
        }
        _ => {
            // Float32's range, as PyTorch's and the device's accumulators; f64's digits within.
            let mut total = Sum32::new(0.0);
            for r in r0..r1 {
                for c in c0..c1 {
                    total.add(plane[(r * w as i64 + c) as usize]);
                }
            }
            let sum = total.value();
            let inside = ((r1 - r0).max(0) * (c1 - c0).max(0)) as f64;
            if r0 >= r1 || c0 >= c1 {
                return (0.0, 0);
            }
            let divisor = match g.mode {
                WindowMode::Avg { divisor: Some(d), .. } => d as f64,
                WindowMode::Avg { count_include_pad: true, .. } => (rext * cext) as f64,
                _ => inside,
            };
            (sum / divisor, 0)
        }
    }
}
