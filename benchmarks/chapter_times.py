"""How long each chapter takes: execute every notebook of the book fresh, record time
and memory.

    python benchmarks/chapter_times.py                    # every notebook in _toc.yml (+ new chapters/)
    python benchmarks/chapter_times.py chapters/gpt.ipynb # only these
    python benchmarks/chapter_times.py --scale small      # set SCALE = "small" in the parameters cell
    python benchmarks/chapter_times.py --page-only        # only rewrite book/timings.md from the JSON

Each notebook runs in a fresh kernel (nbclient), offline (``HF_HUB_OFFLINE=1`` and
friends) and with its own empty temporary ``PTLM_CACHE``, so nothing trained or
downloaded earlier is reused: the time is what a reader who opens only that chapter
waits. Notebooks are read and executed in memory and never written back (a file that
changes on disk meanwhile, because someone else re-executed it, is noted in the record).

Recorded per notebook: wall time of all cells (kernel start-up excluded), peak resident
memory of the kernel process (``VmHWM`` from ``/proc/<pid>/status``, read just before
the kernel shuts down; ``ru_maxrss`` of the children where /proc does not exist), and
the load average. The results go to ``benchmarks/chapter_times.json`` with a description
of the machine; then ``book/timings.md``, the book's page of timings, is written from
that file (a Markdown page with a table, which the book renders as an HTML table; it has
no code, so no launch button either).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import re
import resource
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "chapter_times.json"
# the page that shows the results (written from OUT)
PAGE = ROOT / "book" / "timings.md"
OFFLINE = {
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
}


def notebooks() -> list[tuple[pathlib.Path, bool]]:
    """``(path, in_toc)``: the notebooks of ``_toc.yml`` in its order, then chapters/
    not yet in it.
    """
    toc = (ROOT / "_toc.yml").read_text()
    names = re.findall(r"^\s*root:\s*([^\s#]+)", toc, re.M) + re.findall(
        r"file:\s*([^\s#]+)", toc
    )
    out = []
    for name in names:
        p = ROOT / (name if name.endswith(".ipynb") else name + ".ipynb")
        if p.exists() and p != PAGE and p not in [q for q, _ in out]:
            out.append((p, True))
    listed = {p for p, _ in out}
    out += [
        (p, False)
        for p in sorted((ROOT / "chapters").glob("*.ipynb"))
        if p not in listed
    ]
    return out


def rel(path: pathlib.Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def title(nb) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            m = re.search(r"^#\s+(.+)$", cell.source, re.M)
            if m:
                return m.group(1).strip()
    return ""


def peak_rss_mb(pid: int | None) -> float | None:
    if pid is not None:
        try:
            for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
        except OSError:
            pass
    return None


def load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def set_scale(nb, scale: str) -> None:
    """Append ``SCALE = "<scale>"`` to the cell tagged ``parameters`` (what papermill
    would do).
    """
    for cell in nb.cells:
        if cell.cell_type == "code" and "parameters" in cell.get("metadata", {}).get(
            "tags", []
        ):
            cell.source += f'\nSCALE = "{scale}"  # set by benchmarks/chapter_times.py'
            return
    raise ValueError("the notebook has no cell tagged 'parameters' to set SCALE in")


def run_notebook(path: pathlib.Path, timeout: int, scale: str | None = None) -> dict:
    """Execute one notebook in memory in a fresh kernel with an empty cache; return its
    record.
    """
    import nbformat
    from nbclient import NotebookClient

    before = path.read_bytes()
    nb = nbformat.reads(before.decode(), as_version=4)
    if scale:
        set_scale(nb, scale)
    record = {"file": rel(path), "title": title(nb), "status": "ok"}
    env_before = dict(os.environ)
    cache = tempfile.TemporaryDirectory(prefix="ptlm_cache_")
    # the kernel inherits this environment
    os.environ.update(OFFLINE, PTLM_CACHE=cache.name)
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    record["load_average_start"] = load_average()
    try:
        client.reset_execution_trackers()
        with client.setup_kernel():
            pid = getattr(client.km.provisioner, "pid", None)
            client.wait_for_reply(client.kc.kernel_info())
            start = time.perf_counter()
            try:
                for index, cell in enumerate(nb.cells):
                    client.execute_cell(cell, index)
            # a failing cell: record it, keep timing the other notebooks
            except Exception as e:
                record["status"] = "error"
                record["error"] = (
                    f"{type(e).__name__}: "
                    f"{str(e).strip().splitlines()[-1][:300] if str(e).strip() else ''}"
                )
            record["seconds"] = round(time.perf_counter() - start, 1)
            record["peak_rss_mb"] = peak_rss_mb(pid)
    finally:
        os.environ.clear()
        os.environ.update(env_before)
        cache.cleanup()
    # no /proc: the largest child so far (an upper bound)
    if record["peak_rss_mb"] is None:
        record["peak_rss_mb"] = (
            resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        )
    if record["peak_rss_mb"] is not None:
        record["peak_rss_mb"] = round(record["peak_rss_mb"])
    record["load_average_end"] = load_average()
    # this script never writes it: someone else did, meanwhile
    if path.read_bytes() != before:
        record["note"] = (
            "the file changed on disk during the run; the version read at the start "
            "was timed"
        )
        print(f"chapter_times: warning: {record['file']}: {record['note']}", flush=True)
    return record


def _chapter_threads() -> int:
    """The intra-op threads a chapter's kernel runs with: the package's policy
    (ptlm_lite.runtime).
    """
    from ptlm_lite.runtime import threads_policy

    return threads_policy()


def machine() -> dict:
    import torch

    cpu = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = None
    try:
        mem = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": mem,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_threads": _chapter_threads(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
    }


def table(result: dict) -> str:
    rows = [("notebook", "title", "seconds", "peak MB", "load", "status")]
    for r in result["chapters"]:
        load = r.get("load_average_start")
        rows.append(
            (
                r["file"],
                r["title"][:40],
                f"{r['seconds']:.1f}",
                str(r["peak_rss_mb"]),
                f"{load[0]:.1f}" if load else "-",
                r["status"] + ("" if r.get("in_toc", True) else " (not in _toc)"),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(
            c.ljust(w) if i < 2 or i == 5 else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths))
        )
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


PAGE_INTRO = """\
# How long each chapter takes on a 2-core CPU

