//! Token predictions → entities: sub-word aggregation and BIO/BIOES decoding.
//!
//! Mirrors transformers' `TokenClassificationPipeline` aggregation strategies:
//! - [`Strategy::Simple`]: every token keeps its own label; B/I tags group tokens.
//! - [`Strategy::First`] / [`Strategy::Max`] / [`Strategy::Average`]: tokens of one word
//!   (the tokenizer's word ids) first agree on one label (the first token's, the most
//!   confident token's, or the argmax of the averaged probabilities), then words are
//!   grouped by their tags. Word-level strategies never split a word between entities,
//!   which matters for models such as Rampart that tag every sub-word `B-`.
//!
//! Decoding is lenient as transformers' is: an `I-` or `E-` without a matching open
//! entity starts one, and an entity's score is the mean of its tokens' or words' scores.

use super::labels::{split_tag, Tag};

/// How sub-word predictions become word predictions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Strategy {
    /// Token-level labels, grouped by tags.
    Simple,
    /// The first sub-word decides (transformers' `first`).
    #[default]
    First,
    /// The most confident sub-word decides (`max`).
    Max,
    /// The averaged probabilities decide (`average`).
    Average,
}

impl Strategy {
    /// Parses `simple`, `first`, `max` or `average` (case-insensitive).
    pub fn parse(name: &str) -> Option<Strategy> {
        match name.trim().to_ascii_lowercase().as_str() {
            "simple" => Some(Strategy::Simple),
            "first" => Some(Strategy::First),
            "max" => Some(Strategy::Max),
            "average" => Some(Strategy::Average),
            _ => None,
        }
    }
}

/// The class table: each class's tag and entity-type index.
#[derive(Clone, Debug)]
pub struct LabelTable {
    tags: Vec<(Tag, usize)>,
    types: Vec<String>,
}

impl LabelTable {
    /// Builds the table from raw labels in class order (`O`, `B-NAME`, `I-NAME`, …).
    pub fn new(raw: &[String]) -> LabelTable {
        let mut types: Vec<String> = Vec::new();
        let tags = raw
            .iter()
            .map(|r| {
                let (tag, ty) = split_tag(r);
                let idx = match types.iter().position(|t| t == ty) {
                    Some(i) => i,
                    None => {
                        types.push(ty.to_owned());
                        types.len() - 1
                    }
                };
                (tag, idx)
            })
            .collect();
        LabelTable { tags, types }
    }

    /// Number of classes.
    pub fn num_classes(&self) -> usize {
        self.tags.len()
    }

    /// The entity types, indexed by [`Entity::ty`].
    pub fn types(&self) -> &[String] {
        &self.types
    }
}

/// One decoded entity, in code-point offsets.
#[derive(Clone, Debug, PartialEq)]
pub struct Entity {
    /// First code point.
    pub start: usize,
    /// One past the last code point.
    pub end: usize,
    /// Index into [`LabelTable::types`].
    pub ty: usize,
    /// Mean score of the entity's tokens or words.
    pub score: f32,
}

/// The per-token inputs of one text (special tokens excluded).
#[derive(Clone, Copy, Debug)]
pub struct TokenView<'a> {
    /// Softmax probabilities, `[n_tokens * n_classes]` row-major.
    pub probs: &'a [f32],
    /// Code-point offsets of each token.
    pub offsets: &'a [(usize, usize)],
    /// Word index of each token (None: a token outside any word).
    pub word_ids: &'a [Option<u32>],
}

struct Unit {
    start: usize,
    end: usize,
    class: usize,
    score: f32,
}

fn argmax(row: &[f32]) -> (usize, f32) {
    let mut best = (0, f32::NEG_INFINITY);
    for (i, &p) in row.iter().enumerate() {
        if p > best.1 {
            best = (i, p);
        }
    }
    best
}

