package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/sonde-project/sonde/internal/model"
)

// MaxSavedBytes bounds a saved result that Load reads: the largest
// analysis of a long capture with every sample is far smaller, and a
// bigger file is refused before anything is read.
const MaxSavedBytes = 256 << 20

// InputError is an error of the input: a saved result that cannot be
// used (missing, too big, not JSON, an unknown schema) or results that
// cannot be compared. The command reports it as a usage error.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

func inputErrorf(format string, a ...any) error { return &InputError{fmt.Errorf(format, a...)} }

// Saved is one saved result (`--json` of sonde test, udp or analyze),
// decoded by the schema it names.
type Saved struct {
	Name string // where it was read from, for headings
	kind *kind
	v    any // *model.Result, *model.UDPResult or *model.Analysis
}

// Schema names the result's schema.
func (s *Saved) Schema() string { return s.kind.schema }

// kind is what the report knows of one schema: how to decode, render and
// compare it. A new result kind (monitor, mbm) is one more entry in kinds.
type kind struct {
	schema    string
	decode    func([]byte) (any, error)
	text      func(io.Writer, any) error
	html      func(io.Writer, any) error
	describe  func(any) string     // one line naming the run
	headlines func(any) []headline // the figures a comparison shows
}

// kinds are the schemas sonde report reads.
var kinds = []*kind{
	{
		schema: model.SchemaVersion,
		decode: decodeAs[model.Result],
		text:   func(w io.Writer, v any) error { return WriteText(w, v.(*model.Result)) },
		html:   func(w io.Writer, v any) error { return WriteHTML(w, v.(*model.Result)) },
		describe: func(v any) string {
			r := v.(*model.Result)
			server := r.Server.Address
			if server == "" {
				server = r.Config.Server
			}
			return describeRun("sonde test", server, r.Start)
		},
		headlines: func(v any) []headline { return resultHeadlines(v.(*model.Result)) },
	},
	{
		schema: model.UDPSchemaVersion,
		decode: decodeAs[model.UDPResult],
		text:   func(w io.Writer, v any) error { return WriteUDPText(w, v.(*model.UDPResult)) },
		html:   func(w io.Writer, v any) error { return WriteUDPHTML(w, v.(*model.UDPResult)) },
		describe: func(v any) string {
			r := v.(*model.UDPResult)
			return describeRun("sonde udp", r.Config.Server, r.Start)
		},
		headlines: func(v any) []headline { return udpHeadlines(v.(*model.UDPResult)) },
	},
	{
		schema: model.RPMSchemaVersion,
		decode: decodeAs[model.RPMResult],
		text:   func(w io.Writer, v any) error { return WriteRPMText(w, v.(*model.RPMResult)) },
		html:   func(w io.Writer, v any) error { return WriteRPMHTML(w, v.(*model.RPMResult)) },
		describe: func(v any) string {
			r := v.(*model.RPMResult)
			return describeRun("sonde rpm", r.ConfigURL, r.Start)
		},
		headlines: func(v any) []headline { return rpmHeadlines(v.(*model.RPMResult)) },
	},
	{
		schema: model.AnalyzeSchema,
		decode: decodeAs[model.Analysis],
		text:   func(w io.Writer, v any) error { return WriteAnalyzeText(w, v.(*model.Analysis)) },
		html: func(w io.Writer, v any) error {
			r := v.(*model.Analysis)
			return WriteAnalyzeHTML(w, r, r.Samples, AnalyzeOptions{})
		},
		describe: func(v any) string {
			var names []string
			for _, f := range v.(*model.Analysis).Files {
				names = append(names, f.Path)
			}
			if len(names) == 0 {
				return "sonde capture"
			}
			return "sonde analyze " + strings.Join(names, " ")
		},
		headlines: func(v any) []headline { return analyzeHeadlines(v.(*model.Analysis)) },
	},
	{
		schema: model.MBMSchemaVersion,
		decode: decodeAs[model.MBMResult],
		text:   func(w io.Writer, v any) error { return WriteMBMText(w, v.(*model.MBMResult)) },
		html:   func(w io.Writer, v any) error { return WriteMBMHTML(w, v.(*model.MBMResult)) },
		describe: func(v any) string {
			r := v.(*model.MBMResult)
			return describeRun("sonde mbm", r.Subpath, r.Start)
		},
		headlines: func(v any) []headline { return mbmHeadlines(v.(*model.MBMResult)) },
	},
	{
		schema: model.MBMComposeSchemaVersion,
		decode: decodeAs[model.MBMComposition],
		text:   func(w io.Writer, v any) error { return WriteMBMComposeText(w, v.(*model.MBMComposition)) },
		html:   func(w io.Writer, v any) error { return WriteMBMComposeHTML(w, v.(*model.MBMComposition)) },
		describe: func(v any) string {
			return fmt.Sprintf("sonde mbm compose of %d subpaths", len(v.(*model.MBMComposition).Inputs))
		},
		headlines: func(v any) []headline { return mbmComposeHeadlines(v.(*model.MBMComposition)) },
	},
	{
		schema: model.MBMSummarySchemaVersion,
		decode: decodeAs[model.MBMSummary],
		text:   func(w io.Writer, v any) error { return WriteMBMSummaryText(w, v.(*model.MBMSummary)) },
		html:   func(w io.Writer, v any) error { return WriteMBMSummaryHTML(w, v.(*model.MBMSummary)) },
		describe: func(v any) string {
			s := v.(*model.MBMSummary)
			return fmt.Sprintf("sonde mbm summary of %d results, %d compositions", s.Results, s.Compositions)
		},
		headlines: func(v any) []headline { return mbmSummaryHeadlines(v.(*model.MBMSummary)) },
	},
	{
		schema: model.MonitorSchema,
		decode: decodeAs[model.MonitorReport],
		text:   func(w io.Writer, v any) error { return WriteMonitorText(w, v.(*model.MonitorReport)) },
		html:   func(w io.Writer, v any) error { return WriteMonitorHTML(w, v.(*model.MonitorReport)) },
		describe: func(v any) string {
			r := v.(*model.MonitorReport)
			s := "sonde monitor report"
			if r.Monitor != "" {
				s += " " + r.Monitor
			}
			return s + " " + time.Unix(0, r.FromNs).UTC().Format(time.RFC3339) + " to " + time.Unix(0, r.ToNs).UTC().Format(time.RFC3339)
		},
		headlines: func(v any) []headline { return monitorHeadlines(v.(*model.MonitorReport)) },
	},
	{
		schema: model.FleetSchema,
		decode: decodeAs[model.FleetReport],
		text:   func(w io.Writer, v any) error { return WriteFleetText(w, v.(*model.FleetReport)) },
		html:   func(w io.Writer, v any) error { return WriteFleetHTML(w, v.(*model.FleetReport)) },
		describe: func(v any) string {
			r := v.(*model.FleetReport)
			return "sonde fleet report " + time.Unix(0, r.FromNs).UTC().Format(time.RFC3339) + " to " + time.Unix(0, r.ToNs).UTC().Format(time.RFC3339)
		},
		headlines: func(v any) []headline { return fleetHeadlines(v.(*model.FleetReport)) },
	},
}

