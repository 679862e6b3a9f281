//! The task's command line.

use std::path::PathBuf;

/// The usage line of this task, quoted in argument errors.
const USAGE: &str = "usage: cargo xtask gpu-bundle [--out DIR] [--only FILTER]... [--lab]";

/// What the command line asks for.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Args {
    /// `--out DIR`: where the bundle goes (default `target/gpu-bundle`).
    pub out: Option<PathBuf>,
    /// `--only FILTER`, repeatable: keep only the items whose `abi/kind/name` contains one of
    /// them (the same matching as `run.sh FILTER`; a test file is an item, `abi/tests/FILE`);
    /// empty keeps every item.
    pub only: Vec<String>,
    /// `--lab`: also the lab's diagnostics (the lab package's benchmarks, `lab/diag/`).
    pub lab: bool,
}

impl Args {
    /// Whether the executable at `abi/kind/name` goes into the bundle.
    pub(super) fn keeps(&self, item: &str) -> bool {
        self.only.is_empty()
            || self
                .only
                .iter()
                .any(|filter| item.contains(filter.as_str()))
    }
}

/// Parses the task's arguments: `--out DIR` (or `--out=DIR`), `--only FILTER` (or
/// `--only=FILTER`), each value non-empty, and `--lab`.
pub(super) fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut parsed = Args::default();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        if arg == "--lab" {
            parsed.lab = true;
            continue;
        }
        let (flag, value) = match arg.split_once('=') {
            Some((flag @ ("--out" | "--only"), value)) => (flag, value),
            _ if arg == "--out" || arg == "--only" => (
                arg.as_str(),
                args.next().map(String::as_str).unwrap_or_default(),
            ),
            _ => return Err(format!("unknown argument `{arg}`\n{USAGE}")),
        };
        if value.is_empty() {
            let what = if flag == "--out" {
                "a folder"
            } else {
                "a filter"
            };
            return Err(format!("{flag} needs {what}\n{USAGE}"));
        }
        if flag == "--out" {
            parsed.out = Some(PathBuf::from(value));
        } else {
            parsed.only.push(value.to_owned());
        }
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::testing::strings;

    fn out(dir: &str) -> Args {
        Args {
            out: Some(PathBuf::from(dir)),
            ..Args::default()
        }
    }

    #[test]
    fn arguments() {
        assert_eq!(parse_args(&[]), Ok(Args::default()));
        assert_eq!(
            parse_args(&strings(&["--out", "some/dir"])),
            Ok(out("some/dir"))
        );
        assert_eq!(parse_args(&strings(&["--out=/abs"])), Ok(out("/abs")));
        assert!(parse_args(&strings(&["--out"])).is_err_and(|e| e.contains("--out needs")));
        assert!(parse_args(&strings(&["--out="])).is_err());
        assert!(parse_args(&strings(&["--check"])).is_err_and(|e| e.contains("`--check`")));
        assert!(parse_args(&strings(&["--out", "a", "extra"])).is_err());
        assert!(parse_args(&strings(&["--outside=x"])).is_err());
        assert!(parse_args(&strings(&["--lab=yes"])).is_err());
    }

    #[test]
    fn lab_asks_for_the_diagnostics_beside_the_rest() {
        let args = parse_args(&strings(&["--lab", "--only", "diag_green"])).unwrap();
        assert!(args.lab);
        assert_eq!(args.only, ["diag_green"]);
        assert!(!Args::default().lab);
        assert!(parse_args(&strings(&["--out", "d", "--lab"])).is_ok_and(|a| a.lab));
    }

    #[test]
    fn only_filters_select_items_like_run_sh() {
        let args = parse_args(&strings(&["--only", "tests/tma", "--only=examples/lto"])).unwrap();
        assert_eq!(args.only, ["tests/tma", "examples/lto"]);
        assert!(args.keeps("cuda-12/tests/tma"));
        assert!(args.keeps("cuda-13/examples/lto"));
        assert!(!args.keeps("cuda-12/tests/link"));
        assert!(Args::default().keeps("cuda-12/tests/link"));
        assert!(parse_args(&strings(&["--only"])).is_err_and(|e| e.contains("needs a filter")));
        assert!(parse_args(&strings(&["--only="])).is_err());
    }
}
