package passive

import "time"

// closedKeys remembers the TCP connections evicted after they closed, for
// closedLinger of capture time, so that a straggler (a retransmitted FIN,
// the final ACK, a RST answering it) is not taken for a new connection
// that started mid-stream. It is bounded: a capture with a flood of short
// connections forgets the oldest first, which costs at most a spurious
// record, never memory.
type closedKeys struct {
	at    map[flowKey]int64 // eviction time, capture ns
	order []flowKey         // FIFO of keys in eviction order
	head  int
}

const (
	// closedLinger is how long a closed connection's stragglers are
	// recognised: twice Linux's TIME_WAIT (60 s), a peer's last
	// retransmissions of a FIN take at most that long.
	closedLinger = int64(120 * time.Second)
	// maxClosedKeys bounds the memory: ~100 B a key, 6.5 MB at most.
	maxClosedKeys = 1 << 16
)

func (c *closedKeys) add(k flowKey, now int64) {
	if c.at == nil {
		c.at = make(map[flowKey]int64)
	}
	// Forget the keys past their linger: the table then holds the
	// closes of the last closedLinger, whatever the capture's length.
	for c.head < len(c.order) {
		old := c.order[c.head]
		if at, ok := c.at[old]; ok && now-at <= closedLinger {
			break
		}
		delete(c.at, old)
		c.head++
	}
	if _, ok := c.at[k]; !ok {
		if len(c.order)-c.head >= maxClosedKeys {
			delete(c.at, c.order[c.head])
			c.head++
		}
		c.order = append(c.order, k)
		if c.head > len(c.order)/2 && c.head > 1024 {
			c.order = append(c.order[:0], c.order[c.head:]...)
			c.head = 0
		}
	}
	c.at[k] = now
}

// recent reports whether k closed and was evicted at most closedLinger
// before t.
func (c *closedKeys) recent(k flowKey, t int64) bool {
	at, ok := c.at[k]
	return ok && t-at <= closedLinger
}
