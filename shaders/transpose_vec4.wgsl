// Batched 2-D transpose with vec4 loads and stores, for plans whose dims 0 and 1 have sizes,
// strides and offsets that are multiples of 4 elements (4-byte elements). Plan dim 0 is
// contiguous in the destination, plan dim 1 in the source, other dims are batch dims; the
// plan counts elements. Each invocation moves a TILE x TILE block as 4x4 sub-blocks: four
// vec4 loads along the source's contiguous dim, a transpose in registers, four vec4 stores
// along the destination's. No workgroup memory, no barriers.

override WG: u32 = 64u;
override TILE: u32 = 4u;
override ORDER: u32 = 0u;

@group(0) @binding(1) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> dst: array<vec4<u32>>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let t = invocation_index(gid);
    if (t >= plan.threads) {
        return;
    }
    let m = plan.sizes[0].x;
    let n = plan.sizes[0].y;
    let bm = plan.inner_chunks;
    let bn = plan.aux;
    let per_batch = bm * bn;
    let batch = t / per_batch;
    let k = t - batch * per_batch;
    var bi: u32;
    var bj: u32;
    if (ORDER == 0u) {
        bj = k / bm;
        bi = k - bj * bm;
    } else {
        bi = k / bn;
        bj = k - bi * bn;
    }
    let i0 = bi * TILE;
    let j0 = bj * TILE;
    let base = plan_offsets((batch * n + j0) * m + i0);
    let ds1 = bitcast<u32>(plan.dst_strides[0].y);
    let ss0 = bitcast<u32>(plan.src_strides[0].x);
    for (var sr = 0u; sr < TILE; sr = sr + 4u) {
        if (i0 + sr >= m) {
            break;
        }
        for (var sc = 0u; sc < TILE; sc = sc + 4u) {
            if (j0 + sc >= n) {
                break;
            }
            let s = (base.y + sr * ss0 + sc) >> 2u;
            let q = ss0 >> 2u;
            let a = src[s];
            let b = src[s + q];
            let c = src[s + 2u * q];
            let d = src[s + 3u * q];
            let o = (base.x + sc * ds1 + sr) >> 2u;
            let p = ds1 >> 2u;
            dst[o] = vec4<u32>(a.x, b.x, c.x, d.x);
            dst[o + p] = vec4<u32>(a.y, b.y, c.y, d.y);
            dst[o + 2u * p] = vec4<u32>(a.z, b.z, c.z, d.z);
            dst[o + 3u * p] = vec4<u32>(a.w, b.w, c.w, d.w);
        }
    }
}
