//! Sharing GPU memory and events with other processes: shareable pools, their buffers, IPC
//! events, and a UNIX-socket [`Channel`] that carries them.
//!
//! # The protocol
//!
//! The exporting process owns the memory; the importing process maps it. The driver requires
//! that the importer has unmapped a buffer before the exporter frees it, and that the importer
//! does not touch it before the exporter's writes are done. The channel makes both explicit:
//!
//! 1. The exporter creates a pool with [`PoolOptions::ipc`](crate::PoolOptions::ipc),
//!    allocates from it, and sends the pool ([`Channel::send_pool`]) and the buffer
//!    ([`Channel::send_buffer`], which waits until the allocation and the writes queued before
//!    it are complete). For work queued later, it records an event created with
//!    [`EventOptions::ipc`](crate::EventOptions::ipc) and sends that
//!    ([`Channel::send_event`]); the importer's streams [`wait`](crate::Stream::wait) on it.
//! 2. The importer receives the pool ([`Channel::recv_pool`], which imports it) and the buffer
//!    ([`Channel::recv_buffer`]): an ordinary [`Buffer`](crate::Buffer) that keeps the
//!    imported pool alive. When done, it hands the buffer to [`Channel::release`], which
//!    unmaps it, waits for the unmapping and tells the exporter.
//! 3. The exporter keeps its buffer until [`Channel::wait_released`] returns: either the
//!    importer said so, or its process is gone (exited or killed: the driver unmapped what it
//!    had imported). Only then does it drop the buffer.
//!
//! ```no_run
//! use cuda_safe::ipc::{Channel, Released};
//! use cuda_safe::{Device, DeviceMemoryResource, IpcHandleType, PoolOptions};
//!
//! // The exporter (the child's end of the channel reaches the other process; see the
//! // `ipc_pool` example for a parent starting its child over a socket path).
//! let (channel, _child_end) = Channel::pair()?;
//! let device = Device::new(0)?;
//! let stream = device.create_stream(Default::default())?;
//! let options = PoolOptions { ipc: Some(IpcHandleType::PosixFd), ..Default::default() };
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
//! channel poisoned ([`Error::IpcPoisoned`](crate::Error::IpcPoisoned) from then on). Received
//! pool and chunk descriptors are checked to be ones that can hold GPU memory.
//!
//! Pools can also travel as fabric handles ([`IpcHandleType::Fabric`](crate::IpcHandleType))
//! between processes of one NVLink fabric, and as bare values through
//! [`DeviceMemoryResource::export_pool`](crate::DeviceMemoryResource::export_pool) and
//! [`IpcBufferDescriptor`] for callers with a transport of their own.

mod channel;
mod share;

pub use channel::{Channel, Listener, MAX_MESSAGE_BYTES, MAX_VMM_CHUNKS, Released};
pub use share::{ExportedPool, IpcBufferDescriptor, PoolHandle};
