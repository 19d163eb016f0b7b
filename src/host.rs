//! Host tensors: a layout over reference-counted storage in main memory, and the CPU
//! reference path that materializes and copies them.

use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::copy::cpu::{self, Source};
use crate::dtype::{DType, Element};
use crate::elementwise::api::Elementwise;
use crate::elementwise::cpu::{execute, Src};
use crate::copy::{check_copy, reads_from_copy};
use crate::elementwise::resolve::{input_copies, resolve, swapped, Input, Target};
use crate::elementwise::Op;
use crate::error::{Error, Result};
use crate::layout::{checked_numel, Layout, MemoryFormat};
use crate::strided::{Strided, Token};

/// Element bytes shared by every view of them.
#[derive(Debug)]
struct HostStorage {
    dtype: DType,
    len: usize,
    bytes: RwLock<Vec<u8>>,
}

/// A strided view of host memory. Cloning a tensor, and every view operation of
/// [`Strided`], shares the storage; writes through one view ([`HostTensor::copy_`]) are seen
/// through every other, as in PyTorch.
///
/// ```
/// use strided_wgpu::{HostTensor, Strided};
/// let x = HostTensor::from_vec((0..6).map(|i| i as f32).collect(), &[2, 3]).unwrap();
/// let t = x.transpose(0, 1).unwrap();
/// assert_eq!(t.strides(), &[1, 3]);
/// assert_eq!(t.to_vec::<f32>().unwrap(), vec![0., 3., 1., 4., 2., 5.]);
/// assert!(t.shares_storage(&x));
/// ```
#[derive(Clone, Debug)]
pub struct HostTensor {
    storage: Arc<HostStorage>,
    layout: Layout,
}

impl crate::strided::sealed::Sealed for HostTensor {}

impl Strided for HostTensor {
    fn layout(&self) -> &Layout {
        &self.layout
    }
    fn with_layout(&self, layout: Layout, _: Token) -> Self {
        HostTensor { storage: self.storage.clone(), layout }
    }
    fn storage_len(&self) -> usize {
        self.storage.len
    }
    fn dtype(&self) -> DType {
        self.storage.dtype
    }
    /// A copy of the view into new storage in `format`, converting to `dtype` (any of the seven
    /// types, as [`crate::dtype::cast_bits`] does).
    fn materialize(&self, format: MemoryFormat, dtype: DType) -> Result<HostTensor> {
        let out = HostTensor::zeros(self.shape(), dtype, format)?;
        out.copy_(self)?;
        Ok(out)
    }
}

impl HostTensor {
    /// A contiguous tensor of `shape` holding `data`; the lengths must agree.
    pub fn from_vec<T: Element>(data: Vec<T>, shape: &[usize]) -> Result<HostTensor> {
        Self::from_slice(&data, shape)
    }

    /// A contiguous tensor of `shape` holding a copy of `data`; the lengths must agree.
    pub fn from_slice<T: Element>(data: &[T], shape: &[usize]) -> Result<HostTensor> {
        let numel = checked_numel("from_slice", shape)?;
        if numel != data.len() {
            return Err(Error::invalid("from_slice", format!("shape {shape:?} holds {numel} elements but {} were given", data.len())));
        }
        Self::from_bytes(T::DTYPE, bytemuck::cast_slice(data).to_vec(), Layout::contiguous(shape)?)
    }

    /// A tensor over `bytes` (little-endian elements of `dtype`) seen through `layout`.
    pub fn from_bytes(dtype: DType, bytes: Vec<u8>, layout: Layout) -> Result<HostTensor> {
        if !bytes.len().is_multiple_of(dtype.size()) {
            return Err(Error::invalid("from_bytes", format!("{} bytes is not a whole number of {dtype} elements", bytes.len())));
        }
        let len = bytes.len() / dtype.size();
        layout.check_within("from_bytes", len)?;
        Ok(HostTensor { storage: Arc::new(HostStorage { dtype, len, bytes: RwLock::new(bytes) }), layout })
    }

