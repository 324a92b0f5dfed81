#!/usr/bin/env python3
"""`talon gateway` with its log at `info` (stderr to a file, as an operator
runs it): spawn to the first /healthz 200 and RSS then, and `runs.create` ->
`run.started` on a pre-opened SSE stream, for two binaries interleaved
round by round (BEFORE, AFTER, BEFORE, ...), so that load on the machine
falls on both alike. The model is the scripted mock (build with
`--features mock-model`).
Usage: scripts/bench/logged_runs.py BEFORE AFTER [--rounds N] [--runs M]
                                   [--levels BEFORE_LEVEL,AFTER_LEVEL]
BEFORE and AFTER may be the same binary with two levels (`--levels
warn,info`: what logging at info costs). Results in docs/benchmarks.md."""
import json, os, shutil, socket, statistics, subprocess, sys, tempfile, time, urllib.request, http.client
args = sys.argv[1:]
def opt(name, default):
    if name in args:
        i = args.index(name); v = int(args[i + 1]); del args[i:i + 2]; return v
    return default
rounds, runs = opt("--rounds", 5), opt("--runs", 100)
levels = ["info", "info"]
if "--levels" in args:
    i = args.index("--levels"); levels = args[i + 1].split(","); del args[i:i + 2]
sides = [(args[0], levels[0]), (args[1], levels[1])]
SCRIPT = '{"replay": "perRun", "turns": [{"text": "hi"}]}'
def port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p
def one(exe, level):
    state = tempfile.mkdtemp(prefix="talon-bench-")
    script = os.path.join(state, "script.json"); open(script, "w").write(SCRIPT)
    log = open(os.path.join(state, "log"), "w")
    env = dict(os.environ, TALON_STATE_DIR=state, HOME=state, TALON_LOG=level)
    env.pop("TALON_CONFIG", None); env.pop("RUST_LOG", None); env.pop("TALON_LOG_FORMAT", None)
    p = port()
    t0 = time.perf_counter()
    proc = subprocess.Popen([exe, "gateway", "--listen", f"127.0.0.1:{p}", "--mock-script", script],
                            env=env, stdout=subprocess.PIPE, stderr=log, text=True)
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{p}/healthz", timeout=1) as r:
                if r.status == 200: break
        except Exception:
            time.sleep(0.0005)
    ready = (time.perf_counter() - t0) * 1e3
    rss = int([l for l in open(f"/proc/{proc.pid}/status") if l.startswith("VmRSS")][0].split()[1]) / 1024
    token = proc.stdout.readline().strip()
    auth = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    sse = http.client.HTTPConnection("127.0.0.1", p)
    sse.request("GET", "/v1/events", headers=auth)
    stream = sse.getresponse()
    assert stream.status == 200, stream.status
    calls = http.client.HTTPConnection("127.0.0.1", p)
    lat = []
    for i in range(runs):
        t = time.perf_counter()
        calls.request("POST", "/v1/runs.create", body=json.dumps({"input": "go", "sessionKey": f"s{i}"}), headers=auth)
        r = calls.getresponse(); run = json.loads(r.read())["id"]
        while True:
            line = stream.fp.readline().decode()
            if line.startswith("data:"):
                event = json.loads(line[5:])
                if event.get("type") == "run.started" and event.get("runId") == run:
                    break
        lat.append((time.perf_counter() - t) * 1e3)
    proc.terminate(); proc.wait(timeout=30); log.close()
    lines = sum(1 for _ in open(os.path.join(state, "log")))
    shutil.rmtree(state, ignore_errors=True)
    lat.sort()
    return ready, rss, lat[len(lat) // 2], lat[int(len(lat) * 0.95)], lines
res = {side: [] for side in sides}
for r in range(rounds):
    for side in sides:
        res[side].append(one(*side))
        print(side, "round", r, "ready %.1f ms, rss %.1f MB, create->started p50 %.2f ms p95 %.2f ms, %d log lines" % res[side][-1], flush=True)
for side in sides:
    exe = f"{side[0]} at {side[1]}"
    rs = res[side]
    med = lambda k: statistics.median(x[k] for x in rs)
    print(f"{exe}: ready median {med(0):.1f} ms, rss median {med(1):.1f} MB, p50 median {med(2):.2f} ms, p95 median {med(3):.2f} ms, log lines {med(4):.0f}")
