//! Every perturbation on any text, with parameters drawn inside the ranges its kind documents
//! (`PerturbationSpec::KINDS`; for one input in four, any strings at all): building either succeeds or names the parameter,
//! applying never panics, and the same seed gives the same text twice; a noise channel at rate
//! 0 gives the text back unchanged. The WordNet kinds use the fixture mirror's WordNet.
#![no_main]

use std::path::Path;
use std::sync::{Arc, OnceLock};

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use sage_core::RunSeed;
use sage_perturb::{Kind, Parameter, PerturbationSpec, WordNet};

fn wordnet() -> Arc<WordNet> {
    static WORDNET: OnceLock<Arc<WordNet>> = OnceLock::new();
    WORDNET
        .get_or_init(|| {
            let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../data/fixtures/mirror/wordnet/dict");
            Arc::new(WordNet::open(dir).unwrap())
        })
        .clone()
}

/// A value inside the parameter's documented range (whole for a count); counts up to a million
/// cost up to a million swaps a text, so large ones are drawn rarely.
fn within(u: &mut Unstructured, p: &Parameter) -> arbitrary::Result<String> {
    if p.whole {
        let top = if u.ratio(1, 64)? { p.max } else { p.max.min(p.min + 64.0) };
        let n = u.int_in_range(p.min as u64..=top as u64)?;
        return Ok(n.to_string());
    }
    let step = f64::from(u16::arbitrary(u)?) / f64::from(u16::MAX);
    Ok((p.min + (p.max - p.min) * step).to_string())
}

fn params(u: &mut Unstructured, kind: &Kind) -> arbitrary::Result<Vec<(String, String)>> {
    if u.ratio(1, 4)? {
        // anything at all: an error is fine, a panic or a runaway allocation is not
        return Vec::<(String, String)>::arbitrary(u);
    }
    let mut params = Vec::new();
    for p in kind.parameters {
        if u.arbitrary()? {
            params.push((p.name.to_owned(), within(u, p)?));
        }
    }
    Ok(params)
}

fuzz_target!(|input: &[u8]| {
    let mut u = Unstructured::new(input);
    let Ok(pick) = u.choose_index(PerturbationSpec::KINDS.len()) else {
        return;
    };
    let kind = &PerturbationSpec::KINDS[pick];
    let Ok(params) = params(&mut u, kind) else {
        return;
    };
    let Ok(seed) = u64::arbitrary(&mut u) else {
        return;
    };
    let text = String::from_utf8_lossy(u.take_rest()).into_owned();
    // the first `rate` given is the one built
    let rate_zero = params
        .iter()
        .find(|(k, _)| k == "rate")
        .is_some_and(|(_, v)| v.parse::<f64>() == Ok(0.0));
    let spec = PerturbationSpec {
        kind: kind.name.to_owned(),
        params,
    };
    let Ok(perturbation) = spec.build(|| Ok(wordnet())) else {
        return;
    };
    let once = perturbation.apply(&text, &mut RunSeed(seed).rng("fuzz"));
    let twice = perturbation.apply(&text, &mut RunSeed(seed).rng("fuzz"));
    match (once, twice) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a, b, "{} is not deterministic", perturbation.id());
            if rate_zero {
                assert_eq!(a.text, text, "{} at rate 0 changed the text", perturbation.id());
            }
        }
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        (a, b) => panic!("{}: {a:?} then {b:?}", perturbation.id()),
    }
});
