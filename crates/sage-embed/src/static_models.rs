//! Static (lookup-table) embedders: word vectors (GloVe, fastText, word2vec) and model2vec-style
//! models.

use std::path::{Path, PathBuf};

use ndarray::{Array1, Array2};
use rayon::prelude::*;
use rustc_hash::FxHashMap;
use sage_core::{Embedder, EmbedderIdentity};
use tokenizers::Tokenizer;

use crate::error::{config_error, file_error, EmbedError, Result};
use crate::model_kind::is_word_vector_file;
use crate::{file_digest, ResolvedModel};

/// Word vectors, bag-of-words mean as EvalRank's `bow` model, read from any of the three formats
/// word vectors ship in: GloVe text (`word v1 … vd` per line), fastText `.vec` (the same after a
/// `count dimension` header line) and word2vec binary (`count dimension` line, then per word its
/// bytes, a space and `dimension` little-endian f32s).
///
/// A text that is itself a vocabulary word (after lower-casing) gets that word's vector — the
/// word-level lookup EvalRank does, which keeps "ad-hoc" whole. Any other text is lower-cased and split into tokens: maximal runs of letters and digits, and every
/// other non-space character on its own (so "don't." is `don`, `'`, `t`, `.`). Its vector is the
/// mean of its tokens' vectors, where an out-of-vocabulary token gets the **mean of all the
/// vectors** (EvalRank's rule for OOV words); a text with no token gets the zero vector.
pub struct WordVectors {
    identity: EmbedderIdentity,
    // Fx, not SipHash: 400,000 words inserted at every load
    index: FxHashMap<String, u32>,
    vectors: Array2<f32>,
    mean: Array1<f32>,
}

impl WordVectors {
    /// Loads the word-vector file of the resolved folder (or the file itself):
    /// `glove*.txt`, `*.vec` or a word2vec `*.bin`.
    pub fn load(model: &ResolvedModel) -> Result<WordVectors> {
        let file = word_vector_file(&model.dir)?;
        // the file's digest (its revision) is read beside the parsing, not after it
        let (revision, rows) = rayon::join(
            || file_digest(&file),
            || {
                if file.extension().is_some_and(|e| e == "bin") {
                    read_word2vec_binary(&file)
                } else {
                    read_text_vectors(&file)
                }
            },
        );
        let (revision, rows) = (revision?, rows?);
        let count = rows.words.len();
        let vectors = Array2::from_shape_vec((count, rows.dim), rows.values)
            .expect("each word has dim values");
        let mut index = FxHashMap::with_capacity_and_hasher(count, Default::default());
        for (i, word) in rows.words.into_iter().enumerate() {
            // the first occurrence of a duplicated word wins, as in gensim's loader
            index.entry(word).or_insert(i as u32);
        }
        let mean = vectors.mean_axis(ndarray::Axis(0)).expect("non-empty");
        Ok(WordVectors {
            identity: EmbedderIdentity {
                model_id: model.name.clone(),
                revision: Some(revision),
                pooling: "bow-mean".into(),
                normalize: false,
                max_length: 0,
            },
            index,
            vectors,
            mean,
        })
    }

    /// The vector of one word, or `None` when it is out of vocabulary.
    pub fn word(&self, word: &str) -> Option<ndarray::ArrayView1<'_, f32>> {
        self.index.get(word).map(|&i| self.vectors.row(i as usize))
    }

    /// Vocabulary size.
    pub fn vocabulary(&self) -> usize {
        self.index.len()
    }
}

/// `count dimension`, the header of fastText `.vec` and word2vec files.
fn count_header(line: &str) -> Option<(usize, usize)> {
    let mut parts = line.split_whitespace();
    let count = parts.next()?.parse().ok()?;
    let dim = parts.next()?.parse().ok()?;
    parts.next().is_none().then_some((count, dim))
}

/// GloVe text, or fastText `.vec` (GloVe text after a `count dimension` line).
/// The largest magnitude a vector value may have. Trained embeddings stay far below it; a NaN, an
/// infinity or a value near f32::MAX (which overflows the means taken over words) would come out
/// of a similarity as `null` or a wrong number far from its cause, so the file is refused instead.
pub const MAX_VECTOR_VALUE: f32 = 1e20;