func describeRun(cmd, server string, start time.Time) string {
	s := cmd
	if server != "" {
		s += " " + server
	}
	if !start.IsZero() {
		s += " at " + start.Format(time.RFC3339)
	}
	return s
}

func decodeAs[T any](b []byte) (any, error) {
	v := new(T)
	if err := json.Unmarshal(b, v); err != nil {
		return nil, err
	}
	return v, nil
}

// Schemas lists the schemas Decode reads.
func Schemas() []string {
	var s []string
	for _, k := range kinds {
		s = append(s, k.schema)
	}
	sort.Strings(s)
	return s
}

// Load reads a saved result, refusing a file over MaxSavedBytes before
// reading it. Every error is an *InputError naming the file.
func Load(path string) (*Saved, error) {
	b, err := readSaved(path, MaxSavedBytes)
	if err != nil {
		return nil, err
	}
	return Decode(path, b)
}

// readSaved reads a file of at most max bytes, refused by its size before
// it is read. Every error is an *InputError naming the file.
func readSaved(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, inputErrorf("%w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, inputErrorf("%w", err)
	}
	if fi.IsDir() {
		return nil, inputErrorf("%s: is a directory", path)
	}
	if fi.Size() > max {
		return nil, inputErrorf("%s: %d bytes, more than the %d MiB a saved result may have", path, fi.Size(), max>>20)
	}
	// The file may grow after Stat: read one byte more than allowed.
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, inputErrorf("%s: %w", path, err)
	}
	if int64(len(b)) > max {
		return nil, inputErrorf("%s: more than the %d MiB a saved result may have", path, max>>20)
	}
	return b, nil
}

