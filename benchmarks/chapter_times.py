"""How long each chapter takes: execute every notebook of the book fresh, record time,
memory and the verdicts it printed.

    python benchmarks/chapter_times.py              # every notebook in _toc.yml
    python benchmarks/chapter_times.py chapters/gpt.ipynb          # only these
    python benchmarks/chapter_times.py --scale small --jobs 4      # a GPU machine
    python benchmarks/chapter_times.py --page-only  # only rewrite book/timings.md
    python benchmarks/chapter_times.py --scales-page               # only book/scales.md

Each notebook runs in a fresh kernel (nbclient), offline (``HF_HUB_OFFLINE=1`` and
friends) and with its own empty temporary ``PTLM_CACHE``, so nothing trained or
downloaded earlier is reused: the time is what a reader who opens only that chapter
waits. Notebooks are read and executed in memory and never written back (a file that
changes on disk meanwhile, because someone else re-executed it, is noted in the record).
With ``--jobs N`` (N > 1) the script runs itself once per notebook, N processes at a
time, each with its own environment, cache and verdict log; the times were then measured
N at a time (``jobs`` in the JSON), and each kernel gets ``PTLM_THREADS`` = its share of
the cores unless that variable is set.

Recorded per notebook: wall time of all cells (kernel start-up excluded), peak resident
memory of the kernel process (``VmHWM`` from ``/proc/<pid>/status``, read just before
the kernel shuts down; ``ru_maxrss`` of the children where /proc does not exist), the
load average, the machine's speed just before it (:func:`reference_step_ms`: one
training step of the tiny BERT, in ms; the same chapter's seconds compare between two
runs only beside it; :func:`reference_pair_ms`: the same step in two processes side by
side, what a chapter's ``pmap`` runs get), every verdict it printed
(:mod:`ptlm_lite.verdict` logs them to ``$PTLM_VERDICT_LOG``, as for
``scripts/execute.py``), and, asked of the kernel after
its last cell, the ``SCALE`` it ran with, the device ``ptlm_lite.train.auto_device()``
picks there and the peak GPU memory (``ptlm_lite.runtime.cuda_peak_mb``; None without
CUDA). A notebook that runs past ``--notebook-timeout`` seconds is stopped (its kernel
killed) and recorded with status ``timeout``, the seconds so far and the verdicts
printed so far. ``--deadline S`` bounds the whole run (a GPU session's fixed device
time): no notebook starts with less than 45 s left, each one's limit is cut to what is
left, and one stopped so is recorded with ``stopped_by_deadline``.

The results go to ``benchmarks/chapter_times.json`` (``--scale small``:
``benchmarks/chapter_times_small.json``, so a small run never overwrites the tiny
record; ``--json PATH`` elsewhere) with a description of the machine (GPU, CUDA, compute
capability and bf16 support where there is one), the date, the scale, ``jobs`` and the
seed set (``PTLM_SEED_SET``). Then the page that shows them is written: after the
default run ``book/timings.md``, the book's page of timings (a Markdown page with a
table, which the book renders as an HTML table; it has no code, so no launch button
either); after a small run ``book/scales.md``, "Does it hold at a larger scale?", each
chapter's verdicts at ``tiny`` (stored in the committed notebooks by
``scripts/execute.py``) beside those of the small run.
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import contextlib
import hashlib
import json
import math
import os
import pathlib
import platform
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "chapter_times.json"
# a run at --scale small goes here by default (the tiny record is never overwritten)
OUT_SMALL = ROOT / "benchmarks" / "chapter_times_small.json"
# the same chapters on a 2-core machine with AVX2 kernels only (no AVX-512): many laptops'
# CPUs, and some of the cloud machines the book is built on; shown beside OUT's times
OUT_AVX2 = ROOT / "benchmarks" / "chapter_times_avx2.json"
# the book's time budget for one chapter at the default scale, in seconds
BUDGET_S = 40
# the page that shows the results (written from OUT, and OUT_AVX2 if it exists)
PAGE = ROOT / "book" / "timings.md"
# "Does it hold at a larger scale?" (written from the chapters' metadata and OUT_SMALL)
SCALES_PAGE = ROOT / "book" / "scales.md"
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
    names = re.findall(r"^\s*root:\s*([^\s#]+)", toc, re.MULTILINE) + re.findall(
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
            m = re.search(r"^#\s+(.+)$", cell.source, re.MULTILINE)
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


def set_scale(nb, scale: str) -> bool:
    """Append ``SCALE = "<scale>"`` to the cell tagged ``parameters`` (what papermill
    would do); False when there is no such cell (the notebook then runs as written).
    """
    for cell in nb.cells:
        if cell.cell_type == "code" and "parameters" in cell.get("metadata", {}).get(
            "tags", []
        ):
            cell.source += f'\nSCALE = "{scale}"  # set by benchmarks/chapter_times.py'
            return True
    return False


# Run silently in the kernel after its last cell (no cell, no output, no execution
# count); the user expression then asks for its answer: the SCALE the notebook ran
# with, the device the package picks there and the peak GPU memory.
_PROBE_CODE = """\
def _chapter_times_probe():
    import json
    out = {"scale": globals().get("SCALE"), "device": None, "cuda_peak_mb": None}
    try:
        import torch
        from ptlm_lite.train import auto_device
        out["device"] = str(auto_device())
        if torch.cuda.is_available():
            from ptlm_lite.runtime import cuda_peak_mb  # P.Timer resets the peak
            out["cuda_peak_mb"] = round(cuda_peak_mb(), 1)
    except Exception as e:
        out["probe_error"] = f"{type(e).__name__}: {e}"
    return json.dumps(out, default=str)
"""


def _probe(client) -> dict:
    """Ask the (idle) kernel what :data:`_PROBE_CODE` answers."""
    msg_id = client.kc.execute(
        _PROBE_CODE,
        silent=True,
        store_history=False,
        user_expressions={"probe": "_chapter_times_probe()"},
    )
    reply = client.wait_for_reply(msg_id)
    result = ((reply or {}).get("content", {}).get("user_expressions") or {}).get(
        "probe", {}
    )
    if result.get("status") != "ok":
        raise RuntimeError(f"the probe failed: {result}")
    return json.loads(ast.literal_eval(result["data"]["text/plain"]))


def read_verdicts(log: pathlib.Path) -> list[dict]:
    """The verdicts :mod:`ptlm_lite.verdict` appended to ``log`` (one JSON a line; a
    line cut short by a killed kernel is left out).
    """
    out = []
    try:
        lines = log.read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            pass
    return out


ANSI = re.compile(r"\x1b\[[0-9;]*m")  # the colours of a traceback


def _error_text(e: BaseException) -> str:
    text = ANSI.sub("", str(e)).strip()
    return f"{type(e).__name__}: {text.splitlines()[-1][:300] if text else ''}"


def code_hash(nb) -> str:
    """The hash ``scripts/execute.py`` keeps of a notebook's cells (types, sources)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import execute

    return execute.code_hash(nb)


