//! The calibration texts a lower precision is measured on, and the cosine it must keep
//! against float32 on every one of them: shared by `--precision int8`'s check at load and
//! `--precision auto`'s choice, so both hold a model to the same texts and the same bar.

/// The lowest cosine against f32, over every calibration text, a lower precision must keep.
pub const MIN_COSINE: f64 = 0.99;

/// The texts both precisions embed: written for this purpose, of every length from two words to
/// a paragraph, with numbers, code-like strings and three other languages.
const CALIBRATION: &str = include_str!("calibration.txt");

/// The calibration texts.
pub fn calibration_texts() -> Vec<&'static str> {
    CALIBRATION
        .lines()
        .filter(|l| !l.trim().is_empty())
        .collect()
}

/// The lowest cosine between the rows of `a` and `b`, text by text.
pub(crate) fn lowest_cosine(a: &ndarray::Array2<f32>, b: &ndarray::Array2<f32>) -> f64 {
    a.outer_iter()
        .zip(b.outer_iter())
        .map(|(a, b)| cosine(a.as_slice().unwrap_or(&[]), b.as_slice().unwrap_or(&[])))
        .fold(f64::INFINITY, f64::min)
}

/// The cosine of two vectors, summed in f64.
pub(crate) fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum();
    let norm = |v: &[f32]| v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    let denominator = norm(a) * norm(b);
    if denominator == 0.0 {
        // two zero vectors are the same vector; one alone is as far as it gets
        return if norm(a) == norm(b) { 1.0 } else { 0.0 };
    }
    dot / denominator
}
