//! A UNIX-socket channel between two processes that carries pools (their file descriptors),
//! buffers, events and the release of imported buffers.

use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::share::{ExportedPool, IpcBufferDescriptor, PoolHandle};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::event::Event;
use crate::memory::vmm::VmmShareDescriptor;
use crate::memory::{Buffer, DeviceMemoryResource};
use crate::stream::Stream;
use crate::uuid::Uuid;

/// Every message starts with these bytes, then its kind and its payload's length.
const MAGIC: [u8; 4] = *b"CSIP";
/// The bytes before a message's payload.
const HEADER_BYTES: usize = 12;
/// The longest payload [`Channel::send_bytes`] sends and any message may carry.
pub const MAX_MESSAGE_BYTES: usize = 16 << 20;
/// The most virtual-memory chunks [`Channel::send_vmm_chunks`] sends at once (a file
/// descriptor each).
pub const MAX_VMM_CHUNKS: usize = 1 << 16;

/// What a message holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
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
    fn from_wire(value: u32) -> Option<Self> {
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

    fn what(self) -> &'static str {
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

/// A pool message holds its device's UUID (16 bytes), then how the pool travels (1 byte: a
/// file descriptor beside the message, or a fabric handle of 64 bytes after this byte).
const POOL_BY_FD: u8 = 1;
const POOL_BY_FABRIC: u8 = 2;
/// The length of a pool message carrying a fabric handle.
const POOL_BYTES_FABRIC: usize = 16 + 1 + 64;

/// How the other process answered [`Channel::wait_released`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Released {
    /// It dropped its imported buffer and said so.
    Acknowledged,
    /// It closed the channel (exited or was killed): the driver has unmapped everything it
    /// imported.
    PeerGone,
}

/// One end of a connection to another process, for sharing GPU memory with it.
///
/// Messages are typed: each `recv_*` expects the kind of message the matching `send_*` sends
/// and refuses another ([`Error::IpcProtocol`]). A closed channel is [`Error::IpcPeerGone`].
/// See the [module documentation](super) for the protocol that keeps memory alive while the
/// other process uses it.
#[derive(Debug)]
pub struct Channel {
    socket: UnixStream,
}

/// A listening UNIX socket that other processes [`connect`](Channel::connect) to. The socket
/// file is removed when the listener is dropped.
#[derive(Debug)]
pub struct Listener {
    socket: UnixListener,
    path: PathBuf,
}

impl Listener {
    /// Listens at `path` (which must not exist).
    ///
    /// # Errors
    ///
    /// [`Error::IpcIo`] from the operating system.
    pub fn bind(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let socket = UnixListener::bind(&path).map_err(io_error("binding the socket"))?;
        Ok(Self { socket, path })
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Waits for the next process to connect.
    ///
    /// # Errors
    ///
    /// [`Error::IpcIo`] from the operating system.
    pub fn accept(&self) -> Result<Channel> {
        let (socket, _) = self
            .socket
            .accept()
            .map_err(io_error("accepting a connection"))?;
        Ok(Channel { socket })
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Err(error) = std::fs::remove_file(&self.path) {
            log::debug!(
                "removing the socket {} failed: {error}",
                self.path.display()
            );
        }
    }
}

impl Channel {
    /// Two connected ends, for a process that hands one to a child it forks (or to another
    /// thread, for tests).
    ///
    /// # Errors
    ///
    /// [`Error::IpcIo`] from the operating system.
    pub fn pair() -> Result<(Self, Self)> {
        let (a, b) = UnixStream::pair().map_err(io_error("creating a socket pair"))?;
        Ok((Self { socket: a }, Self { socket: b }))
    }

    /// Connects to a [`Listener`] at `path`.
    ///
    /// # Errors
    ///
    /// [`Error::IpcIo`] from the operating system.
    pub fn connect(path: impl AsRef<Path>) -> Result<Self> {
        let socket = UnixStream::connect(path).map_err(io_error("connecting"))?;
        Ok(Self { socket })
    }

    /// A channel over a connected UNIX stream socket.
    pub fn from_unix_stream(socket: UnixStream) -> Self {
        Self { socket }
    }

    /// Makes every receive give up after `timeout` (`None`: wait for ever, the default), so a
    /// hung peer cannot block this process for ever.
    ///
    /// # Errors
    ///
    /// [`Error::IpcIo`] from the operating system (for a zero timeout).
    pub fn set_timeout(&self, timeout: Option<Duration>) -> Result<()> {
        self.socket
            .set_read_timeout(timeout)
            .map_err(io_error("setting the timeout"))
    }

