//! Shape ops on host and device tensors, PyTorch's semantics: [`cat`], [`stack`] and the
//! [`ShapeOps`] methods `pad`, `repeat`, `index_select`, `interpolate`. Each is written once
//! over a few primitives of the tensor type and materializes through the copy plans: a `cat`
//! is copies into narrowed views of the output, a reflect pad copies flipped slices, a repeat
//! copies one expanded view, a nearest resize copies expanded rows and columns. Only bilinear
//! interpolation computes (the pooling family's window kernel, [`crate::Pool2d`]'s reference on
//! the host). On a device all the copies of one op are recorded into one batch and submitted
//! once.

use crate::dtype::DType;
use crate::elementwise::{result_type, Elementwise, Input, Op, PromoteArg, Target};
use crate::error::{Error, Result};
use crate::layout::{wrap_dim, MemoryFormat};
use crate::pool::{Pool2d, Window, WindowMode};

pub(crate) mod cpu;

/// The padding mode of [`ShapeOps::pad`] (PyTorch's `F.pad(x, pad, mode, value)`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PadMode {
    /// Fill with a value (`mode="constant"`); negative pads crop. The value converts to the
    /// tensor's type as `x.to(dtype)` does (integers: through int32).
    Constant(f64),
    /// Mirror without repeating the edge (`mode="reflect"`); each pad must be below the size.
    Reflect,
    /// Repeat the edge (`mode="replicate"`).
    Replicate,
    /// Wrap around (`mode="circular"`); each pad at most the size.
    Circular,
}

/// The mode of [`ShapeOps::interpolate`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InterpolateMode {
    /// `mode="nearest"`: PyTorch's legacy rule, source `floor(o * r)`.
    Nearest,
    /// `mode="nearest-exact"`: source `floor((o + 0.5) * r)`.
    NearestExact,
    /// `mode="bilinear"` with PyTorch's `align_corners` (float types only).
    Bilinear {
        /// Align the corner pixels' centres (`align_corners=True`).
        align_corners: bool,
    },
}

/// Options of [`ShapeOps::interpolate`]: exactly one of `size` and `scale_factor`, and a mode.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InterpolateOptions {
    /// The output's (OH, OW).
    pub size: Option<(usize, usize)>,
    /// Factors (rows, columns): OH = floor(H * factor); the ratio used is 1 / factor
    /// (PyTorch keeps the given factor, `recompute_scale_factor=False`).
    pub scale_factor: Option<(f64, f64)>,
    /// The mode.
    pub mode: InterpolateMode,
}

impl InterpolateOptions {
    /// Resize to `size`.
    pub fn size(size: (usize, usize), mode: InterpolateMode) -> Self {
        InterpolateOptions { size: Some(size), scale_factor: None, mode }
    }
    /// Resize by `scale_factor`.
    pub fn scale(scale_factor: (f64, f64), mode: InterpolateMode) -> Self {
        InterpolateOptions { size: None, scale_factor: Some(scale_factor), mode }
    }
}

