package units

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Day and Year are the units a span of days or years is written in: 24 h
// and 365 days (no calendar: a duration, not a date).
const (
	Day  = 24 * time.Hour
	Year = 365 * Day
)

// ParseDuration reads a duration of at least 0 and at most max: Go's
// (time.ParseDuration: "90m", "1h30m", "250ms"), led by whole or decimal
// years and days where a span needs them ("5y", "30d", "1.5d", "1d12h").
// It is the one duration grammar of flags and config files; "off" (no
// limit) is ParseDurationLimit's.
func ParseDuration(s string, max time.Duration) (time.Duration, error) {
	if len(s) > maxInput {
		return 0, fmt.Errorf("%.20q…: too long for a duration", s)
	}
	t := strings.TrimSpace(s)
	bad := fmt.Errorf("%q: want a duration like 90s, 24h, 7d, 1d12h or 5y", clip(s))
	if t == "" {
		return 0, bad
	}
	total := 0.0
	for _, u := range []struct {
		suffix byte
		unit   time.Duration
	}{{'y', Year}, {'d', Day}} {
		i := strings.IndexByte(t, u.suffix)
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(t[:i], 64)
		if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) || v > float64(max)/float64(u.unit)+1 {
			return 0, bad
		}
		total += v * float64(u.unit)
		t = t[i+1:]
	}
	if t != "" {
		d, err := time.ParseDuration(t)
		if err != nil || d < 0 {
			return 0, bad
		}
		total += float64(d)
	}
	if total > float64(max) {
		return 0, fmt.Errorf("%q: at most %s", clip(s), FormatSpan(max))
	}
	return time.Duration(total), nil
}

// ParseDurationLimit reads a duration limit: "off" or "0" for none (0 is
// returned), else a duration as ParseDuration reads it.
func ParseDurationLimit(s string, max time.Duration) (time.Duration, error) {
	if isOff(s) {
		return 0, nil
	}
	return ParseDuration(s, max)
}

// FormatSpan writes a long duration in the largest unit it is a whole
// number of ("10y", "400d"), else as Go does.
func FormatSpan(d time.Duration) string {
	switch {
	case d >= Year && d%Year == 0:
		return strconv.FormatInt(int64(d/Year), 10) + "y"
	case d >= Day && d%Day == 0:
		return strconv.FormatInt(int64(d/Day), 10) + "d"
	}
	return d.String()
}

// ParseTime reads a time of a range: RFC 3339 ("2026-05-16T08:00:00Z"), a
// date (its midnight, UTC) or a date and minute without a zone (UTC);
// years 1970 to 2200.
func ParseTime(s string) (time.Time, error) {
	if len(s) > 64 {
		return time.Time{}, fmt.Errorf("%.20q…: too long for a time", s)
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02", "2006-01-02T15:04", "2006-01-02 15:04"} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			if t.Year() < 1970 || t.Year() > 2200 {
				return time.Time{}, fmt.Errorf("%q: want a year from 1970 to 2200", s)
			}
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q: want an RFC 3339 time (2026-05-16T08:00:00Z) or a date (2026-05-16)", s)
}

// Range is a time range as the commands that read history take it:
// --since (a duration back from To or now), or --from, and --to (default
// now).
type Range struct {
	Since, From, To string
}

// Resolve resolves r against now into [start, end), at most max long and
// not empty; since is the default span when neither Since nor From is
// given. Errors name the flags (--since, --from, --to).
func (r Range) Resolve(now time.Time, since, max time.Duration) (start, end time.Time, err error) {
	if r.Since != "" && r.From != "" {
		return start, end, errors.New("--since and --from: give one (--since counts back from --to or now)")
	}
	end = now
	if r.To != "" {
		if end, err = ParseTime(r.To); err != nil {
			return start, end, fmt.Errorf("--to: %w", err)
		}
	}
	switch {
	case r.From != "":
		if start, err = ParseTime(r.From); err != nil {
			return start, end, fmt.Errorf("--from: %w", err)
		}
	default:
		if r.Since != "" {
			if since, err = ParseDuration(r.Since, max); err != nil {
				return start, end, fmt.Errorf("--since: %w", err)
			}
			if since == 0 {
				return start, end, fmt.Errorf("--since: %q: want a positive duration", clip(r.Since))
			}
		}
		start = end.Add(-since)
	}
	if !start.Before(end) {
		return start, end, fmt.Errorf("the range is empty: it starts at %s, not before its end %s", start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339))
	}
	if end.Sub(start) > max || end.Sub(start) < 0 {
		return start, end, fmt.Errorf("a range of %s: at most %s", end.Sub(start).Round(time.Hour), FormatSpan(max))
	}
	return start, end, nil
}

// Duration is a time.Duration written in a config file as a string of
// ParseDuration's grammar ("2s", "30d", "5y"), at most MaxAge; "forever",
// "off" or "0" is Forever.
type Duration time.Duration

const (
	// MaxAge bounds a Duration (100 years): beyond it is a typo.
	MaxAge = 100 * Year
	// Forever is a Duration without end, e.g. a retention age that keeps
	// rows for ever.
	Forever = Duration(-1)
)

// UnmarshalJSON reads "30d", "2s" ….
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return errors.New(`want a duration string such as "2s" or "30d"`)
	}
	v, err := ParseAge(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration as Go prints it.
func (d Duration) MarshalJSON() ([]byte, error) {
	if d == Forever {
		return json.Marshal("forever")
	}
	return json.Marshal(time.Duration(d).String())
}

// Age is the duration as a retention age: 0 for Forever.
func (d Duration) Age() time.Duration { return time.Duration(max(d, 0)) }

// ParseAge reads a Duration's string: ParseDuration's grammar up to
// MaxAge, or "0", "off" or "forever" for no limit (Forever).
func ParseAge(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "0", "forever", "off":
		return time.Duration(Forever), nil
	}
	v, err := ParseDuration(s, MaxAge)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %w", err)
	}
	return v, nil
}
