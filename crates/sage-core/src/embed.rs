//! The embedding side: the [`Embedder`] trait, vector similarities, and the adapter that makes any
//! embedder a [`Similarity`].

use std::collections::HashMap;

use ndarray::{Array2, ArrayView1, Axis};
use serde::{Deserialize, Serialize};

use crate::{Result, SageError, Similarity};

/// Everything that determines an embedder's output, so two embedders with equal identities give
/// equal vectors. Used as the key of embedding caches and recorded in every report.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct EmbedderIdentity {
    /// Model id (hub id or folder name), e.g. `sentence-transformers/all-MiniLM-L6-v2`.
    pub model_id: String,
    /// Revision (commit hash, file checksum, ...) when known.
    pub revision: Option<String>,
    /// Pooling, e.g. `mean`, `cls`, `first-last-avg`, `bow-mean`.
    pub pooling: String,
    /// Whether output rows are L2-normalised.
    pub normalize: bool,
    /// Maximum input length in tokens (0 when the model has none, as static models).
    pub max_length: usize,
}

impl EmbedderIdentity {
    /// A filesystem- and key-safe string identifying this embedder: same identity, same key.
    pub fn cache_key(&self) -> String {
        let clean = |s: &str| -> String {
            s.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                        c
                    } else {
                        '_'
                    }
                })
                .collect()
        };
        format!(
            "{}@{}.{}.{}.{}",
            clean(&self.model_id),
            clean(self.revision.as_deref().unwrap_or("unversioned")),
            clean(&self.pooling),
            if self.normalize { "norm" } else { "raw" },
            self.max_length
        )
    }
}

/// Turns texts into vectors.
pub trait Embedder: Send + Sync {
    /// What this embedder is (see [`EmbedderIdentity`]).
    fn identity(&self) -> &EmbedderIdentity;

    /// One row per text, in input order. Every row has the same width ([`Embedder::dimension`]).
    fn embed(&self, texts: &[&str]) -> Result<Array2<f32>>;

    /// Width of the vectors.
    fn dimension(&self) -> usize;
}

impl<E: Embedder + ?Sized> Embedder for &E {
    fn identity(&self) -> &EmbedderIdentity {
        (**self).identity()
    }
    fn embed(&self, texts: &[&str]) -> Result<Array2<f32>> {
        (**self).embed(texts)
    }
    fn dimension(&self) -> usize {
        (**self).dimension()
    }
}

impl<E: Embedder + ?Sized> Embedder for Box<E> {
    fn identity(&self) -> &EmbedderIdentity {
        (**self).identity()
    }
    fn embed(&self, texts: &[&str]) -> Result<Array2<f32>> {
        (**self).embed(texts)
    }
    fn dimension(&self) -> usize {
        (**self).dimension()
    }
}

/// How two vectors are compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum VectorSimilarity {
    /// `a·b / (‖a‖‖b‖)`; 0 when either vector is zero.
    #[default]
    Cosine,
    /// EvalRank's `1 / (1 + ‖a − b‖)`.
    L2,
}

impl VectorSimilarity {
    /// Name used in reports (`cos`, `l2`).
    pub fn name(self) -> &'static str {
        match self {
            VectorSimilarity::Cosine => "cos",
            VectorSimilarity::L2 => "l2",
        }
    }

    /// Similarity of two vectors of equal length.
    pub fn between(self, a: ArrayView1<f32>, b: ArrayView1<f32>) -> f32 {
        match self {
            VectorSimilarity::Cosine => cosine(a, b),
            VectorSimilarity::L2 => l2_similarity(a, b),
        }
    }
}