/// `torch.cat(tensors, dim)`: the tensors joined along `dim` (negative counts from the end).
/// The result type is PyTorch's promotion of all inputs; the result is channels-last when every
/// input suggests it, else contiguous. Empty 1-d tensors (shape \[0\]) are skipped, as PyTorch
/// does; other empty inputs take part. Every other dim must agree. A new tensor; bad input is
/// a typed error before anything is allocated.
///
/// ```
/// use strided_wgpu::HostTensor;
/// use strided_wgpu::ops::cat;
/// let a = HostTensor::from_vec(vec![1i32, 2, 3, 4], &[2, 2]).unwrap();
/// let b = HostTensor::from_vec(vec![0.5f32, 1.5], &[2, 1]).unwrap();
/// let c = cat(&[&a, &b], -1).unwrap();
/// assert_eq!(c.to_vec::<f32>().unwrap(), vec![1.0, 2.0, 0.5, 3.0, 4.0, 1.5]);
/// ```
pub fn cat<T: ShapeOps>(tensors: &[&T], dim: isize) -> Result<T> {
    const OP: &str = "cat";
    let Some(first) = tensors.first() else {
        return Err(Error::invalid(OP, "expected a non-empty list of tensors"));
    };
    let args: Vec<PromoteArg> = tensors.iter().map(|t| PromoteArg::Tensor(t.dtype(), t.rank().max(1))).collect();
    let dtype = result_type(OP, &args)?;
    // With their places in the caller's list, which errors name (PyTorch's tensor numbers).
    let numbered: Vec<(usize, &T)> = tensors.iter().copied().enumerate().filter(|(_, t)| !(t.rank() == 1 && t.numel() == 0)).collect();
    let parts: Vec<&T> = numbered.iter().map(|&(_, t)| t).collect();
    let Some(reference) = parts.first() else {
        return first.new_tensor(OP, &[0], dtype, MemoryFormat::Contiguous);
    };
    let rank = reference.rank();
    if rank == 0 {
        return Err(Error::invalid(OP, "zero-dimensional tensors cannot be concatenated"));
    }
    let d = wrap_dim(OP, dim, rank, false)?;
    let mut shape = reference.shape().to_vec();
    shape[d] = 0;
    for &(i, t) in &numbered {
        let s = t.shape();
        if s.len() != rank || s.iter().zip(reference.shape()).enumerate().any(|(k, (a, b))| k != d && a != b) {
            return Err(Error::invalid(OP, format!("sizes of tensors must match except in dim {d}: tensor {i} has shape {s:?}, tensor {} {:?}", numbered[0].0, reference.shape())));
        }
        shape[d] = shape[d].checked_add(s[d]).ok_or_else(|| {
            let shapes: Vec<&[usize]> = parts.iter().map(|t| t.shape()).collect();
            Error::overflow(OP, format!("the size of dim {d} of the result: the sizes along it of tensors of shapes {shapes:?} sum past usize::MAX"))
        })?;
    }
    result_fits(OP, &shape, dtype, || format!("the cat along dim {d} of {} tensors of shape {:?} (first)", parts.len(), reference.shape()))?;
    if let Some(&(i, _)) = numbered.iter().find(|(_, t)| !reference.beside(t)) {
        return Err(Error::Device { op: OP, detail: format!("tensor {i} lives on another GpuContext than tensor {}", numbered[0].0) });
    }
    let formats: Vec<MemoryFormat> = tensors.iter().map(|t| t.layout().suggest_memory_format()).collect();
    let format = if formats.iter().all(|&f| f == formats[0]) && formats[0].dim_order(rank).is_some() { formats[0] } else { MemoryFormat::Contiguous };
    let out = reference.new_tensor(OP, &shape, dtype, format)?;
    let mut pieces = Vec::new();
    let mut at = 0usize;
    for t in parts {
        let len = t.shape()[d];
        if len > 0 && out.numel() > 0 {
            pieces.push((out.narrow(d as isize, at as isize, len)?, (*t).clone()));
        }
        at += len;
    }
    T::copy_pieces(OP, &pieces)?;
    Ok(out)
}

/// `torch.stack(tensors, dim)`: the tensors (all of one shape) joined along a new dim `dim`
/// (`-rank-1 <= dim <= rank`), with [`cat`]'s type promotion.
pub fn stack<T: ShapeOps>(tensors: &[&T], dim: isize) -> Result<T> {
    const OP: &str = "stack";
    let Some(first) = tensors.first() else {
        return Err(Error::invalid(OP, "expected a non-empty list of tensors"));
    };
    for (i, t) in tensors.iter().enumerate() {
        if t.shape() != first.shape() {
            return Err(Error::invalid(OP, format!("stack expects each tensor to be equal size, but tensor 0 has shape {:?} and tensor {i} {:?}", first.shape(), t.shape())));
        }
    }
    let d = wrap_dim(OP, dim, first.rank() + 1, false)?;
    let args: Vec<PromoteArg> = tensors.iter().map(|t| PromoteArg::Tensor(t.dtype(), t.rank().max(1))).collect();
    let dtype = result_type(OP, &args)?;
    let mut shape = first.shape().to_vec();
    shape.insert(d, tensors.len());
    result_fits(OP, &shape, dtype, || format!("the stack along a new dim {d} of {} tensors of shape {:?}", tensors.len(), first.shape()))?;
    // PyTorch's: a cat along `d` seen with the new dim split off (a view always can), so the
    // result has the layout cat gives the inputs (channels-last stays channels-last); a new
    // last dim, which a view cannot split off, is a cat of the inputs unsqueezed there.
    if d < first.rank() {
        let joined = cat(tensors, d as isize)?;
        let sizes: Vec<isize> = shape.iter().map(|&n| n as isize).collect();
        return joined.view(&sizes);
    }
    let views = tensors.iter().map(|t| t.unsqueeze(d as isize)).collect::<Result<Vec<T>>>()?;
    let refs: Vec<&T> = views.iter().collect();
    cat(&refs, d as isize)
}

/// Which normalization a [`NormCall`] makes.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NormKind {
    /// `layer_norm` over the last `dims` dims.
    Layer { dims: usize },
    /// `group_norm` in `groups` groups of the channels.
    Group { groups: usize },
}

/// A checked `layer_norm` or `group_norm` call, for a tensor type's fused form
/// ([`ShapeOps::fused_norm`]; `crate::norm` makes it).
#[doc(hidden)]
pub struct NormCall<'a, T> {
    pub kind: NormKind,
    pub weight: Option<&'a T>,
    pub bias: Option<&'a T>,
    pub eps: f64,
}

