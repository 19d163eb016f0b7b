//! Iteration plans: what every elementwise kernel, CPU or GPU, receives, copies included.
//!
//! Built as PyTorch's TensorIterator builds one: the inputs are broadcast to the output's
//! shape, size-1 dims drop out, dims where the output walks backwards are flipped in every
//! operand, dims are ordered by the operands' strides (the output's first, innermost first),
//! and neighbouring dims that are contiguous in every operand are merged. A permuted but
//! dense operation collapses to a few dims; a dense one to one.
//!
//! Operand 0 is the output, operands 1.. the tensor inputs. A copy is the one-input case
//! ([`CopyPlan::new`]: operand 1 is the source), and the copy kernels read it through the
//! two-operand accessors (`dst_*`, `src_*`).
//!
//! [`IterPlan::offsets_into`] is the crate's one index formula in Rust; `plan_offsets` in
//! `shaders/preludes/plan.wgsl` (two operands) and `iter_offsets` in `shaders/preludes/iter.wgsl` (any operand)
//! are its WGSL twins, and device tests pin them to it.

use std::borrow::Cow;

use crate::error::{Error, Result};
use crate::layout::ops::broadcast_error;
use crate::layout::Layout;

/// Operands a plan holds at most: an output and three inputs.
pub const MAX_OPERANDS: usize = 4;

/// An elementwise traversal of an output and its inputs, with dims ordered innermost first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IterPlan {
    sizes: Vec<usize>,
    /// `strides[k][d]`: operand k's stride along plan dim d.
    strides: Vec<Vec<isize>>,
    offsets: Vec<usize>,
    numel: usize,
}

/// A copy's plan: the two-operand [`IterPlan`] (operand 0 the destination, 1 the source).
pub type CopyPlan = IterPlan;

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

impl IterPlan {
    /// The plan for `dst.copy_(src)`: `src` is broadcast to `dst`'s shape.
    ///
    /// ```
    /// use strided_wgpu::{Layout, MemoryFormat};
    /// use strided_wgpu::layout::CopyPlan;
    /// let src = Layout::contiguous(&[1, 64, 5, 4]).unwrap();
    /// let dst = Layout::with_format(&[1, 64, 5, 4], MemoryFormat::ChannelsLast).unwrap();
    /// let plan = CopyPlan::new(&dst, &src).unwrap();
    /// assert_eq!(plan.sizes(), &[64, 20]);
    /// assert_eq!(plan.dst_strides(), &[1, 64]);
    /// assert_eq!(plan.src_strides(), &[20, 1]);
    /// ```
    pub fn new(dst: &Layout, src: &Layout) -> Result<CopyPlan> {
        Self::build("copy_", dst, &[src])
    }

