//! How model API calls reach the network: one pool of kept-alive
//! connections for the whole process (`api::agent`), on ureq with two parts
//! of evalhost's own.
//!
//! - **Names resolved once a minute, addresses not at all.** ureq resolves
//!   the host on every request — before it looks in its pool — and, with a
//!   deadline set, on a thread of its own: a thread and a DNS query per
//!   call. [`CachingResolver`] answers an IP address as it is and keeps a
//!   name's addresses for [`DNS_TTL`].
//! - **Answers acknowledged at once on a kept-alive connection.** A server
//!   that writes its headers and its body in two writes (Python's
//!   `http.server`, many mock and in-house model servers) holds the body
//!   back until the headers are acknowledged (Nagle's algorithm), and once
//!   a connection has seen a request and an answer, Linux delays that
//!   acknowledgement up to 40 ms, hoping to send it with the next request:
//!   every call after a connection's first would wait 40 ms.
//!   [`QuickAckConnector`] is ureq's TCP transport but that it asks the
//!   kernel (`TCP_QUICKACK`, which the kernel clears again as it goes) to
//!   acknowledge at once each time it waits for an answer.
//!
//! Both sit on ureq's `unversioned` transport API: ureq is pinned by the
//! lock file, and the tests in `tests/integration/providers.rs` and
//! `scripts/bench.py --only latency` exercise them.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ureq::Error;
use ureq::http::Uri;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector, Either, LazyBuffers, NextTimeout, Transport,
};

/// How long a name's addresses are kept.
pub const DNS_TTL: Duration = Duration::from_secs(60);

/// ureq's resolver, but an address is not looked up and a name's addresses
/// are kept for [`DNS_TTL`].
#[derive(Debug, Default)]
pub struct CachingResolver {
    inner: DefaultResolver,
    cache: Mutex<HashMap<String, (Instant, ResolvedSocketAddrs)>>,
}

impl Resolver for CachingResolver {
    fn resolve(
        &self,
        uri: &Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, Error> {
        let (Some(scheme), Some(authority)) = (uri.scheme(), uri.authority()) else {
            return self.inner.resolve(uri, config, timeout);
        };
        let Some(port) = authority.port_u16().or(match scheme.as_str() {
            "http" => Some(80),
            "https" => Some(443),
            _ => None,
        }) else {
            return self.inner.resolve(uri, config, timeout);
        };
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']');
        if let Ok(ip) = host.parse::<IpAddr>() {
            let mut out = self.empty();
            out.push(SocketAddr::new(ip, port));
            return Ok(out);
        }
        let key = format!("{}://{host}:{port}", scheme.as_str());
        let now = Instant::now();
        if let Some((at, addrs)) = self
            .cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
            && now.duration_since(*at) < DNS_TTL
        {
            return Ok(addrs.clone());
        }
        let addrs = self.inner.resolve(uri, config, timeout)?;
        self.cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, (now, addrs.clone()));
        Ok(addrs)
    }
}

/// ureq's `TcpConnector`, making [`QuickAckTransport`]s.
#[derive(Debug, Default)]
pub struct QuickAckConnector;

impl<In: Transport> Connector<In> for QuickAckConnector {
    type Out = Either<In, QuickAckTransport>;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<Self::Out>, Error> {
        // A proxy's connection (made before) is used as it is.
        if chained.is_some() {
            return Ok(chained.map(Either::A));
        }
        let budget = details.timeout.not_zero().map(|t| *t);
        let mut last = None;
        for addr in details.addrs.iter() {
            let attempt = match budget {
                Some(t) => TcpStream::connect_timeout(addr, t),
                None => TcpStream::connect(addr),
            };
            match attempt {
                Ok(stream) => {
                    if details.config.no_delay() {
                        stream.set_nodelay(true)?;
                    }
                    let stream = Arc::new(stream);
                    (details.register_shutdown)(Arc::downgrade(&stream) as _)?;
                    return Ok(Some(Either::B(QuickAckTransport {
                        stream,
                        buffers: LazyBuffers::new(
                            details.config.input_buffer_size(),
                            details.config.output_buffer_size(),
                        ),
                    })));
                }
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                    last = Some(Error::Timeout(ureq::Timeout::Connect));
                }
                Err(e) => last = Some(e.into()),
            }
        }
        Err(last.unwrap_or(Error::HostNotFound))
    }
}

