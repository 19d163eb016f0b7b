//! Device copies against the CPU reference, bit for bit, on every adapter the tests open.

mod common;

use common::gpu::{contexts, limited, name};
use common::rng::Rng;
use strided_wgpu::{DeviceTensor, DType, Error, GpuContext, HostTensor, Layout, MemoryFormat, Strided, TuningPolicy};
use strided_wgpu::layout::CopyPlan;
use strided_wgpu::advanced::CopyPath;
use strided_wgpu::layout::CopyKind;

/// Random element bytes, rich in special values: NaNs with payloads (quiet and signalling),
/// -0.0, infinities, subnormals.
fn random_bytes(rng: &mut Rng, dtype: DType, n: usize) -> Vec<u8> {
    let specials32 = [0x7fc0_1234u32, 0xffa0_0001, 0x8000_0000, 0x7f80_0000, 0x0000_0001, 0x3f80_0000, 0x7f7f_ffff, 0x3380_0000];
    let specials16 = [0x7e01u32, 0xfd55, 0x8000, 0x7c00, 0x0001, 0x3c00, 0x7bff, 0x03ff];
    let mut out = Vec::with_capacity(n * dtype.size());
    for _ in 0..n {
        let r = rng.next() as u32;
        let v = match (dtype.size(), rng.below(4)) {
            (4, 0) => specials32[rng.below(8)],
            (2, 0) => specials16[rng.below(8)],
            _ => r,
        };
        out.extend_from_slice(&v.to_le_bytes()[..dtype.size()]);
    }
    out
}

/// A random view of a storage of `len` elements, through random view ops.
fn random_view(rng: &mut Rng, len: usize) -> Layout {
    let rank = 1 + rng.below(4);
    // A contiguous base over a prefix of the storage.
    let mut shape = vec![1usize; rank];
    let mut n = 1;
    for s in shape.iter_mut() {
        let k = 1 + rng.below(6);
        if n * k <= len {
            *s = k;
            n *= k;
        }
    }
    let mut l = Layout::new(shape.clone(), Layout::contiguous(&shape).unwrap().strides().to_vec(), rng.below(len - n + 1)).unwrap();
    for _ in 0..rng.below(5) {
        let r = l.rank();
        let d = rng.below(r) as isize;
        let next = match rng.below(6) {
            0 => {
                let mut p: Vec<isize> = (0..r as isize).collect();
                for i in (1..r).rev() {
                    p.swap(i, rng.below(i + 1));
                }
                l.permute(&p)
            }
            1 => l.flip(d),
            2 => {
                let n = l.shape()[d as usize] as isize;
                l.slice(d, rng.below(n as usize + 1) as isize, n, 1 + rng.below(3) as isize)
            }
            3 if l.shape()[d as usize] == 1 => {
                let mut t: Vec<isize> = l.shape().iter().map(|&x| x as isize).collect();
                t[d as usize] = 1 + rng.below(4) as isize;
                l.expand(&t)
            }
            4 if r < 6 => l.unsqueeze(d),
            _ => l.transpose(0, d),
        };
        if let Ok(nl) = next {
            l = nl;
        }
    }
    l
}

fn whole(t: &HostTensor) -> Vec<u8> {
    let bytes_of = |h: &HostTensor| -> Vec<u8> {
        match h.dtype() {
            DType::F32 | DType::I32 | DType::U32 => bytemuck::cast_slice(&h.to_vec::<u32>().or_else(|_| h.to_vec::<f32>().map(bytemuck::cast_vec)).or_else(|_| h.to_vec::<i32>().map(bytemuck::cast_vec)).unwrap()).to_vec(),
            DType::F16 => bytemuck::cast_slice(&h.to_vec::<half::f16>().unwrap()).to_vec(),
            DType::BF16 => bytemuck::cast_slice(&h.to_vec::<half::bf16>().unwrap()).to_vec(),
            DType::U8 => h.to_vec::<u8>().unwrap(),
            DType::I8 => bytemuck::cast_slice(&h.to_vec::<i8>().unwrap()).to_vec(),
        }
    };
    bytes_of(&t.as_strided(&[t.storage_len()], &[1], 0).unwrap())
}

fn device_from_bytes(ctx: &GpuContext, dtype: DType, bytes: &[u8]) -> DeviceTensor {
    let n = bytes.len() / dtype.size();
    let h = HostTensor::from_bytes(dtype, bytes.to_vec(), Layout::contiguous(&[n]).unwrap()).unwrap();
    DeviceTensor::upload(ctx, &h).unwrap()
}

const PAIRS: &[(DType, DType)] = &[
    (DType::F32, DType::F32),
    (DType::F16, DType::F16),
    (DType::BF16, DType::BF16),
    (DType::U8, DType::U8),
    (DType::I8, DType::I8),
    (DType::I32, DType::I32),
    (DType::F32, DType::F16),
    (DType::F16, DType::F32),
    (DType::F32, DType::BF16),
    (DType::BF16, DType::F16),
    (DType::F32, DType::I32),
    (DType::U8, DType::F16),
    (DType::I8, DType::U32),
    (DType::BF16, DType::U8),
    (DType::I32, DType::I8),
    (DType::U32, DType::BF16),
];

/// What one random copy came to.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Drawn {
    /// Host and device agree bit for bit on a copy that moved elements.
    Ran,
    /// An empty copy (nothing to compare), or a draw that gave no valid pair.
    Nothing,
    /// A forced path refused a plan it does not apply to (only for draws not made for it).
    Refused,
}

/// A random copy made for the word kernels (`Vec4`, `Vec4Rows`, `StridedRows`): one type, rows
/// of whole 16-byte words at 16-byte aligned offsets, taken whole or every other row, forwards
/// or flipped; for `StridedRows` 4-byte elements read every `step`-th element along a row into
/// rows of a multiple of 4 elements. Every such draw is one the forced path must take.
fn aligned_draw(rng: &mut Rng, path: CopyPath) -> (DType, usize, Layout, usize, Layout) {
    let types: &[DType] = match path {
        CopyPath::StridedRows { .. } => &[DType::F32, DType::I32, DType::U32],
        _ => &[DType::F32, DType::F16, DType::BF16, DType::U8, DType::I8, DType::I32],
    };
    let t = types[rng.below(types.len())];
    let u = 16 / t.size();
    let (rows, words) = (1 + rng.below(9), 1 + rng.below(5));
    let cols = words * u;
    let (row_step, col_step) = match path {
        CopyPath::StridedRows { .. } => (1 + rng.below(2), 2 + rng.below(2)),
        _ => (1 + rng.below(2), 1),
    };
    // The source: a contiguous [rows * row_step, cols * col_step] block at an aligned offset.
    let sshape = [rows * row_step, cols * col_step];
    let soff = u * rng.below(4);
    let slen = soff + sshape[0] * sshape[1] + u * rng.below(3);
    let mut src_l = Layout::new(sshape.to_vec(), Layout::contiguous(&sshape).unwrap().strides().to_vec(), soff).unwrap();
    src_l = src_l.slice(0, 0, sshape[0] as isize, row_step as isize).unwrap().slice(1, 0, sshape[1] as isize, col_step as isize).unwrap();
    if rng.below(2) == 0 {
        src_l = src_l.flip(0).unwrap();
    }
    // The destination: contiguous rows at an aligned offset, every other row or flipped at times.
    let dstep = 1 + rng.below(2);
    let doff = u * rng.below(4);
    let dshape = [rows * dstep, cols];
    let dlen = doff + dshape[0] * cols + u * rng.below(3);
    let mut dst_l = Layout::new(dshape.to_vec(), Layout::contiguous(&dshape).unwrap().strides().to_vec(), doff).unwrap().slice(0, 0, dshape[0] as isize, dstep as isize).unwrap();
    if rng.below(3) == 0 {
        dst_l = dst_l.flip(0).unwrap();
    }
    (t, slen, src_l, dlen, dst_l)
}

/// One random copy on host and device, compared bit for bit; Err on a mismatch, or on a forced
/// path refusing a draw made for it (`aligned`: `aligned_draw`) or any draw (`Gather` takes every plan).
fn random_copy(ctx: &GpuContext, seed: u64, path: CopyPath, aligned: bool) -> Result<Drawn, String> {
    let mut rng = Rng(seed);
    let (st, dt, slen, dlen, src_l, dst_l) = if aligned {
        let (t, slen, src_l, dlen, dst_l) = aligned_draw(&mut rng, path);
        (t, t, slen, dlen, src_l, dst_l)
    } else {
        let (st, dt) = PAIRS[rng.below(PAIRS.len())];
        let (slen, dlen) = (1 + rng.below(700), 1 + rng.below(700));
        let src_l = random_view(&mut rng, slen);
        // The destination: a random view without internal overlap, broadcast-compatible with src.
        let mut dst_l = random_view(&mut rng, dlen);
        for _ in 0..50 {
            if !dst_l.has_internal_overlap() && CopyPlan::new(&dst_l, &src_l).is_ok() {
                break;
            }
            dst_l = if rng.below(2) == 0 { random_view(&mut rng, dlen) } else { Layout::new(src_l.shape().to_vec(), Layout::contiguous(src_l.shape()).unwrap().strides().to_vec(), 0).unwrap() };
        }
        (st, dt, slen, dlen, src_l, dst_l)
    };
    let fits = dst_l.span().is_none_or(|(_, hi)| hi < dlen) && !dst_l.has_internal_overlap() && CopyPlan::new(&dst_l, &src_l).is_ok();
    if !fits {
        return if aligned { Err(format!("the aligned draw {src_l:?} -> {dst_l:?} is not a valid copy")) } else { Ok(Drawn::Nothing) };
    }
    let (sbytes, dbytes) = (random_bytes(&mut rng, st, slen), random_bytes(&mut rng, dt, dlen));
    let hs = HostTensor::from_bytes(st, sbytes.clone(), Layout::contiguous(&[slen]).unwrap()).unwrap();
    let hd = HostTensor::from_bytes(dt, dbytes.clone(), Layout::contiguous(&[dlen]).unwrap()).unwrap();
    let (ds, dd) = (device_from_bytes(ctx, st, &sbytes), device_from_bytes(ctx, dt, &dbytes));
    let view = |h: &HostTensor, l: &Layout| h.as_strided(l.shape(), l.strides(), l.offset()).unwrap();
    let dview = |d: &DeviceTensor, l: &Layout| d.as_strided(l.shape(), l.strides(), l.offset()).unwrap();
    view(&hd, &dst_l).copy_(&view(&hs, &src_l)).map_err(|e| format!("host: {e}"))?;
    match dview(&dd, &dst_l).copy_with(&dview(&ds, &src_l), path) {
        Ok(()) => {}
        // A forced path that does not apply to this plan is refused up front.
        Err(Error::Unsupported { .. }) if !aligned && !matches!(path, CopyPath::Auto | CopyPath::Gather { .. }) => return Ok(Drawn::Refused),
        Err(e) => return Err(format!("device: {e} ({st}->{dt} src {src_l:?} dst {dst_l:?})")),
    }
    let (want, got) = (whole(&hd), whole(&dd.download().unwrap()));
    if want != got {
        let first = want.iter().zip(&got).position(|(a, b)| a != b).unwrap_or(0);
        return Err(format!(
            "{st}->{dt} src {src_l:?} dst {dst_l:?} plan {:?}: first differing byte {first}",
            CopyPlan::new(&dst_l, &src_l).unwrap()
        ));
    }
    Ok(if dst_l.numel() == 0 { Drawn::Nothing } else { Drawn::Ran })
}

