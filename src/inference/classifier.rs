//! [`TokenClassifier`]: one loaded token-classification model behind the
//! [`Recognizer`] trait.
//!
//! The call path of [`Recognizer::detect_batch`]: tokenize every text once (code-point
//! offsets) → cut long texts into overlapping windows → sort all windows of the call by
//! length and run them in sub-batches of [`ClassifierOptions::batch_size`] (short
//! windows are not padded to long ones) → softmax, and stitch each token's prediction
//! from the window that owns it → decode entities per text → map raw labels to
//! canonical ones and join the parts of one address → [`Span`]s sorted by start.

use std::path::Path;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;

use super::aggregate::{decode, Entity, LabelTable, Strategy, TokenView};
use super::config::{Family, LoadedConfig};
use super::labels::canonical_label;
use super::tokenize::{Encoded, TextTokenizer};
use super::window::{plan, Window};
use super::{bert, deberta_v2, distilbert, modernbert, xlm_roberta};
use super::{InferenceError, Result};
use crate::detect::{BackendError, CharIndex, Label, Recognizer, RecognizerError, Source, Span};

/// How a loaded model turns texts into spans.
#[derive(Clone, Debug, PartialEq)]
pub struct ClassifierOptions {
    /// Sub-word aggregation (default [`Strategy::First`]).
    pub strategy: Strategy,
    /// Windows per forward pass (default 1); where the model runs packed sequences (BERT
    /// on the CPU), each pass takes as many windows as fit the tokens of this many full
    /// windows (512 tokens by default), with no padding. Since one long note's passes run
    /// on every idle core ([`crate::detect::lend`]), 2 held two passes' activations at once
    /// in one call as in a folder run: on an AVX2 EPYC, 2 → 1 took `deid` of one 100 KB note
    /// from 197–200 MB peak RSS to 169–173, of 62 files of ten notes from 195–198 to
    /// 171–174 and of 20 files from 202–205 to 183–184, at the same speed (6.1–6.5 s, 4.1–5.0
    /// s and 5.7–6.8 s either way) and with identical output. Earlier, with `phiguard deid`
    /// over 62 outside notes of ~350 tokens on two workers: 4 → 3.25 s and 197 MB peak RSS,
    /// 2 → 2.95 s and 162 MB (larger passes fall out of cache and hold more activations);
    /// 615 short notes: no difference. Padded, before packing (`tools/bench_peers.py`, 300
    /// notes): 2 → 46.3 docs/s and 133 MB, 4 → 47.8 docs/s and 168 MB, 8 → 44.5 and 212 MB.
    pub batch_size: usize,
    /// Tokens per window, specials included (default and maximum: the model's positions,
    /// capped at 512 so that attention stays cheap for long-context families).
    pub window_tokens: Option<usize>,
    /// Tokens shared by neighbouring windows (default 64).
    pub window_overlap: usize,
    /// Entities scoring below this are dropped (default 0: keep all).
    pub min_score: f32,
    /// Arithmetic of the dense layers (default [`Precision::F32`]).
    pub precision: Precision,
}

/// Arithmetic of a model's dense layers on the CPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Precision {
    /// f32 throughout: the reference numerics (parity with transformers within 1e-4).
    #[default]
    F32,
    /// int8 dense layers (weights per column, activations per row) and attention products
    /// (K per key, V per column, the softmax's weights in u8) on CPUs with AVX-512 VNNI or
    /// AVX2 (there the weights, K and V in 7 bits), BERT family only; f32 wherever that is
    /// not available ([`phiguard_kernels::int8`],
    /// [`phiguard_kernels::attention`]).
    Int8,
}

impl Default for ClassifierOptions {
    fn default() -> Self {
        ClassifierOptions {
            strategy: Strategy::First,
            batch_size: 1,
            window_tokens: None,
            window_overlap: 64,
            min_score: 0.0,
            precision: Precision::F32,
        }
    }
}

enum Backbone {
    Bert(bert::BertForTokenClassification),
    DistilBert(distilbert::DistilBertForTokenClassification),
    DebertaV2(Box<deberta_v2::DebertaV2ForTokenClassification>),
    ModernBert(modernbert::ModernBertForTokenClassification),
    XlmRoberta(xlm_roberta::XlmRobertaForTokenClassification),
}

