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

/// What a text is for. Asymmetric embedders (instruction prompts, a provider's `input_type`)
/// embed a query differently from the document it should find; symmetric tasks use
/// [`Role::Plain`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// A text compared with texts of its own kind (STS, clustering, classification, SAGE's
    /// robustness and sensitivity).
    #[default]
    Plain,
    /// A search query (retrieval and reranking).
    Query,
    /// A text searched for (a corpus document, a reranking candidate).
    Document,
}

impl Role {
    /// `plain`, `query`, `document`.
    pub fn name(self) -> &'static str {
        match self {
            Role::Plain => "plain",
            Role::Query => "query",
            Role::Document => "document",
        }
    }
}

/// The wire protocols a remote model spec `PROTOCOL:MODEL[@BASE_URL]` may name.
pub const REMOTE_PROTOCOLS: [&str; 4] = ["openai", "voyage", "cohere", "gemini"];

/// `PROTOCOL:MODEL` of a spec written as a remote model (`openai:m@http://host/v1` gives
/// `openai:m`), never its URL; `None` for anything else (a path, a hub id, a URL). The one
/// reading of the spec's shape that the parser (sage-embed) and bench-all's labels share.
pub fn remote_model_name(spec: &str) -> Option<&str> {
    let (protocol, rest) = spec.split_once(':')?;
    if !REMOTE_PROTOCOLS.contains(&protocol) || rest.starts_with("//") {
        return None;
    }
    let end = spec
        .find("@http://")
        .or_else(|| spec.find("@https://"))
        .unwrap_or(spec.len());
    Some(&spec[..end])
}

/// Whether `spec` names a model behind a server: it is written as `PROTOCOL:MODEL[@BASE_URL]`
/// and no file of that name exists. The one test every loader and bench-all's planner share.
pub fn is_remote_spec(spec: &str) -> bool {
    remote_model_name(spec).is_some() && !std::path::Path::new(spec).exists()
}

/// What a remote embedder was asked for and what it cost: recorded in every result that used one.
/// Local models have none.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RemoteUsage {
    /// Wire protocol (`openai`, `voyage`, `cohere`, `gemini`).
    pub protocol: String,
    /// The provider's model name.
    pub model: String,
    /// Server host (and port), without credentials or path.
    pub host: String,
    /// Vector width returned.
    pub dimensions: usize,
    /// HTTP requests that got an answer, retried ones included.
    pub requests: u64,
    /// Texts sent (each counted once, however often retried).
    pub texts: u64,
    /// Tokens sent (the server's count where it reports one, else the client's estimate).
    pub tokens: u64,
    /// Requests repeated after a 429, a 5xx, a time-out or a broken connection.
    pub retries: u64,
    /// Texts over the provider's input limit, truncated (by the client or, as documented, by the
    /// provider).
    pub truncated: u64,
    /// `tokens` priced with the configured USD per million tokens; `None` without a price.
    pub cost_usd: Option<f64>,
}

/// Where an embedder sends the rows of one call as they are ready: `(first row, rows)`.
pub type BatchSink<'a> = dyn FnMut(usize, Array2<f32>) -> Result<()> + 'a;

/// What a lower-precision model's `pooling` carries after the pooling's name
/// (`mean:precision=int8`): written by the model, read by [`EmbedderIdentity::precision`].
pub const PRECISION_MARK: &str = ":precision=";

impl EmbedderIdentity {
    /// The lower precision the model computes in (`bf16`, `int8`); `None` at full precision.
    pub fn precision(&self) -> Option<&str> {
        let (_, rest) = self.pooling.split_once(PRECISION_MARK)?;
        Some(rest.split(':').next().unwrap_or(rest))
    }

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

    /// The cache key of texts embedded in a role that maps to `variant` (a prompt, an
    /// `input_type`; see [`Embedder::role_variant`]). A role with no variant shares the plain
    /// key, so the same vectors are not stored twice.
    pub fn cache_key_for(&self, variant: Option<&str>) -> String {
        match variant {
            None => self.cache_key(),
            Some(v) => format!("{}#role={v}", self.cache_key()),
        }
    }
}

/// Turns texts into vectors.
///
/// Only [`Embedder::identity`], [`Embedder::embed`] and [`Embedder::dimension`] are required.
/// Embedders that treat queries and documents differently override [`Embedder::role_variant`]
/// and [`Embedder::embed_as`]; remote ones, which answer in many requests, override
/// [`Embedder::embed_batches`] so that a cache can keep each answer the moment it arrives.
pub trait Embedder: Send + Sync {
    /// What this embedder is (see [`EmbedderIdentity`]).
    fn identity(&self) -> &EmbedderIdentity;

