//! `view`, `reshape` and `flatten`: new shapes over the same elements.
//!
//! `view` fails with [`Error::IncompatibleLayout`] when the strides cannot express the new
//! shape (a copy would be needed) and with [`Error::IncompatibleShape`] when no tensor of the
//! old element count has the new shape. `reshape` and `flatten` turn the first case into
//! [`Reshape::Copy`]; tensors then materialize.

use super::{checked_numel, wrap_dim, Layout};
use crate::error::{Error, Result};

/// What `reshape` or `flatten` needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reshape {
    /// The new shape is a view of the same storage.
    View(Layout),
    /// The new shape needs a copy into a fresh contiguous tensor of this shape.
    Copy(Vec<usize>),
}

impl Layout {
    /// `Tensor.view(shape)`: succeeds exactly when PyTorch's `computeStride` does. One size may
    /// be -1, inferred from the element count.
    ///
    /// ```
    /// use strided_wgpu::{Error, Layout};
    /// let t = Layout::contiguous(&[2, 3, 4]).unwrap().transpose(1, 2).unwrap();
    /// assert!(matches!(t.view(&[6, 4]), Err(Error::IncompatibleLayout { .. })));
    /// assert_eq!(t.view(&[2, 12]).is_err(), true);
    /// assert_eq!(t.view(&[2, 4, 3]).unwrap().strides(), &[12, 1, 4]);
    /// ```
    pub fn view(&self, shape: &[isize]) -> Result<Layout> {
        let new_shape = infer_size("view", shape, self)?;
        match compute_stride(&self.shape, &self.strides, &new_shape)? {
            Some(strides) => Layout::new(new_shape, strides, self.offset),
            None => Err(Error::IncompatibleLayout {
                op: "view",
                requested: new_shape,
                shape: self.shape.clone(),
                strides: self.strides.clone(),
            }),
        }
    }

    /// `Tensor.reshape(shape)`: a view when one exists, else a copy.
    pub fn reshape(&self, shape: &[isize]) -> Result<Reshape> {
        match self.view(shape) {
            Ok(l) => Ok(Reshape::View(l)),
            Err(Error::IncompatibleLayout { requested, .. }) => Ok(Reshape::Copy(requested)),
            Err(Error::IncompatibleShape { requested, shape, numel, detail, .. }) => {
                Err(Error::IncompatibleShape { op: "reshape", requested, shape, numel, detail })
            }
            Err(Error::Overflow { what, .. }) => Err(Error::Overflow { op: "reshape", what }),
            Err(e) => Err(e),
        }
    }

    /// `torch.flatten(start_dim, end_dim)`: merges dims `start..=end`; a view when possible,
    /// else a copy. Equal dims return the view unchanged; a 0-d view becomes shape `[1]`.
    pub fn flatten(&self, start_dim: isize, end_dim: isize) -> Result<Reshape> {
        const OP: &str = "flatten";
        let a = wrap_dim(OP, start_dim, self.rank(), true)?;
        let b = wrap_dim(OP, end_dim, self.rank(), true)?;
        if a > b {
            return Err(Error::invalid(OP, format!("start_dim {a} must not come after end_dim {b} (shape {:?})", self.shape)));
        }
        if self.rank() == 0 {
            return Ok(Reshape::View(self.view(&[1])?));
        }
        if a == b {
            return Ok(Reshape::View(self.clone()));
        }
        let merged = checked_numel(OP, &self.shape[a..=b])?;
        let mut shape: Vec<isize> = Vec::with_capacity(self.rank() - (b - a));
        for &n in self.shape[..a].iter().chain(std::iter::once(&merged)).chain(&self.shape[b + 1..]) {
            shape.push(isize::try_from(n).map_err(|_| Error::overflow(OP, format!("size {n}")))?);
        }
        self.reshape(&shape)
    }
}

