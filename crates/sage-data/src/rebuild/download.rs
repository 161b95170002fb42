//! One pinned artifact over HTTPS, bounded, resumable and checked.
//!
//! - **Bounded.** A Content-Length over the pin is refused before a byte is read; a body that runs
//!   past the pin is cut at the pin plus one byte and refused; a source that stalls is cut when
//!   its time (a floor plus the pinned size at a slow rate) runs out.
//! - **Redirects** are followed by hand, only to the documented hosts ([`ALLOWED_HOSTS`]).
//! - **Resumable.** Bytes go to `NAME.partial`; a rerun asks for the rest with a `Range` request
//!   (a server that ignores it starts the file afresh).
//! - **Atomic.** Only a file whose size and sha256 match the pin is renamed to its name.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::pins::ArtifactPin;

/// The hosts a source or its redirects may name: GitHub's raw files and archives, the npm
/// registry, Debian's archive and its snapshots.
pub const ALLOWED_HOSTS: &[&str] = &[
    "raw.githubusercontent.com",
    "github.com",
    "codeload.github.com",
    "objects.githubusercontent.com",
    "registry.npmjs.org",
    "deb.debian.org",
    "snapshot.debian.org",
];

/// How downloads run.
#[derive(Clone, Debug)]
pub struct DownloadSettings {
    /// Serve every `https://HOST/PATH` from `BASE/HOST/PATH` instead: an HTTP base (a mirror,
    /// the loopback server of the tests), or a folder (a path, or `file://PATH`: a copy of the
    /// sources on a shared disk, as a closed site keeps them). A folder's file is read with the
    /// same bounds and checks as a download.
    pub base: Option<String>,
    /// The time any source gets before its body is cut, on top of its size at [`Self::min_rate`].
    pub stall: Duration,
    /// The slowest rate, in bytes per second, a source is waited for.
    pub min_rate: u64,
}

impl Default for DownloadSettings {
    fn default() -> Self {
        DownloadSettings {
            base: None,
            stall: Duration::from_secs(60),
            min_rate: 32 * 1024,
        }
    }
}

/// Bytes arrived (for progress).
pub type OnBytes<'a> = &'a (dyn Fn(u64) + Sync);

/// Whether the file at `path` has the pinned size and sha256 (an artifact without a sha256: is
/// there, within its bound; a download in progress is never under the name).
pub fn matches(path: &Path, pin: &ArtifactPin) -> std::io::Result<bool> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    match &pin.sha256 {
        Some(sha) => Ok(meta.len() == pin.bytes && &sha256_file(path)? == sha),
        None => Ok(meta.len() <= pin.bytes),
    }
}

/// The sha256 of a file, lower-case hex.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut file = File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(crate::sample::hex(&hasher.finalize()))
}

fn host_of(url: &str) -> Option<&str> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split('/').next()?;
    // no userinfo in a source URL: it would carry a secret, and it can disguise the host
    if authority.contains('@') {
        return None;
    }
    Some(authority.split(':').next().unwrap_or(authority))
}

impl DownloadSettings {
    /// The folder `base` names, when it is one rather than an HTTP base.
    fn folder(&self) -> Option<PathBuf> {
        let base = self.base.as_deref()?;
        if let Some(path) = base.strip_prefix("file://") {
            return Some(PathBuf::from(path));
        }
        (!base.contains("://")).then(|| PathBuf::from(base))
    }

