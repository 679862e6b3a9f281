//! Peer access between devices: what the topology allows, turning direct access on and off
//! between contexts, and granting a device access to another device's memory pool.
//!
//! Copies between buffers of two devices need none of this: [`Buffer::copy_from`] and
//! [`DeviceSliceMut::copy_from`] queue a `cuMemcpyPeerAsync` when the two sides live on
//! different devices (the driver stages the bytes through the host when the devices cannot
//! reach each other; with access enabled, the copy engines move them over NVLink or PCIe).
//! A kernel on one device reading another device's memory needs access: to a pool's memory
//! through [`DeviceMemoryResource::grant_access`], to memory of other allocators through
//! [`Context::enable_peer_access`].
//!
//! ```no_run
//! use cuda_safe::{Device, DeviceMemoryResource};
//!
//! let (gpu0, gpu1) = (Device::new(0)?, Device::new(1)?);
//! if gpu1.can_access_peer(&gpu0)? {
//!     // Kernels on GPU 1 may now read and write what GPU 0's default pool allocates.
//!     DeviceMemoryResource::default_pool(&gpu0)?.grant_access(&gpu1)?;
//!     // ... and GPU 1's kernels may use GPU 0's other allocations.
//!     gpu1.enable_peer_access(&gpu0)?;
//! }
//! # Ok::<(), cuda_safe::Error>(())
//! ```
//!
//! [`Buffer::copy_from`]: crate::Buffer::copy_from
//! [`DeviceSliceMut::copy_from`]: crate::DeviceSliceMut::copy_from

use crate::abi;
use crate::context::Context;
use crate::device::Device;
use crate::error::{Error, Result, cu};
use crate::memory::DeviceMemoryResource;
use cuda_sys::{
    CUDA_POINTER_ATTRIBUTE_ACCESS_FLAGS, CUdevice_P2PAttribute, CUdeviceptr, CUmemAccess_flags,
    CUmemAccessDesc, CUpointer_attribute, CUresult,
};

/// What the link from one device to another supports (`cuDeviceGetP2PAttribute`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct PeerAttributes {
    /// Whether the first device can access the second's memory directly.
    pub access_supported: bool,
    /// Whether atomics on the second device's memory are native over the link.
    pub native_atomics: bool,
    /// Whether the first device can access the second's CUDA arrays.
    pub cuda_array_access: bool,
    /// The link's performance rank relative to the device's other links (lower is better).
    pub performance_rank: i32,
}

impl Device {
    /// What the link from this device to `peer` supports.
    ///
    #[doc = cuda_sys::api_doc!(cuDeviceGetP2PAttribute)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when `peer` is this device; the driver's error.
    #[doc(alias = "cuDeviceGetP2PAttribute")]
    pub fn peer_attributes(&self, peer: &Device) -> Result<PeerAttributes> {
        not_itself(self, peer)?;
        let attribute = |attribute: CUdevice_P2PAttribute| -> Result<i32> {
            let mut value = 0;
            // SAFETY: `value` is a valid place for an int; both handles came from cuDeviceGet.
            unsafe {
                cu!(
                    self.driver(),
                    cuDeviceGetP2PAttribute(&mut value, attribute, self.as_raw(), peer.as_raw())
                )
            }?;
            Ok(value)
        };
        type A = CUdevice_P2PAttribute;
        Ok(PeerAttributes {
            access_supported: attribute(A::CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED)? != 0,
            native_atomics: attribute(A::CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED)? != 0,
            cuda_array_access: attribute(A::CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED)?
                != 0,
            performance_rank: attribute(A::CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK)?,
        })
    }

    /// Lets kernels in this device's primary context access memory of `peer`'s primary context
    /// (both retained, and kept so). Idempotent: enabling it again is not an error. Access is
    /// one way: enable it from `peer` too for the other direction.
    ///
    #[doc = cuda_sys::api_doc!(cuCtxEnablePeerAccess)]
    /// # Errors
    ///
    /// As [`Context::enable_peer_access`].
    #[doc(alias = "cuCtxEnablePeerAccess")]
    pub fn enable_peer_access(&self, peer: &Device) -> Result<()> {
        self.context()?.enable_peer_access(&peer.context()?)
    }

