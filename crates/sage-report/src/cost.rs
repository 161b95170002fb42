//! The quality–cost view: the overall SAGE score set against what a similarity costs to run,
//! texts per second on the host that measured it (local models, metrics) and USD per million
//! tokens (API models), with the Pareto front and the best buy in one sentence.
//!
//! Speeds are only compared on one host: the throughput suite's figures are grouped by the
//! machine (CPU, cores, GPUs, threads) they were measured on, and a similarity measured on two
//! hosts appears once per host. The speed is texts per second at about 128 tokens (a metric:
//! pairs per second), the median run, its error bar the range of the runs; the price is the
//! throughput sample's, else what any of the similarity's jobs was billed per token.

use sage_core::SimilarityKind;
use sage_throughput::{Length, ThroughputReport};
use serde::Serialize;

use crate::load::{ResultFile, Typed};
use crate::ranking::{Cell, Ranking};

/// The lengths whose speed the view plots, by preference: SAGE's texts are mostly sentences to
/// paragraphs (~128 tokens); data with no text that long is plotted at its short texts, on an
/// axis of its own.
pub(crate) const SPEED_LENGTHS: [Length; 2] = [Length::Medium, Length::Short];

/// A similarity's speed on one host.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Speed {
    /// Texts per second (a metric: pairs) at about 128 tokens, the median run.
    pub median: f64,
    /// The same at the slowest run.
    pub slowest: f64,
    /// The same at the fastest run.
    pub fastest: f64,
    /// The machine and the threads the run could use, and the length timed: speeds are
    /// compared only between equal `host`s.
    pub host: String,
    /// The length timed.
    pub length: Length,
}

/// One similarity on the quality–cost view.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CostPoint {
    /// The similarity.
    pub similarity: String,
    /// A metric or a model.
    pub kind: SimilarityKind,
    /// Its overall SAGE score, when it has all five categories.
    pub overall: Option<Cell>,
    /// Its speed, when the throughput suite ran for it.
    pub speed: Option<Speed>,
    /// What an API model costs per million tokens billed, when it was billed.
    pub usd_per_million_tokens: Option<f64>,
    /// On the front of overall score against speed (on its host): no other similarity is both
    /// at least as good and at least as fast.
    pub speed_front: bool,
    /// On the front of overall score against price.
    pub price_front: bool,
}

/// The quality–cost view's numbers.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CostView {
    /// One point per similarity and host.
    pub points: Vec<CostPoint>,
    /// The hosts speeds were measured on, in the order of the points.
    pub hosts: Vec<String>,
    /// The best buy in one sentence, when there is something to weigh.
    pub sentence: Option<String>,
}

/// The machine a throughput was measured on, as the view names it: a model run on a GPU is on
/// another axis than the CPU runs of the same host.
fn host_name(report: &ThroughputReport) -> String {
    let device = report
        .compute
        .as_deref()
        .and_then(|c| c.split(' ').next())
        .filter(|d| *d != "cpu");
    format!(
        "{}, {} thread{}{}",
        crate::load::host_text(&report.host),
        report.threads,
        if report.threads == 1 { "" } else { "s" },
        device.map(|d| format!(", on {d}")).unwrap_or_default()
    )
}

/// The speed of a throughput report at the first of [`SPEED_LENGTHS`] it timed.
pub(crate) fn speed(report: &ThroughputReport) -> Option<Speed> {
    let at = SPEED_LENGTHS
        .iter()
        .find_map(|&length| report.lengths.iter().find(|l| l.length == length))?;
    let slowest = at.seconds.runs.iter().copied().fold(0.0, f64::max);
    Some(Speed {
        median: at.per_second.median,
        slowest: at.texts as f64 / slowest.max(f64::MIN_POSITIVE),
        fastest: at.per_second.best,
        host: format!("{}, {} texts", host_name(report), at.length.name()),
        length: at.length,
    })
}

