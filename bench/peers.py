#!/usr/bin/env python3
"""goodput, GuideLLM and AIPerf side by side against one known truth.

Starts `goodput sim` with a fixed schedule (every request: TTFT 50 ms, then one
token every 20 ms, 64 tokens), runs each tool against it at the same concurrencies
with the same request shape, reads each tool's per-request output files, and prints
one table: each tool's median and p99 TTFT and ITL next to the truth, and goodput's
error divided by each peer's error (below 1: goodput is closer to the truth).

All percentiles are computed here, from the per-request values each tool wrote, with
one method (numpy's default linear interpolation), so the tools differ only in what
they measured. ITL comes in two definitions, and each is compared only with itself:
- ITL/req: a request's mean gap, (last token - first token) / (tokens - 1); what
  GuideLLM's `inter_token_latency_ms` and AIPerf's `inter_token_latency` report;
- ITL/gap: every gap between two chunks; goodput's ITL, AIPerf's
  `inter_chunk_latency` (GuideLLM keeps no per-gap times).

Each tool runs pinned to CPU 0 (`taskset`), the simulator (one runtime thread) to
CPU 1, and every tool's CPU time and peak RSS (of its largest process) are read
from `wait4` and printed beside its errors.

The peers are installed with pip, when the script runs (never by the tests), into
virtual environments under ~/.cache/goodput/peers-venv (PyPI only). They need a Hugging Face tokenizer to build prompts;
with no network to the Hub, the script trains a small byte-level BPE tokenizer
locally (the `tokenizers` package both tools install) and passes its directory. A
peer that cannot be installed or run is reported with the reason, and the rest go on.

Usage: bench/peers.py [--concurrency 1,100,500,1000] [--rounds 8] [--tools goodput,guidellm,aiperf]
                      [--no-pin]
"""

import argparse
import datetime
import threading
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
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


def quantile(values, q):
    """numpy's default (linear) quantile."""
    v = sorted(values)
    if not v:
        return None
    pos = q * (len(v) - 1)
    lo, hi = int(pos), min(int(pos) + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# What the last `run` cost: (CPU seconds, peak RSS MB of its largest process).
LAST_USAGE = [None]


def run(cmd, log_path, timeout, cwd=None, env=None):
    """Runs cmd with output to log_path; returns (ok, reason); its CPU time and peak
    RSS (from wait4: the process and the descendants it waited for) in LAST_USAGE."""
    LAST_USAGE[0] = None
    with open(log_path, "w") as out:
        try:
            p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                 cwd=cwd, env=env, stdin=subprocess.DEVNULL)
        except OSError as e:
            return False, f"cannot run {cmd[0]}: {e}"
        timer = threading.Timer(timeout, p.kill)
        timer.start()
        try:
            _, status, ru = os.wait4(p.pid, 0)
        finally:
            timer.cancel()
        p.returncode = os.waitstatus_to_exitcode(status)
    LAST_USAGE[0] = (ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024)
    if p.returncode == -9:
        return False, f"timed out after {timeout} s (log: {log_path})"
    if p.returncode != 0:
        tail = Path(log_path).read_text(errors="replace").strip().splitlines()[-3:]
        return False, f"exit {p.returncode}: {' / '.join(tail)[:300]} (log: {log_path})"
    return True, ""


def pinned(cmd, cpu):
    """cmd run on one CPU (`taskset`), or as is when cpu is None."""
    return cmd if cpu is None else ["taskset", "-c", str(cpu)] + list(cmd)


