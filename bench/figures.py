#!/usr/bin/env python3
"""Every fidelity-at-scale figure, each beside its target, in one Markdown table.

Runs (each part bounded in time, each optional with --parts):
- sim:     `cargo bench -p goodput-sim --bench streams`: 2,000 streams at 50 tokens/s
           (p99 emission lag on one core), 10,000 streams held, chunks/s per core;
- client:  `goodput-bench client` at 1,000 streams, ITL 20 ms, and the raw-socket
           floor at the same load: goodput − floor lag p99, TTFT error p99 (the
           simulator a child process on a core of its own);
- threads: `goodput-bench client --client-threads 1` and `2` at 1,000 streams, ITL 0:
           tokens/s and tokens/s per client core;
- hold:    `goodput-bench client` at 10,000 streams (ITL 500 ms, 16 tokens): all in
           flight at once from one process, peak RSS;
- peers:   `bench/peers.py` (goodput, vllm-rs, Python vLLM, GuideLLM, AIPerf at 1, 100, 500, 1,000 streams;
           installs the peers from PyPI into ~/.cache/goodput/peers-venv the first time).

Every figure is printed with the machine's 1-minute load average at the end of the run
that measured it, and the header says what else was using the CPUs when it started:
on a shared machine a miss can be the machine's, not goodput's. Each part's own
output is kept in target/figures/<part>.md.

Usage: bench/figures.py [--parts sim,client,threads,hold,peers] [--no-build]
                        [--duration 10] [--peers-concurrency 1,100,500,1000] [--peers-timeout 900]
"""

import argparse
import datetime
import os
import platform
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
PARTS = ["sim", "client", "threads", "hold", "peers"]
# Wall-clock bound of each part, s (a part that runs past it is reported, not waited for).
LIMITS = {"sim": 300, "client": 180, "threads": 180, "threads2": 180, "hold": 180, "peers": 1800}


def log(msg):
    print(f"figures: {msg}", file=sys.stderr, flush=True)


def load1():
    try:
        return open("/proc/loadavg").read().split()[0]
    except OSError:
        return "?"


def busiest(n=4):
    """The processes using the most CPU right now (what else the machine is doing)."""
    try:
        out = subprocess.run(["ps", "-eo", "pcpu,comm", "--sort=-pcpu", "--no-headers"],
                             capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    rows = [l.split(None, 1) for l in out.splitlines() if l.strip()]
    rows = [f"{r[1].strip()} {r[0]}%" for r in rows[:n] if len(r) == 2 and r[0] != "0.0"]
    return ", ".join(rows) or "nothing"


def run_part(name, cmd, env=None):
    """Runs one part's command under its bound; its stdout, or None (with the reason logged)."""
    out_dir = TARGET / "figures"
    out_dir.mkdir(parents=True, exist_ok=True)
    log(f"{name}: {' '.join(cmd)}")
    started = time.monotonic()
    with open(out_dir / f"{name}.log", "w") as err:
        # Its own session, so that a part past its bound is stopped with what it started
        # (SIGTERM first: goodput-bench then stops its simulator child).
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, cwd=ROOT,
                             env={**os.environ, **(env or {})}, start_new_session=True)
        try:
            stdout, _ = p.communicate(timeout=LIMITS[name])
        except subprocess.TimeoutExpired:
            log(f"{name}: ran past {LIMITS[name]} s; stopping it")
            for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
                try:
                    os.killpg(p.pid, sig)
                    stdout, _ = p.communicate(timeout=wait)
                    break
                except ProcessLookupError:
                    break
                except subprocess.TimeoutExpired:
                    continue
            (out_dir / f"{name}.md").write_text("")
            return None
    (out_dir / f"{name}.md").write_text(stdout)
    log(f"{name}: exit {p.returncode} after {time.monotonic() - started:.0f} s "
        f"(output in {out_dir / (name + '.md')}, progress in {out_dir / (name + '.log')})")
    return stdout


def table(text, heading):
    """The rows (dicts by column name) of the first Markdown table after a line
    starting with `heading`."""
    if text is None:
        return []
    lines = text.splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith(heading)), None)
    if start is None:
        return []
    rows = []
    for line in lines[start + 1:]:
        if not line.startswith("|"):
            if rows:
                break
            continue
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    if len(rows) < 2:
        return []
    return [dict(zip(rows[0], r)) for r in rows[2:]]


def num(cell):
    try:
        return float(cell.replace(",", ""))
    except (AttributeError, ValueError):
        return None


def verdict(ok):
    return "**NOT met**" if ok is False else ("met" if ok else "-")


