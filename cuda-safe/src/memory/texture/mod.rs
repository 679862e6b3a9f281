//! Textures and surfaces, as `cuda.core.texture` has them: [`TextureObject`]s sample a
//! [`CudaArray`](crate::CudaArray), a [`MipmappedArray`] or linear or pitched memory with the
//! GPU's texture units (address modes, filtering, normalized coordinates, sRGB, border
//! colours, mipmap levels: a [`TextureDescriptor`]); [`SurfaceObject`]s read and write an
//! array made with [`ArrayFlags::SURFACE_LOAD_STORE`](crate::ArrayFlags::SURFACE_LOAD_STORE).
//!
//! Each object keeps what it reads alive and is ordered on that resource's stream, so a kernel
//! taking it as an argument is ordered like one taking a buffer; every descriptor field is
//! checked against the resource and the device's [`TextureLimits`] before the driver sees it.
//!
//! ```no_run
//! use cuda_safe::{
//!     AddressMode, ArrayDescriptor, ArrayFormat, Copy3d, CudaArray, Device, FilterMode,
//!     HostPitched, TextureDescriptor, TextureObject,
//! };
//!
//! let device = Device::new(0)?;
//! let stream = device.create_stream(Default::default())?;
//! let shape = ArrayDescriptor::new(64, ArrayFormat::F32, 1).height(64).depth(0);
//! let mut image = CudaArray::new(&stream, shape)?;
//! let pixels = vec![0.5f32; 64 * 64];
//! image.copy_from_host(&HostPitched::rows(&pixels, 64 * 4)?, &Copy3d::rect(64 * 4, 64))?;
//! let texture = TextureObject::from_array(
//!     &image,
//!     &TextureDescriptor::default()
//!         .address_modes([AddressMode::Wrap; 3])
//!         .filter(FilterMode::Linear)
//!         .normalized_coordinates(true),
//! )?;
//! // Pass `&texture` to a kernel taking a `cudaTextureObject_t` and sample it with tex2D.
//! # Ok::<(), cuda_safe::Error>(())
//! ```

mod descriptor;
mod limits;
mod mipmapped;
mod object;
mod release;
mod surface;

pub use descriptor::{AddressMode, FilterMode, ReadMode, TextureDescriptor};
pub use limits::TextureLimits;
pub use mipmapped::MipmappedArray;
pub use object::TextureObject;
pub use surface::SurfaceObject;
