//! The report's plots, drawn with plotters into SVG strings that report.html inlines.
//!
//! Input is the reports themselves (similarity, suite, task, report JSON), so the plots show
//! exactly the numbers the tables show.

use anyhow::Result;
use plotters::prelude::*;
use serde_json::Value;

use crate::report::{num, SAGE_COLUMNS};

/// (similarity, suite, task, report).
pub type Entry<'a> = (&'a str, &'a str, &'a str, &'a Value);

fn color(i: usize) -> RGBColor {
    let c = Palette99::pick(i).to_rgba();
    RGBColor(c.0, c.1, c.2)
}

/// Grouped bars: one group per category, one bar per series; `values[s][c]`.
fn grouped_bars(
    title: &str,
    categories: &[&str],
    series: &[(String, Vec<Option<f64>>)],
    y_max: f64,
) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 420)).into_drawing_area();
        root.fill(&WHITE)?;
        let n = categories.len() as f64;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(48)
            // headroom above the tallest possible bar keeps the legend off the bars
            .build_cartesian_2d(-0.5f64..(n - 0.5), 0f64..y_max * 1.4)?;
        let names: Vec<String> = categories.iter().map(|c| c.to_string()).collect();
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(categories.len())
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < names.len() {
                    names[i as usize].clone()
                } else {
                    String::new()
                }
            })
            .y_desc("score")
            .draw()?;
        let width = 0.8 / series.len().max(1) as f64;
        for (s, (name, values)) in series.iter().enumerate() {
            let c = color(s);
            let bars: Vec<Rectangle<(f64, f64)>> = values
                .iter()
                .enumerate()
                .filter_map(|(k, v)| {
                    let v = (*v)?;
                    let x0 = k as f64 - 0.4 + s as f64 * width;
                    Some(Rectangle::new(
                        [(x0, 0.0), (x0 + width * 0.9, v)],
                        c.filled(),
                    ))
                })
                .collect();
            chart
                .draw_series(bars)?
                .label(name.as_str())
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], c.filled()));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()?;
        root.present()?;
    }
    Ok(svg)
}

/// Observed mean similarity against p for one sensitivity family, averaged over datasets, with
/// the expected 1 − p/(1+p).
fn sensitivity_curves(entries: &[Entry<'_>], family: &str) -> Result<Option<String>> {
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    let mut expected: Vec<(f64, f64)> = Vec::new();
    for (similarity, _, _, report) in entries
        .iter()
        .filter(|e| e.1 == "sage" && e.2 == "sensitivity")
    {
        let mut sums: Vec<(f64, f64, usize)> = Vec::new();
        for d in report["datasets"].as_array().into_iter().flatten() {
            for point in d[family]["curve"].as_array().into_iter().flatten() {
                let (Some(p), Some(o), Some(e)) = (
                    num(point, &["proportion"]),
                    num(point, &["observed_mean"]),
                    num(point, &["expected"]),
                ) else {
                    continue;
                };
                match sums.iter_mut().find(|s| s.0 == p) {
                    Some(s) => {
                        s.1 += o;
                        s.2 += 1;
                    }
                    None => sums.push((p, o, 1)),
                }
                if !expected.iter().any(|x| x.0 == p) {
                    expected.push((p, e));
                }
            }
        }
        sums.sort_by(|a, b| a.0.total_cmp(&b.0));
        series.push((
            similarity.to_string(),
            sums.into_iter()
                .map(|(p, o, n)| (p, o / n as f64))
                .collect(),
        ));
    }
    if series.is_empty() {
        return Ok(None);
    }
    expected.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 420)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("Sensitivity ({family}): observed vs expected similarity"),
                ("sans-serif", 20),
            )
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(48)
            .build_cartesian_2d(0f64..1f64, 0f64..1.05f64)?;
        chart
            .configure_mesh()
            .x_desc("perturbation proportion p")
            .y_desc("mean similarity")
            .draw()?;
        chart
            .draw_series(LineSeries::new(expected.clone(), BLACK.stroke_width(2)))?
            .label("expected 1 − p/(1+p)")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], BLACK.stroke_width(2)));
        for (i, (name, points)) in series.iter().enumerate() {
            let c = color(i);
            chart
                .draw_series(LineSeries::new(points.clone(), c.stroke_width(2)))?
                .label(name.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 14, y)], c.stroke_width(2))
                });
            chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, c.filled())))?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()?;
        root.present()?;
    }
    Ok(Some(svg))
}

/// One histogram (bars over bin edges) of ALIGN-SIM's antonym differences.
fn histogram(title: &str, edges: &[f64], counts: &[f64]) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (440, 300)).into_drawing_area();
        root.fill(&WHITE)?;
        let (lo, hi) = (edges[0], edges[edges.len() - 1]);
        let top = counts.iter().copied().fold(0.0, f64::max).max(1.0) * 1.1;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 15))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(40)
            .build_cartesian_2d(lo..hi, 0f64..top)?;
        chart
            .configure_mesh()
            .x_desc("difference")
            .y_desc("pairs")
            .draw()?;
        chart.draw_series(counts.iter().enumerate().map(|(i, &c)| {
            Rectangle::new([(edges[i], 0.0), (edges[i + 1], c)], color(0).filled())
        }))?;
        root.present()?;
    }
    Ok(svg)
}

