//! Processes running on a GPU: pid, GPU memory used, and the MIG instance they run in.
//!
//! The list is read with NVML's size protocol: the call is made with the room the caller's
//! vector already has; when NVML answers that more are running (`NVML_ERROR_INSUFFICIENT_SIZE`,
//! with the count it needs), the vector grows and the call is made again, since processes can
//! start in between. A vector reused from one call to the next makes the query one NVML call
//! with no allocation.
//!
//! Drivers disagree on the size of the entries they write. The `_v3` functions are declared
//! with `nvmlProcessInfo_t` (24 bytes), but R535-era drivers (CUDA 12.2) wrote 32-byte entries
//! (with `usedGpuCcProtectedMemory`) into the same buffer, overflowing a buffer of 24-byte
//! entries past the end once enough processes ran (nvitop and go-nvml both hit this). So every
//! entry of the buffer handed to NVML has room for 32 bytes, the buffer is filled with a poison
//! pattern first, and how far the driver wrote for its `count` entries tells the entry size it
//! used (16, 24 or 32 bytes); narrower entries are then spread out in place.

use std::fmt;

use bytemuck::{Pod, Zeroable};

use super::device::Device;
use crate::error::{Error, Result, check_nvml};
use nvml_sys::{LoadError, Nvml, nvmlDevice_t, nvmlProcessInfo_t, nvmlReturn_t};

/// NVML's "not available" marker in 64-bit fields (`NVML_VALUE_NOT_AVAILABLE` as unsigned).
const NOT_AVAILABLE_U64: u64 = u64::MAX;
/// NVML's "not available" marker in 32-bit fields, as in a process outside any MIG instance.
const NOT_AVAILABLE_U32: u32 = u32::MAX;

/// How many times the list is asked for again when it keeps growing between calls.
const MAX_ATTEMPTS: usize = 8;
/// Room added beyond what NVML asked for, so a process starting meanwhile needs no new call.
const HEADROOM: usize = 4;

/// The byte every entry of the buffer holds before NVML writes: no pid, memory size or
/// instance id is made of it.
const POISON: u8 = 0xa5;
/// The entry sizes drivers are known to write, narrowest first: `nvmlProcessInfo_v1_t`,
/// `nvmlProcessInfo_v2_t` (today's `nvmlProcessInfo_t`), and the R535 layout
/// (`nvmlProcessDetail_v1_t`).
const ENTRY_SIZES: [usize; 3] = [16, 24, 32];

/// One process with a context on a GPU, as NVML reports it.
///
/// Laid out as the widest entry a driver writes (32 bytes, `nvmlProcessDetail_v1_t`), so that
/// NVML fills a vector of these directly whatever its entry size.
#[derive(Clone, Copy)]
#[repr(C)]
pub struct ProcessInfo {
    pid: u32,
    _padding: u32,
    used_gpu_memory: u64,
    gpu_instance_id: u32,
    compute_instance_id: u32,
    used_gpu_cc_protected_memory: u64,
}

// SAFETY: `ProcessInfo` is `repr(C)` with only integer fields and no padding (4 + 4 + 8 + 4 + 4
// + 8 bytes, each aligned), so all-zero bytes are a valid value.
unsafe impl Zeroable for ProcessInfo {}
// SAFETY: as above; any bytes are a valid value, and it is `Copy` and `'static`.
unsafe impl Pod for ProcessInfo {}

const _: () = assert!(size_of::<ProcessInfo>() == 32);

/// As its fields: `pid`, and `used_gpu_memory`, `gpu_instance_id`, `compute_instance_id` and
/// `used_gpu_cc_protected_memory` (each `null` where NVML reported none).
#[cfg(feature = "serde")]
impl serde::Serialize for ProcessInfo {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut state = serializer.serialize_struct("ProcessInfo", 5)?;
        state.serialize_field("pid", &self.pid())?;
        state.serialize_field("used_gpu_memory", &self.used_gpu_memory())?;
        state.serialize_field("gpu_instance_id", &self.gpu_instance_id())?;
        state.serialize_field("compute_instance_id", &self.compute_instance_id())?;
        state.serialize_field(
            "used_gpu_cc_protected_memory",
            &self.used_gpu_cc_protected_memory(),
        )?;
        state.end()
    }
}

