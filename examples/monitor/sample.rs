//! The queries: every metric column and how it reads a GPU, the values they give, and the
//! [`Sampler`] that reads one row per GPU for each sample.

use std::collections::HashSet;
use std::fmt;

use cuda_safe::Result;
use cuda_safe::system::{
    ClockEventReasons, ClockType, Device, EccCounter, EccErrorType, PcieCounter, ProcessInfo,
    Session,
};
use serde::Serialize;

use crate::args::Group;

/// One value a query gave.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub(crate) enum Value {
    Signed(i64),
    Unsigned(u64),
    Text(String),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Signed(value) => write!(f, "{value}"),
            Self::Unsigned(value) => write!(f, "{value}"),
            Self::Text(text) => f.write_str(text),
        }
    }
}

impl From<u32> for Value {
    fn from(value: u32) -> Self {
        Self::Unsigned(value.into())
    }
}

impl From<u64> for Value {
    fn from(value: u64) -> Self {
        Self::Unsigned(value)
    }
}

impl From<i32> for Value {
    fn from(value: i32) -> Self {
        Self::Signed(value.into())
    }
}

/// A printed metric: table name and unit, CSV/JSON key, minimum table width, and its query.
pub(crate) struct Column {
    pub(crate) group: Group,
    pub(crate) name: &'static str,
    pub(crate) unit: &'static str,
    pub(crate) key: &'static str,
    pub(crate) width: u16,
    read: fn(&Device) -> Result<Value>,
}

/// Every metric, in printing order.
pub(crate) const COLUMNS: [Column; 15] = [
    Column {
        group: Group::Power,
        name: "pwr",
        unit: "W",
        key: "power_w",
        width: 5,
        read: |gpu| gpu.power_usage_mw().map(|mw| Value::from(mw / 1000)),
    },
    Column {
        group: Group::Power,
        name: "gtemp",
        unit: "C",
        key: "gpu_temp_c",
        width: 5,
        read: |gpu| gpu.temperature_c().map(Value::from),
    },
    Column {
        group: Group::Utilization,
        name: "sm",
        unit: "%",
        key: "sm_util_pct",
        width: 4,
        read: |gpu| gpu.utilization().map(|u| Value::from(u.gpu)),
    },
    Column {
        group: Group::Utilization,
        name: "mem",
        unit: "%",
        key: "mem_util_pct",
        width: 4,
        read: |gpu| gpu.utilization().map(|u| Value::from(u.memory)),
    },
    Column {
        group: Group::Clocks,
        name: "mclk",
        unit: "MHz",
        key: "mem_clock_mhz",
        width: 5,
        read: |gpu| gpu.clock_mhz(ClockType::MEMORY).map(Value::from),
    },
    Column {
        group: Group::Clocks,
        name: "sclk",
        unit: "MHz",
        key: "sm_clock_mhz",
        width: 5,
        read: |gpu| gpu.clock_mhz(ClockType::SM).map(Value::from),
    },
    Column {
        group: Group::Clocks,
        name: "pstate",
        unit: "",
        key: "pstate",
        width: 6,
        read: |gpu| gpu.performance_state().map(|p| Value::Text(p.to_string())),
    },
    Column {
        group: Group::ClockEvents,
        name: "reasons",
        unit: "",
        key: "clock_event_reasons",
        width: 8,
        read: |gpu| gpu.clock_event_reasons().map(|r| Value::Text(reasons(r))),
    },
    Column {
        group: Group::Memory,
        name: "fb",
        unit: "MiB",
        key: "fb_used_mib",
        width: 7,
        read: |gpu| gpu.memory_info().map(|m| Value::from(m.used >> 20)),
    },
    Column {
        group: Group::Memory,
        name: "fbtot",
        unit: "MiB",
        key: "fb_total_mib",
        width: 7,
        read: |gpu| gpu.memory_info().map(|m| Value::from(m.total >> 20)),
    },
    Column {
        group: Group::Memory,
        name: "bar1",
        unit: "MiB",
        key: "bar1_used_mib",
        width: 6,
        read: |gpu| gpu.bar1_memory().map(|m| Value::from(m.used >> 20)),
    },
    Column {
        group: Group::Ecc,
        name: "sbecc",
        unit: "errs",
        key: "ecc_corrected",
        width: 5,
        read: |gpu| {
            gpu.total_ecc_errors(EccErrorType::CORRECTED, EccCounter::VOLATILE)
                .map(Value::from)
        },
    },
    Column {
        group: Group::Ecc,
        name: "dbecc",
        unit: "errs",
        key: "ecc_uncorrected",
        width: 5,
        read: |gpu| {
            gpu.total_ecc_errors(EccErrorType::UNCORRECTED, EccCounter::VOLATILE)
                .map(Value::from)
        },
    },
    Column {
        group: Group::Pcie,
        name: "rxpci",
        unit: "MB/s",
        key: "pcie_rx_mb_per_s",
        width: 6,
        read: |gpu| {
            gpu.pcie_throughput_kb_per_s(PcieCounter::RX_BYTES)
                .map(|kb| Value::from(kb / 1000))
        },
    },
    Column {
        group: Group::Pcie,
        name: "txpci",
        unit: "MB/s",
        key: "pcie_tx_mb_per_s",
        width: 6,
        read: |gpu| {
            gpu.pcie_throughput_kb_per_s(PcieCounter::TX_BYTES)
                .map(|kb| Value::from(kb / 1000))
        },
    },
];