    /// Stops what [`enable_peer_access`](Self::enable_peer_access) allowed. Idempotent.
    ///
    #[doc = cuda_sys::api_doc!(cuCtxDisablePeerAccess)]
    /// # Errors
    ///
    /// As [`Context::disable_peer_access`].
    #[doc(alias = "cuCtxDisablePeerAccess")]
    pub fn disable_peer_access(&self, peer: &Device) -> Result<()> {
        self.context()?.disable_peer_access(&peer.context()?)
    }
}

impl Context {
    /// Lets kernels in this context access memory allocated in `peer` (with `cuMemAlloc` and
    /// the other context-bound allocators; pool memory needs
    /// [`DeviceMemoryResource::grant_access`]). Idempotent.
    ///
    #[doc = cuda_sys::api_doc!(cuCtxEnablePeerAccess)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when both contexts are on the same device;
    /// [`Error::Unsupported`] when the topology does not allow this device to reach the peer
    /// ([`Device::can_access_peer`] is false); the driver's error (for instance
    /// `CUDA_ERROR_TOO_MANY_PEERS`).
    #[doc(alias = "cuCtxEnablePeerAccess")]
    pub fn enable_peer_access(&self, peer: &Context) -> Result<()> {
        reachable(self.device(), peer.device())?;
        let _current = self.scoped()?;
        // SAFETY: `peer` is a live context; flags must be 0; this context is current.
        let result = unsafe { cu!(self.driver(), cuCtxEnablePeerAccess(peer.as_raw(), 0)) };
        tolerate(result, CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
    }

    /// Stops what [`enable_peer_access`](Self::enable_peer_access) allowed. Idempotent.
    ///
    #[doc = cuda_sys::api_doc!(cuCtxDisablePeerAccess)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when both contexts are on the same device; the driver's
    /// error.
    #[doc(alias = "cuCtxDisablePeerAccess")]
    pub fn disable_peer_access(&self, peer: &Context) -> Result<()> {
        not_itself(self.device(), peer.device())?;
        let _current = self.scoped()?;
        // SAFETY: `peer` is a live context; this context is current.
        let result = unsafe { cu!(self.driver(), cuCtxDisablePeerAccess(peer.as_raw())) };
        tolerate(result, CUresult::CUDA_ERROR_PEER_ACCESS_NOT_ENABLED)
    }

    /// Whether kernels in this context may read and write the memory at `address`, as the
    /// driver answers: its device's own memory, another device's whose pool granted access
    /// ([`DeviceMemoryResource::grant_access`]) or whose context this one enabled
    /// ([`enable_peer_access`](Self::enable_peer_access)), pinned or managed host memory.
    /// A view says where its memory lives ([`DeviceSlice::home`](crate::DeviceSlice::home)):
    /// ask this only of another device's.
    ///
    #[doc = cuda_sys::api_doc!(cuPointerGetAttribute)]
    /// # Errors
    ///
    /// The driver's error (`CUDA_ERROR_INVALID_VALUE` for an address it did not allocate,
    /// map or register).
    #[doc(alias = "cuPointerGetAttribute")]
    pub fn can_access(&self, address: CUdeviceptr) -> Result<bool> {
        type Flags = CUDA_POINTER_ATTRIBUTE_ACCESS_FLAGS;
        let mut flags = Flags::CU_POINTER_ATTRIBUTE_ACCESS_FLAG_NONE;
        let _current = self.scoped()?;
        // SAFETY: the attribute's value is one `CUDA_POINTER_ATTRIBUTE_ACCESS_FLAGS`, written
        // to `flags`; this context is current, the one the driver answers for.
        unsafe {
            cu!(
                self.driver(),
                cuPointerGetAttribute(
                    (&raw mut flags).cast(),
                    CUpointer_attribute::CU_POINTER_ATTRIBUTE_ACCESS_FLAGS,
                    address
                )
            )
        }?;
        Ok(flags == Flags::CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE)
    }
}

impl DeviceMemoryResource {
    /// Lets kernels and copies on `device` read and write this pool's memory, present and
    /// future allocations alike. Idempotent; granting the pool's own device is a no-op.
    ///
    #[doc = cuda_sys::api_doc!(cuMemPoolSetAccess)]
    /// # Errors
    ///
    /// [`Error::Unsupported`] when `device` cannot reach the pool's device; the driver's error.
    #[doc(alias = "cuMemPoolSetAccess")]
    pub fn grant_access(&self, device: &Device) -> Result<()> {
        let home = self.home();
        if device == &home {
            return Ok(());
        }
        reachable(device, &home)?;
        self.set_access(
            device,
            CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
        )
    }

