//! The channel's wire format: each message is a 12-byte header (magic, kind, payload length),
//! its payload, and at most one file descriptor beside it (`SCM_RIGHTS`).

use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::Arc;

use crate::error::{Error, Result};

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
    /// The importer has dropped its imported buffer.
    Released = 4,
    /// The caller's own bytes.
    Bytes = 5,
    /// How many virtual-memory chunks follow.
    VmmChunks = 6,
    /// One virtual-memory chunk: its file descriptor beside it, its descriptor in it.
    VmmChunk = 7,
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
}

/// Sends one message on `socket`, with `fd` beside it when given.
pub(super) fn send(
    socket: &UnixStream,
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
    let what = kind.what();
    let mut header = [0u8; HEADER_BYTES];
    header[..4].copy_from_slice(&MAGIC);
    header[4..8].copy_from_slice(&(kind as u32).to_le_bytes());
    header[8..].copy_from_slice(&(payload.len() as u32).to_le_bytes());
    let sent = send_with_fd(socket, &header, fd).map_err(|error| gone_or(error, what))?;
    let mut socket = socket;
    socket
        .write_all(&header[sent..])
        .and_then(|()| socket.write_all(payload))
        .map_err(|error| gone_or(error, what))
}

/// Receives one message from `socket`, which must be of `kind`: its payload and its file
/// descriptor.
pub(super) fn recv(socket: &UnixStream, kind: Kind) -> Result<(Vec<u8>, Option<OwnedFd>)> {
    let what = kind.what();
    let mut header = [0u8; HEADER_BYTES];
    let (got, fd) = recv_with_fd(socket, &mut header).map_err(|error| Error::IpcIo {
        what: "receiving",
        source: Arc::new(error),
    })?;
    if got == 0 {
        return Err(Error::IpcPeerGone {
            what: waiting(kind),
        });
    }
    let mut socket = socket;
    socket
        .read_exact(&mut header[got..])
        .map_err(|error| gone_or(error, what))?;
    if header[..4] != MAGIC {
        return Err(Error::IpcProtocol {
            detail: "the other end sent something that is not a message of this channel".into(),
        });
    }
    let wire_kind = u32::from_le_bytes(header[4..8].try_into().unwrap_or_default());
    let len = u32::from_le_bytes(header[8..].try_into().unwrap_or_default()) as usize;
    let came = Kind::from_wire(wire_kind);
    if came != Some(kind) {
        return Err(Error::IpcProtocol {
            detail: format!(
                "expected {what}, got {}",
                came.map_or("a message of an unknown kind", Kind::what)
            )
            .into(),
        });
    }
    if len > MAX_MESSAGE_BYTES {
        return Err(malformed(kind));
    }
    let mut payload = vec![0; len];
    socket
        .read_exact(&mut payload)
        .map_err(|error| gone_or(error, what))?;
    Ok((payload, fd))
}

/// What this end was doing when a message of `kind` did not come.
fn waiting(kind: Kind) -> &'static str {
    match kind {
        Kind::Pool => "waiting for a memory pool",
        Kind::Buffer => "waiting for a buffer",
        Kind::Event => "waiting for an event",
        Kind::Released => "waiting for a release notice",
        Kind::Bytes => "waiting for bytes",
        Kind::VmmChunks | Kind::VmmChunk => "waiting for virtual-memory chunks",
    }
}

/// The error of a malformed message of `kind`.
pub(super) fn malformed(kind: Kind) -> Error {
    Error::IpcProtocol {
        detail: format!("{} arrived malformed", kind.what()).into(),
    }
}

/// An operating-system error as [`Error::IpcIo`], or [`Error::IpcPeerGone`] when it says the
/// other end closed the channel.
pub(super) fn gone_or(error: io::Error, what: &'static str) -> Error {
    match error.kind() {
        io::ErrorKind::UnexpectedEof
        | io::ErrorKind::BrokenPipe
        | io::ErrorKind::ConnectionReset => Error::IpcPeerGone { what },
        _ => Error::IpcIo {
            what,
            source: Arc::new(error),
        },
    }
}

/// A closure turning an operating-system error into [`Error::IpcIo`] for `what`.
pub(super) fn io_error(what: &'static str) -> impl FnOnce(io::Error) -> Error {
    move |error| Error::IpcIo {
        what,
        source: Arc::new(error),
    }
}

