// Convolution as an implicit GEMM on the shared engine (preludes/gemm_engine.wgsl): out[m, k] =
// sum_r A[m, r] * B[r, k] per group, where m runs over output pixels (n, oy, ox), k over the
// group's output channels and r over the reduction (c, ky, kx). A is never built: each element is
// read from the input through its strides at the tap's position (zero in the padding); B is the
// weight, read where it lies when its reduction dims are one unit-stride run in the kernel's
// order (IN_PLACE: element res.y + (group * K/groups + k) * res.z + r * res.w, staged with
// lanes along the reduction, so neighbouring lanes read neighbouring elements), else packed by
// the host as [group][r][k] rows of vec4 words (4 output channels each, zero past K/groups).
//
// CHANNELS picks the orientation: false (NCHW), lanes run along pixels and r = (c, ky, kx), so
// neighbouring lanes read neighbouring pixels of a row-major plane; true (NHWC), lanes run along
// channels and r = (ky, kx, c), so they read neighbouring channels of a channels-last pixel
// (VIN: 4 channels as one aligned vec4 word). The host packs B in the same r order.
//
// SPLIT (split-K, for calls with too few tiles to fill a GPU and a long reduction): each
// workgroup walks one slice of the reduction and stores its tile's partial sums; a second
// dispatch (conv2d_gemm_sum.wgsl) adds them in slice order and applies the epilogue.

// Whether tap t (c, ky, kx) of pixel p reads inside the input (else padding, past the pixels or
// past R), and where: one condition without branches, so that the load below is the only
// thing its lanes skip (a GPU runs a warp's branches one after the other; a load under a lane
// mask leaves its register in flight, where selecting its value would wait for it).
struct Tap {
    inside: bool,
    at: u32,
}

fn tap_at(p: Pixel, r: u32, t: vec3<i32>, c_stride: i32) -> Tap {
    let iy = p.iy + t.y * gp_u[pz()].taps.z;
    let ix = p.ix + t.z * gp_u[pz()].taps.w;
    var a: Tap;
    a.inside = p.valid & (r < gp_u[pz()].red.z) & (iy >= 0) & (ix >= 0) & (u32(iy) < gp_u[pz()].geo.x) & (u32(ix) < gp_u[pz()].geo.y);
    a.at = u32(p.off + t.x * c_stride + iy * gp_u[pz()].xs.z + ix * gp_u[pz()].xs.w);
    return a;
}

// A[m, r] as loaded (x_raw: its word and half): the input under tap r of pixel p (a 0 word in
// the padding, past the pixels and past R).
fn load_a(p: Pixel, r: u32) -> vec2<u32> {
    let a = tap_at(p, r, tap_of(r), gp_u[pz()].xs.y);
    var v = vec2<u32>(0u);
    if (a.inside) {
        v = x_raw(a.at);
    }
    return v;
}

// A[m, r .. r+3] as loaded, one vec4 word of the input (VIN: 4 channels of one tap, C/groups a
// multiple of 4), laid out by the io prelude's x4_raw.
fn load_a4(p: Pixel, r: u32) -> GemmRaw {
    let a = tap_at(p, r, tap_of(r), 1);
    var v = vec4<u32>(0u);
    if (a.inside) {
        v = x4_raw(a.at);
    }
    return GemmRaw(v.x, v.y, v.z, v.w, 0u);
}

// B[r, 4j .. 4j+3] of the group, float32 words (zero past R and past the packed row).
fn load_b(group: u32, r: u32, j: u32) -> GemmRaw {
    var v = vec4<u32>(0u);
    if (r < gp_u[pz()].red.z && j < gp_u[pz()].red.w) {
        v = wp[(group * gp_u[pz()].red.z + r) * gp_u[pz()].red.w + j];
    }
    return GemmRaw(v.x, v.y, v.z, v.w, 0u);
}

// Whether B is the weight where it lies (else the packed rows): the override IN_PLACE.
fn weight_in_place() -> bool {
    return IN_PLACE;
}

// B[r, k] of the group from the weight where it lies, as loaded (its word and half; a 0 word
// past R and past K/groups), its bounds one condition and its load the only lane-masked
// instruction, as `load_a`.
fn weight_at(group: u32, r: u32, k: u32) -> vec2<u32> {
    let inside = (r < gp_u[pz()].red.z) & (k < gp_u[pz()].red.y);
    let i = u32(gp_u[pz()].res.y + i32(group * gp_u[pz()].red.y + k) * gp_u[pz()].res.z + i32(r) * gp_u[pz()].res.w);
    let w = i / WORD_ELEMS;
    var v = vec2<u32>(0u, i % WORD_ELEMS);
    if (inside) {
        v.x = wp[w / 4u][w % 4u];
    }
    return v;
}

