#!/usr/bin/env python3
"""How good `goodput tune` is on black-box engines: its pick against the best of a
dense grid, and the real trials each used.

Each hidden configuration is a simulator engine model (step costs, KV pool) that
goodput is not told: the profile's engine is a `command` engine running a wrapper
script that starts `goodput sim --config HIDDEN.toml --time-scale K` with the flags
tune appends. The flag space is 20 candidates, `--max-num-seqs` (5 values) x
`--max-num-batched-tokens` (4 values). For each hidden configuration:

- **grid** (the truth): `goodput search` on every candidate, for real (the
  dense grid): its capacities, and the real trials it took. The best in the
  space is the grid's best, and a pick's true capacity is the grid's search of
  the same candidate (measured separately from tune's own search).
- **virtual time** (a reference): every candidate's capacity in the simulator's
  virtual time (`goodput run --predict` on the hidden configuration with the
  candidate's keys, every concurrency 1..MAX, 96 requests a level): the largest
  concurrency below which every level meets the attainment target. It is the
  hidden model without the machine: the real runs add the client's and the
  sockets' time on a shared machine, so their capacities are lower; shown to
  say how far the nominal model is from what is measured.
- **tune**: `goodput tune` on the profile (the model-guided scheme, through
  `[tune] speaks = "vllm"`; `--scheme halving` leaves that key out, so successive
  halving runs).

Printed per configuration (one Markdown table): the best of the space (virtual-time
truth, and the grid's), tune's pick with its measured capacity and interval,
whether the pick's true capacity is within one load step (one concurrent request)
of the best (by the grid; by virtual time beside it), and tune's real trials against the
grid's. Target: within one step using at most a third of the grid's trials.

The grid's searches are kept in WORKDIR (`--workdir`) and reused when present,
so a rerun after a change to tune re-measures only tune. Run from the repository
root after `cargo build --release`:

    python3 bench/tune.py --workdir /tmp/tune-bench          # 3 configurations
    python3 bench/tune.py --workdir /tmp/tune-bench --configs 1 --no-grid   # quick
"""

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SEQS = [2, 4, 8, 16, 32]
BATCHED = [32, 64, 128, 1024]
# The hidden configurations, in the model's own (GPU) milliseconds.
HIDDEN = {
    "small-kv": dict(step_fixed_ms=12.0, per_decode_seq_ms=0.6, per_prefill_token_ms=0.08,
                     per_kv_token_ms=0.0005, kv_pool_tokens=2048, max_model_len=1024),
    "prefill-heavy": dict(step_fixed_ms=8.0, per_decode_seq_ms=0.3, per_prefill_token_ms=0.25,
                          per_kv_token_ms=0.0002, kv_pool_tokens=16384, max_model_len=1024),
    "decode-heavy": dict(step_fixed_ms=16.0, per_decode_seq_ms=1.5, per_prefill_token_ms=0.05,
                         per_kv_token_ms=0.001, kv_pool_tokens=8192, max_model_len=1024),
}
# The SLO in the model's milliseconds; the real runs' is this / TIME_SCALE.
TTFT_MS, TPOT_MS, TARGET = 300.0, 40.0, 0.9
INPUT, OUTPUT = 128, 16


def toml_value(v):
    return json.dumps(v) if isinstance(v, str) else repr(v)


def write_config(path, keys, extra=None):
    with open(path, "w") as f:
        f.write('model = "hidden"\nprefix_caching = false\n')
        for k, v in {**keys, **(extra or {})}.items():
            f.write(f"{k} = {toml_value(v)}\n")


def profile_text(name, ttft, tpot, requests, engine, search_max, tune=None):
    text = f"""name = "{name}"
[slo]
ttft_ms = {ttft}
tpot_ms = {tpot}
attainment = {TARGET}
[load]
points = [1]
requests_per_trial = {requests}
trials = 1
warmup_requests = 1
request_timeout_s = 60
seed = 1
[workload]
input_tokens = {INPUT}
output_tokens = {OUTPUT}
calibrate = false
[telemetry]
source = "none"
[search]
min = 1
max = {search_max}
{engine}
"""
    if tune:
        text += tune
    return text


def candidates():
    return [(s, b) for s in SEQS for b in BATCHED]


def flags_of(c):
    return ["--max-num-seqs", str(c[0]), "--max-num-batched-tokens", str(c[1])]


