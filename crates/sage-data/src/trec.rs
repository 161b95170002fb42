//! TREC-style relevance files, read once for everyone: BEIR's `qrels/{split}.tsv` and the qrels
//! and runs `sage measure ndcg|mrr|map` takes.
//!
//! Judgements (qrels): `query-id corpus-id relevance` (BEIR, tab-separated, with a header row)
//! or `query-id 0 doc-id relevance` (trec_eval), tab- or space-separated. A run:
//! `query-id Q0 doc-id rank score tag`, whitespace-separated. Blank lines are passed over (the
//! rows are a set). What trec_eval would silently resolve one way or another is an error naming
//! both lines: a document judged twice for one query, or retrieved twice by one run.

use std::collections::HashMap;
use std::path::Path;

use crate::error::{parse_error, Result};
use crate::records::for_each_line_in;
use crate::regular_file::open;
use crate::rows::non_empty;

/// One relevance judgement and the line it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Judgement {
    /// 1-based line.
    pub line: usize,
    /// Query id.
    pub query: String,
    /// Document (corpus) id.
    pub doc: String,
    /// Graded relevance.
    pub relevance: i32,
}

/// One retrieved document of a run and the line it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Retrieved {
    /// 1-based line.
    pub line: usize,
    /// Query id.
    pub query: String,
    /// Document id.
    pub doc: String,
    /// Retrieval score (finite).
    pub score: f64,
}

/// The judgements of the qrels file at `path`, in file order.
pub fn read_qrels(path: &Path) -> Result<Vec<Judgement>> {
    parse_qrels(path, std::io::BufReader::new(open(path)?))
}

/// [`read_qrels`] of any reader (bytes, standard input), streamed; `path` names it in errors.
pub fn parse_qrels(path: &Path, reader: impl std::io::BufRead) -> Result<Vec<Judgement>> {
    let mut judgements = Vec::new();
    let mut seen = HashMap::new();
    for_each_line_in(path, reader, &mut |line, text| {
        judgement(path, line, text, &mut seen, &mut judgements)
    })?;
    non_empty(path, judgements)
}

/// Where a (query, document) pair was first seen.
type FirstLines = HashMap<(String, String), usize>;

/// One line of qrels onto `judgements` (a BEIR header line is passed over).
fn judgement(
    path: &Path,
    line: usize,
    text: &str,
    first_line: &mut FirstLines,
    judgements: &mut Vec<Judgement>,
) -> Result<()> {
    {
        let cols: Vec<&str> = if text.contains('\t') {
            text.split('\t').collect()
        } else {
            text.split_whitespace().collect()
        };
        let (query, doc, relevance) = match cols.as_slice() {
            [q, d, r] | [q, _, d, r] => (*q, *d, *r),
            _ => {
                return Err(parse_error(
                    path,
                    line,
                    format!(
                        "expected `query-id corpus-id score` or `query-id 0 doc-id relevance`, \
                         got {} columns",
                        cols.len()
                    ),
                ))
            }
        };
        let relevance = match relevance.trim().parse::<i32>() {
            Ok(r) => r,
            // BEIR files start with a header row: query-id corpus-id score
            Err(_) if line == 1 => return Ok(()),
            Err(_) => {
                return Err(parse_error(
                    path,
                    line,
                    format!("relevance {relevance:?} is not an integer"),
                ))
            }
        };
        if let Some(first) = first_line.insert((query.to_owned(), doc.to_owned()), line) {
            return Err(parse_error(
                path,
                line,
                format!("document {doc} judged twice for query {query} (first on line {first})"),
            ));
        }
        judgements.push(Judgement {
            line,
            query: query.to_owned(),
            doc: doc.to_owned(),
            relevance,
        });
    }
    Ok(())
}

/// The retrieved documents of the TREC run at `path`, in file order.
pub fn read_run(path: &Path) -> Result<Vec<Retrieved>> {
    parse_run(path, std::io::BufReader::new(open(path)?))
}

