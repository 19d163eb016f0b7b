//! Which elements two views share, and whether one view reaches an element twice.
//!
//! A destination that reaches an element twice, or that partially overlaps its source, makes
//! a parallel copy's result depend on execution order, so writes refuse both (the ops read a
//! source that walks the storage the other way from a copy instead: `flipped_overlap`). The checks are
//! exact: cheap sufficient tests first (nested strides; for two views, disjoint spans, or
//! offsets that differ modulo the gcd of their strides), an exact search for two views with
//! the same strides dim by dim (blocks of one tensor: a block of columns and the next, at any
//! size), then (for views whose span is at most [`EXACT_CHECK_LIMIT`] elements) a bitmap of the
//! elements reached. Beyond that limit a view that none of these clears is reported as
//! overlapping: a refusal, never a race.

use super::Layout;

/// Spans (in elements) up to which overlap is decided exactly with a bitmap (16 MiB of bits).
pub const EXACT_CHECK_LIMIT: usize = 1 << 27;

/// How two views of one storage overlap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overlap {
    /// No element is reached by both.
    Disjoint,
    /// Both reach the same elements at the same logical positions (a self-copy is a no-op).
    Full,
    /// Some element is reached by both, at different positions (or this could not be ruled
    /// out; see the module docs).
    Partial,
}

impl Layout {
    /// Calls `f` with the storage index of every element, in logical row-major order.
    pub fn for_each_index(&self, mut f: impl FnMut(usize)) {
        if self.numel() == 0 {
            return;
        }
        let rank = self.rank();
        let mut idx = vec![0usize; rank];
        // `off` only ever holds the offset of an element of the view (in range by invariant 4),
        // so plain isize arithmetic cannot overflow: a dim steps forward only while a next
        // position exists, and wraps back by its own span.
        let mut off = self.offset as isize;
        loop {
            f(off as usize);
            let mut d = rank;
            loop {
                if d == 0 {
                    return;
                }
                d -= 1;
                if idx[d] + 1 < self.shape[d] {
                    idx[d] += 1;
                    off += self.strides[d];
                    break;
                }
                off -= self.strides[d] * idx[d] as isize;
                idx[d] = 0;
            }
        }
    }

    /// Whether two logical positions of the view reach the same element (a write target
    /// must not). True also when this cannot be ruled out (see the module docs).
    ///
    /// ```
    /// use strided_wgpu::Layout;
    /// let l = Layout::contiguous(&[4]).unwrap();
    /// assert!(l.expand(&[3, 4]).unwrap().has_internal_overlap());
    /// assert!(l.unfold(0, 2, 1).unwrap().has_internal_overlap());
    /// assert!(!l.unfold(0, 2, 2).unwrap().has_internal_overlap());
    /// ```
    pub fn has_internal_overlap(&self) -> bool {
        let Some((lo, hi)) = self.span() else { return false };
        let mut dims: Vec<(usize, usize)> =
            self.shape.iter().zip(&self.strides).filter(|(&n, _)| n > 1).map(|(&n, &s)| (n, s.unsigned_abs())).collect();
        if dims.iter().any(|&(_, s)| s == 0) {
            return true;
        }
        dims.sort_by_key(|&(_, s)| s);
        // Sufficient: each stride exceeds the reach of all smaller dims together.
        let mut reach: u128 = 0;
        let nested = dims.iter().all(|&(n, s)| {
            let ok = s as u128 > reach;
            reach += (n as u128 - 1) * s as u128;
            ok
        });
        if nested {
            return false;
        }
        // More positions than elements in the span: two must coincide.
        if self.numel() > hi - lo + 1 {
            return true;
        }
        if hi - lo >= EXACT_CHECK_LIMIT {
            return true;
        }
        let mut seen = Bitmap::new(hi - lo + 1);
        let mut twice = false;
        self.for_each_index(|i| twice |= seen.set(i - lo));
        twice
    }

    /// How this view and `other`, two views of the same storage, overlap.
    pub fn overlap(&self, other: &Layout) -> Overlap {
        let (Some((alo, ahi)), Some((blo, bhi))) = (self.span(), other.span()) else { return Overlap::Disjoint };
        let (lo, hi) = (alo.max(blo), ahi.min(bhi));
        if lo > hi {
            return Overlap::Disjoint;
        }
        if self.squeeze_all() == other.squeeze_all() {
            return Overlap::Full;
        }
        // Every element of a view lies at its offset modulo the gcd of its strides (of dims of
        // more than one element): views whose offsets differ modulo the gcd of both views'
        // strides share none, at any size (a matrix's interleaved columns, past the exact
        // check's span).
        let g = self.shape.iter().zip(&self.strides).chain(other.shape.iter().zip(&other.strides)).filter(|(&n, _)| n > 1).fold(0, |g, (_, &s)| gcd(g, s.unsigned_abs()));
        if g > 1 && self.offset() % g != other.offset() % g {
            return Overlap::Disjoint;
        }
        if let Some(shared) = shared_at_same_strides(self, other) {
            return if shared { Overlap::Partial } else { Overlap::Disjoint };
        }
        if hi - lo >= EXACT_CHECK_LIMIT || self.numel().saturating_add(other.numel()) > 4 * EXACT_CHECK_LIMIT {
            return Overlap::Partial;
        }
        let mut seen = Bitmap::new(hi - lo + 1);
        self.for_each_index(|i| {
            if (lo..=hi).contains(&i) {
                seen.set(i - lo);
            }
        });
        let mut shared = false;
        other.for_each_index(|i| shared |= (lo..=hi).contains(&i) && seen.get(i - lo));
        if shared {
            Overlap::Partial
        } else {
            Overlap::Disjoint
        }
    }
}

