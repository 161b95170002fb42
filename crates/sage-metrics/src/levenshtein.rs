//! Levenshtein ratio (python-Levenshtein's `ratio`), with a bit-parallel LCS.

use std::cell::RefCell;

use rayon::prelude::*;
use sage_core::{Result, Similarity};

use crate::bit_parallel::WordsKernel;
use crate::distinct::DistinctTexts;
use crate::lcs_lanes::{lcs_lanes, LanePattern, LaneText, LanesKernel, LanesScratch, MOST_WORDS};

/// `Levenshtein.ratio(a, b)` from python-Levenshtein ≥ 0.18 (rapidfuzz's normalised Indel
/// similarity): `1 − indel(a, b) / (|a| + |b|)` over Unicode code points, where the indel
/// distance counts insertions and deletions only (= |a| + |b| − 2·LCS). Two empty strings score 1.
///
/// The LCS is Hyyrö's bit-parallel algorithm over 64-bit words, O(⌈m/64⌉·n) after stripping the
/// common prefix and suffix, a pattern past 4 words advanced 4 or 8 words per vector
/// instruction (`bit_parallel`); a perturbed copy of a document (the SAGE robustness case) leaves long
/// common stretches, which this makes nearly free. Buffers live in thread-local scratch space, so
/// the hot loop does not allocate once warm.
#[derive(Clone, Copy, Debug, Default)]
pub struct LevenshteinRatio;

impl Similarity for LevenshteinRatio {
    fn name(&self) -> &str {
        "levenshtein"
    }

    fn score(&self, reference: &str, candidate: &str) -> Result<f32> {
        Ok(levenshtein_ratio(reference, candidate) as f32)
    }

    /// A text that several pairs share is decoded to code points once: a retrieval batch
    /// meets every document once per query, and decoding per pair was ~30% of a classical
    /// retrieval job (perf). A text of one pair (a robustness document's perturbed copy) is
    /// decoded when its pair is scored, so memory stays that of the shared texts. Short texts
    /// that meet the same shared text (queries against a document, a clustering subset's
    /// sentences) are compared with it a vector of patterns at a time (`lcs_lanes`).
    fn score_pairs(&self, pairs: &[(&str, &str)]) -> Result<Vec<f32>> {
        let mut texts = DistinctTexts::with_capacity(pairs.len());
        let rows = texts.number_pairs(pairs);
        let mut uses = vec![0u32; texts.distinct().len()];
        for &(a, b) in &rows {
            uses[a] += 1;
            uses[b] += 1;
        }
        let shared: Vec<Option<Vec<char>>> = texts
            .distinct()
            .par_iter()
            .zip(&uses)
            .map(|(text, &uses)| (uses > 1).then(|| text.chars().collect()))
            .collect();
        let plan = LanesKernel::best().map(|kernel| LanePlan::new(&rows, &shared, kernel));
        let batched = plan.as_ref().map(|plan| plan.batched_pairs(rows.len()));
        let mut scores: Vec<f32> = rows
            .par_iter()
            .enumerate()
            .map(|(pair, &(a, b))| {
                if batched.as_ref().is_some_and(|batched| batched[pair]) {
                    return f32::NAN;
                }
                let distinct = texts.distinct();
                scratch_ratio((&shared[a], distinct[a]), (&shared[b], distinct[b])) as f32
            })
            .collect();
        if let Some(plan) = plan {
            for (pair, score) in plan.scores(&shared) {
                scores[pair as usize] = score;
            }
        }
        Ok(scores)
    }
}

/// The pairs that take the vector-of-patterns path, in batches: both texts shared by several
/// pairs (so decoded), the shorter of 1 to 256 code points, and at least one other such pair
/// meeting the same longer text.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
struct LanePlan {
    kernel: LanesKernel,
    /// (pair, its shorter text), grouped by longer text and within it by the shorter's words,
    /// so that a batch's patterns have about the same length.
    entries: Vec<(u32, u32)>,
    batches: Vec<LaneBatch>,
}

/// Up to a vector's lanes of [`LanePlan::entries`], all meeting one longer text.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
struct LaneBatch {
    /// The longer text (a number of the shared texts).
    text: u32,
    start: u32,
    len: u32,
}

