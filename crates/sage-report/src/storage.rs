//! The bytes-against-score view: what each model keeps when its vectors are stored small (the
//! compression suite's formats and Matryoshka widths), its mean retention over datasets against
//! the bytes one stored vector takes, the front of each model's points, and the answer in one
//! sentence: the fewest bytes at which a model keeps at least [`KEEPS`] of its score.
//!
//! Bytes are compared within a model (its own float32 at full width is 1): two models of
//! different widths store different bytes at the same format, and the share says what a user
//! saves by changing the format, not the model.

use sage_compression::{CompressionReport, Format};
use serde::Serialize;

use crate::load::{ResultFile, Typed};

/// The retention the sentence looks for: a twentieth of the score given up at most.
pub const KEEPS: f64 = 0.95;

/// One format and width of one model.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StoragePoint {
    /// The model.
    pub similarity: String,
    /// The stored format.
    pub format: Format,
    /// Values kept of each vector.
    pub width: usize,
    /// Bytes one stored vector takes.
    pub bytes: usize,
    /// `bytes` over the model's float32 at full width.
    pub share: f64,
    /// Mean retention over the datasets with one, with its paired bootstrap 95% interval.
    pub retention: f64,
    /// The interval.
    pub ci95: Option<(f64, f64)>,
    /// On the model's front: none of its other points keeps as much in as few bytes.
    pub front: bool,
}

/// The view's numbers.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct StorageView {
    /// Every model's points with a retention.
    pub points: Vec<StoragePoint>,
    /// The answer in one sentence per model, when a model ran the suite.
    pub sentence: Option<String>,
}

/// The points of one compression run.
fn points(similarity: &str, report: &CompressionReport) -> Vec<StoragePoint> {
    let full = report
        .points
        .iter()
        .filter(|p| p.format == Format::Float32)
        .map(|p| p.bytes)
        .max()
        .unwrap_or(1)
        .max(1);
    let mut points: Vec<StoragePoint> = report
        .points
        .iter()
        .filter_map(|p| {
            Some(StoragePoint {
                similarity: similarity.to_owned(),
                format: p.format,
                width: p.width,
                bytes: p.bytes,
                share: p.bytes as f64 / full as f64,
                retention: p.retention?,
                ci95: p.ci95.as_ref().map(|c| (c.low, c.high)),
                front: false,
            })
        })
        .collect();
    let beaten: Vec<bool> = points
        .iter()
        .map(|p| {
            points.iter().any(|q| {
                q.bytes <= p.bytes
                    && q.retention >= p.retention
                    && (q.bytes < p.bytes || q.retention > p.retention)
            })
        })
        .collect();
    for (p, beaten) in points.iter_mut().zip(beaten) {
        p.front = !beaten;
    }
    points
}

/// "1/32", "3/8": a share of bytes as a user says it.
fn share_text(share: f64) -> String {
    if share >= 1.0 {
        return "all".into();
    }
    let inverse = 1.0 / share;
    if (inverse - inverse.round()).abs() < 1e-9 {
        format!("1/{:.0}", inverse)
    } else {
        format!("{:.1}%", 100.0 * share)
    }
}

/// What one model keeps below full size, claiming only what the intervals support: the fewest
/// bytes whose interval's low end keeps at least [`KEEPS`]; where only an estimate reaches it,
/// that the sample is too small to tell; where none does, its best point as it is.
fn said(similarity: &str, points: &[&StoragePoint], datasets: &str) -> Option<String> {
    let smaller: Vec<&StoragePoint> = points.iter().copied().filter(|p| p.share < 1.0).collect();
    let interval = |p: &StoragePoint| {
        p.ci95
            .map(|(lo, hi)| format!(" [{:.0}, {:.0}]", 100.0 * lo, 100.0 * hi))
            .unwrap_or_default()
    };
    let at = |p: &StoragePoint| {
        format!(
            "at {} of the bytes ({} × {} values)",
            share_text(p.share),
            p.format.name(),
            p.width
        )
    };
    let over = if datasets.is_empty() {
        String::new()
    } else {
        format!(" over {datasets}")
    };
    let supported = smaller
        .iter()
        .filter(|p| p.ci95.is_some_and(|(lo, _)| lo >= KEEPS))
        .min_by(|a, b| {
            a.bytes
                .cmp(&b.bytes)
                .then(b.retention.total_cmp(&a.retention))
        });
    if let Some(pick) = supported {
        return Some(format!(
            "{}, {similarity} keeps {:.0}%{} of its score{over}",
            at(pick),
            100.0 * pick.retention,
            interval(pick),
        ));
    }
    let best = smaller
        .iter()
        .max_by(|a, b| a.retention.total_cmp(&b.retention))?;
    if best.retention >= KEEPS {
        return Some(format!(
            "{similarity}'s sample is too small to tell whether it keeps {:.0}% of its score \
             below full size{over} (its best estimate, {}, keeps {:.0}%{})",
            100.0 * KEEPS,
            at(best),
            100.0 * best.retention,
            interval(best),
        ));
    }
    Some(format!(
        "{}, {similarity} keeps {:.0}%{} of its score{over}, its most below full size",
        at(best),
        100.0 * best.retention,
        interval(best),
    ))
}