/// The first value of `values` that is not a number within ±[`MAX_VECTOR_VALUE`].
fn out_of_range(values: &[f32]) -> Option<f32> {
    values
        .iter()
        .copied()
        .find(|v| v.is_nan() || v.abs() > MAX_VECTOR_VALUE)
}

/// A word-vector file's words and vectors, row after row in one buffer.
struct WordRows {
    words: Vec<String>,
    /// `words.len()` × `dim` values.
    values: Vec<f32>,
    dim: usize,
}

/// Bytes of text each parsing task takes (whole lines): GloVe 6B's 171 MB in ~160 tasks.
const TEXT_CHUNK: usize = 1 << 20;

/// `text` in pieces of about `size` bytes, each ending after a newline (or at the end).
fn line_chunks(text: &str, size: usize) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut chunks = Vec::new();
    let mut start = 0;
    while start < bytes.len() {
        let from = (start + size).min(bytes.len());
        let end = bytes[from..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |i| from + i + 1);
        // a newline ends a UTF-8 character, so `end` is a character boundary
        chunks.push(&text[start..end]);
        start = end;
    }
    chunks
}

/// The lines of text files are parsed a chunk per task, straight into one buffer per chunk:
/// a vector and a string allocated per word, freed after their copy into the matrix, with the
/// splitting into lines and the word index on one thread, made GloVe 6B 50d's load 0.68 s.
fn read_text_vectors(file: &Path) -> Result<WordRows> {
    read_text_in_chunks(file, TEXT_CHUNK)
}

/// [`read_text_vectors`] with chunks of about `chunk` bytes.
fn read_text_in_chunks(file: &Path, chunk: usize) -> Result<WordRows> {
    let text =
        std::fs::read_to_string(file).map_err(|e| file_error(file, format!("cannot read: {e}")))?;
    let header = text.lines().next().and_then(count_header);
    let body = match header {
        Some(_) => text.split_once('\n').map_or("", |(_, rest)| rest),
        None => text.as_str(),
    };
    // fastText writes a space after the last value
    let fields = |line: &str| line.trim_end().split(' ').count().saturating_sub(1);
    let dim = header.map_or_else(|| body.lines().next().map_or(0, fields), |(_, d)| d);
    let chunks = line_chunks(body, chunk);
    let line_counts: Vec<usize> = chunks.par_iter().map(|c| c.lines().count()).collect();
    let lines: usize = line_counts.iter().sum();
    if dim == 0 || lines == 0 {
        return Err(file_error(file, "empty, or not in `word v1 ... vd` format"));
    }
    if let Some((count, _)) = header.filter(|(count, _)| *count != lines) {
        return Err(file_error(
            file,
            format!("line 1 announces {count} words, the file has {lines}"),
        ));
    }
    // the file's line number (from 1) of each chunk's first line
    let mut first_lines = Vec::with_capacity(chunks.len());
    let mut next = 1 + usize::from(header.is_some());
    for count in &line_counts {
        first_lines.push(next);
        next += count;
    }
    let parsed: Vec<Result<(Vec<String>, Vec<f32>)>> = chunks
        .par_iter()
        .zip(&first_lines)
        .zip(&line_counts)
        .map(|((chunk, &first), &count)| {
            let mut words = Vec::with_capacity(count);
            // a header's dimension is the file's word, not a bound: a value takes at least two
            // bytes of the chunk ("0 "), so no more than that is reserved (fuzzing found a
            // header asking for 24 GB)
            let mut values = Vec::with_capacity(count.saturating_mul(dim).min(chunk.len() / 2));
            for (k, line) in chunk.lines().enumerate() {
                let number = first + k;
                let mut parts = line.trim_end().split(' ');
                words.push(parts.next().unwrap_or_default().to_owned());
                let start = values.len();
                for v in parts {
                    let value = v
                        .parse::<f32>()
                        .map_err(|e| file_error(file, format!("line {number}: {v:?}: {e}")))?;
                    values.push(value);
                }
                let found = values.len() - start;
                if found != dim {
                    return Err(file_error(
                        file,
                        format!("line {number}: {found} values, expected {dim}"),
                    ));
                }
                if let Some(v) = out_of_range(&values[start..]) {
                    return Err(file_error(
                        file,
                        format!("line {number}: value {v:e} is not within ±{MAX_VECTOR_VALUE:e}"),
                    ));
                }
            }
            Ok((words, values))
        })
        .collect();
    // the first bad line in file order is the one reported
    let parsed = parsed.into_iter().collect::<Result<Vec<_>>>()?;
    let mut rows = WordRows {
        words: Vec::with_capacity(lines),
        values: Vec::with_capacity(parsed.iter().map(|(_, values)| values.len()).sum()),
        dim,
    };
    for (words, values) in parsed {
        rows.words.extend(words);
        rows.values.extend_from_slice(&values);
    }
    Ok(rows)
}

