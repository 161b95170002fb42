//! # align-sim
//!
//! The five criteria of Mahajan, Bansal and Karmaker, "The Daunting Dilemma with Sentence
//! Encoders" (published as ALIGN-SIM), over any [`Similarity`](sage_core::Similarity) — classical metric or embedding
//! model alike.
//!
//! 1. **Paraphrase**: mean similarity of paraphrase pairs minus that of random pairs (the
//!    negative pairs with their second sentences shuffled among the negatives, seeded).
//! 2. **Synonym replacement** (n = 1, 2, 3 WordNet synonyms): `α · mean sim(S, S_syn)`, with
//!    `α = 1 − mean random-pair similarity` of the same similarity on the same dataset.
//! 3. **Paraphrase vs antonym**: `d = sim(S, S_para) − sim(S, S_anto)`; shares of `d > ε` for
//!    ε ∈ {0, 0.01, 0.05, 0.1} and a histogram of d.
//! 4. **Negation** (AFIN): `α · mean sim(negated, affirmative)`, α from AFIN's own random
//!    pairing (affirmatives shuffled among the sentences, seeded).
//! 5. **Paraphrase vs jumbling** (n = 1, 2, 3 word swaps): d, shares and histogram as in 3.
//!
//! Every comparison a criterion makes is scored in **one** `score_pairs` call, so batch-normalised
//! metrics (BM25's min–max) put both sides of each difference on the same scale. S is the first
//! sentence of a paraphrase pair and S_para the second. Samples where a WordNet perturbation
//! finds nothing to replace are left out and counted. Rows are sampled with sage-data's seeded
//! sampler (up to 1,750 per dataset by default) and recorded.
#![deny(missing_docs)]

mod criteria;

pub use criteria::{
    evaluate, evaluate_dataset, histogram, negation, paraphrase, shares_above, AlignSimReport,
    DatasetReport, DifferenceReport, Histogram, NegationReport, Options, ParaphraseReport,
    SynonymReport, DEFAULT_DATASETS, DEFAULT_MAX_ROWS, EPSILONS,
};

/// Errors of this crate: the error every task over perturbed data shares.
pub type AlignSimError = sage_task::TaskError;

/// Result alias of this crate.
pub type Result<T, E = AlignSimError> = std::result::Result<T, E>;
