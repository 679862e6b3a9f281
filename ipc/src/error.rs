//! The channel's failures ([`IpcError`], inside [`cuda_safe::Error::Library`]).

use std::borrow::Cow;
use std::sync::Arc;

use cuda_safe::{Error, LibraryFailure};

/// A failure of a [`Channel`](crate::Channel) or [`Listener`](crate::Listener). It reaches
/// callers inside [`cuda_safe::Error::Library`]: `error.library_error::<IpcError>()` gives it
/// back.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum IpcError {
    /// Sending or receiving failed at the operating system.
    #[error("IPC channel: {what} failed: {source}")]
    Io {
        /// What was being done (`sending a buffer`).
        what: &'static str,
        /// The operating system's error (shared, so that the error stays `Clone`).
        source: Arc<std::io::Error>,
    },
    /// The other end sent something this end did not expect: another kind of message than
    /// the one asked for, or a malformed one.
    #[error("IPC channel: {detail}")]
    Protocol {
        /// What was expected and what came.
        detail: Cow<'static, str>,
    },
    /// The other end closed the channel (its process exited or was killed) before the message
    /// asked for came.
    #[error("IPC channel: the other process closed the channel while {what}")]
    PeerGone {
        /// What this end was waiting for.
        what: &'static str,
    },
    /// The other end declared more virtual-memory chunks ([`Channel::recv_vmm_chunks`], a
    /// file descriptor each) than this process can hold at once: its open-file soft limit
    /// (`RLIMIT_NOFILE`, `ulimit -n`), less the descriptors it has open, less a quarter of the
    /// limit kept free for the rest of the process. Refused before any chunk came, so no
    /// descriptor of the peer's was taken; the rest of the sequence is unread, so the channel
    /// is poisoned ([`IpcError::Poisoned`]). Raise the soft limit, or send fewer chunks at
    /// once.
    ///
    /// [`Channel::recv_vmm_chunks`]: crate::Channel::recv_vmm_chunks
    #[error(
        "IPC channel: the other end declared {declared} virtual-memory chunks, a file descriptor \
         each, but this process can take at most {affordable} at once (its open-file soft limit \
         of {soft_limit}, less the {open} descriptors open and a quarter of the limit kept \
         free); raise the limit (`ulimit -n`) or send fewer chunks at once"
    )]
    DescriptorLimit {
        /// How many chunks the other end declared.
        declared: usize,
        /// The most this process could take at once when the count came.
        affordable: usize,
        /// The process's open-file soft limit (`getrlimit(RLIMIT_NOFILE)`).
        soft_limit: u64,
        /// How many descriptors the process had open when the count came.
        open: usize,
    },
    /// An earlier call on this channel stopped in the middle of a message (its deadline
    /// passed, the message was malformed, or it was refused, as a declared count of chunks
    /// past [`IpcError::DescriptorLimit`], or lost its descriptor), so the channel is out of step with the other
    /// end: every later call fails with this error. Close the channel.
    #[error(
        "IPC channel: out of step with the other end since {what} stopped in the middle of a \
         message (a timeout, a malformed or refused message); close the channel"
    )]
    Poisoned {
        /// What the call that stopped was doing (`waiting for bytes`).
        what: &'static str,
    },
}

impl IpcError {
    /// The operating system's error behind [`IpcError::Io`].
    pub fn io_error(&self) -> Option<&std::io::Error> {
        match self {
            Self::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl LibraryFailure for IpcError {
    fn library(&self) -> &'static str {
        "IPC channel"
    }

    fn is_out_of_memory(&self) -> bool {
        self.io_error()
            .is_some_and(|error| error.kind() == std::io::ErrorKind::OutOfMemory)
    }
}

impl From<IpcError> for Error {
    fn from(error: IpcError) -> Self {
        Error::from_library(error)
    }
}

/// The channel's error inside `error`, if it is one.
pub(crate) fn ipc_error(error: &Error) -> Option<&IpcError> {
    error.library_error::<IpcError>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poisoned_channel_says_what_stopped_and_what_to_do() {
        let poisoned: Error = IpcError::Poisoned {
            what: "waiting for bytes",
        }
        .into();
        let text = poisoned.to_string();
        assert!(text.starts_with("IPC channel: out of step"), "{text}");
        assert!(text.contains("since waiting for bytes stopped"), "{text}");
        assert!(text.ends_with("close the channel"), "{text}");
        assert!(!poisoned.is_not_supported() && !poisoned.is_no_device());
        assert!(matches!(
            ipc_error(&poisoned),
            Some(IpcError::Poisoned { .. })
        ));
    }
}
