//! Replays `conv1x1.jsonl`, `conv2d.jsonl` and `conv2d_half.jsonl` cases (format:
//! tests/data/README.md). A conv1x1 case is a conv2d case with a 1x1 kernel, no dilation and one
//! group; a conv2d_half case one whose operands are float16 or bfloat16.

use serde_json::Value;
use strided_wgpu::{Conv2dOptions, DType, DeviceTensor, Elementwise, GpuContext, HostTensor, MemoryFormat, Strided};

pub struct ConvCase {
    pub id: String,
    pub n: usize,
    pub c: usize,
    pub h: usize,
    pub w: usize,
    pub k: usize,
    pub kernel: (usize, usize),
    pub stride: (usize, usize),
    pub padding: (usize, usize),
    pub dilation: (usize, usize),
    pub groups: usize,
    pub bias: bool,
    pub expect_error: bool,
    pub expect_shape: Vec<usize>,
    pub output: Vec<f64>,
    /// The operands' and the output's element type (`dtype`; float32 where absent).
    pub dtype: DType,
}

impl ConvCase {
    pub fn options(&self) -> Conv2dOptions {
        Conv2dOptions { stride: self.stride, padding: self.padding, dilation: self.dilation, groups: self.groups, ..Default::default() }
    }
    pub fn weight_shape(&self) -> [usize; 4] {
        [self.k, self.c / self.groups, self.kernel.0, self.kernel.1]
    }
}

/// The cases of `file` (or of the file named by `env`).
pub fn load(file: &str, env: &str) -> (String, Vec<ConvCase>) {
    let (path, lines) = super::views::jsonl(file, env);
    let u = |v: &Value| v.as_u64().expect("size") as usize;
    let pair = |v: &Value, default: usize| if v.is_null() { (default, default) } else { (u(&v[0]), u(&v[1])) };
    let cases = lines
        .into_iter()
        .map(|v| ConvCase {
            id: v["id"].as_str().unwrap_or("?").into(),
            n: u(&v["n"]),
            c: u(&v["c"]),
            h: u(&v["h"]),
            w: u(&v["w"]),
            k: u(&v["k"]),
            kernel: pair(&v["kernel"], 1),
            stride: pair(&v["stride"], 1),
            padding: pair(&v["padding"], 0),
            dilation: pair(&v["dilation"], 1),
            groups: v["groups"].as_u64().map_or(1, |g| g as usize),
            bias: v["bias"].as_bool().unwrap_or(false),
            expect_error: v["expect_error"].as_bool().unwrap_or(false),
            expect_shape: v["expect_shape"].as_array().map(|a| a.iter().map(u).collect()).unwrap_or_default(),
            output: v["output_nchw"].as_array().map(|a| a.iter().map(|x| x.as_f64().unwrap_or(f64::NAN)).collect()).unwrap_or_default(),
            dtype: match v["dtype"].as_str() {
                None | Some("float32") => DType::F32,
                Some("float16") => DType::F16,
                Some("bfloat16") => DType::BF16,
                Some(other) => panic!("{file}: dtype {other:?}"),
            },
        })
        .collect();
    (path, cases)
}

/// The inputs the data README defines, as f32 (rounded to the case's dtype, to nearest even,
/// then held exactly as f32).
pub fn inputs(case: &ConvCase) -> (Vec<f32>, Vec<f32>, Option<Vec<f32>>) {
    let round = |v: Vec<f32>| -> Vec<f32> {
        if case.dtype == DType::F32 {
            return v;
        }
        let n = v.len();
        HostTensor::from_vec(v, &[n]).and_then(|t| t.to(case.dtype)).and_then(|t| t.to(DType::F32)).and_then(|t| t.to_vec::<f32>()).expect("rounding to the case's dtype")
    };
    let x = round((0..case.n * case.c * case.h * case.w).map(|i| (((i * 37) % 101) as f64 / 50.0 - 1.0) as f32).collect());
    let w = round((0..case.weight_shape().iter().product::<usize>()).map(|j| (((j * 53) % 97) as f64 / 48.0 - 1.0) as f32).collect());
    let b = case.bias.then(|| round((0..case.k).map(|q| (((q * 29) % 31) as f64 / 15.0 - 1.0) as f32).collect()));
    (x, w, b)
}

