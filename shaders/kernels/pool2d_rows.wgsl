// NCHW windows with 4 output columns to a 16-byte word: max pooling of 3-column windows at
// column stride 2 (pw 0 or 1; at most 3 rows at any stride, padding and dilation; no indices),
// 2x2 average pooling at stride 2 with every window inside the image, and bilinear x2 along W
// (align_corners false; rows at any scale). The input is float32 NCHW
// whose rows are whole aligned words (unit stride along W, W, the other strides and the offset
// multiples of 4: the host checks), the output dense NCHW with rows of whole words. Each
// invocation takes a run of output words along one output row of one (n, c) plane; its input
// words are loaded once along the run, the last ones kept for the next word (lavapipe pays per
// load instruction, whatever its width; a GPU reads whole lines). Window columns past the row
// are words outside it: -inf for max, the edge column for bilinear. FAMILY (pool.wgsl): 0 max
// pooling, 1 2x2 average pooling, 4 bilinear x2; the uniform's members as pool.wgsl says for
// "rows".

@group(0) @binding(1) var<storage, read> src4: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> dst4: array<vec4<u32>>;

// Word k of the input row starting at word `row`, k clamped to the row.
fn word(row: i32, k: i32) -> vec4<f32> {
    return bitcast<vec4<f32>>(src4[u32(row + clamp(k, 0, i32(p_u[pz()].geo.w) - 1))]);
}

// The maxima of 4 window columns and the window rows (0..2; 3 none) they come from.
struct Col {
    v: vec4<f32>,
    r: vec4<i32>,
}

// Two window columns' maxima, a's column left of b's, combined as the row-major scan of
// pool2d.wgsl: the larger value, of equal ones the one in the earlier row (a's in the same
// row), of NaNs the one in the later row (b's in the same row). Which of +0.0 and -0.0, and
// which NaN's payload, a window gives depends on that order.
fn mx(a: Col, b: Col) -> Col {
    let m = (b.v > a.v) | ((b.v == a.v) & (b.r < a.r)) | (nan4(b.v) & (!nan4(a.v) | (b.r >= a.r)));
    return Col(select(a.v, b.v, m), select(a.r, b.r, m));
}

// Lanes (x, y, z, w) of a window's columns from the lanes (i, j) of a and (k, l) of b.
fn lanes(a: Col, b: Col, i: u32, j: u32, k: u32, l: u32) -> Col {
    return Col(vec4<f32>(a.v[i], a.v[j], b.v[k], b.v[l]), vec4<i32>(a.r[i], a.r[j], b.r[k], b.r[l]));
}

// Max pooling's window rows of one output row: each row's first word (rows outside the image
// clamped, and masked by ok).
struct Rows3 {
    at: vec3<i32>,
    ok: vec3<bool>,
}

// The maxima over the window rows of input word k (4 columns), the first of equal ones and
// the last NaN, and their rows; -inf outside the row.
fn column_max(w: Rows3, k: i32) -> Col {
    var best = vec4<f32>(bitcast<f32>(0xff800000u));
    var row = vec4<i32>(3);
    let inside = k >= 0 && k < i32(p_u[pz()].geo.w);
    for (var i = 0; i < 3; i = i + 1) {
        let v = word(w.at[i], k);
        let m = vec4<bool>(inside && w.ok[i]) & ((v > best) | nan4(v));
        best = select(best, v, m);
        row = select(row, vec4<i32>(i), m);
    }
    return Col(best, row);
}

