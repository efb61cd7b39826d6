//! The network of a confined process: none, the host's, or **egress to
//! named hosts only** through a proxy evalhost runs for the process.
//!
//! A sandbox has its own network namespace: not even the host's loopback
//! is there. For a process allowed some hosts, evalhost starts a
//! [`Session`] outside: a proxy listening on a Unix socket in a directory
//! of its own, bound into the sandbox. Inside, [`bridge`] (evalhost itself,
//! `evalhost __sandbox-bridge`, run by bubblewrap in front of the program)
//! listens on the sandbox's loopback (`127.0.0.1:3128`, named by
//! `HTTP_PROXY`/`HTTPS_PROXY`) and carries each connection to the socket.
//! The proxy reads the request's head — `CONNECT host:port` (HTTPS) or
//! an absolute `http://host/…` request — connects only when the host is in
//! the allow-list, and records every attempt, allowed or refused, for the
//! case's row. A program that ignores the proxy variables reaches nothing.
//!
//! A forward carries one port of the host's loopback into the sandbox at
//! the same port (a code grader's judge proxy), and nothing else.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The port the proxy listens on inside the sandbox.
pub const PROXY_PORT: u16 = 3128;

/// Where a session's directory is bound inside the sandbox.
pub const SANDBOX_RUN: &str = "/run/evalhost";

/// The argument that makes evalhost the bridge (see [`bridge`]).
pub const BRIDGE_ARG: &str = "__sandbox-bridge";

/// The longest request head the proxy reads.
const HEAD_CAP: usize = 64 << 10;

/// The most connections a session carries at once; past it a connection
/// is closed at once (and counted), so that a process cannot make
/// evalhost hold a thread per connection without end.
pub const CONNECTIONS_AT_ONCE: usize = 64;

/// The attempts kept per process while it runs; past them, counted.
pub const KEPT_ATTEMPTS: usize = 10_000;

/// What a confined process may reach of the network.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Network {
    /// Nothing (the default for commands).
    #[default]
    None,
    /// The host's network, whole (`isolate.network: true`).
    Host,
    /// HTTP and HTTPS through evalhost's proxy, to these hosts only
    /// (`api.openai.com`, `*.anthropic.com`, `127.0.0.1:8080`).
    Hosts(Vec<String>),
    /// One port of the host's loopback, at the same port (the judge proxy).
    Loopback(u16),
}

impl Network {
    /// How the row and the header say it.
    pub fn describe(&self) -> String {
        match self {
            Self::None => "none".into(),
            Self::Host => "host".into(),
            Self::Hosts(hosts) if hosts.is_empty() => "proxy (no host allowed)".into(),
            Self::Hosts(hosts) => format!("proxy: {}", hosts.join(", ")),
            Self::Loopback(port) => format!("loopback port {port} (judge proxy)"),
        }
    }
}

/// One connection a confined process asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// The host it named.
    pub host: String,
    /// The port.
    pub port: u16,
    /// Whether the allow-list let it through.
    pub allowed: bool,
    /// Why it failed, when it was allowed and still failed (the host did
    /// not answer), or why it was refused.
    pub note: Option<String>,
}

/// Whether `host:port` is in `allow`: a pattern is a host (`api.openai.com`,
/// any port), `*.domain` (its subdomains), or either with `:port`.
pub fn allowed(allow: &[String], host: &str, port: u16) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    allow.iter().any(|pattern| {
        let pattern = pattern.to_ascii_lowercase();
        let (name, want_port) = match pattern.rsplit_once(':') {
            Some((n, p)) if !n.contains(':') || n.ends_with(']') => (n.to_owned(), p.parse().ok()),
            _ => (pattern.clone(), None),
        };
        if want_port.is_some_and(|p: u16| p != port) {
            return false;
        }
        let name = name.trim_start_matches('[').trim_end_matches(']');
        match name.strip_prefix("*.") {
            Some(domain) => host.ends_with(&format!(".{domain}")),
            None => host == name,
        }
    })
}

