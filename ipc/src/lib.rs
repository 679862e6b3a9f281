//! A UNIX-socket [`Channel`] between two processes that carries `cuda-safe`'s shareable pools
//! (their file descriptors), buffers, VMM chunks, IPC events and the release of imported
//! buffers: the transport beside the core's IPC values (`cuda_safe::ipc`).
//!
//! # The protocol
//!
//! The exporting process owns the memory; the importing process maps it. The driver requires
//! that the importer has unmapped a buffer before the exporter frees it, and that the importer
//! does not touch it before the exporter's writes are done. The channel makes both explicit:
//!
//! 1. The exporter creates a pool with [`PoolOptions::ipc`](cuda_safe::PoolOptions::ipc),
//!    allocates from it, and sends the pool ([`Channel::send_pool`]) and the buffer
//!    ([`Channel::send_buffer`], which waits until the allocation and the writes queued before
//!    it are complete). For work queued later, it records an event created with
//!    [`EventOptions::ipc`](cuda_safe::EventOptions::ipc) and sends that
//!    ([`Channel::send_event`]); the importer's streams [`wait`](cuda_safe::Stream::wait) on it.
//! 2. The importer receives the pool ([`Channel::recv_pool`], which imports it) and the buffer
//!    ([`Channel::recv_buffer`]): an ordinary [`Buffer`] that keeps the
//!    imported pool alive. When done, it hands the buffer to [`Channel::release`], which
//!    unmaps it, waits for the unmapping and tells the exporter.
//! 3. The exporter keeps its buffer until [`Channel::wait_released`] returns: either the
//!    importer said so, or its process is gone (exited or killed: the driver unmapped what it
//!    had imported). Only then does it drop the buffer.
//!
//! ```no_run
//! use cuda_safe_ipc::{Channel, Released};
//! use cuda_safe::{Device, DeviceMemoryResource, IpcHandleType, PoolOptions};
//!
//! // The exporter (the child's end of the channel reaches the other process; see the
//! // `ipc_pool` example for a parent starting its child over a socket path).
//! let (channel, _child_end) = Channel::pair()?;
//! let device = Device::new(0)?;
//! let stream = device.create_stream(Default::default())?;
//! let options = PoolOptions::default().ipc(IpcHandleType::PosixFd);
//! let pool = DeviceMemoryResource::new_pool(&device, options)?;
//! let buffer = pool.allocate_from_host(&[7u32; 1024], &stream)?;
//! channel.send_pool(&pool)?;
//! channel.send_buffer(&buffer)?;
//! let released: Released = channel.wait_released()?;
//! drop(buffer); // now the other process holds no mapping of it
//! # Ok::<(), cuda_safe::Error>(())
//! ```
//!
//! Each call on a channel can be bounded ([`Channel::set_timeout`]: a deadline for the whole
//! message, whatever pace the other process keeps), and so can an accept
//! ([`Listener::accept_timeout`]). A call that stops in the middle of a message leaves the
//! channel poisoned ([`IpcError::Poisoned`] from then on). Received
//! pool and chunk descriptors are checked to be ones that can hold GPU memory.
//!
//! Received descriptors count against the process's open-file limit (`ulimit -n`):
//! [`Channel::recv_vmm_chunks`] refuses, before any chunk comes, a declared count past what
//! the process can hold with a quarter of its soft limit kept free
//! ([`IpcError::DescriptorLimit`]), and a descriptor that comes when none is free is
//! [`IpcError::Io`] with `EMFILE` (or `ENFILE`) as its source, never blamed on the peer.
//!
//! Pools can also travel as fabric handles
//! ([`IpcHandleType::Fabric`](cuda_safe::IpcHandleType)) between processes of one NVLink
//! fabric, and as bare values through
//! [`DeviceMemoryResource::export_pool`](cuda_safe::DeviceMemoryResource::export_pool) and
//! [`IpcBufferDescriptor`] for callers with a transport of
//! their own.
//!
//! Each call is bounded by the channel's timeout ([`Channel::set_timeout`]) as a whole: the
//! deadline is set when the call starts and every wait for the socket is cut to the time left,
//! so a peer that trickles its bytes cannot make a message take longer.
//!
//! Unix only: on other systems the crate is empty.

#![cfg_attr(docsrs, feature(doc_cfg))]
#![cfg(unix)]

