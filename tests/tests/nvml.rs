//! `cuda_safe::system` (NVML) against a real driver: values in physical ranges, lookups that
//! agree with each other and with the CUDA driver, this process among the GPU's compute
//! processes once it allocates, no panic from any query on any device, and an awaitable event
//! stream (`cuda_safe_async::NvmlEventStream`) set up and closed on the device.

use std::fmt::Debug;
use std::time::Duration;

use cuda_gpu_tests::{GpuFile, check, gpu_file};
use cuda_safe::system::{
    self, ClockId, ClockType, Device, EccCounter, EccErrorType, EventSet, EventTypes,
    NVLINK_MAX_LINKS, P2pCapability, PcieCounter, Session, TemperatureThreshold,
};
use cuda_safe::{Error, Result};
use cuda_safe_async::{CLOCK_XID_POWER, NvmlEventStream, NvmlStreamOptions};

/// One GiB.
const GIB: u64 = 1 << 30;

/// The value of a query that may be unsupported: `Some` on success, `None` for a typed NVML
/// or missing-symbol error (printed). Any other error is a bug and fails the test.
fn optional<T: Debug>(what: &str, result: Result<T>) -> Option<T> {
    match result {
        Ok(value) => {
            println!("  {what}: {value:?}");
            Some(value)
        }
        Err(error @ Error::Nvml { .. }) => {
            println!("  {what}: {error}");
            None
        }
        Err(error) if error.is_symbol_missing() => {
            println!("  {what}: {error}");
            None
        }
        Err(error) => panic!("{what}: not a typed NVML error: {error:?}"),
    }
}

/// The CUDA driver's UUID of its device `ordinal`, as 16 bytes.
fn cuda_uuid(ordinal: i32) -> [u8; 16] {
    let driver = cuda_safe::sys::driver().expect("driver loads");
    // SAFETY: flags must be 0.
    check("cuInit", unsafe { driver.cuInit(0) });
    let mut device = 0;
    // SAFETY: `device` is a valid out-pointer.
    check("cuDeviceGet", unsafe {
        driver.cuDeviceGet(&mut device, ordinal)
    });
    let mut uuid = cuda_safe::sys::CUuuid { bytes: [0; 16] };
    // SAFETY: `uuid` is a valid out-pointer; `device` is valid.
    check("cuDeviceGetUuid_v2", unsafe {
        driver.cuDeviceGetUuid_v2(&mut uuid, device)
    });
    uuid.bytes.map(|byte| byte as u8)
}

fn system_queries_are_sane() {
    let session = Session::new().expect("NVML initialises");
    let count = session.device_count().unwrap();
    assert!(count >= 1, "NVML sees no GPU");
    let driver = session.driver_version().unwrap();
    let nvml = session.nvml_version().unwrap();
    let cuda = session.cuda_driver_version().unwrap();
    println!("{count} GPUs, driver {driver}, NVML {nvml}, CUDA {cuda}");
    assert!(driver.major().is_some_and(|major| major >= 525), "{driver}");
    assert!(driver.parts().len() >= 2, "{driver}");
    // NVML's version is the CUDA major version followed by the driver's.
    assert_eq!(
        nvml.parts().get(1..),
        Some(driver.parts()),
        "{nvml} vs {driver}"
    );
    assert_eq!(nvml.major(), Some(cuda.major()), "{nvml} vs CUDA {cuda}");
    assert!(cuda.major() >= 12, "{cuda}");
    let abi_major = cuda_safe::nvml_sys::HEADER_CUDA_VERSION / 1000;
    assert!(
        cuda.major() >= abi_major,
        "driver CUDA {cuda} older than the ABI"
    );
    optional("driver branch", session.driver_branch());
    assert_eq!(system::device_count().unwrap(), count);
    assert_eq!(system::driver_version().unwrap(), driver);
}