/// The proxy (and forwards) of one confined process, outside its sandbox;
/// stopped by [`Session::finish`].
#[derive(Debug)]
pub struct Session {
    /// The directory of its sockets (bound at [`SANDBOX_RUN`] inside).
    dir: tempfile::TempDir,
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
    attempts: Arc<Mutex<Vec<Attempt>>>,
    /// Connections closed at once: past [`CONNECTIONS_AT_ONCE`], or their
    /// request never completed.
    dropped: Arc<std::sync::atomic::AtomicUsize>,
}

impl Session {
    /// Starts the proxy for `allow` (when `proxy`) and a forward for each
    /// of `forwards` (host loopback ports).
    pub fn start(proxy: Option<Vec<String>>, forwards: &[u16]) -> std::io::Result<Self> {
        let dir = tempfile::Builder::new().prefix("evalhost-net-").tempdir()?;
        let stop = Arc::new(AtomicBool::new(false));
        let attempts = Arc::new(Mutex::new(Vec::new()));
        let mut session = Self {
            dir,
            stop,
            threads: Vec::new(),
            attempts,
            dropped: Arc::new(std::sync::atomic::AtomicUsize::new(0)),
        };
        let open = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        if let Some(allow) = proxy {
            let listener = UnixListener::bind(session.dir.path().join("proxy.sock"))?;
            let (stop, attempts) = (session.stop.clone(), session.attempts.clone());
            let (open, dropped) = (open.clone(), session.dropped.clone());
            let allow = Arc::new(allow);
            session.threads.push(std::thread::spawn(move || {
                accept_loop(&listener, &stop, &open, &dropped, |client, done| {
                    let (allow, attempts, dropped) =
                        (allow.clone(), attempts.clone(), dropped.clone());
                    std::thread::spawn(move || {
                        serve_proxy(client, &allow, &attempts, &dropped);
                        drop(done);
                    });
                });
            }));
        }
        for port in forwards {
            let listener =
                UnixListener::bind(session.dir.path().join(format!("port-{port}.sock")))?;
            let stop = session.stop.clone();
            let (open, dropped) = (open.clone(), session.dropped.clone());
            let port = *port;
            session.threads.push(std::thread::spawn(move || {
                accept_loop(&listener, &stop, &open, &dropped, |client, done| {
                    std::thread::spawn(move || {
                        if let Ok(upstream) = TcpStream::connect(("127.0.0.1", port)) {
                            splice(client, upstream);
                        }
                        drop(done);
                    });
                });
            }));
        }
        Ok(session)
    }

    /// The directory to bind at [`SANDBOX_RUN`].
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Stops listening and returns every attempt, in order, and how many
    /// connections were closed unserved.
    pub fn finish(mut self) -> (Vec<Attempt>, usize) {
        // The accept loops poll `stop`: nothing the sandboxed process did
        // to the sockets can keep them waiting.
        self.stop.store(true, Ordering::SeqCst);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
        (
            std::mem::take(&mut *self.attempts.lock().unwrap_or_else(|e| e.into_inner())),
            self.dropped.load(Ordering::SeqCst),
        )
    }
}

/// A connection being served: counted in `open` until dropped.
struct Open(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Accepts connections until `stop` (polled: the listener does not block),
/// handing each to `serve` with its place among the [`CONNECTIONS_AT_ONCE`]
/// — past them it is closed at once and counted in `dropped`.
fn accept_loop(
    listener: &UnixListener,
    stop: &AtomicBool,
    open: &Arc<std::sync::atomic::AtomicUsize>,
    dropped: &std::sync::atomic::AtomicUsize,
    mut serve: impl FnMut(UnixStream, Open),
) {
    if listener.set_nonblocking(true).is_err() {
        return;
    }
    while !stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((client, _)) => {
                if client.set_nonblocking(false).is_err() {
                    continue;
                }
                if open.fetch_add(1, Ordering::SeqCst) >= CONNECTIONS_AT_ONCE {
                    open.fetch_sub(1, Ordering::SeqCst);
                    dropped.fetch_add(1, Ordering::SeqCst);
                    continue;
                }
                serve(client, Open(open.clone()));
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(5)),
        }
    }
}

