//! What the command sandbox (`talon-jail`, bubblewrap) costs the shell
//! `exec`, against the path commands took before it (`sh -c` under
//! `unshare --net --map-root-user` when the network is off; today the
//! admin's unsandboxed mode, `Mode::Off` + `Network::Off`). Results in
//! `docs/benchmarks.md`.
//!
//! 1. `startup`: the wall time of one `exec` of `true` through
//!    `CoreTools` (the executor call the runner makes), sandboxed (the
//!    default `Policy`), unsandboxed with the network off (`unshare`), and
//!    unsandboxed with the host's network (plain `sh`), interleaved call
//!    by call, the order rotated every round.
//! 2. `build`: a generated C project (150 translation units of about 300
//!    lines, one header, a Makefile) built with `make -j2` through the same
//!    `exec`, sandboxed and `unshare`, interleaved build by build (cleaned
//!    between builds, outside the timing), with the CPU time of make and
//!    what it ran (the shell's `times`).
//! 3. `ablation`: where the sandbox's start-up goes. The command the jail
//!    builds for `/bin/sh -c true` is spawned as it is (`Jail::command`
//!    inside the timing), then its argument list without the seccomp
//!    filters, with the wrapper joining its cgroup the way it did before
//!    (`cgroup.procs`) or joining none, and from there with the wrapper
//!    and filters taken out (the base) and, from that base, one part at a
//!    time (`prlimit`, the network namespace, the `/etc` copy's bind or a
//!    bind of each entry as before, the procfs masks, `/proc` and `/dev`,
//!    ...), each timed from spawn to exit, all interleaved round by
//!    round, with the median of the per-round differences against the
//!    jail's command and against the base; `sh -c true` and `unshare` as
//!    anchors, and `Jail::command` alone. stdout to `/dev/null`, stderr
//!    piped: no `exec` machinery here, only the processes.
//!
//! `cargo bench -p talon-core-tools --bench sandbox [-- startup|build|ablation]
//! [--runs N] [--build-runs N] [--units N] [--lines N]` (all parts by
//! default; `-- generate DIR` only writes the C project to `DIR`). One
//! JSON object per line on stdout; progress on stderr.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::panic,
    reason = "a benchmark binary fails loudly and prints its figures"
)]

use std::ffi::{OsStr, OsString};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use talon_core_tools::{CoreTools, Jail, Network, ShellOptions};
use talon_jail::{Access, Limits, Mode, Policy, Spec};
use talon_testing::stats::{median, round3, summary};
use talon_tools::{
    Caller, CatalogBuilder, CatalogEntry, NoUpdates, RunContext, ToolCall, ToolExecutor, ToolPolicy,
};

/// Settings from the command line.
struct Options {
    parts: Vec<String>,
    runs: usize,
    warmup: usize,
    build_runs: usize,
    units: usize,
    lines: usize,
    /// `generate DIR`: only write the C project there.
    generate: Option<PathBuf>,
}

