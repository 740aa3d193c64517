package integration

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// errTimeout bounds a run that is expected to fail fast.
const errTimeout = 30 * time.Second

// TestFlagErrors checks that every invalid flag is refused before any
// network activity with one line that names the flag and what it wants.
func TestFlagErrors(t *testing.T) {
	for _, c := range []struct {
		name  string
		args  []string
		words []string
	}{
		{"streams zero", []string{"test", "--streams", "0"}, []string{"--streams", "positive count or auto", `"0"`}},
		{"streams word", []string{"test", "--streams", "x"}, []string{"--streams", "positive count or auto", `"x"`}},
		{"negative duration", []string{"test", "--duration", "-1s"}, []string{"--duration", "1s to 1h", "-1s"}},
		{"short duration", []string{"test", "--duration", "100ms"}, []string{"--duration", "1s to 1h", "100ms"}},
		{"duration word", []string{"test", "--duration", "long"}, []string{"--duration", "long"}},
		{"dscp range", []string{"test", "--dscp", "99"}, []string{"--dscp", `"99"`, "0-63"}},
		{"dscp name", []string{"test", "--dscp", "gold"}, []string{"--dscp", `"gold"`, "0-63"}},
		{"classes syntax", []string{"test", "--classes", "x"}, []string{"--classes", `"x"`, "name:dscp"}},
		{"classes port", []string{"test", "--classes", "ef:46@99999"}, []string{"--classes", "port", "99999"}},
		{"link rate", []string{"test", "--link-rate", "fast"}, []string{"--link-rate", `"fast"`, "100M"}},
		{"probe interval", []string{"test", "--probe-interval", "100ms"}, []string{"--probe-interval", "50ms", "100ms"}},
		{"direction", []string{"test", "--direction", "sideways"}, []string{"--direction", "download", `"sideways"`}},
		{"baseline samples", []string{"test", "--baseline-samples", "5"}, []string{"--baseline-samples", "20 to 10000", "5"}},
		{"quiet without output", []string{"test", "-q"}, []string{"--quiet", "--json"}},
		{"unknown flag", []string{"test", "--bogus"}, []string{"unknown flag", "--bogus"}},
		{"two servers", []string{"test", "a.example", "b.example"}, []string{"one server", "a.example b.example"}},
		{"server scheme", []string{"test", "ftp://127.0.0.1:1"}, []string{"invalid server address", "http or https"}},
		{"serve max bytes", []string{"serve", "--addr", "127.0.0.1:0", "--max-bytes", "1.5x"}, []string{"--max-bytes", `"1.5x"`}},
		{"serve cert alone", []string{"serve", "--addr", "127.0.0.1:0", "--cert", "a"}, []string{"--cert", "--key"}},
		{"serve bad cert", []string{"serve", "--addr", "127.0.0.1:0", "--cert", "/nonexistent/c.pem", "--key", "/nonexistent/k.pem"}, []string{"certificate", "/nonexistent/c.pem"}},
		{"serve bad addr", []string{"serve", "--addr", "127.0.0.1:http-alt-x"}, []string{"listen", "127.0.0.1:http-alt-x"}},
		{"serve argument", []string{"serve", "extra"}, []string{"extra"}},
		{"unknown command", []string{"tset"}, []string{"unknown command", `"tset"`, "did you mean test?"}},
		{"analyze filter", []string{"analyze", "--filter", "tcp port", "/nonexistent.pcap"}, []string{"filter", `"tcp port"`, "needs a value"}},
		{"analyze filter host name", []string{"analyze", "--filter", "host example.org", "/nonexistent.pcap"}, []string{"filter", "example.org", "IP address"}},
		{"capture filter", []string{"capture", "-i", "lo", "-c", "1", "tcp", "or", "(udp"}, []string{"filter", `"tcp or (udp"`, "missing )"}},
		{"capture interface", []string{"capture", "-i", "sondenosuch0", "-c", "1"}, []string{"capture", `"sondenosuch0"`, "no interface"}},
		{"capture no interface", []string{"capture", "-c", "1"}, []string{"capture needs -i"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := run(t, nil, errTimeout, c.args...)
			wantOneLineError(t, r, c.words...)
			if r.elapsed > 5*time.Second {
				t.Errorf("took %v to refuse a flag", r.elapsed)
			}
		})
	}
}

