//! Where `nccl.h` comes from: the `nvidia-nccl-cu*` PyPI wheels, read piecewise.
//!
//! A wheel is a zip of some 200-300 MB, almost all of it `libnccl.so.2`. The header is read
//! without downloading the rest: one HTTP Range request for the archive's tail (its central
//! directory), one for the header's entry, each through `curl`. The pinned value is the
//! header's SHA-256 (the wheel's own hash would need the whole file), and the zip reader checks
//! the entry's CRC. Headers are kept under `target/cuda-headers/nccl/` and read again only when
//! missing or changed.

use std::fs;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

/// One `nccl.h`, pinned: the wheel it is in and the header's SHA-256.
#[derive(Debug)]
pub struct PinnedHeader {
    /// The PyPI package (`nvidia-nccl-cu12`).
    pub package: &'static str,
    /// The NCCL version the wheel carries (`2.28.3`).
    pub version: &'static str,
    /// The wheel's address on files.pythonhosted.org.
    pub url: &'static str,
    /// The lowercase hex SHA-256 of its `nccl.h`.
    pub sha256: &'static str,
}

impl PinnedHeader {
    /// `package==version`, for messages and the generated file's preamble.
    pub fn source(&self) -> String {
        format!("{}=={}", self.package, self.version)
    }
}

/// The header the bindings are generated from, in both CUDA majors' wheels. NCCL versions its
/// ABI on its own (`NCCL_VERSION_CODE`, size- and version-tagged config structs): both wheels
/// carry the same `nccl.h`, byte for byte, so one set of bindings serves both CUDA ABIs, and
/// generation fails if that ever stops being true. 2.28.3 is the version on the GPU machines.
pub const BINDINGS: [PinnedHeader; 2] = [
    PinnedHeader {
        package: "nvidia-nccl-cu12",
        version: "2.28.3",
        url: "https://files.pythonhosted.org/packages/5d/24/11df42593d1a6d10b3ffef049cec064832f108e77bc5cac12726e4ec1cb2/nvidia_nccl_cu12-2.28.3-py3-none-manylinux_2_18_x86_64.whl",
        sha256: "20aeedf1602f74d688e5f67607ed9759b7c4114d558f3b8b451e1b4566b97fd8",
    },
    PinnedHeader {
        package: "nvidia-nccl-cu13",
        version: "2.28.3",
        url: "https://files.pythonhosted.org/packages/6e/38/bb5e182b08c8b53987224b7e67c1150a60219a99b8cf40ec8cb1ab6655d1/nvidia_nccl_cu13-2.28.3-py3-none-manylinux_2_18_x86_64.whl",
        sha256: "20aeedf1602f74d688e5f67607ed9759b7c4114d558f3b8b451e1b4566b97fd8",
    },
];

