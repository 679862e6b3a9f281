//! File inputs are read once: `LinkInput::from_file_as` and `ObjectCode::from_file` hold a
//! file's bytes once (the buffer the file is read into, sized from its length with room for
//! PTX's NUL, is the one kept), not twice over as before (2.05 GB resident for a file at the
//! 1 GiB cap); an empty file is refused, naming it, before the driver or nvJitLink sees it.
//!
//! A counting global allocator measures the most bytes live at once during each call. Nothing
//! here reaches a library, so no GPU is needed.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use cuda_safe::{Error, LinkInput, LinkInputKind, ObjectCode};

/// The system allocator, counting the bytes live and the most live at once.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// Counts `size` more bytes live.
fn grew(size: usize) {
    let now = LIVE.fetch_add(size, Ordering::SeqCst) + size;
    PEAK.fetch_max(now, Ordering::SeqCst);
}

// SAFETY: every call is passed on to the system allocator with the caller's own arguments;
// the counting around it allocates nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's promise for `layout`, passed on.
        let pointer = unsafe { System.alloc(layout) };
        if !pointer.is_null() {
            grew(layout.size());
        }
        pointer
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`.
        let pointer = unsafe { System.alloc_zeroed(layout) };
        if !pointer.is_null() {
            grew(layout.size());
        }
        pointer
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        // SAFETY: `pointer` came from this allocator (so the system's) with `layout`.
        unsafe { System.dealloc(pointer, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::SeqCst);
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as `dealloc`, and the caller's promise for `new_size`.
        let moved = unsafe { System.realloc(pointer, layout, new_size) };
        if !moved.is_null() {
            // Both blocks may be live at once while the bytes move: counted so.
            grew(new_size);
            LIVE.fetch_sub(layout.size(), Ordering::SeqCst);
        }
        moved
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// One test at a time: the tests of this binary run on several threads, and one's allocations
/// would count in another's measurement.
static ALONE: Mutex<()> = Mutex::new(());

/// Holds [`ALONE`] for the rest of a test.
fn alone() -> std::sync::MutexGuard<'static, ()> {
    ALONE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// What `call` returns and the most bytes live at once while it ran, above those live before.
fn peak_during<T>(call: impl FnOnce() -> T) -> (T, usize) {
    let base = LIVE.load(Ordering::SeqCst);
    PEAK.store(base, Ordering::SeqCst);
    let result = call();
    (result, PEAK.load(Ordering::SeqCst).saturating_sub(base))
}

/// The file size the tests read: large enough that a second copy stands out.
const SIZE: usize = 32 << 20;

/// What a call may hold beside the file's bytes: its error message, names, the `Arc` header.
const SLACK: usize = 1 << 20;

/// Writes `bytes` to `name` in `dir`.
fn file(dir: &Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("write the input");
    path
}

#[test]
fn a_link_input_holds_its_file_once() {
    let _alone = alone();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let text = vec![b'a'; SIZE];
    let path = file(dir.path(), "big.input", &text);
    drop(text);
    for (kind, len) in [
        (LinkInputKind::Cubin, SIZE),
        // PTX gets its NUL in the spare byte of the buffer read, not in a copy.
        (LinkInputKind::Ptx, SIZE + 1),
    ] {
        let (input, peak) = peak_during(|| LinkInput::from_file_as(&path, kind));
        let input = input.expect("the file reads");
        println!("{kind:?}: {peak} bytes live at once for a file of {SIZE}");
        assert_eq!(input.bytes().len(), len, "{kind:?}");
        assert!(
            peak <= SIZE + SLACK,
            "{kind:?}: {peak} bytes live at once for a file of {SIZE}"
        );
    }
}

#[test]
fn object_code_reads_a_ptx_file_once() {
    let _alone = alone();
    let dir = tempfile::tempdir().expect("a temporary directory");
    // PTX text (no ELF or fatbin magic) with a NUL inside: refused by the crate's own check,
    // after the file is read and before any library is asked.
    let mut text = vec![b'a'; SIZE];
    text[SIZE / 2] = 0;
    let path = file(dir.path(), "big.ptx", &text);
    drop(text);
    let (result, peak) = peak_during(|| ObjectCode::from_file(&path));
    println!("ObjectCode::from_file: {peak} bytes live at once for a file of {SIZE}");
    match result {
        Err(Error::InvalidArgument(what)) => {
            assert!(what.contains("NUL byte before its end"), "{what}");
        }
        other => panic!("not refused for its NUL: {other:?}"),
    }
    assert!(
        peak <= SIZE + SLACK,
        "{peak} bytes live at once for a file of {SIZE}"
    );
}

#[test]
fn an_empty_file_is_refused_naming_it_before_any_library() {
    let _alone = alone();
    let dir = tempfile::tempdir().expect("a temporary directory");
    for name in ["empty.ptx", "empty.cubin"] {
        let path = file(dir.path(), name, b"");
        let shown = path.display().to_string();
        let refused = |error: Error| match error {
            Error::InvalidArgument(what) => {
                assert!(
                    what.contains(&shown) && what.contains("it is empty"),
                    "{what}"
                );
            }
            other => panic!("{shown}: not an invalid argument: {other:?}"),
        };
        refused(ObjectCode::from_file(&path).expect_err("an empty file"));
        refused(LinkInput::from_file(&path).expect_err("an empty file"));
    }
}
