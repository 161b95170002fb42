//! The best k documents of a query under trec_eval's order, in O(k) memory.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use sage_measures::RankedDoc;

/// A candidate; `Ord` puts the *worse* candidate first so the heap's top is the one to evict.
#[derive(Clone, Debug, PartialEq)]
struct Entry {
    score: f64,
    id: String,
}

impl Eq for Entry {}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        // trec order: higher score first, then higher id; reversed so worse = greater
        other
            .score
            .total_cmp(&self.score)
            .then_with(|| other.id.as_bytes().cmp(self.id.as_bytes()))
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The k best (score, id) pairs seen, in trec_eval's order (score descending, id descending).
#[derive(Clone, Debug)]
pub struct TopK {
    k: usize,
    heap: BinaryHeap<Entry>,
}

impl TopK {
    /// An empty top-`k`.
    pub fn new(k: usize) -> TopK {
        TopK {
            k,
            heap: BinaryHeap::with_capacity(k + 1),
        }
    }

    /// Offers a document; the id is copied only when it enters.
    pub fn offer(&mut self, score: f64, id: &str) {
        if self.heap.len() == self.k {
            let worst = self.heap.peek().expect("k > 0 when full");
            let better = match score.total_cmp(&worst.score) {
                Ordering::Equal => id.as_bytes() > worst.id.as_bytes(),
                other => other == Ordering::Greater,
            };
            if !better {
                return;
            }
            self.heap.pop();
        }
        if self.k > 0 {
            self.heap.push(Entry {
                score,
                id: id.to_owned(),
            });
        }
    }

    /// Offers everything another top-k holds.
    pub fn merge(&mut self, other: &TopK) {
        for e in &other.heap {
            self.offer(e.score, &e.id);
        }
    }

    /// The run, best first.
    pub fn ranked(&self) -> Vec<RankedDoc<'_>> {
        let mut run: Vec<RankedDoc<'_>> = self
            .heap
            .iter()
            .map(|e| RankedDoc {
                id: &e.id,
                score: e.score,
            })
            .collect();
        sage_measures::trec_order(&mut run);
        run
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_best_in_trec_order_with_ties_to_the_higher_id() {
        let mut top = TopK::new(3);
        for (s, id) in [
            (0.5, "a"),
            (0.9, "b"),
            (0.5, "c"),
            (0.1, "d"),
            (0.5, "b2"),
            (0.9, "a"),
        ] {
            top.offer(s, id);
        }
        let ids: Vec<&str> = top.ranked().iter().map(|d| d.id).collect();
        // 0.9: b then a (id descending); 0.5: c beats b2 and a
        assert_eq!(ids, ["b", "a", "c"]);
    }

    #[test]
    fn equals_a_full_sort_truncated() {
        let docs: Vec<(f64, String)> = (0..200)
            .map(|i| (((i * 37) % 11) as f64 / 10.0, format!("d{i}")))
            .collect();
        let mut top = TopK::new(10);
        for (s, id) in &docs {
            top.offer(*s, id);
        }
        let mut all: Vec<RankedDoc<'_>> = docs
            .iter()
            .map(|(s, id)| RankedDoc { id, score: *s })
            .collect();
        sage_measures::trec_order(&mut all);
        assert_eq!(top.ranked(), all[..10].to_vec());
        let mut merged = TopK::new(10);
        let (mut a, mut b) = (TopK::new(10), TopK::new(10));
        for (i, (s, id)) in docs.iter().enumerate() {
            if i % 2 == 0 {
                a.offer(*s, id)
            } else {
                b.offer(*s, id)
            }
        }
        merged.merge(&a);
        merged.merge(&b);
        assert_eq!(merged.ranked(), all[..10].to_vec());
    }
}