fn devices_are_found_by_index_uuid_bus_id_and_cuda_uuid() {
    let gpus = Device::all().unwrap();
    assert!(!gpus.is_empty());
    for (index, gpu) in (0u32..).zip(&gpus) {
        let name = gpu.name().unwrap();
        let uuid = gpu.uuid().unwrap();
        println!("GPU {index}: {name} {uuid}");
        assert!(!name.trim().is_empty());
        assert!(uuid.starts_with("GPU-"), "{uuid}");
        assert_eq!(uuid.len(), 40, "{uuid}");
        let bytes = gpu.uuid_bytes().unwrap();
        assert_eq!(system::uuid_string(system::GPU_UUID_PREFIX, &bytes), uuid);

        assert_eq!(gpu.index().unwrap(), index);
        assert_eq!(&Device::from_index(index).unwrap(), gpu);
        assert_eq!(&Device::from_uuid(&uuid).unwrap(), gpu);
        assert_eq!(&Device::from_uuid_bytes(&bytes).unwrap(), gpu);
        let pci = gpu.pci_info().unwrap();
        println!("  PCI {pci:?}");
        assert_eq!(pci.pci_device_id & 0xffff, 0x10de, "vendor is NVIDIA");
        assert_eq!(&Device::from_pci_bus_id(&pci.bus_id).unwrap(), gpu);
    }
    // CUDA's device 0 is one of NVML's devices, matched by UUID.
    let cuda_zero = Device::from_uuid_bytes(&cuda_uuid(0)).expect("CUDA device 0 is in NVML");
    assert!(gpus.contains(&cuda_zero));

    let missing = Device::from_uuid("GPU-00000000-0000-0000-0000-000000000000").unwrap_err();
    assert!(missing.nvml_code().is_some(), "{missing:?}");
    let refused = Device::from_uuid("GPU-\0").unwrap_err();
    assert!(matches!(refused, Error::InvalidArgument(_)), "{refused:?}");
}

fn memory_is_sane() {
    for gpu in Device::all().unwrap() {
        let memory = gpu.memory_info().unwrap();
        println!(
            "{}: total {} MiB, reserved {} MiB, used {} MiB, free {} MiB",
            gpu.name().unwrap(),
            memory.total >> 20,
            memory.reserved >> 20,
            memory.used >> 20,
            memory.free >> 20
        );
        assert!(memory.total > GIB, "{memory:?}");
        assert!(memory.used + memory.free <= memory.total, "{memory:?}");
        assert!(
            memory.reserved + memory.used + memory.free <= memory.total,
            "{memory:?}"
        );
        if let Some(bar1) = optional("BAR1", gpu.bar1_memory()) {
            assert!(bar1.used <= bar1.total, "{bar1:?}");
        }
        let utilization = gpu.utilization().unwrap();
        assert!(
            utilization.gpu <= 100 && utilization.memory <= 100,
            "{utilization:?}"
        );
    }
}

fn this_process_appears_among_compute_processes_after_allocating() {
    let gpu = Device::from_uuid_bytes(&cuda_uuid(0)).expect("CUDA device 0 is in NVML");
    let driver = cuda_safe::sys::driver().unwrap();
    let (mut device, mut context, mut memory) = (0, std::ptr::null_mut(), 0);
    // SAFETY: valid out-pointers; the context is made current before the allocation and
    // released after the buffer is freed.
    unsafe {
        check("cuDeviceGet", driver.cuDeviceGet(&mut device, 0));
        check(
            "cuDevicePrimaryCtxRetain",
            driver.cuDevicePrimaryCtxRetain(&mut context, device),
        );
        check("cuCtxSetCurrent", driver.cuCtxSetCurrent(context));
        check("cuMemAlloc_v2", driver.cuMemAlloc_v2(&mut memory, 64 << 20));
    }

    let pid = std::process::id();
    let mut processes = Vec::new();
    let mut found = None;
    // NVML may list a new context a moment late: look for up to about 2 s.
    for _ in 0..20 {
        gpu.compute_processes_into(&mut processes).unwrap();
        found = processes
            .iter()
            .find(|process| process.pid() == pid)
            .copied();
        if found.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }

    // SAFETY: the buffer and the retained context from above, each released once.
    unsafe {
        check("cuMemFree_v2", driver.cuMemFree_v2(memory));
        check(
            "cuDevicePrimaryCtxRelease_v2",
            driver.cuDevicePrimaryCtxRelease_v2(device),
        );
    }

    let found = found.unwrap_or_else(|| {
        panic!(
            "pid {pid} is not among {processes:?} (a PID namespace would hide it: NVML reports \
             host pids)"
        )
    });
    println!("{found:?}");
    assert!(
        found.used_gpu_memory().is_some_and(|bytes| bytes > 0),
        "{found:?}"
    );
    let name = system::process_name(pid).unwrap();
    println!("process name: {name}");
    assert!(!name.is_empty());
}

