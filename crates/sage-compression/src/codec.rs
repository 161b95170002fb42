//! How a vector is stored and what the store gives back to score with.

use half::f16;
use ndarray::{s, Array2, ArrayView2, Axis};
use serde::{Deserialize, Serialize};

/// A stored-vector format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// 4 bytes a value: the reference.
    Float32,
    /// 2 bytes a value (IEEE half precision, round to nearest).
    Float16,
    /// 1 byte a value: scalar quantisation, each dimension's range calibrated on a seeded sample
    /// of the stored vectors and cut into 256 steps.
    Int8,
    /// 1 bit a value, its sign; scored by the dot product of ±1 vectors (`width − 2 · Hamming`).
    Binary,
    /// Binary, with the `rescore_factor · k` best by Hamming re-ranked by the float query
    /// against the stored signs (where a task ranks: retrieval and classification; elsewhere
    /// it is binary).
    BinaryRescored,
}

impl Format {
    /// Every format, largest first.
    pub const ALL: [Format; 5] = [
        Format::Float32,
        Format::Float16,
        Format::Int8,
        Format::Binary,
        Format::BinaryRescored,
    ];

    /// The name results and flags use.
    pub fn name(self) -> &'static str {
        match self {
            Format::Float32 => "float32",
            Format::Float16 => "float16",
            Format::Int8 => "int8",
            Format::Binary => "binary",
            Format::BinaryRescored => "binary-rescored",
        }
    }

    /// Bytes one stored vector of `width` values takes (int8's ranges are per collection, not
    /// per vector, and left out).
    pub fn bytes(self, width: usize) -> usize {
        match self {
            Format::Float32 => 4 * width,
            Format::Float16 => 2 * width,
            Format::Int8 => width,
            Format::Binary | Format::BinaryRescored => width.div_ceil(8),
        }
    }

    /// Whether the format stores signs: scored by Hamming, the query binarised too.
    pub(crate) fn is_binary(self) -> bool {
        matches!(self, Format::Binary | Format::BinaryRescored)
    }
}

/// int8 scalar quantisation's ranges: per dimension the lowest value calibrated and the width of
/// one of its 255 steps. A value outside the calibrated range is clamped to it, as a vector store
/// does.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Int8Ranges {
    low: Vec<f32>,
    step: Vec<f32>,
}

impl Int8Ranges {
    /// The ranges of `sample`'s columns (min to max).
    pub(crate) fn calibrate(sample: ArrayView2<f32>) -> Int8Ranges {
        let (low, step) = sample
            .axis_iter(Axis(1))
            .map(|column| {
                let (lo, hi) = column
                    .iter()
                    .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &v| {
                        (lo.min(v), hi.max(v))
                    });
                if !lo.is_finite() || !hi.is_finite() {
                    return (0.0, 0.0);
                }
                // a constant column has one code: step 0
                (lo, (hi - lo) / 255.0)
            })
            .unzip();
        Int8Ranges { low, step }
    }

    /// `value` of dimension `j` stored as a byte and read back.
    fn round_trip(&self, j: usize, value: f32) -> f32 {
        if self.step[j] == 0.0 {
            return self.low[j];
        }
        let code = ((value - self.low[j]) / self.step[j])
            .round()
            .clamp(0.0, 255.0);
        self.low[j] + code * self.step[j]
    }
}

/// The first `width` values of each row, renormalised to unit length: a Matryoshka cut (at the
/// full width, the rows made unit length, which cosine assumes).
pub(crate) fn cut(vectors: &Array2<f32>, width: usize) -> Array2<f32> {
    let mut cut = vectors.slice(s![.., ..width]).to_owned();
    sage_core::normalize_rows(&mut cut);
    cut
}

/// `vectors` as the store gives them back in `format`: decoded values for the float and int8
/// formats, ±1 for the binary ones.
pub(crate) fn stored(format: Format, vectors: &Array2<f32>, ranges: &Int8Ranges) -> Array2<f32> {
    match format {
        Format::Float32 => vectors.clone(),
        Format::Float16 => vectors.mapv(|v| f16::from_f32(v).to_f32()),
        Format::Int8 => {
            let mut out = vectors.clone();
            for mut row in out.axis_iter_mut(Axis(0)) {
                for (j, v) in row.iter_mut().enumerate() {
                    *v = ranges.round_trip(j, *v);
                }
            }
            out
        }
        Format::Binary | Format::BinaryRescored => signs(vectors),
    }
}

/// A query as it meets the stored vectors: as computed, or its signs for a binary format.
pub(crate) fn asked(format: Format, vectors: &Array2<f32>) -> Array2<f32> {
    if format.is_binary() {
        signs(vectors)
    } else {
        vectors.clone()
    }
}

/// +1 where a value is above zero, −1 elsewhere: the bit a binary store keeps.
fn signs(vectors: &Array2<f32>) -> Array2<f32> {
    vectors.mapv(|v| if v > 0.0 { 1.0 } else { -1.0 })
}

/// What the store's score of two stored vectors `a` and `b` of `format` is: their dot product;
/// for signs, divided by the width (the cosine of two ±1 vectors), so every format's scores lie
/// on one scale.
pub(crate) fn pair_score(
    format: Format,
    a: ndarray::ArrayView1<f32>,
    b: ndarray::ArrayView1<f32>,
) -> f64 {
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum();
    if format.is_binary() {
        dot / a.len().max(1) as f64
    } else {
        dot
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn bytes_per_vector_follow_the_format() {
        assert_eq!(Format::Float32.bytes(384), 1536);
        assert_eq!(Format::Float16.bytes(384), 768);
        assert_eq!(Format::Int8.bytes(384), 384);
        assert_eq!(Format::Binary.bytes(384), 48);
        // a width that is not a multiple of 8 still takes whole bytes
        assert_eq!(Format::BinaryRescored.bytes(20), 3);
    }

    #[test]
    fn int8_keeps_each_value_within_half_a_step_and_clamps_outside_the_range() {
        let sample = array![[-1.0f32, 0.0], [1.0, 0.0], [0.5, 0.0]];
        let ranges = Int8Ranges::calibrate(sample.view());
        let values = array![[0.3f32, 0.0], [2.0, 7.0], [-3.0, 0.0]];
        let back = stored(Format::Int8, &values, &ranges);
        let step = 2.0 / 255.0;
        assert!(
            (back[[0, 0]] - 0.3).abs() <= step / 2.0 + 1e-6,
            "{}",
            back[[0, 0]]
        );
        assert_eq!(back[[1, 0]], 1.0, "above the range: its top");
        assert_eq!(back[[2, 0]], -1.0, "below the range: its bottom");
        // a constant column keeps its one value
        assert_eq!(back[[1, 1]], 0.0);
    }

    #[test]
    fn binary_scores_are_the_cosine_of_the_signs() {
        let a = array![0.3f32, -0.2, 0.0, 5.0];
        let b = array![0.1f32, 0.4, -1.0, 2.0];
        let stored_a = signs(&a.clone().insert_axis(Axis(0)));
        let stored_b = signs(&b.clone().insert_axis(Axis(0)));
        // signs: + - - +  and  + + - +: three agree, one differs: (3 − 1) / 4
        let score = pair_score(Format::Binary, stored_a.row(0), stored_b.row(0));
        assert_eq!(score, 0.5);
    }

    #[test]
    fn a_cut_is_unit_length() {
        let v = array![[3.0f32, 4.0, 12.0]];
        let c = cut(&v, 2);
        assert_eq!(c, array![[0.6f32, 0.8]]);
    }
}