    /// Exports a shareable pool ([`DeviceMemoryResource::export_pool`]) and sends it.
    ///
    /// # Errors
    ///
    /// As [`DeviceMemoryResource::export_pool`]; [`Error::IpcIo`] or [`Error::IpcPeerGone`].
    pub fn send_pool(&self, pool: &DeviceMemoryResource) -> Result<()> {
        self.send_exported_pool(&pool.export_pool()?)
    }

    /// Sends a pool exported already (its file descriptor stays open here).
    ///
    /// # Errors
    ///
    /// [`Error::IpcIo`] or [`Error::IpcPeerGone`].
    pub fn send_exported_pool(&self, pool: &ExportedPool) -> Result<()> {
        let mut payload = Vec::with_capacity(POOL_BYTES_FABRIC);
        payload.extend_from_slice(&pool.device_uuid().0);
        match pool.handle() {
            PoolHandle::PosixFd(fd) => {
                payload.push(POOL_BY_FD);
                self.send(Kind::Pool, &payload, Some(fd.as_fd()))
            }
            PoolHandle::Fabric(data) => {
                payload.push(POOL_BY_FABRIC);
                payload.extend_from_slice(data);
                self.send(Kind::Pool, &payload, None)
            }
        }
    }

    /// Receives a pool and imports it on its device ([`DeviceMemoryResource::import_pool`]).
    ///
    /// # Errors
    ///
    /// As [`recv_exported_pool`](Self::recv_exported_pool) and
    /// [`DeviceMemoryResource::import_pool`].
    pub fn recv_pool(&self) -> Result<DeviceMemoryResource> {
        DeviceMemoryResource::import_pool(self.recv_exported_pool()?)
    }

    /// Receives a pool without importing it.
    ///
    /// # Errors
    ///
    /// [`Error::IpcProtocol`] for another message; [`Error::IpcIo`] or
    /// [`Error::IpcPeerGone`].
    pub fn recv_exported_pool(&self) -> Result<ExportedPool> {
        let (payload, fd) = self.recv(Kind::Pool)?;
        let (uuid, handle) = payload
            .split_first_chunk::<16>()
            .ok_or_else(|| malformed(Kind::Pool))?;
        let handle = match (handle, fd) {
            ([POOL_BY_FD], Some(fd)) => PoolHandle::PosixFd(fd),
            ([POOL_BY_FABRIC, data @ ..], None) => {
                PoolHandle::Fabric(data.try_into().map_err(|_| malformed(Kind::Pool))?)
            }
            _ => return Err(malformed(Kind::Pool)),
        };
        Ok(ExportedPool::new(handle, Uuid(*uuid)))
    }

    /// Sends a buffer of a shareable pool ([`Buffer::export_ipc`], which waits for the
    /// buffer's stream). Keep the buffer alive until [`wait_released`](Self::wait_released)
    /// returns.
    ///
    /// # Errors
    ///
    /// As [`Buffer::export_ipc`]; [`Error::IpcIo`] or [`Error::IpcPeerGone`].
    pub fn send_buffer(&self, buffer: &Buffer) -> Result<()> {
        self.send_buffer_descriptor(&buffer.export_ipc()?)
    }

    /// Sends a buffer's descriptor made already.
    ///
    /// # Errors
    ///
    /// [`Error::IpcIo`] or [`Error::IpcPeerGone`].
    pub fn send_buffer_descriptor(&self, descriptor: &IpcBufferDescriptor) -> Result<()> {
        self.send(Kind::Buffer, &descriptor.to_bytes(), None)
    }

    /// Receives a buffer and maps it through `pool`, the pool imported from the sender
    /// ([`DeviceMemoryResource::import_buffer`]). Give it back with
    /// [`release`](Self::release).
    ///
    /// # Errors
    ///
    /// As [`recv_buffer_descriptor`](Self::recv_buffer_descriptor) and
    /// [`DeviceMemoryResource::import_buffer`].
    pub fn recv_buffer(&self, pool: &DeviceMemoryResource, stream: &Stream) -> Result<Buffer> {
        pool.import_buffer(&self.recv_buffer_descriptor()?, stream)
    }

    /// Receives a buffer's descriptor without mapping it.
    ///
    /// # Errors
    ///
    /// [`Error::IpcProtocol`] for another message; [`Error::IpcIo`] or
    /// [`Error::IpcPeerGone`].
    pub fn recv_buffer_descriptor(&self) -> Result<IpcBufferDescriptor> {
        let (payload, _) = self.recv(Kind::Buffer)?;
        IpcBufferDescriptor::from_bytes(&payload).map_err(|_| malformed(Kind::Buffer))
    }

