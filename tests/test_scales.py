"""The page "Does it hold at a larger scale?" (book/scales.md) and what feeds it:
``benchmarks/chapter_times.py`` runs notebooks N at a time, records the verdicts each
printed, stops a notebook at its time limit, and writes the page from the chapters'
stored (tiny) verdicts and the small run's JSON. Toy notebooks only: seconds, not
minutes.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import chapter_times as C


def test_the_scales_page_is_written_from_the_current_records():
    assert C.SCALES_PAGE.read_text() == C.scales_page(C.load_small()), (
        "book/scales.md is not what the chapters' stored verdicts and "
        "benchmarks/chapter_times_small.json give: python benchmarks/chapter_times.py "
        "--scales-page"
    )


def _v(claim: str, verdict: str, effect: float = 0.1) -> dict:
    return {
        "claim": claim,
        "verdict": verdict,
        "effect": effect,
        "low": effect - 0.05,
        "high": effect + 0.05,
        "min_effect": 0.05,
        "seeds": 3,
        "examples": None,
    }


TINY = [
    {
        "file": "chapters/alpha.ipynb",
        "title": "Alpha",
        "verdicts": [
            _v("a1", "shows up"),
            _v("a2", "too noisy to tell"),
            _v("a3", "shows up"),
        ],
    },
    {
        "file": "chapters/beta.ipynb",
        "title": "Beta",
        "verdicts": [_v("b1", "shows up"), _v("b2", "shows up")],
    },
    {"file": "chapters/gamma.ipynb", "title": "Gamma", "verdicts": [_v("c1", "x")]},
]


def _record(file, title, status, seconds, verdicts, **extra) -> dict:
    return {
        "file": file,
        "title": title,
        "status": status,
        "seconds": seconds,
        "peak_rss_mb": 900,
        "scale": "small",
        "device": "cuda",
        "cuda_peak_mb": 1234.5,
        "verdicts": verdicts,
        **extra,
    }


SMALL = {
    "date": "2030-01-02 03:04 UTC",
    "machine": {
        "cpu": "Some CPU",
        "cores": 16,
        "memory_gib": 128.0,
        "platform": "Linux",
        "python": "3.11.7",
        "torch": "2.13.0+cu128",
        "torch_threads": 4,
        "cpu_capability": "AVX512",
        "gpu": "NVIDIA H100 80GB HBM3",
        "gpu_count": 1,
        "gpu_memory_gib": 79.2,
        "cuda": "12.8",
        "gpu_capability": "9.0",
        "bf16": True,
    },
    "scale": "small",
    "jobs": 4,
    "seed_set": "main",
    "max_steps": None,
    "chapters": [
        # alpha: one kept, one changed, one flipped
        _record(
            "chapters/alpha.ipynb",
            "Alpha",
            "ok",
            123.4,
            [
                _v("a1", "shows up"),
                _v("a2", "does not show up"),
                _v("a3", "the opposite shows up", -0.2),
            ],
        ),
        # beta: stopped after its first verdict; gamma: not run at all
        _record(
            "chapters/beta.ipynb", "Beta", "timeout", 600.2, [_v("b1", "shows up")]
        ),
    ],
}


def test_the_page_labels_what_ran_and_what_did_not():
    text = C.scales_page(SMALL, TINY)
    assert "Does it hold at a larger scale?" in text
    assert "NVIDIA H100 80GB HBM3" in text and "CUDA 12.8" in text
    assert "2030-01-02 03:04 UTC" in text and "ran 4 at a time" in text
    assert "| claim | tiny (CPU) | small (GPU) | same category? |" in text
    # alpha: paired claim by claim
    assert "| yes |" in text and "| **no** |" in text and "**no: flipped**" in text
    # beta: its first verdict paired, the second never reached
    assert "not reached: timed out after 600 s" in text
    # gamma: shown as not run, never invented
    assert "| not run at small | – |" in text and "not run at `small`" in text
    assert "**2 of 4 verdicts measured at both scales (50%) kept their category" in text
    assert "1 flipped between" in text
    assert "2 `tiny` verdicts have no `small` counterpart" in text
    assert "(not run: gamma; timed out: beta)" in text
    # the time table: a row for each notebook that ran (timed out included), none
    # for gamma
    times = text.split("## How long the small run took", 1)[1]
    assert "| 123 | 1,234 | 900 | ok |" in times
    assert "| 600 | 1,234 | 900 | timed out after 600 s |" in times
    assert "Gamma" not in times and "gamma" not in times


def test_without_a_small_run_the_page_says_so_and_shows_tiny_only():
    text = C.scales_page(None, TINY)
    assert "No run at the `small` scale exists yet" in text
    assert "small (GPU)" not in text and "| claim | tiny (CPU) |" in text
    assert "6 verdicts in 3 chapters at `tiny`" in text


def _toy(path: pathlib.Path, title: str, code: str) -> pathlib.Path:
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell(f"# {title}"),
        nbformat.v4.new_code_cell('SCALE = "tiny"', metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell(code),
    ]
    nbformat.write(nb, path)
    return path


VERDICT = """\
from ptlm_lite.verdict import verdict
verdict({{"a": [0.80, 0.82, 0.81], "b": [0.60, 0.62, {b}]}}, better="a", worse="b",
        min_effect=0.05, metric="{metric}")
