//! The report's plots, drawn with plotters into SVG strings that report.html inlines beside the
//! tables they explain.
//!
//! Input is the reports themselves, so the plots show exactly the numbers the tables show. Every
//! similarity keeps one colour in every plot (the page's colour key says which), and a score axis
//! ends where the score can end: a score in [0, 1] is drawn on 0–1, never on 0–1.4.

use plotters::prelude::*;

use crate::load::{ResultFile, Typed};
use crate::Result;
use sage_measures::BootstrapInterval;

/// Okabe–Ito: eight colours told apart with every common colour-vision deficiency.
const OKABE_ITO: [(u8, u8, u8); 8] = [
    (0, 114, 178),
    (230, 159, 0),
    (0, 158, 115),
    (204, 121, 167),
    (86, 180, 233),
    (213, 94, 0),
    (240, 228, 66),
    (0, 0, 0),
];

/// Grey for what is not a similarity (the original condition, the expected curve).
const NEUTRAL: RGBColor = RGBColor(150, 150, 150);

/// One colour per similarity, the same in every plot and in the page's colour key.
pub(crate) struct Palette {
    names: Vec<String>,
}

impl Palette {
    /// Colours assigned in `names`' order (the report's similarity order).
    pub(crate) fn new(names: &[String]) -> Palette {
        Palette {
            names: names.to_vec(),
        }
    }

    /// The similarities, in colour order.
    pub(crate) fn names(&self) -> &[String] {
        &self.names
    }

    /// The colour of `similarity` (a name not in the palette gets the next free colour).
    pub(crate) fn colour(&self, similarity: &str) -> RGBColor {
        let i = self
            .names
            .iter()
            .position(|n| n == similarity)
            .unwrap_or(self.names.len());
        match OKABE_ITO.get(i) {
            Some(&(r, g, b)) => RGBColor(r, g, b),
            None => {
                let c =
                    <Palette99 as plotters::style::Palette>::pick(i - OKABE_ITO.len()).to_rgba();
                RGBColor(c.0, c.1, c.2)
            }
        }
    }

    /// `#rrggbb` of [`Palette::colour`].
    pub(crate) fn hex(&self, similarity: &str) -> String {
        let RGBColor(r, g, b) = self.colour(similarity);
        format!("#{r:02x}{g:02x}{b:02x}")
    }
}

/// One plot, and the table it goes beside.
pub(crate) struct Chart {
    /// The [`crate::tables::Table::key`] of the table it explains.
    pub(crate) beside: &'static str,
    /// Its caption.
    pub(crate) caption: String,
    /// The SVG document.
    pub(crate) svg: String,
}

/// Width of the key drawn to the right of a plot.
const KEY_WIDTH: u32 = 170;
/// Plot size: small enough to sit beside its table on a laptop screen.
const SIZE: (u32, u32) = (580, 300);

/// A key to the right of the plot area: a swatch (a bar, or a line) and a name per entry.
fn draw_key<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    entries: &[(String, RGBColor, bool)],
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    for (k, (name, colour, line)) in entries.iter().enumerate() {
        let y = 40 + 20 * k as i32;
        if *line {
            area.draw(&PathElement::new(
                vec![(6, y), (24, y)],
                colour.stroke_width(3),
            ))?;
        } else {
            area.draw(&Rectangle::new([(8, y - 6), (20, y + 6)], colour.filled()))?;
        }
        // long model paths: the last segment names the model
        let short: String = name
            .rsplit('/')
            .next()
            .unwrap_or(name)
            .chars()
            .take(24)
            .collect();
        area.draw(&Text::new(short, (30, y - 7), ("sans-serif", 13)))?;
    }
    Ok(())
}

/// Category labels on an integer x axis.
fn category_label(names: &[String], x: f64) -> String {
    let i = x.round();
    if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < names.len() {
        names[i as usize].clone()
    } else {
        String::new()
    }
}

