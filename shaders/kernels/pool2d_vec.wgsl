// The window family of pool2d.wgsl (max, average and adaptive pooling, bilinear resampling),
// four channels at a time: each invocation takes 4 consecutive channels c0..c0+3 of one image
// and computes them for p.dims.w consecutive output pixels (in (oh, ow) order), so that the
// window's bounds, its index arithmetic, the loop control and bilinear weights are paid once
// per 4 outputs (the 4 loads of a tap read consecutive words when the input is channels-last;
// they are scalar loads, so any input strides are read). Along a row, bilinear keeps the two
// input columns of the last output, and max pooling the maxima of the last window column,
// for the next output (an x2 upsampling loads one new column every other output, a 3x3
// stride-2 max pooling 2 columns of 3). CL (override) says how the dense output is laid out
// and which neighbour invocations take: 1 channels-last (invocations along C first, each
// writing 4 consecutive output elements: f32, or 16-bit types with C even), 0 NCHW
// (invocations along the pixels first; f32 only, as 16-bit outputs pack two pixels a word).
// Channels past C (C not a multiple of 4) read channel C - 1 and are not written. FAMILY and
// DT are override constants as in pool2d.wgsl (lavapipe runs every branch under masks), and
// so are the specializations the host picks: TAPS3 (max pooling over at most 3 x 3 taps,
// unrolled: no loop bounds, no column reuse branch, both of which lavapipe runs masked for
// every output), INDICES (none stored), WORDS (a tap's 4 channels as one 16-byte load, an
// output's as one store) and X2 (bilinear x2 along W in pairs of outputs).

// 1: the output is channels-last; 0: NCHW.
override CL: u32 = 0u;
// 1: max pooling of windows of at most 3 x 3 taps, unrolled (the host checks the window).
override TAPS3: u32 = 0u;
// 1: a float32 channels-last input and output whose 4 channels are one aligned 16-byte word
// each (the host checks strides and offsets): loaded and stored as words through src4 and
// dst4, one access where lavapipe otherwise makes 4 (dst is then a spare, as is dst4 otherwise).
override WORDS: u32 = 0u;
// 0: TAPS3 max pooling that writes no indices (it still orders the taps by them).
override INDICES: u32 = 1u;
// 1: bilinear x2 upsampling along W (column scale 1/2, align_corners false; the host checks),
// in runs of whole pairs of outputs, which load one new input column a pair.
override X2: u32 = 0u;

@group(0) @binding(4) var<storage, read> src4: array<vec4<u32>>;
@group(0) @binding(5) var<storage, read_write> dst4: array<vec4<u32>>;

// The 4 channels at element e, the others at e + cs.y, e + cs.z, e + cs.w (with WORDS, the
// 16-byte word at e).
fn load4(e: i32, cs: vec4<i32>) -> vec4<f32> {
    if (WORDS != 0u) {
        return bitcast<vec4<f32>>(src4[u32(e) >> 2u]);
    }
    let i = vec4<u32>(vec4<i32>(e) + cs);
    return vec4<f32>(load1(i.x), load1(i.y), load1(i.z), load1(i.w));
}

// One output pixel's 4 channels (plane: the channels' first element at row 0, column 0) and,
// for max modes, their indices h * W + w.
struct Out {
    v: vec4<f32>,
    at: vec4<i32>,
}

// The maxima of column q over the rows rs of a window, and their indices: the first maximum
// of the column, or its last NaN.
fn column(plane: i32, cs: vec4<i32>, rs: vec4<i32>, q: i32) -> Out {
    let W = i32(p_u[pz()].geo.z);
    var best = vec4<f32>(bitcast<f32>(0xff800000u));
    var at = vec4<i32>(rs.x * W + q);
    for (var r = rs.x; r < rs.y; r = r + rs.z) {
        let v = load4(plane + r * p_u[pz()].xs.z + q * p_u[pz()].xs.w, cs);
        let m = (v > best) | nan4(v);
        best = select(best, v, m);
        at = select(at, vec4<i32>(r * W + q), m);
    }
    return Out(best, at);
}

// TAPS3 max pooling's window rows for one output row (at most 3): each row's offset (rows
// outside the image clamped, and masked by ok), its index and the window's first row at or
// past 0 (first_tap).
struct Rows3 {
    at: vec3<i32>,
    r: vec3<i32>,
    ok: vec3<bool>,
    first: i32,
}

fn rows3(plane: i32, oh: u32) -> Rows3 {
    let H = i32(p_u[pz()].geo.y);
    let r = vec3<i32>(i32(oh) * p_u[pz()].win.z - p_u[pz()].pad.x) + vec3<i32>(0, 1, 2) * p_u[pz()].pad.z;
    let ok = (vec3<i32>(0, 1, 2) < vec3<i32>(p_u[pz()].win.x)) & (r >= vec3<i32>(0)) & (r < vec3<i32>(H));
    let first = first_tap(r.x, p_u[pz()].pad.z);
    return Rows3(vec3<i32>(plane) + clamp(r, vec3<i32>(0), vec3<i32>(H - 1)) * p_u[pz()].xs.z, r, ok, first);
}

