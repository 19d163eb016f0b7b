// Depthwise convolution (groups == C, K a multiple of C): output channel k reads only input
// channel k / (K / C), so the work is a stencil per channel, bound by memory, not arithmetic.
// Each invocation computes 4 outputs along the orientation's fast dim and walks the kernel's
// taps: CHANNELS false (NCHW), 4 consecutive pixels of one row of one channel; CHANNELS true
// (NHWC), 4 consecutive channels of one pixel (VIN: their inputs are one aligned vec4 word).
// Input, weight and output are all read through their strides, each in its own type; the
// weight is tiny and cached.

struct DepthwiseParams {
    // Input strides (n, c, h, w), output strides (n, k, oh, ow), in elements.
    xs: vec4<i32>,
    ys: vec4<i32>,
    // h, w, oh, ow
    geo: vec4<u32>,
    // sh, sw, ph, pw
    conv: vec4<i32>,
    // kh, kw, dh, dw
    taps: vec4<i32>,
    // Weight strides (k, -, ky, kx).
    ws: vec4<i32>,
    // Element offsets within the bound windows: input, output, weight, bias.
    base: vec4<i32>,
    // Units of 4 outputs in this dispatch, K / C, K, the bias stride.
    work: vec4<u32>,
    // x = 1: plus the bias; y = 1: ReLU after (kernels/conv/common.rs: `finish`).
    finish: vec4<u32>,
}

override CHANNELS: bool = false;
override VIN: bool = false;
override VOUT: bool = false;
override WG: u32 = 64u;

// Bindings 1 and 3-6 and their loads and stores: conv_io.wgsl, or conv_io16.wgsl for 16-bit
// operands (conv2d_depthwise16), whose `w_elem` decodes the weight (binding 2) too.
@group(0) @binding(0) var<uniform> dp_u: array<DepthwiseParams, 1>;

fn pz() -> u32 {
    return uniform_index(dp_u[0].geo.x);
}
@group(0) @binding(2) var<storage, read> wt: array<u32>;

// Element i of the weight.
fn weight_at(i: u32) -> f32 {
    return w_elem(wt[i / WORD_ELEMS], i);
}

fn bias_at(k: u32) -> f32 {
    if (dp_u[pz()].finish.x != 1u || k >= dp_u[pz()].work.z) {
        return 0.0;
    }
    return bias_elem(u32(dp_u[pz()].base.w + i32(k) * i32(dp_u[pz()].work.w)));
}

fn finish(v: vec4<f32>, b: vec4<f32>) -> vec4<f32> {
    var o = v;
    if (dp_u[pz()].finish.x == 1u) {
        o = o + b;
    }
    if (dp_u[pz()].finish.y != 0u) {
        o = relu4(o);
    }
    return o;
}

fn inside(iy: i32, ix: i32) -> bool {
    return iy >= 0 && ix >= 0 && u32(iy) < dp_u[pz()].geo.x && u32(ix) < dp_u[pz()].geo.y;
}

// 4 consecutive output pixels (ox0 .. ox0+3) of channel k in row oy of image n.
fn pixels(n: u32, k: u32, oy: u32, ox0: u32) {
    let c = k / dp_u[pz()].work.y;
    let xoff = dp_u[pz()].base.x + i32(n) * dp_u[pz()].xs.x + i32(c) * dp_u[pz()].xs.y;
    let woff = dp_u[pz()].base.z + i32(k) * dp_u[pz()].ws.x;
    let iy0 = i32(oy) * dp_u[pz()].conv.x - dp_u[pz()].conv.z;
    let ix0 = i32(ox0) * dp_u[pz()].conv.y - dp_u[pz()].conv.w;
    var acc = vec4<f32>(0.0);
    for (var ky = 0; ky < dp_u[pz()].taps.x; ky = ky + 1) {
        let iy = iy0 + ky * dp_u[pz()].taps.z;
        if (iy < 0 || u32(iy) >= dp_u[pz()].geo.x) {
            continue;
        }
        for (var kx = 0; kx < dp_u[pz()].taps.y; kx = kx + 1) {
            let w = weight_at(u32(woff + ky * dp_u[pz()].ws.z + kx * dp_u[pz()].ws.w));
            for (var j = 0; j < 4; j = j + 1) {
                let ix = ix0 + j * dp_u[pz()].conv.y + kx * dp_u[pz()].taps.w;
                if (inside(iy, ix)) {
                    acc[j] = acc[j] + w * x_at(u32(xoff + iy * dp_u[pz()].xs.z + ix * dp_u[pz()].xs.w));
                }
            }
        }
    }
    let v = finish(acc, vec4<f32>(bias_at(k)));
    let yoff = dp_u[pz()].base.y + i32(n) * dp_u[pz()].ys.x + i32(k) * dp_u[pz()].ys.y + i32(oy) * dp_u[pz()].ys.z + i32(ox0) * dp_u[pz()].ys.w;
    if (VOUT) {
        // OW is a multiple of 4: the 4 pixels all exist.
        y4_store(u32(yoff), v);
        return;
    }
    for (var j = 0u; j < 4u; j = j + 1u) {
        if (ox0 + j < dp_u[pz()].geo.w) {
            y_store(u32(yoff + i32(j) * dp_u[pz()].ys.w), v[j]);
        }
    }
}

