package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Within opens the store at loc, runs fn within timeout (a command's
// --deadline) and closes the store: existing opens only a store that is
// there (OpenExisting, for readers), else it is opened and migrated
// (OpenLocation). fn's errors are prefixed with the location; running out
// of time says so, with what names fn's work ("the report").
func Within(ctx context.Context, loc Location, existing bool, timeout time.Duration, what string, fn func(context.Context, Store) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var st Store
	var err error
	if existing {
		st, err = OpenExisting(ctx, loc)
	} else {
		st, err = OpenLocation(ctx, loc, Options{})
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: no answer within --deadline %s", loc, timeout)
	}
	if err != nil {
		return err
	}
	defer st.Close()
	switch err = fn(ctx, st); {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s: %s took longer than --deadline %s", loc, what, timeout)
	case err != nil:
		return fmt.Errorf("%s: %w", loc, err)
	}
	return nil
}

// MigrateWithin is Migrate within timeout (`store migrate --deadline`):
// running out of time says so.
func MigrateWithin(ctx context.Context, loc Location, rawURL string, timeout time.Duration) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	v, err := Migrate(ctx, rawURL)
	if errors.Is(err, context.DeadlineExceeded) {
		return v, fmt.Errorf("%s: no answer within --deadline %s", loc, timeout)
	}
	return v, err
}
