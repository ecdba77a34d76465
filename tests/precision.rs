//! int8 against f32 on the real bundled model (`models/phiguard-deid`) and the corpus sample notes.
//!
//! On a CPU with AVX-512 VNNI or AVX2, `Precision::Int8` really runs the int8 kernels (the
//! logits differ from f32) and stays close: the top label of nearly every token is the same,
//! and the characters f32 marks as an entity are marked by int8 too. Elsewhere
//! `Precision::Int8` falls back to f32 and the logits are identical: on a CPU with neither,
//! and on the GPU that `PHIGUARD_DEVICE` names (`cuda` or `metal`, in a build with that
//! feature; docs/architecture.md, "Devices", runs the model tests that way).

use std::path::{Path, PathBuf};

use candle_core::Device;
use phiguard::inference::{device_from_env, ClassifierOptions, Precision, TokenClassifier};
use phiguard_kernels::Int8Weights;

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn load(
    precision: Precision,
    device: &Device,
) -> Result<TokenClassifier, Box<dyn std::error::Error>> {
    let options = ClassifierOptions {
        precision,
        ..ClassifierOptions::default()
    };
    Ok(TokenClassifier::load_with(
        &root().join("models/phiguard-deid"),
        device,
        options,
    )?)
}

fn sample_texts(path: &Path) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let mut texts = Vec::new();
    for line in std::fs::read_to_string(path)?.lines() {
        let v: serde_json::Value = serde_json::from_str(line)?;
        texts.push(v["text"].as_str().ok_or("note without text")?.to_string());
    }
    Ok(texts)
}

fn argmax(row: &[f32]) -> usize {
    row.iter()
        .enumerate()
        .fold(
            (0, f32::NEG_INFINITY),
            |a, (i, &v)| if v > a.1 { (i, v) } else { a },
        )
        .0
}

#[test]
fn int8_tracks_f32_on_the_bundled_model() -> TestResult {
    let texts = sample_texts(&root().join("tests/fixtures/corpus/sample.jsonl"))?;
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let device = device_from_env()?;
    let (f32_model, int8_model) = (
        load(Precision::F32, &device)?,
        load(Precision::Int8, &device)?,
    );
    let (want, got) = (
        f32_model.token_logits(&refs)?,
        int8_model.token_logits(&refs)?,
    );

    let (mut tokens, mut agree, mut max_delta) = (0usize, 0usize, 0f32);
    for (w, g) in want.iter().zip(&got) {
        assert_eq!(w.offsets, g.offsets, "same tokenization");
        for (wr, gr) in w.logits.iter().zip(&g.logits) {
            tokens += 1;
            agree += usize::from(argmax(wr) == argmax(gr));
            for (a, b) in wr.iter().zip(gr) {
                max_delta = max_delta.max((a - b).abs());
            }
        }
    }
    assert!(tokens > 1000, "the sample notes have {tokens} tokens");

    if !Int8Weights::supported() || !device.is_cpu() {
        assert_eq!(
            max_delta, 0.0,
            "where int8 does not run (neither VNNI nor AVX2, or a GPU), it must fall back to f32 exactly"
        );
        return Ok(());
    }
    assert!(max_delta > 0.0, "the int8 kernels did not run");
    let share = agree as f64 / tokens as f64;
    assert!(
        share >= 0.99,
        "top labels agree on {share:.4} of {tokens} tokens"
    );

    // Entity characters: what f32 marks, int8 marks too (any label).
    let (want_spans, got_spans) = (f32_model.spans(&refs)?, int8_model.spans(&refs)?);
    let (mut marked, mut kept) = (0usize, 0usize);
    for (ws, gs) in want_spans.iter().zip(&got_spans) {
        for w in ws {
            for c in w.start..w.end {
                marked += 1;
                kept += usize::from(gs.iter().any(|g| g.start <= c && c < g.end));
            }
        }
    }
    assert!(marked > 100, "f32 marked {marked} characters");
    let recall = kept as f64 / marked as f64;
    assert!(
        recall >= 0.97,
        "int8 keeps {recall:.4} of f32's entity characters"
    );
    eprintln!(
        "int8 vs f32: {share:.4} of {tokens} token labels, {recall:.4} of {marked} entity characters, max |Δlogit| {max_delta:.3}"
    );
    Ok(())
}
