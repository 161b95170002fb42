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

sage_core::suite_options! {
    /// The options of an EvalRank run: the one declaration the flags, `--options`, bench.toml
    /// and Python keywords all read, with each field's range. The seed is the run's; it draws
    /// the lists only where `max_pairs` or `max_background` cut them.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Options {
        // required where options are read; a bare `Options::default()` says word
        /// word: the 13 word-similarity sets; sentence: STS-B and STR-2022.
        pub level: Level = Level::Word, sage_core::OptionSpec::any().required();
        /// How two vectors compare: cosine (cos) or l2, EvalRank's 1 / (1 + distance).
        pub similarity: VectorSimilarity = VectorSimilarity::Cosine,
            sage_core::OptionSpec::any().flag("vector-similarity");
        /// shipped: the toolkit's lists; constructed: built from the raw datasets.
        pub lists: ListSource = ListSource::Shipped, sage_core::OptionSpec::any();
        /// Post-processing fitted on the embedded set: none, whitening, or abtt (the top
        /// `abtt_k` principal components removed).
        pub post: PostKind = PostKind::None, sage_core::OptionSpec::any();
        /// Components `post: abtt` removes.
        pub abtt_k: usize = DEFAULT_ABTT_K, sage_core::OptionSpec::whole(1, 1_000);
        /// Directed positive pairs ranked (seeded sample, for quick runs); all when unset.
        pub max_pairs: Option<usize> = None, sage_core::OptionSpec::whole(1, 10_000_000);
        /// Background items in all (seeded sample, for quick runs: a smaller background gives
        /// higher scores than the paper's); the ranked pairs' texts always stay, so there may
        /// be more. All when unset.
        pub max_background: Option<usize> = None, sage_core::OptionSpec::whole(1, 10_000_000);
    }
}

impl Options {
    /// The lists these options rank, drawn with the run's `seed`.
    pub fn cut(&self, seed: sage_core::RunSeed) -> crate::lists::ListCut {
        crate::lists::ListCut {
            max_pairs: self.max_pairs,
            max_background: self.max_background,
            seed,
        }
    }

    /// The options' post-processing, with its `k` for ABTT.
    pub fn post_process(&self) -> PostProcess {
        match self.post {
            PostKind::None => PostProcess::None,
            PostKind::Whitening => PostProcess::Whitening,
            PostKind::Abtt => PostProcess::Abtt { k: self.abtt_k },
        }
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
        // the level is required where options are read (sage-suites): the declaration says so
        let bare = serde_json::json!({"post": "none"});
        assert_eq!(
            sage_core::missing_required(
                <Options as sage_core::SuiteOptions>::FIELDS,
                bare.as_object().unwrap()
            ),
            ["level"]
        );
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
