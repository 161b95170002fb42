//! The model families sage runs locally, as one table.
//!
//! Why a table: a family is a module with its layers (a file beside this one) plus what the
//! loader must know about it before any weight is read — which `model_type`s of config.json it
//! runs, which half precision it was trained in, where its position ids start. Each of those
//! used to be its own `match` (an enum variant, the `model_type` match and its "supported" list,
//! the GPU dtype, the pooling check, the position limit, and a variant with four arms in
//! [`crate::SentenceTransformer`]). Now a new family is its module, an `impl Backbone` there,
//! and one [`Family`] line in [`FAMILIES`]; the error for an unknown `model_type` lists the
//! table.

use std::path::Path;

use candle_nn::VarBuilder;

use sage_kernels::Precision;

use crate::backbone::Backbone;
use crate::decoder::{Decoder, DecoderConfig, DecoderFamily};
use crate::encoder::{Encoder, EncoderFlavor};
use crate::model_config::{read_json, TransformerConfig};
use crate::modernbert::{ModernBert, ModernBertConfig};
use crate::nomic_bert::{NomicBert, NomicBertConfig};

/// What a family's loader reads besides the weights.
pub(crate) struct FamilyFiles<'a> {
    /// The folder's config.json, for a family with its own config fields.
    pub config_json: &'a Path,
    /// The fields every family's config.json has.
    pub transformer: &'a TransformerConfig,
    /// The precision of the dense products (f32 unless the family's `lower_precision`).
    pub precision: Precision,
}

/// Builds a family's backbone from the weights under a `VarBuilder`.
type Loader = fn(VarBuilder, &FamilyFiles) -> crate::Result<Box<dyn Backbone>>;

/// One model family: what the loader must know about it, and how it is built.
pub struct Family {
    /// Its name in messages.
    pub name: &'static str,
    /// The config.json `model_type`s it runs.
    pub model_types: &'static [&'static str],
    /// Trained in bf16, so it runs in bf16 on a GPU (f16 otherwise; f32 on the CPU always).
    pub trained_in_bf16: bool,
    /// Position ids count from after the padding id (RoBERTa's scheme), so the usable length is
    /// `pad_token_id + 1` shorter than `max_position_embeddings`.
    pub positions_after_padding: bool,
    /// Can pool first-last-avg (SimCSE's encoders: its first layer's output is meaningful).
    pub first_last_avg: bool,
    /// Runs its dense products in bf16 or int8 on the CPU (`--precision`), not only f32.
    pub lower_precision: bool,
    pub(crate) load: Loader,
}

impl std::fmt::Debug for Family {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl PartialEq for Family {
    fn eq(&self, other: &Family) -> bool {
        self.name == other.name
    }
}

impl Eq for Family {}

fn encoder(
    vb: VarBuilder,
    files: &FamilyFiles,
    flavor: EncoderFlavor,
) -> crate::Result<Box<dyn Backbone>> {
    Ok(Box::new(Encoder::load(
        vb,
        files.transformer,
        flavor,
        files.precision,
    )?))
}

fn decoder(
    vb: VarBuilder,
    files: &FamilyFiles,
    family: DecoderFamily,
) -> crate::Result<Box<dyn Backbone>> {
    let config: DecoderConfig = read_json(files.config_json)?;
    Ok(Box::new(Decoder::load(vb, &config, family)?))
}

/// Every family sage runs locally. A new one is a module with an `impl Backbone` and a line
/// here.
pub const FAMILIES: &[Family] = &[
    Family {
        name: "BERT",
        model_types: &["bert"],
        trained_in_bf16: false,
        positions_after_padding: false,
        first_last_avg: true,
        lower_precision: true,
        load: |vb, files| encoder(vb, files, EncoderFlavor::Bert),
    },
    Family {
        name: "MPNet",
        model_types: &["mpnet"],
        trained_in_bf16: false,
        positions_after_padding: true,
        first_last_avg: true,
        lower_precision: true,
        load: |vb, files| encoder(vb, files, EncoderFlavor::MpNet),
    },
    Family {
        name: "RoBERTa",
        model_types: &["roberta", "xlm-roberta"],
        trained_in_bf16: false,
        positions_after_padding: true,
        first_last_avg: true,
        lower_precision: true,
        load: |vb, files| encoder(vb, files, EncoderFlavor::Roberta),
    },
    Family {
        name: "ModernBERT",
        model_types: &["modernbert"],
        trained_in_bf16: true,
        positions_after_padding: false,
        first_last_avg: false,
        lower_precision: false,
        load: |vb, files| {
            let config: ModernBertConfig = read_json(files.config_json)?;
            Ok(Box::new(ModernBert::load(vb, &config)?))
        },
    },
    Family {
        name: "NomicBERT",
        model_types: &["nomic_bert"],
        trained_in_bf16: true,
        positions_after_padding: false,
        first_last_avg: false,
        lower_precision: false,
        load: |vb, files| {
            let config: NomicBertConfig = read_json(files.config_json)?;
            Ok(Box::new(NomicBert::load(vb, &config)?))
        },
    },
    Family {
        name: "Qwen3",
        model_types: &["qwen3"],
        trained_in_bf16: true,
        positions_after_padding: false,
        first_last_avg: false,
        lower_precision: false,
        load: |vb, files| decoder(vb, files, DecoderFamily::Qwen3),
    },
    Family {
        name: "Qwen2",
        model_types: &["qwen2"],
        trained_in_bf16: true,
        positions_after_padding: false,
        first_last_avg: false,
        lower_precision: false,
        load: |vb, files| decoder(vb, files, DecoderFamily::Qwen2),
    },
    Family {
        name: "LLaMA",
        model_types: &["mistral", "llama"],
        trained_in_bf16: true,
        positions_after_padding: false,
        first_last_avg: false,
        lower_precision: false,
        load: |vb, files| decoder(vb, files, DecoderFamily::Llama),
    },
    Family {
        name: "Gemma 3",
        model_types: &["gemma3_text", "gemma3"],
        trained_in_bf16: true,
        positions_after_padding: false,
        first_last_avg: false,
        lower_precision: false,
        load: |vb, files| decoder(vb, files, DecoderFamily::Gemma3),
    },
];

/// The family that runs `model_type`.
pub fn family_of(model_type: &str) -> Option<&'static Family> {
    FAMILIES
        .iter()
        .find(|family| family.model_types.contains(&model_type))
}

/// Every `model_type` of the table, comma-separated, for the error that refuses another.
pub(crate) fn supported_model_types() -> String {
    FAMILIES
        .iter()
        .flat_map(|family| family.model_types.iter().copied())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_model_type_belongs_to_one_family() {
        let mut seen = std::collections::HashSet::new();
        for family in FAMILIES {
            for model_type in family.model_types {
                assert!(seen.insert(*model_type), "{model_type} is in two families");
                assert_eq!(family_of(model_type), Some(family));
            }
        }
        assert!(family_of("gpt2").is_none());
        assert!(supported_model_types().contains("xlm-roberta, modernbert"));
    }
}