/// Cosine similarity, computed in f64 so long vectors do not lose precision; 0 for a zero vector.
pub fn cosine(a: ArrayView1<f32>, b: ArrayView1<f32>) -> f32 {
    let (mut dot, mut na, mut nb) = (0f64, 0f64, 0f64);
    for (&x, &y) in a.iter().zip(b.iter()) {
        let (x, y) = (f64::from(x), f64::from(y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        (dot / (na.sqrt() * nb.sqrt())) as f32
    }
}

/// EvalRank's l2 similarity `1 / (1 + ‖a − b‖)`, in (0, 1].
pub fn l2_similarity(a: ArrayView1<f32>, b: ArrayView1<f32>) -> f32 {
    let d2: f64 = a
        .iter()
        .zip(b.iter())
        .map(|(&x, &y)| {
            let d = f64::from(x) - f64::from(y);
            d * d
        })
        .sum();
    (1.0 / (1.0 + d2.sqrt())) as f32
}

/// L2-normalises every row in place; zero rows stay zero.
pub fn normalize_rows(m: &mut Array2<f32>) {
    for mut row in m.axis_iter_mut(Axis(0)) {
        let norm = row
            .iter()
            .map(|&x| f64::from(x) * f64::from(x))
            .sum::<f64>()
            .sqrt();
        if norm > 0.0 {
            row.mapv_inplace(|x| (f64::from(x) / norm) as f32);
        }
    }
}

/// Makes any [`Embedder`] a [`Similarity`].
///
/// Every batch call embeds each *distinct* text once, however many pairs it appears in, and the
/// matrix form is one matrix product of unit vectors. Caching across calls is the embedder's
/// business (a caching embedder wraps a model), so this adapter stays stateless.
pub struct EmbeddingSimilarity<E> {
    embedder: E,
    measure: VectorSimilarity,
    name: String,
}

impl<E: Embedder> EmbeddingSimilarity<E> {
    /// Cosine similarity over `embedder`'s vectors, named after the model id.
    pub fn cosine(embedder: E) -> Self {
        Self::new(embedder, VectorSimilarity::Cosine)
    }

    /// `measure` over `embedder`'s vectors.
    pub fn new(embedder: E, measure: VectorSimilarity) -> Self {
        let name = embedder.identity().model_id.clone();
        EmbeddingSimilarity {
            embedder,
            measure,
            name,
        }
    }

    /// The wrapped embedder.
    pub fn embedder(&self) -> &E {
        &self.embedder
    }

    /// Embeds the distinct texts among `texts` once; returns the matrix and, per input, its row.
    fn embed_distinct(
        &self,
        texts: impl IntoIterator<Item = impl AsRef<str>>,
    ) -> Result<(Array2<f32>, Vec<usize>)> {
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut distinct: Vec<String> = Vec::new();
        let rows: Vec<usize> = texts
            .into_iter()
            .map(|t| {
                let t = t.as_ref();
                *index.entry(t.to_owned()).or_insert_with(|| {
                    distinct.push(t.to_owned());
                    distinct.len() - 1
                })
            })
            .collect();
        let refs: Vec<&str> = distinct.iter().map(String::as_str).collect();
        let mut vectors = if refs.is_empty() {
            Array2::zeros((0, self.embedder.dimension()))
        } else {
            self.embedder.embed(&refs)?
        };
        if vectors.nrows() != refs.len() {
            return Err(SageError::backend(
                format!("embedding with {}", self.name),
                format!(
                    "embedder returned {} rows for {} texts",
                    vectors.nrows(),
                    refs.len()
                ),
            ));
        }
        if self.measure == VectorSimilarity::Cosine {
            normalize_rows(&mut vectors);
        }
        Ok((vectors, rows))
    }

    fn compare(&self, a: ArrayView1<f32>, b: ArrayView1<f32>) -> f32 {
        match self.measure {
            // rows are already unit (or zero) vectors
            VectorSimilarity::Cosine => a.dot(&b),
            VectorSimilarity::L2 => l2_similarity(a, b),
        }
    }
}

impl<E: Embedder> Similarity for EmbeddingSimilarity<E> {
    fn name(&self) -> &str {
        &self.name
    }

    fn score(&self, reference: &str, candidate: &str) -> Result<f32> {
        Ok(self.score_pairs(&[(reference, candidate)])?[0])
    }

    fn score_pairs(&self, pairs: &[(&str, &str)]) -> Result<Vec<f32>> {
        let (vectors, rows) = self.embed_distinct(pairs.iter().flat_map(|(a, b)| [*a, *b]))?;
        Ok(rows
            .chunks_exact(2)
            .map(|ab| self.compare(vectors.row(ab[0]), vectors.row(ab[1])))
            .collect())
    }

    fn score_matrix(&self, references: &[&str], candidates: &[&str]) -> Result<Array2<f32>> {
        let (vectors, rows) = self.embed_distinct(references.iter().chain(candidates))?;
        let (ref_rows, cand_rows) = rows.split_at(references.len());
        let left = vectors.select(Axis(0), ref_rows);
        let right = vectors.select(Axis(0), cand_rows);
        Ok(match self.measure {
            VectorSimilarity::Cosine => left.dot(&right.t()),
            VectorSimilarity::L2 => {
                Array2::from_shape_fn((left.nrows(), right.nrows()), |(i, j)| {
                    l2_similarity(left.row(i), right.row(j))
                })
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;

    use ndarray::{array, Array2};

    use super::*;

    /// Letter-count vectors; records every text it is asked to embed.
    struct LetterCounts {
        identity: EmbedderIdentity,
        calls: AtomicUsize,
        seen: Mutex<Vec<String>>,
    }

    impl LetterCounts {
        fn new() -> Self {
            LetterCounts {
                identity: EmbedderIdentity {
                    model_id: "test/letters".into(),
                    revision: None,
                    pooling: "count".into(),
                    normalize: false,
                    max_length: 0,
                },
                calls: AtomicUsize::new(0),
                seen: Mutex::new(Vec::new()),
            }
        }
    }

    impl Embedder for LetterCounts {
        fn identity(&self) -> &EmbedderIdentity {
            &self.identity
        }
        fn dimension(&self) -> usize {
            3
        }
        fn embed(&self, texts: &[&str]) -> Result<Array2<f32>> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            self.seen
                .lock()
                .unwrap()
                .extend(texts.iter().map(|t| t.to_string()));
            Ok(Array2::from_shape_fn((texts.len(), 3), |(i, j)| {
                texts[i]
                    .chars()
                    .filter(|&c| c == ['a', 'b', 'c'][j])
                    .count() as f32
            }))
        }
    }

    #[test]
    fn each_distinct_text_is_embedded_once_per_call() {
        let sim = EmbeddingSimilarity::cosine(LetterCounts::new());
        let scores = sim
            .score_pairs(&[("ab", "ab"), ("ab", "c"), ("c", "ab"), ("aab", "c")])
            .unwrap();
        assert_eq!(sim.embedder().calls.load(Ordering::SeqCst), 1);
        assert_eq!(*sim.embedder().seen.lock().unwrap(), ["ab", "c", "aab"]);
        assert!((scores[0] - 1.0).abs() < 1e-6);
        assert_eq!(scores[1], 0.0);
        assert_eq!(scores[2], 0.0);
    }

    #[test]
    fn matrix_equals_pairs_and_single_scores() {
        let sim = EmbeddingSimilarity::cosine(LetterCounts::new());
        let rows = ["abc", "aab", "cc"];
        let cols = ["a", "bcb", "abc", ""];
        let m = sim.score_matrix(&rows, &cols).unwrap();
        for (i, r) in rows.iter().enumerate() {
            for (j, c) in cols.iter().enumerate() {
                assert!(
                    (m[[i, j]] - sim.score(r, c).unwrap()).abs() < 1e-6,
                    "{r} {c}"
                );
            }
        }
        let one_to_many = sim.score_one_to_many("abc", &cols).unwrap();
        assert!(one_to_many
            .iter()
            .zip(m.row(0))
            .all(|(a, b)| (a - b).abs() < 1e-6));
    }

    #[test]
    fn l2_similarity_is_evalranks() {
        let sim = EmbeddingSimilarity::new(LetterCounts::new(), VectorSimilarity::L2);
        // ‖(1,0,0) − (0,0,0)‖ = 1 → 1/2; identical → 1
        assert_eq!(sim.score("a", "").unwrap(), 0.5);
        assert_eq!(sim.score("ab", "ab").unwrap(), 1.0);
        let m = sim.score_matrix(&["a"], &["", "a"]).unwrap();
        assert_eq!(m, array![[0.5, 1.0]]);
    }

    #[test]
    fn vector_helpers() {
        assert!(
            (cosine(array![1.0, 0.0].view(), array![1.0, 1.0].view())
                - std::f32::consts::FRAC_1_SQRT_2)
                .abs()
                < 1e-7
        );
        assert_eq!(
            cosine(array![0.0, 0.0].view(), array![1.0, 1.0].view()),
            0.0
        );
        let mut m = array![[3.0f32, 4.0], [0.0, 0.0]];
        normalize_rows(&mut m);
        assert_eq!(m, array![[0.6, 0.8], [0.0, 0.0]]);
    }

    #[test]
    fn identity_cache_key_is_path_safe_and_distinguishes_settings() {
        let mut id = LetterCounts::new().identity;
        let a = id.cache_key();
        assert!(!a.contains('/'));
        id.normalize = true;
        assert_ne!(a, id.cache_key());
    }
}
