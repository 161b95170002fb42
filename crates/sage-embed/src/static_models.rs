//! Static (lookup-table) embedders: GloVe text files and model2vec-style models.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use ndarray::{Array1, Array2};
use rayon::prelude::*;
use sage_core::{Embedder, EmbedderIdentity};
use tokenizers::Tokenizer;

use crate::error::{config_error, file_error, EmbedError, Result};
use crate::{file_digest, ResolvedModel};

/// GloVe vectors in the standard text format (`word v1 … vd` per line), bag-of-words mean as
/// EvalRank's `bow` model.
///
/// A text that is itself a vocabulary word (after lower-casing) gets that word's vector — the
/// word-level lookup EvalRank does, which keeps "ad-hoc" whole. Any other text is lower-cased and split into tokens: maximal runs of letters and digits, and every
/// other non-space character on its own (so "don't." is `don`, `'`, `t`, `.`). Its vector is the
/// mean of its tokens' vectors, where an out-of-vocabulary token gets the **mean of all GloVe
/// vectors** (EvalRank's rule for OOV words); a text with no token gets the zero vector.
pub struct Glove {
    identity: EmbedderIdentity,
    index: HashMap<String, u32>,
    vectors: Array2<f32>,
    mean: Array1<f32>,
}

impl Glove {
    /// Loads `glove*.txt` from the resolved folder (or the file itself).
    pub fn load(model: &ResolvedModel) -> Result<Glove> {
        let file = glove_file(&model.dir)?;
        let text = std::fs::read_to_string(&file)
            .map_err(|e| file_error(&file, format!("cannot read: {e}")))?;
        let lines: Vec<&str> = text.lines().collect();
        let dim = lines
            .first()
            .map_or(0, |l| l.split(' ').count().saturating_sub(1));
        if dim == 0 {
            return Err(file_error(
                &file,
                "empty, or not in `word v1 ... vd` format",
            ));
        }
        let rows: Vec<(&str, Vec<f32>)> = lines
            .par_iter()
            .enumerate()
            .map(|(i, line)| {
                let mut parts = line.split(' ');
                let word = parts.next().unwrap_or_default();
                let values = parts
                    .map(|v| {
                        v.parse::<f32>()
                            .map_err(|e| file_error(&file, format!("line {}: {v:?}: {e}", i + 1)))
                    })
                    .collect::<Result<Vec<f32>>>()?;
                if values.len() != dim {
                    return Err(file_error(
                        &file,
                        format!("line {}: {} values, expected {dim}", i + 1, values.len()),
                    ));
                }
                Ok((word, values))
            })
            .collect::<Result<_>>()?;
        let mut index = HashMap::with_capacity(rows.len());
        let mut vectors = Array2::zeros((rows.len(), dim));
        for (i, (word, values)) in rows.into_iter().enumerate() {
            // the first occurrence of a duplicated word wins, as in gensim's loader
            index.entry(word.to_owned()).or_insert(i as u32);
            vectors.row_mut(i).assign(&Array1::from(values));
        }
        let mean = vectors.mean_axis(ndarray::Axis(0)).expect("non-empty");
        let revision = file_digest(&file)?;
        Ok(Glove {
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

fn glove_file(dir: &Path) -> Result<PathBuf> {
    if dir.is_file() {
        return Ok(dir.to_owned());
    }
    let entries =
        std::fs::read_dir(dir).map_err(|e| file_error(dir, format!("cannot list: {e}")))?;
    let mut found: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("glove"))
                && p.extension().is_some_and(|e| e == "txt")
        })
        .collect();
    found.sort();
    found
        .into_iter()
        .next()
        .ok_or_else(|| file_error(dir, "no glove*.txt file"))
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

impl Embedder for Glove {
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
        let config: serde_json::Value = crate::config::read_json(&config_path)?;
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
        let tokenizer_json: serde_json::Value = crate::config::read_json(&tokenizer_path)?;
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