/// One header per NCCL minor release on PyPI before the pinned one, oldest first: the release
/// that introduced each entry point is the first of these (or the pinned header) declaring it.
/// Entry points already in the oldest (2.13) stay undated.
pub const HISTORY: &[PinnedHeader] = &[
    history(
        "nvidia-nccl-cu11",
        "2.13.4",
        "d1/bc/63790ca647d67cf051a74152cb36fea805b201aa0d8d41c40d03fad41268/nvidia_nccl_cu11-2.13.4-py3-none-manylinux1_x86_64.whl",
        "a1379172a34ff965c837631a3938703c68182061eef7703f001ca19cf599410f",
    ),
    history(
        "nvidia-nccl-cu11",
        "2.14.3",
        "55/92/914cdb650b6a5d1478f83148597a25e90ea37d739bd563c5096b0e8a5f43/nvidia_nccl_cu11-2.14.3-py3-none-manylinux1_x86_64.whl",
        "74870e9b080c183516732d8ca149ecc71b278c569ce84d90eebaff0a8e42b315",
    ),
    history(
        "nvidia-nccl-cu11",
        "2.15.5",
        "29/ee/6ebc5ab65872715895e99df6ff11d71d8a701c40e2482dee2543da3525f2/nvidia_nccl_cu11-2.15.5-py3-none-manylinux1_x86_64.whl",
        "852adc0f44e07c4bbc026b5da3289d1137e80e423d9b50f0984a223bf94766fa",
    ),
    history(
        "nvidia-nccl-cu12",
        "2.16.2",
        "f4/5a/72588e2bc4a3ce68ee7a39c39e7471f4624a447d841021ca8f9cc11af4f9/nvidia_nccl_cu12-2.16.2-py3-none-manylinux1_x86_64.whl",
        "50246f0893962b41223436b9c807b387894a3626a0f4e8d64ba3d5efa722a9a5",
    ),
    history(
        "nvidia-nccl-cu12",
        "2.17.1",
        "74/8a/f17a736a2ae6de3f29e3c9ce001d2c30eb826fff4a097b9aa073493fa771/nvidia_nccl_cu12-2.17.1-py3-none-manylinux1_x86_64.whl",
        "707106e0545bbb22e15650c09699d680327668118030baa2be64c0dadf0dd4ba",
    ),
    history(
        "nvidia-nccl-cu12",
        "2.18.1",
        "a4/05/23f8f38eec3d28e4915725b233c24d8f1a33cb6540a882f7b54be1befa02/nvidia_nccl_cu12-2.18.1-py3-none-manylinux1_x86_64.whl",
        "d430c755e356a8177bac81b161c922d5ebf34ae199bdf29e7ed2651c055ead07",
    ),
    history(
        "nvidia-nccl-cu12",
        "2.19.3",
        "38/00/d0d4e48aef772ad5aebcf70b73028f88db6e5640b36c38e90445b7a57c45/nvidia_nccl_cu12-2.19.3-py3-none-manylinux1_x86_64.whl",
        "af992d0e111074a978268e9f433b943409a1aba8e6dcd322107bef185eb0010d",
    ),
    history(
        "nvidia-nccl-cu12",
        "2.20.5",
        "4b/2a/0a131f572aa09f741c30ccd45a8e56316e8be8dfc7bc19bf0ab7cfef7b19/nvidia_nccl_cu12-2.20.5-py3-none-manylinux2014_x86_64.whl",
        "567d3f0118d8186aaed888f1bf2bad2ee74b2c965feec28cb97238c801ffb3ea",
    ),
    history(
        "nvidia-nccl-cu12",
        "2.21.5",
        "df/99/12cd266d6233f47d00daf3a72739872bdc10267d0383508b0b9c84a18bb6/nvidia_nccl_cu12-2.21.5-py3-none-manylinux2014_x86_64.whl",
        "2ce4f05256c86b6b41c2bdb51302530d451e93a7a5fca4316aee8c4c2564659a",
    ),
    history(
        "nvidia-nccl-cu12",
        "2.22.3",
        "72/3a/1ff98da19ad6d54db45e5b2a1e3fb77bd19e54b75cdb20d89f8161384dbb/nvidia_nccl_cu12-2.22.3-py3-none-manylinux2014_x86_64.whl",
        "3141f53ce62567e08b46362a3f81fc89247df1aa5a2be0bdb3b5f729b5a62f11",
    ),
    history(
        "nvidia-nccl-cu12",
        "2.23.4",
        "ed/1f/6482380ec8dcec4894e7503490fc536d846b0d59694acad9cf99f27d0e7d/nvidia_nccl_cu12-2.23.4-py3-none-manylinux2014_x86_64.whl",
        "fb19ea0f28269f66263a4616ddb6a48917c8b27bf0500a6d4c9799a0c5ac5dd3",
    ),
    history(
        "nvidia-nccl-cu12",
        "2.24.3",
        "fe/9b/f2e37edaf53d722b79697eb4402bcd5354d45da90e2eb667b3e4be0c642b/nvidia_nccl_cu12-2.24.3-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
        "1972322e2081e455ff52bdb9d2d0fe8737f08f30e58a4fcfe59a91a5c08088ba",
    ),
    history(
        "nvidia-nccl-cu12",
        "2.25.1",
        "11/0c/8c78b7603f4e685624a3ea944940f1e75f36d71bd6504330511f4a0e1557/nvidia_nccl_cu12-2.25.1-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
        "f28e8b987886150f2edbea46d51fe8295d014ef72b2c34d8c59573b160422ab5",
    ),
    history(
        "nvidia-nccl-cu12",
        "2.26.2",
        "67/ca/f42388aed0fddd64ade7493dbba36e1f534d4e6fdbdd355c6a90030ae028/nvidia_nccl_cu12-2.26.2-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
        "f0ba68d4a1c7992454f4ef5dbc2f6fe8401da0b6a87e92b1e00f329d70aa1da6",
    ),
    history(
        "nvidia-nccl-cu12",
        "2.27.3",
        "5c/5b/4e4fff7bad39adf89f735f2bc87248c81db71205b62bcc0d5ca5b606b3c3/nvidia_nccl_cu12-2.27.3-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
        "6be13b3dc8db2873ea41fb832a34f932df5f0f1c2fdf62cd2293ad272c41bfde",
    ),
];

