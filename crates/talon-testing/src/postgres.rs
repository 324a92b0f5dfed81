//! A real PostgreSQL server for tests: no mock, no container, the Debian
//! server binaries (`scripts/setup.sh` installs the package `postgresql`).
//!
//! What it owns: the directories `$TMPDIR/talon-test-pg/` (cached templates,
//! `template-<major>-<runner uid>-<bin dir hash>`, and the data directories
//! of durable servers) and `/dev/shm/talon-test-pg/` (the data directories
//! of the others), the data directories being `run-<pid>-<random>`; and
//! the server processes it starts.
//!
//! The design, for cargo-nextest, which runs each test in its own process:
//!
//! - **Template.** `initdb` (about a second) runs once per machine, major
//!   version and user into a temporary directory that is then renamed into
//!   place, so concurrent processes never see half a template (the loser of
//!   a race drops its copy). Each process copies the template (sparsely: the
//!   new WAL segment is mostly zeros) into its own data directory, in
//!   memory (`/dev/shm`, several times faster than a disk) unless the server
//!   is durable or the copy does not fit there, and starts `postgres` on a
//!   free port of 127.0.0.1 (chosen by binding port 0; a start that loses
//!   the port to another process is retried). Unix sockets are off:
//!   clients use TCP. Readiness is `postmaster.pid` saying `ready` plus a
//!   TCP connect. The template also holds one empty database, which a
//!   server's first [`TestPostgres::fresh_database`] hands out at once.
//! - **One server per process.** [`TestPostgres::shared`] starts it on
//!   first use and every test of the process shares it; each test takes a
//!   database of its own with [`TestPostgres::fresh_database`]. By default
//!   the server trades durability for speed (`fsync`, `synchronous_commit`
//!   and `full_page_writes` off); [`TestPostgres::start`] starts an owned
//!   server with [`PgOptions`] (e.g. durable, for a benchmark of durable
//!   commits), stopped and deleted when dropped.
//! - **Dies with the process.** Servers are spawned by one keeper thread
//!   that never exits, through `setpriv --pdeathsig SIGQUIT`: when the test
//!   process dies, however it dies (SIGKILL included), the kernel sends the
//!   server SIGQUIT. (The parent-death signal fires when the *thread* that
//!   spawned the child exits, hence the keeper.) SIGQUIT is PostgreSQL's
//!   immediate shutdown: the server exits at once and also removes its
//!   System V shared memory segment and `postmaster.pid`, which SIGKILL
//!   would leak (the kernel allows 4096 segments).
//! - **Cleanup.** Statics are never dropped, so a data directory outlives
//!   its process: each start removes, in the background, the `run-<pid>-*`
//!   directories whose process is gone (and the segment of a server that
//!   was killed outright).
//! - **Root.** `initdb` and `postgres` refuse to run as root: as root they
//!   run as the user `postgres` (or else `nobody`), through `setpriv`, and
//!   the directories they use are given to that user.
//!
//! Binaries are looked up in `$TALON_PG_BIN`, then in the highest
//! `/usr/lib/postgresql/<version>/bin`, then in `PATH`. A missing server is
//! an error, which tests `.expect()`: they fail, they never skip.
//!
//! With `TALON_TEST_POSTGRES_URL` set (the admin URL of an existing server,
//! e.g. `postgres://user@host:5432/postgres`), [`TestPostgres::shared`]
//! uses that server instead of starting one.

use std::collections::hash_map::{DefaultHasher, RandomState};
use std::fs;
use std::hash::{BuildHasher, Hash, Hasher};
use std::io::{Read, Seek, SeekFrom};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, mpsc};
use std::time::{Duration, Instant};

/// The environment variable naming an existing server's admin URL.
pub const URL_ENV: &str = "TALON_TEST_POSTGRES_URL";
/// The environment variable naming the directory of the server binaries.
pub const BIN_ENV: &str = "TALON_PG_BIN";
/// The superuser of the servers this module starts (trust authentication).
pub const SUPERUSER: &str = "talon";

/// How long a server may take to accept connections.
const STARTUP_DEADLINE: Duration = Duration::from_secs(30);
/// Starts tried when another process takes the chosen port first.
const START_ATTEMPTS: usize = 3;
/// How long a stopping server may take before it is killed.
const STOP_DEADLINE: Duration = Duration::from_secs(10);
/// The server's log, inside its data directory.
const LOG_NAME: &str = "talon-server.log";
/// How much of the log an error quotes.
const LOG_TAIL_BYTES: u64 = 4000;
/// A database the template already holds: a server's first
/// [`TestPostgres::fresh_database`] costs nothing (`createdb` takes
/// 50–100 ms; copying one more database with the template, 10–20 ms).
const READY_DATABASE: &str = "talon_fresh_0";
/// Changes whenever the template's contents do (it names the template).
const TEMPLATE_LAYOUT: u32 = 2;