    /// Sends an event created with [`EventOptions::ipc`](crate::EventOptions::ipc).
    ///
    /// # Errors
    ///
    /// As [`Event::ipc_handle`]; [`Error::IpcIo`] or [`Error::IpcPeerGone`].
    pub fn send_event(&self, event: &Event) -> Result<()> {
        self.send(Kind::Event, &event.ipc_handle()?, None)
    }

    /// Receives an event and opens it in `context` ([`Event::open_ipc`]).
    ///
    /// # Errors
    ///
    /// [`Error::IpcProtocol`] for another message; as [`Event::open_ipc`].
    pub fn recv_event(&self, context: &Context) -> Result<Event> {
        let (payload, _) = self.recv(Kind::Event)?;
        let handle: [u8; 64] = payload
            .as_slice()
            .try_into()
            .map_err(|_| malformed(Kind::Event))?;
        Event::open_ipc(context, &handle)
    }

    /// Gives back an imported buffer: unmaps it, waits until the unmapping is done, and tells
    /// the exporter, whose [`wait_released`](Self::wait_released) then returns.
    ///
    /// # Errors
    ///
    /// The driver's error from the unmapping or the wait; [`Error::IpcIo`] or
    /// [`Error::IpcPeerGone`].
    pub fn release(&self, buffer: Buffer) -> Result<()> {
        let stream = buffer.stream().clone();
        buffer.close()?;
        stream.sync()?;
        self.send(Kind::Released, &[], None)
    }

    /// Waits until the other process has given back the buffer sent to it
    /// ([`release`](Self::release)) or has closed the channel; after either, the buffer can
    /// be freed here.
    ///
    /// # Errors
    ///
    /// [`Error::IpcIo`] (a timeout set with [`set_timeout`](Self::set_timeout) included);
    /// [`Error::IpcProtocol`] for another message.
    pub fn wait_released(&self) -> Result<Released> {
        match self.recv(Kind::Released) {
            Ok(_) => Ok(Released::Acknowledged),
            Err(Error::IpcPeerGone { .. }) => Ok(Released::PeerGone),
            Err(error) => Err(error),
        }
    }

    /// Sends virtual-memory chunks exported as file descriptors
    /// ([`VirtualMapping::export_fds`](crate::VirtualMapping::export_fds),
    /// [`GrowableBuffer::export_fds`](crate::GrowableBuffer::export_fds)): each descriptor with
    /// its file descriptor, in order.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for more than [`MAX_VMM_CHUNKS`] chunks; [`Error::IpcIo`] or
    /// [`Error::IpcPeerGone`].
    pub fn send_vmm_chunks(&self, chunks: &[(OwnedFd, VmmShareDescriptor)]) -> Result<()> {
        if chunks.len() > MAX_VMM_CHUNKS {
            return Err(Error::invalid_argument(format!(
                "a channel sends at most {MAX_VMM_CHUNKS} chunks at once, not {}",
                chunks.len()
            )));
        }
        self.send(Kind::VmmChunks, &(chunks.len() as u32).to_le_bytes(), None)?;
        for (fd, descriptor) in chunks {
            self.send(Kind::VmmChunk, &descriptor.to_bytes(), Some(fd.as_fd()))?;
        }
        Ok(())
    }

    /// Receives what [`send_vmm_chunks`](Self::send_vmm_chunks) sent, for
    /// [`VirtualMemoryResource::import_fds`](crate::VirtualMemoryResource::import_fds) (which
    /// checks the descriptors).
    ///
    /// # Errors
    ///
    /// [`Error::IpcProtocol`] for another message or a chunk without its file descriptor;
    /// [`Error::IpcIo`] or [`Error::IpcPeerGone`].
    pub fn recv_vmm_chunks(&self) -> Result<Vec<(OwnedFd, VmmShareDescriptor)>> {
        let (payload, _) = self.recv(Kind::VmmChunks)?;
        let count = payload
            .as_slice()
            .try_into()
            .map(u32::from_le_bytes)
            .map_err(|_| malformed(Kind::VmmChunks))? as usize;
        if count > MAX_VMM_CHUNKS {
            return Err(malformed(Kind::VmmChunks));
        }
        (0..count)
            .map(|_| {
                let (payload, fd) = self.recv(Kind::VmmChunk)?;
                let descriptor = VmmShareDescriptor::from_bytes(&payload)
                    .map_err(|_| malformed(Kind::VmmChunk))?;
                Ok((fd.ok_or_else(|| malformed(Kind::VmmChunk))?, descriptor))
            })
            .collect()
    }