    /// One row per text, in input order, embedded as [`Role::Plain`]. Every row has the same
    /// width ([`Embedder::dimension`]).
    fn embed(&self, texts: &[&str]) -> Result<Array2<f32>>;

    /// Width of the vectors.
    fn dimension(&self) -> usize;

    /// What `role` changes in this embedder's input (the prompt prepended, the provider's
    /// `input_type`), as a short stable string; `None` when the role is embedded exactly as plain
    /// text. Part of the identity: caches key on it.
    fn role_variant(&self, role: Role) -> Option<String> {
        let _ = role;
        None
    }

    /// Like [`Embedder::embed`], for texts in `role`.
    fn embed_as(&self, texts: &[&str], role: Role) -> Result<Array2<f32>> {
        let _ = role;
        self.embed(texts)
    }

    /// Embeds `texts` in `role` and hands the rows to `sink` as they become ready, in any order;
    /// every row is delivered exactly once. Returns the first error, after delivering every row
    /// that was ready. The default embeds all texts at once.
    fn embed_batches(&self, texts: &[&str], role: Role, sink: &mut BatchSink<'_>) -> Result<()> {
        sink(0, self.embed_as(texts, role)?)
    }

    /// Whether [`Embedder::embed_batches`] delivers many partial answers (a remote embedder):
    /// callers then hand it all their texts at once instead of slicing them.
    fn delivers_batches(&self) -> bool {
        false
    }

    /// Requests, tokens and cost so far, for embedders that call a paid or remote service.
    fn remote_usage(&self) -> Option<RemoteUsage> {
        None
    }

    /// Tokens the model reads of each text (special tokens included, cut at its window), for a
    /// rate per token; `None` when it cannot say.
    fn count_tokens(&self, texts: &[&str]) -> Option<Vec<usize>> {
        let _ = texts;
        None
    }

    /// Seconds the model took to load (weights read, tokenizer built); `None` when unknown.
    fn load_seconds(&self) -> Option<f64> {
        None
    }

    /// Where and in what precision the model computes (`cpu f32`, `cuda:0 f16`; `cpu f32
    /// amx-bf16x3` where its dense products ran on AMX tiles); `None` when it cannot say (a
    /// remote model, a Python encoder).
    fn compute(&self) -> Option<String> {
        None
    }

    /// Whether the model was trained for Matryoshka truncation (its first N values a vector of
    /// their own: MatryoshkaLoss, or a card that says so): `Some(false)` when its files say
    /// nothing of it, `None` when it cannot tell (a remote model, a Python encoder). The
    /// compression suite cuts every model's vectors and notes where this is not `Some(true)`.
    fn matryoshka_trained(&self) -> Option<bool> {
        None
    }

    /// The same model computing at full precision (float32), where this one computes its
    /// products at a lower one (`--precision bf16|int8`): the compression suite scores against
    /// it, so that a precision's retention is against float32. `None` for a model at full
    /// precision. A twin loaded when first asked for may fail to load: that is the error.
    fn full_precision(&self) -> Result<Option<&dyn Embedder>> {
        Ok(None)
    }

    /// The model behind this one when this is a cache in front of it, for a caller that times the
    /// model itself (the throughput suite); `None` for a model. A cache that only plans gives a
    /// view that counts every text it is given as sent, and sends nothing.
    fn uncached(&self) -> Option<&dyn Embedder> {
        None
    }
}

macro_rules! forward_embedder {
    ($($t:tt)*) => {
        $($t)* {
            fn identity(&self) -> &EmbedderIdentity {
                (**self).identity()
            }
            fn embed(&self, texts: &[&str]) -> Result<Array2<f32>> {
                (**self).embed(texts)
            }
            fn dimension(&self) -> usize {
                (**self).dimension()
            }
            fn role_variant(&self, role: Role) -> Option<String> {
                (**self).role_variant(role)
            }
            fn embed_as(&self, texts: &[&str], role: Role) -> Result<Array2<f32>> {
                (**self).embed_as(texts, role)
            }
            fn embed_batches(&self, texts: &[&str], role: Role, sink: &mut BatchSink<'_>) -> Result<()> {
                (**self).embed_batches(texts, role, sink)
            }
            fn delivers_batches(&self) -> bool {
                (**self).delivers_batches()
            }
            fn remote_usage(&self) -> Option<RemoteUsage> {
                (**self).remote_usage()
            }
            fn count_tokens(&self, texts: &[&str]) -> Option<Vec<usize>> {
                (**self).count_tokens(texts)
            }
            fn load_seconds(&self) -> Option<f64> {
                (**self).load_seconds()
            }
            fn compute(&self) -> Option<String> {
                (**self).compute()
            }
            fn matryoshka_trained(&self) -> Option<bool> {
                (**self).matryoshka_trained()
            }
            fn full_precision(&self) -> Result<Option<&dyn Embedder>> {
                (**self).full_precision()
            }
            fn uncached(&self) -> Option<&dyn Embedder> {
                (**self).uncached()
            }
        }
    };
}