impl Backbone {
    fn load(cfg: &LoadedConfig, vb: VarBuilder, precision: Precision) -> Result<Backbone> {
        let n = cfg.labels.len();
        Ok(match cfg.family {
            Family::Bert => Backbone::Bert(bert::BertForTokenClassification::load(
                vb,
                &bert::Config::from_model_config(&cfg.config, n)?,
                precision,
            )?),
            Family::DistilBert => {
                Backbone::DistilBert(distilbert::DistilBertForTokenClassification::load(
                    vb,
                    &distilbert::Config::from_model_config(&cfg.config, n)?,
                    precision,
                )?)
            }
            Family::DebertaV2 => {
                Backbone::DebertaV2(Box::new(deberta_v2::DebertaV2ForTokenClassification::load(
                    vb,
                    &deberta_v2::Config::from_raw(&cfg.raw, n)?,
                )?))
            }
            Family::ModernBert => {
                Backbone::ModernBert(modernbert::ModernBertForTokenClassification::load(
                    vb,
                    &modernbert::Config::from_model_config(&cfg.config, n)?,
                )?)
            }
            Family::XlmRoberta => {
                Backbone::XlmRoberta(xlm_roberta::XlmRobertaForTokenClassification::load(
                    vb,
                    &xlm_roberta::Config::from_raw(&cfg.raw, n)?,
                )?)
            }
        })
    }

    /// Whether this backbone runs packed sequences (no padding): BERT on the CPU.
    fn packs(&self) -> bool {
        matches!(self, Backbone::Bert(m) if m.packs())
    }

    /// Packed `ids: [t]` of sequences `lens` → `[t, labels]` (only when [`Self::packs`]).
    fn forward_packed(&self, ids: &Tensor, lens: &[usize]) -> Result<Tensor> {
        match self {
            Backbone::Bert(m) => m.forward_packed(ids, lens),
            _ => Err(InferenceError::Candle(candle_core::Error::Msg(
                "this model family does not run packed sequences".into(),
            ))),
        }
    }

    fn forward(&self, ids: &Tensor, mask: &Tensor) -> Result<Tensor> {
        match self {
            Backbone::Bert(m) => m.forward(ids, mask),
            Backbone::DistilBert(m) => m.forward(ids, mask),
            Backbone::DebertaV2(m) => m.forward(ids, mask),
            Backbone::ModernBert(m) => m.forward(ids, mask),
            Backbone::XlmRoberta(m) => m.forward(ids, mask),
        }
    }
}

/// A text's tokens with the model's stitched logits, one row per token.
#[derive(Clone, Debug, PartialEq)]
pub struct TokenLogits {
    /// Code-point offsets of each token (specials excluded).
    pub offsets: Vec<(usize, usize)>,
    /// The pre-tokenizer's word of each token.
    pub word_ids: Vec<Option<u32>>,
    /// `logits[t]` has one value per class.
    pub logits: Vec<Vec<f32>>,
}

/// One loaded token-classification model; `Send + Sync`, shared by worker threads.
pub struct TokenClassifier {
    model: Backbone,
    tokenizer: TextTokenizer,
    table: LabelTable,
    type_labels: Vec<Label>,
    raw_labels: Vec<String>,
    family: Family,
    max_positions: usize,
    device: Device,
    options: ClassifierOptions,
}

impl TokenClassifier {
    /// Loads `config.json`, `tokenizer.json` and every `*.safetensors` file of `dir`,
    /// with default options. Weights stored as f16/bf16 are upcast to f32.
    ///
    /// # Errors
    /// [`InferenceError`] when a file is missing or malformed, the family is unknown or
    /// a tensor is missing.
    pub fn load(dir: &Path, device: &Device) -> Result<Self> {
        Self::load_with(dir, device, ClassifierOptions::default())
    }

