//! sonde-quic: a QUIC bulk-transfer endpoint for the sonde lab.
//!
//! quic-go does not implement the latency spin bit; quinn does, but disables
//! it at random on about 1/8 of connections (RFC 9000 §17.4 asks for random
//! disabling). The lab needs spinning traffic on every run, reproducibly, so
//! this program seeds quinn's endpoint RNG with a seed derived from `--seed`
//! for which the connection's spin draw comes out "enabled" (see `spin`).
//!
//! It is a lab tool: the server uses a fresh self-signed certificate and the
//! client does not verify it.

mod spin;

use std::net::{SocketAddr, UdpSocket};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use quinn::congestion::{BbrConfig, ControllerFactory, CubicConfig, NewRenoConfig};
use quinn::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use quinn::{AckFrequencyConfig, EndpointConfig, TokioRuntime, TransportConfig, VarInt};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};

const ALPN: &[u8] = b"sonde-quic";
const CHUNK: usize = 64 * 1024;
/// Request header the client sends on its stream: magic, direction, limits.
const MAGIC: &[u8; 4] = b"SQ01";
const REQ_LEN: usize = 4 + 1 + 8 + 8 + 1;

const USAGE: &str = "usage:
  sonde-quic server --listen ADDR:PORT [--cc cubic|newreno|bbr] [--seed N] [--prompt-acks] [--no-gso] [--once]
  sonde-quic client --connect ADDR:PORT [--direction up|down] [--duration D | --bytes N]
                    [--cc cubic|newreno|bbr] [--seed N] [--prompt-acks] [--no-gso]

Bulk transfer over QUIC (quinn) with the latency spin bit enabled on every
connection, for the sonde lab. The client prints a one-line JSON summary.

  --listen ADDR:PORT   server address to bind
  --connect ADDR:PORT  server to connect to
  --direction up|down  up: client sends; down: server sends (default down)
  --duration D         transfer time, e.g. 10s, 500ms, 2m (default 10s)
  --bytes N            transfer N bytes instead of a duration (k, M, G suffixes)
  --cc NAME            congestion control of this endpoint: cubic (default), newreno, bbr;
                       the sender's matters: give it to the server for --direction down
  --seed N             seed of quinn's RNG (default 1): same seed, same spin/grease decisions
  --prompt-acks        ask the peer to acknowledge every packet at once (ACK frequency
                       extension), so it reflects spin edges without waiting: give it
                       to the sender (the server for --direction down)
  --no-gso             build and send one packet at a time: a segmentation-offload batch
                       (up to 10 packets) carries the spin value of the moment it was
                       built, which delays a reflected edge at low rates
  --once               server: exit after one connection

Lab tool: the server presents a throw-away self-signed certificate and the
client skips certificate verification. Do not use it across untrusted networks.";

#[derive(Clone, Copy, PartialEq, Debug)]
enum Cc {
    Cubic,
    NewReno,
    Bbr,
}

impl Cc {
    fn name(self) -> &'static str {
        match self {
            Cc::Cubic => "cubic",
            Cc::NewReno => "newreno",
            Cc::Bbr => "bbr",
        }
    }
    fn code(self) -> u8 {
        self as u8
    }
    fn from_code(c: u8) -> Option<Cc> {
        [Cc::Cubic, Cc::NewReno, Cc::Bbr].get(c as usize).copied()
    }
}

struct Opts {
    server: bool,
    addr: SocketAddr,
    up: bool,
    duration: Option<Duration>,
    bytes: Option<u64>,
    cc: Cc,
    seed: u64,
    once: bool,
    prompt_acks: bool,
    no_gso: bool,
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let bad = || format!("bad --duration {s:?}: want e.g. 10s, 500ms, 2m");
    let (num, mult) = if let Some(n) = s.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 60.0)
    } else {
        (s, 1.0)
    };
    let v: f64 = num.parse().map_err(|_| bad())?;
    if !(v.is_finite() && v > 0.0 && v * mult <= 86400.0) {
        return Err(bad());
    }
    Ok(Duration::from_secs_f64(v * mult))
}

