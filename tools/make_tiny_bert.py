#!/usr/bin/env python3
"""Writes the tiny BERT token classifier used as the hub test fixture.

The files are real: `config.json` (a BertForTokenClassification config with `id2label`),
`tokenizer.json` (a WordPiece tokenizer in the `tokenizers` JSON format) and
`model.safetensors` (every tensor of a one-layer BERT, written in the safetensors format by
hand, float32, seeded weights). The output is byte-for-byte reproducible, so the files in
`tests/fixtures/hub/phiguard-test/tiny-bert/` can be regenerated and compared.

Usage: python3 tools/make_tiny_bert.py [OUT_DIR]
Python 3 standard library only.
"""

import json
import random
import struct
import sys
from pathlib import Path

HIDDEN = 8
LAYERS = 1
HEADS = 2
INTERMEDIATE = 16
MAX_POSITIONS = 32
TYPE_VOCAB = 2

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = [
    "patient", "john", "smith", "was", "seen", "on", "at", "the", "clinic", "by",
    "dr", "mr", "mrs", "born", "call", "date", "name", "jan", "feb", "march",
    ".", ",", ":", "/", "-", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9",
    "##s", "##0", "##1", "##2", "##9",
]
VOCAB = SPECIAL + WORDS
ID2LABEL = ["O", "B-FIRST_NAME", "I-FIRST_NAME", "B-DATE", "I-DATE"]


def config() -> dict:
    return {
        "architectures": ["BertForTokenClassification"],
        "model_type": "bert",
        "vocab_size": len(VOCAB),
        "hidden_size": HIDDEN,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS,
        "intermediate_size": INTERMEDIATE,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "max_position_embeddings": MAX_POSITIONS,
        "type_vocab_size": TYPE_VOCAB,
        "initializer_range": 0.02,
        "layer_norm_eps": 1e-12,
        "pad_token_id": 0,
        "position_embedding_type": "absolute",
        "id2label": {str(i): l for i, l in enumerate(ID2LABEL)},
        "label2id": {l: i for i, l in enumerate(ID2LABEL)},
    }


def tokenizer() -> dict:
    def special(tok: str) -> dict:
        return {"id": VOCAB.index(tok), "content": tok, "single_word": False, "lstrip": False,
                "rstrip": False, "normalized": False, "special": True}

    def tmpl(*parts):
        out = []
        for p in parts:
            if p in ("A", "B"):
                out.append({"Sequence": {"id": p, "type_id": 0 if p == "A" else 1}})
            else:
                out.append({"SpecialToken": {"id": p, "type_id": 0}})
        return out

    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [special(t) for t in SPECIAL],
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                       "strip_accents": None, "lowercase": True},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": tmpl("[CLS]", "A", "[SEP]"),
            "pair": tmpl("[CLS]", "A", "[SEP]", "B", "[SEP]"),
            "special_tokens": {
                t: {"id": t, "ids": [VOCAB.index(t)], "tokens": [t]} for t in ("[CLS]", "[SEP]")
            },
        },
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": {t: i for i, t in enumerate(VOCAB)}},
    }


def tensors() -> list:
    """(name, shape, kind) in checkpoint order; kind is 'rand', 'ones' or 'zeros'."""
    h, i, v = HIDDEN, INTERMEDIATE, len(VOCAB)
    out = [
        ("bert.embeddings.word_embeddings.weight", [v, h], "rand"),
        ("bert.embeddings.position_embeddings.weight", [MAX_POSITIONS, h], "rand"),
        ("bert.embeddings.token_type_embeddings.weight", [TYPE_VOCAB, h], "rand"),
        ("bert.embeddings.LayerNorm.weight", [h], "ones"),
        ("bert.embeddings.LayerNorm.bias", [h], "zeros"),
    ]
    for n in range(LAYERS):
        p = f"bert.encoder.layer.{n}."
        for proj in ("query", "key", "value"):
            out.append((p + f"attention.self.{proj}.weight", [h, h], "rand"))
            out.append((p + f"attention.self.{proj}.bias", [h], "zeros"))
        out += [
            (p + "attention.output.dense.weight", [h, h], "rand"),
            (p + "attention.output.dense.bias", [h], "zeros"),
            (p + "attention.output.LayerNorm.weight", [h], "ones"),
            (p + "attention.output.LayerNorm.bias", [h], "zeros"),
            (p + "intermediate.dense.weight", [i, h], "rand"),
            (p + "intermediate.dense.bias", [i], "zeros"),
            (p + "output.dense.weight", [h, i], "rand"),
            (p + "output.dense.bias", [h], "zeros"),
            (p + "output.LayerNorm.weight", [h], "ones"),
            (p + "output.LayerNorm.bias", [h], "zeros"),
        ]
    out += [
        ("classifier.weight", [len(ID2LABEL), h], "rand"),
        ("classifier.bias", [len(ID2LABEL)], "zeros"),
    ]
    return out


def safetensors_bytes() -> bytes:
    rng = random.Random(20251129)
    header, blobs, offset = {}, [], 0
    for name, shape, kind in tensors():
        count = 1
        for d in shape:
            count *= d
        if kind == "rand":
            values = [round(rng.gauss(0.0, 0.2), 6) for _ in range(count)]
        else:
            values = [1.0 if kind == "ones" else 0.0] * count
        data = struct.pack(f"<{count}f", *values)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    header["__metadata__"] = {"format": "pt"}
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * ((8 - len(raw) % 8) % 8)
    return struct.pack("<Q", len(raw)) + raw + b"".join(blobs)


def main() -> None:
    default = Path(__file__).resolve().parent.parent / "tests/fixtures/hub/phiguard-test/tiny-bert"
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else default
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(config(), indent=2) + "\n")
    (out / "tokenizer.json").write_text(json.dumps(tokenizer(), indent=2) + "\n")
    (out / "model.safetensors").write_bytes(safetensors_bytes())


if __name__ == "__main__":
    main()
