//! A ResNet with torchvision's BasicBlock layout, built on the crate's public API only: the
//! description file, the parameters of its closed formulas, the folded network and its forward
//! pass, generic over the tensor type (the same code runs the CPU reference on
//! [`HostTensor`]s and the device on [`DeviceTensor`]s).
//!
//! Shared by `examples/resnet.rs`, the main program's walk-through and its `bench --only
//! resnet` rows (they include this file).
//!
//! The forward pass, per image batch (every op reads its operands through their strides;
//! nothing is copied into another layout on the way):
//! * the RGBA8 batch `[N, S, S, 4]` is normalized into `[N, 3, S, S]` f32 in the chosen memory
//!   format by one `addcmul_out` over the view `rgba.narrow(3, 0, 3).permute([0, 3, 1, 2])`;
//! * every convolution carries its batch norm folded into its weight and bias
//!   ([`fold_batch_norm`], done once when the network is built), with ReLU fused where one
//!   follows; its output keeps the input's memory format;
//! * a block's sum and its ReLU are in its second convolution's epilogue (`conv2d_add` with
//!   `relu`);
//! * global average pooling is `mean(dims [2, 3])` (it reads either layout in place), the
//!   classifier `linear`, then `softmax(1)` and `argmax(1)`.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fmt;

use strided_wgpu::{Conv2d, Conv2dOptions, DeviceTensor, DType, Elementwise, GpuContext, HostTensor, Matmul, MaxPool2dOptions, MemoryFormat, Reduce, ShapeOps, Strided};
use strided_wgpu::ops::fold_batch_norm;

/// ImageNet's per-channel mean (RGB).
pub const MEAN: [f64; 3] = [0.485, 0.456, 0.406];
/// ImageNet's per-channel standard deviation (RGB).
pub const STD: [f64; 3] = [0.229, 0.224, 0.225];
/// The batch norms' epsilon.
pub const EPS: f64 = 1e-5;

/// What can go wrong building or running the network: each names what it is about.
#[derive(Debug)]
pub enum ModelError {
    /// The description file is not what the network needs.
    Description(String),
    /// A parameter is missing, mis-shaped or of another type (`name` is its torchvision name).
    Parameter { name: String, detail: String },
    /// A weights file cannot be read as safetensors.
    Weights(String),
    /// The crate refused an op.
    Crate(strided_wgpu::Error),
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelError::Description(d) => write!(f, "resnet description: {d}"),
            ModelError::Parameter { name, detail } => {
                write!(f, "resnet parameter {name}: {detail}")
            }
            ModelError::Weights(d) => write!(f, "resnet weights: {d}"),
            ModelError::Crate(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ModelError {}

impl From<strided_wgpu::Error> for ModelError {
    fn from(e: strided_wgpu::Error) -> Self {
        ModelError::Crate(e)
    }
}

/// The example's result type.
pub type Result<T> = std::result::Result<T, ModelError>;

/// A network description (the format of `tests/data/resnet_small.json`).
#[derive(Clone, Debug)]
pub struct Description {
    /// Image height and width.
    pub size: usize,
    /// Images per batch.
    pub batch: usize,
    /// Each stage's width.
    pub widths: Vec<usize>,
    /// Each stage's number of blocks.
    pub blocks: Vec<usize>,
    /// Classifier outputs.
    pub classes: usize,
    /// PyTorch's answers, when the file has them: logits and probabilities (`[batch, classes]`
    /// row-major) and each image's top class.
    pub logits: Option<Vec<f64>>,
    /// See `logits`.
    pub probs: Option<Vec<f64>>,
    /// See `logits`.
    pub top1: Option<Vec<usize>>,
}

fn field<'a>(v: &'a serde_json::Value, key: &str) -> Result<&'a serde_json::Value> {
    v.get(key).ok_or_else(|| ModelError::Description(format!("no field {key:?}")))
}

fn count(v: &serde_json::Value, key: &str) -> Result<usize> {
    field(v, key)?.as_u64().filter(|&n| n > 0).map(|n| n as usize).ok_or_else(|| ModelError::Description(format!("{key:?} must be a positive integer, got {}", v[key])))
}