fn parse_bytes(s: &str) -> Result<u64, String> {
    let bad = || format!("bad --bytes {s:?}: want a positive count, e.g. 1000000, 64k, 10M, 1G");
    let (num, mult) = match s.chars().last() {
        Some('k' | 'K') => (&s[..s.len() - 1], 1_000),
        Some('M') => (&s[..s.len() - 1], 1_000_000),
        Some('G') => (&s[..s.len() - 1], 1_000_000_000),
        _ => (s, 1),
    };
    let v: u64 = num.parse().map_err(|_| bad())?;
    match v.checked_mul(mult) {
        Some(n) if n > 0 => Ok(n),
        _ => Err(bad()),
    }
}

fn parse_args(args: &[String]) -> Result<Opts, String> {
    let mode = args.first().ok_or("missing mode: server or client")?;
    let server = match mode.as_str() {
        "server" => true,
        "client" => false,
        other => return Err(format!("unknown mode {other:?}: want server or client")),
    };
    let mut o = Opts {
        server,
        addr: "0.0.0.0:0".parse().unwrap(),
        up: false,
        duration: None,
        bytes: None,
        cc: Cc::Cubic,
        seed: 1,
        once: false,
        prompt_acks: false,
        no_gso: false,
    };
    let mut have_addr = false;
    let mut it = args[1..].iter();
    while let Some(flag) = it.next() {
        let mut value = |name: &str| -> Result<String, String> {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match flag.as_str() {
            "--listen" if server => {
                let v = value(flag)?;
                o.addr = v
                    .parse()
                    .map_err(|_| format!("bad --listen {v:?}: want ADDR:PORT"))?;
                have_addr = true;
            }
            "--connect" if !server => {
                let v = value(flag)?;
                o.addr = v
                    .parse()
                    .map_err(|_| format!("bad --connect {v:?}: want ADDR:PORT (an IP address)"))?;
                have_addr = true;
            }
            "--direction" if !server => {
                o.up = match value(flag)?.as_str() {
                    "up" => true,
                    "down" => false,
                    v => return Err(format!("bad --direction {v:?}: want up or down")),
                }
            }
            "--duration" if !server => o.duration = Some(parse_duration(&value(flag)?)?),
            "--bytes" if !server => o.bytes = Some(parse_bytes(&value(flag)?)?),
            "--once" if server => o.once = true,
            "--prompt-acks" => o.prompt_acks = true,
            "--no-gso" => o.no_gso = true,
            "--cc" => {
                o.cc = match value(flag)?.as_str() {
                    "cubic" => Cc::Cubic,
                    "newreno" => Cc::NewReno,
                    "bbr" => Cc::Bbr,
                    v => return Err(format!("bad --cc {v:?}: want cubic, newreno or bbr")),
                }
            }
            "--seed" => {
                let v = value(flag)?;
                o.seed = v
                    .parse()
                    .map_err(|_| format!("bad --seed {v:?}: want an unsigned integer"))?;
            }
            f => return Err(format!("unknown flag {f:?} for {mode}")),
        }
    }
    if !have_addr {
        return Err(if server {
            "server needs --listen ADDR:PORT".into()
        } else {
            "client needs --connect ADDR:PORT".into()
        });
    }
    if o.duration.is_some() && o.bytes.is_some() {
        return Err("give --duration or --bytes, not both".into());
    }
    if !server && o.duration.is_none() && o.bytes.is_none() {
        o.duration = Some(Duration::from_secs(10));
    }
    Ok(o)
}

fn transport(o: &Opts) -> Arc<TransportConfig> {
    let mut t = TransportConfig::default();
    t.allow_spin(true);
    if o.no_gso {
        // With segmentation offload quinn builds up to ten packets at
        // once, every one carrying the spin value of that moment: at
        // 5 Mbit/s a reflected edge then waits in the batch for up to
        // 20 ms, which a passive observer counts in its RTT sample.
        t.enable_segmentation_offload(false);
    }
    if o.prompt_acks {
        // Ask the peer (ACK frequency extension) to acknowledge every
        // ack-eliciting packet at once. A receiver that acknowledges every
        // second packet, or waits max_ack_delay (25 ms) for a second one,
        // reflects a spin edge that much later: a passive observer counts
        // that wait in its RTT sample.
        let mut af = AckFrequencyConfig::default();
        af.ack_eliciting_threshold(VarInt::from_u32(0));
        af.max_ack_delay(Some(Duration::from_millis(1)));
        t.ack_frequency_config(Some(af));
    }
    // Windows large enough for 200 Mbit/s × 600 ms paths: the transfer is
    // limited by the path, not by flow control.
    t.stream_receive_window(VarInt::from_u32(64 << 20));
    t.receive_window(VarInt::from_u32(128 << 20));
    t.send_window(128 << 20);
    t.max_idle_timeout(Some(VarInt::from_u32(30_000).into()));
    let f: Arc<dyn ControllerFactory + Send + Sync> = match o.cc {
        Cc::Cubic => Arc::new(CubicConfig::default()),
        Cc::NewReno => Arc::new(NewRenoConfig::default()),
        Cc::Bbr => Arc::new(BbrConfig::default()),
    };
    t.congestion_controller_factory(f);
    Arc::new(t)
}

fn endpoint_config(seed: u64, role: u64) -> EndpointConfig {
    let mut c = EndpointConfig::default();
    c.rng_seed(Some(spin::seed_with_spin(seed, role)));
    c
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn server_config(o: &Opts) -> Result<quinn::ServerConfig, String> {
    let ck = rcgen::generate_simple_self_signed(vec!["sonde-quic".into()])
        .map_err(|e| format!("certificate: {e}"))?;
    let cert = CertificateDer::from(ck.cert.der().to_vec());
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(ck.key_pair.serialize_der()));
    let mut tls = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| format!("tls: {e}"))?
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .map_err(|e| format!("tls: {e}"))?;
    tls.alpn_protocols = vec![ALPN.to_vec()];
    let q = QuicServerConfig::try_from(tls).map_err(|e| format!("quic tls: {e}"))?;
    let mut sc = quinn::ServerConfig::with_crypto(Arc::new(q));
    sc.transport_config(transport(o));
    Ok(sc)
}

