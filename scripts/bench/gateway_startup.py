#!/usr/bin/env python3
"""Gateway start-up: spawn of `talon gateway` to its first /healthz 200, and
RSS at that moment, 21 times each on a fresh state directory and on an existing
one. Build first: cargo build --release -p talon-cli --features mock-model.
Usage: scripts/bench/gateway_startup.py [path/to/talon]. Results in docs/benchmarks.md."""
import os, subprocess, time, socket, sys, tempfile, statistics, urllib.request
exe = sys.argv[1] if len(sys.argv) > 1 else "target/release/talon"
def port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p
def once(state):
    p = port()
    env = dict(os.environ, TALON_STATE_DIR=state, HOME=state)
    env.pop("TALON_CONFIG", None)
    t0 = time.perf_counter()
    proc = subprocess.Popen([exe, "gateway", "--listen", f"127.0.0.1:{p}"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{p}/healthz", timeout=1) as r:
                if r.status == 200: break
        except Exception:
            time.sleep(0.0005)
    ready = time.perf_counter() - t0
    rss = int([l for l in open(f"/proc/{proc.pid}/status") if l.startswith("VmRSS")][0].split()[1])
    proc.terminate(); proc.wait()
    return ready * 1000, rss / 1024
for label, fresh in [("first start (creates talon.db, migrates, mints the admin token)", True), ("restart on an existing state directory", False)]:
    times, rsss = [], []
    base = tempfile.mkdtemp()
    for i in range(21):
        state = tempfile.mkdtemp() if fresh else base
        t, r = once(state)
        times.append(t); rsss.append(r)
    times.sort(); rsss.sort()
    print(f"{label}: spawn to /healthz 200 median {statistics.median(times):.1f} ms (min {times[0]:.1f}, max {times[-1]:.1f}); RSS at ready median {statistics.median(rsss):.1f} MB")
