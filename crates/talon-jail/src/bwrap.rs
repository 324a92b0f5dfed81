//! The bubblewrap command line of one sandboxed command: namespaces, the
//! filesystem it sees, its environment, the seccomp filters, and its
//! limits.
//!
//! The line is built once ([`Args::pieces`]), with what depends on the
//! host running bubblewrap left open (whether `/bin` and the like are
//! symlinks, which procfs files exist, how `/etc` arrives, how the limits
//! are set): [`Args::build`] settles it for this host,
//! `remote::bwrap_arguments` for a remote one.
//!
//! On this host a command starts as [`wrapper`] (`/bin/sh`) and becomes
//! bubblewrap: the wrapper joins the command's pids cgroup (as root),
//! sets its OOM score and limits (`ulimit`, inherited by everything it
//! starts), and opens the seccomp filters' files on descriptors 3 and 4.
//! `/etc` is one read-only bind of a copy of the allow-list (`view.rs`),
//! and only the process limit is set inside the sandbox (`prlimit`,
//! util-linux), where it counts the command's own processes (not for
//! root, whom the kernel exempts from it: the cgroup holds root's). A remote
//! host gets each `/etc` entry bound and every limit set inside
//! (`prlimit`, then `choom`, then the command).
//!
//! What the command sees: `/usr` and the top-level links or directories
//! into it (`/bin`, `/sbin`, `/lib*`), read-only; an allow-list of `/etc`
//! (the loader's cache, users and groups, name resolution, time zones,
//! certificates, alternatives; never `shadow`, `sudoers`, SSH host keys
//! or `ssl/private`), read-only; its own `/proc` (its PID namespace's
//! processes only) and a minimal `/dev`; a private `/tmp` of bounded size;
//! the workspace at its own path, writable or not; everything else,
//! `/home`, `/root`, `/var`, `/run`, the gateway's state directory and
//! config, is absent. The root is remounted read-only.
//!
//! With the network `"allow"`, the command keeps its own network
//! namespace and also sees its proxy's socket, read-only, at
//! `/run/talon-proxy/proxy.sock`, and `HTTP_PROXY`, `HTTPS_PROXY`, `http_proxy` and
//! `https_proxy` set to `http://127.0.0.1:3128`. A bridge ([`bridge`])
//! runs first, under the same filter, limits and cgroup as the command
//! (it starts after `prlimit` and `choom`): `socat` (Debian's, as
//! Anthropic's sandbox-runtime uses it) listens on `127.0.0.1:3128` and
//! connects each client to the proxy's socket; the command starts only
//! once the listener is in `/proc/net/tcp`, so that its first request
//! cannot race it. `ALL_PROXY` is not set: many tools read it as a SOCKS
//! proxy, which this is not.

use std::ffi::{OsStr, OsString};
use std::path::Path;

use crate::policy::{Limits, Network};

/// The `/etc` entries a command sees (when the host has them).
pub(crate) const ETC: &[&str] = &[
    "alternatives",
    "bash.bashrc",
    "ca-certificates",
    "ca-certificates.conf",
    "debian_version",
    "environment",
    "gai.conf",
    "gitconfig",
    "group",
    "host.conf",
    "hostname",
    "hosts",
    "inputrc",
    "issue",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "locale.alias",
    "locale.conf",
    "localtime",
    "lsb-release",
    "magic",
    "magic.mime",
    "mime.types",
    "nsswitch.conf",
    "os-release",
    "passwd",
    "perl",
    "profile",
    "profile.d",
    "protocols",
    "python3",
    "rpc",
    "services",
    "ssl/certs",
    "ssl/openssl.cnf",
    "timezone",
    "xattr.conf",
];

/// Name resolution's files, seen only with the host's network.
const ETC_NETWORK: &[&str] = &["resolv.conf"];

/// Top-level system directories, bound read-only (or recreated as the
/// symlinks they are on merged-`/usr` systems).
pub(crate) const SYSTEM: &[&str] = &["bin", "sbin", "lib", "lib32", "lib64", "libx32"];

/// Parts of the sandbox's procfs remounted read-only.
pub(crate) const PROC_READ_ONLY: &[&str] = &[
    "/proc/sys",
    "/proc/sysrq-trigger",
    "/proc/fs",
    "/proc/irq",
    "/proc/bus",
];

