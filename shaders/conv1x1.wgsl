// 1x1 convolution as an implicit GEMM over strided operands: y[n,k,oy,ox] = bias[k] +
// sum over the group's channels c of x[n, c, oy*sh - ph, ox*sw - pw] * w[k, c], zero outside the
// image, optionally max(., 0). Every operand is read (and the output written) through its
// strides, so NCHW, NHWC, permuted or sliced inputs need no copy and no im2col buffer. Each
// invocation computes a block of up to 4 output channels x 4 output pixels in registers.
// Stands alone: it does not use the copy-plan prelude.

override WG: u32 = 64u;
// Output channels and pixels per invocation (each <= 4); BK divides the channels per group.
override BK: u32 = 4u;
override BP: u32 = 4u;

struct Conv {
    x_strides: vec4<i32>,
    y_strides: vec4<i32>,
    // n, c, h, w
    d0: vec4<u32>,
    // k, oh, ow, channels per group
    d1: vec4<u32>,
    // output channels per group, sh, sw, ph
    d2: vec4<u32>,
    // pw, has_bias, relu, invocations with work
    d3: vec4<u32>,
    // element offsets of x, y, w, bias
    offs: vec4<u32>,
    // weight stride of k, weight stride of c, bias stride, invocations per grid row
    misc: vec4<i32>,
    // pixel blocks
    blocks: vec4<u32>,
}

@group(0) @binding(0) var<uniform> cv: Conv;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> wt: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let t = gid.x + gid.y * bitcast<u32>(cv.misc.w);
    if (t >= cv.d3.w) {
        return;
    }
    let c = cv.d0.y;
    let h = cv.d0.z;
    let w = cv.d0.w;
    let k = cv.d1.x;
    let oh = cv.d1.y;
    let ow = cv.d1.z;
    let cg = cv.d1.w;
    let pixels = cv.d0.x * oh * ow;
    let pb = t % cv.blocks.x;
    let kb = t / cv.blocks.x;
    let p0 = pb * BP;
    let k0 = kb * BK;
    let c0 = (k0 / cv.d2.x) * cg;
    let xs = bitcast<vec4<u32>>(cv.x_strides);
    // Where each pixel of the block reads, and whether it reads the image or the padding.
    var xoff: array<u32, 4>;
    var inside: array<bool, 4>;
    for (var p = 0u; p < BP; p = p + 1u) {
        let pix = p0 + p;
        inside[p] = false;
        if (pix < pixels) {
            let ni = pix / (oh * ow);
            let r = pix - ni * oh * ow;
            let oy = r / ow;
            let ox = r - oy * ow;
            let iy = i32(oy * cv.d2.y) - i32(cv.d2.w);
            let ix = i32(ox * cv.d2.z) - i32(cv.d3.x);
            if (iy >= 0 && ix >= 0 && u32(iy) < h && u32(ix) < w) {
                inside[p] = true;
                xoff[p] = cv.offs.x + ni * xs.x + c0 * xs.y + u32(iy) * xs.z + u32(ix) * xs.w;
            }
        }
    }
    var acc: array<vec4<f32>, 4>;
    let wk = bitcast<u32>(cv.misc.x);
    let wc = bitcast<u32>(cv.misc.y);
    for (var ci = 0u; ci < cg; ci = ci + 1u) {
        var xv = vec4<f32>(0.0);
        for (var p = 0u; p < BP; p = p + 1u) {
            if (inside[p]) {
                xv[p] = x[xoff[p] + ci * xs.y];
            }
        }
        for (var kk = 0u; kk < BK; kk = kk + 1u) {
            if (k0 + kk < k) {
                acc[kk] = acc[kk] + wt[cv.offs.z + (k0 + kk) * wk + ci * wc] * xv;
            }
        }
    }
    let ys = bitcast<vec4<u32>>(cv.y_strides);
    for (var kk = 0u; kk < BK; kk = kk + 1u) {
        let kc = k0 + kk;
        if (kc >= k) {
            break;
        }
        var b = 0.0;
        if (cv.d3.y != 0u) {
            b = bias[cv.offs.w + kc * bitcast<u32>(cv.misc.z)];
        }
        for (var p = 0u; p < BP; p = p + 1u) {
            let pix = p0 + p;
            if (pix >= pixels) {
                break;
            }
            let ni = pix / (oh * ow);
            let r = pix - ni * oh * ow;
            let oy = r / ow;
            let ox = r - oy * ow;
            var v = acc[kk][p] + b;
            if (cv.d3.z != 0u) {
                v = max(v, 0.0);
            }
            y[cv.offs.y + ni * ys.x + kc * ys.y + oy * ys.z + ox * ys.w] = v;
        }
    }
}