/// Grouped bars: one group per category, one bar per series (`values[c]`), on 0..y_max.
fn grouped_bars(
    title: &str,
    categories: &[&str],
    series: &[(String, RGBColor, Vec<Option<f64>>)],
    y_max: f64,
    y_desc: &str,
) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE)?;
        let (plot, key) = root.split_horizontally(SIZE.0 - KEY_WIDTH);
        let n = categories.len() as f64;
        let mut chart = ChartBuilder::on(&plot)
            .caption(title, ("sans-serif", 17))
            .margin(10)
            .x_label_area_size(32)
            .y_label_area_size(48)
            .build_cartesian_2d(-0.5f64..(n - 0.5), 0f64..y_max)?;
        let names: Vec<String> = categories.iter().map(|c| c.to_string()).collect();
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(categories.len())
            .x_label_formatter(&|x| category_label(&names, *x))
            .y_desc(y_desc)
            .draw()?;
        let width = 0.8 / series.len().max(1) as f64;
        for (s, (_, colour, values)) in series.iter().enumerate() {
            chart.draw_series(values.iter().enumerate().filter_map(|(k, v)| {
                let x0 = k as f64 - 0.4 + s as f64 * width;
                Some(Rectangle::new(
                    [(x0, 0.0), (x0 + width * 0.9, (*v)?.min(y_max))],
                    colour.filled(),
                ))
            }))?;
        }
        let entries: Vec<(String, RGBColor, bool)> = series
            .iter()
            .map(|(n, c, _)| (n.clone(), *c, false))
            .collect();
        draw_key(&key, &entries)?;
        root.present()?;
    }
    Ok(svg)
}

/// Observed mean similarity against p for one sensitivity family, averaged over datasets, with
/// the expected 1 − p/(1+p).
fn sensitivity_curves(
    files: &[ResultFile],
    palette: &Palette,
    family: &str,
) -> Result<Option<String>> {
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    let mut expected: Vec<(f64, f64)> = Vec::new();
    for (f, report) in files.iter().filter_map(|f| match &f.typed {
        Typed::Sensitivity(report) => Some((f, report)),
        _ => None,
    }) {
        let mut sums: Vec<(f64, f64, usize)> = Vec::new();
        for d in &report.datasets {
            let family_report = match family {
                "insertion" => &d.insertion,
                _ => &d.removal,
            };
            for point in &family_report.curve {
                let (p, o, e) = (point.proportion, point.observed_mean, point.expected);
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
            f.similarity.clone(),
            sums.into_iter()
                .map(|(p, o, n)| (p, o / n as f64))
                .collect(),
        ));
    }
    if series.is_empty() {
        return Ok(None);
    }
    expected.sort_by(|a, b| a.0.total_cmp(&b.0));
    // a similarity can go below 0 (cosine): the axis starts where the data does, else at 0
    let lowest = series
        .iter()
        .flat_map(|s| s.1.iter().map(|p| p.1))
        .fold(0.0f64, f64::min);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE)?;
        let (plot, key) = root.split_horizontally(SIZE.0 - KEY_WIDTH);
        let mut chart = ChartBuilder::on(&plot)
            .caption(
                format!("Sensitivity ({family}): observed vs expected"),
                ("sans-serif", 17),
            )
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(48)
            .build_cartesian_2d(0f64..1f64, lowest..1f64)?;
        chart
            .configure_mesh()
            .x_desc("perturbation proportion p")
            .y_desc("mean similarity")
            .draw()?;
        chart.draw_series(LineSeries::new(expected.clone(), NEUTRAL.stroke_width(3)))?;
        let mut entries = vec![("expected 1 − p/(1+p)".to_owned(), NEUTRAL, true)];
        for (name, points) in &series {
            let c = palette.colour(name);
            chart.draw_series(LineSeries::new(points.clone(), c.stroke_width(2)))?;
            chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, c.filled())))?;
            entries.push((name.clone(), c, true));
        }
        draw_key(&key, &entries)?;
        root.present()?;
    }
    Ok(Some(svg))
}

