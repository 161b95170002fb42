//! Where every registered dataset's files come from: the pinned public source of each (a GitHub
//! repository at a commit, an npm or Debian package at a version), the converter that turns it
//! into our layout, and the sha256 of both ends. The table is data, `sources.toml` beside this
//! crate's manifest, compiled in; `sage data fetch` rebuilds from it
//! ([`crate::rebuild`](crate::rebuild) with the feature `fetch`), and `sage data list` shows its
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
    pub artifacts: BTreeMap<String, ArtifactPin>,
    /// Every registry dataset's files.
    #[serde(rename = "dataset")]
    pub datasets: Vec<DatasetPin>,
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

    #[test]
    fn table_parses_and_every_input_is_pinned() {
        let pins = Pins::builtin();
        for d in &pins.datasets {
            assert!(
                crate::entry(&d.name).is_some(),
                "sources.toml names {:?}, not a registry dataset",
                d.name
            );
            assert!(
                d.unavailable.is_some() == d.files.is_empty(),
                "{}: either files or a reason none can exist",
                d.name
            );
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
        for d in pins.datasets.iter().filter(|d| d.unavailable.is_none()) {
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
        assert!(REGISTRY.len() >= pins.datasets.len());
    }
}
