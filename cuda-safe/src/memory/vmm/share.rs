//! Sharing virtual memory with other processes: each physical chunk exported as an OS handle
//! (a POSIX file descriptor, or a fabric handle) with a small descriptor, and imported into a
//! mapping on the other side.
//!
//! The descriptors are plain bytes ([`VmmShareDescriptor::to_bytes`]), so a channel that
//! passes file descriptors (`SCM_RIGHTS` over a UNIX socket) sends each one with its fd.

use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use super::growable::GrowableBuffer;
use super::region::{Chunk, Region};
use super::resource::{VirtualMapping, VirtualMemoryResource, VmmInner};
use crate::error::{Error, Result, cu};
use crate::handle::Owned;
use crate::memory::IpcHandleType;
use cuda_sys::{CUmemFabricHandle, CUmemGenericAllocationHandle};

/// "VMM1": the first four bytes of every descriptor.
const MAGIC: u32 = u32::from_le_bytes(*b"VMM1");

/// What the importer of one exported chunk needs besides its handle: where the chunk sits in
/// the exporter's mapping, its size, the granularity and the whole mapping's size.
///
/// `#[repr(C)]`, 48 bytes, no padding: send [`to_bytes`](Self::to_bytes) and rebuild with
/// [`from_bytes`](Self::from_bytes), which checks it. The device is the exporter's ordinal,
/// for messages (the importer maps the memory for its own resource's device).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VmmShareDescriptor {
    magic: u32,
    handle_type: u32,
    device: u32,
    index: u32,
    offset: u64,
    size: u64,
    granularity: u64,
    total: u64,
}

// SAFETY: `#[repr(C)]`, only integers, no padding (4 * 4 + 4 * 8 = 48 bytes, checked below);
// every bit pattern is a value (import checks the values before use).
unsafe impl bytemuck::Zeroable for VmmShareDescriptor {}
// SAFETY: as above.
unsafe impl bytemuck::Pod for VmmShareDescriptor {}

const _: () = assert!(size_of::<VmmShareDescriptor>() == VmmShareDescriptor::BYTES);

/// A fabric handle (`CUmemFabricHandle`): 64 opaque bytes, valid across an NVLink fabric.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct FabricHandle(pub [u8; 64]);

impl std::fmt::Debug for FabricHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FabricHandle(..)")
    }
}

impl VmmShareDescriptor {
    /// The size of the byte form.
    pub const BYTES: usize = 48;

    /// The chunk's position among the exported chunks (0 first).
    pub fn index(&self) -> u32 {
        self.index
    }

    /// Where the chunk sits in the mapping, from its base.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The chunk's size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The exporter's granularity.
    pub fn granularity(&self) -> u64 {
        self.granularity
    }

    /// The whole mapping's size (every chunk's).
    pub fn total_size(&self) -> u64 {
        self.total
    }

    /// The exporter's device ordinal.
    pub fn device(&self) -> u32 {
        self.device
    }

    /// The handle type the chunk was exported as.
    pub fn handle_type(&self) -> Option<IpcHandleType> {
        [IpcHandleType::PosixFd, IpcHandleType::Fabric]
            .into_iter()
            .find(|kind| kind.raw().0 == self.handle_type)
    }

    /// The descriptor's bytes (native byte order: for processes of one machine).
    pub fn to_bytes(&self) -> [u8; Self::BYTES] {
        let mut bytes = [0u8; Self::BYTES];
        bytes.copy_from_slice(bytemuck::bytes_of(self));
        bytes
    }

    /// A descriptor from its bytes, checked.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for another length or a descriptor that cannot be right
    /// (as [`check`](Self::check)).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let descriptor: Self = bytemuck::try_pod_read_unaligned(bytes).map_err(|_| {
            Error::invalid_argument(format!(
                "a virtual memory share descriptor is {} bytes, not {}",
                Self::BYTES,
                bytes.len()
            ))
        })?;
        descriptor.check()?;
        Ok(descriptor)
    }

    /// Checks that the descriptor can be right: the magic, a known handle type, a power-of-two
    /// granularity, a size and offset that are non-zero (the size) multiples of it, and the
    /// chunk inside the total.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] saying which.
    pub fn check(&self) -> Result<()> {
        let bad = |what: String| Err(Error::invalid_argument(format!("share descriptor: {what}")));
        if self.magic != MAGIC {
            return bad("not a virtual memory share descriptor (wrong magic)".into());
        }
        if self.handle_type().is_none() {
            return bad(format!("unknown handle type {}", self.handle_type));
        }
        let granularity = self.granularity;
        if granularity == 0 || !granularity.is_power_of_two() {
            return bad(format!("granularity {granularity} is not a power of two"));
        }
        if self.size == 0 || !self.size.is_multiple_of(granularity) {
            return bad(format!(
                "chunk size {} is not a non-zero multiple of the granularity {granularity}",
                self.size
            ));
        }
        if !self.offset.is_multiple_of(granularity) {
            return bad(format!(
                "offset {} is not a multiple of the granularity {granularity}",
                self.offset
            ));
        }
        match self.offset.checked_add(self.size) {
            Some(end) if end <= self.total => Ok(()),
            _ => bad(format!(
                "chunk {}..+{} lies outside the mapping of {} bytes",
                self.offset, self.size, self.total
            )),
        }
    }
}

