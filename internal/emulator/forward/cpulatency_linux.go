//go:build linux

package forward

import (
	"encoding/binary"
	"fmt"
	"os"
)

// cpuLatency is a held PM QoS request on the CPU wake-up latency. The
// kernel honours the smallest request of all open descriptors of
// /dev/cpu_dma_latency and drops a request when its descriptor closes, so
// a crashed forwarder leaves nothing behind.
type cpuLatency struct{ f *os.File }

// holdCPUAwake asks for a wake-up latency of 0 µs: the cpuidle governor
// then keeps idle CPUs in their polling state rather than halting them.
func holdCPUAwake() (*cpuLatency, error) {
	f, err := os.OpenFile("/dev/cpu_dma_latency", os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("cpu latency request: %w", err)
	}
	var zero [4]byte // an s32 in host byte order: 0 µs
	binary.NativeEndian.PutUint32(zero[:], 0)
	if _, err := f.Write(zero[:]); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu latency request: %w", err)
	}
	return &cpuLatency{f: f}, nil
}

func (c *cpuLatency) release() { c.f.Close() }