fn counts(v: &serde_json::Value, key: &str) -> Result<Vec<usize>> {
    let bad = || ModelError::Description(format!("{key:?} must be a list of positive integers, got {}", v[key]));
    field(v, key)?.as_array().ok_or_else(bad)?.iter().map(|x| x.as_u64().filter(|&n| n > 0).map(|n| n as usize).ok_or_else(bad)).collect()
}

fn numbers(v: &serde_json::Value, key: &str, len: usize) -> Result<Option<Vec<f64>>> {
    let Some(x) = v.get(key) else { return Ok(None) };
    let bad = || ModelError::Description(format!("{key:?} must be a list of {len} numbers"));
    let list: Vec<f64> = x.as_array().ok_or_else(bad)?.iter().map(|x| x.as_f64().ok_or_else(bad)).collect::<Result<_>>()?;
    if list.len() != len {
        return Err(bad());
    }
    Ok(Some(list))
}

impl Description {
    /// Parses and checks a description: the network's fields, and `param_shapes` (when
    /// present) naming exactly the parameters the network has, with their shapes.
    pub fn parse(text: &str) -> Result<Description> {
        let v: serde_json::Value = serde_json::from_str(text).map_err(|e| ModelError::Description(format!("not JSON: {e}")))?;
        let d = Description {
            size: count(&v, "size")?,
            batch: count(&v, "batch")?,
            widths: counts(&v, "widths")?,
            blocks: counts(&v, "blocks")?,
            classes: count(&v, "classes")?,
            logits: None,
            probs: None,
            top1: None,
        };
        d.check_stages()?;
        // The input's bytes must be countable and fit one host allocation comfortably.
        if d.size.checked_mul(d.size).and_then(|p| p.checked_mul(d.batch)).and_then(|p| p.checked_mul(4)).is_none_or(|b| b > 1 << 31) {
            return Err(ModelError::Description(format!("a batch of {} images of {}x{} is too large", d.batch, d.size, d.size)));
        }
        // So must the parameters and the logits (counted without overflow; the blocks first,
        // which the count walks).
        if d.blocks.iter().try_fold(0usize, |a, &b| a.checked_add(b)).is_none_or(|n| n > 10_000) {
            return Err(ModelError::Description(format!("blocks {:?}: at most 10,000 in all", d.blocks)));
        }
        let elements = |shape: &[usize]| shape.iter().try_fold(1usize, |a, &n| a.checked_mul(n));
        let params = d.parameters().iter().try_fold(0usize, |a, (_, s)| elements(s).and_then(|e| a.checked_add(e)));
        if params.is_none_or(|p| p > 1 << 31) || d.batch.checked_mul(d.classes).is_none_or(|n| n > 1 << 31) {
            return Err(ModelError::Description(format!("widths {:?}, {} classes and batch {}: too many parameters or logits", d.widths, d.classes, d.batch)));
        }
        let n = d.batch * d.classes;
        let d = Description { logits: numbers(&v, "logits", n)?, probs: numbers(&v, "probs", n)?, ..d };
        let top1 = match v.get("top1") {
            None => None,
            Some(t) => Some(
                t.as_array()
                    .filter(|a| a.len() == d.batch)
                    .and_then(|a| a.iter().map(|x| x.as_u64().map(|x| x as usize)).collect::<Option<Vec<_>>>())
                    .ok_or_else(|| ModelError::Description(format!("\"top1\" must be a list of {} class indices", d.batch)))?,
            ),
        };
        let d = Description { top1, ..d };
        if let Some(shapes) = v.get("param_shapes") {
            let shapes = shapes.as_object().ok_or_else(|| ModelError::Description("\"param_shapes\" must be an object".into()))?;
            let expected = d.parameters();
            for (name, shape) in &expected {
                let got = shapes.get(name).ok_or_else(|| ModelError::Parameter { name: name.clone(), detail: "missing from param_shapes".into() })?;
                let got: Option<Vec<usize>> = got.as_array().and_then(|a| a.iter().map(|x| x.as_u64().map(|x| x as usize)).collect());
                if got.as_ref() != Some(shape) {
                    return Err(ModelError::Parameter { name: name.clone(), detail: format!("param_shapes gives {}, the network needs {shape:?}", shapes[name]) });
                }
            }
            // (A set: a scan of the list per name made a description of 10,000 blocks take
            // billions of comparisons.)
            let names: std::collections::HashSet<&str> = expected.iter().map(|(n, _)| n.as_str()).collect();
            if let Some(extra) = shapes.keys().find(|k| !names.contains(k.as_str())) {
                return Err(ModelError::Parameter { name: extra.clone(), detail: "in param_shapes, but not a parameter of this network".into() });
            }
        }
        Ok(d)
    }