    /// The plan of an elementwise operation writing `out` from `inputs` (1 to 3), each
    /// broadcast to `out`'s shape; the error names the input and the dim that does not
    /// broadcast. The caller checks overlap and types.
    ///
    /// ```
    /// use strided_wgpu::{Layout, MemoryFormat};
    /// use strided_wgpu::layout::IterPlan;
    /// // A channels-last output, a bias [1, 64, 1, 1] broadcast over it, and an NCHW input.
    /// let out = Layout::with_format(&[8, 64, 4, 4], MemoryFormat::ChannelsLast).unwrap();
    /// let bias = Layout::contiguous(&[1, 64, 1, 1]).unwrap();
    /// let x = Layout::contiguous(&[8, 64, 4, 4]).unwrap();
    /// let plan = IterPlan::build("add", &out, &[&bias, &x]).unwrap();
    /// assert_eq!(plan.sizes(), &[64, 16, 8]);
    /// assert_eq!(plan.strides(1), Some(&[1, 0, 0][..]));
    /// assert_eq!(plan.strides(2), Some(&[16, 1, 1024][..]));
    /// ```
    pub fn build(op: &'static str, out: &Layout, inputs: &[&Layout]) -> Result<IterPlan> {
        if inputs.is_empty() || inputs.len() >= MAX_OPERANDS {
            return Err(Error::invalid(op, format!("a plan takes 1 to {} inputs, got {}", MAX_OPERANDS - 1, inputs.len())));
        }
        // Each input's strides along the output's dims, broadcast (0 along a dim it is
        // broadcast over, as `broadcast_to` gives, without building the layouts).
        let rank = out.rank();
        let mut all: Vec<(&[isize], usize)> = Vec::with_capacity(inputs.len() + 1);
        all.push((out.strides(), 0));
        for l in inputs {
            let lead = rank.checked_sub(l.rank()).ok_or_else(|| broadcast_error(op, l.shape(), out.shape()))?;
            if l.shape().iter().zip(&out.shape()[lead..]).any(|(&n, &t)| n != t && n != 1) {
                return Err(broadcast_error(op, l.shape(), out.shape()));
            }
            all.push((l.strides(), lead));
        }
        let stride = |k: usize, d: usize| -> isize {
            let (st, lead) = all[k];
            match k {
                0 => st[d],
                _ if d < lead || inputs[k - 1].shape()[d - lead] != out.shape()[d] => 0,
                _ => st[d - lead],
            }
        };
        let n_ops = all.len();
        let numel = out.numel();
        let mut offsets: Vec<isize> = std::iter::once(out).chain(inputs.iter().copied()).map(|l| l.offset() as isize).collect();
        // (size, strides of every operand), innermost first, size-1 dims dropped.
        let mut dims: Vec<(usize, Vec<isize>)> = Vec::with_capacity(out.rank());
        if numel > 0 {
            for d in (0..out.rank()).rev() {
                let n = out.shape()[d];
                if n == 1 {
                    continue;
                }
                let mut st: Vec<isize> = (0..n_ops).map(|k| stride(k, d)).collect();
                if st.iter().find(|&&s| s != 0).is_some_and(|&s| s < 0) {
                    // Walk this dim backwards in every operand: the same tuples, a forward
                    // output. In range: every offset stays inside its (valid) view.
                    for k in 0..n_ops {
                        offsets[k] += st[k] * (n as isize - 1);
                        st[k] = -st[k];
                    }
                }
                dims.push((n, st));
            }
        }
        sort_dims(&mut dims);
        let mut merged: Vec<(usize, Vec<isize>)> = Vec::with_capacity(dims.len());
        for (n, st) in dims {
            match merged.last_mut() {
                Some((pn, pst)) if pst.iter().zip(&st).all(|(&p, &s)| p.checked_mul(*pn as isize) == Some(s)) => {
                    *pn = pn.checked_mul(n).ok_or_else(|| Error::overflow(op, "the plan's merged size"))?;
                }
                _ => merged.push((n, st)),
            }
        }
        if numel == 0 {
            merged = vec![(0, vec![1; n_ops])];
        }
        Ok(IterPlan {
            sizes: merged.iter().map(|d| d.0).collect(),
            strides: (0..n_ops).map(|k| merged.iter().map(|d| d.1[k]).collect()).collect(),
            // Non-negative: each is the index of an element its view reaches.
            offsets: offsets.iter().map(|&o| o as usize).collect(),
            numel,
        })
    }

    /// Sizes of the plan's dims, innermost first.
    pub fn sizes(&self) -> &[usize] {
        &self.sizes
    }
    /// The number of operands (the output and the tensor inputs).
    pub fn operands(&self) -> usize {
        self.strides.len()
    }
    /// Operand `k`'s strides, innermost first (0 for broadcast dims, negative for reversed
    /// inputs; the output's are never negative); `None` when `k >= operands()`.
    pub fn strides(&self, k: usize) -> Option<&[isize]> {
        self.strides.get(k).map(Vec::as_slice)
    }
    /// Operand `k`'s element at linear index 0; `None` when `k >= operands()`.
    pub fn offset(&self, k: usize) -> Option<usize> {
        self.offsets.get(k).copied()
    }
    /// Operand `k`'s strides, for `k < operands()` (the crate's kernels, which only ask for
    /// operands they built the plan with).
    pub(crate) fn strides_of(&self, k: usize) -> &[isize] {
        &self.strides[k]
    }
    /// Operand `k`'s offset, for `k < operands()`.
    pub(crate) fn offset_of(&self, k: usize) -> usize {
        self.offsets[k]
    }
    /// Destination strides (operand 0), innermost first (never negative).
    pub fn dst_strides(&self) -> &[isize] {
        &self.strides[0]
    }
    /// Source strides (operand 1), innermost first (0 for broadcast dims, negative for
    /// reversed ones).
    pub fn src_strides(&self) -> &[isize] {
        &self.strides[1]
    }
    /// The destination element of linear index 0.
    pub fn dst_offset(&self) -> usize {
        self.offsets[0]
    }
    /// The source element of linear index 0.
    pub fn src_offset(&self) -> usize {
        self.offsets[1]
    }
    /// The number of elements written.
    pub fn numel(&self) -> usize {
        self.numel
    }
    /// The number of dims after coalescing.
    pub fn rank(&self) -> usize {
        self.sizes.len()
    }

