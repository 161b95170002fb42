//! Whether the bytes a result rests on are known ones.
//!
//! Every registry file a loader reads is hashed (once per process while its size and time
//! stamp stay) and checked against what should be there:
//! - a **pin**: the file a pinned public source rebuilds (`sources.toml`, or the table
//!   `SAGE_DATA_PINS` names). Other bytes are not refused: a sample or a test fixture under a
//!   registry name is a legitimate file, so the result says `differs-from-pin` and no reader
//!   takes it for the published data;
//! - a **lock**: the sha256 of a file made from the Hugging Face hub, which no public source
//!   pins, recorded in the data folder's `PROVENANCE.json` by the first `sage data fetch` that
//!   made it, or in a team's lock file (`sage data lock` prints one; `SAGE_DATA_PINS` carries
//!   it). A locked file whose bytes changed is refused, naming both sha256s: the numbers would
//!   no longer be the ones the lock vouches for.
//!
//! Each result's [`RowSelection`](sage_core::RowSelection) carries the checks of the files its
//! rows came from ([`FileCheck`]).

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

pub use sage_core::{FileCheck, Verified};
use sha2::{Digest, Sha256};

use crate::error::{DataError, Result};
use crate::pins::Pins;

/// Where each fetched dataset's licence, sources and files' sha256 are kept, beside the data.
pub const PROVENANCE: &str = "PROVENANCE.json";

/// What a file's sha256 should be, and who says so.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expected {
    /// A pinned public source makes it with this sha256.
    Pin(String),
    /// Recorded for a hub-made file: the sha256, and where it was recorded.
    Lock {
        /// The recorded sha256.
        sha256: String,
        /// `PROVENANCE.json` of the data folder, or the lock file `SAGE_DATA_PINS` names.
        by: String,
    },
}

/// What `path` (under `root`, `/`-separated) should hold: its pin, else its lock (a shared lock
/// file first, then the data folder's record), else nothing known.
pub fn expected(root: &Path, path: &str) -> Result<Option<Expected>> {
    let pins = Pins::active().map_err(|message| DataError::Io {
        path: PathBuf::from("SAGE_DATA_PINS"),
        message,
    })?;
    if let Some(pin) = pins.file(path) {
        return Ok(Some(Expected::Pin(pin.sha256.clone())));
    }
    if let Some(locked) = pins.locked.iter().find(|l| l.path == path) {
        let by = std::env::var("SAGE_DATA_PINS").unwrap_or_default();
        return Ok(Some(Expected::Lock {
            sha256: locked.sha256.clone(),
            by: format!("the lock file {by}"),
        }));
    }
    Ok(recorded(root)?.remove(path).map(|sha256| Expected::Lock {
        sha256,
        by: root.join(PROVENANCE).display().to_string(),
    }))
}

/// Every file the data folder's provenance records, path → sha256, pinned or hub-made.
pub fn recorded(root: &Path) -> Result<BTreeMap<String, String>> {
    let mut files = BTreeMap::new();
    for (_, entry) in read_provenance(root)? {
        if let Some(map) = entry.get("files").and_then(|f| f.as_object()) {
            for (path, sha) in map {
                if let Some(sha) = sha.as_str() {
                    files.insert(path.clone(), sha.to_owned());
                }
            }
        }
    }
    Ok(files)
}

/// The data folder's provenance record (empty where there is none).
pub fn read_provenance(root: &Path) -> Result<serde_json::Map<String, serde_json::Value>> {
    let path = root.join(PROVENANCE);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| DataError::Io {
            path,
            message: format!("not the provenance record sage writes: {e}"),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Default::default()),
        Err(e) => Err(DataError::Io {
            path,
            message: e.to_string(),
        }),
    }
}

/// The sha256 of a file, lower-case hex; remembered for the process while the file keeps its
/// size and modification time, so a corpus read by several tasks is hashed once.
pub fn sha256_of(path: &Path) -> Result<String> {
    type Seen = HashMap<PathBuf, (u64, Option<SystemTime>, String)>;
    static SEEN: Mutex<Option<Seen>> = Mutex::new(None);
    let io = |e: std::io::Error| DataError::Io {
        path: path.to_owned(),
        message: e.to_string(),
    };
    let meta = std::fs::metadata(path).map_err(io)?;
    let stamp = (meta.len(), meta.modified().ok());
    if let Some((len, modified, sha)) = SEEN
        .lock()
        .expect("not poisoned")
        .as_ref()
        .and_then(|seen| seen.get(path))
    {
        if (*len, *modified) == stamp {
            return Ok(sha.clone());
        }
    }
    let mut file = std::fs::File::open(path).map_err(io)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buffer).map_err(io)?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
    }
    let sha = crate::sample::hex(&hasher.finalize());
    SEEN.lock()
        .expect("not poisoned")
        .get_or_insert_with(HashMap::new)
        .insert(path.to_owned(), (stamp.0, stamp.1, sha.clone()));
    Ok(sha)
}

/// Checks the file at `path` under `root` (see the module docs): its check, or an error when it
/// is locked and its bytes changed.
pub fn check(root: &Path, path: &str) -> Result<FileCheck> {
    let full = root.join(path);
    let sha256 = sha256_of(&full)?;
    let verified = match expected(root, path)? {
        Some(Expected::Pin(pin)) if pin == sha256 => Verified::Pin,
        Some(Expected::Pin(_)) => Verified::DiffersFromPin,
        Some(Expected::Lock { sha256: locked, .. }) if locked == sha256 => Verified::Lock,
        Some(Expected::Lock { sha256: locked, by }) => {
            return Err(changed(&full, &locked, &sha256, &by));
        }
        None => Verified::Unverified,
    };
    Ok(FileCheck {
        path: path.to_owned(),
        sha256,
        verified,
    })
}