/// One proxied connection: reads the head, checks the host, connects and
/// copies both ways — or answers 403 and records the refusal.
fn serve_proxy(
    mut client: UnixStream,
    allow: &[String],
    attempts: &Mutex<Vec<Attempt>>,
    dropped: &std::sync::atomic::AtomicUsize,
) {
    let _ = client.set_read_timeout(Some(Duration::from_secs(10)));
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    let end = loop {
        match client.read(&mut buf) {
            Ok(0) | Err(_) => {
                // Closed or stalled before its request was whole.
                dropped.fetch_add(1, Ordering::SeqCst);
                return;
            }
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
        if let Some(i) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if head.len() > HEAD_CAP {
            let _ = client.write_all(b"HTTP/1.1 431 Request Header Fields Too Large\r\n\r\n");
            return;
        }
    };
    let _ = client.set_read_timeout(None);
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut request = httparse::Request::new(&mut headers);
    let (method, target) = match request.parse(&head[..end]) {
        Ok(httparse::Status::Complete(_)) => (
            request.method.unwrap_or_default().to_owned(),
            request.path.unwrap_or_default().to_owned(),
        ),
        _ => {
            let _ = client.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n");
            return;
        }
    };
    let connect = method.eq_ignore_ascii_case("CONNECT");
    let Some((host, port)) = (if connect {
        split_authority(&target, 443)
    } else {
        target
            .strip_prefix("http://")
            .map(|rest| rest.split(['/', '?', '#']).next().unwrap_or_default())
            .and_then(|authority| split_authority(authority, 80))
    }) else {
        let _ = client.write_all(
            b"HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain\r\n\r\nevalhost's sandbox proxy takes CONNECT host:port or an absolute http:// URL\n",
        );
        return;
    };
    let record = |allowed: bool, note: Option<String>| {
        // A host name is at most 253 characters: what is kept of a longer
        // one while the process runs is bounded too.
        let mut kept = host.clone();
        if kept.len() > 256 {
            let mut cut = 256;
            while !kept.is_char_boundary(cut) {
                cut -= 1;
            }
            kept.truncate(cut);
        }
        let mut attempts = attempts.lock().unwrap_or_else(|e| e.into_inner());
        if attempts.len() >= KEPT_ATTEMPTS {
            // Past what is kept, counted in the last entry.
            if let Some(last) = attempts.last_mut().filter(|a| a.port == 0) {
                let n: u64 = last
                    .host
                    .split_whitespace()
                    .next()
                    .and_then(|n| n.trim_start_matches('(').parse().ok())
                    .unwrap_or(0);
                last.host = format!("({} more attempts, not kept)", n + 1);
            } else {
                attempts.push(Attempt {
                    host: "(1 more attempts, not kept)".to_owned(),
                    port: 0,
                    allowed: false,
                    note: Some(format!(
                        "past {KEPT_ATTEMPTS} attempts a process's are counted, not kept"
                    )),
                });
            }
            return;
        }
        attempts.push(Attempt {
            host: kept,
            port,
            allowed,
            note,
        });
    };
    if !allowed(allow, &host, port) {
        record(false, Some("not in the target's isolate.network".into()));
        let body = format!(
            "evalhost --isolate: {host}:{port} is not in the target's allow-list (isolate.network: [{}])\n",
            allow.join(", ")
        );
        let _ = write!(
            client,
            "HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        return;
    }
    let upstream = match TcpStream::connect((host.as_str(), port)) {
        Ok(s) => s,
        Err(e) => {
            record(true, Some(format!("could not connect: {e}")));
            let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\nconnection: close\r\n\r\n");
            return;
        }
    };
    record(true, None);
    let mut upstream = upstream;
    if connect {
        if client
            .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            .is_err()
        {
            return;
        }
        // Bytes the client sent after the head (a TLS hello, early).
        if upstream.write_all(&head[end..]).is_err() {
            return;
        }
    } else if upstream.write_all(&head).is_err() {
        return;
    }
    splice(client, upstream);
}

/// `host:port` (or `[v6]:port`, or `host` with `default`).
fn split_authority(authority: &str, default: u16) -> Option<(String, u16)> {
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (h, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse().ok()?,
            None => default,
        };
        (h.to_owned(), port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_owned(), p.parse().ok()?),
            None => (authority.to_owned(), default),
        }
    };
    (!host.is_empty()).then_some((host.to_ascii_lowercase(), port))
}