    /// The shape class of the copy from operand 1 into operand 0.
    pub fn kind(&self) -> CopyKind {
        if self.numel == 0 {
            return CopyKind::Empty;
        }
        let inner = |s: &[isize]| s.first().is_none_or(|&s| s == 1);
        match self.rank() {
            0 => CopyKind::Dense,
            1 if inner(self.dst_strides()) && inner(self.src_strides()) => CopyKind::Dense,
            _ if inner(self.dst_strides()) && inner(self.src_strides()) => CopyKind::InnerContiguous,
            _ if inner(self.dst_strides()) => match self.src_strides().iter().position(|&s| s == 1) {
                Some(dim) => CopyKind::BatchedTranspose { dim },
                None => CopyKind::StridedRows { step: self.src_strides()[0] },
            },
            _ => CopyKind::Gather,
        }
    }

    /// The index formula: every operand's element index at linear index `i`, where `i` counts
    /// elements with dim 0 fastest. Mirrors `iter_offsets` and `plan_offsets` in WGSL. Meant for
    /// `i < numel()` (a larger `i` wraps to `i % numel()`); an empty plan gives the operands'
    /// offsets, never a panic.
    pub fn offsets_into(&self, mut i: usize, out: &mut [usize]) {
        let mut acc: [isize; MAX_OPERANDS] = [0; MAX_OPERANDS];
        for (a, &o) in acc.iter_mut().zip(&self.offsets) {
            *a = o as isize;
        }
        for d in 0..self.rank() {
            // An empty plan's one dim has size 0: it contributes nothing.
            let n = self.sizes[d].max(1);
            let k = (i % n) as isize;
            i /= n;
            for (a, s) in acc.iter_mut().zip(&self.strides) {
                *a += k * s[d];
            }
        }
        for (o, &a) in out.iter_mut().zip(&acc) {
            *o = a as usize;
        }
    }

    /// The (destination, source) element indices of linear index `i` ([`Self::offsets_into`]
    /// for operands 0 and 1).
    pub fn offsets(&self, i: usize) -> (usize, usize) {
        let mut o = [0usize; MAX_OPERANDS];
        self.offsets_into(i, &mut o);
        (o[0], o[1])
    }
}

/// Orders dims innermost first by the operands' strides, the output's first, breaking ties
/// (and skipping stride-0 dims) with the next operand's: PyTorch's `reorder_dimensions`
/// insertion sort.
fn sort_dims(dims: &mut [(usize, Vec<isize>)]) {
    let mut perm: Vec<usize> = (0..dims.len()).collect();
    reorder(&mut perm, |a, b| compare_dims(dims[a].0, &dims[a].1, dims[b].0, &dims[b].1));
    let sorted: Vec<(usize, Vec<isize>)> = perm.iter().map(|&i| dims[i].clone()).collect();
    for (d, s) in dims.iter_mut().zip(sorted) {
        *d = s;
    }
}

/// PyTorch's `reorder_dimensions` loop over `perm` (innermost first): each dim moves outward
/// past every dim `cmp` says it belongs outside of (> 0), stopping at the first it belongs
/// inside of (< 0) and passing ties (0).
pub(crate) fn reorder(perm: &mut [usize], cmp: impl Fn(usize, usize) -> i8) {
    for i in 1..perm.len() {
        let mut d1 = i;
        for d0 in (0..i).rev() {
            match cmp(perm[d0], perm[d1]) {
                c if c > 0 => {
                    perm.swap(d0, d1);
                    d1 = d0;
                }
                c if c < 0 => break,
                _ => {}
            }
        }
    }
}

