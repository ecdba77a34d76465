//! BERT for token classification, with a forward pass written for the CPU.
//!
//! Paper: Devlin et al., "BERT: Pre-training of Deep Bidirectional Transformers for
//! Language Understanding" (<https://arxiv.org/abs/1810.04805>). Config and weight names
//! mirror transformers' `BertForTokenClassification`
//! (<https://github.com/huggingface/transformers/blob/main/src/transformers/models/bert/configuration_bert.py>).
//!
//! Differences from candle-transformers' `BertModel`, all exact rewrites:
//! - Q, K and V are one `[3h, h]` matmul, and the 1/√d attention scale is folded into
//!   the query rows (weights and bias) at load.
//! - Padding is an additive `[b, k]` mask fused into the softmax.
//! - On the CPU, bias+GELU, bias+residual+LayerNorm and mask+softmax are fused kernels
//!   ([`phiguard_kernels`]); other devices use the composite candle ops.
//! - On the CPU, [`BertForTokenClassification::forward_packed`] runs sequences packed end
//!   to end (`[tokens, h]`, no padding anywhere): every dense layer works per token, and
//!   self-attention is [`PackedAttention`], which keeps each sequence to its own keys.

use candle_core::{CpuStorage, DType, Storage, Tensor};
#[cfg(test)]
use candle_core::{Device, D};
use candle_nn::VarBuilder;
use half::{f16, slice::HalfFloatSliceExt};

use super::classifier::Precision;
use super::config::ModelConfig;
use super::{ConfigError, Result};
use phiguard_kernels::{
    BiasGelu, BiasResidualLayerNorm, Int8Matmul, Int8Weights, MaskedSoftmax, PackedAttention,
};

/// The runtime config of a BERT token classifier.
#[derive(Clone, Debug)]
pub(crate) struct Config {
    vocab_size: usize,
    hidden_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    intermediate_size: usize,
    max_position_embeddings: usize,
    type_vocab_size: usize,
    layer_norm_eps: f64,
    num_labels: usize,
}

impl Config {
    /// Checks the mirror of `config.json` and keeps what the forward pass needs.
    ///
    /// # Errors
    /// [`InferenceError::Config`](super::InferenceError::Config) for a zero size, heads that do not
    /// divide the hidden size, an activation other than erf-GELU or non-absolute positions.
    pub(crate) fn from_model_config(c: &ModelConfig, num_labels: usize) -> Result<Config> {
        if c.hidden_size == 0 || c.num_attention_heads == 0 || c.num_hidden_layers == 0 {
            return Err(ConfigError::ZeroSize.into());
        }
        if !c.hidden_size.is_multiple_of(c.num_attention_heads) {
            return Err(ConfigError::HeadsDoNotDivide.into());
        }
        if c.hidden_act != "gelu" {
            return Err(ConfigError::Activation.into());
        }
        if c.position_embedding_type != "absolute" {
            return Err(ConfigError::PositionEmbedding.into());
        }
        Ok(Config {
            vocab_size: c.vocab_size,
            hidden_size: c.hidden_size,
            num_hidden_layers: c.num_hidden_layers,
            num_attention_heads: c.num_attention_heads,
            intermediate_size: c.intermediate_size,
            max_position_embeddings: c.max_position_embeddings,
            type_vocab_size: c.type_vocab_size.max(1),
            layer_norm_eps: c.layer_norm_eps,
            num_labels,
        })
    }
}

/// How the encoder runs its element-wise steps (bias + GELU, bias + residual + LayerNorm)
/// and attention: phiguard's fused kernels over packed sequences (the CPU), or candle's
/// composite ops over padded batches (any device: what a GPU runs). Chosen at load from the
/// device; a test runs the composite form on the CPU against the kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ops {
    Fused,
    Composite,
}

/// A linear layer kept as its transposed weight `Wᵀ: [in, out]` (contiguous) plus bias
/// (also on the host for fusion).
///
/// Storing `Wᵀ` once at load, rather than passing the strided view `W.t()` to every matmul,
/// spares gemm a repacking of the weight on each call (measured 5–10 % of the dense
/// layers' time at this model's shapes).
///
/// With [`Precision::Int8`] on a CPU that has the kernel, the layer keeps only the int8
/// weight (a quarter of the f32 one) and multiplies through it.
struct Dense {
    weight: Weight,
    bias: Tensor,
    bias_host: Vec<f32>,
}