    /// As [`TokenClassifier::load`], with options.
    ///
    /// # Errors
    /// As [`TokenClassifier::load`].
    pub fn load_with(dir: &Path, device: &Device, options: ClassifierOptions) -> Result<Self> {
        let (cfg, tokenizer) = Self::read_config(dir)?;
        let entries = std::fs::read_dir(dir).map_err(|source| InferenceError::Io {
            file: "model directory",
            source,
        })?;
        let mut weight_files: Vec<_> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "safetensors"))
            .collect();
        weight_files.sort();
        if weight_files.is_empty() {
            return Err(InferenceError::NoWeights);
        }
        let read = |file: &Path| {
            std::fs::read(file).map_err(|source| InferenceError::Io {
                file: "model.safetensors",
                source,
            })
        };
        // One file (the usual case): tensors are converted to f32 one by one as the
        // model asks for them, so the f16 copy never exists in full next to the f32 one.
        let vb = if let [only] = weight_files.as_slice() {
            super::weights::var_builder(read(only)?, device)?
        } else {
            let mut tensors = std::collections::HashMap::new();
            for file in &weight_files {
                tensors.extend(candle_core::safetensors::load_buffer(&read(file)?, device)?);
            }
            VarBuilder::from_tensors(tensors, DType::F32, device)
        };
        Self::from_parts(cfg, tokenizer, vb, device, options)
    }

    /// Loads from `dir`'s `config.json` and `tokenizer.json` and the given bytes of its one
    /// weights file: the bytes [`verify_before_load`](crate::models::verify_before_load)
    /// hashed, so that what was checked is what runs (the service's loader).
    ///
    /// # Errors
    /// As [`load_with`](Self::load_with).
    pub fn load_verified(
        dir: &Path,
        device: &Device,
        options: ClassifierOptions,
        weights: crate::models::VerifiedWeights,
    ) -> Result<Self> {
        let (cfg, tokenizer) = Self::read_config(dir)?;
        // Tensors are converted to f32 one by one as the model asks for them, so the f16
        // copy never exists in full next to the f32 one.
        let vb = super::weights::var_builder(weights.into_bytes(), device)?;
        Self::from_parts(cfg, tokenizer, vb, device, options)
    }

    /// The model's `config.json` and tokenizer.
    fn read_config(dir: &Path) -> Result<(LoadedConfig, TextTokenizer)> {
        let config_text = std::fs::read_to_string(dir.join("config.json")).map_err(|source| {
            InferenceError::Io {
                file: "config.json",
                source,
            }
        })?;
        let cfg = LoadedConfig::parse(&config_text)?;
        let tokenizer = TextTokenizer::from_file(&dir.join("tokenizer.json"))?;
        Ok((cfg, tokenizer))
    }

    pub(crate) fn from_parts(
        cfg: LoadedConfig,
        tokenizer: TextTokenizer,
        vb: VarBuilder,
        device: &Device,
        options: ClassifierOptions,
    ) -> Result<Self> {
        let model = Backbone::load(&cfg, vb, options.precision)?;
        let table = LabelTable::new(&cfg.labels);
        let type_labels = table.types().iter().map(|t| canonical_label(t)).collect();
        Ok(TokenClassifier {
            model,
            tokenizer,
            table,
            type_labels,
            raw_labels: cfg.labels.clone(),
            family: cfg.family,
            max_positions: cfg.max_positions(),
            device: device.clone(),
            options,
        })
    }

    /// The canonical labels this model can emit, sorted, without duplicates.
    pub fn labels(&self) -> Vec<Label> {
        let mut out: Vec<Label> = self
            .table
            .types()
            .iter()
            .zip(&self.type_labels)
            .filter(|(t, _)| !t.is_empty())
            .map(|(_, l)| *l)
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// The raw labels of the checkpoint, in class order.
    pub fn raw_labels(&self) -> &[String] {
        &self.raw_labels
    }

    /// The model family.
    pub fn family(&self) -> Family {
        self.family
    }

    /// Tokens one forward pass may take, specials included.
    pub fn max_positions(&self) -> usize {
        self.max_positions
    }

    /// The options in force.
    pub fn options(&self) -> &ClassifierOptions {
        &self.options
    }

    fn window_budget(&self) -> usize {
        let total = self
            .options
            .window_tokens
            .unwrap_or(512)
            .min(self.max_positions)
            .min(512);
        total.saturating_sub(self.tokenizer.num_special()).max(1)
    }

    /// Runs the model over explicit id sequences (specials included, unpadded); returns
    /// each sequence's logits as `[len][classes]`. Sequences are padded per sub-batch.
    ///
    /// # Errors
    /// [`InferenceError::Candle`] when the forward pass fails.
    pub fn logits_for_ids(&self, sequences: &[Vec<u32>]) -> Result<Vec<Vec<Vec<f32>>>> {
        let mut order: Vec<usize> = (0..sequences.len()).collect();
        order.sort_by_key(|&i| sequences[i].len());
        let packs = self.model.packs();
        let passes: Vec<Vec<usize>> = if packs {
            // Packed: as many windows per pass as fit `batch_size` full windows' tokens, so
            // activation memory stays what `batch_size` padded windows would take while
            // short windows share a pass instead of each paying for one.
            let window = self.window_budget() + self.tokenizer.num_special();
            let budget = self.options.batch_size.max(1) * window;
            let mut passes = Vec::new();
            let mut pass: Vec<usize> = Vec::new();
            let mut tokens = 0;
            for &i in &order {
                let n = sequences[i].len();
                if !pass.is_empty() && tokens + n > budget {
                    passes.push(std::mem::take(&mut pass));
                    tokens = 0;
                }
                pass.push(i);
                tokens += n;
            }
            passes.push(pass);
            passes
        } else {
            order
                .chunks(self.options.batch_size.max(1))
                .map(<[usize]>::to_vec)
                .collect()
        };
        let run = |pass: &[usize]| {
            if packs {
                self.run_packed(sequences, pass)
            } else {
                let batch: Vec<&[u32]> = pass.iter().map(|&i| sequences[i].as_slice()).collect();
                self.forward_padded(&batch)
            }
        };
        let mut out = vec![Vec::new(); sequences.len()];
        for (pass, logits) in passes.iter().zip(run_passes(&passes, run)?) {
            for (&i, rows) in pass.iter().zip(logits) {
                out[i] = rows;
            }
        }
        Ok(out)
    }

    /// One packed pass over `sequences[pass]`: each one's logits, in `pass` order.
    fn run_packed(&self, sequences: &[Vec<u32>], pass: &[usize]) -> Result<Vec<Vec<Vec<f32>>>> {
        let lens: Vec<usize> = pass.iter().map(|&i| sequences[i].len()).collect();
        let tokens: usize = lens.iter().sum();
        // Shapes only, never token ids or text: trace lines are PHI-free like every other.
        let _span = tracing::trace_span!("encoder", windows = pass.len(), tokens).entered();
        if tokens == 0 {
            return Ok(vec![Vec::new(); pass.len()]);
        }
        let ids: Vec<u32> = pass
            .iter()
            .flat_map(|&i| sequences[i].iter().copied())
            .collect();
        let ids = Tensor::from_vec(ids, tokens, &self.device)?;
        let logits = self.model.forward_packed(&ids, &lens)?;
        let classes = logits.dim(1)?;
        let flat = logits
            .to_dtype(DType::F32)?
            .flatten_all()?
            .to_vec1::<f32>()?;
        let mut rows = flat.chunks_exact(classes.max(1));
        Ok(lens
            .iter()
            .map(|&n| rows.by_ref().take(n).map(<[f32]>::to_vec).collect())
            .collect())
    }

    fn forward_padded(&self, batch: &[&[u32]]) -> Result<Vec<Vec<Vec<f32>>>> {
        let width = batch.iter().map(|s| s.len()).max().unwrap_or(0);
        // Shapes only, never token ids or text: trace lines are PHI-free like every other.
        let _span = tracing::trace_span!("encoder", windows = batch.len(), width).entered();
        if width == 0 {
            return Ok(vec![Vec::new(); batch.len()]);
        }
        let pad = self.tokenizer.pad_id();
        let mut ids = Vec::with_capacity(batch.len() * width);
        let mut mask = Vec::with_capacity(batch.len() * width);
        for seq in batch {
            ids.extend_from_slice(seq);
            ids.extend(std::iter::repeat_n(pad, width - seq.len()));
            mask.extend(std::iter::repeat_n(1u32, seq.len()));
            mask.extend(std::iter::repeat_n(0u32, width - seq.len()));
        }
        let ids = Tensor::from_vec(ids, (batch.len(), width), &self.device)?;
        let mask = Tensor::from_vec(mask, (batch.len(), width), &self.device)?;
        let logits = self
            .model
            .forward(&ids, &mask)?
            .to_dtype(DType::F32)?
            .to_vec3::<f32>()?;
        Ok(logits
            .into_iter()
            .zip(batch)
            .map(|(mut rows, seq)| {
                rows.truncate(seq.len());
                rows
            })
            .collect())
    }

    /// Tokenizes, windows and runs every text; returns each text's stitched logits.
    ///
    /// # Errors
    /// [`InferenceError`] when tokenization or the forward pass fails.
    pub fn token_logits(&self, texts: &[&str]) -> Result<Vec<TokenLogits>> {
        let encoded = {
            let _span = tracing::trace_span!("tokenize", texts = texts.len()).entered();
            texts
                .iter()
                .map(|t| self.tokenizer.encode(t))
                .collect::<Result<Vec<Encoded>>>()?
        };
        let budget = self.window_budget();
        let mut jobs: Vec<(usize, Window)> = Vec::new();
        for (i, enc) in encoded.iter().enumerate() {
            for w in plan(&enc.word_ids, budget, self.options.window_overlap) {
                jobs.push((i, w));
            }
        }
        let (prefix, suffix) = (self.tokenizer.prefix(), self.tokenizer.suffix());
        let sequences: Vec<Vec<u32>> = jobs
            .iter()
            .map(|(i, w)| {
                let mut seq = Vec::with_capacity(w.len() + prefix.len() + suffix.len());
                seq.extend_from_slice(prefix);
                seq.extend_from_slice(&encoded[*i].ids[w.start..w.end]);
                seq.extend_from_slice(suffix);
                seq
            })
            .collect();
        let window_logits = self.logits_for_ids(&sequences)?;
        let mut out: Vec<TokenLogits> = encoded
            .iter()
            .map(|e| TokenLogits {
                offsets: Vec::new(),
                word_ids: Vec::new(),
                logits: vec![Vec::new(); e.len()],
            })
            .collect();
        for ((i, w), rows) in jobs.iter().zip(window_logits) {
            let owned = &mut out[*i].logits[w.own_start..w.own_end];
            let rows = rows.iter().skip(prefix.len() + w.own_start - w.start);
            for (dst, row) in owned.iter_mut().zip(rows) {
                dst.clone_from(row);
            }
        }
        for (text_logits, enc) in out.iter_mut().zip(encoded) {
            text_logits.offsets = enc.offsets;
            text_logits.word_ids = enc.word_ids;
        }
        Ok(out)
    }

    /// Finds the spans of every text (see the module docs for the steps).
    ///
    /// # Errors
    /// [`InferenceError`] when tokenization or the forward pass fails.
    pub fn spans(&self, texts: &[&str]) -> Result<Vec<Vec<Span>>> {
        let logits = self.token_logits(texts)?;
        let _span = tracing::trace_span!("decode", texts = texts.len()).entered();
        let n = self.table.num_classes();
        let mut out = Vec::with_capacity(texts.len());
        for (text, tl) in texts.iter().zip(&logits) {
            let mut probs = Vec::with_capacity(tl.logits.len() * n);
            for row in &tl.logits {
                probs.extend(softmax_row(row, n));
            }
            let view = TokenView {
                probs: &probs,
                offsets: &tl.offsets,
                word_ids: &tl.word_ids,
            };
            let entities = decode(&view, &self.table, self.options.strategy);
            out.push(self.to_spans(text, entities));
        }
        Ok(out)
    }

    /// Maps entities to canonical spans, joining neighbours that are parts of one thing.
    ///
    /// Two consecutive entities with the same canonical label are joined when nothing
    /// separates them (sub-words a model tagged `B-` each), or only whitespace does and
    /// their raw types differ (`BUILDING_NUMBER` + `STREET_NAME` → one street address).
    fn to_spans(&self, text: &str, entities: Vec<Entity>) -> Vec<Span> {
        let index = CharIndex::new(text);
        let mut spans: Vec<(Span, usize, usize)> = Vec::new(); // span, raw type, parts
        for e in entities {
            if e.start >= e.end || e.end > index.char_len() {
                continue;
            }
            let label = self.type_labels[e.ty];
            if let Some((last, last_ty, parts)) = spans.last_mut() {
                if last.label == label && last.end <= e.start {
                    let gap = index.slice(text, last.end, e.start);
                    let join = gap.is_empty()
                        || (*last_ty != e.ty && gap.chars().all(char::is_whitespace));
                    if join {
                        last.score = (last.score * *parts as f32 + e.score) / (*parts + 1) as f32;
                        last.end = e.end;
                        *parts += 1;
                        *last_ty = e.ty;
                        continue;
                    }
                }
            }
            spans.push((
                Span::new(e.start, e.end, label, e.score, Source::Model),
                e.ty,
                1,
            ));
        }
        spans
            .into_iter()
            .map(|(mut s, _, _)| {
                whole_numbers(text, &index, &mut s);
                s
            })
            .filter(|s| s.score >= self.options.min_score)
            .collect()
    }
}

