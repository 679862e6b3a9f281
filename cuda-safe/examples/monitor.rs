//! A GPU monitor like `nvidia-smi dmon`, through `cuda_safe::system` (NVML, no CUDA): chosen
//! metric groups of chosen GPUs, every few seconds, as an aligned table, CSV or JSON lines,
//! optionally with the processes on each GPU and a timestamp.
//!
//! ```text
//! cargo run -p cuda-safe --example monitor                         # every second until Ctrl-C
//! cargo run -p cuda-safe --example monitor -- -d 1 -c 10 --format csv
//! cargo run -p cuda-safe --example monitor -- -i 0,GPU-8c1b... -s pucvmet --timestamp
//! cargo run -p cuda-safe --example monitor -- --once --processes --format json
//! cargo run -p cuda-safe --example monitor -- --help
//! ```
//!
//! Metric groups (`-s`, default `pucm`): `p` power and temperature, `u` utilization, `c` clocks
//! and performance state, `v` clock-event reasons, `m` memory, `e` volatile ECC error counts,
//! `t` PCIe throughput (NVML samples each direction for 20 ms). `--once` is `-c 1` and
//! `--samples N` is `-c N`; without a count it runs until Ctrl-C (or SIGTERM), which ends it
//! cleanly after the output so far is flushed.
//!
//! The table's header repeats every `--header-every` lines; CSV has one header line; JSON is
//! one object per GPU per sample. A value the GPU does not report is `-` (table, CSV) or `null`
//! (JSON); another failure of a query is shown the same way and told once on stderr. Without
//! NVML it prints one line saying where it looked and exits with status 1.

use std::collections::HashSet;
use std::fmt;
use std::io::{self, Write};
use std::process::ExitCode;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::{Parser, ValueEnum};
use comfy_table::{CellAlignment, ColumnConstraint, Table, Width, presets};
use cuda_safe::nvml_sys::{LIBNVML_PATH_ENV, LoadError};
use cuda_safe::system::{
    ClockEventReasons, ClockType, Device, EccCounter, EccErrorType, PcieCounter, ProcessInfo,
    Session,
};
use cuda_safe::{Error, Result};
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

/// Command-line options, as clap reads them.
#[derive(Parser, Debug)]
#[command(
    name = "monitor",
    about = "Monitor GPUs through NVML, like `nvidia-smi dmon`.",
    after_help = GROUPS_HELP
)]
struct Cli {
    /// Seconds between samples (fractions allowed).
    #[arg(short = 'd', long, value_name = "SECONDS", default_value = "1", value_parser = parse_delay)]
    delay: Duration,
    /// Stop after N samples [default: run until Ctrl-C].
    #[arg(short = 'c', long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    count: Option<u64>,
    /// Same as `-c N`.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..), conflicts_with = "count")]
    samples: Option<u64>,
    /// Same as `-c 1`.
    #[arg(long, conflicts_with_all = ["count", "samples"])]
    once: bool,
    /// GPUs to watch: NVML indices, UUIDs (GPU-..., MIG-...) or PCI bus ids, comma-separated
    /// [default: all].
    #[arg(short = 'i', long = "id", value_name = "ID,...", value_delimiter = ',', value_parser = parse_id)]
    ids: Vec<DeviceId>,
    /// Metric groups: letters from `pucvmet` (below).
    #[arg(short = 's', long = "select", value_name = "LETTERS", default_value = "pucm", value_parser = parse_groups)]
    groups: Groups,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Repeat the table header every N lines (0: only at the start).
    #[arg(long, value_name = "N", default_value_t = 20)]
    header_every: usize,
    /// List each GPU's compute and graphics processes in every sample.
    #[arg(long)]
    processes: bool,
    /// Add each sample's time (UTC, RFC 3339).
    #[arg(long)]
    timestamp: bool,
}

/// The `-s` letters, for `--help`.
const GROUPS_HELP: &str = "\
Metric groups (-s):
  p  power (W) and GPU temperature (C)
  u  SM and memory utilization (%)
  c  memory and SM clocks (MHz), performance state
  v  clock-event reasons: why clocks are held down
  m  frame buffer used and total, BAR1 used (MiB)
  e  ECC errors since the driver loaded, corrected and uncorrected
  t  PCIe receive and transmit throughput (MB/s; NVML samples 20 ms each)
A value a GPU does not report prints as - (table, CSV) or null (JSON).";

