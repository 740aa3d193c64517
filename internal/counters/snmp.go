package counters

import (
	"errors"
	"fmt"
	"math/big"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/gosnmp/gosnmp"
)

// IF-MIB objects (RFC 2863).
const (
	oidIfDescr      = ".1.3.6.1.2.1.2.2.1.2"
	oidIfInOctets   = ".1.3.6.1.2.1.2.2.1.10"
	oidIfOutOctets  = ".1.3.6.1.2.1.2.2.1.16"
	oidIfName       = ".1.3.6.1.2.1.31.1.1.1.1"
	oidIfHCIn       = ".1.3.6.1.2.1.31.1.1.1.6"
	oidIfHCOut      = ".1.3.6.1.2.1.31.1.1.1.10"
	oidIfHighSpeed  = ".1.3.6.1.2.1.31.1.1.1.15"
	maxWalk         = 4096             // interfaces looked through by name
	resolveBackoff  = 30 * time.Second // between name lookups while the name is not found
	namesInErr      = 8                // interface names listed in an "unknown interface" error
	maxNameInErrLen = 32
)

var authProtos = map[string]gosnmp.SnmpV3AuthProtocol{"": gosnmp.NoAuth, "MD5": gosnmp.MD5, "SHA": gosnmp.SHA,
	"SHA224": gosnmp.SHA224, "SHA256": gosnmp.SHA256, "SHA384": gosnmp.SHA384, "SHA512": gosnmp.SHA512}

var privProtos = map[string]gosnmp.SnmpV3PrivProtocol{"": gosnmp.NoPriv, "DES": gosnmp.DES, "AES": gosnmp.AES,
	"AES192": gosnmp.AES192, "AES256": gosnmp.AES256}

// snmpSource reads ifHCInOctets (rx) and ifHCOutOctets (tx) of one
// interface with one GET. Not safe for concurrent use (ifstat.Run is its
// one caller).
type snmpSource struct {
	spec      Spec
	g         *gosnmp.GoSNMP
	connected bool
	index     int       // resolved ifIndex (0: not yet)
	triedAt   time.Time // last failed name lookup
	lastErr   error     // the lookup's error, repeated until the backoff ends
	bits32    bool      // the agent has no ifHC* for it: 32-bit ifIn/OutOctets
	speedBps  float64
	oids      []string
}

func newSNMP(s Spec) (*snmpSource, error) {
	host, port, err := net.SplitHostPort(s.Host)
	if err != nil {
		return nil, fmt.Errorf("counters: %s: %w", s, err)
	}
	p, _ := strconv.Atoi(port)
	g := &gosnmp.GoSNMP{Target: host, Port: uint16(p), Transport: "udp", Timeout: s.Timeout, Retries: 0,
		MaxOids: 8, MaxRepetitions: 32, ExponentialTimeout: false}
	if s.Version == "3" {
		g.Version = gosnmp.Version3
		g.SecurityModel = gosnmp.UserSecurityModel
		g.MsgFlags = gosnmp.NoAuthNoPriv
		switch {
		case s.PrivProto != "":
			g.MsgFlags = gosnmp.AuthPriv
		case s.AuthProto != "":
			g.MsgFlags = gosnmp.AuthNoPriv
		}
		g.SecurityParameters = &gosnmp.UsmSecurityParameters{UserName: s.User,
			AuthenticationProtocol: authProtos[s.AuthProto], AuthenticationPassphrase: s.AuthPass,
			PrivacyProtocol: privProtos[s.PrivProto], PrivacyPassphrase: s.PrivPass}
	} else {
		g.Version = gosnmp.Version2c
		g.Community = s.Community
	}
	return &snmpSource{spec: s, g: g}, nil
}

