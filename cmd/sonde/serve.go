//go:build !monitoronly

package main

import (
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-project/sonde/internal/server"
	"github.com/sonde-project/sonde/internal/units"
)

func newServeCmd() *cobra.Command {
	var (
		cfg                             server.Config
		maxBytes, perIPRate, udpBitrate string
		webrtcPort, storeURL            string
		iperf3Port                      string
		tlsMode, tlsDir                 string
		serversFile                     string
		maxConns                        int
		verbose, records                bool
		memLimit                        string
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run a sonde measurement server",
		Long: `Run a sonde measurement server. One process serves:
  /sonde/v1/...      sonde's own test protocol (docs/protocol.md) for sonde test
  /ndt/v7/download   the M-Lab ndt7 protocol, so existing ndt7 clients work
  /ndt/v7/upload
  tcp/udp 5201       the iperf3 protocol (--iperf3-port), so iperf3 clients work
  /.well-known/nq    the responsiveness test (RPM, draft-ietf-ippm-
  /rpm/...           responsiveness-09) for networkQuality, goresponsiveness,
                     networkquality-rs and sonde rpm; HTTP/2 over TLS
  /backend/garbage.php LibreSpeed's backend (also /garbage, /empty, /getIP,
  /.well-known/librespeed  with and without backend/ and .php)
  /healthz           liveness and limits, JSON
  /metrics           Prometheus metrics (tests, bytes, active tests, errors)
Limits apply to all these tests together; a refused client is told why.
TLS: --cert/--key, or --tls self-signed (docs/interop.md).

Slow and idle clients: a request's headers, body and reply each have a
timeout, a keep-alive connection an idle timeout, and one client IP at most
--max-conns-per-ip open connections (--max-conns in all); a connection over
a cap is refused (503 with the reason) and closed at once. Past the per-IP
cap, the connections of that address's admitted tests (streams, probes,
reports: bounded per test) and requests that start a test are still
served, so many clients behind one NAT get the tests the server admits.
A test's upgraded streams are exempt: they last as long as the test
(--max-duration). With --token, failed token attempts are
rate-limited per IP (--token-fail-rate, --token-fail-burst; then 429).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sf := server.Flags{Config: cfg, MaxBytes: maxBytes, PerIPRate: perIPRate, UDPBitrate: udpBitrate,
				WebRTCPort: webrtcPort, Iperf3Port: iperf3Port, Store: storeURL, ServersFile: serversFile, TLSMode: tlsMode,
				TLSDir: tlsDir, MaxConns: maxConns, Records: records, Verbose: verbose, Given: cmd.Flags().Changed}
			cfg, err := sf.Check()
			if err != nil {
				return usageErr(err)
			}
			if err := server.ApplyMemoryLimit(memLimit); err != nil {
				return usageErr(err)
			}
			cfg.Software = "sonde/" + version
			if err := sf.Prepare(&cfg, os.Stderr); err != nil {
				return err
			}
			srv, err := server.New(cfg)
			if err != nil {
				return err
			}
			return srv.Run(cmd.Context(), os.Stderr, !cmd.Flags().Changed("iperf3-port"))
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Addr, "addr", ":8080", "listen address")
	f.StringSliceVar(&cfg.ExtraAddrs, "extra-addr", nil, "further listen addresses, e.g. for QoS classes on other ports (repeatable)")
	f.StringVar(&cfg.CertFile, "cert", "", "TLS certificate file (PEM); serves HTTPS with --key")
	f.StringVar(&cfg.KeyFile, "key", "", "TLS private key file (PEM)")
	f.StringVar(&tlsMode, "tls", "", "`self-signed`: serve HTTPS with a certificate made at the first start and kept in --tls-dir; its SHA-256 fingerprint is printed (instead of --cert/--key)")
	f.StringVar(&tlsDir, "tls-dir", "", "directory of the --tls self-signed certificate (default: sonde/tls in the user cache dir)")
	f.StringVar(&cfg.Token, "token", "", "require this bearer token to start a test (private servers)")
	f.StringVar(&serversFile, "servers", "", "`FILE` listing other sonde servers the page offers to test against, in LibreSpeed's server-list format (a JSON array of {id, name, server, ...}; docs/browser.md, \"Servers\"); they need --cors-origins naming this server")
	f.StringSliceVar(&cfg.CORSOrigins, "cors-origins", nil, "`ORIGINS` (scheme://host[:port], comma-separated, or *) whose pages may run tests against this server: other sonde servers that list it in --servers; no credentials cross")
	f.IntVar(&cfg.MaxConcurrent, "max-concurrent", 8, "tests running at once, sonde and ndt7 together")
	f.DurationVar(&cfg.MaxDuration, "max-duration", 120*time.Second, "longest test session")
	f.StringVar(&maxBytes, "max-bytes", units.Off, "payload one test may move, `SIZE` in bytes, e.g. 10G or 500MiB (off or 0: no limit)")
	f.StringVar(&perIPRate, "per-ip-rate", "60", "tests per minute one client IP may start (off or 0: no limit)")
	f.IntVar(&cfg.MaxStreams, "max-streams", 64, "streams per test session")
	f.StringVar(&cfg.UDPAddr, "udp-addr", "", "STAMP reflector address (docs/udp.md); default port 862 on --addr's host, or an ephemeral port there when 862 is taken or needs privileges; off for none")
	f.StringVar(&iperf3Port, "iperf3-port", "5201", "`PORT` where iperf3 clients are answered, TCP and UDP, on --addr's host (docs/iperf3.md); off for none. If the default port is taken (an iperf3 -s), the server runs without it and says so")
	f.BoolVar(&cfg.Iperf3Open, "iperf3-open", false, "admit iperf3 clients on a server with --token (iperf3 cannot send a token; the other limits still apply)")
	f.StringVar(&cfg.MBMAddr, "mbm-addr", "", "UDP `ADDR` of the MBM sink that sonde mbm --mode udp sends to (docs/mbm-protocol.md); default an ephemeral port on --addr's host; off for none (clients send to the port granted, at the host they reached the server at)")
	f.Float64Var(&cfg.UDPMaxRate, "udp-max-rate", 20000, "probes per second one UDP session may send")
	f.StringVar(&udpBitrate, "udp-max-bitrate", "200M", "`RATE` in bit/s one UDP session may send, e.g. 200M, 1G")
	f.StringVar(&webrtcPort, "webrtc-port", "0", "UDP port of the page's WebRTC quality test (docs/browser.md): 0 an ephemeral port per test, N one port for all tests, off no WebRTC test")
	f.StringVar(&storeURL, "store", "", "`URL` of the store of past results the page lists: a SQLite path (default: sonde/results.db in the user cache dir; :memory: keeps them in memory only), sqlite:PATH or postgres://… (docs/store.md); its schema is migrated on start")
	deprecatedAlias(f, "db", "store")
	f.IntVar(&cfg.HistoryKeep, "db-keep", 1000, "past results kept of each kind (page, tcp, ndt7, udp, mbm, iperf3, rpm, librespeed); older ones are deleted")
	f.BoolVar(&records, "server-records", true, "keep the server's own record of every test it serves (sonde sessions, ndt7, STAMP sessions, MBM runs) in the store beside the page's results (docs/store.md)")
	f.DurationVar(&cfg.HeaderTimeout, "header-timeout", 10*time.Second, "time a client has to send a request's headers")
	f.DurationVar(&cfg.BodyTimeout, "body-timeout", 30*time.Second, "time a client has to send a request's body, from the end of its headers")
	f.DurationVar(&cfg.WriteTimeout, "write-timeout", 30*time.Second, "time to write a reply to a slow reader, from the end of the request's headers (≥ 5s)")
	f.DurationVar(&cfg.IdleTimeout, "idle-timeout", 30*time.Second, "time a keep-alive connection may wait for its next request")
	f.IntVar(&cfg.MaxConnsPerIP, "max-conns-per-ip", 64, "idle and unadmitted HTTP connections one client IP may hold open (its admitted tests' connections not counted)")
	f.IntVar(&maxConns, "max-conns", 4096, "HTTP connections open in all (lowered to fit the file descriptor limit unless given)")
	f.Float64Var(&cfg.TokenFailRate, "token-fail-rate", 1, "failed --token attempts per second one client IP may make after the burst")
	f.IntVar(&cfg.TokenFailBurst, "token-fail-burst", 10, "failed --token attempts one client IP may make at once")
	f.BoolVar(&verbose, "verbose", false, "log every session and stream error")
	f.StringVar(&memLimit, "memory-limit", server.DefaultMemoryLimit, "soft limit `SIZE` of the Go runtime's memory (debug.SetMemoryLimit): the GC runs harder near it instead of letting the heap double under many clients (off: none; GOMEMLIMIT in the environment wins)")
	// A malformed flag value is a usage error too.
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &exitError{code: 2, err: err} })
	return cmd
}
