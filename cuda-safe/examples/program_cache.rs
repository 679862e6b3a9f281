//! Shows or clears an on-disk program cache; needs no GPU.
//!
//! ```sh
//! cargo run -p cuda-safe --example program_cache -- [--dir DIR] [list|stats|clear]
//! ```
//!
//! With no command it prints the statistics (`stats`).
//! Without `--dir` it uses the default cache directory
//! (`$XDG_CACHE_HOME/cuda-safe/program-cache`, or `~/.cache/cuda-safe/program-cache`).

use std::process::ExitCode;
use std::time::SystemTime;

use cuda_safe::cache::{FileStreamProgramCache, ProgramCache};

const USAGE: &str = "usage: program_cache [--dir DIR] [list|stats|clear] (default: stats)";

fn main() -> ExitCode {
    match run(std::env::args().skip(1)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{message}");
            ExitCode::FAILURE
        }
    }
}

fn run(mut args: impl Iterator<Item = String>) -> Result<(), String> {
    let mut dir = None;
    let mut command = None;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--dir" => dir = Some(args.next().ok_or(USAGE)?),
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            "list" | "stats" | "clear" if command.is_none() => command = Some(arg),
            _ => return Err(format!("unexpected argument {arg:?}\n{USAGE}")),
        }
    }
    let cache = match dir {
        Some(dir) => FileStreamProgramCache::new(dir),
        None => FileStreamProgramCache::with_default_root(),
    }
    .map_err(|e| e.to_string())?;
    let done = match command.as_deref() {
        Some("list") => list(&cache),
        Some("stats") | None => stats(&cache),
        Some("clear") => clear(&cache),
        _ => return Err(USAGE.to_owned()),
    };
    done.map_err(|error| error.to_string())
}

fn list(cache: &FileStreamProgramCache) -> cuda_safe::Result<()> {
    let now = SystemTime::now();
    let entries = cache.entries()?;
    println!("{:<64}  {:>10}  last used", "key", "bytes");
    for entry in &entries {
        let age = now.duration_since(entry.last_used).map_or_else(
            |_| "just now".to_owned(),
            |age| format!("{} s ago", age.as_secs()),
        );
        println!("{}  {:>10}  {age}", entry.key, entry.bytes);
    }
    let bytes: u64 = entries.iter().map(|entry| entry.bytes).sum();
    println!(
        "{} entries, {bytes} bytes in {}",
        entries.len(),
        cache.root().display()
    );
    Ok(())
}

fn stats(cache: &FileStreamProgramCache) -> cuda_safe::Result<()> {
    let stats = cache.stats()?;
    println!("directory: {}", cache.root().display());
    println!("entries:   {}", stats.entries);
    println!("bytes:     {}", stats.bytes);
    Ok(())
}

fn clear(cache: &FileStreamProgramCache) -> cuda_safe::Result<()> {
    let before = cache.stats()?;
    cache.clear()?;
    println!(
        "removed {} entries ({} bytes) from {}",
        before.entries,
        before.bytes,
        cache.root().display()
    );
    Ok(())
}