fn options() -> Options {
    let mut o = Options {
        parts: Vec::new(),
        runs: 200,
        warmup: 10,
        build_runs: 9,
        units: 150,
        lines: 300,
        generate: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut number = || -> usize { args.next().and_then(|v| v.parse().ok()).unwrap() };
        match arg.as_str() {
            "--bench" => {}
            "--runs" => o.runs = number(),
            "--warmup" => o.warmup = number(),
            "--build-runs" => o.build_runs = number(),
            "--units" => o.units = number(),
            "--lines" => o.lines = number(),
            "startup" | "build" | "ablation" => o.parts.push(arg),
            "generate" => o.generate = args.next().map(PathBuf::from),
            other => panic!("unknown argument {other:?}"),
        }
    }
    if o.parts.is_empty() {
        o.parts = vec!["startup".into(), "build".into(), "ablation".into()];
    }
    o
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn emit(value: Value) {
    println!("{value}");
}

fn context() -> RunContext {
    RunContext {
        scope: Default::default(),
        session_key: "bench".into(),
        sender: None,
        channel: None,
        cancel: Default::default(),
        updates: Arc::new(NoUpdates),
        clock: talon_protocol::clock::Clock::system(),
    }
}

fn exec_entry() -> CatalogEntry {
    let catalog = CatalogBuilder::new(Default::default())
        .core(talon_core_tools::definitions())
        .build(&ToolPolicy::new())
        .unwrap();
    catalog.get("openclaw:core:exec").unwrap().clone()
}

/// The three ways a command runs.
#[derive(Clone, Copy)]
enum Config {
    /// The default policy: bubblewrap, network off.
    Sandboxed,
    /// The admin's unsandboxed mode with the network off: `unshare --net
    /// --map-root-user sh -c` (the path before the sandbox).
    Unshare,
    /// Unsandboxed with the host's network: `sh -c` (reference).
    Plain,
}

impl Config {
    fn name(self) -> &'static str {
        match self {
            Config::Sandboxed => "sandboxed",
            Config::Unshare => "unshare",
            Config::Plain => "plain-sh",
        }
    }

    fn policy(self) -> Policy {
        match self {
            Config::Sandboxed => Policy::default(),
            Config::Unshare => Policy {
                mode: Mode::Off,
                network: Network::Off,
                ..Policy::default()
            },
            Config::Plain => Policy {
                mode: Mode::Off,
                network: Network::Host,
                ..Policy::default()
            },
        }
    }

    fn tools(self, workspace: &Path) -> CoreTools {
        CoreTools::new(workspace).unwrap().with_shell(ShellOptions {
            jail: Jail::new(self.policy()),
            ..ShellOptions::default()
        })
    }
}

/// One `exec` call as the runner makes it; the result, checked.
async fn exec(core: &CoreTools, ctx: &RunContext, entry: &CatalogEntry, command: &str) -> Value {
    let call = ToolCall {
        call_id: "c".into(),
        id: entry.id.clone(),
        args: json!({"command": command, "timeoutMs": 60_000}),
        caller: Caller::Direct,
    };
    let result = core.execute(ctx, entry, &call).await.unwrap_or_else(|e| {
        panic!("exec {command:?} failed: {}", e.to_json());
    });
    assert_eq!(result["exitCode"], 0, "exec {command:?}: {result}");
    result
}

/// A fresh workspace on the target's disk (not a tmpfs).
fn workspace(prefix: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
}

async fn startup(o: &Options) {
    let dir = workspace("sandbox-startup-");
    let configs = [Config::Sandboxed, Config::Unshare, Config::Plain];
    let tools: Vec<CoreTools> = configs.iter().map(|c| c.tools(dir.path())).collect();
    let (ctx, entry) = (context(), exec_entry());
    // The first call of each pays its one-time set-up (the host probe
    // and the filters' compilation for the sandbox; the network-namespace
    // check for `unshare`).
    for (config, core) in configs.iter().zip(&tools) {
        let start = Instant::now();
        exec(core, &ctx, &entry, "true").await;
        emit(
            json!({"bench": "startup-first-call", "config": config.name(),
                    "ms": round3(ms(start.elapsed()))}),
        );
    }
    for _ in 0..o.warmup {
        for core in &tools {
            exec(core, &ctx, &entry, "true").await;
        }
    }
    let mut samples = vec![Vec::with_capacity(o.runs); configs.len()];
    for round in 0..o.runs {
        for k in 0..configs.len() {
            let i = (round + k) % configs.len();
            let start = Instant::now();
            exec(&tools[i], &ctx, &entry, "true").await;
            samples[i].push(ms(start.elapsed()));
        }
    }
    for (config, s) in configs.iter().zip(&samples) {
        let mut line = summary(s);
        line["bench"] = "startup".into();
        line["config"] = config.name().into();
        line["unit"] = "ms".into();
        emit(line);
    }
    for (a, b) in [(0, 1), (0, 2), (1, 2)] {
        let paired: Vec<f64> = samples[a]
            .iter()
            .zip(&samples[b])
            .map(|(x, y)| x - y)
            .collect();
        emit(json!({
            "bench": "startup-delta",
            "a": configs[a].name(),
            "b": configs[b].name(),
            "p50_delta_ms": round3(median(&samples[a]) - median(&samples[b])),
            "paired_median_delta_ms": round3(median(&paired)),
        }));
    }
}