#[test]
fn random_copies_match_cpu_bitwise() {
    for ctx in contexts() {
        let paths = [CopyPath::Auto, CopyPath::Gather { wg: 64, ept: 1 }, CopyPath::Gather { wg: 128, ept: 3 }, CopyPath::Vec4 { wg: 64, wpt: 2 }, CopyPath::Vec4Rows { wg: 64, rows: 3 }, CopyPath::StridedRows { wg: 64, rows: 3 }];
        for (i, path) in paths.into_iter().enumerate() {
            // The word kernels take few random views: half their draws are made for them.
            let words = matches!(path, CopyPath::Vec4 { .. } | CopyPath::Vec4Rows { .. } | CopyPath::StridedRows { .. });
            let mut ran = [0usize; 2];
            for seed in 0..120u64 {
                let aligned = words && seed % 2 == 0;
                let seed = seed * paths.len() as u64 + i as u64;
                match random_copy(ctx, seed, path, aligned) {
                    Ok(Drawn::Ran) => ran[aligned as usize] += 1,
                    Ok(_) => {}
                    Err(e) => panic!("{} seed {seed} path {path:?}: {e}", name(ctx)),
                }
            }
            eprintln!("{} {path:?}: {} random and {} aligned copies of 120 moved elements and matched", name(ctx), ran[0], ran[1]);
            // Every aligned draw moves elements; random ones are empty or not valid copies at times.
            let want = if words { [0, 60] } else { [85, 0] };
            assert!(ran[0] >= want[0] && ran[1] >= want[1], "{} {path:?}: only {ran:?} copies moved elements", name(ctx));
        }
    }
}

#[test]
fn index_formula_matches_rust_twin() {
    // The source holds its own element indices, so the gather's output says, for every
    // destination element, which source element plan_offsets (WGSL) picked.
    for ctx in contexts() {
        let mut rng = Rng(7);
        for _ in 0..40 {
            let slen = 1 + rng.below(4000);
            let src_l = random_view(&mut rng, slen);
            let dst_l = Layout::contiguous(src_l.shape()).unwrap().flip(0).unwrap();
            let plan = CopyPlan::new(&dst_l, &src_l).unwrap();
            let src = DeviceTensor::from_slice(ctx, &(0..slen as u32).collect::<Vec<_>>(), &[slen]).unwrap();
            // No element holds an index before the copy (zeros would pass an unwritten one).
            let dst = DeviceTensor::from_slice(ctx, &vec![u32::MAX; dst_l.numel().max(1)], &[dst_l.numel().max(1)]).unwrap();
            let dv = dst.as_strided(dst_l.shape(), dst_l.strides(), dst_l.offset()).unwrap();
            dv.copy_with(&src.as_strided(src_l.shape(), src_l.strides(), src_l.offset()).unwrap(), CopyPath::Gather { wg: 64, ept: 1 }).unwrap();
            let got = dst.download().unwrap().to_vec::<u32>().unwrap();
            for i in 0..plan.numel() {
                let (d, s) = plan.offsets(i);
                assert_eq!(got[d] as usize, s, "{}: plan {plan:?}, linear index {i}", name(ctx));
            }
        }
    }
}

/// A device on `ctx`'s adapter whose storage bindings hold at most 128 MiB (the software
/// adapters' own limit; GPUs allow up to 4 GiB, where the tensors below would fit in one
/// binding and the cuts would go untested).
fn binding_128mib(ctx: &GpuContext) -> GpuContext {
    limited(ctx, |l| wgpu::Limits { max_storage_buffer_binding_size: l.max_storage_buffer_binding_size.min(128 << 20), ..l })
}

#[test]
fn copy_larger_than_one_binding_through_a_permute() {
    // 8*64*256*260 f32 = 136 MB: over a 128 MiB binding.
    let shape = [8usize, 64, 256, 260];
    let n: usize = shape.iter().product();
    let data: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let host = HostTensor::from_vec(data.clone(), &shape).unwrap();
    let want = host.permute(&[0, 2, 3, 1]).unwrap().contiguous(MemoryFormat::Contiguous).unwrap().to_vec::<f32>().unwrap();
    for ctx in contexts() {
        let ctx = &binding_128mib(ctx);
        assert!(n as u64 * 4 > ctx.adapter().max_storage_buffer_binding_size);
        let d = DeviceTensor::from_slice(ctx, &data, &shape).unwrap();
        let p = d.permute(&[0, 2, 3, 1]).unwrap().contiguous(MemoryFormat::Contiguous).unwrap();
        let mut got = vec![0f32; n];
        p.download_into(&mut got).unwrap();
        assert!(got == want, "{}: large permuted copy differs", name(ctx));
    }
    // One RGB image over a binding, to channels-last. The narrow transpose kernel needs each
    // image in one binding (splitting this one in halves would leave pixel counts that are not
    // multiples of 4: 11,793,396 / 2 is 2 mod 4); it is refused, and the automatic path takes
    // another kernel.
    let shape = [1usize, 3, 2, 5896698];
    let n: usize = shape.iter().product();
    let data: Vec<u32> = (0..n as u32).collect();
    let want = HostTensor::from_vec(data.clone(), &shape).unwrap().permute(&[0, 2, 3, 1]).unwrap().contiguous(MemoryFormat::Contiguous).unwrap().to_vec::<u32>().unwrap();
    for ctx in contexts() {
        let ctx = &binding_128mib(ctx);
        assert!(n as u64 * 4 > ctx.adapter().max_storage_buffer_binding_size);
        let d = DeviceTensor::from_slice(ctx, &data, &shape).unwrap();
        let out = DeviceTensor::empty(ctx, &shape, DType::U32, MemoryFormat::ChannelsLast).unwrap();
        let e = out.copy_with(&d, CopyPath::TransposeNarrow { wg: 64 }).unwrap_err();
        assert!(matches!(e, Error::Unsupported { op: "copy_", .. }) && e.to_string().contains("narrow transpose"), "{e}");
        out.copy_(&d).unwrap();
        let mut got = vec![0u32; n];
        out.as_strided(&[n], &[1], 0).unwrap().download_into(&mut got).unwrap();
        assert!(got == want, "{}: an RGB image over a binding to channels-last differs", name(ctx));
    }
}

/// Copies whose single image or row spans more than a binding: the plan must be cut inside
/// the matrix (the channel dim) or inside a row (at whole words of the strided-rows kernel).
#[test]
fn copies_cut_inside_a_matrix_or_a_row() {
    // A 4-channel image of 188 MB to channels-last: 3 channel planes span over a binding in
    // the source, so the channel dim itself must be cut (cutting only the pixel dim would take
    // millions of pieces).
    let shape = [1usize, 4, 2, 5896698];
    let n: usize = shape.iter().product();
    let data: Vec<u32> = (0..n as u32).collect();
    let want = HostTensor::from_vec(data.clone(), &shape).unwrap().permute(&[0, 2, 3, 1]).unwrap().contiguous(MemoryFormat::Contiguous).unwrap().to_vec::<u32>().unwrap();
    for ctx in contexts() {
        let ctx = &binding_128mib(ctx);
        let d = DeviceTensor::from_slice(ctx, &data, &shape).unwrap();
        for path in [CopyPath::Auto, CopyPath::Transpose { wg: 64, tile: 4, order: 0 }, CopyPath::Gather { wg: 256, ept: 16 }] {
            let out = DeviceTensor::zeros(ctx, &shape, DType::U32, MemoryFormat::ChannelsLast).unwrap();
            out.copy_with(&d, path).unwrap();
            let mut got = vec![0u32; n];
            out.as_strided(&[n], &[1], 0).unwrap().download_into(&mut got).unwrap();
            assert!(got == want, "{}: a 4-channel image over a binding to channels-last differs ({path:?})", name(ctx));
        }
    }
    // A column of a [60, 600000] matrix (144 MB): 60 elements whose source span is over a
    // binding. The strided-rows kernel writes whole vec4 words, so the row may only be cut at
    // multiples of 4 elements (a cut at 30 wrote the second half one word off).
    let (rows, cols) = (60usize, 600_000usize);
    let data: Vec<u32> = (0..(rows * cols) as u32).collect();
    let want: Vec<u32> = (0..rows).map(|r| data[r * cols + 7]).collect();
    for ctx in contexts() {
        let ctx = &binding_128mib(ctx);
        let d = DeviceTensor::from_slice(ctx, &data, &[rows, cols]).unwrap();
        let col = d.select(1, 7).unwrap();
        for path in [CopyPath::Auto, CopyPath::StridedRows { wg: 64, rows: 1 }] {
            let out = DeviceTensor::empty(ctx, &[rows], DType::U32, MemoryFormat::Contiguous).unwrap();
            out.copy_with(&col, path).unwrap();
            let got = out.download().unwrap().to_vec::<u32>().unwrap();
            assert!(got == want, "{}: a column over a binding differs ({path:?})", name(ctx));
        }
    }
}

