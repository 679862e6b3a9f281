//! What crosses a process boundary: a shareable pool as an operating-system handle, a buffer of
//! it as a pointer descriptor.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;

use crate::device::Device;
use crate::error::{Error, Result, cu};
use crate::memory::{Buffer, DeviceMemoryResource, IpcHandleType};
use crate::stream::Stream;
use crate::uuid::Uuid;
use cuda_sys::{CUdeviceptr, CUmemFabricHandle, CUmemPoolPtrExportData, CUmemoryPool, CUresult};

/// A shareable pool as exported by [`DeviceMemoryResource::export_pool`]: the operating
/// system's handle to it and the UUID of its device, what another process needs to import it
/// ([`DeviceMemoryResource::import_pool`]).
#[derive(Debug)]
pub struct ExportedPool {
    handle: PoolHandle,
    device: Uuid,
}

/// The operating system's handle to a shareable pool.
#[derive(Debug)]
#[non_exhaustive]
pub enum PoolHandle {
    /// A file descriptor (this process's; send it over a UNIX socket, as the `cuda-safe-ipc`
    /// crate's `Channel::send_pool` does).
    PosixFd(OwnedFd),
    /// A fabric handle, valid in every process of the same NVLink fabric.
    Fabric([u8; 64]),
}

impl ExportedPool {
    /// A pool another process exported, from its parts (for callers with a transport of
    /// their own): its handle and its device's UUID ([`Device::uuid`]).
    pub fn new(handle: PoolHandle, device: Uuid) -> Self {
        Self { handle, device }
    }

    /// The handle.
    pub fn handle(&self) -> &PoolHandle {
        &self.handle
    }

    /// The UUID of the pool's device, the same in every process whatever the device's ordinal
    /// there.
    pub fn device_uuid(&self) -> Uuid {
        self.device
    }

    /// The handle type.
    pub fn handle_type(&self) -> IpcHandleType {
        match self.handle {
            PoolHandle::PosixFd(_) => IpcHandleType::PosixFd,
            PoolHandle::Fabric(_) => IpcHandleType::Fabric,
        }
    }
}

/// One buffer of a shareable pool, as another process imports it
/// ([`DeviceMemoryResource::import_buffer`]): the driver's 64-byte pointer descriptor and the
/// buffer's size. Plain bytes: send them by any means ([`to_bytes`](Self::to_bytes)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpcBufferDescriptor {
    data: [u8; 64],
    size: u64,
}

impl IpcBufferDescriptor {
    /// The length of [`to_bytes`](Self::to_bytes).
    pub const BYTES: usize = 72;

    /// The buffer's size in bytes.
    pub fn size(&self) -> usize {
        self.size as usize
    }

    /// The descriptor as bytes: the driver's 64 bytes, then the size (little-endian).
    pub fn to_bytes(&self) -> [u8; Self::BYTES] {
        let mut bytes = [0; Self::BYTES];
        bytes[..64].copy_from_slice(&self.data);
        bytes[64..].copy_from_slice(&self.size.to_le_bytes());
        bytes
    }

    /// The descriptor [`to_bytes`](Self::to_bytes) wrote.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] unless `bytes` holds exactly [`BYTES`](Self::BYTES) bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let bytes: &[u8; Self::BYTES] = bytes.try_into().map_err(|_| {
            Error::invalid_argument(format!(
                "an IPC buffer descriptor is {} bytes, not {}",
                Self::BYTES,
                bytes.len()
            ))
        })?;
        let mut data = [0; 64];
        data.copy_from_slice(&bytes[..64]);
        let mut size = [0; 8];
        size.copy_from_slice(&bytes[64..]);
        Ok(Self {
            data,
            size: u64::from_le_bytes(size),
        })
    }
}