/// Writes the synthetic C project: `units` translation units of about
/// `lines` lines each, a shared header, `main.c` and a Makefile.
fn generate(root: &Path, units: usize, lines: usize) {
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(root.join("include")).unwrap();
    let header = r#"#ifndef COMMON_H
#define COMMON_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

typedef struct {
    double x, y, z;
} vec3;

typedef struct node {
    struct node *next;
    uint64_t key;
    char name[32];
    vec3 pos;
} node;

static inline vec3 vadd(vec3 a, vec3 b) { vec3 r = {a.x + b.x, a.y + b.y, a.z + b.z}; return r; }
static inline double vdot(vec3 a, vec3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
static inline uint64_t mix(uint64_t h) { h ^= h >> 33; h *= 0xff51afd7ed558ccdULL; h ^= h >> 33; return h; }

"#;
    let mut header = header.to_owned();
    for u in 0..units {
        writeln!(header, "uint64_t unit{u}_entry(uint64_t seed);").unwrap();
    }
    header.push_str("#endif\n");
    std::fs::write(root.join("include/common.h"), header).unwrap();
    // Each function is about 24 lines.
    let functions = (lines / 24).max(1);
    for u in 0..units {
        let mut src = String::from("#include \"common.h\"\n\n");
        for f in 0..functions {
            let k = u * 131 + f * 17 + 3;
            writeln!(
                src,
                r#"static uint64_t u{u}_f{f}(uint64_t seed, node *list, size_t n) {{
    uint64_t h = mix(seed + {k}u);
    vec3 acc = {{0.0, 0.0, 0.0}};
    char buf[64];
    for (size_t i = 0; i < n; i++) {{
        node *p = &list[i];
        p->key = mix(h ^ (uint64_t)i);
        p->pos.x = (double)(p->key % {m1}u) / 7.0;
        p->pos.y = sqrt((double)(p->key % {m2}u) + 1.0);
        p->pos.z = sin((double)i * 0.{k});
        acc = vadd(acc, p->pos);
        snprintf(buf, sizeof buf, "u{u}f{f}-%zu-%llu", i, (unsigned long long)p->key);
        memcpy(p->name, buf, sizeof p->name - 1);
        p->name[sizeof p->name - 1] = '\0';
        switch ((p->key + {k}u) % 5u) {{
        case 0: h += strlen(p->name); break;
        case 1: h ^= (uint64_t)(vdot(acc, p->pos) * 1000.0); break;
        case 2: h = mix(h + {k}u); break;
        case 3: h -= p->key >> 7; break;
        default: h *= 3u; break;
        }}
    }}
    return h + (uint64_t)(acc.x + acc.y + acc.z);
}}
"#,
                m1 = 97 + f,
                m2 = 1009 + u,
            )
            .unwrap();
        }
        writeln!(
            src,
            "uint64_t unit{u}_entry(uint64_t seed) {{\n    node *list = calloc(64, sizeof *list);\n    if (!list) return 0;\n    uint64_t h = seed;"
        )
        .unwrap();
        for f in 0..functions {
            writeln!(src, "    h = u{u}_f{f}(h, list, 64);").unwrap();
        }
        src.push_str("    free(list);\n    return h;\n}\n");
        std::fs::write(root.join(format!("src/unit{u}.c")), src).unwrap();
    }
    let mut main = String::from("#include \"common.h\"\n\nint main(void) {\n    uint64_t h = 1;\n");
    for u in 0..units {
        writeln!(main, "    h = unit{u}_entry(h);").unwrap();
    }
    main.push_str("    printf(\"%llu\\n\", (unsigned long long)h);\n    return 0;\n}\n");
    std::fs::write(root.join("src/main.c"), main).unwrap();
    std::fs::write(
        root.join("Makefile"),
        "CC = cc\nCFLAGS = -O2 -Wall -std=c11 -Iinclude\n\
         SRCS = $(wildcard src/*.c)\n\
         OBJS = $(patsubst src/%.c,obj/%.o,$(SRCS))\n\n\
         app: $(OBJS)\n\t$(CC) -o $@ $(OBJS) -lm\n\n\
         obj/%.o: src/%.c include/common.h | obj\n\t$(CC) $(CFLAGS) -c $< -o $@\n\n\
         obj:\n\tmkdir -p obj\n\n\
         clean:\n\trm -rf obj app\n\n.PHONY: clean\n",
    )
    .unwrap();
}

