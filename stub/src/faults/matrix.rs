//! One operation's matrix: the clean run, then every call of it failed with every code.

use super::case::{Failure, Fault, Op, Phase, codes_for};
use super::check::check;
use std::process::ExitCode;

use crate::{KINDS, Stub};

/// A failure of the crate this matrix found that is not fixed yet (`cuda-safe/src` is someone
/// else's to change): its cases must fail exactly so, for every code, and once they pass the
/// test fails until the entry is struck off.
#[derive(Debug)]
pub struct Gap {
    /// The operation.
    pub op: &'static str,
    /// The failed call, as [`Call`](crate::Call) displays it, and which of its name (from 1).
    pub call: &'static str,
    /// Which call of that name (from 1).
    pub nth: usize,
    /// The problem [`check`] reports.
    pub problem: &'static str,
    /// What is wrong in the crate.
    pub why: &'static str,
}

const KNOWN_GAPS: &[Gap] = &[];

/// What running one operation's matrix gave.
#[derive(Debug)]
pub struct Report {
    /// The calls of the clean run.
    pub calls: usize,
    /// The calls of the clean run's drop.
    pub drop_calls: usize,
    /// The faults injected.
    pub faults: usize,
    /// What went wrong, a line each.
    pub failures: Vec<String>,
    /// The known gaps of the operation and how many cases showed each.
    pub gaps: Vec<(&'static Gap, usize)>,
}

/// The clean run, then every call of it failed with every code.
pub fn run_matrix(stub: &Stub, op: &Op) -> Report {
    let clean = (op.exec)(stub, None);
    let mut report = Report {
        calls: clean.calls.len(),
        drop_calls: clean.drop_calls.len(),
        faults: 0,
        failures: Vec::new(),
        gaps: KNOWN_GAPS
            .iter()
            .filter(|gap| gap.op == op.name)
            .map(|gap| (gap, 0))
            .collect(),
    };
    let clean_problem = match &clean.outcome {
        Err(Failure::Error(error)) => Some(format!("the clean run failed: {error}")),
        Err(Failure::Panic(message)) => Some(format!("the clean run panicked: {message}")),
        Ok(()) if clean.calls.is_empty() => Some("the operation calls no library".into()),
        Ok(()) if clean.misuse.0 != 0 => Some(format!(
            "the clean run misused the driver: {}",
            clean.misuse.1
        )),
        Ok(()) if !(clean.logs.is_empty() && clean.drop_logs.is_empty()) => Some(format!(
            "the clean run logged {:?} {:?}",
            clean.logs, clean.drop_logs
        )),
        Ok(()) if clean.after != clean.before => Some(format!(
            "the clean run changed the live objects: {:?} -> {:?}",
            clean.before, clean.after
        )),
        Ok(()) => clean.later_trouble.first().cloned(),
    };
    if let Some(problem) = clean_problem {
        report.failures.push(problem);
        return report;
    }
    let phases = [
        (Phase::Operation, &clean.calls),
        (Phase::Drop, &clean.drop_calls),
    ];
    for (phase, calls) in phases {
        for (index, call) in calls.iter().enumerate() {
            let nth = calls[..=index]
                .iter()
                .filter(|c| c.name == call.name)
                .count();
            for &code in codes_for(&call.name) {
                let fault = Fault {
                    phase,
                    name: call.name.clone(),
                    nth,
                    code,
                };
                let seen = (op.exec)(stub, Some(&fault));
                report.faults += 1;
                let outcome = check(op, &fault, call, &clean, &seen);
                let gap = report.gaps.iter_mut().find(|(gap, _)| {
                    phase == Phase::Operation
                        && gap.call == call.to_string()
                        && gap.nth == nth
                        && outcome.as_ref().err().map(String::as_str) == Some(gap.problem)
                });
                if let Some((_, seen)) = gap {
                    *seen += 1;
                } else if let Err(problem) = outcome {
                    let place = match phase {
                        Phase::Operation => "",
                        Phase::Drop => " on drop",
                    };
                    report.failures.push(format!(
                        "{call} (call {} of the run{place}, #{nth} of its name) failing with {} ({}): {problem}",
                        index + 1,
                        code.text,
                        code.value
                    ));
                }
            }
        }
    }
    for (gap, seen) in &report.gaps {
        let expected = codes_for(gap.call).len();
        if *seen != expected {
            report.failures.push(format!(
                "the known gap at {} #{} shows in {seen} of {expected} cases: strike it off \
                 KNOWN_GAPS if the crate was fixed",
                gap.call, gap.nth
            ));
        }
    }
    report
}

/// Runs operations' matrices and other groups of cases, printing a line per group, and sums
/// them up.
#[derive(Debug, Default)]
pub struct Runner {
    failed: usize,
    faults: usize,
    operations: usize,
    gap_cases: usize,
}

impl Runner {
    /// Reports one group of cases: its verdict line, its first failures.
    pub fn group(&mut self, name: &str, detail: &str, faults: usize, failures: &[String]) {
        self.faults += faults;
        let verdict = if failures.is_empty() { "ok" } else { "FAIL" };
        println!("{verdict:<4} {name:<58} {detail}");
        for failure in failures.iter().take(12) {
            println!("       {failure}");
        }
        if failures.len() > 12 {
            println!("       ... and {} more", failures.len() - 12);
        }
        self.failed += failures.len();
    }

    /// Runs `op`'s matrix ([`run_matrix`]) and reports it, with what it absorbs or logs by
    /// design.
    pub fn matrix(&mut self, stub: &Stub, op: &Op) {
        let report = run_matrix(stub, op);
        self.operations += 1;
        let detail = format!(
            "{} call(s) + {} on drop: {} faults",
            report.calls, report.drop_calls, report.faults
        );
        self.group(&op.name, &detail, report.faults, &report.failures);
        for (gap, seen) in &report.gaps {
            self.gap_cases += seen;
            println!(
                "       KNOWN GAP ({seen} cases, {} #{}): {}",
                gap.call, gap.nth, gap.why
            );
        }
        let listed = op
            .absorbed
            .iter()
            .map(|listed| ("absorbed", listed))
            .chain(op.logged.iter().map(|listed| ("logged", listed)));
        for (how, listed) in listed {
            let which: Vec<String> = listed.nths.iter().map(|nth| format!(" #{nth}")).collect();
            let codes: Vec<String> = listed.codes.iter().map(u32::to_string).collect();
            let codes = if codes.is_empty() {
                String::new()
            } else {
                format!(" failing with {}", codes.join(", "))
            };
            println!(
                "       {how} by design: {}{}{codes}: {}",
                listed.call,
                which.join(","),
                listed.why
            );
        }
        if op.leak.0 != 1 {
            println!(
                "       a failed release leaks {} driver objects by design: {}",
                op.leak.0, op.leak.1
            );
        }
    }

    /// Prints the summary under `test`'s name (with what is still live on the stub): success
    /// when no case failed.
    pub fn finish(self, test: &str, stub: &Stub) -> ExitCode {
        let live = stub.live();
        println!(
            "{test}: {} operations, {} injected faults ({} showing known gaps), {} failure(s); \
             live at the end (leaked by the failed releases): {}",
            self.operations,
            self.faults,
            self.gap_cases,
            self.failed,
            KINDS
                .iter()
                .zip(live)
                .map(|(kind, count)| format!("{kind} {count}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        if self.failed == 0 {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        }
    }
}
