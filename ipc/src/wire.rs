//! The channel's wire format: each message is a 12-byte header (magic, kind, payload length),
//! its payload, and at most one file descriptor beside it (`SCM_RIGHTS`). A [`Transfer`] moves
//! the messages of one call within one deadline and knows whether it stopped in the middle of
//! one (which leaves the channel out of step).

use crate::IpcError;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::Arc;

use super::io::{Deadline, recv_some, send_some, wait};
use cuda_safe::VmmShareDescriptor;
use cuda_safe::ipc::IpcBufferDescriptor;
use cuda_safe::{Error, Result};

/// Every message starts with these bytes, then its kind and its payload's length.
const MAGIC: [u8; 4] = *b"CSIP";
/// The bytes before a message's payload.
const HEADER_BYTES: usize = 12;
/// The longest payload [`Channel::send_bytes`](super::Channel::send_bytes) sends and any message may carry.
pub const MAX_MESSAGE_BYTES: usize = 16 << 20;

/// What a message holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// A pool: a file descriptor beside it, or a fabric handle in it.
    Pool = 1,
    /// A buffer's [`IpcBufferDescriptor`].
    Buffer = 2,
    /// An event's 64-byte IPC handle.
    Event = 3,
    /// The importer has dropped its imported buffer: no payload, no descriptor.
    Released = 4,
    /// The caller's own bytes.
    Bytes = 5,
    /// How many virtual-memory chunks follow.
    VmmChunks = 6,
    /// One virtual-memory chunk: its file descriptor beside it, its descriptor in it.
    VmmChunk = 7,
}

/// The payload lengths a kind of message may declare.
#[derive(Debug, Clone, Copy)]
pub(super) enum Length {
    /// Exactly one of these.
    OneOf(&'static [usize]),
    /// Anything up to [`MAX_MESSAGE_BYTES`].
    UpToMax,
}

impl Kind {
    pub(super) fn from_wire(value: u32) -> Option<Self> {
        [
            Self::Pool,
            Self::Buffer,
            Self::Event,
            Self::Released,
            Self::Bytes,
            Self::VmmChunks,
            Self::VmmChunk,
        ]
        .into_iter()
        .find(|kind| *kind as u32 == value)
    }

    pub(super) fn what(self) -> &'static str {
        match self {
            Self::Pool => "a memory pool",
            Self::Buffer => "a buffer",
            Self::Event => "an event",
            Self::Released => "a release notice",
            Self::Bytes => "bytes",
            Self::VmmChunks => "a count of virtual-memory chunks",
            Self::VmmChunk => "a virtual-memory chunk",
        }
    }

    /// What this end does while sending a message of this kind.
    fn sending(self) -> &'static str {
        match self {
            Self::Pool => "sending a memory pool",
            Self::Buffer => "sending a buffer",
            Self::Event => "sending an event",
            Self::Released => "sending a release notice",
            Self::Bytes => "sending bytes",
            Self::VmmChunks | Self::VmmChunk => "sending virtual-memory chunks",
        }
    }

    /// What this end does while waiting for a message of this kind.
    pub(super) fn waiting(self) -> &'static str {
        match self {
            Self::Pool => "waiting for a memory pool",
            Self::Buffer => "waiting for a buffer",
            Self::Event => "waiting for an event",
            Self::Released => "waiting for a release notice",
            Self::Bytes => "waiting for bytes",
            Self::VmmChunks | Self::VmmChunk => "waiting for virtual-memory chunks",
        }
    }

    /// The payload lengths the protocol allows (the channel's own messages are fixed).
    fn lengths(self) -> Length {
        match self {
            // A fabric handle after the UUID and the tag, or the tag alone beside a descriptor.
            Self::Pool => Length::OneOf(&[super::POOL_BYTES_FD, super::POOL_BYTES_FABRIC]),
            Self::Buffer => Length::OneOf(&[IpcBufferDescriptor::BYTES]),
            Self::Event => Length::OneOf(&[64]),
            Self::Released => Length::OneOf(&[0]),
            Self::Bytes => Length::UpToMax,
            Self::VmmChunks => Length::OneOf(&[4]),
            Self::VmmChunk => Length::OneOf(&[VmmShareDescriptor::BYTES]),
        }
    }

    /// Whether a file descriptor may travel beside a message of this kind.
    fn carries_fd(self) -> bool {
        matches!(self, Self::Pool | Self::VmmChunk)
    }
}