/// PyTorch's `should_swap` on stride magnitudes: 1 when dim a (size `na`, operand strides
/// `sa`), placed inside dim b, belongs outside it; -1 when it belongs inside; 0 when no
/// operand tells (broadcast in either, or equal strides and sizes).
pub(crate) fn compare_dims(na: usize, sa: &[isize], nb: usize, sb: &[isize]) -> i8 {
    for (&x, &y) in sa.iter().zip(sb) {
        let (x, y) = (x.unsigned_abs(), y.unsigned_abs());
        if x == 0 || y == 0 {
            continue;
        }
        if x != y {
            return if x < y { -1 } else { 1 };
        }
        if na > nb {
            return 1;
        }
    }
    0
}

impl IterPlan {
    /// The lowest and highest element index operand `k` reaches; `None` when the plan is
    /// empty (it reaches nothing) or `k >= operands()`.
    pub fn span(&self, k: usize) -> Option<(usize, usize)> {
        if self.numel == 0 {
            return None;
        }
        let o = self.offset(k)? as isize;
        let (mut lo, mut hi) = (o, o);
        // In range: every element an operand reaches is an index of its (valid) view.
        for (&n, &s) in self.sizes.iter().zip(&self.strides[k]) {
            let r = (n as isize - 1) * s;
            if r < 0 { lo += r } else { hi += r }
        }
        Some((lo as usize, hi as usize))
    }

    /// The lowest and highest element index each operand reaches: ((dst lo, hi), (src lo,
    /// hi)); `None` when the plan is empty.
    pub fn spans(&self) -> Option<((usize, usize), (usize, usize))> {
        Some((self.span(0)?, self.span(1)?))
    }