def code_cells_hash(nb) -> str:
    """A hash of the code cells' sources only: what a notebook's time depends on (an
    edit of its prose does not make its recorded time stale)."""
    h = hashlib.sha256()
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            src = cell["source"]
            h.update((src if isinstance(src, str) else "".join(src)).encode() + b"\0")
    return h.hexdigest()[:16]


def current_code_hash(file: str, of=code_hash) -> str | None:
    """``of`` (default :func:`code_hash`) of the notebook ``file`` as it is on disk."""
    path = ROOT / file
    return of(json.loads(path.read_text())) if path.exists() else None


def outdated(record: dict, file: str) -> bool:
    """Whether ``record`` (one notebook's run) measured older code than ``file`` holds
    now (by ``code_cells_hash``; a record from before that hash: by ``code_hash``, the
    prose too), or comes from before the records kept either: no measure of the
    notebook as it is now."""
    if record.get("code_cells_hash"):
        return record["code_cells_hash"] != current_code_hash(file, code_cells_hash)
    recorded = record.get("code_hash")
    return recorded is None or recorded != current_code_hash(file)


def slowest_cells(nb, n: int = 6) -> list[dict]:
    """The ``n`` code cells that took longest (nbclient's timing metadata), and the
    one still running when the notebook's time was up (``"running": true``)."""
    from datetime import datetime

    def when(stamp):
        return datetime.fromisoformat(stamp.replace("Z", "+00:00"))

    out = []
    for index, cell in enumerate(nb.cells):
        ex = cell.get("metadata", {}).get("execution", {})
        began, done = ex.get("iopub.execute_input"), ex.get("shell.execute_reply")
        if not began:
            continue
        head = cell.source.strip().splitlines()[0][:70] if cell.source.strip() else ""
        if done:
            secs = (when(done) - when(began)).total_seconds()
            out.append({"cell": index, "seconds": round(secs, 1), "code": head})
        else:
            out.append({"cell": index, "seconds": None, "code": head, "running": True})
    out.sort(key=lambda c: -1 if c["seconds"] is None else -c["seconds"])
    return out[:n]


KERNEL_STARTUP_TIMEOUT = 300  # seconds for a kernel to start and answer
KERNEL_STARTS = 2  # tries: a kernel that dies on start is started once more


@contextlib.contextmanager
def _started_kernel(client, record: dict):
    """``client.setup_kernel()``, with the kernel answering ``kernel_info``; a kernel
    that dies or stays silent while starting (it happened to 2 of 44 kernels started
    16 and 28 at a time on a GPU machine) is started once more, and the record says
    so in ``kernel_restarts``.
    """
    for attempt in range(1, KERNEL_STARTS + 1):
        stack = contextlib.ExitStack()
        try:
            stack.enter_context(client.setup_kernel())
            client.wait_for_reply(client.kc.kernel_info())
        except RuntimeError as e:  # "Kernel died before replying", "didn't respond"
            stack.close()
            if attempt == KERNEL_STARTS:
                raise
            record.setdefault("kernel_restarts", []).append(_error_text(e))
            continue
        with stack:
            yield
        return


def reference_step_ms(steps: int = 40, threads: int | None = None) -> float:
    """How fast this machine is just now: the median wall time of one training step of
    the book's tiny BERT (24 pairs of 32 tokens, the MLM loss on ~15% of them plus NSP,
    fused AdamW) over ``steps`` steps, in milliseconds, on the threads a chapter gets,
    after 5 warm-up steps (the median: one step held up by something else does not
    move it). Timed just before each notebook, in this process: the same chapter's
    seconds differ by 20-40% between hours on one cloud machine (benchmarks/README.md),
    and this number says which hour it was, so that two runs compare (their ratio)."""
    import torch

    from ptlm_lite.bert import BertForPreTraining
    from ptlm_lite.config import preset
    from ptlm_lite.corrupt import mlm_mask
    from ptlm_lite.train import adamw

    if not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive integer, got {steps!r}")
    before = torch.get_num_threads()
    torch.set_num_threads(threads or _chapter_threads())
    try:
        g = torch.Generator().manual_seed(0)
        model = BertForPreTraining(preset("bert-tiny", vocab_size=1024), seed=0)
        opt = adamw(model.parameters(), lr=1e-3)
        ids = torch.randint(5, 1024, (24, 32), generator=g)  # 0-4: the special ids
        ids[:, 0], ids[:, -1] = 2, 3  # [CLS] ... [SEP]
        # the chapters' own corruption: 15% chosen, 80/10/10 [MASK]/random/kept
        batch = mlm_mask(
            ids, special_ids=range(5), mask_id=4, vocab_size=1024, generator=g
        )
        labels = torch.randint(0, 2, (24,), generator=g)

        def step():
            loss = model(batch.inputs, targets=batch.targets, nsp_labels=labels).loss
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

        for _ in range(5):
            step()
        times = []
        for _ in range(steps):
            start = time.perf_counter()
            step()
            times.append(time.perf_counter() - start)
        return round(sorted(times)[steps // 2] * 1000, 2)
    finally:
        torch.set_num_threads(before)


def reference_pair_ms(steps: int = 40) -> float | None:
    """The reference step timed in two processes side by side (``ptlm_lite.pmap``, one
    each), in ms: the slower of their two medians. A chapter that runs its independent
    models through ``pmap`` gets its second core's speed only when this is close to
    :func:`reference_step_ms`; on one cloud machine the two drifted apart by up to 30%
    between hours (``benchmarks/README.md``, session 36). ``None`` where ``pmap`` would
    run one worker (one core, a GPU, no ``os.fork``)."""
    from ptlm_lite.parallel import pmap, workers

    if not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive integer, got {steps!r}")
    if workers(2) < 2:
        return None
    return max(pmap(lambda _: reference_step_ms(steps), [0, 1], progress=False))


def run_notebook(
    path: pathlib.Path,
    timeout: int,
    scale: str | None = None,
    notebook_timeout: float | None = None,
) -> dict:
    """Execute one notebook in memory in a fresh kernel with an empty cache and its own
    verdict log; return its record.

    ``timeout``: seconds per cell (a cell past it: status "error");
    ``notebook_timeout``: seconds for all the cells together (past it: status
    "timeout", the kernel killed, the seconds so far and the verdicts printed so far
    recorded).
    """
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError

    from ptlm_lite.verdict import LOG_VAR

    before = path.read_bytes()
    nb = nbformat.reads(before.decode(), as_version=4)
    record = {"file": rel(path), "title": title(nb), "status": "ok"}
    # the chapter as written (before SCALE is set): the page tells a stale run apart
    record["code_hash"] = code_hash(nb)
    record["code_cells_hash"] = code_cells_hash(nb)
    if scale and not set_scale(nb, scale):
        record["note"] = "no cell tagged 'parameters': SCALE not set, ran as written"
    env_before = dict(os.environ)
    cache = tempfile.TemporaryDirectory(prefix="ptlm_cache_")
    fd, log = tempfile.mkstemp(prefix="ptlm_verdicts_", suffix=".jsonl")
    os.close(fd)
    fd, steps_log = tempfile.mkstemp(prefix="ptlm_steps_", suffix=".jsonl")
    os.close(fd)
    # the kernel inherits this environment
    os.environ.update(OFFLINE, PTLM_CACHE=cache.name)
    # the kernel imports this checkout's package, whatever `pip install -e` points at
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *filter(None, [env_before.get("PYTHONPATH")])]
    )
    os.environ[LOG_VAR] = log
    os.environ["PTLM_STEP_LOG"] = steps_log  # one line per training run (train.py)
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        # many kernels starting at once on a loaded machine (a GPU run, 28 at a time)
        # can take more than nbclient's default 60 s to answer
        startup_timeout=KERNEL_STARTUP_TIMEOUT,
    )
    record["load_average_start"] = load_average()
    record["reference_step_ms"] = reference_step_ms()  # the machine's speed just now
    record["reference_pair_ms"] = reference_pair_ms()  # and its two cores' together
    record.update(scale=None, device=None, cuda_peak_mb=None)
    try:
        client.reset_execution_trackers()
        with _started_kernel(client, record):
            pid = getattr(client.km.provisioner, "pid", None)
            start = time.perf_counter()
            deadline = start + notebook_timeout if notebook_timeout else math.inf
            try:
                for index, cell in enumerate(nb.cells):
                    left = deadline - time.perf_counter()
                    if left <= 0:
                        raise CellTimeoutError("the notebook's time is up")
                    # a cell may take what is left of the notebook's time, at most
                    client.timeout = (
                        timeout
                        if math.isinf(left)
                        else max(1, min(timeout, math.ceil(left)))
                    )
                    client.execute_cell(cell, index)
            # a failing cell: record it, keep timing the other notebooks
            except Exception as e:  # noqa: BLE001
                if isinstance(e, CellTimeoutError) and time.perf_counter() >= (
                    deadline - 1
                ):
                    record["status"] = "timeout"
                else:
                    record["status"] = "error"
                    record["error"] = _error_text(e)
            record["seconds"] = round(time.perf_counter() - start, 1)
            record["peak_rss_mb"] = peak_rss_mb(pid)
            if record["status"] == "timeout":
                # the kernel is still busy with the cell: kill it, ask it nothing
                client.shutdown_kernel = "immediate"
            else:
                try:
                    client.timeout = 120
                    probe = _probe(client)
                    record.update(
                        scale=probe.get("scale"),
                        device=probe.get("device"),
                        cuda_peak_mb=probe.get("cuda_peak_mb"),
                    )
                    if probe.get("probe_error"):
                        record["probe_error"] = probe["probe_error"]
                except Exception as e:  # noqa: BLE001
                    record["probe_error"] = _error_text(e)
                    client.shutdown_kernel = "immediate"
        record["verdicts"] = read_verdicts(pathlib.Path(log))
        record["training"] = read_verdicts(pathlib.Path(steps_log))
        record["slowest_cells"] = slowest_cells(nb)
    finally:
        os.environ.clear()
        os.environ.update(env_before)
        cache.cleanup()
        pathlib.Path(log).unlink(missing_ok=True)
        pathlib.Path(steps_log).unlink(missing_ok=True)
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