#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
impl LanePlan {
    fn new(rows: &[(usize, usize)], shared: &[Option<Vec<char>>], kernel: LanesKernel) -> Self {
        let lanes = kernel.lanes();
        // (pair, pattern, text) of every candidate, then a counting sort by text: no vector
        // per text (a clustering batch is 2 million pairs over 2,000 texts)
        let mut candidates: Vec<(u32, u32, u32)> = Vec::new();
        let mut per_text = vec![0u32; shared.len() + 1];
        for (pair, &(a, b)) in rows.iter().enumerate() {
            let (Some(x), Some(y)) = (&shared[a], &shared[b]) else {
                continue;
            };
            let (pattern, text, length) = if x.len() <= y.len() {
                (a, b, x.len())
            } else {
                (b, a, y.len())
            };
            if (1..=64 * MOST_WORDS).contains(&length) {
                let number = |n: usize| u32::try_from(n).expect("a batch of under 2^32 pairs");
                candidates.push((number(pair), number(pattern), number(text)));
                per_text[text + 1] += 1;
            }
        }
        for t in 1..per_text.len() {
            per_text[t] += per_text[t - 1];
        }
        let mut next = per_text.clone();
        let mut entries = vec![(0u32, 0u32); candidates.len()];
        for &(pair, pattern, text) in &candidates {
            let slot = &mut next[text as usize];
            entries[*slot as usize] = (pair, pattern);
            *slot += 1;
        }
        let words = |p: u32| decoded(shared, p as usize).len().div_ceil(64);
        let mut batches = Vec::new();
        for text in 0..shared.len() {
            let (start, end) = (per_text[text] as usize, per_text[text + 1] as usize);
            // a text met by one short pattern gains nothing from lanes
            if end - start < 2 {
                continue;
            }
            entries[start..end].sort_unstable_by_key(|&(pair, pattern)| (words(pattern), pair));
            for from in (start..end).step_by(lanes) {
                batches.push(LaneBatch {
                    text: text as u32,
                    start: from as u32,
                    len: (end - from).min(lanes) as u32,
                });
            }
        }
        LanePlan {
            kernel,
            entries,
            batches,
        }
    }

    /// Which of the `pairs` pairs the batches score.
    fn batched_pairs(&self, pairs: usize) -> Vec<bool> {
        let mut batched = vec![false; pairs];
        for batch in &self.batches {
            for &(pair, _) in self.entries_of(batch) {
                batched[pair as usize] = true;
            }
        }
        batched
    }

    fn entries_of(&self, batch: &LaneBatch) -> &[(u32, u32)] {
        &self.entries[batch.start as usize..][..batch.len as usize]
    }

    /// (pair, ratio) of every batched pair; each text is read as the lanes read it once, for
    /// all its batches.
    fn scores(&self, shared: &[Option<Vec<char>>]) -> Vec<(u32, f32)> {
        let mut is_pattern = vec![false; shared.len()];
        for batch in &self.batches {
            for &(_, p) in self.entries_of(batch) {
                is_pattern[p as usize] = true;
            }
        }
        let patterns: Vec<Option<LanePattern>> = shared
            .par_iter()
            .zip(&is_pattern)
            .map(|(chars, &is_pattern)| {
                is_pattern.then(|| LanePattern::new(chars.as_deref().expect("decoded")))
            })
            .collect();
        let pattern = |p: u32| patterns[p as usize].as_ref().expect("built above");
        // the batches of one text are consecutive: split them by text, a task per text
        let by_text: Vec<&[LaneBatch]> = self.batches.chunk_by(|a, b| a.text == b.text).collect();
        by_text
            .par_iter()
            .flat_map_iter(|batches| {
                let text_id = batches[0].text as usize;
                let text = decoded(shared, text_id);
                let lane_text = LaneText::new(text);
                let mut out = Vec::with_capacity(batches.len() * self.kernel.lanes());
                LANES_SCRATCH.with(|scratch| {
                    let scratch = &mut scratch.borrow_mut();
                    let mut lanes: Vec<&LanePattern> = Vec::with_capacity(self.kernel.lanes());
                    let mut lcs = vec![0usize; self.kernel.lanes()];
                    for batch in *batches {
                        let entries = self.entries_of(batch);
                        lanes.clear();
                        lanes.extend(entries.iter().map(|&(_, p)| pattern(p)));
                        let lcs = &mut lcs[..entries.len()];
                        lcs_lanes(self.kernel, &lane_text, &lanes, lcs, scratch);
                        for ((&(pair, _), lane), &lcs) in entries.iter().zip(&lanes).zip(&*lcs) {
                            let ratio = ratio_from_lcs(lcs, lane.len() + text.len());
                            out.push((pair, ratio as f32));
                        }
                    }
                });
                out
            })
            .collect()
    }
}