/// What to monitor and how to print it.
#[derive(Debug, Clone, PartialEq)]
struct Config {
    delay: Duration,
    /// `None`: until interrupted.
    count: Option<u64>,
    /// Empty: every GPU.
    ids: Vec<DeviceId>,
    groups: Vec<Group>,
    format: Format,
    header_every: usize,
    processes: bool,
    timestamp: bool,
}

impl Config {
    /// Reads the command line (`args` starts with the program name).
    fn from_args<I, T>(args: I) -> std::result::Result<Self, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let cli = Cli::try_parse_from(args)?;
        Ok(Self {
            delay: cli.delay,
            count: cli.count.or(cli.samples).or(cli.once.then_some(1)),
            ids: cli.ids,
            groups: cli.groups.0,
            format: cli.format,
            header_every: cli.header_every,
            processes: cli.processes,
            timestamp: cli.timestamp,
        })
    }
}

/// How `-i` names a GPU.
#[derive(Debug, Clone, PartialEq)]
enum DeviceId {
    Index(u32),
    Uuid(String),
    PciBusId(String),
}

impl fmt::Display for DeviceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Index(index) => write!(f, "{index}"),
            Self::Uuid(text) | Self::PciBusId(text) => f.write_str(text),
        }
    }
}

/// Parses `-d`: a positive number of seconds.
fn parse_delay(text: &str) -> std::result::Result<Duration, String> {
    text.parse::<f64>()
        .ok()
        .filter(|seconds| *seconds > 0.0)
        .and_then(|seconds| Duration::try_from_secs_f64(seconds).ok())
        .ok_or_else(|| format!("not a positive number of seconds: {text:?}"))
}

/// Parses one `-i` item: digits are an index, `GPU-`/`MIG-` a UUID, a `:` a PCI bus id.
fn parse_id(text: &str) -> std::result::Result<DeviceId, String> {
    let text = text.trim();
    let upper = text.to_ascii_uppercase();
    if let Ok(index) = text.parse() {
        Ok(DeviceId::Index(index))
    } else if upper.starts_with("GPU-") || upper.starts_with("MIG-") {
        Ok(DeviceId::Uuid(text.to_owned()))
    } else if text.contains(':') {
        Ok(DeviceId::PciBusId(text.to_owned()))
    } else {
        Err(format!(
            "{text:?} is not a GPU index, a GPU-/MIG- UUID or a PCI bus id"
        ))
    }
}

/// A metric group, chosen by its letter with `-s` as in `nvidia-smi dmon`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Group {
    Power,
    Utilization,
    Clocks,
    ClockEvents,
    Memory,
    Ecc,
    Pcie,
}

/// The groups with their letters, in the order their columns are printed.
const GROUPS: [(char, Group); 7] = [
    ('p', Group::Power),
    ('u', Group::Utilization),
    ('c', Group::Clocks),
    ('v', Group::ClockEvents),
    ('m', Group::Memory),
    ('e', Group::Ecc),
    ('t', Group::Pcie),
];

/// The groups `-s` selected, in printing order (a newtype, so clap takes one value).
#[derive(Debug, Clone, PartialEq)]
struct Groups(Vec<Group>);

/// Parses `-s`: letters of [`GROUPS`], in any order, repeats allowed.
fn parse_groups(text: &str) -> std::result::Result<Groups, String> {
    let letters: String = GROUPS.iter().map(|(letter, _)| letter).collect();
    if let Some(bad) = text.chars().find(|c| !letters.contains(*c)) {
        return Err(format!("unknown group {bad:?} (groups: {letters})"));
    }
    let groups: Vec<Group> = GROUPS
        .iter()
        .filter(|(letter, _)| text.contains(*letter))
        .map(|&(_, group)| group)
        .collect();
    if groups.is_empty() {
        return Err(format!("no group chosen (groups: {letters})"));
    }
    Ok(Groups(groups))
}

/// How samples are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    /// Aligned columns with a repeated two-line header, like `nvidia-smi dmon`.
    Table,
    /// Comma-separated values with one header line.
    Csv,
    /// One JSON object per GPU per sample.
    Json,
}

