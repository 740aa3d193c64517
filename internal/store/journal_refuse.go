package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/sonde-project/sonde/internal/model"
)

// noResults is the part of Store a journal does not keep: test results
// and a fleet's rows. Every call returns the one error of refuse.
type noResults struct{}

func refuse(what string) error {
	return fmt.Errorf("store: the journal store keeps a monitor's rows only; use SQLite or PostgreSQL for %s", what)
}

func (noResults) AddResult(context.Context, *model.Result) error       { return refuse("test results") }
func (noResults) AddRecord(context.Context, *model.ServerRecord) error { return refuse("test results") }
func (noResults) ListResults(context.Context, int) ([]Summary, error) {
	return nil, refuse("test results")
}
func (noResults) ListResultsKind(context.Context, string, int) ([]Summary, error) {
	return nil, refuse("test results")
}
func (noResults) GetResult(context.Context, string) (json.RawMessage, error) {
	return nil, refuse("test results")
}
func (noResults) ResultUsage(context.Context) (int, int64, error) {
	return 0, 0, refuse("test results")
}

func (noResults) AddMonitor(context.Context, Identity, bool, bool) (string, error) {
	return "", refuse("a fleet store")
}
func (noResults) RevokeMonitor(context.Context, string) error { return refuse("a fleet store") }
func (noResults) FleetMonitors(context.Context) ([]FleetMonitor, error) {
	return nil, refuse("a fleet store")
}
func (noResults) Accept(context.Context, *Shipment) error { return refuse("a fleet store") }
func (noResults) HourRows(context.Context, FleetQuery, func(HourRow) error) error {
	return refuse("a fleet store")
}
func (noResults) MinuteRows(context.Context, FleetQuery, func(Rollup) error) error {
	return refuse("a fleet store")
}
func (noResults) FleetEvents(context.Context, FleetQuery, []model.EventKind, int) ([]FleetEvent, error) {
	return nil, refuse("a fleet store")
}
func (noResults) DirtyHours(context.Context, int) ([]StreamHour, error) {
	return nil, refuse("a fleet store")
}
func (noResults) MergeHours(context.Context, int64, []int32, func([]Rollup) (HourRow, error)) error {
	return refuse("a fleet store")
}
