//! Every .wgsl file under shaders/ parses and validates with naga, without a GPU. Kernels are
//! validated as they are compiled (with their preludes); the plan prelude also on its own. The
//! file tree tells kernels from preludes: `shaders/kernels/` holds files with one compute entry
//! point each, `shaders/preludes/` files with none.

use std::path::Path;

use strided_wgpu::advanced::internal::shaders::{source, source_for, KERNELS, PRELUDE, PRELUDES};

fn parse(name: &str, src: &str) -> naga::Module {
    let module = naga::front::wgsl::parse_str(src).unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(src)));
    naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all())
        .validate(&module)
        .unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(src)));
    module
}

fn validate(name: &str, src: &str) {
    parse(name, src);
}

/// The prelude every kernel starts with (`pz`, the index of its uniform).
fn uniform_index() -> &'static str {
    PRELUDES.iter().find(|(n, _)| *n == "uniform_index").expect("the uniform_index prelude").1
}

/// The code of `text` (comments left out).
fn code(text: &str) -> String {
    text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// Every kernel reads its uniform struct at `pz()` (preludes/uniform_index.wgsl): lavapipe
/// compiled a shader per dispatch for a kernel whose uniform, read at a constant offset, ended a
/// loop. Every uniform struct is bound as a one-element array, indexed by `pz()` alone, which
/// reads element 0 once, through `uniform_index`.
#[test]
fn every_kernel_reads_its_uniform_at_an_index_no_compiler_sees() {
    for (name, _, _) in KERNELS {
        let src = source(name).unwrap();
        let module = parse(name, &src);
        let src = code(&src);
        let mut arrays = 0;
        for (_, v) in module.global_variables.iter().filter(|(_, v)| v.space == naga::AddressSpace::Uniform) {
            let u = v.name.as_deref().unwrap_or("?");
            match module.types[v.ty].inner {
                naga::TypeInner::Struct { .. } => panic!("{name}: uniform struct `{u}` is read at constant offsets: bind it as array<T, 1>, read at [pz()]"),
                naga::TypeInner::Array { base, size: naga::ArraySize::Constant(n), .. } if matches!(module.types[base].inner, naga::TypeInner::Struct { .. }) => {
                    assert_eq!(n.get(), 1, "{name}: `{u}`");
                    arrays += 1;
                    let at_zero = format!("return uniform_index({u}[0].");
                    assert_eq!(src.matches(&format!("{u}[0]")).count(), 1, "{name}: `{u}[0]` outside pz()");
                    assert!(src.contains(&format!("fn pz() -> u32 {{\n    {at_zero}")), "{name}: pz() reads `{u}[0]` through uniform_index");
                    let indexed = src.matches(&format!("{u}[")).count();
                    assert!(indexed > 1 && indexed == 1 + src.matches(&format!("{u}[pz()]")).count(), "{name}: `{u}` indexed other than by pz()");
                }
                _ => {}
            }
        }
        assert_eq!(arrays, 1, "{name}: one uniform struct");
        // As GPUs compile it: the plain struct, no index.
        let gpu = source_for(name, false).unwrap();
        let m = parse(name, &gpu);
        assert!(m.global_variables.iter().any(|(_, v)| v.space == naga::AddressSpace::Uniform && matches!(m.types[v.ty].inner, naga::TypeInner::Struct { .. })), "{name}: GPU source without the plain uniform struct");
        assert!(!code(&gpu).contains("[pz()]") && !code(&gpu).contains("_u[0]"), "{name}: GPU source still indexes its uniform");
    }
}

/// The `.wgsl` files of `shaders/<dir>`, sorted, as (stem, text).
fn wgsl_files(dir: &str) -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders").join(dir);
    let mut files: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{dir:?}: {e}"))
        .map(|e| e.unwrap().path())
        .map(|p| {
            assert_eq!(p.extension().and_then(|e| e.to_str()), Some("wgsl"), "{p:?}: only .wgsl files belong under shaders/");
            (p.file_stem().unwrap().to_str().unwrap().to_string(), std::fs::read_to_string(&p).unwrap())
        })
        .collect();
    files.sort();
    files
}

/// How often `attr` (`@compute`, ...) occurs in the code of `text` (comments left out).
fn code_count(text: &str, attr: &str) -> usize {
    text.lines().map(|l| l.split("//").next().unwrap_or("").matches(attr).count()).sum()
}

#[test]
fn shaders_hold_only_the_kernels_and_preludes_folders() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders");
    let mut entries: Vec<String> = std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    entries.sort();
    assert_eq!(entries, ["kernels", "preludes"], "{root:?}");
}

