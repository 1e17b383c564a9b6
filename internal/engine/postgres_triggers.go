package engine

import "context"

// refreshTriggers is filled in by the guards work (issue 3).
func (postgresDialect) refreshTriggers(ctx context.Context, tx *Tx) error { return nil }
