//! What `sage data fetch` reads from a source, on any bytes: the archive readers (gzip, xz, tar,
//! zip, ar, nested), the class-refusing pickle reader and the converters never panic, never
//! unpack past their limit, and a pickle that names a class is never read as data. (A download
//! must match its pinned sha256 before it is converted, but a table of one's own
//! (SAGE_DATA_PINS), a tarball whose bytes cannot be pinned and a file placed by hand are read
//! as they are.)
#![no_main]

use libfuzzer_sys::fuzz_target;
use sage_data::pins::FilePin;
use sage_data::rebuild::{archive, convert, pickle};

const LIMIT: u64 = 1 << 20;

fn pin(convert: &str, inputs: usize, options: &str) -> FilePin {
    FilePin {
        path: "out".into(),
        bytes: 0,
        sha256: String::new(),
        convert: convert.into(),
        from: (0..inputs).map(|i| format!("https://example.org/{i}.txt")).collect(),
        options: options.parse().expect("a valid table"),
    }
}

fuzz_target!(|bytes: &[u8]| {
    for member in ["package/LICENSE", "package/WNdb-3.0.tar.gz!dict/data.adj", "data.tar.xz!./usr/share/wordnet/sents.vrb", "corpus_train.csv"] {
        if let Ok(out) = archive::extract(bytes, member, LIMIT) {
            assert!(out.len() as u64 <= LIMIT.max(bytes.len() as u64), "{} bytes out", out.len());
        }
    }
    let _ = pickle::read(bytes);
    let inputs = [convert::Input { name: "https://example.org/0.txt", bytes }];
    let two = [
        convert::Input { name: "https://example.org/0.txt", bytes },
        convert::Input { name: "https://example.org/1.txt", bytes },
    ];
    for (name, options) in [
        ("tab-rows", r#"fields = [["sentence1", 1, "str"], ["sentence2", 2, "str"], ["score", 0, "float"]]"#),
        ("csv-rows", r#"fields = [["text", "text", "str"], ["label", "label", "str"], ["s", "Text", "line1"]]"#),
        ("csv-rows", r#"fields = [["text", "abstract", "numpy-strings"]]"#),
        ("jsonl-rows", r#"fields = [["_id", "_id", "str"], ["text", "text", "str"]]"#),
        ("sst-binary", ""),
        ("sst-fine", ""),
        ("trec-coarse", ""),
        ("fasttext-reviews", ""),
        ("lf-lines", ""),
        ("trec-docs", ""),
        ("trec-qrels", ""),
        ("labelled-files", ""),
        ("semeval-sts", r#"subsets = ["MSRpar"]"#),
        ("bartscore-pickle", r#"layout = ["ratings", "docs"]
dimensions = ["coherence"]
references = true"#),
        ("newsgroup-subjects", r#"under = ["20news/"]
max_unpacked = 1048576"#),
        ("text-block", r##"after = ["#|"]
until = ["|#"]"##),
    ] {
        let _ = convert::convert(&pin(name, 1, options), &inputs);
    }
    let _ = convert::convert(&pin("labelled-lines", 2, r#"labels = ["1", "0"]"#), &two);
    let _ = convert::convert(&pin("semeval-sts", 2, r#"subsets = ["MSRvid", "MSRvid"]
stsb_subset = "MSRvid""#), &two);
});
