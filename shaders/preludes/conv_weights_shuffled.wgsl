// How the 1x1 convolution kernels read their window's weights, with subgroup shuffles: the
// interface of conv_weights.wgsl, for adapters where a uniform-buffer read at an offset the
// compiler cannot prove uniform costs a read per lane. That is lavapipe and llvmpipe: Mesa
// proves only constants and push constants uniform, not a loop counter, so each such vec4 was
// 4 scalar reads for every lane. Here lane l of each subgroup reads rows l, l + 8, l + 16, ...
// once, and every row reaches all lanes by a shuffle from a constant lane, so a block of 4*CQ
// rows costs each lane CQ / 2 reads instead of 4*CQ (shuffled_rows.wgsl). Needs subgroups of at
// least 8 invocations, all of them active (the kernels never return early).

// The window's weights (binding 2 of conv.wgsl): a 64 KiB uniform block.
@group(0) @binding(2) var<uniform> wu: array<vec4<f32>, 4096>;

// This lane's reads: rows 8j + (sid % 8) for j = 0..7 (those past the 4*CQ rows are zero).
alias Weights = Rows8;

// Row 8j + lane of the block: rows base, base + stride, ... of the window's weights.
fn weight_row(base: u32, stride: u32, j: u32, lane: u32) -> vec4<f32> {
    return wu[min(base + (8u * j + lane) * stride, 4095u)];
}

fn weights(inv: Invocation, base: u32, stride: u32) -> Weights {
    return rows8(base, stride, inv.sid % 8u);
}

// Row `r` (a constant at every call, below 4*CQ): lane r % 8's read number r / 8.
fn weight(w: Weights, r: u32) -> vec4<f32> {
    return subgroupShuffle(row8(w, r), r % 8u);
}
