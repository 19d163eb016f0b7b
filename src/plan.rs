//! Copy plans: what every copy kernel, CPU or GPU, receives.
//!
//! Built as PyTorch's TensorIterator builds one for `copy_`: the source is broadcast to the
//! destination's shape, size-1 dims drop out, dims where the destination walks backwards are
//! flipped in both operands, dims are ordered by the destination's strides (innermost first),
//! and neighbouring dims that are contiguous in both operands are merged. A permuted but
//! dense copy collapses to a few dims; a dense copy to one.
//!
//! [`CopyPlan::offsets`] is the crate's one index formula in Rust; `shaders/gather.wgsl`'s
//! `plan_offsets` is its WGSL twin, and a device test pins the two to each other.

use crate::error::{Error, Result};
use crate::layout::ops::broadcast_error;
use crate::layout::Layout;

/// A copy from one strided view into another, with dims ordered innermost first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CopyPlan {
    sizes: Vec<usize>,
    dst_strides: Vec<isize>,
    src_strides: Vec<isize>,
    dst_offset: usize,
    src_offset: usize,
    numel: usize,
}

/// The shape class of a plan, which picks the kernel on the CPU and the GPU alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyKind {
    /// Nothing to copy.
    Empty,
    /// Both operands are one dense run: a buffer-to-buffer copy (or a converting stream).
    Dense,
    /// The innermost dim is contiguous in both operands (rows of `sizes()[0]` elements).
    InnerContiguous,
    /// A batched 2-D transpose: the destination's innermost dim is the source's dim `dim`,
    /// and the source's innermost-contiguous dim is `dim` (> 0); other dims are batch dims.
    BatchedTranspose {
        /// The plan dim (counted innermost first) that is contiguous in the source.
        dim: usize,
    },
    /// The destination's innermost dim is contiguous and the source walks it with stride
    /// `step` (0 for a broadcast, negative for a flip), and no dim is contiguous in the source:
    /// a stepped slice, an expanded row, a column read into a row.
    StridedRows {
        /// The source stride of plan dim 0.
        step: isize,
    },
    /// Anything else: one element at a time through the index formula.
    Gather,
}

/// Where [`CopyPlan::pieces`] may cut a plan: a kernel that relies on the sizes or alignment
/// of its inner dims keeps them whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Cuts {
    /// Dims below this are never cut.
    pub keep: usize,
    /// Dim 0 (when `keep` is 0) is cut only at multiples of this many elements.
    pub grain0: usize,
    /// Plans with more dims than this are cut along their outermost dim until they have fewer.
    pub max_rank: usize,
}

impl Cuts {
    /// Every dim, anywhere.
    pub(crate) const ANY: Cuts = Cuts { keep: 0, grain0: 1, max_rank: usize::MAX };
    /// Every dim, anywhere, outermost first (a representative piece keeps the inner dims).
    pub(crate) const OUTERMOST: Cuts = Cuts { max_rank: 0, ..Cuts::ANY };

    /// The grain at which dim `d` may be cut, if at all.
    fn grain(self, d: usize) -> Option<usize> {
        match d {
            _ if d < self.keep => None,
            0 => Some(self.grain0.max(1)),
            _ => Some(1),
        }
    }
}

