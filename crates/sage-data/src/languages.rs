//! Languages of rows and subsets, written as MTEB writes them: an ISO 639-3 code and an ISO
//! 15924 script joined by a hyphen (`eng-Latn`, `ara-Arab`). A cross-lingual subset names one
//! language per side (`en-ar`: the first sentence English, the second Arabic).
//!
//! One table serves the three readers of a language: the loader (a subset code such as `en-de`
//! becomes `["eng-Latn", "deu-Latn"]`), the MTEB result file (its `languages` list) and the
//! paraphrase prompt (the English name it asks the rewrite to stay in).

/// (ISO 639-1 code where one exists, MTEB's language-script code, English name). The languages
/// of the multilingual datasets PTEB runs (STS17, STS22, AmazonCounterfactual, MasakhaNEWS,
/// RTE3, RuBQ, TwitterHjerne).
const LANGUAGES: &[(&str, &str, &str)] = &[
    ("am", "amh-Ethi", "Amharic"),
    ("ar", "ara-Arab", "Arabic"),
    ("da", "dan-Latn", "Danish"),
    ("de", "deu-Latn", "German"),
    ("en", "eng-Latn", "English"),
    ("es", "spa-Latn", "Spanish"),
    ("fr", "fra-Latn", "French"),
    ("ha", "hau-Latn", "Hausa"),
    ("ig", "ibo-Latn", "Igbo"),
    ("it", "ita-Latn", "Italian"),
    ("ja", "jpn-Jpan", "Japanese"),
    ("ko", "kor-Hang", "Korean"),
    ("lg", "lug-Latn", "Luganda"),
    ("ln", "lin-Latn", "Lingala"),
    ("nl", "nld-Latn", "Dutch"),
    ("om", "orm-Ethi", "Oromo"),
    ("pl", "pol-Latn", "Polish"),
    ("ru", "rus-Cyrl", "Russian"),
    ("rn", "run-Latn", "Kirundi"),
    ("sn", "sna-Latn", "Shona"),
    ("so", "som-Latn", "Somali"),
    ("sw", "swa-Latn", "Swahili"),
    ("ti", "tir-Ethi", "Tigrinya"),
    ("tr", "tur-Latn", "Turkish"),
    ("xh", "xho-Latn", "Xhosa"),
    ("yo", "yor-Latn", "Yoruba"),
    ("zh", "cmn-Hans", "Chinese"),
    ("", "pcm-Latn", "Nigerian Pidgin"),
];

/// English, as MTEB writes it: what a row without a language is taken to be.
pub const ENGLISH: &str = "eng-Latn";

/// The MTEB code of a two-letter ISO 639-1 code (`ar` → `ara-Arab`), of a three-letter ISO
/// 639-3 code (`pcm` → `pcm-Latn`), or of an MTEB code itself.
pub fn mteb_code(code: &str) -> Option<&'static str> {
    LANGUAGES
        .iter()
        .find(|(two, mteb, _)| {
            (!two.is_empty() && *two == code)
                || *mteb == code
                || mteb.split('-').next() == Some(code)
        })
        .map(|(_, mteb, _)| *mteb)
}

/// The English name of a language (any form [`mteb_code`] reads), for a prompt that must name
/// it.
pub fn english_name(code: &str) -> Option<&'static str> {
    let mteb = mteb_code(code)?;
    LANGUAGES
        .iter()
        .find(|(_, m, _)| *m == mteb)
        .map(|(_, _, name)| *name)
}

/// The languages of a subset named by its language codes, one per side: `en-de` → `[eng-Latn,
/// deu-Latn]`, `ar-ar` → `[ara-Arab, ara-Arab]`, `en` → `[eng-Latn]`; a part after the first
/// that is no language tags a variant (AmazonCounterfactual's `en-ext`: `[eng-Latn]`). `None`
/// when the first part is no language this table knows (STS12's `MSRpar`, STS16's
/// `answer-answer` are sub-corpora, not languages).
pub fn subset_languages(subset: &str) -> Option<Vec<String>> {
    let mut parts = subset.split('-');
    let first = mteb_code(parts.next()?)?;
    let mut languages = vec![first.to_owned()];
    languages.extend(parts.filter_map(mteb_code).map(str::to_owned));
    Some(languages)
}

/// Whether every one of `languages` (MTEB's form; empty: English, what a row without a language
/// is read as) is among `among` (any form [`mteb_code`] reads; empty: every language is).
pub fn all_among(languages: &[String], among: &[String]) -> bool {
    let english = [ENGLISH.to_owned()];
    let languages = if languages.is_empty() {
        &english[..]
    } else {
        languages
    };
    among.is_empty()
        || languages.iter().all(|l| {
            among
                .iter()
                .any(|a| mteb_code(a) == mteb_code(l) && mteb_code(a).is_some())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_names_and_subsets() {
        assert_eq!(mteb_code("ar"), Some("ara-Arab"));
        assert_eq!(mteb_code("pcm"), Some("pcm-Latn"));
        assert_eq!(mteb_code("eng-Latn"), Some("eng-Latn"));
        assert_eq!(mteb_code("xx"), None);
        assert_eq!(english_name("tr"), Some("Turkish"));
        assert_eq!(english_name("kor-Hang"), Some("Korean"));
        assert_eq!(
            subset_languages("en-ar"),
            Some(vec!["eng-Latn".to_owned(), "ara-Arab".to_owned()])
        );
        assert_eq!(subset_languages("en"), Some(vec!["eng-Latn".to_owned()]));
        assert_eq!(
            subset_languages("en-ext"),
            Some(vec!["eng-Latn".to_owned()])
        );
        assert_eq!(subset_languages("answer-answer"), None);
        let langs = |l: &[&str]| l.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert!(all_among(
            &langs(&["eng-Latn", "ara-Arab"]),
            &langs(&["en", "ara"])
        ));
        assert!(!all_among(
            &langs(&["eng-Latn", "ara-Arab"]),
            &langs(&["eng"])
        ));
        assert!(all_among(&[], &langs(&["eng-Latn"])));
        assert!(all_among(&langs(&["kor-Hang"]), &[]));
        assert_eq!(subset_languages("MSRpar"), None);
        assert_eq!(subset_languages("headlines"), None);
        // every row of the table is reachable by each of its codes
        for (two, mteb, name) in LANGUAGES {
            if !two.is_empty() {
                assert_eq!(mteb_code(two), Some(*mteb));
            }
            assert_eq!(english_name(mteb), Some(*name));
        }
    }
}
