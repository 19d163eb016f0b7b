//! Every .wgsl file under shaders/ parses and validates with naga, without a GPU. Kernels are
//! validated as they are compiled (with their preludes); the plan prelude also on its own.

use strided_wgpu::advanced::internal::shaders::{source, KERNELS, PRELUDE, PRELUDES};

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
    assert!(files.len() > KERNELS.len(), "found only {files:?} under {dir:?}");
    validate("plan.wgsl", PRELUDE);
    let mut validated = 0;
    for f in &files {
        let stem = f.trim_end_matches(".wgsl");
        let text = std::fs::read_to_string(dir.join(f)).unwrap();
        // Every file on disk is a registered prelude or kernel, and the registered text is the file's.
        if let Some((_, registered)) = PRELUDES.iter().find(|(n, _)| *n == stem) {
            assert_eq!(*registered, text, "{f}");
            continue;
        }
        let (_, _, registered) = KERNELS.iter().find(|(n, _, _)| *n == stem).unwrap_or_else(|| panic!("{f} is not registered in src/gpu/shaders.rs"));
        assert_eq!(*registered, text, "{f}");
        // The file as compiled under every name it is registered with (its preludes differ).
        for (name, _, _) in KERNELS.iter().filter(|(_, _, t)| *t == text) {
            validate(name, &source(name).unwrap());
            validated += 1;
        }
    }
    assert_eq!(validated, KERNELS.len(), "a registered kernel has no file: {files:?}");
    assert_eq!(KERNELS.iter().filter(|(n, _, _)| files.contains(&format!("{n}.wgsl"))).count() + PRELUDES.len(), files.len(), "a registered shader has no file: {files:?}");
}

#[test]
fn kernels_that_index_plans_start_with_the_plan_prelude() {
    for (name, preludes, text) in KERNELS {
        let uses_plan = text.contains("plan_offsets") || text.contains("plan.") || preludes.contains(&"transpose");
        assert_eq!(preludes.first() == Some(&"plan"), uses_plan, "{name}");
        if uses_plan {
            assert!(source(name).unwrap().contains("fn plan_offsets"), "{name} lacks the prelude");
        }
    }
    assert!(source("no_such_kernel").is_none());
}

#[test]
fn kernels_that_index_iteration_plans_start_with_the_iter_prelude() {
    for (name, preludes, text) in KERNELS {
        // The kernel and the file preludes it names after `iter` (a kernel may leave the
        // traversal to one); code only (no comments); `it.` as a whole identifier.
        let files = preludes.iter().filter(|p| **p != "iter").filter_map(|p| PRELUDES.iter().find(|(n, _)| n == p).map(|(_, t)| *t));
        let all: String = files.chain(std::iter::once(*text)).collect::<Vec<_>>().join("\n");
        let code: String = all.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n");
        let b = code.as_bytes();
        let field = code.match_indices("it.").any(|(i, _)| i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'));
        let uses_iter = code.contains("iter_offsets") || field;
        assert_eq!(preludes.first() == Some(&"iter"), uses_iter, "{name}");
    }
}

#[test]
fn wgsl_dtype_codes_are_generated_from_rust() {
    use strided_wgpu::{advanced::internal::shaders::dtypes_prelude, DType};
    let p = dtypes_prelude();
    for (i, t) in DType::ALL.iter().enumerate() {
        assert!(p.contains(&format!("const DT_{}: u32 = {i}u;", t.to_string().to_uppercase())), "{t} in {p}");
    }
    validate("dtypes", &p);
    // The gather kernel sees the codes before the conversions that use them.
    let g = source("gather").unwrap();
    assert!(g.find("const DT_I8").unwrap() < g.find("fn cast_bits").unwrap());
}
