//! report.md and report.html: the answer first (heatmap, ranking, notes in one line), then every
//! table with its plots beside it, then where the numbers come from.

use std::fmt::Write as _;

use crate::answer::Answer;
use crate::load::Provenance;
use crate::plots::{Chart, Palette};
use crate::tables::Table;

/// The tables that make the first screen, in order.
const ANSWER_KEYS: [&str; 2] = ["sage", "ranking"];
/// Below the first screen's ranking, folded: the evidence behind it.
const COMPARISONS_KEY: &str = "comparisons";
/// Below the ranking, on the first screen: quality against what it costs.
const COST_KEY: &str = "cost";
/// Beside the cost, on the first screen: what a model keeps when its vectors are stored small.
const STORAGE_KEY: &str = "storage";
/// On the first screen: which intrinsic score predicts downstream accuracy.
const PREDICTION_KEY: &str = "prediction";

/// Everything a page is made of.
pub(crate) struct Page<'a> {
    pub(crate) answer: &'a Answer,
    pub(crate) tables: &'a [Table],
    pub(crate) charts: &'a [Chart],
    pub(crate) provenance: &'a Provenance,
    pub(crate) palette: &'a Palette,
}

impl Page<'_> {
    fn table(&self, key: &str) -> Option<&Table> {
        self.tables.iter().find(|t| t.key == key)
    }

    fn details(&self) -> impl Iterator<Item = &Table> {
        self.tables.iter().filter(|t| {
            !ANSWER_KEYS.contains(&t.key)
                && ![COMPARISONS_KEY, COST_KEY, STORAGE_KEY, PREDICTION_KEY].contains(&t.key)
        })
    }

    /// The one line the notes fold into.
    fn notes_line(&self) -> String {
        let notes = &self.provenance.notes;
        let skipped = notes
            .iter()
            .filter(|(n, _)| n.contains("skipped") || n.contains("not local"))
            .count();
        format!(
            "{} note{} from the runs ({skipped} about skipped datasets)",
            notes.len(),
            if notes.len() == 1 { "" } else { "s" }
        )
    }
}

