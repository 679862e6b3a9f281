//! The task's command line.

use std::path::PathBuf;

/// The usage line of this task, quoted in argument errors.
const USAGE: &str = "usage: cargo xtask gpu-bundle [--out DIR]";

/// Parses the task's arguments: `Some(dir)` for `--out DIR` (or `--out=DIR`), else `None`.
pub(super) fn parse_args(args: &[String]) -> Result<Option<PathBuf>, String> {
    let mut out = None;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let dir = if arg == "--out" {
            args.next()
                .ok_or_else(|| format!("--out needs a folder\n{USAGE}"))?
                .as_str()
        } else if let Some(dir) = arg.strip_prefix("--out=") {
            dir
        } else {
            return Err(format!("unknown argument `{arg}`\n{USAGE}"));
        };
        if dir.is_empty() {
            return Err(format!("--out needs a folder\n{USAGE}"));
        }
        out = Some(PathBuf::from(dir));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::testing::strings;

    #[test]
    fn arguments() {
        assert_eq!(parse_args(&[]), Ok(None));
        assert_eq!(
            parse_args(&strings(&["--out", "some/dir"])),
            Ok(Some(PathBuf::from("some/dir")))
        );
        assert_eq!(
            parse_args(&strings(&["--out=/abs"])),
            Ok(Some(PathBuf::from("/abs")))
        );
        assert!(parse_args(&strings(&["--out"])).is_err_and(|e| e.contains("--out needs")));
        assert!(parse_args(&strings(&["--out="])).is_err());
        assert!(parse_args(&strings(&["--check"])).is_err_and(|e| e.contains("`--check`")));
        assert!(parse_args(&strings(&["--out", "a", "extra"])).is_err());
    }
}