"""


def test_jobs_runs_notebooks_side_by_side_and_records_their_verdicts(tmp_path):
    pytest.importorskip("nbclient")
    one = _toy(tmp_path / "one.ipynb", "Toy one", VERDICT.format(b=0.61, metric="m1"))
    two = _toy(tmp_path / "two.ipynb", "Toy two", VERDICT.format(b=0.90, metric="m2"))
    out = tmp_path / "small.json"
    before = one.read_bytes()
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "chapter_times.py"), str(one),
         str(two), "--jobs", "2", "--scale", "small", "--json", str(out),
         "--notebook-timeout", "120"],
        check=False, capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert one.read_bytes() == before  # executed in memory, never written
    result = json.loads(out.read_text())
    assert result["jobs"] == 2 and result["scale"] == "small"
    assert result["seed_set"] == (os.environ.get("PTLM_SEED_SET") or "main")
    assert "gpu" in result["machine"] and "cuda" in result["machine"]
    first, second = result["chapters"]
    assert [first["title"], second["title"]] == ["Toy one", "Toy two"]
    for record, metric, category in (
        (first, "m1", "shows up"),
        (second, "m2", "too noisy to tell"),
    ):
        assert record["status"] == "ok", record
        assert record["scale"] == "small"  # set in the parameters cell
        assert record["device"] in ("cpu", "cuda", "mps")
        assert (record["cuda_peak_mb"] is None) == (record["device"] != "cuda")
        [v] = record["verdicts"]
        assert metric in v["claim"] and v["verdict"] == category


def test_a_notebook_past_its_time_is_stopped_with_what_it_printed(tmp_path):
    pytest.importorskip("nbclient")
    line = {"claim": "printed before the wait", "verdict": "shows up"}
    path = _toy(
        tmp_path / "slow.ipynb",
        "Slow toy",
        "import json, os, time\n"
        "with open(os.environ['PTLM_VERDICT_LOG'], 'a') as f:\n"
        f"    f.write(json.dumps({line!r}) + '\\n')\n"
        "time.sleep(600)",
    )
    record = C.run_notebook(path, timeout=120, notebook_timeout=3)
    assert record["status"] == "timeout", record
    assert 2.5 <= record["seconds"] < 30
    assert record["verdicts"] == [line]
    assert record["device"] is None  # the busy kernel was killed, not asked


def test_a_run_of_an_older_version_of_a_chapter_says_so():
    file = "chapters/gpt.ipynb"
    now = C.current_code_hash(file)
    tiny = [{"file": file, "title": "GPT", "verdicts": [_v("g1", "shows up")]}]
    for recorded, stale in ((now, False), ("0123456789abcdef", True), (None, True)):
        small = {
            **SMALL,
            "chapters": [
                _record(file, "GPT", "ok", 1.0, [_v("g1", "shows up")])
                | {"code_hash": recorded}
            ],
        }
        text = C.scales_page(small, tiny)
        assert ("the chapter has changed since this run" in text) == stale, recorded


def test_merge_keeps_the_chapters_a_run_did_not_repeat():
    """A GPU session runs a few chapters (``--merge``): the others keep their records,
    each labelled with the run that made it, and the page names both runs."""
    later = dict(
        SMALL,
        date="2030-02-03 04:05 UTC",
        jobs=2,
        chapters=[_record("chapters/beta.ipynb", "Beta", "ok", 99.0, [])],
    )
    merged = C.merge(SMALL, later)
    files = {c["file"]: c["run"] for c in merged["chapters"]}
    assert files == {"chapters/alpha.ipynb": 0, "chapters/beta.ipynb": 1}
    assert [r["date"] for r in merged["runs"]] == [SMALL["date"], later["date"]]
    beta = next(c for c in merged["chapters"] if c["file"] == "chapters/beta.ipynb")
    assert beta["status"] == "ok" and merged["date"] == later["date"]
    text = C.scales_page(merged, TINY)
    assert "Run 1 of 2 (`chapters/alpha.ipynb`)" in text
    assert "Run 2 of 2 (`chapters/beta.ipynb`)" in text and "ran 2 at a time" in text
    # running every chapter again leaves one run
    again = dict(later, chapters=SMALL["chapters"])
    assert len(C.merge(merged, again)["runs"]) == 1


def test_a_kernel_that_dies_on_start_is_started_once_more():
    """28 kernels started at once on a GPU machine: one died before answering, another
    did not answer in nbclient's 60 s. chapter_times starts such a kernel once more
    (and says so in the record); a second failure is the notebook's error."""
    import contextlib

    class Client:
        def __init__(self, failures):
            self.failures, self.starts, self.kc = failures, 0, self

        @contextlib.contextmanager
        def setup_kernel(self):
            self.starts += 1
            if self.starts <= self.failures:
                raise RuntimeError("Kernel died before replying to kernel_info")
            yield

        def kernel_info(self):
            return "msg"

        def wait_for_reply(self, msg):
            return msg

    record, ran = {}, []
    client = Client(failures=1)
    with C._started_kernel(client, record):
        ran.append(client.starts)
    assert ran == [2]
    assert "Kernel died" in record["kernel_restarts"][0]

    with (
        pytest.raises(RuntimeError, match="Kernel died"),
        C._started_kernel(Client(failures=2), {}),
    ):
        raise AssertionError("the body must not run")