/// The view of `files`' compression runs.
pub(crate) fn view(files: &[ResultFile]) -> StorageView {
    let mut out = StorageView::default();
    let mut sentences = Vec::new();
    for f in files {
        let Typed::Compression(report) = &f.typed else {
            continue;
        };
        if !report.applicable {
            continue;
        }
        let mine = points(&f.similarity, report);
        let datasets: Vec<&str> = report
            .datasets
            .iter()
            .filter(|d| d.score.is_some())
            .map(|d| d.dataset.as_str())
            .collect();
        let refs: Vec<&StoragePoint> = mine.iter().collect();
        if let Some(s) = said(&f.similarity, &refs, &datasets.join(" and ")) {
            sentences.push(s);
        }
        out.points.extend(mine);
    }
    if !sentences.is_empty() {
        let mut text = sentences.join("; ");
        // a sentence starts with a capital
        text[..1].make_ascii_uppercase();
        out.sentence = Some(format!("{text}."));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(format: Format, width: usize, retention: f64) -> StoragePoint {
        StoragePoint {
            similarity: "m".into(),
            format,
            width,
            bytes: format.bytes(width),
            share: format.bytes(width) as f64 / (4.0 * 384.0),
            retention,
            ci95: Some((retention - 0.01, retention + 0.01)),
            front: false,
        }
    }

    #[test]
    fn the_sentence_names_the_fewest_bytes_that_keep_enough() {
        let points = [
            point(Format::Float32, 384, 1.0),
            point(Format::Int8, 384, 0.995),
            point(Format::Binary, 384, 0.90),
            point(Format::BinaryRescored, 384, 0.97),
        ];
        let refs: Vec<&StoragePoint> = points.iter().collect();
        let s = said("m", &refs, "scifact/test").unwrap();
        assert_eq!(
            s,
            "at 1/32 of the bytes (binary-rescored × 384 values), m keeps 97% [96, 98] of its \
             score over scifact/test"
        );
        // nothing keeps enough: the best below full size, said as it is
        let poor = [
            point(Format::Float32, 384, 1.0),
            point(Format::Binary, 384, 0.6),
        ];
        let refs: Vec<&StoragePoint> = poor.iter().collect();
        let s = said("m", &refs, "d").unwrap();
        assert!(
            s.contains("keeps 60% [59, 61] of its score over d, its most"),
            "{s}"
        );
        // an estimate above the mark whose interval reaches below it claims nothing
        let wide = StoragePoint {
            ci95: Some((0.89, 1.14)),
            ..point(Format::Int8, 384, 1.01)
        };
        let refs: Vec<&StoragePoint> = vec![&poor[0], &wide];
        let s = said("glove", &refs, "").unwrap();
        assert!(
            s.starts_with("glove's sample is too small to tell whether it keeps 95%")
                && s.contains("keeps 101% [89, 114]"),
            "{s}"
        );
    }

    #[test]
    fn shares_read_as_fractions() {
        assert_eq!(share_text(1.0 / 32.0), "1/32");
        assert_eq!(share_text(0.25), "1/4");
        assert_eq!(share_text(3.0 / 8.0), "37.5%");
    }
}
