//! The sandbox of a command that runs on another host of the same kind
//! (the `ssh` environment provider's): bubblewrap's arguments as
//! `bwrap.rs` builds them for this host ([`bwrap_arguments`]), and
//! the seccomp filters' bytes to copy there ([`seccomp_filters`]). One
//! line, built by one piece of code, for both.
//!
//! What differs from a local command's line:
//!
//! - the network `"allow"` reaches the gateway's filtering proxy through
//!   a socket the caller forwards to the remote host (`ssh -R`), which
//!   the sandbox sees as a local one sees its own ([`RemoteSpec::proxy`];
//!   without it, `"allow"` is `"off"`); the bridge needs `socat` there;
//! - the environment is not set by bubblewrap (no `--clearenv`, no
//!   `--setenv`): the remote script starts bubblewrap with `env -i` and
//!   only the variables the command gets, which bubblewrap passes on;
//! - what depends on the remote host is left to it ([`Arg::System`],
//!   [`Arg::Mask`]): whether `/bin` and the like are symlinks there, and
//!   which of procfs's masked files its kernel has;
//! - the filters arrive on descriptors 3 and 4 (`--add-seccomp-fd 3
//!   --add-seccomp-fd 4`, as locally) from files on the remote host,
//!   which the remote script opens (`3<file 4<file`); the files hold
//!   [`seccomp_filters`], valid only on a host of the architecture they
//!   were compiled for ([`SeccompFilters::arch`]).
//!
//! - `/etc` is a bind of each allow-listed entry (this host binds one
//!   copy of them all);
//! - every limit is set inside the sandbox: `/usr/bin/prlimit`, then
//!   `/usr/bin/choom`, then the command, so the remote host must have
//!   both (this host's wrapper sets all but the process limit before
//!   bubblewrap).

use std::path::Path;

use std::path::PathBuf;
use std::sync::Arc;

use crate::bwrap::{self, Piece};
use crate::policy::{Limits, Network};
use crate::{Guard, Jail, proxy};
use crate::{JailError, seccomp};

/// One remote command.
#[derive(Debug, Clone, Copy)]
pub struct RemoteSpec<'a> {
    /// Its workspace on the remote host (an absolute path).
    pub workspace: &'a str,
    /// Whether it may write there.
    pub writable: bool,
    /// Its network ([`Network::Allow`] without a `proxy` is
    /// [`Network::Off`] there).
    pub network: Network,
    /// With the network `"allow"`, where the gateway's [`crate::Proxy`]
    /// is forwarded on the remote host (a socket path there).
    pub proxy: Option<&'a str>,
    /// Its limits.
    pub limits: &'a Limits,
    /// The program (an absolute path inside the sandbox).
    pub program: &'a str,
    /// Its arguments.
    pub args: &'a [&'a str],
}

/// One part of a remote command's bubblewrap line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Arg {
    /// An argument as it is.
    Word(String),
    /// A top-level system directory (`/bin`): on the remote host,
    /// `--symlink <target> /bin` if it is a symlink there,
    /// `--ro-bind /bin /bin` if it is there, nothing otherwise.
    System(String),
    /// A file of procfs (`/proc/kcore`): `--ro-bind-try /dev/null <file>`
    /// if it exists on the remote host, nothing otherwise.
    Mask(String),
}

/// The arguments after `bwrap` for `spec`, on a host of this gateway's
/// kind, built as this host's are (see the module's documentation for
/// what differs).
pub fn bwrap_arguments(spec: &RemoteSpec<'_>) -> Vec<Arg> {
    let (network, proxy) = match (spec.network, spec.proxy) {
        (Network::Host, _) => (Network::Host, None),
        (Network::Allow, Some(socket)) => (Network::Allow, Some(Path::new(socket))),
        (Network::Off | Network::Allow, _) => (Network::Off, None),
    };
    bwrap::Args {
        workspace: spec.workspace.as_ref(),
        writable: spec.writable,
        network,
        proxy,
        env: bwrap::Environment::Inherited,
        limits: spec.limits,
        program: spec.program,
        args: spec.args,
    }
    .pieces()
    .into_iter()
    .flat_map(|piece| match piece {
        // Every word is a `str`'s (the spec's, or a constant's).
        Piece::Word(word) => vec![Arg::Word(word.to_string_lossy().into_owned())],
        Piece::System(dir) => vec![Arg::System(dir)],
        Piece::Mask(file) => vec![Arg::Mask(file.to_owned())],
        // The remote host has no copy: each entry is bound.
        Piece::Etc => bwrap::etc(network)
            .flat_map(|entry| {
                let path = format!("/etc/{entry}");
                ["--ro-bind-try".to_owned(), path.clone(), path]
            })
            .map(Arg::Word)
            .collect(),
        Piece::Limits => bwrap::limits(spec.limits)
            .into_iter()
            .map(Arg::Word)
            .collect(),
    })
    .collect()
}