/// [`read_run`] of any reader (bytes, standard input), streamed; `path` names it in errors.
pub fn parse_run(path: &Path, reader: impl std::io::BufRead) -> Result<Vec<Retrieved>> {
    let mut run = Vec::new();
    let mut seen = HashMap::new();
    for_each_line_in(path, reader, &mut |line, text| {
        retrieved(path, line, text, &mut seen, &mut run)
    })?;
    non_empty(path, run)
}

/// One line of a run onto `run`.
fn retrieved(
    path: &Path,
    line: usize,
    text: &str,
    first_line: &mut FirstLines,
    run: &mut Vec<Retrieved>,
) -> Result<()> {
    {
        let cols: Vec<&str> = text.split_whitespace().collect();
        if cols.len() != 6 {
            return Err(parse_error(
                path,
                line,
                format!(
                    "expected 6 columns `query-id Q0 doc-id rank score tag`, got {}",
                    cols.len()
                ),
            ));
        }
        let score = cols[4]
            .parse::<f64>()
            .ok()
            .filter(|s| s.is_finite())
            .ok_or_else(|| {
                parse_error(
                    path,
                    line,
                    format!("score {:?} is not a finite number", cols[4]),
                )
            })?;
        if let Some(first) = first_line.insert((cols[0].to_owned(), cols[2].to_owned()), line) {
            return Err(parse_error(
                path,
                line,
                format!(
                    "document {} retrieved twice for query {} (first on line {first})",
                    cols[2], cols[0]
                ),
            ));
        }
        run.push(Retrieved {
            line,
            query: cols[0].to_owned(),
            doc: cols[2].to_owned(),
            score,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::DataError;

    fn qrels(text: &str) -> Result<Vec<Judgement>> {
        parse_qrels(Path::new("q.tsv"), text.as_bytes())
    }

    #[test]
    fn beir_and_trec_eval_qrels_read_the_same() {
        let beir = qrels("query-id\tcorpus-id\tscore\nq1\td1\t1\n\nq1\td2\t0\n").unwrap();
        let trec = qrels("q1 0 d1 1\nq1 0 d2 0\n").unwrap();
        let strip = |j: &[Judgement]| {
            j.iter()
                .map(|j| (j.query.clone(), j.doc.clone(), j.relevance))
                .collect::<Vec<_>>()
        };
        assert_eq!(strip(&beir), strip(&trec));
        assert_eq!(beir[1].line, 4);
    }

    /// A repeated judgement was resolved silently (the last one won); now both lines are named.
    #[test]
    fn a_document_judged_twice_names_both_lines() {
        let e = qrels("q1\td1\t1\nq2\td1\t1\nq1\td1\t0\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "q.tsv:3: document d1 judged twice for query q1 (first on line 1)"
        );
    }

    #[test]
    fn malformed_lines_are_named() {
        assert!(qrels("q1\td1\n")
            .unwrap_err()
            .to_string()
            .starts_with("q.tsv:1: expected"));
        assert_eq!(
            qrels("q1\td1\t1\nq2\td2\thigh\n").unwrap_err().to_string(),
            "q.tsv:2: relevance \"high\" is not an integer"
        );
        assert!(matches!(qrels("\n\n"), Err(DataError::Empty { .. })));
        let run = |t: &str| parse_run(Path::new("r.trec"), t.as_bytes());
        assert!(run("q1 Q0 d1 1 0.5\n")
            .unwrap_err()
            .to_string()
            .contains("r.trec:1: expected 6 columns"));
        assert!(run("q1 Q0 d1 1 NaN t\n")
            .unwrap_err()
            .to_string()
            .contains("not a finite number"));
        assert!(run("q1 Q0 d1 1 0.5 t\nq1 Q0 d1 2 0.4 t\n")
            .unwrap_err()
            .to_string()
            .contains("r.trec:2: document d1 retrieved twice for query q1 (first on line 1)"));
        assert_eq!(run("q1 Q0 d1 1 0.5 t\r\n").unwrap()[0].score, 0.5);
    }
}