class Figures:
    def __init__(self):
        self.rows = []

    def add(self, figure, target, measured, ok, load):
        self.rows.append(f"| {figure} | {target} | {measured} | {verdict(ok)} | {load} |")

    def missing(self, figure, target, why):
        self.rows.append(f"| {figure} | {target} | not measured: {why} | - | {load1()} |")

    def markdown(self):
        return ("| figure | target | measured | verdict | load 1m |\n|---|---|---|---|---:|\n"
                + "\n".join(self.rows))


def part_sim(f):
    out = run_part("sim", ["cargo", "bench", "-q", "-p", "goodput-sim", "--bench", "streams"],
                   {"SCENARIOS": "fidelity,hold,capacity"})
    rows = {r["scenario"]: r for r in table(out, "## Results")}
    r = rows.get("fidelity")
    target = "< 1 ms, no errors"
    name = "simulator: 2,000 streams × 50 tokens/s, p99 emission lag (one core)"
    if r:
        p99, err = num(r["steady lag p99 ms"]), num(r["errors"])
        f.add(name, target, f"{p99:.3f} ms, {r['errors']} errors, sim at {r['sim cores']} cores",
              p99 < 1.0 and err == 0, r["load 1m"])
    else:
        f.missing(name, target, "see target/figures/sim.log")
    r = rows.get("hold")
    name = "simulator: 10,000 concurrent streams"
    target = "10,000 held; 0 failed; no headers > 500 ms"
    if r:
        held, err, stalls = num(r["held"]), num(r["errors"]), num(r["header stalls"])
        f.add(name, target, f"{r['held']} held, {r['errors']} failed, {r['header stalls']} stalls "
              f"(slowest headers {r['slowest headers ms']} ms)",
              held == 10000 and err == 0 and stalls == 0, r["load 1m"])
    else:
        f.missing(name, target, "see target/figures/sim.log")
    r = rows.get("capacity")
    name = "simulator: chunks/s one core sustains"
    if r:
        f.add(name, "a figure", f"{num(r['chunks/s per core']):,.0f} chunks/s per core "
              f"({r['CPU us/chunk']} µs/chunk; {num(r['chunks/s']):,.0f} chunks/s at {r['sim cores']} cores)",
              None, r["load 1m"])
    else:
        f.missing(name, "a figure", "see target/figures/sim.log")


def bench_client(name, args, duration):
    exe = TARGET / "release" / "goodput-bench"
    return run_part(name, [str(exe), "client", "--rates", "none", "--no-sweep",
                           "--duration", str(duration)] + args)


def part_client(f, duration):
    out = bench_client("client", ["--streams", "1000", "--itl-ms", "20"], duration)
    fid = next(iter(table(out, "## Fidelity (closed loop")), None)
    floor = next(iter(table(out, "## Floor")), None)
    name = "client: goodput − raw-socket floor, lag p99, 1,000 streams × 50 tokens/s"
    if fid and floor:
        added = num(floor["goodput − floor p99"])
        f.add(name, "< 0.5 ms", f"{added:.3f} ms (goodput {floor['goodput lag p99']}, "
              f"floor {floor['floor lag p99']}; sim at {fid['sim cores']} cores)",
              added < 0.5, fid["load 1m"])
    else:
        f.missing(name, "< 0.5 ms", "see target/figures/client.log")
    name = "client: TTFT error p99, 1,000 streams, simulator on its own core"
    if fid:
        err = num(fid["TTFT err p99"])
        f.add(name, "< 5 ms", f"{err:.3f} ms (p50 {fid['TTFT err p50']}; {fid['ok/failed']} ok/failed)",
              err < 5.0 and num(fid["ok/failed"].split("/")[1]) == 0, fid["load 1m"])
    else:
        f.missing(name, "< 5 ms", "see target/figures/client.log")


def part_threads(f, duration):
    per_core = {}
    for n in (1, 2):
        out = bench_client(f"threads{n}" if n > 1 else "threads",
                           ["--streams", "1000", "--itl-ms", "0", "--no-floor", "--client-threads", str(n)],
                           duration)
        r = next(iter(table(out, "## Fidelity (closed loop")), None)
        name = f"client: --client-threads {n}, 1,000 streams, ITL 0"
        if r is None:
            f.missing(name, "a figure", f"see target/figures/threads{n if n > 1 else ''}.log")
            continue
        mtok = num(r["CPU s/Mtok"])
        per_core[n] = 1e6 / mtok if mtok else None
        pinned = "pinned" if "pinned to CPU" in (out or "").split("- client:")[1].split("\n")[0] else "not pinned"
        target = "a figure" if n == 1 else "tokens/s per core ≥ 80 % of 1 thread's (near-linear)"
        ok = None
        if n == 2 and per_core.get(1) and per_core.get(2):
            ok = per_core[2] >= 0.8 * per_core[1]
        f.add(name, target, f"{r['tokens/s']} tokens/s at {r['client cores']} client cores: "
              f"{per_core[n]:,.0f} tokens/s per core ({pinned}; sim at {r['sim cores']} cores)",
              ok, r["load 1m"])