Every chapter trains its models for real, at the `tiny` scale by default. The table below is how
long each notebook took to run from top to bottom in a fresh kernel, with an empty model cache (so
every model it needs is trained, not loaded), offline, and how much memory the kernel needed at
its peak. It is read from `benchmarks/chapter_times.json`, which `python benchmarks/chapter_times.py`
writes, and this page is written from that file; nothing here is typed in.

A chapter that starts from another chapter's model (say, fine-tuning the pre-trained GPT) trains
that model first when the cache is empty, and its time includes it. Run the same chapter a second
time and the cached model makes it faster. Times on a busy machine are longer: the load average
(the number of processes wanting a CPU, averaged over the minute before each chapter started) is
in the table; on 2 cores, anything above 2 means the chapter shared its CPU.
"""


def _cell(text: str) -> str:
    """Text for one cell of a Markdown pipe table (a ``|`` would end the cell)."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def page(result: dict) -> str:
    """The Markdown of ``book/timings.md`` for ``result`` (the contents of
    chapter_times.json).

    A MyST pipe table, which the book renders as an HTML ``<table>``. Notebooks that no
    longer exist are left out; a chapter in the table of contents links to its page.
    """
    m = result["machine"]
    rows = [
        "| chapter | notebook | seconds | peak memory (MB) | load average |",
        "|:---|:---|---:|---:|---:|",
    ]
    shown = [c for c in result["chapters"] if (ROOT / c["file"]).exists()]
    for c in shown:
        load = (
            f"{c['load_average_start'][0]:.1f}" if c.get("load_average_start") else "-"
        )
        status = "" if c["status"] == "ok" else f" (**{c['status']}**)"
        name = _cell(c["title"] or c["file"])
        if c.get("in_toc", True):
            name = f"[{name}](../{c['file']})"
        peak = f"{c['peak_rss_mb']:,}" if c.get("peak_rss_mb") is not None else "-"
        rows.append(
            f"| {name}{status} | `{c['file']}` | {c['seconds']:.0f} | {peak} | {load} |"
        )
    total = sum(c["seconds"] for c in shown)
    machine_line = (
        f"Measured on {result['date']}: {m['cpu']}, {m['cores']} cores, "
        f"{m['memory_gib']} GiB "
        f"of memory, {m['platform'].split('-with-')[0]}, Python "
        f"{m['python']}, PyTorch "
        f"{m['torch']} ({m['torch_threads']} "
        f"thread{'' if m['torch_threads'] == 1 else 's'}, "
        f"{m['cpu_capability']} kernels); "
        f"scale: {result['scale']}."
    )
    return "\n".join(
        [
            "% Written by benchmarks/chapter_times.py from "
            "benchmarks/chapter_times.json: "
            "do not edit by",
            "% hand (python benchmarks/chapter_times.py --page-only rewrites it from "
            "the "
            "JSON).",
            PAGE_INTRO,
            machine_line,
            "",
            *rows,
            "",
            f"All of them, one after the other: {total / 60:.0f} minutes.",
            "",
        ]
    )