/// Parts of it hidden behind `/dev/null`.
pub(crate) const PROC_MASKED: &[&str] = &[
    "/proc/kcore",
    "/proc/keys",
    "/proc/key-users",
    "/proc/timer_list",
    "/proc/sched_debug",
    "/proc/latency_stats",
    "/proc/kallsyms",
];

/// The bridge between the sandbox's loopback and its proxy.
pub(crate) const SOCAT: &str = "/usr/bin/socat";

/// Where the bridge listens, as the proxy variables say.
const PROXY_URL: &str = "http://127.0.0.1:3128";

/// The variables naming the proxy.
const PROXY_VARIABLES: [&str; 4] = ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"];

/// The bridge's script: starts `socat` outside the command's own process
/// tree (the subshell exits, so that the command has no unexpected child
/// to wait for) and quiet (its complaints about clients that went away
/// would land in the command's output), waits until it listens
/// (`127.0.0.1:3128`, `0C38`, in state `LISTEN`, `0A`, in either byte
/// order), at most five seconds, then becomes the command (`"$@"`).
fn bridge() -> String {
    let socket = format!("{}/{}", crate::proxy::MOUNT, crate::proxy::SOCKET);
    format!(
        "({SOCAT} TCP-LISTEN:3128,bind=127.0.0.1,reuseaddr,fork,backlog=128 UNIX-CONNECT:{socket} \
         </dev/null >/dev/null 2>&1 &)
i=0
until grep -Eq ' (0100007F|7F000001):0C38 00000000:0000 0A ' /proc/net/tcp 2>/dev/null; do
  i=$((i+1))
  if [ \"$i\" -gt 500 ]; then
    echo 'talon: the sandbox network bridge (socat, 127.0.0.1:3128) did not start' >&2
    exit 125
  fi
  sleep 0.01
done
exec \"$@\""
    )
}

/// The variables a command gets besides the bound ones.
pub(crate) const PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Descriptors the filters arrive on in bubblewrap (`--add-seccomp-fd`),
/// here and on a remote host alike.
pub(crate) const SECCOMP_FDS: [i32; 2] = [3, 4];

/// The environment a command's bubblewrap sets.
#[derive(Clone, Copy)]
pub(crate) enum Environment<'a> {
    /// `--clearenv`, then `PATH`, `HOME`, `TMPDIR`, this host's `LANG`,
    /// `LC_ALL` and `TERM`, these, and with a proxy its variables.
    Set(&'a [(String, String)]),
    /// None: bubblewrap passes on the one it was started with (a remote
    /// host's script starts it with `env -i` and only what it gets).
    Inherited,
}

/// One command's sandbox, as bubblewrap's arguments.
pub(crate) struct Args<'a> {
    pub workspace: &'a OsStr,
    pub writable: bool,
    pub network: Network,
    /// With the network `"allow"`, the proxy's socket (on the host that
    /// runs bubblewrap).
    pub proxy: Option<&'a Path>,
    pub env: Environment<'a>,
    pub limits: &'a Limits,
    pub program: &'a str,
    pub args: &'a [&'a str],
}

/// One part of the line, as [`Args::pieces`] gives it: a word, or what
/// depends on the host that runs bubblewrap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Piece {
    /// An argument as it is.
    Word(OsString),
    /// A top-level system directory (`/bin`): recreated as the symlink
    /// it is on that host, bound read-only if it is a directory there,
    /// left out if absent.
    System(String),
    /// A file of procfs (`/proc/kcore`) hidden behind `/dev/null` if that
    /// host's kernel has it.
    Mask(&'static str),
    /// The allow-listed `/etc` ([`etc`]): one bind of a copy on this host,
    /// a bind of each entry on a remote one.
    Etc,
    /// The limits set inside the sandbox, before the command.
    Limits,
}

/// How this host settles the open parts of a line.
pub(crate) struct Local<'a> {
    /// The copy of `/etc` bound as the sandbox's (with the host's
    /// network, the one holding `resolv.conf`'s mount point); none for the
    /// host's probe, which needs no `/etc`.
    pub etc: Option<&'a Path>,
    /// How the command's process count is held.
    pub processes: ProcessLimit,
}

/// How a local command's process count is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProcessLimit {
    /// `prlimit --nproc` inside the sandbox's user namespace.
    Rlimit,
    /// Nothing inside: the gateway runs as root, whom the kernel exempts
    /// from `RLIMIT_NPROC`, and the command's pids cgroup (or nothing,
    /// where it cannot be made) holds it; `prlimit` would cost an
    /// `execve` (1.1 ms) for a limit the kernel ignores.
    Root,
}

