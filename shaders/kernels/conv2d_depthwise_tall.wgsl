// Depthwise 3x3 convolution with unit stride and dilation (groups == C), NHWC orientation,
// walking down a column: each invocation computes 4 output channels (one vec4) x 8 consecutive
// output pixels (a strip) of TALL consecutive output rows. It keeps the 3 input rows under the
// current output row (10 columns each, named) and the 9 taps' weights in registers, so that
// each output row loads one new input row: 10 input vec4 words per 8 stored, against 30 in
// conv2d_depthwise_rows.wgsl, and 9 weight words per TALL rows instead of per row; with
// subgroups, columns 8 and 9 come from the next lane (conv2d_depthwise_cols_shuffled.wgsl), so
// 8 per 8. Shaped for CPU adapters (about 50 vec4 values live per invocation: a candidate
// only where the device type is Cpu). Every invocation runs all TALL rows (rows past OH and
// invocations past the work store nothing), so the shuffles stay in uniform control flow.
// Uniform, loads and stores: conv2d_depthwise_block; lanes: conv2d_depthwise_cols*.

// Output rows per invocation.
override TALL: u32 = 8u;

// 10 consecutive columns (4 channels each) of one input row: the 8 output pixels of a strip
// and the 2 columns right of them that the 3 taps of a row reach.
struct Row {
    c0: vec4<f32>,
    c1: vec4<f32>,
    c2: vec4<f32>,
    c3: vec4<f32>,
    c4: vec4<f32>,
    c5: vec4<f32>,
    c6: vec4<f32>,
    c7: vec4<f32>,
    c8: vec4<f32>,
    c9: vec4<f32>,
}

// One output row's 8 pixels.
struct Out {
    a0: vec4<f32>,
    a1: vec4<f32>,
    a2: vec4<f32>,
    a3: vec4<f32>,
    a4: vec4<f32>,
    a5: vec4<f32>,
    a6: vec4<f32>,
    a7: vec4<f32>,
}

struct Pair {
    a: vec4<f32>,
    b: vec4<f32>,
}

// `ld` without a branch: the column clamped into the image, the value zeroed outside it or
// outside the rows (`row`) (on lavapipe a branch per column costs about a fifth of the
// kernel's time).
fn ldz(at: i32, ix: i32, k0: u32, row: bool) -> vec4<f32> {
    let v = ld_inside(at, clamp(ix, 0, i32(rp_u[pz()].geo.y) - 1), k0);
    return select(vec4<f32>(0.0), v, row && ix >= 0 && ix < i32(rp_u[pz()].geo.y));
}

// Input row iy of image n from column ix0 on (zeros above and below the image and left and
// right of it; nothing for an invocation past the work, `live` false).
fn load_row(l: Lanes, n: u32, iy: i32, ix0: i32, k0: u32, live: bool, last: bool) -> Row {
    let row = live && iy >= 0 && iy < i32(rp_u[pz()].geo.x);
    let at = rp_u[pz()].base.x + i32(n) * rp_u[pz()].xs.x + clamp(iy, 0, i32(rp_u[pz()].geo.x) - 1) * rp_u[pz()].xs.z;
    let c0 = ldz(at, ix0, k0, row);
    let c1 = ldz(at, ix0 + 1, k0, row);
    let right = right_cols(l, c0, c1, at, ix0, k0, row, last);
    return Row(c0, c1, ldz(at, ix0 + 2, k0, row), ldz(at, ix0 + 3, k0, row), ldz(at, ix0 + 4, k0, row), ldz(at, ix0 + 5, k0, row), ldz(at, ix0 + 6, k0, row), ldz(at, ix0 + 7, k0, row), right.a, right.b);
}

// o plus one kernel row's three taps (weights w0, w1, w2) over input row r.
fn taps(o: Out, r: Row, w0: vec4<f32>, w1: vec4<f32>, w2: vec4<f32>) -> Out {
    return Out(
        o.a0 + w0 * r.c0 + w1 * r.c1 + w2 * r.c2,
        o.a1 + w0 * r.c1 + w1 * r.c2 + w2 * r.c3,
        o.a2 + w0 * r.c2 + w1 * r.c3 + w2 * r.c4,
        o.a3 + w0 * r.c3 + w1 * r.c4 + w2 * r.c5,
        o.a4 + w0 * r.c4 + w1 * r.c5 + w2 * r.c6,
        o.a5 + w0 * r.c5 + w1 * r.c6 + w2 * r.c7,
        o.a6 + w0 * r.c6 + w1 * r.c7 + w2 * r.c8,
        o.a7 + w0 * r.c7 + w1 * r.c8 + w2 * r.c9,
    );
}

@compute @workgroup_size(WG)
fn main(l: Lanes) {
    let u = slot(l);
    let live = u < rp_u[pz()].work.x;
    // u = ((n * blocks + block) * quads + kq) * strips + strip: neighbouring invocations take
    // neighbouring strips of one row of one channel quad.
    let strip = u % rp_u[pz()].strips.x;
    let s = u / rp_u[pz()].strips.x;
    let kq = s % rp_u[pz()].work.w;
    let col = s / rp_u[pz()].work.w;
    let block = col % rp_u[pz()].strips.y;
    let n = select(0u, col / rp_u[pz()].strips.y, live);
    let last = strip + 1u == rp_u[pz()].strips.x;
    let k0 = 4u * kq;
    let ox0 = 8u * strip;
    let ix0 = i32(ox0) - rp_u[pz()].conv.w;
    let oy0 = block * TALL;
    let w00 = wp[kq];
    let w01 = wp[rp_u[pz()].work.w + kq];
    let w02 = wp[2u * rp_u[pz()].work.w + kq];
    let w10 = wp[3u * rp_u[pz()].work.w + kq];
    let w11 = wp[4u * rp_u[pz()].work.w + kq];
    let w12 = wp[5u * rp_u[pz()].work.w + kq];
    let w20 = wp[6u * rp_u[pz()].work.w + kq];
    let w21 = wp[7u * rp_u[pz()].work.w + kq];
    let w22 = wp[8u * rp_u[pz()].work.w + kq];
    let b = vec4<f32>(bias_at(k0), bias_at(k0 + 1u), bias_at(k0 + 2u), bias_at(k0 + 3u));
    // Input row of output row oy under kernel row ky: oy - ph + ky.
    let iy0 = i32(oy0) - rp_u[pz()].conv.z;
    var top = load_row(l, n, iy0, ix0, k0, live, last);
    var mid = load_row(l, n, iy0 + 1, ix0, k0, live, last);
    for (var r = 0u; r < TALL; r = r + 1u) {
        let bottom = load_row(l, n, iy0 + 2 + i32(r), ix0, k0, live, last);
        let o = taps(taps(taps(Out(), top, w00, w01, w02), mid, w10, w11, w12), bottom, w20, w21, w22);
        let oy = oy0 + r;
        if (live && oy < rp_u[pz()].geo.z) {
            put(n, oy, ox0, k0, o.a0, b);
            put(n, oy, ox0 + 1u, k0, o.a1, b);
            put(n, oy, ox0 + 2u, k0, o.a2, b);
            put(n, oy, ox0 + 3u, k0, o.a3, b);
            put(n, oy, ox0 + 4u, k0, o.a4, b);
            put(n, oy, ox0 + 5u, k0, o.a5, b);
            put(n, oy, ox0 + 6u, k0, o.a6, b);
            put(n, oy, ox0 + 7u, k0, o.a7, b);
        }
        top = mid;
        mid = bottom;
    }
}
