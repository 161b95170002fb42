//! What a suite's job costs before any has run.
//!
//! Why here: bench-all balances `--shard` shares by estimated seconds before a single job has
//! finished, and only the suite knows how heavy its default job is. Each suite states its own
//! hint ([`CostHint`], through `sage_suites::Suite::cost_hints`), `sage suites` lists them, and
//! the planner scales them by each model's size. A finished run's own times (`--costs`) replace
//! every hint.

use serde::{Deserialize, Serialize};

/// Weight bytes of all-MiniLM-L6-v2, the model every hint's `model_seconds` is for: a planner
/// scales a hint by a model's weight bytes against these.
pub const COST_REFERENCE_MODEL_BYTES: f64 = 90_868_376.0;

/// The seconds one job of a suite takes at its default sizes on the shipped data, on the 2-core
/// CPU this project is developed on. Only ratios between hints matter (they balance shares).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CostHint {
    /// The job's task: its result file's stem (`human-pref`, EvalRank's `word`, ...).
    pub task: String,
    /// Seconds for a classical metric.
    pub metric_seconds: f64,
    /// Seconds for all-MiniLM-L6-v2 ([`COST_REFERENCE_MODEL_BYTES`] of weights).
    pub model_seconds: f64,
    /// The share of those seconds the same job takes under bench-all's `--quick` sizes.
    pub quick_share: f64,
}

impl CostHint {
    /// The hint of a suite that states none: a mid-sized SAGE task's.
    pub fn unmeasured(task: impl Into<String>) -> CostHint {
        CostHint {
            task: task.into(),
            metric_seconds: 1.0,
            model_seconds: 100.0,
            quick_share: 0.02,
        }
    }

    /// The estimated seconds of this job for a similarity of `weight` (a model's weight bytes
    /// against [`COST_REFERENCE_MODEL_BYTES`], 1 for a metric or a remote model).
    pub fn seconds(&self, is_model: bool, weight: f64, quick: bool) -> f64 {
        let base = if is_model {
            self.model_seconds
        } else {
            self.metric_seconds
        };
        base * weight * if quick { self.quick_share } else { 1.0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hint_scales_by_weight_and_the_quick_share() {
        let hint = CostHint {
            task: "t".into(),
            metric_seconds: 2.0,
            model_seconds: 50.0,
            quick_share: 0.1,
        };
        assert_eq!(hint.seconds(false, 1.0, false), 2.0);
        assert_eq!(hint.seconds(true, 4.0, false), 200.0);
        assert!((hint.seconds(true, 4.0, true) - 20.0).abs() < 1e-12);
        assert_eq!(CostHint::unmeasured("x").seconds(true, 1.0, false), 100.0);
    }
}