impl ProcessInfo {
    /// The process id (in the host's pid namespace).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The GPU memory the process uses, in bytes; `None` when NVML cannot tell (Windows WDDM,
    /// or not permitted).
    pub fn used_gpu_memory(&self) -> Option<u64> {
        available_u64(self.used_gpu_memory)
    }

    /// The MIG GPU instance the process runs in; `None` outside MIG.
    pub fn gpu_instance_id(&self) -> Option<u32> {
        available_u32(self.gpu_instance_id)
    }

    /// The MIG compute instance the process runs in; `None` outside MIG.
    pub fn compute_instance_id(&self) -> Option<u32> {
        available_u32(self.compute_instance_id)
    }

    /// The confidential-computing protected memory the process uses, in bytes; only drivers
    /// that write 32-byte entries (R535) report it, `None` elsewhere.
    pub fn used_gpu_cc_protected_memory(&self) -> Option<u64> {
        available_u64(self.used_gpu_cc_protected_memory)
    }

    /// The entry a driver wrote in the first `size` bytes of `entry` (16, 24 or 32 bytes, all
    /// of which begin with the same fields).
    fn read(entry: &[u8], size: usize) -> Self {
        let u32_at = |at: usize| {
            entry
                .get(at..at + 4)
                .and_then(|bytes| bytes.try_into().ok())
                .map_or(NOT_AVAILABLE_U32, u32::from_ne_bytes)
        };
        let u64_at = |at: usize| {
            entry
                .get(at..at + 8)
                .and_then(|bytes| bytes.try_into().ok())
                .map_or(NOT_AVAILABLE_U64, u64::from_ne_bytes)
        };
        let wide = |at: usize, width: usize| size >= at + width;
        Self {
            pid: u32_at(0),
            _padding: 0,
            used_gpu_memory: u64_at(8),
            gpu_instance_id: if wide(16, 4) {
                u32_at(16)
            } else {
                NOT_AVAILABLE_U32
            },
            compute_instance_id: if wide(20, 4) {
                u32_at(20)
            } else {
                NOT_AVAILABLE_U32
            },
            used_gpu_cc_protected_memory: if wide(24, 8) {
                u64_at(24)
            } else {
                NOT_AVAILABLE_U64
            },
        }
    }

    /// The whole buffer's worth of poison: what an entry holds before NVML writes.
    fn poison() -> Self {
        bytemuck::cast([POISON; 32])
    }

    fn fields(&self) -> (u32, u64, u32, u32, u64) {
        (
            self.pid,
            self.used_gpu_memory,
            self.gpu_instance_id,
            self.compute_instance_id,
            self.used_gpu_cc_protected_memory,
        )
    }
}

impl fmt::Debug for ProcessInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProcessInfo")
            .field("pid", &self.pid())
            .field("used_gpu_memory", &self.used_gpu_memory())
            .field("gpu_instance_id", &self.gpu_instance_id())
            .field("compute_instance_id", &self.compute_instance_id())
            .finish()
    }
}

impl PartialEq for ProcessInfo {
    fn eq(&self, other: &Self) -> bool {
        self.fields() == other.fields()
    }
}

impl Eq for ProcessInfo {}

fn available_u64(value: u64) -> Option<u64> {
    (value != NOT_AVAILABLE_U64).then_some(value)
}

fn available_u32(value: u32) -> Option<u32> {
    (value != NOT_AVAILABLE_U32).then_some(value)
}

/// An NVML function of the `nvmlDeviceGet*RunningProcesses_v3` shape.
type ListFn = unsafe fn(
    &Nvml,
    nvmlDevice_t,
    *mut u32,
    *mut nvmlProcessInfo_t,
) -> Result<nvmlReturn_t, LoadError>;

