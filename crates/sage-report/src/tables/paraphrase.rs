//! PTEB's tables: scores on the original and paraphrased texts, the drops with their
//! statistics, the paraphrase-quality record and the MTEB published scores beside them.

use super::*;

pub(super) fn pteb_tables(files: &[ResultFile], sink: &mut Sink) -> Vec<Table> {
    let reports: Vec<(&ResultFile, &pteb::PtebReport)> = files
        .iter()
        .filter_map(|f| match &f.typed {
            Typed::Pteb(report) => Some((f, report.as_ref())),
            _ => None,
        })
        .collect();
    let mut rows = Vec::new();
    let mut unqualified_anywhere = false;
    for &(r, rep) in &reports {
        for d in &rep.datasets {
            let name = d.name();
            let name = name.as_str();
            let quality = &d.quality;
            let qualified = quality.verdict.qualified;
            unqualified_anywhere |= !qualified;
            // the paraphrased numbers of an unqualified dataset carry a mark to the note
            let mark = if qualified { "" } else { " †" };
            let mut row = vec![
                r.similarity.clone(),
                name.to_owned(),
                d.task.name().to_owned(),
            ];
            row.push(sink.cell(r, name, "original", Some(d.original)));
            if !sink.published.is_empty() {
                let subset = d.subset.as_deref().unwrap_or("default");
                let published = pteb::mteb::mteb_task_name(&d.dataset).and_then(|task| {
                    sink.published.iter().find(|p| {
                        p.task == task
                            && p.split == d.split
                            && p.hf_subset == subset
                            && same_model(&p.model, &r.similarity)
                    })
                });
                let score = published.map(|p| p.main_score);
                row.push(sink.cell(r, name, "mteb published", score));
            }
            let mean = sink.cell(r, name, "paraphrased mean", Some(d.paraphrased.mean));
            let std = sink.cell(r, name, "paraphrased std", Some(d.paraphrased.std));
            row.push(format!("{mean} ± {std}{mark}"));
            let delta = sink.cell(r, name, "delta", Some(d.delta));
            row.push(format!("{delta}{mark}"));
            row.push(sink.cell(
                r,
                name,
                "edit distance",
                Some(quality.figures.edit_distance),
            ));
            let cosine = sink.cell(
                r,
                name,
                "reference cosine",
                Some(quality.figures.reference_cosine),
            );
            let below = format!("{:.0}%", 100.0 * quality.figures.share_below);
            row.push(format!("{cosine} ({below} low)"));
            row.push(d.fallbacks.to_string());
            row.push(if qualified {
                "qualified".into()
            } else {
                format!(
                    "paraphraser not qualified: {}",
                    quality.verdict.reasons.join("; ")
                )
            });
            rows.push(row);
        }
        let pooled_row = match &rep.pooled {
            Some(p) => {
                let hl = &p.hodges_lehmann;
                let hl_text = sink.cell(r, "pooled", "hodges-lehmann", Some(hl.estimate));
                let lo = sink.cell(r, "pooled", "hl ci low", Some(hl.ci_low));
                let hi = sink.cell(r, "pooled", "hl ci high", Some(hl.ci_high));
                let pv = p
                    .wilcoxon
                    .as_ref()
                    .map_or("—".into(), |w| format!("p = {:.2e}", w.p_value));
                let over = if p.includes_unqualified {
                    "unqualified datasets included"
                } else {
                    "qualified datasets"
                };
                Some(vec![
                    r.similarity.clone(),
                    "pooled".into(),
                    format!("n = {}", p.n),
                    "".into(),
                    "".into(),
                    format!("HL {hl_text} [{lo}, {hi}]"),
                    pv,
                    "".into(),
                    rep.fallbacks.to_string(),
                    over.into(),
                ])
            }
            None if !rep.unqualified.is_empty() => Some(vec![
                r.similarity.clone(),
                "pooled".into(),
                "—".into(),
                "".into(),
                "".into(),
                "".into(),
                "".into(),
                "".into(),
                rep.fallbacks.to_string(),
                "nothing pooled: too few qualified dataset runs".into(),
            ]),
            None => None,
        };
        if let Some(mut row) = pooled_row {
            // the pooled row has no published score
            if !sink.published.is_empty() {
                row.insert(4, String::new());
            }
            rows.push(row);
        }
    }
    let mut note =
        "Main score per dataset on the original texts and on LLM paraphrases (mean ± std \
                    over runs); delta = paraphrased − original; edit distance: normalised \
                    word-level; reference cosine: a fixed encoder's cosine of each original with \
                    its paraphrase (the paraphrases' faithfulness, whatever the model under test), \
                    with the share below the gate's per-text threshold; fallbacks: texts kept as \
                    they were after 5 rejected answers. Pooled: Hodges–Lehmann shift over dataset \
                    × run with its 95% bootstrap interval, Wilcoxon signed-rank p."
            .to_owned();
    if unqualified_anywhere {
        note.push_str(&format!(
            " † paraphraser not qualified: the paraphrases of this dataset missed the quality \
             gate (the gate option of bench.toml's [suites.pteb]), so its drop may be the paraphraser's failure, not \
             the model's; it is left out of the pooled statistics and the comparisons. To fix: \
             {}.",
            pteb::NOT_QUALIFIED_ADVICE
        ));
    }
    let mut header: Vec<String> = [
        "Model",
        "Dataset",
        "Task",
        "Original",
        "Paraphrased",
        "Delta",
        "Edit dist.",
        "Ref. cosine",
        "Fallbacks",
        "Paraphrases",
    ]
    .map(String::from)
    .to_vec();
    if !sink.published.is_empty() {
        header.insert(4, "MTEB published".into());
        note.push_str(
            " MTEB published: the model's main score on the same task and split in the MTEB \
             results given with --mteb-results (all rows; a sampled original can differ by \
             its sample).",
        );
    }
    let mut out = vec![Table {
        key: "pteb",
        title: "PTEB — original vs paraphrased".into(),
        note,
        header,
        rows,
    }];
    // the paper's Table 7: every model against a baseline (all-mpnet-base-v2 when present)
    if reports.len() >= 2 {
        let base = reports
            .iter()
            .position(|(r, _)| r.similarity.contains("mpnet"))
            .unwrap_or(0);
        let others: Vec<&pteb::PtebReport> = reports
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != base)
            .map(|(_, (_, p))| *p)
            .collect();
        let seed = sage_core::RunSeed(reports[base].1.options.seed);
        let note = "Paired on the paraphrased scores of the (dataset, seed) runs both have \
                    (datasets whose paraphrases passed the quality gate, unless the run pools \
                    them all): Hodges–Lehmann shift model − baseline with its 95% bootstrap \
                    interval, Wilcoxon signed-rank p, Holm-corrected over the models.";
        let (note, rows) = match pteb::compare(reports[base].1, &others, seed) {
            Ok(comparisons) => (
                note.to_owned(),
                comparisons
                    .iter()
                    .map(|c| {
                        vec![
                            c.model.clone(),
                            c.n.to_string(),
                            format!(
                                "{:+.3} [{:+.3}, {:+.3}]",
                                c.hodges_lehmann.estimate,
                                c.hodges_lehmann.ci_low,
                                c.hodges_lehmann.ci_high
                            ),
                            c.wilcoxon
                                .map_or("—".into(), |w| format!("{:.2e}", w.p_value)),
                            c.p_holm.map_or("—".into(), |p| format!("{p:.2e}")),
                        ]
                    })
                    .collect(),
            ),
            // say why there is no comparison rather than leave the table out unexplained
            Err(why) => (format!("Not computed: {why}."), Vec::new()),
        };
        out.push(Table {
            key: "pteb-compare",
            title: format!(
                "PTEB — against the baseline {} (Table 7 layout)",
                reports[base].0.similarity
            ),
            note,
            header: ["Model", "n", "HL [95% CI]", "p", "p (Holm)"]
                .map(String::from)
                .to_vec(),
            rows,
        });
    }
    out.extend(by_task_table(&reports, sink));
    out.extend(prompt_ablation_table(&reports, sink));
    out
}