fn push(out: &mut Vec<Piece>, items: &[&str]) {
    out.extend(items.iter().map(|item| Piece::Word(OsString::from(item))));
}

/// The namespace options of every sandbox (with the network's, when it
/// is not the host's, `--unshare-net`).
pub(crate) const NAMESPACES: &[&str] = &[
    "--unshare-user",
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
    "--disable-userns",
    "--die-with-parent",
    "--new-session",
    "--cap-drop",
    "ALL",
    "--hostname",
    "sandbox",
];

impl Args<'_> {
    /// The arguments after `bwrap`, on this host.
    pub(crate) fn build(&self, local: &Local<'_>) -> Vec<OsString> {
        let mut out = Vec::with_capacity(128);
        for piece in self.pieces() {
            match piece {
                Piece::Etc => {
                    let Some(etc) = local.etc else { continue };
                    out.extend([OsStr::new("--ro-bind"), etc.as_os_str()].map(OsString::from));
                    out.push("/etc".into());
                    if self.network == Network::Host {
                        for entry in ETC_NETWORK {
                            let path = format!("/etc/{entry}");
                            out.extend(["--ro-bind-try", &path, &path].map(OsString::from));
                        }
                    }
                }
                Piece::Limits if local.processes == ProcessLimit::Root => {}
                Piece::Limits => {
                    let nproc = self.limits.processes;
                    out.extend(
                        [PRLIMIT, &format!("--nproc={nproc}:{nproc}"), "--"].map(OsString::from),
                    );
                }
                Piece::Word(word) => out.push(word),
                Piece::System(dir) => match std::fs::read_link(&dir) {
                    Ok(target) => {
                        out.push("--symlink".into());
                        out.push(target.into_os_string());
                        out.push(dir.into());
                    }
                    Err(_) => {
                        out.push("--ro-bind-try".into());
                        out.push(dir.clone().into());
                        out.push(dir.into());
                    }
                },
                Piece::Mask(file) if Path::new(file).exists() => {
                    out.extend(["--ro-bind-try", "/dev/null", file].map(OsString::from));
                }
                Piece::Mask(_) => {}
            }
        }
        out
    }

    /// The arguments after `bwrap`, what depends on the host left open:
    /// the one line both this host's sandbox and a remote one are built
    /// from.
    pub(crate) fn pieces(&self) -> Vec<Piece> {
        let mut out: Vec<Piece> = Vec::with_capacity(128);
        push(&mut out, NAMESPACES);
        if self.network != Network::Host {
            push(&mut out, &["--unshare-net"]);
        }
        push(&mut out, &["--ro-bind", "/usr", "/usr"]);
        out.extend(SYSTEM.iter().map(|dir| Piece::System(format!("/{dir}"))));
        out.push(Piece::Etc);
        push(&mut out, &["--proc", "/proc", "--dev", "/dev"]);
        // What of procfs reaches past the namespaces (kernel settings,
        // SysRq, kernel memory and keys) is read-only or masked: a
        // sandbox started by root keeps root's user, whose owner bits
        // these files honour.
        for dir in PROC_READ_ONLY {
            push(&mut out, &["--ro-bind-try", dir, dir]);
        }
        out.extend(PROC_MASKED.iter().map(|file| Piece::Mask(file)));
        let tmp = self.limits.tmp_bytes.to_string();
        push(&mut out, &["--size", &tmp, "--tmpfs", "/tmp"]);
        let word = |w: &OsStr| Piece::Word(w.to_owned());
        push(
            &mut out,
            &[if self.writable { "--bind" } else { "--ro-bind" }],
        );
        out.push(word(self.workspace));
        out.push(word(self.workspace));
        if let Some(socket) = self.proxy {
            // The socket alone, as the file the bridge connects to.
            push(&mut out, &["--ro-bind"]);
            out.push(word(socket.as_os_str()));
            let inside = format!("{}/{}", crate::proxy::MOUNT, crate::proxy::SOCKET);
            push(&mut out, &[&inside]);
        }
        push(&mut out, &["--chdir"]);
        out.push(word(self.workspace));
        push(&mut out, &["--remount-ro", "/"]);
        if let Environment::Set(env) = self.env {
            push(&mut out, &["--clearenv"]);
            let kept = ["LANG", "LC_ALL", "TERM"]
                .into_iter()
                .filter_map(|key| std::env::var(key).ok().map(|value| (key.to_owned(), value)));
            let fixed = [("PATH", PATH), ("HOME", "/tmp"), ("TMPDIR", "/tmp")]
                .map(|(k, v)| (k.to_owned(), v.to_owned()));
            for (key, value) in fixed.into_iter().chain(kept).chain(env.iter().cloned()) {
                push(&mut out, &["--setenv", &key, &value]);
            }
        }
        // The proxy's variables last (also where the environment is
        // inherited): a bound variable does not replace them (nothing
        // else leads out anyway).
        for key in self.proxy.iter().flat_map(|_| PROXY_VARIABLES) {
            push(&mut out, &["--setenv", key, PROXY_URL]);
        }
        for fd in SECCOMP_FDS {
            push(&mut out, &["--add-seccomp-fd", &fd.to_string()]);
        }
        push(&mut out, &["--"]);
        out.push(Piece::Limits);
        if self.proxy.is_some() {
            push(&mut out, &["/bin/sh", "-c", &bridge(), "talon-bridge"]);
        }
        push(&mut out, &[self.program]);
        push(&mut out, self.args);
        out
    }
}

