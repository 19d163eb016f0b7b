//! View operations: each takes a layout and returns a new one (or a typed error), never
//! touching data. Semantics follow PyTorch's `TensorShape.cpp`; negative slice steps are this
//! crate's extension (a zero-copy flip).

use super::{wrap_dim, Layout};
use crate::error::{Error, Result};

impl Layout {
    /// Reorders the dims: dim `i` of the result is dim `dims[i]` of `self`.
    pub fn permute(&self, dims: &[isize]) -> Result<Layout> {
        const OP: &str = "permute";
        if dims.len() != self.rank() {
            return Err(Error::invalid(OP, format!("dims {dims:?} must name each of the {} dims of shape {:?} once", self.rank(), self.shape)));
        }
        let mut seen = vec![false; self.rank()];
        let mut shape = Vec::with_capacity(self.rank());
        let mut strides = Vec::with_capacity(self.rank());
        for &d in dims {
            let d = wrap_dim(OP, d, self.rank(), false)?;
            if std::mem::replace(&mut seen[d], true) {
                return Err(Error::invalid(OP, format!("dims {dims:?} repeat dim {d}")));
            }
            shape.push(self.shape[d]);
            strides.push(self.strides[d]);
        }
        Layout::new_for(OP, shape, strides, self.offset)
    }

    /// Swaps two dims.
    pub fn transpose(&self, dim0: isize, dim1: isize) -> Result<Layout> {
        let a = wrap_dim("transpose", dim0, self.rank(), true)?;
        let b = wrap_dim("transpose", dim1, self.rank(), true)?;
        let mut l = self.clone();
        if self.rank() > 0 {
            l.shape.swap(a, b);
            l.strides.swap(a, b);
        }
        Ok(l)
    }

    /// `t[..., start:end:step]` on `dim`, with Python's rules for negative and out-of-range
    /// bounds. `step >= 1` is PyTorch's slice (the offset moves by `start * stride` even when the
    /// result is empty); a negative step walks the dim backwards, as in NumPy, without a copy.
    ///
    /// ```
    /// use strided_wgpu::Layout;
    /// let l = Layout::contiguous(&[5]).unwrap();
    /// let r = l.slice(0, 4, -6, -2).unwrap(); // x[4::-2] = elements 4, 2, 0
    /// assert_eq!(r.storage_indices().unwrap(), vec![4, 2, 0]);
    /// ```
    pub fn slice(&self, dim: isize, start: isize, end: isize, step: isize) -> Result<Layout> {
        const OP: &str = "slice";
        let d = wrap_dim(OP, dim, self.rank(), false)?;
        let n = self.shape[d] as i128;
        let (start, end, step) = (start as i128, end as i128, step as i128);
        let wrap = |x: i128| if x < 0 { x + n } else { x };
        let (first, len) = if step > 0 {
            let s = wrap(start).clamp(0, n);
            let e = wrap(end).clamp(s, n);
            (s, (e - s + step - 1) / step)
        } else if step < 0 {
            let s = wrap(start).clamp(-1, n - 1);
            let e = wrap(end).clamp(-1, n - 1);
            let len = if s > e { (s - e - 1) / -step + 1 } else { 0 };
            (if len > 0 { s } else { 0 }, len)
        } else {
            return Err(Error::invalid(OP, format!("step must be non-zero (dim {d} of shape {:?})", self.shape)));
        };
        // A dim of at most one element never uses its stride (PyTorch's `x[0:4:sys.maxsize]`
        // has one row): its stride stays the dim's own where the product does not fit.
        let stride = self.strides[d] as i128 * step;
        let stride = match isize::try_from(stride) {
            Ok(s) => s,
            Err(_) if len <= 1 => self.strides[d],
            Err(_) => return Err(Error::overflow(OP, format!("stride {} * step {step}", self.strides[d]))),
        };
        let mut shape = self.shape.clone();
        shape[d] = len as usize;
        let mut strides = self.strides.clone();
        strides[d] = stride;
        let offset = self.shifted(OP, first * self.strides[d] as i128, len == 0 || shape.contains(&0))?;
        Layout::new_for(OP, shape, strides, offset)
    }

    /// Reverses `dim` without a copy: a slice with step -1. A 0-d layout takes dims -1 and 0
    /// and stays itself (PyTorch's `flip` of a scalar).
    pub fn flip(&self, dim: isize) -> Result<Layout> {
        let d = wrap_dim("flip", dim, self.rank(), true)?;
        if self.rank() == 0 {
            return Ok(self.clone());
        }
        let n = self.shape[d] as isize;
        self.slice(d as isize, n - 1, -n - 1, -1)
    }

