//! What usually causes each stream-capture error, appended to its text.

use std::fmt;

use cuda_sys::CUresult;

/// What usually causes a stream-capture error, for the codes that are one.
pub(super) fn capture_hint(code: CUresult) -> Option<&'static str> {
    Some(match code {
        CUresult::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED => {
            "the operation is not allowed while the stream (or, by the capture's mode, another \
             stream of this thread or process) is being captured: a synchronization, a query, \
             a call on the legacy default stream or a synchronous allocation; it invalidated \
             the capture, which must be ended before the stream is used again"
        }
        CUresult::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED => {
            "an operation that is not allowed during capture invalidated the capture, so no \
             graph was made; the capture has ended and the stream can be used again"
        }
        CUresult::CUDA_ERROR_STREAM_CAPTURE_MERGE => {
            "the operation would merge two separate captures"
        }
        CUresult::CUDA_ERROR_STREAM_CAPTURE_UNMATCHED => "the capture was not begun on this stream",
        CUresult::CUDA_ERROR_STREAM_CAPTURE_UNJOINED => {
            "a stream forked into the capture (it waited on an event recorded in it) was not \
             joined back: make the capturing stream wait for it before ending"
        }
        CUresult::CUDA_ERROR_STREAM_CAPTURE_ISOLATION => {
            "the operation would make a captured stream depend on work outside the capture"
        }
        CUresult::CUDA_ERROR_STREAM_CAPTURE_IMPLICIT => {
            "the operation would make the legacy default stream depend on a capturing \
             blocking stream; capture on non-blocking streams"
        }
        CUresult::CUDA_ERROR_CAPTURED_EVENT => {
            "the event was last recorded during a capture, so it cannot be queried or waited \
             on outside it"
        }
        CUresult::CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD => {
            "a global or thread-local capture must be ended on the thread that began it"
        }
        _ => return None,
    })
}

/// The explanation appended to a driver error's text when it is a capture error.
pub(super) struct CaptureHint(pub(super) CUresult);

impl fmt::Display for CaptureHint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match capture_hint(self.0) {
            Some(hint) => write!(f, "; {hint}"),
            None => Ok(()),
        }
    }
}
