//! A GPU monitor like `nvidia-smi dmon`, through `cuda_safe::system` (NVML, no CUDA): chosen
//! metric groups of chosen GPUs, every few seconds, as an aligned table, CSV or JSON lines,
//! optionally with the processes on each GPU and a timestamp.
//!
//! ```text
//! cargo run -p cuda-safe-examples --example monitor                         # every second until Ctrl-C
//! cargo run -p cuda-safe-examples --example monitor -- -d 1 -c 10 --format csv
//! cargo run -p cuda-safe-examples --example monitor -- -i 0,GPU-8c1b... -s pucvmet --timestamp
//! cargo run -p cuda-safe-examples --example monitor -- --once --processes --format json
//! cargo run -p cuda-safe-examples --example monitor -- --help
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
//!
//! The sources: `args.rs` reads the command line, `sample.rs` queries the GPUs, `format.rs`
//! writes the table, CSV or JSON, and `tests.rs` tests the parsing and formatting.

mod args;
mod format;
mod sample;
#[cfg(test)]
mod tests;

use std::fmt;
use std::io::{self, Write};
use std::process::ExitCode;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use cuda_safe::nvml_sys::{LIBNVML_PATH_ENV, LoadError};
use cuda_safe::system::{Device, Session};
use cuda_safe::{Error, Result};

use crate::args::{Config, DeviceId, Format};
use crate::format::{MISSING, Printer, rfc3339};
use crate::sample::{Sampler, Value};

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
    let mut sampler = Sampler::new(session, gpus, printer.columns.clone(), config.processes);
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
