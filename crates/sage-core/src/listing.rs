//! What `sage` prints for bench-all to read: a remote run's plan (`--plan`) and the models it
//! finds (`sage models`). Here, below both, so that the command writes and bench-all reads one
//! type: a field renamed on one side is a compile error on the other, not a missing cost.
//!
//! The plan's fields are declared in alphabetical order: it was printed from a JSON map, whose
//! keys were sorted, before these types existed, and the same run must print the same bytes.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// What a run with `--plan` prints instead of its report: what each remote model would send
/// after the cache, and what that would cost. Nothing is sent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RemotePlan {
    /// The models' estimates added up; `None` when a model has no price, since a total
    /// without it would understate.
    pub estimated_cost_usd: Option<f64>,
    /// One per remote model the run loaded.
    pub plan: Vec<PlannedModel>,
    /// When the shipped list prices were taken from the providers' price pages.
    pub prices_as_of: String,
}

/// One remote model's part of a [`RemotePlan`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlannedModel {
    /// Distinct texts the cache already holds: they cost nothing.
    pub cached_texts: u64,
    /// `tokens_to_send` at `usd_per_million_tokens`; `None` without a price.
    pub estimated_cost_usd: Option<f64>,
    /// The model, as its results are labelled.
    pub model: String,
    /// Texts that would be sent.
    pub texts_to_send: u64,
    /// Estimated tokens of those texts.
    pub tokens_to_send: u64,
    /// The price the estimate uses, when the model has one.
    pub usd_per_million_tokens: Option<f64>,
}

/// An embedding model `sage models` found on this machine, one JSON line each.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiscoveredModel {
    /// What to pass as a model spec: the folder name under SAGE_MODELS_DIR, or the hub id.
    pub spec: String,
    /// The folder holding it.
    pub dir: PathBuf,
    /// Where it was found.
    pub origin: ModelOrigin,
    /// The lower precisions its family runs on the CPU (`bf16`, `int8`; `--precision`), so that
    /// bench-all runs only the variants a model takes. Empty for the others.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub precisions: Vec<String>,
}

/// Where [`DiscoveredModel`] found a model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ModelOrigin {
    /// A folder under SAGE_MODELS_DIR (`models-dir`).
    ModelsDir,
    /// A snapshot in the Hugging Face hub cache (`hub-cache`).
    HubCache,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plan prints as it did when it was a JSON map, keys sorted; it reads back as itself.
    #[test]
    fn a_plan_prints_its_keys_sorted_and_reads_back() {
        let plan = RemotePlan {
            estimated_cost_usd: None,
            plan: vec![PlannedModel {
                cached_texts: 3,
                estimated_cost_usd: None,
                model: "openai:m".into(),
                texts_to_send: 4,
                tokens_to_send: 40,
                usd_per_million_tokens: None,
            }],
            prices_as_of: "2025-10".into(),
        };
        let text = serde_json::to_string(&plan).unwrap();
        assert_eq!(
            text,
            r#"{"estimated_cost_usd":null,"plan":[{"cached_texts":3,"estimated_cost_usd":null,"model":"openai:m","texts_to_send":4,"tokens_to_send":40,"usd_per_million_tokens":null}],"prices_as_of":"2025-10"}"#
        );
        assert_eq!(serde_json::from_str::<RemotePlan>(&text).unwrap(), plan);
    }

    /// `sage models` lines keep the field order and origin names they had as a `&str` origin.
    #[test]
    fn a_discovered_model_line_reads_back() {
        let model = DiscoveredModel {
            spec: "acme/m".into(),
            dir: PathBuf::from("/hub/models--acme--m/snapshots/abc"),
            origin: ModelOrigin::HubCache,
            precisions: Vec::new(),
        };
        let line = serde_json::to_string(&model).unwrap();
        assert_eq!(
            line,
            r#"{"spec":"acme/m","dir":"/hub/models--acme--m/snapshots/abc","origin":"hub-cache"}"#
        );
        assert_eq!(
            serde_json::from_str::<DiscoveredModel>(&line).unwrap(),
            model
        );
        let local = r#"{"spec":"m","dir":"/models/m","origin":"models-dir"}"#;
        assert_eq!(
            serde_json::from_str::<DiscoveredModel>(local)
                .unwrap()
                .origin,
            ModelOrigin::ModelsDir
        );
    }
}
