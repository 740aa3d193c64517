package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Self-signed certificate files in the state directory.
const (
	selfSignedCert = "self-signed.crt"
	selfSignedKey  = "self-signed.key"
	// selfSignedLife is how long a made certificate is valid; one that
	// expires within selfSignedRenew is made again at start.
	selfSignedLife  = 5 * 365 * 24 * time.Hour
	selfSignedRenew = 30 * 24 * time.Hour
)

// SelfSigned returns the paths of a self-signed certificate and key kept in
// dir, made now if there is none yet (or it is about to expire), and the
// certificate's SHA-256 fingerprint, which clients that cannot check a
// chain (networkQuality -k, a server addressed by IP) compare by eye or pin.
// The certificate names localhost, this host's name and every address of
// its interfaces.
func SelfSigned(dir string) (certFile, keyFile, fingerprint string, err error) {
	certFile, keyFile = filepath.Join(dir, selfSignedCert), filepath.Join(dir, selfSignedKey)
	if fp, err := loadSelfSigned(certFile, keyFile); err == nil {
		return certFile, keyFile, fp, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", "", fmt.Errorf("self-signed certificate: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", "", fmt.Errorf("self-signed certificate: key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return "", "", "", fmt.Errorf("self-signed certificate: serial: %w", err)
	}
	dns, ips := certNames()
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "sonde self-signed", Organization: []string{"sonde"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(selfSignedLife),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     dns,
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return "", "", "", fmt.Errorf("self-signed certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", "", "", fmt.Errorf("self-signed certificate: key: %w", err)
	}
	if err := writePEM(keyFile, "PRIVATE KEY", keyDER, 0o600); err != nil {
		return "", "", "", err
	}
	if err := writePEM(certFile, "CERTIFICATE", der, 0o644); err != nil {
		return "", "", "", err
	}
	return certFile, keyFile, Fingerprint(der), nil
}

// loadSelfSigned checks a kept pair and returns its fingerprint.
func loadSelfSigned(certFile, keyFile string) (string, error) {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return "", err
	}
	if len(pair.Certificate) == 0 {
		return "", errors.New("no certificate")
	}
	c, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return "", err
	}
	if time.Until(c.NotAfter) < selfSignedRenew {
		return "", errors.New("expiring")
	}
	return Fingerprint(pair.Certificate[0]), nil
}

// Fingerprint is the SHA-256 of a DER certificate as colon-separated hex
// pairs, the form openssl x509 -fingerprint -sha256 prints.
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	parts := make([]string, len(sum))
	for i, b := range sum {
		parts[i] = fmt.Sprintf("%02X", b)
	}
	return strings.Join(parts, ":")
}

// certNames is localhost, the host name and every interface address.
func certNames() ([]string, []net.IP) {
	dns := []string{"localhost"}
	if h, err := os.Hostname(); err == nil && h != "" && h != "localhost" {
		dns = append(dns, h)
	}
	ips := []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() {
				ips = append(ips, n.IP)
			}
		}
	}
	return dns, ips
}

// writePEM writes one PEM block to path through a temporary file, so a
// crash never leaves half a key.
func writePEM(path, kind string, der []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	data := pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return fmt.Errorf("self-signed certificate: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("self-signed certificate: %w", err)
	}
	return nil
}

// UseSelfSigned makes the certificate kept in dir (SelfSigned; "": sonde/tls
// in the user cache directory) cfg's, and tells its fingerprint on log
// for clients to check (serve --tls self-signed).
func UseSelfSigned(cfg *Config, dir string, log io.Writer) error {
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return fmt.Errorf("--tls self-signed: no user cache directory (%v): give --tls-dir", err)
		}
		dir = filepath.Join(cache, "sonde", "tls")
	}
	cert, key, fp, err := SelfSigned(dir)
	if err != nil {
		return err
	}
	cfg.CertFile, cfg.KeyFile = cert, key
	fmt.Fprintf(log, "sonde: self-signed certificate %s\nsonde: SHA-256 fingerprint %s\n", cert, fp)
	return nil
}