/// Short names of the clock-event reasons, for one narrow column.
pub(crate) const REASON_NAMES: [(ClockEventReasons, &str); 11] = [
    (ClockEventReasons::GPU_IDLE, "idle"),
    (ClockEventReasons::APPLICATIONS_CLOCKS_SETTING, "app"),
    (ClockEventReasons::SW_POWER_CAP, "swpwr"),
    (ClockEventReasons::HW_SLOWDOWN, "hwslow"),
    (ClockEventReasons::SYNC_BOOST, "sync"),
    (ClockEventReasons::SW_THERMAL_SLOWDOWN, "swtherm"),
    (ClockEventReasons::HW_THERMAL_SLOWDOWN, "hwtherm"),
    (ClockEventReasons::HW_POWER_BRAKE_SLOWDOWN, "pbrake"),
    (ClockEventReasons::DISPLAY_CLOCK_SETTING, "disp"),
    (ClockEventReasons::BOARD_LIMIT, "board"),
    (ClockEventReasons::RELIABILITY, "rel"),
];

/// Clock-event reasons as `idle|swpwr` (`none` when clocks run free, unknown bits in hex).
pub(crate) fn reasons(set: ClockEventReasons) -> String {
    let mut names: Vec<String> = REASON_NAMES
        .iter()
        .filter(|(reason, _)| set.contains(*reason))
        .map(|(_, name)| (*name).to_owned())
        .collect();
    if set.unknown_bits() != 0 {
        names.push(format!("{:#x}", set.unknown_bits()));
    }
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join("|")
    }
}

/// One process on a GPU.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Process {
    pub(crate) pid: u32,
    /// `C` compute, `G` graphics.
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) name: Option<String>,
    pub(crate) used_memory_mib: Option<u64>,
}

/// One GPU in one sample: its label (NVML index, or the id it was chosen by), a value or
/// `None` per selected column, and its processes (`None`: not reported).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    pub(crate) gpu: Value,
    pub(crate) cells: Vec<Option<Value>>,
    pub(crate) processes: Option<Vec<Process>>,
}

/// Reads samples from the GPUs, telling each failure other than "not supported" once.
pub(crate) struct Sampler {
    session: Session,
    gpus: Vec<(Value, Device)>,
    columns: Vec<&'static Column>,
    processes: bool,
    told: HashSet<(usize, &'static str)>,
    scratch: Vec<ProcessInfo>,
}

impl Sampler {
    /// Reads `columns` (and with `processes`, the processes) of `gpus`, each with its label.
    pub(crate) fn new(
        session: Session,
        gpus: Vec<(Value, Device)>,
        columns: Vec<&'static Column>,
        processes: bool,
    ) -> Self {
        Self {
            session,
            gpus,
            columns,
            processes,
            told: HashSet::new(),
            scratch: Vec::new(),
        }
    }

    pub(crate) fn sample(&mut self) -> Vec<Row> {
        (0..self.gpus.len()).map(|at| self.row(at)).collect()
    }

    fn row(&mut self, at: usize) -> Row {
        let gpu = self.gpus[at].1.clone();
        let mut cells = Vec::with_capacity(self.columns.len());
        for column in self.columns.clone() {
            let value = (column.read)(&gpu);
            cells.push(self.value(at, column.key, value));
        }
        let processes = self
            .processes
            .then(|| self.process_list(at, &gpu))
            .flatten();
        Row {
            gpu: self.gpus[at].0.clone(),
            cells,
            processes,
        }
    }

    /// The value, or `None` after telling the error (once per GPU and query) unless the GPU
    /// just does not support the query.
    fn value<T>(&mut self, at: usize, what: &'static str, value: Result<T>) -> Option<T> {
        value
            .map_err(|error| {
                if !error.is_not_supported() && self.told.insert((at, what)) {
                    eprintln!("monitor: gpu {}: {what}: {error}", self.gpus[at].0);
                }
            })
            .ok()
    }

    /// Compute then graphics processes; `None` when neither list can be read.
    fn process_list(&mut self, at: usize, gpu: &Device) -> Option<Vec<Process>> {
        let compute = gpu.compute_processes_into(&mut self.scratch);
        let compute = self.value(at, "compute processes", compute).map(|()| {
            self.scratch
                .iter()
                .map(|p| (p.pid(), "C", p.used_gpu_memory()))
                .collect::<Vec<_>>()
        });
        let graphics = gpu.graphics_processes();
        let graphics = self.value(at, "graphics processes", graphics).map(|list| {
            list.iter()
                .map(|p| (p.pid(), "G", p.used_gpu_memory()))
                .collect::<Vec<_>>()
        });
        if compute.is_none() && graphics.is_none() {
            return None;
        }
        let found = compute.into_iter().chain(graphics).flatten();
        Some(
            found
                .map(|(pid, kind, bytes)| Process {
                    pid,
                    kind,
                    name: self.session.process_name(pid).ok(),
                    used_memory_mib: bytes.map(|bytes| bytes >> 20),
                })
                .collect(),
        )
    }
}