/// Checks that `descriptors` are one whole export of `kind`, in order: each checked, chunk
/// `i` at index `i` right after chunk `i - 1`, one total they fill exactly. Returns the total
/// and the largest granularity.
pub(super) fn check_parts(
    descriptors: &[VmmShareDescriptor],
    kind: IpcHandleType,
) -> Result<(usize, usize)> {
    let Some(first) = descriptors.first() else {
        return Err(Error::invalid_argument(
            "an import needs at least one chunk",
        ));
    };
    let mut end = 0u64;
    let mut granularity = 0u64;
    for (index, descriptor) in descriptors.iter().enumerate() {
        descriptor.check()?;
        if descriptor.handle_type() != Some(kind) {
            return Err(Error::invalid_argument(format!(
                "chunk {index} was exported as another handle type than {}",
                kind.name()
            )));
        }
        if descriptor.index as usize != index || descriptor.offset != end {
            return Err(Error::invalid_argument(format!(
                "chunk {index} is out of order: index {} at offset {}, expected offset {end}",
                descriptor.index, descriptor.offset
            )));
        }
        if descriptor.total != first.total {
            return Err(Error::invalid_argument(format!(
                "chunk {index} belongs to a mapping of {} bytes, chunk 0 to one of {}",
                descriptor.total, first.total
            )));
        }
        end += descriptor.size;
        granularity = granularity.max(descriptor.granularity);
    }
    if end != first.total {
        return Err(Error::invalid_argument(format!(
            "the chunks cover {end} bytes of a mapping of {}",
            first.total
        )));
    }
    let total = usize::try_from(end)
        .map_err(|_| Error::invalid_argument("the mapping is larger than the address space"))?;
    Ok((total, granularity as usize))
}

/// Exports every chunk of `region` as `kind`, each with its descriptor; `export` makes one
/// handle from a chunk's.
fn export_region<H>(
    inner: &VmmInner,
    region: &Region,
    kind: IpcHandleType,
    mut export: impl FnMut(CUmemGenericAllocationHandle) -> Result<H>,
) -> Result<Vec<(H, VmmShareDescriptor)>> {
    if inner.options.handle_type != Some(kind) {
        return Err(Error::invalid_argument(format!(
            "this memory cannot be exported as {}: its resource was made with handle_type {:?}; \
             set VirtualMemoryResourceOptions::handle_type",
            kind.name(),
            inner.options.handle_type.map(IpcHandleType::name)
        )));
    }
    let total = region.mapped() as u64;
    region
        .chunks()
        .iter()
        .enumerate()
        .map(|(index, chunk): (usize, &Chunk)| {
            let handle = export(chunk.handle)?;
            let descriptor = VmmShareDescriptor {
                magic: MAGIC,
                handle_type: kind.raw().0,
                device: inner.device.ordinal() as u32,
                index: index as u32,
                offset: chunk.offset as u64,
                size: chunk.size as u64,
                granularity: inner.granularity as u64,
                total,
            };
            Ok((handle, descriptor))
        })
        .collect()
}

