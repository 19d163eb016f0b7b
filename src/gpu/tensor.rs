//! Device tensors: a layout over a GPU buffer shared by views, with upload, download,
//! `copy_` and `contiguous` on the device.

use std::sync::Arc;

use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::gpu::context::GpuContext;
use crate::gpu::copy::{CopyPath, Operand, Recording};
use crate::gpu::pool::Pooled;
use crate::host::{check_copy, HostTensor};
use crate::layout::{checked_numel, Layout, MemoryFormat, Reshape};
use crate::strided::Strided;

struct DeviceStorage {
    ctx: GpuContext,
    buffer: Pooled,
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

impl Strided for DeviceTensor {
    fn layout(&self) -> &Layout {
        &self.layout
    }
    fn with_layout(&self, layout: Layout) -> Self {
        DeviceTensor { storage: self.storage.clone(), layout }
    }
}

impl DeviceTensor {
    /// An uninitialized tensor of `shape` stored in `format` (its buffer may be recycled).
    pub fn empty(ctx: &GpuContext, shape: &[usize], dtype: DType, format: MemoryFormat) -> Result<DeviceTensor> {
        let layout = Layout::with_format(shape, format)?;
        let len = layout.span().map_or(0, |(_, hi)| hi + 1);
        Self::alloc(ctx, dtype, len, layout)
    }

    /// A zero-filled tensor of `shape` stored in `format`.
    pub fn zeros(ctx: &GpuContext, shape: &[usize], dtype: DType, format: MemoryFormat) -> Result<DeviceTensor> {
        let t = Self::empty(ctx, shape, dtype, format)?;
        ctx.scoped("zeros", || {
            let mut enc = ctx.device().create_command_encoder(&Default::default());
            enc.clear_buffer(t.buffer(), 0, None);
            ctx.queue().submit([enc.finish()]);
            Ok(())
        })?;
        Ok(t)
    }

    /// A contiguous f32 scratch tensor of `len` elements whose buffer also has `usage`.
    pub(crate) fn scratch(ctx: &GpuContext, len: usize, usage: wgpu::BufferUsages) -> Result<DeviceTensor> {
        Self::alloc_with(ctx, DType::F32, len, Layout::contiguous(&[len])?, usage)
    }

    fn alloc(ctx: &GpuContext, dtype: DType, len: usize, layout: Layout) -> Result<DeviceTensor> {
        Self::alloc_with(ctx, dtype, len, layout, wgpu::BufferUsages::empty())
    }

    fn alloc_with(ctx: &GpuContext, dtype: DType, len: usize, layout: Layout, extra: wgpu::BufferUsages) -> Result<DeviceTensor> {
        let bytes = len
            .checked_mul(dtype.size())
            .and_then(|b| b.checked_next_multiple_of(4))
            .ok_or_else(|| Error::overflow("alloc", format!("the byte size of {len} {dtype} elements")))? as u64;
        let max = ctx.adapter().max_buffer_size;
        if bytes > max {
            return Err(Error::Limit { op: "alloc", what: format!("a buffer of {len} {dtype} elements"), limit: "max_buffer_size", requested: bytes, max });
        }
        let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST | extra;
        let buffer = ctx.scoped("alloc", || Ok(Pooled::get(ctx.device(), &ctx.inner.pool, bytes, usage)))?;
        Ok(DeviceTensor { storage: Arc::new(DeviceStorage { ctx: ctx.clone(), buffer, dtype, len }), layout })
    }

    /// Uploads `data` as a contiguous tensor of `shape`.
    pub fn from_slice<T: Element>(ctx: &GpuContext, data: &[T], shape: &[usize]) -> Result<DeviceTensor> {
        let numel = checked_numel("from_slice", shape)?;
        if numel != data.len() {
            return Err(Error::invalid("from_slice", format!("shape {shape:?} holds {numel} elements but {} were given", data.len())));
        }
        let t = Self::alloc(ctx, T::DTYPE, numel, Layout::contiguous(shape)?)?;
        t.write_bytes(bytemuck::cast_slice(data))?;
        Ok(t)
    }