    /// `bytes` zeroed bytes of host memory for `what` of `op`: an allocation the allocator
    /// refuses is [`Error::HostMemory`], not an abort.
    pub(crate) fn zeroed(op: &'static str, what: impl FnOnce() -> String, bytes: usize) -> Result<Vec<u8>> {
        let mut v = crate::error::reserved(op, what, bytes)?;
        v.resize(bytes, 0);
        Ok(v)
    }

    /// A zero-filled tensor of `shape`, stored in `format` (`torch.zeros(.., memory_format=..)`).
    pub fn zeros(shape: &[usize], dtype: DType, format: MemoryFormat) -> Result<HostTensor> {
        Self::zeros_for("zeros", shape, dtype, format)
    }

    /// [`HostTensor::zeros`] for `op`'s result (named in its errors).
    pub(crate) fn zeros_for(op: &'static str, shape: &[usize], dtype: DType, format: MemoryFormat) -> Result<HostTensor> {
        let layout = Layout::with_format(shape, format)?;
        let bytes = layout
            .numel()
            .checked_mul(dtype.size())
            .ok_or_else(|| Error::overflow(op, format!("the byte size of {shape:?} in {dtype}")))?;
        Self::from_bytes(dtype, Self::zeroed(op, || format!("a tensor of shape {shape:?} in {dtype}"), bytes)?, layout)
    }

    /// Whether two tensors are views of one storage.
    pub fn shares_storage(&self, other: &HostTensor) -> bool {
        Arc::ptr_eq(&self.storage, &other.storage)
    }

    /// The elements in logical row-major order.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        if T::DTYPE != self.dtype() {
            return Err(Error::DType { op: "to_vec", got: T::DTYPE.to_string(), expected: self.dtype().to_string() });
        }
        if self.numel() == 0 {
            // An empty view may carry an offset past the storage's end (PyTorch keeps it).
            return Ok(Vec::new());
        }
        // The contiguous copy first: a view too large for host memory (an expanded one, say)
        // is an error there, not an abort here.
        let out = self.contiguous(MemoryFormat::Contiguous)?;
        let n = out.numel();
        let mut v = crate::error::reserved("to_vec", || format!("the elements of a view of shape {:?}", self.shape()), n)?;
        v.resize(n, T::zeroed());
        let bytes = out.read();
        let start = out.layout.offset() * T::DTYPE.size();
        bytemuck::cast_slice_mut::<T, u8>(&mut v).copy_from_slice(&bytes[start..start + n * T::DTYPE.size()]);
        Ok(v)
    }

    /// `Tensor.copy_(src)`: writes `src`, broadcast to this view's shape, into this view.
    /// Elements convert to this view's type, whatever the two types ([`crate::dtype::cast_bits`]:
    /// PyTorch's `x.to(dtype)`: float to u8, i8 and u32 wrapping through int64 as PyTorch's
    /// CPU, float to i32 saturating where PyTorch leaves the result to its hardware). A destination that reaches an element
    /// twice, or that partially overlaps `src`, is an error, but for a `src` that walks some
    /// axis of the storage the other way (a `flip` or negative-step slice of the destination,
    /// which PyTorch would hold as a copy): that one is read from a copy first. Copying a view
    /// onto itself does nothing. On error the destination is untouched.
    pub fn copy_(&self, src: &HostTensor) -> Result<()> {
        if reads_from_copy(&self.layout, self.dtype(), &src.layout, src.dtype(), self.shares_storage(src)) {
            return self.copy_(&src.materialize(MemoryFormat::Contiguous, src.dtype())?);
        }
        let plan = check_copy(&self.layout, self.dtype(), &src.layout, src.dtype(), self.shares_storage(src))?;
        let Some(plan) = plan else { return Ok(()) };
        if self.shares_storage(src) {
            let mut bytes = self.write();
            cpu::execute(&plan, &mut bytes, self.dtype(), Source::Same, src.dtype());
            return Ok(());
        }
        // Two storages are locked in one global order (by address), whatever the argument
        // order, so that `a.copy_(&b)` and `b.copy_(&a)` on two threads cannot deadlock.
        let (mut bytes, src_bytes);
        if Arc::as_ptr(&self.storage) < Arc::as_ptr(&src.storage) {
            bytes = self.write();
            src_bytes = src.read();
        } else {
            src_bytes = src.read();
            bytes = self.write();
        }
        cpu::execute(&plan, &mut bytes, self.dtype(), Source::Other(&src_bytes), src.dtype());
        Ok(())
    }

    /// Calls `f` with the bytes of a contiguous view (empty when the view is).
    pub(crate) fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        let bytes = self.read();
        if self.numel() == 0 {
            // An empty view's offset may be any up to isize::MAX elements: its bytes would not be.
            return f(&[]);
        }
        let start = self.layout.offset() * self.dtype().size();
        let end = start + self.numel() * self.dtype().size();
        f(bytes.get(start..end).unwrap_or(&[]))
    }

    fn read(&self) -> RwLockReadGuard<'_, Vec<u8>> {
        // A poisoned lock only means another thread panicked mid-copy; the bytes are still
        // valid elements.
        self.storage.bytes.read().unwrap_or_else(|e| e.into_inner())
    }
    fn write(&self) -> RwLockWriteGuard<'_, Vec<u8>> {
        self.storage.bytes.write().unwrap_or_else(|e| e.into_inner())
    }
}