def _run_one_in_a_process(
    path: pathlib.Path, options: list[str], hard_limit: float | None, tmp: str
) -> dict:
    """Run this script on ``path`` alone in a new process (its own environment, cache,
    verdict log and kernel); return its record. A process that outlives ``hard_limit``
    (the notebook's limit plus time to start and stop a kernel) is killed.
    """
    fd, out = tempfile.mkstemp(dir=tmp, suffix=".json")
    os.close(fd)
    out = pathlib.Path(out)
    cmd = [sys.executable, str(pathlib.Path(__file__).resolve()), str(path)]
    cmd += ["--json", str(out), "--jobs", "1", "--no-page", *options]
    start = time.perf_counter()
    killed = False
    with tempfile.TemporaryFile("w+") as output:
        proc = subprocess.Popen(
            cmd,
            stdout=output,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            start_new_session=True,
        )
        try:
            proc.wait(timeout=hard_limit)
        except subprocess.TimeoutExpired:
            killed = True
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        output.seek(0)
        printed = output.read()
    try:
        return json.loads(out.read_text())["chapters"][0]
    except (OSError, ValueError, KeyError, IndexError):
        # the process died before writing its record: say so, invent nothing
        said = [x for x in printed.splitlines() if x.strip() and "WARNING |" not in x]
        try:
            import nbformat

            name = title(nbformat.read(path, as_version=4))
        except Exception:  # noqa: BLE001
            name = ""
        return {
            "file": rel(path),
            "title": name,
            "status": "timeout" if killed else "error",
            "error": (
                f"its process was killed after {hard_limit:.0f} s"
                if killed
                else f"its process ended with code {proc.returncode}: "
                + (said or ["no output"])[-1][:300]
            ),
            "seconds": round(time.perf_counter() - start, 1),
            "peak_rss_mb": None,
            "verdicts": [],
            "scale": None,
            "device": None,
            "cuda_peak_mb": None,
        }
    finally:
        out.unlink(missing_ok=True)


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
        with open("/proc/cpuinfo") as f:
            for line in f:
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
        **gpu(),
    }


def gpu() -> dict:
    """The GPU the kernels see (device 0), or None everywhere without CUDA."""
    import torch

    out = dict.fromkeys(
        ("gpu", "gpu_count", "gpu_memory_gib", "cuda", "gpu_capability", "bf16"), None
    )
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        out.update(
            gpu=torch.cuda.get_device_name(0),
            gpu_count=torch.cuda.device_count(),
            gpu_memory_gib=round(props.total_memory / 2**30, 1),
            cuda=torch.version.cuda,
            gpu_capability=".".join(map(str, torch.cuda.get_device_capability(0))),
            bf16=torch.cuda.is_bf16_supported(),
        )
    return out


