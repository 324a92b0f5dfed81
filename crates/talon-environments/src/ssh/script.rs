//! What runs on the remote host: a handful of constant POSIX `sh`
//! scripts, each started as `exec /bin/sh -c '<script>' talon-ssh
//! '<arg>'...` ([`remote_line`]), so that whatever the remote user's login
//! shell is (any POSIX one: sh, dash, bash, zsh, ksh) it parses nothing
//! but single-quoted words ([`quote`]). Nothing a caller chose (a command,
//! a file name, a variable's value) is ever part of a script's text: each
//! arrives as a positional argument, or, for a bound variable's value, as
//! an exported variable of a transport name (`TALON_E<n>`).
//!
//! The scripts: [`RECEIVE`] (make the remote directory, write the lease,
//! replace the workspace with the tar stream on stdin), [`PRESENT`]
//! (whether it is still there), [`SEND`] (the
//! workspace as a tar stream on stdout), [`RUN`] (one command, sandboxed,
//! watched), [`RELEASE`] and [`SWEEP`].

/// `s` as one single-quoted word of a POSIX shell: `'` becomes `'\''`.
/// Everything else, newlines, `$`, backquotes, backslashes, double
/// quotes, stands for itself inside single quotes. A NUL byte cannot
/// cross a command line at all: callers refuse it first.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}

/// Whether `s` holds a NUL byte (which no argument can).
pub(crate) fn has_nul(s: &str) -> bool {
    s.contains('\0')
}

/// The command line the remote login shell runs: `exports` (name, value)
/// first, then `script` as `/bin/sh`'s, with `args` as its positional
/// parameters.
pub(crate) fn remote_line(exports: &[(String, &str)], script: &str, args: &[&str]) -> String {
    let mut line = String::new();
    if !exports.is_empty() {
        line.push_str("export");
        for (name, value) in exports {
            line.push(' ');
            line.push_str(name);
            line.push('=');
            line.push_str(&quote(value));
        }
        line.push_str("; ");
    }
    line.push_str("exec /bin/sh -c ");
    line.push_str(&quote(script));
    line.push_str(" talon-ssh");
    for arg in args {
        line.push(' ');
        line.push_str(&quote(arg));
    }
    line
}

/// `bytes` as a `printf` format that prints them: each byte as an octal
/// escape (`\ooo`), so that no `%` or other character of a format is in
/// it.
pub(crate) fn printf_bytes(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("\\{b:03o}")).collect()
}

/// Replaces the workspace with the tar stream on stdin.
///
/// `$1` workdir, `$2` the environment's directory, `$3` its workspace,
/// `$4` the lease in seconds, `$5` `bwrap` when the host must have
/// bubblewrap, and then `$6` the architecture the gateway's seccomp
/// filters are for (`uname -m`'s name) and `$7`, `$8` the two filters
/// ([`printf_bytes`]), written to `seccomp-0.bpf` and `seccomp-1.bpf` of
/// the environment's directory, where [`RUN`] reads them. A host of
/// another architecture is refused: its commands would run unfiltered.
/// The workdir must be a real directory of the remote user's (not a link
/// another user planted in a shared `/var/tmp`). The lease is written
/// before anything else, so a gateway that dies mid-upload leaves a
/// directory a sweep finds.
pub(crate) const RECEIVE: &str = r#"w=$1 r=$2 ws=$3 secs=$4 need=$5
umask 077
if [ "$need" = bwrap ]; then
  if ! command -v bwrap >/dev/null 2>&1; then
    echo 'talon: this host has no bubblewrap (bwrap), which its sandbox "bubblewrap" needs: install it (Debian: apt-get install bubblewrap), or an admin sets the host'"'"'s sandbox to "none"' >&2
    exit 3
  fi
  m=$(uname -m)
  if [ "$m" != "$6" ]; then
    echo "talon: this host is $m and the gateway's seccomp filter is for $6: commands would run here without it, so none is run (use a host of the gateway's architecture, or an admin sets the host's sandbox to \"none\")" >&2
    exit 3
  fi
  for t in /usr/bin/prlimit /usr/bin/choom; do
    [ -x "$t" ] || { echo "talon: this host has no $t (util-linux), which its sandbox \"bubblewrap\" needs" >&2; exit 3; }
  done
