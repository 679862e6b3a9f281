//! An opened library and its lazily resolved entry points.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::open::open_first_candidate;
use crate::{EntryPoint, LibrarySpec, LoadError};

/// A loaded library with `N` entry points, each resolved on first use and then cached.
///
/// The `-sys` crates keep one `Library` per process in a static, so the addresses handed out by
/// [`get`](Self::get) stay valid for the life of the process. Resolution is thread-safe: two
/// threads racing to resolve the same entry point store the same address.
#[derive(Debug)]
pub struct Library<const N: usize> {
    name: &'static str,
    path: PathBuf,
    entry_points: &'static [EntryPoint; N],
    slots: [AtomicUsize; N],
    library: libloading::Library,
}

/// Slot value of an entry point not looked up yet.
const UNRESOLVED: usize = 0;

/// Slot value of an entry point looked up and found missing, so `dlsym` is not asked again.
///
/// No function lives at address 1, so the value cannot collide with a resolved address.
const MISSING: usize = 1;

impl<const N: usize> Library<N> {
    /// Opens the library described by `spec`, trying each of its candidates in order.
    ///
    /// # Safety
    ///
    /// Opening a library runs its initialisers, and the methods built on the result call its
    /// symbols with the signatures `entry_points` claims. Every candidate of `spec` must be a
    /// library whose initialisers are sound to run in this process (at this point, from any
    /// thread), and whose exported symbols named in `entry_points` have the C signatures the
    /// callers of [`get`](Self::get) will use.
    pub unsafe fn open(
        spec: &LibrarySpec,
        entry_points: &'static [EntryPoint; N],
    ) -> Result<Self, LoadError> {
        // SAFETY: the caller vouches for every candidate of `spec`, as `open_first` requires.
        unsafe { Self::open_candidates(spec.name, spec.candidates(), entry_points, spec.global) }
    }

    /// Opens the first of `candidates` that the dynamic loader accepts, as a [`LibrarySpec`]
    /// with `global: false` is opened (`RTLD_LAZY | RTLD_LOCAL`).
    ///
    /// The error lists every candidate tried and the loader's reason for each.
    ///
    /// # Safety
    ///
    /// Opening a library runs its initialisers, and the methods built on the result call its
    /// symbols with the signatures `entry_points` claims. Every candidate must be a library whose
    /// initialisers are sound to run in this process (at this point, from any thread), and whose
    /// exported symbols named in `entry_points` have the C signatures the callers of
    /// [`get`](Self::get) will use.
    pub unsafe fn open_first(
        name: &'static str,
        candidates: impl IntoIterator<Item = PathBuf>,
        entry_points: &'static [EntryPoint; N],
    ) -> Result<Self, LoadError> {
        // SAFETY: the caller's promise, as this function requires.
        unsafe { Self::open_candidates(name, candidates, entry_points, false) }
    }

    /// [`open_first`](Self::open_first), with the symbols in the global scope when `global`.
    ///
    /// # Safety
    ///
    /// As [`open_first`](Self::open_first).
    unsafe fn open_candidates(
        name: &'static str,
        candidates: impl IntoIterator<Item = PathBuf>,
        entry_points: &'static [EntryPoint; N],
        global: bool,
    ) -> Result<Self, LoadError> {
        // SAFETY: the caller vouches for every candidate, as `open_first_candidate` requires.
        let (path, library) = unsafe { open_first_candidate(name, candidates, global) }?;
        Ok(Self {
            name,
            path,
            entry_points,
            slots: [const { AtomicUsize::new(UNRESOLVED) }; N],
            library,
        })
    }

    /// The library's display name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The path or file name the library was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The entry points this library was opened with.
    pub fn entry_points(&self) -> &'static [EntryPoint; N] {
        self.entry_points
    }

    /// Whether the entry point at `index` exists in the loaded library (resolving it if needed).
    pub fn has(&self, index: usize) -> bool {
        self.resolve(index) != MISSING
    }

    /// The entry point at `index` as a function pointer of type `F`.
    ///
    /// The first call looks the symbol up; later calls cost one relaxed atomic load. A symbol
    /// found missing is remembered as such, so later calls fail without asking the dynamic
    /// loader again.
    ///
    /// # Safety
    ///
    /// `F` must be the exact C signature of `entry_points[index]`, and the pointer must not be
    /// called after this `Library` is dropped.
    ///
    /// # Panics
    ///
    /// Panics if `index >= N` (the generated callers only pass constant, in-range indices).
    #[inline(always)]
    pub unsafe fn get<F: Copy>(&self, index: usize) -> Result<F, LoadError> {
        const { assert!(size_of::<F>() == size_of::<usize>()) };
        // Relaxed is enough: the value is UNRESOLVED, MISSING or an address inside a library
        // that was fully mapped before this `Library` was published to other threads.
        let address = self.slots[index].load(Ordering::Relaxed);
        let address = if address <= MISSING {
            self.address(index)?
        } else {
            address
        };
        // SAFETY: `address` is the non-null address of the symbol, and the caller promises that
        // `F` is a function pointer type with its C signature (same size, asserted above).
        Ok(unsafe { std::mem::transmute_copy::<usize, F>(&address) })
    }

    /// The address of the entry point at `index`, or the error naming it when it is missing.
    #[cold]
    #[inline(never)]
    fn address(&self, index: usize) -> Result<usize, LoadError> {
        let address = self.resolve(index);
        if address == MISSING {
            let entry = &self.entry_points[index];
            return Err(LoadError::SymbolMissing {
                library: self.name,
                path: self.path.clone(),
                symbol: entry.name(),
                since: entry.introduced(),
            });
        }
        Ok(address)
    }

    /// The slot of the entry point at `index`, looking the symbol up the first time only: the
    /// result, an address or [`MISSING`], is stored so the dynamic loader is asked once.
    fn resolve(&self, index: usize) -> usize {
        let cached = self.slots[index].load(Ordering::Relaxed);
        if cached != UNRESOLVED {
            return cached;
        }
        let entry = &self.entry_points[index];
        // SAFETY: the symbol is only read as an address here; `get`'s caller states its type.
        let found = unsafe { self.library.get::<*mut std::ffi::c_void>(entry.symbol()) };
        let address = match found {
            Ok(symbol) if *symbol as usize > MISSING => *symbol as usize,
            _ => MISSING,
        };
        self.slots[index].store(address, Ordering::Relaxed);
        address
    }
}

