// Batched 2-D transpose with vec4 loads and stores. A vec4 word holds U = 16 / EB elements
// (4 of 4 bytes, 8 of 2, 16 of 1); dims 0 and 1, the other strides and both offsets are
// multiples of U elements. Plan dim 0 is contiguous in the destination, plan dim 1 in the
// source, other dims are batch dims; the plan counts elements. Each invocation moves a
// TILE x TILE block as U x U sub-blocks: U vec4 loads along the source's contiguous dim, a
// transpose (and repacking of sub-word elements) in registers, U vec4 stores along the
// destination's. No workgroup memory, no barriers.

override WG: u32 = 64u;
override EB: u32 = 4u;

@group(0) @binding(1) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> dst: array<vec4<u32>>;

// One U x U sub-block of 1- or 2-byte elements: source rows start at element s (stride ss),
// destination rows at element d (stride ds), all multiples of U.
fn transpose_packed(s: u32, ss: u32, d: u32, ds: u32) {
    let u = 16u / EB;
    let per = 4u / EB;
    let bits = EB * 8u;
    let mask = 0xffffffffu >> (32u - bits);
    var a: array<vec4<u32>, 16>;
    for (var r = 0u; r < u; r = r + 1u) {
        a[r] = src[(s + r * ss) / u];
    }
    for (var c = 0u; c < u; c = c + 1u) {
        let wi = c / per;
        let sh = (c % per) * bits;
        var o = vec4<u32>(0u);
        for (var r = 0u; r < u; r = r + 1u) {
            o[r / per] = o[r / per] | (((a[r][wi] >> sh) & mask) << ((r % per) * bits));
        }
        dst[(d + c * ds) / u] = o;
    }
}

// One 8 x 8 sub-block of 2-byte elements, without a private array: row r's word w holds its
// columns 2w (low half) and 2w + 1 (high half), so destination row 2w takes the low halves of
// word w of the eight source rows and row 2w + 1 the high halves. (The generic form above
// indexes a private array by loop counters, which LLVM keeps in memory: the f16 layout
// conversion ran at half the copy kernel's speed on lavapipe.)
fn transpose_halves(s: u32, ss: u32, d: u32, ds: u32) {
    let a0 = src[s / 8u];
    let a1 = src[(s + ss) / 8u];
    let a2 = src[(s + 2u * ss) / 8u];
    let a3 = src[(s + 3u * ss) / 8u];
    let a4 = src[(s + 4u * ss) / 8u];
    let a5 = src[(s + 5u * ss) / 8u];
    let a6 = src[(s + 6u * ss) / 8u];
    let a7 = src[(s + 7u * ss) / 8u];
    let q = ds / 8u;
    let o = d / 8u;
    halves(vec4<u32>(a0.x, a2.x, a4.x, a6.x), vec4<u32>(a1.x, a3.x, a5.x, a7.x), o, q);
    halves(vec4<u32>(a0.y, a2.y, a4.y, a6.y), vec4<u32>(a1.y, a3.y, a5.y, a7.y), o + 2u * q, q);
    halves(vec4<u32>(a0.z, a2.z, a4.z, a6.z), vec4<u32>(a1.z, a3.z, a5.z, a7.z), o + 4u * q, q);
    halves(vec4<u32>(a0.w, a2.w, a4.w, a6.w), vec4<u32>(a1.w, a3.w, a5.w, a7.w), o + 6u * q, q);
}

// Destination rows o (the low halves of word w of the even and odd source rows) and o + q
// (the high halves).
fn halves(even: vec4<u32>, odd: vec4<u32>, o: u32, q: u32) {
    dst[o] = (even & vec4<u32>(0xffffu)) | (odd << vec4<u32>(16u));
    dst[o + q] = (even >> vec4<u32>(16u)) | (odd & vec4<u32>(0xffff0000u));
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let t = invocation_index(gid);
    if (t >= plan_u[pz()].threads) {
        return;
    }
    let blk = transpose_block(t);
    let u = 16u / EB;
    for (var sr = 0u; sr < TILE; sr = sr + u) {
        if (blk.i0 + sr >= blk.m) {
            break;
        }
        for (var sc = 0u; sc < TILE; sc = sc + u) {
            if (blk.j0 + sc >= blk.n) {
                break;
            }
            if (EB == 2u) {
                transpose_halves(blk.src + sr * blk.src_row + sc, blk.src_row, blk.dst + sc * blk.dst_row + sr, blk.dst_row);
                continue;
            }
            if (EB != 4u) {
                transpose_packed(blk.src + sr * blk.src_row + sc, blk.src_row, blk.dst + sc * blk.dst_row + sr, blk.dst_row);
                continue;
            }
            let s = (blk.src + sr * blk.src_row + sc) >> 2u;
            // The source row stride may be negative (a flipped view): shift it arithmetically.
            let q = bitcast<u32>(bitcast<i32>(blk.src_row) >> 2u);
            let a = src[s];
            let b = src[s + q];
            let c = src[s + 2u * q];
            let d = src[s + 3u * q];
            let o = (blk.dst + sc * blk.dst_row + sr) >> 2u;
            let p = blk.dst_row >> 2u;
            dst[o] = vec4<u32>(a.x, b.x, c.x, d.x);
            dst[o + p] = vec4<u32>(a.y, b.y, c.y, d.y);
            dst[o + 2u * p] = vec4<u32>(a.z, b.z, c.z, d.z);
            dst[o + 3u * p] = vec4<u32>(a.w, b.w, c.w, d.w);
        }
    }
}