/// Shape ops on host and device tensors (PyTorch's `F.pad`, `Tensor.repeat`,
/// `torch.index_select`, `F.interpolate`); see also [`cat`] and [`stack`]. Each returns a new
/// tensor; bad input is a typed error before anything is allocated.
///
/// ```
/// use strided_wgpu::{HostTensor, ShapeOps, Strided};
/// use strided_wgpu::ops::PadMode;
/// let x = HostTensor::from_vec(vec![1f32, 2.0, 3.0], &[1, 3]).unwrap();
/// assert_eq!(x.pad(&[2, 1], PadMode::Reflect).unwrap().to_vec::<f32>().unwrap(), vec![3.0, 2.0, 1.0, 2.0, 3.0, 2.0]);
/// assert_eq!(x.repeat(&[2, 1]).unwrap().shape(), &[2, 3]);
/// ```
pub trait ShapeOps: Elementwise + Pool2d {
    /// A new tensor of `shape`, `dtype` and `format` beside this one (same context), for `op`
    /// (named in its errors).
    #[doc(hidden)]
    fn new_tensor(&self, op: &'static str, shape: &[usize], dtype: DType, format: MemoryFormat) -> Result<Self>;
    /// Whether `other` lives where this one does (on a device: the same context), so that
    /// one op may join them.
    #[doc(hidden)]
    fn beside(&self, other: &Self) -> bool;
    /// A \[1\] tensor of `dtype` holding `value` (converted as `x.to(dtype)`; integers through
    /// int32), beside this one.
    #[doc(hidden)]
    fn scalar_tensor(&self, value: f64, dtype: DType) -> Result<Self>;
    /// `dst.copy_(src)` for each (dst, src), in order (on a device, in one submission), for `op`
    /// (named in its errors).
    #[doc(hidden)]
    fn copy_pieces(op: &'static str, pieces: &[(Self, Self)]) -> Result<()>;
    /// The fused form of a checked `layer_norm` / `group_norm` call, or `None` where this type
    /// has none (the host: the composed ops are the CPU reference) or the call is past it (a
    /// software adapter's loop bound); `crate::norm` then composes it.
    #[doc(hidden)]
    fn fused_norm(&self, _call: &NormCall<'_, Self>) -> Result<Option<Self>> {
        Ok(None)
    }

    /// `F.pad(x, pad, mode)`: `pad` lists (left, right) for the last dim, then the one before,
    /// and so on. Constant padding takes any number of pairs up to the rank and negative pads
    /// (crops; those of a dim together at most its size, as PyTorch); reflect, replicate and
    /// circular pad the last 1-3 dims of a tensor with one or two more dims (reflect: pads
    /// below the size; circular: at most the size). Negative pads crop there too, as PyTorch's
    /// index rules: reflect and replicate map output j to input j - left reflected or clamped
    /// within the whole input (any padded size 0 is an error); circular crops first and wraps
    /// within what is left (a pad past that, where PyTorch reads memory it never wrote, is
    /// [`Error::Unsupported`]). Reflect and replicate need every dim but a batch (the first of
    /// k + 2) non-empty. The result keeps the input's memory format, but circular's is
    /// contiguous (as PyTorch's). Reflect, replicate and circular copy any type bit for bit
    /// (PyTorch's reflect and replicate refuse uint32). A result whose size overflows is
    /// [`Error::Overflow`].
    fn pad(&self, pad: &[isize], mode: PadMode) -> Result<Self> {
        const OP: &str = "pad";
        let rank = self.rank();
        if !pad.len().is_multiple_of(2) || pad.len() / 2 > rank {
            return Err(Error::invalid(OP, format!("padding length {} must be even and at most two times the rank of shape {:?}", pad.len(), self.shape())));
        }
        let pairs: Vec<(usize, isize, isize)> = (0..pad.len() / 2).map(|i| (rank - 1 - i, pad[2 * i], pad[2 * i + 1])).collect();
        let mut shape = self.shape().to_vec();
        for &(d, l, r) in &pairs {
            // i128 holds any size plus two pads exactly.
            let size = self.shape()[d] as i128;
            let n = size + l as i128 + r as i128;
            if n < 0 {
                return Err(Error::invalid(OP, format!("pads ({l}, {r}) of dim {d} of shape {:?} give a negative size {n}", self.shape())));
            }
            // PyTorch crops (narrows the input) before it pads: the crops of a dim together
            // may not exceed its size, whatever the other side adds.
            let crops = (-(l as i128)).max(0) + (-(r as i128)).max(0);
            if matches!(mode, PadMode::Constant(_)) && crops > size {
                return Err(Error::invalid(OP, format!("pads ({l}, {r}) of dim {d} of shape {:?} crop {crops} elements of {size}: the negative pads of a dim together must not exceed its size", self.shape())));
            }
            shape[d] = isize::try_from(n).map_err(|_| Error::overflow(OP, format!("the size of dim {d} of shape {:?} padded by ({l}, {r}): {n} does not fit isize", self.shape())))? as usize;
        }
        result_fits(OP, &shape, self.dtype(), || format!("the padding of shape {:?} by {pad:?}", self.shape()))?;
        let format = self.layout().suggest_memory_format();
        if let PadMode::Constant(value) = mode {
            // PyTorch's `constant_pad_nd` without a positive pad: the input narrowed, then
            // cloned, which keeps its memory order (`preserve_format`; a transposed matrix stays
            // transposed) where a padded result is dense in the suggested format.
            if pairs.iter().all(|&(_, l, r)| l <= 0 && r <= 0) {
                let mut src = self.clone();
                for &(d, l, r) in &pairs {
                    let size = self.shape()[d];
                    let (cl, cr) = (l.unsigned_abs(), r.unsigned_abs());
                    src = src.narrow(d as isize, cl as isize, size - cl - cr)?;
                }
                return Self::run(Op::To(self.dtype()), &[Input::Tensor(&src)], Target::New);
            }
            // The fill value must fit the type even where nothing is filled (an empty result:
            // PyTorch's `fill_` checks it all the same).
            fill_fits(value, self.dtype())?;
            let out = self.new_tensor(OP, &shape, self.dtype(), format)?;
            let mut pieces = Vec::new();
            if out.numel() > 0 && pairs.iter().any(|&(_, l, r)| l > 0 || r > 0) {
                let fill = self.scalar_tensor(value, self.dtype())?;
                let sizes: Vec<isize> = shape.iter().map(|&s| s as isize).collect();
                pieces.push((out.clone(), fill.expand(&sizes)?));
            }
            let (mut src, mut dst) = (self.clone(), out.clone());
            let mut empty = false;
            for &(d, l, r) in &pairs {
                // The crops were checked above: each at most the size.
                let size = self.shape()[d] as isize;
                let (cl, cr) = (l.min(0).unsigned_abs() as isize, r.min(0).unsigned_abs() as isize);
                let len = size - cl - cr;
                if len <= 0 {
                    empty = true;
                    break;
                }
                src = src.narrow(d as isize, cl, len as usize)?;
                dst = dst.narrow(d as isize, l.max(0), len as usize)?;
            }
            if !empty && dst.numel() > 0 {
                pieces.push((dst, src));
            }
            Self::copy_pieces(OP, &pieces)?;
            return Ok(out);
        }
        let k = pairs.len();
        if k == 0 || k > 3 || !(rank == k + 1 || rank == k + 2) {
            // PyTorch raises here too (only 2D, 3D, 4D, 5D non-constant padding): bad input.
            return Err(Error::invalid(OP, format!("{mode:?} padding of {k} dims needs a tensor of rank {} or {}, got shape {:?}", k + 1, k + 2, self.shape())));
        }
        // PyTorch's reflect and replicate padding (`padding::check_valid_input`) take only the
        // batch dim (the first of k + 2) empty.
        let batched = rank == k + 2;
        if matches!(mode, PadMode::Reflect | PadMode::Replicate) && self.shape().iter().enumerate().any(|(d, &s)| s == 0 && !(batched && d == 0)) {
            return Err(Error::invalid(OP, format!("{mode:?} padding of shape {:?}: a tensor with possibly 0 batch size and other non-zero dims expected", self.shape())));
        }
        // Negative pads crop, as PyTorch's: reflect and replicate map output j to the input's
        // j - left reflected or clamped within the whole input; circular crops first and wraps
        // within what is left.
        for &(d, l, r) in &pairs {
            let size = self.shape()[d] as isize;
            let ok = match mode {
                PadMode::Reflect => l < size && r < size,
                PadMode::Circular => l <= size && r <= size,
                _ => true,
            };
            if !ok {
                return Err(Error::invalid(OP, format!("{mode:?} pads ({l}, {r}) of dim {d} of shape {:?}: pads must be {}", self.shape(), match mode {
                    PadMode::Reflect => "below the size",
                    _ => "at most the size",
                })));
            }
        }
        // Reflect and replicate: PyTorch 2.15's "must be >= 1 in every dimension" where any
        // padded dim's result is empty.
        if matches!(mode, PadMode::Reflect | PadMode::Replicate) && pairs.iter().any(|&(d, _, _)| shape[d] == 0) {
            return Err(Error::invalid(OP, format!("{mode:?} pads {pad:?} of shape {:?}: the calculated output {shape:?} must be >= 1 in every padded dimension", self.shape())));
        }
        // Circular, after every pad was checked: PyTorch wraps within the cropped part by copying
        // from its own output, which reads memory it never wrote where a pad passes that part's
        // size (an empty result reads nothing).
        if matches!(mode, PadMode::Circular) && !shape.contains(&0) {
            for &(d, l, r) in &pairs {
                // In i128: a crop of isize::MIN has no isize negation.
                let crop = |p: isize| p.min(0).unsigned_abs() as i128;
                let kept = self.shape()[d] as i128 - crop(l) - crop(r);
                if l.max(0) as i128 > kept || r.max(0) as i128 > kept {
                    return Err(Error::unsupported(OP, format!("circular pads ({l}, {r}) of dim {d} of shape {:?}: a pad past the {kept} elements the crops leave (PyTorch reads unwritten memory there)", self.shape())));
                }
            }
        }
        // PyTorch's circular padding makes a new contiguous tensor (`new_empty`); reflect and
        // replicate keep the suggested format.
        let format = if matches!(mode, PadMode::Circular) { MemoryFormat::Contiguous } else { format };
        // An empty result: nothing to copy (a dim padded before another empties it could not be
        // formed).
        if shape.contains(&0) {
            return self.new_tensor(OP, &shape, self.dtype(), format);
        }
        // One dim at a time, each into a new tensor: the corners come from the padded rows.
        let mut cur = self.clone();
        let mut pieces = Vec::new();
        for &(d, l, r) in &pairs {
            let mut next_shape = cur.shape().to_vec();
            // Checked above (each pair pads a dim of its own, so `cur` still has the input's).
            next_shape[d] = shape[d];
            let next = self.new_tensor(OP, &next_shape, self.dtype(), format)?;
            let di = d as isize;
            if next.numel() > 0 {
                // Circular: the crops first; then (l, r) >= 0 wrap within what is left.
                let (src, l, r) = if matches!(mode, PadMode::Circular) {
                    // Each crop fits the dim (checked above), so it fits isize.
                    let (cl, cr) = (l.min(0).unsigned_abs() as isize, r.min(0).unsigned_abs() as isize);
                    (cur.narrow(di, cl, (cur.shape()[d] as isize - cl - cr) as usize)?, l.max(0), r.max(0))
                } else {
                    (cur.clone(), l, r)
                };
                let (size, n) = (src.shape()[d] as isize, shape[d] as isize);
                // Output j reads input t = j - l: the inside [max(0, l), min(n, l + size)), then
                // the outside before and after it. (Saturating: a replicate pad is unbounded, and
                // one near isize::MAX puts the inside past the output.)
                let (j0, j1) = (l.max(0), n.min(l.saturating_add(size)));
                if j1 > j0 {
                    pieces.push((next.narrow(di, j0, (j1 - j0) as usize)?, src.narrow(di, j0 - l, (j1 - j0) as usize)?));
                }
                // Replicate: element `at` of the dim repeated `len` times.
                let edge = |at: isize, len: isize| -> Result<Self> {
                    let mut sizes: Vec<isize> = src.shape().iter().map(|&s| s as isize).collect();
                    sizes[d] = len;
                    src.narrow(di, at, 1)?.expand(&sizes)
                };
                // Before: j in [0, min(n, l)), t < 0.
                let before = n.min(l);
                if before > 0 {
                    let from = match mode {
                        // t reflected: l - j, from l down to l - before + 1.
                        PadMode::Reflect => src.narrow(di, l - before + 1, before as usize)?.flip(di)?,
                        PadMode::Circular => src.narrow(di, size - before, before as usize)?,
                        _ => edge(0, before)?,
                    };
                    pieces.push((next.narrow(di, 0, before as usize)?, from));
                }
                // After: j in [max(0, l + size), n), t >= size.
                let start = l.saturating_add(size).max(0);
                if n > start {
                    let after = n - start;
                    let from = match mode {
                        // t reflected: 2 (size - 1) - j + l, down to size - 1 - r.
                        PadMode::Reflect => src.narrow(di, size - 1 - r, after as usize)?.flip(di)?,
                        PadMode::Circular => src.narrow(di, 0, after as usize)?,
                        _ => edge(size - 1, after)?,
                    };
                    pieces.push((next.narrow(di, start, after as usize)?, from));
                }
            }
            cur = next;
        }
        Self::copy_pieces(OP, &pieces)?;
        Ok(cur)
    }

    /// `x.repeat(*repeats)`: the tensor tiled `repeats[i]` times along each dim; `repeats` may
    /// have more entries than the rank (leading dims of size 1 are added). One copy of an
    /// expanded view; a contiguous result.
    fn repeat(&self, repeats: &[usize]) -> Result<Self> {
        const OP: &str = "repeat";
        let rank = self.rank();
        if repeats.len() < rank {
            return Err(Error::invalid(OP, format!("{} repeats for shape {:?}: there must be at least one per dim", repeats.len(), self.shape())));
        }
        let mut x = self.clone();
        while x.rank() < repeats.len() {
            x = x.unsqueeze(0)?;
        }
        let shape: Vec<usize> = x.shape().iter().zip(repeats).map(|(&s, &r)| s.checked_mul(r)).collect::<Option<Vec<_>>>().ok_or_else(|| Error::overflow(OP, format!("shape {:?} repeated {repeats:?}", self.shape())))?;
        result_fits(OP, &shape, self.dtype(), || format!("shape {:?} repeated {repeats:?}", self.shape()))?;
        let out = self.new_tensor(OP, &shape, self.dtype(), MemoryFormat::Contiguous)?;
        if out.numel() == 0 {
            return Ok(out);
        }
        // Source [r0, s0, r1, s1, ..] with stride 0 on each r; the output viewed the same way.
        let mut split = Vec::new();
        for (&s, &r) in x.shape().iter().zip(repeats) {
            split.push(r as isize);
            split.push(s as isize);
        }
        let mut src = x;
        for i in 0..repeats.len() {
            src = src.unsqueeze(2 * i as isize)?;
        }
        let src = src.expand(&split)?;
        Self::copy_pieces(OP, &[(out.view(&split)?, src)])?;
        Ok(out)
    }

    /// `torch.index_select(x, dim, index)`: the entries `index` (a host list here, where
    /// PyTorch takes an int64 tensor) along `dim`; each must be in `[0, size)`. Runs of
    /// consecutive indices copy as one slice. A contiguous result. A 0-d input takes one index,
    /// 0, along dim 0 or -1, and gives a 0-d copy (as PyTorch).
    fn index_select(&self, dim: isize, index: &[i64]) -> Result<Self> {
        const OP: &str = "index_select";
        if self.rank() == 0 {
            wrap_dim(OP, dim, 0, true)?;
            if index != [0] {
                return Err(Error::invalid(OP, format!("a 0-d input takes one index, 0; got {index:?}")));
            }
            let out = self.new_tensor(OP, &[], self.dtype(), MemoryFormat::Contiguous)?;
            Self::copy_pieces(OP, &[(out.clone(), self.clone())])?;
            return Ok(out);
        }
        let d = wrap_dim(OP, dim, self.rank(), false)?;
        let size = self.shape()[d];
        if let Some(&bad) = index.iter().find(|&&i| i < 0 || i as u64 >= size as u64) {
            return Err(Error::invalid(OP, format!("index {bad} is out of range for dim {d} of shape {:?} (size {size})", self.shape())));
        }
        let mut shape = self.shape().to_vec();
        shape[d] = index.len();
        result_fits(OP, &shape, self.dtype(), || format!("{} indices along dim {d} of shape {:?}", index.len(), self.shape()))?;
        let out = self.new_tensor(OP, &shape, self.dtype(), MemoryFormat::Contiguous)?;
        let mut pieces = Vec::new();
        if out.numel() > 0 {
            let mut j = 0;
            while j < index.len() {
                let mut len = 1;
                while j + len < index.len() && index[j + len] == index[j] + len as i64 {
                    len += 1;
                }
                pieces.push((out.narrow(d as isize, j as isize, len)?, self.narrow(d as isize, index[j] as isize, len)?));
                j += len;
            }
        }
        Self::copy_pieces(OP, &pieces)?;
        Ok(out)
    }

    /// `F.interpolate(x, size= or scale_factor=, mode=, align_corners=)` on a 4-d [N, C, H, W]
    /// input; the result keeps the input's memory format. Nearest modes copy (any type, bit
    /// for bit): rows then columns, as runs of expanded slices, or one copy of an expanded view
    /// when the output is a whole multiple of the input. Bilinear computes (float types).
    fn interpolate(&self, options: &InterpolateOptions) -> Result<Self> {
        let r = resize(self.layout(), self.dtype(), options)?;
        if let Some(g) = r.bilinear {
            return Ok(self.window(&g)?.0);
        }
        let (out, pieces) = nearest_pieces(self, &r, options.mode == InterpolateMode::NearestExact)?;
        Self::copy_pieces("interpolate", &pieces)?;
        Ok(out)
    }

}


/// A nearest (or nearest-exact) resize `r` of `x` as copies: the new output and the
/// (destination, source) copies that fill it, in order (rows into an intermediate first, then
/// columns from it). Nothing is written: the caller runs the copies.
pub(crate) fn nearest_pieces<T: ShapeOps>(x: &T, r: &Resize, exact: bool) -> Result<(T, Vec<(T, T)>)> {
    let ([n, c, h, w], (oh, ow), scales, format) = (r.input, r.out, r.scales, r.format);
    // The output first: a size too large for the device is its error before the host lists a
    // source for every output row and column.
    let out = x.new_tensor("interpolate", &[n, c, oh, ow], x.dtype(), format)?;
    if out.numel() == 0 {
        return Ok((out, Vec::new()));
    }
    let ratio = |i: usize, o: usize, f: Option<f64>| -> f32 { f.map_or(i as f32 / o as f32, |f| (1.0 / f) as f32) };
    // PyTorch's CPU kernel copies an unchanged size and halves indices of a doubled one (its
    // `nearest_idx`) only where it takes its vectorized kernel: a channels-last input of more
    // than 3 channels, or an output of OH + OW <= 128; elsewhere every index is `floor(k *
    // scale)`, which differs from those shortcuts where a scale factor other than 1 or 2 gives
    // the same or twice the size (its CUDA kernel never takes them).
    let shortcuts = (x.is_contiguous_for(MemoryFormat::ChannelsLast) && c > 3) || oh + ow <= 128;
    // The index lists are reserved fallibly: an output of a few rows of 2^31 columns is a
    // valid tensor whose lists would take 8 bytes an output column.
    let source = |i: usize, o: usize, f: Option<f64>| -> Result<Vec<usize>> {
        let r = ratio(i, o, f);
        let mut v = crate::error::reserved("interpolate", || format!("the source indices of {o} output positions"), o)?;
        v.extend((0..o).map(|k| {
                let s = if exact {
                    ((k as f32 + 0.5) * r).floor() as usize
                } else if shortcuts && o == i {
                    k
                } else if shortcuts && o == 2 * i {
                    k >> 1
                } else {
                    (k as f32 * r).floor() as usize
                };
                s.min(i - 1)
            }));
        Ok(v)
    };
    let rows = source(h, oh, scales.map(|s| s.0))?;
    let cols = source(w, ow, scales.map(|s| s.1))?;
    let (fh, fw) = (multiple(&rows, h), multiple(&cols, w));
    if let (Some(a), Some(b)) = (fh, fw) {
        // out [N, C, H, a, W, b] <- x [N, C, H, 1, W, 1] expanded.
        let split = [n as isize, c as isize, h as isize, a as isize, w as isize, b as isize];
        let src = x.unsqueeze(3)?.unsqueeze(5)?.expand(&split)?;
        let pieces = vec![(out.view(&split)?, src)];
        return Ok((out, pieces));
    }
    // Rows into [N, C, OH, W], then columns into the output.
    let mut pieces = Vec::new();
    let mid = if fh == Some(1) {
        x.clone()
    } else {
        let mid = x.new_tensor("interpolate", &[n, c, oh, w], x.dtype(), format)?;
        runs(&rows, 2, &mid, x, &mut pieces)?;
        mid
    };
    runs(&cols, 3, &out, &mid, &mut pieces)?;
    Ok((out, pieces))
}

/// `Some(k)` when `src[o] == o / k` for every o and the output is `k` times the input.
fn multiple(src: &[usize], input: usize) -> Option<usize> {
    let k = src.len() / input;
    (k >= 1 && k * input == src.len() && src.iter().enumerate().all(|(o, &s)| s == o / k)).then_some(k)
}

/// Copies of `dst.narrow(dim, o0, len) <- src.narrow(dim, s, 1).expand(..)` for each run of
/// equal sources `s` along `dim`.
fn runs<T: ShapeOps>(src_of: &[usize], dim: usize, dst: &T, src: &T, pieces: &mut Vec<(T, T)>) -> Result<()> {
    let mut o = 0;
    while o < src_of.len() {
        let mut len = 1;
        while o + len < src_of.len() && src_of[o + len] == src_of[o] {
            len += 1;
        }
        let target = dst.narrow(dim as isize, o as isize, len)?;
        let sizes: Vec<isize> = target.shape().iter().map(|&s| s as isize).collect();
        pieces.push((target, src.narrow(dim as isize, src_of[o] as isize, 1)?.expand(&sizes)?));
        o += len;
    }
    Ok(())
}

/// A resize's checked geometry: input, output size, the given factors, the output's format,
/// and the window of a bilinear one.
pub(crate) struct Resize {
    pub input: [usize; 4],
    pub out: (usize, usize),
    pub scales: Option<(f64, f64)>,
    pub format: MemoryFormat,
    pub bilinear: Option<Window>,
}

/// Checks an `interpolate` of a tensor of layout `x` and type `dtype`.
pub(crate) fn resize(x: &crate::layout::Layout, dtype: DType, options: &InterpolateOptions) -> Result<Resize> {
    const OP: &str = "interpolate";
    let s = x.shape();
    if s.len() != 4 {
        return Err(Error::unsupported(OP, format!("only 4-d [N, C, H, W] inputs are served here, got shape {s:?}")));
    }
    let [n, c, h, w] = [s[0], s[1], s[2], s[3]];
    let (oh, ow, scales) = match (options.size, options.scale_factor) {
        (Some(s), None) => (s.0, s.1, None),
        (None, Some(f)) => {
            if !(f.0 > 0.0 && f.1 > 0.0 && f.0.is_finite() && f.1.is_finite()) {
                return Err(Error::invalid(OP, format!("scale_factor {f:?} must be positive and finite")));
            }
            // Checked before the cast, which would saturate.
            let scaled = |i: usize, k: f64| -> Result<usize> {
                let o = (i as f64 * k).floor();
                if o < isize::MAX as f64 { Ok(o as usize) } else { Err(Error::overflow(OP, format!("the output size of input {s:?} with scale_factor {f:?}: {i} * {k:e} = {o:e} does not fit isize"))) }
            };
            (scaled(h, f.0)?, scaled(w, f.1)?, Some(f))
        }
        _ => return Err(Error::invalid(OP, "exactly one of size and scale_factor must be given")),
    };
    if h == 0 || w == 0 || oh == 0 || ow == 0 {
        return Err(Error::invalid(OP, format!("input and output sizes must be greater than 0: input ({h}, {w}), output ({oh}, {ow})")));
    }
    // PyTorch's "Non-empty 4D data tensor expected": only the batch may be empty.
    if c == 0 {
        return Err(Error::invalid(OP, format!("input of shape {s:?}: a non-empty [N, C, H, W] tensor expected (only N may be 0)")));
    }
    result_fits(OP, &[n, c, oh, ow], dtype, || format!("the resize of shape {s:?} to ({oh}, {ow})"))?;
    let format = x.suggest_memory_format();
    let mut bilinear = None;
    if let InterpolateMode::Bilinear { align_corners } = options.mode {
        if !matches!(dtype, DType::F32 | DType::F16 | DType::BF16) {
            return Err(Error::unsupported(OP, format!("bilinear interpolation of {dtype} (float32, float16 and bfloat16 are served)")));
        }
        // PyTorch's area_pixel_compute_scale: (in - 1) / (out - 1) aligned, else 1 / factor
        // when given, else in / out; in f32 as its CPU kernel.
        // An axis whose size does not change is copied (PyTorch's
        // `compute_source_index_and_lambda`), whatever the factor: a scale of 1 makes the taps
        // the identity.
        let sc = |i: usize, o: usize, f: Option<f64>| -> f32 {
            if i == o {
                1.0
            } else if align_corners {
                if o > 1 { (i as f32 - 1.0) / (o as f32 - 1.0) } else { 0.0 }
            } else {
                f.map_or(i as f32 / o as f32, |f| (1.0 / f) as f32)
            }
        };
        let scale = (sc(h, oh, scales.map(|s| s.0)), sc(w, ow, scales.map(|s| s.1)));
        bilinear = Some(Window { op: OP, mode: WindowMode::Bilinear { scale, align_corners }, input: [n, c, h, w], out: (oh, ow), kernel: (1, 1), stride: (1, 1), padding: (0, 0), dilation: (1, 1), indices: false, format });
    }
    Ok(Resize { input: [n, c, h, w], out: (oh, ow), scales, format, bilinear })
}

/// Checks that a result of `shape` and `dtype` made by `op` can exist: its byte size fits
/// `isize` (the most one allocation holds; the element count then fits too). Else an overflow
/// error of `op` naming what was asked (`what`) and the result's shape.
fn result_fits(op: &'static str, shape: &[usize], dtype: DType, what: impl FnOnce() -> String) -> Result<()> {
    match shape.iter().try_fold(dtype.size(), |acc, &n| acc.checked_mul(n)) {
        Some(bytes) if isize::try_from(bytes).is_ok() => Ok(()),
        _ => Err(Error::overflow(op, format!("{}: a result of shape {shape:?} in {dtype} would hold more than isize::MAX bytes", what()))),
    }
}

/// Whether a constant pad's fill `value` converts to `dtype` (PyTorch's `checked_convert` in
/// `fill_`): a value outside the type's range (a finite one past its largest; for integers also
/// a NaN or an infinity, and one from the largest + 1 on: 255.5 truncates to uint8's 255, as
/// PyTorch 2.15's) is an error.
pub(crate) fn fill_fits(value: f64, dtype: DType) -> Result<()> {
    let (lo, hi) = match dtype {
        DType::F32 => (f32::MIN as f64, f32::MAX as f64),
        DType::F16 => (half::f16::MIN.to_f64(), half::f16::MAX.to_f64()),
        DType::BF16 => (half::bf16::MIN.to_f64(), half::bf16::MAX.to_f64()),
        DType::I32 => (i32::MIN as f64, i32::MAX as f64),
        DType::U32 => (0.0, u32::MAX as f64),
        DType::I8 => (i8::MIN as f64, i8::MAX as f64),
        DType::U8 => (0.0, u8::MAX as f64),
    };
    let fits = if dtype.is_float() { !value.is_finite() || (lo..=hi).contains(&value) } else { value >= lo && value < hi + 1.0 };
    if !fits {
        return Err(Error::invalid("pad", format!("value {value:?} cannot be converted to type {dtype} without overflow")));
    }
    Ok(())
}