#[test]
fn bad_input_is_a_typed_error_and_leaves_the_destination_alone() {
    for ctx in contexts() {
        let data: Vec<f32> = (0..12).map(|i| i as f32).collect();
        let x = DeviceTensor::from_slice(ctx, &data, &[3, 4]).unwrap();
        let row = DeviceTensor::from_slice(ctx, &[9f32; 4], &[4]).unwrap();
        let untouched = |t: &DeviceTensor, want: &[f32]| assert_eq!(t.download().unwrap().to_vec::<f32>().unwrap(), want, "{}", name(ctx));
        // Destination reaching an element twice.
        let e = row.expand(&[3, 4]).unwrap().copy_(&x).unwrap_err();
        assert!(matches!(e, Error::Overlap { op: "copy_", .. }), "{e}");
        untouched(&row, &[9.0; 4]);
        // Partial overlap with the source.
        let e = x.narrow(0, 0, 2).unwrap().copy_(&x.narrow(0, 1, 2).unwrap()).unwrap_err();
        assert!(matches!(e, Error::Overlap { .. }), "{e}");
        untouched(&x, &data);
        // Mismatched shapes.
        let e = x.copy_(&DeviceTensor::from_slice(ctx, &[1f32; 3], &[3]).unwrap()).unwrap_err();
        assert_eq!(e.to_string(), "copy_: shape [3] cannot be broadcast to [3, 4]: at dim 1, size 3 must equal 4 or be 1");
        untouched(&x, &data);
        // A view outside its storage.
        assert!(matches!(x.as_strided(&[4, 4], &[4, 1], 0), Err(Error::OutOfBounds { op: "as_strided", storage_len: 12, .. })));
        // Every pair of element types converts: no DType error.
        let u = DeviceTensor::from_slice(ctx, &[1u8; 12], &[3, 4]).unwrap();
        let xu = DeviceTensor::zeros(ctx, &[3, 4], DType::F32, MemoryFormat::Contiguous).unwrap();
        xu.copy_(&u).unwrap();
        untouched(&xu, &[1.0; 12]);
        // A request over the adapter's limits.
        let e = DeviceTensor::empty(ctx, &[1 << 30, 4], DType::F32, MemoryFormat::Contiguous).unwrap_err();
        assert!(matches!(e, Error::Limit { limit: "max_buffer_size", .. }), "{e}");
        // A workgroup over the adapter's limit is a Limit error before anything is recorded
        // (it was a wgpu validation error of the pipeline), and the context stays usable.
        let e = x.copy_with(&x.flip(0).unwrap().contiguous(MemoryFormat::Contiguous).unwrap(), CopyPath::Gather { wg: 1 << 16, ept: 1 }).unwrap_err();
        assert!(matches!(e, Error::Limit { limit: "max_compute_invocations_per_workgroup" | "max_compute_workgroup_size_x", .. }), "{e}");
        untouched(&x, &data);
        // Zero or overflowing kernel parameters: a typed error, nothing dispatched.
        let flipped = x.flip(0).unwrap().contiguous(MemoryFormat::Contiguous).unwrap();
        let xt = x.transpose(0, 1).unwrap().contiguous(MemoryFormat::Contiguous).unwrap().view(&[4, 3]).unwrap().transpose(0, 1).unwrap();
        for (src, path, want) in [
            (&flipped, CopyPath::Gather { wg: 0, ept: 16 }, "wg must be positive"),
            (&flipped, CopyPath::Gather { wg: 64, ept: 0 }, "ept must be positive"),
            (&xt, CopyPath::TransposeTile { wg: 0, tile: 4 }, "wg must be positive"),
            (&xt, CopyPath::Transpose { wg: 64, tile: 0, order: 0 }, "tile must be positive"),
            (&flipped, CopyPath::StridedRows { wg: 64, rows: 0 }, "rows must be positive"),
            (&flipped, CopyPath::Vec4 { wg: 1 << 16, wpt: 1 << 16 }, "words per workgroup"),
        ] {
            let e = x.copy_with(src, path).unwrap_err();
            assert!(matches!(e, Error::InvalidArgument { op: "copy_", .. } | Error::Overflow { op: "copy_", .. }) && e.to_string().contains(want), "{path:?}: {e}");
            untouched(&x, &data);
        }
        let y = x.flip(1).unwrap().contiguous(MemoryFormat::Contiguous).unwrap();
        assert_eq!(y.download().unwrap().to_vec::<f32>().unwrap()[..4], [3.0, 2.0, 1.0, 0.0]);
        // A wrong-length download slice.
        assert!(x.download_into(&mut [0f32; 5]).is_err());
    }
}

#[test]
fn contiguous_returns_the_same_view_when_nothing_moves() {
    for ctx in contexts() {
        let x = DeviceTensor::from_slice(ctx, &[0f32; 24], &[1, 2, 3, 4]).unwrap();
        let p = x.permute(&[1, 2, 3, 0]).unwrap();
        assert!(p.contiguous(MemoryFormat::Contiguous).unwrap().shares_storage(&x));
        let cl = x.contiguous(MemoryFormat::ChannelsLast).unwrap();
        assert!(!cl.shares_storage(&x));
        assert_eq!(cl.strides(), &[24, 1, 8, 2]);
        assert!(cl.contiguous(MemoryFormat::ChannelsLast).unwrap().shares_storage(&cl));
    }
}