/// Text `t`'s code points, decoded because several pairs share it.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn decoded(shared: &[Option<Vec<char>>], t: usize) -> &[char] {
    shared[t].as_deref().expect("batched texts are decoded")
}

/// The shared decoding of `text`, else `text` decoded into `buffer`.
fn code_points<'t>(
    shared: &'t Option<Vec<char>>,
    text: &str,
    buffer: &'t mut Vec<char>,
) -> &'t [char] {
    match shared {
        Some(chars) => chars,
        None => {
            buffer.clear();
            buffer.extend(text.chars());
            buffer
        }
    }
}

/// The ratio in f64 (see [`LevenshteinRatio`]).
pub fn levenshtein_ratio(a: &str, b: &str) -> f64 {
    scratch_ratio((&None, a), (&None, b))
}

/// The ratio of two texts, each given as (its shared decoding if any, the text), decoded and
/// compared in this thread's scratch buffers.
fn scratch_ratio(a: (&Option<Vec<char>>, &str), b: (&Option<Vec<char>>, &str)) -> f64 {
    SCRATCH.with(|scratch| {
        let Scratch {
            a: a_buffer,
            b: b_buffer,
            masks,
        } = &mut *scratch.borrow_mut();
        let a_chars = code_points(a.0, a.1, a_buffer);
        let b_chars = code_points(b.0, b.1, b_buffer);
        ratio_of(a_chars, b_chars, masks)
    })
}

fn ratio_of(a: &[char], b: &[char], masks: &mut Masks) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    ratio_from_lcs(lcs_len(a, b, masks), a.len() + b.len())
}

/// `2·LCS / (|a| + |b|)`, the ratio of two texts (not both empty) of `total` code points.
fn ratio_from_lcs(lcs: usize, total: usize) -> f64 {
    (2 * lcs) as f64 / total as f64
}

/// An upper bound of the bit-parallel steps [`levenshtein_ratio`] takes on `a` and `b`:
/// ⌈shorter / 64⌉ × longer, in code points (about a nanosecond each on one core). Two 5 MB texts
/// are ~4·10¹¹ steps, minutes of work: callers state this up front and may refuse.
pub fn levenshtein_work(a: &str, b: &str) -> u64 {
    let (m, n) = (a.chars().count() as u64, b.chars().count() as u64);
    m.min(n).div_ceil(64) * m.max(n)
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
    static LANES_SCRATCH: RefCell<LanesScratch> = RefCell::new(LanesScratch::default());
}

#[derive(Default)]
struct Scratch {
    a: Vec<char>,
    b: Vec<char>,
    masks: Masks,
}

/// The bit-parallel LCS's buffers.
#[derive(Default)]
struct Masks {
    /// Match masks of ASCII characters: `ascii[c * stride + w]` (`stride`: the state's words,
    /// rounded up to whole vectors past 4).
    ascii: Vec<u64>,
    /// Non-ASCII characters of the pattern, sorted, with their masks in `other_masks`.
    other_chars: Vec<char>,
    other_masks: Vec<u64>,
    state: Vec<u64>,
}

impl Masks {
    /// The pattern's match masks of `c` (`words` of them: the table's stride), or `None`
    /// where `c` is not in it.
    #[inline]
    fn masks_of(&self, c: char, words: usize) -> Option<&[u64]> {
        if c.is_ascii() {
            let row = c as usize * words;
            Some(&self.ascii[row..row + words])
        } else {
            let k = self.other_chars.binary_search(&c).ok()?;
            Some(&self.other_masks[k * words..(k + 1) * words])
        }
    }
}