/// Failures of the harness.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PgError {
    /// The server binaries are not installed.
    #[error(
        "PostgreSQL server binaries not found ({missing}); run scripts/setup.sh which installs the Debian package postgresql (searched {searched})"
    )]
    NotFound {
        /// The programs missing.
        missing: String,
        /// Where they were looked for.
        searched: String,
    },
    /// A file system operation failed.
    #[error("{context}: {message}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        message: String,
    },
    /// A program (`initdb`, `createdb`, …) failed.
    #[error("{program} failed: {output}")]
    Command {
        /// The program and its arguments.
        program: String,
        /// Its status and output.
        output: String,
    },
    /// The server did not come up.
    #[error("PostgreSQL did not start: {message}\n--- server log ({log}) ---\n{tail}")]
    Startup {
        /// Why.
        message: String,
        /// The server log's path.
        log: String,
        /// The end of the server log.
        tail: String,
    },
    /// `TALON_TEST_POSTGRES_URL` is not a PostgreSQL URL.
    #[error("TALON_TEST_POSTGRES_URL: {0}")]
    Url(String),
}

fn io_error(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> PgError {
    let context = context.into();
    move |error| PgError::Io {
        context,
        message: error.to_string(),
    }
}

/// How to start an owned server ([`TestPostgres::start`]).
#[derive(Debug, Clone, Default)]
pub struct PgOptions {
    /// `fsync`, `synchronous_commit` and `full_page_writes` on, as in
    /// production (a commit waits for its WAL flush). Off by default, for
    /// speed.
    pub durable: bool,
    /// Extra server settings (`-c name=value`), after the harness's own.
    pub settings: Vec<(String, String)>,
}

impl PgOptions {
    fn server_settings(&self) -> Vec<(String, String)> {
        let flag = if self.durable { "on" } else { "off" };
        let mut settings: Vec<(String, String)> =
            ["fsync", "synchronous_commit", "full_page_writes"]
                .into_iter()
                .map(|name| (name.to_owned(), flag.to_owned()))
                .collect();
        settings.extend(self.settings.iter().cloned());
        settings
    }
}

/// A PostgreSQL server for tests: started by this module, or the existing
/// one `TALON_TEST_POSTGRES_URL` names.
pub struct TestPostgres {
    url: PgUrl,
    admin_url: String,
    createdb: PathBuf,
    server: Option<Server>,
    databases: AtomicU64,
}

/// A server this module started.
struct Server {
    child: Mutex<Child>,
    pid: u32,
    data_dir: PathBuf,
}

impl std::fmt::Debug for TestPostgres {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestPostgres")
            .field("admin_url", &self.admin_url)
            .field("data_dir", &self.data_dir())
            .field("pid", &self.pid())
            .finish()
    }
}

impl Drop for TestPostgres {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            let Server {
                child,
                pid,
                data_dir,
            } = server;
            match child.into_inner() {
                Ok(mut child) => stop(&mut child, pid),
                Err(poisoned) => stop(&mut poisoned.into_inner(), pid),
            }
            if let Err(error) = fs::remove_dir_all(&data_dir) {
                tracing::warn!(%error, data_dir = %data_dir.display(), "could not remove a test PostgreSQL data directory");
            }
        }
    }
}

