//! The tuner: kernel choices measured once per kernel family and shape class, kept per context,
//! and saved to or loaded from a file.
//!
//! It knows no kernel: a family names its classes and choices (any serde types), gives the
//! candidates and records each one into an encoder; [`Tuner::measure`] times them all with one
//! loop (the first run of each compiles its pipelines and is not counted; then the candidates
//! take turns, round by round, and the best run wins). Measuring submits and waits, so it runs only outside recordings and only when the
//! caller asked: at an explicit `GpuContext::tune_*` call, or, under
//! [`TuningPolicy::OnFirstCall`], when a blocking call that is not a recording first meets a
//! class (`DeviceTensor::copy_`, `conv2d`, the matrix products of `Matmul`). Otherwise a class without a kept choice runs the
//! family's default choice for the adapter, which measures nothing.
//!
//! A saved file is JSON: a list of sections, each keyed by adapter name, driver, backend and
//! crate version with the tuning format (`0.1.0+tuning1`), holding that adapter's choices. Loading takes the section of this adapter
//! (and none of another's); with it, a first copy or convolution measures nothing.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::runtime::record::Recorder;
use crate::runtime::submit::Drive;
use crate::runtime::timing::Timer;
use crate::runtime::lock::lock;
use crate::runtime::AdapterReport;

/// Runs per candidate: the first compiles its pipelines and is not counted.
const RUNS: usize = 4;

/// When a context measures kernels. Measuring compiles and times every candidate kernel of a
/// shape class (seconds on a software adapter, where each pipeline compiles on the CPU), so by
/// default no call measures unless the caller asks: as PyTorch's `cudnn.benchmark`, which is
/// off unless set.
///
/// As with `cudnn.benchmark`, a measured choice can change bits: a class's candidates may sum
/// in different orders (split-K against one pass, another weight order), and which one wins
/// depends on timing. So a context that measured (or loaded a tuning file) can give other
/// float bits than an untuned one, or than another process. Within a context a class's kernel,
/// once kept, never changes (a later measurement or file keeps it); before that, a recording
/// of the class runs the adapter's default kernel, which the first measuring call may replace.
/// Under [`TuningPolicy::Defaults`], with no tuning file loaded, no `tune_*` call and no call
/// made under [`TuningPolicy::OnFirstCall`], the same input gives the same bits. A measurement
/// whose scratch buffers the adapter cannot allocate (a limit, out of memory, seen at once:
/// natively) measures nothing and keeps nothing: the call runs the default, as it would
/// untuned.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TuningPolicy {
    /// No call measures by itself: a shape class runs the choice kept for it (from
    /// `GpuContext::tune_*` or a loaded tuning file), else the adapter's default kernel, a
    /// deterministic choice per adapter kind. The default.
    #[default]
    Defaults,
    /// The first blocking `copy_`, `conv2d` or matrix product (not a recording) of a shape class without a
    /// kept choice measures the candidates first and keeps the fastest, as
    /// `torch.backends.cudnn.benchmark = True` (the class of the call's own output: an `out=`
    /// view's, where it makes another class). Recordings still never measure. Native only:
    /// on wasm32 (WebGPU) no call may block, so calls never measure (the default runs, nothing
    /// kept); `tune_*_async` measures there.
    OnFirstCall,
}

/// A kernel family the tuner measures, the one way a family plugs into tuning: its name in
/// tuning files, its shape class (calls of one class share a choice) and its choice, and the
/// candidates a choice must be among. The tuned families implement it on a marker type next to
/// their classes (`kernels::copy::Transpose`, `kernels::conv::class::Conv`,
/// `kernels::matmul::Matmul`); their device files (`gpu/copy.rs`, `gpu/conv.rs`,
/// `gpu/matmul.rs`) record the candidates for [`Tuner::measure`] and keep the winner.
pub(crate) trait Family {
    /// The family's key in tuning files.
    const NAME: &'static str;
    /// A shape class.
    type Class: Serialize + DeserializeOwned;
    /// A kernel choice.
    type Choice: Copy + PartialEq + Serialize + DeserializeOwned;
    /// The kernels the tuner compares for `class`.
    fn candidates(class: &Self::Class) -> Vec<Self::Choice>;
}

/// `class` and `choice` (a tuning file's text) as the tuner keys them (a file's spacing or field
/// order may differ: the keys are the types' own JSON), where `choice` is one of the candidates
/// of `class` in family `F`; `None` where it is not.
pub(crate) fn admits<F: Family>(class: &str, choice: &str) -> std::result::Result<Option<(String, String)>, String> {
    let class: F::Class = serde_json::from_str(class).map_err(|e| e.to_string())?;
    let choice: F::Choice = serde_json::from_str(choice).map_err(|e| e.to_string())?;
    Ok(F::candidates(&class).contains(&choice).then(|| (json(&class), json(&choice))))
}

