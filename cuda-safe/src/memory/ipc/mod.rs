//! Sharing GPU memory and events with other processes, as values: shareable pools
//! ([`PoolOptions::ipc`](crate::PoolOptions::ipc),
//! [`DeviceMemoryResource::export_pool`](crate::DeviceMemoryResource::export_pool)), their
//! buffers ([`IpcBufferDescriptor`]), VMM chunks and IPC events
//! ([`EventOptions::ipc`](crate::EventOptions::ipc)). The values travel over a transport of the
//! caller's: the `cuda-safe-ipc` crate's UNIX-socket `Channel` carries them (descriptors
//! included) with the protocol that keeps the exporter from freeing what the importer still
//! maps; `docs/multi-gpu.md` describes it.
//!
//! Pools can also travel as fabric handles ([`IpcHandleType::Fabric`](crate::IpcHandleType))
//! between processes of one NVLink fabric.

mod share;

pub use share::{ExportedPool, IpcBufferDescriptor, PoolHandle};