/// word2vec's binary format (`save_word2vec_format(binary=True)`).
fn read_word2vec_binary(file: &Path) -> Result<WordRows> {
    let bytes = std::fs::read(file).map_err(|e| file_error(file, format!("cannot read: {e}")))?;
    let header_end = bytes
        .iter()
        .position(|&b| b == b'\n')
        .ok_or_else(|| file_error(file, "no `count dimension` header line"))?;
    let (count, dim) = std::str::from_utf8(&bytes[..header_end])
        .ok()
        .and_then(count_header)
        .ok_or_else(|| file_error(file, "line 1 is not `count dimension`"))?;
    if dim == 0 {
        return Err(file_error(file, "dimension 0"));
    }
    let mut at = header_end + 1;
    let mut rows = WordRows {
        words: Vec::with_capacity(count.min(1 << 24)),
        values: Vec::new(),
        dim,
    };
    for n in 0..count {
        // a record may start with the newline that ended the previous one
        while bytes.get(at) == Some(&b'\n') {
            at += 1;
        }
        let space = bytes[at.min(bytes.len())..]
            .iter()
            .position(|&b| b == b' ')
            .ok_or_else(|| {
                file_error(file, format!("word {}: cut off (no space after it)", n + 1))
            })?;
        let word = String::from_utf8_lossy(&bytes[at..at + space]).into_owned();
        at += space + 1;
        let cut_off = || file_error(file, format!("word {} ({word:?}): vector cut off", n + 1));
        let end = dim
            .checked_mul(4)
            .and_then(|width| at.checked_add(width))
            .ok_or_else(cut_off)?;
        let values: Vec<f32> = bytes
            .get(at..end)
            .ok_or_else(cut_off)?
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        if let Some(v) = out_of_range(&values) {
            return Err(file_error(
                file,
                format!(
                    "word {} ({word:?}): value {v:e} is not within ±{MAX_VECTOR_VALUE:e}",
                    n + 1
                ),
            ));
        }
        rows.words.push(word);
        rows.values.extend_from_slice(&values);
        at = end;
    }
    if rows.words.is_empty() {
        return Err(file_error(file, "no words"));
    }
    Ok(rows)
}

fn word_vector_file(dir: &Path) -> Result<PathBuf> {
    if dir.is_file() {
        return Ok(dir.to_owned());
    }
    let entries =
        std::fs::read_dir(dir).map_err(|e| file_error(dir, format!("cannot list: {e}")))?;
    // a .bin beside a config.json is a checkpoint, not word2vec
    let binary_ok = !dir.join("config.json").exists();
    let mut found: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| is_word_vector_file(p, binary_ok))
        .collect();
    found.sort();
    found
        .into_iter()
        .next()
        .ok_or_else(|| file_error(dir, "no glove*.txt, *.vec or word2vec *.bin file"))
}

/// Lower-cased word tokens: runs of alphanumerics, and each other non-space character alone.
pub fn bow_tokens(text: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut current = String::new();
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() {
            current.push(c);
            continue;
        }
        if !current.is_empty() {
            tokens.push(std::mem::take(&mut current));
        }
        if !c.is_whitespace() {
            tokens.push(c.to_string());
        }
    }
    if !current.is_empty() {
        tokens.push(current);
    }
    tokens
}

