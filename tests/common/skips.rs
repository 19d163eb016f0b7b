//! Which GPU suites ran on an adapter in this `cargo test`, and which skipped, told where a user
//! sees it.
//!
//! libtest captures what a passing test prints through `print!` / `eprint!`, so a suite that
//! skips its GPU tests for want of an adapter cannot say so that way. Here a suite writes its
//! notice straight to the process's stderr (`std::io::stderr()`, which libtest does not
//! capture) and records its outcome in a file of its own, `<suite>` under
//! `$CARGO_TARGET_TMPDIR/gpu-suites/`, tagged with this `cargo test` run (cargo's process: every
//! test binary of one run is its child). The last test target, `tests/zz_gpu_summary.rs`
//! (`harness = false`, so nothing it prints is captured; cargo runs integration test binaries in
//! name order), reads the records of its own run and prints the summary. Records of other runs
//! are ignored, so a suite filtered out of this run is reported as not run, not by what it did
//! last time.

use std::io::Write;
use std::path::{Path, PathBuf};

/// What one suite did with the adapters in one run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Its GPU tests ran, on these backends (`Vulkan`, `Gl`, ...).
    Ran(Vec<String>),
    /// No adapter opened: its GPU tests passed without testing anything. Why.
    Skipped(String),
}

/// One suite's record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// The test target (`conformance`, `device_copy`, ...).
    pub suite: String,
    /// The `cargo test` run it belongs to ([`run_id`]).
    pub run: String,
    pub outcome: Outcome,
}

/// Where the records live: one file per suite.
pub fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("gpu-suites")
}

/// The test target this code is compiled into.
pub fn suite() -> &'static str {
    env!("CARGO_CRATE_NAME")
}

/// This `cargo test` run: the parent process (cargo, which starts every test binary of a run),
/// with its start time where /proc tells it, so that a later run with the same process id
/// differs.
pub fn run_id() -> String {
    #[cfg(unix)]
    {
        let ppid = std::os::unix::process::parent_id();
        // /proc/<pid>/stat: the 22nd field (the 20th after the command's closing parenthesis)
        // is the start time.
        let start = std::fs::read_to_string(format!("/proc/{ppid}/stat")).ok().and_then(|s| s.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(19).map(str::to_string)));
        format!("{ppid}:{}", start.unwrap_or_default())
    }
    #[cfg(not(unix))]
    {
        String::from("unknown")
    }
}

/// The record as its file holds it.
pub fn render(r: &Record) -> String {
    match &r.outcome {
        Outcome::Ran(backends) => format!("run={}\nran={}\n", r.run, backends.join(",")),
        Outcome::Skipped(why) => format!("run={}\nskipped={}\n", r.run, why.replace('\n', " ")),
    }
}

/// A record file's text, for `suite`.
pub fn parse(suite: &str, text: &str) -> Option<Record> {
    let (mut run, mut outcome) = (None, None);
    for line in text.lines() {
        match line.split_once('=') {
            Some(("run", v)) => run = Some(v.to_string()),
            Some(("ran", v)) => outcome = Some(Outcome::Ran(v.split(',').filter(|b| !b.is_empty()).map(str::to_string).collect())),
            Some(("skipped", v)) => outcome = Some(Outcome::Skipped(v.to_string())),
            _ => {}
        }
    }
    Some(Record { suite: suite.to_string(), run: run?, outcome: outcome? })
}

/// Records this suite's `outcome` for this run (a record that cannot be written is said on
/// stderr: the summary will then report the suite as not run).
pub fn record(outcome: Outcome) {
    let r = Record { suite: suite().to_string(), run: run_id(), outcome };
    let dir = dir();
    if let Err(e) = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(dir.join(&r.suite), render(&r))) {
        say(&format!("!!! {}: could not record its GPU outcome in {}: {e}", r.suite, dir.display()));
    }
}

/// Records that this suite skips its GPU tests, and says so on stderr, uncaptured.
pub fn skipped(why: &str) {
    say(&format!("!!! {}: SKIPPING GPU TESTS: {why}", suite()));
    record(Outcome::Skipped(why.to_string()));
}

/// One line straight to the process's stderr, which libtest does not capture.
pub fn say(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// The GPU suites of this package: the test targets under `tests_dir` that ask for adapters
/// (`contexts()` of tests/common/gpu.rs) or record an outcome of their own (`skips::`).
pub fn known_suites(tests_dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(tests_dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .filter(|p| std::fs::read_to_string(p).is_ok_and(|s| s.contains("contexts()") || s.contains("skips::record")))
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect();
    out.sort();
    out
}

/// Every record in `dir` (unreadable files are left out).
pub fn read_all(dir: &Path) -> Vec<Record> {
    let mut out: Vec<Record> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let suite = e.file_name().to_string_lossy().into_owned();
            parse(&suite, &std::fs::read_to_string(e.path()).ok()?)
        })
        .collect();
    out.sort_by(|a, b| a.suite.cmp(&b.suite));
    out
}

/// The summary's lines for run `run`, given every record and the package's GPU suites.
pub fn summary(records: &[Record], run: &str, known: &[String]) -> Vec<String> {
    let mine: Vec<&Record> = records.iter().filter(|r| r.run == run).collect();
    let skipped: Vec<&str> = mine.iter().filter(|r| matches!(r.outcome, Outcome::Skipped(_))).map(|r| r.suite.as_str()).collect();
    let mut lines = Vec::new();
    if !skipped.is_empty() {
        lines.push(format!("!!! GPU suites that did not run (no adapter; their GPU tests passed without testing anything): {}", skipped.join(", ")));
        let mut whys: Vec<String> = mine.iter().filter_map(|r| if let Outcome::Skipped(w) = &r.outcome { Some(w.clone()) } else { None }).collect();
        whys.sort();
        whys.dedup();
        for w in whys {
            lines.push(format!("!!!   why: {w}"));
        }
    }
    // Suites that ran, grouped by the backends they ran on.
    let mut groups: Vec<(String, Vec<&str>)> = Vec::new();
    for r in &mine {
        if let Outcome::Ran(b) = &r.outcome {
            let key = if b.is_empty() { "no backend named".to_string() } else { b.join(", ") };
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, v)) => v.push(&r.suite),
                None => groups.push((key, vec![&r.suite])),
            }
        }
    }
    if skipped.is_empty() && !groups.is_empty() {
        let n: usize = groups.iter().map(|(_, v)| v.len()).sum();
        let on = match &groups[..] {
            [(backends, _)] => backends.clone(),
            _ => groups.iter().map(|(b, v)| format!("{b}: {}", v.join(", "))).collect::<Vec<_>>().join("; "),
        };
        lines.push(format!("GPU suites: all {n} that asked for an adapter ran on one ({on})"));
    } else {
        for (backends, suites) in &groups {
            lines.push(format!("GPU suites that ran on {backends}: {}", suites.join(", ")));
        }
    }
    let absent: Vec<&str> = known.iter().map(String::as_str).filter(|k| !mine.iter().any(|r| r.suite == *k)).collect();
    if mine.is_empty() {
        lines.push(format!("GPU suites: none asked for an adapter in this `cargo test` (filtered out or not run: {})", absent.join(", ")));
    } else if !absent.is_empty() {
        lines.push(format!("GPU suites not run in this `cargo test` (filtered out, or no test of theirs asked for an adapter): {}", absent.join(", ")));
    }
    if !skipped.is_empty() {
        lines.push("!!! STRIDED_WGPU_REQUIRE_ADAPTER=1 makes a missing adapter fail; the examples and doc tests, which run after this summary, skip their GPU parts too and are not counted here".into());
    }
    lines
}