/// A [`HISTORY`] row: `path` is the wheel's path under files.pythonhosted.org/packages/.
const fn history(
    package: &'static str,
    version: &'static str,
    path: &'static str,
    sha256: &'static str,
) -> PinnedHeader {
    PinnedHeader {
        package,
        version,
        url: path,
        sha256,
    }
}

/// The address of a pinned header's wheel (history rows hold only the path).
fn url_of(pinned: &PinnedHeader) -> String {
    if pinned.url.starts_with("https://") {
        pinned.url.to_owned()
    } else {
        format!("https://files.pythonhosted.org/packages/{}", pinned.url)
    }
}

/// The text of a pinned `nccl.h`: from the cache under `target/cuda-headers/nccl/` when it is
/// there with the pinned hash, otherwise read out of the wheel (and cached).
pub fn fetch(workspace: &Path, pinned: &PinnedHeader) -> Result<PathBuf, String> {
    let dir = workspace
        .join("target")
        .join("cuda-headers")
        .join("nccl")
        .join(format!("{}-{}", pinned.package, pinned.version));
    let path = dir.join("nccl.h");
    if fs::read(&path).is_ok_and(|bytes| sha256_hex(&bytes) == pinned.sha256) {
        return Ok(path);
    }
    eprintln!("xtask: reading nccl.h out of {}", pinned.source());
    let bytes = header_from_wheel(&url_of(pinned))?;
    let actual = sha256_hex(&bytes);
    if actual != pinned.sha256 {
        return Err(format!(
            "nccl.h of {} has SHA-256 {actual}, expected {}",
            pinned.source(),
            pinned.sha256
        ));
    }
    fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    fs::write(&path, &bytes).map_err(|e| format!("writing {}: {e}", path.display()))?;
    Ok(path)
}

/// The lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// How much of the archive's end is read first: the end-of-central-directory record and, for
/// these wheels (a few dozen entries), the whole central directory.
const TAIL: u64 = 64 * 1024;

/// Room read after an entry's name for its local extra field, which the central directory
/// does not give (wheels carry none or a few bytes).
const EXTRA_ROOM: u64 = 1024;

/// Reads `.../include/nccl.h` out of the wheel at `url` with two or three Range requests.
fn header_from_wheel(url: &str) -> Result<Vec<u8>, String> {
    let mut members = members_from_wheel(url, &["/include/nccl.h"])?;
    members
        .pop()
        .ok_or_else(|| format!("{url}: the wheel holds no include/nccl.h"))
}

/// Reads the members whose names end with each of `suffixes` (`/include/cublas_api.h`) out of
/// the wheel at `url`, in that order: one HEAD request, one Range request for the archive's
/// tail (its central directory), and one for each member (none of the rest is fetched).
pub fn members_from_wheel(url: &str, suffixes: &[&str]) -> Result<Vec<Vec<u8>>, String> {
    let len = content_length(url)?;
    let mut remote = RemoteZip::new(len);
    let tail_start = len.saturating_sub(TAIL);
    remote.add(tail_start, range(url, tail_start, len)?)?;
    let directory = central_directory(remote.piece_at(tail_start).unwrap_or_default())
        .ok_or_else(|| format!("{url}: no zip end-of-central-directory record in its tail"))?;
    if directory.offset < tail_start {
        remote.add(directory.offset, range(url, directory.offset, tail_start)?)?;
    }
    let directory_bytes = remote.fetched(directory.offset, directory.size)?;
    let mut names = Vec::new();
    for suffix in suffixes {
        let entry = find_entry(&directory_bytes, suffix)
            .ok_or_else(|| format!("{url}: the wheel holds no member ending in {suffix}"))?;
        let end =
            (entry.header_offset + 30 + entry.name.len() as u64 + EXTRA_ROOM + entry.compressed)
                .min(tail_start);
        if entry.header_offset < tail_start {
            remote.add(entry.header_offset, range(url, entry.header_offset, end)?)?;
        }
        names.push(entry.name);
    }
    let mut archive =
        zip::ZipArchive::new(remote).map_err(|e| format!("{url}: reading the zip: {e}"))?;
    names
        .iter()
        .map(|name| {
            let mut contents = Vec::new();
            archive
                .by_name(name)
                .and_then(|mut file| file.read_to_end(&mut contents).map_err(Into::into))
                .map_err(|e| format!("{url}: unpacking {name}: {e}"))?;
            Ok(contents)
        })
        .collect()
}

