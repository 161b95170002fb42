//! BEIR folders: the corpus, queries and judgements of one split, read whole or with only the
//! documents a sample keeps.

use super::*;

/// A BEIR dataset: corpus, queries and the judgements of one split. Loaded whole by
/// [`DataRoot::beir`], or with only the documents a sample needs by [`DataRoot::beir_sampled`].
#[derive(Clone, Debug)]
pub struct Beir {
    /// Registry name.
    pub dataset: String,
    /// The qrels split.
    pub split: String,
    /// The folder read.
    pub dir: PathBuf,
    /// The id of every document of corpus.jsonl, in file order (after the empty-text policy).
    pub corpus_ids: Vec<String>,
    /// Documents of corpus.jsonl: every one, or those a sampled load kept.
    pub corpus: Vec<BeirDocument>,
    /// `corpus[i]` is document `corpus_positions[i]` of `corpus_ids` (ascending).
    pub corpus_positions: Vec<usize>,
    /// queries.jsonl, only those with judgements in this split.
    pub queries: Vec<BeirQuery>,
    /// query id → document id → relevance (0 or more: see `negative_judgements`).
    pub qrels: BTreeMap<String, BTreeMap<String, i32>>,
    /// Judgements whose relevance was negative in the file (TREC's "judged, not relevant" at a
    /// graded level below 0): read as 0, as trec_eval scores them, and counted here so the report
    /// can say so.
    pub negative_judgements: usize,
    /// The key of the run's random streams over this set (query and document samples,
    /// perturbations): a checksum of its whole corpus, queries and judgements, so the same files
    /// give the same results under any name or path (see [`sample`](mod@crate::sample)).
    pub stream_key: String,
    /// The checks of its corpus, queries and judgements files ([`crate::verify`]); empty for
    /// a user's set or one built in memory.
    pub files: Vec<sage_core::FileCheck>,
}

impl Beir {
    /// A set built in memory, every document kept.
    pub fn from_parts(
        dataset: &str,
        split: &str,
        corpus: Vec<BeirDocument>,
        queries: Vec<BeirQuery>,
        mut qrels: BTreeMap<String, BTreeMap<String, i32>>,
    ) -> Beir {
        let negative_judgements = read_negative_as_zero(&mut qrels);
        let stream_key = beir_stream_key(&crate::sample::checksum(&corpus), &queries, &qrels);
        Beir {
            dataset: dataset.to_owned(),
            split: split.to_owned(),
            dir: PathBuf::new(),
            corpus_ids: corpus.iter().map(|d| d.id.clone()).collect(),
            corpus_positions: (0..corpus.len()).collect(),
            corpus,
            queries,
            qrels,
            negative_judgements,
            stream_key,
            files: Vec::new(),
        }
    }

    /// Document `position` of the corpus, when this load kept it.
    pub fn document(&self, position: usize) -> Option<&BeirDocument> {
        self.corpus_positions
            .binary_search(&position)
            .ok()
            .map(|i| &self.corpus[i])
    }
}

/// Sets every negative relevance in `qrels` to 0; how many there were.
pub(super) fn read_negative_as_zero(qrels: &mut BTreeMap<String, BTreeMap<String, i32>>) -> usize {
    let mut negative = 0;
    for relevance in qrels.values_mut().flat_map(|d| d.values_mut()) {
        if *relevance < 0 {
            *relevance = 0;
            negative += 1;
        }
    }
    negative
}

pub(super) fn beir_stream_key(
    corpus_checksum: &str,
    queries: &[BeirQuery],
    qrels: &BTreeMap<String, BTreeMap<String, i32>>,
) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(corpus_checksum);
    h.update(crate::sample::checksum(queries));
    for (query, documents) in qrels {
        for (document, relevance) in documents {
            h.update(format!("{query}\u{1f}{document}\u{1f}{relevance}\u{1e}"));
        }
    }
    crate::sample::short_hex(&h.finalize())
}

impl DataRoot {
    /// A BEIR set whole: every document of its corpus in memory, read in one pass. Every
    /// judged query must be in queries.jsonl and every judged document in corpus.jsonl, or the
    /// qrels line is named.
    pub fn beir(&self, name: &str, split: &str) -> Result<Beir> {
        self.read_beir(name, split, None)
    }

    /// A BEIR set with only the corpus documents `keep` picks in memory: corpus.jsonl is
    /// streamed twice, first for its ids (and the set's stream key; `keep` then sees the set
    /// with `corpus` empty), then for the documents at the positions `keep` returns
    /// (ascending). Memory follows the sample, not the corpus. Ids are checked unique and every
    /// judgement must name a query and a document of the files, as for a whole load.
    pub fn beir_sampled(&self, name: &str, split: &str, keep: &KeepDocuments) -> Result<Beir> {
        self.read_beir(name, split, Some(keep))
    }

