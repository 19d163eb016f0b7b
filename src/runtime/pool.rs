//! Recycled GPU buffers, by size class and usage.
//!
//! A request is rounded up to its size class (a power of two, or 1.25, 1.5 or 1.75 times one;
//! at least 256 bytes), so a buffer serves every later request of its class and usage: at most
//! 25% of a buffer is slack. A buffer returns to the pool only when nothing can still use it:
//! the tensor that owned it is dropped and every recording that used it has finished on the GPU
//! (recordings hold their operands until then, see `runtime::record::Keep`). Idle buffers beyond
//! the pool's cap are destroyed; [`BufferPool::trim`] destroys all idle ones.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::error::Result;
use crate::runtime::lock::lock;

/// The default cap on idle bytes the pool keeps.
pub const DEFAULT_POOL_BYTES: u64 = 512 << 20;

/// The size class of a request of `size` bytes: the smallest of 2^k x {1, 1.25, 1.5, 1.75}
/// (at least 256) that holds it. `None` when it would overflow.
pub(crate) fn size_class(size: u64) -> Option<u64> {
    let size = size.max(256);
    let top = 63 - size.leading_zeros() as u64; // 2^top <= size
    let base = 1u64 << top;
    let quarter = base / 4;
    (0..=4u64).map(|q| base.checked_add(q * quarter)).find_map(|c| c.filter(|&c| c >= size))
}

/// The size of the buffer the pool hands out for `size` bytes on a device whose largest buffer
/// is `max`: its size class, or, where that is above `max`, the size itself rounded up to 4
/// bytes. `None` when it would overflow.
pub(crate) fn pooled_size(size: u64, max: u64) -> Option<u64> {
    let class = size_class(size)?;
    if class > max { size.max(4).checked_next_multiple_of(4) } else { Some(class) }
}

/// Idle buffers by (size class, usage), and the bytes they hold.
pub(crate) struct BufferPool {
    free: crate::runtime::fxhash::FxHashMap<(u64, wgpu::BufferUsages), Vec<wgpu::Buffer>>,
    /// Every buffer the pool made and has not given up for destruction (lent or idle): a
    /// caller's `from_buffer` of one would alias storage the pool recycles.
    owned: std::collections::HashSet<wgpu::Buffer, std::hash::BuildHasherDefault<crate::runtime::fxhash::FxHasher>>,
    bytes: u64,
    cap: u64,
    /// The runtime's GL turn (GL backend only): destroying a buffer reaches the GL context.
    gl: Option<Arc<Mutex<()>>>,
    /// The count of errors met after their call returned ([`crate::runtime::errors::Capture::epoch`]),
    /// and the count the idle buffers were kept at: a buffer lent or kept before a later
    /// error may be the invalid handle of a creation that failed (WebGPU reports it late), so
    /// none made before is kept or handed out again.
    epoch: Arc<AtomicU64>,
    seen: u64,
}

/// Destroys `buffers` in the GL turn, outside the pool's lock (the turn is taken before the
/// pool's lock elsewhere, so never after it).
pub(crate) fn destroy(gl: &Option<Arc<Mutex<()>>>, buffers: Vec<wgpu::Buffer>) {
    if buffers.is_empty() {
        return;
    }
    let _turn = crate::runtime::errors::turn(gl);
    for b in buffers {
        b.destroy();
    }
}