    /// Sends the caller's own bytes (at most [`MAX_MESSAGE_BYTES`]).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a longer message; [`Error::IpcIo`] or
    /// [`Error::IpcPeerGone`].
    pub fn send_bytes(&self, bytes: &[u8]) -> Result<()> {
        self.send(Kind::Bytes, bytes, None)
    }

    /// Receives bytes sent with [`send_bytes`](Self::send_bytes).
    ///
    /// # Errors
    ///
    /// [`Error::IpcProtocol`] for another message; [`Error::IpcIo`] or
    /// [`Error::IpcPeerGone`].
    pub fn recv_bytes(&self) -> Result<Vec<u8>> {
        self.recv(Kind::Bytes).map(|(payload, _)| payload)
    }

    /// Sends one message, with `fd` beside it when given.
    fn send(&self, kind: Kind, payload: &[u8], fd: Option<BorrowedFd<'_>>) -> Result<()> {
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
        let sent = send_with_fd(&self.socket, &header, fd).map_err(|error| gone_or(error, what))?;
        let mut socket = &self.socket;
        socket
            .write_all(&header[sent..])
            .and_then(|()| socket.write_all(payload))
            .map_err(|error| gone_or(error, what))
    }

    /// Receives one message, which must be of `kind`: its payload and its file descriptor.
    fn recv(&self, kind: Kind) -> Result<(Vec<u8>, Option<OwnedFd>)> {
        let what = kind.what();
        let mut header = [0u8; HEADER_BYTES];
        let (got, fd) = recv_with_fd(&self.socket, &mut header).map_err(|error| Error::IpcIo {
            what: "receiving",
            source: Arc::new(error),
        })?;
        if got == 0 {
            return Err(Error::IpcPeerGone {
                what: waiting(kind),
            });
        }
        let mut socket = &self.socket;
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
fn malformed(kind: Kind) -> Error {
    Error::IpcProtocol {
        detail: format!("{} arrived malformed", kind.what()).into(),
    }
}

/// An operating-system error as [`Error::IpcIo`], or [`Error::IpcPeerGone`] when it says the
/// other end closed the channel.
fn gone_or(error: io::Error, what: &'static str) -> Error {
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
fn io_error(what: &'static str) -> impl FnOnce(io::Error) -> Error {
    move |error| Error::IpcIo {
        what,
        source: Arc::new(error),
    }
}

/// Room for one file descriptor's control message, aligned for `cmsghdr`.
#[repr(C, align(8))]
struct ControlBuffer([u8; 32]);

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_descriptor_fits_the_control_buffer() {
        // SAFETY: CMSG_SPACE only computes a size.
        let space = unsafe { libc::CMSG_SPACE(size_of::<libc::c_int>() as u32) } as usize;
        assert!(space <= size_of::<ControlBuffer>());
    }

    #[test]
    fn bytes_and_descriptors_cross_and_kinds_are_checked() {
        let (a, b) = Channel::pair().unwrap();
        a.send_bytes(b"hello").unwrap();
        assert_eq!(b.recv_bytes().unwrap(), b"hello");
        // A descriptor beside a message arrives as a new descriptor of the same file.
        let file = tempfile_with(b"shared through SCM_RIGHTS");
        a.send(Kind::Pool, &[POOL_BY_FD], Some(file.as_fd()))
            .unwrap();
        let (payload, fd) = b.recv(Kind::Pool).unwrap();
        assert_eq!(payload, [POOL_BY_FD]);
        let mut text = String::new();
        let mut received = std::fs::File::from(fd.expect("a descriptor"));
        use std::io::Seek;
        received.rewind().unwrap();
        received.read_to_string(&mut text).unwrap();
        assert_eq!(text, "shared through SCM_RIGHTS");
        // Another kind than the one asked for is refused, naming both.
        a.send_bytes(b"x").unwrap();
        let error = b.recv(Kind::Buffer).unwrap_err();
        assert!(
            error.to_string().contains("expected a buffer, got bytes"),
            "{error}"
        );
        // A message too long for the channel is refused before it is sent.
        let long = vec![0u8; MAX_MESSAGE_BYTES + 1];
        assert!(matches!(
            a.send_bytes(&long),
            Err(Error::InvalidArgument(_))
        ));
    }

    #[test]
    fn a_pool_travels_with_its_device_and_descriptor() {
        let (a, b) = Channel::pair().unwrap();
        let uuid = Uuid(std::array::from_fn(|i| i as u8 + 1));
        let pool = ExportedPool::new(PoolHandle::PosixFd(tempfile_with(b"pool")), uuid);
        a.send_exported_pool(&pool).unwrap();
        let got = b.recv_exported_pool().unwrap();
        assert_eq!(got.device_uuid(), uuid);
        assert!(matches!(got.handle(), PoolHandle::PosixFd(_)));
        let fabric = ExportedPool::new(PoolHandle::Fabric([9; 64]), uuid);
        a.send_exported_pool(&fabric).unwrap();
        let got = b.recv_exported_pool().unwrap();
        assert!(matches!(got.handle(), PoolHandle::Fabric(data) if *data == [9; 64]));
        // A pool message that says "descriptor" but carries none is malformed.
        let mut payload = uuid.0.to_vec();
        payload.push(POOL_BY_FD);
        a.send(Kind::Pool, &payload, None).unwrap();
        let error = b.recv_exported_pool().unwrap_err();
        assert!(
            error.to_string().contains("memory pool arrived malformed"),
            "{error}"
        );
        a.send(Kind::Pool, &[POOL_BY_FD], None).unwrap();
        assert!(matches!(
            b.recv_exported_pool(),
            Err(Error::IpcProtocol { .. })
        ));
    }

    #[test]
    fn virtual_memory_chunks_cross_with_their_descriptors() {
        let (a, b) = Channel::pair().unwrap();
        let mib2 = 2 << 20;
        let chunks = vec![
            (
                tempfile_with(b"first"),
                VmmShareDescriptor::test_chunk(0, 0, mib2, 2 * mib2),
            ),
            (
                tempfile_with(b"second"),
                VmmShareDescriptor::test_chunk(1, mib2, mib2, 2 * mib2),
            ),
        ];
        a.send_vmm_chunks(&chunks).unwrap();
        let got = b.recv_vmm_chunks().unwrap();
        assert_eq!(got.len(), 2);
        for ((fd, descriptor), (_, sent)) in got.into_iter().zip(&chunks) {
            assert_eq!(descriptor, *sent);
            let mut file = std::fs::File::from(fd);
            let mut text = String::new();
            use std::io::Seek;
            file.rewind().unwrap();
            file.read_to_string(&mut text).unwrap();
            assert!(text == "first" || text == "second");
        }
        // A chunk without its file descriptor is malformed; so is a count past the limit.
        a.send(Kind::VmmChunks, &1u32.to_le_bytes(), None).unwrap();
        a.send(Kind::VmmChunk, &chunks[0].1.to_bytes(), None)
            .unwrap();
        let error = b.recv_vmm_chunks().unwrap_err();
        assert!(
            error
                .to_string()
                .contains("virtual-memory chunk arrived malformed"),
            "{error}"
        );
        a.send(
            Kind::VmmChunks,
            &(MAX_VMM_CHUNKS as u32 + 1).to_le_bytes(),
            None,
        )
        .unwrap();
        assert!(matches!(
            b.recv_vmm_chunks(),
            Err(Error::IpcProtocol { .. })
        ));
    }

    #[test]
    fn a_closed_channel_is_the_peer_gone() {
        let (a, b) = Channel::pair().unwrap();
        drop(b);
        assert_eq!(a.wait_released().unwrap(), Released::PeerGone);
        assert!(matches!(
            a.recv_bytes(),
            Err(Error::IpcPeerGone {
                what: "waiting for bytes"
            })
        ));
        assert!(matches!(
            a.send_bytes(b"anyone?"),
            Err(Error::IpcPeerGone { .. })
        ));
    }

    #[test]
    fn a_release_notice_is_acknowledged_and_garbage_is_refused() {
        let (a, b) = Channel::pair().unwrap();
        b.send(Kind::Released, &[], None).unwrap();
        assert_eq!(a.wait_released().unwrap(), Released::Acknowledged);
        (&b.socket).write_all(b"GET / HTTP/1.1\r\n").unwrap();
        let error = a.recv_bytes().unwrap_err();
        assert!(matches!(error, Error::IpcProtocol { .. }), "{error}");
    }

    #[test]
    fn a_timeout_ends_a_wait_for_a_silent_peer() {
        let (a, _b) = Channel::pair().unwrap();
        a.set_timeout(Some(Duration::from_millis(20))).unwrap();
        let error = a.wait_released().unwrap_err();
        assert!(matches!(error, Error::IpcIo { .. }), "{error}");
    }

    /// A file holding `text`, already unlinked.
    fn tempfile_with(text: &[u8]) -> OwnedFd {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(text).unwrap();
        OwnedFd::from(file)
    }
}
