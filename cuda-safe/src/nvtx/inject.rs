//! The NVTX v3 injection protocol, as NVIDIA's header-only NVTX implements it
//! (`nvtxDetail/nvtxInit.h`, `nvtxDetail/nvtxImpl.h`, `nvtxDetail/nvtxTypes.h`), without the
//! headers: the tool's library named by `NVTX_INJECTION64_PATH`, its
//! `InitializeInjectionNvtx2`, the export tables it asks for, and the tables of function
//! slots it fills.
//!
//! The state is one atomic: unknown (nothing asked yet), off (no tool) or on. Off costs the
//! callers one relaxed load; the first call of the process loads the tool (once, whichever
//! thread gets there first). The slots are read at each call, as NVTX's own globals are, so a
//! tool that leaves one empty (or empties it later) is simply not called for it.

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::mem::MaybeUninit;
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicU8, Ordering, fence};
use std::sync::{Once, OnceLock};

use cuda_sys::{EntryPoint, Library, LibrarySpec};

/// The variable naming the tool's injection library (`NVTX_INJECTION32_PATH` in a 32-bit
/// process), as NVTX reads it.
pub(crate) const ENV_VAR: &str = if cfg!(target_pointer_width = "32") {
    "NVTX_INJECTION32_PATH"
} else {
    "NVTX_INJECTION64_PATH"
};

/// The tool's library: only the path of [`ENV_VAR`], never searched for.
const SPEC: LibrarySpec = LibrarySpec {
    name: "the NVTX injection library (a profiler's, named by NVTX_INJECTION64_PATH)",
    env_var: ENV_VAR,
    file_names: &[],
    search_dirs: &[],
    wheel_dirs: &[],
    global: false,
};

/// The tool's one entry point.
static ENTRY_POINTS: [EntryPoint; 1] = [EntryPoint::new(c"InitializeInjectionNvtx2", None)];

/// `NvtxGetExportTableFunc_t`.
type GetExportTable = unsafe extern "C" fn(u32) -> *const c_void;
/// `NvtxInitializeInjectionNvtxFunc_t`: nonzero when the tool attached.
type InitializeInjection = unsafe extern "C" fn(GetExportTable) -> c_int;

/// `nvtxDomainHandle_t` and `nvtxStringHandle_t`: the tool's pointers, opaque here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(transparent)]
pub(crate) struct Handle(pub(crate) *mut c_void);

// SAFETY: a domain or registered-string handle is the tool's token for an object that NVTX's
// API lets any thread use (its calls are thread-safe); this crate never dereferences it.
unsafe impl Send for Handle {}
// SAFETY: as for `Send`: shared use passes the same token to thread-safe calls.
unsafe impl Sync for Handle {}

impl Handle {
    /// No handle: NVTX's default domain, or nothing registered.
    pub(crate) const NULL: Self = Self(ptr::null_mut());
}

/// `nvtxEventAttributes_v2`'s payload union.
#[derive(Clone, Copy)]
#[repr(C)]
#[allow(missing_debug_implementations)]
pub(crate) union RawPayload {
    pub(crate) u64: u64,
    pub(crate) i64: i64,
    pub(crate) f64: f64,
    pub(crate) u32: u32,
    pub(crate) i32: i32,
    pub(crate) f32: f32,
}

/// `nvtxEventAttributes_v2` (`nvtxEventAttributes_t`), field for field.
#[repr(C)]
#[allow(missing_debug_implementations)]
pub(crate) struct RawAttributes {
    pub(crate) version: u16,
    pub(crate) size: u16,
    pub(crate) category: u32,
    pub(crate) color_type: i32,
    pub(crate) color: u32,
    pub(crate) payload_type: i32,
    pub(crate) reserved0: i32,
    pub(crate) payload: RawPayload,
    pub(crate) message_type: i32,
    pub(crate) message: *const c_void,
}

#[cfg(target_pointer_width = "64")]
const _: () = assert!(size_of::<RawAttributes>() == 48);

/// `NVTX_VERSION`, which `RawAttributes::version` carries.
pub(crate) const NVTX_VERSION: u16 = 3;
/// `NVTX_COLOR_ARGB`.
pub(crate) const COLOR_ARGB: i32 = 1;
/// `NVTX_MESSAGE_TYPE_ASCII`.
pub(crate) const MESSAGE_ASCII: i32 = 1;
/// `NVTX_MESSAGE_TYPE_REGISTERED`.
pub(crate) const MESSAGE_REGISTERED: i32 = 3;

