//! Device tensors: a layout over a GPU buffer shared by views, with upload and download
//! (`copy_` is in `gpu/copy.rs`) and the materializing operations of [`Strided`] on the device.

use std::sync::Arc;

use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::gpu::context::GpuContext;
use crate::host::HostTensor;
use crate::layout::{checked_numel, Layout, MemoryFormat};
use crate::runtime::pool::Pooled;
use crate::runtime::submit::MapGuard;
use crate::runtime::record::Keep;
use crate::runtime::submit::{submit_and_map, Drive};
use crate::strided::{Strided, Token};

/// Where a tensor's elements live.
enum Backing {
    /// A buffer of the crate's pool; it returns there when the last view and the last
    /// recording using it are gone.
    Pooled(Pooled),
    /// A buffer the caller owns ([`DeviceTensor::from_buffer`]); never pooled.
    Foreign(wgpu::Buffer),
}

struct DeviceStorage {
    ctx: GpuContext,
    /// Shared with the recordings that use it, which hold only this (not the context: a
    /// recording's callbacks live in the device's queue, which the context owns).
    buffer: Arc<Backing>,
    dtype: DType,
    len: usize,
}

/// A strided view of a GPU buffer. Cloning and every view operation of [`Strided`] share the
/// buffer; writes through one view are seen through every other.
#[derive(Clone)]
pub struct DeviceTensor {
    storage: Arc<DeviceStorage>,
    layout: Layout,
}

impl std::fmt::Debug for DeviceTensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceTensor").field("dtype", &self.storage.dtype).field("layout", &self.layout).finish()
    }
}

impl crate::strided::sealed::Sealed for DeviceTensor {}

impl Strided for DeviceTensor {
    fn layout(&self) -> &Layout {
        &self.layout
    }
    fn with_layout(&self, layout: Layout, _: Token) -> Self {
        DeviceTensor { storage: self.storage.clone(), layout }
    }
    fn storage_len(&self) -> usize {
        self.storage.len
    }
    fn dtype(&self) -> DType {
        self.storage.dtype
    }
    /// A device copy of the view into a new buffer in `format`, converting to `dtype` (any of
    /// the seven types, as [`crate::dtype::cast_bits`] does).
    fn materialize(&self, format: MemoryFormat, dtype: DType) -> Result<DeviceTensor> {
        let out = DeviceTensor::empty_for("materialize", self.context(), self.shape(), dtype, format)?;
        out.copy_(self)?;
        Ok(out)
    }
}

impl DeviceTensor {
    /// An uninitialized tensor of `shape` stored in `format` (its buffer may be recycled).
    pub fn empty(ctx: &GpuContext, shape: &[usize], dtype: DType, format: MemoryFormat) -> Result<DeviceTensor> {
        Self::empty_for("empty", ctx, shape, dtype, format)
    }

    /// [`DeviceTensor::empty`], its errors naming `op`.
    pub(crate) fn empty_for(op: &'static str, ctx: &GpuContext, shape: &[usize], dtype: DType, format: MemoryFormat) -> Result<DeviceTensor> {
        let layout = Layout::with_format(shape, format)?;
        let len = layout.span().map_or(0, |(_, hi)| hi + 1);
        Self::alloc(op, ctx, dtype, len, layout)
    }

    /// A zero-filled tensor of `shape` stored in `format`.
    pub fn zeros(ctx: &GpuContext, shape: &[usize], dtype: DType, format: MemoryFormat) -> Result<DeviceTensor> {
        let t = Self::empty_for("zeros", ctx, shape, dtype, format)?;
        let mut batch = ctx.batch();
        let rec = batch.parts("zeros")?;
        rec.clear_buffer(t.buffer(), 0, None);
        rec.hold_shared(t.storage());
        batch.submit_eager("zeros")?;
        Ok(t)
    }

    pub(crate) fn alloc(op: &'static str, ctx: &GpuContext, dtype: DType, len: usize, layout: Layout) -> Result<DeviceTensor> {
        ctx.rt.probe(op)?;
        ctx.rt.reclaim();
        Self::alloc_unchecked(op, ctx, dtype, len, layout)
    }

