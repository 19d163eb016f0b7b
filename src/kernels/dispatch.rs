//! The one dispatch loop every kernel family records through: a family describes each dispatch
//! (pipeline, uniform, bound buffer windows, grid) and [`record`] writes the uniforms, makes the
//! bind groups and records the compute pass. A family writes no pass or bind group of its own.
//!
//! Everything that can fail (pipelines, the uniform buffer, bind groups) happens before the
//! pass is recorded, so a failing call leaves the encoder as it was.

use std::num::NonZeroU64;

use crate::error::{Error, Result};
use crate::kernels::abi::{self, Uniform};
use crate::kernels::shaders;
use crate::runtime::submit::Keep;
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

/// Records `dispatches` in one compute pass, labelled `op`: their uniforms in one buffer (one
/// [`abi::SLOT_BYTES`] slot each), their bind groups against the layout of `slots`. Dispatches
/// in one pass see each other's writes (wgpu orders them), so pieces of one operation may also
/// read what an earlier piece wrote.
pub(crate) fn record<P: Uniform>(rt: &Runtime, enc: &mut wgpu::CommandEncoder, keep: &mut Keep, op: &'static str, slots: &'static [Slot], dispatches: &[Dispatch<'_, P>]) -> Result<()> {
    if dispatches.is_empty() {
        return Ok(());
    }
    rt.scoped(op, || {
        let mut pipelines = Vec::with_capacity(dispatches.len());
        for d in dispatches {
            match pipelines.last() {
                Some((key, p)) if *key == &d.key => {
                    let p = std::sync::Arc::clone(p);
                    pipelines.push((&d.key, p));
                }
                _ => pipelines.push((&d.key, rt.pipeline(&d.key, slots, || shaders::source_for(d.key.shader, rt.report.device_type == wgpu::DeviceType::Cpu))?)),
            }
        }
        let bgl = rt.bind_group_layout(slots)?;
        let stride = abi::SLOT_BYTES as u64;
        let size = std::mem::size_of::<P>() as u64;
        let ubuf = rt.buffer(op, dispatches.len() as u64 * stride, wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST)?;
        let mut bytes = vec![0u8; dispatches.len() * stride as usize];
        for (i, d) in dispatches.iter().enumerate() {
            bytes[i * stride as usize..][..size as usize].copy_from_slice(abi::bytes(&d.params));
        }
        rt.queue.write_buffer(ubuf.buffer(), 0, &bytes);
        let mut groups = Vec::with_capacity(dispatches.len());
        for (i, d) in dispatches.iter().enumerate() {
            let mut entries = Vec::with_capacity(d.bindings.len() + 1);
            entries.push(wgpu::BindGroupEntry { binding: 0, resource: bind(ubuf.buffer(), (i as u64 * stride, size)) });
            for (j, (buffer, window)) in d.bindings.iter().enumerate() {
                entries.push(wgpu::BindGroupEntry { binding: j as u32 + 1, resource: bind(buffer, *window) });
            }
            groups.push(rt.device.create_bind_group(&wgpu::BindGroupDescriptor { label: Some(op), layout: &bgl, entries: &entries }));
        }
        let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some(op), timestamp_writes: None });
        for ((group, d), (_, pipeline)) in groups.iter().zip(dispatches).zip(&pipelines) {
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, group, &[]);
            pass.dispatch_workgroups(d.grid.0, d.grid.1, 1);
        }
        drop(pass);
        keep.hold(ubuf);
        Ok(())
    })
}

/// The binding of `size` bytes of `b` from `offset`, rounded up to whole 4-byte words where the
/// buffer has them (storage bindings are sized in words).
pub(crate) fn bind(b: &wgpu::Buffer, (offset, size): (u64, u64)) -> wgpu::BindingResource<'_> {
    let words = (size.div_ceil(4) * 4).min(b.size().saturating_sub(offset)).max(size);
    wgpu::BindingResource::Buffer(wgpu::BufferBinding { buffer: b, offset, size: NonZeroU64::new(words) })
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
