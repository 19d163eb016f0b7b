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

use crate::runtime::fxhash::FxHashMap;

/// The most groups kept; reaching it empties the cache.
pub(crate) const MAX_GROUPS: usize = 1024;

/// A bind group's identity: its layout, named by the family's static slots (address and
/// length: the same slice, so the same layout; `Runtime::bind_group_layout` makes one per
/// slots), and each binding's buffer and window (offset, size) in binding order.
#[derive(PartialEq, Eq, Hash)]
pub(crate) struct BindKey {
    pub slots: (usize, usize),
    pub windows: Vec<(wgpu::Buffer, u64, u64)>,
}

/// The cache of bind groups.
#[derive(Default)]
pub(crate) struct BindGroups {
    groups: FxHashMap<BindKey, wgpu::BindGroup>,
}

impl BindGroups {
    /// The group kept for `key`.
    pub fn get(&self, key: &BindKey) -> Option<wgpu::BindGroup> {
        self.groups.get(key).cloned()
    }
    /// Keeps `group` for `key`, first emptying the cache if it is full.
    pub fn insert(&mut self, key: BindKey, group: wgpu::BindGroup) {
        if self.groups.len() >= MAX_GROUPS {
            self.groups.clear();
        }
        self.groups.insert(key, group);
    }
    /// Drops every group (and with them the buffers only they held).
    pub fn clear(&mut self) {
        self.groups.clear();
    }
}
