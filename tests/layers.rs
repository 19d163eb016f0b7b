//! The crate's files import each other in one direction only: this test reads every file of
//! `src/` (the library's and the binary's `cli/`, but the crate roots), collects the paths each one names into the
//! crate (`crate::a::b`, `super::x`, `self::x` and a declared child module's `child::x`, in
//! `use` trees and in code), resolves each to the file that defines it (the file of the
//! longest module prefix it names, following `pub use` re-exports, which are no dependency of
//! the re-exporting file), and fails on any circle among those file-to-file edges, printing
//! each circle's edges.
//! `cargo test --test layers -- --nocapture` prints the whole graph.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, relative to `root`.
fn files(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(root, &p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p.strip_prefix(root).unwrap().to_path_buf());
        }
    }
}

/// The module path of a file: `gpu/batch.rs` is `["gpu", "batch"]`, `gpu/mod.rs` `["gpu"]`,
/// `lib.rs` `[]`.
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel.with_extension("").iter().map(|s| s.to_string_lossy().into_owned()).collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

/// The source without comments and string literals (a doc comment naming `crate::x` is no
/// import).
fn code(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    let b = src.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            i += 2;
            while i + 1 < b.len() && !b[i..].starts_with(b"*/") {
                i += 1;
            }
            i += 2;
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if b[i] == b'\'' && i + 2 < b.len() && (b[i + 2] == b'\'' || b[i + 1] == b'\\') {
            // A char literal ('"', '\n'); lifetimes ('a) are left alone.
            let end = (i + 1..b.len()).find(|&j| b[j] == b'\'' && (j > i + 1)).unwrap_or(b.len());
            i = end + 1;
            out.push_str("' '");
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

/// Expands a `use` tree (`a::{b, c::{d, e}}`) into its leaf paths.
fn expand(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else { return vec![tree.split(" as ").next().unwrap().trim().to_string()] };
    let prefix = tree[..open].trim().trim_end_matches("::");
    let inner = &tree[open + 1..tree.rfind('}').unwrap()];
    let mut items = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, ch) in inner.char_indices() {
        match ch {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&inner[start..]);
    let mut out = Vec::new();
    for item in items.into_iter().map(str::trim).filter(|s| !s.is_empty()) {
        for leaf in expand(item) {
            out.push(if leaf == "self" { prefix.to_string() } else { format!("{prefix}::{leaf}") });
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// A path as module segments from the crate root, or `None` for a path outside the crate.
fn absolute(module: &[String], children: &BTreeSet<String>, path: &str) -> Option<Vec<String>> {
    let segs: Vec<String> = path.split("::").map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect();
    let first = segs.first()?;
    Some(match first.as_str() {
        "crate" => segs[1..].to_vec(),
        "super" => {
            let ups = segs.iter().take_while(|s| *s == "super").count();
            let base = module.len().saturating_sub(ups);
            module[..base].iter().cloned().chain(segs[ups..].iter().cloned()).collect()
        }
        "self" => module.iter().cloned().chain(segs[1..].iter().cloned()).collect(),
        c if children.contains(c) => module.iter().cloned().chain(segs.iter().cloned()).collect(),
        _ => return None,
    })
}

/// What a file names: the paths its code and private `use`s reach (dependencies), and its
/// `pub` / `pub(crate)` re-exports (name -> path), which are no dependency of the file's own
/// code: a path through a re-export is resolved to the file that defines the item.
struct Names {
    uses: Vec<Vec<String>>,
    reexports: BTreeMap<String, Vec<String>>,
}

/// The code without its `#[cfg(test)]` inline modules (a file's unit tests may reach
/// anything; `super` there means the file itself).
fn without_unit_tests(src: &str) -> String {
    let mut out = src.to_string();
    while let Some(p) = out.find("#[cfg(test)]") {
        let after = &out[p..];
        let Some(open) = after.find('{') else { break };
        if !after[..open].contains("mod ") {
            out.replace_range(p..p + "#[cfg(test)]".len(), "");
            continue;
        }
        let mut depth = 0;
        let mut end = out.len();
        for (i, c) in out[p + open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = p + open + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.replace_range(p..end, "");
    }
    out
}

fn names(module: &[String], children: &BTreeSet<String>, src: &str) -> Names {
    let src = without_unit_tests(&code(src));
    let mut out = Names { uses: Vec::new(), reexports: BTreeMap::new() };
    // `use` trees, whole (they may span lines), and where each one sits, so that paths in code
    // are not counted twice.
    let mut spans = Vec::new();
    let mut at = 0;
    while let Some(p) = src[at..].find("use ").map(|p| p + at) {
        let before = src[..p].chars().last();
        at = p + 4;
        if before.is_some_and(is_ident) {
            continue;
        }
        let Some(end) = src[p..].find(';').map(|e| e + p) else { break };
        let line_start = src[..p].rfind(['\n', ';', '{', '}']).map_or(0, |i| i + 1);
        let public = src[line_start..p].trim().starts_with("pub");
        for leaf in expand(&src[p + 4..end]) {
            let (path, alias) = match leaf.split_once(" as ") {
                Some((p, a)) => (p.trim().to_string(), a.trim().to_string()),
                None => (leaf.clone(), leaf.rsplit("::").next().unwrap_or_default().to_string()),
            };
            if let Some(abs) = absolute(module, children, &path) {
                if public {
                    out.reexports.insert(alias, abs);
                } else {
                    out.uses.push(abs);
                }
            }
        }
        spans.push(p..end);
        at = end;
    }
    // Paths in code, outside `use` statements: from the crate root, the parent, or a child
    // module this file declares (`blocked::record(..)`).
    let keys: Vec<String> = ["crate::".to_string(), "super::".to_string()].into_iter().chain(children.iter().map(|c| format!("{c}::"))).collect();
    for key in &keys {
        let key = key.as_str();
        let mut at = 0;
        while let Some(p) = src[at..].find(key).map(|p| p + at) {
            at = p + key.len();
            let before = src[..p].chars().last();
            if spans.iter().any(|r| r.contains(&p)) || before.is_some_and(|c| is_ident(c) || c == ':') {
                continue;
            }
            let tail: String = src[p..].chars().take_while(|&c| is_ident(c) || c == ':').collect();
            if let Some(abs) = absolute(module, children, tail.trim_end_matches(':')) {
                out.uses.push(abs);
            }
        }
    }
    out
}

/// The file that defines what `path` names: the file of its longest module prefix, or,
/// where that module re-exports the next segment, the file the re-export leads to.
fn resolve<'a>(path: &[String], by_module: &'a BTreeMap<Vec<String>, String>, reexports: &BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>>, depth: usize) -> Option<&'a String> {
    // From the whole path down to the crate root (`crate::HostTensor` is lib.rs's re-export).
    let i = (0..=path.len()).rev().find(|&i| by_module.contains_key(&path[..i]))?;
    if depth < 8 && i < path.len() {
        if let Some(target) = reexports.get(&path[..i]).and_then(|r| r.get(&path[i])) {
            let next: Vec<String> = target.iter().chain(&path[i + 1..]).cloned().collect();
            if next != path {
                return resolve(&next, by_module, reexports, depth + 1).or(by_module.get(&path[..i]));
            }
        }
    }
    by_module.get(&path[..i])
}

/// The file-to-file import graph of `src/`.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&root, &root, &mut all);
    // The binary's `cli/` files are modules `crate::cli::*` of the binary crate (declared in
    // main.rs, which is left out as the crate root, like lib.rs); they name the library as
    // `strided_wgpu::`, never as `crate::`, so both crates share one graph without confusion.
    let lib: Vec<PathBuf> = all.into_iter().filter(|p| p != Path::new("main.rs")).collect();
    let by_module: BTreeMap<Vec<String>, String> = lib.iter().map(|p| (module_of(p), p.display().to_string())).collect();
    // Every file's names first (re-exports are followed across files).
    let mut parsed = Vec::new();
    for p in &lib {
        let module = module_of(p);
        let src = std::fs::read_to_string(root.join(p)).unwrap();
        // Child modules declared here (`mod x;` / `pub mod x;`).
        let children: BTreeSet<String> = code(&src)
            .lines()
            .filter_map(|l| {
                let l = l.trim();
                let l = l.strip_prefix("pub(crate) ").or_else(|| l.strip_prefix("pub ")).unwrap_or(l);
                l.strip_prefix("mod ").and_then(|r| r.strip_suffix(';')).map(|m| m.trim().to_string())
            })
            .collect();
        parsed.push((p.display().to_string(), module.clone(), names(&module, &children, &src)));
    }
    let reexports: BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>> = parsed.iter().map(|(_, m, n)| (m.clone(), n.reexports.clone())).collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (name, _, n) in &parsed {
        let deps = n.uses.iter().filter_map(|path| resolve(path, &by_module, &reexports, 0)).filter(|f| *f != name && *f != "lib.rs").cloned().collect();
        edges.insert(name.clone(), deps);
    }
    edges
}

#[test]
fn no_import_circle_between_files() {
    let edges = graph();
    for (f, d) in &edges {
        println!("{f} -> {d:?}");
    }
    // Tarjan's strongly connected components; any of more than one file is a circle.
    struct S<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        circles: Vec<Vec<&'a str>>,
    }
    fn visit<'a>(s: &mut S<'a>, v: &'a str) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on.insert(v);
        for w in s.edges.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let l = s.low[v].min(s.low[w]);
                s.low.insert(v, l);
            } else if s.on.contains(w) {
                let l = s.low[v].min(s.index[w]);
                s.low.insert(v, l);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on.remove(w);
                comp.push(w);
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                s.circles.push(comp);
            }
        }
    }
    let mut s = S { edges: &edges, index: BTreeMap::new(), low: BTreeMap::new(), stack: Vec::new(), on: BTreeSet::new(), circles: Vec::new() };
    for f in edges.keys() {
        if !s.index.contains_key(f.as_str()) {
            visit(&mut s, f);
        }
    }
    let mut report = String::new();
    for c in &s.circles {
        report.push_str(&format!("circle among {c:?}:\n"));
        for a in c {
            for b in &edges[*a] {
                if c.contains(&b.as_str()) {
                    report.push_str(&format!("    {a} -> {b}\n"));
                }
            }
        }
    }
    assert!(s.circles.is_empty(), "files of src/ import each other in a circle:\n{report}");
    // The check sees imports at all: the tensors import the runtime.
    assert!(edges.values().flatten().any(|d| d.starts_with("runtime")), "no edge into runtime found: the parser sees nothing");
}

/// Every file a file reaches through its imports, itself excluded.
fn reach(edges: &BTreeMap<String, BTreeSet<String>>, from: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![from.to_string()];
    while let Some(f) = todo.pop() {
        for d in edges.get(&f).into_iter().flatten() {
            if seen.insert(d.clone()) {
                todo.push(d.clone());
            }
        }
    }
    seen.remove(from);
    seen
}

/// The layers point one way: the runtime knows no kernel, tuner, tensor or host tensor; the
/// kernel families and the tuner know no tensor (device or host: host-only checks and options
/// live in modules without `HostTensor`).
#[test]
fn layers_point_one_way() {
    let edges = graph();
    let mut bad = Vec::new();
    for f in edges.keys() {
        let below: &[&str] = if f.starts_with("runtime/") {
            &["kernels/", "tune", "gpu/", "host.rs"]
        } else if f.starts_with("kernels/") || f.starts_with("tune") {
            &["gpu/", "host.rs"]
        } else {
            continue;
        };
        for d in reach(&edges, f) {
            if below.iter().any(|b| d.starts_with(b)) {
                bad.push(format!("{f} reaches {d}"));
            }
        }
    }
    assert!(bad.is_empty(), "imports against the layers:\n{}", bad.join("\n"));
}