fn clean(root: &Path) {
    let _ = std::fs::remove_dir_all(root.join("obj"));
    let _ = std::fs::remove_file(root.join("app"));
}

/// User + system seconds of the shell's children, from the second line
/// of `times` (`1m2.300s 0m5.120s`).
fn children_cpu(stdout: &str) -> f64 {
    let line = stdout.lines().last().unwrap();
    line.split_whitespace()
        .map(|t| {
            let (m, s) = t.trim_end_matches('s').split_once('m').unwrap();
            m.parse::<f64>().unwrap() * 60.0 + s.parse::<f64>().unwrap()
        })
        .sum()
}

async fn build(o: &Options) {
    let dir = workspace("sandbox-build-");
    generate(dir.path(), o.units, o.lines);
    let configs = [Config::Sandboxed, Config::Unshare];
    let tools: Vec<CoreTools> = configs.iter().map(|c| c.tools(dir.path())).collect();
    let (ctx, entry) = (context(), exec_entry());
    // `times`: the CPU time of the shell's waited-for children (make and
    // everything it ran), the same inside the sandbox and out (the
    // sandbox's init is killed, not reaped, so the bench's own
    // `cutime` would miss it).
    let command = "make -j2 -s app && times";
    // One unmeasured build each: page cache, the probe.
    for core in &tools {
        clean(dir.path());
        exec(core, &ctx, &entry, command).await;
    }
    let mut wall = vec![Vec::new(); configs.len()];
    let mut cpu = vec![Vec::new(); configs.len()];
    for round in 0..o.build_runs {
        for k in 0..configs.len() {
            let i = (round + k) % configs.len();
            clean(dir.path());
            let start = Instant::now();
            let result = exec(&tools[i], &ctx, &entry, command).await;
            let secs = start.elapsed().as_secs_f64();
            let used = children_cpu(result["stdout"].as_str().unwrap());
            assert!(dir.path().join("app").is_file(), "the build made no app");
            eprintln!(
                "build round {round} {}: {secs:.3} s wall, {used:.2} s cpu",
                configs[i].name()
            );
            wall[i].push(secs);
            cpu[i].push(used);
        }
    }
    for (i, config) in configs.iter().enumerate() {
        emit(json!({
            "bench": "build",
            "config": config.name(),
            "units": o.units,
            "lines_per_unit": o.lines,
            "runs": wall[i].len(),
            "median_s": round3(median(&wall[i])),
            "min_s": round3(wall[i].iter().copied().fold(f64::INFINITY, f64::min)),
            "max_s": round3(wall[i].iter().copied().fold(0.0, f64::max)),
            "cpu_median_s": round3(median(&cpu[i])),
            "wall_s": wall[i].iter().map(|x| round3(*x)).collect::<Vec<_>>(),
        }));
    }
    let paired: Vec<f64> = wall[0].iter().zip(&wall[1]).map(|(a, b)| a / b).collect();
    emit(json!({
        "bench": "build-ratio",
        "a": "sandboxed",
        "b": "unshare",
        "median_ratio": round3(median(&wall[0]) / median(&wall[1])),
        "paired_median_ratio": round3(median(&paired)),
        "cpu_median_ratio": round3(median(&cpu[0]) / median(&cpu[1])),
    }));
}