    /// Uploads a host tensor's elements (in logical order) as a contiguous device tensor.
    pub fn upload(ctx: &GpuContext, host: &HostTensor) -> Result<DeviceTensor> {
        let dense = host.contiguous(MemoryFormat::Contiguous)?;
        let t = Self::alloc(ctx, host.dtype(), host.numel(), Layout::contiguous(host.shape())?)?;
        dense.with_bytes(|b| t.write_bytes(b))?;
        Ok(t)
    }

    fn write_bytes(&self, bytes: &[u8]) -> Result<()> {
        let ctx = &self.storage.ctx;
        ctx.scoped("upload", || {
            let whole = bytes.len() / 4 * 4;
            if whole > 0 {
                ctx.queue().write_buffer(self.buffer(), 0, &bytes[..whole]);
            }
            if whole < bytes.len() {
                let mut tail = [0u8; 4];
                tail[..bytes.len() - whole].copy_from_slice(&bytes[whole..]);
                ctx.queue().write_buffer(self.buffer(), whole as u64, &tail);
            }
            Ok(())
        })
    }

    /// The context this tensor lives on.
    pub fn context(&self) -> &GpuContext {
        &self.storage.ctx
    }
    /// The element type.
    pub fn dtype(&self) -> DType {
        self.storage.dtype
    }
    /// The number of elements in the buffer (not in the view).
    pub fn storage_len(&self) -> usize {
        self.storage.len
    }
    /// Whether two tensors are views of one buffer.
    pub fn shares_storage(&self, other: &DeviceTensor) -> bool {
        Arc::ptr_eq(&self.storage, &other.storage)
    }
    /// The wgpu buffer behind the view.
    pub fn buffer(&self) -> &wgpu::Buffer {
        self.storage.buffer.buffer()
    }

    /// `torch.as_strided`: another view of this tensor's buffer, checked against it.
    pub fn as_strided(&self, shape: &[usize], strides: &[isize], offset: usize) -> Result<DeviceTensor> {
        Ok(self.with_layout(Layout::as_strided(shape, strides, offset, self.storage.len)?))
    }

    /// `Tensor.copy_(src)` on the device: `src` broadcast to this view's shape, float types
    /// converted. The same checks as [`HostTensor::copy_`]; on error nothing is dispatched.
    pub fn copy_(&self, src: &DeviceTensor) -> Result<()> {
        self.copy_with(src, CopyPath::Auto)
    }

    /// [`DeviceTensor::copy_`] through a forced kernel path (for tests and benchmarks).
    pub fn copy_with(&self, src: &DeviceTensor, path: CopyPath) -> Result<()> {
        let ctx = self.context();
        let mut batch = ctx.batch();
        batch.copy_with(self, src, path)?;
        batch.submit()
    }

    /// `Tensor.contiguous(memory_format=format)`: the same view when it already satisfies the
    /// format, else a device copy into a new buffer in that format.
    pub fn contiguous(&self, format: MemoryFormat) -> Result<DeviceTensor> {
        if self.layout.is_contiguous_for(format) {
            return Ok(self.clone());
        }
        self.materialize(format, self.dtype())
    }

    /// A device copy of the view into a new buffer in `format`, converting to `dtype` (float
    /// types only).
    pub fn materialize(&self, format: MemoryFormat, dtype: DType) -> Result<DeviceTensor> {
        let out = DeviceTensor::empty(self.context(), self.shape(), dtype, format)?;
        out.copy_(self)?;
        Ok(out)
    }

    /// `Tensor.reshape`: a view when the strides allow one, else a device copy.
    pub fn reshape(&self, shape: &[isize]) -> Result<DeviceTensor> {
        self.resolve(self.layout.reshape(shape)?)
    }

    /// `x.to(memory_format=format)`: the logical shape stays (NCHW stays NCHW), only the
    /// strides and the storage order change. Returns this same view when it already is in
    /// `format`, else a copy (a batched transpose) into new storage.
    ///
    /// Channels-last formats need 4-d (`ChannelsLast`) or 5-d (`ChannelsLast3d`) tensors.
    pub fn to_memory_format(&self, format: MemoryFormat) -> Result<DeviceTensor> {
        if format.dim_order(self.rank()).is_none() {
            return Err(Error::invalid("to_memory_format", format!("{format:?} does not apply to shape {:?}", self.shape())));
        }
        self.contiguous(format)
    }