impl TestPostgres {
    /// The server every test of this process shares: started on first use
    /// (or the one `TALON_TEST_POSTGRES_URL` names), never stopped by the
    /// process; it dies with it. Blocks while starting. A failure is
    /// returned to every caller.
    pub fn shared() -> Result<&'static TestPostgres, PgError> {
        static SHARED: OnceLock<Result<TestPostgres, PgError>> = OnceLock::new();
        SHARED
            .get_or_init(|| match std::env::var(URL_ENV) {
                Ok(url) if !url.trim().is_empty() => Self::existing(url.trim()),
                _ => Self::launch(&PgOptions::default()),
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Starts a server of its own (whatever `TALON_TEST_POSTGRES_URL`
    /// says), stopped and its data directory deleted when dropped. Blocks
    /// while starting.
    pub fn start(options: PgOptions) -> Result<TestPostgres, PgError> {
        Self::launch(&options)
    }

    /// Creates an empty database with a new name and returns its URL,
    /// `postgres://talon@127.0.0.1:PORT/NAME` for a server of this module.
    /// Blocking: it runs `createdb` (50–100 ms), except the first time on a
    /// server of this module, whose template already holds an unused
    /// database.
    pub fn fresh_database(&self) -> Result<String, PgError> {
        let n = self.databases.fetch_add(1, Ordering::Relaxed);
        if n == 0 && self.server.is_some() {
            return Ok(self.database_url(READY_DATABASE));
        }
        let name = format!(
            "talon_{}_{n}_{:08x}",
            std::process::id(),
            random_u64() as u32
        );
        let mut command = Command::new(&self.createdb);
        command
            .arg(format!("--maintenance-db={}", self.admin_url))
            .arg(&name)
            .env("PGCONNECT_TIMEOUT", "10")
            .stdin(Stdio::null());
        run(&mut command).map_err(|error| match error {
            PgError::Command { program, output } => PgError::Command {
                program: program.replace(&self.admin_url, &redacted(&self.admin_url)),
                output,
            },
            other => other,
        })?;
        Ok(self.database_url(&name))
    }

    /// The URL of database `name` of this server.
    pub fn database_url(&self, name: &str) -> String {
        format!("{}/{name}{}", self.url.prefix, self.url.query)
    }

    /// The admin URL: its `postgres` database, as the superuser.
    pub fn admin_url(&self) -> &str {
        &self.admin_url
    }

    /// The server's host (`127.0.0.1` for a server of this module).
    pub fn host(&self) -> &str {
        &self.url.host
    }

    /// The server's TCP port.
    pub fn port(&self) -> u16 {
        self.url.port
    }

    /// The data directory, for a server of this module.
    pub fn data_dir(&self) -> Option<&Path> {
        self.server.as_ref().map(|s| s.data_dir.as_path())
    }

    /// The postmaster's process id, for a server of this module.
    pub fn pid(&self) -> Option<u32> {
        self.server.as_ref().map(|s| s.pid)
    }

    fn existing(url: &str) -> Result<Self, PgError> {
        let parsed = PgUrl::parse(url)?;
        let createdb = find_createdb(&bin_dirs())?;
        tracing::info!(host = %parsed.host, port = parsed.port, "tests use the PostgreSQL server of {URL_ENV}");
        Ok(Self {
            url: parsed,
            admin_url: url.to_owned(),
            createdb,
            server: None,
            databases: AtomicU64::new(0),
        })
    }

    fn launch(options: &PgOptions) -> Result<Self, PgError> {
        let began = Instant::now();
        let bins = Binaries::find()?;
        let account = server_account()?;
        let base = disk_base()?;
        let memory = memory_base();
        sweep(
            std::iter::once(base.clone())
                .chain(memory.clone())
                .collect(),
        );
        let template = ensure_template(&base, &bins, account.as_ref())?;
        let data_dir = new_data_dir(
            &template,
            &base,
            memory.as_deref(),
            account.as_ref(),
            options,
        )?;
        let (child, port) = match start_server(&bins, account.as_ref(), &base, &data_dir, options) {
            Ok(started) => started,
            Err(error) => {
                let _ = fs::remove_dir_all(&data_dir);
                return Err(error);
            }
        };
        let pid = child.id();
        let admin_url = format!("postgres://{SUPERUSER}@127.0.0.1:{port}/postgres");
        tracing::info!(
            port,
            pid,
            data_dir = %data_dir.display(),
            durable = options.durable,
            ms = began.elapsed().as_millis() as u64,
            "test PostgreSQL ready"
        );
        Ok(Self {
            url: PgUrl::parse(&admin_url)?,
            admin_url,
            createdb: bins.createdb,
            server: Some(Server {
                child: Mutex::new(child),
                pid,
                data_dir,
            }),
            databases: AtomicU64::new(0),
        })
    }
}

/// The parts of a `postgres://` URL the harness needs.
#[derive(Debug, Clone)]
struct PgUrl {
    /// `scheme://authority`.
    prefix: String,
    /// `?…`, or empty.
    query: String,
    host: String,
    port: u16,
}

impl PgUrl {
    fn parse(url: &str) -> Result<Self, PgError> {
        let bad = |why: &str| PgError::Url(format!("{why}: {url}"));
        let rest = url
            .strip_prefix("postgres://")
            .or_else(|| url.strip_prefix("postgresql://"))
            .ok_or_else(|| bad("expected postgres://USER@HOST:PORT/DATABASE"))?;
        let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
        let authority = &rest[..authority_end];
        let query = rest[authority_end..]
            .find('?')
            .map_or("", |at| &rest[authority_end + at..]);
        let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
        let (host, port) = if let Some(v6) = host_port.strip_prefix('[') {
            let (host, after) = v6.split_once(']').ok_or_else(|| bad("unclosed ["))?;
            (host, after.strip_prefix(':'))
        } else {
            match host_port.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (host_port, None),
            }
        };
        let port = match port {
            Some(port) => port.parse().map_err(|_| bad("bad port"))?,
            None => 5432,
        };
        Ok(Self {
            prefix: url[..url.len() - rest.len() + authority_end].to_owned(),
            query: query.to_owned(),
            host: host.to_owned(),
            port,
        })
    }
}

/// `url` with its password, if any, replaced by `***`.
fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority = &rest[..rest.find(['/', '?']).unwrap_or(rest.len())];
    match authority.rsplit_once('@') {
        Some((user_info, host)) if user_info.contains(':') => {
            let user = user_info.split(':').next().unwrap_or_default();
            format!("{scheme}://{user}:***@{host}{}", &rest[authority.len()..])
        }
        _ => url.to_owned(),
    }
}

/// The server programs, from one directory.
#[derive(Debug, Clone)]
struct Binaries {
    dir: PathBuf,
    initdb: PathBuf,
    postgres: PathBuf,
    createdb: PathBuf,
}

impl Binaries {
    fn find() -> Result<Self, PgError> {
        let dirs = bin_dirs();
        for dir in &dirs {
            let (initdb, postgres) = (dir.join("initdb"), dir.join("postgres"));
            if is_executable(&initdb) && is_executable(&postgres) {
                // Through a symlink (/usr/local/bin/initdb), the real
                // directory: initdb finds postgres next to itself.
                let real = fs::canonicalize(&initdb)
                    .ok()
                    .and_then(|p| p.parent().map(Path::to_path_buf))
                    .filter(|d| is_executable(&d.join("postgres")))
                    .unwrap_or_else(|| dir.clone());
                let createdb = find_createdb(&[real.clone(), dir.clone()])
                    .or_else(|_| find_createdb(&dirs))?;
                return Ok(Self {
                    initdb: real.join("initdb"),
                    postgres: real.join("postgres"),
                    createdb,
                    dir: real,
                });
            }
        }
        Err(PgError::NotFound {
            missing: "initdb, postgres".to_owned(),
            searched: searched(&dirs),
        })
    }