fn power_and_temperature_are_physical() {
    for gpu in Device::all().unwrap() {
        let milliwatts = gpu.power_usage_mw().unwrap();
        let celsius = gpu.temperature_c().unwrap();
        println!("{}: {} mW, {} C", gpu.name().unwrap(), milliwatts, celsius);
        assert!(milliwatts <= 2_000_000, "{milliwatts} mW");
        assert!((0..=120).contains(&celsius), "{celsius} C");
        if let Some(limit) = optional("power limit", gpu.power_limit_mw()) {
            assert!(limit > 0 && limit <= 2_000_000, "{limit} mW");
        }
        if let Some((min, max)) = optional("limit range", gpu.power_limit_constraints_mw()) {
            assert!(min <= max);
        }
        if let Some(before) = optional("energy", gpu.total_energy_mj()) {
            let after = gpu.total_energy_mj().unwrap();
            assert!(after >= before, "energy went from {before} to {after} mJ");
        }
        if let Some(slowdown) = optional(
            "slowdown threshold",
            gpu.temperature_threshold_c(TemperatureThreshold::SLOWDOWN),
        ) {
            assert!((20..=150).contains(&slowdown), "{slowdown} C");
        }
    }
}

fn mig_mode_reads_or_is_not_supported() {
    for gpu in Device::all().unwrap() {
        if let Some(is_mig) = optional("is a MIG device", gpu.is_mig_device()) {
            assert!(!is_mig, "NVML's index lookup gives whole GPUs");
        }
        match gpu.mig_mode() {
            Ok(mode) => {
                println!(
                    "{}: MIG {} (pending {})",
                    gpu.name().unwrap(),
                    mode.current,
                    mode.pending
                );
                let slices = gpu.mig_devices().unwrap();
                if !mode.current.is_enabled() {
                    assert!(slices.is_empty());
                }
                for slice in slices {
                    assert!(slice.is_mig_device().unwrap());
                    assert_eq!(slice.parent().unwrap(), gpu);
                    println!(
                        "  {} GI {} CI {}",
                        slice.uuid().unwrap(),
                        slice.gpu_instance_id().unwrap(),
                        slice.compute_instance_id().unwrap()
                    );
                }
            }
            Err(error) => assert!(error.is_not_supported(), "{error:?}"),
        }
    }
}

fn nvlink_queries_return_a_value_or_not_supported() {
    for gpu in Device::all().unwrap() {
        println!("{}:", gpu.name().unwrap());
        for link in 0..NVLINK_MAX_LINKS {
            match gpu.nvlink_state(link) {
                Ok(state) => {
                    let version = optional("version", gpu.nvlink_version(link));
                    let remote = optional("remote", gpu.nvlink_remote_pci_info(link));
                    println!("  link {link}: {state}, version {version:?}, remote {remote:?}");
                }
                Err(error) => {
                    let code = error.nvml_code().unwrap_or_else(|| panic!("{error:?}"));
                    println!("  link {link}: {error}");
                    assert!(
                        error.is_not_supported()
                            || code
                                == cuda_safe::nvml_sys::nvmlReturn_t::NVML_ERROR_INVALID_ARGUMENT,
                        "{error:?}"
                    );
                }
            }
        }
    }
}