impl Embedder for WordVectors {
    fn identity(&self) -> &EmbedderIdentity {
        &self.identity
    }

    fn dimension(&self) -> usize {
        self.vectors.ncols()
    }

    fn embed(&self, texts: &[&str]) -> sage_core::Result<Array2<f32>> {
        let vectors: Vec<Array1<f32>> = texts
            .par_iter()
            .map(|text| {
                if let Some(v) = self.word(&text.to_lowercase()) {
                    return v.to_owned();
                }
                let tokens = bow_tokens(text);
                let mut sum = Array1::<f64>::zeros(self.dimension());
                for t in &tokens {
                    let v = self.word(t).unwrap_or(self.mean.view());
                    sum.zip_mut_with(&v, |s, &x| *s += f64::from(x));
                }
                let n = tokens.len().max(1) as f64;
                sum.mapv(|s| (s / n) as f32)
            })
            .collect();
        let out = stack_rows(&vectors, self.dimension());
        Ok(out)
    }
}

/// A model2vec-style static model: `model.safetensors` with `embeddings` (f32 or int8
/// [rows, d]) and, for vocabulary-quantised models, `mapping` (token → row) and `weights`
/// (per-token weight); `tokenizer.json`; `config.json` (`normalize`).
///
/// Text vector = mean over its tokens t of `embeddings[mapping[t]] · weights[t]`, L2-normalised
/// when the config says so — as model2vec's `StaticModel.encode`: tokens encoded without special
/// tokens, the unknown token dropped, at most 512 tokens.
pub struct Model2Vec {
    identity: EmbedderIdentity,
    tokenizer: Tokenizer,
    embeddings: Array2<f32>,
    mapping: Option<Vec<usize>>,
    weights: Option<Vec<f32>>,
    unk_id: Option<u32>,
    normalize: bool,
}

/// model2vec's default `max_length`.
const MODEL2VEC_MAX_TOKENS: usize = 512;

