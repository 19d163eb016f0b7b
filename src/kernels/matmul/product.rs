//! What the matrix-product kernels share: the operands of one product, their shapes and
//! strides after merging batch dims (`Shapes`), and the byte window of an operand.

use crate::dtype::DType;
use crate::error::Result;
use crate::layout::Layout;
use crate::matmul::Activation;

/// One operand: its buffer and its view as `[batch.., rows, cols]`.
#[derive(Clone, Copy)]
pub(crate) struct Operand<'a> {
    pub buffer: &'a wgpu::Buffer,
    pub layout: &'a Layout,
}

/// What `record` multiplies: `act(alpha * (a @ b) + beta * c)` into `out` (f32, or the operands'
/// 16-bit type where `out_half`), all four views of one batch shape.
pub(crate) struct Product<'a> {
    pub op: &'static str,
    pub dtype: DType,
    pub a: Operand<'a>,
    pub b: Operand<'a>,
    pub c: Option<Operand<'a>>,
    pub out: Operand<'a>,
    /// Whether `out` holds elements of `dtype` (float16 or bfloat16, written as they are by the
    /// SIMT kernels: `matmul_gemm16`, `matmul_gemm_sum16`, `matmul_vec16`) rather than f32.
    pub out_half: bool,
    pub alpha: f64,
    pub beta: f64,
    pub activation: Activation,
}

/// The four operands' (sizes, strides) after merging: batch dims first, then rows and columns.
#[derive(Clone)]
pub(crate) struct Shapes {
    pub batch: Vec<usize>,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    /// Per operand (a, b, c, out): batch strides, then (rows, cols) strides, then the offset.
    pub strides: [Vec<isize>; 4],
    pub offsets: [usize; 4],
}

impl Shapes {
    pub fn of(p: &Product<'_>) -> Shapes {
        let ls = [p.a.layout, p.b.layout, p.c.map_or(p.out.layout, |c| c.layout), p.out.layout];
        let r = p.out.layout.rank() - 2;
        let sh = p.a.layout.shape();
        let (m, k, n) = (sh[r], sh[r + 1], p.out.layout.shape()[r + 1]);
        // Drop batch dims of size 1, then merge neighbours that merge in all four views.
        let mut batch: Vec<usize> = Vec::new();
        let mut strides: [Vec<isize>; 4] = Default::default();
        for d in 0..r {
            let size = p.out.layout.shape()[d];
            if size == 1 {
                continue;
            }
            let merge = !batch.is_empty() && ls.iter().enumerate().all(|(i, l)| strides[i].last() == Some(&(l.strides()[d] * size as isize)));
            if merge {
                *batch.last_mut().unwrap() *= size;
                for (i, l) in ls.iter().enumerate() {
                    *strides[i].last_mut().unwrap() = l.strides()[d];
                }
            } else {
                batch.push(size);
                for (i, l) in ls.iter().enumerate() {
                    strides[i].push(l.strides()[d]);
                }
            }
        }
        let mut s = Shapes { batch, m, n, k, strides, offsets: [0; 4] };
        for (i, l) in ls.iter().enumerate() {
            s.strides[i].extend_from_slice(&l.strides()[r..]);
            s.offsets[i] = l.offset();
        }
        // A size-1 row or column dim is never stepped over, and a view may give it any stride:
        // one past the kernels' i32 is 0 (such a view was refused as an overflow).
        let sizes = [[m, k], [k, n], [m, n], [m, n]];
        for (st, size) in s.strides.iter_mut().zip(sizes) {
            let nb = st.len() - 2;
            for j in 0..2 {
                if size[j] == 1 && i32::try_from(st[nb + j]).is_err() {
                    st[nb + j] = 0;
                }
            }
        }
        // A batch over which B (and C) do not move folds into the rows where A, C and the
        // output step over it as one more run of rows: `linear` on [.., in] inputs.
        while let Some(&z) = s.batch.last() {
            let nb = s.batch.len();
            let folds = s.strides[1][nb - 1] == 0 && [0, 2, 3].iter().all(|&i| s.strides[i][nb - 1] == s.strides[i][nb] * s.m as isize);
            if !folds {
                break;
            }
            s.batch.pop();
            for st in s.strides.iter_mut() {
                st.remove(nb - 1);
            }
            s.m *= z;
        }
        s
    }

    /// The transposed product, `b^T @ a^T` into `out^T`: A and B trade places, every matrix's
    /// (rows, cols) strides swap, and so do m and n.
    pub fn transposed(self) -> Shapes {
        let nb = self.batch.len();
        let [a, b, c, o] = self.strides;
        let t = |mut v: Vec<isize>| {
            v.swap(nb, nb + 1);
            v
        };
        let [oa, ob, oc, oo] = self.offsets;
        Shapes { batch: self.batch, m: self.n, n: self.m, k: self.k, strides: [t(b), t(a), t(c), t(o)], offsets: [ob, oa, oc, oo] }
    }
}

/// The byte window `(start, size)` of an operand's elements of `es` bytes over batch index
/// ranges (outer fixed at `fixed`, inner dim 0 over `z0..z1`), start aligned to `align`; with
/// the element offset of the range's first matrix within it.
pub(crate) fn window(sizes: &[usize], strides: &[isize], offset: usize, es: u64, align: u64) -> Result<((u64, u64), usize)> {
    let l = Layout::new(sizes.to_vec(), strides.to_vec(), offset)?;
    let (lo, hi) = l.span().unwrap_or((offset, offset));
    let start = lo as u64 * es / align * align;
    let end = ((hi as u64 + 1) * es).div_ceil(4) * 4;
    Ok(((start, end - start), offset - (start / es) as usize))
}