impl DeviceMemoryResource {
    /// Exports the pool for another process: a new file descriptor (or a fabric handle) for
    /// it. Only pools made with [`PoolOptions::ipc`](crate::PoolOptions::ipc) can be exported.
    ///
    #[doc = cuda_sys::api_doc!(cuMemPoolExportToShareableHandle)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a pool made without `ipc` or one imported here;
    /// [`Error::Unsupported`] for a fabric pool where no IMEX channel is open to this process;
    /// the driver's error. A fabric pool whose export the driver refuses is never destroyed
    /// (left to the process's end): on driver 580, destroying it then crashes the process.
    #[doc(alias = "cuMemPoolExportToShareableHandle")]
    pub fn export_pool(&self) -> Result<ExportedPool> {
        let handle_type = match self.ipc_handle_type() {
            Some(handle_type) if !self.is_imported() => handle_type,
            Some(_) => {
                return Err(Error::invalid_argument(
                    "a pool imported from another process cannot be exported again",
                ));
            }
            None => {
                return Err(Error::invalid_argument(
                    "the pool is not shareable: create it with PoolOptions::ipc",
                ));
            }
        };
        let driver = self.home().driver();
        match handle_type {
            IpcHandleType::PosixFd => {
                let mut fd: libc::c_int = -1;
                // SAFETY: a POSIX handle is an int, which `fd` is; the pool is live.
                unsafe {
                    cu!(
                        driver,
                        cuMemPoolExportToShareableHandle(
                            (&raw mut fd).cast(),
                            self.as_raw(),
                            handle_type.raw(),
                            0
                        )
                    )
                }?;
                // SAFETY: the driver opened `fd` for this process and hands it over.
                let fd = unsafe { OwnedFd::from_raw_fd(fd) };
                Ok(ExportedPool::new(
                    PoolHandle::PosixFd(fd),
                    self.home().uuid()?,
                ))
            }
            IpcHandleType::Fabric => {
                handle_type.usable_here()?;
                let mut handle = CUmemFabricHandle { data: [0; 64] };
                // SAFETY: a fabric handle is a CUmemFabricHandle, which `handle` is.
                unsafe {
                    cu!(
                        driver,
                        cuMemPoolExportToShareableHandle(
                            (&raw mut handle).cast(),
                            self.as_raw(),
                            handle_type.raw(),
                            0
                        )
                    )
                }
                .inspect_err(|_| self.keep_until_exit())?;
                Ok(ExportedPool::new(
                    PoolHandle::Fabric(handle.data),
                    self.home().uuid()?,
                ))
            }
        }
    }

    /// Imports a pool another process exported, on its device (found here by UUID). The
    /// result maps that process's buffers ([`import_buffer`](Self::import_buffer)) and
    /// allocates nothing; it is destroyed with its last handle and buffer. A file descriptor
    /// is closed once imported.
    ///
    #[doc = cuda_sys::api_doc!(cuMemPoolImportFromShareableHandle)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when the pool's device is not visible in this process (see
    /// `CUDA_VISIBLE_DEVICES`); the driver's error (for instance for a descriptor that is not
    /// a pool's).
    #[doc(alias = "cuMemPoolImportFromShareableHandle")]
    pub fn import_pool(pool: ExportedPool) -> Result<Self> {
        let device = Device::from_uuid(pool.device)?;
        let context = device.context()?;
        let _current = context.scoped()?;
        let handle_type = pool.handle_type();
        let driver = device.driver();
        let mut raw: CUmemoryPool = std::ptr::null_mut();
        match &pool.handle {
            PoolHandle::PosixFd(fd) => {
                // The driver takes a POSIX handle as the descriptor's value in the pointer.
                let handle = fd.as_raw_fd() as usize as *mut std::ffi::c_void;
                // SAFETY: valid out-pointer; `fd` is open for the call.
                unsafe {
                    cu!(
                        driver,
                        cuMemPoolImportFromShareableHandle(&mut raw, handle, handle_type.raw(), 0)
                    )
                }?;
            }
            PoolHandle::Fabric(data) => {
                let mut handle = CUmemFabricHandle { data: *data };
                // SAFETY: valid out-pointer; a fabric handle is passed by address.
                unsafe {
                    cu!(
                        driver,
                        cuMemPoolImportFromShareableHandle(
                            &mut raw,
                            (&raw mut handle).cast(),
                            handle_type.raw(),
                            0
                        )
                    )
                }?;
            }
        }
        drop(pool);
        Self::from_imported(raw, handle_type, &device)
    }

