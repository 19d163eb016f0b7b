// Float16 convolution on tensor cores: the implicit GEMM of conv2d_gemm.wgsl (out[m, k] = sum_r
// A[m, r] * B[r, k] per group; m the output pixels, k the group's output channels, r the
// reduction, preludes/conv_gemm_taps.wgsl's mapping) with its inner product on cooperative
// matrices of FRAG x FRAG x FRAG (f16 x f16 + f32; FRAG 16 or 8 by the prelude coop_frag16 /
// coop_frag8), for `ConvKernel::Coop`. A workgroup of four subgroups computes an 8 FRAG x
// 8 FRAG tile (pixels x channels), each subgroup a 4 FRAG x 4 FRAG block of 4 x 4
// accumulators; under NARROW (for K/groups of at most 4 FRAG, ResNet's 64-channel layers,
// where a second column of blocks would only repeat the last fragment) a 16 FRAG x 4 FRAG
// tile, the four blocks stacked along the pixels. Each step of FRAG reduction indices gathers the tile's A through the im2col
// mapping (any input strides, zero in the padding and past R) into workgroup memory, where the
// subgroups load their fragments; B is the weight, loaded straight from storage: where it lies
// when R and K/groups are whole fragments and its reduction dims, in the kernel's order, one
// run of unit stride (IN_PLACE: [group][k][r] at res.y + group * res.w + k * res.z + r,
// fragments loaded column-major), else packed by the host as [group][Rp][Kp] f16 rows (Rp = R
// and Kp = K/groups rounded up to FRAG, zero in the padding). The epilogue takes each accumulator through the subgroup's FRAG x FRAG of
// workgroup memory: + bias in f32, rounded once to f16, + the residual in f16, ReLU, stored
// through the output's strides (the f16 `conv2d`, `add_` and `relu_` steps).
//
// Cooperative-matrix operations need uniform control flow, so nothing returns early: a
// workgroup past the work repeats the last tile (the same bits to the same places), and
// channel fragments past Kp are the last one again (their outputs masked).
enable f16;
enable wgpu_cooperative_matrix;

// CHANNELS (the reduction's order), MODE (1: the bias), RELU and RESID (the residual, binding 5,
// added in f16 before the ReLU): conv_gemm_params.wgsl.
// Four subgroups (the host sets 4 x the adapter's subgroup size).
override WG: u32 = 128u;
// The tile: 16 FRAG pixels x 4 FRAG channels (the subgroups' blocks in one column), else
// 8 FRAG x 8 FRAG (two by two).
override NARROW: bool = false;
// Pixels of the tile (BM) and subgroup blocks across it (its channels: COLS x 4 FRAG).
const BM16: u32 = 16u * FRAG;

@group(0) @binding(1) var<storage, read> xh: array<f16>;
@group(0) @binding(2) var<storage, read> wh: array<f16>;
@group(0) @binding(3) var<storage, read> bh: array<f16>;
@group(0) @binding(4) var<storage, read_write> yh: array<f16>;
@group(0) @binding(5) var<storage, read> rh: array<f16>;

// The tile's A for one reduction step: up to 16 FRAG pixels x FRAG indices, row-major.
var<workgroup> atile: array<f16, BM16 * FRAG>;
// Each subgroup's FRAG x FRAG accumulator on its way to the epilogue.
var<workgroup> scratch: array<f32, 4u * FRAG * FRAG>;

// A[m, r] as f16: the input under tap r of pixel p (zero in the padding, past the pixels and
// past R).
fn load_ah(p: Pixel, r: u32) -> f16 {
    if (!p.valid || r >= gp_u[pz()].red.z) {
        return f16(0.0);
    }
    let t = tap_of(r);
    let iy = p.iy + t.y * gp_u[pz()].taps.z;
    let ix = p.ix + t.z * gp_u[pz()].taps.w;
    if (iy < 0 || ix < 0 || u32(iy) >= gp_u[pz()].geo.x || u32(ix) >= gp_u[pz()].geo.y) {
        return f16(0.0);
    }
    return xh[u32(p.off + t.x * gp_u[pz()].xs.y + iy * gp_u[pz()].xs.z + ix * gp_u[pz()].xs.w)];
}

