"""The default MiniLM: ONNX int8 on onnxruntime, exported from the packaged weights; fp32 torch selectable."""

from __future__ import annotations

import numpy as np
import pytest

from backends.embed.embedder import CachedEmbedder, MiniLMEmbedder, build_embedder, cache_key
from backends.embed.export import ensure_exported, model_dir, model_file
from backends.embed.onnx import OnnxMiniLMEmbedder, length_batches

TEXTS = [
    "I am moving to Hangzhou next month",
    "Next month I relocate to Hangzhou",
    "The stock market fell sharply today after the central bank raised interest rates again",
    "ok",
    "Caroline went to the LGBTQ support group on Friday and said it was really powerful for her",
]


def test_length_batches_sort_and_bound():
    lengths = [30, 3, 250, 12, 12, 7, 90, 3]
    groups = length_batches(lengths, batch=3, max_tokens=200)
    flat = [i for g in groups for i in g]
    assert sorted(flat) == list(range(len(lengths)))  # every text once
    assert [lengths[i] for i in flat] == sorted(lengths)  # by length
    assert all(len(g) <= 3 for g in groups)
    for g in groups:  # padded size bounded unless a text alone exceeds it
        assert len(g) == 1 or len(g) * max(lengths[i] for i in g) <= 200
    assert length_batches([], 8, 100) == []


def test_the_default_minilm_is_onnx_int8_and_fp32_stays_selectable(tmp_path):
    emb = build_embedder("minilm", tmp_path / "c.db", 64)
    assert isinstance(emb, CachedEmbedder) and isinstance(emb.inner, OnnxMiniLMEmbedder)
    assert emb.inner.precision == "int8" and emb.inner._model is None  # nothing loaded at construction
    assert emb.name == "all-MiniLM-L6-v2" and emb.dim == 384 and emb.abstain_cosine == 0.4
    fp32 = build_embedder("minilm-fp32", None, 64)
    assert isinstance(fp32.inner, MiniLMEmbedder)
    # the two variants never share cached vectors
    assert cache_key(emb.cache_name, False, "x") != cache_key(fp32.cache_name, False, "x")
    with pytest.raises(ValueError, match="minilm-fp32"):
        build_embedder("minilm-int4", None, 8)


