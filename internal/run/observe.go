package run

import "time"

// Observer is told how long work waited in this process, for metrics (see
// internal/metrics): what the Engine DB does not record. Options.Observer
// is nil when nothing observes.
type Observer interface {
	// Admitted: a QUEUED run of the pipeline, recorded with the trigger
	// kind (a schedule tick, a trigger), was admitted IN-PROGRESS wait
	// after it was recorded.
	Admitted(pipeline, trigger string, wait time.Duration)
	// Dispatched: an attempt of a task of the handler started wait after
	// its task was ready to start and its run had a free slot (the wait for
	// a worker of the shared Pool and the binding).
	Dispatched(handler string, wait time.Duration)
}