    /// [`DeviceTensor::alloc`] for a batch's new output: the batch's submit probes the device,
    /// and the batch reclaimed finished work's buffers when it started. Errors name `op`.
    pub(crate) fn alloc_unchecked(op: &'static str, ctx: &GpuContext, dtype: DType, len: usize, layout: Layout) -> Result<DeviceTensor> {
        let bytes = len
            .checked_mul(dtype.size())
            .and_then(|b| b.checked_next_multiple_of(4))
            .ok_or_else(|| Error::overflow(op, format!("the byte size of {len} {dtype} elements")))? as u64;
        let max = ctx.adapter().max_buffer_size;
        if bytes > max {
            return Err(Error::Limit { op, what: format!("a buffer of {len} {dtype} elements"), limit: "max_buffer_size", requested: bytes, max });
        }
        let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
        let buffer = ctx.rt.scoped(op, || ctx.rt.buffer(op, bytes, usage))?;
        Ok(DeviceTensor { storage: Arc::new(DeviceStorage { ctx: ctx.clone(), buffer: Arc::new(Backing::Pooled(buffer)), dtype, len }), layout })
    }

    /// Wraps a buffer the caller owns, without copying, as a tensor of `dtype` seen through
    /// `layout`. The buffer needs `STORAGE` usage (`COPY_SRC` and `COPY_DST` let the crate use
    /// buffer copies too; a reduction, product or convolution whose operand shares its output's
    /// buffer reads a buffer copy of it, which needs `COPY_SRC`, as a download does), a size that is a multiple of 4 bytes, and must hold every element the
    /// layout reaches; it must belong to `ctx`'s device. It is never returned to the crate's
    /// pool: dropping the tensor drops only this handle. The crate's cache of bind groups
    /// (up to 1024 groups, emptied by [`GpuContext::trim_pool`]) may hold the buffer after the
    /// tensor is dropped; `buffer.destroy()` frees its memory at once. The buffer must not be
    /// mapped while the crate uses it (wgpu 30 shows no buffer's map state: every call on a
    /// mapped one fails at its submit with a `Gpu` error, and under `SubmitPolicy::Deferred`
    /// the calls held with it fail too).
    ///
    /// A buffer of another device of the same `wgpu::Instance`, or a destroyed one, is refused
    /// ([`Error::Device`]): wgpu validates that a bind group's buffers are its device's, and a
    /// trial bind group inside the crate's error scopes catches it. A buffer of another
    /// *instance* (each [`GpuContext::new`] opens an instance of its own) cannot be detected:
    /// wgpu 30 exposes no buffer's device or instance, and resolves the buffer's id in this
    /// device's instance, where it names nothing (wgpu-core panics, "Cannot get non-existent
    /// resource", here) or another buffer. Wrap only buffers made with `ctx.device()`.
    ///
    /// One of this context's own buffers (a tensor's storage, `t.buffer().clone()`, or an idle
    /// one of its pool) is refused ([`Error::InvalidArgument`]): the pool recycles it when the
    /// tensor is dropped, under the alias. A second context on the same device (`from_device`
    /// twice) keeps a pool of its own, which this check does not see: do not wrap its tensors'
    /// buffers either.
    pub fn from_buffer(ctx: &GpuContext, buffer: wgpu::Buffer, dtype: DType, layout: Layout) -> Result<DeviceTensor> {
        const OP: &str = "from_buffer";
        ctx.rt.probe(OP)?;
        if !buffer.usage().contains(wgpu::BufferUsages::STORAGE) {
            return Err(Error::invalid(OP, format!("the buffer's usage {:?} lacks STORAGE", buffer.usage())));
        }
        if !buffer.size().is_multiple_of(4) {
            return Err(Error::invalid(OP, format!("the buffer's size {} is not a multiple of 4 bytes", buffer.size())));
        }
        let len = usize::try_from(buffer.size() / dtype.size() as u64).map_err(|_| Error::overflow(OP, format!("the element count of a buffer of {} bytes", buffer.size())))?;
        layout.check_within(OP, len)?;
        if crate::runtime::lock::lock(&ctx.rt.pool).owns(&buffer) {
            return Err(Error::invalid(OP, "the buffer is the storage of one of this context's tensors (its pool recycles it when the tensor is dropped): wrap buffers made with `ctx.device()`"));
        }
        ctx.rt.check_own_buffer(OP, &buffer)?;
        Ok(DeviceTensor { storage: Arc::new(DeviceStorage { ctx: ctx.clone(), buffer: Arc::new(Backing::Foreign(buffer)), dtype, len }), layout })
    }

