//! GPU contexts for tests: one per available backend among Vulkan/Metal/DX12 and GL.
//!
//! Without an adapter the tests say so loudly and skip, unless `STRIDED_WGPU_REQUIRE_ADAPTER=1`
//! (CI), which makes a missing adapter a failure. `STRIDED_WGPU_REQUIRE_BACKENDS=vulkan,gl`
//! additionally requires each named backend. `WGPU_BACKEND` restricts the run to one backend.

use std::sync::OnceLock;
use strided_wgpu::GpuContext;

fn open(b: wgpu::Backends) -> Result<GpuContext, String> {
    pollster::block_on(GpuContext::for_backends(b)).map_err(|e| e.to_string())
}

/// The contexts to test on, opened once per test binary.
pub fn contexts() -> &'static [GpuContext] {
    static CTXS: OnceLock<Vec<GpuContext>> = OnceLock::new();
    CTXS.get_or_init(|| {
        let candidates: Vec<(&str, wgpu::Backends)> = match wgpu::Backends::from_env() {
            Some(b) => vec![("WGPU_BACKEND", b)],
            None => vec![("primary", wgpu::Backends::PRIMARY), ("gl", wgpu::Backends::GL)],
        };
        let required: Vec<String> = std::env::var("STRIDED_WGPU_REQUIRE_BACKENDS")
            .map(|s| s.split(',').map(|x| x.trim().to_lowercase()).filter(|x| !x.is_empty()).collect())
            .unwrap_or_default();
        let mut out = Vec::new();
        for (name, b) in candidates {
            match open(b) {
                Ok(c) => out.push(c),
                Err(e) => eprintln!("!!! no {name} adapter ({b:?}): {e}"),
            }
        }
        for r in &required {
            assert!(
                out.iter().any(|c| format!("{:?}", c.adapter().backend).to_lowercase() == *r),
                "STRIDED_WGPU_REQUIRE_BACKENDS names {r}, but no such adapter opened"
            );
        }
        if out.is_empty() {
            assert!(
                std::env::var("STRIDED_WGPU_REQUIRE_ADAPTER").as_deref() != Ok("1"),
                "STRIDED_WGPU_REQUIRE_ADAPTER=1 but no GPU adapter exists (install mesa-vulkan-drivers)"
            );
            eprintln!("!!! SKIPPING GPU TESTS: no GPU adapter exists (install mesa-vulkan-drivers for a software one)");
        }
        out
    })
}

pub fn name(c: &GpuContext) -> String {
    format!("{} ({:?})", c.adapter().name, c.adapter().backend)
}