mod error;
mod fd_kind;
mod fd_limit;
#[cfg(all(test, target_os = "linux"))]
mod flood;
#[cfg(all(test, target_os = "linux"))]
mod hostile;
mod io;
mod listener;
#[cfg(all(test, target_os = "linux"))]
mod tests;
mod wire;

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Duration;

use cuda_safe::Context;
use cuda_safe::Event;
use cuda_safe::Stream;
use cuda_safe::Uuid;
use cuda_safe::VmmShareDescriptor;
use cuda_safe::ipc::{ExportedPool, IpcBufferDescriptor, PoolHandle};
use cuda_safe::{Buffer, DeviceMemoryResource};
use cuda_safe::{Error, Result};

pub use error::IpcError;
use error::ipc_error;
use io::Deadline;
pub use listener::Listener;
pub use wire::MAX_MESSAGE_BYTES;
use wire::{Kind, Transfer, io_error, malformed};

/// The most virtual-memory chunks [`Channel::send_vmm_chunks`] sends at once (a file
/// descriptor each).
pub const MAX_VMM_CHUNKS: usize = 1 << 16;

/// A pool message holds its device's UUID (16 bytes), then how the pool travels (1 byte: a
/// file descriptor beside the message, or a fabric handle of 64 bytes after this byte).
const POOL_BY_FD: u8 = 1;
const POOL_BY_FABRIC: u8 = 2;
/// The length of a pool message whose pool travels as a file descriptor.
const POOL_BYTES_FD: usize = 16 + 1;
/// The length of a pool message carrying a fabric handle.
const POOL_BYTES_FABRIC: usize = 16 + 1 + 64;

/// How the other process answered [`Channel::wait_released`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
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
/// and refuses another ([`IpcError::Protocol`]), as it refuses a length or a file descriptor
/// the protocol does not give that kind. A closed channel is [`IpcError::PeerGone`]. Each call
/// is one deadline ([`set_timeout`](Self::set_timeout)); one that stops in the middle of a
/// message poisons the channel ([`IpcError::Poisoned`] from then on). See the
/// [crate documentation](crate) for the protocol that keeps memory alive while the other
/// process uses it.
#[derive(Debug)]
pub struct Channel {
    socket: UnixStream,
    /// How long each call may take (`None`: for ever).
    timeout: Mutex<Option<Duration>>,
    /// What the call was doing that stopped in the middle of a message, once one has.
    poisoned: OnceLock<&'static str>,
}

impl Channel {
    /// Two connected ends, for a process that hands one to a child it forks (or to another
    /// thread, for tests).
    ///
    /// # Errors
    ///
    /// [`IpcError::Io`] from the operating system.
    pub fn pair() -> Result<(Self, Self)> {
        let (a, b) = UnixStream::pair().map_err(io_error("creating a socket pair"))?;
        Ok((Self::from_unix_stream(a), Self::from_unix_stream(b)))
    }

    /// Connects to a [`Listener`] at `path`.
    ///
    /// # Errors
    ///
    /// [`IpcError::Io`] from the operating system.
    pub fn connect(path: impl AsRef<Path>) -> Result<Self> {
        let socket = UnixStream::connect(path).map_err(io_error("connecting"))?;
        Ok(Self::from_unix_stream(socket))
    }

    /// A channel over a connected UNIX stream socket (blocking or not: the channel waits with
    /// `poll(2)` and never blocks in a read or a write).
    pub fn from_unix_stream(socket: UnixStream) -> Self {
        Self {
            socket,
            timeout: Mutex::new(None),
            poisoned: OnceLock::new(),
        }
    }

    /// Bounds every later call (`None`: none, the default): each send and each receive must
    /// move its whole message within `timeout` of its start, whatever pace the other process
    /// keeps, or it fails with [`IpcError::Io`] of kind
    /// [`TimedOut`](std::io::ErrorKind::TimedOut). A call that sends or receives several
    /// messages ([`send_vmm_chunks`](Self::send_vmm_chunks),
    /// [`recv_vmm_chunks`](Self::recv_vmm_chunks)) gets one deadline for all of them. A call
    /// that times out before any byte of its message moved leaves the channel as it was; one
    /// that times out in the middle poisons it ([`IpcError::Poisoned`]).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a zero timeout.
    pub fn set_timeout(&self, timeout: Option<Duration>) -> Result<()> {
        if timeout == Some(Duration::ZERO) {
            return Err(Error::invalid_argument(
                "an IPC channel's timeout must be longer than zero (None waits for ever)",
            ));
        }
        *self.timeout.lock().unwrap_or_else(PoisonError::into_inner) = timeout;
        Ok(())
    }

