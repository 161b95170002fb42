//! Each suite's options are declared once, in their crate ([`sage_core::suite_options!`]): the
//! flags, the help, the ranges and the defaults are read off that declaration. These tests hold
//! the rest of the workspace to it: the shipped bench.toml writes no default again (a copy would
//! silently stop following the code), and every shipped suite declares its options.

use serde_json::Value;

/// Two values equal as options: numbers by value (TOML's `0` is JSON's `0.0`), the rest alike.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// Every `key = value` of an options table, sections as dotted keys (`gate.low_cosine`).
fn leaves(prefix: &str, table: &Value, out: &mut Vec<(String, Value)>, sections: &[String]) {
    let Value::Object(map) = table else { return };
    for (key, value) in map {
        let dotted = format!("{prefix}{key}");
        if value.is_object() && sections.iter().any(|s| s == &dotted) {
            leaves(&format!("{dotted}."), value, out, sections);
        } else {
            out.push((dotted, value.clone()));
        }
    }
}

/// Where `config` (a bench.toml) writes a shipped suite's default again: `suite: key = value`.
fn defaults_written_twice(config: &str) -> Vec<String> {
    let config: toml::Table = toml::from_str(config).unwrap();
    let registry = sage_suites::Registry::standard();
    let mut twice = Vec::new();
    let Some(suites) = config.get("suites").and_then(|s| s.as_table()) else {
        return twice;
    };
    for (name, table) in suites {
        let Ok(suite) = registry.find(name) else {
            continue;
        };
        let declared = suite.options();
        let sections: Vec<String> = declared
            .iter()
            .filter_map(|o| o.key.rsplit_once('.').map(|(s, _)| s.to_owned()))
            .collect();
        let table = serde_json::to_value(table).unwrap();
        let options_of = |key: &str| {
            let mut out = Vec::new();
            leaves("", &table[key], &mut out, &sections);
            out
        };
        let options = options_of("options");
        // a quick value equal to the default is needed where `options` says otherwise
        let quick: Vec<_> = options_of("quick_options")
            .into_iter()
            .filter(|(key, _)| !options.iter().any(|(k, _)| k == key))
            .collect();
        for (key, value) in options.iter().chain(&quick) {
            let Some(option) = declared.iter().find(|o| &o.key == key) else {
                continue;
            };
            if !option.required && same(&option.default, value) {
                twice.push(format!("{name}: {key} = {value}"));
            }
        }
    }
    twice
}

#[test]
fn the_shipped_bench_toml_writes_no_default_twice() {
    let twice = defaults_written_twice(sage_bench::DEFAULT_CONFIG);
    assert!(
        twice.is_empty(),
        "bench.toml writes these defaults of the code again (leave them out: the declaration \
         is the one place they live):\n{}",
        twice.join("\n")
    );
}

/// The check itself finds a default written again, in a section too, and leaves alone a value
/// that differs, a required option, and a quick value that undoes `options`.
#[test]
fn a_default_written_again_is_found() {
    let config = r#"
[suites.clustering]
options = { subsets = 5, max_texts = 300 }
quick_options = { max_texts = 2000, max_classes = 50 }

[suites.pteb]
options = { paraphraser = "x", gate = { low_cosine = 0.66, max_share_below = 0.3 } }

[suites.evalrank]
options = { level = "word" }

[suites.noise]
quick_options = { rates = [0, 0.05, 0.1, 0.2, 0.4] }
"#;
    let mut found = defaults_written_twice(config);
    found.sort();
    assert_eq!(
        found,
        [
            "clustering: max_classes = 50",
            "clustering: subsets = 5",
            "noise: rates = [0,0.05,0.1,0.2,0.4]",
            "pteb: gate.low_cosine = 0.66",
        ]
    );
}

/// Every shipped suite declares its options, so each has flags and documented defaults.
#[test]
fn every_shipped_suite_declares_its_options() {
    for suite in sage_suites::Registry::standard().suites() {
        assert!(
            !suite.options().is_empty(),
            "{} declares no options",
            suite.name()
        );
    }
}
