"""The wire, for bench/peers.py: a loopback capture of one run (tcpdump) and what it
shows per request, independent of any tool's clock.

For each TCP connection the packets are walked in time order: a client segment that
follows a response (or opens the connection) starts a request, later client segments
before the answer move its time (a request written in pieces arrives with its last
one); the first server segment carrying `"goodput_sched_ns":` is its first token
chunk. From these:
- wire TTFT: first chunk's segment - the request's last segment;
- arrival to clock start: the chunk's `goodput_sched_ns` - TTFT - the request's
  segment (tcpdump's CLOCK_REALTIME mapped onto CLOCK_MONOTONIC with an offset read
  when the capture starts);
- simulator lateness: `goodput_probe_ns - goodput_sched_ns` of that chunk.
The first `skip` requests (the warm-up) are left out.
"""

import re
import shutil
import signal
import struct
import subprocess
import time

SCHED = re.compile(rb'"goodput_sched_ns":(\d+)')
PROBE_ANY = re.compile(rb'"goodput_probe_ns":(\d+)')


def available():
    return shutil.which("tcpdump") is not None


class Capture:
    """tcpdump on `lo` for one port, pinned to `cpu`, writing `path`."""

    def __init__(self, path, port, cpu):
        self.path = path
        self.offset_ns = time.time_ns() - time.monotonic_ns()
        cmd = ["tcpdump", "-i", "lo", "-w", str(path), "-s", "2048", "-B", "65536",
               "--time-stamp-precision=nano", f"tcp port {port} and greater 67"]
        if cpu is not None:
            cmd = ["taskset", "-c", str(cpu)] + cmd
        self.err = open(str(path) + ".log", "w")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self.err,
                                     stdin=subprocess.DEVNULL)
        deadline = time.time() + 10
        while time.time() < deadline and self.proc.poll() is None:
            if "listening on" in open(str(path) + ".log").read():
                return
            time.sleep(0.05)
        if self.proc.poll() is not None:
            self.err.close()
            raise RuntimeError(f"tcpdump did not start: {open(str(path) + '.log').read()[-300:]}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.err.close()


def packets(path):
    """(time ns CLOCK_REALTIME, src port, dst port, payload) of each TCP/IPv4 packet."""
    with open(path, "rb") as f:
        head = f.read(24)
        if len(head) < 24:
            return
        magic = struct.unpack("<I", head[:4])[0]
        endian = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
        nano = struct.unpack(endian + "I", head[:4])[0] == 0xA1B23C4D
        link = struct.unpack(endian + "I", head[20:24])[0]
        while True:
            rec = f.read(16)
            if len(rec) < 16:
                return
            sec, frac, incl, _ = struct.unpack(endian + "IIII", rec)
            data = f.read(incl)
            t = sec * 1_000_000_000 + (frac if nano else frac * 1000)
            off = 14 if link == 1 else 16 if link == 113 else 0
            ip = data[off:]
            if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != 6:
                continue
            ihl = (ip[0] & 15) * 4
            tcp = ip[ihl:]
            if len(tcp) < 20:
                continue
            sport, dport = struct.unpack("!HH", tcp[:4])
            payload = tcp[(tcp[12] >> 4) * 4:]
            if payload:
                yield t, sport, dport, payload


def analyse(path, port, offset_ns, ttft_ms, skip):
    """Per-request wire figures (ms): {wire_ttft, clock_start, lateness}."""
    conns = {}  # client port -> [request time, first chunk seen]
    reqs = []   # (request time, first-chunk time, sched, probe)
    for t, sport, dport, payload in packets(path):
        if dport == port:
            st = conns.get(sport)
            if st is None or st[1]:
                conns[sport] = [t, False]
            else:
                st[0] = t
        elif sport == port:
            st = conns.get(dport)
            if st is None or st[1]:
                continue
            m = SCHED.search(payload)
            if m is None:
                continue
            st[1] = True
            p = PROBE_ANY.search(payload)
            reqs.append((st[0], t, int(m.group(1)), int(p.group(1)) if p else None))
    reqs.sort()
    out = {"wire_ttft": [], "clock_start": [], "lateness": []}
    ttft_ns = ttft_ms * 1e6
    for t_req, t_first, sched, probe in reqs[skip:]:
        out["wire_ttft"].append((t_first - t_req) / 1e6)
        out["clock_start"].append((sched - ttft_ns - (t_req - offset_ns)) / 1e6)
        if probe is not None:
            out["lateness"].append((probe - sched) / 1e6)
    return out