    /// The major version: from the directory when it is Debian's
    /// `/usr/lib/postgresql/<major>/bin`, else from `postgres --version`
    /// (20 ms).
    fn major_version(&self) -> Result<String, PgError> {
        if let Ok(rest) = self.dir.strip_prefix("/usr/lib/postgresql")
            && let [major, bin] = rest.iter().collect::<Vec<_>>()[..]
            && bin == "bin"
            && let Some(major) = major.to_str()
            && !major.is_empty()
            && major.chars().all(|c| c.is_ascii_digit())
        {
            return Ok(major.to_owned());
        }
        let out = run(Command::new(&self.postgres).arg("--version"))?;
        // "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)"
        out.split_once(')')
            .and_then(|(_, v)| v.split_whitespace().next())
            .and_then(|v| v.split(['.', 'b', 'r', 'd']).next())
            .filter(|v| !v.is_empty() && v.chars().all(|c| c.is_ascii_digit()))
            .map(str::to_owned)
            .ok_or_else(|| PgError::Command {
                program: format!("{} --version", self.postgres.display()),
                output: format!("unexpected version: {out}"),
            })
    }
}

/// Where the binaries are looked for, in order.
fn bin_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(dir) = std::env::var_os(BIN_ENV).filter(|d| !d.is_empty()) {
        dirs.push(PathBuf::from(dir));
    }
    let mut versions: Vec<(Vec<u32>, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_str()?.to_owned();
            let key = name
                .split('.')
                .map(str::parse)
                .collect::<Result<Vec<u32>, _>>()
                .ok()?;
            Some((key, entry.path().join("bin")))
        })
        .collect();
    versions.sort();
    dirs.extend(versions.into_iter().rev().map(|(_, dir)| dir));
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    dirs
}

fn searched(dirs: &[PathBuf]) -> String {
    let mut shown = vec![format!("${BIN_ENV}")];
    shown.push("/usr/lib/postgresql/*/bin".to_owned());
    shown.push("PATH".to_owned());
    format!(
        "{}: {}",
        shown.join(", "),
        dirs.iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(":")
    )
}

fn find_createdb(dirs: &[PathBuf]) -> Result<PathBuf, PgError> {
    dirs.iter()
        .map(|d| d.join("createdb"))
        .find(|p| is_executable(p))
        .ok_or_else(|| PgError::NotFound {
            missing: "createdb".to_owned(),
            searched: searched(dirs),
        })
}

fn is_executable(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn find_setpriv() -> Option<PathBuf> {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .chain(["/usr/bin".into(), "/bin".into()])
        .map(|d| d.join("setpriv"))
        .find(|p| is_executable(p))
}

/// The user the server runs as when the harness runs as root.
#[derive(Debug, Clone, Copy)]
struct Account {
    uid: u32,
    gid: u32,
}

/// The effective uid of this process (the owner of `/proc/self`).
fn current_uid() -> Result<u32, PgError> {
    fs::metadata("/proc/self")
        .map(|m| m.uid())
        .map_err(io_error("reading /proc/self"))
}

/// `None` when not root: the server runs as this process's user.
fn server_account() -> Result<Option<Account>, PgError> {
    if current_uid()? != 0 {
        return Ok(None);
    }
    for name in ["postgres", "nobody"] {
        if let Some(account) = lookup_user(name) {
            if account.uid == 0 {
                continue;
            }
            return Ok(Some(account));
        }
    }
    Err(PgError::Io {
        context: "running as root".to_owned(),
        message: "PostgreSQL refuses to run as root, and there is no user `postgres` or `nobody` to run it as".to_owned(),
    })
}

fn lookup_user(name: &str) -> Option<Account> {
    let parse = |line: &str| {
        let fields: Vec<&str> = line.trim().split(':').collect();
        (fields.len() >= 4 && fields[0] == name).then_some(())?;
        Some(Account {
            uid: fields[2].parse().ok()?,
            gid: fields[3].parse().ok()?,
        })
    };
    if let Some(account) = fs::read_to_string("/etc/passwd")
        .ok()
        .and_then(|passwd| passwd.lines().find_map(parse))
    {
        return Some(account);
    }
    let out = Command::new("getent")
        .args(["passwd", name])
        .stdin(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).lines().find_map(parse))
        .flatten()
}