/// A table of function slots the tool fills: `NvtxFunctionPointer*` per callback id, id 0
/// unused, and a null after the last (as NVTX's, so a tool reading past the end crashes
/// instead of writing somewhere). In writable memory, as NVTX's globals are.
#[repr(transparent)]
struct Table<const N: usize>(std::cell::UnsafeCell<[*const AtomicPtr<c_void>; N]>);

// SAFETY: the table is written only by its initialiser; the tool reads it and writes through
// its pointers into `AtomicPtr` slots.
unsafe impl<const N: usize> Sync for Table<N> {}

/// One module's slots (`$slots`, `$size` = `NVTX_CBID_<MODULE>_SIZE`) and the table of
/// pointers to them (`$table`) that the tool receives.
macro_rules! module {
    ($slots:ident, $table:ident, $size:literal) => {
        static $slots: [AtomicPtr<c_void>; $size] =
            [const { AtomicPtr::new(ptr::null_mut()) }; $size];
        static $table: Table<{ $size + 1 }> = Table(std::cell::UnsafeCell::new({
            let mut table = [ptr::null(); $size + 1];
            let mut id = 1;
            while id < $size {
                table[id] = &$slots[id];
                id += 1;
            }
            table
        }));
    };
}

// NVTX_CB_MODULE_CORE (1) to NVTX_CB_MODULE_SYNC (6). The CUDA, OpenCL, CUDA runtime and sync
// modules' slots are offered (a tool may ask for every module) but never called.
module!(CORE, CORE_TABLE, 16);
module!(CUDA, CUDA_TABLE, 9);
module!(OPENCL, OPENCL_TABLE, 15);
module!(CUDART, CUDART_TABLE, 7);
module!(CORE2, CORE2_TABLE, 16);
module!(SYNC, SYNC_TABLE, 7);

/// `NvtxExportTableCallbacks`.
#[repr(C)]
struct ExportTableCallbacks {
    struct_size: usize,
    get_module_function_table:
        unsafe extern "C" fn(c_int, *mut *mut *const AtomicPtr<c_void>, *mut c_uint) -> c_int,
}

/// `NvtxExportTableVersionInfo`.
#[repr(C)]
struct ExportTableVersionInfo {
    struct_size: usize,
    version: u32,
    reserved0: u32,
    set_injection_nvtx_version: unsafe extern "C" fn(u32),
}

/// `NVTX_ETID_CALLBACKS`.
static CALLBACKS: ExportTableCallbacks = ExportTableCallbacks {
    struct_size: size_of::<ExportTableCallbacks>(),
    get_module_function_table,
};

/// `NVTX_ETID_VERSIONINFO`.
static VERSION_INFO: ExportTableVersionInfo = ExportTableVersionInfo {
    struct_size: size_of::<ExportTableVersionInfo>(),
    version: NVTX_VERSION as u32,
    reserved0: 0,
    set_injection_nvtx_version,
};

/// `nvtxGetExportTable`: `NVTX_ETID_CALLBACKS` (1) and `NVTX_ETID_VERSIONINFO` (3).
unsafe extern "C" fn get_export_table(id: u32) -> *const c_void {
    match id {
        1 => (&raw const CALLBACKS).cast(),
        3 => (&raw const VERSION_INFO).cast(),
        _ => ptr::null(),
    }
}

/// `nvtxEtiSetInjectionNvtxVersion`: reserved, ignored (as NVTX does).
unsafe extern "C" fn set_injection_nvtx_version(_version: u32) {}

/// `nvtxEtiGetModuleFunctionTable`: the module's table and its number of entries (the
/// callback ids, 0 included, without the trailing null); 0 for an unknown module.
unsafe extern "C" fn get_module_function_table(
    module: c_int,
    out_table: *mut *mut *const AtomicPtr<c_void>,
    out_size: *mut c_uint,
) -> c_int {
    let (table, size) = match module {
        1 => (CORE_TABLE.0.get().cast(), CORE.len()),
        2 => (CUDA_TABLE.0.get().cast(), CUDA.len()),
        3 => (OPENCL_TABLE.0.get().cast(), OPENCL.len()),
        4 => (CUDART_TABLE.0.get().cast(), CUDART.len()),
        5 => (CORE2_TABLE.0.get().cast(), CORE2.len()),
        6 => (SYNC_TABLE.0.get().cast(), SYNC.len()),
        _ => return 0,
    };
    if !out_size.is_null() {
        // SAFETY: the tool passes a writable `unsigned int` (or null, checked).
        unsafe { *out_size = size as c_uint };
    }
    if !out_table.is_null() {
        // SAFETY: the tool passes a writable `NvtxFunctionTable` (or null, checked).
        unsafe { *out_table = table };
    }
    1
}

