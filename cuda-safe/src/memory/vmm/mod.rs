//! Virtual memory management: address space reserved up front, physical memory mapped into it
//! at the allocation granularity, access granted per device, and memory that grows without
//! copying ([`GrowableBuffer`]) or is shared with other processes through OS handles
//! ([`VirtualMapping::export_fds`], [`VirtualMemoryResource::import_fds`]).
//!
//! ```no_run
//! use cuda_safe::{Device, VirtualMemoryResource, VirtualMemoryResourceOptions};
//!
//! let device = Device::new(0)?;
//! let stream = device.create_stream(Default::default())?;
//! let vmm = VirtualMemoryResource::new(&device, VirtualMemoryResourceOptions::default())?;
//! // 2 MiB mapped now inside 1 GiB of reserved address space.
//! let mut buffer = vmm.growable(2 << 20, 1 << 30, &stream)?;
//! let start = buffer.as_raw();
//! buffer.as_mut_slice::<u32>()?.fill(7)?;
//! buffer.grow(64 << 20)?; // maps one more chunk at the end: no copy, same address
//! assert_eq!(buffer.as_raw(), start);
//! assert_eq!(buffer.as_slice::<u32>()?.slice(..4)?.to_vec()?, [7; 4]);
//! # Ok::<(), cuda_safe::Error>(())
//! ```
//!
//! Teardown follows the driver's order: every mapping is unmapped, then every physical
//! allocation released, then the address range freed. Each step is tried even when an
//! earlier one failed; `close` returns the first failure and logs the others, and a drop logs
//! them all.

mod growable;
mod options;
mod region;
mod resource;
mod share;

pub use growable::{GrowableBuffer, Growth};
pub use options::{VirtualMemoryResourceOptions, VmmAccess, VmmGranularity, VmmLocation};
pub use resource::{VirtualMapping, VirtualMemoryResource};
pub use share::{FabricHandle, VmmShareDescriptor};