/// The messages of one call on a channel, moved within one deadline. It remembers whether it
/// stopped inside a message (or inside a sequence of them, as the chunks of
/// [`send_vmm_chunks`](super::Channel::send_vmm_chunks)): after that the channel is out of
/// step with its peer.
pub(super) struct Transfer<'a> {
    socket: &'a UnixStream,
    deadline: Deadline,
    /// A message or sequence has begun and not ended.
    open: bool,
    /// Inside a sequence: `open` stays set between its messages.
    in_sequence: bool,
    /// What the last message was doing (for the poisoned channel's error).
    doing: &'static str,
}

impl<'a> Transfer<'a> {
    pub(super) fn new(socket: &'a UnixStream, deadline: Deadline) -> Self {
        Self {
            socket,
            deadline,
            open: false,
            in_sequence: false,
            doing: "a message",
        }
    }

    /// Whether the transfer stopped inside a message or a sequence.
    pub(super) fn is_open(&self) -> bool {
        self.open
    }

    /// What it was doing when it stopped.
    pub(super) fn doing(&self) -> &'static str {
        self.doing
    }

    /// Runs `body`, whose messages form one sequence: once a byte of it has moved, the
    /// transfer counts as stopped in the middle until `body` succeeds.
    pub(super) fn sequence<T>(&mut self, body: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        self.in_sequence = true;
        let result = body(self);
        self.in_sequence = false;
        if result.is_ok() {
            self.open = false;
        }
        result
    }

    /// The end of one message.
    fn message_done(&mut self) {
        if !self.in_sequence {
            self.open = false;
        }
    }

    /// Sends one message, with `fd` beside it when given.
    pub(super) fn send(
        &mut self,
        kind: Kind,
        payload: &[u8],
        fd: Option<BorrowedFd<'_>>,
    ) -> Result<()> {
        if payload.len() > MAX_MESSAGE_BYTES {
            return Err(Error::invalid_argument(format!(
                "an IPC message holds at most {MAX_MESSAGE_BYTES} bytes, not {}",
                payload.len()
            )));
        }
        let doing = kind.sending();
        self.doing = doing;
        let mut header = [0u8; HEADER_BYTES];
        header[..4].copy_from_slice(&MAGIC);
        header[4..8].copy_from_slice(&(kind as u32).to_le_bytes());
        header[8..].copy_from_slice(&(payload.len() as u32).to_le_bytes());
        let total = HEADER_BYTES + payload.len();
        let (mut sent, mut fd) = (0, fd);
        while sent < total {
            let (first, second) = if sent < HEADER_BYTES {
                (&header[sent..], payload)
            } else {
                (&payload[sent - HEADER_BYTES..], &[][..])
            };
            match send_some(self.socket.as_fd(), first, second, fd) {
                Ok(0) => return Err(IpcError::PeerGone { what: doing }.into()),
                Ok(count) => {
                    self.open = true;
                    fd = None;
                    sent += count;
                }
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                    wait(self.socket.as_fd(), libc::POLLOUT, &self.deadline)
                        .map_err(|error| gone_or(error, doing))?;
                }
                Err(error) => return Err(gone_or(error, doing)),
            }
        }
        self.message_done();
        Ok(())
    }

    /// Receives one message, which must be of `kind`, with a length the protocol allows for
    /// it (checked before any of the payload is read): its payload and its file descriptor.
    pub(super) fn recv(&mut self, kind: Kind) -> Result<(Vec<u8>, Option<OwnedFd>)> {
        self.doing = kind.waiting();
        let mut fd = None;
        let mut header = [0u8; HEADER_BYTES];
        self.read_exact(&mut header, &mut fd, kind)?;
        if header[..4] != MAGIC {
            return Err(protocol(
                "the other end sent something that is not a message of this channel",
            ));
        }
        let wire_kind = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
        let len = u32::from_le_bytes([header[8], header[9], header[10], header[11]]) as usize;
        let came = Kind::from_wire(wire_kind);
        if came != Some(kind) {
            return Err(protocol(format!(
                "expected {}, got {}",
                kind.what(),
                came.map_or("a message of an unknown kind", Kind::what)
            )));
        }
        let allowed = match kind.lengths() {
            Length::OneOf(lengths) => lengths.contains(&len),
            Length::UpToMax => len <= MAX_MESSAGE_BYTES,
        };
        if !allowed {
            return Err(protocol(format!(
                "{} declared a payload of {len} bytes, which the protocol does not allow",
                kind.what()
            )));
        }
        let mut payload = vec![0; len];
        self.read_exact(&mut payload, &mut fd, kind)?;
        self.message_done();
        if fd.is_some() && !kind.carries_fd() {
            return Err(protocol(format!(
                "{} came with a file descriptor, which it never carries",
                kind.what()
            )));
        }
        Ok((payload, fd))
    }

    /// Fills `buffer` from the socket within the deadline, keeping a descriptor that comes
    /// beside the bytes in `fd` (a second one is a protocol error).
    fn read_exact(
        &mut self,
        buffer: &mut [u8],
        fd: &mut Option<OwnedFd>,
        kind: Kind,
    ) -> Result<()> {
        let mut filled = 0;
        while filled < buffer.len() {
            match recv_some(self.socket.as_fd(), &mut buffer[filled..]) {
                Ok((0, _)) => {
                    return Err(IpcError::PeerGone {
                        what: kind.waiting(),
                    }
                    .into());
                }
                Ok((count, came)) => {
                    self.open = true;
                    filled += count;
                    // Its bytes consumed and its descriptor gone: the channel is out of step.
                    let came = came.map_err(descriptor_lost)?;
                    if let Some(came) = came {
                        if fd.is_some() {
                            return Err(protocol(
                                "more file descriptors came than a message carries",
                            ));
                        }
                        *fd = Some(came);
                    }
                }
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                    wait(self.socket.as_fd(), libc::POLLIN, &self.deadline)
                        .map_err(|error| gone_or(error, kind.waiting()))?;
                }
                Err(error) if error.kind() == io::ErrorKind::InvalidData => {
                    self.open = true;
                    return Err(protocol(error.to_string()));
                }
                Err(error) => return Err(gone_or(error, kind.waiting())),
            }
        }
        Ok(())
    }
}

