// The window arithmetic of pool2d.wgsl and pool2d_vec.wgsl (after pool.wgsl): their element
// type, element bindings and loads, a window's span along one axis and bilinear taps.

// The element type's code (DT_F32, DT_F16, DT_BF16).
override DT: u32 = 0u;

@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;
@group(0) @binding(3) var<storage, read_write> idx: array<i32>;

// Input element i, as f32 (cast.wgsl).
fn load1(i: u32) -> f32 {
    if (DT == DT_F32) {
        return bitcast<f32>(src[i]);
    }
    let h = (src[i >> 1u] >> ((i & 1u) * 16u)) & 0xffffu;
    return bitcast<f32>(float_to_f32(DT, h));
}

// A window's first row (or column) at or past 0: its start s advanced by whole dilations d, as
// PyTorch's kernels start their index (inside the image or not).
fn first_tap(s: i32, d: i32) -> i32 {
    return select(s, s + ((-s + d - 1) / d) * d, s < 0);
}

// The window of output o along one axis: (first, end, step, divisor extent).
fn span(axis: u32, o: i32, size: i32, outs: i32) -> vec4<i32> {
    if (FAMILY == MODE_ADAPTIVE_MAX || FAMILY == MODE_ADAPTIVE_AVG) {
        let s = (o * size) / outs;
        let e = ((o + 1) * size + outs - 1) / outs;
        return vec4<i32>(s, e, 1, e - s);
    }
    let k = p_u[pz()].win[axis];
    let s = o * p_u[pz()].win[2u + axis] - p_u[pz()].pad[axis];
    if (FAMILY == MODE_AVG) {
        let e = min(s + k, size + p_u[pz()].pad[axis]);
        return vec4<i32>(max(s, 0), min(e, size), 1, e - s);
    }
    let d = p_u[pz()].pad[2u + axis];
    let e = min(s + (k - 1) * d + 1, size);
    return vec4<i32>(first_tap(s, d), e, d, 0);
}

// Bilinear taps of output o along one axis: (i0, i1) and (l0, l1).
fn taps(scale: f32, o: u32, size: u32) -> vec4<f32> {
    var real: f32;
    if (p_u[pz()].scale.z != 0.0) {
        real = scale * f32(o);
    } else {
        real = max(scale * (f32(o) + 0.5) - 0.5, 0.0);
    }
    let i0 = min(u32(real), size - 1u);
    var i1 = i0;
    // A scale of 1 (an unchanged size): the same index twice, as the host's taps.
    if (i0 < size - 1u && scale != 1.0) {
        i1 = i0 + 1u;
    }
    let l1 = real - f32(i0);
    return vec4<f32>(f32(i0), f32(i1), 1.0 - l1, l1);
}