def test_model_cache_dir_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMSTREAM_MODEL_CACHE", str(tmp_path / "m"))
    assert model_dir() == tmp_path / "m" and not (tmp_path / "m").exists()  # nothing created by asking
    monkeypatch.delenv("MEMSTREAM_MODEL_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert model_file("int8") == tmp_path / "xdg" / "memstream" / "models" / model_file("int8").name
    with pytest.raises(ValueError):
        model_file("int4")


@pytest.fixture(scope="module")
def fp32_torch():
    return MiniLMEmbedder(16)


@pytest.mark.slow
async def test_int8_agrees_with_fp32_and_ranks_the_same(minilm, fp32_torch):
    q8 = await minilm.embed(TEXTS)
    q32 = await fp32_torch.embed(TEXTS)
    assert q8.shape == (5, 384) and q8.dtype == np.float32
    assert np.allclose(np.linalg.norm(q8, axis=1), 1.0, atol=1e-5)
    cos = np.sum(q8 * q32, axis=1)
    assert cos.min() > 0.95, cos  # measured on LoCoMo turns: mean 0.991, 1st percentile 0.983
    assert q8[0] @ q8[1] > q8[0] @ q8[2] + 0.3  # a paraphrase still beats an unrelated sentence


@pytest.mark.slow
async def test_onnx_fp32_matches_torch_through_padding(fp32_torch):
    """Sorted, padded batches give each text the vector it gets alone, and the torch model's vector."""
    onnx = OnnxMiniLMEmbedder(4, precision="fp32", model_path=ensure_exported("fp32"))
    batched = await onnx.embed(TEXTS)
    alone = np.concatenate([await onnx.embed([t]) for t in TEXTS])
    assert np.allclose(batched, alone, atol=1e-5)
    assert np.allclose(batched, await fp32_torch.embed(TEXTS), atol=1e-4)


@pytest.mark.slow
def test_export_into_an_empty_dir_is_idempotent(tmp_path):
    """From the packaged weights only (no network): fp32 then int8; a second call reuses the files."""
    path = ensure_exported("int8", tmp_path)
    assert path == model_file("int8", tmp_path) and model_file("fp32", tmp_path).exists()
    assert path.stat().st_size < model_file("fp32", tmp_path).stat().st_size / 3  # int8 weights
    stamp = path.stat().st_mtime_ns
    assert ensure_exported("int8", tmp_path) == path and path.stat().st_mtime_ns == stamp
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary left
    from backends.embed.export import kept_graphs, main

    stale = tmp_path / "all-MiniLM-L6-v2.v1.int8.onnx"  # an earlier export version's file
    stale.write_bytes(b"old")
    main(["--dir", str(tmp_path)])  # kept graphs beside both models; the earlier version's files removed
    assert not stale.exists() and path.exists()
    main(["--force", "--dir", str(tmp_path)])  # exported again, each with its optimised graph, the old ones gone
    for precision in ("fp32", "int8"):
        assert len(kept_graphs(model_file(precision, tmp_path))) == 1


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["int8", "fp32"])
def test_the_kept_optimised_graph_gives_the_same_vectors(tmp_path, precision):
    """A session made from the optimised graph kept beside the model computes what a session of the model
    itself does, bit for bit, on one thread and on two; the file is written once, and a directory where it
    cannot be written leaves the model itself to load."""
    import shutil

    import onnxruntime as ort

    from backends.embed.export import ensure_optimized, kept_graphs, optimized_file, tokenizer_file
    from backends.embed.onnx import _feeds

    source = tmp_path / model_file(precision).name
    shutil.copyfile(ensure_exported(precision), source)
    kept = ensure_optimized(source)
    assert kept == optimized_file(source) != source and kept.exists()
    stamp = kept.stat().st_mtime_ns
    assert ensure_optimized(source) == kept and kept.stat().st_mtime_ns == stamp
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer_file()))
    tok.no_padding()
    ids = [e.ids for e in tok.encode_batch(TEXTS * 3)]
    feeds = _feeds(ids, list(range(len(ids))))
    for threads in (1, 2):
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        want = ort.InferenceSession(str(source), opts, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
        got = ort.InferenceSession(str(kept), opts, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
        assert np.array_equal(got, want)
    source.touch()  # the model written again: a graph of its own, the old one never read, and removed
    again = ensure_optimized(source)
    assert again not in (kept, source) and kept_graphs(source) == [again]
    blocked = tmp_path / "blocked"  # where the kept file should go, something that is not a file is in the way
    blocked.mkdir()
    shutil.copyfile(source, blocked / source.name)
    optimized_file(blocked / source.name).mkdir()
    assert ensure_optimized(blocked / source.name) == blocked / source.name


@pytest.mark.slow
async def test_a_damaged_kept_graph_is_dropped_and_the_model_loads(tmp_path):
    import shutil

    from backends.embed.export import optimized_file

    source = tmp_path / model_file("int8").name
    shutil.copyfile(ensure_exported("int8"), source)
    want = await OnnxMiniLMEmbedder(8, model_path=source).embed(TEXTS)  # keeps the optimised graph
    kept = optimized_file(source)
    assert kept.exists()
    kept.write_bytes(b"not a model")
    got = await OnnxMiniLMEmbedder(8, model_path=source).embed(TEXTS)
    assert np.array_equal(got, want) and not kept.exists()


async def test_a_texts_int8_vector_does_not_depend_on_what_it_is_batched_with():
    """onnxruntime's dynamic int8 ranges span the whole forward: batched, a text's vector moved with its
    batch mates (the Kafka worker and the embedded runner stored different memories). One text per forward
    (``solo``, the default) gives each text the same vector, bit for bit, in any call."""
    texts = [*TEXTS, "the plumber comes thursday between 8 and 10, someone has to be home to let him in"]
    alone = [np.asarray(await build_embedder("minilm", None, 64).embed([t]))[0] for t in texts]
    together = np.asarray(await build_embedder("minilm", None, 64).embed(texts))
    reversed_ = np.asarray(await build_embedder("minilm", None, 64).embed(texts[::-1]))[::-1]
    assert np.array_equal(together, np.stack(alone)) and np.array_equal(reversed_, together)
    batched = np.asarray(await build_embedder("minilm", None, 64, solo=False).embed(texts))
    assert not np.array_equal(batched, together)  # what solo is for: these texts do move when batched
    assert float((batched * together).sum(1).min()) > 0.95  # ... a little
