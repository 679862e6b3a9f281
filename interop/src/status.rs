//! Return codes and the thread's last error message.

use std::cell::RefCell;
use std::ffi::{CString, c_char, c_int};

use cuda_safe::Error;

/// Success.
pub(crate) const OK: c_int = 0;
/// The tensor or an argument was refused ([`Error::InvalidArgument`]).
pub(crate) const INVALID_ARGUMENT: c_int = -1;
/// The driver, toolkit or DLPack version cannot do it ([`Error::Unsupported`]).
pub(crate) const UNSUPPORTED: c_int = -2;
/// A CUDA driver call failed.
pub(crate) const CUDA: c_int = -3;
/// NVRTC failed to compile the kernel.
pub(crate) const NVRTC: c_int = -4;
/// Anything else (a library that failed to load, ...).
pub(crate) const OTHER: c_int = -5;
/// The library panicked (a bug): caught at the C boundary, which a panic must not cross.
pub(crate) const PANIC: c_int = -6;

thread_local! {
    /// The message of the last failure on this thread.
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// The code for `error`, after recording its message for [`last_error`].
pub(crate) fn fail(error: &Error) -> c_int {
    set_last_error(&error.to_string());
    match error {
        Error::InvalidArgument(_) => INVALID_ARGUMENT,
        Error::Unsupported { .. } => UNSUPPORTED,
        Error::Cuda { .. } => CUDA,
        Error::Nvrtc { .. } => NVRTC,
        _ => OTHER,
    }
}

/// Turns an outcome into a return code, recording the message of a failure.
pub(crate) fn code(result: cuda_safe::Result<()>) -> c_int {
    match result {
        Ok(()) => OK,
        Err(error) => fail(&error),
    }
}

/// Runs the body of an exported function, turning a panic into [`PANIC`] (with its message
/// recorded) instead of letting it unwind into the C caller.
pub(crate) fn guarded(body: impl FnOnce() -> c_int) -> c_int {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).unwrap_or_else(|payload| {
        let text = payload
            .downcast_ref::<&str>()
            .map(|text| (*text).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".to_owned());
        set_last_error(&format!("panic: {text}"));
        PANIC
    })
}

/// Records `message` (NUL bytes replaced) as this thread's last error.
pub(crate) fn set_last_error(message: &str) {
    let text = CString::new(message.replace('\0', "\u{fffd}")).unwrap_or_default();
    LAST_ERROR.with(|last| *last.borrow_mut() = text);
}

/// This thread's last error message (empty when nothing failed yet); the pointer is valid
/// until the thread's next failing call.
pub(crate) fn last_error() -> *const c_char {
    LAST_ERROR.with(|last| last.borrow().as_ptr())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_a_code_and_a_message() {
        assert_eq!(guarded(|| OK), OK);
        assert_eq!(guarded(|| panic!("boom")), PANIC);
        // SAFETY: the pointer is this thread's NUL-terminated last error.
        let message = unsafe { std::ffi::CStr::from_ptr(last_error()) };
        assert_eq!(message.to_str().unwrap(), "panic: boom");
    }
    use std::ffi::CStr;

    fn last() -> String {
        // SAFETY: the pointer is valid until this thread's next failure.
        unsafe { CStr::from_ptr(last_error()) }
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn codes_follow_the_error_kind_and_keep_the_message() {
        assert_eq!(last(), "");
        assert_eq!(code(Ok(())), OK);
        assert_eq!(
            code(Err(Error::invalid_argument("bad tensor"))),
            INVALID_ARGUMENT
        );
        assert!(last().contains("bad tensor"));
        let unsupported = Error::unsupported("DLPack 2", "too new");
        assert_eq!(fail(&unsupported), UNSUPPORTED);
        assert!(last().contains("too new"));
        let cuda = Error::cuda("cuLaunchKernelEx", cuda_safe::sys::CUresult(1));
        assert_eq!(fail(&cuda), CUDA);
        assert!(last().starts_with("cuLaunchKernelEx failed"));
        set_last_error("a\0b");
        assert_eq!(last(), "a\u{fffd}b");
    }
}