// fail wraps an error from the agent in one line that says what to check.
func (c *snmpSource) fail(err error) error {
	// A failed exchange may leave a v3 engine's state stale: start afresh.
	c.close()
	where := c.spec.String()
	switch {
	case errors.Is(err, gosnmp.ErrUnknownUsername):
		return fmt.Errorf("%s: the agent does not know user %q (usmStatsUnknownUserNames)", where, c.spec.User)
	case errors.Is(err, gosnmp.ErrWrongDigest):
		return fmt.Errorf("%s: wrong v3 authentication pass phrase or protocol (usmStatsWrongDigests)", where)
	case errors.Is(err, gosnmp.ErrDecryption):
		return fmt.Errorf("%s: wrong v3 privacy pass phrase or protocol (usmStatsDecryptionErrors)", where)
	case err == nil, errors.Is(err, gosnmp.ErrUnknownSecurityLevel):
		// Any answer (net-snmp's view control refuses the request) means
		// the agent knows the user.
		return fmt.Errorf("%s: the agent does not allow this security level for user %q (usmStatsUnsupportedSecLevels)", where, c.spec.User)
	}
	msg := err.Error()
	if strings.Contains(msg, "not authentic") && c.spec.Version == "3" {
		// gosnmp drops the agent's unauthenticated report: ask again
		// without authentication to learn which part is wrong.
		return fmt.Errorf("%s: %s", where, c.diagnoseV3())
	}
	if strings.Contains(msg, "timeout") {
		if c.spec.Version == "2c" {
			return fmt.Errorf("%s: no answer in %v: agent unreachable, or a wrong community (a v2c agent does not answer one)", where, c.spec.Timeout)
		}
		return fmt.Errorf("%s: no answer in %v: agent unreachable", where, c.spec.Timeout)
	}
	return fmt.Errorf("%s: %s", where, netErr(err))
}

// diagnoseV3 tells an unknown user from a wrong pass phrase: asked
// without authentication, an agent answers usmStatsUnknownUserNames for a
// user it does not know and usmStatsUnsupportedSecLevels for one it knows
// (who must authenticate), or answers the request with an error.
func (c *snmpSource) diagnoseV3() string {
	g := &gosnmp.GoSNMP{Target: c.g.Target, Port: c.g.Port, Transport: "udp", Timeout: c.spec.Timeout,
		Version: gosnmp.Version3, SecurityModel: gosnmp.UserSecurityModel, MsgFlags: gosnmp.NoAuthNoPriv,
		SecurityParameters: &gosnmp.UsmSecurityParameters{UserName: c.spec.User}}
	if err := g.Connect(); err != nil {
		return "the agent refused the v3 credentials"
	}
	defer g.Conn.Close()
	_, err := g.Get([]string{".1.3.6.1.2.1.1.3.0"})
	switch {
	case errors.Is(err, gosnmp.ErrUnknownUsername):
		return fmt.Sprintf("the agent does not know user %q (usmStatsUnknownUserNames)", c.spec.User)
	case err == nil, errors.Is(err, gosnmp.ErrUnknownSecurityLevel):
		// Any answer (net-snmp's view control refuses the request) means
		// the agent knows the user.
		return "wrong v3 authentication pass phrase or protocol (the agent knows the user but not this key)"
	}
	return "the agent refused the v3 credentials (unknown user, or a wrong pass phrase or protocol)"
}

func (c *snmpSource) connect() error {
	if c.connected {
		return nil
	}
	if err := c.g.Connect(); err != nil {
		return err
	}
	c.connected = true
	return nil
}

func (c *snmpSource) close() {
	if c.connected && c.g.Conn != nil {
		_ = c.g.Conn.Close()
	}
	c.connected = false
}

// Read returns the interface's raw counters. The first read (and a read
// after the agent forgot the interface) finds its ifIndex by name; while a
// name is not found it is looked up again at most every 30 s, and the
// same one-line error is returned meanwhile.
func (c *snmpSource) Read() (rx, tx uint64, err error) {
	if c.index == 0 {
		if time.Since(c.triedAt) < resolveBackoff && c.lastErr != nil {
			return 0, 0, c.lastErr
		}
		if err := c.resolve(); err != nil {
			if errors.Is(err, errNoInterface) {
				c.triedAt, c.lastErr = time.Now(), err
			}
			return 0, 0, err
		}
		c.lastErr = nil
	}
	if err := c.connect(); err != nil {
		return 0, 0, c.fail(err)
	}
	pkt, err := c.g.Get(c.oids)
	if err != nil {
		return 0, 0, c.fail(err)
	}
	if pkt.Error != gosnmp.NoError {
		return 0, 0, fmt.Errorf("%s: the agent answered %v", c.spec.String(), pkt.Error)
	}
	if len(pkt.Variables) != 2 {
		return 0, 0, fmt.Errorf("%s: the agent answered %d values for 2", c.spec.String(), len(pkt.Variables))
	}
	var v [2]uint64
	for i, pdu := range pkt.Variables {
		switch pdu.Type {
		case gosnmp.NoSuchObject, gosnmp.NoSuchInstance:
			if !c.bits32 && i == 0 && pdu.Type == gosnmp.NoSuchObject {
				// No IF-MIB ifXTable: the 64-bit counters are missing.
				return 0, 0, c.use32()
			}
			// No such interface (any more: re-created with another index,
			// which the next read looks up by name again).
			err := fmt.Errorf("%s: the agent has no counters for ifIndex %d", c.spec.String(), c.index)
			c.index = 0
			return 0, 0, err
		case gosnmp.Counter64, gosnmp.Counter32, gosnmp.Gauge32:
			b := gosnmp.ToBigInt(pdu.Value)
			if b.Sign() < 0 || b.BitLen() > 64 {
				return 0, 0, fmt.Errorf("%s: a counter out of range", c.spec.String())
			}
			v[i] = b.Uint64()
		default:
			return 0, 0, fmt.Errorf("%s: %s is a %v, not a counter", c.spec.String(), pdu.Name, pdu.Type)
		}
	}
	return v[0], v[1], nil
}