    /// Copies the folder's file for `url` to `dest` (via `dest.partial`), checked against `pin`
    /// as a download is; `received` counts the bytes read.
    fn copy_from_folder(
        &self,
        folder: &Path,
        url: &str,
        pin: &ArtifactPin,
        dest: &Path,
        on_bytes: OnBytes<'_>,
        received: &AtomicU64,
    ) -> Result<(), String> {
        let rest = url.strip_prefix("https://").unwrap_or(url);
        let source = folder.join(rest);
        let meta = std::fs::metadata(&source).map_err(|e| format!("{}: {e}", source.display()))?;
        if meta.len() > pin.bytes || (pin.sha256.is_some() && meta.len() < pin.bytes) {
            return Err(format!(
                "{} holds {} bytes; the pinned file is {}{} bytes",
                source.display(),
                meta.len(),
                if pin.sha256.is_some() { "" } else { "at most " },
                pin.bytes
            ));
        }
        let partial = partial_path(dest);
        let mut from = File::open(&source)
            .map_err(|e| format!("{}: {e}", source.display()))?
            .take(pin.bytes + 1);
        let mut to = File::create(&partial).map_err(|e| format!("{}: {e}", partial.display()))?;
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = from
                .read(&mut buf)
                .map_err(|e| format!("{}: {e}", source.display()))?;
            if n == 0 {
                break;
            }
            to.write_all(&buf[..n])
                .map_err(|e| format!("{}: {e}", partial.display()))?;
            received.fetch_add(n as u64, Ordering::Relaxed);
            on_bytes(n as u64);
        }
        to.sync_all()
            .map_err(|e| format!("{}: {e}", partial.display()))?;
        drop(to);
        self.accept(&partial, pin, dest)
    }

    /// Renames a complete `partial` to `dest` when it is the pinned file (its sha256, where the
    /// pin has one); removes it otherwise.
    fn accept(&self, partial: &Path, pin: &ArtifactPin, dest: &Path) -> Result<(), String> {
        if let Some(pinned) = &pin.sha256 {
            let sha = sha256_file(partial).map_err(|e| format!("{}: {e}", partial.display()))?;
            if &sha != pinned {
                let _ = std::fs::remove_file(partial);
                return Err(format!("sha256 {sha}, pinned {pinned} (removed)"));
            }
        }
        std::fs::rename(partial, dest).map_err(|e| format!("{}: {e}", dest.display()))
    }

    /// Where the pinned `url` is fetched from.
    fn served_from(&self, url: &str) -> String {
        match (&self.base, url.strip_prefix("https://")) {
            (Some(base), Some(rest)) => format!("{}/{rest}", base.trim_end_matches('/')),
            _ => url.to_owned(),
        }
    }

    /// A redirect's target as a pinned-style URL, if its host is allowed.
    fn redirect_target(&self, current: &str, location: &str) -> Result<String, String> {
        let absolute = if location.starts_with('/') {
            let scheme_host_end = current
                .find("://")
                .and_then(|i| current[i + 3..].find('/').map(|j| i + 3 + j))
                .unwrap_or(current.len());
            format!("{}{location}", &current[..scheme_host_end])
        } else {
            location.to_owned()
        };
        let pinned = match &self.base {
            Some(base) if absolute.starts_with(base.trim_end_matches('/')) => {
                format!(
                    "https://{}",
                    absolute[base.trim_end_matches('/').len()..].trim_start_matches('/')
                )
            }
            _ => absolute.clone(),
        };
        if !pinned.starts_with("https://") {
            return Err(format!("redirected to {location}, not HTTPS"));
        }
        match host_of(&pinned) {
            Some(host) if ALLOWED_HOSTS.contains(&host) => Ok(pinned),
            _ => Err(format!(
                "redirected to {location}, outside the documented hosts ({})",
                ALLOWED_HOSTS.join(", ")
            )),
        }
    }

    /// Downloads `url` to `dest` (via `dest.partial`), checked against `pin`; the error says
    /// what happened (the caller names the URL). `on_bytes` hears of the bytes the file holds
    /// (a resumed download's first part included, for progress); `received` counts only the
    /// bytes that arrived now, failed attempts included.
    pub fn download(
        &self,
        url: &str,
        pin: &ArtifactPin,
        dest: &Path,
        on_bytes: OnBytes<'_>,
        received: &AtomicU64,
    ) -> Result<(), String> {
        let error = |message: String| message;
        match host_of(url) {
            Some(host) if url.starts_with("https://") && ALLOWED_HOSTS.contains(&host) => {}
            _ => {
                return Err(error(format!(
                    "not an HTTPS URL on a documented host ({})",
                    ALLOWED_HOSTS.join(", ")
                )))
            }
        }
        if let Some(dir) = dest.parent() {
            std::fs::create_dir_all(dir).map_err(|e| error(format!("{}: {e}", dir.display())))?;
        }
        if let Some(folder) = self.folder() {
            return self.copy_from_folder(&folder, url, pin, dest, on_bytes, received);
        }
        let partial = partial_path(dest);
        let budget = self.stall + Duration::from_secs(pin.bytes / self.min_rate.max(1));
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .max_redirects(0)
            .http_status_as_error(false)
            .timeout_connect(Some(self.stall))
            .timeout_recv_response(Some(self.stall))
            .timeout_global(Some(budget))
            .user_agent(concat!("sage-rs/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        let have = std::fs::metadata(&partial).map(|m| m.len()).unwrap_or(0);
        // an unhashed artifact starts afresh: nothing says the first part is of the same bytes
        let have = if have >= pin.bytes || pin.sha256.is_none() {
            0
        } else {
            have
        };
        let mut target = url.to_owned();
        let mut hops = 0;
        let response = loop {
            let mut request = agent.get(self.served_from(&target));
            if have > 0 {
                request = request.header("Range", format!("bytes={have}-"));
            }
            let response = request.call().map_err(|e| error(e.to_string()))?;
            let status = response.status().as_u16();
            if (300..400).contains(&status) {
                hops += 1;
                if hops > 5 {
                    return Err(error("more than 5 redirects".into()));
                }
                let location = response
                    .headers()
                    .get("location")
                    .and_then(|v| v.to_str().ok())
                    .ok_or_else(|| error(format!("HTTP {status} without a Location")))?
                    .to_owned();
                target = self
                    .redirect_target(&self.served_from(&target), &location)
                    .map_err(error)?;
                continue;
            }
            if status != 200 && status != 206 {
                return Err(error(format!("HTTP {status}")));
            }
            break response;
        };
        let resumed = response.status().as_u16() == 206 && have > 0;
        let expect = if resumed { pin.bytes - have } else { pin.bytes };
        if let Some(length) = response
            .headers()
            .get("content-length")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok())
        {
            if length > expect || (pin.sha256.is_some() && length < expect) {
                return Err(error(format!(
                    "the server offers {length} bytes; the pinned file is {}{} bytes",
                    if pin.sha256.is_some() { "" } else { "at most " },
                    pin.bytes
                )));
            }
        }
        let mut file = if resumed {
            on_bytes(have);
            OpenOptions::new().append(true).open(&partial)
        } else {
            File::create(&partial)
        }
        .map_err(|e| error(format!("{}: {e}", partial.display())))?;
        let mut body = response.into_body().into_reader().take(expect + 1);
        let mut buf = vec![0u8; 1 << 16];
        let mut got = 0u64;
        loop {
            let n = match body.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) => {
                    let _ = file.flush();
                    return Err(error(format!(
                        "{e} after {} of {} bytes (kept; a rerun resumes)",
                        have * u64::from(resumed) + got,
                        pin.bytes
                    )));
                }
            };
            got += n as u64;
            received.fetch_add(n as u64, Ordering::Relaxed);
            if got > expect {
                drop(file);
                let _ = std::fs::remove_file(&partial);
                return Err(error(format!(
                    "the body runs past the pinned {} bytes",
                    pin.bytes
                )));
            }
            file.write_all(&buf[..n])
                .map_err(|e| error(format!("{}: {e}", partial.display())))?;
            on_bytes(n as u64);
        }
        file.sync_all()
            .map_err(|e| error(format!("{}: {e}", partial.display())))?;
        drop(file);
        if got < expect && pin.sha256.is_some() {
            return Err(error(format!(
                "the body ended after {} of {} bytes (kept; a rerun resumes)",
                have * u64::from(resumed) + got,
                pin.bytes
            )));
        }
        self.accept(&partial, pin, dest)
    }
}