#[test]
fn every_shader_file_validates() {
    let kernels = wgsl_files("kernels");
    let preludes = wgsl_files("preludes");
    assert!(kernels.len() > 10 && preludes.len() > 10, "found only {kernels:?} and {preludes:?}");
    validate("plan.wgsl", &format!("{}\n{PRELUDE}", uniform_index()));
    // Every prelude file is registered under its stem, with the file's text, and has no entry
    // point.
    for (stem, text) in &preludes {
        let (_, registered) = PRELUDES.iter().find(|(n, _)| n == stem).unwrap_or_else(|| panic!("preludes/{stem}.wgsl is not registered in src/kernels/shaders.rs"));
        assert_eq!(registered, text, "preludes/{stem}.wgsl");
        for attr in ["@compute", "@vertex", "@fragment"] {
            assert_eq!(code_count(text, attr), 0, "preludes/{stem}.wgsl declares an entry point ({attr}): it belongs under shaders/kernels/");
        }
    }
    assert_eq!(PRELUDES.len(), preludes.len(), "a registered prelude has no file under shaders/preludes/");
    // Every kernel file is registered (under its stem, and possibly under more names with
    // other preludes), and has exactly one compute entry point.
    let mut validated = 0;
    for (stem, text) in &kernels {
        assert_eq!(code_count(text, "@compute"), 1, "kernels/{stem}.wgsl must declare exactly one @compute entry point");
        assert_eq!(code_count(text, "@vertex") + code_count(text, "@fragment"), 0, "kernels/{stem}.wgsl");
        assert!(KERNELS.iter().any(|(n, _, t)| n == stem && t == text), "kernels/{stem}.wgsl is not registered under its name in src/kernels/shaders.rs");
        // The file as compiled under every name it is registered with (its preludes differ):
        // one entry point, the kernel file's, which the pipelines name.
        for (name, _, _) in KERNELS.iter().filter(|(_, _, t)| t == text) {
            let module = parse(name, &source(name).unwrap());
            let entries: Vec<_> = module.entry_points.iter().map(|e| (e.name.as_str(), e.stage)).collect();
            assert_eq!(entries, [("main", naga::ShaderStage::Compute)], "{name}");
            validated += 1;
        }
    }
    assert_eq!(validated, KERNELS.len(), "a registered kernel has no file under shaders/kernels/");
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
    use strided_wgpu::DType;
    use strided_wgpu::advanced::internal::shaders::dtypes_prelude;
    let p = dtypes_prelude();
    for (i, t) in DType::ALL.iter().enumerate() {
        assert!(p.contains(&format!("const DT_{}: u32 = {i}u;", t.to_string().to_uppercase())), "{t} in {p}");
    }
    validate("dtypes", &p);
    // The gather kernel sees the codes before the conversions that use them.
    let g = source("gather").unwrap();
    assert!(g.find("const DT_I8").unwrap() < g.find("fn cast_bits").unwrap());
}

#[test]
fn convolution_kernels_take_their_shared_bindings_from_one_prelude() {
    // Bindings 1 and 3-6 (input, bias, output, and their vec4 views) are the same in every
    // convolution family: conv_io declares them (conv_io16 for the 16-bit forms), and no other
    // file a convolution is composed of. The tensor-core kernel (conv2d_coop*) binds its f16
    // operands itself (bindings 1-5).
    const IO: [&str; 2] = ["conv_io", "conv_io16"];
    for io in IO {
        let (_, text) = PRELUDES.iter().find(|(n, _)| *n == io).unwrap();
        for b in [1, 3, 4, 5, 6] {
            assert_eq!(code_count(text, &format!("@binding({b})")), 1, "{io} declares binding {b}");
        }
    }
    let mut convs = 0;
    for (name, preludes, text) in KERNELS.iter().filter(|(n, _, _)| n.starts_with("conv") && !n.starts_with("conv2d_coop")) {
        let named: Vec<&&str> = preludes.iter().filter(|p| IO.contains(p)).collect();
        assert_eq!(named.len(), 1, "{name}: one of {IO:?}");
        let files = preludes.iter().filter(|p| !IO.contains(p)).filter_map(|p| PRELUDES.iter().find(|(n, _)| n == p).map(|(_, t)| *t));
        for t in files.chain(std::iter::once(*text)) {
            for b in [1, 3, 4, 5, 6] {
                assert_eq!(code_count(t, &format!("@binding({b})")), 0, "{name}: binding {b} is declared outside {}", named[0]);
            }
        }
        convs += 1;
    }
    assert!(convs >= 12, "{convs} convolution kernels");
}