/// Accepts any server certificate: the lab's server has a throw-away one.
#[derive(Debug)]
struct NoVerify(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(m, c, d, &self.0.signature_verification_algorithms)
    }
    fn verify_tls13_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(m, c, d, &self.0.signature_verification_algorithms)
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

fn client_config(o: &Opts) -> Result<quinn::ClientConfig, String> {
    let p = provider();
    let mut tls = rustls::ClientConfig::builder_with_provider(p.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| format!("tls: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(NoVerify(p)))
        .with_no_client_auth();
    tls.alpn_protocols = vec![ALPN.to_vec()];
    let q = QuicClientConfig::try_from(tls).map_err(|e| format!("quic tls: {e}"))?;
    let mut cc_ = quinn::ClientConfig::new(Arc::new(q));
    cc_.transport_config(transport(o));
    Ok(cc_)
}

/// Sends from a stream until the deadline or byte limit, whichever comes
/// first; returns bytes written.
///
/// A write only buffers data, so a duration-bound sender would queue far
/// more than the path carries before the deadline and keep sending long
/// after it. Writes wait while more than one congestion window of written
/// data has not been sent yet: the sender never starves and stops within
/// about two windows' time of the deadline.
async fn send(
    conn: &quinn::Connection,
    s: &mut quinn::SendStream,
    deadline: Option<Instant>,
    limit: Option<u64>,
) -> Result<u64, String> {
    let buf = vec![0x5a_u8; CHUNK];
    let mut sent = 0u64;
    let base = conn.stats().udp_tx.bytes;
    loop {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        let st = conn.stats();
        if sent.saturating_sub(st.udp_tx.bytes - base) > st.path.cwnd.max(CHUNK as u64) {
            tokio::time::sleep(Duration::from_millis(1)).await;
            continue;
        }
        let n = match limit {
            Some(l) if sent >= l => break,
            Some(l) => (l - sent).min(CHUNK as u64) as usize,
            None => CHUNK,
        };
        s.write_all(&buf[..n])
            .await
            .map_err(|e| format!("send: {e}"))?;
        sent += n as u64;
    }
    s.finish().map_err(|e| format!("finish: {e}"))?;
    Ok(sent)
}

/// Reads a stream to its end; returns bytes read.
async fn drain(r: &mut quinn::RecvStream) -> Result<u64, String> {
    let mut buf = vec![0u8; CHUNK];
    let mut got = 0u64;
    while let Some(n) = r
        .read(&mut buf)
        .await
        .map_err(|e| format!("receive: {e}"))?
    {
        got += n as u64;
    }
    Ok(got)
}

async fn serve_conn(conn: quinn::Connection, cc: Cc) -> Result<(), String> {
    let (mut tx, mut rx) = conn
        .accept_bi()
        .await
        .map_err(|e| format!("accept stream: {e}"))?;
    let mut req = [0u8; REQ_LEN];
    rx.read_exact(&mut req)
        .await
        .map_err(|e| format!("request: {e}"))?;
    if &req[..4] != MAGIC {
        return Err("request: not a sonde-quic client".into());
    }
    let up = req[4] == 1;
    let dur_us = u64::from_be_bytes(req[5..13].try_into().unwrap());
    let bytes = u64::from_be_bytes(req[13..21].try_into().unwrap());
    let want = Cc::from_code(req[21]).ok_or("request: unknown congestion control")?;
    if !up && want != cc {
        // The sender's controller is fixed when the connection is accepted.
        eprintln!(
            "sonde-quic: client asked for {} but this server sends with {} (--cc)",
            want.name(),
            cc.name()
        );
    }
    if up {
        let got = drain(&mut rx).await?;
        tx.write_all(&got.to_be_bytes())
            .await
            .map_err(|e| format!("reply: {e}"))?;
        tx.finish().map_err(|e| format!("finish: {e}"))?;
    } else {
        let deadline = (dur_us > 0).then(|| Instant::now() + Duration::from_micros(dur_us));
        send(&conn, &mut tx, deadline, (bytes > 0).then_some(bytes)).await?;
    }
    // Wait for the client to close so the last data is delivered.
    let _ = conn.closed().await;
    Ok(())
}

/// Binds addr, waiting up to 3 s for the previous endpoint's socket: its
/// driver task closes it only after the endpoint is dropped and idle.
async fn bind_retry(addr: SocketAddr) -> Result<UdpSocket, String> {
    let start = Instant::now();
    loop {
        match UdpSocket::bind(addr) {
            Ok(s) => return Ok(s),
            Err(e)
                if e.kind() == std::io::ErrorKind::AddrInUse
                    && start.elapsed() < Duration::from_secs(3) =>
            {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(e) => return Err(format!("listen {addr}: {e}")),
        }
    }
}

async fn server(o: &Opts) -> Result<(), String> {
    // One connection at a time, each on a fresh endpoint seeded the same
    // way, so every connection gets the same (spinning) RNG draws.
    loop {
        let sock = bind_retry(o.addr).await?;
        let ep = quinn::Endpoint::new(
            endpoint_config(o.seed, 2),
            Some(server_config(&o)?),
            sock,
            Arc::new(TokioRuntime),
        )
        .map_err(|e| format!("endpoint: {e}"))?;
        eprintln!(
            "sonde-quic: listening on {}",
            ep.local_addr().map_err(|e| e.to_string())?
        );
        let Some(inc) = ep.accept().await else {
            return Ok(());
        };
        match inc.await {
            Ok(conn) => {
                let peer = conn.remote_address();
                if let Err(e) = serve_conn(conn, o.cc).await {
                    eprintln!("sonde-quic: {peer}: {e}");
                }
            }
            Err(e) => eprintln!("sonde-quic: handshake: {e}"),
        }
        ep.close(0u32.into(), b"");
        ep.wait_idle().await;
        drop(ep);
        if o.once {
            return Ok(());
        }
    }
}

async fn client(o: &Opts) -> Result<(), String> {
    let local: SocketAddr = if o.addr.is_ipv6() {
        "[::]:0"
    } else {
        "0.0.0.0:0"
    }
    .parse()
    .unwrap();
    let sock = UdpSocket::bind(local).map_err(|e| format!("bind: {e}"))?;
    let mut ep = quinn::Endpoint::new(
        endpoint_config(o.seed, 1),
        None,
        sock,
        Arc::new(TokioRuntime),
    )
    .map_err(|e| format!("endpoint: {e}"))?;
    ep.set_default_client_config(client_config(&o)?);
    // The server serves one connection at a time on a fresh endpoint: just
    // after a connection ends it refuses new ones until it has rebound.
    let mut attempt = 0;
    let conn = loop {
        attempt += 1;
        let r = tokio::time::timeout(
            Duration::from_secs(10),
            ep.connect(o.addr, "sonde-quic")
                .map_err(|e| format!("connect: {e}"))?,
        )
        .await
        .map_err(|_| format!("connect {}: no answer in 10 s", o.addr))?;
        match r {
            Ok(c) => break c,
            Err(quinn::ConnectionError::ConnectionClosed(_)) if attempt < 5 => {
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
            Err(e) => return Err(format!("connect {}: {e}", o.addr)),
        }
    };
    let (mut tx, mut rx) = conn
        .open_bi()
        .await
        .map_err(|e| format!("open stream: {e}"))?;
    let mut req = [0u8; REQ_LEN];
    req[..4].copy_from_slice(MAGIC);
    req[4] = o.up as u8;
    req[5..13].copy_from_slice(&o.duration.map_or(0, |d| d.as_micros() as u64).to_be_bytes());
    req[13..21].copy_from_slice(&o.bytes.unwrap_or(0).to_be_bytes());
    req[21] = o.cc.code();
    tx.write_all(&req)
        .await
        .map_err(|e| format!("request: {e}"))?;
    let start = Instant::now();
    let bytes = if o.up {
        let sent = send(&conn, &mut tx, o.duration.map(|d| start + d), o.bytes).await?;
        let mut ack = [0u8; 8];
        rx.read_exact(&mut ack)
            .await
            .map_err(|e| format!("server reply: {e}"))?;
        let got = u64::from_be_bytes(ack);
        if got != sent {
            return Err(format!("server received {got} of {sent} bytes"));
        }
        got
    } else {
        tx.finish().map_err(|e| format!("finish: {e}"))?;
        drain(&mut rx).await?
    };
    let secs = start.elapsed().as_secs_f64();
    let rtt = conn.rtt();
    conn.close(0u32.into(), b"done");
    ep.wait_idle().await;
    println!(
        "{{\"direction\":\"{}\",\"bytes\":{},\"duration_s\":{:.3},\"goodput_bps\":{:.0},\"cc\":\"{}\",\"seed\":{},\"srtt_ms\":{:.3}}}",
        if o.up { "up" } else { "down" },
        bytes,
        secs,
        bytes as f64 * 8.0 / secs,
        o.cc.name(),
        o.seed,
        rtt.as_secs_f64() * 1e3
    );
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.is_empty()
        || args
            .iter()
            .any(|a| a == "-h" || a == "--help" || a == "help")
    {
        println!("{USAGE}");
        return if args.is_empty() {
            ExitCode::from(2)
        } else {
            ExitCode::SUCCESS
        };
    }
    let o = match parse_args(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("sonde-quic: {e} (see sonde-quic --help)");
            return ExitCode::from(2);
        }
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("sonde-quic: runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let r = rt.block_on(async {
        if o.server {
            server(&o).await
        } else {
            client(&o).await
        }
    });
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sonde-quic: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn flags() {
        let o = parse_args(&args(
            "client --connect 198.18.0.1:4433 --direction up --bytes 10M --cc bbr --seed 7",
        ))
        .unwrap();
        assert!(
            o.up && o.bytes == Some(10_000_000)
                && o.cc == Cc::Bbr
                && o.seed == 7
                && o.duration.is_none()
        );
        let o = parse_args(&args("client --connect 198.18.0.1:4433")).unwrap();
        assert_eq!(o.duration, Some(Duration::from_secs(10)));
        for bad in [
            "client",
            "client --connect nohost",
            "client --connect 1.2.3.4:5 --cc vegas",
            "client --connect 1.2.3.4:5 --duration -1s",
            "client --connect 1.2.3.4:5 --duration 1s --bytes 5",
            "client --connect 1.2.3.4:5 --bytes 0",
            "client --connect 1.2.3.4:5 --listen 1.2.3.4:5",
            "server --listen 1.2.3.4:5 --direction up",
            "server --listen",
            "proxy",
        ] {
            assert!(parse_args(&args(bad)).is_err(), "{bad}");
        }
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
    }
}