/// One histogram (bars over bin edges) of ALIGN-SIM's antonym differences.
fn histogram(title: &str, edges: &[f64], counts: &[f64], colour: RGBColor) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (420, 280)).into_drawing_area();
        root.fill(&WHITE)?;
        let (lo, hi) = (edges[0], edges[edges.len() - 1]);
        let top = counts.iter().copied().fold(0.0, f64::max).max(1.0);
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 14))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(40)
            .build_cartesian_2d(lo..hi, 0f64..top)?;
        chart
            .configure_mesh()
            .x_desc("sim(S, paraphrase) − sim(S, antonym)")
            .y_desc("pairs")
            .draw()?;
        chart.draw_series(counts.iter().enumerate().map(|(i, &c)| {
            Rectangle::new([(edges[i], 0.0), (edges[i + 1], c)], colour.filled())
        }))?;
        root.present()?;
    }
    Ok(svg)
}

/// PTEB, one model: per dataset, the original score (grey) and the paraphrased mean (the model's
/// colour) with a ±std bar.
fn pteb_chart(
    title: &str,
    datasets: &[String],
    original: &[f64],
    mean: &[f64],
    std: &[f64],
    colour: RGBColor,
) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE)?;
        let (plot, key) = root.split_horizontally(SIZE.0 - KEY_WIDTH);
        let n = datasets.len() as f64;
        // main scores are in [−1, 1] (a correlation can be negative): 0–1 unless one is below 0
        let lowest = original
            .iter()
            .zip(mean.iter().zip(std))
            .map(|(o, (m, s))| o.min(m - s))
            .fold(0.0f64, f64::min);
        let mut chart = ChartBuilder::on(&plot)
            .caption(title, ("sans-serif", 17))
            .margin(10)
            .x_label_area_size(32)
            .y_label_area_size(48)
            .build_cartesian_2d(-0.5f64..(n - 0.5), lowest..1f64)?;
        let names = datasets.to_vec();
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(datasets.len())
            .x_label_formatter(&|x| category_label(&names, *x))
            .y_desc("main score")
            .draw()?;
        for (values, c, offset) in [(original, NEUTRAL, -0.2), (mean, colour, 0.2)] {
            chart.draw_series(values.iter().enumerate().map(|(k, &v)| {
                let x = k as f64 + offset;
                Rectangle::new([(x - 0.18, 0.0), (x + 0.18, v)], c.filled())
            }))?;
        }
        chart.draw_series(mean.iter().zip(std).enumerate().map(|(k, (&m, &sd))| {
            let x = k as f64 + 0.2;
            PathElement::new(
                vec![(x, (m - sd).max(lowest)), (x, (m + sd).min(1.0))],
                BLACK.stroke_width(2),
            )
        }))?;
        draw_key(
            &key,
            &[
                ("original".to_owned(), NEUTRAL, false),
                ("paraphrased (mean ± std)".to_owned(), colour, false),
            ],
        )?;
        root.present()?;
    }
    Ok(svg)
}