/// Nothing asked yet.
const UNKNOWN: u8 = 0;
/// No tool: every call returns at once.
const OFF: u8 = 1;
/// A tool attached: calls go to its slots.
const ON: u8 = 2;

static STATE: AtomicU8 = AtomicU8::new(UNKNOWN);
static INIT: Once = Once::new();
/// The tool's library, kept loaded for the life of the process (its functions are in the
/// slots).
static LIBRARY: OnceLock<Library<1>> = OnceLock::new();

/// Proof that a tool attached: the calls are on it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tool(());

/// The tool, or `None` without one: one relaxed load once the process has asked.
#[inline(always)]
pub(crate) fn tool() -> Option<Tool> {
    let state = STATE.load(Ordering::Relaxed);
    if state == OFF {
        return None;
    }
    attached(state)
}

/// The tool when `state` (just read) is not off.
#[inline]
fn attached(state: u8) -> Option<Tool> {
    if state == ON {
        // Pairs with the release store of `initialize`: the slots the tool wrote are seen.
        fence(Ordering::Acquire);
        return Some(Tool(()));
    }
    initialize()
}

/// The first call of the process: load the tool, once.
#[cold]
#[inline(never)]
fn initialize() -> Option<Tool> {
    INIT.call_once(|| {
        let on = load_tool();
        #[cfg(test)]
        tests_hook::INITIALIZED.fetch_add(1, Ordering::Relaxed);
        STATE.store(if on { ON } else { OFF }, Ordering::Release);
    });
    (STATE.load(Ordering::Acquire) == ON).then_some(Tool(()))
}

/// Loads the tool named by [`ENV_VAR`] and calls its `InitializeInjectionNvtx2`; whether it
/// attached. A missing or unloadable library, or one that refuses, is logged and leaves NVTX
/// off.
fn load_tool() -> bool {
    if std::env::var_os(ENV_VAR).is_none_or(|path| path.is_empty()) {
        return false;
    }
    // SAFETY: the library is the one the user (or the profiler that started this process)
    // named as the NVTX injection: its initialisers are meant to run in any NVTX client, and
    // NVTX's protocol gives `InitializeInjectionNvtx2` the signature of `InitializeInjection`.
    let library = match unsafe { Library::open(&SPEC, &ENTRY_POINTS) } {
        Ok(library) => library,
        Err(error) => {
            log::warn!("NVTX stays off: {error}");
            return false;
        }
    };
    let library = LIBRARY.get_or_init(|| library);
    // SAFETY: `InitializeInjection` is the entry point's C signature (above); the library is
    // kept loaded in `LIBRARY` for the rest of the process.
    let init = match unsafe { library.get::<InitializeInjection>(0) } {
        Ok(init) => init,
        Err(error) => {
            log::warn!("NVTX stays off: {error}");
            return false;
        }
    };
    // SAFETY: the protocol's call: the tool asks `get_export_table` for the tables above and
    // writes function pointers into their slots, which live for the process.
    let attached = unsafe { init(get_export_table) } != 0;
    if !attached {
        log::warn!(
            "NVTX stays off: the tool's InitializeInjectionNvtx2 ({}) returned 0",
            library.path().display()
        );
        for slot in [&CORE[..], &CUDA, &OPENCL, &CUDART, &CORE2, &SYNC]
            .into_iter()
            .flatten()
        {
            slot.store(ptr::null_mut(), Ordering::Relaxed);
        }
    }
    attached
}