/// The error of a descriptor sent beside a message that this process could not take,
/// naming its cause: no descriptor free under this process's open-file limit (`EMFILE`) or
/// the system's (`ENFILE`), else the kernel's silence.
fn descriptor_lost(error: io::Error) -> Error {
    let what = match error.raw_os_error() {
        Some(libc::EMFILE) => {
            "taking a file descriptor the other end sent, with none free under this process's \
             open-file soft limit (raise `ulimit -n`, or hold fewer)"
        }
        Some(libc::ENFILE) => {
            "taking a file descriptor the other end sent, with none free in the system (its \
             limit on open files)"
        }
        _ => "taking a file descriptor the other end sent",
    };
    IpcError::Io {
        what,
        source: Arc::new(error),
    }
    .into()
}

/// An [`IpcError::Protocol`] saying `detail`.
fn protocol(detail: impl Into<std::borrow::Cow<'static, str>>) -> Error {
    IpcError::Protocol {
        detail: detail.into(),
    }
    .into()
}

/// The error of a malformed message of `kind`.
pub(super) fn malformed(kind: Kind) -> Error {
    protocol(format!("{} arrived malformed", kind.what()))
}

/// An operating-system error as [`IpcError::Io`], or [`IpcError::PeerGone`] when it says the
/// other end closed the channel.
pub(super) fn gone_or(error: io::Error, what: &'static str) -> Error {
    match error.kind() {
        io::ErrorKind::UnexpectedEof
        | io::ErrorKind::BrokenPipe
        | io::ErrorKind::ConnectionReset => IpcError::PeerGone { what }.into(),
        _ => IpcError::Io {
            what,
            source: Arc::new(error),
        }
        .into(),
    }
}

/// A closure turning an operating-system error into [`IpcError::Io`] for `what`.
pub(super) fn io_error(what: &'static str) -> impl FnOnce(io::Error) -> Error {
    move |error| {
        IpcError::Io {
            what,
            source: Arc::new(error),
        }
        .into()
    }
}
