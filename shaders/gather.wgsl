// Strided gather: dst[plan dst index] = convert(src[plan src index]) for every element.
// Each invocation moves up to EPT consecutive elements of plan dim 0, so the division work of
// plan_offsets is paid once per run. Elements of any size, through packed.wgsl.

override WG: u32 = 256u;
override EPT: u32 = 4u;
// Float kinds for conversion: 0 none (raw bits), 1 f32, 2 f16, 3 bf16.
override SRC_KIND: u32 = 0u;
override DST_KIND: u32 = 0u;

// Bit-exact twins of dtype.rs: f16_to_f32_bits, f32_to_f16_bits, f32_to_bf16_bits.
fn f16_to_f32(h: u32) -> u32 {
    let sign = (h & 0x8000u) << 16u;
    let exp = (h >> 10u) & 0x1fu;
    let man = h & 0x3ffu;
    if (exp == 0x1fu) {
        return sign | 0x7f800000u | (man << 13u);
    }
    if (exp != 0u) {
        return sign | ((exp + 112u) << 23u) | (man << 13u);
    }
    if (man == 0u) {
        return sign;
    }
    let shift = countLeadingZeros(man) - 21u;
    return sign | ((113u - shift) << 23u) | (((man << shift) & 0x3ffu) << 13u);
}

fn f32_to_f16(x: u32) -> u32 {
    let sign = (x >> 16u) & 0x8000u;
    let exp = i32((x >> 23u) & 0xffu);
    let man = x & 0x7fffffu;
    if (exp == 0xff) {
        var nan = 0u;
        if (man != 0u) {
            nan = 0x200u | (man >> 13u);
        }
        return sign | 0x7c00u | nan;
    }
    let e = exp - 112;
    if (e >= 0x1f) {
        return sign | 0x7c00u;
    }
    if (e <= 0) {
        if (e < -10) {
            return sign;
        }
        let m = man | 0x800000u;
        let shift = u32(14 - e);
        let half = 1u << (shift - 1u);
        let rest = m & ((1u << shift) - 1u);
        var r = m >> shift;
        if (rest > half || (rest == half && (r & 1u) == 1u)) {
            r = r + 1u;
        }
        return sign | r;
    }
    var r = (u32(e) << 10u) | (man >> 13u);
    let rest = man & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (r & 1u) == 1u)) {
        r = r + 1u;
    }
    return sign | r;
}

fn f32_to_bf16(x: u32) -> u32 {
    if ((x & 0x7fffffffu) > 0x7f800000u) {
        return (x >> 16u) | 0x40u;
    }
    return (x + 0x7fffu + ((x >> 16u) & 1u)) >> 16u;
}

fn convert(v: u32) -> u32 {
    if (SRC_KIND == DST_KIND) {
        return v;
    }
    var w = v;
    if (SRC_KIND == 2u) {
        w = f16_to_f32(v);
    } else if (SRC_KIND == 3u) {
        w = v << 16u;
    }
    if (DST_KIND == 2u) {
        return f32_to_f16(w);
    }
    if (DST_KIND == 3u) {
        return f32_to_bf16(w);
    }
    return w;
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let t = invocation_index(gid);
    if (t >= plan.threads) {
        return;
    }
    let n0 = plan.sizes[0].x;
    let row = t / plan.inner_chunks;
    let first = (t - row * plan.inner_chunks) * EPT;
    let base = plan_offsets(row * n0 + first);
    let ds = bitcast<u32>(plan.dst_strides[0].x);
    let ss = bitcast<u32>(plan.src_strides[0].x);
    let count = min(EPT, n0 - first);
    for (var e = 0u; e < count; e = e + 1u) {
        store(base.x + e * ds, convert(load(base.y + e * ss)));
    }
}
