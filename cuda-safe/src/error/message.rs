//! What an [`Error`] says (`Display`, one line per failure, the compiler or linker log after
//! it) and what caused it (`source`).

use std::fmt;

use super::Error;
use super::capture::CaptureHint;
#[cfg(feature = "fatbin")]
use super::display::During;
use super::display::{LogSuffix, MorePanics};
#[cfg(feature = "fatbin")]
use super::nvfatbin_codes::nvfatbin_name;
use cuda_loader::LoadError;

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Cuda {
                api,
                code,
                name,
                message,
            } => write!(f, "{api} failed: {name} ({message}){}", CaptureHint(*code)),
            Error::Nvrtc {
                api, message, log, ..
            } => write!(f, "{api} failed: {message}{}", LogSuffix(log.as_deref())),
            #[cfg(feature = "nvjitlink")]
            Error::NvJitLink {
                api, name, message, ..
            } => write!(f, "{api} failed: {name} ({message})"),
            #[cfg(feature = "fatbin")]
            Error::NvFatbin {
                api,
                code,
                message,
                detail,
            } => write!(
                f,
                "{api} failed: {} ({message}){}",
                nvfatbin_name(*code),
                During(detail.as_deref())
            ),
            Error::Link { source, log } => write!(f, "{source}{}", LogSuffix(Some(log))),
            Error::Nvml { api, message, .. } => write!(f, "{api} failed: {message}"),
            Error::Load(error) => fmt::Display::fmt(error, f),
            Error::InvalidArgument(what) => write!(f, "invalid argument: {what}"),
            Error::Unsupported { feature, reason } => {
                write!(f, "{feature} is not supported here: {reason}")
            }
            Error::EventNotTimed => f.write_str("the event was created with timing disabled"),
            Error::EventNotRecorded => f.write_str("the event has not been recorded"),
            Error::CacheIo { path, source } => {
                write!(f, "program cache at {}: {source}", path.display())
            }
            Error::CacheNotPrivate { path, reason } => {
                write!(f, "program cache at {} refused: {reason}", path.display())
            }
            Error::UnexpectedAnswer { api, detail } => {
                write!(f, "{api} gave an impossible answer: {detail}")
            }
            Error::LaunchOrdering { .. } => f.write_str(
                "the kernel was launched (and has finished), but ordering its buffers' streams \
                 after it failed",
            ),
            Error::CallbackPanicked { message, count } => {
                write!(
                    f,
                    "a host callback panicked: {message}{}",
                    MorePanics(*count)
                )
            }
            Error::GraphUpdateRefused {
                detail,
                node,
                from_node,
                ..
            } => {
                write!(f, "cuGraphExecUpdate refused the update: {detail}")?;
                match (node, from_node) {
                    (Some(node), Some(from)) => write!(
                        f,
                        " (the edge from node {from} to node {node} of the new graph's nodes())"
                    ),
                    (Some(node), None) => write!(f, " (node {node} of the new graph's nodes())"),
                    _ => Ok(()),
                }
            }
            Error::GraphInstantiateRefused { detail, .. } => {
                write!(
                    f,
                    "cuGraphInstantiateWithParams refused the graph: {detail}"
                )
            }
            Error::ArenaBusy {
                in_flight,
                capturing,
                holders,
            } => write!(
                f,
                "the graph arena is still in use ({in_flight} launch(es) may still run, \
                 {capturing} capture(s) record into it, {holders} other holder(s)): nothing \
                 was freed"
            ),
            Error::ArenaFull {
                requested,
                reserved,
                in_use,
                held,
            } => write!(
                f,
                "the graph arena has no free range of {requested} bytes (reserved {reserved}, \
                 in use {in_use}, held for graphs {held})"
            ),
            Error::Library(error) => fmt::Display::fmt(error, f),
            Error::NvrtcVersionMismatch { assumed, loaded } => write!(
                f,
                "the kernel cache assumes NVRTC {assumed}, but NVRTC {loaded} is loaded"
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Link { source, .. } | Error::LaunchOrdering { source } => Some(&**source),
            Error::CacheIo { source, .. } => Some(&**source),
            // Transparent: the wrapped error speaks for itself, so its cause is this one's.
            Error::Load(error) => error.source(),
            Error::Library(error) => error.source(),
            _ => None,
        }
    }
}

impl From<LoadError> for Error {
    fn from(error: LoadError) -> Self {
        Error::Load(error)
    }
}