    /// `torch.flatten(start_dim, end_dim)`: a view when possible, else a device copy.
    pub fn flatten(&self, start_dim: isize, end_dim: isize) -> Result<DeviceTensor> {
        self.resolve(self.layout.flatten(start_dim, end_dim)?)
    }

    fn resolve(&self, r: Reshape) -> Result<DeviceTensor> {
        match r {
            Reshape::View(l) => Ok(self.with_layout(l)),
            Reshape::Copy(shape) => Ok(self.materialize(MemoryFormat::Contiguous, self.dtype())?.with_layout(Layout::contiguous(&shape)?)),
        }
    }

    /// Downloads the view's elements, in logical order, into a new contiguous host tensor.
    pub fn download(&self) -> Result<HostTensor> {
        let mut bytes = vec![0u8; self.numel() * self.dtype().size()];
        self.download_bytes(&mut bytes)?;
        HostTensor::from_bytes(self.dtype(), bytes, Layout::contiguous(self.shape())?)
    }

    /// Downloads the view's elements, in logical order, into `out` (no allocation beyond a
    /// recycled staging buffer). `out.len()` must equal the element count.
    pub fn download_into<T: Element>(&self, out: &mut [T]) -> Result<()> {
        if T::DTYPE != self.dtype() {
            return Err(Error::DType { op: "download_into", got: T::DTYPE.to_string(), expected: self.dtype().to_string() });
        }
        if out.len() != self.numel() {
            return Err(Error::invalid("download_into", format!("the view has {} elements (shape {:?}) but the slice holds {}", self.numel(), self.shape(), out.len())));
        }
        self.download_bytes(bytemuck::cast_slice_mut(out))
    }

    fn download_bytes(&self, out: &mut [u8]) -> Result<()> {
        if out.is_empty() {
            return Ok(());
        }
        let dense = self.contiguous(MemoryFormat::Contiguous)?;
        let ctx = self.context();
        let es = self.dtype().size() as u64;
        let start = dense.layout.offset() as u64 * es;
        let (lo, hi) = (start / 4 * 4, (start + out.len() as u64).div_ceil(4) * 4);
        let staging = ctx.scoped("download", || {
            let staging = Pooled::get(ctx.device(), &ctx.inner.pool, hi - lo, wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST);
            let mut enc = ctx.device().create_command_encoder(&Default::default());
            enc.copy_buffer_to_buffer(dense.buffer(), lo, staging.buffer(), 0, hi - lo);
            let idx = ctx.queue().submit([enc.finish()]);
            let slice = staging.buffer().slice(0..hi - lo);
            let (tx, rx) = futures_intrusive::channel::shared::oneshot_channel();
            slice.map_async(wgpu::MapMode::Read, move |r| {
                let _ = tx.send(r);
            });
            ctx.wait("download", idx)?;
            match pollster::block_on(rx.receive()) {
                Some(Ok(())) => Ok(staging),
                Some(Err(e)) => Err(Error::Gpu { op: "download", message: e.to_string() }),
                None => Err(Error::Gpu { op: "download", message: "the map callback was dropped".into() }),
            }
        })?;
        {
            let view = staging.buffer().slice(0..hi - lo).get_mapped_range().map_err(|e| Error::Gpu { op: "download", message: e.to_string() })?;
            let skip = (start - lo) as usize;
            out.copy_from_slice(&view[skip..skip + out.len()]);
        }
        staging.buffer().unmap();
        Ok(())
    }
}

/// Operations recorded into one command buffer and submitted together.
pub struct Batch {
    ctx: GpuContext,
    pub(crate) rec: Option<Recording>,
    /// Scratch tensors the recorded work uses; released after submission.
    kept: Vec<DeviceTensor>,
}

impl GpuContext {
    /// Starts recording operations to submit together.
    pub fn batch(&self) -> Batch {
        let encoder = self.device().create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("strided-wgpu batch") });
        Batch { ctx: self.clone(), rec: Some(Recording { encoder, temps: Vec::new() }), kept: Vec::new() }
    }
}