impl BufferPool {
    pub(crate) fn new(gl: Option<Arc<Mutex<()>>>, epoch: Arc<AtomicU64>) -> BufferPool {
        let seen = epoch.load(Ordering::SeqCst);
        BufferPool { free: Default::default(), owned: Default::default(), bytes: 0, cap: DEFAULT_POOL_BYTES, gl, epoch, seen }
    }
    /// The error count now; where it moved since the idle buffers were kept, they are taken
    /// out for destruction (returned).
    fn refresh(&mut self) -> (u64, Vec<wgpu::Buffer>) {
        let now = self.epoch.load(Ordering::SeqCst);
        if now == self.seen {
            return (now, Vec::new());
        }
        self.seen = now;
        (now, self.trim().1)
    }
    /// The GL turn's mutex.
    pub(crate) fn gl(&self) -> Option<Arc<Mutex<()>>> {
        self.gl.clone()
    }
    fn take(&mut self, class: u64, usage: wgpu::BufferUsages) -> Option<wgpu::Buffer> {
        let b = self.free.get_mut(&(class, usage))?.pop()?;
        self.bytes -= class;
        Some(b)
    }
    /// Keeps `b` idle, or returns it for destruction when the pool is full.
    fn put(&mut self, b: wgpu::Buffer) -> Option<wgpu::Buffer> {
        let size = b.size();
        if self.bytes + size > self.cap {
            self.owned.remove(&b);
            return Some(b);
        }
        self.bytes += size;
        self.free.entry((size, b.usage())).or_default().push(b);
        None
    }
    /// Idle bytes held.
    pub(crate) fn idle_bytes(&self) -> u64 {
        self.bytes
    }
    /// Sets the cap on idle bytes; returns the idle buffers to destroy when over it.
    pub(crate) fn set_cap(&mut self, cap: u64) -> Vec<wgpu::Buffer> {
        self.cap = cap;
        if self.bytes > cap {
            return self.trim().1;
        }
        Vec::new()
    }
    /// Takes every idle buffer out (the caller destroys them, returning their memory to the
    /// driver); returns the bytes freed and the buffers.
    pub(crate) fn trim(&mut self) -> (u64, Vec<wgpu::Buffer>) {
        let freed = self.bytes;
        self.bytes = 0;
        let idle: Vec<wgpu::Buffer> = self.free.drain().flat_map(|(_, v)| v).collect();
        for b in &idle {
            self.owned.remove(b);
        }
        (freed, idle)
    }
    /// Whether `b` is one of the pool's buffers (a tensor's storage, or idle).
    pub(crate) fn owns(&self, b: &wgpu::Buffer) -> bool {
        self.owned.contains(b)
    }
}

/// A buffer on loan from the pool; it goes back when dropped (unless an error was met late
/// since it was lent: then it is destroyed).
pub(crate) struct Pooled {
    buffer: wgpu::Buffer,
    pool: Arc<Mutex<BufferPool>>,
    born: u64,
}

impl Pooled {
    /// A buffer of `size` bytes rounded up to its size class, with `usage`, recycled when one is
    /// idle. Must be called inside an error scope: creation may fail validation. `None` when the
    /// size class overflows.
    /// A class above `max` (the device's `max_buffer_size`) gives way to the size itself,
    /// rounded up to 4 bytes.
    /// `create` makes a new buffer of the class's size where none is idle, or fails: a buffer
    /// whose creation failed (out of memory) is an invalid handle, which must never reach the
    /// pool, where every later request of its class and usage would get it.
    pub(crate) fn get(pool: &Arc<Mutex<BufferPool>>, size: u64, usage: wgpu::BufferUsages, max: u64, create: impl FnOnce(u64) -> Result<wgpu::Buffer>) -> Option<Result<Pooled>> {
        let class = pooled_size(size, max)?;
        let (idle, born, stale, gl) = {
            let mut p = lock(pool);
            let (born, stale) = p.refresh();
            // The GL turn only for buffers to destroy.
            let gl = if stale.is_empty() { None } else { p.gl() };
            (p.take(class, usage), born, stale, gl)
        };
        destroy(&gl, stale);
        let buffer = match idle {
            Some(b) => b,
            None => match create(class) {
                Ok(b) => {
                    lock(pool).owned.insert(b.clone());
                    b
                }
                Err(e) => return Some(Err(e)),
            },
        };
        Some(Ok(Pooled { buffer, pool: pool.clone(), born }))
    }
    pub(crate) fn buffer(&self) -> &wgpu::Buffer {
        &self.buffer
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        // A handle clone: the pool keeps the same GPU buffer.
        let (excess, gl) = {
            let mut pool = lock(&self.pool);
            let excess = if pool.epoch.load(Ordering::SeqCst) != self.born {
                pool.owned.remove(&self.buffer);
                Some(self.buffer.clone())
            } else {
                pool.put(self.buffer.clone())
            };
            // The GL turn only for a buffer to destroy.
            let gl = excess.as_ref().and_then(|_| pool.gl());
            (excess, gl)
        };
        destroy(&gl, excess.into_iter().collect());
    }
}

#[cfg(test)]
mod tests {
    use super::size_class;