impl Elementwise for HostTensor {
    /// Runs the op on the CPU (the reference of the device kernels).
    fn run(op: Op, inputs: &[Input<'_, HostTensor>], target: Target<'_, HostTensor>) -> Result<HostTensor> {
        // Flipped inputs overlapping the destination read from copies (`read_from_copies`).
        let copies = input_copies(op, inputs, target, HostTensor::shares_storage, |t| t.materialize(MemoryFormat::Contiguous, t.dtype()))?;
        let with_copies = swapped(inputs, &copies);
        let inputs = &with_copies[..];
        let (r, tensors) = resolve(op, inputs, target, HostTensor::shares_storage)?;
        let out = match target {
            Target::New => {
                let len = r.out_layout.span().map_or(0, |(_, hi)| hi + 1);
                let bytes = len.checked_mul(r.out_dtype.size()).ok_or_else(|| Error::overflow(op.name(), format!("the byte size of a result of shape {:?}", r.out_layout.shape())))?;
                HostTensor::from_bytes(r.out_dtype, HostTensor::zeroed(op.name(), || format!("a result of shape {:?}", r.out_layout.shape()), bytes)?, r.out_layout.clone())?
            }
            Target::InPlace => tensors[0].clone(),
            Target::Out(t) => t.clone(),
        };
        // Lock each storage once, in one global order (by address): the destination's for
        // writing, every other for reading.
        let mut others: Vec<&HostTensor> = tensors.iter().copied().filter(|t| !t.shares_storage(&out)).collect();
        others.sort_by_key(|t| Arc::as_ptr(&t.storage));
        others.dedup_by(|a, b| a.shares_storage(b));
        let out_ptr = Arc::as_ptr(&out.storage);
        let (mut guards, mut dst) = (Vec::with_capacity(others.len()), None);
        for t in &others {
            if dst.is_none() && out_ptr < Arc::as_ptr(&t.storage) {
                dst = Some(out.write());
            }
            guards.push((Arc::as_ptr(&t.storage), t.read()));
        }
        let mut dst = dst.unwrap_or_else(|| out.write());
        let srcs: Vec<Src<'_>> = tensors
            .iter()
            .map(|t| match guards.iter().find(|(p, _)| *p == Arc::as_ptr(&t.storage)) {
                Some((_, g)) => Src::Bytes(g.as_slice()),
                None => Src::Dest,
            })
            .collect();
        execute(&r, &mut dst, &srcs);
        drop(dst);
        Ok(out)
    }
}