/// Resolves a shape with at most one -1 against the element count of `layout`.
fn infer_size(op: &'static str, shape: &[isize], layout: &Layout) -> Result<Vec<usize>> {
    let numel = layout.numel();
    let err = |detail: String| Error::IncompatibleShape {
        op,
        requested: shape.to_vec(),
        shape: layout.shape().to_vec(),
        numel,
        detail,
    };
    let mut infer = None;
    let mut known: usize = 1;
    for (i, &n) in shape.iter().enumerate() {
        match n {
            -1 if infer.is_some() => return Err(err("only one dim can be -1".into())),
            -1 => infer = Some(i),
            n if n < 0 => return Err(err(format!("size {n} at dim {i} is invalid"))),
            n => known = known.checked_mul(n as usize).ok_or_else(|| Error::overflow(op, format!("the element count of {shape:?}")))?,
        }
    }
    let mut out: Vec<usize> = shape.iter().map(|&n| n.max(0) as usize).collect();
    match infer {
        Some(i) if known == 0 && numel == 0 => Err(err(format!("the size of dim {i} (-1) is ambiguous with 0 elements"))),
        Some(i) if known > 0 && numel.is_multiple_of(known) => {
            out[i] = numel / known;
            Ok(out)
        }
        Some(i) => Err(err(format!("the other dims hold {known} elements, and no size of dim {i} (-1) makes that {numel}"))),
        None if known == numel => Ok(out),
        None => Err(err(format!("it holds {known} elements, not {numel}"))),
    }
}

/// PyTorch's `computeStride`: strides for `new_shape` over the same elements as
/// (`old_shape`, `old_strides`), or `None` when a copy is needed; a stride past `isize` is an
/// [`Error::Overflow`] (PyTorch wraps it). `new_shape` has the same element count as
/// `old_shape`.
fn compute_stride(old_shape: &[usize], old_strides: &[isize], new_shape: &[usize]) -> Result<Option<Vec<isize>>> {
    let overflow = || Error::overflow("view", format!("a stride of the shape {new_shape:?} viewing shape {old_shape:?} with strides {old_strides:?}"));
    if old_shape.is_empty() {
        return Ok(Some(vec![1; new_shape.len()]));
    }
    let numel: i128 = old_shape.iter().map(|&n| n as i128).product();
    if numel == 0 {
        if old_shape == new_shape {
            return Ok(Some(old_strides.to_vec()));
        }
        // Fresh row-major strides, sizes of 0 counted as 1.
        let mut strides = vec![1isize; new_shape.len()];
        for d in (0..new_shape.len().saturating_sub(1)).rev() {
            let size = isize::try_from(new_shape[d + 1].max(1)).map_err(|_| overflow())?;
            strides[d] = strides[d + 1].checked_mul(size).ok_or_else(overflow)?;
        }
        return Ok(Some(strides));
    }
    let mut new_strides = vec![0isize; new_shape.len()];
    let mut view_d = new_shape.len() as isize - 1;
    let mut chunk_base_stride = old_strides[old_strides.len() - 1] as i128;
    let mut tensor_numel: i128 = 1;
    let mut view_numel: i128 = 1;
    for tensor_d in (0..old_shape.len()).rev() {
        tensor_numel *= old_shape[tensor_d] as i128;
        let chunk_ends = tensor_d == 0
            || (old_shape[tensor_d - 1] != 1 && old_strides[tensor_d - 1] as i128 != tensor_numel * chunk_base_stride);
        if chunk_ends {
            while view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d as usize] == 1) {
                new_strides[view_d as usize] = isize::try_from(view_numel * chunk_base_stride).map_err(|_| overflow())?;
                view_numel *= new_shape[view_d as usize] as i128;
                view_d -= 1;
            }
            if view_numel != tensor_numel {
                return Ok(None);
            }
            if tensor_d > 0 {
                chunk_base_stride = old_strides[tensor_d - 1] as i128;
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    Ok((view_d == -1).then_some(new_strides))
}