// Four values as loaded (word and half each) as one GemmRaw.
fn raw4(v0: vec2<u32>, v1: vec2<u32>, v2: vec2<u32>, v3: vec2<u32>) -> GemmRaw {
    return GemmRaw(v0.x, v1.x, v2.x, v3.x, v0.y | (v1.y << 2u) | (v2.y << 4u) | (v3.y << 6u));
}

// Four values each picked from its word by the io prelude's decode_word.
fn decode4(r: GemmRaw) -> vec4<f32> {
    return vec4<f32>(decode_word(r.w0, gemm_sel(r, 0u)), decode_word(r.w1, gemm_sel(r, 1u)), decode_word(r.w2, gemm_sel(r, 2u)), decode_word(r.w3, gemm_sel(r, 3u)));
}

// The engine's decodes: A's vec4 words (VIN) by the io prelude's decode_x4, its elements one
// by one; B's packed rows as float32 words, the weight in place element by element.
fn gemm_decode_a(r: GemmRaw) -> vec4<f32> {
    if (CHANNELS && VIN) {
        return decode_x4(vec4<u32>(r.w0, r.w1, r.w2, r.w3));
    }
    return decode4(r);
}

fn gemm_decode_b(r: GemmRaw) -> vec4<f32> {
    if (weight_in_place()) {
        return decode4(r);
    }
    return bitcast<vec4<f32>>(vec4<u32>(r.w0, r.w1, r.w2, r.w3));
}

// What an invocation keeps to fetch its elements (the engine's GemmFeed): the pixels it stages
// for each 64-row part p of the tile (pa[p], or pa[4p + i] for the four under CHANNELS without
// VIN), its group and the tile's first output channel.
struct GemmFeed {
    pa: array<Pixel, 8>,
    group: u32,
    n0: u32,
}

fn gemm_fetch_a(f: GemmFeed, lid: u32, r0: u32, p: u32) -> GemmRaw {
    if (CHANNELS && VIN) {
        return load_a4(f.pa[p], r0 + 4u * (lid % 4u));
    }
    if (CHANNELS) {
        let r = r0 + lid % 16u;
        return raw4(load_a(f.pa[4u * p], r), load_a(f.pa[4u * p + 1u], r), load_a(f.pa[4u * p + 2u], r), load_a(f.pa[4u * p + 3u], r));
    }
    let r = r0 + lid / 64u;
    return raw4(load_a(f.pa[p], r), load_a(f.pa[p], r + 4u), load_a(f.pa[p], r + 8u), load_a(f.pa[p], r + 12u));
}

fn gemm_fetch_b(f: GemmFeed, lid: u32, r0: u32, p: u32) -> GemmRaw {
    if (weight_in_place()) {
        // Step lid % 16, channels 4 * (lid / 16) .. of the part (STAGE_B_STEPS).
        let r = r0 + lid % 16u;
        let k = f.n0 + 64u * p + 4u * (lid / 16u);
        return raw4(weight_at(f.group, r, k), weight_at(f.group, r, k + 1u), weight_at(f.group, r, k + 2u), weight_at(f.group, r, k + 3u));
    }
    return load_b(f.group, r0 + lid / 16u, f.n0 / 4u + 16u * p + lid % 16u);
}