def run(cmd, log):
    with open(log, "w") as f:
        return subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT).returncode


def truth(binary, work, name, keys, search_max):
    """Each candidate's capacity in virtual time on the hidden configuration."""
    prof = os.path.join(work, f"{name}.vt.toml")
    with open(prof, "w") as f:
        f.write(profile_text("vt", TTFT_MS, TPOT_MS, 96, '[engines.box]\nkind = "sim"', search_max))
    caps = {}
    for c in candidates():
        cfg = os.path.join(work, f"{name}.vt.{c[0]}-{c[1]}.toml")
        write_config(cfg, keys, {"max_num_seqs": c[0], "max_num_batched_tokens": c[1]})
        out = os.path.join(work, f"{name}.vt.{c[0]}-{c[1]}.json")
        levels = ",".join(str(x) for x in range(1, search_max + 1))
        run([binary, "run", prof, "--predict", cfg, "--concurrency", levels, "-o", out, "--force",
             "--quiet"], out + ".log")
        points = sorted(json.load(open(out))["load"]["box"]["points"], key=lambda p: p["x"])
        cap = 0
        for p in points:
            if p["attainment"]["median"] < TARGET:
                break
            cap = int(p["x"])
        caps[c] = cap
    return caps


def capacity(report_path):
    r = json.load(open(report_path))
    c = r["capacity"]["box"]
    return c.get("max_load"), c.get("trials", 0)


def grid(binary, work, name, engine, scale, requests, search_max):
    """`goodput search` on every candidate (kept in WORK and reused)."""
    caps, trials, secs = {}, 0, 0.0
    for c in candidates():
        out = os.path.join(work, f"{name}.grid.{c[0]}-{c[1]}.json")
        if not os.path.exists(out):
            prof = os.path.join(work, f"{name}.grid.{c[0]}-{c[1]}.toml")
            eng = engine.replace('"{port}"]', '"{port}", ' + ", ".join(json.dumps(w) for w in flags_of(c)) + "]")
            with open(prof, "w") as f:
                f.write(profile_text(name, TTFT_MS / scale, TPOT_MS / scale, requests, eng, search_max))
            t0 = time.time()
            rc = run([binary, "search", prof, "-o", out, "--force", "--quiet"], out + ".log")
            secs += time.time() - t0
            if rc not in (0, 4):
                sys.exit(f"search of {name} {c} failed (exit {rc}): see {out}.log")
        cap, n = capacity(out)
        caps[c] = cap or 0
        trials += n
    return caps, trials, secs