    /// ResNet-18 (widths 64..512, two blocks a stage, 1000 classes) on `batch` images of
    /// `size` x `size`.
    pub fn resnet18(batch: usize, size: usize) -> Description {
        Description { size, batch, widths: vec![64, 128, 256, 512], blocks: vec![2, 2, 2, 2], classes: 1000, logits: None, probs: None, top1: None }
    }

    /// Widths and blocks: non-empty lists of one length (a description built in code, not
    /// parsed, is checked here too, by `check_params`).
    pub fn check_stages(&self) -> Result<()> {
        if self.widths.len() != self.blocks.len() || self.widths.is_empty() {
            return Err(ModelError::Description(format!("widths {:?} and blocks {:?} must be non-empty lists of one length", self.widths, self.blocks)));
        }
        Ok(())
    }

    /// Every parameter, with torchvision's name and shape, in the network's order (none for
    /// a description without stages, which `check_stages` refuses).
    pub fn parameters(&self) -> Vec<(String, Vec<usize>)> {
        let mut out = Vec::new();
        let bn = |out: &mut Vec<(String, Vec<usize>)>, p: &str, c: usize| {
            for s in ["weight", "bias", "running_mean", "running_var"] {
                out.push((format!("{p}.{s}"), vec![c]));
            }
        };
        let Some(&w0) = self.widths.first() else { return out };
        out.push(("conv1.weight".into(), vec![w0, 3, 7, 7]));
        bn(&mut out, "bn1", w0);
        let mut cin = w0;
        for (s, (&w, &b)) in self.widths.iter().zip(&self.blocks).enumerate() {
            for i in 0..b {
                let p = format!("layer{}.{i}", s + 1);
                let stride = if i == 0 && s > 0 { 2 } else { 1 };
                out.push((format!("{p}.conv1.weight"), vec![w, cin, 3, 3]));
                bn(&mut out, &format!("{p}.bn1"), w);
                out.push((format!("{p}.conv2.weight"), vec![w, w, 3, 3]));
                bn(&mut out, &format!("{p}.bn2"), w);
                if stride != 1 || cin != w {
                    out.push((format!("{p}.downsample.0.weight"), vec![w, cin, 1, 1]));
                    bn(&mut out, &format!("{p}.downsample.1"), w);
                }
                cin = w;
            }
        }
        out.push(("fc.weight".into(), vec![self.classes, cin]));
        out.push(("fc.bias".into(), vec![self.classes]));
        out
    }

    /// The input batch: `[batch, size, size, 4]` RGBA8, byte `i` is
    /// `(i*37 + (i / (size*size*4))*59) % 256`.
    pub fn image(&self) -> Vec<u8> {
        let per = self.size * self.size * 4;
        (0..self.batch * per).map(|i| ((i * 37 + (i / per) * 59) % 256) as u8).collect()
    }
}

/// Parameters by torchvision name, f32 host tensors.
pub type Params = BTreeMap<String, HostTensor>;

/// The value of parameter `name` (of `shape`) at flat index `j`, from the description's closed
/// formulas (computed in f64).
fn formula(name: &str, shape: &[usize], j: usize) -> f64 {
    let t = |a: usize, b: usize| (((a * j + b) % 31) as f64 / 15.0) - 1.0;
    if name.ends_with(".running_mean") {
        t(13, 1) * 0.1
    } else if name.ends_with(".running_var") {
        (t(17, 2) * 0.3 + 1.0).abs() + 0.2
    } else if name == "fc.bias" {
        t(29, 0) * 0.1
    } else if shape.len() == 1 && name.ends_with(".weight") {
        t(7, 3) * 0.2 + 1.0
    } else if shape.len() == 1 {
        t(11, 5) * 0.1
    } else {
        let fan: usize = shape[1..].iter().product();
        (((j * 53) % 97) as f64 / 48.0 - 1.0) / (fan as f64).sqrt()
    }
}