impl Device {
    /// The processes with a compute context on this GPU (CUDA programs).
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetComputeRunningProcesses_v3)]
    #[doc(alias = "nvmlDeviceGetComputeRunningProcesses_v3")]
    pub fn compute_processes(&self) -> Result<Vec<ProcessInfo>> {
        let mut processes = Vec::new();
        self.compute_processes_into(&mut processes)?;
        Ok(processes)
    }

    /// [`compute_processes`](Self::compute_processes) into `processes` (cleared first). With a
    /// vector reused between calls this is one NVML call and no allocation.
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetComputeRunningProcesses_v3)]
    #[doc(alias = "nvmlDeviceGetComputeRunningProcesses_v3")]
    #[inline]
    pub fn compute_processes_into(&self, processes: &mut Vec<ProcessInfo>) -> Result<()> {
        self.running_processes(
            "nvmlDeviceGetComputeRunningProcesses_v3",
            Nvml::nvmlDeviceGetComputeRunningProcesses_v3,
            processes,
        )
    }

    /// The processes with a graphics context on this GPU (OpenGL, Vulkan, ...).
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetGraphicsRunningProcesses_v3)]
    #[doc(alias = "nvmlDeviceGetGraphicsRunningProcesses_v3")]
    pub fn graphics_processes(&self) -> Result<Vec<ProcessInfo>> {
        let mut processes = Vec::new();
        self.running_processes(
            "nvmlDeviceGetGraphicsRunningProcesses_v3",
            Nvml::nvmlDeviceGetGraphicsRunningProcesses_v3,
            &mut processes,
        )?;
        Ok(processes)
    }

    /// Fills `processes` through `list` ([`fill`]).
    #[inline]
    fn running_processes(
        &self,
        api: &'static str,
        list: ListFn,
        processes: &mut Vec<ProcessInfo>,
    ) -> Result<()> {
        let (nvml, handle) = (self.nvml, self.handle);
        fill(api, processes, |count, buffer| {
            // SAFETY: the handle is live; `fill` passes a buffer with room for `*count`
            // entries of 32 bytes, the widest any driver writes, or null with a count of 0
            // (allowed when asking for the count).
            unsafe { list(nvml, handle, count, buffer) }
        })
    }
}

/// Fills `processes` through `list`, a call of the `*RunningProcesses_v3` shape (the room in
/// entries in, the count out, and the buffer), growing the vector while NVML reports more
/// processes.
///
/// `list` is given a buffer of `*count` [`ProcessInfo`]s (32 bytes each) filled with
/// [`POISON`], or null with a count of 0.
#[inline]
fn fill(
    api: &'static str,
    processes: &mut Vec<ProcessInfo>,
    mut list: impl FnMut(*mut u32, *mut nvmlProcessInfo_t) -> Result<nvmlReturn_t, LoadError>,
) -> Result<()> {
    processes.clear();
    let mut attempts = 0;
    loop {
        let room = processes.capacity();
        processes.resize(room, ProcessInfo::poison());
        let mut count = u32::try_from(room).unwrap_or(u32::MAX);
        let buffer = if room == 0 {
            std::ptr::null_mut()
        } else {
            processes.as_mut_ptr().cast::<nvmlProcessInfo_t>()
        };
        match list(&mut count, buffer) {
            Ok(nvmlReturn_t::NVML_SUCCESS) => {
                let filled = usize::try_from(count).unwrap_or(usize::MAX).min(room);
                return spread(api, processes, filled);
            }
            Ok(nvmlReturn_t::NVML_ERROR_INSUFFICIENT_SIZE) if attempts < MAX_ATTEMPTS => {
                attempts += 1;
                processes.clear();
                let needed = usize::try_from(count).unwrap_or(usize::MAX);
                processes.reserve(needed.saturating_add(HEADROOM));
            }
            other => {
                processes.clear();
                return check_nvml(api, other);
            }
        }
    }
}