    /// Maps, in this process, a buffer of the pool this one was imported from. The buffer
    /// keeps this pool alive; dropping it unmaps it (in order on `stream`) and never frees the
    /// exporter's memory. Its first use must come after the exporter's writes: wait for an
    /// [IPC event](crate::Event::open_ipc) the exporter recorded after them.
    ///
    #[doc = cuda_sys::api_doc!(cuMemPoolImportPointer)]
    #[doc = cuda_sys::api_doc!(cuMemGetAddressRange)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a pool that was not imported, a `stream` of another
    /// device, or a descriptor claiming more bytes than the driver mapped (the mapping is
    /// undone); the driver's error (a descriptor of a buffer already
    /// freed by its owner).
    #[doc(alias = "cuMemPoolImportPointer", alias = "cuMemGetAddressRange")]
    pub fn import_buffer(
        &self,
        descriptor: &IpcBufferDescriptor,
        stream: &Stream,
    ) -> Result<Buffer> {
        if !self.is_imported() {
            return Err(Error::invalid_argument(
                "buffers are imported through a pool imported from their process",
            ));
        }
        if stream.device() != &self.home() {
            return Err(Error::invalid_argument(format!(
                "the stream belongs to device {}, the imported pool to device {}",
                stream.device().ordinal(),
                self.home().ordinal()
            )));
        }
        let mut data = CUmemPoolPtrExportData {
            reserved: descriptor.data,
        };
        let mut ptr: CUdeviceptr = 0;
        let _current = stream.context().scoped()?;
        // SAFETY: valid out-pointer, live pool, and a descriptor of the driver's layout.
        unsafe {
            cu!(
                stream.driver(),
                cuMemPoolImportPointer(&mut ptr, self.as_raw(), &mut data)
            )
        }?;
        // The size is the other process's word: check it against what the driver mapped, so
        // that a wrong one cannot make safe copies reach past the allocation.
        if let Err(error) = check_mapped(stream, ptr, descriptor.size()) {
            // SAFETY: `ptr` is the live imported mapping, owned by nothing yet, freed once.
            let unmapped = unsafe { cu!(stream.driver(), cuMemFreeAsync(ptr, stream.as_raw())) };
            if let Err(unmapped) = unmapped {
                log::warn!("unmapping a refused imported buffer failed: {unmapped}");
            }
            return Err(error);
        }
        // SAFETY: the driver mapped at least `size` bytes at `ptr` for this process through
        // this pool (checked), and nothing else owns the mapping; `cuMemFreeAsync` (the pool's
        // free) unmaps it.
        Ok(unsafe {
            Buffer::from_raw_parts(ptr, descriptor.size(), Arc::new(self.clone()), stream)
        })
    }
}

/// Errors unless the driver's mapping at `ptr` holds at least `size` bytes from `ptr` on.
fn check_mapped(stream: &Stream, ptr: CUdeviceptr, size: usize) -> Result<()> {
    let (mut base, mut mapped): (CUdeviceptr, usize) = (0, 0);
    // SAFETY: valid out-pointers; `ptr` is a live mapping of this process.
    unsafe {
        cu!(
            stream.driver(),
            cuMemGetAddressRange_v2(&mut base, &mut mapped, ptr)
        )
    }?;
    let available = (base + mapped as u64).saturating_sub(ptr);
    if size as u64 > available {
        return Err(Error::invalid_argument(format!(
            "the buffer's descriptor claims {size} bytes, but the driver mapped {available} from \
             its address"
        )));
    }
    Ok(())
}

impl Buffer {
    /// Describes the buffer for another process that imported its pool, exported before
    /// ([`DeviceMemoryResource::export_pool`])
    /// ([`DeviceMemoryResource::import_buffer`]). Waits for the buffer's stream first, so that
    /// the allocation (and every write queued before) is complete when the other process maps
    /// it. The buffer must stay alive until the other process has dropped its import: see the
    /// protocol in the [module documentation](super).
    ///
    #[doc = cuda_sys::api_doc!(cuMemPoolExportPointer)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for an empty buffer, for memory not from a shareable pool,
    /// and before its pool has been exported (the driver shares a pool's buffers only once
    /// the pool itself is exported); the driver's error.
    #[doc(alias = "cuMemPoolExportPointer")]
    pub fn export_ipc(&self) -> Result<IpcBufferDescriptor> {
        if self.is_empty() {
            return Err(Error::invalid_argument(
                "an empty buffer has no memory to share",
            ));
        }
        self.stream().sync()?;
        let mut data = CUmemPoolPtrExportData { reserved: [0; 64] };
        // SAFETY: valid out-pointer; the buffer's allocation is live.
        unsafe {
            cu!(
                self.stream().driver(),
                cuMemPoolExportPointer(&mut data, self.as_raw())
            )
        }
        .map_err(|error| {
            if error.cuda_code() == Some(CUresult::CUDA_ERROR_INVALID_VALUE) {
                Error::invalid_argument(format!(
                    "{error}: the buffer is not from a shareable pool, or its pool has not been \
                     exported yet (export the pool first: DeviceMemoryResource::export_pool or \
                     Channel::send_pool)"
                ))
            } else {
                error
            }
        })?;
        Ok(IpcBufferDescriptor {
            data: data.reserved,
            size: self.len() as u64,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_descriptor_round_trips_through_bytes() {
        let descriptor = IpcBufferDescriptor {
            data: std::array::from_fn(|i| i as u8 * 3),
            size: (64 << 20) + 5,
        };
        let bytes = descriptor.to_bytes();
        assert_eq!(IpcBufferDescriptor::from_bytes(&bytes).unwrap(), descriptor);
        assert_eq!(descriptor.size(), (64 << 20) + 5);
        let short = IpcBufferDescriptor::from_bytes(&bytes[..71]).unwrap_err();
        assert!(short.to_string().contains("72 bytes, not 71"), "{short}");
    }
}
