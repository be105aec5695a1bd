"""The Markdown tables of bench/peers.py. Every percentile is numpy's default
(linear) quantile of the pooled per-request values of a tool's repetitions."""

# Errors both below this (ms) are a tie: their ratio would only be noise.
TIE_MS = 0.05
METRICS = [("TTFT", "ttft", "ttft_ms"), ("ITL/req", "itl_req", "itl_ms"), ("ITL/gap", "itl_gap", "itl_ms")]


def quantile(values, q):
    """numpy's default (linear) quantile."""
    v = sorted(values)
    if not v:
        return None
    pos = q * (len(v) - 1)
    lo, hi = int(pos), min(int(pos) + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def fmt(v, digits=2):
    return "-" if v is None else f"{v:.{digits}f}"


def pooled(reps, key):
    """One metric's values over every repetition that ran; None if none has it."""
    vals = [r[key] for r in reps if r is not None and r.get(key) is not None]
    return None if not vals else [x for v in vals for x in v]


def ratio(g, p):
    if g is None or p is None:
        return "-"
    if max(abs(g), abs(p)) < TIE_MS:
        return "tie"
    return f"{abs(g) / max(abs(p), 1e-9):.2f}"


def level_cells(level):
    """A closed-loop level's first cells: C, or C and the scenario for (C, scenario)."""
    return " | ".join(str(x) for x in level) if isinstance(level, tuple) else str(level)


def mean_of(runs, key):
    v = [r[key] for r in runs or [] if r and r.get(key) is not None]
    return sum(v) / len(v) if v else None


def closed_tables(results, truth, reps, tools, base="goodput", foreign=None):
    """results: {(level, tool): [samples or None per repetition]}, level a concurrency
    C, or (C, scenario) with the noisy neighbour (then a "scenario" column follows
    "streams"); foreign: {(level, tool): [neighbour dict per repetition]}, for the
    measured table's "foreign CPU s" column (the hog's CPU seconds, mean over
    repetitions; "-" without a hog). Returns (measured, per-repetition TTFT error,
    ratios vs each peer)."""
    # Levels by C; at one C, in the order they were run (quiet, then each duty).
    levels = sorted(dict.fromkeys(k for k, _ in results),
                    key=lambda k: k[0] if isinstance(k, tuple) else k)
    scen = any(isinstance(k, tuple) for k in levels)
    lead, lead_rule = ("| streams | scenario |", "|---:|---|") if scen else ("| streams |", "|---:|")
    fcol = foreign is not None
    head = f"{lead} tool | requests | " + " | ".join(f"{m} p50 | {m} p99" for m, _, _ in METRICS) + " |"
    measured = [head + (" foreign CPU s |" if fcol else ""),
                lead_rule + "---|---:|" + "---:|" * (2 * len(METRICS)) + ("---:|" if fcol else "")]
    per_rep = [f"{lead} tool | " + " | ".join(f"rep {i + 1} p50 | rep {i + 1} p99" for i in range(reps)) + " |",
               lead_rule + "---|" + "---:|" * (2 * reps)]
    ratios = [f"{lead} peer | " + " | ".join(f"{m} p50 | {m} p99" for m, _, _ in METRICS) + " |",
              lead_rule + "---|" + "---:|" * (2 * len(METRICS))]
    errs = {}
    for c in levels:
        lc = level_cells(c)
        for tool in tools:
            runs = results.get((c, tool))
            if runs is None:
                continue
            fcell = f" {fmt(mean_of(foreign.get((c, tool)), 'foreign_cpu'))} |" if fcol else ""
            ttft = pooled(runs, "ttft")
            if ttft is None:
                measured.append(f"| {lc} | {tool} | - | " + " | ".join(["-"] * 2 * len(METRICS)) + " |" + fcell)
                continue
            cells = []
            for m, key, t in METRICS:
                v = pooled(runs, key)
                for q in (0.5, 0.99):
                    x = quantile(v, q) if v else None
                    err = None if x is None else x - truth[t]
                    errs[(c, tool, m, q)] = err
                    cells.append("-" if x is None else f"{x:.2f} ({err:+.2f})")
            measured.append(f"| {lc} | {tool} | {len(ttft)} | " + " | ".join(cells) + " |" + fcell)
            cells = []
            for r in range(reps):
                v = runs[r]["ttft"] if r < len(runs) and runs[r] else None
                for q in (0.5, 0.99):
                    cells.append("-" if not v else f"{quantile(v, q) - truth['ttft_ms']:+.2f}")
            per_rep.append(f"| {lc} | {tool} | " + " | ".join(cells) + " |")
        for tool in tools:
            if tool == base or (c, tool, "TTFT", 0.5) not in errs or (c, base, "TTFT", 0.5) not in errs:
                continue
            cells = [ratio(errs.get((c, base, m, q)), errs.get((c, tool, m, q)))
                     for m, _, _ in METRICS for q in (0.5, 0.99)]
            ratios.append(f"| {lc} | {tool} | " + " | ".join(cells) + " |")
    return "\n".join(measured), "\n".join(per_rep), "\n".join(ratios)


def neighbour_table(neighbours, tools):
    """neighbours: {((C, scenario), tool): [neighbour dict or None per repetition]}: per
    row the run's wall seconds, the tool's CPU seconds (wait4), the hog's ("foreign")
    CPU seconds (wait4), the hog's achieved duty (its CPU s / wall s) per repetition,
    and the rest of the tool's core's busy time (/proc/stat, less the tool's and the
    hog's); means over repetitions."""
    lines = ["| streams | scenario | tool | wall s | tool CPU s | foreign CPU s | achieved duty (per rep) | "
             "other CPU s on the core |",
             "|---:|---|---|---:|---:|---:|---:|---:|"]
    levels = sorted(dict.fromkeys(k for k, _ in neighbours), key=lambda k: k[0] if isinstance(k, tuple) else k)
    for c in levels:
        for tool in tools:
            runs = neighbours.get((c, tool))
            if runs is None:
                continue
            duties = [r.get("duty") if r else None for r in runs]
            duty = "-" if all(d is None for d in duties) else " / ".join(fmt(d) for d in duties)
            lines.append(f"| {level_cells(c)} | {tool} | {fmt(mean_of(runs, 'wall'))} | "
                         f"{fmt(mean_of(runs, 'tool_cpu'))} | {fmt(mean_of(runs, 'foreign_cpu'))} | {duty} | "
                         f"{fmt(mean_of(runs, 'other_cpu'))} |")
    return "\n".join(lines)


def cost_table(usage, keys, tools, base="goodput", peer="vllm-rs"):
    """usage: {(level, tool): [(cpu s, rss MB) per run]}: mean CPU s, largest RSS, and
    goodput / vllm-rs."""
    lines = ["| level | " + " | ".join(f"{t} CPU s | {t} RSS MB" for t in tools) +
             f" | {base}/{peer} CPU | {base}/{peer} RSS |",
             "|---|" + "---:|" * (2 * len(tools) + 2)]
    for k in keys:
        cells, got = [], {}
        for t in tools:
            u = [x for x in usage.get((k, t), []) if x]
            if not u:
                cells += ["-", "-"]
                continue
            got[t] = (sum(x[0] for x in u) / len(u), max(x[1] for x in u))
            cells += [f"{got[t][0]:.2f}", f"{got[t][1]:.0f}"]
        if base in got and peer in got:
            cells += [f"{got[base][0] / max(got[peer][0], 1e-9):.2f}",
                      f"{got[base][1] / max(got[peer][1], 1e-9):.2f}"]
        else:
            cells += ["-", "-"]
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def probe_table(probes, tools):
    """probes: {(level, tool): [sim probe dict per run]}: the simulator's own figures,
    worst run shown."""
    lines = ["| level | tool | first-chunk lateness p50 ms | p99 ms | arrival to handler p50 ms | p99 ms |",
             "|---|---|---:|---:|---:|---:|"]
    for (k, t) in sorted(probes, key=lambda x: (str(x[0]), tools.index(x[1]) if x[1] in tools else 99)):
        ps = [p for p in probes[(k, t)] if p]
        if not ps:
            lines.append(f"| {k} | {t} | - | - | - | - |")
            continue
        worst = lambda key, i: max((p[key][i] for p in ps if p[key][i] is not None), default=None)
        lines.append(f"| {k} | {t} | {fmt(worst('first', 0), 3)} | {fmt(worst('first', 1), 3)} | "
                     f"{fmt(worst('waited', 0), 3)} | {fmt(worst('waited', 1), 3)} |")
    return "\n".join(lines)


def wire_table(wire, ttft_ms, tool_ttft):
    """wire: {tool: analyse() output}; tool_ttft: {tool: that run's own TTFTs}."""
    lines = ["| tool | requests | wire TTFT err p50 ms | p99 ms | tool TTFT - wire p50 ms | p99 ms | "
             "arrival to clock start p50 ms | p99 ms | sim lateness p50 ms | p99 ms |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for tool, w in wire.items():
        if isinstance(w, str):
            lines.append(f"| {tool} | - | " + " | ".join(["-"] * 8) + f" |  <!-- {w} -->")
            continue
        wt = w["wire_ttft"]
        own = tool_ttft.get(tool) or []
        q = lambda v, p: quantile(v, p) if v else None
        over = lambda p: (None if q(own, p) is None or q(wt, p) is None else q(own, p) - q(wt, p))
        e = lambda p: None if q(wt, p) is None else q(wt, p) - ttft_ms
        lines.append(f"| {tool} | {len(wt)} | {fmt(e(0.5), 3)} | {fmt(e(0.99), 3)} | "
                     f"{fmt(over(0.5), 3)} | {fmt(over(0.99), 3)} | "
                     f"{fmt(q(w['clock_start'], 0.5), 3)} | {fmt(q(w['clock_start'], 0.99), 3)} | "
                     f"{fmt(q(w['lateness'], 0.5), 3)} | {fmt(q(w['lateness'], 0.99), 3)} |")
    return "\n".join(lines)


def open_table(results, truth_ttft, tools):
    """results: {(rate, tool): [samples per repetition]}."""
    lines = ["| rate req/s | tool | requests | achieved req/s | send lag p50 ms | p99 ms | "
             "TTFT err p50 ms | p99 ms |",
             "|---:|---|---:|---:|---:|---:|---:|---:|"]
    for (rate, tool) in sorted(results, key=lambda x: (x[0], tools.index(x[1]) if x[1] in tools else 99)):
        runs = results[(rate, tool)]
        ttft = pooled(runs, "ttft")
        if ttft is None:
            lines.append(f"| {rate} | {tool} | - | - | - | - | - | - |")
            continue
        lag = pooled(runs, "lag")
        rates = [r["rate"] for r in runs if r and r.get("rate")]
        ach = sum(rates) / len(rates) if rates else None
        lines.append(f"| {rate} | {tool} | {len(ttft)} | {fmt(ach, 1)} | "
                     f"{fmt(quantile(lag, 0.5) if lag else None, 3)} | {fmt(quantile(lag, 0.99) if lag else None, 3)} | "
                     f"{quantile(ttft, 0.5) - truth_ttft:+.2f} | {quantile(ttft, 0.99) - truth_ttft:+.2f} |")
    return "\n".join(lines)


def anchored(lags):
    """Send lags (ms) minus the smallest: each request's lag behind the tool's
    least-late request, whatever constant separates the tool's clock for its
    schedule from its clock for its sends. The same formula for every tool."""
    if not lags:
        return None
    least = min(lags)
    return [x - least for x in lags]


def paced_table(results, tools):
    """results: {(rate, tool): [samples per repetition]}, paced open loop."""
    lines = ["| rate req/s | tool | requests | achieved req/s | send lag p50 ms | p99 ms | max ms | "
             "late > 1 ms |",
             "|---:|---|---:|---:|---:|---:|---:|---:|"]
    for (rate, tool) in sorted(results, key=lambda x: (x[0], tools.index(x[1]) if x[1] in tools else 99)):
        runs = results[(rate, tool)]
        lag = pooled(runs, "paced_lag")
        if not lag:
            lines.append(f"| {rate} | {tool} | - | - | - | - | - | - |")
            continue
        rates = [r["rate"] for r in runs if r and r.get("rate")]
        ach = sum(rates) / len(rates) if rates else None
        late = sum(1 for x in lag if x > 1.0)
        lines.append(f"| {rate} | {tool} | {len(lag)} | {fmt(ach, 1)} | {fmt(quantile(lag, 0.5), 3)} | "
                     f"{fmt(quantile(lag, 0.99), 3)} | {fmt(max(lag), 3)} | {late} |")
    return "\n".join(lines)