impl Model2Vec {
    /// Loads a model2vec folder.
    pub fn load(model: &ResolvedModel) -> Result<Model2Vec> {
        let dir = &model.dir;
        let weights_path = dir.join("model.safetensors");
        let bytes = std::fs::read(&weights_path)
            .map_err(|e| file_error(&weights_path, format!("cannot read: {e}")))?;
        let tensors = safetensors::SafeTensors::deserialize(&bytes)
            .map_err(|e| file_error(&weights_path, e))?;
        let embeddings_view = tensors
            .tensor("embeddings")
            .map_err(|e| file_error(&weights_path, e))?;
        let shape = embeddings_view.shape().to_vec();
        if shape.len() != 2 {
            return Err(file_error(
                &weights_path,
                format!("embeddings has shape {shape:?}, expected 2 dimensions"),
            ));
        }
        let values: Vec<f32> = match embeddings_view.dtype() {
            safetensors::Dtype::F32 => embeddings_view
                .data()
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
            safetensors::Dtype::I8 => embeddings_view
                .data()
                .iter()
                .map(|&b| f32::from(b as i8))
                .collect(),
            safetensors::Dtype::F16 => embeddings_view
                .data()
                .chunks_exact(2)
                .map(|b| half_to_f32(u16::from_le_bytes([b[0], b[1]])))
                .collect(),
            other => {
                return Err(file_error(
                    &weights_path,
                    format!("embeddings dtype {other:?} is not supported"),
                ))
            }
        };
        let embeddings =
            Array2::from_shape_vec((shape[0], shape[1]), values).expect("shape checked");
        let mapping = match tensors.tensor("mapping") {
            Ok(view) if view.dtype() == safetensors::Dtype::I64 => Some(
                view.data()
                    .chunks_exact(8)
                    .map(|b| i64::from_le_bytes(b.try_into().expect("8 bytes")) as usize)
                    .collect::<Vec<usize>>(),
            ),
            Ok(view) => {
                return Err(file_error(
                    &weights_path,
                    format!("mapping dtype {:?}, expected I64", view.dtype()),
                ))
            }
            Err(_) => None,
        };
        if let Some(bad) = mapping
            .as_ref()
            .and_then(|m| m.iter().find(|&&r| r >= shape[0]))
        {
            return Err(file_error(
                &weights_path,
                format!("mapping points at row {bad}, embeddings has {}", shape[0]),
            ));
        }
        let weights = match tensors.tensor("weights") {
            Ok(view) if view.dtype() == safetensors::Dtype::F32 => Some(
                view.data()
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect::<Vec<f32>>(),
            ),
            Ok(view) => {
                return Err(file_error(
                    &weights_path,
                    format!("weights dtype {:?}, expected F32", view.dtype()),
                ))
            }
            Err(_) => None,
        };
        let config_path = dir.join("config.json");
        let config: serde_json::Value = crate::model_config::read_json(&config_path)?;
        let normalize = config
            .get("normalize")
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(true);
        let tokenizer_path = dir.join("tokenizer.json");
        let mut tokenizer =
            Tokenizer::from_file(&tokenizer_path).map_err(|e| file_error(&tokenizer_path, e))?;
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(None)
            .map_err(|e| file_error(&tokenizer_path, e))?;
        let tokenizer_json: serde_json::Value = crate::model_config::read_json(&tokenizer_path)?;
        let unk_id = tokenizer_json["model"]["unk_id"]
            .as_u64()
            .map(|u| u as u32)
            .or_else(|| {
                tokenizer_json["model"]["unk_token"]
                    .as_str()
                    .and_then(|t| tokenizer.token_to_id(t))
            });
        let vocabulary = tokenizer.get_vocab_size(true);
        let rows_needed = mapping.as_ref().map_or(shape[0], Vec::len);
        if rows_needed < vocabulary {
            return Err(config_error(
                &weights_path,
                format!("{rows_needed} token rows for a vocabulary of {vocabulary}"),
            ));
        }
        Ok(Model2Vec {
            identity: EmbedderIdentity {
                model_id: model.name.clone(),
                revision: Some(file_digest(&weights_path)?),
                pooling: "static-mean".into(),
                normalize,
                max_length: MODEL2VEC_MAX_TOKENS,
            },
            tokenizer,
            embeddings,
            mapping,
            weights,
            unk_id,
            normalize,
        })
    }
}

fn stack_rows(rows: &[Array1<f32>], dim: usize) -> Array2<f32> {
    let mut out = Array2::zeros((rows.len(), dim));
    for (mut target, row) in out.axis_iter_mut(ndarray::Axis(0)).zip(rows) {
        target.assign(row);
    }
    out
}

fn half_to_f32(bits: u16) -> f32 {
    let sign = u32::from(bits >> 15) << 31;
    let exponent = u32::from((bits >> 10) & 0x1f);
    let mantissa = u32::from(bits & 0x3ff);
    let value = match (exponent, mantissa) {
        (0, 0) => sign,
        (0, m) => {
            // subnormal: normalise
            let shift = m.leading_zeros() - 21;
            sign | ((127 - 15 - shift + 1) << 23) | (((m << shift) & 0x3ff) << 13)
        }
        (0x1f, m) => sign | 0x7f80_0000 | (m << 13),
        (e, m) => sign | ((e + 127 - 15) << 23) | (m << 13),
    };
    f32::from_bits(value)
}

impl Embedder for Model2Vec {
    fn identity(&self) -> &EmbedderIdentity {
        &self.identity
    }

    fn dimension(&self) -> usize {
        self.embeddings.ncols()
    }

