//! Bind groups by what they bind. A recording that binds the same buffer windows again (a
//! loop of eager calls whose outputs come back from the pool, a batch that repeats an op, a
//! uniform slot of a reused arena chunk) reuses the group made the first time instead of
//! making one per dispatch: making one validates every binding in wgpu and allocates a
//! descriptor set on Vulkan, the largest host cost of a recorded op after the op's own checks.
//!
//! A cached group holds its buffers. The pool destroys every buffer it frees, so a group of
//! pooled buffers holds no memory after they are freed, and a destroyed buffer is never handed
//! out again, so its groups are never matched. A caller's buffer (`DeviceTensor::from_buffer`)
//! stays alive while a group of it is cached: the cache is emptied when it reaches
//! [`MAX_GROUPS`] groups and by `GpuContext::trim_pool`.

use std::hash::{Hash, Hasher};

use crate::runtime::fxhash::{FxHashMap, FxHasher};

/// The most groups kept; reaching it empties the cache.
pub(crate) const MAX_GROUPS: usize = 1024;

/// A bind group's identity: its layout, named by the family's static slots (address and
/// length: the same slice, so the same layout; `Runtime::bind_group_layout` makes one per
/// slots), and each binding's buffer and window (offset, size) in binding order.
struct BindKey {
    slots: (usize, usize),
    windows: Vec<(wgpu::Buffer, u64, u64)>,
}

/// The hash of a key of `slots` binding `windows`, computed from the borrowed parts (a lookup
/// makes no key, so a hit allocates nothing and clones no buffer).
fn hash(slots: (usize, usize), windows: &[(&wgpu::Buffer, u64, u64)]) -> u64 {
    let mut h = FxHasher::default();
    slots.hash(&mut h);
    for (b, o, s) in windows {
        b.hash(&mut h);
        o.hash(&mut h);
        s.hash(&mut h);
    }
    h.finish()
}

impl BindKey {
    fn matches(&self, slots: (usize, usize), windows: &[(&wgpu::Buffer, u64, u64)]) -> bool {
        self.slots == slots && self.windows.len() == windows.len() && self.windows.iter().zip(windows).all(|(a, b)| &a.0 == b.0 && a.1 == b.1 && a.2 == b.2)
    }
}

/// The cache of bind groups, by the hash of their key (each bucket's keys compared in full).
#[derive(Default)]
pub(crate) struct BindGroups {
    groups: FxHashMap<u64, Vec<(BindKey, wgpu::BindGroup)>>,
    len: usize,
}

impl BindGroups {
    /// The group kept for `slots` binding `windows`.
    pub fn get(&self, slots: (usize, usize), windows: &[(&wgpu::Buffer, u64, u64)]) -> Option<wgpu::BindGroup> {
        let bucket = self.groups.get(&hash(slots, windows))?;
        bucket.iter().find(|(k, _)| k.matches(slots, windows)).map(|(_, g)| g.clone())
    }
    /// Keeps `group` for `slots` binding `windows`, first emptying the cache if it is full.
    pub fn insert(&mut self, slots: (usize, usize), windows: &[(&wgpu::Buffer, u64, u64)], group: wgpu::BindGroup) {
        if self.len >= MAX_GROUPS {
            self.clear();
        }
        let bucket = self.groups.entry(hash(slots, windows)).or_default();
        match bucket.iter_mut().find(|(k, _)| k.matches(slots, windows)) {
            Some(entry) => entry.1 = group,
            None => {
                bucket.push((BindKey { slots, windows: windows.iter().map(|&(b, o, s)| (b.clone(), o, s)).collect() }, group));
                self.len += 1;
            }
        }
    }
    /// Drops every group (and with them the buffers only they held).
    pub fn clear(&mut self) {
        self.groups.clear();
        self.len = 0;
    }
}