var errNoInterface = errors.New("no interface")

// errNo64 is the one line for an agent without 64-bit counters; the source
// goes on with the 32-bit ones, whose wraps the Tracker counts across.
var errNo64 = errors.New("the agent has no 64-bit counters (IF-MIB ifHCInOctets): reading the 32-bit ifInOctets/ifOutOctets, which wrap every 4 GiB (34 s at 1 Gbit/s)")

func (c *snmpSource) use32() error {
	c.bits32 = true
	c.setOIDs()
	return fmt.Errorf("%s: %w", c.spec.String(), errNo64)
}

func (c *snmpSource) setOIDs() {
	in, out := oidIfHCIn, oidIfHCOut
	if c.bits32 {
		in, out = oidIfInOctets, oidIfOutOctets
	}
	n := "." + strconv.Itoa(c.index)
	c.oids = []string{in + n, out + n}
}

// resolve finds the interface's ifIndex (by ifName, then ifDescr) and its
// speed.
func (c *snmpSource) resolve() error {
	if err := c.connect(); err != nil {
		return c.fail(err)
	}
	idx := c.spec.Index
	if idx == 0 {
		var seen []string
		for _, root := range []string{oidIfName, oidIfDescr} {
			n := 0
			errFound := errors.New("found")
			err := c.g.BulkWalk(root, func(pdu gosnmp.SnmpPDU) error {
				if n++; n > maxWalk {
					return fmt.Errorf("over %d interfaces", maxWalk)
				}
				name, ok := pdu.Value.([]byte)
				if !ok {
					return nil
				}
				if string(name) == c.spec.Iface {
					i, err := strconv.Atoi(pdu.Name[strings.LastIndexByte(pdu.Name, '.')+1:])
					if err == nil && i > 0 {
						idx = i
						return errFound
					}
				}
				if root == oidIfName && len(seen) < namesInErr {
					s := string(name)
					if len(s) > maxNameInErrLen {
						s = s[:maxNameInErrLen] + "…"
					}
					seen = append(seen, strconv.Quote(s))
				}
				return nil
			})
			if err != nil && !errors.Is(err, errFound) {
				return c.fail(err)
			}
			if idx > 0 {
				break
			}
		}
		if idx == 0 {
			return fmt.Errorf("%s: %w %q on the agent (ifName has %s)", c.spec.String(), errNoInterface, c.spec.Iface, strings.Join(seen, ", "))
		}
	}
	c.index = idx
	c.setOIDs()
	// The speed bounds what a counter can add between reads; unknown is fine.
	if pkt, err := c.g.Get([]string{oidIfHighSpeed + "." + strconv.Itoa(idx)}); err == nil && len(pkt.Variables) == 1 {
		if b := gosnmp.ToBigInt(pkt.Variables[0].Value); b.Sign() > 0 && b.Cmp(big.NewInt(10_000_000)) <= 0 {
			c.speedBps = float64(b.Int64()) * 1e6
		}
	} else if err != nil {
		return c.fail(err)
	}
	return nil
}

func (c *snmpSource) SpeedBps() float64 { return c.speedBps }

func (c *snmpSource) Close() error {
	c.close()
	return nil
}