impl CopyPlan {
    /// The plan for `dst.copy_(src)`: `src` is broadcast to `dst`'s shape.
    ///
    /// ```
    /// use strided_wgpu::{CopyPlan, Layout, MemoryFormat};
    /// let src = Layout::contiguous(&[1, 64, 5, 4]).unwrap();
    /// let dst = Layout::with_format(&[1, 64, 5, 4], MemoryFormat::ChannelsLast).unwrap();
    /// let plan = CopyPlan::new(&dst, &src).unwrap();
    /// assert_eq!(plan.sizes(), &[64, 20]);
    /// assert_eq!(plan.dst_strides(), &[1, 64]);
    /// assert_eq!(plan.src_strides(), &[20, 1]);
    /// ```
    pub fn new(dst: &Layout, src: &Layout) -> Result<CopyPlan> {
        let src = src.broadcast_to(dst.shape()).map_err(|_| broadcast_error("copy_", src.shape(), dst.shape()))?;
        let numel = dst.numel();
        let (mut dst_offset, mut src_offset) = (dst.offset() as isize, src.offset() as isize);
        // (size, dst stride, src stride), innermost first, size-1 dims dropped.
        let mut dims: Vec<(usize, isize, isize)> = Vec::with_capacity(dst.rank());
        if numel > 0 {
            for d in (0..dst.rank()).rev() {
                let (n, mut ds, mut ss) = (dst.shape()[d], dst.strides()[d], src.strides()[d]);
                if n == 1 {
                    continue;
                }
                if ds < 0 || (ds == 0 && ss < 0) {
                    // Walk this dim backwards in both operands: same pairs, forward destination.
                    // In range: both offsets stay inside their (valid) views.
                    dst_offset += ds * (n as isize - 1);
                    src_offset += ss * (n as isize - 1);
                    ds = -ds;
                    ss = -ss;
                }
                dims.push((n, ds, ss));
            }
        }
        sort_dims(&mut dims);
        let mut merged: Vec<(usize, isize, isize)> = Vec::with_capacity(dims.len());
        for (n, ds, ss) in dims {
            match merged.last_mut() {
                Some((pn, pds, pss)) if *pds * *pn as isize == ds && *pss * *pn as isize == ss => {
                    *pn = pn.checked_mul(n).ok_or_else(|| Error::overflow("copy_", "the plan's merged size"))?;
                }
                _ => merged.push((n, ds, ss)),
            }
        }
        if numel == 0 {
            merged = vec![(0, 1, 1)];
        }
        Ok(CopyPlan {
            sizes: merged.iter().map(|d| d.0).collect(),
            dst_strides: merged.iter().map(|d| d.1).collect(),
            src_strides: merged.iter().map(|d| d.2).collect(),
            // Non-negative: each is the index of an element its view reaches.
            dst_offset: dst_offset as usize,
            src_offset: src_offset as usize,
            numel,
        })
    }

    /// Sizes of the plan's dims, innermost first.
    pub fn sizes(&self) -> &[usize] {
        &self.sizes
    }
    /// Destination strides, innermost first (never negative).
    pub fn dst_strides(&self) -> &[isize] {
        &self.dst_strides
    }
    /// Source strides, innermost first (0 for broadcast dims, negative for reversed ones).
    pub fn src_strides(&self) -> &[isize] {
        &self.src_strides
    }
    /// The destination element of linear index 0.
    pub fn dst_offset(&self) -> usize {
        self.dst_offset
    }
    /// The source element of linear index 0.
    pub fn src_offset(&self) -> usize {
        self.src_offset
    }
    /// The number of elements copied.
    pub fn numel(&self) -> usize {
        self.numel
    }
    /// The number of dims after coalescing.
    pub fn rank(&self) -> usize {
        self.sizes.len()
    }

    /// The plan's shape class.
    pub fn kind(&self) -> CopyKind {
        if self.numel == 0 {
            return CopyKind::Empty;
        }
        let inner = |s: &[isize]| s.first().is_none_or(|&s| s == 1);
        match self.rank() {
            0 => CopyKind::Dense,
            1 if inner(&self.dst_strides) && inner(&self.src_strides) => CopyKind::Dense,
            _ if inner(&self.dst_strides) && inner(&self.src_strides) => CopyKind::InnerContiguous,
            _ if inner(&self.dst_strides) => match self.src_strides.iter().position(|&s| s == 1) {
                Some(dim) => CopyKind::BatchedTranspose { dim },
                None => CopyKind::StridedRows { step: self.src_strides[0] },
            },
            _ => CopyKind::Gather,
        }
    }

    /// The index formula: the (destination, source) element indices of linear index `i`,
    /// where `i` counts elements with dim 0 fastest. Mirrors `plan_offsets` in WGSL.
    pub fn offsets(&self, mut i: usize) -> (usize, usize) {
        let mut dst = self.dst_offset as isize;
        let mut src = self.src_offset as isize;
        for d in 0..self.rank() {
            let n = self.sizes[d];
            let k = (i % n) as isize;
            i /= n;
            dst += k * self.dst_strides[d];
            src += k * self.src_strides[d];
        }
        (dst as usize, src as usize)
    }
}