/// A command running `program` as `account` (when root) and, with
/// `pdeathsig`, receiving SIGQUIT when the spawning thread exits. The uid
/// change comes first: changing credentials clears the death signal.
fn server_command(
    program: &Path,
    account: Option<&Account>,
    pdeathsig: bool,
) -> Result<Command, PgError> {
    let setpriv = find_setpriv();
    let Some(setpriv) = setpriv.filter(|_| account.is_some() || pdeathsig) else {
        if account.is_some() {
            return Err(PgError::NotFound {
                missing: "setpriv (util-linux), needed to run PostgreSQL as another user"
                    .to_owned(),
                searched: "PATH, /usr/bin, /bin".to_owned(),
            });
        }
        if pdeathsig {
            tracing::warn!(
                "setpriv not found: the test PostgreSQL may outlive a killed test process"
            );
        }
        return Ok(Command::new(program));
    };
    let mut command = Command::new(setpriv);
    if let Some(account) = account {
        command
            .arg(format!("--reuid={}", account.uid))
            .arg(format!("--regid={}", account.gid))
            .arg("--clear-groups");
    }
    if pdeathsig {
        command.args(["--pdeathsig", "SIGQUIT"]);
    }
    command.arg("--").arg(program);
    Ok(command)
}

/// `$TMPDIR/talon-test-pg`: templates, and the data of durable servers.
fn disk_base() -> Result<PathBuf, PgError> {
    let base = std::env::temp_dir().join("talon-test-pg");
    make_base(&base).map_err(io_error(format!("creating {}", base.display())))?;
    Ok(base)
}

/// `/dev/shm/talon-test-pg` when there is a `/dev/shm`: the data of
/// servers without durability (copying the template there is several
/// times faster than to a disk, and their fsync is off anyway).
fn memory_base() -> Option<PathBuf> {
    let shm = Path::new("/dev/shm");
    let base = shm.join("talon-test-pg");
    (shm.is_dir() && make_base(&base).is_ok()).then_some(base)
}

/// Creates a base directory, world-writable and sticky like `/tmp` so
/// that several users can share it.
fn make_base(base: &Path) -> std::io::Result<()> {
    fs::create_dir_all(base)?;
    let meta = fs::metadata(base)?;
    if meta.permissions().mode() & 0o7777 != 0o1777 && Some(meta.uid()) == current_uid().ok() {
        fs::set_permissions(base, fs::Permissions::from_mode(0o1777))?;
    }
    Ok(())
}

/// A fresh data directory, `run-<pid>-<random>`, copied from the template:
/// in memory when the server is not durable and the copy fits, else on
/// disk.
fn new_data_dir(
    template: &Path,
    disk: &Path,
    memory: Option<&Path>,
    account: Option<&Account>,
    options: &PgOptions,
) -> Result<PathBuf, PgError> {
    let name = format!("run-{}-{:016x}", std::process::id(), random_u64());
    let memory = memory.filter(|_| !options.durable);
    let mut failure = None;
    for base in memory.into_iter().chain([disk]) {
        let data_dir = base.join(&name);
        match copy_tree(template, &data_dir, account) {
            Ok(()) => return Ok(data_dir),
            Err(error) => {
                let _ = fs::remove_dir_all(&data_dir);
                tracing::debug!(%error, data_dir = %data_dir.display(), "could not copy the PostgreSQL template");
                failure = Some(PgError::Io {
                    context: format!(
                        "copying the template {} to {}",
                        template.display(),
                        data_dir.display()
                    ),
                    message: error.to_string(),
                });
            }
        }
    }
    Err(failure.unwrap_or_else(|| PgError::Io {
        context: "copying the template".to_owned(),
        message: "nowhere to copy it".to_owned(),
    }))
}