/// USD per million tokens billed to `similarity`: the throughput sample's price, else the
/// bill of any of its jobs.
fn price(files: &[ResultFile], similarity: &str) -> Option<f64> {
    let mine = files.iter().filter(|f| f.similarity == similarity);
    let sampled = mine.clone().find_map(|f| match &f.typed {
        Typed::Throughput(r) => r.remote.as_ref()?.usd_per_million_tokens,
        _ => None,
    });
    sampled.or_else(|| {
        let (mut usd, mut tokens) = (0.0, 0u64);
        for (t, c) in mine.flat_map(|f| f.envelope.billed()) {
            usd += c;
            tokens += t;
        }
        (tokens > 0).then(|| usd / tokens as f64 * 1e6)
    })
}

/// Whether `a` is at least as good as `b` on both axes and better on one (`higher_better` for
/// the cost axis: speed yes, price no).
fn dominates(a: (f64, f64), b: (f64, f64), higher_better: bool) -> bool {
    let (ca, cb) = if higher_better {
        (a.1, b.1)
    } else {
        (-a.1, -b.1)
    };
    a.0 >= b.0 && ca >= cb && (a.0 > b.0 || ca > cb)
}

/// Marks the points no other point (`group`: on the same host) dominates.
fn mark_front(
    points: &mut [CostPoint],
    cost: impl Fn(&CostPoint) -> Option<f64>,
    higher_better: bool,
    group: impl Fn(&CostPoint) -> Option<&str>,
    mut set: impl FnMut(&mut CostPoint),
) {
    let coordinates: Vec<Option<(f64, f64, Option<String>)>> = points
        .iter()
        .map(|p| Some((p.overall?.score, cost(p)?, group(p).map(str::to_owned))))
        .collect();
    for i in 0..points.len() {
        let Some((score, c, host)) = &coordinates[i] else {
            continue;
        };
        let beaten = coordinates.iter().enumerate().any(|(j, other)| {
            other.as_ref().is_some_and(|(s, oc, oh)| {
                j != i && oh == host && dominates((*s, *oc), (*score, *c), higher_better)
            })
        });
        if !beaten {
            set(&mut points[i]);
        }
    }
}

/// The view of `files`, its sentence weighing the ranking's best against the others.
pub(crate) fn view(files: &[ResultFile], ranking: &Ranking) -> CostView {
    let mut points: Vec<CostPoint> = Vec::new();
    let overall = |s: &str| {
        ranking
            .ranked
            .iter()
            .find(|r| r.similarity == s)
            .map(|r| r.overall)
    };
    for f in files {
        let Typed::Throughput(report) = &f.typed else {
            continue;
        };
        points.push(CostPoint {
            similarity: f.similarity.clone(),
            kind: f.envelope.similarity.kind,
            overall: overall(&f.similarity),
            speed: speed(report),
            usd_per_million_tokens: price(files, &f.similarity),
            speed_front: false,
            price_front: false,
        });
    }
    // an API model ranked without a throughput run is still on the price axis
    for r in &ranking.ranked {
        if points.iter().any(|p| p.similarity == r.similarity) {
            continue;
        }
        if let Some(usd) = price(files, &r.similarity) {
            points.push(CostPoint {
                similarity: r.similarity.clone(),
                kind: SimilarityKind::Model,
                overall: Some(r.overall),
                speed: None,
                usd_per_million_tokens: Some(usd),
                speed_front: false,
                price_front: false,
            });
        }
    }
    mark_front(
        &mut points,
        |p| Some(p.speed.as_ref()?.median),
        true,
        |p| p.speed.as_ref().map(|s| s.host.as_str()),
        |p| p.speed_front = true,
    );
    mark_front(
        &mut points,
        |p| p.usd_per_million_tokens,
        false,
        |_| None,
        |p| p.price_front = true,
    );
    let mut hosts: Vec<String> = Vec::new();
    for p in &points {
        if let Some(s) = &p.speed {
            if !hosts.contains(&s.host) {
                hosts.push(s.host.clone());
            }
        }
    }
    let sentence = sentence(&points, ranking);
    CostView {
        points,
        hosts,
        sentence,
    }
}

