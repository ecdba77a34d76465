//! Parity of every model family with transformers, the reference implementation.
//!
//! `tools/make_parity_fixtures.py` wrote, per family, a tiny randomly initialised
//! checkpoint and transformers' logits for a fixed set of texts (run as one padded
//! batch). Each test loads the checkpoint as the service would and requires
//! max |Δ| ≤ 1e-4: once from the recorded input ids (the forward pass, padding
//! included), once from phiguard's own tokenization and windowing of the texts.

use std::path::PathBuf;

use phiguard::inference::{device_from_env, ClassifierOptions, Family, TokenClassifier};
use serde::Deserialize;

const TOLERANCE: f32 = 1e-4;

#[derive(Deserialize)]
struct Expected {
    texts: Vec<String>,
    input_ids: Vec<Vec<u32>>,
    logits: Vec<Vec<Vec<f32>>>,
}

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn max_delta(got: &[Vec<f32>], want: &[Vec<f32>]) -> Result<f32, String> {
    if got.len() != want.len() {
        return Err(format!("{} token rows, want {}", got.len(), want.len()));
    }
    let mut worst = 0f32;
    for (g, w) in got.iter().zip(want) {
        if g.len() != w.len() {
            return Err(format!("{} classes, want {}", g.len(), w.len()));
        }
        for (a, b) in g.iter().zip(w) {
            worst = worst.max((a - b).abs());
        }
    }
    Ok(worst)
}

fn check(family_dir: &str, family: Family) -> TestResult {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/parity")
        .join(family_dir);
    let expected: Expected = serde_json::from_slice(&std::fs::read(dir.join("expected.json"))?)?;
    let model = TokenClassifier::load_with(
        &dir,
        &device_from_env()?,
        ClassifierOptions {
            batch_size: 8,
            ..ClassifierOptions::default()
        },
    )?;
    assert_eq!(model.family(), family);

    // 1. The recorded ids, padded into one batch.
    let got = model.logits_for_ids(&expected.input_ids)?;
    for (i, (g, w)) in got.iter().zip(&expected.logits).enumerate() {
        let d = max_delta(g, w)?;
        assert!(
            d <= TOLERANCE,
            "{family_dir}: text {i}: max |Δ| {d} from ids"
        );
    }

    // 2. phiguard's own tokenization: the content tokens (specials dropped) must be
    //    the same tokens with the same logits.
    let texts: Vec<&str> = expected.texts.iter().map(String::as_str).collect();
    let ours = model.token_logits(&texts)?;
    for (i, (tl, w)) in ours.iter().zip(&expected.logits).enumerate() {
        let content = &w[1..w.len() - 1];
        let d = max_delta(&tl.logits, content)?;
        assert!(
            d <= TOLERANCE,
            "{family_dir}: text {i}: max |Δ| {d} from text"
        );
    }
    Ok(())
}

#[test]
fn bert_matches_transformers() -> TestResult {
    check("bert", Family::Bert)
}

#[test]
fn distilbert_matches_transformers() -> TestResult {
    check("distilbert", Family::DistilBert)
}

#[test]
fn deberta_v2_matches_transformers() -> TestResult {
    check("deberta-v2", Family::DebertaV2)
}

#[test]
fn modernbert_matches_transformers() -> TestResult {
    check("modernbert", Family::ModernBert)
}

#[test]
fn xlm_roberta_matches_transformers() -> TestResult {
    check("xlm-roberta", Family::XlmRoberta)
}
