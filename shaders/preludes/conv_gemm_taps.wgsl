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

// Reduction index r as (c, ky, kx), in the orientation's order.
fn tap_of(r: u32) -> vec3<i32> {
    let kk = u32(gp_u[pz()].taps.x * gp_u[pz()].taps.y);
    if (CHANNELS) {
        let t = r / gp_u[pz()].red.x;
        let c = r - t * gp_u[pz()].red.x;
        let ky = t / u32(gp_u[pz()].taps.y);
        return vec3<i32>(i32(c), i32(ky), i32(t - ky * u32(gp_u[pz()].taps.y)));
    }
    let c = r / kk;
    let t = r - c * kk;
    let ky = t / u32(gp_u[pz()].taps.y);
    return vec3<i32>(i32(c), i32(ky), i32(t - ky * u32(gp_u[pz()].taps.y)));
}
