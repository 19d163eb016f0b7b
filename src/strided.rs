//! The operations every tensor type shares: views (each a [`Layout`] operation whose result
//! shares the tensor's storage) and the operations that materialize a copy when a view cannot
//! express the result (`contiguous`, `reshape`, `flatten`, `to_memory_format`), written once
//! over each type's `materialize`.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::{Layout, MemoryFormat, Reshape};

/// The proof that a layout passed to [`Strided::with_layout`] was derived inside this crate
/// from a layout already within the storage. It cannot be made outside the crate, and
/// [`Strided`] is sealed (only the crate's tensor types implement it), so no public API lets a
/// view reach outside its storage.
#[doc(hidden)]
pub struct Token(pub(crate) ());

pub(crate) mod sealed {
    /// Implemented by the crate's tensor types only, each in its own file (`host.rs`,
    /// `gpu/tensor.rs`), so that this layer names no tensor type.
    pub trait Sealed {}
}

/// A tensor made of a layout over shared storage. Implemented by
/// [`HostTensor`](crate::HostTensor) and [`DeviceTensor`](crate::DeviceTensor); every view
/// operation is zero-copy.
///
/// A view's layout can only come from the checked operations below, never from outside:
///
/// ```compile_fail
/// use strided_wgpu::{HostTensor, Layout, Strided};
/// let x = HostTensor::from_vec(vec![0f32; 4], &[4]).unwrap();
/// // A 1,000-element view of a 4-element storage does not compile.
/// let _ = x.with_layout(Layout::contiguous(&[1000]).unwrap());
/// ```
pub trait Strided: Sized + sealed::Sealed {
    /// The view's layout.
    fn layout(&self) -> &Layout;
    /// The same storage seen through another layout, which the crate has derived from this
    /// view's (or checked against the storage).
    #[doc(hidden)]
    fn with_layout(&self, layout: Layout, _: Token) -> Self;
    /// The number of elements in the storage (not in the view).
    fn storage_len(&self) -> usize;
    /// The element type.
    fn dtype(&self) -> DType;
    /// A copy of the view into new storage in `format`, converting to `dtype` (any of the seven
    /// types, as [`crate::dtype::cast_bits`] does).
    fn materialize(&self, format: MemoryFormat, dtype: DType) -> Result<Self>;

    /// `Tensor.contiguous(memory_format=format)`: this same view (sharing storage) when it
    /// already satisfies the format, else a copy into new storage in that format.
    fn contiguous(&self, format: MemoryFormat) -> Result<Self> {
        if self.layout().is_contiguous_for(format) {
            return Ok(self.with_layout(self.layout().clone(), Token(())));
        }
        self.materialize(format, self.dtype())
    }
    /// `Tensor.reshape`: a view when the strides allow one, else a contiguous copy.
    fn reshape(&self, shape: &[isize]) -> Result<Self> {
        resolve(self, self.layout().reshape(shape)?)
    }
    /// `torch.flatten(start_dim, end_dim)`: a view when possible, else a copy.
    fn flatten(&self, start_dim: isize, end_dim: isize) -> Result<Self> {
        resolve(self, self.layout().flatten(start_dim, end_dim)?)
    }
    /// `x.to(memory_format=format)`: the logical shape stays (NCHW stays NCHW), only the
    /// strides and the storage order change. PyTorch's rule (`to_will_alias`): this same view
    /// when its suggested memory format ([`Layout::suggest_memory_format`]) is `format` (a
    /// transposed matrix asked for `Contiguous` stays the transposed view), else a copy (a
    /// batched transpose) into new storage dense in `format` (a contiguous [N, C, 1, 1] asked
    /// for `ChannelsLast` is copied, to strides [C, 1, C, C]). [`Strided::contiguous`] is the
    /// other rule: a copy unless the view already is dense in `format`.
    ///
    /// Channels-last formats need 4-d (`ChannelsLast`) or 5-d (`ChannelsLast3d`) tensors.
    fn to_memory_format(&self, format: MemoryFormat) -> Result<Self> {
        if format.dim_order(self.rank()).is_none() {
            return Err(Error::invalid("to_memory_format", format!("{format:?} does not apply to shape {:?}", self.shape())));
        }
        if self.layout().suggest_memory_format() == format {
            return Ok(self.with_layout(self.layout().clone(), Token(())));
        }
        self.materialize(format, self.dtype())
    }
    /// `torch.as_strided`: another view of this tensor's storage, checked against it.
    fn as_strided(&self, shape: &[usize], strides: &[isize], offset: usize) -> Result<Self> {
        Ok(self.with_layout(Layout::as_strided(shape, strides, offset, self.storage_len())?, Token(())))
    }