/// One value a query gave.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
enum Value {
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
struct Column {
    group: Group,
    name: &'static str,
    unit: &'static str,
    key: &'static str,
    width: u16,
    read: fn(&Device) -> Result<Value>,
}

/// Every metric, in printing order.
const COLUMNS: [Column; 15] = [
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
const REASON_NAMES: [(ClockEventReasons, &str); 11] = [
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
fn reasons(set: ClockEventReasons) -> String {
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
struct Process {
    pid: u32,
    /// `C` compute, `G` graphics.
    #[serde(rename = "type")]
    kind: &'static str,
    name: Option<String>,
    used_memory_mib: Option<u64>,
}

/// One GPU in one sample: its label (NVML index, or the id it was chosen by), a value or
/// `None` per selected column, and its processes (`None`: not reported).
#[derive(Debug, Clone, PartialEq)]
struct Row {
    gpu: Value,
    cells: Vec<Option<Value>>,
    processes: Option<Vec<Process>>,
}

/// How a missing value is printed in the table and CSV.
const MISSING: &str = "-";

/// A value as text, [`MISSING`] when absent.
fn text<T: ToString>(value: Option<&T>) -> String {
    value.map_or_else(|| MISSING.to_owned(), ToString::to_string)
}

/// Quotes a CSV field when it holds a comma, quote or line break (RFC 4180).
fn csv_field(field: &str) -> String {
    if field.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_owned()
    }
}

/// Processes as one CSV field: `pid:type:MiB:name` entries joined by `;`.
fn csv_processes(processes: Option<&Vec<Process>>) -> String {
    processes.map_or_else(
        || MISSING.to_owned(),
        |list| {
            let entries: Vec<String> = list
                .iter()
                .map(|p| {
                    let mib = text(p.used_memory_mib.as_ref());
                    let name = text(p.name.as_ref());
                    format!("{}:{}:{mib}:{name}", p.pid, p.kind)
                })
                .collect();
            entries.join(";")
        },
    )
}

/// A table column's layout: minimum width and alignment.
#[derive(Clone, Copy)]
struct Align {
    width: u16,
    left: bool,
}

/// Lays `rows` out as aligned lines with comfy-table: one space before each column but the
/// first, widths at least those of `layout`.
fn aligned(layout: &[Align], rows: Vec<Vec<String>>) -> String {
    let mut table = Table::new();
    table.load_style(presets::NOTHING).add_rows(rows);
    for (index, (column, align)) in table.column_iter_mut().zip(layout).enumerate() {
        let padding = u16::from(index > 0);
        column.set_padding((padding, 0));
        column.set_constraint(ColumnConstraint::LowerBoundary(Width::Fixed(
            align.width + padding,
        )));
        column.set_cell_alignment(if align.left {
            CellAlignment::Left
        } else {
            CellAlignment::Right
        });
    }
    table
        .lines()
        .map(|line| format!("{}\n", line.trim_end()))
        .collect()
}

/// Formats samples in one format, keeping count of table lines for the header.
struct Printer {
    format: Format,
    columns: Vec<&'static Column>,
    timestamp: bool,
    processes: bool,
    header_every: usize,
    /// `None` until the first header is written; then lines since the table's last one.
    since_header: Option<usize>,
    /// The table's two header lines: names and units.
    header: [Vec<String>; 2],
    /// The table's columns; widths only grow, so samples stay aligned with the header.
    layout: Vec<Align>,
}

impl Printer {
    fn new(config: &Config) -> Self {
        let columns: Vec<&'static Column> = COLUMNS
            .iter()
            .filter(|column| config.groups.contains(&column.group))
            .collect();
        // (name, unit, width, left-aligned) of each table column.
        let mut specs = vec![("#", "#", 1, true)];
        if config.timestamp {
            specs.push(("time", "", 24, true));
        }
        specs.push(("gpu", "Idx", 3, false));
        specs.extend(columns.iter().map(|c| (c.name, c.unit, c.width, false)));
        Self {
            format: config.format,
            columns,
            timestamp: config.timestamp,
            processes: config.processes,
            header_every: config.header_every,
            since_header: None,
            header: [
                specs.iter().map(|spec| spec.0.to_owned()).collect(),
                specs.iter().map(|spec| spec.1.to_owned()).collect(),
            ],
            layout: specs
                .iter()
                .map(|&(_, _, width, left)| Align { width, left })
                .collect(),
        }
    }

    /// The text for one sample taken at `time` (RFC 3339).
    fn sample(&mut self, time: &str, rows: &[Row]) -> String {
        match self.format {
            Format::Table => self.table(time, rows),
            Format::Csv => self.csv(time, rows),
            Format::Json => rows.iter().map(|row| self.json(time, row)).collect(),
        }
    }

    fn table(&mut self, time: &str, rows: &[Row]) -> String {
        let mut lines: Vec<Vec<String>> = rows
            .iter()
            .map(|row| {
                let mut line = vec![String::new()];
                if self.timestamp {
                    line.push(time.to_owned());
                }
                line.push(row.gpu.to_string());
                line.extend(row.cells.iter().map(|cell| text(cell.as_ref())));
                line
            })
            .collect();
        // A value wider than its column widens it for good and brings the header back.
        let mut grew = false;
        for line in &lines {
            for (align, cell) in self.layout.iter_mut().zip(line) {
                let width = u16::try_from(cell.chars().count()).unwrap_or(u16::MAX);
                if width > align.width {
                    align.width = width;
                    grew = true;
                }
            }
        }
        let due = grew
            || self
                .since_header
                .is_none_or(|lines| self.header_every > 0 && lines >= self.header_every);
        if due {
            lines.splice(0..0, self.header.clone());
        }
        let mut out = aligned(&self.layout, lines);
        if self.processes {
            out.push_str(&process_table(rows));
        }
        let before = if due {
            0
        } else {
            self.since_header.unwrap_or(0)
        };
        let printed = out.lines().count() - if due { 2 } else { 0 };
        self.since_header = Some(before + printed);
        out
    }

    fn csv(&mut self, time: &str, rows: &[Row]) -> String {
        let mut lines = Vec::new();
        if self.since_header.is_none() {
            let mut header = Vec::new();
            if self.timestamp {
                header.push("time");
            }
            header.push("gpu");
            header.extend(self.columns.iter().map(|column| column.key));
            if self.processes {
                header.push("processes");
            }
            lines.push(header.join(","));
            self.since_header = Some(0);
        }
        for row in rows {
            let mut fields = Vec::new();
            if self.timestamp {
                fields.push(time.to_owned());
            }
            fields.push(row.gpu.to_string());
            fields.extend(row.cells.iter().map(|cell| text(cell.as_ref())));
            if self.processes {
                fields.push(csv_processes(row.processes.as_ref()));
            }
            let fields: Vec<String> = fields.iter().map(|field| csv_field(field)).collect();
            lines.push(fields.join(","));
        }
        lines.iter().map(|line| format!("{line}\n")).collect()
    }

    fn json(&self, time: &str, row: &Row) -> String {
        let object = JsonRow {
            printer: self,
            time,
            row,
        };
        // Serializing strings, numbers and `None` into a `String` cannot fail.
        let line = serde_json::to_string(&object).unwrap_or_default();
        format!("{line}\n")
    }
}

/// The `--processes` lines of a table sample: a header and one line per process (a line of
/// `-` for a GPU that does not report them); nothing when no GPU has any.
fn process_table(rows: &[Row]) -> String {
    let mut lines = Vec::new();
    for row in rows {
        let gpu = row.gpu.to_string();
        match &row.processes {
            None => lines.push(vec![
                String::new(),
                gpu,
                MISSING.to_owned(),
                MISSING.to_owned(),
                MISSING.to_owned(),
                MISSING.to_owned(),
            ]),
            Some(processes) => lines.extend(processes.iter().map(|p| {
                vec![
                    String::new(),
                    gpu.clone(),
                    p.pid.to_string(),
                    p.kind.to_owned(),
                    text(p.used_memory_mib.as_ref()),
                    text(p.name.as_ref()),
                ]
            })),
        }
    }
    if lines.is_empty() {
        return String::new();
    }
    let header = ["#", "gpu", "pid", "type", "MiB", "name"];
    lines.insert(0, header.map(str::to_owned).to_vec());
    let layout = [
        (1, true),
        (3, false),
        (8, false),
        (4, false),
        (7, false),
        (0, true),
    ]
    .map(|(width, left)| Align { width, left });
    aligned(&layout, lines)
}

/// One JSON object: `time` (with `--timestamp`), `gpu`, one key per column, `processes`
/// (with `--processes`), in that order.
struct JsonRow<'a> {
    printer: &'a Printer,
    time: &'a str,
    row: &'a Row,
}

impl Serialize for JsonRow<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        if self.printer.timestamp {
            map.serialize_entry("time", self.time)?;
        }
        map.serialize_entry("gpu", &self.row.gpu)?;
        for (column, cell) in self.printer.columns.iter().zip(&self.row.cells) {
            map.serialize_entry(column.key, cell)?;
        }
        if self.printer.processes {
            map.serialize_entry("processes", &self.row.processes)?;
        }
        map.end()
    }
}