/// naga's SPIR-V options as wgpu's Vulkan backend sets them (wgpu-hal 30 `vulkan/adapter.rs`):
/// SPIR-V 1.6 (Vulkan 1.3), indices clamped (`Restrict`), buffers `Restrict` too (drivers
/// without robust buffer access 2).
fn wgpu_spirv_options() -> naga::back::spv::Options<'static> {
    use naga::proc::{BoundsCheckPolicies, BoundsCheckPolicy};
    naga::back::spv::Options {
        lang_version: (1, 6),
        bounds_check_policies: BoundsCheckPolicies { index: BoundsCheckPolicy::Restrict, buffer: BoundsCheckPolicy::Restrict, image_load: BoundsCheckPolicy::Restrict, binding_array: BoundsCheckPolicy::Unchecked },
        ..Default::default()
    }
}

/// `module` specialized by `constants` and written as SPIR-V with wgpu's Vulkan options (what
/// wgpu does at pipeline creation), checked to be a SPIR-V module; panics naming `what`.
fn spirv_of(what: &str, module: &naga::Module, info: &naga::valid::ModuleInfo, constants: &naga::back::PipelineConstants) {
    let (m, i) = naga::back::pipeline_constants::process_overrides(module, info, Some((naga::ShaderStage::Compute, "main")), constants).unwrap_or_else(|e| panic!("{what} constants {constants:?}: {e}"));
    let pipeline = naga::back::spv::PipelineOptions { shader_stage: naga::ShaderStage::Compute, entry_point: "main".into() };
    let words = naga::back::spv::write_vec(&m, &i, &wgpu_spirv_options(), Some(&pipeline)).unwrap_or_else(|e| panic!("{what} constants {constants:?}: {e}"));
    assert!(words.len() > 100 && words[0] == 0x0723_0203, "{what} constants {constants:?}: not a SPIR-V module");
}

/// The tensor-core kernel (which no adapter of the test machines compiles: none has
/// cooperative matrices) through naga's SPIR-V backend, with wgpu's options, in both fragment
/// sizes and the specializations the host makes (kernels/matmul/coop.rs `constants`: every
/// orientation, the pitches compiled in or read from the uniform, with and without the
/// epilogue; subgroups of 8, 32 and 64; an f32 output and, `matmul_coop_half`, a float16 one,
/// where the host sets no epilogue or output constants): naga 30 panics there on a `coopStore`
/// whose stride is computed in the call (docs/cooperative-matrices.md), and wgpu's Vulkan
/// backend writes SPIR-V at pipeline creation.
#[test]
fn the_tensor_core_kernel_writes_spirv_in_every_specialization() {
    let mut written = 0;
    for kernel in ["matmul_coop", "matmul_coop8", "matmul_coop_half", "matmul_coop8_half"] {
        let half = kernel.ends_with("_half");
        let src = source_for(kernel, false).unwrap();
        let module = parse(kernel, &src);
        let info = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all()).validate(&module).unwrap();
        for bits in 0..96u32 {
            let flag = |i: u32| ((bits >> i) & 1) as i64;
            let (epi, pitches, wg) = (flag(3) == 1, flag(4) == 1, [128, 256, 32][(bits >> 5) as usize]);
            let pitch = |p: i64| if pitches { p } else { 0 };
            // As coop::constants makes them: with the epilogue no output orientation or pitch.
            let mut constants: Vec<(&str, i64)> = vec![("A_ROWS", flag(0)), ("B_ROWS", flag(1)), ("A_PITCH", pitch(72)), ("B_PITCH", pitch(40))];
            if half {
                // As coop::constants makes them for a float16 output.
                if epi || bits & 4 != 0 {
                    continue;
                }
            } else if epi {
                constants.push(("EPI", 1));
            } else {
                constants.extend([("Y_ROWS", flag(2)), ("Y_PITCH", pitch(48))]);
            }
            constants.push(("WG", wg));
            let constants: naga::back::PipelineConstants = constants.into_iter().map(|(k, v)| (k.to_string(), v as f64)).collect();
            spirv_of(kernel, &module, &info, &constants);
            written += 1;
        }
    }
    assert_eq!(written, 192 + 2 * 24);
}

/// The tensor-core convolution (`conv2d_coop`, `conv2d_coop8`) through naga's SPIR-V backend with
/// wgpu's options in every specialization the host makes (kernels/conv/coop.rs: the reduction's
/// order, bias, ReLU, residual; subgroups of 8, 32 and 64; the tile, NARROW or not), as the
/// matrix product's above.
#[test]
fn the_tensor_core_convolution_writes_spirv_in_every_specialization() {
    let mut written = 0;
    for kernel in ["conv2d_coop", "conv2d_coop8"] {
        let src = source_for(kernel, false).unwrap();
        let module = parse(kernel, &src);
        let info = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all()).validate(&module).unwrap();
        for bits in 0..96u32 {
            let flag = |i: u32| ((bits >> i) & 1) as f64;
            let wg = [128.0, 256.0, 32.0][(bits >> 4) as usize % 3];
            let narrow = (bits / 48) as f64;
            let constants: naga::back::PipelineConstants = [("CHANNELS", flag(0)), ("MODE", flag(1)), ("RELU", flag(2)), ("RESID", flag(3)), ("WG", wg), ("NARROW", narrow)].into_iter().map(|(k, v)| (k.to_string(), v)).collect();
            spirv_of(kernel, &module, &info, &constants);
            written += 1;
        }
    }
    assert_eq!(written, 192);
}

