"""TIAGE reader and benchmark on a tiny hand-made file."""

from __future__ import annotations

import json

from bench import tiage

DATA = {
    "7": [
        ["do you like hiking in the mountains ?", "-1"],
        ["yes , mountains hiking is my favourite weekend thing", "0"],
        ["which mountains do you go hiking in ?", "0"],
        ["what kind of pizza toppings do you enjoy ?", "1"],
        ["pineapple pizza , always", "0"],
    ],
    "8": [
        ["i just adopted a cat", "-1"],
        ["what is the cat called ?", "0"],
    ],
}


def write(tmp_path):
    path = tmp_path / "anno_tiny.json"
    path.write_text(json.dumps(DATA))
    return path


def test_reader_and_gold_labels_skip_the_first_turn(tmp_path):
    dialogues = tiage.read_tiage(write(tmp_path))
    assert list(dialogues) == ["7", "8"] and dialogues["7"][3][:2] == (
        "what kind of pizza toppings do you enjoy ?",
        "1",
    )
    assert tiage.gold_labels(dialogues) == [False, False, True, False, False]


def test_dialogues_become_two_alternating_speakers_a_minute_apart(tmp_path):
    msgs = tiage.dialog_messages("7", tiage.read_tiage(write(tmp_path))["7"])
    assert [m.sender for m in msgs] == ["A", "B", "A", "B", "A"]
    assert (msgs[1].ts - msgs[0].ts).total_seconds() == 60
    assert len({m.message_id for m in msgs}) == 5 and msgs[0].chat_id == "tiage-7"


async def test_run_tiage_scores_memstream_and_always_shift(tmp_path):
    report = await tiage.run_tiage(write(tmp_path), tmp_path / "out", shift_threshold=0.05, compare=True)
    assert set(report["systems"]) == {"memstream", "shift-model", "affinity", "content-threshold", "always-shift"}
    always = report["systems"]["always-shift"]
    assert {k: always[k] for k in ("precision", "recall", "f1")} == {"precision": 20.0, "recall": 100.0, "f1": round(200 / 6, 2)}
    assert always["windowdiff"] > 0 and 0 <= report["systems"]["memstream"]["pk"] <= 1
    content = report["systems"]["content-threshold"]
    assert content["recall"] == 100.0  # the pizza turn shares no word with the hiking talk
    assert 0.0 <= report["systems"]["memstream"]["f1"] <= 100.0
    assert (tmp_path / "out" / "tiage.json").exists() and (tmp_path / "out" / "tiage.png").exists()


async def test_threshold_can_be_calibrated_on_a_training_file(tmp_path):
    path = write(tmp_path)
    report = await tiage.run_tiage(path, tmp_path / "out", train=path, compare=True)
    assert report["meta"]["threshold_source"].startswith("calibrated")
    assert report["systems"]["content-threshold"]["f1"] >= report["systems"]["always-shift"]["f1"]


def test_shift_model_training_writes_weights_the_segmenter_loads(tmp_path, capsys):
    from agents.segment_revise import REVISE_FEATURES
    from agents.segment_shift import SHIFT_FEATURES, ShiftWeights
    from bench import tiage_train

    path = write(tmp_path)
    out = tmp_path / "shift.json"
    argv = ["--data", str(path), "--dev", str(path), "--embedder", "none", "--folds", "2", "--out", str(out)]
    assert tiage_train.main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["turns"] == 5 and {"cv", "train_in_sample_none", "dev_anno_tiny_none"} <= set(report)
    assert {"f1", "pk", "windowdiff"} <= set(report["cv_scores"]["none"])  # held out, as the bench scores
    w = ShiftWeights.model_validate_json(out.read_text())
    assert set(w.weights) == set(SHIFT_FEATURES) and w.meta["data_sha256"] and "tiage_train" in w.meta["command"]
    assert set(w.revise) == set(REVISE_FEATURES)


def test_dialogue_text_files_carry_speakers_and_shift_marks(tmp_path):
    path = tmp_path / "d.txt"
    path.write_text("# a comment\n## one\nA: 你好，我想查话费\nA: 这个月多了五十\n* B: 另外，宽带能升级吗\n## two\nA: hi\nB: hello\n")
    dialogues = tiage.read_tiage(path)
    assert [t.label for t in dialogues["one"]] == ["-1", "0", "1"] and tiage.gold_labels(dialogues) == [False, True, False]
    assert [m.sender for m in tiage.dialog_messages("one", dialogues["one"])] == ["A", "A", "B"]


def test_the_shipped_dev_dialogues_read_with_shifts_in_every_dialogue():
    from pathlib import Path

    for name in ("zh_dev.txt", "en_dev.txt"):
        dialogues = tiage.read_tiage(Path(__file__).parents[3] / "bench" / "dialogues" / name)
        assert len(dialogues) >= 15
        assert all(1 <= sum(t.label == "1" for t in turns) <= 4 for turns in dialogues.values())
