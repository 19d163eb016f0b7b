// Strided gather: dst[plan dst index] = convert(src[plan src index]) for every element.
// Each invocation moves up to EPT consecutive elements of plan dim 0, so the division work of
// plan_offsets is paid once per run. Elements of any size, through packed.wgsl, of any two types.

override WG: u32 = 256u;
override EPT: u32 = 4u;
// Element types (dtype codes, DT_* in the generated dtypes prelude): elements convert from
// SRC_TYPE to DST_TYPE through cast.wgsl; equal types move bits untouched.
override SRC_TYPE: u32 = 0u;
override DST_TYPE: u32 = 0u;

fn convert(v: u32) -> u32 {
    if (SRC_TYPE == DST_TYPE) {
        return v;
    }
    return cast_bits(v, SRC_TYPE, DST_TYPE);
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let t = invocation_index(gid);
    if (t >= plan_u[pz()].threads) {
        return;
    }
    let n0 = plan_u[pz()].sizes[0].x;
    let row = t / plan_u[pz()].inner_chunks;
    let first = (t - row * plan_u[pz()].inner_chunks) * EPT;
    let base = plan_offsets(row * n0 + first);
    let ds = bitcast<u32>(plan_u[pz()].dst_strides[0].x);
    let ss = bitcast<u32>(plan_u[pz()].src_strides[0].x);
    let count = min(EPT, n0 - first);
    for (var e = 0u; e < count; e = e + 1u) {
        store(base.x + e * ds, convert(load(base.y + e * ss)));
    }
}
