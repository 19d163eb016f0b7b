//! The runtime's one locking rule, shared by its files.

use std::sync::{Mutex, MutexGuard};

/// Locks a mutex, taking the data of a poisoned one (every guarded structure stays valid
/// between statements).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
