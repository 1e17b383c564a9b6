// Package concurrency is the concurrency suite: its tests run every
// handler eight tasks wide, at once, through the built binary on real
// databases (see internal/e2e) — under `etl-craft server` and under one
// foreground `run` — and check that every attempt succeeds and every
// target holds exactly what the same tasks run one after the other leave.
// The package has no code of its own.
package concurrency
