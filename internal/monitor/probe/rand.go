package probe

import "crypto/rand"

func randRead(b []byte) { _, _ = rand.Read(b) }

func randBytes2() (b [2]byte) {
	randRead(b[:])
	return b
}
