//! 1x1 convolution on the device: `shaders/conv1x1.wgsl` reads every operand through its
//! strides (implicit GEMM, no im2col buffer, no hidden copy of the input).

use std::num::NonZeroU64;

use bytemuck::{Pod, Zeroable};

use crate::conv::{conv1x1_shape, Conv1x1Options};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::gpu::context::PipelineKey;
use crate::gpu::pool::Pooled;
use crate::gpu::tensor::DeviceTensor;
use crate::strided::Strided;

/// The uniform of `conv1x1.wgsl` (`Conv` there).
#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct ConvUniform {
    x_strides: [i32; 4],
    y_strides: [i32; 4],
    d0: [u32; 4],
    d1: [u32; 4],
    d2: [u32; 4],
    d3: [u32; 4],
    offs: [u32; 4],
    misc: [i32; 4],
    blocks: [u32; 4],
}

fn whole(b: &wgpu::Buffer) -> wgpu::BindingResource<'_> {
    wgpu::BindingResource::Buffer(wgpu::BufferBinding { buffer: b, offset: 0, size: NonZeroU64::new(b.size()) })
}

/// `torch.nn.functional.conv2d` with a 1x1 kernel, f32, on the device. `input` is logically
/// [N, C, H, W] in any strides; `weight` [K, C/groups, 1, 1] or [K, C/groups]; `bias` [K].
/// The output is a new tensor in the input's memory format unless `options` names one.
/// Bad input is a typed error and nothing is dispatched.
pub fn conv1x1(input: &DeviceTensor, weight: &DeviceTensor, bias: Option<&DeviceTensor>, options: &Conv1x1Options) -> Result<DeviceTensor> {
    const OP: &str = "conv1x1";
    let g = conv1x1_shape(input.layout(), weight.layout(), bias.map(|b| b.layout()), [Some(input.dtype()), Some(weight.dtype()), bias.map(|b| b.dtype())], options)?;
    let ctx = input.context();
    for t in [Some(weight), bias].into_iter().flatten() {
        if !t.context().same_device(ctx) {
            return Err(Error::Device { op: OP, detail: "the operands live on different GpuContexts".into() });
        }
    }
    let out = DeviceTensor::empty(ctx, &[g.n, g.k, g.oh, g.ow], DType::F32, g.format)?;
    if out.numel() == 0 {
        return Ok(out);
    }
    let max = ctx.adapter().max_storage_buffer_binding_size;
    for (name, t) in [("input", input), ("weight", weight), ("output", &out)].into_iter().chain(bias.map(|b| ("bias", b))) {
        if t.buffer().size() > max {
            return Err(Error::Limit { op: OP, what: format!("binding the {name} ({} bytes) in one piece", t.buffer().size()), limit: "max_storage_buffer_binding_size", requested: t.buffer().size(), max });
        }
    }
    let i32_of = |s: isize| i32::try_from(s).map_err(|_| Error::overflow(OP, format!("stride {s} in i32")));
    let i32s = |v: &[isize]| -> Result<[i32; 4]> {
        let mut o = [0i32; 4];
        for (d, &s) in v.iter().enumerate() {
            o[d] = i32_of(s)?;
        }
        Ok(o)
    };
    let u32_of = |x: usize| u32::try_from(x).map_err(|_| Error::overflow(OP, format!("{x} in u32")));
    let (wk, wc) = (weight.strides()[0], weight.strides()[1]);
    let kg = g.k / options.groups;
    let bk: u32 = if options.groups == 1 || kg.is_multiple_of(4) { 4 } else { 1 };
    let bp: u32 = 4;
    let pixels = g.n * g.oh * g.ow;
    let pixel_blocks = pixels.div_ceil(bp as usize);
    let threads = pixel_blocks * g.k.div_ceil(bk as usize);
    let wg: u32 = 64;
    let groups = (threads as u64).div_ceil(wg as u64);
    let gx = groups.min(ctx.adapter().max_compute_workgroups_per_dimension as u64);
    let gy = groups.div_ceil(gx);
    if gy > ctx.adapter().max_compute_workgroups_per_dimension as u64 {
        return Err(Error::Limit { op: OP, what: format!("{threads} invocations"), limit: "max_compute_workgroups_per_dimension", requested: gy, max: ctx.adapter().max_compute_workgroups_per_dimension as u64 });
    }
    let u = ConvUniform {
        x_strides: i32s(input.strides())?,
        y_strides: i32s(out.strides())?,
        d0: [u32_of(g.n)?, u32_of(g.c)?, u32_of(g.h)?, u32_of(g.w)?],
        d1: [u32_of(g.k)?, u32_of(g.oh)?, u32_of(g.ow)?, u32_of(g.c / options.groups)?],
        d2: [u32_of(kg)?, u32_of(options.stride.0)?, u32_of(options.stride.1)?, u32_of(options.padding.0)?],
        d3: [u32_of(options.padding.1)?, bias.is_some() as u32, options.relu as u32, u32_of(threads)?],
        offs: [u32_of(input.storage_offset())?, u32_of(out.storage_offset())?, u32_of(weight.storage_offset())?, u32_of(bias.map_or(0, |b| b.storage_offset()))?],
        misc: [i32_of(wk)?, i32_of(wc)?, i32_of(bias.map_or(0, |b| b.strides()[0]))?, (gx * wg as u64) as i32],
        blocks: [u32_of(pixel_blocks)?, 0, 0, 0],
    };
    let key = PipelineKey { shader: "conv1x1", constants: vec![("WG", wg as i64), ("BK", bk as i64), ("BP", bp as i64)] };
    let pipeline = ctx.pipeline(key, "conv")?;
    let bgl = ctx.bind_group_layout("conv")?;
    ctx.scoped(OP, || {
        let d = ctx.device();
        let uniform = Pooled::get(d, &ctx.inner.pool, 256, wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST);
        ctx.queue().write_buffer(uniform.buffer(), 0, bytemuck::bytes_of(&u));
        let bias_buf = bias.map_or(weight.buffer(), |b| b.buffer());
        let bg = d.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("conv1x1"),
            layout: &bgl,
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: uniform.buffer().as_entire_binding() },
                wgpu::BindGroupEntry { binding: 1, resource: whole(input.buffer()) },
                wgpu::BindGroupEntry { binding: 2, resource: whole(weight.buffer()) },
                wgpu::BindGroupEntry { binding: 3, resource: whole(bias_buf) },
                wgpu::BindGroupEntry { binding: 4, resource: whole(out.buffer()) },
            ],
        });
        let mut enc = d.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("conv1x1") });
        {
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("conv1x1"), timestamp_writes: None });
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &bg, &[]);
            pass.dispatch_workgroups(gx as u32, gy as u32, 1);
        }
        ctx.queue().submit([enc.finish()]);
        Ok(())
    })?;
    Ok(out)
}
