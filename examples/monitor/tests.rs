//! The monitor's parsing and formatting tests (no GPU: rows are made up).

use std::collections::HashSet;
use std::time::Duration;

use clap::error::ErrorKind;
use cuda_safe::system::ClockEventReasons;

use crate::args::{Config, DeviceId, Format, GROUPS, Group};
use crate::format::{Printer, csv_field, rfc3339};
use crate::sample::{COLUMNS, Process, REASON_NAMES, Row, Value, reasons};

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
