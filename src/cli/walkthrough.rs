//! The seeds' worked examples, printed as PyTorch prints them and materialized on the CPU
//! reference (and, when an adapter exists, on the GPU).

use strided_wgpu::{DeviceTensor, GpuContext, HostTensor, MemoryFormat, Result, Strided};

fn tuple(v: &[isize]) -> String {
    let s: Vec<String> = v.iter().map(|x| x.to_string()).collect();
    if s.len() == 1 { format!("({},)", s[0]) } else { format!("({})", s.join(", ")) }
}

fn size(v: &[usize]) -> String {
    format!("torch.Size([{}])", v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", "))
}

fn describe(name: &str, t: &HostTensor) {
    println!(
        "{name:<44} shape={:<28} stride={:<22} storage_offset={:<4} is_contiguous={} channels_last={}",
        size(t.shape()),
        tuple(t.strides()),
        t.storage_offset(),
        py(t.is_contiguous()),
        py(t.is_contiguous_for(MemoryFormat::ChannelsLast)),
    );
}

fn py(b: bool) -> &'static str {
    if b { "True" } else { "False" }
}

/// The views of the walk-through, by name, over `x = arange(1280).view(1, 64, 5, 4)`.
pub fn views() -> Result<(HostTensor, Vec<(&'static str, HostTensor)>)> {
    let x = HostTensor::from_vec((0..1280).map(|i| i as f32).collect(), &[1, 64, 5, 4])?;
    let v = vec![
        ("x", x.clone()),
        ("x.contiguous(memory_format=channels_last)", x.contiguous(MemoryFormat::ChannelsLast)?),
        ("x.transpose(2, 3)", x.transpose(2, 3)?),
        ("x.select(1, 3)", x.select(1, 3)?),
        ("x[:, :, ::2, ::-1]", x.slice(2, 0, 5, 2)?.flip(3)?),
        ("x[:, :, :1, :1].expand(8, 64, 5, 4)", x.narrow(2, 0, 1)?.narrow(3, 0, 1)?.expand(&[8, 64, 5, 4])?),
    ];
    Ok((x, v))
}

/// Prints every view and checks the CPU reference's materialization against a plain walk.
pub fn run_host() -> Result<()> {
    println!("Host views of x = torch.arange(1280.).view(1, 64, 5, 4)");
    let (x, views) = views()?;
    let base = x.to_vec::<f32>()?;
    for (name, t) in &views {
        describe(name, t);
        let m = t.contiguous(MemoryFormat::Contiguous)?.to_vec::<f32>()?;
        let expect: Vec<f32> = if t.shares_storage(&x) {
            t.layout().storage_indices()?.into_iter().map(|i| base[i]).collect()
        } else {
            base.clone() // the only copy in the list is x itself in another memory format
        };
        let shared = if t.shares_storage(&x) { "shares x's storage" } else { "new storage" };
        let check = if m == expect { "ok" } else { "MISMATCH" };
        println!("{:<44} {} elements, {shared}, CPU materialization {check}; first: {:?}", "", m.len(), &m[..m.len().min(6)]);
        if m != expect {
            return Err(strided_wgpu::Error::Gpu { op: "walkthrough", message: format!("the CPU reference's materialization of {name} differs from a walk of its storage indices") });
        }
    }
    Ok(())
}

/// The host walk-through, then the same views materialized on the GPU and compared with the
/// CPU reference bit for bit.
pub fn run() -> Result<()> {
    run_host()?;
    // Only a machine without an adapter skips the GPU part (unless told to require one);
    // any other failure to open a context is an error.
    let ctx = match GpuContext::new() {
        Ok(c) => c,
        Err(e @ strided_wgpu::Error::Adapter(_)) if std::env::var("STRIDED_WGPU_REQUIRE_ADAPTER").as_deref() != Ok("1") => {
            println!("\nNo GPU adapter ({e}); skipping the GPU walk-through.");
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    let a = ctx.adapter();
    println!("\nOn the GPU: {} ({:?}, {:?})", a.name, a.backend, a.device_type);
    let (x, views) = views()?;
    let dx = DeviceTensor::upload(&ctx, &x)?;
    let dviews = [
        dx.clone(),
        dx.contiguous(MemoryFormat::ChannelsLast)?,
        dx.transpose(2, 3)?,
        dx.select(1, 3)?,
        dx.slice(2, 0, 5, 2)?.flip(3)?,
        dx.narrow(2, 0, 1)?.narrow(3, 0, 1)?.expand(&[8, 64, 5, 4])?,
    ];
    for ((name, h), d) in views.iter().zip(&dviews) {
        if h.layout() != d.layout() {
            return Err(strided_wgpu::Error::Gpu { op: "walkthrough", message: format!("host and device views of {name} differ") });
        }
        let want = h.contiguous(MemoryFormat::Contiguous)?.to_vec::<f32>()?;
        let got = d.contiguous(MemoryFormat::Contiguous)?.download()?.to_vec::<f32>()?;
        let same = want.iter().zip(&got).all(|(a, b)| a.to_bits() == b.to_bits()) && want.len() == got.len();
        println!("{name:<44} materialized on the GPU: {} elements, {}", got.len(), if same { "bit-identical to the CPU reference" } else { "MISMATCH" });
        if !same {
            return Err(strided_wgpu::Error::Gpu { op: "walkthrough", message: format!("{name} differs from the CPU reference") });
        }
    }
    crate::cli::resnet::walkthrough_resnet(&ctx)
}
