"""LoCoMo abstention figures (category 5 = should abstain): the configured decision, a model fitted in-sample
and one cross-validated by conversation, the recall they cost, and the attribution score's PR curve."""

from __future__ import annotations

from pathlib import Path

from bench.locomo_metrics import choose_threshold, pr_curve, prf

CATEGORIES = ("1", "2", "3", "4", "5")


def abstention_report(rows: list[dict], answered: list[dict], dev_chats: set[str]) -> dict:
    """Category 5 = should abstain, 1-4 = should answer. ``rows``: the routed run; ``answered``: the same
    questions without the abstention check (their recall when not abstained).

    - ``configured``: the decision as shipped (the calibrated model of the embedder, else the rules);
    - ``in_sample``: a model fitted on all these conversations, applied to them;
    - ``cv``: leave one conversation out: each conversation decided by a model (weights and threshold)
      fitted on the other conversations only (the top-level precision/recall/f1);
    - ``recall_all@10_1-4``: recall on the answerable questions when an abstention drops the items, for
      each decision, next to no abstention at all (and as served: other-subject items kept as related);
    - ``attribution_rule``: the former score (attribution only), threshold chosen on the dev half."""
    from retrieval.router.abstain import COMPONENTS, forced
    from retrieval.router.abstain_calib import fit_model, oof

    keep = [i for i, r in enumerate(rows) if r["category"] in CATEGORIES]
    rows, answered = [rows[i] for i in keep], [answered[i] for i in keep]
    positive = [r["category"] == "5" for r in rows]
    negatives = [i for i, p in enumerate(positive) if not p]

    def recall_if_dropped(decisions) -> float:
        return round(sum(0.0 if decisions[i] else answered[i]["turn_recall_all@10"] for i in negatives)
                     / max(1, len(negatives)), 4)  # fmt: skip

    def figures(decisions) -> dict:
        out = prf([float(d) for d in decisions], positive, 0.5)
        by_conv = {}
        for chat in sorted({r["chat_id"] for r in rows}):
            idx = [i for i, r in enumerate(rows) if r["chat_id"] == chat]
            by_conv[chat] = {k: v for k, v in prf([float(decisions[i]) for i in idx], [positive[i] for i in idx],
                                                  0.5).items() if k in ("precision", "recall", "f1")}  # fmt: skip
        abstained_answerable = sum(decisions[i] for i in negatives) / max(1, len(negatives))
        return out | {"answerable_abstained": round(abstained_answerable, 4),
                      "recall_all@10_1-4_if_abstained_items_dropped": recall_if_dropped(decisions),
                      "by_conversation": by_conv}  # fmt: skip

    configured = [bool(r["abstained"]) for r in rows]
    calib = [{"features": r["abstain_features"], "label": p, "group": r["chat_id"], "source": "locomo"}
             for r, p in zip(rows, positive, strict=True)]  # fmt: skip
    report: dict = {"configured": figures(configured) | {
        "decided_by": sorted({str(r.get("abstain_decided_by")) for r in rows})}}  # fmt: skip
    if calib and all(c["features"] for c in calib) and len({c["group"] for c in calib}) >= 2 and any(positive):
        model = fit_model("bench", COMPONENTS, calib)
        in_sample = [model.probability(c["features"]) > model.threshold or forced(c["features"]) for c in calib]
        _, cv = oof(COMPONENTS, calib)
        cv = [bool(d) or forced(c["features"]) for d, c in zip(cv, calib, strict=True)]
        groups = [c["group"] for c in calib]
        report["in_sample"] = figures(in_sample) | {"threshold": model.threshold}
        report["cv"] = figures([bool(d) for d in cv]) | {
            "how": "leave one conversation out: for each conversation, the model (weights, standardisation) "
                   "is fitted on the features of the other conversations' questions, its threshold chosen F1-best "
                   "on their out-of-fold probabilities (nested leave-one-out), then applied to the held-out one",
            "folds": sorted(set(groups))}  # fmt: skip
    else:
        report["in_sample"] = report["cv"] = {"note": "no abstention features in the trace / too few conversations"}
    head = report["cv"] if "f1" in report["cv"] else report["configured"]
    report |= {k: head[k] for k in ("precision", "recall", "f1")}
    report["recall_all@10_1-4"] = {
        "no_abstention": recall_if_dropped([False] * len(rows)),
        "as_served": round(sum(rows[i]["turn_recall_all@10"] for i in negatives) / max(1, len(negatives)), 4),
        **{name: report[name]["recall_all@10_1-4_if_abstained_items_dropped"]
           for name in ("configured", "in_sample", "cv") if "f1" in report[name]}}  # fmt: skip
    report["attribution_rule"] = attribution_rule(rows, dev_chats)
    return report


def attribution_rule(rows: list[dict], dev_chats: set[str]) -> dict:
    """The attribution score alone: the threshold chosen on the dev conversations, reported on the others."""
    dev = [r for r in rows if r["chat_id"] in dev_chats]
    test = [r for r in rows if r["chat_id"] not in dev_chats] or rows

    def split(rs):
        return [r["abstain_score"] for r in rs], [r["category"] == "5" for r in rs]

    threshold = choose_threshold(*split(dev or rows))
    held_out = prf(*split(test), threshold)
    return {
        **{k: held_out[k] for k in ("precision", "recall", "f1")}, "threshold": round(threshold, 4),
        "held_out": held_out, "all": prf(*split(rows), threshold),
        "dev_conversations": sorted(dev_chats), "test_conversations": sorted({r["chat_id"] for r in test}),
        "curve": [{k: p[k] for k in ("threshold", "precision", "recall", "f1")} for p in pr_curve(*split(rows))],
    }  # fmt: skip


def plot_abstention(report: dict, path: Path) -> None:
    """Precision/recall trade-off of the attribution score (all conversations), and the calibrated model's
    configured, in-sample and cross-validated points."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rule = report["attribution_rule"]
    curve = rule["curve"]
    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    ax.plot([p["recall"] for p in curve], [p["precision"] for p in curve], marker=".", lw=1,
            label="attribution score alone")  # fmt: skip
    for name, colour in (("configured", "red"), ("in_sample", "orange"), ("cv", "green")):
        point = report.get(name, {})
        if "f1" in point:
            ax.scatter([point["recall"]], [point["precision"]], color=colour, zorder=3,
                       label=f"{name}: F1 {point['f1']}")  # fmt: skip
    ax.set_xlabel("recall (category 5 abstained)")
    ax.set_ylabel("precision")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_title("LoCoMo abstention (category 5)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
