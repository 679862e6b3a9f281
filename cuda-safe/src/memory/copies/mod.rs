//! 2-D and 3-D copies (`cuMemcpy2DAsync`, `cuMemcpy3DAsync`) between pitched device memory
//! ([`Pitched`], [`PitchedMut`]: views of a [`Buffer`](crate::Buffer) with a chosen pitch, or
//! of a [`PitchedBuffer`] with the driver's), host slices ([`HostPitched`],
//! [`HostPitchedMut`]) and CUDA arrays ([`CudaArray`]).
//!
//! A [`Copy3d`] says what moves: `depth` slices of `height` rows of `width_bytes` bytes, from
//! an offset on one side to an offset on the other. Every extent is checked against both
//! sides before the driver is called, and an error names the side and the extent.
//!
//! ```no_run
//! use cuda_safe::{Copy3d, Device, HostPitched, HostPitchedMut, PitchedBuffer};
//!
//! let device = Device::new(0)?;
//! let stream = device.create_stream(Default::default())?;
//! // A 100 x 64 image of f32, rows padded by the driver.
//! let mut image = PitchedBuffer::allocate(&stream, 100 * 4, 64, 1, 4)?;
//! let host = vec![1.0f32; 100 * 64];
//! let rows = HostPitched::rows(&host, 100 * 4)?;
//! image.view_mut::<f32>()?.copy_from_host(&rows, &Copy3d::rect(100 * 4, 64))?;
//! // Read back the 10 x 10 square at column 20, row 30.
//! let mut square = vec![0.0f32; 10 * 10];
//! let mut out = HostPitchedMut::rows(&mut square, 10 * 4)?;
//! let copy = Copy3d::rect(10 * 4, 10).from_offset(20 * 4, 30, 0);
//! image.view::<f32>()?.copy_to_host(&mut out, &copy)?;
//! assert_eq!(square, [1.0; 100]);
//! # Ok::<(), cuda_safe::Error>(())
//! ```
//!
//! Copies between device memory on different streams are ordered like
//! [`DeviceSliceMut::copy_from`](crate::DeviceSliceMut::copy_from): on the destination's
//! stream, after the source's queued work. Host copies wait (`copy_from_host`,
//! `copy_to_host`) or, `unsafe`, return at once (`..._async`).

mod array;
mod engine;
mod extent;
mod pitched_buffer;
mod views;

pub(crate) use array::check_flags;
pub use array::{ArrayDescriptor, ArrayFlags, ArrayFormat, CudaArray};
pub(crate) use engine::{NodeSide, linear_description, node_description};
pub use extent::{Copy3d, Offset3};
pub use pitched_buffer::PitchedBuffer;
pub use views::{HostPitched, HostPitchedMut, Pitched, PitchedMut};
