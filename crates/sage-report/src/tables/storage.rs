//! The stored-small table: each model's formats and widths, bytes against retention.

use super::*;
use crate::storage::StorageView;

pub(super) fn storage_table(files: &[ResultFile], view: &StorageView, sink: &mut Sink) -> Table {
    let mut rows = Vec::new();
    for p in &view.points {
        let file = files
            .iter()
            .find(|f| f.similarity == p.similarity && matches!(f.typed, Typed::Compression(_)));
        let measure = format!("retention {} {}", p.format.name(), p.width);
        let text = match file {
            Some(f) => sink.cell(f, "", &measure, Some(p.retention)),
            None => format!("{:.3}", p.retention),
        };
        rows.push(vec![
            p.similarity.clone(),
            p.format.name().to_owned(),
            p.width.to_string(),
            p.bytes.to_string(),
            format!("{:.1}%", 100.0 * p.share),
            match p.ci95 {
                Some((lo, hi)) => format!("{text} [{lo:.3}, {hi:.3}]"),
                None => text,
            },
            if p.front { "yes" } else { "" }.to_owned(),
        ]);
    }
    Table {
        key: "storage",
        title: "Stored small — what each model keeps, bytes against score".into(),
        note: "Each model's vectors stored as float32, float16, int8 (ranges calibrated on a \
               seeded sample of the stored vectors), binary (signs, Hamming) and binary \
               re-ranked by the float query, at each Matryoshka width (first N values, \
               renormalised). Retention = the task's score on what the store gives back / its \
               float32 score at full width, averaged over the datasets with one, with a 95% \
               paired bootstrap interval. Share: bytes per vector over the model's own float32. \
               Front: none of the model's other points keeps as much in as few bytes."
            .into(),
        header: [
            "Similarity",
            "Format",
            "Width",
            "Bytes/vector",
            "Share of float32",
            "Retention [95% CI]",
            "Front",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }
}