    /// Uploads `data` as a contiguous tensor of `shape`.
    pub fn from_slice<T: Element>(ctx: &GpuContext, data: &[T], shape: &[usize]) -> Result<DeviceTensor> {
        let numel = checked_numel("from_slice", shape)?;
        if numel != data.len() {
            return Err(Error::invalid("from_slice", format!("shape {shape:?} holds {numel} elements but {} were given", data.len())));
        }
        let t = Self::alloc("from_slice", ctx, T::DTYPE, numel, Layout::contiguous(shape)?)?;
        t.write_bytes(bytemuck::cast_slice(data))?;
        Ok(t)
    }

    /// Uploads a host tensor's elements (in logical order) as a contiguous device tensor.
    pub fn upload(ctx: &GpuContext, host: &HostTensor) -> Result<DeviceTensor> {
        let dense = host.contiguous(MemoryFormat::Contiguous)?;
        let t = Self::alloc("upload", ctx, host.dtype(), host.numel(), Layout::contiguous(host.shape())?)?;
        dense.with_bytes(|b| t.write_bytes(b))?;
        Ok(t)
    }

    fn write_bytes(&self, bytes: &[u8]) -> Result<()> {
        let rt = &self.storage.ctx.rt;
        rt.host_written(self.buffer());
        rt.scoped("upload", || {
            let whole = bytes.len() / 4 * 4;
            if whole > 0 {
                rt.queue.write_buffer(self.buffer(), 0, &bytes[..whole]);
            }
            if whole < bytes.len() {
                let mut tail = [0u8; 4];
                tail[..bytes.len() - whole].copy_from_slice(&bytes[whole..]);
                rt.queue.write_buffer(self.buffer(), whole as u64, &tail);
            }
            Ok(())
        })
    }

    /// The context this tensor lives on.
    pub fn context(&self) -> &GpuContext {
        &self.storage.ctx
    }
    /// Whether two tensors are views of one buffer (also when they wrap one caller's buffer
    /// through two [`DeviceTensor::from_buffer`] calls on one context). Tensors of two
    /// contexts never share storage here (they do not mix: `Error::Device`): wgpu compares
    /// buffers by an id that two instances number alike, so a buffer of a Vulkan context and
    /// one of a GL context compared equal now and then (`linear_out` with a bias of another
    /// context reported an overlap, not the other device).
    pub fn shares_storage(&self, other: &DeviceTensor) -> bool {
        Arc::ptr_eq(&self.storage, &other.storage) || (self.context().same_device(other.context()) && self.buffer() == other.buffer())
    }
    /// The wgpu buffer behind the view. A tensor's own buffer (not one from
    /// [`DeviceTensor::from_buffer`]) returns to the context's pool when its last tensor is
    /// dropped and backs a later tensor: a clone of it must not outlive the tensor (a write
    /// through it lands in that later tensor), and must not be destroyed (the pool would hand
    /// out a destroyed buffer, each op on it a `Gpu` error until [`GpuContext::trim_pool`]).
    pub fn buffer(&self) -> &wgpu::Buffer {
        match &*self.storage.buffer {
            Backing::Pooled(p) => p.buffer(),
            Backing::Foreign(b) => b,
        }
    }
    /// The caller's buffer behind a storage that a recording holds (`storage`), if it is one
    /// ([`DeviceTensor::from_buffer`]): the crate cannot see the caller's writes to it.
    pub(crate) fn foreign_buffer(held: &(dyn std::any::Any + Send + Sync)) -> Option<&wgpu::Buffer> {
        match held.downcast_ref::<Backing>()? {
            Backing::Foreign(b) => Some(b),
            Backing::Pooled(_) => None,
        }
    }