    /// Takes back what [`grant_access`](Self::grant_access) gave `device`. Every kernel on
    /// `device` that uses the memory must be done first.
    ///
    #[doc = cuda_sys::api_doc!(cuMemPoolSetAccess)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for the pool's own device, which always has access; the
    /// driver's error.
    #[doc(alias = "cuMemPoolSetAccess")]
    pub fn revoke_access(&self, device: &Device) -> Result<()> {
        if device == &self.home() {
            return Err(Error::invalid_argument(
                "a pool's own device always has access to it",
            ));
        }
        self.set_access(device, CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_NONE)
    }

    /// Whether kernels on `device` may read and write this pool's memory.
    ///
    #[doc = cuda_sys::api_doc!(cuMemPoolGetAccess)]
    /// # Errors
    ///
    /// The driver's error.
    #[doc(alias = "cuMemPoolGetAccess")]
    pub fn is_accessible_from(&self, device: &Device) -> Result<bool> {
        let mut location = abi::device_location(device.ordinal() as i32);
        let mut flags = CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_NONE;
        // SAFETY: valid out-pointer, location and pool handle.
        unsafe {
            cu!(
                device.driver(),
                cuMemPoolGetAccess(&mut flags, self.as_raw(), &mut location)
            )
        }?;
        Ok(flags == CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
    }

    fn set_access(&self, device: &Device, flags: CUmemAccess_flags) -> Result<()> {
        let access = CUmemAccessDesc {
            location: abi::device_location(device.ordinal() as i32),
            flags,
        };
        // SAFETY: one valid access descriptor; the pool handle is live.
        unsafe {
            cu!(
                device.driver(),
                cuMemPoolSetAccess(self.as_raw(), &access, 1)
            )
        }
    }
}

/// Errors when `device` and `peer` are the same device.
fn not_itself(device: &Device, peer: &Device) -> Result<()> {
    if device == peer {
        return Err(Error::invalid_argument(format!(
            "peer access needs two devices; both are device {}",
            device.ordinal()
        )));
    }
    Ok(())
}

/// Errors unless `device` can reach `peer`'s memory directly.
fn reachable(device: &Device, peer: &Device) -> Result<()> {
    not_itself(device, peer)?;
    if !device.can_access_peer(peer)? {
        return Err(Error::unsupported(
            "peer access",
            format!(
                "device {} cannot access device {}'s memory directly (no NVLink or PCIe peer \
                 path; cuDeviceCanAccessPeer is 0)",
                device.ordinal(),
                peer.ordinal()
            ),
        ));
    }
    Ok(())
}

/// `result`, with the driver's error `code` (the state asked for holds already) taken as
/// success.
fn tolerate(result: Result<()>, code: CUresult) -> Result<()> {
    match result {
        Err(error) if error.cuda_code() == Some(code) => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_already_asked_for_is_success() {
        let already = Error::cuda(
            "cuCtxEnablePeerAccess",
            CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED,
        );
        assert!(
            tolerate(
                Err(already),
                CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED
            )
            .is_ok()
        );
        let other = Error::cuda("cuCtxEnablePeerAccess", CUresult::CUDA_ERROR_TOO_MANY_PEERS);
        let error =
            tolerate(Err(other), CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED).unwrap_err();
        assert_eq!(error.cuda_code(), Some(CUresult::CUDA_ERROR_TOO_MANY_PEERS));
    }
}
