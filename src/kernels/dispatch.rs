//! The one dispatch loop every kernel family records through: a family describes each dispatch
//! (pipeline, uniform, bound buffer windows, grid) and [`record`] places the uniforms, makes the
//! bind groups and appends the dispatches to the recording (`runtime::record`), which encodes
//! them into compute passes later. A family writes no pass or bind group of its own.
//!
//! An op whose dispatches fail part-way (a pipeline that does not compile) leaves the dispatches
//! it appended before; the op's call returns the error, and the batch's op cuts them back out
//! (`Batch::whole`, or the elementwise op's own mark), so that the batch's other work runs.

use crate::error::{Error, Result};
use crate::kernels::abi::{self, Uniform};
use crate::kernels::shaders;
use crate::runtime::record::{Command, Recorder};
use crate::runtime::{PipelineKey, Runtime, Slot};

/// One dispatch of a family: its pipeline (registered shader and override constants), its
/// uniform (binding 0), the buffer windows `(offset, size)` in bytes of bindings 1.., in the
/// order of the family's slots, and its grid of workgroups (x, y).
pub(crate) struct Dispatch<'a, P: Uniform> {
    pub key: PipelineKey,
    pub params: P,
    pub bindings: Vec<(&'a wgpu::Buffer, (u64, u64))>,
    pub grid: (u32, u32),
}

/// Records `dispatches`, labelled `op`, into `rec`: each uniform in a slot of the recording's
/// uniform arena, each bind group against the layout of `slots`. Consecutive dispatches of a
/// recording share one compute pass, and wgpu orders them, so a dispatch sees what every
/// earlier one wrote (pieces of one operation too).
pub(crate) fn record<P: Uniform>(rt: &Runtime, rec: &mut Recorder, op: &'static str, slots: &'static [Slot], dispatches: &[Dispatch<'_, P>]) -> Result<()> {
    if dispatches.is_empty() {
        return Ok(());
    }
    // (A group made inside a scope that caught an error may be invalid: `Runtime::scoped`
    // empties the bind-group cache then, at the scope that catches it.)
    rt.scoped(op, || {
        let bgl = rt.bind_group_layout(slots)?;
        let size = std::mem::size_of::<P>() as u64;
        let mut last: Option<(&PipelineKey, std::sync::Arc<wgpu::ComputePipeline>)> = None;
        for d in dispatches {
            let pipeline = match &last {
                Some((key, p)) if *key == &d.key => p.clone(),
                _ => rt.pipeline(&d.key, slots, || shaders::source_for(d.key.shader, rt.report.device_type == wgpu::DeviceType::Cpu))?,
            };
            last = Some((&d.key, pipeline.clone()));
            let (ubuf, offset) = rec.uniform(abi::bytes(&d.params), |size| rt.buffer(op, size, wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST))?;
            let mut windows = Vec::with_capacity(d.bindings.len() + 1);
            windows.push((&ubuf, offset, words(&ubuf, (offset, size))));
            // Read-only buffers first, then the written ones (`Command::Dispatch::storage`).
            let mut storage: Vec<wgpu::Buffer> = Vec::with_capacity(d.bindings.len());
            let mut reads = 0;
            for (j, (buffer, window)) in d.bindings.iter().enumerate() {
                windows.push((*buffer, window.0, words(buffer, *window)));
                match slots.get(j + 1) {
                    Some(Slot::Write) => storage.push((*buffer).clone()),
                    _ => {
                        storage.insert(reads, (*buffer).clone());
                        reads += 1;
                    }
                }
            }
            let group = rt.bind_group(slots, &bgl, op, &windows);
            rec.dispatch(Command::Dispatch { op, kernel: d.key.shader, pipeline, group, grid: d.grid, storage, reads });
        }
        Ok(())
    })
}

/// The bound size of `size` bytes of `b` from `offset`: whole 4-byte words where the buffer
/// has them.
fn words(b: &wgpu::Buffer, (offset, size): (u64, u64)) -> u64 {
    (size.div_ceil(4) * 4).min(b.size().saturating_sub(offset)).max(size)
}

/// The read-only binding of a kernel's word view of `window` of `buffer` (words of `unit`
/// bytes: a vec4 of 32-bit values, or a vec2 holding four 16-bit elements; the kernels move
/// only words that lie inside the window): its whole words, at least one. A window without a
/// whole word (fewer than `unit` bytes, at the end of a caller's small buffer) binds the
/// runtime's spare words instead, which the kernel never reads: a word from the window's
/// start would reach past the buffer's end, a wgpu validation error.
pub(crate) fn read_words<'a>(rt: &'a Runtime, buffer: &'a wgpu::Buffer, (offset, size): (u64, u64), unit: u64) -> (&'a wgpu::Buffer, (u64, u64)) {
    let bound = (size / unit * unit).max(unit);
    match offset.checked_add(bound) {
        Some(end) if end <= buffer.size() => (buffer, (offset, bound)),
        _ => (rt.spare_words(), (0, 16)),
    }
}

/// The largest `n` in `lo..=hi` for which `fits(n)` holds, where `fits(lo)` holds and `fits`
/// only turns false as `n` grows (a count of images, rows or batches whose bindings grow with
/// it): the binary search every split by a binding's size makes.
pub(crate) fn most_that_fit(lo: usize, hi: usize, mut fits: impl FnMut(usize) -> Result<bool>) -> Result<usize> {
    let (mut lo, mut hi) = (lo, hi);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if fits(mid)? {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    Ok(lo)
}

/// A grid of `groups` workgroups within the per-dimension limit: (x, y) with x * y >= groups,
/// or an [`Error::Limit`] of `op` naming `what` when even the square of the limit is too few.
pub(crate) fn grid(rt: &Runtime, op: &'static str, groups: u64, what: &str) -> Result<(u32, u32)> {
    let max = rt.report.max_compute_workgroups_per_dimension as u64;
    let gx = groups.clamp(1, max);
    let gy = groups.div_ceil(gx);
    if gy > max {
        return Err(Error::Limit { op, what: what.to_string(), limit: "max_compute_workgroups_per_dimension", requested: gy, max });
    }
    Ok((gx as u32, gy as u32))
}

/// `v` as a uniform's i32, or an overflow error of `op` naming `what`.
pub(crate) fn i32_of(op: &'static str, v: isize, what: &str) -> Result<i32> {
    i32::try_from(v).map_err(|_| Error::overflow(op, format!("{what} = {v} in i32")))
}

/// `v` as a uniform's u32, or an overflow error of `op` naming `what`.
pub(crate) fn u32_of(op: &'static str, v: usize, what: &str) -> Result<u32> {
    u32::try_from(v).map_err(|_| Error::overflow(op, format!("{what} = {v} in u32")))
}
