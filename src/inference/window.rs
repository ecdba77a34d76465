//! Overlapping windows over a long token sequence, and which window owns each token.
//!
//! A text longer than the model's positions is cut into windows of at most `budget`
//! tokens; each window after the first starts `overlap` tokens before the previous one
//! ended, moved back to the start of a word so that no window opens on a sub-word
//! continuation. Every token is then *owned* by exactly one window: the seam between two
//! windows is the middle of their overlap, so each owned token has at least half the
//! overlap of context on both sides. Stitching the owned predictions gives one
//! prediction per token, and entity decoding runs once over the stitched text: an
//! entity across a seam is neither lost nor reported twice.

/// A token range `[start, end)` of the full sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// First token of the window.
    pub start: usize,
    /// One past the last token of the window.
    pub end: usize,
    /// First token whose prediction this window supplies.
    pub own_start: usize,
    /// One past the last token whose prediction this window supplies.
    pub own_end: usize,
}

impl Window {
    /// Number of tokens in the window.
    pub fn len(&self) -> usize {
        self.end - self.start
    }

    /// True for an empty window (never produced by [`plan`]).
    pub fn is_empty(&self) -> bool {
        self.end <= self.start
    }
}

/// Plans the windows over `word_ids.len()` tokens.
///
/// `budget` is the number of content tokens per window (specials excluded, at least 1);
/// `overlap` is clamped below `budget / 2` so that windows always advance.
pub fn plan(word_ids: &[Option<u32>], budget: usize, overlap: usize) -> Vec<Window> {
    let count = word_ids.len();
    let budget = budget.max(1);
    let overlap = overlap.min(budget / 2);
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut start = 0;
    while start < count {
        let end = (start + budget).min(count);
        spans.push((start, end));
        if end == count {
            break;
        }
        let mut next = end - overlap;
        while next > start + 1 && word_ids[next].is_some() && word_ids[next] == word_ids[next - 1] {
            next -= 1;
        }
        // Moving back to a word start must not give up the window's progress.
        start = if next > start { next } else { end };
    }
    let mut out = Vec::with_capacity(spans.len());
    for (i, &(s, e)) in spans.iter().enumerate() {
        let own_start = if i == 0 {
            s
        } else {
            seam(spans[i - 1], (s, e))
        };
        let own_end = match spans.get(i + 1) {
            Some(&next) => seam((s, e), next),
            None => e,
        };
        out.push(Window {
            start: s,
            end: e,
            own_start,
            own_end,
        });
    }
    out
}

/// The seam between two consecutive windows: the middle of their overlap.
fn seam(a: (usize, usize), b: (usize, usize)) -> usize {
    if b.0 >= a.1 {
        b.0
    } else {
        (b.0 + a.1) / 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn words(n: usize, per_word: usize) -> Vec<Option<u32>> {
        (0..n).map(|i| Some((i / per_word) as u32)).collect()
    }

    #[test]
    fn short_sequences_are_one_window() {
        let w = plan(&words(5, 1), 10, 4);
        assert_eq!(
            w,
            vec![Window {
                start: 0,
                end: 5,
                own_start: 0,
                own_end: 5
            }]
        );
        assert!(plan(&[], 10, 4).is_empty());
    }

    #[test]
    fn seams_sit_mid_overlap_and_windows_start_on_words() {
        // 20 tokens in words of 2; budget 8, overlap 3.
        let w = plan(&words(20, 2), 8, 3);
        assert_eq!(w[0].start, 0);
        assert_eq!(w[0].end, 8);
        // 8 - 3 = 5 is inside word 2 (tokens 4,5): moved back to 4.
        assert_eq!(w[1].start, 4);
        assert_eq!(w[0].own_end, 6);
        assert_eq!(w[1].own_start, 6);
        assert_eq!(w.last().map(|x| x.end), Some(20));
    }

    #[test]
    fn one_huge_word_still_advances() {
        let w = plan(&vec![Some(0); 50], 8, 3);
        assert!(w.len() >= 7);
        assert_eq!(w.last().map(|x| x.end), Some(50));
    }

    proptest! {
        #[test]
        fn every_token_is_owned_once_inside_its_window(
            n in 0usize..400, budget in 1usize..64, overlap in 0usize..40, per_word in 1usize..6
        ) {
            let w = plan(&words(n, per_word), budget, overlap);
            let mut next = 0;
            for win in &w {
                prop_assert!(win.len() <= budget);
                prop_assert!(win.start <= win.own_start && win.own_end <= win.end);
                prop_assert_eq!(win.own_start, next);
                next = win.own_end;
            }
            prop_assert_eq!(next, n);
        }
    }
}