    /// A buffer whose creation failed (here a usage wgpu refuses; on a GPU, out of memory) is
    /// an error of the call and never reaches the pool, whose later requests of its class would
    /// get the invalid handle.
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn a_buffer_whose_creation_failed_never_reaches_the_pool() {
        let ctx = crate::gpu::noop::noop_context().unwrap();
        let rt = &ctx.rt;
        let refused = wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::STORAGE;
        let r = rt.scoped("test", || rt.buffer("test", 1024, refused).map(drop));
        assert!(r.is_err(), "{r:?}");
        assert_eq!(crate::runtime::lock::lock(&rt.pool).idle_bytes(), 0, "the invalid buffer went back to the pool");
        let fine = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST;
        rt.scoped("test", || rt.buffer("test", 1024, fine).map(drop)).unwrap();
        assert_eq!(crate::runtime::lock::lock(&rt.pool).idle_bytes(), 1024);
    }

    /// An error met after its call returned (WebGPU settles scopes late: a buffer whose
    /// creation ran out of memory, a pipeline that failed, were handed out as if valid) drops
    /// what was kept before it: idle buffers are not handed out again, lent ones do not return
    /// to the pool, a pipeline is compiled again, the bind groups go.
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn a_late_error_drops_the_buffers_pipelines_and_bind_groups_kept_before_it() {
        use crate::runtime::lock::lock;
        let ctx = crate::gpu::noop::noop_context().unwrap();
        let rt = &ctx.rt;
        let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST;
        let idle = rt.scoped("test", || rt.buffer("test", 1024, usage)).unwrap();
        let idle_handle = idle.buffer().clone();
        drop(idle);
        let lent = rt.scoped("test", || rt.buffer("test", 1024, usage)).unwrap();
        assert_eq!(lent.buffer(), &idle_handle, "the idle buffer is lent again");
        let other = rt.scoped("test", || rt.buffer("test", 2048, usage)).unwrap();
        drop(other);
        assert_eq!(lock(&rt.pool).idle_bytes(), 2048);
        let key = crate::runtime::PipelineKey { shader: "test", constants: Vec::new() };
        let source = || Some("@compute @workgroup_size(1) fn main() {}".to_string());
        let before = rt.pipeline(&key, &[], source).unwrap();
        assert!(std::sync::Arc::ptr_eq(&before, &rt.pipeline(&key, &[], source).unwrap()), "the pipeline is cached");
        const SLOTS: &[crate::runtime::Slot] = &[crate::runtime::Slot::Uniform];
        let bgl = rt.bind_group_layout(SLOTS).unwrap();
        let uniform = rt.scoped("test", || rt.buffer("test", 256, wgpu::BufferUsages::UNIFORM)).unwrap();
        let group = || rt.bind_group(SLOTS, &bgl, "test", &[(uniform.buffer(), 0, 256)]);
        let first = group();
        assert_eq!(first, group(), "the bind group is cached");
        rt.errors.late_error();
        assert_ne!(first, group(), "the bind group is made again");
        // Lent before: destroyed on its return, not kept.
        drop(lent);
        assert_eq!(lock(&rt.pool).idle_bytes(), 2048);
        assert!(!lock(&rt.pool).owns(&idle_handle));
        // Idle before: not handed out again (the next request empties the pool).
        let fresh = rt.scoped("test", || rt.buffer("test", 2048, usage)).unwrap();
        assert_eq!(lock(&rt.pool).idle_bytes(), 0);
        drop(fresh);
        assert_eq!(lock(&rt.pool).idle_bytes(), 2048, "a buffer made after the error is kept");
        let after = rt.pipeline(&key, &[], source).unwrap();
        assert!(!std::sync::Arc::ptr_eq(&before, &after), "the pipeline is compiled again");
        assert!(std::sync::Arc::ptr_eq(&after, &rt.pipeline(&key, &[], source).unwrap()));
        assert_eq!(rt.pipeline_count(), 1);
    }

    #[test]
    fn size_classes_hold_the_request_with_at_most_a_quarter_of_slack() {
        assert_eq!(size_class(0), Some(256));
        assert_eq!(size_class(256), Some(256));
        assert_eq!(size_class(257), Some(320));
        assert_eq!(size_class(1000), Some(1024));
        assert_eq!(size_class(1025), Some(1280));
        assert_eq!(size_class(u64::MAX), None);
        for s in [300u64, 4097, 65_537, 100_000_000, 3 << 40] {
            let c = size_class(s).unwrap();
            assert!(c >= s && (c - s) * 4 <= c, "{s} -> {c}");
            assert_eq!(size_class(c), Some(c), "a class is its own class");
        }
    }
}
