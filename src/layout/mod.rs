//! Tensor layouts: shape, strides and storage offset, as pure host values.
//!
//! A [`Layout`] says which storage element each logical position of a view reads. It holds
//! no data and knows nothing of wgpu; host and device tensors share it.
//!
//! # Invariants
//!
//! Every `Layout` that exists satisfies these; [`Layout::new`] is the one constructor that
//! checks them, and every operation builds its result through it.
//!
//! 1. `shape.len() == strides.len()`: the rank. Rank 0 is a scalar with one element.
//! 2. The element count (the product of the shape) fits in `usize` and in `i64`, and so does
//!    every size, empty layouts included (PyTorch's sizes are `int64_t`): each is at most
//!    `isize::MAX`.
//! 3. Strides and the offset count elements, not bytes. Strides are signed: a negative stride
//!    walks a dim backwards (a zero-copy flip); a zero stride repeats one element (broadcast).
//! 4. For a non-empty layout, every element it reaches has an index in `[0, isize::MAX]`
//!    (`i64::MAX` on 64-bit targets, `2^31 - 1` on wasm32, so that an index is an `isize` and a
//!    `usize` there):
//!    `offset + Σ min(0, (size_d - 1) * stride_d) >= 0` and the matching maximum fits, with no
//!    intermediate overflow. An empty layout reaches nothing, so its strides and offset are
//!    metadata only (PyTorch keeps them, and so do we).
//! 5. Strides of size-1 dims are kept as PyTorch keeps them (they are observable through
//!    `view` and `unsqueeze`), though they never change which element is read.
//! 6. A layout does not know its storage's length: checking a view against a storage is the
//!    job of [`Layout::check_within`], which tensors call whenever a layout is built from
//!    caller-supplied strides ([`Layout::as_strided`]).

mod format;
pub(crate) mod ops;
pub(crate) mod overlap;
mod reshape;

pub use format::MemoryFormat;
pub use overlap::Overlap;
pub use reshape::Reshape;
/// The traversal plans built over layouts (PyTorch's TensorIterator).
pub use crate::plan::{CopyKind, CopyPlan, IterPlan};

use crate::error::{Error, Result};

/// Shape, strides (in elements, signed) and storage offset (in elements) of a strided view.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Layout {
    shape: Vec<usize>,
    strides: Vec<isize>,
    offset: usize,
}

impl Layout {
    /// Builds a layout, checking the invariants listed in the module docs.
    ///
    /// ```
    /// use strided_wgpu::Layout;
    /// let l = Layout::new(vec![2, 3], vec![1, 2], 0).unwrap();
    /// assert!(!l.is_contiguous());
    /// assert!(Layout::new(vec![2], vec![-1], 0).is_err()); // would read element -1
    /// ```
    pub fn new(shape: Vec<usize>, strides: Vec<isize>, offset: usize) -> Result<Layout> {
        Layout::new_for("layout", shape, strides, offset)
    }

    /// [`Layout::new`] for `op`, whose errors it names (a view op's result that passes the
    /// limits).
    pub(crate) fn new_for(op: &'static str, shape: Vec<usize>, strides: Vec<isize>, offset: usize) -> Result<Layout> {
        if shape.len() != strides.len() {
            return Err(Error::invalid(
                op,
                format!("shape {shape:?} has rank {} but strides {strides:?} have rank {}", shape.len(), strides.len()),
            ));
        }
        let numel = checked_numel(op, &shape)?;
        if i64::try_from(numel).is_err() || isize::try_from(offset).is_err() || shape.iter().any(|&n| isize::try_from(n).is_err()) {
            return Err(Error::overflow(op, format!("element count or a size of {shape:?}, or offset {offset} (each at most {})", isize::MAX)));
        }
        let layout = Layout { shape, strides, offset };
        if numel > 0 {
            let (lo, hi) = layout.span_i128();
            if lo < 0 || hi > isize::MAX as i128 {
                return Err(Error::invalid(
                    op,
                    format!(
                        "shape {:?}, strides {:?} and offset {} reach elements [{lo}, {hi}]; every element index must lie in [0, {}]",
                        layout.shape, layout.strides, layout.offset, isize::MAX
                    ),
                ));
            }
        }
        Ok(layout)
    }

    /// The row-major (C-contiguous) layout of `shape` at offset 0.
    pub fn contiguous(shape: &[usize]) -> Result<Layout> {
        Layout::new(shape.to_vec(), MemoryFormat::Contiguous.strides(shape)?, 0)
    }

    /// The layout of `shape` in `format` at offset 0, as `torch.empty(shape, memory_format=..)`.
    pub fn with_format(shape: &[usize], format: MemoryFormat) -> Result<Layout> {
        Layout::new(shape.to_vec(), format.strides(shape)?, 0)
    }

    /// The sizes of the dims.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }
    /// The strides of the dims, in elements.
    pub fn strides(&self) -> &[isize] {
        &self.strides
    }
    /// The storage offset, in elements: the index of the element at logical position 0.
    pub fn offset(&self) -> usize {
        self.offset
    }
    /// The number of dims.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }
    /// The number of elements (1 for rank 0).
    pub fn numel(&self) -> usize {
        // Checked in `new`.
        self.shape.iter().product()
    }