/// Orders dims innermost first by the destination's strides, breaking ties (and stride-0 dims)
/// with the source's: PyTorch's `reorder_dimensions` insertion sort.
fn sort_dims(dims: &mut [(usize, isize, isize)]) {
    let should_swap = |a: (usize, isize, isize), b: (usize, isize, isize)| -> bool {
        for (sa, sb) in [(a.1, b.1), (a.2, b.2)] {
            let (sa, sb) = (sa.unsigned_abs(), sb.unsigned_abs());
            if sa == 0 || sb == 0 {
                continue;
            }
            if sa != sb {
                return sa > sb;
            }
            if a.0 > b.0 {
                return true;
            }
        }
        false
    };
    for i in 1..dims.len() {
        let mut j = i;
        while j > 0 && should_swap(dims[j - 1], dims[j]) {
            dims.swap(j - 1, j);
            j -= 1;
        }
    }
}

impl CopyPlan {
    /// The lowest and highest element index each operand reaches: ((dst lo, hi), (src lo, hi)).
    pub fn spans(&self) -> ((usize, usize), (usize, usize)) {
        let span = |off: usize, strides: &[isize]| {
            let (mut lo, mut hi) = (off as isize, off as isize);
            for (&n, &s) in self.sizes.iter().zip(strides) {
                let r = (n as isize - 1) * s;
                if r < 0 { lo += r } else { hi += r }
            }
            (lo as usize, hi as usize)
        };
        (span(self.dst_offset, &self.dst_strides), span(self.src_offset, &self.src_strides))
    }

    /// Splits the plan into pieces that each satisfy `fits` (a binding-size or rank limit).
    /// Each step halves one dim that `cuts` allows (see [`Cuts`]): the outermost while the plan
    /// has more than `cuts.max_rank` dims, else the one whose extent in either operand is the
    /// largest, so that a dim whose stride makes the span too wide is the one cut. A batch dim
    /// (2 and up) cut down to size 1 is dropped; dims 0 and 1 stay, since the row and
    /// transpose kernels read their strides. Fails with the piece that no allowed cut can
    /// shrink further.
    pub(crate) fn pieces(&self, cuts: Cuts, fits: impl Fn(&CopyPlan) -> bool) -> std::result::Result<Vec<CopyPlan>, CopyPlan> {
        let mut out = Vec::new();
        let mut stack = vec![self.clone()];
        while let Some(p) = stack.pop() {
            if p.numel == 0 {
                continue;
            }
            if fits(&p) {
                out.push(p);
                continue;
            }
            let Some((d, g)) = p.next_cut(cuts) else { return Err(p) };
            let n = p.sizes[d];
            let half = n / g / 2 * g;
            // Push the upper half first so that pieces come out in order.
            for (start, len) in [(half, n - half), (0, half)] {
                let mut q = p.clone();
                q.dst_offset = (q.dst_offset as isize + start as isize * q.dst_strides[d]) as usize;
                q.src_offset = (q.src_offset as isize + start as isize * q.src_strides[d]) as usize;
                q.numel = p.numel / n * len;
                if len == 1 && d > 1 {
                    q.sizes.remove(d);
                    q.dst_strides.remove(d);
                    q.src_strides.remove(d);
                } else {
                    q.sizes[d] = len;
                }
                stack.push(q);
            }
        }
        Ok(out)
    }

    /// The dim `pieces` halves next and its grain, among the dims `cuts` allows that hold at
    /// least two grains.
    fn next_cut(&self, cuts: Cuts) -> Option<(usize, usize)> {
        let mut cuttable = (0..self.rank()).filter_map(|d| cuts.grain(d).filter(|&g| self.sizes[d] / g >= 2).map(|g| (d, g)));
        if self.rank() > cuts.max_rank {
            return cuttable.next_back();
        }
        let extent = |d: usize| (self.sizes[d] as u128 - 1) * self.dst_strides[d].unsigned_abs().max(self.src_strides[d].unsigned_abs()) as u128;
        // `max_by_key` keeps the last of equal keys: the outermost.
        cuttable.max_by_key(|&(d, _)| extent(d))
    }