forward_embedder!(impl<E: Embedder + ?Sized> Embedder for &E);
forward_embedder!(impl<E: Embedder + ?Sized> Embedder for Box<E>);
forward_embedder!(impl<E: Embedder + ?Sized> Embedder for std::sync::Arc<E>);

/// How two vectors are compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum VectorSimilarity {
    /// `a·b / (‖a‖‖b‖)`; 0 when either vector is zero. Also read as `cos`, the command line's
    /// older spelling.
    #[default]
    #[serde(alias = "cos")]
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
        role: Role,
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
            self.embedder.embed_as(&refs, role)?
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
        let (vectors, rows) =
            self.embed_distinct(pairs.iter().flat_map(|(a, b)| [*a, *b]), Role::Plain)?;
        Ok(rows
            .chunks_exact(2)
            .map(|ab| self.compare(vectors.row(ab[0]), vectors.row(ab[1])))
            .collect())
    }

    fn score_matrix(&self, references: &[&str], candidates: &[&str]) -> Result<Array2<f32>> {
        let (vectors, rows) =
            self.embed_distinct(references.iter().chain(candidates), Role::Plain)?;
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

    /// Documents (the references) are embedded in [`Role::Document`] and queries (the
    /// candidates) in [`Role::Query`], so asymmetric models see what they were trained on.
    fn score_pairs_for_ranking(&self, pairs: &[(&str, &str)]) -> Result<Vec<f32>> {
        let (documents, document_rows) =
            self.embed_distinct(pairs.iter().map(|(d, _)| *d), Role::Document)?;
        let (queries, query_rows) =
            self.embed_distinct(pairs.iter().map(|(_, q)| *q), Role::Query)?;
        Ok(document_rows
            .iter()
            .zip(&query_rows)
            .map(|(&d, &q)| self.compare(documents.row(d), queries.row(q)))
            .collect())
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

    /// Embeds a text as one axis per role, so a score shows which roles its two texts had.
    struct RoleAxes(EmbedderIdentity);

    impl Embedder for RoleAxes {
        fn identity(&self) -> &EmbedderIdentity {
            &self.0
        }
        fn dimension(&self) -> usize {
            3
        }
        fn embed(&self, texts: &[&str]) -> Result<Array2<f32>> {
            self.embed_as(texts, Role::Plain)
        }
        fn role_variant(&self, role: Role) -> Option<String> {
            (role != Role::Plain).then(|| role.name().to_owned())
        }
        fn embed_as(&self, texts: &[&str], role: Role) -> Result<Array2<f32>> {
            let axis = match role {
                Role::Plain => 0,
                Role::Query => 1,
                Role::Document => 2,
            };
            Ok(Array2::from_shape_fn((texts.len(), 3), |(_, j)| {
                if j == axis {
                    1.0
                } else {
                    0.1
                }
            }))
        }
    }

    #[test]
    fn ranking_embeds_documents_and_queries_in_their_roles() {
        let sim = EmbeddingSimilarity::cosine(RoleAxes(LetterCounts::new().identity));
        // (document, query): different roles, so not the identical-vector score of 1
        let ranked = sim.score_pairs_for_ranking(&[("d", "q")]).unwrap();
        let plain = sim.score_pairs(&[("d", "q")]).unwrap();
        assert!((plain[0] - 1.0).abs() < 1e-6, "plain texts share a role");
        let expected = cosine(
            ndarray::array![0.1, 0.1, 1.0].view(),
            ndarray::array![0.1, 1.0, 0.1].view(),
        );
        assert!(
            (ranked[0] - expected).abs() < 1e-6,
            "{ranked:?} vs {expected}"
        );
        let id = LetterCounts::new().identity;
        assert_ne!(id.cache_key_for(Some("query")), id.cache_key());
        assert_eq!(id.cache_key_for(None), id.cache_key());
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