/// The input laid out three ways: NCHW, channels_last, and a non-dense view (a slice of a
/// larger, permuted buffer).
pub fn input_variants(case: &ConvCase, x: &[f32]) -> Vec<(&'static str, HostTensor)> {
    let shape = [case.n, case.c, case.h, case.w];
    let nchw = HostTensor::from_slice(x, &shape).and_then(|t| t.to(case.dtype)).expect("input");
    let nhwc = nchw.contiguous(MemoryFormat::ChannelsLast).expect("channels_last");
    // A [N, H, C+1, W+2] buffer, sliced and permuted to [N, C, H, W]; the elements outside the
    // view NaN (zeros there would pass for a read of the padding from memory).
    let big = HostTensor::zeros(&[case.n, case.h, case.c + 1, case.w + 2], case.dtype, MemoryFormat::Contiguous).and_then(|t| t.add(f64::NAN)).expect("big");
    let view = big.narrow(2, 1, case.c).and_then(|v| v.narrow(3, 2, case.w)).and_then(|v| v.permute(&[0, 2, 1, 3])).expect("view");
    view.copy_(&nchw).expect("fill view");
    vec![("nchw", nchw), ("nhwc", nhwc), ("strided", view)]
}

/// Compares with the f32 tolerance rule of the data README (a bound scaled to the sum of
/// |terms| of each output); returns mismatches.
pub fn compare(case: &ConvCase, x: &[f32], w: &[f32], b: Option<&[f32]>, got: &[f32]) -> Vec<String> {
    let mut errs = Vec::new();
    if got.len() != case.output.len() {
        return vec![format!("{} values, want {}", got.len(), case.output.len())];
    }
    let (oh, ow) = (case.expect_shape[2], case.expect_shape[3]);
    let [_, cg, kh, kw] = case.weight_shape();
    let kg = case.k / case.groups;
    for (idx, (&g, &want)) in got.iter().zip(&case.output).enumerate() {
        let (ni, ki, oy, ox) = (idx / (case.k * oh * ow), (idx / (oh * ow)) % case.k, (idx / ow) % oh, idx % ow);
        let mut scale = b.map_or(0.0, |b| (b[ki] as f64).abs());
        for cj in 0..cg {
            let ci = (ki / kg) * cg + cj;
            for ky in 0..kh {
                for kx in 0..kw {
                    let iy = (oy * case.stride.0 + ky * case.dilation.0) as isize - case.padding.0 as isize;
                    let ix = (ox * case.stride.1 + kx * case.dilation.1) as isize - case.padding.1 as isize;
                    if iy >= 0 && ix >= 0 && (iy as usize) < case.h && (ix as usize) < case.w {
                        let xv = x[((ni * case.c + ci) * case.h + iy as usize) * case.w + ix as usize] as f64;
                        scale += (xv * w[((ki * cg + cj) * kh + ky) * kw + kx] as f64).abs();
                    }
                }
            }
        }
        // A NaN never passes, unless PyTorch's answer is NaN too. A 16-bit result: one unit in
        // the last place of its one rounding, relative to the value.
        let tol = match case.dtype {
            DType::F16 => want.abs() / 1024.0 + 1e-5 * scale + 6e-8,
            DType::BF16 => want.abs() / 128.0 + 1e-5 * scale + 6e-8,
            _ => 1e-5 * scale + 1e-6,
        };
        let ok = if want.is_nan() { g.is_nan() } else { (g as f64 - want).abs() <= tol };
        if !ok {
            errs.push(format!("output {idx}: got {g}, want {want}"));
            if errs.len() > 3 {
                break;
            }
        }
    }
    errs
}

/// The same view of the same f32 storage on the device.
pub fn to_device(ctx: &GpuContext, h: &HostTensor) -> DeviceTensor {
    let storage = h.as_strided(&[h.storage_len()], &[1], 0).and_then(|s| s.contiguous(MemoryFormat::Contiguous)).expect("storage");
    DeviceTensor::upload(ctx, &storage).and_then(|d| d.as_strided(h.shape(), h.strides(), h.storage_offset())).expect("device view")
}

/// Elementwise |h|, contiguous (the reference of |terms| that scales a tolerance).
pub fn abs(h: &HostTensor) -> HostTensor {
    let v: Vec<f32> = h.to_vec::<f32>().expect("values").into_iter().map(f32::abs).collect();
    HostTensor::from_vec(v, h.shape()).expect("abs")
}

/// `len` values in [-2, 2] in steps of 1/500.
pub fn vals(rng: &mut super::rng::Rng, len: usize) -> Vec<f32> {
    (0..len).map(|_| (rng.below(2001) as f32 - 1000.0) / 500.0).collect()
}
