//! Formatting the generated code as `cargo fmt` would, so that two runs give the same bytes.

use std::io::Write;
use std::process::{Command, Stdio};

/// The text of `file`: prettyplease's rendering, then rustfmt until the text stops changing
/// (rustfmt is not idempotent on some long lines); `header` names the file in errors.
pub(super) fn format_file(file: &syn::File, header: &str) -> Result<String, String> {
    let mut code = prettyplease::unparse(file);
    for _ in 0..4 {
        let formatted = rustfmt(&code)?;
        if formatted == code {
            return Ok(code);
        }
        code = formatted;
    }
    Err(format!(
        "rustfmt does not settle on the bindings of {header}"
    ))
}

/// Formats Rust source with the toolchain's rustfmt (edition 2024), as `cargo fmt` would.
fn rustfmt(source: &str) -> Result<String, String> {
    let mut child = Command::new(std::env::var("RUSTFMT").unwrap_or_else(|_| "rustfmt".into()))
        .args(["--edition", "2024", "--emit", "stdout"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("running rustfmt: {e}"))?;
    let mut stdin = child.stdin.take().ok_or("rustfmt has no stdin")?;
    let input = source.to_owned();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child
        .wait_with_output()
        .map_err(|e| format!("running rustfmt: {e}"))?;
    writer
        .join()
        .map_err(|_| "rustfmt writer thread failed".to_owned())?
        .map_err(|e| format!("feeding rustfmt: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "rustfmt failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    String::from_utf8(output.stdout).map_err(|e| format!("rustfmt output: {e}"))
}