    /// [`beir`](Self::beir) (`keep` absent: the first pass keeps every document) or
    /// [`beir_sampled`](Self::beir_sampled).
    fn read_beir(&self, name: &str, split: &str, keep: Option<&KeepDocuments>) -> Result<Beir> {
        let found = self.find(name, split)?;
        let dir = found.path().to_owned();
        if found.kind() != DatasetKind::Beir {
            return Err(DataError::WrongKind {
                dataset: name.to_owned(),
                actual: found.kind().name(),
                expected: DatasetKind::Beir.name(),
            });
        }
        let files = self.beir_checks(&found, split)?;
        let corpus_path = dir.join("corpus.jsonl");
        let read_corpus = |each: &mut dyn FnMut(usize, BeirDocument) -> Result<()>| {
            read_corpus(&corpus_path, each)
        };
        // first pass: ids, empty texts, the corpus checksum
        // (and, for a whole load, the documents themselves)
        let mut corpus_ids = Vec::new();
        let mut whole = Vec::new();
        let mut first_line = FirstLines::default();
        let mut empty = Vec::new();
        let mut sum = crate::sample::Checksum::default();
        read_corpus(&mut |line, doc| {
            first_line.check(&corpus_path, line, &doc.id)?;
            if has_empty_text(&doc) {
                empty.push(line);
                if self.policy != EmptyTextPolicy::Keep {
                    return Ok(());
                }
            }
            sum.add(&doc);
            corpus_ids.push(doc.id.clone());
            if keep.is_none() {
                whole.push(doc);
            }
            Ok(())
        })?;
        if first_line.0.is_empty() {
            return Err(DataError::Empty { path: corpus_path });
        }
        if self.policy == EmptyTextPolicy::Fail && !empty.is_empty() {
            return Err(DataError::EmptyText {
                path: corpus_path,
                lines: empty,
            });
        }
        let queries_path = dir.join("queries.jsonl");
        let (queries, empty_queries) =
            with_empty_lines(read_jsonl::<BeirQuery>(&queries_path, &[])?);
        unique_ids(&queries_path, &queries)?;
        let queries = self.apply_policy(&queries_path, queries, &empty_queries)?;
        let qrels_path = dir.join("qrels").join(format!("{split}.tsv"));
        let qrels = crate::trec::read_qrels(&qrels_path)?;
        let doc_ids: HashSet<&str> = corpus_ids.iter().map(String::as_str).collect();
        let query_ids: HashSet<&str> = queries.iter().map(|q| q.id.as_str()).collect();
        for crate::trec::Judgement {
            line, query, doc, ..
        } in &qrels
        {
            if !query_ids.contains(query.as_str()) {
                return Err(parse_error(
                    &qrels_path,
                    *line,
                    format!("query id {query:?} is not in {}", queries_path.display()),
                ));
            }
            if !doc_ids.contains(doc.as_str()) {
                return Err(parse_error(
                    &qrels_path,
                    *line,
                    format!("corpus id {doc:?} is not in {}", corpus_path.display()),
                ));
            }
        }
        drop((doc_ids, query_ids, first_line));
        let mut judged: BTreeMap<String, BTreeMap<String, i32>> = BTreeMap::new();
        for j in qrels {
            judged
                .entry(j.query)
                .or_default()
                .insert(j.doc, j.relevance);
        }
        let negative_judgements = read_negative_as_zero(&mut judged);
        let queries: Vec<BeirQuery> = queries
            .into_iter()
            .filter(|q| judged.contains_key(&q.id))
            .collect();
        let stream_key = beir_stream_key(&sum.finish(), &queries, &judged);
        let mut beir = Beir {
            dataset: name.to_owned(),
            split: split.to_owned(),
            dir,
            corpus_ids,
            corpus: Vec::new(),
            corpus_positions: Vec::new(),
            queries,
            qrels: judged,
            negative_judgements,
            stream_key,
            files,
        };
        let Some(keep) = keep else {
            beir.corpus_positions = (0..whole.len()).collect();
            beir.corpus = whole;
            return Ok(beir);
        };
        let wanted = keep(&beir);
        // second pass: the documents kept
        let dropping = self.policy != EmptyTextPolicy::Keep;
        let visit = |each: &mut dyn FnMut(BeirDocument) -> Result<()>| {
            read_corpus(&mut |_, doc| {
                if dropping && has_empty_text(&doc) {
                    return Ok(());
                }
                each(doc)
            })?;
            Ok(empty.len())
        };
        let at = crate::sample::SplitName {
            dataset: name,
            split,
            path: &corpus_path,
            files: &[],
        };
        let corpus = crate::sample::keep_positions(&at, &visit, &wanted, beir.corpus_ids.len())?;
        beir.corpus = corpus;
        beir.corpus_positions = wanted;
        Ok(beir)
    }
}

/// Every document of a BEIR corpus.jsonl with its line, streamed.
pub(super) fn read_corpus(
    path: &Path,
    each: &mut dyn FnMut(usize, BeirDocument) -> Result<()>,
) -> Result<()> {
    crate::records::for_each(path, crate::Format::JsonLines, &mut |line, object| {
        let at = crate::rows::At {
            path,
            line,
            object: &object,
            cells: crate::records::Cells::Typed,
        };
        each(
            line,
            <BeirDocument as crate::rows::sealed::ReadRow>::from_json(&at, &[])?,
        )
    })
}
