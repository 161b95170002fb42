//! The quality–cost table: each similarity's overall score beside what it cost to run, on the
//! host that ran it.

use super::*;
use crate::cost::CostView;

/// A rate to about three significant figures: speeds span 1 to 100,000.
fn rate_text(value: f64) -> String {
    if value >= 100.0 {
        format!("{value:.0}")
    } else if value >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

/// What a model at a lower precision (`NAME@int8`) keeps of its float32 self: the mean over the
/// datasets both compression runs scored of its full-width float32 score over the float32
/// model's, with the variant's result file. `None` for a model at its own precision, or
/// without both runs.
fn kept_of_float32<'a>(files: &'a [ResultFile], similarity: &str) -> Option<(&'a ResultFile, f64)> {
    let (base, _) = similarity.split_once('@')?;
    let compression = |name: &str| {
        files.iter().find_map(|f| match &f.typed {
            Typed::Compression(r) if f.similarity == name && r.applicable => Some((f, r)),
            _ => None,
        })
    };
    let (file, variant) = compression(similarity)?;
    let (_, float32) = compression(base)?;
    let ratios: Vec<f64> = variant
        .datasets
        .iter()
        .filter_map(|d| {
            let reference = float32
                .datasets
                .iter()
                .find(|b| b.dataset == d.dataset)?
                .reference_score;
            (reference > 0.0).then(|| d.reference_score / reference)
        })
        .collect();
    (!ratios.is_empty()).then(|| (file, ratios.iter().sum::<f64>() / ratios.len() as f64))
}

pub(super) fn cost_table(files: &[ResultFile], view: &CostView, sink: &mut Sink) -> Table {
    let mut rows = Vec::new();
    for point in &view.points {
        let throughput = files.iter().find_map(|f| match &f.typed {
            Typed::Throughput(r)
                if f.similarity == point.similarity
                    && point.speed.as_ref().map(|s| &s.host)
                        == crate::cost::speed(r).as_ref().map(|s| &s.host) =>
            {
                Some((f, r.as_ref()))
            }
            _ => None,
        });
        let mut row = vec![
            point.similarity.clone(),
            point.overall.map_or("—".into(), |c| score_text(&c)),
        ];
        row.push(match kept_of_float32(files, &point.similarity) {
            Some((f, kept)) => {
                sink.cell(f, "", "kept of float32", Some(kept));
                format!("{:.1}%", 100.0 * kept)
            }
            None => "—".into(),
        });
        for length in [
            sage_throughput::Length::Short,
            sage_throughput::Length::Medium,
            sage_throughput::Length::Window,
        ] {
            let at = throughput.and_then(|(f, r)| {
                let l = r.lengths.iter().find(|l| l.length == length)?;
                Some((f, l))
            });
            row.push(match at {
                Some((f, l)) => {
                    let measure = format!("per second {} median", length.name());
                    sink.cell(f, "", &measure, Some(l.per_second.median));
                    format!(
                        "{} ±{:.0}%",
                        rate_text(l.per_second.median),
                        50.0 * l.seconds.spread
                    )
                }
                None => "—".into(),
            });
        }
        let mixed = throughput.and_then(|(f, r)| {
            let m = r.mixed.as_ref()?;
            let ratio = m.over_parts();
            sink.cell(f, "", "mixed over parts", Some(ratio));
            Some(format!("{ratio:.2}"))
        });
        row.push(mixed.unwrap_or_else(|| "—".into()));
        let mut figure = |measure: &str, value: Option<f64>, digits: usize| -> String {
            match (throughput, value) {
                (Some((f, _)), Some(v)) => {
                    sink.cell(f, "", measure, Some(v));
                    format!("{v:.digits$}")
                }
                _ => "—".into(),
            }
        };
        let report = throughput.map(|(_, r)| r);
        row.push(figure(
            "latency p50 ms",
            report.and_then(|r| Some(r.latency.as_ref()?.p50_ms)),
            1,
        ));
        row.push(figure(
            "load seconds",
            report.and_then(|r| r.load_seconds),
            2,
        ));
        row.push(figure(
            "peak resident MiB",
            report.and_then(|r| r.peak_resident_mib),
            0,
        ));
        row.push(match point.usd_per_million_tokens {
            Some(usd) => {
                sink.csv.push(CsvLine {
                    similarity: point.similarity.clone(),
                    suite: "throughput".into(),
                    task: "throughput".into(),
                    dataset: String::new(),
                    measure: "usd per million tokens".into(),
                    value: usd,
                });
                format!("${usd:.3}")
            }
            None if point.kind == sage_core::SimilarityKind::Metric || throughput.is_some() => {
                "local".into()
            }
            None => "—".into(),
        });
        let front: Vec<&str> = [(point.speed_front, "speed"), (point.price_front, "price")]
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, what)| *what)
            .collect();
        row.push(if front.is_empty() {
            "—".into()
        } else {
            front.join(", ")
        });
        if view.hosts.len() > 1 {
            row.push(point.speed.as_ref().map_or("—".into(), |s| s.host.clone()));
        }
        rows.push(row);
    }
    let mut note = String::from(
        "What each similarity costs to run, beside its overall score: texts per second (a metric: \
         pairs) at each length (short: at most 32 tokens, ~128, the model's window), the median \
         of the timed runs ± half their spread; mix÷parts: every length in one call over the \
         same texts in separate calls (above 1: mixing lengths costs); p50: single-text latency; \
         load time; peak resident memory; an API model's USD per million tokens billed. Front: \
         no other similarity is both at least as good overall and at least as fast (on the same \
         host) or as cheap. Kept of f32: a model at a lower precision (NAME@int8), its \
         full-width score in the compression suite over its float32 self's, on the datasets \
         both scored; each precision's speeds are its own run's.",
    );
    match view.hosts.as_slice() {
        [] => {}
        [host] => note.push_str(&format!(" Speeds measured on {host}.")),
        hosts => note.push_str(&format!(
            " Measured on {} hosts: speeds are compared only within a host.",
            hosts.len()
        )),
    }
    Table {
        key: "cost",
        title: "Quality and cost".into(),
        note,
        header: [
            "Similarity",
            "Overall [95% CI]",
            "kept of f32",
            "short/s",
            "~128/s",
            "window/s",
            "mix÷parts",
            "p50 ms",
            "load s",
            "peak MiB",
            "$/M tokens",
            "front",
        ]
        .map(String::from)
        .into_iter()
        .chain((view.hosts.len() > 1).then(|| "host".to_owned()))
        .collect(),
        rows,
    }
}
