//! Every .wgsl file under shaders/ parses and validates with naga, without a GPU. Kernels are
//! validated as they are compiled: prefixed with the plan prelude.

use strided_wgpu::shaders::{source, KERNELS, PRELUDE};

fn validate(name: &str, src: &str) {
    let module = naga::front::wgsl::parse_str(src).unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(src)));
    naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all())
        .validate(&module)
        .unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(src)));
}

#[test]
fn every_shader_file_validates() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .expect("shaders/ exists")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".wgsl"))
        .collect();
    files.sort();
    assert!(files.len() >= 2, "found only {files:?} under {dir:?}");
    validate("plan.wgsl", PRELUDE);
    for f in &files {
        if f == "plan.wgsl" {
            continue;
        }
        let stem = f.trim_end_matches(".wgsl");
        // Every file on disk is a registered kernel, and the registered text is the file's.
        let registered = KERNELS.iter().find(|(n, _)| *n == stem).unwrap_or_else(|| panic!("{f} is not registered in src/gpu/shaders.rs"));
        assert_eq!(registered.1, std::fs::read_to_string(dir.join(f)).unwrap(), "{f}");
        validate(f, &source(stem).unwrap());
    }
    assert_eq!(KERNELS.len(), files.len() - 1, "a registered kernel has no file: {files:?}");
}

#[test]
fn no_shape_is_pasted_into_a_kernel() {
    // Kernels are specialized by override constants and uniforms, so the sources are constant.
    for (name, _) in KERNELS {
        assert!(source(name).unwrap().contains("fn plan_offsets"), "{name} lacks the prelude");
    }
    assert!(source("no_such_kernel").is_none());
}
