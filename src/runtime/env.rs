//! The crate's environment switches (`STRIDED_WGPU_*`, docs/testing.md), read one way: a value
//! outside a switch's list is not taken for another (a typo silently left the default, and
//! `STRIDED_WGPU_COOPERATIVE_MATRIX=off` kept tensor cores on): it warns once on stderr, naming
//! the values the switch takes, and the switch keeps its default.

use std::collections::HashSet;
use std::sync::Mutex;

use crate::runtime::lock::lock;

/// The value of switch `name` when it is one of `values`; `None` when unset, or set to
/// another value (warned once per switch and value).
pub(crate) fn switch(name: &str, values: &[&'static str]) -> Option<&'static str> {
    let set = std::env::var(name).ok()?;
    if let Some(v) = values.iter().find(|&&v| v == set) {
        return Some(v);
    }
    static WARNED: Mutex<Option<HashSet<String>>> = Mutex::new(None);
    if lock(&WARNED).get_or_insert_with(HashSet::new).insert(format!("{name}={set}")) {
        eprintln!("strided-wgpu: {name}={set:?} is not one of {values:?}; the switch keeps its default");
    }
    None
}

/// Whether switch `name` (values `0` and `1`) is `1`.
pub(crate) fn on(name: &str) -> bool {
    switch(name, &["0", "1"]) == Some("1")
}

#[cfg(test)]
mod tests {
    use super::{on, switch};

    #[test]
    fn a_switch_takes_its_values_only() {
        // Names of this test's own: no other test reads them.
        std::env::set_var("STRIDED_WGPU_TEST_SWITCH_A", "all");
        std::env::set_var("STRIDED_WGPU_TEST_SWITCH_B", "off");
        std::env::set_var("STRIDED_WGPU_TEST_SWITCH_C", "1");
        std::env::set_var("STRIDED_WGPU_TEST_SWITCH_D", "true");
        assert_eq!(switch("STRIDED_WGPU_TEST_SWITCH_A", &["0", "1", "all"]), Some("all"));
        assert_eq!(switch("STRIDED_WGPU_TEST_SWITCH_B", &["0", "1", "all"]), None);
        assert_eq!(switch("STRIDED_WGPU_TEST_SWITCH_UNSET", &["0", "1"]), None);
        assert!(on("STRIDED_WGPU_TEST_SWITCH_C"));
        assert!(!on("STRIDED_WGPU_TEST_SWITCH_D"));
    }
}