impl Batch {
    /// The context the batch records for.
    pub fn context(&self) -> &GpuContext {
        &self.ctx
    }

    /// Keeps a scratch tensor alive until the batch is submitted.
    pub(crate) fn keep(&mut self, t: DeviceTensor) {
        self.kept.push(t);
    }

    /// Records `dst.copy_(src)`.
    pub fn copy_(&mut self, dst: &DeviceTensor, src: &DeviceTensor) -> Result<()> {
        self.copy_with(dst, src, CopyPath::Auto)
    }

    /// Records `dst.copy_(src)` through a forced kernel path.
    pub fn copy_with(&mut self, dst: &DeviceTensor, src: &DeviceTensor, path: CopyPath) -> Result<()> {
        const OP: &str = "copy_";
        for t in [dst, src] {
            if !Arc::ptr_eq(&t.context().inner, &self.ctx.inner) {
                return Err(Error::Device { op: OP, detail: "the tensors live on another GpuContext than the batch".into() });
            }
        }
        let same = dst.shares_storage(src);
        let Some(plan) = check_copy(dst.layout(), dst.dtype(), src.layout(), src.dtype(), same)? else { return Ok(()) };
        let ctx = self.ctx.clone();
        let rec = self.rec.as_mut().ok_or_else(|| Error::invalid(OP, "the batch was already submitted"))?;
        ctx.scoped(OP, || {
            if !same {
                let d = Operand { buffer: dst.buffer(), dtype: dst.dtype() };
                let s = Operand { buffer: src.buffer(), dtype: src.dtype() };
                return ctx.record_plan(rec, &plan, d, s, path);
            }
            // One buffer cannot be bound for reading and writing at once: read a copy.
            let tmp = Pooled::get(ctx.device(), &ctx.inner.pool, src.buffer().size(), wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST);
            rec.encoder.copy_buffer_to_buffer(src.buffer(), 0, tmp.buffer(), 0, src.buffer().size());
            let d = Operand { buffer: dst.buffer(), dtype: dst.dtype() };
            let s = Operand { buffer: tmp.buffer(), dtype: src.dtype() };
            let r = ctx.record_plan(rec, &plan, d, s, path);
            rec.temps.push(tmp);
            r
        })
    }

    /// Records a GPU timestamp (for benchmarks; needs `TIMESTAMP_QUERY_INSIDE_ENCODERS`).
    pub fn write_timestamp(&mut self, query_set: &wgpu::QuerySet, index: u32) -> Result<()> {
        let rec = self.rec.as_mut().ok_or_else(|| Error::invalid("write_timestamp", "the batch was already submitted"))?;
        self.ctx.scoped("write_timestamp", || {
            rec.encoder.write_timestamp(query_set, index);
            Ok(())
        })
    }

    /// Records a resolve of `query_set`'s first `count` queries into `dst` (for benchmarks).
    pub fn resolve_timestamps(&mut self, query_set: &wgpu::QuerySet, count: u32, dst: &wgpu::Buffer) -> Result<()> {
        let rec = self.rec.as_mut().ok_or_else(|| Error::invalid("resolve_timestamps", "the batch was already submitted"))?;
        self.ctx.scoped("resolve_timestamps", || {
            rec.encoder.resolve_query_set(query_set, 0..count, dst, 0);
            Ok(())
        })
    }

    /// Submits everything recorded and waits for it to finish.
    pub fn submit_and_wait(mut self) -> Result<()> {
        let Some(rec) = self.rec.take() else { return Ok(()) };
        let ctx = self.ctx.clone();
        let idx = ctx.scoped("submit", || Ok(ctx.queue().submit([rec.encoder.finish()])))?;
        ctx.wait("submit", idx)
    }

    /// Submits everything recorded; errors wgpu reports are returned here.
    pub fn submit(mut self) -> Result<()> {
        let Some(rec) = self.rec.take() else { return Ok(()) };
        let ctx = self.ctx.clone();
        ctx.scoped("submit", || {
            ctx.queue().submit([rec.encoder.finish()]);
            Ok(())
        })
        // The temporaries return to the pool now; later writes to them are queued after this work.
    }
}
