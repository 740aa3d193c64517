package server

import (
	"crypto/subtle"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/sonde-project/sonde/internal/httpload"
)

// admission enforces the server's limits on starting tests: a bearer token
// (with failed attempts rate-limited per IP), a cap on concurrent tests, and
// a per-IP start rate. It is shared by sonde's own sessions and ndt7 tests.
type admission struct {
	token     string
	maxActive int
	mu        sync.Mutex
	active    int
	starts    *ipBuckets // test starts per IP; nil = unlimited
	fails     *ipBuckets // failed token attempts per IP; nil without a token
	// For /metrics: wrong tokens answered 401, and attempts refused (429)
	// because their IP was out of failed attempts.
	tokenFailed, tokenLimited int64
}

// rejection is a refused admission: the HTTP status, the one line the
// client shows, and (for 429) when trying again may succeed.
type rejection struct {
	status     int
	reason     string
	retryAfter time.Duration
}

func (r *rejection) Error() string { return r.reason }

// newAdmission: perIPRate is test starts per minute per IP (0: unlimited);
// failRate (per second) and failBurst bound failed token attempts per IP.
func newAdmission(token string, maxActive, perIPRate int, failRate float64, failBurst int) *admission {
	a := &admission{token: token, maxActive: maxActive}
	if perIPRate > 0 {
		a.starts = newIPBuckets(float64(perIPRate)/60, float64(perIPRate), maxTrackedIPs)
	}
	if token != "" {
		a.fails = newIPBuckets(failRate, float64(failBurst), maxTrackedIPs)
	}
	return a
}

// admit checks the request against every limit and, on success, takes a
// concurrency slot that the returned release gives back (exactly once).
func (a *admission) admit(r *http.Request, now time.Time) (release func(), err error) {
	return a.admitAs(r, now, true)
}

// admitMonitor admits a monitor session: the token and the start rate as
// a test, but no test slot (monitor sessions have their own caps, in
// openMonitor). The release is a no-op.
func (a *admission) admitMonitor(r *http.Request, now time.Time) error {
	_, err := a.admitAs(r, now, false)
	return err
}

// checkToken is admit's first step alone: the routes that start work run
// it before their handler parses anything (routeMux.tokenGate).
func (a *admission) checkToken(r *http.Request, now time.Time) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.tokenLocked(r, clientIP(r), now)
}

func (a *admission) tokenLocked(r *http.Request, ip string, now time.Time) error {
	if a.fails == nil {
		return nil
	}
	// An IP out of failed attempts is refused before its token is even
	// looked at: answering a right token there would leave a brute-force
	// search its full speed.
	if wait := a.fails.wait(ip, now); wait > 0 {
		a.tokenLimited++
		return &rejection{status: http.StatusTooManyRequests, retryAfter: wait,
			reason: fmt.Sprintf("too many wrong tokens from %s, try again in %s", ip, roundUp(wait))}
	}
	if !tokenOK(r, a.token) {
		a.fails.take(ip, now)
		a.tokenFailed++
		return &rejection{status: http.StatusUnauthorized, reason: "this server needs a valid bearer token (--token)"}
	}
	return nil
}

// busyRetry is the Retry-After of a refusal for a full server: a test
// takes seconds to tens of seconds, so a slot is likely free by then.
const busyRetry = 10 * time.Second

func (a *admission) admitAs(r *http.Request, now time.Time, slot bool) (release func(), err error) {
	ip := clientIP(r)
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.tokenLocked(r, ip, now); err != nil {
		return nil, err
	}
	if slot && a.maxActive > 0 && a.active >= a.maxActive {
		return nil, &rejection{status: http.StatusTooManyRequests, retryAfter: busyRetry,
			reason: fmt.Sprintf("server busy: %d of %d test slots in use, try again later", a.active, a.maxActive)}
	}
	if a.starts != nil {
		if wait := a.starts.wait(ip, now); wait > 0 {
			return nil, &rejection{status: http.StatusTooManyRequests, retryAfter: wait,
				reason: fmt.Sprintf("rate limit: at most %d tests per minute from %s", int(a.starts.burst), ip)}
		}
		a.starts.take(ip, now)
	}
	if !slot {
		return func() {}, nil
	}
	a.active++
	var once sync.Once
	return func() {
		once.Do(func() {
			a.mu.Lock()
			a.active--
			a.mu.Unlock()
		})
	}, nil
}