// TestServeAddressInUse checks a second server on a taken port.
func TestServeAddressInUse(t *testing.T) {
	srv := startServer(t, nil, "--addr", "127.0.0.1:0")
	r := run(t, nil, errTimeout, "serve", "--addr", srv.addr())
	wantOneLineError(t, r, "listen", srv.addr(), "address already in use")
}

// TestUnreachableServer checks a port where nothing listens.
func TestUnreachableServer(t *testing.T) {
	port := closedPort(t)
	r := run(t, nil, errTimeout, "test", "127.0.0.1:"+port, "-t", "1s", "--no-progress")
	wantOneLineError(t, r, "cannot reach", "127.0.0.1:"+port, "connection refused")
}

// TestNotASondeServer checks servers that speak HTTP, or just TCP, but are
// not sonde.
func TestNotASondeServer(t *testing.T) {
	t.Run("404", func(t *testing.T) {
		hs := httptest.NewServer(http.NotFoundHandler())
		defer hs.Close()
		r := run(t, nil, errTimeout, "test", hs.URL, "-t", "1s", "--no-progress")
		wantOneLineError(t, r, "not a sonde server", "404")
	})
	t.Run("plain page", func(t *testing.T) {
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = io.WriteString(w, "<html><body>It works!</body></html>\n")
		}))
		defer hs.Close()
		r := run(t, nil, errTimeout, "test", hs.URL, "-t", "1s", "--no-progress")
		wantOneLineError(t, r, "not a sonde server")
	})
	t.Run("closes at once", func(t *testing.T) {
		addr := closingServer(t)
		r := run(t, nil, errTimeout, "test", addr, "-t", "1s", "--no-progress")
		wantOneLineError(t, r, addr, "closed the connection", "not a sonde server")
	})
}

// closingServer accepts TCP connections and closes them at once, until the
// test ends.
func closingServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return ln.Addr().String()
}

// TestTLSMismatch checks every pairing of client scheme and server TLS.
func TestTLSMismatch(t *testing.T) {
	cert, key := writeCert(t, t.TempDir())
	tlsSrv := startServer(t, nil, "--addr", "127.0.0.1:0", "--cert", cert, "--key", key, "--per-ip-rate", "off")
	plain := startServer(t, nil, "--addr", "127.0.0.1:0", "--per-ip-rate", "off")
	if line := tlsSrv.waitStderr(t, "serving", 1, time.Second)[0]; !strings.Contains(line, "https") {
		t.Errorf("TLS server says %q, want https", line)
	}

	t.Run("https to plain server", func(t *testing.T) {
		r := run(t, nil, errTimeout, "test", "https://"+plain.addr(), "-t", "1s", "--no-progress")
		wantOneLineError(t, r, "TLS", "does not speak TLS", "http://")
	})
	t.Run("http to TLS server", func(t *testing.T) {
		r := run(t, nil, errTimeout, "test", "http://"+tlsSrv.addr(), "-t", "1s", "--no-progress")
		wantOneLineError(t, r, "speaks HTTPS", "https://")
	})
	t.Run("no scheme to TLS server", func(t *testing.T) {
		r := run(t, nil, errTimeout, "test", tlsSrv.addr(), "-t", "1s", "--no-progress")
		wantOneLineError(t, r, "speaks HTTPS", "https://")
	})
	t.Run("self-signed without insecure", func(t *testing.T) {
		r := run(t, nil, errTimeout, "test", "https://"+tlsSrv.addr(), "-t", "1s", "--no-progress")
		wantOneLineError(t, r, "certificate not trusted", "--insecure")
	})
	t.Run("self-signed with insecure", func(t *testing.T) {
		res, _ := runJSON(t, nil, runTimeout, "https://"+tlsSrv.addr(), "-t", "1s", "--streams", "1",
			"--direction", "download", "--insecure")
		if !res.Config.TLS {
			t.Error("result does not record TLS")
		}
		if res.Download == nil || !(res.Download.GoodputBps > 0) {
			t.Fatal("no download goodput over TLS")
		}
		// Over TLS the responsiveness probes time the TLS handshake too.
		if res.Download.RPM == nil || res.Download.RPM.TLSMs == nil || res.Download.RPM.TLSMs.N == 0 {
			t.Errorf("no TLS handshake times in RPM: %+v", res.Download.RPM)
		}
		t.Logf("download over TLS: %.2f Gbit/s", res.Download.GoodputBps/1e9)
	})
	tlsSrv.wantAlive(t)
	plain.wantAlive(t)
}

// writeCert writes a self-signed certificate for 127.0.0.1 and its key as
// PEM files in dir.
func writeCert(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "sonde integration test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}