// v rounded to float16 on its bits (cast.wgsl's f32_to_f16: to nearest, ties to even, with
// dtype.rs's subnormals and overflow), as every other path rounds: WGSL's f16(v) may round an
// inexact value either way. The half then converts exactly (naga takes no bitcast from u32 to
// vec2<f16>: it types the result f32).
fn to_half(v: f32) -> f16 {
    return f16(unpack2x16float(f32_to_f16(bitcast<u32>(v))).x);
}

// Accumulator c (pixels m0 .., channels k0 .. of the group) through the epilogue. Every subgroup
// calls it in step: the barriers are the workgroup's.
fn finish_frag(c: FragC, sid: u32, lane: u32, lanes: u32, m0: u32, k0: u32, group: u32) {
    let at = sid * FRAG * FRAG;
    coopStoreT(c, &scratch[at], FRAG);
    workgroupBarrier();
    for (var e = lane; e < FRAG * FRAG; e = e + lanes) {
        let m = m0 + e / FRAG;
        let k = k0 + e % FRAG;
        if (m < gp_u[pz()].work.x && k < gp_u[pz()].red.y) {
            let kk = group * gp_u[pz()].red.y + k;
            var v = scratch[at + e];
            if (MODE == 1u) {
                v = v + f32(bh[u32(gp_u[pz()].base.z + i32(kk) * gp_u[pz()].base.w)]);
            }
            let o = out_offset(m) + i32(kk) * gp_u[pz()].ys.y;
            var h = to_half(v);
            if (RESID) {
                // f32 holds the sum of two f16 values closely enough that one rounding gives
                // the f16 sum.
                h = to_half(f32(h) + f32(rh[u32(o + gp_u[pz()].res.x)]));
            }
            if (RELU) {
                // `<=`: a result rounded to -0.0 gives +0.0, as every other path's ReLU.
                h = select(h, f16(0.0), h <= f16(0.0));
            }
            yh[u32(o)] = h;
        }
    }
    workgroupBarrier();
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32, @builtin(subgroup_id) sid: u32, @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) lanes: u32) {
    let id = min(wid.x + wid.y * nwg.x, gp_u[pz()].work.w - 1u);
    let tile_m = id % gp_u[pz()].work.y;
    let rest = id / gp_u[pz()].work.y;
    let tile_n = rest % gp_u[pz()].work.z;
    let group = rest / gp_u[pz()].work.z;
    var bm = 8u * FRAG;
    var cols = 2u;
    if (NARROW) {
        bm = BM16;
        cols = 1u;
    }
    let m0 = tile_m * bm;
    let kp = gp_u[pz()].red.w;
    let rp = (gp_u[pz()].red.z + FRAG - 1u) / FRAG * FRAG;
    // The gather: lanes per pixel (WG >= bm) or pixels per lane (at most 4), and the pixels.
    let per_pixel = max(1u, WG / bm);
    let pixels = max(1u, bm / WG);
    var pix: array<Pixel, 4>;
    for (var i = 0u; i < 4u; i = i + 1u) {
        pix[i] = pixel_at(m0 + lid / per_pixel + i * (WG / per_pixel), group);
    }
    // This subgroup's block: rows sm .. of the tile, channels q0 .. q3 (clamped to Kp).
    let sm = (sid / cols) * 4u * FRAG;
    let n1 = tile_n * cols * 4u * FRAG + (sid % cols) * 4u * FRAG;
    let nlast = kp - FRAG;
    let q0 = min(n1, nlast);
    let q1 = min(n1 + FRAG, nlast);
    let q2 = min(n1 + 2u * FRAG, nlast);
    let q3 = min(n1 + 3u * FRAG, nlast);
    let pitch = kp;
    // The weight where it lies (its k rows ks apart), or the packed rows.
    let ks = u32(gp_u[pz()].res.z);
    var wbase = group * rp * kp;
    if (IN_PLACE) {
        wbase = u32(gp_u[pz()].res.y) + group * u32(gp_u[pz()].res.w);
    }
    var c00 = FragC();
    var c01 = FragC();
    var c02 = FragC();
    var c03 = FragC();
    var c10 = FragC();
    var c11 = FragC();
    var c12 = FragC();
    var c13 = FragC();
    var c20 = FragC();
    var c21 = FragC();
    var c22 = FragC();
    var c23 = FragC();
    var c30 = FragC();
    var c31 = FragC();
    var c32 = FragC();
    var c33 = FragC();
    for (var r0 = 0u; r0 < rp; r0 = r0 + FRAG) {
        workgroupBarrier();
        for (var i = 0u; i < pixels; i = i + 1u) {
            let m = lid / per_pixel + i * (WG / per_pixel);
            for (var j = lid % per_pixel; j < FRAG; j = j + per_pixel) {
                atile[m * FRAG + j] = load_ah(pix[i], r0 + j);
            }
        }
        workgroupBarrier();
        let a0 = coopLoadT<FragA>(&atile[sm * FRAG], FRAG);
        let a1 = coopLoadT<FragA>(&atile[(sm + FRAG) * FRAG], FRAG);
        let a2 = coopLoadT<FragA>(&atile[(sm + 2u * FRAG) * FRAG], FRAG);
        let a3 = coopLoadT<FragA>(&atile[(sm + 3u * FRAG) * FRAG], FRAG);
        var b0 = FragB();
        var b1 = FragB();
        var b2 = FragB();
        var b3 = FragB();
        if (IN_PLACE) {
            b0 = coopLoad<FragB>(&wh[wbase + q0 * ks + r0], ks);
            b1 = coopLoad<FragB>(&wh[wbase + q1 * ks + r0], ks);
            b2 = coopLoad<FragB>(&wh[wbase + q2 * ks + r0], ks);
            b3 = coopLoad<FragB>(&wh[wbase + q3 * ks + r0], ks);
        } else {
            b0 = coopLoadT<FragB>(&wh[wbase + r0 * kp + q0], pitch);
            b1 = coopLoadT<FragB>(&wh[wbase + r0 * kp + q1], pitch);
            b2 = coopLoadT<FragB>(&wh[wbase + r0 * kp + q2], pitch);
            b3 = coopLoadT<FragB>(&wh[wbase + r0 * kp + q3], pitch);
        }
        c00 = coopMultiplyAdd(a0, b0, c00);
        c01 = coopMultiplyAdd(a0, b1, c01);
        c02 = coopMultiplyAdd(a0, b2, c02);
        c03 = coopMultiplyAdd(a0, b3, c03);
        c10 = coopMultiplyAdd(a1, b0, c10);
        c11 = coopMultiplyAdd(a1, b1, c11);
        c12 = coopMultiplyAdd(a1, b2, c12);
        c13 = coopMultiplyAdd(a1, b3, c13);
        c20 = coopMultiplyAdd(a2, b0, c20);
        c21 = coopMultiplyAdd(a2, b1, c21);
        c22 = coopMultiplyAdd(a2, b2, c22);
        c23 = coopMultiplyAdd(a2, b3, c23);
        c30 = coopMultiplyAdd(a3, b0, c30);
        c31 = coopMultiplyAdd(a3, b1, c31);
        c32 = coopMultiplyAdd(a3, b2, c32);
        c33 = coopMultiplyAdd(a3, b3, c33);
    }
    let mb = m0 + sm;
    finish_frag(c00, sid, lane, lanes, mb, q0, group);
    finish_frag(c01, sid, lane, lanes, mb, q1, group);
    finish_frag(c02, sid, lane, lanes, mb, q2, group);
    finish_frag(c03, sid, lane, lanes, mb, q3, group);
    finish_frag(c10, sid, lane, lanes, mb + FRAG, q0, group);
    finish_frag(c11, sid, lane, lanes, mb + FRAG, q1, group);
    finish_frag(c12, sid, lane, lanes, mb + FRAG, q2, group);
    finish_frag(c13, sid, lane, lanes, mb + FRAG, q3, group);
    finish_frag(c20, sid, lane, lanes, mb + 2u * FRAG, q0, group);
    finish_frag(c21, sid, lane, lanes, mb + 2u * FRAG, q1, group);
    finish_frag(c22, sid, lane, lanes, mb + 2u * FRAG, q2, group);
    finish_frag(c23, sid, lane, lanes, mb + 2u * FRAG, q3, group);
    finish_frag(c30, sid, lane, lanes, mb + 3u * FRAG, q0, group);
    finish_frag(c31, sid, lane, lanes, mb + 3u * FRAG, q1, group);
    finish_frag(c32, sid, lane, lanes, mb + 3u * FRAG, q2, group);
    finish_frag(c33, sid, lane, lanes, mb + 3u * FRAG, q3, group);
}