/// The `PATH` a sandboxed command gets, here and there.
pub const PATH: &str = bwrap::PATH;

/// The descriptors bubblewrap reads the filters from
/// (`--add-seccomp-fd`), in the order of [`SeccompFilters::programs`].
pub const SECCOMP_FDS: [i32; 2] = bwrap::SECCOMP_FDS;

/// The seccomp filters every sandboxed command runs under, as bubblewrap
/// reads them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeccompFilters {
    /// The architecture they were compiled for, as `uname -m` names it
    /// (`x86_64`, `aarch64`, `riscv64`): on any other, they are wrong.
    pub arch: &'static str,
    /// The two programs (`struct sock_filter`s in this host's byte
    /// order): the refusals (`EPERM`), and `clone3`'s `ENOSYS`.
    pub programs: [Vec<u8>; 2],
}

/// The seccomp filters, compiled for this host's architecture.
pub fn seccomp_filters() -> Result<SeccompFilters, JailError> {
    let [a, b] = seccomp::programs()?;
    Ok(SeccompFilters {
        arch: std::env::consts::ARCH,
        programs: [seccomp::bytes(&a), seccomp::bytes(&b)],
    })
}

/// A filtering proxy serving one command of another host (an `ssh`
/// environment's) whose network is `"allow"`: the caller forwards its
/// socket there (`ssh -R`) and gives that path to
/// [`RemoteSpec::proxy`]. It ends when dropped.
#[derive(Debug)]
pub struct Proxy(proxy::Running);

impl Proxy {
    /// The socket (mode 0600, in a private directory of this host).
    pub fn socket(&self) -> PathBuf {
        self.0.socket()
    }
}

impl Guard {
    /// A guard holding `proxy` (for a remote command).
    pub fn holding(proxy: Proxy) -> Guard {
        Guard {
            _proxy: Some(proxy.0),
            ..Guard::default()
        }
    }
}

