// Windowed ops on the (n, c) planes of a [N, C, H, W] input read in place through its strides:
// max / average pooling, adaptive max / average pooling and bilinear resampling. The family
// (FAMILY) and the element type (DT) are override constants, the rest is in the uniform
// (pool.wgsl; windows and taps: pool_window.wgsl): lavapipe runs every branch of a shader under
// masks, so one pipeline for every mode ran all the modes' code for each output (40 times
// slower). Each invocation computes the outputs of
// p.base.z consecutive 32-bit words of the dense output (in its memory order: NCHW or NHWC),
// so float16 and bfloat16 results are stored as whole words without atomics; values are read
// as f32 (cast.wgsl), accumulated in f32 and rounded once at the store. Max modes also write
// each maximum's h * W + w (int32) when asked; NaN wins (the last NaN of a window, as
// PyTorch's CPU kernel).

// Input element e, as f32.
fn load(e: i32) -> f32 {
    return load1(u32(e));
}

fn is_nan(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
}

// An output's coordinates.
struct Pos {
    n: u32,
    c: u32,
    oh: u32,
    ow: u32,
}

// The coordinates of output element e (in the output's memory order: NCHW or NHWC).
fn pos_of(e: u32) -> Pos {
    let C = p_u[pz()].geo.x;
    let OH = p_u[pz()].dims.x;
    let OW = p_u[pz()].dims.y;
    if (p_u[pz()].dims.z != 0u) {
        let t = e / C;
        let u = t / OW;
        return Pos(u / OH, e - t * C, u % OH, t - u * OW);
    }
    let t = e / OW;
    let u = t / OH;
    return Pos(u / C, u % C, t - u * OH, e - t * OW);
}

// Counts one up in the coordinate at `d`, of extent `size`: true when it wraps to 0 (carries).
fn carry(d: ptr<function, u32>, size: u32) -> bool {
    *d = *d + 1u;
    if (*d == size) {
        *d = 0u;
        return true;
    }
    return false;
}

// The next output in memory order (no division: one pass computes a run of outputs): the
// innermost coordinate counts up, each other one when the one inside it wraps. (The
// coordinates are locals: naga's SPIR-V writer fails on a pointer to a struct member as an
// argument.)
fn next(q: Pos) -> Pos {
    var n = q.n;
    var c = q.c;
    var oh = q.oh;
    var ow = q.ow;
    if (p_u[pz()].dims.z != 0u) {
        if (carry(&c, p_u[pz()].geo.x)) {
            if (carry(&ow, p_u[pz()].dims.y)) {
                if (carry(&oh, p_u[pz()].dims.x)) {
                    n = n + 1u;
                }
            }
        }
    } else {
        if (carry(&ow, p_u[pz()].dims.y)) {
            if (carry(&oh, p_u[pz()].dims.x)) {
                if (carry(&c, p_u[pz()].geo.x)) {
                    n = n + 1u;
                }
            }
        }
    }
    return Pos(n, c, oh, ow);
}

// Output q (element e in memory order): its value; writes its index when asked.
fn one(q: Pos, e: u32) -> f32 {
    let H = i32(p_u[pz()].geo.y);
    let W = i32(p_u[pz()].geo.z);
    let OH = p_u[pz()].dims.x;
    let OW = p_u[pz()].dims.y;
    let n = q.n;
    let c = q.c;
    let oh = q.oh;
    let ow = q.ow;
    let plane = i32(p_u[pz()].base.x) + i32(n) * p_u[pz()].xs.x + i32(c) * p_u[pz()].xs.y;
    let hs = p_u[pz()].xs.z;
    let ws = p_u[pz()].xs.w;
    let mode = FAMILY;
    if (mode == MODE_BILINEAR) {
        let th = taps(p_u[pz()].scale.x, oh, u32(H));
        let tw = taps(p_u[pz()].scale.y, ow, u32(W));
        let r0 = plane + i32(th.x) * hs;
        let r1 = plane + i32(th.y) * hs;
        let c0 = i32(tw.x) * ws;
        let c1 = i32(tw.y) * ws;
        return th.z * (tw.z * load(r0 + c0) + tw.w * load(r0 + c1)) + th.w * (tw.z * load(r1 + c0) + tw.w * load(r1 + c1));
    }
    let rs = span(0u, i32(oh), H, i32(OH));
    let cs = span(1u, i32(ow), W, i32(OW));
    if (mode == MODE_MAX || mode == MODE_ADAPTIVE_MAX) {
        var best = bitcast<f32>(0xff800000u);
        var at = rs.x * W + cs.x;
        for (var r = rs.x; r < rs.y; r = r + rs.z) {
            let row = plane + r * hs;
            for (var q = cs.x; q < cs.y; q = q + cs.z) {
                let v = load(row + q * ws);
                if (v > best || is_nan(v)) {
                    best = v;
                    at = r * W + q;
                }
            }
        }
        if (p_u[pz()].mode.w != 0u) {
            idx[e] = at;
        }
        return best;
    }
    if (rs.x >= rs.y || cs.x >= cs.y) {
        return 0.0;
    }
    var sum = 0.0;
    for (var r = rs.x; r < rs.y; r = r + 1) {
        let row = plane + r * hs;
        for (var q = cs.x; q < cs.y; q = q + 1) {
            sum = sum + load(row + q * ws);
        }
    }
    var divisor: i32;
    if (p_u[pz()].mode.z != 0u) {
        divisor = i32(p_u[pz()].mode.z);
    } else if (mode == MODE_AVG && p_u[pz()].mode.y != 0u) {
        divisor = rs.w * cs.w;
    } else {
        divisor = (rs.y - rs.x) * (cs.y - cs.x);
    }
    return sum / f32(divisor);
}

// A workgroup takes WG * p.base.z consecutive output words, each invocation p.base.z
// consecutive ones (one f32, or two 16-bit results, per word), finding the first output's
// coordinates by division and the others by counting.
@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let per = p_u[pz()].base.z;
    let first = ((wid.y * nwg.x + wid.x) * WG + lid) * per;
    let words = p_u[pz()].base.y;
    if (first >= words) {
        return;
    }
    let total = p_u[pz()].geo.w;
    var e = first;
    if (DT != DT_F32) {
        e = first * 2u;
    }
    var q = pos_of(e);
    for (var k = 0u; k < per; k = k + 1u) {
        let word = first + k;
        if (word >= words) {
            return;
        }
        if (DT == DT_F32) {
            dst[word] = bitcast<u32>(one(q, e));
            q = next(q);
            e = e + 1u;
        } else {
            let lo = f32_to_float(DT, bitcast<u32>(one(q, e))) & 0xffffu;
            q = next(q);
            var hi = 0u;
            if (e + 1u < total) {
                hi = f32_to_float(DT, bitcast<u32>(one(q, e + 1u))) & 0xffffu;
            }
            q = next(q);
            e = e + 2u;
            dst[word] = lo | (hi << 16u);
        }
    }
}