def write_page(result: dict, path: pathlib.Path = PAGE) -> None:
    path.write_text(page(result))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "notebooks",
        nargs="*",
        type=pathlib.Path,
        help="default: every notebook of the book",
    )
    ap.add_argument(
        "--scale",
        choices=["tiny", "small"],
        default=None,
        help="set SCALE in each chapter's parameters cell (default: leave the notebook's own)",
    )
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per cell")
    ap.add_argument(
        "--out",
        type=pathlib.Path,
        default=OUT,
        help=f"default: {OUT.relative_to(ROOT)}",
    )
    ap.add_argument(
        "--no-page",
        action="store_true",
        help=f"do not rewrite {PAGE.relative_to(ROOT)}",
    )
    ap.add_argument(
        "--page-only",
        action="store_true",
        help=f"run nothing: rewrite {PAGE.relative_to(ROOT)} from {OUT.relative_to(ROOT)}",
    )
    args = ap.parse_args(argv)
    if args.page_only:
        write_page(json.loads(OUT.read_text()))
        print(f"wrote {PAGE.relative_to(ROOT)} from {OUT.relative_to(ROOT)}")
        return 0
    todo = (
        [(p.resolve(), None) for p in args.notebooks] if args.notebooks else notebooks()
    )
    result = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": machine(),
        "scale": args.scale or "as committed (tiny)",
        "chapters": [],
    }
    for path, in_toc in todo:
        print(f"chapter_times: {rel(path)} ...", flush=True)
        record = run_notebook(path, args.timeout, args.scale)
        if in_toc is not None:
            record["in_toc"] = in_toc
        result["chapters"].append(record)
        print(
            f"chapter_times: {record['file']} {record['status']} in "
            f"{record['seconds']:.1f} s, "
            f"peak {record['peak_rss_mb']} MB",
            flush=True,
        )
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    m = result["machine"]
    print(
        f"\n{m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB; torch {m['torch']}; "
        f"{result['date']}"
    )
    print(table(result))
    print(f"\nwrote {args.out}")
    if not args.no_page and args.out == OUT:
        write_page(result)
        print(f"wrote {PAGE.relative_to(ROOT)}")
    return 1 if any(r["status"] != "ok" for r in result["chapters"]) else 0


if __name__ == "__main__":
    sys.exit(main())