fn every_query_on_every_device_is_ok_or_a_typed_error() {
    let session = Session::new().unwrap();
    optional("driver branch", session.driver_branch());
    optional("process name of pid 1", session.process_name(1));
    let gpus = session.devices().unwrap();
    for gpu in &gpus {
        println!("{gpu:?}");
        optional("name", gpu.name());
        optional("uuid", gpu.uuid());
        optional("serial", gpu.serial());
        optional("brand", gpu.brand().map(|brand| brand.to_string()));
        optional(
            "architecture",
            gpu.architecture().map(|arch| arch.to_string()),
        );
        optional("compute capability", gpu.cuda_compute_capability());
        optional("minor number", gpu.minor_number());
        optional("PCI", gpu.pci_info());
        optional("PCIe gen", gpu.current_pcie_link_generation());
        optional("PCIe max gen", gpu.max_pcie_link_generation());
        optional("PCIe width", gpu.current_pcie_link_width());
        optional("PCIe max width", gpu.max_pcie_link_width());
        optional(
            "PCIe TX KB/s",
            gpu.pcie_throughput_kb_per_s(PcieCounter::TX_BYTES),
        );
        optional(
            "PCIe RX KB/s",
            gpu.pcie_throughput_kb_per_s(PcieCounter::RX_BYTES),
        );
        optional("utilization", gpu.utilization());
        optional("memory", gpu.memory_info());
        optional("BAR1", gpu.bar1_memory());
        for domain in [
            ClockType::GRAPHICS,
            ClockType::SM,
            ClockType::MEMORY,
            ClockType::VIDEO,
        ] {
            optional(&format!("{domain} clock"), gpu.clock_mhz(domain));
            optional(&format!("{domain} max clock"), gpu.max_clock_mhz(domain));
            optional(
                &format!("{domain} application clock"),
                gpu.applications_clock_mhz(domain),
            );
            for id in [
                ClockId::CURRENT,
                ClockId::APP_CLOCK_TARGET,
                ClockId::APP_CLOCK_DEFAULT,
                ClockId::CUSTOMER_BOOST_MAX,
            ] {
                optional(
                    &format!("{domain} clock {id}"),
                    gpu.clock_by_id_mhz(domain, id),
                );
            }
        }
        optional("clock events", gpu.clock_event_reasons());
        optional(
            "supported clock events",
            gpu.supported_clock_event_reasons(),
        );
        optional("temperature", gpu.temperature_c());
        for threshold in (0..8).map(TemperatureThreshold) {
            optional(
                &format!("{threshold} threshold"),
                gpu.temperature_threshold_c(threshold),
            );
        }
        if let Some(fans) = optional("fans", gpu.fan_count()) {
            for fan in 0..fans {
                optional(&format!("fan {fan}"), gpu.fan_speed_percent(fan));
            }
        }
        optional("power", gpu.power_usage_mw());
        optional("power limit", gpu.power_limit_mw());
        optional("enforced power limit", gpu.enforced_power_limit_mw());
        optional("power limit range", gpu.power_limit_constraints_mw());
        optional("energy", gpu.total_energy_mj());
        optional(
            "pstate",
            gpu.performance_state().map(|state| state.to_string()),
        );
        optional("ECC mode", gpu.ecc_mode());
        for kind in [EccErrorType::CORRECTED, EccErrorType::UNCORRECTED] {
            for counter in [EccCounter::VOLATILE, EccCounter::AGGREGATE] {
                optional(
                    &format!("{kind} {counter} ECC errors"),
                    gpu.total_ecc_errors(kind, counter),
                );
            }
        }
        optional("persistence mode", gpu.persistence_mode());
        optional(
            "compute mode",
            gpu.compute_mode().map(|mode| mode.to_string()),
        );
        optional("MIG mode", gpu.mig_mode());
        optional("is MIG", gpu.is_mig_device());
        optional("max MIG devices", gpu.max_mig_device_count());
        optional("MIG devices", gpu.mig_devices());
        optional("parent (not a MIG device)", gpu.parent());
        optional("GPU instance (not a MIG device)", gpu.gpu_instance_id());
        optional(
            "compute instance (not a MIG device)",
            gpu.compute_instance_id(),
        );
        optional("NVLink 0 state", gpu.nvlink_state(0));
        optional("NVLink 0 version", gpu.nvlink_version(0));
        optional("NVLink 0 remote", gpu.nvlink_remote_pci_info(0));
        optional("compute processes", gpu.compute_processes());
        optional("graphics processes", gpu.graphics_processes());
        optional("event types", gpu.supported_event_types());
        for other in &gpus {
            optional("common ancestor", gpu.topology_common_ancestor(other));
            for capability in [
                P2pCapability::READ,
                P2pCapability::WRITE,
                P2pCapability::NVLINK,
                P2pCapability::ATOMICS,
                P2pCapability::PCI,
            ] {
                optional(
                    &format!("P2P {capability}"),
                    gpu.p2p_status(other, capability),
                );
            }
        }
    }
}

