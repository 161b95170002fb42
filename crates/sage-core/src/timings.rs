//! Wall-clock timings of a task's phases.
//!
//! Timings are the one part of a result that differs between two runs with the same seed, so
//! tasks keep them next to their scores, never inside them: a report is `{scores…, timings}`
//! and the scores alone are byte-identical across runs.

use std::time::Instant;

use serde::{Deserialize, Serialize};

/// One timed phase.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Phase {
    /// What ran (`perturb/cnn-dailymail`, `score/cnn-dailymail`, ...).
    pub name: String,
    /// Wall-clock seconds.
    pub seconds: f64,
}

/// The phases of one run, in the order they ran.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Timings {
    /// The phases.
    pub phases: Vec<Phase>,
}

impl Timings {
    /// Runs `work`, recording its wall-clock time under `name`.
    pub fn time<T>(&mut self, name: impl Into<String>, work: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let out = work();
        self.phases.push(Phase {
            name: name.into(),
            seconds: start.elapsed().as_secs_f64(),
        });
        out
    }

    /// Total seconds over all phases.
    pub fn total_seconds(&self) -> f64 {
        self.phases.iter().map(|p| p.seconds).sum()
    }

    /// Appends another run's phases (a task timing its datasets separately).
    pub fn extend(&mut self, other: Timings) {
        self.phases.extend(other.phases);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_phases_in_order_and_passes_results_through() {
        let mut t = Timings::default();
        let a = t.time("first", || 1 + 1);
        let b = t.time("second", || "x");
        assert_eq!((a, b), (2, "x"));
        let names: Vec<&str> = t.phases.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["first", "second"]);
        assert!(t.total_seconds() >= 0.0);
    }
}