impl Jail {
    /// A proxy applying this jail's `allowHosts`, for a remote command,
    /// when the policy gives `asked` the network `"allow"` (`None`
    /// otherwise). Must be called inside a tokio runtime.
    pub fn remote_proxy(&self, asked: Network) -> Result<Option<Proxy>, JailError> {
        if self.policy.effective_network().narrow(asked) != Network::Allow {
            return Ok(None);
        }
        proxy::Running::start(Arc::clone(&self.policy)).map(|running| Some(Proxy(running)))
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use pretty_assertions::assert_eq;

    use super::*;

    /// A line without what depends on the host (the system directories
    /// and masks, resolved locally or left open remotely) and the
    /// environment (set locally, inherited remotely).
    fn shared(words: impl IntoIterator<Item = String>) -> Vec<String> {
        let mut out = Vec::new();
        let mut words = words.into_iter().peekable();
        while let Some(word) = words.next() {
            match word.as_str() {
                "--setenv" => {
                    words.next();
                    words.next();
                }
                "--clearenv" => {}
                "--symlink" => {
                    words.next();
                    words.next();
                }
                // The host-dependent binds, and `/etc` (a copy locally,
                // each entry remotely).
                "--ro-bind-try"
                    if words.peek().is_some_and(|w| {
                        w == "/dev/null"
                            || w.starts_with("/etc/")
                            || bwrap::SYSTEM.iter().any(|d| *w == format!("/{d}"))
                    }) =>
                {
                    words.next();
                    words.next();
                }
                "--ro-bind" if words.peek().is_some_and(|w| w == "/etc-copy") => {
                    words.next();
                    words.next();
                }
                _ => out.push(word),
            }
        }
        out
    }

    #[test]
    fn the_local_and_the_remote_line_agree_on_the_shared_parts() {
        let limits = Limits::default();
        for network in [Network::Off, Network::Host] {
            let local: Vec<String> = bwrap::Args {
                workspace: "/srv/ws".as_ref(),
                writable: true,
                network,
                proxy: None,
                env: bwrap::Environment::Set(&[("A".to_owned(), "1".to_owned())]),
                limits: &limits,
                program: "/bin/sh",
                args: &["-c", "true"],
            }
            .build(&bwrap::Local {
                etc: Some("/etc-copy".as_ref()),
                processes: bwrap::ProcessLimit::Rlimit,
            })
            .into_iter()
            .map(|w: OsString| w.into_string().unwrap())
            .collect();
            assert!(
                local
                    .windows(3)
                    .any(|w| w == ["--ro-bind", "/etc-copy", "/etc"])
            );
            let remote = bwrap_arguments(&RemoteSpec {
                workspace: "/srv/ws",
                writable: true,
                network,
                limits: &limits,
                proxy: None,
                program: "/bin/sh",
                args: &["-c", "true"],
            });
            let words: Vec<String> = remote
                .iter()
                .filter_map(|a| match a {
                    Arg::Word(w) => Some(w.clone()),
                    Arg::System(_) | Arg::Mask(_) => None,
                })
                .collect();
            // Remotely every limit is set inside; locally the wrapper
            // sets all but the process limit.
            let tail = bwrap::limits(&limits);
            let at = words.iter().position(|w| w == "/usr/bin/prlimit").unwrap();
            let mut local_limits = words.clone();
            local_limits.splice(
                at..at + tail.len(),
                [
                    "/usr/bin/prlimit".to_owned(),
                    "--nproc=256:256".to_owned(),
                    "--".to_owned(),
                ],
            );
            assert_eq!(shared(local.clone()), shared(local_limits));
            // The shared parts are there, from the same constants.
            for flag in bwrap::NAMESPACES {
                assert!(words.iter().any(|w| w == flag), "{flag}");
            }
            assert_eq!(
                words.iter().any(|w| w == "--unshare-net"),
                network != Network::Host
            );
            for entry in bwrap::etc(network) {
                assert!(words.contains(&format!("/etc/{entry}")), "{entry}");
            }
            for dir in bwrap::PROC_READ_ONLY {
                assert!(words.iter().any(|w| w == dir), "{dir}");
            }
            let masks: Vec<&str> = remote
                .iter()
                .filter_map(|a| match a {
                    Arg::Mask(m) => Some(m.as_str()),
                    _ => None,
                })
                .collect();
            assert_eq!(masks, bwrap::PROC_MASKED);
            let systems = remote
                .iter()
                .filter(|a| matches!(a, Arg::System(_)))
                .count();
            assert_eq!(systems, bwrap::SYSTEM.len());
            assert_eq!(words[at..at + tail.len()], tail[..]);
            assert_eq!(words[at + tail.len()..], ["/bin/sh", "-c", "true"]);
            let fds: Vec<&String> = words
                .iter()
                .skip_while(|w| *w != "--add-seccomp-fd")
                .take(4)
                .collect();
            assert_eq!(fds, ["--add-seccomp-fd", "3", "--add-seccomp-fd", "4"]);
        }
    }

    #[test]
    fn allow_is_off_remotely() {
        let limits = Limits::default();
        let spec = |network| RemoteSpec {
            workspace: "/w",
            writable: true,
            network,
            limits: &limits,
            proxy: None,
            program: "/bin/true",
            args: &[],
        };
        assert_eq!(
            bwrap_arguments(&spec(Network::Allow)),
            bwrap_arguments(&spec(Network::Off))
        );
        assert!(
            !bwrap_arguments(&spec(Network::Allow))
                .iter()
                .any(|a| *a == Arg::Word("--setenv".to_owned()))
        );
    }

    #[test]
    fn allow_with_a_forwarded_proxy_is_allow_remotely() {
        let limits = Limits::default();
        let words: Vec<Arg> = bwrap_arguments(&RemoteSpec {
            workspace: "/w",
            writable: true,
            network: Network::Allow,
            limits: &limits,
            proxy: Some("/srv/env/proxy-1.sock"),
            program: "/bin/true",
            args: &[],
        });
        let words: Vec<String> = words
            .into_iter()
            .filter_map(|a| match a {
                Arg::Word(w) => Some(w),
                Arg::System(_) | Arg::Mask(_) => None,
            })
            .collect();
        // Its own network namespace, the socket where the bridge looks,
        // the proxy's variables, and the bridge before the command.
        assert!(words.iter().any(|w| w == "--unshare-net"));
        assert!(words.windows(3).any(|w| w
            == [
                "--ro-bind",
                "/srv/env/proxy-1.sock",
                "/run/talon-proxy/proxy.sock"
            ]));
        assert!(
            words
                .windows(3)
                .any(|w| w == ["--setenv", "HTTPS_PROXY", "http://127.0.0.1:3128"])
        );
        let bridge = words.iter().position(|w| w == "talon-bridge").unwrap();
        assert_eq!(words[bridge + 1..], ["/bin/true"]);
    }

    #[test]
    fn the_filters_are_this_hosts() {
        let filters = seccomp_filters().unwrap();
        assert_eq!(filters.arch, std::env::consts::ARCH);
        for program in &filters.programs {
            assert!(!program.is_empty() && program.len() % 8 == 0);
        }
    }
}
