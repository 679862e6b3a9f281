//! Listing an on-disk cache's entry files: every shard directory of `entries/`, every name
//! that is a key, never following a link; a shard that cannot be listed is counted and
//! skipped, so one unreadable directory does not hide the others.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::EntryInfo;
use crate::cache::CacheKey;
use crate::cache::fs_ops::{FileId, io_error};
use crate::error::Result;

/// An entry file found by a scan, with what identifies it.
pub(super) struct Found {
    pub(super) info: EntryInfo,
    pub(super) path: PathBuf,
    pub(super) id: FileId,
}

/// What a scan found: the regular entry files, and how many shards could not be listed.
pub(super) struct Scan {
    pub(super) found: Vec<Found>,
    pub(super) unreadable_shards: u64,
}

/// Calls `visit` with the key, path and metadata of everything at an entry's place under
/// `entries`, and returns how many shard directories could not be listed (logged).
pub(super) fn walk(
    entries: &Path,
    mut visit: impl FnMut(CacheKey, PathBuf, fs::Metadata) -> Result<()>,
) -> Result<u64> {
    let Some(shards) = read_dir_if_present(entries)? else {
        return Ok(0);
    };
    let mut unreadable = 0u64;
    for shard in shards {
        let shard = shard.map_err(|error| io_error(entries, error))?;
        let shard_name = shard.file_name();
        let Some(shard_name) = shard_name.to_str().filter(|name| is_hex(name, 2)) else {
            continue;
        };
        if !shard.file_type().is_ok_and(|kind| kind.is_dir()) {
            continue; // never a link to somewhere else
        }
        let shard_path = shard.path();
        let unlisted = |error: &dyn std::fmt::Display| {
            log::warn!(
                "cuda-safe: program cache shard {} could not be listed: {error}",
                shard_path.display()
            );
        };
        let items = match read_dir_if_present(&shard_path) {
            Ok(Some(items)) => items,
            Ok(None) => continue,
            Err(error) => {
                unlisted(&error);
                unreadable += 1;
                continue;
            }
        };
        for item in items {
            let item = match item {
                Ok(item) => item,
                Err(error) => {
                    unlisted(&error);
                    unreadable += 1;
                    break;
                }
            };
            let name = item.file_name();
            let Some(name) = name.to_str().filter(|name| is_hex(name, 62)) else {
                continue;
            };
            let Ok(key) = format!("{shard_name}{name}").parse::<CacheKey>() else {
                continue;
            };
            let path = item.path();
            match fs::symlink_metadata(&path) {
                Ok(metadata) => visit(key, path, metadata)?,
                Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                Err(error) => return Err(io_error(&path, error)),
            }
        }
    }
    Ok(unreadable)
}

/// Every regular entry file under `entries`.
pub(super) fn scan(entries: &Path) -> Result<Scan> {
    let mut found = Vec::new();
    let unreadable_shards = walk(entries, |key, path, metadata| {
        if metadata.is_file() {
            found.push(Found {
                info: EntryInfo {
                    key,
                    bytes: metadata.len(),
                    last_used: metadata.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                },
                path,
                id: FileId::of(&metadata),
            });
        }
        Ok(())
    })?;
    Ok(Scan {
        found,
        unreadable_shards,
    })
}

/// The listing of `dir`, or `None` if it does not exist.
fn read_dir_if_present(dir: &Path) -> Result<Option<fs::ReadDir>> {
    match fs::read_dir(dir) {
        Ok(listing) => Ok(Some(listing)),
        Err(error)
            if matches!(
                error.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
            ) =>
        {
            Ok(None)
        }
        Err(error) => Err(io_error(dir, error)),
    }
}

/// Whether `name` is `len` lowercase hex digits.
fn is_hex(name: &str, len: usize) -> bool {
    name.len() == len
        && name
            .bytes()
            .all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'))
}