fn units(view: &TokenView<'_>, n: usize, strategy: Strategy) -> Vec<Unit> {
    let rows = view.offsets.len();
    let row = |t: usize| &view.probs[t * n..(t + 1) * n];
    let mut out = Vec::new();
    let mut t = 0;
    while t < rows {
        let mut end_tok = t + 1;
        if strategy != Strategy::Simple {
            if let Some(w) = view.word_ids[t] {
                while end_tok < rows && view.word_ids[end_tok] == Some(w) {
                    end_tok += 1;
                }
            }
        }
        let live: Vec<usize> = (t..end_tok)
            .filter(|&i| view.offsets[i].0 < view.offsets[i].1)
            .collect();
        if let (Some(&first), Some(&last)) = (live.first(), live.last()) {
            let (class, score) = match strategy {
                Strategy::Simple | Strategy::First => argmax(row(first)),
                Strategy::Max => live
                    .iter()
                    .map(|&i| argmax(row(i)))
                    .fold((0, f32::NEG_INFINITY), |a, b| if b.1 > a.1 { b } else { a }),
                Strategy::Average => {
                    let mut avg = vec![0f32; n];
                    for &i in &live {
                        for (a, p) in avg.iter_mut().zip(row(i)) {
                            *a += p;
                        }
                    }
                    let k = live.len() as f32;
                    avg.iter_mut().for_each(|a| *a /= k);
                    argmax(&avg)
                }
            };
            out.push(Unit {
                start: view.offsets[first].0,
                end: view.offsets[last].1,
                class,
                score,
            });
        }
        t = end_tok;
    }
    out
}

struct Open {
    start: usize,
    end: usize,
    ty: usize,
    sum: f32,
    count: usize,
}

impl Open {
    fn close(self) -> Entity {
        Entity {
            start: self.start,
            end: self.end,
            ty: self.ty,
            score: self.sum / self.count as f32,
        }
    }
}