/// The `/etc` entries a command with `network` sees.
pub(crate) fn etc(network: Network) -> impl Iterator<Item = &'static str> {
    ETC.iter()
        .chain(match network {
            Network::Host => ETC_NETWORK,
            Network::Off | Network::Allow => &[],
        })
        .copied()
}

/// util-linux's `prlimit` and `choom`.
pub(crate) const PRLIMIT: &str = "/usr/bin/prlimit";
pub(crate) const CHOOM: &str = "/usr/bin/choom";

/// The OOM score every sandboxed process gets: the kernel kills the
/// command before the gateway when memory runs out.
const OOM_SCORE: &str = "1000";

/// `prlimit` and `choom` with their arguments, up to the command: the
/// limits a remote host applies inside the sandbox.
pub(crate) fn limits(l: &Limits) -> Vec<String> {
    let limit = |name: &str, value: u64| format!("--{name}={value}:{value}");
    let mut out = vec![PRLIMIT.to_owned()];
    out.extend([
        limit("cpu", l.cpu_seconds),
        limit("data", l.memory_bytes),
        limit("nproc", l.processes),
        limit("nofile", l.open_files),
        limit("fsize", l.file_size_bytes),
        limit("core", 0),
    ]);
    out.extend(["--", CHOOM, "-n", OOM_SCORE, "--"].map(str::to_owned));
    out
}

/// The wrapper's script. Its arguments: the cgroup file to join (empty
/// for none), the two filter files, the CPU seconds, data KiB, open files
/// and file size in 512-byte blocks (POSIX `ulimit -f`'s unit, which
/// dash, bash as `sh` and busybox share), then bubblewrap and its
/// arguments. Writing `0` to a cgroup v1 `tasks` file moves the writing
/// thread alone, which the kernel does without the RCU grace period a
/// move through `cgroup.procs` waits for (7 to 11 ms here); the shell
/// has one thread. Each step that fails stops the command (status 125).
const WRAPPER: &str = r#"case $1 in
  '') ;;
  */tasks) echo 0 > "$1" || exit 125 ;;
  *) echo $$ > "$1" || exit 125 ;;
esac
echo OOM > /proc/self/oom_score_adj || exit 125
ulimit -t "$4" && ulimit -d "$5" && ulimit -n "$6" && ulimit -f "$7" && ulimit -c 0 || exit 125
f0=$2 f1=$3
shift 7
exec "$@" 3<"$f0" 4<"$f1""#;

/// `/bin/sh` and its arguments up to bubblewrap's path: the wrapper that
/// joins `cgroup`, sets the limits and opens `filters` (see [`WRAPPER`]).
pub(crate) fn wrapper(
    cgroup: Option<&Path>,
    filters: &[std::path::PathBuf; 2],
    l: &Limits,
) -> Vec<OsString> {
    let mut out: Vec<OsString> = vec![
        "/bin/sh".into(),
        "-c".into(),
        WRAPPER.replace("OOM", OOM_SCORE).into(),
        "talon-jail".into(),
        cgroup.map_or_else(OsString::new, |c| c.as_os_str().to_owned()),
    ];
    out.extend(filters.iter().map(|f| f.as_os_str().to_owned()));
    out.extend(
        [
            l.cpu_seconds,
            l.memory_bytes / 1024,
            l.open_files,
            l.file_size_bytes / 512,
        ]
        .map(|v| OsString::from(v.to_string())),
    );
    out
}
