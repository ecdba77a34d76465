"""Generates the parity fixtures under tests/fixtures/parity/<family>/.

For each family phiguard runs (bert, distilbert, deberta-v2, modernbert, xlm-roberta)
this builds a tiny randomly initialised token-classification checkpoint with
transformers (fixed seed, hidden size 32, 2 layers, a WordPiece vocabulary built from
the texts below) and records transformers' logits for a fixed set of texts, run as one
padded batch. tests/parity.rs loads each checkpoint with phiguard and requires
max |Δ| ≤ 1e-4 against those logits, both from the recorded input ids and from
phiguard's own tokenization of the texts.

    python3 -m venv tools/.venv-parity
    tools/.venv-parity/bin/pip install -r tools/requirements-parity.txt
    tools/.venv-parity/bin/python tools/make_parity_fixtures.py

Each directory holds config.json (the full config, not a diff), tokenizer.json,
model.safetensors (float32) and expected.json ({texts, input_ids, logits}).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import torch
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
from transformers import (
    BertConfig,
    BertForTokenClassification,
    DebertaV2Config,
    DebertaV2ForTokenClassification,
    DistilBertConfig,
    DistilBertForTokenClassification,
    ModernBertConfig,
    ModernBertForTokenClassification,
    XLMRobertaConfig,
    XLMRobertaForTokenClassification,
)

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "parity"
SEED = 1234
TEXTS = [
    "Patient John Smith was seen at Springfield General on 03/04/2021.",
    "Call Maria at 555-0101.",
    "Zoë Müller lives at 42 Elm Street, Boston; her doctor is Dr. Aisha Khan and her nurse is Peter.",
    "No identifiers.",
]
LABELS = ["O", "B-NAME", "I-NAME", "B-DATE", "I-DATE", "B-LOC", "I-LOC"]
HIDDEN, LAYERS, HEADS, FFN, POSITIONS = 32, 2, 4, 64, 64


def build_vocab(specials: list[str]) -> dict[str, int]:
    words: list[str] = []
    for text in TEXTS:
        norm = normalizers.BertNormalizer(lowercase=True).normalize_str(text)
        for w in re.findall(r"\w+|[^\w\s]", norm):
            if w not in words:
                words.append(w)
    # Drop a few whole words so that they split into sub-words.
    pieces = sorted({c for w in words for c in w})
    vocab = list(specials)
    for w in words:
        if w not in ("springfield", "identifiers", "general") and w not in vocab:
            vocab.append(w)
    for c in pieces:
        for t in (c, "##" + c):
            if t not in vocab:
                vocab.append(t)
    for t in ("spring", "##field", "identif", "##iers", "gen", "##eral"):
        if t not in vocab:
            vocab.append(t)
    return {t: i for i, t in enumerate(vocab)}


def build_tokenizer(specials: list[str], cls: str, sep: str, unk: str, pad: str) -> Tokenizer:
    vocab = build_vocab(specials)
    tok = Tokenizer(models.WordPiece(vocab=vocab, unk_token=unk, continuing_subword_prefix="##"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single=f"{cls} $A {sep}",
        pair=f"{cls} $A {sep} $B {sep}",
        special_tokens=[(cls, vocab[cls]), (sep, vocab[sep])],
    )
    tok.add_special_tokens(specials)
    return tok


def randomize(model: torch.nn.Module) -> None:
    """Weights large enough that every op matters to the logits."""
    gen = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            noise = torch.randn(p.shape, generator=gen)
            if "norm" in name.lower() and name.endswith("weight"):
                p.copy_(1.0 + 0.1 * noise)
            elif "embeddings" in name or "rel_embeddings" in name:
                p.copy_(0.5 * noise)
            else:
                p.copy_(0.2 * noise)


def family_specs(vocab_bert: dict[str, int], vocab_roberta: dict[str, int]):
    common = dict(num_labels=len(LABELS), id2label=dict(enumerate(LABELS)), label2id={l: i for i, l in enumerate(LABELS)})
    v = len(vocab_bert)
    yield "bert", "bert", BertForTokenClassification, BertConfig(
        vocab_size=v, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
        intermediate_size=FFN, max_position_embeddings=POSITIONS, pad_token_id=0, **common)
    yield "distilbert", "bert", DistilBertForTokenClassification, DistilBertConfig(
        vocab_size=v, dim=HIDDEN, n_layers=LAYERS, n_heads=HEADS, hidden_dim=FFN,
        max_position_embeddings=POSITIONS, pad_token_id=0, **common)
    yield "deberta-v2", "bert", DebertaV2ForTokenClassification, DebertaV2Config(
        vocab_size=v, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
        intermediate_size=FFN, max_position_embeddings=POSITIONS, relative_attention=True,
        pos_att_type=["p2c", "c2p"], position_buckets=16, max_relative_positions=-1,
        position_biased_input=False, norm_rel_ebd="layer_norm", share_att_key=True,
        type_vocab_size=0, pad_token_id=0, hidden_act="gelu", **common)
    yield "modernbert", "bert", ModernBertForTokenClassification, ModernBertConfig(
        vocab_size=v, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
        intermediate_size=48, max_position_embeddings=POSITIONS, global_attn_every_n_layers=2,
        local_attention=8, pad_token_id=0, bos_token_id=2, eos_token_id=3, cls_token_id=2,
        sep_token_id=3, attn_implementation="eager", **common)
    yield "xlm-roberta", "roberta", XLMRobertaForTokenClassification, XLMRobertaConfig(
        vocab_size=len(vocab_roberta), hidden_size=HIDDEN, num_hidden_layers=LAYERS,
        num_attention_heads=HEADS, intermediate_size=FFN, max_position_embeddings=POSITIONS + 2,
        type_vocab_size=1, pad_token_id=1, bos_token_id=0, eos_token_id=2, **common)


def main() -> int:
    torch.manual_seed(SEED)
    bert_specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    roberta_specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    toks = {
        "bert": build_tokenizer(bert_specials, "[CLS]", "[SEP]", "[UNK]", "[PAD]"),
        "roberta": build_tokenizer(roberta_specials, "<s>", "</s>", "<unk>", "<pad>"),
    }
    pads = {"bert": 0, "roberta": 1}
    for family, tok_kind, cls, config in family_specs(toks["bert"].get_vocab(), toks["roberta"].get_vocab()):
        tok = toks[tok_kind]
        model = cls(config).eval()
        randomize(model)
        encs = [tok.encode(t) for t in TEXTS]
        width = max(len(e.ids) for e in encs)
        ids = torch.full((len(encs), width), pads[tok_kind], dtype=torch.long)
        mask = torch.zeros((len(encs), width), dtype=torch.long)
        for i, e in enumerate(encs):
            ids[i, : len(e.ids)] = torch.tensor(e.ids)
            mask[i, : len(e.ids)] = 1
        with torch.no_grad():
            logits = model(input_ids=ids, attention_mask=mask).logits
        out = OUT / family
        out.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(out, safe_serialization=True)
        config.to_json_file(out / "config.json", use_diff=False)
        tok.save(str(out / "tokenizer.json"))
        expected = {
            "texts": TEXTS,
            "input_ids": [e.ids for e in encs],
            "logits": [
                [[round(float(x), 7) for x in row] for row in logits[i, : len(e.ids)]]
                for i, e in enumerate(encs)
            ],
        }
        (out / "expected.json").write_text(json.dumps(expected) + "\n", encoding="utf-8")
        size = sum(f.stat().st_size for f in out.iterdir())
        sys.stdout.write(f"{family}: {size} bytes, max |logit| {logits.abs().max():.3f}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
