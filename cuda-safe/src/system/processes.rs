//! Processes running on a GPU: pid, GPU memory used, and the MIG instance they run in.
//!
//! The list is read with NVML's size protocol: the call is made with the room the caller's
//! vector already has; when NVML answers that more are running (`NVML_ERROR_INSUFFICIENT_SIZE`,
//! with the count it needs), the vector grows and the call is made again, since processes can
//! start in between. A vector reused from one call to the next makes the query one NVML call
//! with no allocation.

use std::fmt;

use super::device::Device;
use crate::error::{Result, check_nvml};
use crate::nvml_sys::{LoadError, Nvml, nvmlDevice_t, nvmlProcessInfo_t, nvmlReturn_t};

/// NVML's "not available" marker in 64-bit fields (`NVML_VALUE_NOT_AVAILABLE` as unsigned).
const NOT_AVAILABLE_U64: u64 = u64::MAX;
/// NVML's "not available" marker in 32-bit fields, as in a process outside any MIG instance.
const NOT_AVAILABLE_U32: u32 = u32::MAX;

/// How many times the list is asked for again when it keeps growing between calls.
const MAX_ATTEMPTS: usize = 8;
/// Room added beyond what NVML asked for, so a process starting meanwhile needs no new call.
const HEADROOM: usize = 4;

/// One process with a context on a GPU, as NVML reports it (`nvmlProcessInfo_t`, the layout
/// `nvmlDeviceGet*RunningProcesses_v3` fills).
#[derive(Clone, Copy)]
#[repr(transparent)]
pub struct ProcessInfo(nvmlProcessInfo_t);

impl ProcessInfo {
    /// The process id (in the host's pid namespace).
    pub fn pid(&self) -> u32 {
        self.0.pid
    }

    /// The GPU memory the process uses, in bytes; `None` when NVML cannot tell (Windows WDDM,
    /// or not permitted).
    pub fn used_gpu_memory(&self) -> Option<u64> {
        available_u64(self.0.usedGpuMemory)
    }

    /// The MIG GPU instance the process runs in; `None` outside MIG.
    pub fn gpu_instance_id(&self) -> Option<u32> {
        available_u32(self.0.gpuInstanceId)
    }

    /// The MIG compute instance the process runs in; `None` outside MIG.
    pub fn compute_instance_id(&self) -> Option<u32> {
        available_u32(self.0.computeInstanceId)
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
        (
            self.0.pid,
            self.0.usedGpuMemory,
            self.0.gpuInstanceId,
            self.0.computeInstanceId,
        ) == (
            other.0.pid,
            other.0.usedGpuMemory,
            other.0.gpuInstanceId,
            other.0.computeInstanceId,
        )
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
    #[doc(alias = "nvmlDeviceGetComputeRunningProcesses_v3")]
    pub fn compute_processes(&self) -> Result<Vec<ProcessInfo>> {
        let mut processes = Vec::new();
        self.compute_processes_into(&mut processes)?;
        Ok(processes)
    }

    /// [`compute_processes`](Self::compute_processes) into `processes` (cleared first). With a
    /// vector reused between calls this is one NVML call and no allocation.
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

    /// Fills `processes` through `list`, growing it while NVML reports more processes.
    #[inline]
    fn running_processes(
        &self,
        api: &'static str,
        list: ListFn,
        processes: &mut Vec<ProcessInfo>,
    ) -> Result<()> {
        processes.clear();
        let mut attempts = 0;
        loop {
            let room = processes.capacity();
            let mut count = u32::try_from(room).unwrap_or(u32::MAX);
            let buffer = if room == 0 {
                std::ptr::null_mut()
            } else {
                processes.as_mut_ptr().cast::<nvmlProcessInfo_t>()
            };
            // SAFETY: the handle is live; `buffer` is null with a count of 0 (allowed when
            // asking for the count) or has room for `count` entries; `ProcessInfo` is a
            // transparent `nvmlProcessInfo_t`, the struct the _v3 functions fill.
            let result = unsafe { list(self.nvml, self.handle, &mut count, buffer) };
            match result {
                Ok(nvmlReturn_t::NVML_SUCCESS) => {
                    let filled = usize::try_from(count).unwrap_or(usize::MAX).min(room);
                    // SAFETY: NVML wrote `count` entries into the buffer; `filled` is at most
                    // that and at most the vector's capacity.
                    unsafe { processes.set_len(filled) };
                    return Ok(());
                }
                Ok(nvmlReturn_t::NVML_ERROR_INSUFFICIENT_SIZE) if attempts < MAX_ATTEMPTS => {
                    attempts += 1;
                    let needed = usize::try_from(count).unwrap_or(usize::MAX);
                    processes.reserve(needed.saturating_add(HEADROOM));
                }
                other => return check_nvml(api, other),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nvml_sys;

    /// A process as NVML would report it.
    fn process_for_test(pid: u32, memory: u64, gpu_instance: u32) -> ProcessInfo {
        ProcessInfo(nvmlProcessInfo_t {
            pid,
            usedGpuMemory: memory,
            gpuInstanceId: gpu_instance,
            computeInstanceId: NOT_AVAILABLE_U32,
        })
    }

    #[test]
    fn layout_is_nvmls() {
        assert_eq!(size_of::<ProcessInfo>(), size_of::<nvmlProcessInfo_t>());
        assert_eq!(size_of::<ProcessInfo>(), 24);
        assert_eq!(
            align_of::<ProcessInfo>(),
            align_of::<nvml_sys::nvmlProcessInfo_v2_t>()
        );
    }

    #[test]
    fn not_available_markers_read_as_none() {
        let process = process_for_test(42, u64::MAX, u32::MAX);
        assert_eq!(process.pid(), 42);
        assert_eq!(process.used_gpu_memory(), None);
        assert_eq!(process.gpu_instance_id(), None);
        assert_eq!(process.compute_instance_id(), None);

        let process = process_for_test(7, 64 << 20, 1);
        assert_eq!(process.used_gpu_memory(), Some(64 << 20));
        assert_eq!(process.gpu_instance_id(), Some(1));
        assert_eq!(
            format!("{process:?}"),
            "ProcessInfo { pid: 7, used_gpu_memory: Some(67108864), gpu_instance_id: Some(1), \
             compute_instance_id: None }"
        );
        assert_eq!(process, process_for_test(7, 64 << 20, 1));
        assert_ne!(process, process_for_test(8, 64 << 20, 1));
    }
}