#[test]
fn one_context_from_many_threads_and_batches() {
    for ctx in contexts() {
        std::thread::scope(|s| {
            for t in 0..4u64 {
                s.spawn(move || {
                    for seed in 0..15 {
                        random_copy(ctx, 10_000 + t * 100 + seed, CopyPath::Auto, false).unwrap();

                    }
                });
            }
        });
        // Several copies recorded together and submitted once.
        let a = DeviceTensor::from_slice(ctx, &(0..6).map(|i| i as f32).collect::<Vec<_>>(), &[2, 3]).unwrap();
        let b = DeviceTensor::zeros(ctx, &[3, 2], DType::F32, MemoryFormat::Contiguous).unwrap();
        let c = DeviceTensor::zeros(ctx, &[3, 2], DType::F16, MemoryFormat::Contiguous).unwrap();
        let mut batch = ctx.batch();
        batch.copy_(&b, &a.transpose(0, 1).unwrap()).unwrap();
        batch.copy_(&c, &b).unwrap();
        batch.submit().unwrap();
        let want = [0f32, 3., 1., 4., 2., 5.];
        assert_eq!(c.download().unwrap().to_vec::<half::f16>().unwrap().iter().map(|x| x.to_f32()).collect::<Vec<_>>(), want);
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

/// Transpose kernel variants (and the paths around them) every transpose test runs through.
const TRANSPOSE_PATHS: [CopyPath; 13] = [
    CopyPath::Auto,
    CopyPath::Transpose { wg: 64, tile: 4, order: 0 },
    CopyPath::Transpose { wg: 32, tile: 8, order: 1 },
    CopyPath::TransposeVec4 { wg: 64, tile: 4, order: 1 },
    CopyPath::TransposeVec4 { wg: 64, tile: 16, order: 0 },
    CopyPath::TransposeVec4 { wg: 32, tile: 8, order: 1 },
    CopyPath::TransposeVec4 { wg: 64, tile: 32, order: 0 },
    CopyPath::TransposeTile { wg: 256, tile: 32 },
    CopyPath::TransposeTile { wg: 64, tile: 16 },
    CopyPath::TransposeTile { wg: 64, tile: 8 },
    CopyPath::TransposeNarrow { wg: 64 },
    CopyPath::TransposeNarrow { wg: 32 },
    CopyPath::Gather { wg: 256, ept: 16 },
];

/// Element bytes whose bit patterns are their storage indices for 4-byte types; for 1- and
/// 2-byte types the index mixed with a hash of it (the index alone repeats every 256 bytes:
/// a batch stride of 1536 flipped, or a 4-channel shift, left every byte where it was).
fn indexed(dtype: DType, n: usize) -> Vec<u8> {
    let bits = |i: usize| if dtype.size() == 4 { i as u32 } else { (i as u32) ^ (i as u32).wrapping_mul(0x9e37_79b1).rotate_right(13) };
    (0..n).flat_map(|i| bits(i).to_le_bytes()[..dtype.size()].to_vec()).collect()
}

#[test]
fn transpose_kernels_match_cpu_on_edge_shapes() {
    // NCHW <-> NHWC, NCDHW <-> NDHWC, with tile edges, C = 3, sizes of 1, and a storage offset;
    // C = 3 and 2 with whole words of pixels (the narrow kernel: one block of 4 pixels per
    // invocation, or, on CPU adapters, 4 where they divide an image's blocks: 8 and 16 here).
    let cases: &[(&[usize], MemoryFormat)] = &[
        (&[2, 3, 4, 6], MemoryFormat::ChannelsLast),
        (&[3, 2, 4, 5], MemoryFormat::ChannelsLast),
        (&[2, 3, 4, 8], MemoryFormat::ChannelsLast),
        (&[3, 2, 8, 8], MemoryFormat::ChannelsLast),
        (&[2, 3, 2, 2, 3], MemoryFormat::ChannelsLast3d),
        (&[2, 64, 8, 8], MemoryFormat::ChannelsLast),
        (&[3, 3, 17, 5], MemoryFormat::ChannelsLast),
        (&[1, 20, 1, 36], MemoryFormat::ChannelsLast),
        (&[2, 8, 4, 12, 4], MemoryFormat::ChannelsLast3d),
        (&[1, 1, 5, 5], MemoryFormat::ChannelsLast),
        (&[2, 40, 9, 7], MemoryFormat::ChannelsLast),
        (&[2, 32, 4, 12], MemoryFormat::ChannelsLast),
        (&[1, 16, 2, 8, 4], MemoryFormat::ChannelsLast3d),
    ];
    for ctx in contexts() {
        let mut ran = 0;
        let mut kinds_ran = std::collections::HashSet::new();
        // Each variant that ran, by element type (and channels, for the narrow kernel), both ways.
        let (mut paths_ran, mut backs_ran) = (std::collections::HashSet::new(), std::collections::HashSet::new());
        for dtype in [DType::U32, DType::F16, DType::U8] {
            for &(shape, fmt) in cases {
                let n: usize = shape.iter().product();
                let bytes = indexed(dtype, n + 16);
                let h = HostTensor::from_bytes(dtype, bytes.clone(), Layout::contiguous(&[n + 16]).unwrap()).unwrap();
                let d = device_from_bytes(ctx, dtype, &bytes);
                let shape_i: Vec<isize> = shape.iter().map(|&x| x as isize).collect();
                for off in [0isize, 4, 16] {
                    let hv = h.narrow(0, off, n).unwrap().view(&shape_i).unwrap();
                    let dv = d.narrow(0, off, n).unwrap().view(&shape_i).unwrap();
                    // download() returns logical order; `out` has fmt's strides by construction.
                    let want = whole(&hv.contiguous(MemoryFormat::Contiguous).unwrap().materialize(MemoryFormat::Contiguous, dtype).unwrap());
                    for path in TRANSPOSE_PATHS {
                        let out = DeviceTensor::zeros(ctx, shape, dtype, fmt).unwrap();
                        match out.copy_with(&dv, path) {
                            Ok(()) => {
                                ran += 1;
                                kinds_ran.insert((dtype, std::mem::discriminant(&path)));
                                paths_ran.insert((dtype, format!("{path:?}"), shape[1]));
                            }
                            Err(Error::Unsupported { .. }) => continue, // path does not apply
                            Err(e) => panic!("{}: {shape:?} {path:?}: {e}", name(ctx)),
                        }
                        assert!(whole(&out.download().unwrap()) == want, "{}: {dtype} {shape:?} to {fmt:?} via {path:?}, offset {off}", name(ctx));
                        // And back to contiguous, from the channels-last tensor.
                        let back = DeviceTensor::zeros(ctx, shape, dtype, MemoryFormat::Contiguous).unwrap();
                        match back.copy_with(&out, path) {
                            Ok(()) => {
                                assert!(whole(&back.download().unwrap()) == want, "{dtype} {shape:?} back via {path:?}");
                                backs_ran.insert((dtype, format!("{path:?}")));
                            }
                            Err(Error::Unsupported { .. }) => {}
                            Err(e) => panic!("{e}"),
                        }
                    }
                }
            }
        }
        assert!(ran >= 250, "only {ran} transposes ran");
        // Every kernel family ran for every element size it supports.
        for dtype in [DType::U32, DType::F16, DType::U8] {
            for path in [CopyPath::TransposeVec4 { wg: 64, tile: 16, order: 0 }, CopyPath::TransposeTile { wg: 64, tile: 16 }, CopyPath::Gather { wg: 64, ept: 1 }] {
                assert!(kinds_ran.contains(&(dtype, std::mem::discriminant(&path))), "{dtype} never ran through {path:?}");
            }
        }
        let narrow = CopyPath::TransposeNarrow { wg: 64 };
        assert!(kinds_ran.contains(&(DType::U32, std::mem::discriminant(&narrow))), "4-byte elements never ran through {narrow:?}");
        // Every variant ran, both ways, for every element size it serves: the 4 x 4 and narrow
        // kernels 4-byte elements (the narrow one with 2 and with 3 channels), the vec4 one
        // tiles that are multiples of a word's elements.
        for dtype in [DType::U32, DType::F16, DType::U8] {
            for path in TRANSPOSE_PATHS {
                let serves = match path {
                    CopyPath::Transpose { .. } | CopyPath::TransposeNarrow { .. } => dtype.size() == 4,
                    CopyPath::TransposeVec4 { tile, .. } => (tile as usize).is_multiple_of(16 / dtype.size()),
                    _ => true,
                };
                let key = format!("{path:?}");
                let forward = paths_ran.iter().any(|(d, p, _)| *d == dtype && *p == key);
                assert!(!serves || (forward && backs_ran.contains(&(dtype, key.clone()))), "{}: {dtype} {path:?} did not run both ways", name(ctx));
                if matches!(path, CopyPath::TransposeNarrow { .. }) && serves {
                    for c in [2, 3] {
                        assert!(paths_ran.contains(&(dtype, key.clone(), c)), "{}: {path:?} never ran with {c} channels", name(ctx));
                    }
                }
            }
        }
        // A batched matrix transpose [B,M,N] -> [B,N,M], and HWFC <-> HWCF, as permuted copies.
        let b = DeviceTensor::from_slice(ctx, &(0..3 * 20 * 12).map(|i| i as f32).collect::<Vec<_>>(), &[3, 20, 12]).unwrap();
        let hb = b.download().unwrap();
        for path in TRANSPOSE_PATHS {
            for (perm, shape) in [([0isize, 2, 1], [3usize, 12, 20]), ([1, 2, 0], [20, 12, 3])] {
                let out = DeviceTensor::zeros(ctx, &shape, DType::F32, MemoryFormat::Contiguous).unwrap();
                // A path that does not serve this permute says so; any other error fails.
                match out.copy_with(&b.permute(&perm).unwrap(), path) {
                    Err(strided_wgpu::Error::Unsupported { .. }) => continue,
                    r => r.unwrap(),
                }
                assert_eq!(out.download().unwrap().to_vec::<f32>().unwrap(), hb.permute(&perm).unwrap().to_vec::<f32>().unwrap(), "{perm:?} {path:?}");
            }
        }
        // Flipped sources (negative strides) of a batched transpose: the 4-byte vec4 kernel
        // stepped its source rows by a logically shifted negative stride, a word index 2^30
        // off. Mesa's software adapters form byte addresses in 32 bits, where the error
        // vanishes (x16 wraps it away); an adapter addressing in 64 bits or clamping the
        // index reads wrong elements.
        let mut flipped_vec4 = 0;
        for path in TRANSPOSE_PATHS {
            for dim in [0isize, 1, 2] {
                let src = b.transpose(1, 2).unwrap().flip(dim).unwrap();
                let out = DeviceTensor::zeros(ctx, &[3, 12, 20], DType::F32, MemoryFormat::Contiguous).unwrap();
                match out.copy_with(&src, path) {
                    Ok(()) => flipped_vec4 += matches!(path, CopyPath::TransposeVec4 { .. }) as usize,
                    Err(Error::Unsupported { .. }) => continue,
                    Err(e) => panic!("{}: flip {dim} via {path:?}: {e}", name(ctx)),
                }
                let want = hb.transpose(1, 2).unwrap().flip(dim).unwrap().to_vec::<f32>().unwrap();
                assert_eq!(out.download().unwrap().to_vec::<f32>().unwrap(), want, "{}: flip {dim} via {path:?}", name(ctx));
            }
        }
        assert!(flipped_vec4 > 0, "{}: no flipped source ran through the vec4 transpose", name(ctx));
    }
}

#[test]
fn to_memory_format_on_the_device_and_tuned_choices() {
    for shared in contexts() {
        // A context of its own that measures at the first copy of a class (not the default).
        let ctx = &limited(shared, |l| l);
        ctx.set_tuning_policy(TuningPolicy::OnFirstCall);
        for (shape, fmt) in [(vec![2usize, 16, 12, 20], MemoryFormat::ChannelsLast), (vec![2, 8, 3, 4, 12], MemoryFormat::ChannelsLast3d)] {
            let n: usize = shape.iter().product();
            let data: Vec<f32> = (0..n).map(|i| i as f32).collect();
            let d = DeviceTensor::from_slice(ctx, &data, &shape).unwrap();
            let h = HostTensor::from_vec(data, &shape).unwrap();
            let dc = d.to_memory_format(fmt).unwrap();
            let hc = h.to_memory_format(fmt).unwrap();
            assert_eq!(dc.layout(), hc.layout());
            assert!(dc.to_memory_format(fmt).unwrap().shares_storage(&dc));
            // Storage order equals the CPU reference's (read the raw storage as one flat view).
            let raw = dc.as_strided(&[dc.storage_len()], &[1], 0).unwrap().download().unwrap();
            assert_eq!(raw.to_vec::<f32>().unwrap(), hc.as_strided(&[hc.storage_len()], &[1], 0).unwrap().to_vec::<f32>().unwrap());
            let back = dc.to_memory_format(MemoryFormat::Contiguous).unwrap();
            assert_eq!(back.download().unwrap().to_vec::<f32>().unwrap(), h.to_vec::<f32>().unwrap());
        }
        // The automatic path measured its choice for these shapes, and remembers it.
        assert!(!ctx.tuned_choices().is_empty(), "{}: no tuned choice recorded", name(ctx));
    }
}

/// A transpose whose tuning piece (the first piece of at most 2^22 elements on a CPU adapter,
/// 2^24 on a GPU) no longer admits the class's kernels is not tuned: HWC -> CHW of a 1080p RGB
/// image cut its 3 channels to 1, so the narrow kernels (the class's default) were left out of
/// the race and the winner among the rest was kept for the class.
#[test]
fn a_tuning_piece_that_leaves_out_kernels_tunes_nothing() {
    for shared in contexts() {
        let ctx = &limited(shared, |l| l);
        let (h, w) = if ctx.adapter().device_type == wgpu::DeviceType::Cpu { (1080, 1920) } else { (2160, 3840) };
        let x = DeviceTensor::zeros(ctx, &[h, w, 3], DType::F32, MemoryFormat::Contiguous).unwrap();
        let dst = DeviceTensor::zeros(ctx, &[3, h, w], DType::F32, MemoryFormat::Contiguous).unwrap();
        let src = x.permute(&[2, 0, 1]).unwrap();
        assert!(!ctx.tune_copy(&dst, &src).unwrap(), "{}: measured", name(ctx));
        assert!(ctx.tuned_choices().is_empty(), "{}: {:?}", name(ctx), ctx.tuned_choices());
        // The copy runs its class's default.
        dst.copy_(&src).unwrap();
    }
}

#[test]
fn grids_over_65535_workgroups() {
    // 5M elements, one per invocation, 64 per workgroup: 81,920 workgroups, so a 2-D grid.
    let n = 5 << 20;
    for ctx in contexts() {
        let src = DeviceTensor::from_slice(ctx, &(0..n as u32).collect::<Vec<_>>(), &[n]).unwrap();
        let dst = DeviceTensor::zeros(ctx, &[n], DType::U32, MemoryFormat::Contiguous).unwrap();
        assert!((n as u64).div_ceil(64) > ctx.adapter().max_compute_workgroups_per_dimension as u64);
        // The strided-rows kernel, one vec4 word per invocation, 8 per workgroup: 163,840.
        for path in [CopyPath::Gather { wg: 64, ept: 1 }, CopyPath::StridedRows { wg: 8, rows: 1 }] {
            dst.copy_(&DeviceTensor::zeros(ctx, &[n], DType::U32, MemoryFormat::Contiguous).unwrap()).unwrap();
            dst.copy_with(&src.flip(0).unwrap(), path).unwrap();
            let got = dst.download().unwrap().to_vec::<u32>().unwrap();
            assert!(got.iter().enumerate().all(|(i, &v)| v as usize == n - 1 - i), "{} {path:?}", name(ctx));
        }
    }
}

#[test]
fn strided_rows_match_cpu() {
    // Rows contiguous in the destination, strided in the source: stepped slices (aligned or
    // not, forwards and backwards), broadcast rows, columns read into rows; rank 1 to 5;
    // row counts that the rows per invocation do not divide.
    let base: [usize; 4] = [3, 5, 24, 40];
    let n: usize = base.iter().product();
    let bytes = indexed(DType::U32, n + 8);
    let h = HostTensor::from_bytes(DType::U32, bytes.clone(), Layout::contiguous(&[n + 8]).unwrap()).unwrap();
    let si: Vec<isize> = base.iter().map(|&x| x as isize).collect();
    type View = fn(&Layout) -> Layout;
    let views: [(&str, View); 9] = [
        ("x[:, :, ::2, ::2]", |x| x.slice(2, 0, 24, 2).unwrap().slice(3, 0, 40, 2).unwrap()),
        ("x[..., 1::3]", |x| x.slice(3, 1, 40, 3).unwrap().narrow(3, 0, 12).unwrap()),
        ("x[..., ::-2]", |x| x.flip(3).unwrap().slice(3, 0, 40, 2).unwrap()),
        ("x[:, ::2, 1::2, ::2]", |x| x.slice(1, 0, 5, 2).unwrap().slice(2, 1, 24, 2).unwrap().slice(3, 0, 40, 2).unwrap()),
        ("x[0, :, 0, :1] expanded to 8", |x| x.select(0, 0).unwrap().select(1, 0).unwrap().narrow(1, 0, 1).unwrap().expand(&[5, 8]).unwrap()),
        ("x[:, :, :, :1] expanded to 4", |x| x.narrow(3, 0, 1).unwrap().expand(&[3, 5, 24, 4]).unwrap()),
        ("x[:, :, :, 3] (columns)", |x| x.select(3, 3).unwrap()),
        ("x.flatten()[::2]", |x| x.view(&[-1]).unwrap().slice(0, 0, 14400, 2).unwrap()),
        ("x[..., ::2] rank 5", |x| x.unsqueeze(0).unwrap().expand(&[2, 3, 5, 24, 40]).unwrap().slice(4, 0, 40, 2).unwrap()),
    ];
    for ctx in contexts() {
        let d = device_from_bytes(ctx, DType::U32, &bytes);
        for off in [0isize, 1, 4] {
            let hx = h.narrow(0, off, n).unwrap().view(&si).unwrap();
            let dx = d.narrow(0, off, n).unwrap().view(&si).unwrap();
            for (what, f) in views {
                let l = f(hx.layout());
                let hv = hx.as_strided(l.shape(), l.strides(), l.offset()).unwrap();
                let dv = dx.as_strided(l.shape(), l.strides(), l.offset()).unwrap();
                let want = whole(&hv.contiguous(MemoryFormat::Contiguous).unwrap());
                let plan = CopyPlan::new(&Layout::contiguous(l.shape()).unwrap(), &l).unwrap();
                assert!(matches!(plan.kind(), CopyKind::StridedRows { .. }), "{what}: {plan:?}");
                for path in [CopyPath::Auto, CopyPath::StridedRows { wg: 256, rows: 1 }, CopyPath::StridedRows { wg: 64, rows: 3 }, CopyPath::StridedRows { wg: 32, rows: 32 }] {
                    let out = DeviceTensor::zeros(ctx, l.shape(), DType::U32, MemoryFormat::Contiguous).unwrap();
                    out.copy_with(&dv, path).unwrap_or_else(|e| panic!("{}: {what} offset {off} via {path:?}: {e}", name(ctx)));
                    assert!(whole(&out.download().unwrap()) == want, "{}: {what} offset {off} via {path:?}, plan {plan:?}", name(ctx));
                }
            }
        }
        // Rows of 3 words' worth of elements plus one (not whole vec4 words), 2-byte elements,
        // and a conversion are refused by the forced kernel, leaving the destination alone.
        let x = d.narrow(0, 0, n).unwrap().view(&si).unwrap();
        let odd = x.slice(3, 0, 26, 2).unwrap();
        let out = DeviceTensor::from_slice(ctx, &vec![7u32; 3 * 5 * 24 * 13], &[3, 5, 24, 13]).unwrap();
        let e = out.copy_with(&odd, CopyPath::StridedRows { wg: 64, rows: 4 }).unwrap_err();
        assert!(matches!(e, Error::Unsupported { op: "copy_", .. }) && e.to_string().contains("strided-rows"), "{e}");
        assert!(out.download().unwrap().to_vec::<u32>().unwrap().iter().all(|&v| v == 7));
        // The automatic path gathers those instead.
        out.copy_(&odd).unwrap();
        assert!(whole(&out.download().unwrap()) == whole(&h.narrow(0, 0, n).unwrap().view(&si).unwrap().slice(3, 0, 26, 2).unwrap().contiguous(MemoryFormat::Contiguous).unwrap()));
        let halves = DeviceTensor::zeros(ctx, &[64], DType::F16, MemoryFormat::Contiguous).unwrap();
        let e = halves.copy_with(&DeviceTensor::zeros(ctx, &[128], DType::F16, MemoryFormat::Contiguous).unwrap().slice(0, 0, 128, 2).unwrap(), CopyPath::StridedRows { wg: 64, rows: 1 }).unwrap_err();
        assert!(matches!(e, Error::Unsupported { .. }), "{e}");
    }
}

#[test]
fn stepped_rows_match_cpu() {
    // Slices ::2 along the innermost dim (with every other row, as x[..., ::2, ::2]), which
    // copy_rows_vec4.wgsl moves as pairs of source vec4 words: 2- and 1-byte elements (4-byte
    // ones, which strided_rows.wgsl moves, it refuses forced: its last source word would reach
    // one element past the view), storage offsets whole words apart and not, and every forced
    // shape. The last destination
    // word of each row takes its last element from the second of its source words, so a
    // binding that stopped at the first word would read zeros there.
    for ctx in contexts() {
        for (dtype, unit) in [(DType::F32, 4usize), (DType::F16, 8), (DType::BF16, 8), (DType::U8, 16), (DType::I8, 16)] {
            let (rows, w) = (2 * 19usize, 14 * unit);
            let n = rows * w + 2 * unit;
            let bytes = indexed(dtype, n);
            let h = HostTensor::from_bytes(dtype, bytes.clone(), Layout::contiguous(&[n]).unwrap()).unwrap();
            let d = device_from_bytes(ctx, dtype, &bytes);
            for (off, row_step, aligned) in [(0isize, 2isize, true), (unit as isize, 1, true), (2 * unit as isize, 2, true), (1, 2, false), (unit as isize / 2, 1, false)] {
                let hv = h.narrow(0, off, rows * w).unwrap().view(&[rows as isize, w as isize]).unwrap().slice(0, 0, rows as isize, row_step).unwrap().slice(1, 0, w as isize, 2).unwrap();
                let dv = d.narrow(0, off, rows * w).unwrap().view(&[rows as isize, w as isize]).unwrap().slice(0, 0, rows as isize, row_step).unwrap().slice(1, 0, w as isize, 2).unwrap();
                let plan = CopyPlan::new(&Layout::contiguous(hv.shape()).unwrap(), hv.layout()).unwrap();
                assert_eq!(plan.kind(), CopyKind::StridedRows { step: 2 }, "{plan:?}");
                let want = whole(&hv.contiguous(MemoryFormat::Contiguous).unwrap());
                for path in [CopyPath::Auto, CopyPath::Vec4Rows { wg: 256, rows: 1 }, CopyPath::Vec4Rows { wg: 64, rows: 5 }, CopyPath::Vec4Rows { wg: 32, rows: 32 }] {
                    let fill = vec![0x5au8; hv.numel() * dtype.size()];
                    let shape: Vec<isize> = hv.shape().iter().map(|&x| x as isize).collect();
                    let out = device_from_bytes(ctx, dtype, &fill).view(&shape).unwrap();
                    let r = out.copy_with(&dv, path);
                    if (aligned && dtype.size() < 4) || path == CopyPath::Auto {
                        r.unwrap_or_else(|e| panic!("{}: {dtype} offset {off} via {path:?}: {e}", name(ctx)));
                        assert!(whole(&out.download().unwrap()) == want, "{}: {dtype} offset {off} rows ::{row_step} via {path:?}, plan {plan:?}", name(ctx));
                    } else {
                        // The forced kernel refuses rows that are not whole words, and 4-byte
                        // elements.
                        let e = r.expect_err("a forced vec4-rows copy of rows that are not whole words");
                        assert!(matches!(e, Error::Unsupported { op: "copy_", .. }) && e.to_string().contains("vec4 rows"), "{e}");
                        assert!(whole(&out.download().unwrap()) == fill, "{}: the refused copy wrote", name(ctx));
                    }
                }
            }
        }
    }
}

#[test]
fn short_contiguous_rows_match_cpu() {
    // Rows contiguous in both operands but short (x[..., :28], a channel slice of NHWC), which
    // the automatic path moves in word columns: 4-, 2- and 1-byte elements, storage offsets,
    // row counts that the rows per invocation do not divide, and every forced shape.
    for ctx in contexts() {
        for (dtype, unit) in [(DType::F32, 4usize), (DType::F16, 8), (DType::U8, 16)] {
            let (rows, w) = (37usize, 56 * unit / 4);
            let bytes = indexed(dtype, rows * w + 2 * unit);
            let h = HostTensor::from_bytes(dtype, bytes.clone(), Layout::contiguous(&[rows * w + 2 * unit]).unwrap()).unwrap();
            let d = device_from_bytes(ctx, dtype, &bytes);
            for (off, keep) in [(0, w / 2), (unit as isize, 7 * unit), (2 * unit as isize, unit)] {
                let hv = h.narrow(0, off, rows * w).unwrap().view(&[rows as isize, w as isize]).unwrap().narrow(1, 0, keep).unwrap();
                let dv = d.narrow(0, off, rows * w).unwrap().view(&[rows as isize, w as isize]).unwrap().narrow(1, 0, keep).unwrap();
                let plan = CopyPlan::new(&Layout::contiguous(hv.shape()).unwrap(), hv.layout()).unwrap();
                assert_eq!(plan.kind(), CopyKind::InnerContiguous, "{plan:?}");
                let want = whole(&hv.contiguous(MemoryFormat::Contiguous).unwrap());
                for path in [CopyPath::Auto, CopyPath::Vec4Rows { wg: 256, rows: 1 }, CopyPath::Vec4Rows { wg: 64, rows: 5 }, CopyPath::Vec4Rows { wg: 32, rows: 32 }, CopyPath::Vec4 { wg: 64, wpt: 2 }] {
                    let out = DeviceTensor::zeros(ctx, hv.shape(), dtype, MemoryFormat::Contiguous).unwrap();
                    out.copy_with(&dv, path).unwrap_or_else(|e| panic!("{}: {dtype} keep {keep} offset {off} via {path:?}: {e}", name(ctx)));
                    assert!(whole(&out.download().unwrap()) == want, "{}: {dtype} keep {keep} offset {off} via {path:?}, plan {plan:?}", name(ctx));
                }
            }
        }
        // Rows that are not whole 16-byte words are refused by the forced kernel, leaving the
        // destination alone.
        let x = DeviceTensor::zeros(ctx, &[6, 40], DType::U32, MemoryFormat::Contiguous).unwrap().narrow(1, 0, 10).unwrap();
        let out = DeviceTensor::from_slice(ctx, &[7u32; 60], &[6, 10]).unwrap();
        let e = out.copy_with(&x, CopyPath::Vec4Rows { wg: 64, rows: 2 }).unwrap_err();
        assert!(matches!(e, Error::Unsupported { op: "copy_", .. }) && e.to_string().contains("vec4 rows"), "{e}");
        assert!(out.download().unwrap().to_vec::<u32>().unwrap().iter().all(|&v| v == 7));
        // A slice `::2` of 4-byte elements is not the forced kernel's (its last source word
        // reaches one element past the view: past a caller's buffer that ends there); of
        // 2-byte ones it is.
        let src = DeviceTensor::from_slice(ctx, &(0..64u32).collect::<Vec<_>>(), &[64]).unwrap().as_strided(&[32], &[2], 0).unwrap();
        let out = DeviceTensor::from_slice(ctx, &[7u32; 32], &[32]).unwrap();
        let e = out.copy_with(&src, CopyPath::Vec4Rows { wg: 64, rows: 1 }).unwrap_err();
        assert!(matches!(e, Error::Unsupported { op: "copy_", .. }), "{e}");
        assert!(out.download().unwrap().to_vec::<u32>().unwrap().iter().all(|&v| v == 7));
        out.copy_(&src).unwrap();
        assert_eq!(out.download().unwrap().to_vec::<u32>().unwrap(), (0..32).map(|i| 2 * i).collect::<Vec<u32>>());
        let halves = HostTensor::from_vec((0..64).map(|i| i as f32).collect::<Vec<_>>(), &[64]).unwrap().materialize(MemoryFormat::Contiguous, DType::F16).unwrap();
        let src16 = DeviceTensor::upload(ctx, &halves).unwrap().as_strided(&[32], &[2], 0).unwrap();
        let out16 = DeviceTensor::zeros(ctx, &[32], DType::F16, MemoryFormat::Contiguous).unwrap();
        out16.copy_with(&src16, CopyPath::Vec4Rows { wg: 64, rows: 1 }).unwrap();
        assert!(whole(&out16.download().unwrap()) == whole(&halves.as_strided(&[32], &[2], 0).unwrap().contiguous(MemoryFormat::Contiguous).unwrap()), "{}", name(ctx));
    }
}

fn mask(t: DType) -> u32 {
    if t.size() == 4 {
        u32::MAX
    } else {
        (1u32 << (8 * t.size())) - 1
    }
}

fn bits_to_bytes(t: DType, bits: &[u32]) -> Vec<u8> {
    bits.iter().flat_map(|b| b.to_le_bytes()[..t.size()].to_vec()).collect()
}

fn bytes_to_bits(t: DType, bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks(t.size())
        .map(|c| {
            let mut w = [0u8; 4];
            w[..c.len()].copy_from_slice(c);
            u32::from_le_bytes(w)
        })
        .collect()
}

/// Edge values of each type, as element bits: NaNs with payloads, infinities, zeros,
/// subnormals, f16/bf16 rounding ties, values just inside and outside each integer range.
fn edge_bits(t: DType) -> Vec<u32> {
    let f = |x: f32| x.to_bits();
    match t {
        DType::F32 => {
            let mut v = vec![0x7fc0_1234, 0xffa0_0001, 0x7f80_0001, 0xffc0_0000, 0x7f80_0000, 0xff80_0000, 0, 0x8000_0000, 1, 0x8000_0001, 0x007f_ffff, 0x3380_0000, 0x3300_0000, 0x33c0_0000];
            // Ties of f16 (1 + 2^-11, 1 + 3 * 2^-11) and bf16 (1 + 2^-8, 1 + 3 * 2^-8), the f16 overflow edge.
            v.extend([0x3f80_1000, 0x3f80_3000, 0x3f80_8000, 0x3f81_8000, f(65520.0), f(65519.99), f(-65520.0), 0x7f7f_ffff, 0xff7f_ffff]);
            let xs = [127.9f32, 128.0, -128.9, -129.0, -128.0, 255.5, 256.0, 254.9, 2_147_483_520.0, 2_147_483_648.0, -2_147_483_648.0, -2_147_483_904.0, 4_294_967_040.0, 4_294_967_296.0];
            v.extend(xs.iter().map(|&x| f(x)));
            v.extend([-0.9f32, -0.5, 0.5, -1.5, 1.5, -2.5, 2.5, 300.7, 1e10, -1e10, 16_777_217.0, 3e38, -1.0, 1.0].iter().map(|&x| f(x)));
            v
        }
        DType::F16 => vec![
            0x7e01, 0xfd55, 0x7c01, 0xfe00, 0x7c00, 0xfc00, 0, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x3c00, 0xbc00, 0x3c01, 0x3c04, 0x3c05, 0x3c0c, 0x7bff, 0xfbff, 0x57ff, 0x5800, 0xd808, 0xd807, 0xd800, 0x5bfc, 0x5bf8,
            0x5c00, 0xbb33, 0x3800, 0xb800, 0xbe00, 0x3e00,
        ],
        DType::BF16 => vec![
            0x7fc1, 0xff81, 0x7f81, 0x7f80, 0xff80, 0, 0x8000, 0x0001, 0x8001, 0x3f80, 0x7f7f, 0xff7f, 0x42ff, 0x4300, 0xc301, 0xc300, 0x437f, 0x4380, 0x4eff, 0x4f00, 0x4f7f, 0x4f80, 0xcf00, 0xcf01, 0xbf66, 0x3f00,
            0xbfc0, 0x0080,
        ],
        DType::I32 | DType::U32 => {
            let mut v: Vec<u32> = vec![0, 1, u32::MAX, 0x7fff_ffff, 0x8000_0000, 0x8000_0001, 16_777_216, 16_777_217, 16_777_218, 16_777_219, 16_842_752, 16_842_753, 16_908_288];
            v.extend([(-16_777_217i32) as u32, (-16_777_219i32) as u32, 242, 255, 256, 127, 128, (-128i32) as u32, (-129i32) as u32, 300, 257, 2049, 2051, 65_504, 65_519, 65_520, (-65_520i32) as u32]);
            v.extend([0x7fff_ff80, 0x7fff_ffc0, 0x7fff_ff7f, 0xffff_ff7f, 0xffff_ff80, 0xffff_ff00, 0xff00_0000, 0x1234_56f2]);
            v
        }
        DType::U8 | DType::I8 => (0..256).collect(),
    }
}

/// How a cast case lays out its views.
#[derive(Clone, Copy, Debug)]
enum Views {
    /// Both contiguous.
    Dense,
    /// The source stepped by 2 from offset 1; the destination stepped by 2 and flipped, its
    /// other elements holding a sentinel that must survive.
    Stepped,
    /// The source a transposed [2, n/2] matrix; the destination contiguous.
    Transposed,
}

/// Copies `bits` (elements of `from`) into a `to` tensor on host and device through `views`,
/// checks that the whole destination storages agree bit for bit, and returns the device's
/// destination view in logical order.
fn cast_case(ctx: &GpuContext, from: DType, to: DType, bits: &[u32], views: Views) -> Vec<u32> {
    let mut bits = bits.to_vec();
    if matches!(views, Views::Transposed) && bits.len() % 2 == 1 {
        bits.push(bits[0]);
    }
    let n = bits.len();
    let sentinel = 0xc3a5_5a3c & mask(to);
    let (sbits, dlen) = match views {
        Views::Stepped => ((0..2 * n + 1).map(|i| if i % 2 == 1 { bits[i / 2] } else { 0x5a5a_5a5a & mask(from) }).collect::<Vec<_>>(), 2 * n + 3),
        _ => (bits.clone(), n),
    };
    let (sbytes, dbytes) = (bits_to_bytes(from, &sbits), bits_to_bytes(to, &vec![sentinel; dlen]));
    let hs = HostTensor::from_bytes(from, sbytes.clone(), Layout::contiguous(&[sbits.len()]).unwrap()).unwrap();
    let hd = HostTensor::from_bytes(to, dbytes.clone(), Layout::contiguous(&[dlen]).unwrap()).unwrap();
    let (ds, dd) = (device_from_bytes(ctx, from, &sbytes), device_from_bytes(ctx, to, &dbytes));
    let (src_l, dst_l) = match views {
        Views::Dense => (Layout::contiguous(&[n]).unwrap(), Layout::contiguous(&[n]).unwrap()),
        Views::Stepped => (Layout::contiguous(&[2 * n + 1]).unwrap().slice(0, 1, 2 * n as isize + 1, 2).unwrap(), Layout::contiguous(&[dlen]).unwrap().slice(0, 2, 2 * n as isize + 2, 2).unwrap().flip(0).unwrap()),
        Views::Transposed => (Layout::contiguous(&[2, n / 2]).unwrap().transpose(0, 1).unwrap(), Layout::contiguous(&[n / 2, 2]).unwrap()),
    };
    let what = format!("{}: {from} -> {to} ({views:?})", name(ctx));
    hd.as_strided(dst_l.shape(), dst_l.strides(), dst_l.offset()).unwrap().copy_(&hs.as_strided(src_l.shape(), src_l.strides(), src_l.offset()).unwrap()).unwrap();
    let dv = dd.as_strided(dst_l.shape(), dst_l.strides(), dst_l.offset()).unwrap();
    dv.copy_(&ds.as_strided(src_l.shape(), src_l.strides(), src_l.offset()).unwrap()).unwrap_or_else(|e| panic!("{what}: {e}"));
    let (want, got) = (bytes_to_bits(to, &whole(&hd)), bytes_to_bits(to, &whole(&dd.download().unwrap())));
    for (i, (w, g)) in want.iter().zip(&got).enumerate() {
        assert_eq!(w, g, "{what}: storage element {i}: cpu {w:#x}, device {g:#x}");
    }
    if matches!(views, Views::Stepped) {
        // Elements outside the view (sub-word neighbours of the written ones) are untouched.
        for i in (0..dlen).filter(|i| i % 2 == 1 || *i == 0 || *i == dlen - 1) {
            assert_eq!(got[i], sentinel, "{what}: element {i} outside the view was overwritten");
        }
    }
    let out = bytes_to_bits(to, &whole(&dv.contiguous(MemoryFormat::Contiguous).unwrap().download().unwrap()));
    assert_eq!(out.len(), n, "{what}");
    out
}

#[test]
fn every_type_pair_converts_bit_exactly_on_edge_values() {
    for ctx in contexts() {
        for from in DType::ALL {
            let bits = edge_bits(from);
            for to in DType::ALL {
                let dense = cast_case(ctx, from, to, &bits, Views::Dense);
                // The CPU reference is the crate's cast_bits, element by element.
                for (&b, &d) in bits.iter().zip(&dense) {
                    assert_eq!(d, strided_wgpu::advanced::internal::cast_bits(from, to, b), "{}: {from} {b:#x} -> {to}", name(ctx));
                }
                let stepped = cast_case(ctx, from, to, &bits, Views::Stepped);
                assert_eq!(stepped, dense, "{}: {from} -> {to} stepped", name(ctx));
                cast_case(ctx, from, to, &bits, Views::Transposed);
            }
        }
    }
}

#[test]
fn conversions_match_hand_checked_values() {
    use DType::*;
    let f = |x: f32| x.to_bits();
    #[rustfmt::skip]
    let cases: Vec<(DType, DType, u32, u32)> = vec![
        (U8, I8, 242, 0xf2), (I32, U8, 300, 44), (I32, U32, 0xffff_ffff, 0xffff_ffff), (I8, I32, 0xff, 0xffff_ffff), (I32, I8, (-129i32) as u32, 0x7f),
        (I32, F32, 16_777_217, f(16_777_216.0)), (I32, F32, 16_777_219, f(16_777_220.0)), (U32, F32, 0xffff_ffff, f(4_294_967_296.0)), (I32, F32, 0x8000_0000, f(-2_147_483_648.0)),
        (U32, F32, 0xffff_ff80, f(4_294_967_296.0)), (U32, F32, 0xffff_ff7f, f(4_294_967_040.0)), (I8, F32, 0x80, f(-128.0)),
        (I32, F16, 2049, 0x6800), (I32, F16, 2051, 0x6802), (I32, F16, 65_520, 0x7c00), (I32, BF16, 16_842_753, 0x4b80), (U8, BF16, 255, 0x437f),
        (F32, U8, f(300.7), 44), (F32, U8, f(-1.5), 255), (F32, U8, f(-0.5), 0), (F32, U8, f(-256.0), 0), (F32, U8, f(4_294_967_296.0), 0), (F32, I32, f(1e10), 0x7fff_ffff), (F32, I32, f(f32::NEG_INFINITY), 0x8000_0000),
        (F32, U32, f(f32::INFINITY), 0), (F32, I8, f(127.9), 127), (F32, I8, f(-128.9), 0x80), (F32, I8, f(-129.0), 0x7f), (F32, I32, f(-2.7), (-2i32) as u32),
        // PyTorch 2.15's CPU: int8 and uint32 wrap through int64 as uint8 does.
        (F32, I8, f(300.7), 44), (F32, I8, f(128.0), 0x80), (F16, I8, 0xfbff, 32), (F16, I8, 0x7bff, 0xe0), (F32, U32, f(-1.5), 0xffff_ffff),
        (F32, U32, f(-2_147_483_520.0), 2_147_483_776), (F32, U32, f(3e9), 3_000_000_000), (F32, U32, f(1e19), 0), (F32, U32, f(8_589_935_616.0), 1024),
        (F32, I32, f(2_147_483_520.0), 2_147_483_520), (F32, U32, f(4_294_967_040.0), 4_294_967_040), (F32, I32, 0x7fc0_1234, 0), (F32, U8, 0xffa0_0001, 0),
        (F16, I8, 0xd7f8, 0x81), (F16, U8, 0x5bf8, 255), (F16, I32, 0xfbff, (-65_504i32) as u32), (BF16, U32, 0x4f7f, 0xff00_0000), (BF16, I32, 0xff81, 0),
        (F32, F16, 0x3f80_1000, 0x3c00), (F32, F16, 0x3f80_3000, 0x3c02), (F16, F32, 0x7d01, 0x7fa0_2000), (F32, BF16, 0x7f80_0001, 0x7fc0), (F32, BF16, 0x3f80_8000, 0x3f80),
        (F32, F16, 0x33c0_0000, 0x0002), (F16, BF16, 0x3c04, 0x3f80),
    ];
    for ctx in contexts() {
        for &(from, to, bits, want) in &cases {
            assert_eq!(strided_wgpu::advanced::internal::cast_bits(from, to, bits), want, "cast_bits {from} {bits:#x} -> {to}");
            let got = cast_case(ctx, from, to, &[bits], Views::Dense)[0];
            assert_eq!(got, want, "{}: {from} {bits:#x} -> {to}: got {got:#x}, want {want:#x}", name(ctx));
        }
    }
}

#[test]
fn conversions_match_cpu_on_bit_pattern_sweeps() {
    // Every f16 and bf16 pattern; f32 and 32-bit integer patterns spread over the whole range,
    // plus every value within 300 of each power of two (rounding boundaries of f32, f16, bf16).
    let mut rng = Rng(0xca57);
    let mut wide: Vec<u32> = (0..1u32 << 15).map(|i| i.wrapping_mul(0x0002_0001) ^ (rng.next() as u32 & 0x1ff)).collect();
    for k in 0..32 {
        let p = 1u64 << k;
        wide.extend((p.saturating_sub(300)..(p + 300).min(1 << 32)).map(|x| x as u32));
        wide.extend((p.saturating_sub(300)..(p + 300).min(1 << 32)).map(|x| (x as u32).wrapping_neg()));
    }
    let (half, byte): (Vec<u32>, Vec<u32>) = ((0..1u32 << 16).collect(), (0..256).collect());
    for ctx in contexts() {
        for from in DType::ALL {
            let bits = [&byte, &half, &wide, &wide][from.size() - 1];
            for to in DType::ALL.into_iter().filter(|&t| t != from) {
                let got = cast_case(ctx, from, to, bits, Views::Stepped);
                assert_eq!(got.len(), bits.len());
            }
        }
    }
}

#[test]
fn converting_transposes_match_cpu_bitwise() {
    // NCHW <-> NHWC (and NCDHW -> NDHWC) between every pair of types, with tile edges, sizes
    // of 1 and storage offsets, through the automatic choice and the converting transpose
    // kernel forced at two workgroup sizes; whole destination storages compared bit for bit
    // with the host's copy_, the elements around the view included.
    let shapes: &[(&[usize], MemoryFormat)] = &[
        (&[2, 8, 5, 7], MemoryFormat::ChannelsLast),
        (&[1, 4, 1, 9], MemoryFormat::ChannelsLast),
        (&[3, 3, 4, 5], MemoryFormat::ChannelsLast),
        (&[2, 12, 3, 3], MemoryFormat::ChannelsLast),
        (&[2, 6, 3, 4], MemoryFormat::ChannelsLast),
        (&[1, 8, 2, 3, 5], MemoryFormat::ChannelsLast3d),
    ];
    let forced = [CopyPath::TransposeCast { wg: 64 }, CopyPath::TransposeCast { wg: 8 }];
    for ctx in contexts() {
        let mut rng = Rng(0x7ca5);
        let (mut kernel_runs, mut refused) = (0, 0);
        for from in DType::ALL {
            for to in DType::ALL.into_iter().filter(|&t| t != from) {
                for (i, &(shape, fmt)) in shapes.iter().enumerate() {
                    let n: usize = shape.iter().product();
                    let src_bytes = random_bytes(&mut rng, from, n + 8);
                    let hs = HostTensor::from_bytes(from, src_bytes.clone(), Layout::contiguous(&[n + 8]).unwrap()).unwrap();
                    let ds = device_from_bytes(ctx, from, &src_bytes);
                    // The source at an offset of 0, 1 or 3 elements (reads need no alignment);
                    // the destination at 4 (whole words for every element size) and, for the
                    // NHWC -> NCHW direction, also at 2, which 1-byte outputs refuse.
                    let off = [0, 1, 3][i % 3];
                    for (dir, dst_off) in [(0, 4usize), (1, 4), (1, 2)] {
                        let (src_fmt, dst_fmt) = if dir == 0 { (MemoryFormat::Contiguous, fmt) } else { (fmt, MemoryFormat::Contiguous) };
                        let strides_of = |f: MemoryFormat| Layout::with_format(shape, f).unwrap().strides().to_vec();
                        let (ss, dstr) = (strides_of(src_fmt), strides_of(dst_fmt));
                        let hsv = hs.as_strided(shape, &ss, off).unwrap();
                        let dsv = ds.as_strided(shape, &ss, off).unwrap();
                        let fill = random_bytes(&mut rng, to, n + 8);
                        let hd = HostTensor::from_bytes(to, fill.clone(), Layout::contiguous(&[n + 8]).unwrap()).unwrap();
                        hd.as_strided(shape, &dstr, dst_off).unwrap().copy_(&hsv).unwrap();
                        let want = whole(&hd);
                        let what = format!("{}: {from} -> {to} {shape:?} {src_fmt:?} -> {dst_fmt:?}, offsets {off} -> {dst_off}", name(ctx));
                        let plan = CopyPlan::new(&Layout::new(shape.to_vec(), dstr.clone(), dst_off).unwrap(), &Layout::new(shape.to_vec(), ss.clone(), off).unwrap()).unwrap();
                        // Plan dim 0 is the destination-contiguous one. The kernel writes whole
                        // words: dim 0, the offset and the other destination strides must be
                        // multiples of the elements in a word.
                        assert!(matches!(plan.kind(), CopyKind::BatchedTranspose { .. }) && plan.dst_strides()[0] == 1, "{what}: {plan:?}");
                        let per_word = 4 / to.size();
                        let eligible = plan.sizes()[0].is_multiple_of(per_word) && dst_off.is_multiple_of(per_word) && plan.dst_strides()[1..].iter().all(|&s| (s as usize).is_multiple_of(per_word));
                        for path in [CopyPath::Auto].into_iter().chain(forced) {
                            let dd = device_from_bytes(ctx, to, &fill);
                            match dd.as_strided(shape, &dstr, dst_off).unwrap().copy_with(&dsv, path) {
                                Ok(()) => {
                                    assert!(eligible || path == CopyPath::Auto, "{what} {path:?}: ran an ineligible plan {plan:?}");
                                    kernel_runs += (path != CopyPath::Auto) as usize;
                                }
                                Err(Error::Unsupported { .. }) if path != CopyPath::Auto && !eligible => {
                                    // Refused, and nothing written.
                                    assert!(whole(&dd.download().unwrap()) == fill, "{what} {path:?}: a refused copy wrote");
                                    refused += 1;
                                    continue;
                                }
                                Err(e) => panic!("{what} {path:?}: {e}"),
                            }
                            let got = whole(&dd.download().unwrap());
                            assert!(got == want, "{what} {path:?}: storages differ at byte {:?}", got.iter().zip(&want).position(|(a, b)| a != b));
                        }
                    }
                }
            }
        }
        assert!(kernel_runs >= 42 * 6 * 3, "only {kernel_runs} forced converting transposes ran");
        assert!(refused > 0, "no ineligible converting transpose was refused");
    }
}

#[test]
fn converting_transposes_split_into_pieces() {
    // Bindings of 64 KiB: a 200 KiB f32 NCHW source into f16 and u8 NHWC (and back) is cut into
    // pieces; [1, 20004, 1, 3] into NHWC cuts the destination-contiguous dim itself (20004
    // channels 3 elements apart in the source span 240 KB), which the kernel allows only at
    // multiples of 4 so that every piece's runs stay whole words of its own.
    let cases: &[(&[usize], MemoryFormat, MemoryFormat)] = &[
        (&[2, 16, 40, 40], MemoryFormat::Contiguous, MemoryFormat::ChannelsLast),
        (&[2, 16, 40, 40], MemoryFormat::ChannelsLast, MemoryFormat::Contiguous),
        (&[1, 20004, 1, 3], MemoryFormat::Contiguous, MemoryFormat::ChannelsLast),
    ];
    for ctx in contexts() {
        let tight = limited(ctx, |l| wgpu::Limits { max_storage_buffer_binding_size: 64 << 10, ..l });
        let mut rng = Rng(0x9ce5);
        for (from, to) in [(DType::F32, DType::F16), (DType::F32, DType::U8), (DType::F16, DType::F32), (DType::U8, DType::BF16)] {
            for &(shape, src_fmt, dst_fmt) in cases {
                let n: usize = shape.iter().product();
                let bytes = random_bytes(&mut rng, from, n);
                let hs = HostTensor::from_bytes(from, bytes.clone(), Layout::contiguous(&[n]).unwrap()).unwrap();
                let ds = device_from_bytes(&tight, from, &bytes);
                let ss = Layout::with_format(shape, src_fmt).unwrap().strides().to_vec();
                let want = HostTensor::zeros(shape, to, dst_fmt).unwrap();
                want.copy_(&hs.as_strided(shape, &ss, 0).unwrap()).unwrap();
                assert!((n * from.size().max(to.size())) as u64 > 64 << 10, "the copy must not fit one binding");
                for path in [CopyPath::Auto, CopyPath::TransposeCast { wg: 64 }] {
                    let what = format!("{}: {from} -> {to} {shape:?} {src_fmt:?} -> {dst_fmt:?} {path:?}", name(ctx));
                    let out = DeviceTensor::zeros(&tight, shape, to, dst_fmt).unwrap();
                    out.copy_with(&ds.as_strided(shape, &ss, 0).unwrap(), path).unwrap_or_else(|e| panic!("{what}: {e}"));
                    // download() gives the logical order.
                    let (got, exp) = (whole(&out.download().unwrap()), whole(&want.contiguous(MemoryFormat::Contiguous).unwrap()));
                    let bad: Vec<usize> = (0..got.len()).filter(|&i| got[i] != exp[i]).collect();
                    assert!(bad.is_empty(), "{what}: {} bytes differ, first {:?}", bad.len(), &bad[..bad.len().min(8)]);
                }
            }
        }
    }
}

#[test]
fn dense_copies_are_buffer_copies_on_cpu_adapters_and_kernels_on_gpus() {
    // On a GPU the vec4 kernel moves a dense copy whose words it can read (an H200 ran it at
    // 3.7x `copy_buffer_to_buffer`'s speed); unaligned ones and CPU adapters copy buffer to
    // buffer. Each way, bit for bit: NaN payloads, -0.0, subnormals.
    for ctx in contexts() {
        let posing = common::gpu::posing_as_gpu(ctx);
        let gpu_too: Vec<(&GpuContext, bool)> = std::iter::once((ctx, ctx.adapter().device_type == wgpu::DeviceType::Cpu)).chain(posing.as_ref().map(|p| (p, false))).collect();
        for (c, cpu) in gpu_too {
            let mut rng = Rng(7);
            for (dtype, n, off) in [(DType::F32, 4099usize, 0isize), (DType::F32, 1 << 16, 4), (DType::F32, 1000, 1), (DType::F16, 6000, 8), (DType::F16, 602, 2), (DType::U8, 4096, 0)] {
                let bytes = random_bytes(&mut rng, dtype, n + 8);
                let src = device_from_bytes(c, dtype, &bytes).narrow(0, off, n).unwrap();
                let dst = DeviceTensor::zeros(c, &[n], dtype, MemoryFormat::Contiguous).unwrap();
                let path = c.copy_default(&dst, &src).unwrap().expect("a path");
                // Whole words of 16 bytes from both operands (the source's offset, the length).
                let words = (off as usize * dtype.size()).is_multiple_of(16) && (n * dtype.size()).is_multiple_of(16);
                let kernel = matches!(path, CopyPath::Vec4 { .. } | CopyPath::Vec4Rows { .. });
                assert!(if cpu || !words { path == CopyPath::BufferCopy } else { kernel }, "{}: {dtype} [{n}] at offset {off}: {path:?}", name(c));
                dst.copy_(&src).unwrap();
                let want = &bytes[off as usize * dtype.size()..(off as usize + n) * dtype.size()];
                assert!(whole(&dst.download().unwrap()) == want, "{}: {dtype} [{n}] at offset {off} via {path:?}", name(c));
            }
        }
    }
}

#[test]
fn layout_conversion_defaults_on_gpus() {
    // Before tuning, a GPU converts 2-byte elements in whole words through the vec4 transpose
    // (on an H200 3x the tile kernel), 4-byte ones through the workgroup-memory tile; either
    // way bit for bit.
    for ctx in contexts() {
        let Some(gpu) = common::gpu::posing_as_gpu(ctx) else { continue };
        for (dtype, want) in [(DType::F16, CopyPath::TransposeVec4 { wg: 256, tile: 8, order: 0 }), (DType::F32, CopyPath::TransposeTile { wg: 256, tile: 32 })] {
            let shape = [2usize, 64, 8, 8];
            let n: usize = shape.iter().product();
            let bytes = indexed(dtype, n);
            let h = HostTensor::from_bytes(dtype, bytes.clone(), Layout::contiguous(&shape).unwrap()).unwrap();
            let d = device_from_bytes(&gpu, dtype, &bytes).view(&shape.map(|x| x as isize)).unwrap();
            let out = DeviceTensor::zeros(&gpu, &shape, dtype, MemoryFormat::ChannelsLast).unwrap();
            assert_eq!(gpu.copy_default(&out, &d).unwrap(), Some(want), "{}: {dtype}", name(&gpu));
            out.copy_(&d).unwrap();
            // download() returns the logical order.
            assert!(whole(&out.download().unwrap()) == whole(&h), "{}: {dtype} via {want:?}", name(&gpu));
        }
    }
}


/// A copy between two disjoint views of one buffer reads a copy of the buffer, which a buffer
/// copy may then read (CPU adapters take that path for dense copies, GPUs for copies of part
/// of a 16-byte word): the CPU's result, automatic and forced, and the batch's other work
/// still runs.
#[test]
fn copies_between_disjoint_views_of_one_buffer() {
    for ctx in contexts() {
        for n in [3usize, 4, 7, 64] {
            for path in [CopyPath::Auto, CopyPath::BufferCopy] {
                let vals: Vec<f32> = (0..2 * n + 1).map(|i| i as f32 + 0.5).collect();
                let x = DeviceTensor::from_slice(ctx, &vals, &[2 * n + 1]).unwrap();
                let h = HostTensor::from_vec(vals.clone(), &[2 * n + 1]).unwrap();
                let other = DeviceTensor::from_slice(ctx, &[1f32, 2.0], &[2]).unwrap();
                let mut b = ctx.batch();
                b.copy_with(&x.narrow(0, 0, n).unwrap(), &x.narrow(0, n as isize + 1, n).unwrap(), path).unwrap();
                let doubled = b.mul(&other, 2.0).unwrap();
                b.submit_and_wait().unwrap_or_else(|e| panic!("{}: n {n}, {path:?}: {e}", name(ctx)));
                h.narrow(0, 0, n).unwrap().copy_(&h.narrow(0, n as isize + 1, n).unwrap()).unwrap();
                assert_eq!(x.download().unwrap().to_vec::<f32>().unwrap(), h.to_vec::<f32>().unwrap(), "{}: n {n}, {path:?}", name(ctx));
                assert_eq!(doubled.download().unwrap().to_vec::<f32>().unwrap(), vec![2.0, 4.0], "{}", name(ctx));
            }
        }
    }
}

/// Flipped sources (negative strides) of batched transposes of 2- and 1-byte elements through
/// every transpose path, bit for bit with the host: the vec4 kernel's packed paths step source
/// rows by their signed stride before they shift (the 4-byte path shifted the stride).
#[test]
fn flipped_narrow_transposes_match_cpu() {
    for ctx in contexts() {
        for dtype in [DType::F16, DType::U8] {
            let n = 3 * 32 * 48;
            let bytes = indexed(dtype, n);
            let h = HostTensor::from_bytes(dtype, bytes.clone(), Layout::contiguous(&[3, 32, 48]).unwrap()).unwrap();
            let d = DeviceTensor::upload(ctx, &h).unwrap();
            let mut vec4 = 0;
            for path in TRANSPOSE_PATHS {
                for dim in [0isize, 1, 2] {
                    let out = DeviceTensor::zeros(ctx, &[3, 48, 32], dtype, MemoryFormat::Contiguous).unwrap();
                    match out.copy_with(&d.transpose(1, 2).unwrap().flip(dim).unwrap(), path) {
                        Ok(()) => vec4 += matches!(path, CopyPath::TransposeVec4 { .. }) as usize,
                        Err(Error::Unsupported { .. }) => continue,
                        Err(e) => panic!("{}: {dtype} flip {dim} via {path:?}: {e}", name(ctx)),
                    }
                    let want = whole(&h.transpose(1, 2).unwrap().flip(dim).unwrap().contiguous(MemoryFormat::Contiguous).unwrap());
                    assert!(whole(&out.download().unwrap()) == want, "{}: {dtype} flip {dim} via {path:?}", name(ctx));
                }
            }
            assert!(vec4 > 0, "{}: {dtype}: no flipped source ran through the vec4 transpose", name(ctx));
        }
    }
}

/// Forced paths' per-invocation counts within a software adapter's loop bound: on a CPU
/// adapter a copy path of 4,096 elements, words or rows an invocation (the most allowed) moves
/// a flipped and a transposed-then-sliced 4-d view bit for bit, and one of 8,192 is a Limit
/// error with the destination untouched (the loop would be cut short past 65,535 turns).
#[test]
fn forced_copy_counts_within_a_software_adapters_loop_bound() {
    let n = 16 * 8 * 9 * 70;
    let data: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 7.0).collect();
    let host = HostTensor::from_vec(data.clone(), &[16, 8, 9, 70]).unwrap();
    for ctx in contexts() {
        if ctx.adapter().device_type != wgpu::DeviceType::Cpu {
            continue;
        }
        let x = DeviceTensor::from_slice(ctx, &data, &[16, 8, 9, 70]).unwrap();
        let views = [(x.flip(3).unwrap(), host.flip(3).unwrap()), (x.permute(&[0, 2, 1, 3]).unwrap().slice(3, 1, 70, 2).unwrap(), host.permute(&[0, 2, 1, 3]).unwrap().slice(3, 1, 70, 2).unwrap())];
        for (d, h) in &views {
            let want = h.contiguous(MemoryFormat::Contiguous).unwrap().to_vec::<f32>().unwrap();
            let mut ran = 0;
            for path in [CopyPath::Gather { wg: 8, ept: 4096 }, CopyPath::StridedRows { wg: 8, rows: 4096 }] {
                let out = DeviceTensor::zeros(ctx, d.shape(), DType::F32, MemoryFormat::Contiguous).unwrap();
                match out.copy_with(d, path) {
                    Ok(()) => {
                        assert_eq!(out.download().unwrap().to_vec::<f32>().unwrap().iter().map(|v| v.to_bits()).collect::<Vec<_>>(), want.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), "{} {path:?} of {:?}", name(ctx), d.strides());
                        ran += 1;
                    }
                    Err(Error::Unsupported { .. }) => {}
                    Err(e) => panic!("{} {path:?} of {:?}: {e}", name(ctx), d.strides()),
                }
            }
            assert!(ran > 0, "{}: no forced path ran {:?}", name(ctx), d.strides());
            let out = DeviceTensor::zeros(ctx, d.shape(), DType::F32, MemoryFormat::Contiguous).unwrap();
            let r = out.copy_with(d, CopyPath::Gather { wg: 8, ept: 8192 });
            assert!(matches!(r, Err(Error::Limit { op: "copy_", .. })), "{}: {r:?}", name(ctx));
            assert!(out.download().unwrap().to_vec::<f32>().unwrap().iter().all(|&v| v == 0.0), "{}: written", name(ctx));
        }
    }
}
