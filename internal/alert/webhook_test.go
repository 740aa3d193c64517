package alert

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestWebhookAlertmanagerJSONWithRetries: the receiver answers 500 twice,
// then 200; the firing message is delivered once on the third try, then
// the resolved one, in Alertmanager's webhook format.
func TestWebhookAlertmanagerJSONWithRetries(t *testing.T) {
	var mu sync.Mutex
	var bodies []WebhookMessage
	tries := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		tries++
		if tries <= 2 {
			http.Error(w, "busy", http.StatusInternalServerError)
			return
		}
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s with %q", r.Method, r.Header.Get("Content-Type"))
		}
		b, _ := io.ReadAll(r.Body)
		var m WebhookMessage
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&m); err != nil {
			t.Errorf("body %s: %v", b, err)
		}
		bodies = append(bodies, m)
	}))
	defer srv.Close()
	var logs strings.Builder
	var lmu sync.Mutex
	w := NewWebhook(srv.URL, "http://127.0.0.1:9851/", time.Second, log.New(lockedWriter{&lmu, &logs}, "", 0))
	w.backoff = 10 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	labels := map[string]string{"alertname": "link-outage", "severity": "critical", "kind": "outage", "scope": "link", "monitor": "home"}
	w.Send(Alert{Rule: "link-outage", Severity: "critical", Kind: RuleOutage, Status: StatusFiring, Labels: labels, Summary: "outage of the link", StartsNs: t0, Value: 10})
	w.Send(Alert{Rule: "link-outage", Severity: "critical", Kind: RuleOutage, Status: StatusResolved, Labels: labels, Summary: "over", StartsNs: t0, EndsNs: t0 + 15e9, Value: 15})
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(bodies)
		mu.Unlock()
		if n == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 2 || tries != 4 {
		t.Fatalf("%d messages in %d tries", len(bodies), tries)
	}
	f, r := bodies[0], bodies[1]
	if f.Version != "4" || f.Status != "firing" || len(f.Alerts) != 1 || f.Alerts[0].Labels["alertname"] != "link-outage" ||
		f.Alerts[0].Labels["severity"] != "critical" || !f.Alerts[0].StartsAt.Equal(time.Unix(0, t0)) || !f.Alerts[0].EndsAt.IsZero() ||
		f.Alerts[0].Annotations["summary"] != "outage of the link" || f.GroupLabels["alertname"] != "link-outage" {
		t.Errorf("firing message %+v", f)
	}
	if r.Status != "resolved" || r.Alerts[0].Status != "resolved" || !r.Alerts[0].EndsAt.Equal(time.Unix(0, t0+15e9)) ||
		r.Alerts[0].Fingerprint != f.Alerts[0].Fingerprint {
		t.Errorf("resolved message %+v", r)
	}
	if w.sent != 2 || w.failed != 0 || w.dropped != 0 {
		t.Errorf("sent %d failed %d dropped %d", w.sent, w.failed, w.dropped)
	}
}

// TestWebhookGivesUpAndBounds: a receiver refusing with 400 is not
// retried; a full queue drops the oldest message.
func TestWebhookGivesUpAndBounds(t *testing.T) {
	var mu sync.Mutex
	tries := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		tries++
		mu.Unlock()
		http.Error(w, "bad", http.StatusBadRequest)
	}))
	defer srv.Close()
	var logs strings.Builder
	var lmu sync.Mutex
	w := NewWebhook(srv.URL, "", time.Second, log.New(lockedWriter{&lmu, &logs}, "", 0))
	a := Alert{Rule: "r", Status: StatusFiring, Labels: map[string]string{"alertname": "r"}}
	for range webhookQueue + 5 {
		w.Send(a)
	}
	if len(w.queue) != webhookQueue || w.dropped != 5 {
		t.Fatalf("queue %d, dropped %d", len(w.queue), w.dropped)
	}
	w.queue = w.queue[:1]
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		w.mu.Lock()
		f := w.failed
		w.mu.Unlock()
		if f == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	lmu.Lock()
	defer lmu.Unlock()
	if tries != 1 || !strings.Contains(logs.String(), "message dropped: refused: HTTP 400") {
		t.Fatalf("%d tries, log %q", tries, logs.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