// The maxima of the window rows at column q (a tap of the window when `tap`) and their
// indices: the first maximum, the last NaN (the row-major scan of pool2d.wgsl, within a
// column). A column that is no tap, or outside the image, is -inf at the largest index, which
// every combination passes over.
fn column3(w: Rows3, cs: vec4<i32>, q: i32, tap: bool) -> Out {
    let W = i32(p_u[pz()].geo.z);
    let inside = tap && q >= 0 && q < W;
    let qc = clamp(q, 0, W - 1) * p_u[pz()].xs.w;
    var best = vec4<f32>(bitcast<f32>(0xff800000u));
    var at = vec4<i32>(select(0x7fffffff, w.first * W + q, inside));
    for (var i = 0; i < 3; i = i + 1) {
        let v = load4(w.at[i] + qc, cs);
        let m = vec4<bool>(inside && w.ok[i]) & ((v > best) | nan4(v));
        best = select(best, v, m);
        at = select(at, vec4<i32>(w.r[i] * W + q), m);
    }
    return Out(best, at);
}

// Two columns' maxima combined as the row-major scan would: the larger value, of equal ones
// the smaller index, of NaNs the larger index. Also without INDICES: which of +0.0 and -0.0,
// and which NaN's payload, a window gives depends on that order (PyTorch's and the host's).
fn combine(a: Out, b: Out) -> Out {
    let m = (b.v > a.v) | ((b.v == a.v) & (b.at < a.at)) | (nan4(b.v) & (!nan4(a.v) | (b.at > a.at)));
    return Out(select(a.v, b.v, m), select(a.at, b.at, m));
}

// Average pooling (plain or adaptive) of one output pixel's 4 channels.
fn pixel(plane: i32, cs: vec4<i32>, oh: u32, ow: u32) -> Out {
    let H = i32(p_u[pz()].geo.y);
    let W = i32(p_u[pz()].geo.z);
    let hs = p_u[pz()].xs.z;
    let ws = p_u[pz()].xs.w;
    let rs = span(0u, i32(oh), H, i32(p_u[pz()].dims.x));
    let qs = span(1u, i32(ow), W, i32(p_u[pz()].dims.y));
    var sum = vec4<f32>(0.0);
    // Windows of at most 2x2 taps inside the image (the common 2x2 average pooling) without
    // the loops, whose per-lane bounds cost lavapipe about a sixth of this row's time.
    if (FAMILY == MODE_AVG && rs.y - rs.x <= 2 && qs.y - qs.x <= 2) {
        let row = plane + rs.x * hs + qs.x * ws;
        let two_r = rs.y - rs.x == 2;
        let two_q = qs.y - qs.x == 2;
        sum = load4(row, cs);
        if (two_q) {
            sum = sum + load4(row + ws, cs);
        }
        if (two_r) {
            sum = sum + load4(row + hs, cs);
            if (two_q) {
                sum = sum + load4(row + hs + ws, cs);
            }
        }
    } else {
        for (var r = rs.x; r < rs.y; r = r + 1) {
            let row = plane + r * hs;
            for (var q = qs.x; q < qs.y; q = q + 1) {
                sum = sum + load4(row + q * ws, cs);
            }
        }
    }
    if (rs.x >= rs.y || qs.x >= qs.y) {
        return Out(vec4<f32>(0.0), vec4<i32>(0));
    }
    // The divisor override, else the window with its padding (count_include_pad), else the
    // taps inside the image; selects, not branches (lavapipe runs every branch).
    var divisor = (rs.y - rs.x) * (qs.y - qs.x);
    if (FAMILY == MODE_AVG) {
        divisor = select(divisor, rs.w * qs.w, p_u[pz()].mode.y != 0u);
    }
    divisor = select(divisor, i32(p_u[pz()].mode.z), p_u[pz()].mode.z != 0u);
    return Out(sum / f32(divisor), vec4<i32>(0));
}

// Whether the call writes indices: max modes only (a constant false for the others, whose
// pipelines then hold no index stores: lavapipe runs a branch's masked stores even when no
// lane takes it).
fn writes_indices() -> bool {
    return (FAMILY == MODE_MAX || FAMILY == MODE_ADAPTIVE_MAX) && INDICES != 0u && p_u[pz()].mode.w != 0u;
}

// A 16-bit pair's word: the element-type bits of a (low half) and b.
fn pack2(a: f32, b: f32) -> u32 {
    return (f32_to_float(DT, bitcast<u32>(a)) & 0xffffu) | (f32_to_float(DT, bitcast<u32>(b)) << 16u);
}

