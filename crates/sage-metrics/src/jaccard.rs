//! Jaccard similarity of cl100k token-id sets.

use crate::tokens::{multiset_intersection, sorted, token_similarity, TokenPairMetric};

/// `|A ∩ B| / |A ∪ B|` over the *sets* of cl100k token ids of the two texts, as SAGE's
/// `len(set(a) & set(b)) / len(set(a) | set(b))`; 1 when both texts are empty (Python divides by
/// zero there).
#[derive(Clone, Copy, Debug, Default)]
pub struct Jaccard;

impl TokenPairMetric for Jaccard {
    type Prepared = Vec<u32>;

    fn prepare(&self, tokens: Vec<u32>) -> Vec<u32> {
        let mut set = sorted(tokens);
        set.dedup();
        set
    }

    fn compare(&self, a: &Vec<u32>, b: &Vec<u32>) -> f64 {
        let common = multiset_intersection(a, b);
        let union = a.len() + b.len() - common;
        if union == 0 {
            1.0
        } else {
            common as f64 / union as f64
        }
    }
}

token_similarity!(Jaccard, "jaccard");