def tune(binary, work, name, engine, scale, requests, search_max, scheme, budget):
    out = os.path.join(work, f"{name}.tune-{scheme}.json")
    prof = os.path.join(work, f"{name}.tune-{scheme}.toml")
    speaks = 'speaks = "vllm"\n' if scheme == "model" else ""
    space = (f'[tune]\nengine = "box"\n{speaks}max_candidates_measured = {budget}\n[tune.flags]\n'
             f'"--max-num-seqs" = {SEQS}\n"--max-num-batched-tokens" = {BATCHED}\n')
    with open(prof, "w") as f:
        f.write(profile_text(name, TTFT_MS / scale, TPOT_MS / scale, requests, engine, search_max, space))
    t0 = time.time()
    rc = run([binary, "tune", prof, "-o", out, "--fresh", "--quiet"], out + ".log")
    secs = time.time() - t0
    if rc not in (0, 4):
        sys.exit(f"tune of {name} failed (exit {rc}): see {out}.log")
    return json.load(open(out)), secs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", default=os.path.join(ROOT, "target", "release", "goodput"))
    ap.add_argument("--workdir", default="/tmp/goodput-tune-bench")
    ap.add_argument("--configs", type=int, default=len(HIDDEN))
    ap.add_argument("--time-scale", type=float, default=2.0)
    ap.add_argument("--requests", type=int, default=24, help="requests per trial")
    ap.add_argument("--max", type=int, default=40, help="the search's highest concurrency")
    ap.add_argument("--scheme", choices=["model", "halving"], default="model")
    ap.add_argument("--budget", type=int, default=6, help="max_candidates_measured")
    ap.add_argument("--no-grid", action="store_true", help="virtual-time truth only, no real grid")
    ap.add_argument("--grid-binary", help="the goodput that runs the grid (default: --binary)")
    ap.add_argument("--only-grid", action="store_true", help="measure the grid (kept in WORKDIR), no tune")
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    load0 = os.getloadavg()[0]
    rows = []
    for name, keys in list(HIDDEN.items())[: a.configs]:
        cfg = os.path.join(a.workdir, f"{name}.hidden.toml")
        write_config(cfg, keys)
        wrapper = os.path.join(a.workdir, f"{name}.engine.sh")
        with open(wrapper, "w") as f:
            f.write(f'#!/bin/sh\nexec "{a.binary}" sim --config "{cfg}" --time-scale {a.time_scale} '
                    f'--no-thermal --threads 1 "$@"\n')
        os.chmod(wrapper, 0o755)
        engine = f'[engines.box]\nkind = "command"\ncommand = ["{wrapper}", "--port", "{{port}}"]'
        vt = truth(a.binary, a.workdir, name, keys, a.max)
        best_vt = max(vt.values())
        g, g_trials, g_secs = ({}, 0, 0.0) if a.no_grid else grid(
            a.grid_binary or a.binary, a.workdir, name, engine, a.time_scale, a.requests, a.max)
        if a.only_grid:
            print(f"{name}: grid {g_trials} trials, {g_secs:.0f} s: "
                  + ", ".join(f"{c[0]}/{c[1]}={v}" for c, v in g.items()), file=sys.stderr)
            continue
        t, t_secs = tune(a.binary, a.workdir, name, engine, a.time_scale, a.requests, a.max,
                         a.scheme, a.budget)
        b = t.get("best")
        pick = (b["flags"]["--max-num-seqs"], b["flags"]["--max-num-batched-tokens"]) if b else None
        iv = (b["capacity"].get("interval") or {}) if b else {}
        rows.append(dict(
            name=name, best_vt=best_vt,
            best_vt_at=[c for c, v in vt.items() if v == best_vt],
            best_grid=max(g.values()) if g else None,
            pick=pick, pick_cap=b["capacity"]["max_load"] if b else None,
            pick_iv=(iv.get("low"), iv.get("high")),
            pick_vt=vt.get(pick), pick_grid=g.get(pick),
            tune_trials=t["trials_run"], grid_trials=g_trials,
            measured=sum(1 for c in t["candidates"] if c.get("measured")),
            tune_s=t_secs, grid_s=g_secs, scheme=t["scheme"],
        ))
        print(f"{name}: {rows[-1]}", file=sys.stderr)
    load1 = os.getloadavg()[0]
    print(f"\n`goodput tune` on hidden simulator configurations ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
          f"time scale {a.time_scale}, {a.requests} requests a trial, 20 candidates, budget {a.budget}, "
          f"scheme {a.scheme}; load average {load0:.1f} -> {load1:.1f})\n")
    print("| hidden config | best (virtual time) | best (grid) | pick | pick measured (95%) | pick's virtual time / grid | "
          "within 1 step (virtual time / grid) | tune trials / grid trials | searches | tune s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    ok = 0
    for r in rows:
        pick = f"{r['pick'][0]} / {r['pick'][1]}" if r["pick"] else "none"
        w_vt = r["pick_vt"] is not None and r["pick_vt"] >= r["best_vt"] - 1
        w_g = r["pick_grid"] is not None and r["best_grid"] is not None and r["pick_grid"] >= r["best_grid"] - 1
        ratio = f"{r['tune_trials']} / {r['grid_trials']}" + (
            f" ({r['tune_trials'] / r['grid_trials']:.2f})" if r["grid_trials"] else "")
        ok += w_g
        lo, hi = r["pick_iv"]
        print(f"| {r['name']} | {r['best_vt']} | {r['best_grid'] if r['best_grid'] is not None else '-'} | "
              f"{pick} | {r['pick_cap']} ({lo}-{hi}) | {r['pick_vt']} / {r['pick_grid'] if r['pick_grid'] is not None else '-'} | "
              f"{'yes' if w_vt else 'no'} / {('yes' if w_g else 'no') if r['best_grid'] is not None else '-'} | "
              f"{ratio} | {r['measured']} | {r['tune_s']:.0f} |")
    print(f"\nwithin one step of the grid's best: {ok} of {len(rows)}")


if __name__ == "__main__":
    main()