    /// Whether the view is row-major contiguous, by PyTorch's rule: an empty view is
    /// contiguous, size-1 dims are skipped, and the offset does not matter.
    pub fn is_contiguous(&self) -> bool {
        self.numel() == 0 || dense_in_order(&self.shape, &self.strides, (0..self.rank()).rev())
    }

    /// `Tensor.is_contiguous(memory_format=format)`. Channels-last formats are false for
    /// other ranks; unlike [`Layout::is_contiguous`] they have no special case for empty views.
    pub fn is_contiguous_for(&self, format: MemoryFormat) -> bool {
        match format.dim_order(self.rank()) {
            None => false,
            Some(order) if format == MemoryFormat::Contiguous => {
                let _ = order;
                self.is_contiguous()
            }
            Some(order) => dense_in_order(&self.shape, &self.strides, order.iter().copied()),
        }
    }

    /// PyTorch's `suggest_memory_format()`: channels_last (3d) when the strides are ordered
    /// like that format, else contiguous.
    pub fn suggest_memory_format(&self) -> MemoryFormat {
        format::suggest(&self.shape, &self.strides)
    }

    /// The lowest and highest element index the view reaches, or `None` for an empty view.
    pub fn span(&self) -> Option<(usize, usize)> {
        if self.numel() == 0 {
            return None;
        }
        let (lo, hi) = self.span_i128();
        // In range by invariant 4.
        Some((lo as usize, hi as usize))
    }

    /// The span in i128, where no sum of the checked quantities can overflow.
    fn span_i128(&self) -> (i128, i128) {
        let mut lo = self.offset as i128;
        let mut hi = lo;
        for (&n, &s) in self.shape.iter().zip(&self.strides) {
            let reach = (n as i128 - 1) * s as i128;
            if reach < 0 {
                lo += reach;
            } else {
                hi += reach;
            }
        }
        (lo, hi)
    }

    /// Checks that every element the view reaches lies in a storage of `storage_len` elements.
    pub fn check_within(&self, op: &'static str, storage_len: usize) -> Result<()> {
        match self.span() {
            Some((lo, hi)) if hi >= storage_len => Err(Error::OutOfBounds {
                op,
                shape: self.shape.clone(),
                strides: self.strides.clone(),
                offset: self.offset,
                lo: lo as i128,
                hi: hi as i128,
                storage_len,
            }),
            _ => Ok(()),
        }
    }

    /// The storage index of the element at logical position `index`, or `None` when `index`
    /// has the wrong rank or is out of range.
    pub fn storage_index(&self, index: &[usize]) -> Option<usize> {
        if index.len() != self.rank() || index.iter().zip(&self.shape).any(|(&i, &n)| i >= n) {
            return None;
        }
        let off = index.iter().zip(&self.strides).fold(self.offset as i128, |acc, (&i, &s)| acc + i as i128 * s as i128);
        usize::try_from(off).ok()
    }

    /// Storage indices of every element in logical row-major order: a plain, obviously
    /// correct walk used by the CPU reference checks and the tests. More indices than host
    /// memory holds (an expanded view, say) are [`Error::HostMemory`].
    pub fn storage_indices(&self) -> Result<Vec<usize>> {
        let mut out = crate::error::reserved("storage_indices", || format!("the indices of a view of shape {:?}", self.shape), self.numel())?;
        self.for_each_index(|i| out.push(i));
        Ok(out)
    }
}

/// Whether the dims, visited innermost first in `order`, are dense: each non-size-1 dim's
/// stride equals the product of the sizes of the dims visited before it (PyTorch's rule).
fn dense_in_order(shape: &[usize], strides: &[isize], order: impl Iterator<Item = usize>) -> bool {
    let mut expected: i128 = 1;
    for d in order {
        if shape[d] != 1 {
            if strides[d] as i128 != expected {
                return false;
            }
            expected *= shape[d] as i128;
        }
    }
    true
}

/// The product of `shape`, or an overflow error naming `op`.
pub(crate) fn checked_numel(op: &'static str, shape: &[usize]) -> Result<usize> {
    shape
        .iter()
        .try_fold(1usize, |acc, &n| acc.checked_mul(n))
        .ok_or_else(|| Error::overflow(op, format!("the element count of shape {shape:?}")))
}

/// Wraps a possibly negative dim into `[0, rank)`. With `scalar_ok`, rank 0 accepts dims -1
/// and 0 as PyTorch's `maybe_wrap_dim(.., wrap_scalar=true)` does, returning 0. An error
/// names the dims the op indexes (1 for such a scalar).
pub(crate) fn wrap_dim(op: &'static str, dim: isize, rank: usize, scalar_ok: bool) -> Result<usize> {
    let r = if rank == 0 && scalar_ok { 1 } else { rank };
    // A negative dim plus a rank (at most isize::MAX) cannot overflow.
    let d = if dim < 0 { dim + r as isize } else { dim };
    if d < 0 || d as usize >= r {
        return Err(Error::DimOutOfRange { op, dim, rank: r });
    }
    Ok(d as usize)
}