/// A stream that can be read and written from two threads and closed one
/// way: a TCP or a Unix socket.
trait Duplex: Read + Write + Send + Sized + 'static {
    fn duplicate(&self) -> std::io::Result<Self>;
    fn close_write(&self);
}

impl Duplex for TcpStream {
    fn duplicate(&self) -> std::io::Result<Self> {
        self.try_clone()
    }
    fn close_write(&self) {
        let _ = self.shutdown(Shutdown::Write);
    }
}

impl Duplex for UnixStream {
    fn duplicate(&self) -> std::io::Result<Self> {
        self.try_clone()
    }
    fn close_write(&self) {
        let _ = self.shutdown(Shutdown::Write);
    }
}

/// Copies both ways until either side closes.
fn splice(a: impl Duplex, b: impl Duplex) {
    let (Ok(mut a_read), Ok(mut b_write)) = (a.duplicate(), b.duplicate()) else {
        return;
    };
    let (mut a_write, mut b_read) = (a, b);
    let up = std::thread::spawn(move || {
        let _ = std::io::copy(&mut a_read, &mut b_write);
        b_write.close_write();
    });
    let _ = std::io::copy(&mut b_read, &mut a_write);
    a_write.close_write();
    let _ = up.join();
}

/// The bridge, inside the sandbox: `evalhost __sandbox-bridge [--proxy]
/// [--forward PORT]… -- PROGRAM ARGS…`. Listens on the sandbox's loopback
/// (the proxy at [`PROXY_PORT`], each forward at its port), carries every
/// connection to its socket under [`SANDBOX_RUN`], runs the program and
/// exits as it did.
pub fn bridge(args: &[String]) -> i32 {
    let Some(split) = args.iter().position(|a| a == "--") else {
        eprintln!("evalhost {BRIDGE_ARG}: no `--` before the program");
        return 125;
    };
    let (flags, program) = (&args[..split], &args[split + 1..]);
    let mut listeners: Vec<(TcpListener, PathBuf)> = Vec::new();
    let mut flags = flags.iter();
    while let Some(flag) = flags.next() {
        let (port, socket) = match flag.as_str() {
            "--proxy" => (PROXY_PORT, "proxy.sock".to_owned()),
            "--forward" => {
                let Some(port) = flags.next().and_then(|p| p.parse::<u16>().ok()) else {
                    eprintln!("evalhost {BRIDGE_ARG}: --forward needs a port");
                    return 125;
                };
                (port, format!("port-{port}.sock"))
            }
            other => {
                eprintln!("evalhost {BRIDGE_ARG}: unknown flag {other}");
                return 125;
            }
        };
        match TcpListener::bind(("127.0.0.1", port)) {
            Ok(l) => listeners.push((l, Path::new(SANDBOX_RUN).join(socket))),
            Err(e) => {
                eprintln!("evalhost {BRIDGE_ARG}: cannot listen on 127.0.0.1:{port}: {e}");
                return 125;
            }
        }
    }
    for (listener, socket) in listeners {
        std::thread::spawn(move || {
            for inside in listener.incoming().flatten() {
                let socket = socket.clone();
                std::thread::spawn(move || {
                    if let Ok(outside) = UnixStream::connect(&socket) {
                        splice(inside, outside);
                    }
                });
            }
        });
    }
    let Some((name, rest)) = program.split_first() else {
        eprintln!("evalhost {BRIDGE_ARG}: no program");
        return 125;
    };
    match std::process::Command::new(name).args(rest).status() {
        Ok(status) => {
            use std::os::unix::process::ExitStatusExt as _;
            status
                .code()
                .unwrap_or_else(|| 128 + status.signal().unwrap_or(9))
        }
        Err(e) => {
            eprintln!("evalhost: {name}: {e}");
            if e.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            }
        }
    }
}

