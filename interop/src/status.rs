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

/// Copies this thread's last error message into `buffer` (`capacity` bytes), NUL-terminated
/// and cut at a UTF-8 boundary to fit; returns the message's full length.
///
/// # Safety
///
/// `buffer` is null or valid for writes of `capacity` bytes.
pub(crate) unsafe fn copy_last_error(buffer: *mut c_char, capacity: usize) -> usize {
    LAST_ERROR.with(|last| {
        let last = last.borrow();
        let message = last.to_bytes();
        if !buffer.is_null() && capacity > 0 {
            let text = String::from_utf8_lossy(message);
            let mut fits = message.len().min(capacity - 1);
            while !text.is_char_boundary(fits) {
                fits -= 1;
            }
            // SAFETY: `fits + 1 <= capacity` bytes of the caller's buffer; the source is the
            // message's first `fits` bytes.
            unsafe {
                std::ptr::copy_nonoverlapping(message.as_ptr().cast::<c_char>(), buffer, fits);
                *buffer.add(fits) = 0;
            }
        }
        message.len()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The last error through the C ABI's copy, into a buffer of `capacity` bytes.
    fn copied(capacity: usize) -> (String, usize) {
        let mut buffer = vec![0 as c_char; capacity];
        // SAFETY: the buffer holds `capacity` bytes.
        let length = unsafe { copy_last_error(buffer.as_mut_ptr(), capacity) };
        let bytes: Vec<u8> = buffer
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        (String::from_utf8(bytes).unwrap(), length)
    }

    fn last() -> String {
        copied(4096).0
    }

    #[test]
    fn a_panic_becomes_a_code_and_a_message() {
        assert_eq!(guarded(|| OK), OK);
        assert_eq!(guarded(|| panic!("boom")), PANIC);
        assert_eq!(last(), "panic: boom");
    }

    #[test]
    fn the_message_is_copied_out_cut_to_fit_and_owned_by_the_caller() {
        set_last_error("état 1");
        assert_eq!(copied(64), ("état 1".to_owned(), 7));
        // Cut at a character boundary, NUL-terminated, full length still reported.
        assert_eq!(copied(3), ("é".to_owned(), 7));
        assert_eq!(copied(2), (String::new(), 7));
        // SAFETY: a null buffer is allowed; nothing is written.
        assert_eq!(unsafe { copy_last_error(std::ptr::null_mut(), 10) }, 7);
        let kept = copied(64).0;
        set_last_error("another failure");
        assert_eq!(
            kept, "état 1",
            "the caller's copy outlives the next failure"
        );
        // Each thread has its own message.
        let other = std::thread::spawn(last).join().unwrap();
        assert_eq!(other, "");
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
