// What the two shuffled weight readers share (conv_weights_shuffled.wgsl, the 1x1 and direct
// convolutions', and matmul_weights.wgsl, matmul_blocked.wgsl's): a block of 4*CQ weight rows
// read once by 8 lanes, lane l reading rows l, l + 8, l + 16, ... (at most 8 each), and every
// row handed to the lanes that need it by a subgroup shuffle from the lane that read it. Each
// reader defines `weight_row(base, stride, j, l)`, the read of row 8j + l of its block (below
// 4*CQ), and its `Weights`, `weights` and `weight` (the interface of conv_weights.wgsl).

// The entry point's built-ins.
struct Invocation {
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(subgroup_invocation_id) sid: u32,
}

// A lane's reads: rows 8j + l of the block for j = 0..7.
struct Rows8 {
    r0: vec4<f32>,
    r1: vec4<f32>,
    r2: vec4<f32>,
    r3: vec4<f32>,
    r4: vec4<f32>,
    r5: vec4<f32>,
    r6: vec4<f32>,
    r7: vec4<f32>,
}

// Row 8j + l of the block: weight_row's read, zero past the 4*CQ rows.
fn block_row(base: u32, stride: u32, j: u32, l: u32) -> vec4<f32> {
    if (8u * j >= 4u * CQ) {
        return vec4<f32>(0.0);
    }
    return weight_row(base, stride, j, l);
}

// The reads of lane l of a group of 8.
fn rows8(base: u32, stride: u32, l: u32) -> Rows8 {
    return Rows8(block_row(base, stride, 0u, l), block_row(base, stride, 1u, l), block_row(base, stride, 2u, l), block_row(base, stride, 3u, l), block_row(base, stride, 4u, l), block_row(base, stride, 5u, l), block_row(base, stride, 6u, l), block_row(base, stride, 7u, l));
}

// Read number r / 8 of `w`: for row r (a constant at every call), what lane r % 8 of a group
// shuffles out.
fn row8(w: Rows8, r: u32) -> vec4<f32> {
    var v: vec4<f32>;
    switch (r / 8u) {
        case 0u: { v = w.r0; }
        case 1u: { v = w.r1; }
        case 2u: { v = w.r2; }
        case 3u: { v = w.r3; }
        case 4u: { v = w.r4; }
        case 5u: { v = w.r5; }
        case 6u: { v = w.r6; }
        default: { v = w.r7; }
    }
    return v;
}
