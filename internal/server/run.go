package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/sonde-project/sonde/internal/librespeed"
	"github.com/sonde-project/sonde/internal/store"
	"github.com/sonde-project/sonde/internal/units"
)

// Run is `sonde serve`: it listens on every configured address, then
// opens the UDP sockets (the STAMP reflector, iperf3's port, the MBM sink)
// and serves until ctx ends, telling log what it serves where. The UDP
// sockets open once the TCP listeners are up, so their errors (address,
// certificate) come first and alone. iperf3Optional: the iperf3 port is
// the default one, often an iperf3 -s's already, so a port taken there is
// noted and the rest is served without it.
func (s *Server) Run(ctx context.Context, log io.Writer, iperf3Optional bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cfg := s.cfg
	var udpErr error
	err := s.ListenAndServe(ctx, func(addrs []net.Addr) {
		if cfg.UDPAddr != "off" {
			ua, err := s.StartUDP()
			if err != nil {
				udpErr = fmt.Errorf("STAMP reflector: %w (choose another --udp-addr, or off)", err)
				cancel()
				return
			}
			fmt.Fprintf(log, "sonde: STAMP reflector on udp %s\n", ua)
		}
		if cfg.Iperf3Addr != "off" {
			ia, err := s.StartIperf3()
			switch {
			case err != nil && iperf3Optional && portTaken(err):
				fmt.Fprintf(log, "sonde: iperf3 server off: %v (an iperf3 -s there? choose another --iperf3-port)\n", err)
			case err != nil:
				udpErr = fmt.Errorf("iperf3 server: %w (choose another --iperf3-port, or off)", err)
				cancel()
				return
			default:
				fmt.Fprintf(log, "sonde: iperf3 server on tcp and udp %s\n", ia)
			}
		}
		if cfg.MBMAddr != "off" {
			ma, err := s.StartMBM()
			if err != nil {
				udpErr = fmt.Errorf("MBM sink: %w (choose another --mbm-addr, or off)", err)
				cancel()
				return
			}
			fmt.Fprintf(log, "sonde: MBM sink on udp %s\n", ma)
		}
		scheme := "http"
		if cfg.CertFile != "" {
			scheme = "https"
		}
		for _, a := range addrs {
			fmt.Fprintf(log, "sonde: serving %s on %s\n", scheme, a)
		}
	})
	return errors.Join(udpErr, err)
}

// portTaken tells whether a listen failed because the port is in use or
// reserved (not ours to take), as against a bad address.
func portTaken(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || errors.Is(err, syscall.EACCES)
}

// StartEmbedded runs a server, with its STAMP reflector, on loopback ports
// for this process (sonde test and sonde udp without SERVER); stop ends it.
func StartEmbedded(ctx context.Context, software string) (addr string, stop func(), err error) {
	srv, err := New(Config{Addr: "127.0.0.1:0", UDPAddr: "127.0.0.1:0", PerIPPerMinute: -1, Software: software})
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("embedded server: %w", err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(sctx, []net.Listener{ln}, nil)
	}()
	return ln.Addr().String(), func() { cancel(); <-done }, nil
}

// ParseLimits reads the limits `sonde serve` takes as text with units or
// "off" into cfg (units: one convention; a negative value is an error);
// errors name the flag.
func ParseLimits(cfg *Config, maxBytes, perIPRate, udpBitrate, webrtcPort string) error {
	var err error
	if cfg.MaxBytes, err = units.ParseBytesLimit(maxBytes); err != nil {
		return fmt.Errorf("--max-bytes: %w", err)
	}
	n, err := units.ParseCountLimit(perIPRate, 1e6)
	if err != nil {
		return fmt.Errorf("--per-ip-rate: %w", err)
	}
	cfg.PerIPPerMinute = int(n)
	if n == 0 {
		cfg.PerIPPerMinute = -1 // the server's "none"; its 0 is the default
	}
	if cfg.UDPMaxBitrate, err = units.ParseRate(udpBitrate); err != nil || cfg.UDPMaxBitrate == 0 {
		return fmt.Errorf("--udp-max-bitrate: want a rate above 0, e.g. 200M (%v)", err)
	}
	switch webrtcPort {
	case units.Off:
		cfg.WebRTCPort = -1
	default:
		p, err := strconv.Atoi(webrtcPort)
		if err != nil || p < 0 || p > 65535 {
			return fmt.Errorf("--webrtc-port: want 0 (ephemeral), a port 1-65535 or off, got %q", webrtcPort)
		}
		cfg.WebRTCPort = p
	}
	return nil
}

// DefaultHistoryPath is where past results go without --store:
// sonde/results.db in the user cache directory, which is created, or
// memory when there is none (said on log).
func DefaultHistoryPath(log io.Writer) (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		fmt.Fprintf(log, "sonde: no user cache directory (%v); past results stay in memory\n", err)
		return store.Memory, nil
	}
	dir = filepath.Join(dir, "sonde")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("--store: default directory: %w", err)
	}
	return filepath.Join(dir, "results.db"), nil
}

// Iperf3Addr is the iperf3 server's address: port on listen's host ("off":
// none).
func Iperf3Addr(listen, port string) (string, error) {
	if port == "off" {
		return "off", nil
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		return "", fmt.Errorf("--iperf3-port: want a port number 0–65535 or off, got %q", port)
	}
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("--addr: %v", err)
	}
	return net.JoinHostPort(host, port), nil
}

// ReadServerList reads --servers: a file in LibreSpeed's server-list
// format, bounded before it is read whole.
func ReadServerList(name string) ([]librespeed.Server, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("--servers: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, librespeed.MaxServerListBytes+1))
	if err != nil {
		return nil, fmt.Errorf("--servers: %w", err)
	}
	list, err := librespeed.ParseServerList(b)
	if err != nil {
		return nil, fmt.Errorf("--servers %s: %w", name, err)
	}
	return list, nil
}