/// The lock file of a data folder (`sage data lock`): a `[[locked]]` entry for every hub-made
/// file its provenance records (files a pinned source makes have their pins already), and those
/// of the active lock (`SAGE_DATA_PINS`), as TOML that `SAGE_DATA_PINS` reads back. A recorded
/// file missing from the folder, or no longer its recorded bytes, is an error naming it: a lock
/// vouches only for files that are there as recorded.
pub fn lock_table(root: &Path) -> Result<String> {
    let pins = Pins::active().map_err(|message| DataError::Io {
        path: PathBuf::from("SAGE_DATA_PINS"),
        message,
    })?;
    let mut locked: BTreeMap<String, crate::pins::LockedFile> = pins
        .locked
        .iter()
        .map(|l| (l.path.clone(), l.clone()))
        .collect();
    for (dataset, entry) in read_provenance(root)? {
        let source = entry
            .get("origins")
            .and_then(|o| o.as_array())
            .and_then(|o| o.first())
            .and_then(|o| o.as_str())
            .unwrap_or_default()
            .to_owned();
        let Some(files) = entry.get("files").and_then(|f| f.as_object()) else {
            continue;
        };
        for (path, sha256) in files {
            let Some(sha256) = sha256.as_str() else {
                continue;
            };
            if pins.file(path).is_some() {
                continue;
            }
            let full = root.join(path);
            let actual = sha256_of(&full)?;
            if actual != sha256 {
                return Err(changed(
                    &full,
                    sha256,
                    &actual,
                    &root.join(PROVENANCE).display().to_string(),
                ));
            }
            let bytes = std::fs::metadata(&full)
                .map_err(|e| DataError::Io {
                    path: full.clone(),
                    message: e.to_string(),
                })?
                .len();
            locked.insert(
                path.clone(),
                crate::pins::LockedFile {
                    dataset: dataset.clone(),
                    path: path.clone(),
                    bytes,
                    sha256: sha256.to_owned(),
                    source: source.clone(),
                },
            );
        }
    }
    // a JSON string is a TOML basic string (the same escapes)
    let quoted = |s: &str| serde_json::to_string(s).expect("a string serialises");
    let mut body = String::new();
    for l in locked.values() {
        body.push_str(&format!(
            "\n[[locked]]\ndataset = {}\npath = {}\nbytes = {}\nsha256 = {}\nsource = {}\n",
            quoted(&l.dataset),
            quoted(&l.path),
            l.bytes,
            quoted(&l.sha256),
            quoted(&l.source)
        ));
    }
    Ok(format!(
        "# sha256 of the files sage-rs made from the Hugging Face hub (sage data lock).\n\
         # Commit it and set SAGE_DATA_PINS to this file: every fetch and load then checks\n\
         # these files against it.\n{body}"
    ))
}

/// The error of a locked file whose bytes are not the recorded ones.
pub fn changed(path: &Path, locked: &str, actual: &str, by: &str) -> DataError {
    DataError::Io {
        path: path.to_owned(),
        message: format!(
            "changed since its sha256 was recorded: {by} records {locked}, the file is {actual}. \
             Numbers from it would not be the ones the record vouches for; fetch it again from \
             the recorded revision, or, to accept these bytes, remove its entry from {by}"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(root: &Path, path: &str, text: &str) -> String {
        let full = root.join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(&full, text).unwrap();
        crate::sample::hex(&Sha256::digest(text.as_bytes()))
    }

    /// A pinned path with other bytes is said to differ (a fixture is not refused), a recorded
    /// hub-made file is a lock and refused once changed, anything else is unverified.
    #[test]
    fn files_are_checked_against_their_pin_or_their_lock() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let pinned = &Pins::builtin()
            .datasets
            .iter()
            .find(|d| !d.files.is_empty())
            .unwrap()
            .files[0];
        put(root, &pinned.path, "not the pinned bytes\n");
        let got = check(root, &pinned.path).unwrap();
        assert_eq!(got.verified, Verified::DiffersFromPin);
        assert_ne!(got.sha256, pinned.sha256);

        let hub_made = "retrieval/arguana/queries.jsonl";
        let sha = put(root, hub_made, "{\"_id\": \"q1\", \"text\": \"why\"}\n");
        assert_eq!(
            check(root, hub_made).unwrap().verified,
            Verified::Unverified
        );
        std::fs::write(
            root.join(PROVENANCE),
            serde_json::json!({"arguana": {"files": {hub_made: sha}}}).to_string(),
        )
        .unwrap();
        let got = check(root, hub_made).unwrap();
        assert_eq!(
            (got.verified, got.sha256.as_str()),
            (Verified::Lock, sha.as_str())
        );

        let table = lock_table(root).unwrap();
        let read: Pins = toml::from_str(&table).unwrap();
        assert_eq!(read.locked.len(), 1, "{table}");
        assert_eq!(
            (
                read.locked[0].dataset.as_str(),
                read.locked[0].path.as_str(),
                read.locked[0].sha256.as_str()
            ),
            ("arguana", hub_made, sha.as_str())
        );
        assert!(read.datasets.is_empty() && read.artifacts.is_empty());

        let changed_sha = put(root, hub_made, "{\"_id\": \"q1\", \"text\": \"why not\"}\n");
        let e = check(root, hub_made).unwrap_err().to_string();
        assert!(
            e.contains("queries.jsonl: changed since its sha256 was recorded")
                && e.contains(&sha)
                && e.contains(&changed_sha)
                && e.contains("PROVENANCE.json"),
            "{e}"
        );
        assert!(
            lock_table(root).is_err(),
            "a changed file is not locked again"
        );
    }
}
