package netns

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// UDPDrops reads /proc/net/snmp text (of whichever namespace it came from):
// the UDP datagrams the kernel dropped at a full receive buffer or for a
// bad checksum (RcvbufErrors + InCsumErrors). Tests use it to tell a loss
// the kernel counted from one their code made.
func UDPDrops(snmp []byte) (int, error) {
	var names []string
	for _, line := range strings.Split(string(snmp), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "Udp:" {
			continue
		}
		if names == nil {
			names = f
			continue
		}
		n := 0
		for i, name := range names {
			if (name == "RcvbufErrors" || name == "InCsumErrors") && i < len(f) {
				v, err := strconv.Atoi(f[i])
				if err != nil {
					return 0, fmt.Errorf("/proc/net/snmp: %s = %q", name, f[i])
				}
				n += v
			}
		}
		return n, nil
	}
	return 0, errors.New("/proc/net/snmp has no Udp lines")
}
