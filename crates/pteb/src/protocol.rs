//! How MTEB runs each task PTEB takes from it: the task a registry dataset is, and the
//! protocol details a task's score depends on (classification's experiments and training texts
//! per label, clustering's sets). Kept apart from [`crate::mteb`]'s result files so that loading
//! and scoring need nothing of the files.

/// MTEB's name of each registry dataset that is an MTEB task.
const MTEB_TASKS: [(&str, &str); 23] = [
    ("stsb", "STSBenchmark"),
    ("sickr", "SICK-R"),
    ("sts12", "STS12"),
    ("sts13", "STS13"),
    ("sts14", "STS14"),
    ("sts15", "STS15"),
    ("sts16", "STS16"),
    // the official tracks and the pairs only MTEB's copy has are one MTEB task
    ("sts17", "STS17"),
    ("sts17-extra", "STS17"),
    ("sts17-ko", "STS17"),
    ("sts22", "STS22"),
    (
        "amazon-counterfactual",
        "AmazonCounterfactualClassification",
    ),
    ("masakhanews", "MasakhaNEWSClusteringS2S"),
    ("arguana", "ArguAna"),
    ("twitterhjerne", "TwitterHjerneRetrieval"),
    ("rte3", "RTE3"),
    ("rubq-reranking", "RuBQReranking"),
    ("biosses", "BIOSSES"),
    ("banking77", "Banking77Classification"),
    ("twentynewsgroups", "TwentyNewsgroupsClustering"),
    ("twitter-semeval2015", "TwitterSemEval2015"),
    ("askubuntudupquestions", "AskUbuntuDupQuestions"),
    ("scifact", "SciFact"),
];

/// Experiments MTEB's classification averages over (`AbsTaskClassification.n_experiments`).
pub const CLASSIFICATION_EXPERIMENTS: usize = 10;

/// Training texts per label in each of MTEB's classification experiments: the task's
/// `samples_per_label` (AmazonCounterfactualClassification: 32), else the default, 8.
pub fn samples_per_label(dataset: &str) -> usize {
    match mteb_task_name(dataset) {
        Some("AmazonCounterfactualClassification") => 32,
        _ => 8,
    }
}

/// The sets MTEB's clustering task cuts a subset's rows into, each clustered on its own
/// (MasakhaNEWSClusteringS2S's `dataset_transform`: `np.array_split(headlines, 5)`); 1: the rows
/// as one set.
pub fn clustering_sets(dataset: &str) -> usize {
    match mteb_task_name(dataset) {
        Some("MasakhaNEWSClusteringS2S") => 5,
        _ => 1,
    }
}

/// The MTEB task a registry dataset is, if it is one.
pub fn mteb_task_name(dataset: &str) -> Option<&'static str> {
    MTEB_TASKS
        .iter()
        .find(|(name, _)| *name == dataset)
        .map(|(_, task)| *task)
}
