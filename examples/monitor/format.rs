//! The output: an aligned table (comfy-table), CSV or JSON lines, one sample at a time.

use std::time::Duration;

use comfy_table::{CellAlignment, ColumnConstraint, Table, Width, presets};
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

use crate::args::{Config, Format};
use crate::sample::{COLUMNS, Column, Process, Row};

/// How a missing value is printed in the table and CSV.
pub(crate) const MISSING: &str = "-";

/// A value as text, [`MISSING`] when absent.
fn text<T: ToString>(value: Option<&T>) -> String {
    value.map_or_else(|| MISSING.to_owned(), ToString::to_string)
}

/// Quotes a CSV field when it holds a comma, quote or line break (RFC 4180).
pub(crate) fn csv_field(field: &str) -> String {
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
pub(crate) struct Printer {
    format: Format,
    pub(crate) columns: Vec<&'static Column>,
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
    pub(crate) fn new(config: &Config) -> Self {
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
    pub(crate) fn sample(&mut self, time: &str, rows: &[Row]) -> String {
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
pub(crate) fn rfc3339(since_epoch: Duration) -> String {
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
