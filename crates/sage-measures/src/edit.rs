//! Edit distance between token sequences.

/// Levenshtein distance between two sequences: the fewest insertions, deletions and
/// substitutions (each cost 1) turning `a` into `b`.
pub fn edit_distance<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, x) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, y) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(x != y);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

/// PTEB's normalised edit distance: word-level Levenshtein distance between the
/// whitespace-separated words of `a` and `b`, divided by the larger word count (0 for two empty
/// texts). 0 = same words, 1 = nothing in common position-wise.
pub fn normalized_word_edit_distance(a: &str, b: &str) -> f64 {
    let wa: Vec<&str> = a.split_whitespace().collect();
    let wb: Vec<&str> = b.split_whitespace().collect();
    let longest = wa.len().max(wb.len());
    if longest == 0 {
        return 0.0;
    }
    edit_distance(&wa, &wb) as f64 / longest as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levenshtein_on_characters_and_words() {
        let c = |s: &str| s.chars().collect::<Vec<_>>();
        assert_eq!(edit_distance(&c("kitten"), &c("sitting")), 3);
        assert_eq!(edit_distance(&c(""), &c("abc")), 3);
        assert_eq!(edit_distance(&c("flaw"), &c("lawn")), 2);
        // nltk.edit_distance(["the","cat","sat"], ["a","cat","sat","down"]) == 2
        assert_eq!(
            normalized_word_edit_distance("the cat sat", "a cat sat down"),
            2.0 / 4.0
        );
        assert_eq!(normalized_word_edit_distance("", ""), 0.0);
        assert_eq!(normalized_word_edit_distance("a b", "a b"), 0.0);
        assert_eq!(normalized_word_edit_distance("a b", "c d"), 1.0);
    }
}
