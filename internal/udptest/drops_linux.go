package udptest

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// readUDPDrops reads the host's UDP RcvbufErrors and SndbufErrors (IPv4
// and IPv6 together) from /proc/net/snmp and /proc/net/snmp6; nil if they
// cannot be read.
func readUDPDrops() *udpDrops {
	var d udpDrops
	ok := false
	if f, err := os.Open("/proc/net/snmp"); err == nil {
		// Two "Udp:" lines: the field names, then the values.
		var names []string
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) == 0 || fs[0] != "Udp:" {
				continue
			}
			if names == nil {
				names = fs
				continue
			}
			for i := 1; i < len(fs) && i < len(names); i++ {
				v, err := strconv.ParseInt(fs[i], 10, 64)
				if err != nil {
					continue
				}
				switch names[i] {
				case "RcvbufErrors":
					d.rcvbuf += v
					ok = true
				case "SndbufErrors":
					d.sndbuf += v
				}
			}
			break
		}
		f.Close()
	}
	if f, err := os.Open("/proc/net/snmp6"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) != 2 {
				continue
			}
			v, err := strconv.ParseInt(fs[1], 10, 64)
			if err != nil {
				continue
			}
			switch fs[0] {
			case "Udp6RcvbufErrors":
				d.rcvbuf += v
				ok = true
			case "Udp6SndbufErrors":
				d.sndbuf += v
			}
		}
		f.Close()
	}
	if !ok {
		return nil
	}
	return &d
}