// Bilinear's column q of the input rows r0 and r1, blended by the row weights th.zw.
fn blend(r0: i32, r1: i32, q: i32, th: vec4<f32>, cs: vec4<i32>) -> vec4<f32> {
    let e = q * p_u[pz()].xs.w;
    return th.z * load4(r0 + e, cs) + th.w * load4(r1 + e, cs);
}

// Stores output pixel px (in (oh, ow) order) of image n, channels c0.. (those in `valid`), and
// its indices when the call writes them.
fn store(n: u32, px: u32, c0: u32, valid: vec4<bool>, o: Out) {
    let C = p_u[pz()].geo.x;
    let pixels = p_u[pz()].dims.x * p_u[pz()].dims.y;
    if (CL != 0u) {
        let e = (n * pixels + px) * C + c0;
        if (WORDS != 0u) {
            dst4[e >> 2u] = bitcast<vec4<u32>>(o.v);
        } else if (DT == DT_F32) {
            for (var k = 0u; k < 4u; k = k + 1u) {
                if (valid[k]) {
                    dst[e + k] = bitcast<u32>(o.v[k]);
                }
            }
        } else {
            // C even: e is even and the channels come in whole pairs.
            dst[e >> 1u] = pack2(o.v.x, o.v.y);
            if (valid.z) {
                dst[(e >> 1u) + 1u] = pack2(o.v.z, o.v.w);
            }
        }
        if (writes_indices()) {
            for (var k = 0u; k < 4u; k = k + 1u) {
                if (valid[k]) {
                    idx[e + k] = o.at[k];
                }
            }
        }
    } else {
        let e = (n * C + c0) * pixels + px;
        for (var k = 0u; k < 4u; k = k + 1u) {
            if (valid[k]) {
                dst[e + k * pixels] = bitcast<u32>(o.v[k]);
                if (writes_indices()) {
                    idx[e + k * pixels] = o.at[k];
                }
            }
        }
    }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let t = (wid.y * nwg.x + wid.x) * WG + lid;
    if (t >= p_u[pz()].base.y) {
        return;
    }
    let C = p_u[pz()].geo.x;
    let groups = p_u[pz()].geo.w;
    let OH = p_u[pz()].dims.x;
    let OW = p_u[pz()].dims.y;
    // Runs of p.dims.w pixels within one output row, p.dims.z of them a row.
    let blocks = OH * p_u[pz()].dims.z;
    var g: u32;
    var b: u32;
    var n: u32;
    if (CL != 0u) {
        let r = t / groups;
        g = t - r * groups;
        n = r / blocks;
        b = r - n * blocks;
    } else {
        let r = t / blocks;
        b = t - r * blocks;
        n = r / groups;
        g = r - n * groups;
    }
    let c0 = g * 4u;
    let last = i32(C - 1u - c0);
    let cs = vec4<i32>(0, min(1, last), min(2, last), min(3, last)) * p_u[pz()].xs.y;
    let plane = i32(p_u[pz()].base.x) + i32(n) * p_u[pz()].xs.x + i32(c0) * p_u[pz()].xs.y;
    let pixels = OH * OW;
    let oh = b / p_u[pz()].dims.z;
    var ow = (b - oh * p_u[pz()].dims.z) * p_u[pz()].dims.w;
    let first = oh * OW + ow;
    let end = first + min(p_u[pz()].dims.w, OW - ow);
    let valid = vec4<i32>(0, 1, 2, 3) <= vec4<i32>(last);
    // Bilinear: the input rows of the current output row, and the two input columns (their
    // top and bottom values) of the previous output, which the next output along the row
    // mostly reads again (an x2 upsampling loads one new column every other output).
    var th = vec4<f32>(0.0);
    var r0 = 0;
    var r1 = 0;
    var ca = -1;
    var cb = -1;
    var at = vec4<f32>(0.0);
    var ab = vec4<f32>(0.0);
    var bt = vec4<f32>(0.0);
    var bb = vec4<f32>(0.0);
    if (FAMILY == MODE_BILINEAR) {
        th = taps(p_u[pz()].scale.x, oh, p_u[pz()].geo.y);
        r0 = plane + i32(th.x) * p_u[pz()].xs.z;
        r1 = plane + i32(th.y) * p_u[pz()].xs.z;
    }
    if (FAMILY == MODE_BILINEAR && X2 != 0u) {
        // Output 2i reads columns (i - 1, i) weighted (1/4, 3/4), output 2i + 1 columns (i,
        // i + 1) weighted (3/4, 1/4), as PyTorch's rule, except at the row's ends: output 0
        // reads columns (1, 0) weighted (0, 1) (a NaN in column 1 is NaN there too), the last
        // output column W - 1 twice. The run starts at an even ow.
        let edge = i32(p_u[pz()].geo.z) - 1;
        var i = i32(ow >> 1u);
        var a = blend(r0, r1, select(i - 1, min(1, edge), i == 0), th, cs);
        var b = blend(r0, r1, i, th, cs);
        for (var px = first; px < end; px = px + 2u) {
            let c = blend(r0, r1, min(i + 1, edge), th, cs);
            let wa = select(0.25, 0.0, i == 0);
            store(n, px, c0, valid, Out(wa * a + (1.0 - wa) * b, vec4<i32>(0)));
            store(n, px + 1u, c0, valid, Out(0.75 * b + 0.25 * c, vec4<i32>(0)));
            a = b;
            b = c;
            i = i + 1;
        }
        return;
    }
    // Max modes: the last column computed (kq) and its maxima, reused when the next window
    // of the row starts there; TAPS3: the window rows, and the run's first column.
    var kq = -1;
    var kept = Out(vec4<f32>(0.0), vec4<i32>(0));
    var rows: Rows3;
    if (FAMILY == MODE_MAX && TAPS3 != 0u) {
        rows = rows3(plane, oh);
        if (TAPS3 == 2u) {
            kept = column3(rows, cs, i32(ow) * p_u[pz()].win.w - p_u[pz()].pad.y, true);
        }
    }
    for (var px = first; px < end; px = px + 1u) {
        var o: Out;
        if (FAMILY == MODE_BILINEAR) {
            let tw = taps(p_u[pz()].scale.y, ow, p_u[pz()].geo.z);
            let i0 = i32(tw.x);
            let i1 = i32(tw.y);
            if (i0 != ca) {
                if (i0 == cb) {
                    at = bt;
                    ab = bb;
                } else {
                    at = load4(r0 + i0 * p_u[pz()].xs.w, cs);
                    ab = load4(r1 + i0 * p_u[pz()].xs.w, cs);
                }
                ca = i0;
            }
            if (i1 != cb) {
                bt = load4(r0 + i1 * p_u[pz()].xs.w, cs);
                bb = load4(r1 + i1 * p_u[pz()].xs.w, cs);
                cb = i1;
            }
            o = Out(th.z * (tw.z * at + tw.w * bt) + th.w * (tw.z * ab + tw.w * bb), vec4<i32>(0));
        } else if (FAMILY == MODE_MAX && TAPS3 != 0u) {
            // Window columns q0, q0 + dw, q0 + 2 dw; with TAPS3 == 2 (3 columns, stride 2 dw)
            // the first is the last output's third, kept.
            let q0 = i32(ow) * p_u[pz()].win.w - p_u[pz()].pad.y;
            var c0 = kept;
            if (TAPS3 != 2u) {
                c0 = column3(rows, cs, q0, true);
            }
            let c2 = column3(rows, cs, q0 + 2 * p_u[pz()].pad.w, p_u[pz()].win.y > 2);
            o = combine(combine(c0, column3(rows, cs, q0 + p_u[pz()].pad.w, p_u[pz()].win.y > 1)), c2);
            kept = c2;
            if (INDICES != 0u) {
                // A window of -inf (or with no tap inside the image) keeps the index its scan
                // starts from: the first row and column at or past 0, as pool2d.wgsl.
                let start = rows.first * i32(p_u[pz()].geo.z) + first_tap(q0, p_u[pz()].pad.w);
                o = combine(o, Out(vec4<f32>(bitcast<f32>(0xff800000u)), vec4<i32>(start)));
            }
        } else if (FAMILY == MODE_MAX || FAMILY == MODE_ADAPTIVE_MAX) {
            // Column by column, the window's last column kept for the next output, whose
            // first column it often is (3x3 windows of stride 2 load 6 columns' worth of 9).
            // Columns combine in any order as the row-major scan of pool2d.wgsl: the larger
            // value, of equal ones the smaller index, of NaNs the larger index.
            let rs = span(0u, i32(oh), i32(p_u[pz()].geo.y), i32(OH));
            let qs = span(1u, i32(ow), i32(p_u[pz()].geo.z), i32(OW));
            var best = vec4<f32>(bitcast<f32>(0xff800000u));
            var at = vec4<i32>(rs.x * i32(p_u[pz()].geo.z) + qs.x);
            for (var q = qs.x; q < qs.y; q = q + qs.z) {
                if (q != kq) {
                    kept = column(plane, cs, rs, q);
                    kq = q;
                }
                let m = (kept.v > best) | ((kept.v == best) & (kept.at < at)) | (nan4(kept.v) & (!nan4(best) | (kept.at > at)));
                best = select(best, kept.v, m);
                at = select(at, kept.at, m);
            }
            o = Out(best, at);
        } else {
            o = pixel(plane, cs, oh, ow);
        }
        store(n, px, c0, valid, o);
        ow = ow + 1u;
    }
}