    /// `Tensor.narrow(dim, start, length)`: elements `start..start+length` of `dim`.
    pub fn narrow(&self, dim: isize, start: isize, length: usize) -> Result<Layout> {
        const OP: &str = "narrow";
        let d = wrap_dim(OP, dim, self.rank(), false)?;
        let n = self.shape[d] as i128;
        let s = start as i128;
        if s < -n || s > n {
            return Err(Error::invalid(OP, format!("start {start} is out of range for dim {d} of size {n} (shape {:?})", self.shape)));
        }
        let s = if s < 0 { s + n } else { s };
        if s + length as i128 > n {
            return Err(Error::invalid(OP, format!("start {s} + length {length} exceeds dim {d} of size {n} (shape {:?})", self.shape)));
        }
        // In range: s and s + length are within [0, n].
        self.slice(d as isize, s as isize, (s + length as i128) as isize, 1)
    }

    /// `Tensor.select(dim, index)`: removes `dim`, keeping element `index` of it.
    pub fn select(&self, dim: isize, index: isize) -> Result<Layout> {
        const OP: &str = "select";
        let d = wrap_dim(OP, dim, self.rank(), false)?;
        let n = self.shape[d] as i128;
        let i = if index < 0 { index as i128 + n } else { index as i128 };
        if i < 0 || i >= n {
            return Err(Error::invalid(OP, format!("index {index} is out of range for dim {d} of size {n} (shape {:?})", self.shape)));
        }
        let mut shape = self.shape.clone();
        let mut strides = self.strides.clone();
        let st = strides.remove(d);
        shape.remove(d);
        let offset = self.shifted(OP, i * st as i128, shape.contains(&0))?;
        Layout::new_for(OP, shape, strides, offset)
    }

    /// Inserts a size-1 dim at `dim` (in `[-rank-1, rank]`), with PyTorch's stride for it:
    /// `size * stride` of the dim it displaces, or 1 at the end.
    pub fn unsqueeze(&self, dim: isize) -> Result<Layout> {
        const OP: &str = "unsqueeze";
        let d = wrap_dim(OP, dim, self.rank() + 1, false)?;
        let stride = if d == self.rank() {
            1
        } else {
            (self.shape[d] as isize)
                .checked_mul(self.strides[d])
                .ok_or_else(|| Error::overflow(OP, format!("size {} * stride {} of dim {d}", self.shape[d], self.strides[d])))?
        };
        let mut l = self.clone();
        l.shape.insert(d, 1);
        l.strides.insert(d, stride);
        Ok(l)
    }

    /// Removes `dim` if its size is 1; otherwise returns the view unchanged (PyTorch).
    pub fn squeeze(&self, dim: isize) -> Result<Layout> {
        let d = wrap_dim("squeeze", dim, self.rank(), true)?;
        let mut l = self.clone();
        if self.rank() > 0 && self.shape[d] == 1 {
            l.shape.remove(d);
            l.strides.remove(d);
        }
        Ok(l)
    }

    /// Removes every size-1 dim.
    pub fn squeeze_all(&self) -> Layout {
        let (shape, strides) = self.shape.iter().zip(&self.strides).filter(|(&n, _)| n != 1).unzip();
        Layout { shape, strides, offset: self.offset }
    }

    /// `Tensor.expand(sizes)`: size-1 dims (and new leading dims) repeat with stride 0; -1 keeps
    /// an existing dim's size. Sizes are matched from the right.
    pub fn expand(&self, sizes: &[isize]) -> Result<Layout> {
        const OP: &str = "expand";
        let rank = sizes.len();
        let err = |detail: String| Error::invalid(OP, format!("cannot expand shape {:?} to {sizes:?}: {detail}", self.shape));
        if rank < self.rank() {
            return Err(err(format!("the target has {rank} sizes but the tensor has {} dims", self.rank())));
        }
        let mut shape = vec![0usize; rank];
        let mut strides = vec![0isize; rank];
        for i in (0..rank).rev() {
            let lead = rank - self.rank();
            let existing = i >= lead;
            let (mut n, mut st) = if existing {
                (self.shape[i - lead], self.strides[i - lead])
            } else if self.rank() == 0 || i + 1 == rank {
                (1, 0)
            } else {
                let st = (shape[i + 1] as isize).checked_mul(strides[i + 1]).ok_or_else(|| Error::overflow(OP, format!("the stride of new dim {i}")))?;
                (1, st)
            };
            let target = match sizes[i] {
                -1 if existing => n,
                t if t < 0 => return Err(err(format!("size {t} at dim {i} is invalid (-1 keeps an existing dim's size)"))),
                t => t as usize,
            };
            if n != target {
                if n != 1 {
                    return Err(err(format!("dim {i} has size {n}, which must equal {target} or be 1")));
                }
                n = target;
                st = 0;
            }
            shape[i] = n;
            strides[i] = st;
        }
        Layout::new_for(OP, shape, strides, self.offset)
    }

    /// Broadcasts to `shape` (like `expand` with explicit sizes).
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Layout> {
        let sizes: Vec<isize> = shape
            .iter()
            .map(|&n| isize::try_from(n).map_err(|_| Error::overflow("broadcast_to", format!("size {n}"))))
            .collect::<Result<_>>()?;
        self.expand(&sizes).map_err(|e| match e {
            Error::Overflow { what, .. } => Error::Overflow { op: "broadcast_to", what },
            _ => broadcast_error("broadcast_to", &self.shape, shape),
        })
    }