/// Decodes one text's token predictions into entities, sorted by start.
///
/// # Panics
/// When `view.probs` holds fewer than `offsets.len() * table.num_classes()` values or
/// `word_ids` is shorter than `offsets` (a caller bug).
pub fn decode(view: &TokenView<'_>, table: &LabelTable, strategy: Strategy) -> Vec<Entity> {
    let n = table.num_classes();
    assert!(
        view.probs.len() >= view.offsets.len() * n,
        "probabilities too short"
    );
    assert!(
        view.word_ids.len() >= view.offsets.len(),
        "word ids too short"
    );
    let mut done = Vec::new();
    let mut open: Option<Open> = None;
    for u in units(view, n, strategy) {
        let (tag, ty) = table.tags[u.class];
        let fresh = Open {
            start: u.start,
            end: u.end,
            ty,
            sum: u.score,
            count: 1,
        };
        let continues = matches!(&open, Some(o) if o.ty == ty);
        match tag {
            Tag::Outside => done.extend(open.take().map(Open::close)),
            Tag::Begin => {
                done.extend(open.take().map(Open::close));
                open = Some(fresh);
            }
            Tag::Single => {
                done.extend(open.take().map(Open::close));
                done.push(fresh.close());
            }
            Tag::Inside | Tag::End => {
                if continues {
                    if let Some(o) = open.as_mut() {
                        o.end = u.end;
                        o.sum += u.score;
                        o.count += 1;
                    }
                } else {
                    done.extend(open.take().map(Open::close));
                    open = Some(fresh);
                }
                if tag == Tag::End {
                    done.extend(open.take().map(Open::close));
                }
            }
        }
    }
    done.extend(open.map(Open::close));
    done.sort_by_key(|e| (e.start, e.end));
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(raw: &[&str]) -> LabelTable {
        LabelTable::new(&raw.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    /// One-hot-ish probabilities: `classes[i]` gets `p`, the rest share `1 - p`.
    fn probs(classes: &[(usize, f32)], n: usize) -> Vec<f32> {
        let mut out = vec![0f32; classes.len() * n];
        for (t, &(c, p)) in classes.iter().enumerate() {
            for k in 0..n {
                out[t * n + k] = if k == c {
                    p
                } else {
                    (1.0 - p) / (n - 1) as f32
                };
            }
        }
        out
    }

    #[test]
    fn bio_groups_begin_inside_and_breaks_on_outside() {
        // "John Smith lives in Paris": B-PER I-PER O O B-LOC
        let t = table(&["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]);
        let p = probs(&[(1, 0.9), (2, 0.7), (0, 0.9), (0, 0.9), (3, 0.8)], 5);
        let offsets = [(0, 4), (5, 10), (11, 16), (17, 19), (20, 25)];
        let words = [Some(0), Some(1), Some(2), Some(3), Some(4)];
        let view = TokenView {
            probs: &p,
            offsets: &offsets,
            word_ids: &words,
        };
        let e = decode(&view, &t, Strategy::Simple);
        assert_eq!(e.len(), 2);
        assert_eq!(
            (e[0].start, e[0].end, t.types()[e[0].ty].as_str()),
            (0, 10, "PER")
        );
        assert!((e[0].score - 0.8).abs() < 1e-6);
        assert_eq!(
            (e[1].start, e[1].end, t.types()[e[1].ty].as_str()),
            (20, 25, "LOC")
        );
    }

    #[test]
    fn bioes_single_and_end_close_entities() {
        let t = table(&["O", "B-X", "I-X", "E-X", "S-X"]);
        // S-X, B-X I-X E-X, I-X (orphan inside starts a new entity)
        let p = probs(&[(4, 0.9), (1, 0.9), (2, 0.9), (3, 0.9), (2, 0.9)], 5);
        let offsets = [(0, 1), (2, 3), (4, 5), (6, 7), (8, 9)];
        let words = [Some(0), Some(1), Some(2), Some(3), Some(4)];
        let view = TokenView {
            probs: &p,
            offsets: &offsets,
            word_ids: &words,
        };
        let spans: Vec<_> = decode(&view, &t, Strategy::Simple)
            .iter()
            .map(|e| (e.start, e.end))
            .collect();
        assert_eq!(spans, vec![(0, 1), (2, 7), (8, 9)]);
    }

    #[test]
    fn subword_strategies_decide_per_word() {
        // "Springfield" = "spring" "##field": B-CITY then O (weak) — first keeps the word.
        let t = table(&["O", "B-CITY", "I-CITY"]);
        let p = probs(&[(1, 0.6), (0, 0.95)], 3);
        let offsets = [(0, 6), (6, 11)];
        let words = [Some(0), Some(0)];
        let view = TokenView {
            probs: &p,
            offsets: &offsets,
            word_ids: &words,
        };
        let first = decode(&view, &t, Strategy::First);
        assert_eq!(first.len(), 1);
        assert_eq!((first[0].start, first[0].end), (0, 11));
        // max: the confident O wins, so no entity.
        assert!(decode(&view, &t, Strategy::Max).is_empty());
        // simple: only the first sub-word.
        let simple = decode(&view, &t, Strategy::Simple);
        assert_eq!((simple[0].start, simple[0].end), (0, 6));
        // average of (0.6 city, 0.2 O) and (0.025 city, 0.95 O): O wins.
        assert!(decode(&view, &t, Strategy::Average).is_empty());
    }

    #[test]
    fn every_subword_tagged_begin_is_one_word_entity() {
        // Rampart tags "62", "##70", "##4" all B-ZIP_CODE.
        let t = table(&["O", "B-ZIP_CODE", "I-ZIP_CODE"]);
        let p = probs(&[(1, 0.9), (1, 0.9), (1, 0.9)], 3);
        let offsets = [(10, 12), (12, 14), (14, 15)];
        let words = [Some(3), Some(3), Some(3)];
        let view = TokenView {
            probs: &p,
            offsets: &offsets,
            word_ids: &words,
        };
        let e = decode(&view, &t, Strategy::First);
        assert_eq!(e.len(), 1);
        assert_eq!((e[0].start, e[0].end), (10, 15));
        assert_eq!(decode(&view, &t, Strategy::Simple).len(), 3);
    }

    #[test]
    fn strategy_names_parse() {
        assert_eq!(Strategy::parse("FIRST"), Some(Strategy::First));
        assert_eq!(Strategy::parse("simple"), Some(Strategy::Simple));
        assert_eq!(Strategy::parse("none"), None);
    }
}