    /// Splits the plan into pieces that each satisfy `fits` (a binding-size or rank limit).
    /// Each step halves one dim that `cuts` allows (see [`Cuts`]): the outermost while the plan
    /// has more than `cuts.max_rank` dims, else the one whose extent in any operand is the
    /// largest, so that a dim whose stride makes the span too wide is the one cut. A batch dim
    /// (2 and up) cut down to size 1 is dropped; dims 0 and 1 stay, since the row and
    /// transpose kernels read their strides. Fails with the piece that no allowed cut can
    /// shrink further.
    pub(crate) fn pieces(&self, cuts: Cuts, fits: impl Fn(&IterPlan) -> bool) -> std::result::Result<Vec<Cow<'_, IterPlan>>, IterPlan> {
        // The common case, the whole plan in one piece: borrowed, not copied.
        if self.numel == 0 {
            return Ok(Vec::new());
        }
        if fits(self) {
            return Ok(vec![Cow::Borrowed(self)]);
        }
        let mut out = Vec::new();
        let mut stack = vec![self.clone()];
        while let Some(p) = stack.pop() {
            if p.numel == 0 {
                continue;
            }
            if fits(&p) {
                out.push(Cow::Owned(p));
                continue;
            }
            let Some((d, g)) = p.next_cut(cuts) else { return Err(p) };
            let n = p.sizes[d];
            let half = n / g / 2 * g;
            // Push the upper half first so that pieces come out in order.
            for (start, len) in [(half, n - half), (0, half)] {
                let mut q = p.clone();
                for k in 0..q.operands() {
                    q.offsets[k] = (q.offsets[k] as isize + start as isize * q.strides[k][d]) as usize;
                }
                q.numel = p.numel / n * len;
                if len == 1 && d > 1 {
                    q.sizes.remove(d);
                    for s in &mut q.strides {
                        s.remove(d);
                    }
                } else {
                    q.sizes[d] = len;
                    // A dim cut to one element is never stepped over: a stride past the
                    // kernels' i32 (which no piece would fit) becomes 0.
                    if len == 1 {
                        for s in &mut q.strides {
                            if i32::try_from(s[d]).is_err() {
                                s[d] = 0;
                            }
                        }
                    }
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
        let extent = |d: usize| (self.sizes[d] as u128 - 1) * self.strides.iter().map(|s| s[d].unsigned_abs()).max().unwrap_or(0) as u128;
        // `max_by_key` keeps the last of equal keys: the outermost.
        cuttable.max_by_key(|&(d, _)| extent(d))
    }

    /// The same traversal with plan dim `from` moved to position `to` (the linear order
    /// changes, the set of visited tuples does not).
    pub(crate) fn with_dim_moved(&self, from: usize, to: usize) -> IterPlan {
        let mut p = self.clone();
        let s = p.sizes.remove(from);
        p.sizes.insert(to, s);
        for v in &mut p.strides {
            let x = v.remove(from);
            v.insert(to, x);
        }
        p
    }

    /// The batched-transpose order of this copy (source-contiguous dim `dim`): dim `dim` moved
    /// to position 1, and the batch dims (2 and up) ordered by the source's strides, smallest
    /// first, so that consecutive blocks read neighbouring source rows (which often share
    /// cache lines) rather than rows a whole batch apart.
    pub(crate) fn transpose_order(&self, dim: usize) -> CopyPlan {
        let mut p = self.with_dim_moved(dim, 1);
        if p.rank() > 3 {
            let mut batch: Vec<usize> = (2..p.rank()).collect();
            batch.sort_by_key(|&d| (p.strides[1][d].unsigned_abs(), p.strides[0][d]));
            let q = p.clone();
            for (k, d) in batch.into_iter().enumerate() {
                p.sizes[k + 2] = q.sizes[d];
                for (ps, qs) in p.strides.iter_mut().zip(&q.strides) {
                    ps[k + 2] = qs[d];
                }
            }
        }
        p
    }

    /// The same traversal with every offset lowered (operand k moved to a buffer that starts
    /// at element `lo[k]` of the original).
    pub(crate) fn rebased(&self, lo: &[usize]) -> IterPlan {
        IterPlan { offsets: self.offsets.iter().zip(lo).map(|(&o, &l)| o - l).collect(), ..self.clone() }
    }

    /// The same copy counted in words of `unit` elements, when dim 0 is contiguous in the
    /// destination and walked with stride `step` (1, or 2 for a slice `::2`) in the source, and
    /// its size, both offsets and every other stride are multiples of `unit`. Destination word
    /// `w` of a row then takes every `step`-th element of the `step` source words from word
    /// `step * w` on; the word plan's dim-0 source stride is `step`. Two-operand plans only.
    pub(crate) fn in_words(&self, unit: usize, step: isize) -> Option<CopyPlan> {
        let dense0 = self.operands() == 2 && self.dst_strides().first() == Some(&1) && self.src_strides().first() == Some(&step) && step >= 1;
        let aligned = |x: isize| x.rem_euclid(unit as isize) == 0;
        if !dense0
            || !self.sizes[0].is_multiple_of(unit)
            || !self.dst_offset().is_multiple_of(unit)
            || !self.src_offset().is_multiple_of(unit)
            || !self.dst_strides()[1..].iter().chain(&self.src_strides()[1..]).all(|&s| aligned(s))
        {
            return None;
        }
        let div = |s: &[isize]| -> Vec<isize> { s.iter().enumerate().map(|(i, &x)| if i == 0 { x } else { x / unit as isize }).collect() };
        let mut sizes = self.sizes.clone();
        sizes[0] /= unit;
        Some(IterPlan {
            sizes,
            strides: vec![div(self.dst_strides()), div(self.src_strides())],
            offsets: vec![self.dst_offset() / unit, self.src_offset() / unit],
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
            let ((dlo, dhi), (slo, shi)) = p.spans().expect("a non-empty piece");
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
        let mut all: Vec<_> = pieces.iter().flat_map(|p| pairs(p)).collect();
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
        let mut all: Vec<_> = pieces.iter().flat_map(|p| pairs(p)).collect();
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

    /// A dim cut to one element drops a stride past i32, which no piece would fit: a column of
    /// two elements 2^31 apart (a `select` of a [2, 2^31] tensor) copies as two pieces, where
    /// it was refused.
    #[test]
    fn a_dim_cut_to_one_element_drops_a_stride_past_i32() {
        let src = Layout::new(vec![2], vec![1 << 31], 7).unwrap();
        let dst = Layout::contiguous(&[2]).unwrap();
        let plan = CopyPlan::new(&dst, &src).unwrap();
        let strides_fit = |p: &CopyPlan| (0..p.operands()).all(|k| p.strides_of(k).iter().all(|&s| i32::try_from(s).is_ok()));
        let pieces = plan.pieces(Cuts::ANY, strides_fit).unwrap();
        assert_eq!(pieces.len(), 2);
        let mut all: Vec<_> = pieces.iter().flat_map(|p| pairs(p)).collect();
        all.sort_unstable();
        assert_eq!(all, vec![(0, 7), (1, 7 + (1 << 31))]);
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
        let mut all: Vec<_> = pieces.iter().flat_map(|p| pairs(p)).collect();
        all.sort_unstable();
        assert_eq!(all, pairs(&plan));
    }
}
