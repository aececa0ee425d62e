"""IRC disentanglement reader and the benchmark run on a tiny hand-made log."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from types import SimpleNamespace

import numpy as np

from agents.reply_linker import FEATURES
from bench import irc

LOG = """\
=== alice [~a@example.net]  has joined #ubuntu
[23:58] <alice> hi, my wifi is broken on 8.04?
[23:59] <bob> alice: which card?
=== carol is now known as carol_
[00:00] <alice> bob, intel 3945
=== bob thinks about it
[00:01]  * dave waves
[00:01] <dave> anyone using zfs?
[00:02] <bob> alice: try the iwlwifi firmware package
[00:02] <erin> dave: yes, zfs on root
"""
ANNOTATION = """\
1 2 -
2 4 -
3 3 -
4 5 -
6 6 -
7 7 -
4 8 -
7 9 -
"""


def write(tmp_path, name="2008-12-11_23"):
    (tmp_path / f"{name}.ascii.txt").write_text(LOG)
    (tmp_path / f"{name}.annotation.txt").write_text(ANNOTATION)
    return tmp_path / f"{name}.ascii.txt", tmp_path / f"{name}.annotation.txt"


def test_lines_are_parsed_by_kind(tmp_path):
    f = irc.read_irc_file(*write(tmp_path))
    kinds = [(ln.kind, ln.nick) for ln in f.lines]
    assert kinds[:8] == [
        ("system", "alice"),
        ("message", "alice"),
        ("message", "bob"),
        ("system", "carol"),
        ("message", "alice"),
        ("action", "bob"),
        ("action", "dave"),
        ("message", "dave"),
    ]
    assert f.lines[5].text == "thinks about it" and f.lines[6].text == "waves"


def test_times_are_monotone_cross_midnight_and_anchored_on_the_file_date(tmp_path):
    f = irc.read_irc_file(*write(tmp_path))
    stamps = [ln.ts for ln in f.lines]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
    assert f.cutoff == 2
    assert f.lines[2].ts == datetime(2008, 12, 11, 23, 59, tzinfo=UTC)  # the first annotated line
    assert f.lines[4].ts.date().isoformat() == "2008-12-12"
    assert f.lines[0].ts == datetime(2008, 12, 11, 23, 58, tzinfo=UTC)  # untimed: the next minute, spread
    assert f.lines[1].ts == datetime(2008, 12, 11, 23, 58, 30, tzinfo=UTC)


def test_addressees_are_known_nicks_only(tmp_path):
    f = irc.read_irc_file(*write(tmp_path))
    assert [ln.addressee for ln in f.lines] == [
        None,
        None,
        "alice",
        None,
        "bob",
        None,
        None,
        None,
        "alice",
        "dave",
    ]
    msg = irc.to_message(f, f.lines[2])
    assert msg.mentions == ["alice"] and msg.sender == "bob" and msg.message_id == "2"
    assert msg.metadata == {"line": 2, "kind": "message"}


def test_gold_clusters_are_components_of_annotated_lines(tmp_path):
    f = irc.read_irc_file(*write(tmp_path))
    assert (2, 1) in f.gold_links and (3, 3) in f.gold_links
    assert f.gold_clusters() == [{2, 4, 5, 8}, {3}, {6}, {7, 9}]


async def test_run_irc_writes_every_system_and_metric(tmp_path):
    write(tmp_path)
    out = tmp_path / "out"
    report = await irc.run_irc(tmp_path, out)
    assert set(report["systems"]) == {"memstream", "previous-message", "reply-mention-only", "time-window"}
    keys = {"vi", "one_to_one", "exact_p", "exact_r", "exact_f1", "link_p", "link_r", "link_f1"}
    for scores in report["systems"].values():
        assert set(scores) == keys and all(0 <= v <= 100 for v in scores.values())
    assert json.loads((out / "irc.json").read_text())["systems"] == report["systems"]
    assert (out / "irc.png").stat().st_size > 0
    mem = report["systems"]["memstream"]
    assert mem["one_to_one"] >= report["systems"]["previous-message"]["one_to_one"]


def test_main_runs_from_the_command_line(tmp_path, capsys):
    write(tmp_path)
    assert irc.main(["--data", str(tmp_path), "--out", str(tmp_path / "o")]) == 0
    assert "memstream" in capsys.readouterr().out


async def test_lines_missing_from_the_annotation_are_not_scored(tmp_path):
    write(tmp_path)
    ann = tmp_path / "2008-12-11_23.annotation.txt"
    ann.write_text("".join(ln + "\n" for ln in ANNOTATION.splitlines() if ln != "6 6 -"))
    f = irc.read_irc_dir(tmp_path)[0]
    assert 6 not in f.annotated and f.annotated == [2, 3, 4, 5, 7, 8, 9]
    report = await irc.run_irc(tmp_path, tmp_path / "out")
    assert set(report["systems"]) == set(irc.SYSTEMS)


def test_factoid_prefix_and_inline_mentions(tmp_path):
    log = (
        "[10:00] <Hikaru79> my sound is gone after the upgrade\n"
        "[10:01] <ubottu> hi all\n"
        "[10:02] <bob> !alsa | Hikaru79\n"
        "[10:03] <carol> hik: try alsamixer, as ubottu said\n"
    )
    (tmp_path / "2009-01-01_10.ascii.txt").write_text(log)
    (tmp_path / "2009-01-01_10.annotation.txt").write_text("0 2 -\n0 3 -\n1 1 -\n")
    f = irc.read_irc_file(tmp_path / "2009-01-01_10.ascii.txt", tmp_path / "2009-01-01_10.annotation.txt")
    assert [ln.addressee for ln in f.lines] == [None, None, "Hikaru79", "Hikaru79"]
    assert f.lines[3].mentions == ["ubottu"]  # named mid-sentence, not the addressee


def test_linker_training_learns_from_the_annotation(tmp_path):
    from bench import train_linker

    write(tmp_path)
    files = irc.read_irc_dir(tmp_path)
    exs = train_linker.examples(files[0], None)
    assert exs and all(e.x.shape[0] == len(e.ids) and e.ids[-1] == e.line for e in exs)
    assert any(e.gold[-1] for e in exs)  # some lines start a conversation (self-links)
    for hidden in (0, 4):  # linear, and with a hidden layer
        params = train_linker.fit(exs, hidden=hidden, epochs=30)
        links = train_linker.predict(exs, params)
        report = train_linker.score(files, links)
        assert set(report) >= {"link_f1", "vi", "exact_f1"} and report["link_f1"] >= 50.0


def test_an_ensemble_of_seeds_is_one_wider_network_scoring_their_mean():
    from bench import linker_fit

    rng = np.random.default_rng(0)
    exs = []
    for _ in range(40):
        n = int(rng.integers(2, 8))
        x = rng.normal(size=(n, len(FEATURES))).astype(np.float32)
        gold = np.zeros(n, dtype=bool)
        gold[int(np.argmax(x[:, 0]))] = True  # the gold parent has the largest first feature
        exs.append(SimpleNamespace(x=x, gold=gold))
    single = [linker_fit.fit(exs, hidden=3, epochs=60, seeds=1)]
    both = linker_fit.fit(exs, hidden=3, epochs=60, seeds=2)
    second = linker_fit.fit_one(*linker_fit.pad(exs), hidden=3, epochs=60, seed=1)
    x = exs[0].x
    mean = (single[0].scores(x) + second.scores(x)) / 2
    assert both.w1.shape == (len(FEATURES), 6) and np.allclose(both.scores(x), mean, atol=1e-4)
    # the shipped format reads the same network back
    back = linker_fit.Params.from_weights(both.to_weights(60))
    assert np.allclose(back.scores(x.astype(np.float64)), both.scores(x), atol=1e-3)
    hits = sum(int(np.argmax(both.scores(e.x)) == np.argmax(e.gold)) for e in exs)
    assert hits >= 30  # it learned the rule


def test_linker_training_refits_on_its_own_links_and_writes_a_loadable_weight_file(tmp_path, capsys):
    import json

    from agents.reply_linker import FEATURES, LinkerWeights
    from bench import train_linker

    data = tmp_path / "data"
    data.mkdir()
    write(data)
    out = tmp_path / "w.json"
    argv = ["--data", str(data), "--embedder", "none", "--rounds", "2", "--hidden", "4", "--epochs", "3", "--out", str(out)]  # fmt: skip
    assert train_linker.main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert {"round1_h4_in-sample_no-vector", "round2_h4_in-sample_no-vector"} <= set(report)
    w = LinkerWeights.model_validate_json(out.read_text())
    assert set(w.weights) == set(FEATURES) and w.meta["rounds"] == 2
    assert w.hidden is not None and set(w.hidden.w1) == set(FEATURES) and len(w.hidden.v) == 4
    # the examples come from the segmenter running with the linker, so the window carries chosen parents
    assert any(w.weights[name] != 0.0 for name in ("cand_answered_sender", "linked_pair", "cand_root"))


def test_server_mode_lines_are_not_turns_and_empty_lines_stay_messages(tmp_path):
    log = "=== mode/#ubuntu [+o alice]  by ChanServ\n[10:00] <alice> \n[10:01] <bob> alice: hello?\n"
    (tmp_path / "2009-01-01_10.ascii.txt").write_text(log)
    (tmp_path / "2009-01-01_10.annotation.txt").write_text("0 0 -\n1 1 -\n1 2 -\n")
    f = irc.read_irc_file(tmp_path / "2009-01-01_10.ascii.txt", tmp_path / "2009-01-01_10.annotation.txt")
    assert [ln.kind for ln in f.lines] == ["system", "message", "message"]
    assert irc.to_message(f, f.lines[1]).text == "..." and irc.to_message(f, f.lines[2]).sender == "bob"


def test_linker_training_chooses_on_dev_and_records_provenance(tmp_path, capsys):
    from agents.reply_linker import LinkerWeights
    from bench import train_linker

    train, dev = tmp_path / "train", tmp_path / "dev"
    train.mkdir()
    dev.mkdir()
    write(train)
    write(dev, "2009-02-02_10")
    out = tmp_path / "w.json"
    argv = ["--data", str(train), "--dev", str(dev), "--embedder", "none", "--init", "zero", "--rounds", "2",
            "--hidden", "0", "3", "--epochs", "3", "--warmup", "5", "--keep", str(tmp_path / "all"),
            "--out", str(out)]  # fmt: skip
    assert train_linker.main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    kept = {p.stem: LinkerWeights.model_validate_json(p.read_text()) for p in (tmp_path / "all").iterdir()}
    assert set(kept) == {"round1_h0", "round2_h0", "round2_h3"} and kept["round2_h3"].meta["tag"] == "round2_h3"
    assert kept["round2_h0"].hidden is None and kept["round2_h3"].hidden is not None
    dev_rows = {k for k in report if k.endswith("_dev")}
    assert dev_rows == {"round1_h0_dev", "round2_h0_dev", "round2_h3_dev"}  # the first setting chains rounds
    assert report["chosen"] in {k.removesuffix("_dev") for k in dev_rows} - {"round1_h0"}
    meta = LinkerWeights.model_validate_json(out.read_text()).meta
    assert meta["n_files"] == 1 and len(str(meta["files_sha256"])) == 64 and meta["init"] == "zero"
    assert str(meta["command"]).startswith("python -m bench.train_linker --data") and meta["date"]
    assert meta["chosen_by"] == "dev"


def test_linker_training_can_choose_by_cross_validation_on_train(tmp_path, capsys):
    from agents.reply_linker import LinkerWeights
    from bench import train_linker

    train = tmp_path / "train"
    train.mkdir()
    write(train)
    write(train, "2009-02-02_10")
    out = tmp_path / "w.json"
    argv = ["--data", str(train), "--embedder", "none", "--rounds", "1", "--hidden", "0", "2", "--epochs", "3",
            "--cv", "2", "--out", str(out)]  # fmt: skip
    assert train_linker.main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert {"round1_h0_cv2", "round1_h2_cv2"} <= set(report)
    assert "link_f1" in report["round1_h0_cv2"]["no-vector"]
    meta = LinkerWeights.model_validate_json(out.read_text()).meta
    assert meta["chosen_by"] == "cv2 on train" and meta["chosen"] in {"round1_h0", "round1_h2"}