/// The cached template for these binaries and this user, made on first use.
fn ensure_template(
    base: &Path,
    bins: &Binaries,
    account: Option<&Account>,
) -> Result<PathBuf, PgError> {
    let mut hasher = DefaultHasher::new();
    (&bins.dir, TEMPLATE_LAYOUT).hash(&mut hasher);
    let template = base.join(format!(
        "template-{}-{}-{:08x}",
        bins.major_version()?,
        current_uid()?,
        hasher.finish() as u32
    ));
    if template.join("global").join("pg_control").is_file() {
        return Ok(template);
    }
    let began = Instant::now();
    let tmp = base.join(format!(
        "tmp-template-{}-{:016x}",
        std::process::id(),
        random_u64()
    ));
    let made = (|| {
        fs::create_dir(&tmp).map_err(io_error(format!("creating {}", tmp.display())))?;
        fs::set_permissions(&tmp, fs::Permissions::from_mode(0o700))
            .map_err(io_error(format!("chmod {}", tmp.display())))?;
        if let Some(account) = account {
            std::os::unix::fs::chown(&tmp, Some(account.uid), Some(account.gid))
                .map_err(io_error(format!("chown {}", tmp.display())))?;
        }
        let mut initdb = server_command(&bins.initdb, account, false)?;
        initdb
            .arg("-D")
            .arg(&tmp)
            .args([
                "--no-sync",
                "-A",
                "trust",
                "-U",
                SUPERUSER,
                "-E",
                "UTF8",
                "--locale=C",
            ])
            .env("LC_ALL", "C")
            .current_dir(base)
            .stdin(Stdio::null());
        run(&mut initdb)?;
        // The ready database, in single-user mode (no port, no socket).
        let mut single = server_command(&bins.postgres, account, false)?;
        single
            .args(["--single", "-F", "-c", "exit_on_error=on", "-D"])
            .arg(&tmp)
            .arg("postgres")
            .env("LC_ALL", "C")
            .current_dir(base)
            .stdin(Stdio::piped());
        run_with_input(&mut single, &format!("CREATE DATABASE {READY_DATABASE}\n"))?;
        match fs::rename(&tmp, &template) {
            Ok(()) => Ok(()),
            // Another process won the race: use its template.
            Err(_) if template.join("global").join("pg_control").is_file() => {
                let _ = fs::remove_dir_all(&tmp);
                Ok(())
            }
            Err(error) => Err(io_error(format!(
                "renaming {} to {}",
                tmp.display(),
                template.display()
            ))(error)),
        }
    })();
    if made.is_err() {
        let _ = fs::remove_dir_all(&tmp);
    }
    made?;
    tracing::info!(template = %template.display(), ms = began.elapsed().as_millis() as u64, "made the test PostgreSQL template");
    Ok(template)
}

/// Copies a directory tree, keeping modes (and symlinks), owned by
/// `account` when given.
fn copy_tree(from: &Path, to: &Path, account: Option<&Account>) -> std::io::Result<()> {
    copy_dir(from, to, account, &mut vec![0; COPY_CHUNK])
}

/// The unit of the sparse copy.
const COPY_CHUNK: usize = 64 << 10;
static ZEROS: [u8; COPY_CHUNK] = [0; COPY_CHUNK];

fn copy_dir(
    from: &Path,
    to: &Path,
    account: Option<&Account>,
    buffer: &mut [u8],
) -> std::io::Result<()> {
    let owner = |path: &Path| match account {
        Some(a) => std::os::unix::fs::lchown(path, Some(a.uid), Some(a.gid)),
        None => Ok(()),
    };
    fs::create_dir(to)?;
    fs::set_permissions(to, fs::metadata(from)?.permissions())?;
    owner(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type()?;
        if kind.is_dir() {
            copy_dir(&source, &target, account, buffer)?;
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(fs::read_link(&source)?, &target)?;
            owner(&target)?;
        } else {
            copy_sparse(&source, &target, buffer)?;
            owner(&target)?;
        }
    }
    Ok(())
}

