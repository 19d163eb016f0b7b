// How the 1x1 convolution kernels read their window's weights (the uniform block `wu` of
// conv.wgsl): every invocation reads each weight itself, at an offset uniform across the
// dispatch. GPUs serve such reads from a broadcast (constant or scalar) cache. The kernels see
// this file's interface: `Invocation` (the entry point's built-ins), `Weights` (the rows a
// block of output channels reads), and `weights` and `weight`.

// The window's weights (binding 2 of conv.wgsl): a 64 KiB uniform block.
@group(0) @binding(2) var<uniform> wu: array<vec4<f32>, 4096>;

struct Invocation {
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
}

// Rows base, base + stride, base + 2*stride, ... of the weight block.
struct Weights {
    base: u32,
    stride: u32,
}

fn weights(inv: Invocation, base: u32, stride: u32) -> Weights {
    return Weights(base, stride);
}

// Row `r` (a constant at every call) of `w`.
fn weight(w: Weights, r: u32) -> vec4<f32> {
    return wu[w.base + r * w.stride];
}
