// Batched 2-D transpose of 4-byte elements where one transposed dim has only C = 2 or 3
// elements: NHWC <-> NCHW with 3 channels (an RGB image), or 2. Blocks of the generic
// transpose kernels would be mostly empty there. Each invocation moves 4 positions of the long
// dim across all C rows of the narrow one, the 4 x C block that is C whole vec4 words on the
// side where it is packed: C vec4 loads, C vec4 stores, and a shuffle of components.
//
// Plan dim 0 is contiguous in the destination, plan dim 1 in the source (transpose.wgsl, with
// TILE = 4 and ORDER = 0: one block per 4 positions). NARROW says which dim is the short one:
// 1 for dim 1 (the source interleaves C values per position: deinterleave into C rows of the
// destination), 0 for dim 0 (interleave C source rows into the destination). The long dim's
// size, the strides of the narrow side's rows and both offsets are multiples of 4, and the
// packed side's position stride is C.

//
// BLOCKS consecutive blocks per invocation (the host makes it divide the blocks of one matrix,
// so that they lie along its long dim): their origins differ by 4 positions, so the block
// arithmetic (divisions) is paid once for them; CPU adapters take 4, GPUs 1.

override WG: u32 = 64u;
override C: u32 = 3u;
override NARROW: u32 = 1u;
override BLOCKS: u32 = 1u;

@group(0) @binding(1) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> dst: array<vec4<u32>>;

// Moves the block at blk, its element indices advanced by dd (destination) and sd (source).
fn move_block(blk: Block, dd: u32, sd: u32) {
    let s = (blk.src + sd) >> 2u;
    let d = (blk.dst + dd) >> 2u;
    let bs = blk.src + sd;
    let bd = blk.dst + dd;
    if (NARROW == 1u) {
        // Source words: the 4 positions' C values in position order. Destination: row c
        // (stride blk.dst_row) takes value c of each position.
        // Row strides may be negative: step in elements (wrapping), then count words.
        let a = src[s];
        let b = src[s + 1u];
        if (C == 3u) {
            let c = src[s + 2u];
            dst[d] = vec4<u32>(a.x, a.w, b.z, c.y);
            dst[(bd + blk.dst_row) >> 2u] = vec4<u32>(a.y, b.x, b.w, c.z);
            dst[(bd + 2u * blk.dst_row) >> 2u] = vec4<u32>(a.z, b.y, c.x, c.w);
        } else {
            dst[d] = vec4<u32>(a.x, a.z, b.x, b.z);
            dst[(bd + blk.dst_row) >> 2u] = vec4<u32>(a.y, a.w, b.y, b.w);
        }
    } else {
        // Source rows c (stride blk.src_row) hold value c of the 4 positions; the destination
        // words hold the positions' C values in position order.
        let x = src[s];
        let y = src[(bs + blk.src_row) >> 2u];
        if (C == 3u) {
            let z = src[(bs + 2u * blk.src_row) >> 2u];
            dst[d] = vec4<u32>(x.x, y.x, z.x, x.y);
            dst[d + 1u] = vec4<u32>(y.y, z.y, x.z, y.z);
            dst[d + 2u] = vec4<u32>(z.z, x.w, y.w, z.w);
        } else {
            dst[d] = vec4<u32>(x.x, y.x, x.y, y.y);
            dst[d + 1u] = vec4<u32>(x.z, y.z, x.w, y.w);
        }
    }
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let t = invocation_index(gid);
    if (t >= plan_u[pz()].threads) {
        return;
    }
    let blk = transpose_block(t * BLOCKS);
    // Along the long dim, 4 positions are one destination word and C source words (NARROW 1),
    // or C destination words and one source word (NARROW 0): the element steps between blocks.
    let ds = 4u * select(1u, C, NARROW == 0u);
    let ss = 4u * select(C, 1u, NARROW == 0u);
    for (var k = 0u; k < BLOCKS; k = k + 1u) {
        move_block(blk, k * ds, k * ss);
    }
}