/// Copies a file, leaving holes for its runs of zeros: the WAL segment of a
/// new cluster is 16 MiB, mostly zeros (PostgreSQL reads a hole as zeros).
fn copy_sparse(from: &Path, to: &Path, buffer: &mut [u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut source = fs::File::open(from)?;
    let mode = source.metadata()?.permissions().mode();
    let mut target = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(to)?;
    let mut len = 0u64;
    loop {
        let mut filled = 0;
        while filled < buffer.len() {
            match source.read(&mut buffer[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                Err(error) => return Err(error),
            }
        }
        if filled == 0 {
            break;
        }
        // Slice equality of bytes is a memcmp, fast even unoptimised.
        if buffer[..filled] == ZEROS[..filled] {
            target.seek(SeekFrom::Current(filled as i64))?;
        } else {
            target.write_all(&buffer[..filled])?;
        }
        len += filled as u64;
        if filled < buffer.len() {
            break;
        }
    }
    target.set_len(len)?;
    target.set_permissions(fs::Permissions::from_mode(mode))
}

/// Starts `postgres` on a free port, retrying when another process takes
/// the port first.
fn start_server(
    bins: &Binaries,
    account: Option<&Account>,
    base: &Path,
    data_dir: &Path,
    options: &PgOptions,
) -> Result<(Child, u16), PgError> {
    let log_path = data_dir.join(LOG_NAME);
    let mut attempt = 0;
    loop {
        attempt += 1;
        let port = free_port()?;
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(io_error(format!("opening {}", log_path.display())))?;
        let log_start = log.metadata().map(|m| m.len()).unwrap_or(0);
        let log_err = log
            .try_clone()
            .map_err(io_error(format!("opening {}", log_path.display())))?;
        let mut command = server_command(&bins.postgres, account, true)?;
        command
            .arg("-D")
            .arg(data_dir)
            .args(["-p", &port.to_string()])
            // No Unix socket (clients use TCP; a long $TMPDIR would
            // overflow the socket path).
            .args(["-k", ""])
            .args(["-c", "listen_addresses=127.0.0.1"]);
        for (name, value) in options.server_settings() {
            command.arg("-c").arg(format!("{name}={value}"));
        }
        command
            .env("LC_ALL", "C")
            .current_dir(base)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err);
        let mut child = spawn_kept(command)?;
        match wait_ready(&mut child, data_dir, port) {
            Ok(()) => return Ok((child, port)),
            Err(message) => {
                let pid = child.id();
                stop(&mut child, pid);
                let fresh = read_from(&log_path, log_start);
                let port_taken = [
                    "could not bind",
                    "Address already in use",
                    "could not create any TCP/IP sockets",
                ]
                .iter()
                .any(|needle| fresh.contains(needle));
                if port_taken && attempt < START_ATTEMPTS {
                    tracing::debug!(port, "port taken, starting PostgreSQL again");
                    continue;
                }
                return Err(PgError::Startup {
                    message,
                    log: log_path.display().to_string(),
                    tail: log_tail(&log_path),
                });
            }
        }
    }
}

fn free_port() -> Result<u16, PgError> {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(io_error("choosing a free port"))
}

/// Waits for `postmaster.pid` to say `ready` and the port to accept.
fn wait_ready(child: &mut Child, data_dir: &Path, port: u16) -> Result<(), String> {
    let deadline = Instant::now() + STARTUP_DEADLINE;
    let pid = child.id().to_string();
    let address = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Err(format!("postgres exited ({status})")),
            Ok(None) => {}
            Err(error) => return Err(format!("waiting for postgres: {error}")),
        }
        if let Ok(pid_file) = fs::read_to_string(data_dir.join("postmaster.pid")) {
            let lines: Vec<&str> = pid_file.lines().collect();
            if lines.first().map(|l| l.trim()) == Some(pid.as_str())
                && lines.get(7).map(|l| l.trim()) == Some("ready")
                && TcpStream::connect_timeout(&address, Duration::from_secs(1)).is_ok()
            {
                return Ok(());
            }
        }
        if Instant::now() > deadline {
            return Err(format!(
                "not accepting connections on 127.0.0.1:{port} after {} s",
                STARTUP_DEADLINE.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(3));
    }
}

/// Stops a server: immediate shutdown (its data is thrown away, so a
/// checkpoint would be wasted), SIGKILL if it lingers, then reaps it.
fn stop(child: &mut Child, pid: u32) {
    if matches!(child.try_wait(), Ok(Some(_))) {
        return;
    }
    let signalled = Command::new("kill")
        .args(["-QUIT", &pid.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let deadline = Instant::now() + STOP_DEADLINE;
    while signalled && Instant::now() < deadline {
        if !matches!(child.try_wait(), Ok(None)) {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    tracing::warn!(pid, "test PostgreSQL did not stop; killing it");
    let _ = child.kill();
    let _ = child.wait();
}

/// Spawns through the keeper thread, which never exits: a child's
/// parent-death signal fires when the thread that spawned it exits.
fn spawn_kept(command: Command) -> Result<Child, PgError> {
    type Request = (Command, mpsc::Sender<std::io::Result<Child>>);
    static KEEPER: OnceLock<Result<mpsc::Sender<Request>, String>> = OnceLock::new();
    let keeper = KEEPER.get_or_init(|| {
        let (requests, incoming) = mpsc::channel::<Request>();
        std::thread::Builder::new()
            .name("talon-pg-keeper".to_owned())
            .spawn(move || {
                while let Ok((mut command, reply)) = incoming.recv() {
                    let _ = reply.send(command.spawn());
                }
                // Unreachable while the sender lives in a static; never
                // exit anyway.
                loop {
                    std::thread::park();
                }
            })
            .map(|_| requests)
            .map_err(|e| e.to_string())
    });
    let failed = |message: String| PgError::Io {
        context: "spawning postgres".to_owned(),
        message,
    };
    let keeper = keeper.as_ref().map_err(|e| failed(e.clone()))?;
    let program = format!("{:?}", command.get_program());
    let (reply, answer) = mpsc::channel();
    keeper
        .send((command, reply))
        .map_err(|_| failed("the keeper thread is gone".to_owned()))?;
    answer
        .recv()
        .map_err(|_| failed("the keeper thread is gone".to_owned()))?
        .map_err(|error| failed(format!("{program}: {error}")))
}

/// Runs a command to completion; its stdout, or an error with its output.
fn run(command: &mut Command) -> Result<String, PgError> {
    run_with_input(command, "")
}

/// [`run`], writing `input` to its stdin (when piped).
fn run_with_input(command: &mut Command, input: &str) -> Result<String, PgError> {
    let program = format!(
        "{} {}",
        command.get_program().to_string_lossy(),
        command
            .get_args()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ")
    );
    let failed = |error: std::io::Error| PgError::Command {
        program: program.clone(),
        output: error.to_string(),
    };
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(failed)?;
    if let Some(mut stdin) = child.stdin.take() {
        use std::io::Write;
        // A program that exits without reading says why in its output.
        let _ = stdin.write_all(input.as_bytes());
    }
    let out = child.wait_with_output().map_err(failed)?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(PgError::Command {
            program,
            output: format!(
                "{}\n{}{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        })
    }
}

fn read_from(path: &Path, offset: u64) -> String {
    let mut text = Vec::new();
    if let Ok(mut file) = fs::File::open(path)
        && file.seek(SeekFrom::Start(offset)).is_ok()
    {
        let _ = file.read_to_end(&mut text);
    }
    String::from_utf8_lossy(&text).into_owned()
}

fn log_tail(path: &Path) -> String {
    let len = fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let tail = read_from(path, len.saturating_sub(LOG_TAIL_BYTES));
    if len > LOG_TAIL_BYTES {
        tail.split_once('\n')
            .map_or(tail.clone(), |(_, rest)| rest.to_owned())
    } else {
        tail
    }
}

/// Whether `pid` is a live process (a zombie is dead).
fn alive(pid: u32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next())
            .is_some_and(|state| state != 'Z' && state != 'X')
    })
}

/// [`remove_stale`] in the background: deleting the previous process's
/// data directory takes tens of ms, and nothing waits for it.
fn sweep(bases: Vec<PathBuf>) {
    let work = bases.clone();
    let spawned = std::thread::Builder::new()
        .name("talon-pg-sweep".to_owned())
        .spawn(move || work.iter().for_each(|base| remove_stale(base)));
    if spawned.is_err() {
        bases.iter().for_each(|base| remove_stale(base));
    }
}

/// Removes the data directories (and half-made templates) of processes that
/// are gone, and the shared memory segment of a server that was killed
/// without shutting down (its `postmaster.pid` remains).
fn remove_stale(base: &Path) {
    let own = std::process::id();
    for entry in fs::read_dir(base).into_iter().flatten().flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| {
            n.strip_prefix("run-")
                .or_else(|| n.strip_prefix("tmp-template-"))
        }) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if pid == own || alive(pid) {
            continue;
        }
        let path = entry.path();
        if let Ok(pid_file) = fs::read_to_string(path.join("postmaster.pid")) {
            let lines: Vec<&str> = pid_file.lines().collect();
            if lines
                .first()
                .and_then(|l| l.trim().parse::<u32>().ok())
                .is_some_and(alive)
            {
                continue;
            }
            if let Some(shmid) = lines.get(6).and_then(|l| l.split_whitespace().nth(1)) {
                let _ = Command::new("ipcrm")
                    .args(["-m", shmid])
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
            }
        }
        match fs::remove_dir_all(&path) {
            Ok(()) => {
                tracing::debug!(path = %path.display(), "removed a stale test PostgreSQL directory")
            }
            Err(error) => {
                tracing::debug!(%error, path = %path.display(), "could not remove a stale test PostgreSQL directory")
            }
        }
    }
}

fn random_u64() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    if let Ok(now) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        hasher.write_u128(now.as_nanos());
    }
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse() {
        let url = PgUrl::parse("postgres://u:pw@db.example:6543/postgres?sslmode=disable").unwrap();
        assert_eq!(url.prefix, "postgres://u:pw@db.example:6543");
        assert_eq!(url.query, "?sslmode=disable");
        assert_eq!((url.host.as_str(), url.port), ("db.example", 6543));
        let url = PgUrl::parse("postgresql://[::1]/x").unwrap();
        assert_eq!((url.host.as_str(), url.port), ("::1", 5432));
        assert_eq!(url.prefix, "postgresql://[::1]");
        let url = PgUrl::parse("postgres://talon@127.0.0.1:5000").unwrap();
        assert_eq!(
            (url.prefix.as_str(), url.query.as_str()),
            ("postgres://talon@127.0.0.1:5000", "")
        );
        assert!(PgUrl::parse("mysql://x").is_err());
        assert_eq!(
            redacted("postgres://u:pw@h:1/d?x=1"),
            "postgres://u:***@h:1/d?x=1"
        );
        assert_eq!(redacted("postgres://u@h/d"), "postgres://u@h/d");
        assert!(PgUrl::parse("postgres://h:notaport/x").is_err());
    }

    #[test]
    fn settings_follow_durability() {
        let fast = PgOptions::default().server_settings();
        assert!(fast.iter().all(|(_, v)| v == "off"));
        let durable = PgOptions {
            durable: true,
            settings: vec![("max_connections".into(), "20".into())],
        }
        .server_settings();
        assert_eq!(durable.len(), 4);
        assert!(durable[..3].iter().all(|(_, v)| v == "on"));
    }
}
