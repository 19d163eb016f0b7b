// The general reduction kernel's bindings and element access: any input and output type,
// sub-word outputs stored through atomics (neighbouring outputs share a word: packed_store.wgsl,
// after this prelude). Needs the generated `dtypes` prelude, `cast` and `reduce`.

@group(0) @binding(1) var<storage, read_write> out: array<atomic<u32>>;
@group(0) @binding(2) var<storage, read> src: array<u32>;
@group(0) @binding(3) var<storage, read_write> indices: array<u32>;
// Part states (mode 1 writes, 2 and 3 read): outputs * parts of them, then one per row.
@group(0) @binding(4) var<storage, read_write> partials: array<vec4<u32>>;

fn load_bits(e: u32) -> u32 {
    let b = dt_bytes(red_u[pz()].in_t);
    if (b == 4u) {
        return src[e];
    }
    if (b == 2u) {
        return (src[e >> 1u] >> ((e & 1u) * 16u)) & 0xffffu;
    }
    return (src[e >> 2u] >> ((e & 3u) * 8u)) & 0xffu;
}

// Input element e converted to the reduction's type, as f32 (float types) or i32.
fn load_f(e: u32) -> f32 {
    if (F32) {
        return bitcast<f32>(src[e]);
    }
    return bitcast<f32>(float_to_f32(red_u[pz()].cast_t, cast_bits(load_bits(e), red_u[pz()].in_t, red_u[pz()].cast_t)));
}
fn load_i(e: u32) -> i32 {
    return bitcast<i32>(int_widen(red_u[pz()].cast_t, cast_bits(load_bits(e), red_u[pz()].in_t, red_u[pz()].cast_t)));
}

fn store_bits(e: u32, v: u32) {
    if (F32) {
        atomicStore(&out[e], v);
        return;
    }
    store_packed(e, v, dt_bytes(red_u[pz()].out_t));
}

// An f32 result rounded once to the output's float type.
fn store_f(e: u32, x: f32) {
    if (F32) {
        atomicStore(&out[e], bitcast<u32>(x));
        return;
    }
    store_bits(e, f32_to_float(red_u[pz()].out_t, bitcast<u32>(x)));
}