    fn embed(&self, texts: &[&str]) -> sage_core::Result<Array2<f32>> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), false)
            .map_err(|e| sage_core::SageError::from(EmbedError::Tokenizer(e.to_string())))?;
        let vectors: Vec<Array1<f32>> = encodings
            .par_iter()
            .map(|encoding| {
                let ids: Vec<u32> = encoding
                    .get_ids()
                    .iter()
                    .copied()
                    .filter(|&id| Some(id) != self.unk_id)
                    .take(MODEL2VEC_MAX_TOKENS)
                    .collect();
                let mut sum = Array1::<f32>::zeros(self.dimension());
                if ids.is_empty() {
                    return sum;
                }
                for &id in &ids {
                    let id = id as usize;
                    let r = self.mapping.as_ref().map_or(id, |m| m[id]);
                    let w = self.weights.as_ref().map_or(1.0, |w| w[id]);
                    sum.scaled_add(w, &self.embeddings.row(r));
                }
                sum /= ids.len() as f32;
                if self.normalize {
                    let norm = sum.dot(&sum).sqrt();
                    if norm > 0.0 {
                        sum /= norm;
                    }
                }
                sum
            })
            .collect();
        let out = stack_rows(&vectors, self.dimension());
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bow_tokenization() {
        assert_eq!(
            bow_tokens("Don't stop, King!"),
            ["don", "'", "t", "stop", ",", "king", "!"]
        );
        assert!(bow_tokens("  ").is_empty());
    }

    #[test]
    fn half_precision_conversion() {
        for (bits, value) in [
            (0x3c00u16, 1.0f32),
            (0xc000, -2.0),
            (0x0000, 0.0),
            (0x3555, 0.333_251_95),
            (0x0001, 5.960_464_5e-8),
        ] {
            assert_eq!(half_to_f32(bits), value, "{bits:#x}");
        }
    }
}

#[cfg(test)]
mod word_vector_tests {
    use super::*;
    use crate::{resolve_model, ResolveOptions};

    const WORDS: [(&str, [f32; 3]); 4] = [
        ("the", [0.5, -1.25, 3.0]),
        ("cat", [1e-3, 2.5, -0.75]),
        ("café", [4.0, 0.0, -2.0]),
        ("sat", [-1.5, 0.25, 0.125]),
    ];

    fn load(path: &Path) -> Result<WordVectors> {
        WordVectors::load(&resolve_model(
            path.to_str().unwrap(),
            &ResolveOptions::default(),
        )?)
    }

    fn text_lines(trailing: &str) -> String {
        WORDS
            .iter()
            .map(|(w, v)| format!("{w} {} {} {}{trailing}\n", v[0], v[1], v[2]))
            .collect()
    }

    /// The three formats of the same vectors load to the same embedder: GloVe text, fastText
    /// `.vec` (header line, a space after the last value) and word2vec binary.
    #[test]
    fn glove_fasttext_and_word2vec_files_give_the_same_vectors() {
        let dir = tempfile::tempdir().unwrap();
        let glove = dir.path().join("glove.test.txt");
        std::fs::write(&glove, text_lines("")).unwrap();
        let vec = dir.path().join("cc.test.vec");
        std::fs::write(&vec, format!("4 3\n{}", text_lines(" "))).unwrap();
        let bin = dir.path().join("vectors.bin");
        let mut bytes = b"4 3\n".to_vec();
        for (w, v) in WORDS {
            bytes.extend(w.as_bytes());
            bytes.push(b' ');
            bytes.extend(v.iter().flat_map(|x| x.to_le_bytes()));
            bytes.push(b'\n');
        }
        std::fs::write(&bin, bytes).unwrap();
        let texts = ["the cat sat", "café", "unknown words only", ""];
        let reference = load(&glove).unwrap().embed(&texts).unwrap();
        for path in [&vec, &bin] {
            let model = load(path).unwrap();
            assert_eq!(model.vocabulary(), 4);
            assert_eq!(model.word("café").unwrap().to_vec(), WORDS[2].1.to_vec());
            assert_eq!(
                model.embed(&texts).unwrap(),
                reference,
                "{}",
                path.display()
            );
        }
    }