/// A time as RFC 3339 in UTC with milliseconds (`2023-11-14T22:13:20.123Z`).
fn rfc3339(since_epoch: Duration) -> String {
    let seconds = since_epoch.as_secs();
    let (days, of_day) = (seconds / 86_400, seconds % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's `civil_from_days`), in eras of
    // 400 years counted from 0000-03-01.
    let z = days + 719_468;
    let (era, day_of_era) = (z / 146_097, z % 146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = era * 400 + year_of_era + u64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60,
        since_epoch.subsec_millis()
    )
}

/// Why a run ended early.
#[derive(Debug)]
enum Failure {
    Nvml(Error),
    Device { id: DeviceId, error: Error },
    Output(io::Error),
    Signal(ctrlc::Error),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Nvml(error @ Error::Load(LoadError::LibraryNotFound { .. })) => write!(
                f,
                "{error}; set {LIBNVML_PATH_ENV} to its path if it is installed elsewhere"
            ),
            Self::Nvml(error) => write!(f, "{error}"),
            Self::Device { id, error } => write!(f, "GPU {id}: {error}"),
            Self::Output(error) => write!(f, "writing the output: {error}"),
            Self::Signal(error) => write!(f, "cannot catch Ctrl-C: {error}"),
        }
    }
}

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        Self::Nvml(error)
    }
}