#[cfg(test)]
mod tests {
    use super::{Library, MISSING, UNRESOLVED};
    use crate::{EntryPoint, LoadError};
    use std::path::PathBuf;
    use std::sync::atomic::Ordering;

    static LIBC_ENTRY_POINTS: [EntryPoint; 3] = [
        EntryPoint::new(c"getpid", None),
        EntryPoint::new(c"cuNoSuchEntryPoint_v9", Some(12040)),
        EntryPoint::nccl(c"ncclNoSuchEntryPoint", Some(21800)),
    ];

    fn libc() -> Library<3> {
        // SAFETY: libc's initialisers have run already in this process; only lookups happen,
        // and the only function ever called is `getpid`, with its real signature.
        unsafe { Library::open_first("libc", [PathBuf::from("libc.so.6")], &LIBC_ENTRY_POINTS) }
            .expect("libc.so.6 loads on every Linux test machine")
    }

    #[test]
    fn present_symbol_resolves_and_is_callable() {
        let library = libc();
        // SAFETY: `getpid` has this signature in every libc.
        let getpid = unsafe { library.get::<unsafe extern "C" fn() -> i32>(0) }.unwrap();
        // SAFETY: getpid has no preconditions.
        let pid = unsafe { getpid() };
        assert_eq!(pid as u32, std::process::id());
        // The second lookup comes from the cache and gives the same address.
        // SAFETY: as above.
        let again = unsafe { library.get::<unsafe extern "C" fn() -> i32>(0) }.unwrap();
        assert_eq!(getpid as usize, again as usize);
        assert!(library.has(0));
    }

    #[test]
    fn missing_symbol_is_a_typed_error_naming_it() {
        let library = libc();
        assert!(!library.has(1));
        // SAFETY: never called; the lookup fails.
        let error = unsafe { library.get::<unsafe extern "C" fn() -> i32>(1) }.unwrap_err();
        match &error {
            LoadError::SymbolMissing {
                symbol,
                since,
                path,
                ..
            } => {
                assert_eq!(*symbol, "cuNoSuchEntryPoint_v9");
                assert_eq!(since.and_then(|v| v.cuda()).map(|v| v.0), Some(12040));
                assert_eq!(path, &PathBuf::from("libc.so.6"));
            }
            other => panic!("wrong error: {other:?}"),
        }
        let message = error.to_string();
        assert!(message.contains("cuNoSuchEntryPoint_v9"), "{message}");
        assert!(message.contains("CUDA 12.4"), "{message}");
    }

    #[test]
    fn a_missing_nccl_symbol_names_the_nccl_release() {
        let library = libc();
        assert_eq!(library.entry_points()[2].since(), None);
        // SAFETY: never called; the lookup fails.
        let error = unsafe { library.get::<unsafe extern "C" fn() -> i32>(2) }.unwrap_err();
        let message = error.to_string();
        assert!(
            message.contains("introduced in NCCL 2.18; update NCCL"),
            "{message}"
        );
    }

    #[test]
    fn a_missing_symbol_is_remembered_and_still_reported() {
        let library = libc();
        assert_eq!(library.slots[1].load(Ordering::Relaxed), UNRESOLVED);
        // SAFETY: never called; the lookup fails.
        let first = unsafe { library.get::<unsafe extern "C" fn() -> i32>(1) }.unwrap_err();
        // The slot now records the miss, so later calls skip `dlsym`.
        assert_eq!(library.slots[1].load(Ordering::Relaxed), MISSING);
        for _ in 0..3 {
            // SAFETY: as above.
            let again = unsafe { library.get::<unsafe extern "C" fn() -> i32>(1) }.unwrap_err();
            assert_eq!(again, first);
            assert!(!library.has(1));
        }
        assert_eq!(library.slots[1].load(Ordering::Relaxed), MISSING);
        // The present symbol's slot is untouched by the miss and resolves to a real address.
        assert!(library.has(0));
        assert!(library.slots[0].load(Ordering::Relaxed) > MISSING);
    }

    #[test]
    fn has_remembers_a_miss_before_any_get() {
        let library = libc();
        assert!(!library.has(1));
        assert_eq!(library.slots[1].load(Ordering::Relaxed), MISSING);
        // SAFETY: never called; the lookup fails.
        let error = unsafe { library.get::<unsafe extern "C" fn() -> i32>(1) }.unwrap_err();
        assert!(matches!(
            error,
            LoadError::SymbolMissing {
                symbol: "cuNoSuchEntryPoint_v9",
                ..
            }
        ));
    }

    #[test]
    fn library_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Library<3>>();
    }
}
