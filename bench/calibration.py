#!/usr/bin/env python3
"""How often `goodput compare` is wrong where users are: real clocks, the default
2 trials, separate runs, against noisy servers goodput did not start.

Every run gets its own fresh `goodput sim` server (the simulator's engine model with
seeded noise: each step's duration and each request's work scaled by log-normal
factors, `--jitter`-style, here sigma 0.3 for both by default; prefix caching off,
so no run warms another's cache), reached as a `--url`-style engine, so goodput
measures it on the wall clock like any other server. Each server has its own seed:
two servers are two independent engines with the same settings.

- A/A: `--pairs` pairs of separate runs, each side a fresh server with identical
  settings; `goodput compare a.json b.json` on each pair. A table with any
  better/worse row is a false alarm (target: at most 1 of 8).
- Known effect: `--effect-pairs` pairs where the candidate's decode is 10% slower
  (the fixed step cost, per sequence and per KV token, times 1.1): how many tables
  call median TPOT worse at some load level, at every level, and the trials a side
  `compare` says would detect it where it does not.
- Within one profile: `--within` runs with two identical servers as two engines of
  one profile (interleaved, when the runner interleaves), `goodput compare r.json`
  (its engines against the first) and the verdict's ranking (`goodput show`): false
  alarms, and whether the verdict ever ranks where compare does not.

Prints one table (Markdown) with the machine's load average before and after.
Run from the repository root after `cargo build --release`:

    python3 bench/calibration.py                    # 8 + 8 pairs, 4 within
    python3 bench/calibration.py --pairs 2 --effect-pairs 2 --within 1   # quick
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sim_config(path, slower, sigma):
    with open(path, "w") as f:
        f.write(
            f"""model = "noisy"
prefix_caching = false
step_fixed_ms = {8.0 * slower}
per_decode_seq_ms = {0.05 * slower}
per_kv_token_ms = {0.00002 * slower}
per_prefill_token_ms = 0.05
[jitter]
step = {sigma}
request = {sigma}
"""
        )


class Server:
    def __init__(self, binary, config, seed, log):
        self.port = free_port()
        self.log = open(log, "w")
        self.proc = subprocess.Popen(
            [binary, "sim", "--config", config, "--seed", str(seed), "--port", str(self.port),
             "--threads", "1"],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"sim on port {self.port} did not start (see {log})")

    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def profile(path, engines, args):
    points = ", ".join(args.points.split(","))
    text = f"""name = "calibration"
