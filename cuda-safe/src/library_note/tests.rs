use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use cuda_sys::LibrarySpec;

use super::search::{Search, note_for_tests};
use super::{KeyVersion, Learner, Loaded, Notes};
use crate::cache::{InMemoryProgramCache, ProgramCache};
use crate::error::{Error, Result};

/// A library no system has: a learner for it learns from notes or fails to ask.
static NOWHERE: LibrarySpec = LibrarySpec {
    name: "a test's stand-in library",
    env_var: "CUDA_SAFE_TEST_NO_SUCH_LIBRARY",
    file_names: &["libcuda-safe-no-such-library.so.1"],
    search_dirs: &[],
    wheel_dirs: &[],
    global: false,
};

fn fails() -> Result<String> {
    Err(Error::invalid_argument(
        "the stand-in library cannot be asked",
    ))
}

fn not_loaded() -> Option<Loaded> {
    None
}

/// A note for a stand-in library file recalls its version without asking the library, once
/// per process; a cache without the note asks it (here: fails).
#[test]
fn a_note_gives_the_version_without_asking_the_library() {
    static LEARNER: Learner = Learner::new(&NOWHERE, "stand-in", fails, not_loaded, false);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("libcuda-safe-no-such-library.so.1");
    std::fs::write(&file, b"a stand-in").unwrap();
    let search = Search::opening_for_tests(&NOWHERE, &file);
    let cache = InMemoryProgramCache::default();
    cache
        .put_note(&search.note_key(), &note_for_tests(&file, "99.1"))
        .unwrap();
    assert_eq!(LEARNER.known(), None);
    let learnt = LEARNER.learn(Notes::In(&cache), Some(&search)).unwrap();
    let expected = KeyVersion {
        version: "99.1",
        recalled: true,
    };
    assert_eq!(learnt, expected);
    // Kept for the process: no second look at a note.
    assert_eq!(LEARNER.known(), Some(expected));
    let again = LEARNER.learn(Notes::Open, None).unwrap();
    assert_eq!(again, expected);
}

/// A changed file is no recall: the library is asked (and its failure returned, then kept).
#[test]
fn a_changed_file_asks_the_library_once() {
    static ASKED: AtomicUsize = AtomicUsize::new(0);
    fn counted() -> Result<String> {
        ASKED.fetch_add(1, Ordering::Relaxed);
        fails()
    }
    static LEARNER: Learner = Learner::new(&NOWHERE, "stand-in", counted, not_loaded, false);
    let dir = tempfile::tempdir().unwrap();
    let file: PathBuf = dir.path().join("libcuda-safe-no-such-library.so.1");
    std::fs::write(&file, b"a stand-in").unwrap();
    let search = Search::opening_for_tests(&NOWHERE, &file);
    let cache = InMemoryProgramCache::default();
    cache
        .put_note(&search.note_key(), &note_for_tests(&file, "99.1"))
        .unwrap();
    std::fs::write(&file, b"replaced in place").unwrap();
    let error = LEARNER.learn(Notes::In(&cache), Some(&search)).unwrap_err();
    assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
    assert_eq!(LEARNER.known(), None, "a changed file is no recall");
    assert!(LEARNER.learn(Notes::In(&cache), Some(&search)).is_err());
    assert_eq!(ASKED.load(Ordering::Relaxed), 1, "the answer is kept");
}

/// A recalled version that the library contradicts is reported, with the right one.
#[test]
fn a_wrong_recall_is_found_out_by_the_check() {
    fn says() -> Result<String> {
        Ok("12.6".to_owned())
    }
    static LEARNER: Learner = Learner::new(&NOWHERE, "stand-in", says, not_loaded, false);
    let cache = InMemoryProgramCache::default();
    assert_eq!(LEARNER.check(&cache, "12.6").unwrap(), None);
    assert_eq!(LEARNER.check(&cache, "12.4").unwrap(), Some("12.6"));
    assert_eq!(
        LEARNER.known(),
        Some(KeyVersion {
            version: "12.6",
            recalled: false
        })
    );
}