/// The variables that point a program at the proxy inside the sandbox
/// (curl reads the lower-case ones, most libraries either; Node reads them
/// with `NODE_USE_ENV_PROXY`).
pub fn proxy_env() -> Vec<(String, String)> {
    let url = format!("http://127.0.0.1:{PROXY_PORT}");
    [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ]
    .iter()
    .map(|k| ((*k).to_owned(), url.clone()))
    .chain([("NODE_USE_ENV_PROXY".to_owned(), "1".to_owned())])
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_allow_list_matches_hosts_subdomains_and_ports() {
        let allow: Vec<String> = ["api.openai.com", "*.anthropic.com", "127.0.0.1:8080"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        assert!(allowed(&allow, "api.openai.com", 443));
        assert!(allowed(&allow, "API.OpenAI.com.", 443));
        assert!(!allowed(&allow, "openai.com", 443));
        assert!(!allowed(&allow, "api.openai.com.evil.net", 443));
        assert!(allowed(&allow, "api.anthropic.com", 443));
        assert!(!allowed(&allow, "anthropic.com", 443));
        assert!(!allowed(&allow, "evilanthropic.com", 443));
        assert!(allowed(&allow, "127.0.0.1", 8080));
        assert!(!allowed(&allow, "127.0.0.1", 22));
        assert!(!allowed(&[], "api.openai.com", 443));
    }

    #[test]
    fn connections_past_the_cap_are_closed_and_counted_and_finish_never_waits() {
        let session = Session::start(Some(vec!["example.invalid".into()]), &[]).unwrap();
        // Connections that never send a whole request: the first ones
        // are held (until their read times out), the rest closed at once.
        let held: Vec<UnixStream> = (0..CONNECTIONS_AT_ONCE + 20)
            .map(|_| {
                let mut s = UnixStream::connect(session.dir().join("proxy.sock")).unwrap();
                let _ = s.write_all(b"GET http://x");
                s
            })
            .collect();
        std::thread::sleep(Duration::from_millis(300));
        // The socket gone (as a process could not do, but even so): the
        // session still ends at once.
        std::fs::remove_file(session.dir().join("proxy.sock")).unwrap();
        let started = std::time::Instant::now();
        let (attempts, dropped) = session.finish();
        assert!(started.elapsed() < Duration::from_secs(2));
        assert!(attempts.is_empty());
        assert_eq!(dropped, 20, "past the cap");
        drop(held);
    }

    #[test]
    fn authorities_split_with_defaults() {
        assert_eq!(
            split_authority("api.openai.com:443", 80),
            Some(("api.openai.com".into(), 443))
        );
        assert_eq!(
            split_authority("Example.com", 80),
            Some(("example.com".into(), 80))
        );
        assert_eq!(split_authority("[::1]:9", 80), Some(("::1".into(), 9)));
        assert_eq!(split_authority("host:notaport", 80), None);
        assert_eq!(split_authority("", 80), None);
    }

    #[test]
    fn the_proxy_refuses_what_is_not_allowed_and_records_it() {
        // A server the proxy may reach, and one it may not.
        let open = TcpListener::bind("127.0.0.1:0").unwrap();
        let open_port = open.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for mut s in open.incoming().flatten() {
                let mut buf = [0u8; 1024];
                let _ = s.read(&mut buf);
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nhi");
            }
        });
        let session = Session::start(Some(vec![format!("127.0.0.1:{open_port}")]), &[]).unwrap();
        let ask = |line: String| {
            let mut s = UnixStream::connect(session.dir().join("proxy.sock")).unwrap();
            s.write_all(line.as_bytes()).unwrap();
            let mut answer = String::new();
            let _ = s.read_to_string(&mut answer);
            answer
        };
        let ok = ask(format!(
            "GET http://127.0.0.1:{open_port}/x HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n"
        ));
        assert!(ok.ends_with("hi"), "{ok}");
        let refused = ask("CONNECT 127.0.0.1:22 HTTP/1.1\r\nhost: x\r\n\r\n".into());
        assert!(refused.starts_with("HTTP/1.1 403"), "{refused}");
        assert!(
            refused.contains("not in the target's allow-list"),
            "{refused}"
        );
        let (attempts, dropped) = session.finish();
        assert_eq!(dropped, 0);
        assert_eq!(attempts.len(), 2, "{attempts:?}");
        assert!(attempts[0].allowed && attempts[0].port == open_port);
        assert!(!attempts[1].allowed && attempts[1].port == 22);
    }
}