/// bubblewrap's options and how many values each takes (those the jail
/// uses; anything else stops the ablation, so that a change to the jail's
/// command is seen rather than mis-parsed).
fn arity(option: &str) -> usize {
    match option {
        "--unshare-user"
        | "--unshare-pid"
        | "--unshare-ipc"
        | "--unshare-uts"
        | "--unshare-cgroup-try"
        | "--unshare-net"
        | "--disable-userns"
        | "--die-with-parent"
        | "--new-session"
        | "--clearenv"
        | "--unshare-all"
        | "--share-net"
        | "--as-pid-1" => 0,
        "--cap-drop" | "--cap-add" | "--hostname" | "--chdir" | "--remount-ro"
        | "--add-seccomp-fd" | "--seccomp" | "--size" | "--tmpfs" | "--proc" | "--dev"
        | "--dir" | "--unsetenv" | "--perms" | "--uid" | "--gid" | "--sync-fd" | "--block-fd"
        | "--info-fd" | "--json-status-fd" | "--userns-block-fd" => 1,
        "--ro-bind" | "--ro-bind-try" | "--bind" | "--bind-try" | "--dev-bind" | "--symlink"
        | "--dev-bind-try" | "--setenv" | "--file" | "--bind-data" | "--ro-bind-data" => 2,
        other => panic!("the ablation does not know bubblewrap's {other:?}"),
    }
}

/// The jail's command, split into its wrapper shell, bubblewrap's
/// options (each with its values), and what runs inside (after `--`).
struct Split {
    /// `/bin/sh -c SCRIPT talon-jail CGROUP FILTER0 FILTER1 CPU DATA
    /// NOFILE FSIZE`: the wrapper and its arguments, up to bubblewrap.
    wrapper: Vec<OsString>,
    bwrap: OsString,
    options: Vec<Vec<String>>,
    inner: Vec<String>,
}

/// Where the wrapper's cgroup file is among its arguments.
const WRAPPER_CGROUP: usize = 4;

fn split(command: &std::process::Command) -> Split {
    let mut argv: Vec<OsString> = std::iter::once(command.get_program().to_owned())
        .chain(command.get_args().map(ToOwned::to_owned))
        .collect();
    let at = argv
        .iter()
        .position(|a| a.to_str().is_some_and(|a| a.ends_with("/bwrap")))
        .unwrap();
    let wrapper: Vec<OsString> = argv.drain(..at).collect();
    assert!(wrapper.is_empty() || wrapper.len() == 11, "{wrapper:?}");
    let bwrap = argv.remove(0);
    let args: Vec<String> = argv.into_iter().map(|a| a.into_string().unwrap()).collect();
    let end = args.iter().position(|a| a == "--").unwrap();
    let mut options = Vec::new();
    let mut i = 0;
    while i < end {
        let n = arity(&args[i]);
        options.push(args[i..=i + n].to_vec());
        i += n + 1;
    }
    Split {
        wrapper,
        bwrap,
        options,
        inner: args[end + 1..].to_vec(),
    }
}

/// What runs inside without `prlimit` (the program after its `--`; as
/// root the jail runs none).
fn without_limits(inner: &[String]) -> Vec<String> {
    match inner.iter().rposition(|a| a == "--") {
        Some(last) => inner[last + 1..].to_vec(),
        None => inner.to_vec(),
    }
}

/// One ablation variant: a name and its argv.
struct Variant {
    name: &'static str,
    /// `None`: the jail's own command, built anew for each run.
    argv: Option<Vec<OsString>>,
}

/// The wrapper to use in a variant.
enum Wrap<'a> {
    /// None: bubblewrap is spawned directly (the seccomp options must be
    /// left out then: nothing opens the filters).
    No,
    /// The jail's wrapper with this cgroup file (empty: none).
    With(&'a OsStr),
}