    /// `torch.diagonal(offset, dim1, dim2)`: removes both dims and appends their diagonal.
    pub fn diagonal(&self, offset: isize, dim1: isize, dim2: isize) -> Result<Layout> {
        const OP: &str = "diagonal";
        let a = wrap_dim(OP, dim1, self.rank(), false)?;
        let b = wrap_dim(OP, dim2, self.rank(), false)?;
        if a == b {
            return Err(Error::invalid(OP, format!("dim1 and dim2 are both dim {a} of shape {:?}; they must differ", self.shape)));
        }
        let (na, nb, o) = (self.shape[a] as i128, self.shape[b] as i128, offset as i128);
        let len = if o >= 0 { na.min(nb - o) } else { (na + o).min(nb) }.max(0);
        let delta = match (len, o >= 0) {
            (0, _) => 0,
            (_, true) => o * self.strides[b] as i128,
            (_, false) => -o * self.strides[a] as i128,
        };
        // A diagonal of at most one element never uses its stride (as `slice`'s).
        let diag_stride = match self.strides[a].checked_add(self.strides[b]) {
            Some(s) => s,
            None if len <= 1 => self.strides[a],
            None => return Err(Error::overflow(OP, "the diagonal's stride")),
        };
        let mut shape = self.shape.clone();
        let mut strides = self.strides.clone();
        for d in [a.max(b), a.min(b)] {
            shape.remove(d);
            strides.remove(d);
        }
        shape.push(len as usize);
        strides.push(diag_stride);
        let offset = self.shifted(OP, delta, shape.contains(&0))?;
        Layout::new_for(OP, shape, strides, offset)
    }

    /// `torch.as_strided(size, stride, storage_offset)`: a new view of the same storage, which
    /// must hold every element it reaches (`storage_len` elements).
    pub fn as_strided(shape: &[usize], strides: &[isize], offset: usize, storage_len: usize) -> Result<Layout> {
        let l = Layout::new_for("as_strided", shape.to_vec(), strides.to_vec(), offset)?;
        l.check_within("as_strided", storage_len)?;
        Ok(l)
    }

    /// `Tensor.unfold(dim, size, step)`: sliding windows of `size` elements every `step` along
    /// `dim`, as a new last dim.
    pub fn unfold(&self, dim: isize, size: usize, step: usize) -> Result<Layout> {
        const OP: &str = "unfold";
        let d = wrap_dim(OP, dim, self.rank(), true)?;
        let max = if self.rank() == 0 { 1 } else { self.shape[d] };
        if size > max {
            return Err(Error::invalid(OP, format!("window size {size} exceeds dim {d} of size {max} (shape {:?})", self.shape)));
        }
        if step == 0 {
            return Err(Error::invalid(OP, format!("step must be >= 1 (dim {d} of shape {:?})", self.shape)));
        }
        let mut shape = self.shape.clone();
        let mut strides = self.strides.clone();
        let inner = if self.rank() == 0 { 1 } else { self.strides[d] };
        if self.rank() > 0 {
            shape[d] = ((self.shape[d] - size) / step)
                .checked_add(1)
                .ok_or_else(|| Error::overflow(OP, format!("the window count of dim {d} of size {} (window {size}, step {step})", self.shape[d])))?;
            // One window never uses the windows' stride (as `slice`'s).
            strides[d] = match isize::try_from(step).ok().and_then(|s| s.checked_mul(self.strides[d])) {
                Some(s) => s,
                None if shape[d] <= 1 => self.strides[d],
                None => return Err(Error::overflow(OP, format!("step {step} * stride {}", self.strides[d]))),
            };
        }
        shape.push(size);
        strides.push(inner);
        Layout::new_for(OP, shape, strides, self.offset)
    }

    /// The offset moved by `delta`. Only an empty result may ask for a negative offset (an
    /// empty slice at the end of a reversed dim); it is clamped to 0, since it reaches nothing.
    fn shifted(&self, op: &'static str, delta: i128, empty: bool) -> Result<usize> {
        let off = self.offset as i128 + delta;
        match usize::try_from(off) {
            Ok(o) => Ok(o),
            Err(_) if empty && off < 0 => Ok(0),
            Err(_) => Err(Error::overflow(op, format!("offset {} + {delta}", self.offset))),
        }
    }
}

/// The error of broadcasting `from` to `to`, naming the first dim (from the right) that fails.
pub(crate) fn broadcast_error(op: &'static str, from: &[usize], to: &[usize]) -> Error {
    if from.len() > to.len() {
        return Error::invalid(op, format!("shape {from:?} has more dims than the target {to:?}"));
    }
    let lead = to.len() - from.len();
    for i in (0..from.len()).rev() {
        let j = i + lead;
        if from[i] != to[j] && from[i] != 1 {
            return Error::Broadcast { op, from: from.to_vec(), to: to.to_vec(), dim: j, from_size: from[i], to_size: to[j] };
        }
    }
    Error::invalid(op, format!("shape {from:?} cannot be broadcast to {to:?}"))
}