    /// The same copy with plan dim `from` moved to position `to` (the linear order changes,
    /// the set of copied pairs does not).
    pub(crate) fn with_dim_moved(&self, from: usize, to: usize) -> CopyPlan {
        let mut p = self.clone();
        let mv = |v: &mut Vec<isize>| {
            let x = v.remove(from);
            v.insert(to, x);
        };
        let s = p.sizes.remove(from);
        p.sizes.insert(to, s);
        mv(&mut p.dst_strides);
        mv(&mut p.src_strides);
        p
    }

    /// The batched-transpose order of this copy (source-contiguous dim `dim`): dim `dim` moved
    /// to position 1, and the batch dims (2 and up) ordered by the source's strides, smallest
    /// first, so that consecutive blocks read neighbouring source rows (which often share
    /// cache lines) rather than rows a whole batch apart.
    pub(crate) fn transpose_order(&self, dim: usize) -> CopyPlan {
        let mut p = self.with_dim_moved(dim, 1);
        if p.rank() > 3 {
            let mut batch: Vec<(usize, isize, isize)> = (2..p.rank()).map(|d| (p.sizes[d], p.dst_strides[d], p.src_strides[d])).collect();
            batch.sort_by_key(|&(_, ds, ss)| (ss.unsigned_abs(), ds));
            for (k, (n, ds, ss)) in batch.into_iter().enumerate() {
                (p.sizes[k + 2], p.dst_strides[k + 2], p.src_strides[k + 2]) = (n, ds, ss);
            }
        }
        p
    }

    /// The same copy with both offsets lowered (the operands moved to buffers that start at
    /// element `dst_lo` and `src_lo` of the originals).
    pub(crate) fn rebased(&self, dst_lo: usize, src_lo: usize) -> CopyPlan {
        CopyPlan { dst_offset: self.dst_offset - dst_lo, src_offset: self.src_offset - src_lo, ..self.clone() }
    }

