// The im2col mapping of the implicit-GEMM convolutions (conv2d_gemm.wgsl, conv2d_coop.wgsl):
// a tile's pixels and the reduction index r as a tap, in the orientation's order (CHANNELS).

// Where a pixel of the tile reads: its image's element offset (channel 0 of the group), its
// tap-(0, 0) row and column, and whether it exists.
struct Pixel {
    off: i32,
    iy: i32,
    ix: i32,
    valid: bool,
}

fn pixel_at(m: u32, group: u32) -> Pixel {
    var p: Pixel;
    p.valid = m < gp_u[pz()].work.x;
    let mm = min(m, gp_u[pz()].work.x - 1u);
    let plane = gp_u[pz()].geo.z * gp_u[pz()].geo.w;
    let n = mm / plane;
    let rem = mm - n * plane;
    let oy = rem / gp_u[pz()].geo.w;
    let ox = rem - oy * gp_u[pz()].geo.w;
    p.off = gp_u[pz()].base.x + i32(n) * gp_u[pz()].xs.x + i32(group * gp_u[pz()].red.x) * gp_u[pz()].xs.y;
    p.iy = i32(oy) * gp_u[pz()].conv.x - gp_u[pz()].conv.z;
    p.ix = i32(ox) * gp_u[pz()].conv.y - gp_u[pz()].conv.w;
    return p;
}

// floor(n / d) for d >= 1 and n < 2^20 (`LONG_R` false), `inv` being 1 / d as f32 within 2.5 ulp. A GPU divides
// integers by a run-time divisor in about 20 instructions (a reciprocal, then corrections);
// this takes about 10. The estimate's error is under (n / d) * 2^-21 < 0.5, so it is within 1 of
// the quotient, and one step corrects it: exact.
fn div_small(n: u32, d: u32, inv: f32) -> u32 {
    let q = u32(f32(n) * inv);
    let rem = i32(n) - i32(q * d);
    return u32(i32(q) - i32(rem < 0) + i32(rem >= i32(d)));
}

// floor(n / d) for a divisor of the reduction index (`inv` its reciprocal): through
// `div_small`, or as integers under LONG_R.
fn tap_div(n: u32, d: u32, inv: f32) -> u32 {
    if (LONG_R) {
        return n / d;
    }
    return div_small(n, d, inv);
}

// Reduction index r as (c, ky, kx), in the orientation's order.
fn tap_of(r: u32) -> vec3<i32> {
    let kw = u32(gp_u[pz()].taps.y);
    if (CHANNELS) {
        let cg = gp_u[pz()].red.x;
        let t = tap_div(r, cg, gp_u[pz()].inv.x);
        let ky = tap_div(t, kw, gp_u[pz()].inv.y);
        return vec3<i32>(i32(r - t * cg), i32(ky), i32(t - ky * kw));
    }
    let kk = u32(gp_u[pz()].taps.x) * kw;
    let c = tap_div(r, kk, gp_u[pz()].inv.z);
    let t = r - c * kk;
    let ky = tap_div(t, kw, gp_u[pz()].inv.y);
    return vec3<i32>(i32(c), i32(ky), i32(t - ky * kw));
}