    /// The timeout each call has ([`set_timeout`](Self::set_timeout)).
    pub fn timeout(&self) -> Option<Duration> {
        *self.timeout.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether a call stopped in the middle of a message, so that every call now fails with
    /// [`IpcError::Poisoned`].
    pub fn is_poisoned(&self) -> bool {
        self.poisoned.get().is_some()
    }

    /// Exports a shareable pool ([`DeviceMemoryResource::export_pool`]) and sends it.
    ///
    /// # Errors
    ///
    /// As [`DeviceMemoryResource::export_pool`] and
    /// [`send_exported_pool`](Self::send_exported_pool).
    pub fn send_pool(&self, pool: &DeviceMemoryResource) -> Result<()> {
        self.send_exported_pool(&pool.export_pool()?)
    }

    /// Sends a pool exported already (its file descriptor stays open here).
    ///
    /// # Errors
    ///
    /// [`IpcError::Io`] (a timeout included), [`IpcError::PeerGone`] or
    /// [`IpcError::Poisoned`].
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
            _ => Err(cuda_safe::Error::unsupported(
                "sending a pool",
                "this channel carries POSIX file descriptors and fabric handles only",
            )),
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

    /// Receives a pool without importing it. A pool that travels as a file descriptor must
    /// come with one that can be a shareable handle: a regular file of a file system, a
    /// socket, a pipe, a directory or a block device is refused (the driver's own handles are
    /// descriptors of its control device).
    ///
    /// # Errors
    ///
    /// [`IpcError::Protocol`] for another message, a malformed one or a descriptor of the
    /// wrong kind; [`IpcError::Io`] (a timeout included), [`IpcError::PeerGone`] or
    /// [`IpcError::Poisoned`].
    pub fn recv_exported_pool(&self) -> Result<ExportedPool> {
        let (payload, fd) = self.recv(Kind::Pool)?;
        let (uuid, handle) = payload
            .split_first_chunk::<16>()
            .ok_or_else(|| malformed(Kind::Pool))?;
        let handle = match (handle, fd) {
            ([POOL_BY_FD], Some(fd)) => {
                fd_kind::check_memory_fd(fd.as_fd(), Kind::Pool)?;
                PoolHandle::PosixFd(fd)
            }
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
    /// As [`Buffer::export_ipc`] and [`send_buffer_descriptor`](Self::send_buffer_descriptor).
    pub fn send_buffer(&self, buffer: &Buffer) -> Result<()> {
        self.send_buffer_descriptor(&buffer.export_ipc()?)
    }

    /// Sends a buffer's descriptor made already.
    ///
    /// # Errors
    ///
    /// [`IpcError::Io`] (a timeout included), [`IpcError::PeerGone`] or
    /// [`IpcError::Poisoned`].
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
    /// [`IpcError::Protocol`] for another message or a malformed one; [`IpcError::Io`] (a
    /// timeout included), [`IpcError::PeerGone`] or [`IpcError::Poisoned`].
    pub fn recv_buffer_descriptor(&self) -> Result<IpcBufferDescriptor> {
        let (payload, _) = self.recv(Kind::Buffer)?;
        IpcBufferDescriptor::from_bytes(&payload).map_err(|_| malformed(Kind::Buffer))
    }

    /// Sends an event created with [`EventOptions::ipc`](cuda_safe::EventOptions::ipc).
    ///
    /// # Errors
    ///
    /// As [`Event::ipc_handle`]; [`IpcError::Io`] (a timeout included),
    /// [`IpcError::PeerGone`] or [`IpcError::Poisoned`].
    pub fn send_event(&self, event: &Event) -> Result<()> {
        self.send(Kind::Event, &event.ipc_handle()?, None)
    }

    /// Receives an event and opens it in `context` ([`Event::open_ipc`]).
    ///
    /// # Errors
    ///
    /// [`IpcError::Protocol`] for another message or a malformed one; [`IpcError::Io`] (a
    /// timeout included), [`IpcError::PeerGone`] or [`IpcError::Poisoned`]; as
    /// [`Event::open_ipc`].
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
    /// The driver's error from the unmapping or the wait; [`IpcError::Io`] (a timeout
    /// included), [`IpcError::PeerGone`] or [`IpcError::Poisoned`].
    pub fn release(&self, buffer: Buffer) -> Result<()> {
        let stream = buffer.stream().clone();
        buffer.close()?;
        stream.sync()?;
        self.send(Kind::Released, &[], None)
    }

    /// Waits until the other process has given back the buffer sent to it
    /// ([`release`](Self::release)) or has closed the channel; after either, the buffer can
    /// be freed here. The notice is exactly what `release` sends: a notice with a payload or a
    /// file descriptor is refused, not taken for a release.
    ///
    /// # Errors
    ///
    /// [`IpcError::Io`] (a timeout set with [`set_timeout`](Self::set_timeout) included);
    /// [`IpcError::Protocol`] for another message or a malformed notice;
    /// [`IpcError::Poisoned`]. After any of them the other process may still hold the buffer.
    pub fn wait_released(&self) -> Result<Released> {
        match self.recv(Kind::Released) {
            Ok(_) => Ok(Released::Acknowledged),
            Err(error) if matches!(ipc_error(&error), Some(IpcError::PeerGone { .. })) => {
                Ok(Released::PeerGone)
            }
            Err(error) => Err(error),
        }
    }

    /// Sends virtual-memory chunks exported as file descriptors
    /// ([`VirtualMapping::export_fds`](cuda_safe::VirtualMapping::export_fds),
    /// [`GrowableBuffer::export_fds`](cuda_safe::GrowableBuffer::export_fds)): each descriptor with
    /// its file descriptor, in order, all within one deadline.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for more than [`MAX_VMM_CHUNKS`] chunks; [`IpcError::Io`] (a
    /// timeout included), [`IpcError::PeerGone`] or [`IpcError::Poisoned`].
    pub fn send_vmm_chunks(&self, chunks: &[(OwnedFd, VmmShareDescriptor)]) -> Result<()> {
        if chunks.len() > MAX_VMM_CHUNKS {
            return Err(Error::invalid_argument(format!(
                "a channel sends at most {MAX_VMM_CHUNKS} chunks at once, not {}",
                chunks.len()
            )));
        }
        self.call(|transfer| {
            transfer.sequence(|transfer| {
                let count = (chunks.len() as u32).to_le_bytes();
                transfer.send(Kind::VmmChunks, &count, None)?;
                for (fd, descriptor) in chunks {
                    transfer.send(Kind::VmmChunk, &descriptor.to_bytes(), Some(fd.as_fd()))?;
                }
                Ok(())
            })
        })
    }

    /// Receives what [`send_vmm_chunks`](Self::send_vmm_chunks) sent, for
    /// [`VirtualMemoryResource::import_fds`](cuda_safe::VirtualMemoryResource::import_fds) (which
    /// checks the descriptors), all within one deadline. Each chunk's file descriptor must be
    /// one that can be a shareable handle (as for [`recv_exported_pool`](Self::recv_exported_pool)).
    /// A chunk refused for what it holds is refused once every chunk has come, so the channel
    /// stays in step.
    ///
    /// The count the sender declares is checked before any chunk is received, against what
    /// this process can hold: its open-file soft limit (`ulimit -n`), less the descriptors it
    /// has open, less a quarter of the limit kept free for the rest of the process (and never
    /// past [`MAX_VMM_CHUNKS`], the protocol's own maximum). So a peer cannot fill the
    /// descriptor table by declaring a large count: at the usual soft limit of 1,024, about
    /// 760 chunks cross in one call.
    ///
    /// # Errors
    ///
    /// [`IpcError::DescriptorLimit`] for a declared count past what this process can hold
    /// (refused before any chunk comes; the rest of the sequence is left unread, so the
    /// channel is poisoned: raise the soft limit or have the sender send fewer at once);
    /// [`IpcError::Protocol`] for another message, a count past [`MAX_VMM_CHUNKS`], a chunk
    /// without its file descriptor or with one of the wrong kind; [`IpcError::Io`] (a timeout
    /// included) — with `EMFILE` (`ENFILE`) as its source when a chunk's descriptor came while
    /// this process (the system) had none free, which poisons the channel —,
    /// [`IpcError::PeerGone`] or [`IpcError::Poisoned`].
    pub fn recv_vmm_chunks(&self) -> Result<Vec<(OwnedFd, VmmShareDescriptor)>> {
        self.call(|transfer| {
            transfer.sequence(|transfer| {
                let (payload, _) = transfer.recv(Kind::VmmChunks)?;
                let count = payload
                    .as_slice()
                    .try_into()
                    .map(u32::from_le_bytes)
                    .map_err(|_| malformed(Kind::VmmChunks))? as usize;
                if count > MAX_VMM_CHUNKS {
                    return Err(malformed(Kind::VmmChunks));
                }
                // Refused before any chunk comes: the rest of the sequence stays unread, so the
                // channel is poisoned (no descriptor of the peer's is ever taken).
                fd_limit::check_declared_chunks(count)?;
                // Transport errors end the sequence at once; a chunk refused for its content
                // is reported after the last one came.
                let mut chunks = Vec::with_capacity(count);
                let mut refused = None;
                for _ in 0..count {
                    let (payload, fd) = transfer.recv(Kind::VmmChunk)?;
                    match chunk(&payload, fd) {
                        Ok(chunk) => chunks.push(chunk),
                        Err(error) => {
                            refused.get_or_insert(error);
                        }
                    }
                }
                Ok(refused.map_or(Ok(chunks), Err))
            })
        })?
    }

    /// Sends the caller's own bytes (at most [`MAX_MESSAGE_BYTES`]).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a longer message; [`IpcError::Io`] (a timeout included),
    /// [`IpcError::PeerGone`] or [`IpcError::Poisoned`].
    pub fn send_bytes(&self, bytes: &[u8]) -> Result<()> {
        self.send(Kind::Bytes, bytes, None)
    }

    /// Receives bytes sent with [`send_bytes`](Self::send_bytes).
    ///
    /// # Errors
    ///
    /// [`IpcError::Protocol`] for another message or a longer one; [`IpcError::Io`] (a
    /// timeout included), [`IpcError::PeerGone`] or [`IpcError::Poisoned`].
    pub fn recv_bytes(&self) -> Result<Vec<u8>> {
        self.recv(Kind::Bytes).map(|(payload, _)| payload)
    }

    /// Sends one message, with `fd` beside it when given.
    fn send(&self, kind: Kind, payload: &[u8], fd: Option<BorrowedFd<'_>>) -> Result<()> {
        self.call(|transfer| transfer.send(kind, payload, fd))
    }

    /// Receives one message, which must be of `kind`: its payload and its file descriptor.
    fn recv(&self, kind: Kind) -> Result<(Vec<u8>, Option<OwnedFd>)> {
        self.call(|transfer| transfer.recv(kind))
    }

    /// Runs one call's messages within one deadline; poisons the channel when the call stops
    /// in the middle of a message (a peer that went away poisons nothing: every later call
    /// sees it gone).
    fn call<T>(&self, body: impl FnOnce(&mut Transfer<'_>) -> Result<T>) -> Result<T> {
        if let Some(what) = self.poisoned.get() {
            return Err(IpcError::Poisoned { what }.into());
        }
        let mut transfer = Transfer::new(&self.socket, Deadline::after(self.timeout()));
        let result = body(&mut transfer);
        if let Err(error) = &result
            && transfer.is_open()
            && !matches!(ipc_error(error), Some(IpcError::PeerGone { .. }))
        {
            let _ = self.poisoned.set(transfer.doing());
        }
        result
    }
}

/// One virtual-memory chunk from its message: its descriptor and its file descriptor.
fn chunk(payload: &[u8], fd: Option<OwnedFd>) -> Result<(OwnedFd, VmmShareDescriptor)> {
    let descriptor =
        VmmShareDescriptor::from_bytes(payload).map_err(|_| malformed(Kind::VmmChunk))?;
    let fd = fd.ok_or_else(|| malformed(Kind::VmmChunk))?;
    fd_kind::check_memory_fd(fd.as_fd(), Kind::VmmChunk)?;
    Ok((fd, descriptor))
}