/// Whether a ranked similarity other than `best` was timed on `host`.
fn timed_beside(points: &[CostPoint], best: &str, host: &str) -> bool {
    points.iter().any(|p| {
        p.similarity != best
            && p.overall.is_some()
            && p.speed.as_ref().is_some_and(|s| s.host == host)
    })
}

/// The best buy against the best overall: the fastest (then the cheapest) similarity the
/// ranking cannot tell from the best, else the fastest on the front, with what it gives up.
fn sentence(points: &[CostPoint], ranking: &Ranking) -> Option<String> {
    let best = ranking.ranked.first()?;
    let best_point = points.iter().find(|p| p.similarity == best.similarity);
    let gap = |p: &CostPoint| -> Option<(f64, Option<(f64, bool)>)> {
        let score = p.overall?.score;
        let test = ranking
            .comparisons
            .iter()
            .find(|c| c.higher == best.similarity && c.lower == p.similarity)
            .map(|c| (c.p_holm, c.significant));
        Some((best.overall.score - score, test))
    };
    let said = |p: &CostPoint, ratio: f64, what: &str| -> Option<String> {
        let (behind, test) = gap(p)?;
        let difference = match test {
            Some((p_holm, false)) => format!(
                "{behind:.3} below the best overall, not a significant difference (Holm p = \
                 {p_holm:.2})"
            ),
            Some((p_holm, true)) => {
                format!("{behind:.3} below the best overall (significant, Holm p = {p_holm:.3})")
            }
            None => format!("{behind:.3} below the best overall (not compared)"),
        };
        Some(format!(
            "{} is {difference}, at {ratio:.1}× {}'s {what}.",
            p.similarity, best.similarity
        ))
    };
    let mut out = Vec::new();
    // speed, on the best's host
    if let Some(best_speed) = best_point.and_then(|p| p.speed.as_ref()) {
        let faster: Vec<&CostPoint> = points
            .iter()
            .filter(|p| p.similarity != best.similarity && p.overall.is_some())
            .filter(|p| {
                p.speed
                    .as_ref()
                    .is_some_and(|s| s.host == best_speed.host && s.median > best_speed.median)
            })
            .collect();
        fn fastest_of(v: Vec<&CostPoint>) -> Option<&CostPoint> {
            let s = |p: &CostPoint| p.speed.as_ref().map_or(0.0, |s| s.median);
            v.into_iter().max_by(|a, b| s(a).total_cmp(&s(b)))
        }
        let tied = faster
            .iter()
            .copied()
            .filter(|p| matches!(gap(p), Some((_, Some((_, false))))))
            .collect();
        let pick = fastest_of(tied)
            .or_else(|| fastest_of(faster.iter().copied().filter(|p| p.speed_front).collect()));
        match pick {
            Some(p) => {
                let ratio = p.speed.as_ref().map_or(0.0, |s| s.median) / best_speed.median;
                out.extend(said(p, ratio, "speed"));
            }
            None if timed_beside(points, &best.similarity, &best_speed.host) => out.push(format!(
                "{} is also the fastest of the ranked similarities timed on its host.",
                best.similarity
            )),
            // timed alone: there is nothing to weigh it against
            None => {}
        }
    }
    // price, among billed models
    if let Some(best_price) = best_point.and_then(|p| p.usd_per_million_tokens) {
        let cheaper = points
            .iter()
            .filter(|p| p.similarity != best.similarity)
            .filter(|p| p.usd_per_million_tokens.is_some_and(|u| u < best_price))
            .filter(|p| matches!(gap(p), Some((_, Some((_, false))))))
            .min_by(|a, b| {
                a.usd_per_million_tokens
                    .unwrap_or(f64::INFINITY)
                    .total_cmp(&b.usd_per_million_tokens.unwrap_or(f64::INFINITY))
            });
        if let Some(p) = cheaper {
            let usd = p.usd_per_million_tokens.unwrap_or(best_price);
            out.extend(said(
                p,
                usd / best_price,
                &format!("price (${usd:.3} vs ${best_price:.3} per million tokens)"),
            ));
        }
    }
    (!out.is_empty()).then(|| out.join(" "))
}
