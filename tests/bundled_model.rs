//! The bundled model (`models/phiguard-deid`) through candle against transformers.
//!
//! `tests/fixtures/bundled/transformers.json` holds what transformers'
//! `BertForTokenClassification` (float32) answers for the corpus sample notes, a text of
//! non-ASCII names and all the notes joined into one text longer than a window: the top
//! label of every token and the spans of phiguard's decoding (`tools/check_trained.py
//! --write-expected`, which needs PyTorch; this test does not). The fixture names the sha256
//! of the weights it came from, so new weights without a new fixture fail here, not later.
//!
//! f32 must give transformers' spans exactly and its top label on at least 99.9 % of
//! tokens; int8 (where the CPU runs it) at least 97 % of both, as int8 arithmetic moves
//! near ties.

use std::path::PathBuf;

use phiguard::inference::{device_from_env, ClassifierOptions, Precision, TokenClassifier};
use phiguard_kernels::Int8Weights;
use serde::Deserialize;
use sha2::{Digest, Sha256};

type TestResult = Result<(), Box<dyn std::error::Error>>;

#[derive(Deserialize)]
struct Expected {
    model_sha256: String,
    texts: Vec<ExpectedText>,
}

#[derive(Deserialize)]
struct ExpectedText {
    text: String,
    /// `(start, end, raw label)` per token, specials excluded.
    tokens: Vec<(usize, usize, String)>,
    /// `(start, end, canonical label)`.
    spans: Vec<(usize, usize, String)>,
}

fn model_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models/phiguard-deid")
}

fn expected() -> Result<Expected, Box<dyn std::error::Error>> {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bundled/transformers.json");
    Ok(serde_json::from_str(&std::fs::read_to_string(path)?)?)
}

fn load(precision: Precision) -> Result<TokenClassifier, Box<dyn std::error::Error>> {
    let options = ClassifierOptions {
        precision,
        ..ClassifierOptions::default()
    };
    Ok(TokenClassifier::load_with(
        &model_dir(),
        &device_from_env()?,
        options,
    )?)
}

/// Shares of tokens and spans that agree with transformers.
struct Agreement {
    tokens: (usize, usize),
    spans: (usize, usize),
}

fn agreement(
    model: &TokenClassifier,
    want: &Expected,
) -> Result<Agreement, Box<dyn std::error::Error>> {
    let texts: Vec<&str> = want.texts.iter().map(|t| t.text.as_str()).collect();
    let logits = model.token_logits(&texts)?;
    let spans = model.spans(&texts)?;
    let raw = model.raw_labels();
    let mut out = Agreement {
        tokens: (0, 0),
        spans: (0, 0),
    };
    for (n, ((w, got), got_spans)) in want.texts.iter().zip(&logits).zip(&spans).enumerate() {
        let offsets: Vec<(usize, usize)> = w.tokens.iter().map(|t| (t.0, t.1)).collect();
        assert_eq!(offsets, got.offsets, "text {n}: the tokenization differs");
        for ((s, e, label), row) in w.tokens.iter().zip(&got.logits) {
            let top = row
                .iter()
                .enumerate()
                .fold(
                    (0, f32::NEG_INFINITY),
                    |a, (i, &v)| if v > a.1 { (i, v) } else { a },
                )
                .0;
            out.tokens.1 += 1;
            if raw[top] == *label {
                out.tokens.0 += 1;
            } else {
                eprintln!(
                    "text {n} token {s}:{e}: transformers {label}, phiguard {}",
                    raw[top]
                );
            }
        }
        let got: Vec<(usize, usize, &str)> = got_spans
            .iter()
            .map(|s| (s.start, s.end, s.label.canonical()))
            .collect();
        for (s, e, label) in &w.spans {
            out.spans.1 += 1;
            if got.contains(&(*s, *e, label.as_str())) {
                out.spans.0 += 1;
            } else {
                eprintln!("text {n} span {s}:{e} {label}: transformers only");
            }
        }
        for (s, e, label) in &got {
            if !w
                .spans
                .iter()
                .any(|x| (x.0, x.1, x.2.as_str()) == (*s, *e, *label))
            {
                eprintln!("text {n} span {s}:{e} {label}: phiguard only");
                out.spans.1 += 1;
            }
        }
    }
    Ok(out)
}

fn share((same, total): (usize, usize)) -> f64 {
    same as f64 / total.max(1) as f64
}

#[test]
fn the_fixture_belongs_to_the_bundled_weights() -> TestResult {
    let bytes = std::fs::read(model_dir().join("model.safetensors"))?;
    let digest = hex::encode(Sha256::digest(&bytes));
    assert_eq!(
        expected()?.model_sha256,
        digest,
        "new weights: regenerate the fixture with tools/check_trained.py --write-expected"
    );
    Ok(())
}

#[test]
fn f32_gives_transformers_spans_and_token_labels() -> TestResult {
    let want = expected()?;
    let a = agreement(&load(Precision::F32)?, &want)?;
    assert!(a.tokens.1 > 4000, "{} tokens compared", a.tokens.1);
    assert!(a.spans.1 > 300, "{} spans compared", a.spans.1);
    assert_eq!(a.spans.0, a.spans.1, "f32 spans identical to transformers'");
    assert!(
        share(a.tokens) >= 0.999,
        "f32 top labels agree on {:.4} of {} tokens",
        share(a.tokens),
        a.tokens.1
    );
    Ok(())
}

#[test]
fn int8_stays_within_a_few_near_ties_of_transformers() -> TestResult {
    if !Int8Weights::supported() {
        // Without VNNI or AVX2 int8 falls back to f32, which the test above covers.
        return Ok(());
    }
    let want = expected()?;
    let a = agreement(&load(Precision::Int8)?, &want)?;
    assert!(
        share(a.spans) >= 0.97 && share(a.tokens) >= 0.97,
        "int8: spans {:.4} of {}, tokens {:.4} of {}",
        share(a.spans),
        a.spans.1,
        share(a.tokens),
        a.tokens.1
    );
    Ok(())
}