fn assemble(
    s: &Split,
    wrap: Wrap<'_>,
    keep: impl Fn(&[String]) -> bool,
    extra: &[Vec<String>],
    inner: &[String],
) -> Vec<OsString> {
    let mut argv = Vec::new();
    if let Wrap::With(cgroup) = wrap {
        argv.extend(s.wrapper.iter().cloned());
        argv[WRAPPER_CGROUP] = cgroup.to_owned();
    }
    argv.push(s.bwrap.clone());
    // `extra` goes where the first option left out was.
    let mut extra = Some(extra);
    for option in &s.options {
        if keep(option) {
            argv.extend(option.iter().map(OsString::from));
        } else if let Some(extra) = extra.take() {
            argv.extend(extra.iter().flatten().map(OsString::from));
        }
    }
    argv.push("--".into());
    argv.extend(inner.iter().map(OsString::from));
    argv
}

/// Spawns one variant (the jail's command is built anew, its cgroup
/// made, inside the timing) and waits for it.
async fn run_variant(jail: &Jail, spec: &Spec<'_>, v: &Variant) -> f64 {
    let start = Instant::now();
    let (mut command, guard) = match &v.argv {
        None => {
            let confined = jail.command(spec).unwrap();
            (confined.command, Some(confined.guard))
        }
        Some(argv) => {
            let mut command = tokio::process::Command::new(&argv[0]);
            command.args(&argv[1..]).env_clear().current_dir("/");
            (command, None)
        }
    };
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let out = command.output().await.unwrap();
    let elapsed = start.elapsed();
    drop(guard);
    assert!(
        out.status.success(),
        "{}: {}",
        v.name,
        String::from_utf8_lossy(&out.stderr)
    );
    ms(elapsed)
}