fi
for t in tar setsid date; do
  command -v "$t" >/dev/null 2>&1 || { echo "talon: this host has no $t" >&2; exit 3; }
done
mkdir -p -- "$w" 2>/dev/null
if [ -L "$w" ] || [ ! -d "$w" ] || [ ! -O "$w" ]; then
  echo "talon: $w is not a directory of $(id -un)'s" >&2
  exit 3
fi
mkdir -p -- "$r" || exit 3
if [ -L "$r" ] || [ ! -O "$r" ]; then echo "talon: $r is not a directory of $(id -un)'s" >&2; exit 3; fi
printf '%s\n' "$(( $(date +%s) + secs ))" > "$r/.talon-lease" || exit 3
if [ "$need" = bwrap ]; then
  rm -f -- "$r/seccomp-0.bpf" "$r/seccomp-1.bpf"
  printf "$7" > "$r/seccomp-0.bpf" && printf "$8" > "$r/seccomp-1.bpf" || exit 3
fi
rm -rf -- "$ws" && mkdir -- "$ws" || exit 3
umask 022
exec tar --no-same-owner -C "$ws" -xf -
"#;

/// Whether the remote workspace is still there (status 0, its lease
/// renewed) or must be uploaded again (status 4: swept, or removed by
/// hand, or, with `$4` `bwrap`, its seccomp filters missing).
///
/// `$1` the environment's directory, `$2` its workspace, `$3` the lease,
/// `$4` `bwrap` or `none`.
pub(crate) const PRESENT: &str = r#"r=$1 ws=$2 secs=$3
[ -d "$ws" ] && [ ! -L "$ws" ] && [ -f "$r/.talon-lease" ] || exit 4
if [ "$4" = bwrap ]; then [ -f "$r/seccomp-0.bpf" ] && [ -f "$r/seccomp-1.bpf" ] || exit 4; fi
printf '%s\n' "$(( $(date +%s) + secs ))" > "$r/.talon-lease" || exit 4
"#;

/// The workspace as a tar stream on stdout (hard links as copies, links
/// as links), renewing the lease.
///
/// `$1` the environment's directory, `$2` its workspace, `$3` the lease.
pub(crate) const SEND: &str = r#"r=$1 ws=$2 secs=$3
cd -- "$ws" 2>/dev/null || { echo "talon: the remote workspace $ws is gone (its lease ran out and a sweep removed it?)" >&2; exit 3; }
printf '%s\n' "$(( $(date +%s) + secs ))" > "$r/.talon-lease" 2>/dev/null
exec tar --hard-dereference -cf - .
"#;

/// Removes the environment's directory (`$1`), or with `$2` `retain`
/// keeps it and drops its lease, so that no sweep removes it.
pub(crate) const RELEASE: &str = r#"r=$1
if [ "$2" = retain ]; then
  rm -f -- "$r/.talon-lease"
else
  rm -rf -- "$r"
fi
"#;

/// Removes every directory of the workdir (`$1`) whose lease
/// (`.talon-lease`, seconds since the epoch by this host's clock) has
/// passed; prints each one's name. A directory without a lease (a retained
/// one, or another's) is left alone.
pub(crate) const SWEEP: &str = r#"w=$1
[ -d "$w" ] && [ ! -L "$w" ] || exit 0
now=$(date +%s)
for d in "$w"/*; do
  [ -d "$d" ] && [ ! -L "$d" ] || continue
  f=$d/.talon-lease
  [ -f "$f" ] && [ ! -L "$f" ] || continue
  e=$(head -c 20 -- "$f" | tr -cd 0-9)
  [ -n "$e" ] || continue
  if [ "$e" -lt "$now" ]; then
    rm -rf -- "$d" && printf '%s\n' "${d##*/}"
  fi