def test_the_timings_page_marks_rows_of_an_older_chapter():
    """book/timings.md: a time measured on an older version of a notebook (or before
    the records kept its hash) says so, and the page counts such rows."""
    file = "chapters/gpt.ipynb"
    machine = {"cpu": "x", "cores": 2, "memory_gib": 1, "platform": "Linux-x",
               "python": "3", "torch": "2", "torch_threads": 1,
               "cpu_capability": "AVX2"}  # fmt: skip
    for recorded, stale in (
        (C.current_code_hash(file), False),
        ("0123456789abcdef", True),
        (None, True),
    ):
        row = {"file": file, "title": "GPT", "status": "ok", "seconds": 30.0,
               "peak_rss_mb": 500, "run": 0, "code_hash": recorded}  # fmt: skip
        result = {"date": "2026-11-26 12:00 UTC", "machine": machine, "jobs": 1,
                  "scale": "tiny", "chapters": [row],
                  "runs": [{"date": "2026-11-26 12:00 UTC", "machine": machine}]}  # fmt: skip
        text = C.page(result)
        assert ("the chapter has changed since" in text) == stale, recorded
        assert ("1 of the 1 rows measured an older version" in text) == stale
        assert "2026-11-26, AVX2" in text


def test_a_deadline_starts_no_notebook_too_late_and_cuts_the_others(
    tmp_path, monkeypatch
):
    """``--deadline`` (a GPU session's fixed device time): a notebook whose run would
    start with less than DEADLINE_MIN_START seconds left is left out of the results, not
    recorded as run; one started gets the time left as its limit, and a timeout under
    that cut is recorded as stopped by the deadline, and the page says so."""
    seen, clock = [], [0.0]

    def fake_run(path, timeout, scale=None, notebook_timeout=None):
        seen.append((C.rel(path), notebook_timeout))
        clock[0] += 50.0  # each notebook takes 50 s of the deadline
        return {"file": C.rel(path), "title": "", "status": "timeout",
                "seconds": 50.0, "peak_rss_mb": None, "verdicts": []}  # fmt: skip

    monkeypatch.setattr(C, "run_notebook", fake_run)
    monkeypatch.setattr(C.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(C, "table", lambda result: "")
    out = tmp_path / "small.json"
    books = [C.ROOT / "book" / f for f in ("widgets.ipynb", "replication.ipynb")]
    argv = [*map(str, books), "--deadline", "90", "--notebook-timeout", "600"]
    C.main([*argv, "--json", str(out), "--no-page"])
    # the first ran with the 90 s left (< its own 600 s); 40 s were left for the second
    assert seen == [("book/widgets.ipynb", 90.0)]
    result = json.loads(out.read_text())
    assert [c["file"] for c in result["chapters"]] == ["book/widgets.ipynb"]
    assert result["chapters"][0]["stopped_by_deadline"] is True
    assert result["deadline"] == 90.0
    status = C._small_status(result["chapters"][0])
    assert status == "stopped unfinished after 50 s (the run's deadline)"
    # without a deadline the notebook's own limit stands and a timeout is a timeout
    seen.clear()
    C.main(
        [str(books[0]), "--notebook-timeout", "600", "--json", str(out), "--no-page"]
    )
    assert seen == [("book/widgets.ipynb", 600.0)]
    record = json.loads(out.read_text())["chapters"][0]
    assert "stopped_by_deadline" not in record
    assert C._small_status(record) == "timed out after 50 s"


def test_merge_from_adds_a_fetched_run_to_the_small_record(tmp_path, monkeypatch):
    """A GPU session fetches the JSON its run wrote there; --merge-from merges it into
    the small record (as --merge would have there) with a note, and writes no page with
    --no-page."""
    record, fetched = tmp_path / "small.json", tmp_path / "fetched.json"
    record.write_text(json.dumps(SMALL))
    later = dict(
        SMALL,
        date="2030-02-03 04:05 UTC",
        chapters=[_record("chapters/beta.ipynb", "Beta", "ok", 99.0, [])],
    )
    fetched.write_text(json.dumps(later))
    argv = ["--merge-from", str(fetched), "--json", str(record), "--no-page"]
    assert C.main([*argv, "--note", "three at a time"]) == 0
    merged = json.loads(record.read_text())
    assert [r["date"] for r in merged["runs"]] == [SMALL["date"], later["date"]]
    assert merged["runs"][1]["note"] == "three at a time"
    beta = next(c for c in merged["chapters"] if c["file"] == "chapters/beta.ipynb")
    assert beta["status"] == "ok" and beta["run"] == 1