    /// The same copy counted in words of `unit` elements, when dim 0 is contiguous in the
    /// destination and walked with stride `step` (1, or 2 for a slice `::2`) in the source, and
    /// its size, both offsets and every other stride are multiples of `unit`. Destination word
    /// `w` of a row then takes every `step`-th element of the `step` source words from word
    /// `step * w` on; the word plan's dim-0 source stride is `step`.
    pub(crate) fn in_words(&self, unit: usize, step: isize) -> Option<CopyPlan> {
        let dense0 = self.dst_strides.first() == Some(&1) && self.src_strides.first() == Some(&step) && step >= 1;
        let aligned = |x: isize| x.rem_euclid(unit as isize) == 0;
        if !dense0
            || !self.sizes[0].is_multiple_of(unit)
            || !self.dst_offset.is_multiple_of(unit)
            || !self.src_offset.is_multiple_of(unit)
            || !self.dst_strides[1..].iter().chain(&self.src_strides[1..]).all(|&s| aligned(s))
        {
            return None;
        }
        let div = |s: &[isize]| -> Vec<isize> { s.iter().enumerate().map(|(i, &x)| if i == 0 { x } else { x / unit as isize }).collect() };
        let mut sizes = self.sizes.clone();
        sizes[0] /= unit;
        Some(CopyPlan {
            sizes,
            dst_strides: div(&self.dst_strides),
            src_strides: div(&self.src_strides),
            dst_offset: self.dst_offset / unit,
            src_offset: self.src_offset / unit,
            numel: self.numel / unit,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::MemoryFormat;

    /// Every (destination, source) pair of a plan, sorted.
    fn pairs(p: &CopyPlan) -> Vec<(usize, usize)> {
        let mut v: Vec<_> = (0..p.numel()).map(|i| p.offsets(i)).collect();
        v.sort_unstable();
        v
    }

    fn span_fits(limit: usize) -> impl Fn(&CopyPlan) -> bool {
        move |p: &CopyPlan| {
            let ((dlo, dhi), (slo, shi)) = p.spans();
            dhi - dlo < limit && shi - slo < limit
        }
    }

    fn channels_last(shape: &[usize]) -> CopyPlan {
        let src = Layout::contiguous(shape).unwrap();
        let dst = Layout::with_format(shape, MemoryFormat::ChannelsLast).unwrap();
        CopyPlan::new(&dst, &src).unwrap()
    }

    #[test]
    fn pieces_cut_the_dim_that_makes_the_span_too_wide() {
        // 4 channels of 1200 pixels to channels-last; a "binding" of 1500 elements holds one
        // channel plane but not three, so the channel dim must be cut: 4 pieces, not hundreds.
        let plan = channels_last(&[1, 4, 2, 600]);
        let pieces = plan.pieces(Cuts::ANY, span_fits(1500)).unwrap();
        assert!(pieces.len() <= 8, "{} pieces", pieces.len());
        let mut all: Vec<_> = pieces.iter().flat_map(pairs).collect();
        all.sort_unstable();
        assert_eq!(all, pairs(&plan));
    }

    #[test]
    fn pieces_respect_kept_dims_and_grains() {
        // A column of 60 elements, 1000 apart, with a span limit of 20,000: dim 0 may only be
        // cut at multiples of 4, so every piece keeps whole words and aligned offsets.
        let src = Layout::contiguous(&[60, 1000]).unwrap().select(1, 7).unwrap();
        let dst = Layout::contiguous(&[60]).unwrap();
        let plan = CopyPlan::new(&dst, &src).unwrap();
        let cuts = Cuts { grain0: 4, ..Cuts::ANY };
        let pieces = plan.pieces(cuts, span_fits(20_000)).unwrap();
        assert!(pieces.len() > 1);
        for p in &pieces {
            assert!(p.sizes()[0].is_multiple_of(4) && p.dst_offset().is_multiple_of(4), "{p:?}");
        }
        let mut all: Vec<_> = pieces.iter().flat_map(pairs).collect();
        all.sort_unstable();
        assert_eq!(all, pairs(&plan));
        // Four elements span 3,001: a smaller limit cannot be met, and the piece is returned.
        let err = plan.pieces(cuts, span_fits(3000)).unwrap_err();
        assert_eq!(err.sizes()[0], 4);

        // Kept dims 0 and 1: only batch dims are cut, and a plan of one matrix is left whole.
        let plan = channels_last(&[6, 4, 3, 5]);
        let keep = Cuts { keep: 2, ..Cuts::ANY };
        let pieces = plan.pieces(keep, span_fits(60)).unwrap();
        assert_eq!(pieces.len(), 6);
        assert!(pieces.iter().all(|p| p.sizes()[..2] == plan.sizes()[..2]));
        assert!(plan.pieces(keep, span_fits(40)).is_err());
    }

    #[test]
    fn pieces_lower_the_rank_from_the_outermost_dim() {
        // Nine dims of 2 that cannot merge in the source (strides 4^8 .. 4^0).
        let shape = [2usize; 9];
        let strides: Vec<isize> = (0..9).rev().map(|k| 1isize << (2 * k)).collect();
        let src = Layout::new(shape.to_vec(), strides, 0).unwrap();
        let dst = Layout::contiguous(&shape).unwrap().permute(&[8, 7, 6, 5, 4, 3, 2, 1, 0]).unwrap();
        let plan = CopyPlan::new(&dst, &src).unwrap();
        assert_eq!(plan.rank(), 9);
        let cuts = Cuts { max_rank: 8, ..Cuts::ANY };
        let pieces = plan.pieces(cuts, |p| p.rank() <= 8).unwrap();
        assert_eq!(pieces.len(), 2);
        let mut all: Vec<_> = pieces.iter().flat_map(pairs).collect();
        all.sort_unstable();
        assert_eq!(all, pairs(&plan));
    }
}