/// Exports `region`'s chunks as file descriptors.
fn export_fds(inner: &VmmInner, region: &Region) -> Result<Vec<(OwnedFd, VmmShareDescriptor)>> {
    export_region(inner, region, IpcHandleType::PosixFd, |handle| {
        let mut fd: std::ffi::c_int = -1;
        // SAFETY: for a POSIX handle the driver writes one int, into `fd`; the handle is
        // alive (the region owns or borrows it).
        unsafe {
            cu!(
                inner.driver,
                cuMemExportToShareableHandle(
                    (&raw mut fd).cast(),
                    handle,
                    IpcHandleType::PosixFd.raw(),
                    0,
                )
            )
        }?;
        if fd < 0 {
            return Err(Error::unexpected(
                "cuMemExportToShareableHandle",
                format!("file descriptor {fd}"),
            ));
        }
        // SAFETY: the driver made a new descriptor for the caller, owned by nobody else.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    })
}

/// Exports `region`'s chunks as fabric handles.
fn export_fabric(
    inner: &VmmInner,
    region: &Region,
) -> Result<Vec<(FabricHandle, VmmShareDescriptor)>> {
    export_region(inner, region, IpcHandleType::Fabric, |handle| {
        let mut fabric = CUmemFabricHandle { data: [0; 64] };
        // SAFETY: for a fabric handle the driver writes a CUmemFabricHandle, into `fabric`.
        unsafe {
            cu!(
                inner.driver,
                cuMemExportToShareableHandle(
                    (&raw mut fabric).cast(),
                    handle,
                    IpcHandleType::Fabric.raw(),
                    0,
                )
            )
        }?;
        Ok(FabricHandle(fabric.data))
    })
}

/// Exports, for both owners of a region.
macro_rules! exports {
    ($owner:ty) => {
        impl $owner {
            /// Exports every physical chunk as a file descriptor, with the descriptor another
            /// process needs to import it ([`VirtualMemoryResource::import_fds`]). The
            /// resource must have been made with `handle_type: Some(IpcHandleType::PosixFd)`.
            ///
            #[doc = cuda_sys::api_doc!(cuMemExportToShareableHandle)]
            /// # Errors
            ///
            /// [`Error::InvalidArgument`] for a resource made without that handle type;
            /// the driver's error.
            #[doc(alias = "cuMemExportToShareableHandle")]
            pub fn export_fds(&self) -> Result<Vec<(OwnedFd, VmmShareDescriptor)>> {
                export_fds(self.vmm_inner(), self.region())
            }

            /// Exports every physical chunk as a fabric handle, with its descriptor. The
            /// resource must have been made with `handle_type: Some(IpcHandleType::Fabric)`.
            ///
            #[doc = cuda_sys::api_doc!(cuMemExportToShareableHandle)]
            /// # Errors
            ///
            /// As [`export_fds`](Self::export_fds).
            #[doc(alias = "cuMemExportToShareableHandle")]
            pub fn export_fabric(&self) -> Result<Vec<(FabricHandle, VmmShareDescriptor)>> {
                export_fabric(self.vmm_inner(), self.region())
            }
        }
    };
}

exports!(VirtualMapping);
exports!(GrowableBuffer);

impl VirtualMemoryResource {
    /// Maps memory another process exported with [`VirtualMapping::export_fds`] (or
    /// [`GrowableBuffer::export_fds`]): one reservation of the whole size, each chunk imported
    /// (`cuMemImportFromShareableHandle`) and mapped at its offset, with this resource's
    /// access (its device and peers). The file descriptors stay the caller's (close them once
    /// imported).
    ///
    #[doc = cuda_sys::api_doc!(cuMemImportFromShareableHandle)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] before any driver call for chunks that are not one whole
    /// export in order (see [`VmmShareDescriptor::check`]); the driver's error. What was
    /// mapped before a failure is undone.
    #[doc(alias = "cuMemImportFromShareableHandle")]
    pub fn import_fds(
        &self,
        chunks: &[(BorrowedFd<'_>, VmmShareDescriptor)],
    ) -> Result<VirtualMapping> {
        let descriptors: Vec<_> = chunks.iter().map(|(_, descriptor)| *descriptor).collect();
        self.import(&descriptors, IpcHandleType::PosixFd, |index| {
            // The driver takes a POSIX descriptor as its value, cast to a pointer.
            Ok(chunks[index].0.as_raw_fd() as usize as *mut std::ffi::c_void)
        })
    }

    /// Maps memory exported as fabric handles ([`VirtualMapping::export_fabric`]), as
    /// [`import_fds`](Self::import_fds) does.
    ///
    #[doc = cuda_sys::api_doc!(cuMemImportFromShareableHandle)]
    /// # Errors
    ///
    /// As [`import_fds`](Self::import_fds).
    #[doc(alias = "cuMemImportFromShareableHandle")]
    pub fn import_fabric(
        &self,
        chunks: &[(FabricHandle, VmmShareDescriptor)],
    ) -> Result<VirtualMapping> {
        let descriptors: Vec<_> = chunks.iter().map(|(_, descriptor)| *descriptor).collect();
        let mut handles: Vec<CUmemFabricHandle> = chunks
            .iter()
            .map(|(handle, _)| CUmemFabricHandle { data: handle.0 })
            .collect();
        let base = handles.as_mut_ptr();
        self.import(&descriptors, IpcHandleType::Fabric, |index| {
            // SAFETY: `index` is below `chunks.len()` (the import walks the descriptors, one
            // per chunk), and `handles` outlives the import.
            Ok(unsafe { base.add(index) }.cast())
        })
    }

    /// Imports each chunk (`os_handle(i)` is what `cuMemImportFromShareableHandle` takes for
    /// chunk `i`) and maps it at its offset in one new reservation.
    fn import(
        &self,
        descriptors: &[VmmShareDescriptor],
        kind: IpcHandleType,
        mut os_handle: impl FnMut(usize) -> Result<*mut std::ffi::c_void>,
    ) -> Result<VirtualMapping> {
        let (total, granularity) = check_parts(descriptors, kind)?;
        let inner = &self.inner;
        let align = inner.align.max(granularity);
        let mut region = Owned::new(Region::reserve(
            inner.driver,
            total,
            align,
            inner.options.addr_hint,
        )?);
        for (index, descriptor) in descriptors.iter().enumerate() {
            let mut handle: CUmemGenericAllocationHandle = 0;
            let raw = os_handle(index)?;
            // SAFETY: valid out-pointer; `raw` is the OS handle of the kind named, alive for
            // the call (the caller's descriptor or fabric handle).
            unsafe {
                cu!(
                    inner.driver,
                    cuMemImportFromShareableHandle(&mut handle, raw, kind.raw())
                )
            }?;
            region.map_at_end(handle, descriptor.size as usize, true, &inner.access)?;
        }
        Ok(VirtualMapping::from_parts(region, self.clone()))
    }
}

impl VmmShareDescriptor {
    /// A valid descriptor of a POSIX-fd chunk of device 0 at a 2 MiB granularity: for the
    /// tests of this crate and of `cuda-safe-ipc`, not an API.
    #[doc(hidden)]
    pub fn test_chunk(index: u32, offset: u64, size: u64, total: u64) -> Self {
        Self {
            magic: MAGIC,
            handle_type: IpcHandleType::PosixFd.raw().0,
            device: 0,
            index,
            offset,
            size,
            granularity: 2 << 20,
            total,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GRANULARITY: u64 = 2 << 20;

    fn chunk(index: u32, offset: u64, size: u64, total: u64) -> VmmShareDescriptor {
        VmmShareDescriptor::test_chunk(index, offset, size, total)
    }

    #[test]
    fn descriptors_round_trip_through_bytes() {
        let descriptor = chunk(1, GRANULARITY, 3 * GRANULARITY, 4 * GRANULARITY);
        let bytes = descriptor.to_bytes();
        assert_eq!(bytes.len(), VmmShareDescriptor::BYTES);
        assert_eq!(VmmShareDescriptor::from_bytes(&bytes).unwrap(), descriptor);
        assert_eq!(descriptor.handle_type(), Some(IpcHandleType::PosixFd));
        assert!(VmmShareDescriptor::from_bytes(&bytes[..47]).is_err());
    }

    #[test]
    fn impossible_descriptors_are_refused() {
        let good = chunk(0, 0, GRANULARITY, GRANULARITY);
        let cases = [
            (VmmShareDescriptor { magic: 7, ..good }, "magic"),
            (
                VmmShareDescriptor {
                    handle_type: 99,
                    ..good
                },
                "handle type",
            ),
            (
                VmmShareDescriptor {
                    granularity: 3,
                    ..good
                },
                "power of two",
            ),
            (VmmShareDescriptor { size: 0, ..good }, "non-zero multiple"),
            (VmmShareDescriptor { size: 5, ..good }, "non-zero multiple"),
            (VmmShareDescriptor { offset: 1, ..good }, "offset"),
            (
                VmmShareDescriptor {
                    offset: GRANULARITY,
                    ..good
                },
                "outside",
            ),
            (
                VmmShareDescriptor {
                    offset: u64::MAX - GRANULARITY + 1,
                    total: u64::MAX,
                    ..good
                },
                "outside",
            ),
        ];
        for (bad, words) in cases {
            let message = VmmShareDescriptor::from_bytes(&bad.to_bytes())
                .unwrap_err()
                .to_string();
            assert!(message.contains(words), "{message} should say {words}");
        }
    }

    #[test]
    fn parts_must_be_one_whole_export_in_order() {
        let g = GRANULARITY;
        let whole = [chunk(0, 0, g, 3 * g), chunk(1, g, 2 * g, 3 * g)];
        assert_eq!(
            check_parts(&whole, IpcHandleType::PosixFd).unwrap(),
            (3 * g as usize, g as usize)
        );
        assert!(check_parts(&whole, IpcHandleType::Fabric).is_err());
        assert!(check_parts(&[], IpcHandleType::PosixFd).is_err());
        let swapped = [whole[1], whole[0]];
        assert!(check_parts(&swapped, IpcHandleType::PosixFd).is_err());
        let missing = [whole[0]];
        let message = check_parts(&missing, IpcHandleType::PosixFd)
            .unwrap_err()
            .to_string();
        assert!(message.contains("cover"), "{message}");
        let mixed = [whole[0], chunk(1, g, 2 * g, 4 * g)];
        assert!(check_parts(&mixed, IpcHandleType::PosixFd).is_err());
    }
}