done
exit 0
"#;

/// Runs one command in the remote workspace, as the gateway's own
/// sandbox would, and makes sure it cannot outlive its connection.
///
/// Arguments: `$1` the environment's directory, `$2` the workspace, `$3`
/// the lease, `$4` how often (seconds) the lease is renewed while the
/// command runs, `$5` `bwrap` or `none`, `$6` the network (`off` or
/// `host`), `$7` the `PATH`, `$8` how many bound variables follow, then
/// their names (each value in `TALON_E<n>`), then how many arguments
/// follow, then the arguments, each a pair: `w WORD`, the word as it is;
/// `s DIR`, a system directory (`/bin`), recreated as the symlink it is
/// here or bound read-only if it is here; `m FILE`, a file of procfs
/// masked with `/dev/null` if this host's kernel has it. For `bwrap`
/// they are bubblewrap's, as `talon_jail::remote::bwrap_arguments` makes
/// them (the namespaces, the read-only system, the `/etc` allow-list,
/// private `/proc`, `/dev` and `/tmp`, the workspace alone writable,
/// `--die-with-parent`, the seccomp filters on descriptors 3 and 4, then
/// `prlimit` and `choom`, then the command); for `none`, the command's.
///
/// The command starts in a session of its own (`setsid`) with only the
/// variables it is given (`env -i`): in bubblewrap, its filters
/// (`seccomp-0.bpf`, `seccomp-1.bpf` of the environment's directory,
/// written by [`RECEIVE`]) opened on descriptors 3 and 4, or, for the
/// admin's `none`, directly (in a network namespace of its own,
/// `unshare`, when the network is off). A watchdog polls, once a second,
/// the SSH session process that started this shell (`$PPID`): once it is
/// gone (the connection dropped, or the gateway killed its `ssh`) it
/// kills the command's whole session, and while it lives it renews the
/// lease. When the command ends its session is killed too, so that
/// nothing it left in the background outlives it; its status is the
/// script's.
pub(crate) const RUN: &str = r#"root=$1 ws=$2 secs=$3 every=$4 mode=$5 net=$6 P=$7 sock=$8 n=$9
shift 9
renew() { printf '%s\n' "$(( $(date +%s) + secs ))" > "$root/.talon-lease"; } 2>/dev/null
cd -- "$ws" 2>/dev/null || { echo "talon: the remote workspace $ws is gone (its lease ran out and a sweep removed it?); upload it again" >&2; exit 125; }
renew
if [ "$mode" = bwrap ]; then
  set -- "$@" "PATH=$P" HOME=/tmp TMPDIR=/tmp
else
  set -- "$@" "PATH=$P" "HOME=${HOME:-/tmp}" TMPDIR=/tmp
fi
i=0
while [ "$i" -lt "$n" ]; do
  eval "v=\${TALON_E$i-}"
  set -- "$@" "$1=$v"
  shift
  i=$((i+1))
done
unset v
k=$1
shift
f0=$root/seccomp-0.bpf f1=$root/seccomp-1.bpf
if [ "$net" = allow ]; then
  [ -x /usr/bin/socat ] || { echo 'talon: this host has no /usr/bin/socat, which the sandbox'"'"'s network "allow" needs (Debian: apt-get install socat)' >&2; exit 125; }
  [ -S "$sock" ] || { echo "talon: the gateway's network proxy was not forwarded to $sock" >&2; exit 125; }
fi
if [ "$mode" = bwrap ]; then
  b=$(command -v bwrap) || { echo 'talon: this host has no bubblewrap (bwrap) to sandbox the command' >&2; exit 125; }
  [ -f "$f0" ] && [ -f "$f1" ] || { echo "talon: the sandbox's seccomp filters ($f0, $f1) are missing; upload the workspace again" >&2; exit 125; }
  set -- "$@" "$b"
elif [ "$net" != host ]; then
  u=$(command -v unshare) || { echo 'talon: this host has no unshare to cut the command'"'"'s network' >&2; exit 125; }
  set -- "$@" "$u" --net --map-root-user --
