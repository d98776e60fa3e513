"""The scoreboard of claims: every verdict the book's chapters printed, read back from
the records they left, never retyped (the synthesis chapter,
``chapters/synthesis.ipynb``).

Three records, each written by the book's own scripts:

- the executed notebook's metadata (``metadata["ptlm_book"]["verdicts"]``, written by
  ``scripts/execute.py``): the verdicts at ``"tiny"``, with the seeds as written;
- ``book/data/replication.json`` (``scripts/replicate.py``): the same chapter run again
  with a disjoint seed set, claim by claim (``"main"`` and ``"fresh"``);
- ``benchmarks/chapter_times_small.json`` (``benchmarks/chapter_times.py --scale
  small``): the verdicts of a run at ``"small"``, where one exists.

The chapters come from ``_toc.yml`` (:func:`toc_chapters`), so a chapter added to the
book appears here by itself; one without a record yet is reported as "not yet run",
never dropped. Verdicts are paired across records by their claim, in order (a claim
printed twice is paired occurrence by occurrence), as ``book/replication.ipynb`` and
``book/scales.md`` pair them.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import defaultdict
from pathlib import Path

from .verdict import CANNOT_TEST, CATEGORIES, OPPOSITE, SHOWS_UP

__all__ = [
    "NOT_RUN",
    "NO_VERDICTS",
    "toc_chapters",
    "chapter_record",
    "section_of",
    "scoreboard",
    "replication_summary",
    "pretraining_gains",
    "essay",
    "stored_benchmarks",
    "records_digest",
]

ROOT = Path(__file__).resolve().parents[1]
NOT_RUN = "not yet run"  # a chapter in _toc.yml without an executed record
NO_VERDICTS = "no verdict printed"  # executed, but it tests no claim by the rule
SKIP = ("synthesis",)  # the chapters that are not about a model (this one)


def _root(root) -> Path:
    if root is None:  # the checkout the package sits in, or the folder run from
        here = [ROOT, Path.cwd(), *Path.cwd().parents]
        root = next((p for p in here if (p / "_toc.yml").is_file()), ROOT)
    root = Path(root)
    if not (root / "_toc.yml").is_file():
        raise ValueError(
            f"root must be the book's folder (with _toc.yml), got {root}: the "
            "synthesis reads the book's records, so run it in a checkout of the book"
        )
    return root


def toc_chapters(root=None) -> list[dict]:
    """The model chapters of ``_toc.yml``, in the book's order: ``{"stem", "file",
    "part", "title"}`` per ``chapters/*`` entry (the synthesis itself left out; the
    title is the notebook's first heading, ``None`` while the file does not exist).
    Chapter: the synthesis."""
    root = _root(root)
    out, part = [], ""
    # _toc.yml's parts and chapters, read line by line (no YAML library needed: the
    # file is ours and keeps this shape)
    for line in (root / "_toc.yml").read_text(encoding="utf-8").splitlines():
        m = re.match(r"\s*- caption:\s*(.+?)\s*$", line)
        if m:
            part = m.group(1).strip("\"'")
            continue
        m = re.match(r"\s*- file:\s*(chapters/\S+?)\s*$", line)
        if not m:
            continue
        file = m.group(1)
        stem = file.rsplit("/", 1)[-1]
        if stem in SKIP:
            continue
        nb = root / f"{file}.ipynb"
        out.append(
            {
                "stem": stem,
                "file": f"{file}.ipynb",
                "part": part,
                "title": _title(nb) if nb.is_file() else None,
            }
        )
    return out


def _title(nb: Path) -> str | None:
    cells = json.loads(nb.read_text(encoding="utf-8")).get("cells", [])
    for c in cells:
        if c["cell_type"] == "markdown":
            m = re.search(r"^# (.+)$", "".join(c["source"]), re.M)
            if m:
                return m.group(1).strip()
    return None


def make_id(text: str) -> str:
    """The anchor Sphinx (docutils' ``make_id``) gives a heading: "## 5. Does it
    help?" -> ``does-it-help``. Chapter: the synthesis (links to sections)."""
    s = unicodedata.normalize("NFKD", str(text)).encode("ascii", "ignore").decode()
    s = "-".join(re.sub(r"[^a-z0-9]+", " ", s.lower()).split())
    return re.sub(r"^[-0-9]+|-+$", "", s)


def section_of(nb: dict, claim: str, start: int = 0) -> tuple[str, str] | None:
    """``(heading, anchor)`` of the section that printed ``claim``: the nearest ``##``
    heading above the first cell (from cell ``start`` on) whose output names the claim,
    else the first whose code or output names its metric (a table of
    :func:`~ptlm_lite.verdict.beats_baseline` shows conditions, not claims); ``None`` if
    neither. Chapter: the synthesis."""
    found = _section(nb, claim, start)
    return found[:2] if found else None


def _section(nb: dict, claim: str, start: int = 0) -> tuple[str, str, int] | None:
    """:func:`section_of` with the index of the cell found, so that the next verdict,
    printed later, is looked for from there on."""
    # the metric follows the first " on " after " beats " ("trained on SOP beats the
    # baseline on SOP accuracy": SOP accuracy)
    against = claim.split(" beats ", 1)[-1]
    m = re.search(r" on (.+?)(?: \((?:higher|lower) is better\))?$", against)
    tests = [lambda src, out: claim in out]
    if m:
        metric = m.group(1)
        short = re.split(r",| \(", metric)[0]  # "NSP accuracy (vs the majority ..."
        tests.append(lambda src, out: metric in src or metric in out)
        tests.append(lambda src, out: short in src)
    for test in tests:
        for i, c, heading in _code_cells(nb):
            if i < start or not heading:
                continue
            src = "".join(c.get("source", []))
            out = json.dumps(c.get("outputs", []), ensure_ascii=False)
            if test(src, out):
                return heading, make_id(heading), i
    return None


def _code_cells(nb: dict):
    """``(index, cell, heading)`` of each code cell, with the nearest ``##`` (or
    deeper) heading above it (None before the first)."""
    heading = None
    for i, c in enumerate(nb.get("cells", [])):
        if c["cell_type"] == "markdown":
            found = re.findall(r"^##+ (.+)$", "".join(c.get("source", [])), re.M)
            heading = found[-1].strip() if found else heading
        elif c["cell_type"] == "code":
            yield i, c, heading


def _section_at(nb: dict, count) -> tuple[str, str, int] | None:
    """``(heading, anchor, index)`` of the section holding the code cell whose
    execution count is ``count`` (a verdict's ``cell``, logged as it was made); None
    when there is no such cell or no heading above it."""
    if not isinstance(count, int):
        return None
    for i, c, heading in _code_cells(nb):
        if c.get("execution_count") == count:
            return (heading, make_id(heading), i) if heading else None
    return None


def chapter_record(stem: str, root=None) -> dict:
    """What the records hold for one chapter: ``{"status", "tiny", "fresh", "small",
    "small_status", "seconds", "nb"}``: the verdicts at tiny (the notebook), of the
    fresh-seed run (replication.json), and of the small run (``None`` where there is
    no such record). ``status`` is "ok", :data:`NOT_RUN` or :data:`NO_VERDICTS`.
    Chapter: the synthesis."""
    root = _root(root)
    path = root / "chapters" / f"{stem}.ipynb"
    rec = {"status": NOT_RUN, "tiny": [], "fresh": None, "small": None}
    rec.update(small_status="no small run", seconds=None, nb=None)
    if path.is_file():
        nb = json.loads(path.read_text(encoding="utf-8"))
        meta = nb.get("metadata", {}).get("ptlm_book", {})
        if "verdicts" in meta:
            rec.update(nb=nb, tiny=list(meta["verdicts"]), seconds=meta.get("seconds"))
            rec["status"] = "ok" if meta["verdicts"] else NO_VERDICTS
    rep = _json(root / "book" / "data" / "replication.json")
    entry = (rep or {}).get("chapters", {}).get(stem)
    if entry and "fresh" in entry:
        rec["fresh"] = entry["fresh"]
    small = _json(root / "benchmarks" / "chapter_times_small.json")
    for ch in (small or {}).get("chapters", []):
        if ch.get("file") == f"chapters/{stem}.ipynb":
            rec["small"] = ch.get("verdicts") or []
            rec["small_status"] = str(ch.get("status", "?"))
    return rec


def records_digest(root=None) -> str:
    """Twelve hex digits of everything the synthesis reads from the records: each
    chapter's verdicts and code hash (its cells place the verdicts in sections), the
    fresh-seed record of every chapter but the synthesis, and the small-run record.
    The synthesis prints it; ``tests/test_synthesis.py`` fails when the committed
    synthesis printed another, i.e. when it shows records that have changed since."""
    import hashlib

    root = _root(root)
    h = hashlib.sha256()
    for c in toc_chapters(root):
        path = root / c["file"]
        meta = {}
        if path.is_file():
            nb = json.loads(path.read_text(encoding="utf-8"))
            meta = nb.get("metadata", {}).get("ptlm_book", {})
        row = [c["stem"], meta.get("verdicts"), meta.get("code_hash")]
        h.update(json.dumps(row, sort_keys=True).encode())
    rep = (_json(root / "book" / "data" / "replication.json") or {}).get("chapters", {})
    rep = {k: v for k, v in rep.items() if k not in SKIP}  # not the synthesis' own
    h.update(json.dumps(rep, sort_keys=True).encode())
    small = root / "benchmarks" / "chapter_times_small.json"
    h.update(small.read_bytes() if small.is_file() else b"-")
    return h.hexdigest()[:12]


def _json(path: Path):
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _pair(main: list, other: list | None) -> list:
    """For each verdict of ``main``, the one of ``other`` with the same claim and the
    same occurrence number (``None`` where there is none)."""
    if other is None:
        return [None] * len(main)
    pool = defaultdict(list)
    for v in other:
        pool[v["claim"]].append(v)
    seen: dict[str, int] = defaultdict(int)
    out = []
    for v in main:
        k = seen[v["claim"]]
        seen[v["claim"]] += 1
        got = pool.get(v["claim"], [])
        out.append(got[k] if k < len(got) else None)
    return out


def _interval(v) -> str:
    return f"{v['effect']:+.3g} [{v['low']:+.3g}, {v['high']:+.3g}]"


def scoreboard(root=None, chapters=None, names=None):
    """The scoreboard, one row per verdict a chapter printed (a chapter without any:
    one row saying so): ``model``, ``chapter``, ``claim``, ``experiment`` (the section
    that printed it, with its anchor in ``link``), ``tiny`` (the verdict), ``seeds``,
    ``effect``, ``interval``, ``min effect``, ``fresh seeds`` (the fresh run's verdict),
    ``replicated`` ("yes" when both runs give the same verdict, "no", or "–"),
    ``small`` (the small run's verdict, or why there is none). ``chapters``: entries
    of :func:`toc_chapters` (default: all); ``names``: {stem: model name}. A pandas
    DataFrame. Chapter: the synthesis."""
    import pandas as pd

    root = _root(root)
    chapters = toc_chapters(root) if chapters is None else chapters
    rows = []
    for ch in chapters:
        stem = ch["stem"]
        rec = chapter_record(stem, root)
        name = (names or {}).get(stem) or ch.get("title") or stem
        base = dict(model=name, chapter=stem, link=f"{stem}.html")
        if not rec["tiny"]:
            rows.append(
                {**base, "claim": f"({rec['status']})", "experiment": "", "tiny": ""}
                | dict(status=rec["status"])
            )
            continue
        fresh = _pair(rec["tiny"], rec["fresh"])
        small = _pair(rec["tiny"], rec["small"])
        sec, start = None, 0
        for v, f, s in zip(rec["tiny"], fresh, small):
            # verdicts print in order: each is looked for from the cell of the one
            # before it on, and one whose section is not found by its text belongs to
            # the section of the one before it
            at = _section_at(rec["nb"], v.get("cell"))
            sec = at or _section(rec["nb"], v["claim"], start) or sec
            start = sec[2] if sec else start
            row = dict(base, claim=v["claim"], experiment=sec[0] if sec else "")
            if sec:
                row["link"] = f"{stem}.html#{sec[1]}"
            row.update(
                tiny=v["verdict"],
                seeds=v.get("seeds"),
                effect=v["effect"],
                interval=_interval(v),
            )
            row["min effect"] = v.get("min_effect")
            row["fresh seeds"] = f["verdict"] if f else "no fresh run"
            same = f is not None and f["verdict"] == v["verdict"]
            row["replicated"] = "–" if f is None else "yes" if same else "no"
            if s is not None:
                row["small"] = s["verdict"]
            elif rec["small"] is None:
                row["small"] = "no small run"
            elif rec["small_status"] == "ok":  # it ran, but claims this one otherwise
                row["small"] = "small run: no claim worded the same"
            else:
                row["small"] = f"small run: {rec['small_status']}"
            row["status"] = "ok"
            rows.append(row)
    cols = ["model", "chapter", "claim", "experiment", "tiny", "small", "seeds"]
    cols += ["effect", "interval", "min effect", "fresh seeds", "replicated"]
    cols += ["link", "status"]
    return pd.DataFrame(rows).reindex(columns=cols)


def replication_summary(board) -> dict:
    """Counts over a :func:`scoreboard`: ``verdicts``, ``paired`` (with a fresh-seed
    run), ``same`` (same verdict), by verdict at tiny (``by_verdict``: {verdict:
    (paired, same)}), the chapters ``not_run`` / ``no_verdicts``, ``small`` (verdicts
    with a run at ``small``) and ``small_missing`` ({why: models} without one).
    Chapter: the synthesis."""
    ok = board[board["status"] == "ok"]
    paired = ok[ok["replicated"] != "–"]
    by = {}
    for v, g in paired.groupby("tiny"):
        by[v] = (len(g), int((g["replicated"] == "yes").sum()))
    return dict(
        verdicts=len(ok),
        paired=len(paired),
        same=int((paired["replicated"] == "yes").sum()),
        by_verdict=by,
        shows_up=int((ok["tiny"] == SHOWS_UP).sum()),
        not_run=board.loc[board["status"] == NOT_RUN, "chapter"].tolist(),
        no_verdicts=board.loc[board["status"] == NO_VERDICTS, "chapter"].tolist(),
        small=int(ok["small"].isin(CATEGORIES).sum()),
        small_missing=_small_missing(ok),
    )


def _small_missing(ok) -> dict[str, list[str]]:
    """{why: models} for the chapters with no verdict at ``small``: ``"no small run"``
    or ``"small run: <status>"`` (a timeout, an error), as the scoreboard's column
    says."""
    out: dict[str, list[str]] = {}
    for _, g in ok.groupby("chapter", sort=False):
        if not g["small"].isin(CATEGORIES).any():
            model = str(g["model"].iloc[0]).split(":")[0]  # a title: its short name
            out.setdefault(str(g["small"].iloc[0]), []).append(model)
    return out


_SMALL_WHY = {
    "no small run": "Never run at `small`",
    "small run: timeout": "Stopped by the time limit at `small`",
    "small run: no claim worded the same": "Run at `small`, with claims worded "
    "otherwise (sizes that grow with the scale)",
}


def pretraining_gains(board) -> dict:
    """{chapter: "task: effect [low, high] (verdict)"} from a scoreboard's rows that
    compare a trained model with the same network's random weights ("pre-trained beats
    random init on ...", "text infilling beats random weights on ...", "ELMo layer 2
    beats ELMo layer 2, random weights on ...", "SiATL beats from scratch on ..."):
    what the chapters measured of
    pre-training against a random-weights model of the same shape, read from their
    records. Chapter: the synthesis."""
    out: dict[str, list[str]] = {}
    for _, r in board.iterrows():
        if " beats " not in str(r["claim"]):
            continue
        who, rest = str(r["claim"]).split(" beats ", 1)
        against, _, task = rest.partition(" on ")
        if (
            not task
            or who.startswith("random")
            or who == "from scratch"
            or not re.search(r"\brandom (?:init|weights)\b|\bfrom scratch\b", against)
        ):
            continue  # "LSH beats random": random buckets, not random weights
        task = task.split(" (higher")[0].split(" (lower")[0]
        task = task if who == "pre-trained" else f"{task}, {who}"
        out.setdefault(r["chapter"], []).append(
            f"{task}: {r['interval']} ({r['tiny']})"
        )
    return {k: "; ".join(v) for k, v in out.items()}


def _share(n: int, of: int) -> str:
    return f"{n} of {of}" + (f" ({n / of:.0%})" if of else "")


def essay(models, board) -> str:
    """A few paragraphs in the book's words, every number computed from ``models``
    (:func:`ptlm_lite.synthesis.model_table`) and ``board`` (:func:`scoreboard`):
    which declared contexts the probe confirms, what held at the tiny scale, what
    replicated. Markdown. Chapter: the synthesis."""
    s = replication_summary(board)
    probed = models[models["confirmed"] != "–"]
    yes = probed[probed["confirmed"] == "yes"]
    no = probed[probed["confirmed"] == "no"]
    cached = models[models["measured on"].str.startswith("cached", na=False)]
    if not len(probed):
        out = ["**What the probe says.** No model was probed in this run."]
    else:
        out = [
            "**What the probe says.** Of the "
            f"{len(models)} model chapters in the table of "
            f"contents, {len(probed)} have a declared context and a probe; for "
            f"{_share(len(yes), len(probed))} the context the probe measured is the "
            "one "
            "the articles declare"
            + (
                f", and for {', '.join(no['model'])} it is not."
                if len(no)
                else ": no declared direction was contradicted."
            )
            + f" {len(cached)} of them were measured on the pre-trained models the "
            f"chapters cached ({', '.join(cached['model'])}); the rest on a "
            "random-weights model of the same class or shape, which is enough for a "
            "question the architecture "
            "answers, not for any question of quality."
        ]
    by = s["by_verdict"]
    counts = {v: int((board["tiny"] == v).sum()) for v in CATEGORIES}
    parts = ", ".join(f"{counts[v]} *{v}*" for v in CATEGORIES)
    out.append(
        f"**What held at the tiny scale.** The chapters tested {s['verdicts']} claims "
        f"by the book's rule: {parts}. A claim that *shows up* here showed up in a "
        "model of a few hundred thousand weights trained for seconds; one that is *too "
        "noisy to tell* is not refuted, it was not measured precisely enough; and "
        f"where it says *{CANNOT_TEST}*, no model compared learnt the task beyond what "
        "a model that learns nothing scores (the majority answer, a constant "
        "summary), so the comparison says nothing about the claim."
    )
    ok = board[board["status"] == "ok"]
    family = dict(zip(models["chapter"], models["family"]))
    held = ok.assign(family=ok["chapter"].map(family), held=ok["tiny"] == SHOWS_UP)
    rate = held.groupby("family", sort=False)["held"].agg(["sum", "count"])
    rate = rate.assign(share=rate["sum"] / rate["count"]).sort_values("share")
    against = ok.loc[ok["tiny"] == OPPOSITE, "model"]
    out.append(
        (
            "By family, the share of claims that showed up runs from "
            f"{rate['share'].iloc[0]:.0%} ({rate.index[0]}) to "
            f"{rate['share'].iloc[-1]:.0%} ({rate.index[-1]}). "
            if len(rate)
            else "No chapter has printed a verdict yet, so no family has a share. "
        )
        + (
            f"The opposite of the claim showed up {len(against)} times, in "
            f"{', '.join(dict.fromkeys(against))}: there the small scale disagrees "
            "with the claim as the chapter tested it (not every tested claim is the "
            "paper's own: each chapter says which are checks of its own set-up)."
            if len(against)
            else "No claim came out the opposite way."
        )
    )
    rep = [f"{_share(same, n)} *{v}*" for v, (n, same) in sorted(by.items())]
    out.append(
        "**What replicated.** With a fresh set of seeds, "
        f"{_share(s['same'], s['paired'])}"
        f" of the verdicts came out in the same category (by verdict: "
        f"{'; '.join(rep)} kept their category)."
    )
    small = (
        f"{_share(s['small'], s['verdicts'])} verdicts have a run at `small`; the "
        "others wait for a GPU run."
        if s["small"]
        else "No verdict has a completed run at `small` yet, so nothing here says "
        "whether a claim survives a larger model: that column waits for a GPU run."
    )
    small += "".join(
        f" {_SMALL_WHY.get(why, f'At `small`, {why}')}: {', '.join(chapters)}."
        for why, chapters in s["small_missing"].items()
    )
    missing = s["not_run"] + s["no_verdicts"]
    tail = (
        f" Not yet run: {', '.join(missing)}; they appear here when executed."
        if missing
        else ""
    )
    out.append(f"**What is still open.** {small}{tail}")
    return "\n\n".join(out)


def stored_benchmarks(root=None):
    """The training throughputs that ``benchmarks/bench_train.py`` stored (every
    ``bench_train*.json`` under ``benchmarks/``): one row per model and preset, with
    the device, precision, sequence length, and tokens per second of ``ptlm_lite``
    and of Hugging Face's implementation (medians). Empty when none is stored.
    Chapter: the synthesis."""
    import pandas as pd

    root = _root(root)
    rows = []
    for path in sorted((root / "benchmarks").rglob("bench_train*.json")):
        rec = _json(path)
        dev = rec.get("device") or {}
        name = dev.get("name") if isinstance(dev, dict) else str(dev)
        for r in rec.get("rows", []):
            impl = r.get("impl", {})
            rows.append(
                {"model": r.get("model"), "preset": r.get("preset"),
                 "device": name or rec.get("cpu"), "precision": rec.get("dtype"),
                 "seq_len": r.get("seq_len"), "batch": r.get("batch"),
                 "tokens/s (ptlm_lite)": impl.get("ptlm_lite", {}).get("median"),
                 "tokens/s (transformers)": impl.get("transformers", {}).get("median"),
                 "file": str(path.relative_to(root))}
            )  # fmt: skip
    return pd.DataFrame(rows)
