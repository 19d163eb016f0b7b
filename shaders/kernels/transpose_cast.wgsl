// Converting batched 2-D transpose, register-blocked: plan dim 0 is contiguous in the
// destination, plan dim 1 in the source, the other dims are batch dims. Each invocation moves
// a 4 x 4 block: it reads 4 runs of 4 consecutive source elements (SRC_TYPE, 1, 2 or 4 bytes),
// converts each to DST_TYPE (cast.wgsl), and writes 4 runs of up to 4 consecutive destination
// elements as whole words, so no store needs atomics: the plan's dim 0, the destination's
// offset and its other strides are multiples of the elements in a word (2 for 2-byte, 4 for
// 1-byte elements; transpose_cast_plan in src/kernels/copy/mod.rs), so each run fills words no
// other run touches.

override WG: u32 = 64u;
override SRC_TYPE: u32 = 0u;
override DST_TYPE: u32 = 0u;

@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;

// Source element e, zero-extended.
fn load_src(e: u32) -> u32 {
    let b = dt_bytes(SRC_TYPE);
    if (b == 4u) {
        return src[e];
    }
    if (b == 2u) {
        return (src[e >> 1u] >> ((e & 1u) * 16u)) & 0xffffu;
    }
    return (src[e >> 2u] >> ((e & 3u) * 8u)) & 0xffu;
}

// The first n (<= 4) of the destination elements v from element d on: for 2-byte elements n
// and d are even, for 1-byte elements n is 4 and d a multiple of 4.
fn store_run(d: u32, v: vec4<u32>, n: u32) {
    let b = dt_bytes(DST_TYPE);
    if (b == 4u) {
        dst[d] = v.x;
        if (n > 1u) {
            dst[d + 1u] = v.y;
        }
        if (n > 2u) {
            dst[d + 2u] = v.z;
        }
        if (n > 3u) {
            dst[d + 3u] = v.w;
        }
        return;
    }
    if (b == 2u) {
        let w = d >> 1u;
        dst[w] = (v.x & 0xffffu) | (v.y << 16u);
        if (n > 2u) {
            dst[w + 1u] = (v.z & 0xffffu) | (v.w << 16u);
        }
        return;
    }
    dst[d >> 2u] = (v.x & 0xffu) | ((v.y & 0xffu) << 8u) | ((v.z & 0xffu) << 16u) | (v.w << 24u);
}

// Source element e of the block converted, or 0 outside it.
fn element(e: u32, inside: bool) -> u32 {
    if (!inside) {
        return 0u;
    }
    return cast_bits(load_src(e), SRC_TYPE, DST_TYPE);
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let t = invocation_index(gid);
    if (t >= plan_u[pz()].threads) {
        return;
    }
    let blk = transpose_block(t);
    let ri = min(4u, blk.m - blk.i0);
    let rj = min(4u, blk.n - blk.j0);
    // Column c of the block (dim-1 index j0 + c) is the destination run c: element r of it
    // comes from source run r (dim-0 index i0 + r).
    var col0 = vec4<u32>(0u);
    var col1 = vec4<u32>(0u);
    var col2 = vec4<u32>(0u);
    var col3 = vec4<u32>(0u);
    for (var r = 0u; r < 4u; r = r + 1u) {
        let s = blk.src + r * blk.src_row;
        let row = r < ri;
        let v = vec4<u32>(element(s, row), element(s + 1u, row && rj > 1u), element(s + 2u, row && rj > 2u), element(s + 3u, row && rj > 3u));
        col0 = pick(col0, r, v.x);
        col1 = pick(col1, r, v.y);
        col2 = pick(col2, r, v.z);
        col3 = pick(col3, r, v.w);
    }
    store_run(blk.dst, col0, ri);
    if (rj > 1u) {
        store_run(blk.dst + blk.dst_row, col1, ri);
    }
    if (rj > 2u) {
        store_run(blk.dst + 2u * blk.dst_row, col2, ri);
    }
    if (rj > 3u) {
        store_run(blk.dst + 3u * blk.dst_row, col3, ri);
    }
}

// c with component r set to x (by selects: a dynamic index costs a trip through memory).
fn pick(c: vec4<u32>, r: u32, x: u32) -> vec4<u32> {
    return select(c, vec4<u32>(x), vec4<u32>(0u, 1u, 2u, 3u) == vec4<u32>(r));
}
