//! One operation's matrix: the clean run, then every call of it failed with every code.

use crate::case::{Failure, Fault, Op, Phase, codes_for};
use crate::check::check;
use crate::stub::Stub;

/// A failure of the crate this matrix found that is not fixed yet (`cuda-safe/src` is someone
/// else's to change): its cases must fail exactly so, for every code, and once they pass the
/// test fails until the entry is struck off.
pub(crate) struct Gap {
    pub(crate) op: &'static str,
    /// The failed call, as [`Call`] displays it, and which of its name (from 1).
    pub(crate) call: &'static str,
    pub(crate) nth: usize,
    /// The problem [`check`] reports.
    pub(crate) problem: &'static str,
    /// What is wrong in the crate.
    pub(crate) why: &'static str,
}

const KNOWN_GAPS: &[Gap] = &[];

/// What running one operation's matrix gave.
pub(crate) struct Report {
    pub(crate) calls: usize,
    pub(crate) drop_calls: usize,
    pub(crate) faults: usize,
    pub(crate) failures: Vec<String>,
    /// The known gaps of the operation and how many cases showed each.
    pub(crate) gaps: Vec<(&'static Gap, usize)>,
}

/// The clean run, then every call of it failed with every code.
pub(crate) fn run_matrix(stub: &Stub, op: &Op) -> Report {
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