/// Widens a model span whose edge falls inside a number written with separators (`12/25`,
/// `617-555-0142`, `2021.03.04`) to the whole number.
///
/// The pre-tokenizer splits such a number at every separator and the model labels the
/// pieces one by one, so it can leave a piece out: `Seen 3/4 and 12/25` gave `/25` and wrote
/// `12[date]`. A piece of a number is never a whole identifier, so the span takes the rest.
/// `index` is `text`'s [`CharIndex`] (spans count characters).
fn whole_numbers(text: &str, index: &CharIndex, span: &mut Span) {
    let len = index.char_len();
    // The first byte of character `i`: ASCII exactly when the character is (a lead byte of
    // a longer character is 0x80 or more), and digits and separators are ASCII.
    let byte = |i: usize| (i < len).then(|| text.as_bytes()[index.byte(i)]);
    let digit = |i: usize| byte(i).is_some_and(|b| b.is_ascii_digit());
    let sep = |i: usize| byte(i).is_some_and(|b| matches!(b, b'/' | b'-' | b'.'));
    // Whether the boundary before character `i` cuts a number: between two digits, before a
    // separator between digits, or after one.
    let cuts = |i: usize| {
        i > 0
            && i < len
            && ((digit(i - 1) && digit(i))
                || (digit(i - 1) && sep(i) && digit(i + 1))
                || (i >= 2 && digit(i - 2) && sep(i - 1) && digit(i)))
    };
    while cuts(span.start) {
        span.start -= 1;
    }
    while cuts(span.end) {
        span.end += 1;
    }
}