/// Where a download in progress is kept.
pub fn partial_path(dest: &Path) -> PathBuf {
    let mut name = dest.file_name().unwrap_or_default().to_os_string();
    name.push(".partial");
    dest.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_and_redirects() {
        let s = DownloadSettings {
            base: Some("http://127.0.0.1:9/".into()),
            ..Default::default()
        };
        assert_eq!(
            s.served_from("https://raw.githubusercontent.com/a/b/c/d.txt"),
            "http://127.0.0.1:9/raw.githubusercontent.com/a/b/c/d.txt"
        );
        assert_eq!(
            s.redirect_target(
                "http://127.0.0.1:9/github.com/a/b",
                "http://127.0.0.1:9/codeload.github.com/a/b/tar.gz/c"
            )
            .unwrap(),
            "https://codeload.github.com/a/b/tar.gz/c"
        );
        assert!(s
            .redirect_target(
                "http://127.0.0.1:9/github.com/a",
                "http://127.0.0.1:9/evil.example/x"
            )
            .unwrap_err()
            .contains("outside the documented hosts"));
        let direct = DownloadSettings::default();
        assert!(direct
            .redirect_target(
                "https://github.com/a",
                "https://raw.githubusercontent.com@evil.example/x"
            )
            .is_err());
        assert!(direct
            .redirect_target("https://github.com/a", "http://github.com/x")
            .is_err());
        assert_eq!(
            direct
                .redirect_target("https://github.com/a/b", "/a/c")
                .unwrap(),
            "https://github.com/a/c"
        );
    }
}