// 4 consecutive output channels (k0 .. k0+3) of pixel (oy, ox) of image n.
fn channels(n: u32, oy: u32, ox: u32, k0: u32) {
    let iy0 = i32(oy) * dp_u[pz()].conv.x - dp_u[pz()].conv.z;
    let ix0 = i32(ox) * dp_u[pz()].conv.y - dp_u[pz()].conv.w;
    let xn = dp_u[pz()].base.x + i32(n) * dp_u[pz()].xs.x;
    var acc = vec4<f32>(0.0);
    for (var ky = 0; ky < dp_u[pz()].taps.x; ky = ky + 1) {
        let iy = iy0 + ky * dp_u[pz()].taps.z;
        for (var kx = 0; kx < dp_u[pz()].taps.y; kx = kx + 1) {
            let ix = ix0 + kx * dp_u[pz()].taps.w;
            if (!inside(iy, ix)) {
                continue;
            }
            let at = xn + iy * dp_u[pz()].xs.z + ix * dp_u[pz()].xs.w;
            var xv = vec4<f32>(0.0);
            var w = vec4<f32>(0.0);
            if (VIN) {
                // K == C and 4 consecutive channels are one aligned word.
                xv = x4_at(u32(at + i32(k0)));
            }
            for (var j = 0u; j < 4u; j = j + 1u) {
                let k = k0 + j;
                if (k < dp_u[pz()].work.z) {
                    w[j] = weight_at(u32(dp_u[pz()].base.z + i32(k) * dp_u[pz()].ws.x + ky * dp_u[pz()].ws.z + kx * dp_u[pz()].ws.w));
                    if (!VIN) {
                        xv[j] = x_at(u32(at + i32(k / dp_u[pz()].work.y) * dp_u[pz()].xs.y));
                    }
                }
            }
            acc = acc + w * xv;
        }
    }
    let b = vec4<f32>(bias_at(k0), bias_at(k0 + 1u), bias_at(k0 + 2u), bias_at(k0 + 3u));
    let v = finish(acc, b);
    let yoff = dp_u[pz()].base.y + i32(n) * dp_u[pz()].ys.x + i32(oy) * dp_u[pz()].ys.z + i32(ox) * dp_u[pz()].ys.w + i32(k0) * dp_u[pz()].ys.y;
    if (VOUT) {
        // K is a multiple of 4: the 4 channels all exist.
        y4_store(u32(yoff), v);
        return;
    }
    for (var j = 0u; j < 4u; j = j + 1u) {
        if (k0 + j < dp_u[pz()].work.z) {
            y_store(u32(yoff + i32(j) * dp_u[pz()].ys.y), v[j]);
        }
    }
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let u = gid.x + gid.y * nwg.x * WG;
    if (u >= dp_u[pz()].work.x) {
        return;
    }
    if (CHANNELS) {
        let kq = (dp_u[pz()].work.z + 3u) / 4u;
        let q = u % kq;
        let p = u / kq;
        let plane = dp_u[pz()].geo.z * dp_u[pz()].geo.w;
        let n = p / plane;
        let rem = p - n * plane;
        let oy = rem / dp_u[pz()].geo.w;
        channels(n, oy, rem - oy * dp_u[pz()].geo.w, 4u * q);
        return;
    }
    let oq = (dp_u[pz()].geo.w + 3u) / 4u;
    let q = u % oq;
    let row = u / oq;
    let oy = row % dp_u[pz()].geo.z;
    let nk = row / dp_u[pz()].geo.z;
    let k = nk % dp_u[pz()].work.z;
    pixels(nk / dp_u[pz()].work.z, k, oy, 4u * q);
}