/// Every parameter of `d` from its closed formulas.
pub fn formula_params(d: &Description) -> Result<Params> {
    d.parameters()
        .into_iter()
        .map(|(name, shape)| {
            let n: usize = shape.iter().product();
            let data: Vec<f32> = (0..n).map(|j| formula(&name, &shape, j) as f32).collect();
            let t = HostTensor::from_vec(data, &shape)?;
            Ok((name, t))
        })
        .collect()
}

/// Checks that `params` holds every parameter of `d` as f32 of its shape and nothing else (an
/// extra entry is an error naming it, as PyTorch's strict `load_state_dict`).
pub fn check_params(d: &Description, params: &Params) -> Result<()> {
    d.check_stages()?;
    let expected = d.parameters();
    for (name, shape) in expected.iter().cloned() {
        let t = params.get(&name).ok_or_else(|| ModelError::Parameter { name: name.clone(), detail: format!("missing (expected f32 {shape:?})") })?;
        if t.shape() != shape.as_slice() || t.dtype() != DType::F32 {
            return Err(ModelError::Parameter { name, detail: format!("{} {:?}, expected f32 {shape:?}", t.dtype(), t.shape()) });
        }
    }
    let names: std::collections::HashSet<&str> = expected.iter().map(|(n, _)| n.as_str()).collect();
    if let Some(extra) = params.keys().find(|k| !names.contains(k.as_str())) {
        return Err(ModelError::Parameter { name: extra.clone(), detail: "not a parameter of this network".into() });
    }
    Ok(())
}

/// The tensor operations the network needs, plus allocation (the one thing the two tensor
/// types do differently).
pub trait Tensor: ShapeOps + Conv2d + Reduce + Matmul + Elementwise {
    /// A new uninitialized tensor of `dtype` beside `self`.
    fn alloc(&self, shape: &[usize], dtype: DType, format: MemoryFormat) -> Result<Self>;
}

impl Tensor for HostTensor {
    fn alloc(&self, shape: &[usize], dtype: DType, format: MemoryFormat) -> Result<Self> {
        Ok(HostTensor::zeros(shape, dtype, format)?)
    }
}

impl Tensor for DeviceTensor {
    fn alloc(&self, shape: &[usize], dtype: DType, format: MemoryFormat) -> Result<Self> {
        Ok(DeviceTensor::empty(self.context(), shape, dtype, format)?)
    }
}

/// A convolution with its batch norm folded in.
pub struct Conv<T> {
    weight: T,
    bias: T,
    options: Conv2dOptions,
}

/// A BasicBlock.
pub struct Block<T> {
    conv1: Conv<T>,
    conv2: Conv<T>,
    downsample: Option<Conv<T>>,
}

/// The folded network, ready to run, holding its parameters as `T`.
pub struct Net<T> {
    /// The memory format activations are kept in.
    pub format: MemoryFormat,
    /// The element type of the activations and parameters (f32, or f16 / bf16 after
    /// [`Net::with_dtype`]); the input's normalization constants stay f32.
    pub dtype: DType,
    scale: T,
    shift: T,
    stem: Conv<T>,
    blocks: Vec<Block<T>>,
    fc_weight: T,
    fc_bias: T,
}

/// What one forward pass gives.
pub struct Outputs<T> {
    /// `[batch, classes]`, of the network's dtype.
    pub logits: T,
    /// `softmax(logits, 1)`.
    pub probs: T,
    /// `argmax(logits, 1)`, int32 `[batch]`.
    pub top1: T,
}

fn param<'a>(p: &'a Params, name: &str) -> Result<&'a HostTensor> {
    p.get(name).ok_or_else(|| ModelError::Parameter { name: name.into(), detail: "missing".into() })
}