class Sim:
    """`goodput sim` with the fixed schedule, on a free loopback port."""

    def __init__(self, goodput, workdir, ttft_ms, itl_ms, cpu=None):
        self.port = free_port()
        config = workdir / "sim.toml"
        config.write_text(f"max_model_len = 65536\n[schedule]\nttft_ms = {ttft_ms}\nitl_ms = {itl_ms}\n")
        self.log = open(workdir / f"sim-{self.port}.log", "w")
        cmd = [goodput, "sim", "--config", str(config), "--port", str(self.port), "--threads", "1"]
        self.proc = subprocess.Popen(pinned(cmd, cpu),
                                     stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.url = f"http://127.0.0.1:{self.port}"
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
    script = out_dir.parent / "make_tokenizer.py"
    script.write_text(TOKENIZER_PY)
    return run([str(python), str(script), str(out_dir)], out_dir.parent / "tokenizer.log", 300)


# --- one tool at one concurrency: per-request TTFT, ITL/req, ITL/gap in ms ---------------

def run_goodput(goodput, url, c, n, a, work, cpu):
    profile = work / f"goodput-c{c}.toml"
    profile.write_text(f"""name = "peers-c{c}"
[slo]
ttft_ms = 1000
tpot_ms = 100
[load]
mode = "concurrency"
points = [{c}]
requests_per_trial = {n}
trials = 1
warmup_requests = {c}
[workload]
kind = "synthetic"
input_tokens = {a.prompt_tokens}
output_tokens = {a.tokens}
[telemetry]
source = "none"
[engines.sim]
url = "{url}"
""")
    report = work / f"goodput-c{c}.json"
    for stale in (report, work / f"goodput-c{c}.requests.jsonl"):
        stale.unlink(missing_ok=True)
    ok, why = run(pinned([goodput, "run", str(profile), "-o", str(report), "--quiet", "--no-html",
                          "--fresh", "--client-threads", "1"], cpu),
                  work / f"goodput-c{c}.log", 900)
    if not ok:
        return None, why
    ttft, itl_req, itl_gap = [], [], []
    for line in (work / f"goodput-c{c}.requests.jsonl").read_text().splitlines():
        r = json.loads(line)
        t = [ch["t"] for ch in r.get("chunks", [])]
        if r.get("error") or not t:
            continue
        ttft.append((t[0] - r["sent"]) / 1e6)
        if len(t) > 1:
            itl_req.append((t[-1] - t[0]) / 1e6 / (len(t) - 1))
            itl_gap.extend((b - a_) / 1e6 for a_, b in zip(t, t[1:]))
    return (ttft, itl_req, itl_gap), ""


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


# --- the table -------------------------------------------------------------------------

# Errors both below this (ms) are a tie: their ratio would only be noise.
TIE_MS = 0.05
METRICS = [("TTFT", 0, "ttft_ms"), ("ITL/req", 1, "itl_ms"), ("ITL/gap", 2, "itl_ms")]


def fmt(v, digits=2):
    return "-" if v is None else f"{v:.{digits}f}"


def table(results, a):
    """results: {c: {tool: (samples or None, reason)}}"""
    truth = {"ttft_ms": a.ttft_ms, "itl_ms": a.itl_ms}
    lines = ["| streams | tool | requests | " + " | ".join(
        f"{m} p50 | {m} p99" for m, _, _ in METRICS) + " |",
        "|---:|---|---:|" + "---:|" * (2 * len(METRICS))]
    ratio_lines = ["| streams | peer | " + " | ".join(f"{m} p50 | {m} p99" for m, _, _ in METRICS) + " |",
                   "|---:|---|" + "---:|" * (2 * len(METRICS))]
    notes = []
    for c, by_tool in results.items():
        errs = {}
        for tool, (samples, why) in by_tool.items():
            if samples is None:
                lines.append(f"| {c} | {tool} | - | " + " | ".join(["-"] * 2 * len(METRICS)) + " |")
                notes.append(f"- {tool} at {c} streams did not run: {why}")
                continue
            cells, errs[tool] = [], {}
            for m, i, key in METRICS:
                v = samples[i]
                for q in (0.5, 0.99):
                    x = quantile(v, q) if v else None
                    err = None if x is None else x - truth[key]
                    errs[tool][(m, q)] = err
                    cells.append("-" if x is None else f"{x:.2f} ({err:+.2f})")
            lines.append(f"| {c} | {tool} | {len(samples[0])} | " + " | ".join(cells) + " |")
        base = errs.get("goodput")
        for tool, e in errs.items():
            if tool == "goodput" or base is None:
                continue
            cells = []
            for m, _, _ in METRICS:
                for q in (0.5, 0.99):
                    g, p = base.get((m, q)), e.get((m, q))
                    if g is None or p is None:
                        cells.append("-")
                    elif max(abs(g), abs(p)) < TIE_MS:
                        cells.append("tie")  # both within the noise: a ratio would be noise
                    else:
                        cells.append(f"{abs(g) / max(abs(p), 1e-9):.2f}")
            ratio_lines.append(f"| {c} | {tool} | " + " | ".join(cells) + " |")
    return "\n".join(lines), "\n".join(ratio_lines), notes


def cost_table(usage, concurrencies, tools):
    """CPU seconds and peak RSS per tool per concurrency, and each peer's / goodput's."""
    lines = ["| streams | " + " | ".join(f"{t} CPU s | {t} RSS MB" for t in tools) + " |",
             "|---:|" + "---:|" * (2 * len(tools))]
    for c in concurrencies:
        cells = []
        for t in tools:
            u = usage.get((c, t))
            cells += ["-", "-"] if u is None else [f"{u[0]:.2f}", f"{u[1]:.0f}"]
        lines.append(f"| {c} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--concurrency", default="1,100,500,1000")
    p.add_argument("--rounds", type=int, default=8, help="measured requests per stream")
    p.add_argument("--tools", default="goodput,guidellm,aiperf")
    p.add_argument("--ttft-ms", type=float, default=50.0)
    p.add_argument("--itl-ms", type=float, default=20.0)
    p.add_argument("--tokens", type=int, default=64)
    p.add_argument("--prompt-tokens", type=int, default=32)
    p.add_argument("--goodput", help="goodput binary (default: build target/release/goodput)")
    p.add_argument("--work", default=str(ROOT / "target" / "peers"))
    p.add_argument("--no-pin", action="store_true", help="do not pin the tools and the simulator")
    a = p.parse_args()
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    venvs = Path.home() / ".cache" / "goodput" / "peers-venv"
    two_cpus = not a.no_pin and len(os.sched_getaffinity(0)) >= 2 and shutil.which("taskset")
    tool_cpu, sim_cpu = (0, 1) if two_cpus else (None, None)
    tools = [t.strip() for t in a.tools.split(",") if t.strip()]
    concurrencies = [int(x) for x in a.concurrency.split(",")]

    goodput = a.goodput or str(ROOT / "target" / "release" / "goodput")
    if not a.goodput:
        log("building goodput (release)")
        ok, why = run(["cargo", "build", "--release", "-p", "goodput"], work / "cargo.log", 3600, cwd=ROOT)
        if not ok:
            sys.exit(f"cannot build goodput: {why}")

    unavailable, exes = {}, {}
    for tool in tools:
        if tool == "goodput":
            continue
        exe, why = ensure_venv(tool, venvs)
        if exe is None:
            unavailable[tool] = why
        exes[tool] = exe
    tokenizer = venvs / "tokenizer"
    pythons = [venvs / t / "bin" / "python" for t in exes if exes[t]]
    if pythons:
        ok, why = ensure_tokenizer(pythons[0], tokenizer)
        if not ok:
            for t in exes:
                unavailable.setdefault(t, f"no local tokenizer could be built: {why}")

    results, usage = {}, {}
    for c in concurrencies:
        n = max(c * a.rounds, 16)
        results[c] = {}
        for tool in tools:
            if tool in unavailable:
                results[c][tool] = (None, unavailable[tool])
                continue
            log(f"{tool} at {c} streams, {n} requests")
            sim = Sim(goodput, work, a.ttft_ms, a.itl_ms, sim_cpu)
            try:
                if tool == "goodput":
                    results[c][tool] = run_goodput(goodput, sim.url, c, n, a, work, tool_cpu)
                elif tool == "guidellm":
                    results[c][tool] = run_guidellm(exes[tool], sim.url, c, n, a, work, tokenizer, tool_cpu)
                elif tool == "aiperf":
                    results[c][tool] = run_aiperf(exes[tool], sim.url, c, n, a, work, tokenizer, tool_cpu)
                else:
                    results[c][tool] = (None, "unknown tool")
            except Exception as e:  # a peer's odd output must not stop the others
                results[c][tool] = (None, f"{type(e).__name__}: {e}")
            finally:
                sim.stop()
            usage[(c, tool)] = LAST_USAGE[0]

    measured, ratios, notes = table(results, a)
    costs = cost_table(usage, concurrencies, tools)
    pinning = ("each tool pinned to CPU 0, `goodput sim --threads 1` to CPU 1" if tool_cpu is not None
               else "not pinned")
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    versions = ", ".join(f"{t} {VERSIONS[t]}" for t in tools if t in VERSIONS)
    out = f"""## goodput vs GuideLLM vs AIPerf

- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; machine: {cpu}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}; load average at end {os.getloadavg()[0]:.2f}
- truth: `goodput sim` fixed schedule, TTFT {a.ttft_ms} ms, ITL {a.itl_ms} ms, {a.tokens} tokens per request, {a.prompt_tokens}-token prompts; {a.rounds} measured requests per stream after a warm-up of one request per stream; {versions}
- {pinning}; goodput opens its connections before the trial and keeps them out of TTFT (the peers count connecting in TTFT)
- cells: measured ms (measured − truth); percentiles computed from each tool's per-request output files with one method

{measured}

goodput's |error| / the peer's |error| (below 1: goodput is closer to the truth; "tie": both errors under {TIE_MS} ms):

{ratios}

What each tool cost (CPU seconds over the whole run, start-up included; peak RSS of its largest process, MB):

{costs}
"""
    if notes:
        out += "\n" + "\n".join(notes) + "\n"
    (work / "peers.md").write_text(out)
    print(out)


if __name__ == "__main__":
    main()