def part_hold(f, duration):
    out = bench_client("hold", ["--streams", "10000", "--itl-ms", "500", "--tokens", "16", "--no-floor"],
                       duration)
    r = next(iter(table(out, "## Fidelity (closed loop")), None)
    name = "client: 10,000 concurrent streams from one process"
    target = "10,000 in flight, 0 failed, peak RSS < 200 MB"
    if r is None:
        f.missing(name, target, "see target/figures/hold.log")
        return
    held, failed, rss = num(r["held"]), num(r["ok/failed"].split("/")[1]), num(r["peak RSS MiB"])
    mb = rss * 1.048576
    f.add(name, target, f"{r['held']} in flight, {r['ok/failed']} ok/failed, peak RSS {mb:.0f} MB "
          f"(TTFT err p99 {r['TTFT err p99']} ms)", held >= 10000 and failed == 0 and mb < 200, r["load 1m"])


def part_peers(f, concurrency):
    # Closed loop only (two alternating repetitions); the open loop and the capture
    # are bench/peers.py's own run.
    out = run_part("peers", [sys.executable, str(ROOT / "bench" / "peers.py"), "--concurrency", concurrency,
                             "--rates", "", "--no-capture", "--goodput", str(TARGET / "release" / "goodput")])
    # peers.py's first table: measured values with the error in parentheses.
    lines = (out or "").splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith("| streams | tool |")), None)
    if start is None:
        f.missing("peers: TTFT error p99 per tool", "goodput closest", "see target/figures/peers.log")
        return None
    header = [c.strip() for c in lines[start].strip("|").split("|")]
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append(dict(zip(header, [c.strip() for c in line.strip().strip("|").split("|")])))
    # With `--noisy` the table has a scenario column too; the figure is the quiet rows'.
    rows = [r for r in rows if r.get("scenario", "quiet") == "quiet"]
    err = lambda cell: num(re.search(r"\(([-+0-9.]+)\)", cell).group(1)) if "(" in cell else None
    for c in sorted({r["streams"] for r in rows}, key=num):
        cells = {r["tool"]: err(r["TTFT p99"]) for r in rows if r["streams"] == c}
        mine = cells.get("goodput")
        peers = [v for t, v in cells.items() if t != "goodput" and v is not None]
        ok = None if mine is None or not peers else all(abs(mine) <= abs(v) for v in peers)
        text = ", ".join(f"{t} {v:+.2f} ms" if v is not None else f"{t} -" for t, v in cells.items())
        f.add(f"peers: TTFT error p99 at {c} streams", "goodput closest to the truth", text, ok, load1())
    return out


def build():
    for cmd in (["cargo", "build", "--release", "-p", "goodput", "-p", "goodput-bench"],
                ["cargo", "bench", "-p", "goodput-sim", "--bench", "streams", "--no-run"]):
        log(" ".join(cmd))
        if subprocess.run(cmd, cwd=ROOT).returncode != 0:
            sys.exit(f"figures: `{' '.join(cmd)}` failed")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--parts", default=",".join(PARTS), help=f"any of {','.join(PARTS)}")
    p.add_argument("--no-build", action="store_true", help="use the binaries already built")
    p.add_argument("--duration", type=float, default=10.0, help="seconds of sends per goodput-bench run")
    p.add_argument("--peers-concurrency", default="1,100,500,1000")
    p.add_argument("--peers-timeout", type=float, default=LIMITS["peers"],
                   help="wall-clock bound of the peers part, s (a loaded machine needs more)")
    a = p.parse_args()
    parts = [x.strip() for x in a.parts.split(",") if x.strip()]
    LIMITS["peers"] = a.peers_timeout
    unknown = [x for x in parts if x not in PARTS]
    if unknown:
        sys.exit(f"figures: unknown part(s) {unknown}; known: {PARTS}")
    if not a.no_build:
        build()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip() or "?"
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    head = (f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; commit {commit}; "
            f"{cpu}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}\n"
            f"- at start: load average {load1()}; busiest processes: {busiest()}")
    started = time.monotonic()
    f = Figures()
    peers_out = None
    for part in parts:
        if part == "sim":
            part_sim(f)
        elif part == "client":
            part_client(f, a.duration)
        elif part == "threads":
            part_threads(f, a.duration)
        elif part == "hold":
            part_hold(f, a.duration)
        elif part == "peers":
            peers_out = part_peers(f, a.peers_concurrency)
    out = (f"## Fidelity at scale: figures and targets\n\n{head}\n"
           f"- at end: load average {load1()}; {time.monotonic() - started:.0f} s of runs\n\n{f.markdown()}\n")
    if peers_out:
        out += "\n" + peers_out
    (TARGET / "figures" / "figures.md").write_text(out)
    print(out)


if __name__ == "__main__":
    main()