    /// Chunks of a few lines give what one chunk gives, and a bad line's number counts the
    /// lines of every chunk before it (and the header).
    #[test]
    fn text_read_in_chunks_keeps_rows_and_line_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let lines: Vec<String> = (0..40)
            .map(|i| format!("w{i} {}.5 -{}.25 0.{i}", i % 7, i % 5))
            .collect();
        for header in ["", "40 3\n"] {
            let good = dir.path().join("glove.chunks.txt");
            std::fs::write(&good, format!("{header}{}\n", lines.join("\n"))).unwrap();
            let whole = read_text_in_chunks(&good, TEXT_CHUNK).unwrap();
            for chunk in [1, 7, 30, 100] {
                let pieces = read_text_in_chunks(&good, chunk).unwrap();
                assert_eq!(
                    (&pieces.words, &pieces.values),
                    (&whole.words, &whole.values)
                );
            }
            assert_eq!(
                (whole.words.len(), whole.dim, whole.words[39].as_str()),
                (40, 3, "w39")
            );
            let mut bad = lines.clone();
            bad[26] = "w26 0.1 oops 0.3".into();
            let file = dir.path().join("glove.bad-line.txt");
            std::fs::write(&file, format!("{header}{}\n", bad.join("\n"))).unwrap();
            let want = format!("line {}:", 27 + usize::from(!header.is_empty()));
            for chunk in [1, 7, 30, TEXT_CHUNK] {
                let e = read_text_in_chunks(&file, chunk).err().unwrap().to_string();
                assert!(
                    e.contains("glove.bad-line.txt") && e.contains(&want),
                    "{chunk}: {e}"
                );
            }
        }
    }

    /// Found by the word_vectors fuzz target: a fastText header announcing 3,000,000,000
    /// dimensions made the chunked reader reserve 24 GB before reading a value. It is refused
    /// for what its lines hold, with nothing reserved beyond them.
    #[test]
    fn a_header_dimension_reserves_nothing_beyond_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let vec = dir.path().join("huge.vec");
        std::fs::write(&vec, "2 3000000000\nthe 0.1 0.2\ncat 0.3 0.4\n").unwrap();
        let e = load(&vec).err().unwrap().to_string();
        assert!(
            e.contains("huge.vec") && e.contains("line 2: 2 values, expected 3000000000"),
            "{e}"
        );
    }

    #[test]
    fn malformed_files_name_the_file_and_the_place() {
        let dir = tempfile::tempdir().unwrap();
        let vec = dir.path().join("short.vec");
        std::fs::write(&vec, format!("5 3\n{}", text_lines(""))).unwrap();
        let e = load(&vec).err().unwrap().to_string();
        assert!(
            e.contains("short.vec") && e.contains("announces 5 words"),
            "{e}"
        );
        let bin = dir.path().join("cut.bin");
        std::fs::write(&bin, b"2 3\nthe \x00\x00\x80\x3f").unwrap();
        let e = load(&bin).err().unwrap().to_string();
        assert!(
            e.contains("cut.bin") && e.contains("word 1") && e.contains("cut off"),
            "{e}"
        );
    }

    /// Found by the word_vectors fuzz target: `nan` (or `inf`, or a value near f32::MAX whose
    /// means overflow) in a vector file loaded, and every text with that word embedded to NaN,
    /// a `null` score far from its cause. Such files are refused, naming the line or the word.
    #[test]
    fn values_that_are_not_numbers_within_range_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        for (value, shown) in [("nan", "NaN"), ("-inf", "-inf"), ("3e38", "value 3e38")] {
            let glove = dir.path().join("glove.bad.txt");
            std::fs::write(&glove, format!("the 0.1 0.2\ncat 0.5 {value}\n")).unwrap();
            let e = load(&glove).err().unwrap().to_string();
            assert!(
                e.contains("glove.bad.txt") && e.contains("line 2") && e.contains(shown),
                "{e}"
            );
        }
        let bin = dir.path().join("vectors.bin");
        let mut bytes = b"1 2\nthe ".to_vec();
        bytes.extend(0.5f32.to_le_bytes());
        bytes.extend(f32::NAN.to_le_bytes());
        std::fs::write(&bin, bytes).unwrap();
        let e = load(&bin).err().unwrap().to_string();
        assert!(e.contains("word 1 (\"the\")") && e.contains("NaN"), "{e}");
        // a header announcing more than the address space holds is cut off, not an overflow
        std::fs::write(&bin, format!("1 {}\nthe \x00", usize::MAX / 2)).unwrap();
        let e = load(&bin).err().unwrap().to_string();
        assert!(e.contains("cut off"), "{e}");
    }
}