/// Each NVTX call this crate makes: `name = SLOTS[id]: fn(args) -> ret;`, a method of
/// [`Tool`] calling the slot when the tool filled it (`None` when it did not).
macro_rules! calls {
    ($($(#[$doc:meta])* $name:ident = $slots:ident[$id:literal]: fn($($arg:ident: $ty:ty),*) -> $ret:ty;)*) => {
        impl Tool {
            $(
                $(#[$doc])*
                ///
                /// # Safety
                ///
                /// Every pointer argument must be valid for the call: NUL-terminated text,
                /// attributes whose message is valid, a handle this tool returned.
                #[inline]
                pub(crate) unsafe fn $name(self, $($arg: $ty),*) -> Option<$ret> {
                    #[cfg(test)]
                    tests_hook::CALLED.fetch_add(1, Ordering::Relaxed);
                    let function = $slots[$id].load(Ordering::Relaxed);
                    if function.is_null() {
                        return None;
                    }
                    // SAFETY: the tool wrote into slot `$id` of this module a function of the
                    // signature NVTX's `nvtxTypes.h` gives that callback id.
                    let function = unsafe {
                        std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($ty),*) -> $ret>(
                            function,
                        )
                    };
                    // SAFETY: the arguments are valid, per the caller.
                    Some(unsafe { function($($arg),*) })
                }
            )*
        }
    };
}

calls! {
    /// `nvtxMarkEx`.
    mark_ex = CORE[1]: fn(attributes: *const RawAttributes) -> ();
    /// `nvtxMarkA`.
    mark_a = CORE[2]: fn(message: *const c_char) -> ();
    /// `nvtxRangeStartEx`.
    range_start_ex = CORE[4]: fn(attributes: *const RawAttributes) -> u64;
    /// `nvtxRangeStartA`.
    range_start_a = CORE[5]: fn(message: *const c_char) -> u64;
    /// `nvtxRangeEnd`.
    range_end = CORE[7]: fn(id: u64) -> ();
    /// `nvtxRangePushEx`.
    range_push_ex = CORE[8]: fn(attributes: *const RawAttributes) -> c_int;
    /// `nvtxRangePushA`.
    range_push_a = CORE[9]: fn(message: *const c_char) -> c_int;
    /// `nvtxRangePop`.
    range_pop = CORE[11]: fn() -> c_int;
    /// `nvtxNameCategoryA`.
    name_category_a = CORE[12]: fn(category: u32, name: *const c_char) -> ();
    /// `nvtxDomainMarkEx`.
    domain_mark_ex = CORE2[1]: fn(domain: Handle, attributes: *const RawAttributes) -> ();
    /// `nvtxDomainRangeStartEx`.
    domain_range_start_ex = CORE2[2]: fn(domain: Handle, attributes: *const RawAttributes) -> u64;
    /// `nvtxDomainRangeEnd`.
    domain_range_end = CORE2[3]: fn(domain: Handle, id: u64) -> ();
    /// `nvtxDomainRangePushEx`.
    domain_range_push_ex = CORE2[4]: fn(domain: Handle, attributes: *const RawAttributes) -> c_int;
    /// `nvtxDomainRangePop`.
    domain_range_pop = CORE2[5]: fn(domain: Handle) -> c_int;
    /// `nvtxDomainNameCategoryA`.
    domain_name_category_a = CORE2[8]: fn(domain: Handle, category: u32, name: *const c_char) -> ();
    /// `nvtxDomainRegisterStringA`.
    domain_register_string_a = CORE2[10]: fn(domain: Handle, text: *const c_char) -> Handle;
    /// `nvtxDomainCreateA`.
    domain_create_a = CORE2[12]: fn(name: *const c_char) -> Handle;
    /// `nvtxDomainDestroy`.
    domain_destroy = CORE2[14]: fn(domain: Handle) -> ();
}

/// Names up to this many bytes are copied on the stack; longer ones allocate.
const STACK_TEXT: usize = 256;

/// Calls `f` with `text` as a NUL-terminated C string: copied on the stack when shorter than
/// [`STACK_TEXT`] bytes, else into a heap buffer. A NUL inside `text` ends the C string there.
/// Only called with a tool attached.
#[inline]
pub(crate) fn with_c_str<R>(text: &str, f: impl FnOnce(*const c_char) -> R) -> R {
    #[cfg(test)]
    tests_hook::CALLED.fetch_add(1, Ordering::Relaxed);
    let bytes = text.as_bytes();
    if bytes.len() < STACK_TEXT {
        let mut buffer = [MaybeUninit::<u8>::uninit(); STACK_TEXT];
        // SAFETY: `bytes.len() + 1 <= STACK_TEXT`: the bytes and the NUL fit in the buffer,
        // which does not overlap `text`.
        unsafe {
            ptr::copy_nonoverlapping(bytes.as_ptr(), buffer.as_mut_ptr().cast(), bytes.len());
            buffer
                .as_mut_ptr()
                .add(bytes.len())
                .write(MaybeUninit::new(0));
        }
        f(buffer.as_ptr().cast())
    } else {
        let mut owned = Vec::with_capacity(bytes.len() + 1);
        owned.extend_from_slice(bytes);
        owned.push(0);
        f(owned.as_ptr().cast())
    }
}

/// Counters the unit tests read: how often the process initialised, and how often a call went
/// further than the state check (a slot read or a C string built).
#[cfg(test)]
pub(crate) mod tests_hook {
    use std::sync::atomic::AtomicUsize;

    /// Times the tool was looked for (once per process).
    pub(crate) static INITIALIZED: AtomicUsize = AtomicUsize::new(0);
    /// Calls past the state check: slots read or C strings built.
    pub(crate) static CALLED: AtomicUsize = AtomicUsize::new(0);
}