/// The final state for a pattern of at most `W` × 64 code points, in registers: a query
/// against a document (SAGE retrieval) is one or two words, where the slice-based loop's
/// bounds checks and carry bookkeeping were most of the work (perf).
fn short_pattern_state<const W: usize>(text: &[char], s: &Masks) -> [u64; W] {
    let mut state = [!0u64; W];
    for &c in text {
        let Some(masks) = s.masks_of(c, W) else {
            continue;
        };
        let masks: &[u64; W] = masks.try_into().expect("W masks per character");
        let mut carry = false;
        for (word, &m) in state.iter_mut().zip(masks) {
            let u = *word & m;
            let (sum, c1) = word.overflowing_add(u);
            let (sum, c2) = sum.overflowing_add(u64::from(carry));
            carry = c1 | c2;
            *word = sum | (*word & !u);
        }
    }
    state
}

fn lcs_len(a: &[char], b: &[char], s: &mut Masks) -> usize {
    lcs_len_with(a, b, s, WordsKernel::best())
}

fn lcs_len_with(a: &[char], b: &[char], s: &mut Masks, kernel: WordsKernel) -> usize {
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let a_mid = prefix..a.len() - suffix;
    let b_mid = prefix..b.len() - suffix;
    let common = prefix + suffix;
    if a_mid.is_empty() || b_mid.is_empty() {
        return common;
    }
    // The shorter middle is the bit pattern: fewer words per step.
    let (pattern, text) = if a_mid.len() <= b_mid.len() {
        (&a[a_mid], &b[b_mid])
    } else {
        (&b[b_mid], &a[a_mid])
    };
    let words = pattern.len().div_ceil(64);
    // up to 4 words stay in registers; longer states go through the kernel's vectors, so
    // their rows of masks (and the state) are whole vectors
    let stride = if words <= 4 {
        words
    } else {
        words.next_multiple_of(kernel.lanes())
    };

    s.ascii.clear();
    s.ascii.resize(128 * stride, 0);
    s.other_chars.clear();
    s.other_chars
        .extend(pattern.iter().copied().filter(|c| !c.is_ascii()));
    s.other_chars.sort_unstable();
    s.other_chars.dedup();
    s.other_masks.clear();
    s.other_masks.resize(s.other_chars.len() * stride, 0);
    for (i, &c) in pattern.iter().enumerate() {
        let (table, row) = if c.is_ascii() {
            (&mut s.ascii, c as usize)
        } else {
            (
                &mut s.other_masks,
                s.other_chars.binary_search(&c).expect("collected above"),
            )
        };
        table[row * stride + i / 64] |= 1u64 << (i % 64);
    }

    s.state.clear();
    match words {
        1 => s.state.extend(short_pattern_state::<1>(text, s)),
        2 => s.state.extend(short_pattern_state::<2>(text, s)),
        3 => s.state.extend(short_pattern_state::<3>(text, s)),
        4 => s.state.extend(short_pattern_state::<4>(text, s)),
        _ => {
            let mut state = std::mem::take(&mut s.state);
            // the words past the pattern start at 0: see `WordsKernel::lanes`
            state.resize(words, !0u64);
            state.resize(stride, 0);
            let masks: &Masks = s;
            kernel.run(&mut state, text, |c| masks.masks_of(c, stride));
            s.state = state;
        }
    }
    let tail_bits = pattern.len() % 64;
    let zeros: usize = s
        .state
        .iter()
        .take(words)
        .enumerate()
        .map(|(w, &word)| {
            let valid = if w == words - 1 && tail_bits != 0 {
                (1u64 << tail_bits) - 1
            } else {
                !0
            };
            (!word & valid).count_ones() as usize
        })
        .sum();
    common + zeros
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn lcs_dp(a: &str, b: &str) -> usize {
        let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
        let mut prev = vec![0usize; b.len() + 1];
        for x in &a {
            let mut cur = vec![0usize; b.len() + 1];
            for (j, y) in b.iter().enumerate() {
                cur[j + 1] = if x == y {
                    prev[j] + 1
                } else {
                    prev[j + 1].max(cur[j])
                };
            }
            prev = cur;
        }
        prev[b.len()]
    }

    fn ratio_dp(a: &str, b: &str) -> f64 {
        let total = a.chars().count() + b.chars().count();
        if total == 0 {
            1.0
        } else {
            2.0 * lcs_dp(a, b) as f64 / total as f64
        }
    }

    #[test]
    fn multi_word_patterns_match_dynamic_programming() {
        let a: String = (0..300)
            .map(|i| char::from(b'a' + (i * 7 % 26) as u8))
            .collect();
        let b: String = (0..250)
            .map(|i| char::from(b'a' + (i * 11 % 26) as u8))
            .collect();
        assert!((levenshtein_ratio(&a, &b) - ratio_dp(&a, &b)).abs() < 1e-12);
    }

    fn lcs_with(a: &str, b: &str, kernel: WordsKernel) -> usize {
        let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
        lcs_len_with(&a, &b, &mut Masks::default(), kernel)
    }

    /// Patterns of 5 to 66 words through every kernel this CPU has: the blocked carry chain
    /// and its remainder, the vectors' padding words, states in registers and in memory, and
    /// carries across all-ones words (a sparse pattern against a text that matches it only
    /// at its end).
    #[test]
    fn long_patterns_match_dynamic_programming() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(29);
        let alphabet: Vec<char> = "abcdeé🙂 \u{301}".chars().collect();
        let mut cases: Vec<(String, String)> = [
            (577, 700),
            (1024, 1100),
            (1280, 900),
            (300, 420),
            (4200, 4500),
        ]
        .into_iter()
        .map(|(m, n)| {
            let mut draw = |len: usize| -> String {
                (0..len)
                    .map(|_| alphabet[rng.gen_range(0..alphabet.len())])
                    .collect()
            };
            (draw(m), draw(n))
        })
        .collect();
        let sparse: String = (0..900)
            .map(|i| if i % 97 == 0 { 'a' } else { 'b' })
            .collect();
        cases.push(("a".repeat(700), sparse.clone()));
        cases.push((sparse, "b".repeat(640) + &"a".repeat(300)));
        for kernel in WordsKernel::available() {
            for (a, b) in &cases {
                assert_eq!(
                    lcs_with(a, b, kernel),
                    lcs_dp(a, b),
                    "{kernel:?}: {}x{}",
                    a.chars().count(),
                    b.chars().count()
                );
            }
        }
    }

    /// Patterns in vector lanes give the one-pair LCS: every kernel, batches of 1 to a full
    /// vector, patterns of 1 to 4 words of different lengths in one batch, ASCII and other
    /// characters, in the text or only in a pattern, texts shorter than their patterns.
    #[test]
    fn patterns_in_lanes_give_the_one_pair_lcs() {
        use crate::lcs_lanes::{lcs_lanes, LanePattern, LaneText, LanesKernel, LanesScratch};
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(47);
        let alphabet: Vec<char> = "abcde xyzé🙂\u{301}".chars().collect();
        let draw = |rng: &mut rand::rngs::StdRng, len: usize| -> Vec<char> {
            (0..len)
                .map(|_| alphabet[rng.gen_range(0..alphabet.len())])
                .collect()
        };
        if LanesKernel::available().is_empty() {
            sage_test_env::skip("Levenshtein's patterns in lanes", "no AVX2 on this CPU");
            return;
        }
        let mut scratch = LanesScratch::default();
        for kernel in LanesKernel::available() {
            for round in 0..60 {
                let length = rng.gen_range(0..700);
                let text = draw(&mut rng, length);
                let count = 1 + round % kernel.lanes();
                let patterns: Vec<Vec<char>> = (0..count)
                    .map(|_| {
                        let len = match rng.gen_range(0..4) {
                            0 => rng.gen_range(1..=64),
                            1 => rng.gen_range(65..=128),
                            _ => rng.gen_range(1..=256),
                        };
                        draw(&mut rng, len)
                    })
                    .collect();
                let built: Vec<LanePattern> =
                    patterns.iter().map(|p| LanePattern::new(p)).collect();
                let views: Vec<&LanePattern> = built.iter().collect();
                let mut lcs = vec![0; views.len()];
                lcs_lanes(
                    kernel,
                    &LaneText::new(&text),
                    &views,
                    &mut lcs,
                    &mut scratch,
                );
                for (pattern, &got) in patterns.iter().zip(&lcs) {
                    let want =
                        lcs_len_with(pattern, &text, &mut Masks::default(), WordsKernel::Scalar);
                    assert_eq!(got, want, "{kernel:?}, round {round}");
                }
            }
        }
    }

    /// The plan batches exactly the pairs whose short text meets a text two or more such
    /// pairs share, each once, and leaves the rest to the one-pair path.
    #[test]
    fn the_lane_plan_batches_shared_texts_only() {
        let Some(kernel) = LanesKernel::best() else {
            sage_test_env::skip("Levenshtein's lane plan", "no AVX2 on this CPU");
            return;
        };
        let decode = |t: &str| Some(t.chars().collect::<Vec<char>>());
        let long = "a document long enough to be the text of every short one, ".repeat(6);
        // 0: the long text; 1-3: short texts; 4: a long text met by one short text; 5: empty
        let shared = vec![
            decode(&long),
            decode("query one"),
            decode("query two"),
            decode("the third"),
            decode(&long.to_uppercase()),
            decode(""),
        ];
        // pairs 0-2 share text 0; pair 3 meets text 4 alone; pair 4 has an empty text; pair
        // 5 is two long texts (neither short enough); pair 6 the other way round from pair 0
        let rows = [(0, 1), (2, 0), (0, 3), (4, 1), (0, 5), (0, 4), (1, 0)];
        let plan = LanePlan::new(&rows, &shared, kernel);
        let batched = plan.batched_pairs(rows.len());
        assert_eq!(batched, [true, true, true, false, false, false, true]);
        let mut scored: Vec<u32> = plan.scores(&shared).into_iter().map(|(p, _)| p).collect();
        scored.sort_unstable();
        assert_eq!(scored, [0, 1, 2, 6]);
    }

    /// A retrieval batch (every query against every document) scores each pair as alone.
    #[test]
    fn queries_against_documents_score_as_alone() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(53);
        let words = [
            "protein", "cell", "the", "of", "été", "résumé", "🙂", "gene", "a",
        ];
        let sentence = |rng: &mut rand::rngs::StdRng, n: usize| -> String {
            (0..n)
                .map(|_| words[rng.gen_range(0..words.len())])
                .collect::<Vec<_>>()
                .join(" ")
        };
        let documents: Vec<String> = (0..9).map(|_| sentence(&mut rng, 150)).collect();
        let queries: Vec<String> = (0..11).map(|i| sentence(&mut rng, 1 + i * 4)).collect();
        let pairs: Vec<(&str, &str)> = documents
            .iter()
            .flat_map(|d| queries.iter().map(move |q| (d.as_str(), q.as_str())))
            .collect();
        let batch = LevenshteinRatio.score_pairs(&pairs).unwrap();
        for (&(a, b), &score) in pairs.iter().zip(&batch) {
            assert_eq!(score, LevenshteinRatio.score(a, b).unwrap(), "{a:?} {b:?}");
        }
    }

    /// Time per pair of each kernel on SAGE robustness-like pairs (a document against its
    /// words shuffled, cut shorter): `cargo test --release -p sage-metrics --lib
    /// kernel_speed -- --ignored --nocapture` (`SAGE_CPU` does not apply: each kernel is named).
    #[test]
    #[ignore = "a measurement, not a check"]
    fn kernel_speed() {
        use rand::seq::SliceRandom;
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(43);
        let vocabulary = [
            "the",
            "of",
            "and",
            "a",
            "to",
            "in",
            "is",
            "was",
            "said",
            "police",
            "on",
            "for",
            "that",
            "with",
            "he",
            "it",
            "as",
            "his",
            "at",
            "by",
            "government",
            "people",
            "year",
        ];
        // queries against a document: the one-pair path against patterns in lanes
        for query in [20usize, 60, 120, 250] {
            let text: Vec<char> = (0..300)
                .map(|_| vocabulary[rng.gen_range(0..vocabulary.len())])
                .collect::<Vec<_>>()
                .join(" ")
                .chars()
                .take(1500)
                .collect();
            let queries: Vec<Vec<char>> = (0..64)
                .map(|_| {
                    (0..query / 3)
                        .map(|_| vocabulary[rng.gen_range(0..vocabulary.len())])
                        .collect::<Vec<_>>()
                        .join(" ")
                        .chars()
                        .take(query)
                        .collect()
                })
                .collect();
            let mut masks = Masks::default();
            let mut best = f64::INFINITY;
            for _ in 0..7 {
                let start = std::time::Instant::now();
                for q in &queries {
                    std::hint::black_box(lcs_len_with(q, &text, &mut masks, WordsKernel::Scalar));
                }
                best = best.min(start.elapsed().as_secs_f64());
            }
            println!("1500-character text, {query}-character queries, one pair at a time: {:.2} µs per pair", best / 64.0 * 1e6);
            let mut scratch = crate::lcs_lanes::LanesScratch::default();
            let lane_queries: Vec<crate::lcs_lanes::LanePattern> = queries
                .iter()
                .map(|q| crate::lcs_lanes::LanePattern::new(q))
                .collect();
            let lane_text = crate::lcs_lanes::LaneText::new(&text);
            for kernel in crate::lcs_lanes::LanesKernel::available() {
                let mut best = f64::INFINITY;
                let mut lcs = vec![0; kernel.lanes()];
                for _ in 0..7 {
                    let start = std::time::Instant::now();
                    for chunk in lane_queries.chunks(kernel.lanes()) {
                        let views: Vec<&crate::lcs_lanes::LanePattern> = chunk.iter().collect();
                        crate::lcs_lanes::lcs_lanes(
                            kernel,
                            &lane_text,
                            &views,
                            &mut lcs,
                            &mut scratch,
                        );
                        std::hint::black_box(&lcs);
                    }
                    best = best.min(start.elapsed().as_secs_f64());
                }
                println!("1500-character text, {query}-character queries, {kernel:?} lanes: {:.2} µs per pair", best / 64.0 * 1e6);
            }
        }
        for (document, shuffled) in [(1900, 1350), (1900, 600), (4000, 3000), (8000, 6000)] {
            let pairs: Vec<(Vec<char>, Vec<char>)> = (0..200)
                .map(|_| {
                    let mut words: Vec<&str> = (0..document / 5)
                        .map(|_| vocabulary[rng.gen_range(0..vocabulary.len())])
                        .collect();
                    let text: String = words.join(" ").chars().take(document).collect();
                    words.shuffle(&mut rng);
                    let other: String = words.join(" ").chars().take(shuffled).collect();
                    (text.chars().collect(), other.chars().collect())
                })
                .collect();
            let mut masks = Masks::default();
            for kernel in WordsKernel::available() {
                let mut best = f64::INFINITY;
                let mut total = 0;
                for _ in 0..7 {
                    let start = std::time::Instant::now();
                    total = pairs
                        .iter()
                        .map(|(a, b)| lcs_len_with(a, b, &mut masks, kernel))
                        .sum::<usize>();
                    best = best.min(start.elapsed().as_secs_f64());
                }
                println!(
                    "{document} against {shuffled} characters, {kernel:?}: {:.2} µs per pair \
                     (LCS total {total})",
                    best / pairs.len() as f64 * 1e6
                );
            }
        }
    }

    /// The batch path (texts decoded once, shared between pairs) gives each pair's own score,
    /// texts repeated by slice and by content in another buffer alike.
    #[test]
    fn a_batch_scores_each_pair_as_alone() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(31);
        let alphabet: Vec<char> = "abcé🙂 \u{301}".chars().collect();
        let texts: Vec<String> = (0..12)
            .map(|_| {
                let len = rng.gen_range(0..90);
                (0..len)
                    .map(|_| alphabet[rng.gen_range(0..alphabet.len())])
                    .collect()
            })
            .collect();
        let copies: Vec<String> = texts.clone();
        // texts of one pair only: decoded as their pair is scored
        let once: Vec<String> = (0..40).map(|i| format!("{} {i}", texts[i % 12])).collect();
        let mut pairs: Vec<(&str, &str)> = (0..200)
            .map(|_| {
                let a = &texts[rng.gen_range(0..texts.len())];
                let b = &copies[rng.gen_range(0..copies.len())];
                (a.as_str(), b.as_str())
            })
            .collect();
        pairs.extend(once.chunks(2).map(|two| (two[0].as_str(), two[1].as_str())));
        pairs.extend(once.iter().take(5).map(|t| (t.as_str(), texts[0].as_str())));
        let batch = LevenshteinRatio.score_pairs(&pairs).unwrap();
        for (&(a, b), &score) in pairs.iter().zip(&batch) {
            assert_eq!(score, LevenshteinRatio.score(a, b).unwrap(), "{a:?} {b:?}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, rng_seed: proptest::test_runner::RngSeed::Fixed(7), ..ProptestConfig::default() })]
        #[test]
        fn equals_dp_on_random_unicode(a in "[a-dé🙂\\u{301} ]{0,150}", b in "[a-dé🙂\\u{301} ]{0,150}") {
            prop_assert!((levenshtein_ratio(&a, &b) - ratio_dp(&a, &b)).abs() < 1e-12);
        }
    }
}