/// One channel's retention curves: a line per (similarity, dataset), the similarity's colour,
/// the dataset's marker (circle, triangle, square, ...), the 95% interval as a band.
fn noise_curves(
    channel: &str,
    runs: &[(&ResultFile, &sage_noise::NoiseReport)],
    palette: &Palette,
) -> Result<Option<String>> {
    let mut datasets: Vec<&str> = Vec::new();
    // (similarity, dataset index, axis, points)
    let mut series = Vec::new();
    for (f, r) in runs {
        for d in &r.datasets {
            // a dataset whose clean score is not clearly above zero has no retention to draw
            let Some(c) = d
                .channels
                .iter()
                .find(|c| c.channel == channel && c.area.is_some())
            else {
                continue;
            };
            let at = match datasets.iter().position(|n| *n == d.dataset) {
                Some(i) => i,
                None => {
                    datasets.push(&d.dataset);
                    datasets.len() - 1
                }
            };
            let points: Vec<(f64, f64, Option<BootstrapInterval>)> = c
                .points
                .iter()
                .filter_map(|p| Some((p.level, p.retention?, p.ci95)))
                .collect();
            series.push((f.similarity.as_str(), at, c.axis, points));
        }
    }
    let Some(&(_, _, axis, _)) = series.first() else {
        return Ok(None);
    };
    let x_max = series
        .iter()
        .flat_map(|s| s.3.iter().map(|p| p.0))
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let y_max = series
        .iter()
        .flat_map(|s| s.3.iter().map(|p| p.2.map_or(p.1, |c| c.high)))
        .fold(1.0f64, f64::max)
        .min(2.0);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE)?;
        let (plot, key) = root.split_horizontally(SIZE.0 - KEY_WIDTH);
        let mut chart = ChartBuilder::on(&plot)
            .caption(format!("Noise: {channel}"), ("sans-serif", 17))
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(48)
            .build_cartesian_2d(0f64..x_max, 0f64..y_max)?;
        chart
            .configure_mesh()
            .x_desc(match axis {
                sage_noise::Axis::Rate => "rate (share of units touched)",
                sage_noise::Axis::Tokens => "padded length (cl100k tokens)",
            })
            .y_desc("retention")
            .draw()?;
        let mut entries = Vec::new();
        for (similarity, at, _, points) in &series {
            let c = palette.colour(similarity);
            let band: Vec<(f64, f64)> = points
                .iter()
                .map(|p| (p.0, p.2.map_or(p.1, |ci| ci.high)))
                .chain(
                    points
                        .iter()
                        .rev()
                        .map(|p| (p.0, p.2.map_or(p.1, |ci| ci.low))),
                )
                .collect();
            chart.draw_series(std::iter::once(Polygon::new(band, c.mix(0.15).filled())))?;
            let line: Vec<(f64, f64)> = points.iter().map(|p| (p.0, p.1)).collect();
            chart.draw_series(LineSeries::new(line.clone(), c.stroke_width(2)))?;
            match at % 3 {
                0 => chart.draw_series(line.iter().map(|&p| Circle::new(p, 3, c.filled())))?,
                1 => chart
                    .draw_series(line.iter().map(|&p| TriangleMarker::new(p, 4, c.filled())))?,
                _ => {
                    chart.draw_series(line.iter().map(|&p| Cross::new(p, 4, c.stroke_width(2))))?
                }
            };
            let name = similarity.rsplit('/').next().unwrap_or(similarity);
            let dataset = datasets[*at].split('/').next().unwrap_or(datasets[*at]);
            entries.push((format!("{name} · {dataset}"), c, true));
        }
        draw_key(&key, &entries)?;
        root.present()?;
    }
    Ok(Some(svg))
}