/// The cooperative-matrix probe's shaders (examples/coop_probe/, run only on adapters with the
/// feature) parse, validate and write SPIR-V here, so that an edit that breaks them shows
/// before a GPU run.
#[test]
fn the_cooperative_matrix_probe_shaders_write_spirv() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples").join("coop_probe");
    let mut files = 0;
    // Each file's entry points, every one named in examples/coop_probe.rs.
    for (name, entries) in [("probes.wgsl", 8), ("gemm.wgsl", 4), ("gemm_direct.wgsl", 16)] {
        let src = std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let module = parse(name, &src);
        let info = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all()).validate(&module).unwrap();
        let (m, i) = naga::back::pipeline_constants::process_overrides(&module, &info, None, &Default::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let words = naga::back::spv::write_vec(&m, &i, &wgpu_spirv_options(), None).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(words.len() > 100 && words[0] == 0x0723_0203, "{name}: not a SPIR-V module");
        assert_eq!(module.entry_points.len(), entries, "{name}: entry points");
        files += 1;
    }
    assert_eq!(files, 3);
}

/// The stores in `block` (nested blocks included) to one component of a vector in workgroup or
/// storage memory, as the expressions' spans' text.
fn component_stores(module: &naga::Module, fun: &naga::Function, info: &naga::valid::FunctionInfo, block: &naga::Block, src: &str, found: &mut Vec<String>) {
    use naga::{AddressSpace, Expression, Statement, TypeInner};
    for (s, span) in block.span_iter() {
        match s {
            Statement::Store { pointer, .. } => {
                let base = match fun.expressions[*pointer] {
                    Expression::Access { base, .. } | Expression::AccessIndex { base, .. } => base,
                    _ => continue,
                };
                let shared = |space: AddressSpace| matches!(space, AddressSpace::WorkGroup | AddressSpace::Storage { .. });
                let into_vector = match info[base].ty.inner_with(&module.types) {
                    TypeInner::Pointer { base, space } => shared(*space) && matches!(module.types[*base].inner, TypeInner::Vector { .. }),
                    TypeInner::ValuePointer { size: Some(_), space, .. } => shared(*space),
                    _ => false,
                };
                if into_vector {
                    found.push(span.location(src).line_number.to_string() + ": " + span.to_range().map_or("?", |r| src[r].lines().next().unwrap_or("?")).trim());
                }
            }
            Statement::Block(b) => component_stores(module, fun, info, b, src, found),
            Statement::If { accept, reject, .. } => {
                component_stores(module, fun, info, accept, src, found);
                component_stores(module, fun, info, reject, src, found);
            }
            Statement::Loop { body, continuing, .. } => {
                component_stores(module, fun, info, body, src, found);
                component_stores(module, fun, info, continuing, src, found);
            }
            Statement::Switch { cases, .. } => {
                for c in cases {
                    component_stores(module, fun, info, &c.body, src, found);
                }
            }
            _ => {}
        }
    }
}

/// No kernel stores one component of a vector in workgroup or storage memory: WGSL lets such a
/// store access the whole vector (Metal's and Direct3D's compilers may read, modify and write
/// it), so invocations writing different components of one word race there, though Vulkan's
/// compilers (lavapipe, RADV, NVIDIA's) store the component alone and never show it. The GEMM
/// engine staged A so, four invocations filling each vec4 word.
#[test]
fn no_kernel_stores_one_component_of_a_shared_vector() {
    let mut found = Vec::new();
    for (name, _, _) in KERNELS {
        for (form, src) in [("gpu", source_for(name, false).unwrap()), ("cpu", source_for(name, true).unwrap())] {
            let module = parse(name, &src);
            let info = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all()).validate(&module).unwrap();
            let mut here = Vec::new();
            for (h, f) in module.functions.iter() {
                component_stores(&module, f, &info[h], &f.body, &src, &mut here);
            }
            for (i, e) in module.entry_points.iter().enumerate() {
                component_stores(&module, &e.function, info.get_entry_point(i), &e.function.body, &src, &mut here);
            }
            found.extend(here.into_iter().map(|s| format!("{name} ({form}) line {s}")));
        }
    }
    found.dedup();
    assert!(found.is_empty(), "stores of one component of a shared vector:\n{}", found.join("\n"));
}
