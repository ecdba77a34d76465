#!/usr/bin/env python3
"""Unit tests of tools/train_deid.py's pure parts (no torch, no tokenizer needed):
the window plan against src/inference/window.rs's cases, token labels from code-point
offsets, and the decoding that mirrors src/inference/aggregate.rs and classifier.rs.

    python3 tools/test_train_deid.py
"""

from __future__ import annotations

import math
import sys
import unittest
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import train_deid as T  # noqa: E402


def words(n: int, per_word: int) -> list:
    return [i // per_word for i in range(n)]


def onehot(label: str, p: float = 0.9) -> list[float]:
    """Logits whose softmax gives `label` probability about `p`."""
    n = len(T.LABELS)
    rest = (1 - p) / (n - 1)
    return [math.log(p if l == label else rest) for l in T.LABELS]


class Plan(unittest.TestCase):
    def test_short_sequences_are_one_window(self):
        self.assertEqual(T.plan(words(5, 1), 10, 4), [(0, 5, 0, 5)])

    def test_windows_cover_every_token_once_and_start_on_words(self):
        for n, per, budget, overlap in [(100, 3, 10, 4), (37, 1, 8, 3), (50, 7, 12, 6), (9, 2, 2, 1)]:
            wid = words(n, per)
            ws = T.plan(wid, budget, overlap)
            owned = [t for _, _, a, b in ws for t in range(a, b)]
            self.assertEqual(owned, list(range(n)))
            for s, e, _, _ in ws:
                self.assertLessEqual(e - s, budget)
                # A window opens on a word start wherever moving back to one keeps progress.
                if per <= budget - min(overlap, budget // 2):
                    self.assertTrue(s == 0 or wid[s] != wid[s - 1])
            for (_, e0, _, _), (s1, _, _, _) in zip(ws, ws[1:]):
                self.assertLessEqual(s1, e0)

    def test_overlap_is_shared(self):
        ws = T.plan(words(20, 1), 8, 4)
        self.assertEqual(ws[0][:2], (0, 8))
        self.assertEqual(ws[1][:2], (4, 12))
        self.assertEqual(ws[0][3], 6)  # the seam is the middle of the overlap
        self.assertEqual(ws[1][2], 6)


class Labels(unittest.TestCase):
    def test_b_then_i_over_the_span_and_its_punctuation(self):
        text = "Seen 03/04/2021 by Ann Lee."
        offsets = [(0, 4), (5, 7), (7, 8), (8, 10), (10, 11), (11, 15), (16, 18), (19, 22), (23, 26), (26, 27)]
        spans = [(5, 15, "DATE"), (19, 22, "FIRST_NAME"), (23, 26, "LAST_NAME")]
        got = [T.LABELS[i] for i in T.token_labels(offsets, spans)]
        self.assertEqual(got, ["O", "B-DATE", "I-DATE", "I-DATE", "I-DATE", "I-DATE", "O",
                               "B-FIRST_NAME", "B-LAST_NAME", "O"])
        self.assertEqual(text[5:15], "03/04/2021")

    def test_sub_words_continue_the_entity(self):
        offsets = [(0, 3), (3, 6), (7, 9)]
        got = [T.LABELS[i] for i in T.token_labels(offsets, [(0, 6, "LAST_NAME")])]
        self.assertEqual(got, ["B-LAST_NAME", "I-LAST_NAME", "O"])

    def test_unknown_labels_are_skipped_and_dob_folds(self):
        import json
        import tempfile

        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as fh:
            fh.write(json.dumps({"id": "a", "text": "DOB 1/2/33 pw x", "gold_spans": [
                {"start": 4, "end": 10, "label": "DATE_OF_BIRTH"},
                {"start": 14, "end": 15, "label": "PASSWORD"}]}) + "\n")
        skipped = Counter()
        docs = T.read_gold(Path(fh.name), skipped)
        Path(fh.name).unlink()
        self.assertEqual(docs[0]["spans"], [(4, 10, "DATE")])
        self.assertEqual(skipped, Counter({"unknown label PASSWORD": 1}))


class Decode(unittest.TestCase):
    id2label = dict(enumerate(T.LABELS))

    def test_first_sub_word_decides_and_bio_groups(self):
        text = "Ann Smithson 03/04"
        offsets = [(0, 3), (4, 9), (9, 12), (13, 15), (15, 16), (16, 18)]
        word_ids = [0, 1, 1, 2, 3, 4]
        rows = [onehot("B-FIRST_NAME"), onehot("B-LAST_NAME"), onehot("O"),
                onehot("B-DATE"), onehot("I-DATE"), onehot("I-DATE")]
        got = [(s, e, l) for s, e, l, _ in T.decode_spans(text, offsets, word_ids, rows, self.id2label)]
        self.assertEqual(got, [(0, 3, "FIRST_NAME"), (4, 12, "LAST_NAME"), (13, 18, "DATE")])

    def test_neighbours_without_a_gap_join(self):
        text = "abcdef"
        offsets = [(0, 3), (3, 6)]
        rows = [onehot("B-ID_NUM"), onehot("B-ID_NUM")]
        got = T.decode_spans(text, offsets, [0, 1], rows, self.id2label)
        self.assertEqual([(s, e, l) for s, e, l, _ in got], [(0, 6, "ID_NUM")])

    def test_char_figures(self):
        docs = [{"text": "Ann Lee x", "spans": [(0, 3, "FIRST_NAME"), (4, 7, "LAST_NAME")]}]
        fig = T.char_figures(docs, [[(0, 7, "FIRST_NAME", 0.9)]])
        self.assertAlmostEqual(fig["char_recall"], 1.0)
        self.assertAlmostEqual(fig["char_recall_typed"], 0.5)
        self.assertAlmostEqual(fig["char_precision"], 1.0)


class BaseTerms(unittest.TestCase):
    """The licence a fine-tune inherits from its base folder."""

    def setUp(self):
        import tempfile
        self.dir = Path(tempfile.mkdtemp())

    def tearDown(self):
        import shutil
        shutil.rmtree(self.dir)

    def test_the_fetched_minilm_base_keeps_the_cards_own_terms(self):
        (self.dir / "BASE.json").write_text("{}", encoding="utf-8")
        self.assertIsNone(T.base_terms(self.dir))

    def test_a_base_with_its_own_licence_passes_it_and_its_notice_on(self):
        # The bundled model, itself fine-tuned from Rampart: a model trained from it keeps
        # its notice, which carries Rampart's attribution.
        root = Path(__file__).resolve().parent.parent / "models" / "phiguard-deid"
        terms = T.base_terms(root)
        self.assertEqual(terms["license"], "cc-by-4.0")
        self.assertEqual(terms["name"], "phiguard-deid")
        self.assertIn("National Design Studio", terms["notice"])
        rec = {"model_name": "m", "created_utc": "2026-12-03T00:00:00Z", "base": {},
               "base_terms": terms}
        notice = T.render_notice(rec)
        self.assertIn("CC BY 4.0", notice)
        self.assertNotIn("Apache", notice)
        for line in (root / "NOTICE").read_text(encoding="utf-8").splitlines():
            self.assertIn(line.strip(), notice)

    def test_a_base_without_known_terms_is_refused(self):
        (self.dir / "config.json").write_text("{}", encoding="utf-8")
        with self.assertRaises(SystemExit):
            T.base_terms(self.dir)


if __name__ == "__main__":
    unittest.main()
