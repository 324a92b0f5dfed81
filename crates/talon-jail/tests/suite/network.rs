//! The network `"allow"`: real HTTP servers on 127.0.0.1 started here,
//! real `curl` in the sandbox going through the command's proxy, and the
//! refusals the proxy logs. Nothing here reaches past 127.0.0.0/8.

use std::fmt::Debug;
use std::sync::{Arc, Mutex};

use pretty_assertions::assert_eq;
use talon_jail::{Jail, Network, Policy};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tracing::field::{Field, Visit};
use tracing::span;

use super::{Ran, run_in, workspace};

/// A server on 127.0.0.1 answering each request with `reply(path)`, and
/// the request heads it was sent.
struct Server {
    port: u16,
    heads: Arc<Mutex<Vec<String>>>,
}

type Reply = Arc<dyn Fn(&str) -> String + Send + Sync>;

fn ok(body: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

async fn server(reply: Reply) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let heads = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&heads);
    tokio::spawn(async move {
        loop {
            let Ok((mut conn, _)) = listener.accept().await else {
                return;
            };
            let (seen, reply) = (Arc::clone(&seen), Arc::clone(&reply));
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut chunk = [0u8; 4096];
                while !head.ends_with(b"\r\n\r\n") && head.len() < 1 << 20 {
                    match conn.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&chunk[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&head).into_owned();
                let path = head.split(' ').nth(1).unwrap_or_default().to_owned();
                seen.lock().unwrap().push(head);
                let _ = conn.write_all(reply(&path).as_bytes()).await;
                let _ = conn.shutdown().await;
            });
        }
    });
    Server { port, heads }
}

impl Server {
    fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }
}

fn allowing(hosts: &[String]) -> Policy {
    Policy {
        network: Network::Allow,
        allow_hosts: hosts.iter().map(|h| h.parse().unwrap()).collect(),
        ..Policy::default()
    }
}

/// The `talon::sandbox` warnings logged on this thread while it lives
/// (a `#[tokio::test]` runs the proxy's tasks on the test's thread).
#[derive(Clone, Default)]
struct Warnings(Arc<Mutex<Vec<String>>>);

struct Fields(Vec<String>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        if field.name() != "message" {
            self.0.push(format!("{}={value:?}", field.name()));
        }
    }
}

impl tracing::Subscriber for Warnings {
    fn register_callsite(
        &self,
        _: &'static tracing::Metadata<'static>,
    ) -> tracing::subscriber::Interest {
        tracing::subscriber::Interest::sometimes()
    }
    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        metadata.target() == "talon::sandbox" && *metadata.level() == tracing::Level::WARN
    }
    fn new_span(&self, _: &span::Attributes<'_>) -> span::Id {
        span::Id::from_u64(1)
    }
    fn record(&self, _: &span::Id, _: &span::Record<'_>) {}
    fn record_follows_from(&self, _: &span::Id, _: &span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut fields = Fields(Vec::new());
        event.record(&mut fields);
        self.0.lock().unwrap().push(fields.0.join(" "));
    }
    fn enter(&self, _: &span::Id) {}
    fn exit(&self, _: &span::Id) {}
}

impl Warnings {
    fn capture() -> (Warnings, tracing::subscriber::DefaultGuard) {
        let warnings = Warnings::default();
        let guard = tracing::subscriber::set_default(warnings.clone());
        (warnings, guard)
    }