    /// Sizes of the dims.
    fn shape(&self) -> &[usize] {
        self.layout().shape()
    }
    /// Strides of the dims, in elements.
    fn strides(&self) -> &[isize] {
        self.layout().strides()
    }
    /// Storage offset, in elements.
    fn storage_offset(&self) -> usize {
        self.layout().offset()
    }
    /// Number of elements.
    fn numel(&self) -> usize {
        self.layout().numel()
    }
    /// Number of dims.
    fn rank(&self) -> usize {
        self.layout().rank()
    }
    /// `Tensor.is_contiguous()`.
    fn is_contiguous(&self) -> bool {
        self.layout().is_contiguous()
    }
    /// `Tensor.is_contiguous(memory_format=format)`.
    fn is_contiguous_for(&self, format: MemoryFormat) -> bool {
        self.layout().is_contiguous_for(format)
    }
    /// See [`Layout::permute`].
    fn permute(&self, dims: &[isize]) -> Result<Self> {
        Ok(self.with_layout(self.layout().permute(dims)?, Token(())))
    }
    /// See [`Layout::transpose`].
    fn transpose(&self, dim0: isize, dim1: isize) -> Result<Self> {
        Ok(self.with_layout(self.layout().transpose(dim0, dim1)?, Token(())))
    }
    /// See [`Layout::slice`].
    fn slice(&self, dim: isize, start: isize, end: isize, step: isize) -> Result<Self> {
        Ok(self.with_layout(self.layout().slice(dim, start, end, step)?, Token(())))
    }
    /// See [`Layout::flip`].
    fn flip(&self, dim: isize) -> Result<Self> {
        Ok(self.with_layout(self.layout().flip(dim)?, Token(())))
    }
    /// See [`Layout::narrow`].
    fn narrow(&self, dim: isize, start: isize, length: usize) -> Result<Self> {
        Ok(self.with_layout(self.layout().narrow(dim, start, length)?, Token(())))
    }
    /// See [`Layout::select`].
    fn select(&self, dim: isize, index: isize) -> Result<Self> {
        Ok(self.with_layout(self.layout().select(dim, index)?, Token(())))
    }
    /// See [`Layout::unsqueeze`].
    fn unsqueeze(&self, dim: isize) -> Result<Self> {
        Ok(self.with_layout(self.layout().unsqueeze(dim)?, Token(())))
    }
    /// See [`Layout::squeeze`].
    fn squeeze(&self, dim: isize) -> Result<Self> {
        Ok(self.with_layout(self.layout().squeeze(dim)?, Token(())))
    }
    /// See [`Layout::squeeze_all`].
    fn squeeze_all(&self) -> Self {
        self.with_layout(self.layout().squeeze_all(), Token(()))
    }
    /// See [`Layout::expand`].
    fn expand(&self, sizes: &[isize]) -> Result<Self> {
        Ok(self.with_layout(self.layout().expand(sizes)?, Token(())))
    }
    /// See [`Layout::broadcast_to`].
    fn broadcast_to(&self, shape: &[usize]) -> Result<Self> {
        Ok(self.with_layout(self.layout().broadcast_to(shape)?, Token(())))
    }
    /// See [`Layout::view`].
    fn view(&self, shape: &[isize]) -> Result<Self> {
        Ok(self.with_layout(self.layout().view(shape)?, Token(())))
    }
    /// See [`Layout::diagonal`].
    fn diagonal(&self, offset: isize, dim1: isize, dim2: isize) -> Result<Self> {
        Ok(self.with_layout(self.layout().diagonal(offset, dim1, dim2)?, Token(())))
    }
    /// See [`Layout::unfold`].
    fn unfold(&self, dim: isize, size: usize, step: usize) -> Result<Self> {
        Ok(self.with_layout(self.layout().unfold(dim, size, step)?, Token(())))
    }
}

/// A reshape's view (derived from `t`'s layout), or a contiguous copy given the new shape.
fn resolve<T: Strided>(t: &T, r: Reshape) -> Result<T> {
    match r {
        Reshape::View(l) => Ok(t.with_layout(l, Token(()))),
        Reshape::Copy(shape) => Ok(t.materialize(MemoryFormat::Contiguous, t.dtype())?.with_layout(Layout::contiguous(&shape)?, Token(()))),
    }
}
