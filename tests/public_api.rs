//! The crate root stays what a porting user types: at most 30 names, counting every name a
//! root `pub use` brings and every public module (issue: "a public surface a user can hold").
//! The rest lives in `ops`, `layout` and `advanced`; `advanced::internal` is hidden and only
//! for the crate's own tests and benches.

/// The names `src/lib.rs` brings to the crate root: each root-level `pub use` item (the last
/// segment, or its `as` alias) and each root-level `pub mod`.
fn root_names(lib: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut stmt = String::new();
    for line in lib.lines() {
        // Root level only: items inside `pub mod x { .. }` are indented.
        if stmt.is_empty() && !(line.starts_with("pub use ") || line.starts_with("pub mod ")) {
            continue;
        }
        stmt.push_str(line);
        if let Some(rest) = stmt.strip_prefix("pub mod ") {
            names.push(rest.split(|c: char| !(c.is_alphanumeric() || c == '_')).next().unwrap().to_string());
            stmt.clear();
            continue;
        }
        if !stmt.contains(';') {
            continue;
        }
        let tree = stmt.trim_start_matches("pub use ").trim_end().trim_end_matches(';').to_string();
        let items = match tree.find('{') {
            Some(i) => tree[i + 1..tree.rfind('}').unwrap()].to_string(),
            None => tree.rsplit("::").next().unwrap().to_string(),
        };
        for item in items.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            names.push(item.rsplit(" as ").next().unwrap().rsplit("::").next().unwrap().to_string());
        }
        stmt.clear();
    }
    names
}

#[test]
fn the_root_has_at_most_thirty_names() {
    let lib = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/src/lib.rs")).unwrap();
    let names = root_names(&lib);
    // The parse found the surface (a parse that finds nothing would pass any bound).
    for must in ["HostTensor", "DeviceTensor", "GpuContext", "Batch", "Error", "advanced", "ops"] {
        assert!(names.iter().any(|n| n == must), "{must} not found at the root: {names:?}");
    }
    assert!(names.len() <= 30, "{} names at the crate root (at most 30): {names:?}", names.len());
    let mut sorted = names.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), names.len(), "a name brought to the root twice: {names:?}");
}

#[test]
fn the_counter_counts_pub_use_trees_and_modules() {
    let lib = "pub use a::{B, c as D};\npub use e::F;\npub mod g;\npub mod h {\n    pub use x::Y;\n}\nmod private;\npub use i::{\n    J,\n    K,\n};\n";
    assert_eq!(root_names(lib), ["B", "D", "F", "g", "h", "J", "K"]);
}

/// What a user needs is reachable by the documented paths (a compile-time check: a name moved
/// away breaks this test's build).
#[test]
fn the_documented_paths_resolve() {
    #[allow(unused_imports)]
    use strided_wgpu::advanced::{conv2d_with, vec4_default, AdapterReport, ConvKernel, CopyPath, ElementwisePath, GpuTimer, MatmulKernel, RecordCounts, SubmitPolicy};
    #[allow(unused_imports)]
    use strided_wgpu::layout::{CopyKind, CopyPlan, IterPlan, Overlap, Reshape};
    #[allow(unused_imports)]
    use strided_wgpu::ops::{batch_norm, can_cast, cat, conv2d, fold_batch_norm, group_norm, layer_norm, result_type, stack, Conv1x1Options, Input, InterpolateMode, InterpolateOptions, PadMode, ReduceOp, ScanOp, Target};
    let x = strided_wgpu::HostTensor::from_vec(vec![1f32, 2.0], &[2]).unwrap();
    let y = cat(&[&x, &x], 0).unwrap();
    assert_eq!(strided_wgpu::Strided::shape(&y), &[4]);
}