/// Turns the first `filled` entries NVML wrote into `processes` (whose every entry was
/// poisoned before) into [`ProcessInfo`]s, whatever entry size the driver used, and drops the
/// rest.
fn spread(api: &'static str, processes: &mut Vec<ProcessInfo>, filled: usize) -> Result<()> {
    let bytes: &mut [u8] = bytemuck::cast_slice_mut(processes.as_mut_slice());
    let written = bytes
        .iter()
        .rposition(|&byte| byte != POISON)
        .map_or(0, |last| last + 1);
    // The narrowest entry size that accounts for every byte written: the last entry's last
    // field is always written (for two entries or more, in every layout), so a wider entry
    // size always shows.
    let Some(size) = ENTRY_SIZES
        .into_iter()
        .find(|&size| written <= size.saturating_mul(filled))
    else {
        processes.clear();
        return Err(Error::unexpected(
            api,
            format!("NVML wrote {written} bytes for {filled} processes, more than 32 bytes each"),
        ));
    };
    let wide = size_of::<ProcessInfo>();
    // From the last entry back, so that no entry is overwritten before it is read.
    // Every range lies within the buffer: `filled` entries of at most `wide` bytes.
    for index in (0..filled).rev() {
        let Some(entry) = bytes.get(index * size..(index + 1) * size) else {
            continue;
        };
        let entry = ProcessInfo::read(entry, size);
        if let Some(slot) = bytes.get_mut(index * wide..(index + 1) * wide) {
            slot.copy_from_slice(bytemuck::bytes_of(&entry));
        }
    }
    processes.truncate(filled);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process as NVML would report it.
    fn process(pid: u32, memory: u64, gpu_instance: u32) -> ProcessInfo {
        ProcessInfo {
            pid,
            _padding: 0,
            used_gpu_memory: memory,
            gpu_instance_id: gpu_instance,
            compute_instance_id: NOT_AVAILABLE_U32,
            used_gpu_cc_protected_memory: NOT_AVAILABLE_U64,
        }
    }

    /// `count` processes, all fields different.
    fn processes(count: u32) -> Vec<ProcessInfo> {
        (0..count)
            .map(|n| ProcessInfo {
                compute_instance_id: n % 3,
                ..process(1000 + n, (u64::from(n) + 1) << 20, n % 7)
            })
            .collect()
    }

    /// The bytes a driver writes for `process` in entries of `size` bytes (a layout wider
    /// than 32 bytes has more fields after those).
    fn entry(process: &ProcessInfo, size: usize) -> Vec<u8> {
        let mut bytes = bytemuck::bytes_of(process).to_vec();
        bytes[4..8].fill(0); // padding: drivers write zeros, or leave garbage
        bytes.resize(size, 0x11);
        bytes
    }

    /// A stub of a `*RunningProcesses_v3` call for a driver that writes entries of `size`
    /// bytes, with `running` processes; it counts its calls.
    fn driver(
        size: usize,
        running: &[ProcessInfo],
        calls: &mut u32,
    ) -> impl FnMut(*mut u32, *mut nvmlProcessInfo_t) -> Result<nvmlReturn_t, LoadError> {
        move |count, buffer| {
            *calls += 1;
            // SAFETY: `fill` passes a valid count pointer.
            let room = unsafe { *count } as usize;
            let needed = running.len();
            // SAFETY: as above.
            unsafe { *count = needed as u32 };
            if room < needed {
                return Ok(nvmlReturn_t::NVML_ERROR_INSUFFICIENT_SIZE);
            }
            let bytes: Vec<u8> = running.iter().flat_map(|p| entry(p, size)).collect();
            // The driver writes `needed` entries of its size into a buffer it believes holds
            // `room` of them; `fill` promises room for `room` entries of 32 bytes.
            assert!(bytes.len() <= room * 32, "the stub would overflow");
            // SAFETY: `buffer` has room for `room` 32-byte entries, at least `bytes.len()`.
            unsafe {
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), buffer.cast::<u8>(), bytes.len())
            };
            Ok(nvmlReturn_t::NVML_SUCCESS)
        }
    }

    /// Lists through a stub driver writing `size`-byte entries.
    fn list(size: usize, running: &[ProcessInfo], into: &mut Vec<ProcessInfo>) -> Result<u32> {
        let mut calls = 0;
        fill("stub", into, driver(size, running, &mut calls))?;
        Ok(calls)
    }

    #[test]
    fn layout_is_the_widest_drivers_write() {
        assert_eq!(size_of::<ProcessInfo>(), 32);
        assert_eq!(
            size_of::<ProcessInfo>(),
            size_of::<nvml_sys::nvmlProcessDetail_v1_t>()
        );
        assert_eq!(size_of::<nvmlProcessInfo_t>(), 24);
        assert_eq!(align_of::<ProcessInfo>(), align_of::<nvmlProcessInfo_t>());
    }

    /// R535-era drivers write 32-byte entries where 24-byte ones are declared: a buffer of
    /// 24-byte entries overflowed past 12 processes. Every known layout reads back exactly.
    #[test]
    fn every_entry_size_a_driver_writes_reads_back() {
        for size in ENTRY_SIZES {
            for count in [0, 1, 2, 3, 12, 13, 40] {
                let running = processes(count);
                let mut found = Vec::new();
                list(size, &running, &mut found).unwrap();
                let expected: Vec<_> = running
                    .iter()
                    .map(|p| ProcessInfo::read(&entry(p, size), size))
                    .collect();
                assert_eq!(found, expected, "{size}-byte entries, {count} processes");
                assert!(
                    found
                        .iter()
                        .zip(&running)
                        .all(|(found, running)| found.pid() == running.pid()
                            && found.used_gpu_memory() == running.used_gpu_memory()),
                    "{size}-byte entries, {count} processes: {found:?}"
                );
                if size >= 24 {
                    assert_eq!(found, running, "{size}-byte entries keep the MIG ids");
                }
            }
        }
    }

    #[test]
    fn a_reused_vector_is_one_call_without_allocating() {
        let running = processes(13);
        let mut found = Vec::new();
        assert_eq!(
            list(32, &running, &mut found).unwrap(),
            2,
            "count, then list"
        );
        let capacity = found.capacity();
        assert_eq!(list(32, &running, &mut found).unwrap(), 1);
        assert_eq!(list(24, &running[..5], &mut found).unwrap(), 1);
        assert_eq!(found.len(), 5);
        assert_eq!(found.capacity(), capacity);
    }

    #[test]
    fn entries_wider_than_any_known_layout_are_an_error_not_garbage() {
        let mut found = Vec::with_capacity(8);
        let running = processes(2);
        let error = list(40, &running, &mut found).unwrap_err();
        assert!(
            matches!(error, Error::UnexpectedAnswer { api: "stub", .. }),
            "{error}"
        );
        assert!(found.is_empty());
    }

    #[test]
    fn errors_leave_the_vector_empty() {
        let mut found = processes(3);
        let result = fill("stub", &mut found, |_, _| {
            Ok(nvmlReturn_t::NVML_ERROR_NO_PERMISSION)
        });
        assert_eq!(
            result.unwrap_err().nvml_code(),
            Some(nvmlReturn_t::NVML_ERROR_NO_PERMISSION)
        );
        assert!(found.is_empty());
    }

    #[test]
    fn not_available_markers_read_as_none() {
        let process = process(42, u64::MAX, u32::MAX);
        assert_eq!(process.pid(), 42);
        assert_eq!(process.used_gpu_memory(), None);
        assert_eq!(process.gpu_instance_id(), None);
        assert_eq!(process.compute_instance_id(), None);
        assert_eq!(process.used_gpu_cc_protected_memory(), None);

        let process = super::tests::process(7, 64 << 20, 1);
        assert_eq!(process.used_gpu_memory(), Some(64 << 20));
        assert_eq!(process.gpu_instance_id(), Some(1));
        assert_eq!(
            format!("{process:?}"),
            "ProcessInfo { pid: 7, used_gpu_memory: Some(67108864), gpu_instance_id: Some(1), \
             compute_instance_id: None }"
        );
        assert_eq!(process, super::tests::process(7, 64 << 20, 1));
        assert_ne!(process, super::tests::process(8, 64 << 20, 1));
    }
}
