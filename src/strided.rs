//! The view operations every tensor type shares: each one is a [`Layout`] operation whose
//! result shares the tensor's storage.

use crate::error::Result;
use crate::layout::{Layout, MemoryFormat};

/// A tensor made of a layout over shared storage. Implemented by
/// [`HostTensor`](crate::HostTensor) and [`DeviceTensor`](crate::DeviceTensor); every view
/// operation is zero-copy.
pub trait Strided: Sized {
    /// The view's layout.
    fn layout(&self) -> &Layout;
    /// The same storage seen through another layout. The caller guarantees the layout lies
    /// within the storage; every method below derives it from `self.layout()`.
    #[doc(hidden)]
    fn with_layout(&self, layout: Layout) -> Self;

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
        Ok(self.with_layout(self.layout().permute(dims)?))
    }
    /// See [`Layout::transpose`].
    fn transpose(&self, dim0: isize, dim1: isize) -> Result<Self> {
        Ok(self.with_layout(self.layout().transpose(dim0, dim1)?))
    }
    /// See [`Layout::slice`].
    fn slice(&self, dim: isize, start: isize, end: isize, step: isize) -> Result<Self> {
        Ok(self.with_layout(self.layout().slice(dim, start, end, step)?))
    }
    /// See [`Layout::flip`].
    fn flip(&self, dim: isize) -> Result<Self> {
        Ok(self.with_layout(self.layout().flip(dim)?))
    }
    /// See [`Layout::narrow`].
    fn narrow(&self, dim: isize, start: isize, length: usize) -> Result<Self> {
        Ok(self.with_layout(self.layout().narrow(dim, start, length)?))
    }
    /// See [`Layout::select`].
    fn select(&self, dim: isize, index: isize) -> Result<Self> {
        Ok(self.with_layout(self.layout().select(dim, index)?))
    }
    /// See [`Layout::unsqueeze`].
    fn unsqueeze(&self, dim: isize) -> Result<Self> {
        Ok(self.with_layout(self.layout().unsqueeze(dim)?))
    }
    /// See [`Layout::squeeze`].
    fn squeeze(&self, dim: isize) -> Result<Self> {
        Ok(self.with_layout(self.layout().squeeze(dim)?))
    }
    /// See [`Layout::squeeze_all`].
    fn squeeze_all(&self) -> Self {
        self.with_layout(self.layout().squeeze_all())
    }
    /// See [`Layout::expand`].
    fn expand(&self, sizes: &[isize]) -> Result<Self> {
        Ok(self.with_layout(self.layout().expand(sizes)?))
    }
    /// See [`Layout::broadcast_to`].
    fn broadcast_to(&self, shape: &[usize]) -> Result<Self> {
        Ok(self.with_layout(self.layout().broadcast_to(shape)?))
    }
    /// See [`Layout::view`].
    fn view(&self, shape: &[isize]) -> Result<Self> {
        Ok(self.with_layout(self.layout().view(shape)?))
    }
    /// See [`Layout::diagonal`].
    fn diagonal(&self, offset: isize, dim1: isize, dim2: isize) -> Result<Self> {
        Ok(self.with_layout(self.layout().diagonal(offset, dim1, dim2)?))
    }
    /// See [`Layout::unfold`].
    fn unfold(&self, dim: isize, size: usize, step: usize) -> Result<Self> {
        Ok(self.with_layout(self.layout().unfold(dim, size, step)?))
    }
}