fn folded(p: &Params, conv: &str, bn: &str, stride: usize, padding: usize, relu: bool) -> Result<Conv<HostTensor>> {
    let w = param(p, &format!("{conv}.weight"))?;
    let bnp = |s: &str| param(p, &format!("{bn}.{s}"));
    let (weight, bias) = fold_batch_norm(w, None, bnp("running_mean")?, bnp("running_var")?, Some(bnp("weight")?), Some(bnp("bias")?), EPS)?;
    Ok(Conv { weight, bias, options: Conv2dOptions { stride: (stride, stride), padding: (padding, padding), relu, ..Default::default() } })
}

impl Net<HostTensor> {
    /// Builds the network of `d` from checked `params`, folding each batch norm into the
    /// convolution before it; activations will be kept in `format`.
    pub fn build(d: &Description, params: &Params, format: MemoryFormat) -> Result<Net<HostTensor>> {
        check_params(d, params)?;
        let scale: Vec<f32> = STD.iter().map(|s| (1.0 / (255.0 * s)) as f32).collect();
        let shift: Vec<f32> = MEAN.iter().zip(STD).map(|(m, s)| (-m / s) as f32).collect();
        let mut blocks = Vec::new();
        let mut cin = d.widths[0];
        for (s, (&w, &b)) in d.widths.iter().zip(&d.blocks).enumerate() {
            for i in 0..b {
                let pre = format!("layer{}.{i}", s + 1);
                let stride = if i == 0 && s > 0 { 2 } else { 1 };
                let downsample = if stride != 1 || cin != w { Some(folded(params, &format!("{pre}.downsample.0"), &format!("{pre}.downsample.1"), stride, 0, false)?) } else { None };
                blocks.push(Block {
                    conv1: folded(params, &format!("{pre}.conv1"), &format!("{pre}.bn1"), stride, 1, true)?,
                    conv2: folded(params, &format!("{pre}.conv2"), &format!("{pre}.bn2"), 1, 1, false)?,
                    downsample,
                });
                cin = w;
            }
        }
        Ok(Net {
            format,
            dtype: DType::F32,
            scale: HostTensor::from_vec(scale, &[1, 3, 1, 1])?,
            shift: HostTensor::from_vec(shift, &[1, 3, 1, 1])?,
            stem: folded(params, "conv1", "bn1", 2, 3, true)?,
            blocks,
            fc_weight: param(params, "fc.weight")?.clone(),
            fc_bias: param(params, "fc.bias")?.clone(),
        })
    }

    /// The same network in `dtype` (f16 or bf16): its folded parameters rounded once to it
    /// (the folding ran in f32); the activations will be `dtype` too.
    pub fn with_dtype(&self, dtype: DType) -> Result<Net<HostTensor>> {
        let to = |t: &HostTensor| t.to(dtype);
        let conv = |c: &Conv<HostTensor>| -> Result<Conv<HostTensor>> { Ok(Conv { weight: to(&c.weight)?, bias: to(&c.bias)?, options: c.options }) };
        Ok(Net {
            format: self.format,
            dtype,
            scale: self.scale.clone(),
            shift: self.shift.clone(),
            stem: conv(&self.stem)?,
            blocks: self.blocks.iter().map(|b| Ok(Block { conv1: conv(&b.conv1)?, conv2: conv(&b.conv2)?, downsample: b.downsample.as_ref().map(conv).transpose()? })).collect::<Result<_>>()?,
            fc_weight: to(&self.fc_weight)?,
            fc_bias: to(&self.fc_bias)?,
        })
    }

    /// The same network with its parameters uploaded to `ctx`, each convolution's weight stored
    /// in the activations' memory format (as PyTorch's `model.to(memory_format=...)` stores
    /// it), where the GPU's GEMM kernels read a weight without a copy a call.
    pub fn to_device(&self, ctx: &GpuContext) -> Result<Net<DeviceTensor>> {
        let up = |t: &HostTensor| DeviceTensor::upload(ctx, t);
        let conv = |c: &Conv<HostTensor>| -> Result<Conv<DeviceTensor>> { Ok(Conv { weight: up(&c.weight)?.contiguous(self.format)?, bias: up(&c.bias)?, options: c.options }) };
        Ok(Net {
            format: self.format,
            dtype: self.dtype,
            scale: up(&self.scale)?,
            shift: up(&self.shift)?,
            stem: conv(&self.stem)?,
            blocks: self.blocks.iter().map(|b| Ok(Block { conv1: conv(&b.conv1)?, conv2: conv(&b.conv2)?, downsample: b.downsample.as_ref().map(conv).transpose()? })).collect::<Result<_>>()?,
            fc_weight: up(&self.fc_weight)?,
            fc_bias: up(&self.fc_bias)?,
        })
    }
}

