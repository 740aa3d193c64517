package alert

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// Webhook delivery bounds.
const (
	webhookQueue    = 64               // messages waiting; beyond, the oldest is dropped
	webhookTries    = 6                // POSTs of one message at most
	webhookBackoff  = time.Second      // first retry delay, doubled each time
	webhookMaxDelay = 30 * time.Second // longest retry delay
)

func checkWebhookURL(s string) error {
	if len(s) > maxWebhookURL {
		return fmt.Errorf("URL over %d bytes", maxWebhookURL)
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%.80q: want an http(s)://host[:port]/path URL", s)
	}
	return nil
}

// WebhookMessage is Alertmanager's webhook payload (version 4), which
// Alertmanager's receivers (and anything that reads it) accept.
type WebhookMessage struct {
	Version           string            `json:"version"`
	GroupKey          string            `json:"groupKey"`
	TruncatedAlerts   int               `json:"truncatedAlerts"`
	Status            string            `json:"status"`
	Receiver          string            `json:"receiver"`
	GroupLabels       map[string]string `json:"groupLabels"`
	CommonLabels      map[string]string `json:"commonLabels"`
	CommonAnnotations map[string]string `json:"commonAnnotations"`
	ExternalURL       string            `json:"externalURL"`
	Alerts            []WebhookAlert    `json:"alerts"`
}

// WebhookAlert is one alert of a WebhookMessage.
type WebhookAlert struct {
	Status       string            `json:"status"`
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"` // zero time while firing, as Alertmanager sends it
	GeneratorURL string            `json:"generatorURL"`
	Fingerprint  string            `json:"fingerprint"`
}

// AlertmanagerJSON is the webhook body for one alert's state change.
func AlertmanagerJSON(a Alert, externalURL string) ([]byte, error) {
	h := fnv.New64a()
	io.WriteString(h, a.key())
	fp := strconv.FormatUint(h.Sum64(), 16)
	al := WebhookAlert{Status: a.Status, Labels: a.Labels,
		Annotations: map[string]string{"summary": a.Summary, "value": strconv.FormatFloat(a.Value, 'g', 6, 64)},
		StartsAt:    time.Unix(0, a.StartsNs).UTC(), GeneratorURL: externalURL, Fingerprint: fp}
	if a.Status == StatusResolved {
		al.EndsAt = time.Unix(0, a.EndsNs).UTC()
	}
	m := WebhookMessage{Version: "4", GroupKey: "{}:{alertname=" + strconv.Quote(a.Rule) + "}", Status: a.Status, Receiver: "sonde-monitor",
		GroupLabels: map[string]string{"alertname": a.Rule}, CommonLabels: a.Labels, CommonAnnotations: al.Annotations,
		ExternalURL: externalURL, Alerts: []WebhookAlert{al}}
	return json.Marshal(m)
}

// Webhook delivers alerts to one receiver from its own goroutine: a
// bounded queue (the oldest dropped when full, counted), each message
// POSTed until a 2xx, with a timeout per POST and retries with doubling
// backoff on network errors, 5xx and 429 (other statuses are final).
type Webhook struct {
	url, external string
	client        *http.Client
	log           *log.Logger
	backoff       time.Duration
	maxDelay      time.Duration

	mu      sync.Mutex
	queue   [][]byte
	wake    chan struct{}
	dropped uint64
	sent    uint64
	failed  uint64
}

// NewWebhook sends to the receiver at u (checked by Config.Check); external
// is the generatorURL of its messages ("" none).
func NewWebhook(u, external string, timeout time.Duration, lg *log.Logger) *Webhook {
	return &Webhook{url: u, external: external, client: &http.Client{Timeout: timeout}, log: lg,
		backoff: webhookBackoff, maxDelay: webhookMaxDelay, wake: make(chan struct{}, 1)}
}

// Send queues an alert's change; it never blocks the caller.
func (w *Webhook) Send(a Alert) {
	body, err := AlertmanagerJSON(a, w.external)
	if err != nil {
		w.log.Printf("alert webhook: %v", err)
		return
	}
	w.mu.Lock()
	if len(w.queue) >= webhookQueue {
		w.queue = w.queue[1:]
		w.dropped++
		w.log.Printf("alert webhook: queue full (%d messages), the oldest dropped", webhookQueue)
	}
	w.queue = append(w.queue, body)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Run delivers the queue until ctx ends.
func (w *Webhook) Run(ctx context.Context) {
	for {
		w.mu.Lock()
		var body []byte
		if len(w.queue) > 0 {
			body = w.queue[0]
			w.queue = w.queue[1:]
		}
		w.mu.Unlock()
		if body == nil {
			select {
			case <-ctx.Done():
				return
			case <-w.wake:
				continue
			}
		}
		err := w.deliver(ctx, body)
		w.mu.Lock()
		if err == nil {
			w.sent++
		} else {
			w.failed++
		}
		w.mu.Unlock()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			w.log.Printf("alert webhook %s: message dropped: %v", w.url, err)
		}
	}
}

var errFinal = errors.New("refused")

func (w *Webhook) deliver(ctx context.Context, body []byte) error {
	delay := w.backoff
	var err error
	for try := 1; try <= webhookTries; try++ {
		if err = w.post(ctx, body); err == nil || errors.Is(err, errFinal) {
			return err
		}
		if try == webhookTries {
			break
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		delay = min(2*delay, w.maxDelay)
	}
	return fmt.Errorf("%d tries, the last: %w", webhookTries, err)
}

func (w *Webhook) post(ctx context.Context, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%w: %v", errFinal, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "sonde-monitor")
	resp, err := w.client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return nil
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
		return fmt.Errorf("HTTP %s", resp.Status)
	}
	return fmt.Errorf("%w: HTTP %s", errFinal, resp.Status)
}
