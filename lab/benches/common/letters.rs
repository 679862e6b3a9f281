//! The letters a diagnostic takes to switch pieces of `cuda-safe` into a floor rebuilt in Rust
//! (`diag_launch_threads`, `diag_green`).

use cuda_safe::{Error, Result};

/// Sets the flag of every letter in `letters`; `-` sets none. A letter not in `flags` is an
/// error that lists the known ones.
pub fn parse(letters: &str, flags: &mut [(char, &mut bool)]) -> Result<()> {
    if letters == "-" {
        return Ok(());
    }
    for letter in letters.chars() {
        match flags.iter_mut().find(|(known, _)| *known == letter) {
            Some((_, flag)) => **flag = true,
            None => {
                let known: Vec<String> = flags.iter().map(|(known, _)| known.to_string()).collect();
                return Err(Error::invalid_argument(format!(
                    "unknown letter `{letter}`: `-` or any of {}",
                    known.join(" ")
                )));
            }
        }
    }
    Ok(())
}

/// Checks what the letters need of each other: for each `(set, needs, message)`, a letter that
/// is `set` without what it `needs` is an error with `message`.
pub fn require(rules: &[(bool, bool, &'static str)]) -> Result<()> {
    match rules.iter().find(|(set, needs, _)| *set && !*needs) {
        Some((_, _, message)) => Err(Error::invalid_argument(*message)),
        None => Ok(()),
    }
}