/// Every plot the results allow, each with the table it goes beside.
pub(crate) fn charts(files: &[ResultFile], palette: &Palette) -> Result<Vec<Chart>> {
    let mut out = Vec::new();
    for (family, beside) in [
        ("insertion", "sensitivity-insertion"),
        ("removal", "sensitivity-removal"),
    ] {
        if let Some(svg) = sensitivity_curves(files, palette, family)? {
            out.push(Chart {
                beside,
                caption: format!("Sensitivity degradation curves ({family})"),
                svg,
            });
        }
    }
    // EvalRank MRR / Hits bars per (model, level), in the model's colour
    let evalrank: Vec<(String, RGBColor, Vec<Option<f64>>)> = files
        .iter()
        .filter_map(|f| match &f.typed {
            Typed::EvalRank(r) => Some((
                format!("{} ({})", f.similarity, f.task),
                palette.colour(&f.similarity),
                vec![
                    Some(r.scores.mrr),
                    Some(r.scores.hits_at_1),
                    Some(r.scores.hits_at_3),
                ],
            )),
            _ => None,
        })
        .collect();
    if !evalrank.is_empty() {
        out.push(Chart {
            beside: "evalrank",
            caption: "EvalRank MRR and Hits@k".to_owned(),
            svg: grouped_bars(
                "EvalRank",
                &["MRR", "Hits@1", "Hits@3"],
                &evalrank,
                100.0,
                "×100",
            )?,
        });
    }
    // PTEB original vs paraphrased, per model
    for (f, report) in files.iter().filter_map(|f| match &f.typed {
        Typed::Pteb(report) => Some((f, report)),
        _ => None,
    }) {
        let datasets = &report.datasets;
        if datasets.is_empty() {
            continue;
        }
        let names: Vec<String> = datasets.iter().map(|d| d.name()).collect();
        let get = |value: fn(&pteb::DatasetResult) -> f64| -> Vec<f64> {
            datasets.iter().map(value).collect()
        };
        let title = format!("PTEB · {}", f.similarity);
        out.push(Chart {
            beside: "pteb",
            caption: format!("{title}: original vs paraphrased"),
            svg: pteb_chart(
                &title,
                &names,
                &get(|d| d.original),
                &get(|d| d.paraphrased.mean),
                &get(|d| d.paraphrased.std),
                palette.colour(&f.similarity),
            )?,
        });
    }
    // noise: one retention plot per channel, every similarity and dataset on it
    let noise: Vec<(&ResultFile, &sage_noise::NoiseReport)> = files
        .iter()
        .filter_map(|f| match &f.typed {
            Typed::Noise(r) => Some((f, r.as_ref())),
            _ => None,
        })
        .collect();
    let mut channels: Vec<&str> = Vec::new();
    for (_, r) in &noise {
        for c in r.datasets.iter().flat_map(|d| &d.channels) {
            if !channels.contains(&c.channel.as_str()) {
                channels.push(&c.channel);
            }
        }
    }
    for channel in channels {
        if let Some(svg) = noise_curves(channel, &noise, palette)? {
            out.push(Chart {
                beside: "noise",
                caption: format!("Retention under {channel}, 95% intervals as bands"),
                svg,
            });
        }
    }
    // ALIGN-SIM antonym-difference histograms, per similarity and dataset
    for (f, report) in files.iter().filter_map(|f| match &f.typed {
        Typed::AlignSim(report) => Some((f, report)),
        _ => None,
    }) {
        for d in &report.datasets {
            let h = &d.antonym.histogram;
            let edges = &h.edges;
            let counts: Vec<f64> = h.counts.iter().map(|&c| c as f64).collect();
            if edges.len() == counts.len() + 1 && !counts.is_empty() {
                let title = format!(
                    "{} · {}: antonym difference",
                    f.similarity.rsplit('/').next().unwrap_or(&f.similarity),
                    d.dataset
                );
                out.push(Chart {
                    beside: "align-sim",
                    caption: title.clone(),
                    svg: histogram(&title, edges, &counts, palette.colour(&f.similarity))?,
                });
            }
        }
    }
    Ok(out)
}

/// Overall score against a cost (log axis): each similarity in its colour with its interval
/// and, on the speed axis, the range of its timed runs as error bars; the front joined.
struct CostAxis {
    title: String,
    x_desc: String,
    points: Vec<CostMark>,
}

/// One similarity on a cost plot.
struct CostMark {
    similarity: String,
    overall: f64,
    interval: Option<(f64, f64)>,
    cost: f64,
    /// The cost's error bar (the slowest and the fastest run).
    bar: Option<(f64, f64)>,
    front: bool,
}