/// Nodes [`shared_at_same_strides`] visits at most before it gives up (`None`).
const SEARCH_NODES: usize = 1 << 16;

/// Whether two non-empty views with the same strides dim by dim, up to sign (any sizes and
/// offsets: blocks of one tensor, flipped or not), reach a common element, decided exactly without walking them: element
/// `a.offset + sum(i_k s_k)` of one equals `b.offset + sum(j_k s_k)` of the other exactly when
/// `b.offset - a.offset = sum(t_k s_k)` for some `t_k = i_k - j_k` in `[-(nb_k - 1), na_k - 1]`,
/// searched dim by dim from the largest stride, each dim taking only the `t_k` that leave a
/// remainder the smaller dims can still reach (one or two where strides nest, as a tensor's
/// do). `None` where the strides differ, or the search would pass [`SEARCH_NODES`].
fn shared_at_same_strides(a: &Layout, b: &Layout) -> Option<bool> {
    // (Strides of either sign: a view's elements are the same set walked from either end.)
    if a.rank() != b.rank() || a.strides.iter().zip(&b.strides).any(|(x, y)| x.unsigned_abs() != y.unsigned_abs()) || a.numel() == 0 || b.numel() == 0 {
        return None;
    }
    // A dim of negative stride seen from its far end (index n - 1 - i): the same elements.
    let start = |l: &Layout| -> i128 { l.offset as i128 + l.shape.iter().zip(&l.strides).filter(|(_, &s)| s < 0).map(|(&n, &s)| (n as i128 - 1) * s as i128).sum::<i128>() };
    let d = start(b) - start(a);
    // (stride, lowest t, highest t) of each dim that moves, the largest stride first.
    let mut dims: Vec<(i128, i128, i128)> = (0..a.rank())
        .filter(|&k| a.strides[k] != 0 && (a.shape[k] > 1 || b.shape[k] > 1))
        .map(|k| (a.strides[k].unsigned_abs() as i128, -(b.shape[k] as i128 - 1), a.shape[k] as i128 - 1))
        .collect();
    dims.sort_by_key(|&(s, _, _)| std::cmp::Reverse(s));
    // What the dims after k can add at least and at most.
    let mut reach = vec![(0i128, 0i128); dims.len() + 1];
    for k in (0..dims.len()).rev() {
        let (s, lo, hi) = dims[k];
        reach[k] = (reach[k + 1].0 + lo * s, reach[k + 1].1 + hi * s);
    }
    let mut nodes = 0usize;
    fn search(k: usize, rest: i128, dims: &[(i128, i128, i128)], reach: &[(i128, i128)], nodes: &mut usize) -> Option<bool> {
        *nodes += 1;
        if *nodes > SEARCH_NODES {
            return None;
        }
        if k == dims.len() {
            return Some(rest == 0);
        }
        if rest < reach[k].0 || rest > reach[k].1 {
            return Some(false);
        }
        let (s, lo, hi) = dims[k];
        let (below_lo, below_hi) = reach[k + 1];
        // rest - t s within [below_lo, below_hi].
        let t_lo = lo.max((rest - below_hi).div_euclid(s) + i128::from((rest - below_hi).rem_euclid(s) != 0));
        let t_hi = hi.min((rest - below_lo).div_euclid(s));
        let mut t = t_lo;
        while t <= t_hi {
            if search(k + 1, rest - t * s, dims, reach, nodes)? {
                return Some(true);
            }
            t += 1;
        }
        Some(false)
    }
    search(0, d, &dims, &reach, &mut nodes)
}

/// The greatest common divisor (of 0 and `a`: `a`).
pub(crate) fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

struct Bitmap(Vec<u64>);

impl Bitmap {
    fn new(bits: usize) -> Self {
        Bitmap(vec![0; bits.div_ceil(64)])
    }
    /// Sets a bit, returning whether it was already set.
    fn set(&mut self, i: usize) -> bool {
        let (w, b) = (i / 64, 1u64 << (i % 64));
        let was = self.0[w] & b != 0;
        self.0[w] |= b;
        was
    }
    fn get(&self, i: usize) -> bool {
        self.0[i / 64] & (1u64 << (i % 64)) != 0
    }
}