    fn taken(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

/// Runs `script` with bash (written to a file in the workspace).
async fn bash(policy: Policy, asked: Network, script: &str) -> Ran {
    let (_dir, ws) = workspace();
    std::fs::write(ws.join("script.sh"), script).unwrap();
    run_in(policy, &ws, asked, "exec bash script.sh").await
}

const CURL: &str = "curl -s -A talon-test";

#[tokio::test]
async fn an_allowed_host_is_reached_by_plain_http_and_connect_and_no_other() {
    let (warnings, _guard) = Warnings::capture();
    let allowed = server(Arc::new(|path| ok(&format!("hello from {path}\n")))).await;
    let other = server(Arc::new(|_| ok("never\n"))).await;
    let (a, b) = (allowed.port, other.port);
    let script = format!(
        "{CURL} -w '|%{{http_code}}\\n' http://localhost:{a}/plain
         {CURL} -p -w '|%{{http_code}} %{{http_connect}}\\n' http://localhost:{a}/tunnel
         {CURL} -w '|%{{http_code}}\\n' http://localhost:{b}/port
         {CURL} -w '|%{{http_code}}\\n' http://127.0.0.1:{a}/address
         {CURL} -p -w '|%{{http_code}} %{{http_connect}}\\n' http://127.0.0.1:{a}/address; echo \"exit=$?\"
         {CURL} -w '|%{{http_code}}\\n' -X TRACE http://localhost:{a}/trace"
    );
    let ran = bash(
        allowing(&[format!("localhost:{a}")]),
        Network::Host,
        &script,
    )
    .await;
    let refused = |what: &str| format!("refused by the sandbox's proxy: {what}\n|403\n");
    let address = "is not in allowHosts (an IP address is allowed only where it is listed as one)";
    assert_eq!(
        ran.stdout,
        [
            "hello from /plain\n|200\n".to_owned(),
            "hello from /tunnel\n|200 200\n".to_owned(),
            refused(&format!("localhost:{b} is not in allowHosts")),
            refused(&format!("127.0.0.1:{a} {address}")),
            "|000 403\nexit=56\n".to_owned(),
            refused(
                "method \"TRACE\" (CONNECT, or GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS with an http:// URL)"
            ),
        ]
        .concat(),
        "{ran:?}"
    );
    // Forwarded in origin form, the hop-by-hop fields dropped; tunnelled
    // as the client sent it.
    let host = format!("Host: localhost:{a}\r\nUser-Agent: talon-test\r\nAccept: */*\r\n");
    assert_eq!(
        allowed.heads(),
        [
            format!("GET /plain HTTP/1.1\r\n{host}Connection: close\r\n\r\n"),
            format!("GET /tunnel HTTP/1.1\r\n{host}\r\n"),
        ]
    );
    assert_eq!(other.heads(), Vec::<String>::new());
    let why = |host: &str, port: u16, why: &str| format!("host={host} port={port} why={why}");
    assert_eq!(
        warnings.taken(),
        [
            why(
                "localhost",
                b,
                &format!("localhost:{b} is not in allowHosts")
            ),
            why("127.0.0.1", a, &format!("127.0.0.1:{a} {address}")),
            why("127.0.0.1", a, &format!("127.0.0.1:{a} {address}")),
            why(
                "-",
                0,
                "method \"TRACE\" (CONNECT, or GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS with an http:// URL)"
            ),
        ]
    );
}

#[tokio::test]
async fn a_redirect_to_a_host_not_listed_is_refused_on_its_second_hop() {
    let (warnings, _guard) = Warnings::capture();
    let elsewhere = server(Arc::new(|_| ok("never\n"))).await;
    let to = format!("http://localhost:{}/next", elsewhere.port);
    let start = server(Arc::new(move |_| {
        format!(
            "HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
    }))
    .await;
    let script = format!(
        "{CURL} -L -w '|%{{http_code}} %{{num_redirects}}\\n' http://localhost:{}/start",
        start.port
    );
    let ran = bash(
        allowing(&[format!("localhost:{}", start.port)]),
        Network::Host,
        &script,
    )
    .await;
    let why = format!("localhost:{} is not in allowHosts", elsewhere.port);
    assert_eq!(
        ran.stdout,
        format!("refused by the sandbox's proxy: {why}\n|403 1\n"),
        "{ran:?}"
    );
    assert_eq!(start.heads().len(), 1);
    assert_eq!(elsewhere.heads(), Vec::<String>::new());
    assert_eq!(
        warnings.taken(),
        [format!("host=localhost port={} why={why}", elsewhere.port)]
    );
}

/// No direct connection, no DNS; the bridge, the one process the command
/// did not start, is no child of it and runs under its filter and limits.
#[tokio::test]
async fn nothing_but_the_proxy_leads_out() {
    let allowed = server(Arc::new(|_| ok("never\n"))).await;
    let a = allowed.port;
    let script = format!(
        "env | grep -i proxy | sort
         {CURL} --noproxy '*' http://localhost:{a}/direct; echo \"direct=$?\"
         (echo x > /dev/tcp/127.0.0.1/{a}) 2>/dev/null; echo \"tcp=$?\"
         getent hosts example.com; echo \"dns=$?\"
         ls /etc/resolv.conf 2>/dev/null; ls /run/talon-proxy
         for p in /proc/[0-9]*; do
           [ \"$(cat $p/comm)\" = socat ] || continue
           grep -E '^(PPid|NoNewPrivs|Seccomp):' $p/status | tr -s '\t' ' '
           grep -E '^Max (processes|open files)' $p/limits | tr -s ' '
           cat $p/oom_score_adj
         done"
    );
    let ran = bash(
        allowing(&[format!("localhost:{a}")]),
        Network::Host,
        &script,
    )
    .await;
    let url = "http://127.0.0.1:3128";
    // As root the process limit is the cgroup's (the kernel exempts root
    // from RLIMIT_NPROC): the bridge keeps the gateway's own.
    let processes = if nix::unistd::Uid::effective().is_root() {
        let own = std::fs::read_to_string("/proc/self/limits").unwrap();
        let line = own
            .lines()
            .find(|l| l.starts_with("Max processes"))
            .unwrap();
        let fields: Vec<&str> = line.split_whitespace().collect();
        format!("{} {}", fields[2], fields[3])
    } else {
        "256 256".to_owned()
    };
    assert_eq!(
        ran.stdout,
        format!(
            "HTTPS_PROXY={url}\nHTTP_PROXY={url}\nhttp_proxy={url}\nhttps_proxy={url}\n\
             direct=7\ntcp=1\ndns=2\nproxy.sock\n\
             PPid: 1\nNoNewPrivs: 1\nSeccomp: 2\n\
             Max processes {processes} processes \nMax open files 1024 1024 files \n1000\n"
        ),
        "{ran:?}"
    );
    assert_eq!(allowed.heads(), Vec::<String>::new());
}

#[tokio::test]
async fn off_asked_or_nothing_listed_gets_no_proxy() {
    let allowed = server(Arc::new(|_| ok("never\n"))).await;
    let a = allowed.port;
    let script = format!(
        "env | grep -ci proxy
         ls /run/talon-proxy 2>/dev/null; {CURL} http://localhost:{a}/; echo \"curl=$?\"
         {CURL} -x http://127.0.0.1:3128 http://localhost:{a}/; echo \"proxy=$?\""
    );
    let expected = "0\ncurl=7\nproxy=7\n";
    let policy = allowing(&[format!("localhost:{a}")]);
    let narrowed = bash(policy, Network::Off, &script).await;
    assert_eq!(narrowed.stdout, expected, "a caller narrows: {narrowed:?}");
    let empty = bash(allowing(&[]), Network::Host, &script).await;
    assert_eq!(empty.stdout, expected, "an empty list is off: {empty:?}");
    assert_eq!(allowed.heads(), Vec::<String>::new());
}

#[tokio::test]
async fn a_flood_and_oversized_or_malformed_heads_are_refused_and_the_proxy_serves_on() {
    let (warnings, _guard) = Warnings::capture();
    let allowed = server(Arc::new(|path| ok(&format!("hello from {path}\n")))).await;
    let a = allowed.port;
    // 150 connections held open (the proxy serves 128 at once), then a
    // request past them, refused; once they close, requests pass again.
    let script = format!(
        r#"fds=()
for i in $(seq 150); do exec {{fd}}<>/dev/tcp/127.0.0.1/3128 && fds+=($fd); done
echo "held=${{#fds[@]}}"
sleep 1
{CURL} -w '|%{{http_code}}\n' http://localhost:{a}/during
for fd in "${{fds[@]}}"; do exec {{fd}}>&-; done
for i in $(seq 100); do
  code=$({CURL} -o /dev/null -w '%{{http_code}}' http://localhost:{a}/after)
  [ "$code" = 200 ] && break
  sleep 0.05
done
echo "after=$code"
{CURL} -w '|%{{http_code}}\n' "http://localhost:{a}/$(head -c 9000 /dev/zero | tr '\0' a)"
{CURL} -w '|%{{http_code}}\n' -H "X-Big: $(head -c 70000 /dev/zero | tr '\0' b)" http://localhost:{a}/big
exec 3<>/dev/tcp/127.0.0.1/3128; printf 'HELLO\r\n\r\n' >&3; tr -d '\r' <&3; exec 3>&-
{CURL} -w '|%{{http_code}}\n' http://localhost:{a}/last
"#
    );
    let ran = bash(
        allowing(&[format!("localhost:{a}")]),
        Network::Host,
        &script,
    )
    .await;
    let refused = |why: &str| format!("refused by the sandbox's proxy: {why}\n");
    let malformed = "malformed request line \"HELLO\" (METHOD target HTTP/1.1)";
    assert_eq!(
        ran.stdout,
        [
            "held=150\n".to_owned(),
            refused("more than 128 connections at once") + "|403\n",
            "after=200\n".to_owned(),
            refused("the request line is longer than 8192 bytes") + "|403\n",
            refused("the request head is larger than 65536 bytes") + "|403\n",
            format!(
                "HTTP/1.1 403 Forbidden\nContent-Type: text/plain; charset=utf-8\n\
                 Content-Length: {}\nConnection: close\n\n{}",
                refused(malformed).len(),
                refused(malformed)
            ),
            "hello from /last\n|200\n".to_owned(),
        ]
        .concat(),
        "{ran:?}"
    );
    let mut whys: Vec<String> = warnings.taken();
    whys.dedup();
    assert_eq!(
        whys,
        [
            "host=- port=0 why=more than 128 connections at once".to_owned(),
            "host=- port=0 why=the request line is longer than 8192 bytes".to_owned(),
            "host=- port=0 why=the request head is larger than 65536 bytes".to_owned(),
            format!("host=- port=0 why={malformed}"),
        ]
    );
}

#[test]
fn the_status_says_allow_when_hosts_are_listed() {
    let status = |policy: Policy| serde_json::to_value(Jail::new(policy).status()).unwrap();
    assert_eq!(
        status(allowing(&["localhost:8080".into()]))["network"],
        "allow"
    );
    assert_eq!(status(allowing(&[]))["network"], "off");
}