/// Runs every pass of one call and returns their results in order. The passes are
/// independent: with more than one, idle cores of the worker pool are borrowed
/// ([`crate::detect::lend`]) and each extra thread takes passes until none is left, giving
/// its core back between passes so that a worker needing it waits for one pass at most.
/// Cancellation is asked between passes on the calling thread, which tells the others.
fn run_passes<T, F>(passes: &[Vec<usize>], run: F) -> Result<Vec<T>>
where
    T: Send,
    F: Fn(&[usize]) -> Result<T> + Sync,
{
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let cores = crate::detect::lend::current().filter(|_| passes.len() > 1);
    let Some(cores) = cores else {
        return passes
            .iter()
            .map(|p| {
                cancelled()?;
                run(p)
            })
            .collect();
    };
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let done: parking_lot::Mutex<Vec<Option<Result<T>>>> =
        parking_lot::Mutex::new((0..passes.len()).map(|_| None).collect());
    // A lent thread: takes passes until none is left, the call stops or its core is
    // wanted back; an `Err` stops the others.
    let take = || loop {
        let Some(core) = cores.try_borrow() else {
            return;
        };
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(pass) = passes.get(i) else { return };
        let result = run(pass);
        drop(core);
        if result.is_err() {
            stop.store(true, Ordering::Relaxed);
        }
        done.lock()[i] = Some(result);
    };
    let span = tracing::Span::current();
    std::thread::scope(|s| {
        for _ in 1..passes.len() {
            // A thread only where a core is idle now; it asks again before each pass.
            if cores.free() == 0 {
                break;
            }
            let (take, span) = (&take, span.clone());
            let started = std::thread::Builder::new()
                .name("phiguard-infer-lent".into())
                .spawn_scoped(s, move || span.in_scope(take));
            if started.is_err() {
                break;
            }
        }
        loop {
            if cancelled().is_err() {
                stop.store(true, Ordering::Relaxed);
                break;
            }
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(pass) = passes.get(i) else { break };
            let result = run(pass);
            if result.is_err() {
                stop.store(true, Ordering::Relaxed);
            }
            done.lock()[i] = Some(result);
            if stop.load(Ordering::Relaxed) {
                break;
            }
        }
    });
    // A failed pass's error first; then a pass not run means the call stopped.
    let mut done = done.into_inner();
    if let Some(failed) = done.iter().position(|r| matches!(r, Some(Err(_)))) {
        if let Some(Err(e)) = done.swap_remove(failed) {
            return Err(e);
        }
    }
    done.into_iter()
        .map(|r| r.unwrap_or(Err(InferenceError::Cancelled)))
        .collect()
}