// roundUp is d in whole seconds, rounded up, so a client told to wait
// never retries early.
func roundUp(d time.Duration) time.Duration {
	return time.Duration(math.Ceil(d.Seconds())) * time.Second
}

// maxTrackedIPs bounds the entries of one per-IP table (about 100 bytes
// each); IPs beyond it share one bucket.
const maxTrackedIPs = 10000

// ipBuckets is a token bucket per client IP in bounded memory. A bucket
// that has refilled to its burst carries no state and is dropped; when the
// table is full of live buckets, further IPs share one overflow bucket, so a
// flood of new addresses can neither grow the table nor reset anyone's
// bucket. The caller serializes access.
type ipBuckets struct {
	rate, burst float64 // tokens per second, bucket size
	max         int
	m           map[string]*bucket
	overflow    bucket
	lastPurge   time.Time
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newIPBuckets(rate, burst float64, maxEntries int) *ipBuckets {
	return &ipBuckets{rate: rate, burst: burst, max: maxEntries, m: map[string]*bucket{},
		overflow: bucket{tokens: burst}}
}

// refill brings b up to now.
func (t *ipBuckets) refill(b *bucket, now time.Time) {
	if el := now.Sub(b.last); el > 0 {
		b.tokens = min(t.burst, b.tokens+el.Seconds()*t.rate)
	}
	b.last = now
}

// lookup returns ip's bucket, refilled to now; with create, it makes one
// (full) if there is none. It returns nil for an unknown ip without create:
// such an IP has a full bucket.
func (t *ipBuckets) lookup(ip string, now time.Time, create bool) *bucket {
	b, ok := t.m[ip]
	if !ok {
		if len(t.m) >= t.max {
			t.purge(now)
		}
		if len(t.m) >= t.max {
			b = &t.overflow
		} else if !create {
			return nil
		} else {
			b = &bucket{tokens: t.burst, last: now}
			t.m[ip] = b
		}
	}
	t.refill(b, now)
	return b
}

// purge drops the buckets that have refilled (at most once a second, so a
// full table of live buckets costs one scan per second, not per request).
func (t *ipBuckets) purge(now time.Time) {
	if now.Sub(t.lastPurge) < time.Second {
		return
	}
	t.lastPurge = now
	for k, b := range t.m {
		if b.tokens+now.Sub(b.last).Seconds()*t.rate >= t.burst {
			delete(t.m, k)
		}
	}
}

// wait is how long until ip has a whole token: 0 if it has one now.
func (t *ipBuckets) wait(ip string, now time.Time) time.Duration {
	b := t.lookup(ip, now, false)
	if b == nil || b.tokens >= 1 {
		return 0
	}
	if t.rate <= 0 {
		return time.Hour
	}
	return time.Duration((1 - b.tokens) / t.rate * float64(time.Second))
}

// take spends one token of ip's bucket, if it has one.
func (t *ipBuckets) take(ip string, now time.Time) bool {
	b := t.lookup(ip, now, true)
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// tokenCounts returns the wrong tokens refused (401) and the attempts
// refused for too many of them (429), since the start.
func (a *admission) tokenCounts() (failed, limited int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.tokenFailed, a.tokenLimited
}

func (a *admission) activeCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.active
}

// tokenOK compares in constant time, so reply timing tells nothing about
// how much of a guess was right.
func tokenOK(r *http.Request, token string) bool {
	h := r.Header.Get("Authorization")
	if v, ok := strings.CutPrefix(h, "Bearer "); ok && equal(v, token) {
		return true
	}
	// Browsers cannot set headers on WebSocket requests.
	return equal(r.URL.Query().Get("token"), token)
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// clientIP is the request's peer address without its port, as every
// protocol the server mounts keys a test (httpload.ClientIP).
func clientIP(r *http.Request) string { return httpload.ClientIP(r) }
