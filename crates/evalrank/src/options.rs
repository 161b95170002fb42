//! The options of an EvalRank run, whoever gives them: `sage run evalrank`'s flags, `--options`,
//! bench.toml and Python keywords all become [`Options`] and meet its ranges
//! ([`sage_core::CheckOptions`]) before anything is loaded.

use sage_core::VectorSimilarity;
use serde::{Deserialize, Serialize};

use crate::{Level, ListSource, PostProcess};

/// Principal components `post: abtt` removes when `abtt_k` is not given (the EvalRank authors'
/// setting).
pub const DEFAULT_ABTT_K: usize = 2;

/// A post-processing by name, as options give it; [`Options::post_process`] adds its `k`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PostKind {
    /// Vectors as the model gives them.
    #[default]
    None,
    /// BERT-whitening.
    Whitening,
    /// All-but-the-top: the top `abtt_k` principal components removed.
    Abtt,
}

/// The options of an EvalRank run. No seed: nothing is sampled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Options {
    /// Word or sentence lists (required).
    pub level: Level,
    /// How two vectors compare.
    #[serde(default)]
    pub similarity: VectorSimilarity,
    /// The shipped lists or those built from the raw datasets.
    #[serde(default)]
    pub lists: ListSource,
    /// The post-processing fitted on the embedded set.
    #[serde(default)]
    pub post: PostKind,
    /// Components `post: abtt` removes (1 to 1,000).
    #[serde(default = "default_abtt_k")]
    pub abtt_k: usize,
}

fn default_abtt_k() -> usize {
    DEFAULT_ABTT_K
}

impl Options {
    /// The options' post-processing, with its `k` for ABTT.
    pub fn post_process(&self) -> PostProcess {
        match self.post {
            PostKind::None => PostProcess::None,
            PostKind::Whitening => PostProcess::Whitening,
            PostKind::Abtt => PostProcess::Abtt { k: self.abtt_k },
        }
    }
}

impl sage_core::CheckOptions for Options {
    fn check(&self) -> sage_core::Result<()> {
        sage_core::within("abtt_k", self.abtt_k, 1..=1_000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only the level is required; the rest take the authors' settings, and `abtt_k` reaches
    /// the post-processing only with `post: abtt`.
    #[test]
    fn options_default_to_the_authors_settings() {
        let o: Options = serde_json::from_str(r#"{"level": "word"}"#).unwrap();
        assert_eq!(
            (o.similarity, o.lists, o.post_process()),
            (
                VectorSimilarity::Cosine,
                ListSource::Shipped,
                PostProcess::None
            )
        );
        let abtt: Options =
            serde_json::from_str(r#"{"level": "sentence", "post": "abtt", "abtt_k": 3}"#).unwrap();
        assert_eq!(abtt.post_process(), PostProcess::Abtt { k: 3 });
        assert!(serde_json::from_str::<Options>(r#"{"post": "none"}"#).is_err());
        let zero = Options { abtt_k: 0, ..o };
        assert!(sage_core::CheckOptions::check(&zero).is_err());
    }

    /// A level's name (cost hints, result files) is the one its options spell.
    #[test]
    fn a_levels_name_is_its_serialised_form() {
        for level in [Level::Word, Level::Sentence] {
            assert_eq!(serde_json::to_value(level).unwrap(), level.name());
        }
    }
}