/// The weight of a [`Dense`] layer: `Wᵀ` as f32, or its int8 form alone.
enum Weight {
    F32(Tensor),
    Int8(Int8Weights),
}

impl Dense {
    fn from_parts(weight: Tensor, bias: Tensor, precision: Precision) -> Result<Dense> {
        let bias_host = bias.to_vec1::<f32>()?;
        let int8 = match precision {
            // Quantized from `W` as loaded: no transposed f32 copy.
            Precision::Int8 => {
                let (n, k) = weight.dims2()?;
                on_host_f32(&weight, |w| Int8Weights::from_rows(w, n, k))
            }
            Precision::F32 => None,
        };
        Ok(Dense {
            weight: match int8 {
                Some(q) => Weight::Int8(q),
                None => Weight::F32(weight.t()?.contiguous()?),
            },
            bias,
            bias_host,
        })
    }

    fn load(vb: VarBuilder, in_dim: usize, out_dim: usize, precision: Precision) -> Result<Dense> {
        let weight = vb.get((out_dim, in_dim), "weight")?;
        let bias = vb.get(out_dim, "bias")?;
        Dense::from_parts(weight, bias, precision)
    }

    /// `x @ Wᵀ` without the bias; `x: [m, in]`.
    fn matmul(&self, x: &Tensor) -> Result<Tensor> {
        match &self.weight {
            Weight::Int8(q) => Ok(x.contiguous()?.apply_op1_no_bwd(&Int8Matmul {
                weights: q,
                gelu_bias: None,
            })?),
            Weight::F32(w) => Ok(x.matmul(w)?),
        }
    }

    /// `gelu(x @ Wᵀ + b)` (the erf form): on the CPU in one pass with the int8 product, or
    /// fused after the f32 one.
    fn bias_gelu(&self, x: &Tensor, ops: Ops) -> Result<Tensor> {
        if let Weight::Int8(q) = &self.weight {
            return Ok(x.contiguous()?.apply_op1_no_bwd(&Int8Matmul {
                weights: q,
                gelu_bias: Some(&self.bias_host),
            })?);
        }
        let y = self.matmul(x)?;
        match ops {
            Ops::Fused => Ok(y.apply_op1_no_bwd(&BiasGelu {
                bias: &self.bias_host,
            })?),
            Ops::Composite => Ok(y.broadcast_add(&self.bias)?.gelu_erf()?),
        }
    }

    /// `x @ Wᵀ + b`.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Ok(self.matmul(x)?.broadcast_add(&self.bias)?)
    }
}

struct Norm {
    weight: Tensor,
    bias: Tensor,
    weight_host: Vec<f32>,
    bias_host: Vec<f32>,
    eps: f64,
}