fn cost_chart(axis: &CostAxis, palette: &Palette) -> Result<String> {
    let costs = axis
        .points
        .iter()
        .flat_map(|p| [Some(p.cost), p.bar.map(|e| e.0), p.bar.map(|e| e.1)])
        .flatten()
        .filter(|c| *c > 0.0);
    let (lo, hi) = costs.fold((f64::INFINITY, 0.0f64), |(lo, hi), c| {
        (lo.min(c), hi.max(c))
    });
    // a decade of room each side at most, a third of one at least, so labels fit
    let (x_lo, x_hi) = (lo / 1.6, hi * 1.6);
    let scores = axis.points.iter().flat_map(|p| {
        [
            p.overall,
            p.interval.map_or(p.overall, |c| c.0),
            p.interval.map_or(p.overall, |c| c.1),
        ]
    });
    let (y_lo, y_hi) = scores.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), s| {
        (lo.min(s), hi.max(s))
    });
    let pad = ((y_hi - y_lo) * 0.15).max(0.01);
    let (y_lo, y_hi) = ((y_lo - pad).max(0.0), (y_hi + pad).min(1.0));
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE)?;
        let (plot, key) = root.split_horizontally(SIZE.0 - KEY_WIDTH);
        let mut chart = ChartBuilder::on(&plot)
            .caption(&axis.title, ("sans-serif", 15))
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(48)
            .build_cartesian_2d((x_lo..x_hi).log_scale(), y_lo..y_hi)?;
        chart
            .configure_mesh()
            .x_desc(&axis.x_desc)
            .y_desc("overall SAGE score")
            .x_label_formatter(&|x| {
                if *x >= 100.0 {
                    format!("{x:.0}")
                } else {
                    format!("{x:.2}")
                }
            })
            .draw()?;
        let mut front: Vec<(f64, f64)> = axis
            .points
            .iter()
            .filter(|p| p.front)
            .map(|p| (p.cost, p.overall))
            .collect();
        front.sort_by(|a, b| a.0.total_cmp(&b.0));
        if front.len() > 1 {
            chart.draw_series(LineSeries::new(front, NEUTRAL.stroke_width(2)))?;
        }
        let mut entries = Vec::new();
        for CostMark {
            similarity: name,
            overall: score,
            interval,
            cost,
            bar,
            front: on_front,
        } in &axis.points
        {
            let c = palette.colour(name);
            if let Some((low, high)) = interval {
                chart.draw_series(std::iter::once(PathElement::new(
                    vec![(*cost, *low), (*cost, *high)],
                    c.stroke_width(2),
                )))?;
            }
            if let Some((slow, fast)) = bar {
                chart.draw_series(std::iter::once(PathElement::new(
                    vec![(*slow, *score), (*fast, *score)],
                    c.stroke_width(2),
                )))?;
            }
            let size = if *on_front { 6 } else { 4 };
            chart.draw_series(std::iter::once(Circle::new(
                (*cost, *score),
                size,
                c.filled(),
            )))?;
            if *on_front {
                chart.draw_series(std::iter::once(Circle::new(
                    (*cost, *score),
                    size + 3,
                    BLACK.stroke_width(1),
                )))?;
            }
            entries.push((name.clone(), c, false));
        }
        draw_key(&key, &entries)?;
        root.present()?;
    }
    Ok(svg)
}