/// The size of the file at `url`, from a HEAD request.
fn content_length(url: &str) -> Result<u64, String> {
    let headers = curl(&["--head", url])?;
    String::from_utf8_lossy(&headers)
        .lines()
        .filter_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.trim()
                .eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<u64>().ok())?
        })
        .next_back()
        .ok_or_else(|| format!("{url}: the server gave no Content-Length"))
}

/// Bytes `start..end` of the file at `url`.
fn range(url: &str, start: u64, end: u64) -> Result<Vec<u8>, String> {
    let bytes = curl(&["--range", &format!("{start}-{}", end - 1), url])?;
    if bytes.len() as u64 != end - start {
        return Err(format!(
            "{url}: asked for bytes {start}..{end}, got {} bytes (does the server answer Range \
             requests?)",
            bytes.len()
        ));
    }
    Ok(bytes)
}

/// Runs `curl` (silent, failing on HTTP errors, following redirects) and returns its output.
fn curl(args: &[&str]) -> Result<Vec<u8>, String> {
    let output = Command::new("curl")
        .args([
            "--silent",
            "--show-error",
            "--fail",
            "--location",
            "--retry",
            "3",
        ])
        .args(args)
        .output()
        .map_err(|e| format!("running curl (needed to read nccl.h out of its wheel): {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "curl {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(output.stdout)
}

/// Where the central directory is, from the end-of-central-directory record.
#[derive(Debug, PartialEq)]
struct Directory {
    offset: u64,
    size: u64,
}

/// Finds the end-of-central-directory record in `tail` (the archive's last bytes).
fn central_directory(tail: &[u8]) -> Option<Directory> {
    let at = tail
        .windows(4)
        .rposition(|window| window == [0x50, 0x4b, 0x05, 0x06])?;
    let record = tail.get(at..at + 22)?;
    Some(Directory {
        size: u64::from(u32_at(record, 12)?),
        offset: u64::from(u32_at(record, 16)?),
    })
}

/// One member of the central directory.
#[derive(Debug, PartialEq)]
struct Entry {
    name: String,
    header_offset: u64,
    compressed: u64,
}

/// The central directory's first member whose name ends with `suffix`.
fn find_entry(directory: &[u8], suffix: &str) -> Option<Entry> {
    let mut at = 0;
    while directory.get(at..at + 4)? == [0x50, 0x4b, 0x01, 0x02] {
        let record = directory.get(at..at + 46)?;
        let name_len = usize::from(u16_at(record, 28)?);
        let extra_len = usize::from(u16_at(record, 30)?);
        let comment_len = usize::from(u16_at(record, 32)?);
        let name = String::from_utf8_lossy(directory.get(at + 46..at + 46 + name_len)?);
        if name.ends_with(suffix) {
            return Some(Entry {
                name: name.into_owned(),
                header_offset: u64::from(u32_at(record, 42)?),
                compressed: u64::from(u32_at(record, 20)?),
            });
        }
        at += 46 + name_len + extra_len + comment_len;
    }
    None
}

fn u16_at(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(bytes.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

/// A remote zip of known length of which some byte ranges were fetched: reads inside them
/// succeed, any other read is an error (so the zip reader cannot silently see zeros).
struct RemoteZip {
    len: u64,
    pieces: Vec<(u64, Vec<u8>)>,
    position: u64,
}

impl RemoteZip {
    fn new(len: u64) -> Self {
        Self {
            len,
            pieces: Vec::new(),
            position: 0,
        }
    }

    fn add(&mut self, start: u64, bytes: Vec<u8>) -> Result<(), String> {
        if start + bytes.len() as u64 > self.len {
            return Err(format!(
                "a piece at {start} of {} bytes runs past the archive's {} bytes",
                bytes.len(),
                self.len
            ));
        }
        self.pieces.push((start, bytes));
        Ok(())
    }

    /// The piece that starts at `start`.
    fn piece_at(&self, start: u64) -> Option<&[u8]> {
        self.pieces
            .iter()
            .find(|(at, _)| *at == start)
            .map(|(_, bytes)| bytes.as_slice())
    }

    /// `len` bytes at `start`, which must lie in one fetched piece.
    fn fetched(&self, start: u64, len: u64) -> Result<Vec<u8>, String> {
        self.pieces
            .iter()
            .find_map(|(at, bytes)| {
                let from = usize::try_from(start.checked_sub(*at)?).ok()?;
                let to = from.checked_add(usize::try_from(len).ok()?)?;
                bytes.get(from..to).map(<[u8]>::to_vec)
            })
            .ok_or_else(|| format!("bytes {start}..{} were not fetched", start + len))
    }
}

impl Read for RemoteZip {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.position >= self.len || buf.is_empty() {
            return Ok(0);
        }
        let position = self.position;
        let piece = self.pieces.iter().find_map(|(at, bytes)| {
            let from = usize::try_from(position.checked_sub(*at)?).ok()?;
            bytes.get(from..).filter(|rest| !rest.is_empty())
        });
        let Some(available) = piece else {
            return Err(io::Error::other(format!(
                "the zip reader asked for byte {position}, which was not fetched"
            )));
        };
        let count = available.len().min(buf.len());
        buf[..count].copy_from_slice(&available[..count]);
        self.position += count as u64;
        Ok(count)
    }
}

impl Seek for RemoteZip {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(offset) => Some(offset),
            SeekFrom::End(delta) => self.len.checked_add_signed(delta),
            SeekFrom::Current(delta) => self.position.checked_add_signed(delta),
        };
        self.position =
            target.ok_or_else(|| io::Error::other("seek before the start of the archive"))?;
        Ok(self.position)
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Cursor, Write};

    use super::*;

    /// A small zip with a filler member, then `pkg/include/nccl.h`, then another filler.
    fn wheel() -> Vec<u8> {
        let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        // Incompressible filler, so the library member keeps its size in the archive.
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let filler: Vec<u8> = (0..300_000)
            .map(|_| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1);
                (state >> 56) as u8
            })
            .collect();
        for (name, contents) in [
            ("pkg/lib/libnccl.so.2", filler),
            ("pkg/include/nccl.h", b"#define NCCL_MAJOR 2\n".repeat(40)),
            ("pkg-2.28.3.dist-info/RECORD", b"record".to_vec()),
        ] {
            writer.start_file(name, options).unwrap();
            writer.write_all(&contents).unwrap();
        }
        writer.finish().unwrap().into_inner()
    }

    #[test]
    fn reads_one_member_from_the_tail_and_its_own_range() {
        let bytes = wheel();
        let len = bytes.len() as u64;
        let tail_start = len - 2000;
        let directory = central_directory(&bytes[tail_start as usize..]).unwrap();
        assert!(directory.offset >= tail_start, "{directory:?}");
        let listing =
            &bytes[directory.offset as usize..(directory.offset + directory.size) as usize];
        let entry = find_entry(listing, "/include/nccl.h").unwrap();
        assert_eq!(entry.name, "pkg/include/nccl.h");
        assert!(find_entry(listing, "/include/cuda.h").is_none());

        let mut remote = RemoteZip::new(len);
        remote
            .add(tail_start, bytes[tail_start as usize..].to_vec())
            .unwrap();
        let start = entry.header_offset as usize;
        let end = start + 30 + entry.name.len() + 64 + entry.compressed as usize;
        remote
            .add(entry.header_offset, bytes[start..end].to_vec())
            .unwrap();
        let mut archive = zip::ZipArchive::new(remote).unwrap();
        let mut text = String::new();
        archive
            .by_name("pkg/include/nccl.h")
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "#define NCCL_MAJOR 2\n".repeat(40));
        // The library's bytes were never fetched: reading them is an error, not zeros.
        assert!(archive.by_name("pkg/lib/libnccl.so.2").is_err());
    }

    #[test]
    fn history_is_oldest_first_and_ends_before_the_pinned_header() {
        let minor = |version: &str| -> u32 { version.split('.').nth(1).unwrap().parse().unwrap() };
        for pair in HISTORY.windows(2) {
            assert!(minor(pair[0].version) < minor(pair[1].version));
        }
        assert!(minor(HISTORY[HISTORY.len() - 1].version) < minor(BINDINGS[0].version));
        assert_eq!(BINDINGS[0].sha256, BINDINGS[1].sha256);
        assert!(url_of(&HISTORY[0]).starts_with("https://files.pythonhosted.org/packages/"));
    }
}