impl Norm {
    fn load(vb: VarBuilder, dim: usize, eps: f64) -> Result<Norm> {
        let weight = vb.get(dim, "weight")?;
        let bias = vb.get(dim, "bias")?;
        Ok(Norm {
            weight_host: weight.to_vec1::<f32>()?,
            bias_host: bias.to_vec1::<f32>()?,
            weight,
            bias,
            eps,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Ok(candle_nn::ops::layer_norm(
            x,
            &self.weight,
            &self.bias,
            self.eps as f32,
        )?)
    }

    /// `LayerNorm(x + dense.bias + residual)`.
    fn bias_residual(
        &self,
        x: &Tensor,
        dense: &Dense,
        residual: &Tensor,
        ops: Ops,
    ) -> Result<Tensor> {
        match ops {
            Ops::Fused => {
                let op = BiasResidualLayerNorm {
                    bias: &dense.bias_host,
                    gamma: &self.weight_host,
                    beta: &self.bias_host,
                    eps: self.eps as f32,
                };
                Ok(x.apply_op2_no_bwd(residual, &op)?)
            }
            Ops::Composite => self.forward(&(x.broadcast_add(&dense.bias)? + residual)?),
        }
    }
}

struct Embeddings {
    /// The word table, `[vocab, h]`: f16 where f16 holds it exactly (see [`compact`]), else
    /// f32. Rows are converted to f32 as they are looked up.
    word: Tensor,
    position: Tensor,
    token_type: Tensor,
    norm: Norm,
}

impl Embeddings {
    fn load(vb: VarBuilder, cfg: &Config) -> Result<Embeddings> {
        let h = cfg.hidden_size;
        Ok(Embeddings {
            word: compact(vb.get((cfg.vocab_size, h), "word_embeddings.weight")?)?,
            position: vb.get(
                (cfg.max_position_embeddings, h),
                "position_embeddings.weight",
            )?,
            token_type: vb.get((cfg.type_vocab_size, h), "token_type_embeddings.weight")?,
            norm: Norm::load(vb.pp("LayerNorm"), h, cfg.layer_norm_eps)?,
        })
    }

    /// `ids: [b, s]` → `[b * s, h]`; token type 0 and positions `0..s` for every row.
    fn forward(&self, ids: &Tensor) -> Result<Tensor> {
        let (b, s) = ids.dims2()?;
        let h = self.word.dim(1)?;
        let words = self
            .word
            .index_select(&ids.flatten_all()?, 0)?
            .to_dtype(DType::F32)?
            .reshape((b, s, h))?;
        let extra = self
            .position
            .narrow(0, 0, s)?
            .broadcast_add(&self.token_type.narrow(0, 0, 1)?)?;
        let x = words.broadcast_add(&extra)?.reshape((b * s, h))?;
        self.norm.forward(&x)
    }

    /// Packed `ids: [t]` with each token's position in its sequence `positions: [t]` →
    /// `[t, h]`; token type 0.
    fn forward_packed(&self, ids: &Tensor, positions: &Tensor) -> Result<Tensor> {
        let x = self
            .word
            .index_select(ids, 0)?
            .to_dtype(DType::F32)?
            .add(&self.position.index_select(positions, 0)?)?
            .broadcast_add(&self.token_type.narrow(0, 0, 1)?)?;
        self.norm.forward(&x)
    }
}

/// On the CPU, `table` in f16 when every value converts there and back unchanged (a
/// checkpoint stored in f16, as the bundled model is), else `table` itself.
///
/// The word table is the model's largest tensor after the dense weights (19,730 × 384 for
/// the bundled model: 30 MB in f32) and only a row per token is read, so half the bytes cost
/// nothing measurable; the f32 rows looked up are the same bits as before.
fn compact(table: Tensor) -> Result<Tensor> {
    Ok(match on_host_f32(&table, f16_exactly) {
        Some(h) => Tensor::from_vec(h, table.shape(), table.device())?,
        None => table,
    })
}

/// `f` over `t`'s values in place, where `t` is contiguous f32 in host memory (no copy);
/// `None` elsewhere (another dtype, a strided view, a GPU).
fn on_host_f32<T>(t: &Tensor, f: impl FnOnce(&[f32]) -> Option<T>) -> Option<T> {
    let (storage, layout) = t.storage_and_layout();
    match (&*storage, layout.contiguous_offsets()) {
        (Storage::Cpu(CpuStorage::F32(data)), Some((from, to))) => f(&data[from..to]),
        _ => None,
    }
}

/// `values` in f16, if each converts there and back unchanged (NaN never does).
fn f16_exactly(values: &[f32]) -> Option<Vec<f16>> {
    let mut half = vec![f16::ZERO; values.len()];
    half.convert_from_f32_slice(values);
    let mut back = [0f32; 1024];
    for (h, v) in half.chunks(back.len()).zip(values.chunks(back.len())) {
        let back = &mut back[..h.len()];
        h.convert_to_f32_slice(back);
        if back != v {
            return None;
        }
    }
    Some(half)
}

struct Layer {
    qkv: Dense,
    attn_out: Dense,
    attn_norm: Norm,
    intermediate: Dense,
    output: Dense,
    out_norm: Norm,
    heads: usize,
    head_dim: usize,
}

impl Layer {
    fn load(vb: VarBuilder, cfg: &Config, precision: Precision) -> Result<Layer> {
        let h = cfg.hidden_size;
        let heads = cfg.num_attention_heads;
        let head_dim = h / heads;
        let att = vb.pp("attention");
        let sa = att.pp("self");
        let scale = 1.0 / (head_dim as f64).sqrt();
        let q_w = (sa.get((h, h), "query.weight")? * scale)?;
        let q_b = (sa.get(h, "query.bias")? * scale)?;
        let qkv_w = Tensor::cat(
            &[
                &q_w,
                &sa.get((h, h), "key.weight")?,
                &sa.get((h, h), "value.weight")?,
            ],
            0,
        )?;
        let qkv_b = Tensor::cat(
            &[&q_b, &sa.get(h, "key.bias")?, &sa.get(h, "value.bias")?],
            0,
        )?;
        Ok(Layer {
            qkv: Dense::from_parts(qkv_w, qkv_b, precision)?,
            attn_out: Dense::load(att.pp("output").pp("dense"), h, h, precision)?,
            attn_norm: Norm::load(att.pp("output").pp("LayerNorm"), h, cfg.layer_norm_eps)?,
            intermediate: Dense::load(
                vb.pp("intermediate").pp("dense"),
                h,
                cfg.intermediate_size,
                precision,
            )?,
            output: Dense::load(
                vb.pp("output").pp("dense"),
                cfg.intermediate_size,
                h,
                precision,
            )?,
            out_norm: Norm::load(vb.pp("output").pp("LayerNorm"), h, cfg.layer_norm_eps)?,
            heads,
            head_dim,
        })
    }

    /// `x: [b * s, h]`, `mask: [b, s]` additive.
    fn forward(&self, x: &Tensor, mask: &Tensor, b: usize, s: usize, ops: Ops) -> Result<Tensor> {
        let h = self.heads * self.head_dim;
        let qkv = self
            .qkv
            .forward(x)?
            .reshape((b, s, 3, self.heads, self.head_dim))?
            .permute((2, 0, 3, 1, 4))?
            .contiguous()?;
        let (q, k, v) = (qkv.get(0)?, qkv.get(1)?, qkv.get(2)?);
        let scores = q.matmul(&k.t()?)?;
        let probs = match ops {
            Ops::Fused => scores.apply_op2_no_bwd(mask, &MaskedSoftmax)?,
            Ops::Composite => {
                let m = mask.unsqueeze(1)?.unsqueeze(1)?;
                candle_nn::ops::softmax_last_dim(&scores.broadcast_add(&m)?)?
            }
        };
        let ctx = probs.matmul(&v)?.transpose(1, 2)?.reshape((b * s, h))?;
        self.feed_forward(x, &ctx, ops)
    }

    /// Packed `x: [t, h]` holding sequences of `lens` tokens end to end (CPU only).
    fn forward_packed(&self, x: &Tensor, lens: &[usize]) -> Result<Tensor> {
        let ctx = self.qkv.matmul(x)?.apply_op1_no_bwd(&PackedAttention {
            bias: &self.qkv.bias_host,
            lens,
            heads: self.heads,
            // Attention's products follow the dense layers' precision.
            int8: matches!(self.qkv.weight, Weight::Int8(_)),
        })?;
        self.feed_forward(x, &ctx, Ops::Fused)
    }

    /// From the attention context on: output projection, residual and norm, then the
    /// intermediate and output layers.
    fn feed_forward(&self, x: &Tensor, ctx: &Tensor, ops: Ops) -> Result<Tensor> {
        let attn =
            self.attn_norm
                .bias_residual(&self.attn_out.matmul(ctx)?, &self.attn_out, x, ops)?;
        let inter = self.intermediate.bias_gelu(&attn, ops)?;
        self.out_norm
            .bias_residual(&self.output.matmul(&inter)?, &self.output, &attn, ops)
    }
}

/// `BertForTokenClassification`: encoder plus a linear head over every token.
pub(crate) struct BertForTokenClassification {
    embeddings: Embeddings,
    layers: Vec<Layer>,
    classifier: Dense,
    num_labels: usize,
    ops: Ops,
}

impl BertForTokenClassification {
    /// Loads the weights; accepts checkpoints with or without the `bert.` prefix. With
    /// [`Precision::Int8`] the encoder's dense layers are quantized (the classifier head,
    /// 35 columns here, stays f32), and attention's products run in int8 with them.
    ///
    /// # Errors
    /// [`InferenceError::Candle`](super::InferenceError::Candle) when a tensor is missing or has
    /// the wrong shape.
    pub(crate) fn load(vb: VarBuilder, cfg: &Config, precision: Precision) -> Result<Self> {
        let body = if vb.contains_tensor("bert.embeddings.word_embeddings.weight") {
            vb.pp("bert")
        } else {
            vb.clone()
        };
        let embeddings = Embeddings::load(body.pp("embeddings"), cfg)?;
        // The layers load on threads of their own (as many as there are cores), each a run
        // of consecutive layers, joined in order: each layer's transpose and quantization is
        // independent CPU work, and on a two-core machine it was a third of `phiguard deid`'s
        // start-up.
        let n = cfg.num_hidden_layers;
        let threads = std::thread::available_parallelism().map_or(1, |c| c.get().min(n.max(1)));
        let per_thread = n.div_ceil(threads).max(1);
        let layers = std::thread::scope(|s| {
            let body = &body;
            let handles: Vec<_> = (0..n)
                .step_by(per_thread)
                .map(|first| {
                    s.spawn(move || {
                        (first..(first + per_thread).min(n))
                            .map(|i| {
                                Layer::load(body.pp(format!("encoder.layer.{i}")), cfg, precision)
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect::<Vec<_>>()
        })
        .into_iter()
        .collect::<Result<Vec<_>>>()?;
        let classifier = Dense::load(
            vb.pp("classifier"),
            cfg.hidden_size,
            cfg.num_labels,
            Precision::F32,
        )?;
        Ok(BertForTokenClassification {
            embeddings,
            layers,
            classifier,
            num_labels: cfg.num_labels,
            ops: if body.device().is_cpu() {
                Ops::Fused
            } else {
                Ops::Composite
            },
        })
    }

    /// Whether the model runs its fused kernels over packed sequences
    /// ([`forward_packed`](Self::forward_packed)): on the CPU.
    pub(crate) fn packs(&self) -> bool {
        self.ops == Ops::Fused
    }

    /// Sequences packed end to end, `ids: [t]` u32 with their `lens` (summing to `t`) →
    /// logits `[t, labels]`. CPU only ([`packs`](Self::packs)).
    pub(crate) fn forward_packed(&self, ids: &Tensor, lens: &[usize]) -> Result<Tensor> {
        let positions: Vec<u32> = lens.iter().flat_map(|&n| 0..n as u32).collect();
        let positions = Tensor::from_vec(positions, ids.dims1()?, ids.device())?;
        let mut x = self.embeddings.forward_packed(ids, &positions)?;
        for layer in &self.layers {
            x = layer.forward_packed(&x, lens)?;
        }
        self.classifier.forward(&x)
    }

    /// `ids: [b, s]` u32, `mask: [b, s]` u32 (1 = token, 0 = padding) → logits `[b, s, labels]`.
    pub(crate) fn forward(&self, ids: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let (b, s) = ids.dims2()?;
        let additive = additive_mask(mask)?;
        let mut x = self.embeddings.forward(ids)?;
        for layer in &self.layers {
            x = layer.forward(&x, &additive, b, s, self.ops)?;
        }
        Ok(self
            .classifier
            .forward(&x)?
            .reshape((b, s, self.num_labels))?)
    }
}

/// 1/0 mask → 0 / `f32::MIN` additive mask, `[b, s]` f32.
pub(crate) fn additive_mask(mask: &Tensor) -> Result<Tensor> {
    let m = mask.to_dtype(DType::F32)?;
    Ok(((m - 1.0)?.neg()? * f64::from(f32::MIN))?.to_dtype(DType::F32)?)
}

/// The last-dimension softmax used by tests of the families.
#[cfg(test)]
pub(crate) fn softmax(x: &Tensor) -> Result<Tensor> {
    Ok(candle_nn::ops::softmax(x, D::Minus1)?)
}

/// Random weights with BERT's names, for tests of this family and of the classifier.
#[cfg(test)]
pub(crate) fn random_weights(
    cfg: &Config,
    dev: &Device,
) -> Result<std::collections::HashMap<String, Tensor>> {
    let (h, i) = (cfg.hidden_size, cfg.intermediate_size);
    let mut shapes: Vec<(String, Vec<usize>)> = vec![
        (
            "bert.embeddings.word_embeddings.weight".into(),
            vec![cfg.vocab_size, h],
        ),
        (
            "bert.embeddings.position_embeddings.weight".into(),
            vec![cfg.max_position_embeddings, h],
        ),
        (
            "bert.embeddings.token_type_embeddings.weight".into(),
            vec![cfg.type_vocab_size, h],
        ),
        ("bert.embeddings.LayerNorm.weight".into(), vec![h]),
        ("bert.embeddings.LayerNorm.bias".into(), vec![h]),
        ("classifier.weight".into(), vec![cfg.num_labels, h]),
        ("classifier.bias".into(), vec![cfg.num_labels]),
    ];
    for l in 0..cfg.num_hidden_layers {
        let p = format!("bert.encoder.layer.{l}.");
        for (name, shape) in [
            ("attention.self.query", vec![h, h]),
            ("attention.self.key", vec![h, h]),
            ("attention.self.value", vec![h, h]),
            ("attention.output.dense", vec![h, h]),
            ("intermediate.dense", vec![i, h]),
            ("output.dense", vec![h, i]),
        ] {
            shapes.push((format!("{p}{name}.bias"), vec![shape[0]]));
            shapes.push((format!("{p}{name}.weight"), shape));
        }
        for name in ["attention.output.LayerNorm", "output.LayerNorm"] {
            shapes.push((format!("{p}{name}.weight"), vec![h]));
            shapes.push((format!("{p}{name}.bias"), vec![h]));
        }
    }
    let mut out = std::collections::HashMap::new();
    for (name, shape) in shapes {
        let t = if name.ends_with("LayerNorm.weight") {
            Tensor::randn(1f32, 0.1, shape, dev)?
        } else {
            Tensor::randn(0f32, 0.3, shape, dev)?
        };
        out.insert(name, t);
    }
    Ok(out)
}

/// A tiny config for tests.
#[cfg(test)]
pub(crate) fn tiny_config(vocab_size: usize, num_labels: usize) -> Config {
    Config {
        vocab_size,
        hidden_size: 16,
        num_hidden_layers: 2,
        num_attention_heads: 4,
        intermediate_size: 32,
        max_position_embeddings: 40,
        type_vocab_size: 2,
        layer_norm_eps: 1e-12,
        num_labels,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The composite ops a GPU runs (padded batches, candle's softmax, GELU and LayerNorm)
    /// give the fused CPU kernels' logits: run both on the CPU, same weights, same batch.
    #[test]
    fn the_composite_ops_a_gpu_runs_give_the_fused_kernels_logits() -> Result<()> {
        let dev = Device::Cpu;
        let cfg = tiny_config(30, 5);
        let weights = random_weights(&cfg, &dev)?;
        let load = || {
            BertForTokenClassification::load(
                VarBuilder::from_tensors(weights.clone(), DType::F32, &dev),
                &cfg,
                Precision::F32,
            )
        };
        let fused = load()?;
        let mut composite = load()?;
        composite.ops = Ops::Composite;
        assert!(fused.packs() && !composite.packs());
        let ids = Tensor::new(&[[2u32, 7, 9, 3, 11, 0], [2, 5, 3, 0, 0, 0]], &dev)?;
        let mask = Tensor::new(&[[1u32, 1, 1, 1, 1, 0], [1, 1, 1, 0, 0, 0]], &dev)?;
        let (a, b) = (fused.forward(&ids, &mask)?, composite.forward(&ids, &mask)?);
        let mut worst = 0f32;
        for (row, len) in [(0, 5), (1, 3)] {
            let d = (a.get(row)?.narrow(0, 0, len)? - b.get(row)?.narrow(0, 0, len)?)?
                .abs()?
                .flatten_all()?
                .max(0)?
                .to_scalar::<f32>()?;
            worst = worst.max(d);
        }
        let spread = a.flatten_all()?.abs()?.max(0)?.to_scalar::<f32>()?;
        assert!(spread > 0.1, "logits too flat to compare: {spread}");
        assert!(worst < 1e-5, "composite ops differ by {worst}");
        Ok(())
    }

    #[test]
    fn the_word_table_is_kept_in_f16_only_where_f16_holds_it_exactly() -> Result<()> {
        let dev = Device::Cpu;
        let exact = Tensor::new(&[[0.5f32, -1.25, 0.0], [3.0, 1024.0, -0.25]], &dev)?;
        let kept = compact(exact.clone())?;
        assert_eq!(kept.dtype(), DType::F16);
        assert_eq!(
            kept.to_dtype(DType::F32)?.to_vec2::<f32>()?,
            exact.to_vec2::<f32>()?
        );
        for inexact in [[0.5f32, 0.1], [1.0, 70_000.0], [f32::NAN, 1.0]] {
            let t = Tensor::new(&[inexact], &dev)?;
            assert_eq!(compact(t)?.dtype(), DType::F32, "{inexact:?}");
        }
        Ok(())
    }

    #[test]
    fn padding_does_not_change_token_logits() -> Result<()> {
        let dev = Device::Cpu;
        let cfg = tiny_config(30, 5);
        let vb = VarBuilder::from_tensors(random_weights(&cfg, &dev)?, DType::F32, &dev);
        let model = BertForTokenClassification::load(vb, &cfg, Precision::F32)?;
        let one = model.forward(
            &Tensor::new(&[[2u32, 7, 9, 3]], &dev)?,
            &Tensor::new(&[[1u32, 1, 1, 1]], &dev)?,
        )?;
        let padded = model.forward(
            &Tensor::new(&[[2u32, 7, 9, 3, 0, 0], [2, 5, 3, 0, 0, 0]], &dev)?,
            &Tensor::new(&[[1u32, 1, 1, 1, 0, 0], [1, 1, 1, 0, 0, 0]], &dev)?,
        )?;
        let a = one.get(0)?;
        let b = padded.get(0)?.narrow(0, 0, 4)?;
        let diff = (a - b)?.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()?;
        assert!(diff < 1e-5, "padding changed logits by {diff}");
        let spread = one.flatten_all()?.to_vec1::<f32>()?;
        assert!(
            spread.iter().any(|v| v.abs() > 1e-3),
            "weights were not random"
        );
        let p = softmax(&one)?
            .sum(D::Minus1)?
            .flatten_all()?
            .to_vec1::<f32>()?;
        assert!(p.iter().all(|s| (s - 1.0).abs() < 1e-5));
        Ok(())
    }

    #[test]
    fn packed_sequences_give_the_padded_logits() -> Result<()> {
        let dev = Device::Cpu;
        let cfg = tiny_config(30, 5);
        for precision in [Precision::F32, Precision::Int8] {
            let vb = VarBuilder::from_tensors(random_weights(&cfg, &dev)?, DType::F32, &dev);
            let model = BertForTokenClassification::load(vb, &cfg, precision)?;
            assert!(model.packs());
            let seqs: [&[u32]; 3] = [&[2, 7, 9, 11, 4, 3], &[2, 5, 3], &[2, 8, 8, 1, 3]];
            let lens: Vec<usize> = seqs.iter().map(|s| s.len()).collect();
            let ids = Tensor::new(seqs.concat(), &dev)?;
            let packed = model.forward_packed(&ids, &lens)?;
            let mut start = 0;
            for seq in seqs {
                let one = model
                    .forward(
                        &Tensor::new(seq, &dev)?.unsqueeze(0)?,
                        &Tensor::ones((1, seq.len()), DType::U32, &dev)?,
                    )?
                    .squeeze(0)?;
                let part = packed.narrow(0, start, seq.len())?;
                let diff = (one - part)?
                    .abs()?
                    .flatten_all()?
                    .max(0)?
                    .to_scalar::<f32>()?;
                // f32: the same arithmetic in another order. int8: activations are quantized
                // per row on every call, so a last-bit difference of the f32 attention
                // (packed vs padded) can move one value across a rounding step of the next
                // layer's u8 grid, about 1 % of that row's range (seen: 0.011 on these random
                // weights); a packing fault (a row from another sequence) moves logits by
                // their whole size.
                let bound = match precision {
                    Precision::F32 => 1e-4,
                    Precision::Int8 => 0.05,
                };
                assert!(
                    diff < bound,
                    "{precision:?}: packing changed logits by {diff}"
                );
                start += seq.len();
            }
        }
        Ok(())
    }
}