/// Where a block's sum and ReLU are computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Residual {
    /// In its second convolution's epilogue (`conv2d_add` with `relu`).
    Fused,
    /// After it, as torchvision's `BasicBlock` writes them: `out += identity` and
    /// `relu_(out)` in place (two more dispatches a block eagerly; a captured graph folds
    /// them into the convolution where its kernel takes a residual: the GPUs' GEMM kernels).
    InPlace,
}

impl<T: Tensor> Net<T> {
    /// The forward pass on an RGBA8 batch `[N, S, S, 4]` (u8, contiguous).
    pub fn forward(&self, rgba: &T) -> Result<Outputs<T>> {
        self.forward_with(rgba, Residual::Fused)
    }

    /// The number of blocks.
    pub fn blocks(&self) -> usize {
        self.blocks.len()
    }

    /// [`Net::forward`] with the blocks' sums and ReLUs computed as `residual` says (the same
    /// values either way, bit for bit: the epilogue adds and clamps as the separate ops do).
    pub fn forward_with(&self, rgba: &T, residual: Residual) -> Result<Outputs<T>> {
        let s = rgba.shape();
        if s.len() != 4 || s[3] != 4 || rgba.dtype() != DType::U8 {
            return Err(ModelError::Description(format!("the input must be a u8 [N, H, W, 4] RGBA batch, got {} {s:?}", rgba.dtype())));
        }
        // Normalize: `shift + x * scale` over the RGB view, into the activations' layout.
        let x = rgba.narrow(3, 0, 3)?.permute(&[0, 3, 1, 2])?;
        let input = rgba.alloc(&[s[0], 3, s[1], s[2]], self.dtype, self.format)?;
        self.shift.addcmul_out(&x, &self.scale, 1.0, &input)?;

        let conv = |x: &T, c: &Conv<T>| x.conv2d(&c.weight, Some(&c.bias), &c.options);
        let mut x = conv(&input, &self.stem)?.max_pool2d(&MaxPool2dOptions { stride: Some((2, 2)), padding: (1, 1), ..MaxPool2dOptions::new((3, 3)) })?;
        for b in &self.blocks {
            // relu(conv2(conv1(x)) + identity): the residual and the ReLU in conv2's epilogue
            // (`Residual::Fused`), or after it in place.
            let identity = match &b.downsample {
                Some(d) => conv(&x, d)?,
                None => x.clone(),
            };
            let c2 = &b.conv2;
            let h = conv(&x, &b.conv1)?;
            x = match residual {
                Residual::Fused => h.conv2d_add(&c2.weight, Some(&c2.bias), &identity, &Conv2dOptions { relu: true, ..c2.options })?,
                Residual::InPlace => {
                    let y = h.conv2d(&c2.weight, Some(&c2.bias), &Conv2dOptions { relu: false, ..c2.options })?;
                    y.add_(&identity)?;
                    y.relu_()?;
                    y
                }
            };
        }
        let features = x.mean(vec![2isize, 3], false)?;
        let logits = features.linear(&self.fc_weight, Some(&self.fc_bias))?;
        let probs = logits.softmax(1)?;
        let top1 = logits.argmax(Some(1), false)?;
        Ok(Outputs { logits, probs, top1 })
    }
}

/// The largest `|a - b|` (infinite when the lengths differ or a value is NaN).
pub fn max_abs_diff(a: &[f64], b: &[f64]) -> f64 {
    if a.len() != b.len() {
        return f64::INFINITY;
    }
    a.iter().zip(b).map(|(x, y)| if (x - y).is_nan() { f64::INFINITY } else { (x - y).abs() }).fold(0.0, f64::max)
}
