#!/usr/bin/env python3
"""Gateway start-up: spawn of `talon gateway` to its first /healthz 200, and
RSS at that moment, 21 times each on a fresh state directory and on an existing
one. Build first: cargo build --release -p talon-cli --features mock-model.
Usage: scripts/bench/gateway_startup.py [path/to/talon] [--events N]
--events N: instead, 21 restarts on a talon.db holding N events (one start to
create and migrate it, then the rows inserted with the sqlite3 CLI), with the
background integrity check's own duration (its `took_ms`, logged under
TALON_LOG=talon_store=info) reported apart. Results in docs/benchmarks.md."""
import os, re, shutil, subprocess, time, socket, sys, tempfile, statistics, urllib.request
args = sys.argv[1:]
events = None
if "--events" in args:
    i = args.index("--events"); events = int(args[i + 1]); del args[i:i + 2]
exe = args[0] if args else "target/release/talon"
CHECK = re.compile(r"took_ms=(\d+).*the store's integrity check passed|the store's integrity check passed.*took_ms=(\d+)")
def port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p
def once(state, log=None, check_wait=0.0):
    """Spawn to /healthz 200 (ms), RSS then (MB) and, with `log`, the
    integrity check's took_ms once it is logged (within check_wait s)."""
    p = port()
    env = dict(os.environ, TALON_STATE_DIR=state, HOME=state, NO_COLOR="1")
    env.pop("TALON_CONFIG", None)
    err = subprocess.DEVNULL
    if log:
        env["TALON_LOG"] = "talon_store=info"; err = open(log, "w")
    t0 = time.perf_counter()
    proc = subprocess.Popen([exe, "gateway", "--listen", f"127.0.0.1:{p}"], env=env, stdout=subprocess.DEVNULL, stderr=err)
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{p}/healthz", timeout=1) as r:
                if r.status == 200: break
        except Exception:
            time.sleep(0.0005)
    ready = time.perf_counter() - t0
    rss = int([l for l in open(f"/proc/{proc.pid}/status") if l.startswith("VmRSS")][0].split()[1])
    took, deadline = None, time.perf_counter() + check_wait
    while log:
        m = CHECK.search(open(log).read())
        if m: took = int(m.group(1) or m.group(2)); break
        if time.perf_counter() > deadline: break
        time.sleep(0.005)
    proc.terminate(); proc.wait()
    if log: err.close()
    return ready * 1000, rss / 1024, took
def med(label, xs, unit):
    xs = sorted(xs)
    return f"{label} median {statistics.median(xs):.1f} {unit} (min {xs[0]:.1f}, max {xs[-1]:.1f})"
if events is None:
    for label, fresh in [("first start (creates talon.db, migrates, mints the admin token)", True), ("restart on an existing state directory", False)]:
        times, rsss = [], []
        base = tempfile.mkdtemp()
        for i in range(21):
            state = tempfile.mkdtemp() if fresh else base
            t, r, _ = once(state)
            times.append(t); rsss.append(r)
        times.sort(); rsss.sort()
        print(f"{label}: spawn to /healthz 200 median {statistics.median(times):.1f} ms (min {times[0]:.1f}, max {times[-1]:.1f}); RSS at ready median {statistics.median(rsss):.1f} MB")
else:
    state = tempfile.mkdtemp(); db = os.path.join(state, "talon.db"); log = os.path.join(state, "stderr.log")
    once(state)  # creates talon.db and migrates; stopped with SIGTERM
    t0 = time.time_ns() // 1_000_000
    # One INSERT: `events.body` is the envelope's JSON after its id; runs of 1,000 events.
    sql = f"""WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < {events})
INSERT INTO events (seq, ts, type, run_id, session_id, session_key, task_id, agent_id, body, raw)
SELECT base + n, {t0} + n, 'assistant.delta', 'run_' || (n / 1000), NULL, NULL, NULL, 'main',
  '"ts":' || ({t0} + n) || ',"type":"assistant.delta","runId":"run_' || (n / 1000) || '","agentId":"main","data":{{"text":"delta ' || n || '"}}}}', NULL
FROM c, (SELECT last AS base FROM event_counter WHERE id = 1);
UPDATE event_counter SET last = last + {events} WHERE id = 1;"""
    t = time.perf_counter()
    subprocess.run(["sqlite3", db], input=sql, text=True, check=True)
    filled = time.perf_counter() - t
    size = sum(os.path.getsize(db + s) for s in ("", "-wal") if os.path.exists(db + s))
    count, top, last = subprocess.run(["sqlite3", "-separator", " ", db, "SELECT count(*), max(seq), (SELECT last FROM event_counter) FROM events"], capture_output=True, text=True, check=True).stdout.split()
    print(f"talon.db with {count} events (max seq {top}, counter {last}): {size / 2**20:.1f} MiB, filled in {filled:.1f} s")
    times, rsss, checks = [], [], []
    wait = 60.0  # the first restart waits long for the check's line; if none, later ones do not wait
    for i in range(21):
        t, r, took = once(state, log, wait)
        times.append(t); rsss.append(r)
        if took is None: wait = 0.0
        else: checks.append(took)
    print(f"restart on {events} events: " + med("spawn to /healthz 200", times, "ms") + "; " + med("RSS at ready", rsss, "MB"))
    print("integrity check (background): " + (med("took_ms", checks, "ms") + f", {len(checks)} of 21 logged" if checks else "not logged (this build has none, or it took over 60 s)"))
    shutil.rmtree(state)
