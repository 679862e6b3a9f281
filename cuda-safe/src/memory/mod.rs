//! Memory: resources that allocate, and the buffers they hand out.
//!
//! A [`Buffer`] owns one allocation and is tied to a [`Stream`]: every safe operation on it
//! (copies, fills) is queued on that stream, and dropping it frees the memory in stream order
//! there (device pools) or after that stream has drained (pinned, managed and `cuMemAlloc`
//! memory, [`SyncDeviceMemoryResource`]). So a buffer can never be freed while a safe
//! operation still uses it. Copies between buffers on different streams make each stream wait
//! for the other around the copy.
//!
//! ```no_run
//! use cuda_safe::Device;
//!
//! let device = Device::new(0)?;
//! let stream = device.create_stream(Default::default())?;
//! let pool = device.default_memory_resource()?; // stream-ordered, reuses freed memory
//! let x = pool.allocate_from_host(&[1.5f32; 1024], &stream)?; // 1024 floats, copied
//! let mut y = pool.allocate_zeroed::<f32>(1024, &stream)?;
//! y.fill(2.5f32)?;
//! let back: Vec<f32> = x.to_vec()?;
//! assert_eq!(back[1023], 1.5);
//! # Ok::<(), cuda_safe::Error>(())
//! ```

mod buffer;
pub(crate) mod copies;
mod device_pool;
mod device_sync;
mod fill;
mod host;
#[cfg(unix)]
pub mod ipc;
pub mod managed;
pub(crate) mod peer;
mod resource;
mod slice;
pub(crate) mod texture;
pub(crate) mod vmm;

pub use buffer::Buffer;
pub(crate) use device_pool::pool_props;
pub use device_pool::{DeviceMemoryResource, IpcHandleType, PoolOptions};
pub use device_sync::SyncDeviceMemoryResource;
pub(crate) use fill::memset_description;
pub use host::{ManagedMemoryResource, PinnedBlock, PinnedMemoryResource};
pub use resource::MemoryResource;
pub(crate) use resource::{forward_memory_resource, typed_allocations};
pub use slice::{DeviceSlice, DeviceSliceMut};
pub(crate) use slice::{Placement, element_count};