/// Stops a call between passes when every caller of it has gone
/// ([`crate::detect::cancel`]).
fn cancelled() -> Result<()> {
    if crate::detect::cancel::requested() {
        return Err(InferenceError::Cancelled);
    }
    Ok(())
}

fn softmax_row(row: &[f32], n: usize) -> Vec<f32> {
    if row.len() != n {
        // A token no window owned (cannot happen with a valid plan): predict nothing.
        let mut p = vec![0f32; n];
        if let Some(first) = p.first_mut() {
            *first = 1.0;
        }
        return p;
    }
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let exps: Vec<f32> = row.iter().map(|v| (v - max).exp()).collect();
    let sum: f32 = exps.iter().sum();
    exps.into_iter().map(|e| e / sum).collect()
}

impl Recognizer for TokenClassifier {
    fn detect_batch(&self, texts: &[&str]) -> std::result::Result<Vec<Vec<Span>>, RecognizerError> {
        self.spans(texts).map_err(|e| match e {
            InferenceError::Tokenizer(_) => RecognizerError::Input(Box::new(e)),
            other => RecognizerError::Backend(BackendError::Model(Box::new(other))),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inference::tokenize::tiny_bert_tokenizer;
    use proptest::prelude::{
        prop_assert, prop_assert_eq, prop_oneof, proptest, Just, ProptestConfig, TestCaseError,
    };
    use proptest::strategy::Strategy as _;
    use std::sync::Arc;

    const LABELS: &str =
        r#"{"0":"O","1":"B-GIVEN_NAME","2":"I-GIVEN_NAME","3":"B-CITY","4":"I-CITY"}"#;

    fn tiny_classifier(options: ClassifierOptions) -> Result<TokenClassifier> {
        let dev = Device::Cpu;
        let cfg = LoadedConfig::parse(&format!(
            r#"{{"model_type":"bert","vocab_size":22,"hidden_size":16,"num_hidden_layers":2,
               "num_attention_heads":4,"intermediate_size":32,"max_position_embeddings":40,
               "id2label":{LABELS}}}"#
        ))?;
        let bcfg = bert::tiny_config(22, 5);
        let vb = VarBuilder::from_tensors(bert::random_weights(&bcfg, &dev)?, DType::F32, &dev);
        TokenClassifier::from_parts(cfg, tiny_bert_tokenizer()?, vb, &dev, options)
    }

    #[test]
    fn a_span_cutting_a_number_takes_the_whole_number() {
        let widened = |text: &str, piece: &str| {
            let chars: Vec<char> = text.chars().collect();
            let start = text.find(piece).expect("piece");
            let mut span = Span::new(start, start + piece.len(), Label::Date, 0.9, Source::Model);
            whole_numbers(text, &CharIndex::new(text), &mut span);
            chars[span.start..span.end].iter().collect::<String>()
        };
        assert_eq!(widened("Seen 3/4 and 12/25 for follow-up.", "/25"), "12/25");
        assert_eq!(widened("Seen 3/4 and 12/25 for follow-up.", "12/"), "12/25");
        assert_eq!(widened("Call 617-555-0142.", "555-0142"), "617-555-0142");
        assert_eq!(widened("on 2021.03.04, stable", "03"), "2021.03.04");
        assert_eq!(widened("born 1/2/1980", "2"), "1/2/1980");
        // Whole numbers, words and sentence ends stay as they are.
        assert_eq!(widened("on 3/4. Then -5 C", "3/4"), "3/4");
        assert_eq!(widened("Mary-Jane 3", "Mary"), "Mary");
        assert_eq!(widened("dose -5 mg", "5"), "5");
        assert_eq!(widened("a 3/4 b", "3/4"), "3/4");
    }

    #[test]
    fn long_texts_are_windowed_and_every_token_gets_logits() -> Result<()> {
        // Windows of 12 tokens (10 content) with overlap 4 over a 20-token text.
        let small = tiny_classifier(ClassifierOptions {
            window_tokens: Some(12),
            window_overlap: 4,
            ..ClassifierOptions::default()
        })?;
        let text = "zoe met jose in sao paulo on 12/03 . dr muller met zoe in paulo";
        let windowed = small.token_logits(&[text])?;
        assert_eq!(windowed[0].logits.len(), windowed[0].offsets.len());
        assert!(windowed[0].logits.iter().all(|r| r.len() == 5));
        let spans = small.spans(&[text, "", "a"])?;
        assert_eq!(spans.len(), 3);
        assert!(spans[1].is_empty());
        Ok(())
    }

    /// A long text's passes run on the pool's idle cores give the same logits, bit for
    /// bit, as on the calling thread alone.
    #[test]
    fn passes_on_borrowed_cores_give_the_same_logits() -> Result<()> {
        let c = tiny_classifier(ClassifierOptions {
            window_tokens: Some(8),
            window_overlap: 2,
            batch_size: 1,
            ..ClassifierOptions::default()
        })?;
        let text = "zoe met jose in sao paulo on 12/03 . dr muller met zoe in paulo . ".repeat(6);
        let alone = c.token_logits(&[text.as_str()])?;
        let cores = crate::detect::lend::Cores::new(3);
        let lent =
            crate::detect::lend::during(Arc::clone(&cores), || c.token_logits(&[text.as_str()]))?;
        assert_eq!(alone[0].logits, lent[0].logits);
        assert_eq!(cores.free(), 3, "every borrowed core came back");
        Ok(())
    }

    /// With an idle core, a second thread takes passes: each of the first two passes waits
    /// (10 s at most) until the other has started, which one thread alone never sees.
    #[test]
    fn an_idle_core_runs_passes_beside_the_calling_thread() -> Result<()> {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let entered = AtomicUsize::new(0);
        let passes: Vec<Vec<usize>> = (0..6).map(|i| vec![i]).collect();
        let cores = crate::detect::lend::Cores::new(2);
        let _worker = cores.acquire();
        let out = crate::detect::lend::during(Arc::clone(&cores), || {
            run_passes(&passes, |p| {
                if entered.fetch_add(1, Ordering::SeqCst) < 2 {
                    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
                    while entered.load(Ordering::SeqCst) < 2 {
                        if std::time::Instant::now() > deadline {
                            return Err(InferenceError::NoWeights);
                        }
                        std::thread::yield_now();
                    }
                }
                Ok(p[0] * 10)
            })
        })?;
        assert_eq!(out, vec![0, 10, 20, 30, 40, 50]);
        Ok(())
    }

    /// A failed pass fails the call with its own error, whichever thread ran it.
    #[test]
    fn a_failed_pass_fails_the_call_with_its_error() {
        let passes: Vec<Vec<usize>> = (0..5).map(|i| vec![i]).collect();
        let cores = crate::detect::lend::Cores::new(2);
        let out = crate::detect::lend::during(cores, || {
            run_passes(&passes, |p| {
                if p[0] == 3 {
                    Err(InferenceError::NoWeights)
                } else {
                    Ok(p[0])
                }
            })
        });
        assert!(matches!(out, Err(InferenceError::NoWeights)), "{out:?}");
    }

    #[test]
    fn labels_are_canonical_and_family_is_known() -> Result<()> {
        let c = tiny_classifier(ClassifierOptions::default())?;
        assert_eq!(c.labels(), vec![Label::FirstName, Label::City]);
        assert_eq!(c.family(), Family::Bert);
        assert_eq!(c.max_positions(), 40);
        Ok(())
    }

    fn text_strategy() -> impl proptest::strategy::Strategy<Value = String> {
        proptest::collection::vec(
            prop_oneof![
                Just("zoe"),
                Just("Zoë"),
                Just("José"),
                Just("São"),
                Just("paulo"),
                Just("😀"),
                Just("12/03"),
                Just(" "),
                Just("  "),
                Just("\n"),
                Just("Dr."),
                Just("x"),
                Just("Müllers"),
                Just("-"),
                Just("中文")
            ],
            0..60,
        )
        .prop_map(|parts| parts.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        /// Widening only grows a span, keeps it on the text, and leaves no number cut.
        #[test]
        fn widened_spans_contain_the_span_and_cut_no_number(text in "[0-9a-zé/. -]{1,30}", a in 0usize..30, len in 1usize..10) {
            let chars: Vec<char> = text.chars().collect();
            let start = a.min(chars.len() - 1);
            let end = (start + len).min(chars.len());
            let mut span = Span::new(start, end, Label::Date, 0.9, Source::Model);
            whole_numbers(&text, &CharIndex::new(&text), &mut span);
            prop_assert!(span.start <= start && span.end >= end && span.end <= chars.len());
            let digit = |i: usize| chars.get(i).is_some_and(char::is_ascii_digit);
            for edge in [span.start, span.end] {
                prop_assert!(edge == 0 || edge == chars.len() || !(digit(edge - 1) && digit(edge)));
            }
        }

        #[test]
        fn span_offsets_always_index_the_text(text in text_strategy(), window in 3usize..20) {
            let c = tiny_classifier(ClassifierOptions {
                window_tokens: Some(window),
                window_overlap: 3,
                strategy: super::Strategy::Simple,
                ..ClassifierOptions::default()
            }).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let spans = c.detect_batch(&[text.as_str()]).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let n = text.chars().count();
            let mut last = 0;
            for s in &spans[0] {
                prop_assert!(s.start < s.end && s.end <= n);
                prop_assert!(s.start >= last);
                last = s.start;
                prop_assert_eq!(s.source, Source::Model);
                prop_assert!((0.0..=1.0).contains(&s.score));
            }
        }
    }
}