def table(result: dict) -> str:
    rows = [("notebook", "title", "seconds", "peak MB", "load", "ref ms", "status")]
    for r in result["chapters"]:
        load, ref = r.get("load_average_start"), r.get("reference_step_ms")
        rows.append(
            (
                r["file"],
                r["title"][:40],
                f"{r['seconds']:.1f}",
                str(r["peak_rss_mb"]),
                f"{load[0]:.1f}" if load else "-",
                f"{ref:.1f}" if ref else "-",
                r["status"] + ("" if r.get("in_toc", True) else " (not in _toc)"),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(
            c.ljust(w) if i < 2 or i == 6 else c.rjust(w)
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
in the table; on 2 cores, anything above 2 means the chapter shared its CPU. So is the machine's
speed at that moment: the *reference step*, one training step of the book's tiny BERT, timed just
before each chapter (`reference_step_ms` in `benchmarks/chapter_times.py`). The same chapter took
20-40% longer in some hours than in others on one cloud machine; a chapter's seconds compare
between two runs only together with their reference steps.

Precision: on a CPU every model trains and is scored in fp32. On a GPU, `train` (one switch:
`precision=`, default `"auto"`) autocasts to bf16 on a card that has it, for models of at least
20 million weights, where it pays; smaller models, the book's, train in fp32 there too (measured in
`benchmarks/README.md`). The `small` scale on a GPU has its own page: "Does it hold at a larger
scale?".
"""


def _cell(text: str) -> str:
    """Text for one cell of a Markdown pipe table (a ``|`` would end the cell)."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def _status(c: dict) -> str:
    """Nothing for a run that finished, else its status in bold (a timeout, an error)."""
    return "" if c["status"] == "ok" else f" (**{c['status']}**)"


def _ref(c: dict) -> str:
    """The reference step (ms) measured before the notebook, or "-" (older records)."""
    return f"{c['reference_step_ms']:.1f}" if c.get("reference_step_ms") else "-"


def _secs(x: float) -> str:
    """Seconds as the pages print them: whole, except within a second of the budget
    (40.4 s, not "40 s", for a time just over it)."""
    return f"{x:.1f}" if round(x) == BUDGET_S else f"{x:.0f}"


def page(result: dict, avx2: dict | None = None) -> str:
    """The Markdown of ``book/timings.md`` for ``result`` (the contents of
    chapter_times.json), with ``avx2`` (chapter_times_avx2.json's: the same chapters on
    an AVX2-only machine) in two more columns when given.

    A MyST pipe table, which the book renders as an HTML ``<table>``. Notebooks that no
    longer exist are left out; a chapter in the table of contents links to its page.
    """
    m = result["machine"]
    runs = result.get("runs") or [result]
    rows = [
        (
            "| chapter | notebook | seconds | peak memory (MB) | load average "
            "| reference step (ms) | measured |"
            + (" AVX2 only: seconds | AVX2 only: reference step (ms) |" if avx2 else "")
        ),
        "|:---|:---|---:|---:|---:|---:|:---|" + ("---:|---:|" if avx2 else ""),
    ]
    shown = [c for c in result["chapters"] if (ROOT / c["file"]).exists()]
    other = {c["file"]: c for c in (avx2 or {}).get("chapters", [])}
    stale = 0
    for c in shown:
        load = (
            f"{c['load_average_start'][0]:.1f}" if c.get("load_average_start") else "-"
        )
        status = _status(c)
        name = _cell(c["title"] or c["file"])
        if c.get("in_toc", True):
            name = f"[{name}](../{c['file']})"
        peak = f"{c['peak_rss_mb']:,}" if c.get("peak_rss_mb") is not None else "-"
        ref = _ref(c)
        run = runs[min(c.get("run", 0), len(runs) - 1)]
        when = f"{run['date'][:10]}, {run['machine'].get('cpu_capability') or '?'}"
        if outdated(c, c["file"]):
            when += " (**the chapter has changed since**)"
            stale += 1
        row = (
            f"| {name}{status} | `{c['file']}` | {_secs(c['seconds'])} | {peak} | {load} "
            f"| {ref} | {when} |"
        )
        if avx2:
            o = other.get(c["file"])
            if o is None:
                row += " - | - |"
            else:
                older = " (**older version**)" if outdated(o, c["file"]) else ""
                row += f" {_secs(o['seconds'])}{_status(o)}{older} | {_ref(o)} |"
        rows.append(row)
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
    if result.get("jobs", 1) > 1:
        machine_line += (
            f" The notebooks ran {result['jobs']} at a time, so each shared the "
            "machine with others."
        )
    return "\n".join(
        [
            (
                "% Written by benchmarks/chapter_times.py from "
                "benchmarks/chapter_times*.json: do not edit by"
            ),
            (
                "% hand (python benchmarks/chapter_times.py --page-only rewrites it "
                "from the JSON)."
            ),
            PAGE_INTRO,
            machine_line,
            "",
            *rows,
            "",
            f"All of them, one after the other: {total / 60:.0f} minutes."
            + (
                f" {stale} of the {len(shown)} rows measured an older version of "
                "their notebook: re-run `python benchmarks/chapter_times.py` for them."
                if stale
                else ""
            ),
            "",
            *([avx2_paragraph(shown, avx2, other)] if avx2 else []),
            *(
                [steps]
                if (steps := avx2 and reference_steps_paragraph(shown, other))
                else []
            ),
        ]
    )


def current_on_both(shown: list[dict], other: dict) -> list[tuple[dict, dict]]:
    """(row, other machine's row) for each notebook that both records measured in its
    current version: the only pairs whose times compare."""
    return [
        (c, other[c["file"]])
        for c in shown
        if c["file"] in other
        and not outdated(c, c["file"])
        and not outdated(other[c["file"]], c["file"])
    ]


def avx2_paragraph(shown: list[dict], avx2: dict, other: dict) -> str:
    """What the AVX2 columns say: how many times as long, and which chapters are over
    the budget there (computed from the two records; nothing typed in)."""
    import statistics

    m = avx2["machine"]
    both = [(c, other[c["file"]]) for c in shown if c["file"] in other]
    # ratios only where both rows measured the notebook as it is now
    same = current_on_both(shown, other)
    ratios = sorted(o["seconds"] / c["seconds"] for c, o in same)
    refs = [o["reference_step_ms"] for _, o in both if o.get("reference_step_ms")]
    ours = [c["reference_step_ms"] for c, _ in both if c.get("reference_step_ms")]
    over = sorted(
        (o for _, o in both if o["file"].startswith("chapters/")),
        key=lambda o: -o["seconds"],
    )
    n_ch, longest = len(over), over[:1]
    over = [o for o in over if o["seconds"] > BUDGET_S]

    def names(rows):
        return ", ".join(
            f"{(o['title'] or o['file']).split(':')[0]} {_secs(o['seconds'])} s"
            for o in rows
        )

    budget = (
        f"{len(over)} of the {n_ch} chapters there took more than the book's "
        f"{BUDGET_S} s budget: {names(over)}."
        if over
        else f"None of the {n_ch} chapters there took more than the book's {BUDGET_S} s "
        f"budget (the longest: {names(longest)})."
    )
    if len(ratios) > 1:
        ratio = (
            f"a notebook took {ratios[0]:.1f} to {ratios[-1]:.1f} times as long (median "
            f"{statistics.median(ratios):.1f}, over the {len(same)} measured in their "
            "current version on both machines). "
        )
    elif ratios:
        ratio = (
            f"the one notebook measured in its current version on both machines took "
            f"{ratios[0]:.1f} times as long. "
        )
    else:
        ratio = "no notebook was measured in its current version on both machines. "
    return (
        f"**On a machine with AVX2 only.** The last two columns are the same notebooks "
        f"timed the same way on {avx2['date'][:10]} on a {m['cores']}-core {m['cpu']} "
        f"whose PyTorch runs {m['cpu_capability']} kernels, as many laptops' CPUs do "
        f"(`benchmarks/chapter_times_avx2.json`). AVX2's vectors are half as wide as "
        f"AVX-512's, and the reference step took {min(refs):.0f}-{max(refs):.0f} ms "
        f"there against {min(ours):.0f}-{max(ours):.0f} ms for the rows above; "
        + ratio
        + budget
        + (
            " All of them, one after the other: "
            f"{sum(o['seconds'] for _, o in both) / 60:.0f} minutes."
        )
        + "\n"
    )


def _steps(c: dict) -> float | None:
    """A run's seconds in reference steps (None where the record has no step)."""
    ref = c.get("reference_step_ms")
    return c["seconds"] / (ref / 1000) if ref else None


def reference_steps_paragraph(shown: list[dict], other: dict) -> str:
    """A notebook's time in reference steps on both machines, and the budget in those
    units on each (computed from the two records; nothing typed in)."""
    import statistics

    same = [(c, o) for c, o in current_on_both(shown, other) if _steps(c) and _steps(o)]
    if len(same) < 2:
        return ""
    q1, med, q3 = statistics.quantiles(
        [_steps(o) / _steps(c) for c, o in same], n=4, method="inclusive"
    )
    costs = [  # the chapters as they are now, in the record
        _steps(c)
        for c in shown
        if c["file"].startswith("chapters/")
        and _steps(c)
        and not outdated(c, c["file"])
    ]
    refs = [c["reference_step_ms"] for c in shown if _steps(c)]
    refs_avx2 = [o["reference_step_ms"] for o in other.values() if _steps(o)]
    r1, r2 = statistics.median(refs), statistics.median(refs_avx2)
    return (
        "**In reference steps.** Dividing a notebook's seconds by the reference step "
        "timed just before it gives how many of the tiny BERT's training steps its "
        "work is worth, and that count hardly depends on the machine: over the "
        f"{len(same)} notebooks measured in their current version on both, the AVX2 "
        f"machine's count was {med:.2f} times the record's (median; half of them between "
        f"{q1:.2f} and {q3:.2f}). The {len(costs)} chapters measured in their current "
        f"version in the record cost {min(costs):,.0f} to {max(costs):,.0f} reference "
        f"steps (median {statistics.median(costs):,.0f}). The {BUDGET_S} s budget is "
        "about "
        f"{BUDGET_S / r1 * 1000:,.0f} reference steps on the record's machine (median "
        f"step {r1:.1f} ms) and {BUDGET_S / r2 * 1000:,.0f} on the AVX2 one "
        f"({r2:.1f} ms): a chapter whose work lies between the two fits the budget on "
        "the first machine and not on the second. "
        f"{sum(k > BUDGET_S / r2 * 1000 for k in costs)} of those {len(costs)} chapters "
        f"cost more than {BUDGET_S / r2 * 1000:,.0f}.\n"
    )


def load_avx2(path: pathlib.Path = OUT_AVX2) -> dict | None:
    return json.loads(path.read_text()) if path.exists() else None


def write_page(result: dict, path: pathlib.Path = PAGE) -> None:
    path.write_text(page(result, load_avx2()))


# ----------------------------------------------------------------------------------
# "Does it hold at a larger scale?" (book/scales.md)

SHOWS_UP, OPPOSITE = "shows up", "the opposite shows up"  # ptlm_lite.verdict's words

SCALES_INTRO = """\
# Does it hold at a larger scale?

Every chapter tests its paper's claims with experiments small enough for a laptop: the
`tiny` scale, the default of the `SCALE` parameter in each chapter's parameters cell,
which runs on a CPU in minutes. Set `SCALE = "small"` instead and the same chapter
trains larger models for more steps, often with more seeds: a scale meant for a GPU. A
verdict (*shows up*, *the opposite shows up*, *does not show up*, *too noisy to tell*,
or *cannot test here* where no compared model beats what a model that learns nothing
scores: the rule of `ptlm_lite.verdict`, explained in [Do the verdicts
replicate?](replication.ipynb)) is about the models of its run; this page asks which
verdicts keep their category when the models grow.

The `tiny` column is what the book's pages show: the verdicts each chapter printed when
it was executed for the book (`scripts/execute.py`, on a CPU, with the seeds as
written), stored in the notebook. The `small` column comes from
`benchmarks/chapter_times_small.json`, written by `python benchmarks/chapter_times.py
--scale small` on a GPU machine: every chapter executed fresh, with an empty model
cache, and every verdict it printed recorded. Verdicts are paired by their claim, in
order. Each cell gives the verdict and the effect in the claimed direction with its 95%
interval; the claim gives the smallest effect that would matter. This page is written
from those records by `python benchmarks/chapter_times.py --scales-page`; nothing here
is typed in.
"""


def tiny_verdicts() -> list[dict]:
    """``[{"file", "title", "verdicts"}]``: each chapter of ``_toc.yml`` in its order,
    with the verdicts its committed run printed (``metadata["ptlm_book"]["verdicts"]``,
    stored by ``scripts/execute.py``).
    """
    import nbformat

    out = []
    for path, in_toc in notebooks():
        if not in_toc or path.parent.name != "chapters":
            continue
        nb = nbformat.read(path, as_version=4)
        out.append(
            {
                "file": rel(path),
                "title": title(nb),
                "verdicts": list(nb.metadata.get("ptlm_book", {}).get("verdicts", [])),
            }
        )
    return out


def pair_verdicts(tiny: list[dict], small: list[dict]) -> list[tuple]:
    """``(tiny, small)`` pairs: each tiny verdict with the first unused small verdict of
    the same claim (None where there is none); then the small verdicts no tiny one had.
    """
    used = [False] * len(small)
    pairs = []
    for t in tiny:
        j = next(
            (
                j
                for j, v in enumerate(small)
                if not used[j] and v["claim"] == t["claim"]
            ),
            None,
        )
        if j is not None:
            used[j] = True
        pairs.append((t, None if j is None else small[j]))
    pairs += [(None, v) for j, v in enumerate(small) if not used[j]]
    return pairs


def _md(text) -> str:
    """Text for a Markdown table cell, with Markdown's special characters escaped."""
    return re.sub(r"([\\`*_\[\]<>|])", r"\\\1", str(text)).replace("\n", " ")


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _number(x) -> str:
    return f"{x:+.3g}".replace("-", "−")


def _verdict_cell(v: dict) -> str:
    return (
        f"*{v['verdict']}*: {_number(v['effect'])} "
        f"[{_number(v['low'])}, {_number(v['high'])}]"
    )


def _small_status(rec: dict | None) -> str | None:
    """Why a chapter has no (or fewer) small verdicts; None for a complete run."""
    if rec is None:
        return "not run at small"
    if rec["status"] == "timeout" and rec.get("stopped_by_deadline"):
        return f"stopped unfinished after {rec['seconds']:.0f} s (the run's deadline)"
    if rec["status"] == "timeout":
        return f"timed out after {rec['seconds']:.0f} s"
    if rec["status"] != "ok":
        return f"error: {_md(ANSI.sub('', rec.get('error', ''))[:120])}"
    return None


def _link(file: str, name: str | None = None) -> str:
    """``name`` (default: the file, as code) linked to the notebook when it exists."""
    text = _md(name) if name else f"`{file}`"
    return f"[{text}](../{file})" if (ROOT / file).exists() else text


def _run_line(run: dict) -> str:
    """One sentence on one run of ``--scale small``: when, where, how many at a time."""
    m = run["machine"]
    gpu = m.get("gpu")
    bf16 = "supported" if m.get("bf16") else "not supported"
    where = (
        f"{gpu} ({m.get('gpu_memory_gib')} GiB, compute capability "
        f"{m.get('gpu_capability')}, bf16 {bf16}), CUDA {m.get('cuda')}"
        if gpu
        else "no GPU (CPU only)"
    )
    jobs = run.get("jobs", 1)
    threads = m.get("torch_threads")
    line = (
        f"The small run: {run['date']}, scale {run['scale']}, seed set "
        f"{run.get('seed_set', 'main')}; {where}; {m['cpu']}, {m['cores']} cores, "
        f"PyTorch {m['torch']}, Python {m['python']}. The notebooks ran {jobs} at a "
        f"time ({threads} CPU thread{'' if threads == 1 else 's'} each)"
        + (
            ", so a time below is one notebook's wall time while others shared the "
            "machine and its GPU."
            if jobs > 1
            else "."
        )
    )
    if run.get("max_steps"):
        line += (
            f" **It ran under a step cap (`PTLM_MAX_STEPS={run['max_steps']}`): its "
            "models are barely trained, and its verdicts measure nothing.**"
        )
    return line


RUN_FIELDS = ("date", "machine", "scale", "jobs", "seed_set", "max_steps",
              "notebook_timeout", "deadline", "note")  # fmt: skip
DEADLINE_MIN_START = 45.0  # --deadline: seconds a notebook needs at least to be started


def merge(old: dict | None, new: dict) -> dict:
    """``new``'s chapters over ``old``'s: a chapter run again replaces its record, the
    others stay, each record pointing (``run``) at the run in ``runs`` that made it, so
    a GPU session can run a few chapters at a time (``--merge``). The top-level fields
    are the newest run's."""
    runs = []
    if old:
        runs = old.get("runs") or [{k: old.get(k) for k in RUN_FIELDS}]
    again = {c["file"] for c in new["chapters"]}
    kept = [dict(c, run=c.get("run", 0)) for c in (old or {}).get("chapters", [])
            if c["file"] not in again]  # fmt: skip
    runs = runs + [{k: new.get(k) for k in RUN_FIELDS}]
    chapters = kept + [dict(c, run=len(runs) - 1) for c in new["chapters"]]
    used = sorted({c["run"] for c in chapters})  # drop runs no record points at
    renumber = {r: i for i, r in enumerate(used)}
    for c in chapters:
        c["run"] = renumber[c["run"]]
    order = {rel(p): i for i, (p, _) in enumerate(notebooks())}
    chapters.sort(key=lambda c: order.get(c["file"], len(order)))
    return {**new, "runs": [runs[r] for r in used], "chapters": chapters}


def scales_page(small: dict | None, tiny: list[dict] | None = None) -> str:
    """The Markdown of ``book/scales.md``: each chapter's verdicts at ``tiny``
    (``tiny``, default :func:`tiny_verdicts`) beside those of ``small`` (the contents of
    chapter_times_small.json; None: there is no small run yet).
    """
    tiny = tiny_verdicts() if tiny is None else tiny
    lines = [
        (
            "% Written by benchmarks/chapter_times.py from the chapters' stored "
            "verdicts and benchmarks/chapter_times_small.json:"
        ),
        (
            "% do not edit by hand (python benchmarks/chapter_times.py --scales-page "
            "rewrites it)."
        ),
        SCALES_INTRO,
    ]
    if small is None:
        lines += [
            (
                "**No run at the `small` scale exists yet.** On a GPU machine, "
                "`python benchmarks/chapter_times.py --scale small --jobs 4` runs "
                "every chapter at `small`, writes "
                "`benchmarks/chapter_times_small.json` and rewrites this page from "
                "it. Until then, only the `tiny` verdicts are shown."
            ),
            "",
        ]
        total, chapters = 0, 0
        for ch in tiny:
            if not ch["verdicts"]:
                continue
            total += len(ch["verdicts"])
            chapters += 1
            lines += [
                f"## {_md(ch['title'] or ch['file'])}",
                "",
                (
                    f"{_link(ch['file'])}: {_count(len(ch['verdicts']), 'verdict')} at "
                    "`tiny`."
                ),
                "",
                "| claim | tiny (CPU) |",
                "|:---|:---|",
                *(
                    f"| {_md(v['claim'])} (min. effect {v['min_effect']:.3g}) "
                    f"| {_verdict_cell(v)} |"
                    for v in ch["verdicts"]
                ),
                "",
            ]
        lines += [
            (
                f"{total} verdicts in {chapters} chapters at `tiny`; none measured "
                "at `small` yet."
            ),
            "",
        ]
        return "\n".join(lines)

    small_head = "small (GPU)" if small["machine"].get("gpu") else "small (CPU)"
    runs = small.get("runs") or [small]
    for k, run in enumerate(runs):
        line = _run_line(run)
        if len(runs) > 1:
            files = [c["file"] for c in small["chapters"] if c.get("run", 0) == k]
            line = (
                f"Run {k + 1} of {len(runs)} ({', '.join(f'`{f}`' for f in files)}): "
                + line
            )
        lines += [line, ""]
        if run.get("note"):
            lines += [f"*About this run:* {run['note']}", ""]
    records = {c["file"]: c for c in small["chapters"]}
    kept = flips = both = 0
    only_small = 0
    missing = {
        k: []
        for k in ("not run", "timed out", "stopped at the run's deadline", "error")
    }
    unreached = unprinted = 0  # tiny verdicts without a small one: why
    sections = []
    for ch in tiny:
        rec = records.get(ch["file"])
        small_v = (rec or {}).get("verdicts") or []
        if not ch["verdicts"] and not small_v:
            continue
        status = _small_status(rec)
        name = _md(ch["title"] or ch["file"])
        stem = _md(pathlib.Path(ch["file"]).stem)
        if rec is None:
            missing["not run"].append(stem)
        elif rec["status"] == "timeout" and rec.get("stopped_by_deadline"):
            missing["stopped at the run's deadline"].append(stem)
        elif rec["status"] == "timeout":
            missing["timed out"].append(stem)
        elif rec["status"] != "ok":
            missing["error"].append(stem)
        rows = [
            f"| claim | tiny (CPU) | {small_head} | same category? |",
            "|:---|:---|:---|:---|",
        ]
        ch_kept = ch_both = 0
        for t, v in pair_verdicts(ch["verdicts"], small_v):
            claim = _md((t or v)["claim"])
            claim += f" (min. effect {(t or v)['min_effect']:.3g})"
            if t is not None and v is not None:
                same = t["verdict"] == v["verdict"]
                flip = {t["verdict"], v["verdict"]} == {SHOWS_UP, OPPOSITE}
                ch_both += 1
                ch_kept += same
                flips += flip
                mark = "yes" if same else ("**no: flipped**" if flip else "**no**")
                rows.append(
                    f"| {claim} | {_verdict_cell(t)} | {_verdict_cell(v)} | {mark} |"
                )
            elif t is not None:
                unreached += status is not None
                unprinted += status is None
                why = (
                    "not printed at small"
                    if status is None
                    else (status if rec is None else f"not reached: {status}")
                )
                rows.append(f"| {claim} | {_verdict_cell(t)} | {why} | – |")
            else:
                only_small += 1
                rows.append(
                    f"| {claim} | not printed at tiny | {_verdict_cell(v)} | – |"
                )
        both += ch_both
        kept += ch_kept
        if rec is None:
            said = "not run at `small`"
        else:
            said = f"at `small`: {_count(len(small_v), 'verdict')}, " + (
                f"{rec['seconds']:.0f} s" if status is None else status
            )
            if rec.get("device"):
                said += f" on {_md(rec['device'])}"
            if outdated(rec, ch["file"]):
                said += (
                    " (**the chapter has changed since this run**, its `small` "
                    "settings perhaps too: the run is a record of what was, not of "
                    "the chapter as it is now)"
                )
            if rec.get("scale") not in (None, "small"):
                said += f" (**ran with SCALE = {_md(repr(rec['scale']))}**)"
            if ch_both:
                said += f"; {ch_kept} of {ch_both} paired verdicts kept their category"
        sections += [
            f"## {name}",
            "",
            (
                f"{_link(ch['file'])}: {_count(len(ch['verdicts']), 'verdict')} at "
                f"`tiny`; {said}."
            ),
            "",
            *rows,
            "",
        ]
    summary = (
        f"**{kept} of {both} verdicts measured at both scales "
        f"({kept / both:.0%}) kept their category at `small`**"
        if both
        else "**No verdict was measured at both scales**"
    )
    summary += (
        f"; {flips} flipped between *shows up* and *the opposite shows up*."
        if both
        else "."
    )
    if unreached or unprinted:
        summary += (
            f" {unreached + unprinted} `tiny` verdicts have no `small` counterpart: "
        )
        parts = [
            f"{label}: {', '.join(names)}" for label, names in missing.items() if names
        ]
        why = []
        if unreached:
            why.append(
                f"{unreached} in chapters that did not finish at `small`"
                + (f" ({'; '.join(parts)})" if parts else "")
            )
        if unprinted:
            why.append(
                f"{unprinted} that chapters which finished did not print at `small`"
            )
        summary += " and ".join(why) + "."
    if only_small:
        summary += f" {only_small} verdicts were printed only at `small`."
    lines += [summary, "", *sections]
    # the small run's times
    rows = [
        (
            "| notebook | SCALE | device | at a time | seconds | peak GPU memory (MB) "
            "| peak memory (MB) | status |"
        ),
        "|:---|:---|:---|---:|---:|---:|---:|:---|",
    ]
    for c in small["chapters"]:
        jobs = runs[min(c.get("run", 0), len(runs) - 1)].get("jobs", 1)
        status = _small_status(c) or "ok"
        gpu_mb = (
            f"{c['cuda_peak_mb']:,.0f}" if c.get("cuda_peak_mb") is not None else "-"
        )
        rss = f"{c['peak_rss_mb']:,}" if c.get("peak_rss_mb") is not None else "-"
        rows.append(
            f"| {_link(c['file'], c.get('title') or c['file'])} "
            f"| {_md(c.get('scale') or '-')} | {_md(c.get('device') or '-')} "
            f"| {jobs} | {c['seconds']:.0f} | {gpu_mb} | {rss} | {status} |"
        )
    done = [c for c in small["chapters"] if c["status"] == "ok"]
    total = sum(c["seconds"] for c in done)
    lines += [
        "## How long the small run took",
        "",
        (
            "Each notebook in a fresh kernel with an empty model cache, as many "
            "at a time as its run had (the column *at a time*: more than a few "
            "slow each one down): wall time of its cells, the kernel's peak GPU memory "
            "(`ptlm_lite.runtime.cuda_peak_mb`; in the runs of 2026-11-27 and before, "
            "a lower bound: the peak of the chapter's last timed part) and peak "
            "resident memory."
        ),
        "",
        *rows,
        "",
        (
            f"The {len(done)} that finished, one after the other: {total / 60:.0f} "
            "minutes of notebook time, each as measured in its run (not the book's "
            "time at `small`, which needs every chapter to finish)."
        ),
        "",
    ]
    return "\n".join(lines)


def load_small(path: pathlib.Path = OUT_SMALL) -> dict | None:
    return json.loads(path.read_text()) if path.exists() else None


def write_scales_page(path: pathlib.Path = SCALES_PAGE, small=OUT_SMALL) -> None:
    path.write_text(scales_page(load_small(small)))


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
        help="set SCALE in each chapter's parameters cell (default: leave the "
        "notebook's own)",
    )
    ap.add_argument(
        "--timeout",
        "--cell-timeout",
        dest="timeout",
        type=int,
        default=1800,
        help="seconds per cell",
    )
    ap.add_argument(
        "--notebook-timeout",
        type=float,
        default=None,
        help="seconds per notebook, all cells together: past it the kernel is killed "
        "and the notebook recorded with status 'timeout' (default: no limit)",
    )
    ap.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="run this many notebooks at a time, each in its own process (default 1)",
    )
    ap.add_argument(
        "--json",
        "--out",
        dest="out",
        type=pathlib.Path,
        default=None,
        help=f"where to write the results (default: {OUT.relative_to(ROOT)}; with "
        f"--scale small: {OUT_SMALL.relative_to(ROOT)})",
    )
    ap.add_argument(
        "--deadline",
        type=float,
        default=None,
        help="seconds from the start of this run: no notebook starts later than "
        f"{DEADLINE_MIN_START:.0f} s before it, and each notebook's limit is cut so it "
        "ends by it (a GPU session with a fixed device time); a notebook not started is "
        "left out of the results, not recorded",
    )
    ap.add_argument(
        "--merge",
        action="store_true",
        help="keep the chapters of the existing results file that this run does not "
        "run again (a GPU session can run a few chapters at a time)",
    )
    ap.add_argument(
        "--merge-from",
        type=pathlib.Path,
        default=None,
        metavar="JSON",
        help="run nothing: merge the results a run wrote elsewhere (a GPU machine's "
        f"JSON, fetched here) into {OUT_SMALL.relative_to(ROOT)} (or --json), as "
        "--merge would have, and rewrite the scales page",
    )
    ap.add_argument(
        "--note",
        default=None,
        help="with --merge-from: a sentence about that run, kept with it and shown on "
        "the scales page",
    )
    ap.add_argument(
        "--no-page",
        action="store_true",
        help=f"do not rewrite {PAGE.relative_to(ROOT)} (or, after a small run, "
        f"{SCALES_PAGE.relative_to(ROOT)})",
    )
    ap.add_argument(
        "--page-only",
        action="store_true",
        help=f"run nothing: rewrite {PAGE.relative_to(ROOT)} from "
        f"{OUT.relative_to(ROOT)}",
    )
    ap.add_argument(
        "--scales-page",
        action="store_true",
        help=f"run nothing: rewrite {SCALES_PAGE.relative_to(ROOT)} from the chapters' "
        f"stored verdicts and {OUT_SMALL.relative_to(ROOT)} (or --json)",
    )
    args = ap.parse_args(argv)
    if args.jobs < 1:
        ap.error("--jobs must be at least 1")
    if args.page_only:
        write_page(json.loads(OUT.read_text()))
        print(f"wrote {PAGE.relative_to(ROOT)} from {OUT.relative_to(ROOT)}")
        return 0
    if args.merge_from:
        out = args.out or OUT_SMALL
        new = json.loads(args.merge_from.read_text())
        if args.note:
            new["note"] = args.note
        merged = merge(load_small(out), new)
        out.write_text(json.dumps(merged, indent=1) + "\n")
        print(
            f"merged {len(new['chapters'])} records from {args.merge_from} into {out}"
        )
        if not args.no_page:
            write_scales_page(small=out)
            print(f"wrote {SCALES_PAGE.relative_to(ROOT)}")
        return 0
    if args.scales_page:
        write_scales_page(small=args.out or OUT_SMALL)
        print(f"wrote {SCALES_PAGE.relative_to(ROOT)}")
        return 0
    out = args.out or (OUT_SMALL if args.scale == "small" else OUT)
    todo = (
        [(p.resolve(), None) for p in args.notebooks] if args.notebooks else notebooks()
    )
    if args.jobs > 1 and not os.environ.get("PTLM_THREADS"):
        # each kernel its share of the cores (inherited by the processes below)
        os.environ["PTLM_THREADS"] = str(max(1, _chapter_threads() // args.jobs))
    result = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": machine(),
        "scale": args.scale or "as committed (tiny)",
        "jobs": args.jobs,
        "seed_set": os.environ.get("PTLM_SEED_SET", "").strip() or "main",
        "max_steps": os.environ.get("PTLM_MAX_STEPS") or None,
        "notebook_timeout": args.notebook_timeout,
        "deadline": args.deadline,
        "chapters": [],
    }
    deadline_at = time.monotonic() + args.deadline if args.deadline else math.inf

    def cut(record: dict, nt: float) -> dict:
        """Mark a notebook stopped by the deadline rather than by its own limit."""
        if record["status"] == "timeout" and nt < (args.notebook_timeout or math.inf):
            record["stopped_by_deadline"] = True
        return record

    def limit() -> float | None:
        """This notebook's limit: --notebook-timeout, cut to what is left before the
        deadline; None: too little is left to start one."""
        left = deadline_at - time.monotonic()
        if left < DEADLINE_MIN_START:
            return None
        return min(args.notebook_timeout or math.inf, left)

    def done(record: dict) -> None:
        print(
            f"chapter_times: {record['file']} {record['status']} in "
            f"{record['seconds']:.1f} s, peak {record['peak_rss_mb']} MB, "
            f"{len(record.get('verdicts', []))} verdicts, reference step "
            f"{record.get('reference_step_ms') or '-'} ms",
            flush=True,
        )

    if args.jobs == 1:
        records = []
        for path, _ in todo:
            nt = limit()
            if nt is None:
                print(f"chapter_times: {rel(path)} not started (deadline)", flush=True)
                records.append(None)
                continue
            print(f"chapter_times: {rel(path)} ...", flush=True)
            record = run_notebook(
                path, args.timeout, args.scale, None if nt == math.inf else nt
            )
            records.append(cut(record, nt))
            done(records[-1])
    else:
        options = ["--timeout", str(args.timeout)]
        if args.scale:
            options += ["--scale", args.scale]

        def one(path: pathlib.Path) -> dict | None:
            nt = limit()
            if nt is None:
                print(f"chapter_times: {rel(path)} not started (deadline)", flush=True)
                return None
            if nt == math.inf:
                return _run_one_in_a_process(path, options, None, tmp)
            # the notebook's own limit, plus time to start and stop a kernel (less
            # when a deadline is near: it is a deadline)
            hard = nt + (90 if args.deadline else 300)
            opts = [*options, "--notebook-timeout", f"{nt:.0f}"]
            return cut(_run_one_in_a_process(path, opts, hard, tmp), nt)

        with (
            tempfile.TemporaryDirectory(prefix="chapter_times_") as tmp,
            concurrent.futures.ThreadPoolExecutor(args.jobs) as pool,
        ):
            futures = []
            for path, _ in todo:
                print(f"chapter_times: {rel(path)} queued", flush=True)
                futures.append(pool.submit(one, path))
                futures[-1].add_done_callback(
                    lambda f: f.result() is not None and done(f.result())
                )
            records = [f.result() for f in futures]
    for (_, in_toc), record in zip(todo, records):
        if record is None:  # not started before the deadline
            continue
        if in_toc is not None:
            record["in_toc"] = in_toc
        result["chapters"].append(record)
    if args.merge and out.exists():
        result = merge(json.loads(out.read_text()), result)
    out.write_text(json.dumps(result, indent=1) + "\n")
    m = result["machine"]
    print(
        f"\n{m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB; torch {m['torch']}; "
        f"GPU {m['gpu']}; {result['date']}; {args.jobs} at a time"
    )
    print(table(result))
    print(f"\nwrote {out}")
    if not args.no_page and out == OUT:
        write_page(result)
        print(f"wrote {PAGE.relative_to(ROOT)}")
    if not args.no_page and out == OUT_SMALL:
        write_scales_page()
        print(f"wrote {SCALES_PAGE.relative_to(ROOT)}")
    return 1 if any(r["status"] != "ok" for r in result["chapters"]) else 0


if __name__ == "__main__":
    sys.exit(main())
