//! Recycled GPU buffers: buffers are reused by (size, usage) rather than created per call.
//!
//! A buffer returns to the pool when the last tensor using it is dropped, or when an
//! operation's temporary (uniforms, staging) is done; queue order makes reuse safe, since
//! wgpu orders every later write after the work already submitted.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::gpu::context::lock;

/// The most bytes of idle buffers the pool keeps; beyond it, returned buffers are destroyed.
const POOL_BYTES: u64 = 512 << 20;

#[derive(Default)]
pub(crate) struct BufferPool {
    free: HashMap<(u64, wgpu::BufferUsages), Vec<wgpu::Buffer>>,
    bytes: u64,
}

impl BufferPool {
    fn take(&mut self, size: u64, usage: wgpu::BufferUsages) -> Option<wgpu::Buffer> {
        let b = self.free.get_mut(&(size, usage))?.pop()?;
        self.bytes -= size;
        Some(b)
    }
    fn put(&mut self, b: wgpu::Buffer) {
        let size = b.size();
        if self.bytes + size > POOL_BYTES {
            b.destroy();
            return;
        }
        self.bytes += size;
        self.free.entry((size, b.usage())).or_default().push(b);
    }
}

/// A buffer on loan from the pool; it goes back when dropped.
pub(crate) struct Pooled {
    buffer: wgpu::Buffer,
    pool: Arc<Mutex<BufferPool>>,
}

impl Pooled {
    /// A buffer of at least `size` bytes (rounded up to 256) with `usage`, recycled when one
    /// is free. Must be called inside an error scope: creation may fail validation.
    pub(crate) fn get(device: &wgpu::Device, pool: &Arc<Mutex<BufferPool>>, size: u64, usage: wgpu::BufferUsages) -> Pooled {
        let size = size.max(4).div_ceil(256) * 256;
        let buffer = lock(pool).take(size, usage).unwrap_or_else(|| {
            device.create_buffer(&wgpu::BufferDescriptor { label: Some("strided-wgpu"), size, usage, mapped_at_creation: false })
        });
        Pooled { buffer, pool: pool.clone() }
    }
    pub(crate) fn buffer(&self) -> &wgpu::Buffer {
        &self.buffer
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        // A handle clone: the pool keeps the same GPU buffer.
        lock(&self.pool).put(self.buffer.clone());
    }
}