// Decode reads a saved result from b, dispatching on its "schema" field.
// name is used in errors and headings. Every error is an *InputError.
func Decode(name string, b []byte) (*Saved, error) {
	if len(b) > MaxSavedBytes {
		return nil, inputErrorf("%s: more than the %d MiB a saved result may have", name, MaxSavedBytes>>20)
	}
	schema, err := schemaOf(b)
	if err != nil {
		return nil, inputErrorf("%s: not a saved sonde result: %w", name, err)
	}
	for _, k := range kinds {
		if k.schema != schema {
			continue
		}
		v, err := k.decode(b)
		if err != nil {
			return nil, inputErrorf("%s: %s: %w", name, k.schema, err)
		}
		if err := checkContent(name, k, b); err != nil {
			return nil, err
		}
		return &Saved{Name: name, kind: k, v: v}, nil
	}
	if schema == "" {
		return nil, inputErrorf("%s: no \"schema\" field: not a saved sonde result (want one of %s)", name, strings.Join(Schemas(), ", "))
	}
	return nil, inputErrorf("%s: unknown schema %q (want one of %s)", name, schema, strings.Join(Schemas(), ", "))
}

// schemaOf returns the top-level "schema" of a saved result. sonde writes
// it as the first field, so it is read from the first tokens; only a file
// written otherwise costs a second full parse (the kind's decoder parses
// it anyway).
func schemaOf(b []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err == nil && t == json.Delim('{') {
		if k, err := dec.Token(); err == nil && k == "schema" {
			if v, err := dec.Token(); err == nil {
				if s, ok := v.(string); ok {
					return s, nil
				}
			}
		}
	}
	var head struct {
		Schema string `json:"schema"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return "", err
	}
	return head.Schema, nil
}

// WriteText re-renders the result as the command that made it printed it.
func (s *Saved) WriteText(w io.Writer) error { return s.kind.text(w, s.v) }

// WriteHTML re-renders the result's HTML report.
func (s *Saved) WriteHTML(w io.Writer) error { return s.kind.html(w, s.v) }

// fieldsOf returns the top-level JSON keys of a kind's result type, and
// the required ones among them: those sonde always writes (no omitempty
// or omitzero), the schema field aside.
func fieldsOf(t reflect.Type) (known, required map[string]bool) {
	known, required = map[string]bool{}, map[string]bool{}
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if f.Anonymous && name == "" {
				walk(f.Type)
				continue
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			known[name] = true
			if name != "schema" && !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") {
				required[name] = true
			}
		}
	}
	walk(t)
	return known, required
}

// fields returns the kind's known and required top-level keys.
func (k *kind) fields() (known, required map[string]bool) {
	v, err := k.decode([]byte("{}"))
	if err != nil {
		return nil, nil
	}
	return fieldsOf(reflect.TypeOf(v))
}

// checkContent refuses a file whose schema names a kind but whose content
// is not one: empty (only the schema), or another kind's result with its
// schema field changed. Decoding alone accepts both (every field is
// optional to encoding/json), and the report would be empty. A file that
// lacks a field but is no other kind's (one written before the field was
// added) is read.
func checkContent(name string, k *kind, b []byte) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return inputErrorf("%s: %s: %w", name, k.schema, err)
	}
	// A key written as null is there: sonde writes an empty list so.
	present := func(key string) bool { _, ok := top[key]; return ok }
	known, req := k.fields()
	var missing []string
	for key := range req {
		if !present(key) {
			missing = append(missing, key)
		}
	}
	sort.Strings(missing)
	// Another kind's content: every field that kind always writes, and
	// either fields this kind does not know or this kind's missing.
	for _, o := range kinds {
		if o == k {
			continue
		}
		_, oreq := o.fields()
		all, foreign := len(oreq) > 0, false
		for key := range oreq {
			all = all && present(key)
			foreign = foreign || !known[key]
		}
		if all && (foreign || len(missing) > 0) {
			return inputErrorf("%s: its schema says %s, but its content is a %s result", name, k.schema, o.schema)
		}
	}
	if len(req) > 0 && len(missing) == len(req) {
		return inputErrorf("%s: its schema says %s, but it holds no result (none of %s)", name, k.schema, strings.Join(missing, ", "))
	}
	return nil
}

// WriteJSON writes v as a saved result is written (`--json` of every
// command): indented by two spaces, one trailing newline. It is the one
// JSON writer of saved results; Load reads them back.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// FormsOf is the JSON, text and HTML forms of v, a result of one of the
// kinds sonde report reads (a pointer, as the command holds it), rendered
// by the kind's own renderers: what a command prints and what `sonde
// report` re-renders of its saved file are the same by construction. A
// command adds the forms only it has (CSV, series). v of another type has
// its JSON only.
func FormsOf(v any) Forms {
	f := Forms{JSON: v}
	for _, k := range kinds {
		// decode("null") is the kind's zero result: its Go type.
		if z, err := k.decode([]byte("null")); err == nil && reflect.TypeOf(z) == reflect.TypeOf(v) {
			f.Text = func(w io.Writer) error { return k.text(w, v) }
			f.HTML = func(w io.Writer) error { return k.html(w, v) }
			break
		}
	}
	return f
}
