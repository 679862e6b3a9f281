//! The operations of checkpoints and of NVML (`cuda_safe::system`).

use std::cell::RefCell;
use std::time::Duration;

use cuda_safe::checkpoint::{GpuPair, Process};
use cuda_safe::system::EventTypes;
use cuda_safe::{Device, system};

use cuda_safe_stub::faults::fixtures::device;
use cuda_safe_stub::faults::{Op, op};

pub(crate) fn checkpoint_and_nvml_operations(ops: &mut Vec<Op>) {
    const PID: u32 = 4242;
    let process = || Process::new(PID).expect("a process");
    ops.push(op("checkpoint::Process::new", || (), |_| Process::new(PID)));
    ops.push(op("Process::state", process, |p| p.state()));
    ops.push(op("Process::restore_thread_id", process, |p| {
        p.restore_thread_id()
    }));
    ops.push(op("Process::lock", process, |p| p.lock(None)));
    ops.push(op(
        "Process::checkpoint",
        move || {
            let p = process();
            p.lock(None).expect("locked");
            p
        },
        |p| p.checkpoint(),
    ));
    ops.push(op(
        "Process::restore",
        move || {
            let p = process();
            p.lock(None).expect("locked");
            p.checkpoint().expect("checkpointed");
            p
        },
        |p| p.restore(),
    ));
    if cuda_safe::sys::ABI_MAJOR >= 13 {
        ops.push(op(
            "Process::restore_remapped",
            move || {
                let p = process();
                p.lock(None).expect("locked");
                p.checkpoint().expect("checkpointed");
                let uuid = device().uuid().expect("the UUID");
                (
                    p,
                    GpuPair {
                        old: uuid,
                        new: uuid,
                    },
                )
            },
            |(p, pair)| p.restore_remapped(&[*pair]),
        ));
    }
    ops.push(op(
        "Process::unlock",
        move || {
            let p = process();
            p.lock(None).expect("locked");
            p
        },
        |p| p.unlock(),
    ));
    ops.push(op(
        "system::Session::new",
        || (),
        |_| system::Session::new(),
    ));
    let session = || system::Session::new().expect("NVML");
    ops.push(op("Session::device_count", session, |s| s.device_count()));
    ops.push(op("Session::driver_version", session, |s| {
        s.driver_version()
    }));
    ops.push(op("Session::nvml_version", session, |s| s.nvml_version()));
    ops.push(op("Session::cuda_driver_version", session, |s| {
        s.cuda_driver_version()
    }));
    ops.push(op(
        "system::Device::from_index",
        || (),
        |_| system::Device::from_index(0),
    ));
    let gpu = || system::Device::from_index(0).expect("an NVML device");
    ops.push(op("system::Device::name", gpu, |g| g.name()));
    ops.push(op("system::Device::uuid", gpu, |g| g.uuid()));
    ops.push(op("system::Device::memory_info", gpu, |g| g.memory_info()));
    ops.push(op("system::Device::temperature_c", gpu, |g| {
        g.temperature_c()
    }));
    ops.push(op("system::Device::power_usage_mw", gpu, |g| {
        g.power_usage_mw()
    }));
    ops.push(op(
        "system::EventSet::new",
        || (),
        |_| system::EventSet::new(),
    ));
    ops.push(op(
        "system::Device::supported_event_types",
        gpu,
        system::Device::supported_event_types,
    ));
    let events = || RefCell::new(system::EventSet::new().expect("an event set"));
    ops.push(op(
        "EventSet::register",
        move || (events(), gpu()),
        |(set, g)| set.borrow_mut().register(g, EventTypes::CLOCK),
    ));
    ops.push(op(
        "EventSet::wait (nothing comes)",
        move || {
            let (set, g) = (events(), gpu());
            set.borrow_mut()
                .register(&g, EventTypes::CLOCK)
                .expect("registered");
            set
        },
        |set| set.borrow_mut().wait(Duration::ZERO),
    ));
    ops.push(op("Device::to_nvml", device, |d| d.to_nvml()));
    ops.push(op("Device::from_nvml", gpu, Device::from_nvml));
}
