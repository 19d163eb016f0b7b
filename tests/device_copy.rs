//! Device copies against the CPU reference, bit for bit.

mod common;

use common::gpu::{contexts, name};
use strided_wgpu::{DType, DeviceTensor, HostTensor, MemoryFormat, Strided};

#[test]
fn permuted_copy_matches_cpu() {
    for ctx in contexts() {
        let data: Vec<f32> = (0..2 * 3 * 4 * 5).map(|i| i as f32).collect();
        let h = HostTensor::from_vec(data.clone(), &[2, 3, 4, 5]).unwrap();
        let d = DeviceTensor::from_slice(ctx, &data, &[2, 3, 4, 5]).unwrap();
        let hv = h.permute(&[3, 1, 0, 2]).unwrap().flip(1).unwrap();
        let dv = d.permute(&[3, 1, 0, 2]).unwrap().flip(1).unwrap();
        let want = hv.contiguous(MemoryFormat::Contiguous).unwrap().to_vec::<f32>().unwrap();
        let got = dv.contiguous(MemoryFormat::Contiguous).unwrap().download().unwrap().to_vec::<f32>().unwrap();
        assert_eq!(got, want, "{}", name(ctx));
        let z = DeviceTensor::zeros(ctx, &[3], DType::U8, MemoryFormat::Contiguous).unwrap();
        assert_eq!(z.download().unwrap().to_vec::<u8>().unwrap(), vec![0, 0, 0]);
    }
}

#[test]
fn reports_adapters() {
    for ctx in contexts() {
        let a = ctx.adapter();
        eprintln!("adapter: {} backend {:?} type {:?} max_binding {} align {}", a.name, a.backend, a.device_type, a.max_storage_buffer_binding_size, a.min_storage_buffer_offset_alignment);
        assert!(a.max_storage_buffer_binding_size > 0);
    }
}