[slo]
ttft_ms = {args.slo_ttft}
tpot_ms = {args.slo_tpot}
[load]
mode = "concurrency"
points = [{points}]
requests_per_trial = {args.requests}
trials = {args.trials}
warmup_requests = 2
request_timeout_s = 60
seed = 1
[workload]
input_tokens = {args.input_tokens}
output_tokens = {args.output_tokens}
"""
    for name, url in engines:
        text += f'[engines.{name}]\nkind = "url"\nurl = "{url}"\n'
    with open(path, "w") as f:
        f.write(text)


def run(binary, prof, out):
    r = subprocess.run([binary, "run", prof, "-o", out, "--quiet", "--no-html"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"run {prof} -> {out}: exit {r.returncode}\n{r.stderr[-2000:]}")


def compare(binary, *reports):
    r = subprocess.run([binary, "compare", *reports, "--format", "json"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"compare: exit {r.returncode}\n{r.stderr[-2000:]}")
    return json.loads(r.stdout)


def one_side(binary, tmp, tag, config, seed, args):
    s = Server(binary, config, seed, os.path.join(tmp, f"{tag}.sim.log"))
    try:
        prof = os.path.join(tmp, f"{tag}.toml")
        profile(prof, [("sim", s.url())], args)
        out = os.path.join(tmp, f"{tag}.json")
        run(binary, prof, out)
        return out
    finally:
        s.stop()


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binary", default=os.path.join(ROOT, "target/release/goodput"))
    ap.add_argument("--pairs", type=int, default=8)
    ap.add_argument("--effect-pairs", type=int, default=8)
    ap.add_argument("--within", type=int, default=4)
    ap.add_argument("--sigma", type=float, default=0.3)
    ap.add_argument("--trials", type=int, default=2)
    ap.add_argument("--points", default="1,2,4")
    ap.add_argument("--requests", type=int, default=24)
    ap.add_argument("--input-tokens", type=int, default=256)
    ap.add_argument("--output-tokens", type=int, default=32)
    ap.add_argument("--slo-ttft", type=float, default=60)
    ap.add_argument("--slo-tpot", type=float, default=10)
    args = ap.parse_args()
    if not os.path.exists(args.binary):
        sys.exit(f"{args.binary} not found: cargo build --release first")
    started, load0 = time.time(), loadavg()
    tmp = tempfile.mkdtemp(prefix="goodput-cal-")
    same, slow = os.path.join(tmp, "same.toml"), os.path.join(tmp, "slow.toml")
    sim_config(same, 1.0, args.sigma)
    sim_config(slow, 1.1, args.sigma)

    aa_tables, aa_rows, aa_flagged, flagged_metrics = 0, 0, 0, {}
    for i in range(args.pairs):
        a = one_side(args.binary, tmp, f"aa{i}a", same, 1000 + 2 * i, args)
        b = one_side(args.binary, tmp, f"aa{i}b", same, 1001 + 2 * i, args)
        c = compare(args.binary, a, b)
        hits = [r for r in c["rows"] if r["significant"]]
        aa_rows += len(c["rows"])
        aa_flagged += len(hits)
        aa_tables += bool(hits)
        for r in hits:
            flagged_metrics[r["metric"]] = flagged_metrics.get(r["metric"], 0) + 1
        print(f"A/A {i + 1}/{args.pairs}: {len(hits)} better/worse rows; {c['conclusion'][:160]}",
              file=sys.stderr)

    eff_any, eff_all, eff_rows, eff_hits, needed = 0, 0, 0, 0, []
    for i in range(args.effect_pairs):
        a = one_side(args.binary, tmp, f"ef{i}a", same, 3000 + 2 * i, args)
        b = one_side(args.binary, tmp, f"ef{i}b", slow, 3001 + 2 * i, args)
        c = compare(args.binary, a, b)
        tpot = [r for r in c["rows"] if r["metric"] == "median TPOT ms"]
        worse = [r for r in tpot if r["direction"] == "worse"]
        eff_rows += len(tpot)
        eff_hits += len(worse)
        eff_any += bool(worse)
        eff_all += bool(tpot) and len(worse) == len(tpot)
        needed += [r["trials_needed"] for r in tpot if r.get("trials_needed")]
        print(f"effect {i + 1}/{args.effect_pairs}: TPOT worse at {len(worse)} of {len(tpot)} levels",
              file=sys.stderr)

    w_tables, w_rows, w_disagree = 0, 0, 0
    for i in range(args.within):
        s1 = Server(args.binary, same, 5000 + 2 * i, os.path.join(tmp, f"w{i}a.sim.log"))
        s2 = Server(args.binary, same, 5001 + 2 * i, os.path.join(tmp, f"w{i}b.sim.log"))
        try:
            prof = os.path.join(tmp, f"w{i}.toml")
            profile(prof, [("a", s1.url()), ("b", s2.url())], args)
            out = os.path.join(tmp, f"w{i}.json")
            run(args.binary, prof, out)
        finally:
            s1.stop()
            s2.stop()
        c = compare(args.binary, out)
        hits = [r for r in c["rows"] if r["significant"]]
        w_rows += len(hits)
        w_tables += bool(hits)
        show = subprocess.run([args.binary, "show", out], capture_output=True, text=True).stdout
        ranked = " leads: " in show
        goodput_hit = any(r["metric"] == "goodput req/s" for r in hits)
        w_disagree += ranked != goodput_hit
        print(f"within {i + 1}/{args.within}: {len(hits)} better/worse rows; verdict ranks: {ranked}",
              file=sys.stderr)

    pct = lambda a, b: f"{100.0 * a / max(b, 1):.0f}%"
    needed.sort()
    print(f"\nReal clocks, {args.points} concurrency, {args.requests} requests a trial, "
          f"{args.trials} trials, sim sigma {args.sigma}, SLO TTFT <= {args.slo_ttft} ms, "
          f"TPOT <= {args.slo_tpot} ms; load average {load0} at start, {loadavg()} at end; "
          f"{os.cpu_count()} CPUs; {time.time() - started:.0f} s.\n")
    print("| measure | value | target |")
    print("|---|---|---|")
    print(f"| A/A pairs of separate runs with any better/worse row | {aa_tables} of {args.pairs} | at most 1 of 8 |")
    print(f"| A/A rows called better/worse | {aa_flagged} of {aa_rows} ({', '.join(f'{k}: {v}' for k, v in flagged_metrics.items()) or 'none'}) | |")
    print(f"| decode 10% slower: median TPOT worse at some level | {eff_any} of {args.effect_pairs} tables | most |")
    print(f"| decode 10% slower: worse at every level | {eff_all} of {args.effect_pairs} tables | |")
    print(f"| decode 10% slower: TPOT rows called worse | {eff_hits} of {eff_rows} ({pct(eff_hits, eff_rows)}) | |")
    if needed:
        print(f"| trials a side compare says would detect 2% where it did not (median) | {needed[len(needed) // 2]} | |")
    if args.within:
        print(f"| two identical engines in one profile: tables with a better/worse row | {w_tables} of {args.within} | |")
        print(f"| ... the verdict ranks where compare's goodput row does not (or the reverse) | {w_disagree} of {args.within} | 0 |")


if __name__ == "__main__":
    main()