async fn ablation(o: &Options) {
    let dir = workspace("sandbox-ablation-");
    let root = dir.path().canonicalize().unwrap();
    let jail = Jail::new(Policy::default());
    let limits = Limits::default();
    let args = ["-c", "true"];
    let spec = Spec {
        workspace: &root,
        access: Access::ReadWrite,
        network: Network::Off,
        env: &[],
        program: "/bin/sh",
        args: &args,
        limits: &limits,
    };
    let status = jail.status();
    emit(json!({"bench": "jail-status", "status": serde_json::to_value(&status).unwrap()}));
    // The argv as the jail builds it; its cgroup (if any) is kept for
    // the wrapper's variants to join (several processes may).
    let sample = jail.command(&spec).unwrap();
    let s = split(sample.command.as_std());
    let sample_program = sample.command.as_std().get_program().to_owned();
    let sample_args: Vec<OsString> = sample
        .command
        .as_std()
        .get_args()
        .map(ToOwned::to_owned)
        .collect();
    let _keep_cgroup = sample.guard;
    let full_inner = s.inner.clone();
    let bare_inner = without_limits(&s.inner);
    let is = |o: &[String], names: &[&str]| names.contains(&o[0].as_str());
    let no_seccomp = |o: &[String]| !is(o, &["--add-seccomp-fd"]);
    let etc_copy = |o: &[String]| o.len() == 3 && o[0] == "--ro-bind" && o[2] == "/etc";
    // The bind of each entry, as the jail made them before the copy (and
    // as a remote host still does).
    let etc_each: Vec<Vec<String>> =
        talon_jail::remote::bwrap_arguments(&talon_jail::remote::RemoteSpec {
            workspace: "/",
            writable: false,
            network: Network::Off,
            limits: &limits,
            proxy: None,
            program: "/bin/true",
            args: &[],
        })
        .into_iter()
        .filter_map(|a| match a {
            talon_jail::remote::Arg::Word(w) => Some(w),
            _ => None,
        })
        .collect::<Vec<_>>()
        .windows(3)
        .filter(|w| w[0] == "--ro-bind-try" && w[1].starts_with("/etc/"))
        .map(<[String]>::to_vec)
        .collect();
    let proc_masks = |o: &[String]| {
        o.len() == 3
            && o[0] == "--ro-bind-try"
            && (o[1].starts_with("/proc/") || (o[1] == "/dev/null" && o[2].starts_with("/proc/")))
    };
    let cgroup = s.wrapper.get(WRAPPER_CGROUP).cloned().unwrap_or_default();
    let procs: OsString = Path::new(&cgroup)
        .with_file_name("cgroup.procs")
        .into_os_string();
    let empty = OsString::new();
    let mut variants = vec![
        Variant {
            name: "jail (as built: wrapper joining the cgroup, limits, seccomp; prlimit inside unless root)",
            argv: None,
        },
        Variant {
            name: "- seccomp filters",
            argv: Some(assemble(
                &s,
                Wrap::With(&cgroup),
                no_seccomp,
                &[],
                &full_inner,
            )),
        },
        Variant {
            name: "wrapper joining through cgroup.procs (before)",
            argv: Some(assemble(&s, Wrap::With(&procs), |_| true, &[], &full_inner)),
        },
        Variant {
            name: "wrapper without a cgroup",
            argv: Some(assemble(&s, Wrap::With(&empty), |_| true, &[], &full_inner)),
        },
        Variant {
            name: "- wrapper - seccomp (base)",
            argv: Some(assemble(&s, Wrap::No, no_seccomp, &[], &full_inner)),
        },
        Variant {
            name: "base - prlimit (the same as base as root)",
            argv: Some(assemble(&s, Wrap::No, no_seccomp, &[], &bare_inner)),
        },
        Variant {
            name: "base - --unshare-net",
            argv: Some(assemble(
                &s,
                Wrap::No,
                |o| no_seccomp(o) && !is(o, &["--unshare-net"]),
                &[],
                &full_inner,
            )),
        },
        Variant {
            name: "base - the /etc copy's bind",
            argv: Some(assemble(
                &s,
                Wrap::No,
                |o| no_seccomp(o) && !etc_copy(o),
                &[],
                &full_inner,
            )),
        },
        Variant {
            name: "base with a bind of each /etc entry instead (before)",
            argv: Some(assemble(
                &s,
                Wrap::No,
                |o| no_seccomp(o) && !etc_copy(o),
                &etc_each,
                &full_inner,
            )),
        },
        Variant {
            name: "base - procfs read-only/masks",
            argv: Some(assemble(
                &s,
                Wrap::No,
                |o| no_seccomp(o) && !proc_masks(o),
                &[],
                &full_inner,
            )),
        },
        Variant {
            name: "base - prlimit - /proc, /dev, procfs masks",
            argv: Some(assemble(
                &s,
                Wrap::No,
                |o| no_seccomp(o) && !proc_masks(o) && !is(o, &["--proc", "--dev"]),
                &[],
                &bare_inner,
            )),
        },
        Variant {
            name: "base - ipc/uts/cgroup namespaces (and --hostname)",
            argv: Some(assemble(
                &s,
                Wrap::No,
                |o| {
                    no_seccomp(o)
                        && !is(
                            o,
                            &[
                                "--unshare-ipc",
                                "--unshare-uts",
                                "--unshare-cgroup-try",
                                "--hostname",
                            ],
                        )
                },
                &[],
                &full_inner,
            )),
        },
        Variant {
            name: "base - /tmp tmpfs",
            argv: Some(assemble(
                &s,
                Wrap::No,
                |o| no_seccomp(o) && !is(o, &["--size", "--tmpfs"]),
                &[],
                &full_inner,
            )),
        },
        Variant {
            name: "bwrap minimal (user+pid ns, /usr, symlinks) sh -c true",
            argv: Some(assemble(
                &s,
                Wrap::No,
                |o| {
                    is(o, &["--unshare-user", "--unshare-pid", "--symlink"])
                        || (o[0] == "--ro-bind" && o[1] == "/usr")
                },
                &[],
                &bare_inner,
            )),
        },
        Variant {
            name: "bwrap minimal + --unshare-net",
            argv: Some(assemble(
                &s,
                Wrap::No,
                |o| {
                    is(
                        o,
                        &[
                            "--unshare-user",
                            "--unshare-pid",
                            "--unshare-net",
                            "--symlink",
                        ],
                    ) || (o[0] == "--ro-bind" && o[1] == "/usr")
                },
                &[],
                &bare_inner,
            )),
        },
        Variant {
            name: "unshare --net --map-root-user -- /bin/sh -c true",
            argv: Some(
                [
                    "unshare",
                    "--net",
                    "--map-root-user",
                    "--",
                    "/bin/sh",
                    "-c",
                    "true",
                ]
                .map(OsString::from)
                .to_vec(),
            ),
        },
        Variant {
            name: "/bin/sh -c true",
            argv: Some(["/bin/sh", "-c", "true"].map(OsString::from).to_vec()),
        },
    ];
    if cgroup.is_empty() {
        variants.retain(|v| !v.name.contains("cgroup.procs"));
    }
    let full: Vec<String> = std::iter::once(sample_program)
        .chain(sample_args)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    emit(json!({"bench": "ablation-argv", "variant": "jail", "argv": full.join(" ")}));
    for v in &variants {
        // The long ones are the jail's minus what their names say.
        if let Some(argv) = v.argv.as_ref().filter(|a| a.len() < 16) {
            let shown: Vec<String> = argv
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            emit(json!({"bench": "ablation-argv", "variant": v.name, "argv": shown.join(" ")}));
        }
    }
    for _ in 0..o.warmup {
        for v in &variants {
            run_variant(&jail, &spec, v).await;
        }
    }
    let mut samples = vec![Vec::with_capacity(o.runs); variants.len()];
    for round in 0..o.runs {
        for k in 0..variants.len() {
            let i = (round + k) % variants.len();
            samples[i].push(run_variant(&jail, &spec, &variants[i]).await);
        }
    }
    // What `Jail::command` itself costs (its cgroup made, the /etc copy
    // looked up, the argument list), without a spawn; the cgroup is
    // removed outside the timing.
    let mut prep = Vec::with_capacity(o.runs);
    for _ in 0..o.runs {
        let start = Instant::now();
        let confined = jail.command(&spec).unwrap();
        prep.push(ms(start.elapsed()));
        drop(confined);
    }
    let mut line = summary(&prep);
    line["bench"] = "jail-command".into();
    line["unit"] = "ms".into();
    emit(line);
    // Differences taken round by round (the runs of one round are
    // neighbours in time), against the jail as built and against the
    // base (bubblewrap without the wrapper and the filters).
    let base = variants
        .iter()
        .position(|v| v.name.ends_with("(base)"))
        .unwrap();
    let paired = |i: usize, j: usize| {
        let d: Vec<f64> = samples[i]
            .iter()
            .zip(&samples[j])
            .map(|(a, b)| a - b)
            .collect();
        round3(median(&d))
    };
    for (i, (v, s)) in variants.iter().zip(&samples).enumerate() {
        let mut line = summary(s);
        line["bench"] = "ablation".into();
        line["variant"] = v.name.into();
        line["unit"] = "ms".into();
        line["paired_delta_vs_jail"] = paired(i, 0).into();
        line["paired_delta_vs_base"] = paired(i, base).into();
        emit(line);
    }
}

fn main() {
    let o = options();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    if let Some(dir) = &o.generate {
        generate(dir, o.units, o.lines);
        return;
    }
    emit(json!({
        "bench": "env",
        "uid": std::fs::read_to_string("/proc/self/status")
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .map(|v| v.split_whitespace().nth(1).unwrap_or("?").to_owned()),
        "runs": o.runs,
        "warmup": o.warmup,
        "build_runs": o.build_runs,
        "target_tmpdir": PathBuf::from(env!("CARGO_TARGET_TMPDIR")),
    }));
    runtime.block_on(async {
        for part in &o.parts {
            eprintln!("part {part}");
            match part.as_str() {
                "startup" => startup(&o).await,
                "build" => build(&o).await,
                "ablation" => ablation(&o).await,
                _ => unreachable!(),
            }
        }
    });
}
