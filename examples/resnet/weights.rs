//! The network's parameters in a safetensors file, by torchvision's names: what
//! `torch.save`-free PyTorch users export with `safetensors.torch.save_file(model.state_dict())`.

use safetensors::tensor::{Dtype, SafeTensors, TensorView};
use strided_wgpu::{DType, HostTensor, Strided};

use crate::model::{Description, ModelError, Params, Result};

/// Reads every parameter of `d` from safetensors bytes: each must be F32 of its shape. A file
/// the format rejects (truncated, offsets or sizes that do not add up, a bad header) is
/// [`ModelError::Weights`]; a tensor missing or of another type or shape, or one the network
/// does not have (PyTorch's strict `load_state_dict`: ResNet-34's file for ResNet-18, say;
/// the batch norms' `num_batches_tracked` counters, which inference does not use, excepted), is
/// [`ModelError::Parameter`] naming it. Nothing is returned unless every parameter is good.
pub fn load(bytes: &[u8], d: &Description) -> Result<Params> {
    let file = SafeTensors::deserialize(bytes).map_err(|e| ModelError::Weights(format!("not a valid safetensors file ({} bytes): {e}", bytes.len())))?;
    let mut params = Params::new();
    for (name, shape) in d.parameters() {
        let t = file.tensor(&name).map_err(|_| ModelError::Parameter { name: name.clone(), detail: format!("missing from the file (expected F32 {shape:?})") })?;
        if t.dtype() != Dtype::F32 || t.shape() != shape.as_slice() {
            return Err(ModelError::Parameter { name, detail: format!("the file holds {:?} {:?}, expected F32 {shape:?}", t.dtype(), t.shape()) });
        }
        // Little-endian f32, at any alignment.
        let data: Vec<f32> = t.data().chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
        params.insert(name, HostTensor::from_vec(data, &shape)?);
    }
    let mut extra: Vec<&str> = file.names().into_iter().filter(|n| !params.contains_key(*n) && !n.ends_with(".num_batches_tracked")).collect();
    extra.sort_unstable();
    if let Some(name) = extra.first() {
        return Err(ModelError::Parameter { name: name.to_string(), detail: format!("not a parameter of this network ({} such tensors in the file)", extra.len()) });
    }
    Ok(params)
}

/// Writes `params` (f32 host tensors) as safetensors bytes.
pub fn save(params: &Params) -> Result<Vec<u8>> {
    let mut bytes: Vec<(String, Vec<usize>, Vec<u8>)> = Vec::new();
    for (name, t) in params {
        if t.dtype() != DType::F32 {
            return Err(ModelError::Parameter { name: name.clone(), detail: format!("{} cannot be saved (f32 only)", t.dtype()) });
        }
        let data: Vec<u8> = t.to_vec::<f32>()?.iter().flat_map(|v| v.to_le_bytes()).collect();
        bytes.push((name.clone(), t.shape().to_vec(), data));
    }
    let views = bytes
        .iter()
        .map(|(name, shape, data)| TensorView::new(Dtype::F32, shape.clone(), data).map(|v| (name.as_str(), v)).map_err(|e| ModelError::Weights(format!("{name}: {e}"))))
        .collect::<Result<Vec<_>>>()?;
    safetensors::serialize(views, None).map_err(|e| ModelError::Weights(e.to_string()))
}