/// The paper's Tables 9 and 10: per model, language group and task, the mean original and
/// paraphrased scores of its datasets, then each dataset's change (subsets averaged) with its
/// spread over runs.
fn by_task_table(reports: &[(&ResultFile, &pteb::PtebReport)], sink: &mut Sink) -> Option<Table> {
    use pteb::aggregate::LanguageGroup;
    let mut rows = Vec::new();
    let mut unqualified = false;
    for (r, rep) in reports {
        for t in &rep.by_task {
            let group = match t.languages {
                LanguageGroup::English => "English",
                LanguageGroup::OtherLanguages => "other languages",
            };
            let task_name = format!("{} ({group})", t.task.name());
            rows.push(vec![
                r.similarity.clone(),
                group.to_owned(),
                t.task.name().to_owned(),
                format!("all {} dataset(s)", t.datasets.len()),
                sink.cell(r, &task_name, "task original", Some(t.original)),
                sink.cell(r, &task_name, "task paraphrased", Some(t.paraphrased)),
                format!("{:+.3}", t.paraphrased - t.original),
            ]);
            for d in &t.datasets {
                unqualified |= d.includes_unqualified;
                let name = if d.subsets.is_empty() {
                    d.dataset.clone()
                } else {
                    format!("{} ({} subsets)", d.dataset, d.subsets.len())
                };
                let paraphrased = d.paraphrased_mean();
                let delta = sink.cell(r, &format!("{name} ({group})"), "delta", Some(d.delta));
                rows.push(vec![
                    r.similarity.clone(),
                    group.to_owned(),
                    t.task.name().to_owned(),
                    name,
                    format!("{:.3}", d.original),
                    format!("{paraphrased:.3}"),
                    format!(
                        "{delta} ± {}{}",
                        d.delta_std.map_or("—".into(), |s| format!("{s:.3}")),
                        if d.includes_unqualified { " †" } else { "" }
                    ),
                ]);
            }
        }
    }
    if rows.is_empty() {
        return None;
    }
    let mut note = "The paper's aggregation (its Tables 9 and 10): a dataset is MTEB's task, its \
                    language subsets averaged (STS17's official tracks and MTEB-only pairs are \
                    one dataset); its change is the mean over runs of paraphrased − original, \
                    ± the standard deviation over runs; a task row averages its datasets' \
                    original and paraphrased scores. English: subsets whose every text is \
                    English; other languages: the rest, cross-lingual pairs included. Every \
                    dataset counts, as in the paper, which has no quality gate."
        .to_owned();
    if unqualified {
        note.push_str(" † a subset's paraphrases missed the quality gate.");
    }
    Some(Table {
        key: "pteb-by-task",
        title: "PTEB — by task and language (Tables 9 and 10 layout)".into(),
        note,
        header: [
            "Model",
            "Languages",
            "Task",
            "Dataset",
            "Original",
            "Paraphrased",
            "Change ± std",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    })
}

/// The paper's Table 12: PTEB once per paraphrase-prompt wording, per model: each wording's
/// mean paraphrased score and edit distance, the spread between wordings with its interval, and
/// each wording against the first.
fn prompt_ablation_table(
    reports: &[(&ResultFile, &pteb::PtebReport)],
    sink: &mut Sink,
) -> Option<Table> {
    let mut rows = Vec::new();
    for (r, rep) in reports {
        let Some(a) = &rep.prompt_ablation else {
            continue;
        };
        for (k, c) in a.conditions.iter().enumerate() {
            let score = sink.cell(r, &c.prompt, "prompt mean score", Some(c.mean_score));
            let edit = sink.cell(
                r,
                &c.prompt,
                "prompt edit distance",
                Some(c.mean_edit_distance),
            );
            let versus = match k {
                0 => "reference".to_owned(),
                _ => a.versus_first.get(k - 1).map_or("—".into(), |v| {
                    format!(
                        "HL {:+.3} [{:+.3}, {:+.3}], p = {}, Holm {}",
                        v.hodges_lehmann.estimate,
                        v.hodges_lehmann.ci_low,
                        v.hodges_lehmann.ci_high,
                        v.wilcoxon
                            .map_or("—".into(), |w| format!("{:.2e}", w.p_value)),
                        v.p_holm.map_or("—".into(), |p| format!("{p:.2e}"))
                    )
                }),
            };
            let spread = if k == 0 {
                let s = sink.cell(r, "prompts", "spread", Some(a.spread));
                format!(
                    "{s} [{:.3}, {:.3}] over {} pairs",
                    a.spread_low, a.spread_high, a.units
                )
            } else {
                String::new()
            };
            rows.push(vec![
                r.similarity.clone(),
                c.prompt.clone(),
                score,
                edit,
                c.fallbacks.to_string(),
                versus,
                spread,
            ]);
        }
    }
    if rows.is_empty() {
        return None;
    }
    Some(Table {
        key: "pteb-prompts",
        title: "PTEB — paraphrase-prompt sensitivity (Table 12 layout)".into(),
        note: "PTEB run once per wording of the paraphrase prompt on the same rows and seeds. \
               Score: mean paraphrased main score over the (dataset, run) pairs every wording \
               scored; edit distance: mean normalised word-level distance of paraphrase to \
               original. Against the first wording: Hodges–Lehmann shift with its 95% \
               bootstrap interval, Wilcoxon signed-rank p, Holm-corrected over the wordings. \
               Spread: highest minus lowest wording score, with its 95% bootstrap interval \
               over the paired (dataset, run) units."
            .into(),
        header: [
            "Model",
            "Prompt",
            "Score",
            "Edit dist.",
            "Fallbacks",
            "Against the first",
            "Spread [95% CI]",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    })
}