/// The quality–cost plots: overall score against speed, one plot per host, and against price
/// when API models were billed.
pub(crate) fn cost_charts(view: &crate::cost::CostView, palette: &Palette) -> Result<Vec<Chart>> {
    let mut out = Vec::new();
    for host in &view.hosts {
        let length = view
            .points
            .iter()
            .filter_map(|p| p.speed.as_ref())
            .find(|s| &s.host == host)
            .map_or("", |s| s.length.name());
        let points: Vec<_> = view
            .points
            .iter()
            .filter_map(|p| {
                let overall = p.overall?;
                let speed = p.speed.as_ref().filter(|s| &s.host == host)?;
                Some(CostMark {
                    similarity: p.similarity.clone(),
                    overall: overall.score,
                    interval: overall.ci95,
                    cost: speed.median,
                    bar: Some((speed.slowest, speed.fastest)),
                    front: p.speed_front,
                })
            })
            .collect();
        if points.is_empty() {
            continue;
        }
        let axis = CostAxis {
            title: "Quality against speed".into(),
            x_desc: format!("texts (metrics: pairs) per second, {length} texts, log"),
            points,
        };
        out.push(Chart {
            beside: "cost",
            caption: format!(
                "Overall score (95% interval) against speed (median run, bars: slowest to \
                 fastest) on {host}; ringed: the front"
            ),
            svg: cost_chart(&axis, palette)?,
        });
    }
    let priced: Vec<_> = view
        .points
        .iter()
        .filter_map(|p| {
            let overall = p.overall?;
            Some(CostMark {
                similarity: p.similarity.clone(),
                overall: overall.score,
                interval: overall.ci95,
                cost: p.usd_per_million_tokens.filter(|u| *u > 0.0)?,
                bar: None,
                front: p.price_front,
            })
        })
        .collect();
    if !priced.is_empty() {
        let axis = CostAxis {
            title: "Quality against price".into(),
            x_desc: "USD per million tokens, log".into(),
            points: priced,
        };
        out.push(Chart {
            beside: "cost",
            caption: "Overall score (95% interval) against an API model's price per million \
                      tokens billed; ringed: the front (cheaper to the left)"
                .into(),
            svg: cost_chart(&axis, palette)?,
        });
    }
    Ok(out)
}

/// Retention against the share of float32's bytes (log axis): every model's points in its
/// colour with their intervals, its front joined.
pub(crate) fn storage_chart(
    view: &crate::storage::StorageView,
    palette: &Palette,
) -> Result<Option<Chart>> {
    if view.points.is_empty() {
        return Ok(None);
    }
    let shares = view.points.iter().map(|p| p.share);
    let (lo, hi) = shares.fold((f64::INFINITY, 0.0f64), |(lo, hi), s| {
        (lo.min(s), hi.max(s))
    });
    let (x_lo, x_hi) = (lo / 1.6, hi * 1.6);
    let retentions = view.points.iter().flat_map(|p| {
        [
            p.retention,
            p.ci95.map_or(p.retention, |c| c.0),
            p.ci95.map_or(p.retention, |c| c.1),
        ]
    });
    let (y_lo, y_hi) = retentions.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), s| {
        (lo.min(s), hi.max(s))
    });
    let pad = ((y_hi - y_lo) * 0.1).max(0.01);
    let (y_lo, y_hi) = ((y_lo - pad).max(0.0), y_hi + pad);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE)?;
        let (plot, key) = root.split_horizontally(SIZE.0 - KEY_WIDTH);
        let mut chart = ChartBuilder::on(&plot)
            .caption("Stored small: retention against bytes", ("sans-serif", 15))
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(48)
            .build_cartesian_2d((x_lo..x_hi).log_scale(), y_lo..y_hi)?;
        chart
            .configure_mesh()
            .x_desc("bytes per vector / the model's float32")
            .y_desc("retention (mean over datasets)")
            .x_label_formatter(&|x| format!("{x:.3}"))
            .draw()?;
        let mut entries = Vec::new();
        let mut names: Vec<&str> = Vec::new();
        for p in &view.points {
            if !names.contains(&p.similarity.as_str()) {
                names.push(&p.similarity);
            }
        }
        for name in names {
            let c = palette.colour(name);
            let mine: Vec<&crate::storage::StoragePoint> = view
                .points
                .iter()
                .filter(|p| p.similarity == name)
                .collect();
            let mut front: Vec<(f64, f64)> = mine
                .iter()
                .filter(|p| p.front)
                .map(|p| (p.share, p.retention))
                .collect();
            front.sort_by(|a, b| a.0.total_cmp(&b.0));
            if front.len() > 1 {
                chart.draw_series(LineSeries::new(front, c.stroke_width(2)))?;
            }
            for p in mine {
                if let Some((low, high)) = p.ci95 {
                    chart.draw_series(std::iter::once(PathElement::new(
                        vec![(p.share, low), (p.share, high)],
                        c.stroke_width(1),
                    )))?;
                }
                let size = if p.front { 5 } else { 3 };
                chart.draw_series(std::iter::once(Circle::new(
                    (p.share, p.retention),
                    size,
                    c.filled(),
                )))?;
            }
            entries.push((name.to_owned(), c, false));
        }
        draw_key(&key, &entries)?;
        root.present()?;
    }
    Ok(Some(Chart {
        beside: "storage",
        caption: "Retention against the share of float32's bytes: each model's formats and \
                  widths, its front joined"
            .into(),
        svg,
    }))
}

