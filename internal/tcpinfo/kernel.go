package tcpinfo

import (
	"os"
	"strings"
)

// KernelRelease names the running kernel (uname -r), whose TCP a result's
// figures come from, for the result's record; "" where /proc does not
// say (another OS).
func KernelRelease() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
