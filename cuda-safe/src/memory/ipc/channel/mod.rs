//! A UNIX-socket channel between two processes that carries pools (their file descriptors),
//! buffers, events and the release of imported buffers.

mod listener;
#[cfg(test)]
mod tests;
mod wire;

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use super::share::{ExportedPool, IpcBufferDescriptor, PoolHandle};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::event::Event;
use crate::memory::vmm::VmmShareDescriptor;
use crate::memory::{Buffer, DeviceMemoryResource};
use crate::stream::Stream;
use crate::uuid::Uuid;

pub use listener::Listener;
pub use wire::MAX_MESSAGE_BYTES;
use wire::{Kind, io_error, malformed};

/// The most virtual-memory chunks [`Channel::send_vmm_chunks`] sends at once (a file
/// descriptor each).
pub const MAX_VMM_CHUNKS: usize = 1 << 16;

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
        wire::send(&self.socket, kind, payload, fd)
    }

    /// Receives one message, which must be of `kind`: its payload and its file descriptor.
    fn recv(&self, kind: Kind) -> Result<(Vec<u8>, Option<OwnedFd>)> {
        wire::recv(&self.socket, kind)
    }
}