fi
i=0
while [ "$i" -lt "$k" ]; do
  a=$2
  case $1 in
    w) set -- "$@" "$a" ;;
    s) if [ -L "$a" ]; then set -- "$@" --symlink "$(readlink "$a")" "$a"
       elif [ -e "$a" ]; then set -- "$@" --ro-bind "$a" "$a"; fi ;;
    m) if [ -e "$a" ]; then set -- "$@" --ro-bind-try /dev/null "$a"; fi ;;
  esac
  shift 2
  i=$((i+1))
done
unset a
if [ "$mode" = bwrap ]; then
  setsid env -i "$@" 3<"$f0" 4<"$f1" &
else
  setsid env -i "$@" &
fi
c=$!
p=$PPID
(
  exec </dev/null >/dev/null 2>&1
  t=0
  while kill -0 "$p" && kill -0 "$c"; do
    sleep 1
    t=$((t+1))
    if [ "$t" -ge "$every" ]; then t=0; renew; fi
  done
  kill -s KILL -- "-$c" || kill -s KILL -- "$c"
) &
w=$!
wait "$c"
s=$?
kill -s KILL -- "-$c" 2>/dev/null
kill -s KILL -- "$w" 2>/dev/null
[ -z "$sock" ] || rm -f -- "$sock"
exit "$s"
"#;

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// What `sh` makes of a quoted word: the word itself, byte for byte.
    #[test]
    fn a_quoted_word_is_itself_to_sh() {
        for hostile in [
            "",
            "plain",
            "it's",
            "'",
            "''",
            "'\\''",
            "$(touch /tmp/talon-pwned)",
            "`id`",
            "a\nb\n",
            "\"; rm -rf / #",
            "\\",
            "-rf",
            "$HOME ${PATH} $1 $@ $*",
            "tab\there * ? [a] ~ !x &|;<>",
            "ünïcödé ✓",
        ] {
            let output = std::process::Command::new("/bin/sh")
                .arg("-c")
                .arg(format!("printf %s {}", quote(hostile)))
                .output()
                .unwrap();
            assert_eq!(String::from_utf8(output.stdout).unwrap(), hostile);
        }
    }

    #[test]
    fn printf_prints_the_bytes_it_was_given() {
        let bytes: Vec<u8> = (0..=255).collect();
        let output = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg("printf \"$1\"")
            .arg("talon-test")
            .arg(printf_bytes(&bytes))
            .output()
            .unwrap();
        assert_eq!(output.stdout, bytes);
    }

    #[test]
    fn a_host_of_another_architecture_is_refused() {
        if std::process::Command::new("bwrap")
            .arg("--version")
            .output()
            .is_err()
        {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let w = dir.path().join("w").display().to_string();
        let r = format!("{w}/env_1");
        let ws = format!("{r}/workspace");
        let output = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(RECEIVE)
            .args(["talon-ssh", &w, &r, &ws, "600", "bwrap", "vax", "", ""])
            .output()
            .unwrap();
        let stderr = String::from_utf8(output.stderr).unwrap();
        let here = String::from_utf8(
            std::process::Command::new("uname")
                .arg("-m")
                .output()
                .unwrap()
                .stdout,
        )
        .unwrap();
        assert_eq!(output.status.code(), Some(3), "{stderr}");
        assert!(
            stderr.contains(&format!("this host is {} and", here.trim()))
                && stderr.contains("seccomp filter is for vax"),
            "{stderr}"
        );
        assert!(!Path::new(&r).exists(), "nothing was made");
    }

    #[test]
    fn arguments_reach_the_script_as_they_are() {
        let line = remote_line(
            &[("TALON_E0".to_owned(), "va'l $(x)\n")],
            "printf '%s|' \"$@\" \"$TALON_E0\"",
            &["a b", "it's", "$(id)"],
        );
        let output = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(line)
            .env_clear()
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8(output.stdout).unwrap(),
            "a b|it's|$(id)|va'l $(x)\n|"
        );
    }
}