/// Choices by family, then by class, each as JSON text, and the policy of when to measure.
#[derive(Default)]
pub(crate) struct Tuner {
    choices: Mutex<BTreeMap<String, BTreeMap<String, String>>>,
    /// The (family, class) keys of `choices` that are defaults a capture ran and kept
    /// ([`Tuner::keep_default`]): neither measured nor loaded, so neither listed nor saved.
    defaults: Mutex<std::collections::BTreeSet<(String, String)>>,
    on_first_call: AtomicBool,
}

/// A tuning scratch allocation's result: `None` where the adapter cannot give it (a limit, an
/// overflow, out of memory: nothing is measured, and the call that asked runs its class's
/// default, as it would without tuning), else the allocation or its other error.
pub(crate) fn scratch<T>(r: Result<T>) -> Result<Option<T>> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(Error::Limit { .. } | Error::Overflow { .. } | Error::Gpu { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The version of what a tuning file's classes and choices mean: raised whenever a class or
/// choice type changes (a member added, a variant renamed), so that a file written before is
/// skipped rather than read as other classes (the crate's version has stayed 0.1.0 while they
/// changed). It is part of a section's `crate_version` (`0.1.0+tuning1`), which every build
/// compares, so that builds before it skip this format's sections too.
const TUNING_FORMAT: u64 = 1;

/// A section's `crate_version`: the crate's version and the tuning format.
fn version_key() -> String {
    format!("{}+tuning{TUNING_FORMAT}", env!("CARGO_PKG_VERSION"))
}

/// One adapter's section of a tuning file.
#[derive(Serialize, Deserialize)]
struct Section {
    adapter: String,
    driver: String,
    backend: String,
    crate_version: String,
    choices: BTreeMap<String, BTreeMap<String, String>>,
}

fn json<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("tuning keys and choices serialize")
}

impl Tuner {
    /// When blocking calls measure.
    pub fn policy(&self) -> TuningPolicy {
        if self.on_first_call.load(Ordering::Relaxed) {
            TuningPolicy::OnFirstCall
        } else {
            TuningPolicy::Defaults
        }
    }

    /// Sets when blocking calls measure.
    pub fn set_policy(&self, policy: TuningPolicy) {
        self.on_first_call.store(policy == TuningPolicy::OnFirstCall, Ordering::Relaxed);
    }

    /// The choice kept for `class` of family `F`.
    pub fn get<F: Family>(&self, class: &F::Class) -> Option<F::Choice> {
        let g = lock(&self.choices);
        serde_json::from_str(g.get(F::NAME)?.get(&json(class))?).ok()
    }

    /// Keeps `choice` for `class` of family `F` unless the class has one: a class's kernel,
    /// once kept, never changes (two threads that measured one class at once, the second keeps
    /// the first's choice, which its call then runs).
    pub fn keep<F: Family>(&self, class: &F::Class, choice: &F::Choice) {
        lock(&self.choices).entry(F::NAME.to_string()).or_default().entry(json(class)).or_insert_with(|| json(choice));
    }

    /// Keeps `choice`, a default that a captured graph runs, as the choice of `class` when it
    /// has none: a later first call then neither measures nor keeps another kernel, whose bits
    /// the graph's replays would not give. Not listed by [`Tuner::entries`] nor saved. Returns
    /// the class's choice now: `choice`, or the one another thread kept first (which the
    /// caller then runs).
    pub fn keep_default<F: Family>(&self, class: &F::Class, choice: &F::Choice) -> F::Choice {
        let key = json(class);
        let mut g = lock(&self.choices);
        let family = g.entry(F::NAME.to_string()).or_default();
        if let Some(kept) = family.get(&key).and_then(|k| serde_json::from_str(k).ok()) {
            return kept;
        }
        family.insert(key.clone(), json(choice));
        lock(&self.defaults).insert((F::NAME.to_string(), key));
        *choice
    }

    /// Every (class, choice) measured or loaded for family `F` (not the defaults a capture
    /// kept).
    pub fn entries<F: Family>(&self) -> Vec<(F::Class, F::Choice)> {
        let g = lock(&self.choices);
        let defaults = lock(&self.defaults);
        g.get(F::NAME).into_iter().flatten().filter(|(c, _)| !defaults.contains(&(F::NAME.to_string(), (*c).clone()))).filter_map(|(c, k)| Some((serde_json::from_str(c).ok()?, serde_json::from_str(k).ok()?))).collect()
    }

    /// Times every candidate that `record` accepts and returns the fastest (`None` when none
    /// ran). A candidate whose recording fails (it does not apply) is skipped. Each candidate
    /// runs once untimed (it compiles its pipelines), then the candidates take turns, round by
    /// round, so that a host whose speed drifts during the measurement slows them alike; each
    /// keeps its fastest run.
    pub async fn measure<K: Copy>(timer: &Timer, candidates: &[K], drive: Drive, record: impl Fn(K, &mut Recorder) -> Result<()>) -> Result<Option<K>> {
        // The fastest run of each candidate still in the race (None: not timed yet).
        let mut racing: Vec<(K, Option<f64>)> = Vec::new();
        for &k in candidates {
            match timer.time_recording(drive, |rec| record(k, rec)).await {
                Ok(_) => racing.push((k, None)),
                Err(e @ Error::DeviceLost { .. }) => return Err(e),
                Err(_) => {}
            }
        }
        for _ in 1..RUNS {
            let mut i = 0;
            while i < racing.len() {
                let k = racing[i].0;
                match timer.time_recording(drive, |rec| record(k, rec)).await {
                    Ok(ms) => {
                        racing[i].1 = Some(racing[i].1.map_or(ms, |b| b.min(ms)));
                        i += 1;
                    }
                    Err(e @ Error::DeviceLost { .. }) => return Err(e),
                    Err(_) => {
                        racing.remove(i);
                    }
                }
            }
        }
        let mut best: Option<(f64, K)> = None;
        for (k, t) in racing {
            if let Some(t) = t {
                if best.is_none_or(|(b, _)| t < b) {
                    best = Some((t, k));
                }
            }
        }
        Ok(best.map(|(_, k)| k))
    }

    fn section(&self, r: &AdapterReport) -> Section {
        Section {
            adapter: r.name.clone(),
            driver: r.driver.clone(),
            backend: format!("{:?}", r.backend),
            crate_version: version_key(),
            choices: {
                let mut choices = lock(&self.choices).clone();
                for (family, class) in lock(&self.defaults).iter() {
                    if let Some(f) = choices.get_mut(family) {
                        f.remove(class);
                    }
                }
                choices.retain(|_, f| !f.is_empty());
                choices
            },
        }
    }

    /// Whether section `s` (read as JSON, any shape) is this adapter's, driver's, backend's,
    /// crate version's and tuning format's.
    fn matches(s: &serde_json::Value, r: &AdapterReport) -> bool {
        let text = |k: &str| s.get(k).and_then(|v| v.as_str());
        text("adapter") == Some(&r.name)
            && text("driver") == Some(&r.driver)
            && text("backend") == Some(&format!("{:?}", r.backend))
            && text("crate_version") == Some(&version_key())
    }

    /// A tuning file's sections, each a JSON object of whatever members its version wrote.
    fn sections(op: &'static str, text: &str) -> Result<Vec<serde_json::Value>> {
        let sections: Vec<serde_json::Value> = serde_json::from_str(text).map_err(|e| Error::Tuning { op, detail: format!("not a tuning file (a JSON list of sections): {e}") })?;
        if let Some(s) = sections.iter().find(|s| !s.is_object()) {
            return Err(Error::Tuning { op, detail: format!("not a tuning file: a section is not a JSON object ({s})") });
        }
        Ok(sections)
    }

    /// `existing` (a tuning file's text, or empty) with this adapter's section replaced by the
    /// choices kept now; the other sections (other adapters, versions and formats) kept,
    /// whatever members they hold (as JSON values: their keys sorted, numbers as serde_json
    /// writes them).
    pub fn to_json(&self, r: &AdapterReport, existing: &str) -> Result<String> {
        let mut sections = if existing.trim().is_empty() { Vec::new() } else { Self::sections("save_tuning", existing)? };
        sections.retain(|s| !Self::matches(s, r));
        sections.push(serde_json::to_value(self.section(r)).map_err(|e| Error::Tuning { op: "save_tuning", detail: e.to_string() })?);
        serde_json::to_string_pretty(&sections).map_err(|e| Error::Tuning { op: "save_tuning", detail: e.to_string() })
    }

    /// Takes this adapter's choices from a tuning file's text for the classes without one;
    /// returns how many it took. `check(family, class, choice)` vets each choice (the kernels
    /// know what theirs may hold) and returns the (class, choice) keys as the tuner writes them;
    /// when one fails, the error names it and nothing is taken.
    pub fn load_json(&self, r: &AdapterReport, text: &str, check: impl Fn(&str, &str, &str) -> std::result::Result<(String, String), String>) -> Result<usize> {
        let Some(mine) = Self::sections("load_tuning", text)?.into_iter().find(|s| Self::matches(s, r)) else { return Ok(0) };
        let mine: Section = serde_json::from_value(mine).map_err(|e| Error::Tuning { op: "load_tuning", detail: format!("this adapter's section is not one of this tuning format: {e}") })?;
        let mut vetted: Vec<(String, String, String)> = Vec::new();
        for (family, classes) in &mine.choices {
            for (class, choice) in classes {
                let (class, choice) = check(family, class, choice).map_err(|why| Error::Tuning { op: "load_tuning", detail: format!("family {family}, class {class}: choice {choice}: {why}") })?;
                vetted.push((family.clone(), class, choice));
            }
        }
        let mut g = lock(&self.choices);
        let mut n = 0;
        for (family, class, choice) in vetted {
            if let std::collections::btree_map::Entry::Vacant(v) = g.entry(family).or_default().entry(class) {
                v.insert(choice);
                n += 1;
            }
        }
        Ok(n)
    }
}