impl From<io::Error> for Failure {
    fn from(error: io::Error) -> Self {
        Self::Output(error)
    }
}

/// The chosen GPUs (all when `ids` is empty), each with its label.
fn open_devices(
    session: &Session,
    ids: &[DeviceId],
) -> std::result::Result<Vec<(Value, Device)>, Failure> {
    if ids.is_empty() {
        return Ok((0u32..).map(Value::from).zip(session.devices()?).collect());
    }
    ids.iter()
        .map(|id| {
            let found = match id {
                DeviceId::Index(index) => session.device(*index),
                DeviceId::Uuid(uuid) => Device::from_uuid(uuid),
                DeviceId::PciBusId(bus_id) => Device::from_pci_bus_id(bus_id),
            };
            let gpu = found.map_err(|error| Failure::Device {
                id: id.clone(),
                error,
            })?;
            let label = match (id, gpu.index()) {
                (&DeviceId::Index(index), _) | (_, Ok(index)) => Value::from(index),
                (_, Err(_)) => Value::Text(id.to_string()),
            };
            Ok((label, gpu))
        })
        .collect()
}

/// Reads samples from the GPUs, telling each failure other than "not supported" once.
struct Sampler {
    session: Session,
    gpus: Vec<(Value, Device)>,
    columns: Vec<&'static Column>,
    processes: bool,
    told: HashSet<(usize, &'static str)>,
    scratch: Vec<ProcessInfo>,
}

impl Sampler {
    fn sample(&mut self) -> Vec<Row> {
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

/// A receiver that gets a message on Ctrl-C or SIGTERM.
fn interruptions() -> std::result::Result<Receiver<()>, Failure> {
    let (sender, receiver) = mpsc::channel();
    ctrlc::set_handler(move || {
        // The receiver only goes away as the program ends.
        let _ = sender.send(());
    })
    .map_err(Failure::Signal)?;
    Ok(receiver)
}

/// The table's opening comments: driver versions and the chosen GPUs' names and UUIDs.
fn preamble(session: &Session, gpus: &[(Value, Device)]) -> String {
    fn or_missing<T: fmt::Display>(value: Result<T>) -> String {
        value.map_or_else(|_| MISSING.to_owned(), |value| value.to_string())
    }
    let mut out = format!(
        "# driver {}, CUDA {}, NVML {}\n",
        or_missing(session.driver_version()),
        or_missing(session.cuda_driver_version()),
        or_missing(session.nvml_version())
    );
    for (label, gpu) in gpus {
        out.push_str(&format!(
            "# gpu {label}: {} {}\n",
            or_missing(gpu.name()),
            or_missing(gpu.uuid())
        ));
    }
    if gpus.is_empty() {
        out.push_str("# no GPU\n");
    }
    out
}

fn run(config: &Config) -> std::result::Result<(), Failure> {
    let session = Session::new()?;
    let gpus = open_devices(&session, &config.ids)?;
    let interrupted = interruptions()?;
    let mut out = io::stdout().lock();
    if config.format == Format::Table {
        out.write_all(preamble(&session, &gpus).as_bytes())?;
    }
    if gpus.is_empty() {
        return Ok(out.flush()?);
    }
    let mut printer = Printer::new(config);
    let mut sampler = Sampler {
        session,
        gpus,
        columns: printer.columns.clone(),
        processes: config.processes,
        told: HashSet::new(),
        scratch: Vec::new(),
    };
    let mut next = Instant::now();
    let mut taken = 0;
    loop {
        let time = rfc3339(
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default(),
        );
        let rows = sampler.sample();
        out.write_all(printer.sample(&time, &rows).as_bytes())?;
        out.flush()?;
        taken += 1;
        if config.count.is_some_and(|count| taken >= count) {
            return Ok(());
        }
        next = (next + config.delay).max(Instant::now());
        match interrupted.recv_timeout(next.saturating_duration_since(Instant::now())) {
            Err(RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(RecvTimeoutError::Disconnected) => return Ok(()),
        }
    }
}

fn main() -> ExitCode {
    let config = Config::from_args(std::env::args_os()).unwrap_or_else(|error| error.exit());
    match run(&config) {
        Ok(()) => ExitCode::SUCCESS,
        // A reader such as `head` that stops reading ends the monitor, as it ends `dmon`.
        Err(Failure::Output(error)) if error.kind() == io::ErrorKind::BrokenPipe => {
            ExitCode::SUCCESS
        }
        Err(failure) => {
            eprintln!("monitor: {failure}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::error::ErrorKind;

    /// The configuration of `monitor ARGS`.
    fn config(args: &[&str]) -> Config {
        Config::from_args(std::iter::once("monitor").chain(args.iter().copied())).unwrap()
    }

    /// The error kind of `monitor ARGS`.
    fn error(args: &[&str]) -> ErrorKind {
        Config::from_args(std::iter::once("monitor").chain(args.iter().copied()))
            .unwrap_err()
            .kind()
    }

    /// Two GPUs with values for the first `columns` of `-s pu`; the second reports neither
    /// power, memory utilization nor processes.
    fn rows(columns: usize) -> Vec<Row> {
        let mut rows = vec![
            Row {
                gpu: Value::from(0u32),
                cells: vec![
                    Some(Value::from(312u32)),
                    Some(Value::from(61)),
                    Some(Value::from(97u32)),
                    Some(Value::from(45u32)),
                ],
                processes: Some(vec![
                    Process {
                        pid: 4242,
                        kind: "C",
                        name: Some("train, \"big\"".to_owned()),
                        used_memory_mib: Some(70_000),
                    },
                    Process {
                        pid: 77,
                        kind: "G",
                        name: None,
                        used_memory_mib: None,
                    },
                ]),
            },
            Row {
                gpu: Value::from(1u32),
                cells: vec![None, Some(Value::from(-5)), Some(Value::from(0u32)), None],
                processes: None,
            },
        ];
        for row in &mut rows {
            row.cells.truncate(columns);
        }
        rows
    }

    const TIME: &str = "2023-11-14T22:13:20.123Z";

    #[test]
    fn defaults_match_dmon_but_add_memory() {
        let defaults = config(&[]);
        assert_eq!(
            defaults,
            Config {
                delay: Duration::from_secs(1),
                count: None,
                ids: Vec::new(),
                groups: vec![
                    Group::Power,
                    Group::Utilization,
                    Group::Clocks,
                    Group::Memory
                ],
                format: Format::Table,
                header_every: 20,
                processes: false,
                timestamp: false,
            }
        );
    }

    #[test]
    fn options_are_read() {
        let chosen = config(&[
            "-d",
            "0.25",
            "-c",
            "3",
            "-i",
            "0,GPU-0b1c2d3e-aaaa-bbbb-cccc-000011112222",
            "--id",
            "00000000:1B:00.0",
            "-s",
            "tpp",
            "--format",
            "csv",
            "--header-every",
            "0",
            "--processes",
            "--timestamp",
        ]);
        assert_eq!(chosen.delay, Duration::from_millis(250));
        assert_eq!(chosen.count, Some(3));
        assert_eq!(
            chosen.ids,
            [
                DeviceId::Index(0),
                DeviceId::Uuid("GPU-0b1c2d3e-aaaa-bbbb-cccc-000011112222".to_owned()),
                DeviceId::PciBusId("00000000:1B:00.0".to_owned()),
            ]
        );
        assert_eq!(chosen.groups, [Group::Power, Group::Pcie], "printing order");
        assert_eq!(chosen.format, Format::Csv);
        assert_eq!(chosen.header_every, 0);
        assert!(chosen.processes && chosen.timestamp);
    }

    #[test]
    fn once_and_samples_are_counts() {
        assert_eq!(config(&["--once"]).count, Some(1));
        assert_eq!(config(&["--samples", "7"]).count, Some(7));
        assert_eq!(config(&["--delay", "2"]).delay, Duration::from_secs(2));
        assert_eq!(config(&["-s", "pucvmet"]).groups.len(), GROUPS.len());
    }

    #[test]
    fn bad_arguments_are_refused() {
        for args in [
            &["-d", "0"][..],
            &["-d", "soon"],
            &["-d", "inf"],
            &["-c", "0"],
            &["-c", "many"],
            &["--samples", "0"],
            &["-s", "x"],
            &["-s", ""],
            &["-i", "first"],
            &["-i", "0,,1"],
        ] {
            assert_eq!(error(args), ErrorKind::ValueValidation, "{args:?}");
        }
        assert_eq!(error(&["--format", "xml"]), ErrorKind::InvalidValue);
        assert_eq!(error(&["--once", "-c", "2"]), ErrorKind::ArgumentConflict);
        assert_eq!(
            error(&["--samples", "2", "-c", "3"]),
            ErrorKind::ArgumentConflict
        );
        assert_eq!(error(&["--interval", "2"]), ErrorKind::UnknownArgument);
        // A negative number reads as an option.
        assert_eq!(error(&["-d", "-1"]), ErrorKind::UnknownArgument);
        assert_eq!(error(&["--header-every", "-1"]), ErrorKind::UnknownArgument);
        assert_eq!(error(&["-c"]), ErrorKind::InvalidValue);
        assert_eq!(error(&["--help"]), ErrorKind::DisplayHelp);
    }

    #[test]
    fn table_aligns_columns_and_shows_unsupported_as_a_dash() {
        let mut printer = Printer::new(&config(&["-s", "pu"]));
        let rows = rows(4);
        let expected = "\
# gpu   pwr gtemp   sm  mem
# Idx     W     C    %    %
    0   312    61   97   45
    1     -    -5    0    -
";
        assert_eq!(printer.sample(TIME, &rows), expected);
    }

    #[test]
    fn table_repeats_its_header_every_n_lines() {
        let mut printer = Printer::new(&config(&["-s", "p", "--header-every", "3"]));
        let headers: Vec<usize> = (0..6)
            .map(|_| {
                let text = printer.sample(TIME, &rows(2));
                text.lines().filter(|line| line.starts_with('#')).count()
            })
            .collect();
        // Two lines a sample: the header comes back once 3 or more lines followed it.
        assert_eq!(headers, [2, 0, 2, 0, 2, 0]);

        let mut once = Printer::new(&config(&["-s", "p", "--header-every", "0"]));
        assert!(once.sample(TIME, &rows(2)).starts_with('#'));
        for _ in 0..50 {
            assert!(!once.sample(TIME, &rows(2)).contains('#'));
        }

        // A wider value widens its column for good and brings the header back, aligned.
        let mut wide = rows(2);
        wide[1].cells[0] = Some(Value::from(1_234_567u32));
        let expected = "\
# gpu     pwr gtemp
# Idx       W     C
    0     312    61
    1 1234567    -5
";
        assert_eq!(once.sample(TIME, &wide), expected);
        assert_eq!(
            once.sample(TIME, &rows(2)),
            "    0     312    61\n    1       -    -5\n"
        );
    }

    #[test]
    fn table_lists_processes_and_the_time() {
        let mut printer = Printer::new(&config(&["-s", "p", "--processes", "--timestamp"]));
        let expected = "\
# time                     gpu   pwr gtemp
#                          Idx     W     C
  2023-11-14T22:13:20.123Z   0   312    61
  2023-11-14T22:13:20.123Z   1     -    -5
# gpu      pid type     MiB name
    0     4242    C   70000 train, \"big\"
    0       77    G       - -
    1        -    -       - -
";
        assert_eq!(printer.sample(TIME, &rows(2)), expected);
    }

    #[test]
    fn csv_has_one_header_and_quotes_fields() {
        let mut printer = Printer::new(&config(&[
            "-s",
            "pu",
            "--format",
            "csv",
            "--processes",
            "--timestamp",
        ]));
        let expected = "\
time,gpu,power_w,gpu_temp_c,sm_util_pct,mem_util_pct,processes
2023-11-14T22:13:20.123Z,0,312,61,97,45,\"4242:C:70000:train, \"\"big\"\";77:G:-:-\"
2023-11-14T22:13:20.123Z,1,-,-5,0,-,-
";
        assert_eq!(printer.sample(TIME, &rows(4)), expected);
        let again = printer.sample(TIME, &rows(4));
        assert_eq!(again.lines().count(), 2, "no second header");
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("two\nlines"), "\"two\nlines\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }

    #[test]
    fn json_is_one_object_per_gpu_with_nulls() {
        let mut printer = Printer::new(&config(&[
            "-s",
            "puc",
            "--format",
            "json",
            "--processes",
            "--timestamp",
        ]));
        let mut rows = rows(4);
        for row in &mut rows {
            row.cells
                .extend([None, None, Some(Value::Text("P0".to_owned()))]);
        }
        let expected = r#"{"time":"2023-11-14T22:13:20.123Z","gpu":0,"power_w":312,"gpu_temp_c":61,"sm_util_pct":97,"mem_util_pct":45,"mem_clock_mhz":null,"sm_clock_mhz":null,"pstate":"P0","processes":[{"pid":4242,"type":"C","name":"train, \"big\"","used_memory_mib":70000},{"pid":77,"type":"G","name":null,"used_memory_mib":null}]}
{"time":"2023-11-14T22:13:20.123Z","gpu":1,"power_w":null,"gpu_temp_c":-5,"sm_util_pct":0,"mem_util_pct":null,"mem_clock_mhz":null,"sm_clock_mhz":null,"pstate":"P0","processes":null}
"#;
        let text = printer.sample(TIME, &rows);
        assert_eq!(text, expected);
        for line in text.lines() {
            let object: serde_json::Value = serde_json::from_str(line).unwrap();
            assert!(object.is_object());
        }

        let mut plain = Printer::new(&config(&["-s", "p", "--format", "json"]));
        let gpu = Row {
            gpu: Value::Text("MIG-1234".to_owned()),
            cells: vec![None, None],
            processes: None,
        };
        assert_eq!(
            plain.sample(TIME, &[gpu]),
            "{\"gpu\":\"MIG-1234\",\"power_w\":null,\"gpu_temp_c\":null}\n"
        );
    }

    #[test]
    fn every_column_has_a_group_and_distinct_names() {
        let keys: HashSet<_> = COLUMNS.iter().map(|column| column.key).collect();
        let names: HashSet<_> = COLUMNS.iter().map(|column| column.name).collect();
        assert_eq!((keys.len(), names.len()), (COLUMNS.len(), COLUMNS.len()));
        for column in &COLUMNS {
            assert!(usize::from(column.width) >= column.name.len().max(column.unit.len()));
        }
        for (_, group) in GROUPS {
            assert!(COLUMNS.iter().any(|column| column.group == group));
        }
    }

    #[test]
    fn clock_event_reasons_are_short() {
        assert_eq!(reasons(ClockEventReasons::empty()), "none");
        assert_eq!(
            reasons(ClockEventReasons::GPU_IDLE | ClockEventReasons::SW_POWER_CAP),
            "idle|swpwr"
        );
        assert_eq!(
            reasons(ClockEventReasons::from_bits_retain(0x40 | 0x8000)),
            "hwtherm|0x8000"
        );
        assert_eq!(REASON_NAMES.len(), ClockEventReasons::all().iter().count());
    }

    #[test]
    fn timestamps_are_utc_rfc3339() {
        assert_eq!(rfc3339(Duration::ZERO), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(Duration::from_millis(1_700_000_000_123)), TIME);
        assert_eq!(
            rfc3339(Duration::from_secs(951_868_799)),
            "2000-02-29T23:59:59.000Z"
        );
        assert_eq!(
            rfc3339(Duration::from_secs(4_107_542_400)),
            "2100-03-01T00:00:00.000Z"
        );
    }
}