/// Room for one file descriptor's control message, aligned for `cmsghdr`.
#[repr(C, align(8))]
pub(super) struct ControlBuffer([u8; 32]);

/// Sends `bytes` (some of them, as a stream socket may) with `fd` beside them; returns how
/// many bytes went.
fn send_with_fd(
    socket: &UnixStream,
    bytes: &[u8],
    fd: Option<BorrowedFd<'_>>,
) -> io::Result<usize> {
    let mut iov = libc::iovec {
        iov_base: bytes.as_ptr() as *mut libc::c_void,
        iov_len: bytes.len(),
    };
    let mut control = ControlBuffer([0; 32]);
    // SAFETY: an all-zero msghdr is valid (no name, no control).
    let mut message: libc::msghdr = unsafe { std::mem::zeroed() };
    message.msg_iov = &mut iov;
    message.msg_iovlen = 1;
    if let Some(fd) = fd {
        // SAFETY: CMSG_SPACE only computes a size.
        let space = unsafe { libc::CMSG_SPACE(size_of::<libc::c_int>() as u32) } as usize;
        message.msg_control = control.0.as_mut_ptr().cast();
        message.msg_controllen = space as _;
        // SAFETY: the control buffer holds `space` bytes (at most 32, checked by the
        // assertion in the tests), aligned for cmsghdr; CMSG_FIRSTHDR points into it.
        unsafe {
            let header = libc::CMSG_FIRSTHDR(&message);
            (*header).cmsg_level = libc::SOL_SOCKET;
            (*header).cmsg_type = libc::SCM_RIGHTS;
            (*header).cmsg_len = libc::CMSG_LEN(size_of::<libc::c_int>() as u32) as _;
            libc::CMSG_DATA(header)
                .cast::<libc::c_int>()
                .write_unaligned(fd.as_raw_fd());
        }
    }
    loop {
        // SAFETY: `message` points at live buffers for the call; MSG_NOSIGNAL turns a closed
        // peer into EPIPE instead of a signal.
        let sent = unsafe { libc::sendmsg(socket.as_raw_fd(), &message, libc::MSG_NOSIGNAL) };
        if sent >= 0 {
            return Ok(sent as usize);
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

/// Receives into `bytes` (some of them) and the file descriptor sent beside them, if any;
/// returns how many bytes came (0: the other end closed the channel).
fn recv_with_fd(socket: &UnixStream, bytes: &mut [u8]) -> io::Result<(usize, Option<OwnedFd>)> {
    let mut iov = libc::iovec {
        iov_base: bytes.as_mut_ptr().cast(),
        iov_len: bytes.len(),
    };
    let mut control = ControlBuffer([0; 32]);
    // SAFETY: an all-zero msghdr is valid.
    let mut message: libc::msghdr = unsafe { std::mem::zeroed() };
    message.msg_iov = &mut iov;
    message.msg_iovlen = 1;
    message.msg_control = control.0.as_mut_ptr().cast();
    message.msg_controllen = control.0.len() as _;
    let got = loop {
        // SAFETY: `message` points at live buffers for the call; received descriptors are
        // close-on-exec.
        let got =
            unsafe { libc::recvmsg(socket.as_raw_fd(), &mut message, libc::MSG_CMSG_CLOEXEC) };
        if got >= 0 {
            break got as usize;
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    };
    let mut fds = Vec::new();
    // SAFETY: the kernel filled `message.msg_control` with `msg_controllen` bytes of control
    // messages; CMSG_FIRSTHDR/NXTHDR walk them within that length.
    unsafe {
        let mut header = libc::CMSG_FIRSTHDR(&message);
        while !header.is_null() {
            if (*header).cmsg_level == libc::SOL_SOCKET && (*header).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(header).cast::<libc::c_int>();
                let count = ((*header).cmsg_len as usize - libc::CMSG_LEN(0) as usize)
                    / size_of::<libc::c_int>();
                for index in 0..count {
                    // Owned at once, so every descriptor received is closed on any error.
                    fds.push(OwnedFd::from_raw_fd(data.add(index).read_unaligned()));
                }
            }
            header = libc::CMSG_NXTHDR(&message, header);
        }
    }
    if message.msg_flags & libc::MSG_CTRUNC != 0 || fds.len() > 1 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "more file descriptors came than a message carries",
        ));
    }
    Ok((got, fds.pop()))
}