fn event_set_waits_with_a_timeout() {
    let gpu = Device::from_index(0).unwrap();
    let supported = gpu.supported_event_types().unwrap();
    println!("supported events: {supported:?}");
    let mut events = EventSet::new().unwrap();
    let wanted = supported & EventTypes::XID_CRITICAL_ERROR;
    if wanted.is_empty() {
        println!("no Xid events on this GPU");
    } else if optional("register", events.register(&gpu, wanted)).is_some() {
        // An Xid error in these milliseconds is possible, and then it must be decoded.
        if let Some(event) = events.wait(Duration::from_millis(10)).unwrap() {
            println!("event: {event:?}");
            assert!(event.types.intersects(wanted));
            assert!(event.xid().is_some());
        }
        events.wait(Duration::ZERO).unwrap();
    }
    events.close().unwrap();
}

/// An event stream on the real device: registered for the clock, Xid and power kinds the GPU
/// supports, its thread blocked in NVML (an event in these milliseconds is possible, and then it
/// must be decoded), and closed within its wait timeout with the set freed.
fn an_event_stream_watches_the_device_and_closes() {
    let gpu = Device::from_index(0).unwrap();
    let wait = Duration::from_millis(100);
    let options = NvmlStreamOptions::default().wait_timeout(wait);
    let mut events = match NvmlEventStream::watch(&[gpu], CLOCK_XID_POWER, options) {
        Err(error @ Error::Unsupported { .. }) => {
            println!("no clock, Xid or power events on this GPU: {error}");
            return;
        }
        other => other.unwrap(),
    };
    std::thread::sleep(wait * 3);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    while let std::task::Poll::Ready(item) = events.poll_next(&mut cx) {
        let event = item.expect("the stream ended").unwrap();
        println!("event: {event:?}");
        assert!(event.types.intersects(CLOCK_XID_POWER));
    }
    let start = std::time::Instant::now();
    events.close().unwrap();
    let took = start.elapsed();
    println!("closed in {took:?}");
    assert!(took < wait * 10, "close waited {took:?}");
}

fn nvml_restarts_after_the_last_user_is_gone() {
    for _ in 0..3 {
        let gpu = Device::from_index(0).unwrap();
        let name = gpu.name().unwrap();
        drop(gpu);
        // Nothing holds NVML here: this initialises it for the one call and shuts it down.
        assert!(system::device_count().unwrap() > 0);
        assert_eq!(Device::from_index(0).unwrap().name().unwrap(), name);
    }
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                for _ in 0..10 {
                    let gpu = Device::from_index(0).unwrap();
                    gpu.memory_info().unwrap();
                }
            });
        }
    });
}

fn cuda_and_nvml_devices_convert_by_uuid() {
    let cuda = cuda_safe::Device::new(0).unwrap();
    let nvml = cuda.to_nvml().unwrap();
    assert_eq!(nvml.uuid().unwrap(), cuda.uuid().unwrap().to_string());
    assert_eq!(cuda_safe::Device::from_nvml(&nvml).unwrap(), cuda);
}

/// This file's tests.
pub(crate) const FILE: GpuFile = gpu_file![
    system_queries_are_sane,
    devices_are_found_by_index_uuid_bus_id_and_cuda_uuid,
    memory_is_sane,
    this_process_appears_among_compute_processes_after_allocating,
    power_and_temperature_are_physical,
    mig_mode_reads_or_is_not_supported,
    nvlink_queries_return_a_value_or_not_supported,
    every_query_on_every_device_is_ok_or_a_typed_error,
    event_set_waits_with_a_timeout,
    an_event_stream_watches_the_device_and_closes,
    nvml_restarts_after_the_last_user_is_gone,
    cuda_and_nvml_devices_convert_by_uuid,
];
