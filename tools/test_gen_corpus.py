#!/usr/bin/env python3
"""Unit tests of tools/gen_corpus.py (python3 alone): the committed corpora regenerate byte
for byte from the commands in tests/fixtures/corpus/README.md, and the optional Safe Harbor
16-18 lines (`--rare-identifiers`) are labelled spans whose offsets hold their text."""

import json
import sys
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import gen_corpus  # noqa: E402

CORPUS = HERE.parent / "tests" / "fixtures" / "corpus"


def lines(split, count, seed, prefix, rare=0.0):
    return [json.dumps(d, ensure_ascii=False) + "\n"
            for d in gen_corpus.generate(split, count, seed, prefix, rare)]


class Regenerates(unittest.TestCase):
    def test_committed_corpora_are_what_the_generator_writes(self):
        for split, count, seed, prefix in [("dev", 400, 1, "dev"), ("test", 400, 2, "test"),
                                           ("dev", 8, 7, "sample")]:
            got = "".join(lines(split, count, seed, prefix))
            want = (CORPUS / f"{prefix}.jsonl").read_text(encoding="utf-8")
            self.assertEqual(got, want, f"{prefix}.jsonl no longer regenerates")


class RareIdentifiers(unittest.TestCase):
    def test_lines_are_labelled_id_num_at_their_offsets(self):
        docs = list(gen_corpus.generate("dev", 200, 5, "rare", 1.0))
        cues = ("photograph", "Photo on file", "Image ", "Voiceprint", "Fingerprint", "Biometric",
                "Retinal", "subject ID", "Study code", "badge", "Trial participant")
        for d in docs:
            last = d["text"].rstrip("\n").rsplit("\n", 1)[-1]
            self.assertTrue(any(c in last for c in cues), last)
            start = len(d["text"].rstrip("\n")) - len(last)
            spans = [s for s in d["gold_spans"] if s["start"] >= start]
            self.assertTrue(spans, last)
            for s in spans:
                self.assertEqual(s["label"], "ID_NUM")
                self.assertEqual(d["text"][s["start"]:s["end"]], s["text"])

    def test_off_by_default_and_a_share_when_asked(self):
        cues = ("Clinical photographs:", "Photo on file:", "uploaded to the chart",
                "Full-face photograph", "Voiceprint enrolment", "Fingerprint template",
                "Biometric ID:", "Retinal scan reference", "study, subject ID", "Study code:",
                "Visitor badge", "Trial participant")

        def with_line(docs):
            return sum(1 for d in docs if any(c in d["text"] for c in cues))

        self.assertEqual(with_line(gen_corpus.generate("dev", 200, 3, "x")), 0)
        share = with_line(gen_corpus.generate("dev", 200, 3, "x", 0.35))
        self.assertTrue(20 <= share <= 90, share)


class PhiFree(unittest.TestCase):
    def test_texts_have_no_spans_unique_ids_and_no_pool_names(self):
        docs = list(gen_corpus.phi_free("dev", 300, 5, "x"))
        self.assertEqual(len({d["id"] for d in docs}), 300)
        names = {n for n, *_ in gen_corpus.P.FIRST_NAMES} | set(gen_corpus.P.LAST_NAMES)
        for d in docs:
            self.assertEqual(d["gold_spans"], [])
            self.assertEqual(d["note_type"], "phi_free")
            self.assertTrue(d["text"].strip())
            words = set(d["text"].replace(".", " ").replace(",", " ").split())
            self.assertFalse(words & names, d["text"])

    def test_the_notes_do_not_change(self):
        # Their own random stream: asking for them leaves the notes of a seed as they were.
        before = list(gen_corpus.generate("dev", 20, 4, "x"))
        list(gen_corpus.phi_free("dev", 50, 4, "x"))
        self.assertEqual(before, list(gen_corpus.generate("dev", 20, 4, "x")))
        self.assertEqual(list(gen_corpus.phi_free("dev", 10, 4, "x")),
                         list(gen_corpus.phi_free("dev", 10, 4, "x")))


if __name__ == "__main__":
    unittest.main()