    /// The buffer, for recordings to hold until their work is done.
    pub(crate) fn storage(&self) -> Arc<impl Send + Sync + 'static> {
        self.storage.buffer.clone()
    }

    /// Downloads the view's elements, in logical order, into a new contiguous host tensor.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn download(&self) -> Result<HostTensor> {
        pollster::block_on(self.download_with(Drive::Wait))
    }

    /// [`DeviceTensor::download`] as a future that never blocks the thread. Like every Rust
    /// future it does nothing until first polled: the copy is recorded then, and reads the
    /// tensor as it is at that point in the context's work (after a graph replay submitted
    /// between the call and the first poll, say); poll it (or `join` it) before submitting
    /// work that overwrites the tensor.
    pub async fn download_async(&self) -> Result<HostTensor> {
        self.download_with(Drive::Poll).await
    }

    async fn download_with(&self, drive: Drive) -> Result<HostTensor> {
        let n = self.numel().checked_mul(self.dtype().size()).ok_or_else(|| Error::overflow("download", format!("the byte size of a view of shape {:?}", self.shape())))?;
        // Before the host's memory is taken (the staging's exact size: `download_bytes`).
        let max = self.context().adapter().max_buffer_size;
        if n as u64 > max {
            return Err(Error::Limit { op: "download", what: format!("staging a view of shape {:?} ({} {})", self.shape(), self.numel(), self.dtype()), limit: "max_buffer_size", requested: n as u64, max });
        }
        let mut bytes = HostTensor::zeroed("download", || format!("a view of shape {:?}", self.shape()), n)?;
        self.download_bytes(&mut bytes, drive).await?;
        HostTensor::from_bytes(self.dtype(), bytes, Layout::contiguous(self.shape())?)
    }

    /// Downloads the view's elements, in logical order, into `out` (no allocation beyond a
    /// recycled staging buffer). `out.len()` must equal the element count.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn download_into<T: Element>(&self, out: &mut [T]) -> Result<()> {
        pollster::block_on(self.download_into_with(out, Drive::Wait))
    }

    /// [`DeviceTensor::download_into`] as a future that never blocks the thread.
    pub async fn download_into_async<T: Element>(&self, out: &mut [T]) -> Result<()> {
        self.download_into_with(out, Drive::Poll).await
    }

    async fn download_into_with<T: Element>(&self, out: &mut [T], drive: Drive) -> Result<()> {
        if T::DTYPE != self.dtype() {
            return Err(Error::DType { op: "download_into", got: T::DTYPE.to_string(), expected: self.dtype().to_string() });
        }
        if out.len() != self.numel() {
            return Err(Error::invalid("download_into", format!("the view has {} elements (shape {:?}) but the slice holds {}", self.numel(), self.shape(), out.len())));
        }
        self.download_bytes(bytemuck::cast_slice_mut(out), drive).await
    }

    async fn download_bytes(&self, out: &mut [u8], drive: Drive) -> Result<()> {
        const OP: &str = "download";
        let ctx = self.context();
        let rt = &ctx.rt;
        rt.probe(OP)?;
        // First: a view that is not dense is copied through a batch into the caller's encoder,
        // which a capture refuses under another name.
        rt.check_not_capturing(OP)?;
        if out.is_empty() {
            return Ok(());
        }
        // One recording: the view made dense (when it is not, or its buffer cannot be copied
        // from), then copied to a staging buffer that is mapped once the work is done.
        let in_place = self.is_contiguous() && self.buffer().usage().contains(wgpu::BufferUsages::COPY_SRC);
        // The staging buffer: the view's bytes widened to whole words.
        let es = self.dtype().size() as u64;
        let start = if in_place { self.layout.offset() as u64 * es } else { 0 };
        let (lo, hi) = (start / 4 * 4, (start + out.len() as u64).div_ceil(4) * 4);
        let max = rt.report.max_buffer_size;
        if hi - lo > max {
            return Err(Error::Limit { op: OP, what: format!("staging a view of shape {:?} ({} {}, {} bytes in whole words)", self.shape(), self.numel(), self.dtype(), hi - lo), limit: "max_buffer_size", requested: hi - lo, max });
        }
        let mut enc = rt.scoped(OP, || Ok(rt.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("download") })))?;
        let dense = if in_place {
            self.clone()
        } else {
            let d = DeviceTensor::empty_for(OP, ctx, self.shape(), self.dtype(), MemoryFormat::Contiguous)?;
            let mut b = ctx.record_into(&mut enc);
            b.copy_(&d, self)?;
            b.end()?;
            d
        };
        debug_assert_eq!(start, dense.layout.offset() as u64 * es);
        // The guard unmaps the staging buffer however this future ends (finished, failed or
        // dropped), and the recording holds it until its work is done: it returns to the pool
        // unmapped and unused.
        let staging = rt.scoped(OP, || {
            let staging = MapGuard::new(rt, rt.buffer(OP, hi - lo, wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST)?);
            enc.copy_buffer_to_buffer(dense.buffer(), lo, staging.buffer(), 0, hi - lo);
            Ok(staging)
        })?;
        let mut keep = Keep::default();
        keep.hold_shared(dense.storage());
        keep.hold(staging.held());
        submit_and_map(rt, OP, enc, keep, &staging, 0..hi - lo, drive).await?;
        let view = staging.buffer().slice(0..hi - lo).get_mapped_range().map_err(|e| Error::Gpu { op: OP, message: e.to_string() })?;
        let skip = (start - lo) as usize;
        out.copy_from_slice(&view[skip..skip + out.len()]);
        Ok(())
    }
}
