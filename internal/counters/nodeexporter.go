package counters

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
)

// Node exporter metrics (node_exporter's netdev collector).
const (
	metricRx = "node_network_receive_bytes_total"
	metricTx = "node_network_transmit_bytes_total"
	// maxBody bounds what one scrape may send: the netdev collector alone
	// is a few KiB per interface; a whole node exporter page is ~100 KiB.
	maxBody = 4 << 20
	// maxLine bounds one line of the exposition.
	maxLine = 64 << 10
	// maxLabels bounds the labels of one sample.
	maxLabels = 64
)

// nodeExporter scrapes a node exporter's /metrics for one device's byte
// counters, asking it for its netdev collector only (collect[]=netdev:
// cheaper for the exporter on a small box; an exporter that ignores the
// parameter sends everything, which the parser skips).
type nodeExporter struct {
	spec   Spec
	url    string
	client *http.Client
	buf    bytes.Buffer
}

func newNodeExporter(s Spec) *nodeExporter {
	return &nodeExporter{spec: s, url: "http://" + s.Host + s.Path + "?collect%5B%5D=netdev",
		client: &http.Client{Timeout: s.Timeout, CheckRedirect: func(*http.Request, []*http.Request) error {
			return errors.New("redirects are not followed")
		}}}
}

func (n *nodeExporter) Read() (rx, tx uint64, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), n.spec.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.url, nil)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %v", n.spec, err)
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := n.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, 0, fmt.Errorf("%s: no answer in %v: exporter unreachable", n.spec, n.spec.Timeout)
		}
		return 0, 0, fmt.Errorf("%s: %s", n.spec, netErr(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("%s: answered %q", n.spec, resp.Status)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "text/plain") {
		return 0, 0, fmt.Errorf("%s: answered %q, not the text exposition format", n.spec, ct)
	}
	n.buf.Reset()
	if _, err := n.buf.ReadFrom(io.LimitReader(resp.Body, maxBody+1)); err != nil {
		return 0, 0, fmt.Errorf("%s: reading the metrics: %s", n.spec, netErr(err))
	}
	if n.buf.Len() > maxBody {
		return 0, 0, fmt.Errorf("%s: metrics over %d bytes", n.spec, maxBody)
	}
	rx, tx, err = ParseNodeNetdev(n.buf.Bytes(), n.spec.Iface)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w", n.spec, err)
	}
	return rx, tx, nil
}

func (n *nodeExporter) SpeedBps() float64 { return 0 }

func (n *nodeExporter) Close() error {
	n.client.CloseIdleConnections()
	return nil
}

// ParseNodeNetdev finds device's receive and transmit byte counters in a
// Prometheus text exposition (version 0.0.4): the samples of
// node_network_receive_bytes_total and node_network_transmit_bytes_total
// whose device label is device. Other lines are skipped unread beyond
// their name. Each error is one line: not the exposition format, no such
// device (naming the ones there are), a value that is no counter.
func ParseNodeNetdev(b []byte, device string) (rx, tx uint64, err error) {
	if len(b) > maxBody {
		return 0, 0, fmt.Errorf("metrics over %d bytes", maxBody)
	}
	var haveRx, haveTx, anyNetdev bool
	var devices []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	line := 0
	for sc.Scan() {
		line++
		l := sc.Bytes()
		if len(l) == 0 || l[0] == '#' {
			continue
		}
		name, rest := l, []byte(nil)
		if i := bytes.IndexAny(l, "{ \t"); i >= 0 {
			name, rest = l[:i], l[i:]
		}
		isRx, isTx := string(name) == metricRx, string(name) == metricTx
		if !isRx && !isTx {
			continue
		}
		anyNetdev = true
		dev, value, err := parseSample(rest)
		if err != nil {
			return 0, 0, fmt.Errorf("line %d (%s): %v", line, name, err)
		}
		if dev != device {
			if isRx && len(devices) < 16 {
				devices = append(devices, strconv.Quote(dev))
			}
			continue
		}
		v, err := counterValue(value)
		if err != nil {
			return 0, 0, fmt.Errorf("line %d (%s): %v", line, name, err)
		}
		if isRx {
			rx, haveRx = v, true
		} else {
			tx, haveTx = v, true
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, fmt.Errorf("not the text exposition format: %v", err)
	}
	switch {
	case !anyNetdev:
		return 0, 0, errors.New("no " + metricRx + " in the metrics: not a node exporter, or its netdev collector is off")
	case !haveRx || !haveTx:
		return 0, 0, fmt.Errorf("no device %q (the exporter has %s)", device, strings.Join(devices, ", "))
	}
	return rx, tx, nil
}

// parseSample reads `{labels} value [timestamp]` and returns the device
// label and the value's text.
func parseSample(b []byte) (device string, value []byte, err error) {
	b = bytes.TrimLeft(b, " \t")
	if len(b) > 0 && b[0] == '{' {
		b = b[1:]
		for n := 0; ; n++ {
			b = bytes.TrimLeft(b, " \t,")
			if len(b) > 0 && b[0] == '}' {
				b = b[1:]
				break
			}
			if n >= maxLabels {
				return "", nil, fmt.Errorf("over %d labels", maxLabels)
			}
			eq := bytes.IndexByte(b, '=')
			if eq <= 0 || eq+1 >= len(b) || b[eq+1] != '"' {
				return "", nil, errors.New(`malformed label: want name="value"`)
			}
			key := string(bytes.TrimSpace(b[:eq]))
			val, rest, err := unquote(b[eq+2:])
			if err != nil {
				return "", nil, err
			}
			if key == "device" {
				device = val
			}
			b = rest
		}
	}
	f := bytes.Fields(b)
	if len(f) < 1 || len(f) > 2 {
		return "", nil, errors.New("want a value and at most a timestamp after the labels")
	}
	return device, f[0], nil
}

// unquote reads a label value up to its closing quote (escapes \\ \" \n).
func unquote(b []byte) (string, []byte, error) {
	var sb strings.Builder
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case '"':
			return sb.String(), b[i+1:], nil
		case '\\':
			if i+1 >= len(b) {
				return "", nil, errors.New("label value ends in a backslash")
			}
			i++
			switch b[i] {
			case 'n':
				sb.WriteByte('\n')
			case '\\', '"':
				sb.WriteByte(b[i])
			default:
				return "", nil, fmt.Errorf(`label value has an unknown escape \%c`, b[i])
			}
		default:
			sb.WriteByte(c)
		}
	}
	return "", nil, errors.New("label value without its closing quote")
}

// counterValue reads a counter's value: a non-negative float (the exporter
// writes big values as 1.234e+12) that fits in 64 bits. Above 2^53 a
// float64 counts in steps of its precision (256 bytes at 2^61): a counter
// that large has carried exabytes, and the steps vanish in any rate.
func counterValue(b []byte) (uint64, error) {
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsNaN(v) || v < 0 || v >= 1<<64 {
		return 0, fmt.Errorf("value %q is not a byte counter", truncate(b, 32))
	}
	return uint64(v), nil
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