/// PTEB: per dataset, the original score and the paraphrased mean with a ±std error bar.
fn pteb_chart(
    title: &str,
    datasets: &[String],
    original: &[f64],
    mean: &[f64],
    std: &[f64],
) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 420)).into_drawing_area();
        root.fill(&WHITE)?;
        let n = datasets.len() as f64;
        let lowest = original.iter().chain(mean).copied().fold(0.0f64, f64::min);
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(48)
            .build_cartesian_2d(-0.5f64..(n - 0.5), lowest.min(0.0)..1.3f64)?;
        let names = datasets.to_vec();
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(datasets.len())
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < names.len() {
                    names[i as usize].clone()
                } else {
                    String::new()
                }
            })
            .y_desc("score")
            .draw()?;
        for (s, (label, values)) in [("original", original), ("paraphrased (mean ± std)", mean)]
            .into_iter()
            .enumerate()
        {
            let c = color(s);
            let offset = -0.2 + 0.4 * s as f64;
            chart
                .draw_series(values.iter().enumerate().map(|(k, &v)| {
                    let x = k as f64 + offset;
                    Rectangle::new([(x - 0.18, 0.0), (x + 0.18, v)], c.filled())
                }))?
                .label(label)
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], c.filled()));
        }
        chart.draw_series(mean.iter().zip(std).enumerate().map(|(k, (&m, &sd))| {
            let x = k as f64 + 0.2;
            PathElement::new(vec![(x, m - sd), (x, m + sd)], BLACK.stroke_width(2))
        }))?;
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .border_style(BLACK)
            .background_style(WHITE.mix(0.8))
            .draw()?;
        root.present()?;
    }
    Ok(svg)
}

/// Every plot the results allow: (caption, SVG).
pub fn charts(entries: &[Entry<'_>]) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    // SAGE category bars per similarity
    let mut sage_series: Vec<(String, Vec<Option<f64>>)> = Vec::new();
    for (similarity, suite, task, report) in entries {
        let Some(k) = SAGE_COLUMNS.iter().position(|c| c.0 == *task) else {
            continue;
        };
        if *suite != "sage" {
            continue;
        }
        let slot = match sage_series.iter().position(|s| s.0 == *similarity) {
            Some(i) => i,
            None => {
                sage_series.push((similarity.to_string(), vec![None; SAGE_COLUMNS.len()]));
                sage_series.len() - 1
            }
        };
        sage_series[slot].1[k] = num(report, &["score"]);
    }
    if !sage_series.is_empty() {
        let names: Vec<&str> = SAGE_COLUMNS.iter().map(|c| c.1).collect();
        out.push((
            "SAGE category scores per similarity".to_owned(),
            grouped_bars("SAGE categories", &names, &sage_series, 1.0)?,
        ));
    }
    for family in ["insertion", "removal"] {
        if let Some(svg) = sensitivity_curves(entries, family)? {
            out.push((format!("Sensitivity degradation curves ({family})"), svg));
        }
    }
    // EvalRank MRR / Hits bars per (model, level)
    let evalrank: Vec<(String, Vec<Option<f64>>)> = entries
        .iter()
        .filter(|e| e.1 == "evalrank")
        .map(|(s, _, level, r)| {
            (
                format!("{s} ({level})"),
                vec![
                    num(r, &["scores", "mrr"]),
                    num(r, &["scores", "hits_at_1"]),
                    num(r, &["scores", "hits_at_3"]),
                ],
            )
        })
        .collect();
    if !evalrank.is_empty() {
        out.push((
            "EvalRank MRR and Hits@k".to_owned(),
            grouped_bars(
                "EvalRank (×100)",
                &["MRR", "Hits@1", "Hits@3"],
                &evalrank,
                100.0,
            )?,
        ));
    }
    // PTEB original vs paraphrased, per model
    for (similarity, _, _, report) in entries.iter().filter(|e| e.1 == "pteb") {
        let datasets = report["datasets"].as_array().map_or(&[][..], Vec::as_slice);
        if datasets.is_empty() {
            continue;
        }
        let names: Vec<String> = datasets
            .iter()
            .map(|d| d["dataset"].as_str().unwrap_or("?").to_owned())
            .collect();
        let get = |path: &[&str]| -> Vec<f64> {
            datasets
                .iter()
                .map(|d| num(d, path).unwrap_or(0.0))
                .collect()
        };
        let title = format!("PTEB · {similarity}: original vs paraphrased");
        out.push((
            title.clone(),
            pteb_chart(
                &title,
                &names,
                &get(&["original"]),
                &get(&["paraphrased", "mean"]),
                &get(&["paraphrased", "std"]),
            )?,
        ));
    }
    // ALIGN-SIM antonym-difference histograms, per similarity and dataset
    for (similarity, _, _, report) in entries.iter().filter(|e| e.1 == "align-sim") {
        for d in report["datasets"].as_array().into_iter().flatten() {
            let h = &d["antonym"]["histogram"];
            let edges: Vec<f64> = h["edges"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_f64)
                .collect();
            let counts: Vec<f64> = h["counts"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_f64)
                .collect();
            if edges.len() == counts.len() + 1 && !counts.is_empty() {
                let title = format!(
                    "{similarity} · {}: antonym difference",
                    d["dataset"].as_str().unwrap_or("?")
                );
                out.push((title.clone(), histogram(&title, &edges, &counts)?));
            }
        }
    }
    Ok(out)
}