// Stores block `acc` of the tile: pixels m0 + 4tx + i x channels n0 + 4ty + j of `group`, the
// epilogue applied (split-K: the partial sums of `slice` as they are).
fn store_block(acc: mat4x4<f32>, m0: u32, n0: u32, tx: u32, ty: u32, group: u32, slice: u32) {
    if (SPLIT) {
        // The tile's partial sums as they are (rows and words padded to whole tiles, so every
        // store is in range): conv2d_gemm_sum.wgsl adds the slices and applies the epilogue.
        let words = gp_u[pz()].split.w;
        let at = ((group * gp_u[pz()].split.x + slice) * gp_u[pz()].split.z + m0 + 4u * tx) * words + n0 / 4u + ty;
        for (var i = 0u; i < 4u; i = i + 1u) {
            partial_store(at + i * words, acc[i]);
        }
        return;
    }

    if (m0 >= gp_u[pz()].work.x || n0 >= gp_u[pz()].red.y) {
        return;
    }
    // acc[i] holds pixel 4tx + i at channels 4ty .. 4ty+3.
    let k = n0 + 4u * ty;
    let kg = group * gp_u[pz()].red.y;
    let b = vec4<f32>(bias_at(group, k), bias_at(group, k + 1u), bias_at(group, k + 2u), bias_at(group, k + 3u));
    let m = m0 + 4u * tx;
    let ks = i32(kg + k) * gp_u[pz()].ys.y;
    if (CHANNELS) {
        for (var i = 0u; i < 4u; i = i + 1u) {
            if (m + i < gp_u[pz()].work.x && k < gp_u[pz()].red.y) {
                store_channels(m + i, group, k, acc[i], b);
            }
        }
        return;
    }
    let t = transpose(acc);
    for (var j = 0u; j < 4u; j = j + 1u) {
        if (k + j < gp_u[pz()].red.y && m < gp_u[pz()].work.x) {
            let at = out_offset(m) + ks + i32(j) * gp_u[pz()].ys.y;
            var r = vec4<f32>(0.0);
            if (RESID) {
                for (var i = 0u; i < 4u; i = i + 1u) {
                    if (m + i < gp_u[pz()].work.x) {
                        r[i] = res_elem(u32(out_offset(m + i) + ks + i32(j) * gp_u[pz()].ys.y + gp_u[pz()].res.x));
                    }
                }
            }
            let v = finish(t[j], vec4<f32>(b[j]), r);
            if (VOUT) {
                // A vec4 of pixels lies in one image row: all 4 exist or none does.
                y4_store(u32(at), v);
            } else {
                for (var i = 0u; i < 4u; i = i + 1u) {
                    if (m + i < gp_u[pz()].work.x) {
                        y_store(u32(out_offset(m + i) + ks + i32(j) * gp_u[pz()].ys.y), v[i]);
                    }
                }
            }
        }
    }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    // Whole workgroups past the work leave together (the id is uniform across the workgroup,
    // so the barriers below stay in uniform control flow).
    let id = wid.x + wid.y * nwg.x;
    if (id >= gp_u[pz()].work.w) {
        return;
    }
    let tile_m = id % gp_u[pz()].work.y;
    let rest = id / gp_u[pz()].work.y;
    let tile_n = rest % gp_u[pz()].work.z;
    // Under SPLIT, the group and the slice of the reduction: (group * S + slice).
    var group = rest / gp_u[pz()].work.z;
    var slice = 0u;
    if (SPLIT) {
        slice = group % gp_u[pz()].split.x;
        group = group / gp_u[pz()].split.x;
    }
    let m0 = tile_m * 64u * PM;
    let n0 = tile_n * 64u * PN;

    // The register blocks: pixels 64a + 4tx .. x channels 64b + 4ty .. of the tile, 4 x 4
    // each. Lanes run along the orientation's fast dim.
    let lanes = gemm_lanes(lid);
    var tx = lanes.x;
    var ty = lanes.y;
    if (CHANNELS) {
        tx = lanes.y;
        ty = lanes.x;
    }

    // What this invocation stages of A for part p (rows 64p ..): NCHW, one pixel (lid % 64) at
    // 4 reduction steps; NHWC, 4 pixels (lid / 16 + 16i) at one step (lid % 16), or, under VIN,
    // one pixel (lid / 4) at 4 consecutive steps (4 * (lid % 4)).
    var f: GemmFeed;
    f.group = group;
    f.n0 = n0;
    for (var p = 0u; p < PM; p = p + 1u) {
        let mp = m0 + 64u * p;
        if (CHANNELS && !VIN) {
            for (var i = 0u; i < 4u; i = i + 1u) {
                f.pa[4u * p + i] = pixel_at(mp + lid / 16u + 16u * i, group);
            }
        } else if (CHANNELS) {
            f.pa[p] = pixel_at(mp + lid / 4u, group);
        } else {
            f.pa[p] = pixel_at(mp + lid % 64u, group);
        }
    }
    var sa = STAGE_A_ROWS;
    if (CHANNELS && VIN) {
        sa = STAGE_A_STEPS4;
    } else if (CHANNELS) {
        sa = STAGE_A_STEPS;
    }
    var begin = 0u;
    var end = gp_u[pz()].red.z;
    if (SPLIT) {
        begin = slice * gp_u[pz()].split.y;
        end = min(end, begin + gp_u[pz()].split.y);
    }
    var sb = STAGE_B_COLS;
    if (weight_in_place()) {
        sb = STAGE_B_STEPS;
    }
    let acc = gemm_tile(f, lid, tx, ty, begin, end, sa, sb);
    for (var a = 0u; a < PM; a = a + 1u) {
        for (var b = 0u; b < PN; b = b + 1u) {
            store_block(gemm_block(acc, a, b), m0 + 64u * a, n0 + 64u * b, tx, ty, group, slice);
        }
    }
}