/// The answer in one sentence: the best overall, what it is significantly above, and what it
/// cannot be told apart from. The best buy against it ([`crate::cost`]) follows on its own line.
fn verdict(answer: &Answer) -> Option<String> {
    let ranking = &answer.ranking;
    let best = ranking.ranked.first()?;
    let mut out = format!(
        "Best overall: {} ({}).",
        best.similarity,
        crate::tables::score_text(&best.overall)
    );
    let (above, tied): (Vec<_>, Vec<_>) = ranking
        .comparisons
        .iter()
        .filter(|c| c.higher == best.similarity)
        .partition(|c| c.significant);
    let names = |v: &[&crate::ranking::Comparison]| {
        v.iter()
            .map(|c| c.lower.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if !above.is_empty() {
        out.push_str(&format!(" Significantly above {}.", names(&above)));
    }
    if !tied.is_empty() {
        out.push_str(&format!(
            " Not significantly different from {} (Holm-corrected paired bootstrap, α = {}).",
            names(&tied),
            ranking.alpha
        ));
    }
    Some(out)
}

fn markdown_table(out: &mut String, t: &Table, level: &str) {
    let _ = write!(out, "\n{level} {}\n\n{}\n\n", t.title, t.note);
    let _ = writeln!(out, "| {} |", t.header.join(" | "));
    let _ = writeln!(
        out,
        "|{}",
        (0..t.header.len())
            .map(|i| if i == 0 { "---|" } else { "---:|" })
            .collect::<String>()
    );
    for row in &t.rows {
        let _ = writeln!(out, "| {} |", row.join(" | "));
    }
}

/// report.md.
pub(crate) fn markdown(page: &Page<'_>) -> String {
    let mut out = String::from("# sage-rs report\n\n## The answer\n");
    if let Some(verdict) = verdict(page.answer) {
        let _ = writeln!(out, "\n**{verdict}**");
    }
    if let Some(cost) = &page.answer.cost.sentence {
        let _ = writeln!(out, "\n**At what cost:** {cost}");
    }
    if let Some(stored) = &page.answer.storage.sentence {
        let _ = writeln!(out, "\n**Stored small:** {stored}");
    }
    if let Some(predicts) = &page.answer.prediction.sentence {
        let _ = writeln!(out, "\n**Does it predict my task:** {predicts}");
    }
    for key in ANSWER_KEYS
        .iter()
        .chain(&[COST_KEY, STORAGE_KEY, PREDICTION_KEY])
    {
        if let Some(t) = page.table(key) {
            markdown_table(&mut out, t, "###");
        }
    }
    if !page.provenance.notes.is_empty() {
        let _ = write!(
            out,
            "\n<details><summary>{}</summary>\n\n",
            page.notes_line()
        );
        for (note, count) in &page.provenance.notes {
            let _ = writeln!(out, "- ({count} results) {note}");
        }
        out.push_str("\n</details>\n");
    }
    if let Some(t) = page.table(COMPARISONS_KEY) {
        markdown_table(&mut out, t, "###");
    }
    out.push_str("\n## Details\n");
    for t in page.details() {
        markdown_table(&mut out, t, "###");
    }
    out.push_str("\n## Where these numbers come from\n\n");
    for line in &page.provenance.lines {
        let _ = writeln!(out, "- {line}");
    }
    out
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A score's heatmap colour: white at 0 to dark blue at 1, and the text colour that reads on it.
fn heat(score: f64) -> (String, &'static str) {
    let t = score.clamp(0.0, 1.0);
    let (from, to) = ((247.0, 251.0, 255.0), (8.0, 48.0, 107.0));
    let mix = |a: f64, b: f64| (a + (b - a) * t).round() as u8;
    (
        format!(
            "#{:02x}{:02x}{:02x}",
            mix(from.0, to.0),
            mix(from.1, to.1),
            mix(from.2, to.2)
        ),
        if t > 0.55 { "#fff" } else { "#111" },
    )
}

const STYLE: &str = "\
body{font-family:system-ui,sans-serif;margin:1.5em 2em;color:#222;max-width:1500px}\
h1{margin:0 0 .2em}h2{margin-top:1.2em;border-bottom:1px solid #ddd}h3{margin:.8em 0 .2em}\
table{border-collapse:collapse;margin:.4em 0 1em}\
th,td{border:1px solid #ccc;padding:3px 8px;text-align:right;white-space:nowrap}\
th:first-child,td:first-child{text-align:left}th{background:#f3f3f3;cursor:pointer}\
th[aria-sort=ascending]::after{content:' ▲'}th[aria-sort=descending]::after{content:' ▼'}\
p.note{color:#555;font-size:88%;max-width:900px;margin:.2em 0}\
p.verdict{font-size:115%;margin:.5em 0;max-width:1200px}table.ranked td:nth-child(2){text-align:left}\
table.ranked td:nth-child(4){white-space:normal;min-width:8em;max-width:18em;text-align:left}\
.answer{display:flex;flex-wrap:wrap;gap:0 2.5em;align-items:flex-start}\
table.heatmap td{min-width:7em}table.heatmap td.best{font-weight:bold;outline:3px solid #e69f00;outline-offset:-3px}\
table.heatmap small{opacity:.85}\
.key{display:flex;flex-wrap:wrap;gap:.3em 1.2em;font-size:90%;margin:.3em 0}\
.key span.swatch{display:inline-block;width:.9em;height:.9em;margin-right:.35em;vertical-align:-.1em}\
details{margin:.4em 0}summary{cursor:pointer;color:#444}\
section.pair{display:flex;flex-wrap:wrap;gap:0 2em;align-items:flex-start}\
section.pair>div{min-width:0}figure{margin:.4em 0}figcaption{font-size:85%;color:#555}\
.scroll{overflow-x:auto;max-width:100%}";

/// Sorting by a header click, and from the address (`#sort=<table id>:<column>:<asc|desc>`):
/// numbers compare as numbers (the leading number of "0.512 [0.49, 0.53]"), text as text, and
/// "—" stays last both ways.
const SCRIPT: &str = r#"(function(){
function val(td){var t=td.textContent.trim();if(t==='—'||t==='')return null;
var m=t.match(/^[+\-]?\d+(\.\d+)?(e[+\-]?\d+)?/i);return m?parseFloat(m[0]):t.toLowerCase();}
function sortBy(table,col,dir){var body=table.tBodies[0];var rows=Array.prototype.slice.call(body.rows);
rows.sort(function(r,s){var a=val(r.cells[col]),b=val(s.cells[col]);
if(a===null||b===null)return a===null?(b===null?0:1):-1;
var c=(typeof a===typeof b)?(a<b?-1:a>b?1:0):(typeof a==='number'?-1:1);return dir==='desc'?-c:c;});
rows.forEach(function(r){body.appendChild(r);});
var ths=table.tHead.rows[0].cells;for(var i=0;i<ths.length;i++){ths[i].removeAttribute('aria-sort');}
ths[col].setAttribute('aria-sort',dir==='desc'?'descending':'ascending');}
document.querySelectorAll('table.sortable').forEach(function(table){
var ths=table.tHead.rows[0].cells;Array.prototype.forEach.call(ths,function(th,col){
th.title='sort';th.addEventListener('click',function(){
sortBy(table,col,th.getAttribute('aria-sort')==='ascending'?'desc':'asc');});});});
var m=/^#sort=([\w-]+):(\d+)(?::(asc|desc))?$/.exec(location.hash);
if(m){var t=document.getElementById(m[1]);if(t&&t.tHead&&+m[2]<t.tHead.rows[0].cells.length){sortBy(t,+m[2],m[3]||'asc');}}
})();"#;

fn html_table(out: &mut String, t: &Table, id: &str, class: &str, page: &Page<'_>) {
    let _ = write!(
        out,
        "<h3>{}</h3>\n<p class=\"note\">{}</p>\n<div class=\"scroll\"><table id=\"{id}\" class=\"sortable {class}\">\n<thead><tr>",
        escape(&t.title),
        escape(&t.note)
    );
    for h in &t.header {
        let _ = write!(out, "<th>{}</th>", escape(h));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    let heatmap = &page.answer.heatmap;
    for (i, row) in t.rows.iter().enumerate() {
        out.push_str("<tr>");
        for (c, text) in row.iter().enumerate() {
            // the heatmap's cells are coloured by their score; the first column is the name
            let cell = (class == "heatmap" && c > 0)
                .then(|| heatmap.rows.get(i)?.cells.get(c - 1).copied().flatten())
                .flatten();
            match cell {
                Some(cell) => {
                    let (bg, fg) = heat(cell.score);
                    let best = heatmap.best.get(c - 1).is_some_and(|b| b.contains(&i));
                    let (score, interval) = text.split_once(' ').unwrap_or((text, ""));
                    let _ = write!(
                        out,
                        "<td{} style=\"background:{bg};color:{fg}\">{}<br><small>{}</small></td>",
                        if best { " class=\"best\"" } else { "" },
                        escape(score),
                        escape(interval)
                    );
                }
                None if (c == 0 && class == "heatmap") || (c == 1 && class == "ranked") => {
                    let _ = write!(
                        out,
                        "<td><span class=\"swatch\" style=\"display:inline-block;width:.8em;height:.8em;margin-right:.4em;background:{}\"></span>{}</td>",
                        page.palette.hex(text),
                        escape(text)
                    );
                }
                None => {
                    let _ = write!(out, "<td>{}</td>", escape(text));
                }
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
}

/// The plots that go beside the table `key`.
fn plots_beside(out: &mut String, page: &Page<'_>, key: &str) {
    let beside: Vec<&Chart> = page.charts.iter().filter(|c| c.beside == key).collect();
    if beside.is_empty() {
        return;
    }
    out.push_str("<div class=\"plots\">");
    for c in beside {
        let _ = write!(
            out,
            "<figure><figcaption>{}</figcaption>\n{}\n</figure>",
            escape(&c.caption),
            c.svg
        );
    }
    out.push_str("</div>");
}

/// report.html: one self-contained file.
pub(crate) fn html(page: &Page<'_>) -> String {
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\">\
         <title>sage-rs report</title><style>{STYLE}</style></head><body>\n\
         <h1>sage-rs report</h1>\n<section id=\"answer\">\n<div class=\"key\" id=\"colour-key\">"
    );
    for name in page.palette.names() {
        let _ = write!(
            out,
            "<span><span class=\"swatch\" style=\"background:{}\"></span>{}</span>",
            page.palette.hex(name),
            escape(name)
        );
    }
    out.push_str("</div>\n");
    if let Some(verdict) = verdict(page.answer) {
        let _ = writeln!(
            out,
            "<p class=\"verdict\" id=\"verdict\">{}</p>",
            escape(&verdict)
        );
    }
    if let Some(cost) = &page.answer.cost.sentence {
        let _ = writeln!(
            out,
            "<p class=\"verdict\" id=\"cost-verdict\">At what cost: {}</p>",
            escape(cost)
        );
    }
    if let Some(stored) = &page.answer.storage.sentence {
        let _ = writeln!(
            out,
            "<p class=\"verdict\" id=\"storage-verdict\">Stored small: {}</p>",
            escape(stored)
        );
    }
    if let Some(predicts) = &page.answer.prediction.sentence {
        let _ = writeln!(
            out,
            "<p class=\"verdict\" id=\"prediction-verdict\">Does it predict my task: {}</p>",
            escape(predicts)
        );
    }
    out.push_str("<div class=\"answer\">\n");
    if let Some(t) = page.table("sage") {
        out.push_str("<div>");
        html_table(&mut out, t, "heatmap", "heatmap", page);
        out.push_str("</div>\n");
    }
    if let Some(t) = page.table("ranking") {
        out.push_str("<div>");
        html_table(&mut out, t, "ranking", "ranked", page);
        out.push_str("</div>\n");
    }
    out.push_str("</div>\n");
    if let Some(t) = page.table(COST_KEY) {
        out.push_str("<section class=\"pair\" id=\"quality-cost\"><div>");
        html_table(&mut out, t, COST_KEY, "", page);
        out.push_str("</div>");
        plots_beside(&mut out, page, COST_KEY);
        out.push_str("</section>\n");
    }
    if let Some(t) = page.table(STORAGE_KEY) {
        out.push_str("<section class=\"pair\" id=\"stored-small\"><div>");
        html_table(&mut out, t, STORAGE_KEY, "", page);
        out.push_str("</div>");
        plots_beside(&mut out, page, STORAGE_KEY);
        out.push_str("</section>\n");
    }
    if let Some(t) = page.table(PREDICTION_KEY) {
        out.push_str("<section class=\"pair\" id=\"predicts\"><div>");
        html_table(&mut out, t, PREDICTION_KEY, "", page);
        out.push_str("</div>");
        plots_beside(&mut out, page, PREDICTION_KEY);
        out.push_str("</section>\n");
    }
    if !page.provenance.notes.is_empty() {
        let _ = write!(
            out,
            "<details id=\"notes\"><summary>{}</summary><ul>",
            escape(&page.notes_line())
        );
        for (note, count) in &page.provenance.notes {
            let _ = write!(out, "<li>({count} results) {}</li>", escape(note));
        }
        out.push_str("</ul></details>\n");
    }
    if let Some(t) = page.table(COMPARISONS_KEY) {
        let _ = writeln!(
            out,
            "<details id=\"all-comparisons\"><summary>{} ({} pairs)</summary>",
            escape(&t.title),
            t.rows.len()
        );
        html_table(&mut out, t, COMPARISONS_KEY, "", page);
        out.push_str("</details>\n");
    }
    out.push_str("</section>\n<section id=\"details\">\n<h2>Details</h2>\n");
    for t in page.details() {
        out.push_str("<section class=\"pair\"><div>\n");
        html_table(&mut out, t, t.key, "", page);
        out.push_str("</div>");
        plots_beside(&mut out, page, t.key);
        out.push_str("</section>\n");
    }
    out.push_str("<h2>Where these numbers come from</h2>\n<ul>\n");
    for line in &page.provenance.lines {
        let _ = writeln!(out, "<li>{}</li>", escape(line));
    }
    let _ = write!(
        out,
        "</ul>\n</section>\n<script>{SCRIPT}</script>\n</body></html>\n"
    );
    out
}