// Bilinear's row blend of input word k (clamped to the row).
fn column_blend(r0: i32, r1: i32, wt: vec2<f32>, k: i32) -> vec4<f32> {
    return wt.x * word(r0, k) + wt.y * word(r1, k);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let t = (wid.y * nwg.x + wid.x) * WG + lid;
    if (t >= p_u[pz()].base.y) {
        return;
    }
    let OH = p_u[pz()].dims.x;
    let row = t / p_u[pz()].dims.z;
    let run = t - row * p_u[pz()].dims.z;
    // row = (n * C + c) * OH + oh.
    let plane = row / OH;
    let oh = row - plane * OH;
    let n = plane / p_u[pz()].geo.x;
    let c = plane - n * p_u[pz()].geo.x;
    let base = i32(p_u[pz()].base.x) + i32(n) * p_u[pz()].xs.x + i32(c) * p_u[pz()].xs.y;
    let j0 = run * p_u[pz()].dims.w;
    let j1 = min(j0 + p_u[pz()].dims.w, p_u[pz()].dims.y);
    let out = row * p_u[pz()].dims.y;
    let H = i32(p_u[pz()].geo.y);
    if (FAMILY == MODE_MAX) {
        let r = vec3<i32>(i32(oh) * p_u[pz()].win.y - p_u[pz()].win.z) + vec3<i32>(0, 1, 2) * p_u[pz()].win.w;
        let ok = (vec3<i32>(0, 1, 2) < vec3<i32>(p_u[pz()].win.x)) & (r >= vec3<i32>(0)) & (r < vec3<i32>(H));
        let w = Rows3(vec3<i32>(base) + clamp(r, vec3<i32>(0), vec3<i32>(H - 1)) * p_u[pz()].xs.z, ok);
        // Output word j (columns 4j..4j+3) reads input words 2j - 1 .. 2j + 2: columns 8j - 1 ..
        // 8j + 8, of which pw = 1 takes 8j - 1 + 2k + (0, 1, 2), pw = 0 8j + 2k + (0, 1, 2).
        let pw1 = p_u[pz()].pad.x == 1;
        var prev = column_max(w, 2 * i32(j0) - 1);
        var a = column_max(w, 2 * i32(j0));
        for (var j = j0; j < j1; j = j + 1u) {
            let b = column_max(w, 2 * i32(j) + 1);
            let next = column_max(w, 2 * i32(j) + 2);
            // The window's columns left to right: (before, even, odd) with pw = 1, else
            // (even, odd, after).
            let even = lanes(a, b, 0u, 2u, 0u, 2u);
            let odd = lanes(a, b, 1u, 3u, 1u, 3u);
            var m: Col;
            if (pw1) {
                m = mx(mx(Col(vec4<f32>(prev.v.w, a.v.y, a.v.w, b.v.y), vec4<i32>(prev.r.w, a.r.y, a.r.w, b.r.y)), even), odd);
            } else {
                m = mx(mx(even, odd), Col(vec4<f32>(a.v.z, b.v.x, b.v.z, next.v.x), vec4<i32>(a.r.z, b.r.x, b.r.z, next.r.x)));
            }
            dst4[out + j] = bitcast<vec4<u32>>(m.v);
            prev = b;
            a = next;
        }
    } else if (FAMILY == MODE_AVG) {
        // Output word j: input words 2j and 2j + 1 of rows 2 oh and 2 oh + 1, each window's
        // taps summed in row-major order.
        let r0 = base + 2 * i32(oh) * p_u[pz()].xs.z;
        let r1 = r0 + p_u[pz()].xs.z;
        let divisor = f32(p_u[pz()].pad.y);
        for (var j = j0; j < j1; j = j + 1u) {
            let k = 2 * i32(j);
            let a0 = word(r0, k);
            let b0 = word(r0, k + 1);
            let a1 = word(r1, k);
            let b1 = word(r1, k + 1);
            let s = vec4<f32>(a0.x, a0.z, b0.x, b0.z) + vec4<f32>(a0.y, a0.w, b0.y, b0.w) + vec4<f32>(a1.x, a1.z, b1.x, b1.z) + vec4<f32>(a1.y, a1.w, b1.y, b1.w);
            dst4[out + j] = bitcast<vec4<u32>>(s / divisor);
        }
    } else {
        // The input rows of this output row and their weights (PyTorch's rule, align_corners
        // false).
        let real = max(p_u[pz()].scale.x * (f32(oh) + 0.5) - 0.5, 0.0);
        let h0 = min(i32(real), H - 1);
        // A row scale of 1 (an unchanged height): the same row twice, as the host's taps.
        let h1 = select(h0, h0 + 1, h0 < H - 1 && p_u[pz()].scale.x != 1.0);
        let l1 = real - f32(h0);
        let wt = vec2<f32>(1.0 - l1, l1);
        let r0 = base + h0 * p_u[pz()].xs.z;
        let r1 = base + h1 * p_u[pz()].xs.z;
        let last = i32(p_u[pz()].geo.w) - 1;
        // Output words 2m and 2m + 1 (columns 8m..8m+7) read input word m (columns 4m..4m+3)
        // and the columns either side: output 2i reads columns (i - 1, i) weighted (1/4, 3/4),
        // 2i + 1 columns (i, i + 1) weighted (3/4, 1/4); output 0 reads (1, 0) weighted (0, 1)
        // and the row's last output column W - 1 twice, as PyTorch's rule. Runs are whole pairs.
        var m = i32(j0 / 2u);
        var prev = column_blend(r0, r1, wt, m - 1);
        var cur = column_blend(r0, r1, wt, m);
        for (var j = j0; j < j1; j = j + 2u) {
            let next = column_blend(r0, r1, wt, m + 1);
            let left = select(prev.w, cur.y, m == 0);
            let wl = select(0.25, 0.0, m == 0);
            let right = select(next.x, cur.w, m == last);
            dst4[out + j] = bitcast<vec4<u32>>(vec4<f32>(wl * left + (1.0 - wl) * cur.x, 0.75 * cur.x + 0.25 * cur.y, 0.25 * cur.x + 0.75 * cur.y, 0.75 * cur.y + 0.25 * cur.z));
            dst4[out + j + 1u] = bitcast<vec4<u32>>(vec4<f32>(0.25 * cur.y + 0.75 * cur.z, 0.75 * cur.z + 0.25 * cur.w, 0.25 * cur.z + 0.75 * cur.w, 0.75 * cur.w + 0.25 * right));
            prev = cur;
            cur = next;
            m = m + 1;
        }
    }
}