/// Transfer accuracy per task, one bar per similarity in its colour.
pub(crate) fn transfer_chart(files: &[ResultFile], palette: &Palette) -> Result<Option<Chart>> {
    let crate::load::TransferRuns { runs, tasks } = crate::load::TransferRuns::of(files);
    if tasks.is_empty() {
        return Ok(None);
    }
    let series: Vec<(String, RGBColor, Vec<Option<f64>>)> = runs
        .iter()
        .map(|(f, r)| {
            let values = tasks
                .iter()
                .map(|task| {
                    r.tasks
                        .iter()
                        .find(|t| t.task == *task)
                        .map(|t| 100.0 * t.accuracy)
                })
                .collect();
            (f.similarity.clone(), palette.colour(&f.similarity), values)
        })
        .collect();
    Ok(Some(Chart {
        beside: "transfer",
        caption: "SentEval transfer accuracy per task".into(),
        svg: grouped_bars("Transfer accuracy", &tasks, &series, 100.0, "accuracy (%)")?,
    }))
}

/// Spearman's ρ of each intrinsic score with mean transfer accuracy, with its bootstrap
/// interval over models, highest first.
pub(crate) fn prediction_chart(view: &crate::prediction::PredictionView) -> Result<Option<Chart>> {
    let mut marks: Vec<&crate::prediction::Correlation> = view
        .correlations
        .iter()
        .filter(|c| c.target == crate::prediction::MEAN_ACCURACY && c.spearman.is_some())
        .collect();
    if marks.is_empty() {
        return Ok(None);
    }
    marks.sort_by(|a, b| b.spearman.unwrap().total_cmp(&a.spearman.unwrap()));
    // the lowest at the bottom of the axis: the first is drawn at the top
    let names: Vec<String> = marks
        .iter()
        .rev()
        .map(|c| c.predictor.chars().take(44).collect())
        .collect();
    let height = (60 + 22 * marks.len() as u32).max(SIZE.1);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (SIZE.0, height)).into_drawing_area();
        root.fill(&WHITE)?;
        let n = marks.len() as f64;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "Which intrinsic score predicts transfer",
                ("sans-serif", 15),
            )
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(270)
            .build_cartesian_2d(-1.05f64..1.05, -0.5f64..(n - 0.5))?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(marks.len())
            .y_label_formatter(&|y| category_label(&names, *y))
            .x_desc("Spearman ρ with mean accuracy [95% CI over models]")
            .draw()?;
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(0.0, -0.5), (0.0, n - 0.5)],
            BLACK.stroke_width(1),
        )))?;
        let colour = RGBColor(31, 119, 180);
        for (k, c) in marks.iter().rev().enumerate() {
            let y = k as f64;
            if let Some((lo, hi)) = c.ci95 {
                chart.draw_series(std::iter::once(PathElement::new(
                    vec![(lo, y), (hi, y)],
                    colour.stroke_width(2),
                )))?;
            }
            chart.draw_series(std::iter::once(Circle::new(
                (c.spearman.unwrap(), y),
                5,
                colour.filled(),
            )))?;
        }
        root.present()?;
    }
    Ok(Some(Chart {
        beside: "prediction",
        caption: "Spearman's ρ of each intrinsic score with mean transfer accuracy, with its \
                  95% bootstrap interval over models"
            .into(),
        svg,
    }))
}
