//! The monitor's command line: clap's options, read into a [`Config`].

use std::fmt;
use std::time::Duration;

use clap::{Parser, ValueEnum};

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
pub(crate) struct Config {
    pub(crate) delay: Duration,
    /// `None`: until interrupted.
    pub(crate) count: Option<u64>,
    /// Empty: every GPU.
    pub(crate) ids: Vec<DeviceId>,
    pub(crate) groups: Vec<Group>,
    pub(crate) format: Format,
    pub(crate) header_every: usize,
    pub(crate) processes: bool,
    pub(crate) timestamp: bool,
}

impl Config {
    /// Reads the command line (`args` starts with the program name).
    pub(crate) fn from_args<I, T>(args: I) -> std::result::Result<Self, clap::Error>
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
pub(crate) enum DeviceId {
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
pub(crate) enum Group {
    Power,
    Utilization,
    Clocks,
    ClockEvents,
    Memory,
    Ecc,
    Pcie,
}

/// The groups with their letters, in the order their columns are printed.
pub(crate) const GROUPS: [(char, Group); 7] = [
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
pub(crate) enum Format {
    /// Aligned columns with a repeated two-line header, like `nvidia-smi dmon`.
    Table,
    /// Comma-separated values with one header line.
    Csv,
    /// One JSON object per GPU per sample.
    Json,
}
