//! The on-disk caches open in this process, for their notes: where a key made with no cache at
//! hand ([`Program::cache_key`](crate::Program::cache_key), then the user's own lookup) learns
//! a compiler's version without loading it, as `compile_cached` learns it from its cache.
//!
//! Each [`FileStreamProgramCache`](super::FileStreamProgramCache) registers its root when it
//! is made and leaves when it is dropped (the list holds weak references): a note is read
//! from, and written to, only a cache the process has open, whose root was checked when it
//! was opened, with the checks every note file is read with.

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use super::CacheKey;
use super::notes;
use crate::error::Result;

/// The roots of the on-disk caches made in this process (dropped ones are weak references to
/// nothing, pruned as caches are made).
static OPEN: Mutex<Vec<Weak<Path>>> = Mutex::new(Vec::new());

fn open() -> MutexGuard<'static, Vec<Weak<Path>>> {
    OPEN.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Registers `root`, a cache's, for as long as the cache holds it.
pub(super) fn register(root: &Arc<Path>) {
    let mut open = open();
    open.retain(|root| root.strong_count() > 0);
    open.push(Arc::downgrade(root));
}

/// The roots of the on-disk caches open now, each path once, in the order they were opened.
fn roots() -> Vec<Arc<Path>> {
    let mut roots: Vec<Arc<Path>> = Vec::new();
    for root in open().iter().filter_map(Weak::upgrade) {
        if !roots.contains(&root) {
            roots.push(root);
        }
    }
    roots
}

/// The first note under `key` in the open caches that `accept` makes something of: the note,
/// and what `accept` made of it.
pub(crate) fn find_note<T>(
    key: &CacheKey,
    mut accept: impl FnMut(&[u8]) -> Option<T>,
) -> Option<(Vec<u8>, T)> {
    roots().iter().find_map(|root| {
        let note = notes::read_in(root, key)?;
        let made = accept(&note)?;
        Some((note, made))
    })
}

/// Stores `note` under `key` in every open cache (best effort: each one is tried).
///
/// # Errors
///
/// The last cache's failure to write, when one failed (a read-only cache).
pub(crate) fn put_note(key: &CacheKey, note: &[u8]) -> Result<()> {
    let mut stored = Ok(());
    for root in roots() {
        if let Err(error) = notes::write_in(&root, key, note) {
            stored = Err(error);
        }
    }
    stored
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use super::{find_note, put_note, register, roots};
    use crate::cache::{CacheKey, FileStreamProgramCache, ProgramCache};

    /// A cache's note is found while the cache is open, and no longer once it is dropped; a
    /// note is written to every open cache.
    #[test]
    fn notes_are_those_of_the_caches_open_now() {
        let key = CacheKey::from_bytes([0x5a; 32]);
        let (first, second) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let cache = FileStreamProgramCache::new(first.path()).unwrap();
        cache.put_note(&key, b"first").unwrap();
        let found = find_note(&key, |note| (note == b"first").then_some(7));
        assert_eq!(found, Some((b"first".to_vec(), 7)));
        assert_eq!(find_note(&key, |_| None::<()>), None, "refused by `accept`");

        let other = FileStreamProgramCache::new(second.path()).unwrap();
        put_note(&key, b"both").unwrap();
        assert_eq!(other.get_note(&key).as_deref(), Some(&b"both"[..]));
        assert_eq!(cache.get_note(&key).as_deref(), Some(&b"both"[..]));
        drop((cache, other));
        let open: Vec<Arc<Path>> = roots();
        assert!(
            !open.iter().any(|root| **root == *first.path()),
            "a dropped cache is not open"
        );
        // A root registered twice is read once.
        let root: Arc<Path> = Arc::from(first.path());
        register(&root);
        register(&root);
        let count = roots()
            .iter()
            .filter(|open| ***open == *first.path())
            .count();
        assert_eq!(count, 1);
    }
}
