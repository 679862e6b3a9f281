//! How an [`Error`] prints: its `Debug` (the line, then the causes it does not say) and the
//! pieces its messages are made of.

use std::fmt;

use super::Error;
#[cfg(feature = "nccl")]
use crate::ffi::static_str;
#[cfg(feature = "nccl")]
use nccl_sys::ncclResult_t;

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let line = self.to_string();
        f.write_str(&line)?;
        let mut said = line;
        let mut causes = Vec::new();
        let mut source = std::error::Error::source(self);
        while let Some(cause) = source {
            let text = cause.to_string();
            if !said.contains(&text) {
                said.push_str(&text);
                causes.push(text);
            }
            source = cause.source();
        }
        match causes.as_slice() {
            [] => Ok(()),
            [only] => write!(f, "\n\nCaused by:\n    {only}"),
            many => {
                f.write_str("\n\nCaused by:")?;
                many.iter()
                    .enumerate()
                    .try_for_each(|(index, cause)| write!(f, "\n    {index}: {cause}"))
            }
        }
    }
}

/// `: <last error>` after an NCCL error's name, when NCCL said more.
#[cfg(feature = "nccl")]
pub(super) struct NcclDetail<'a>(pub(super) Option<&'a str>);

#[cfg(feature = "nccl")]
impl fmt::Display for NcclDetail<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(text) => write!(f, " ({text})"),
            None => Ok(()),
        }
    }
}

/// ` (and N more)` after the first panic's message, when several callbacks panicked.
pub(super) struct MorePanics(pub(super) usize);

impl fmt::Display for MorePanics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            0 | 1 => Ok(()),
            count => write!(f, " (and {} more)", count - 1),
        }
    }
}

/// `, <what the call was doing>` after an nvFatbin error, when it is known.
pub(super) struct During<'a>(pub(super) Option<&'a str>);

impl fmt::Display for During<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(detail) => write!(f, ", {detail}"),
            None => Ok(()),
        }
    }
}

pub(super) struct LogSuffix<'a>(pub(super) Option<&'a str>);

impl fmt::Display for LogSuffix<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(log) if !log.trim().is_empty() => write!(f, "\n{}", log.trim_end()),
            _ => Ok(()),
        }
    }
}

/// `ncclGetErrorString` of `code` and `ncclGetLastError`'s text (for the last failure on this
/// thread or anywhere: NCCL keeps one), when NCCL is loaded.
#[cfg(feature = "nccl")]
pub(super) fn nccl_texts(code: ncclResult_t) -> (&'static str, Option<Box<str>>) {
    let Ok(nccl) = nccl_sys::nccl() else {
        return ("an NCCL error (NCCL is not loaded)", None);
    };
    // SAFETY: ncclGetErrorString accepts any code and returns a static string.
    let name = unsafe { nccl.ncclGetErrorString(code) }
        .ok()
        // SAFETY: the string is static and NUL-terminated.
        .and_then(|text| unsafe { static_str(text) })
        .unwrap_or("an unknown NCCL error code");
    // SAFETY: ncclGetLastError takes a communicator or null and returns a NUL-terminated
    // string NCCL owns; it is copied at once.
    let last = unsafe { nccl.ncclGetLastError(std::ptr::null_mut()) }
        .ok()
        .filter(|text| !text.is_null())
        // SAFETY: non-null, NUL-terminated, alive until NCCL's next error; copied here.
        .map(|text| unsafe { std::ffi::CStr::from_ptr(text) }.to_string_lossy())
        .map(|text| text.trim().to_owned())
        .filter(|text| !text.is_empty())
        .map(String::into_boxed_str);
    (name, last)
}