/// A TCP connection that acknowledges answers at once.
#[derive(Debug)]
pub struct QuickAckTransport {
    stream: Arc<TcpStream>,
    buffers: LazyBuffers,
}

/// `TCP_QUICKACK` on `stream` (Linux; elsewhere nothing).
fn quick_ack(stream: &TcpStream) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let one: libc::c_int = 1;
        // SAFETY: a valid socket descriptor and a pointer to a c_int of the
        // size given; a failure only leaves the kernel's default.
        unsafe {
            libc::setsockopt(
                stream.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_QUICKACK,
                (&one as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = stream;
}

fn timed_out(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
    )
}

impl Transport for QuickAckTransport {
    fn buffers(&mut self) -> &mut dyn Buffers {
        &mut self.buffers
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), Error> {
        let timeout = timeout.for_write();
        if timeout.after.is_zero() {
            return Err(Error::Timeout(timeout.reason));
        }
        self.stream
            .set_write_timeout(timeout.not_zero().map(|t| *t))?;
        let output = &self.buffers.output()[..amount];
        match (&*self.stream).write_all(output) {
            Ok(()) => Ok(()),
            Err(e) if timed_out(&e) => Err(Error::Timeout(timeout.reason)),
            Err(e) => Err(e.into()),
        }
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, Error> {
        let timeout = timeout.for_read();
        if timeout.after.is_zero() {
            return Err(Error::Timeout(timeout.reason));
        }
        let limit = timeout.not_zero().map(|t| *t);
        self.stream.set_read_timeout(limit)?;
        quick_ack(&self.stream);
        let started = Instant::now();
        let input = self.buffers.input_append_buf();
        let amount = loop {
            match (&*self.stream).read(input) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {
                    // A signal: go on reading with what is left of the time.
                    if let Some(limit) = limit {
                        let left = limit.saturating_sub(started.elapsed());
                        if left.is_zero() {
                            return Err(Error::Timeout(timeout.reason));
                        }
                        self.stream.set_read_timeout(Some(left))?;
                    }
                }
                Err(e) if timed_out(&e) => return Err(Error::Timeout(timeout.reason)),
                Err(e) => return Err(e.into()),
                Ok(n) => break n,
            }
        };
        self.buffers.input_appended(amount);
        Ok(amount > 0)
    }

    fn is_open(&mut self) -> bool {
        // Open when a read would block: no end of stream, nothing unasked.
        let stream = &*self.stream;
        if stream.set_nonblocking(true).is_err() {
            return false;
        }
        let mut byte = [0u8];
        let open = matches!(
            (&*self.stream).read(&mut byte),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock
        );
        stream.set_nonblocking(false).is_ok() && open
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_not_looked_up_and_names_are_kept() {
        let r = CachingResolver::default();
        let config = ureq::config::Config::default();
        let uri: Uri = "http://127.0.0.1:9/v1".parse().unwrap();
        let addrs = r.resolve(&uri, &config, NextTimeout::default()).unwrap();
        let want: SocketAddr = "127.0.0.1:9".parse().unwrap();
        assert_eq!(addrs.iter().copied().collect::<Vec<_>>(), [want]);
        let uri: Uri = "https://[::1]/v1".parse().unwrap();
        let addrs = r.resolve(&uri, &config, NextTimeout::default()).unwrap();
        let want: SocketAddr = "[::1]:443".parse().unwrap();
        assert_eq!(addrs.iter().copied().collect::<Vec<_>>(), [want]);
        let uri: Uri = "http://localhost:9/v1".parse().unwrap();
        let first = r.resolve(&uri, &config, NextTimeout::default()).unwrap();
        assert!(!first.is_empty());
        assert_eq!(r.cache.lock().unwrap().len(), 1);
    }
}
