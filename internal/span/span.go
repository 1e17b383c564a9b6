// Package span is how the domain packages mark the work they do for tracing:
// a run, an attempt, a statement a handler sends, a table a clone copies.
// They call Start, which asks the process's Tracer; until one is set
// (internal/metrics sets the OpenTelemetry one when tracing is on) Start
// does nothing and costs next to nothing. The domain packages never import
// a tracing library themselves, as log/slog spares them a logging one.
//
// Attributes carry identities (codes, ids, statuses) and statement texts cut
// to MaxText characters; never a bound value, a secret or an error message,
// which may quote either.
package span

import (
	"context"
	"sync/atomic"
	"unicode/utf8"
)

// MaxText is how many characters of a statement's text a span keeps.
const MaxText = 512

// Attr is one attribute of a span: a key and a string, int64 or bool value.
type Attr struct {
	Key   string
	Value any
}

// String is a text attribute.
func String(key, value string) Attr { return Attr{Key: key, Value: value} }

// Int is a whole-number attribute.
func Int(key string, value int64) Attr { return Attr{Key: key, Value: value} }

// Span is an open span.
type Span interface {
	// Set adds attributes.
	Set(attrs ...Attr)
	// Fail marks the span failed; reason says how in words that hold no
	// value of the data or the configuration (a status, an error class).
	Fail(reason string)
	// End ends the span.
	End()
}

// Tracer starts spans; see SetTracer.
type Tracer interface {
	// Start starts a span, a child of the span in ctx when there is one,
	// and returns ctx carrying it. With newTrace the span starts a trace of
	// its own instead, linked to the span in ctx.
	Start(ctx context.Context, name string, newTrace bool, attrs []Attr) (context.Context, Span)
}

// tracer is the process's Tracer; nil traces nothing.
var tracer atomic.Pointer[Tracer]

// SetTracer makes t the process's Tracer; nil turns tracing off.
func SetTracer(t Tracer) {
	if t == nil {
		tracer.Store(nil)
		return
	}
	tracer.Store(&t)
}

// Start starts a span named name as a child of the span in ctx, and returns
// ctx carrying it; without a Tracer it returns ctx and a span that does
// nothing.
func Start(ctx context.Context, name string, attrs ...Attr) (context.Context, Span) {
	return start(ctx, name, false, attrs)
}

// StartTrace starts a span that begins a trace of its own (a run's),
// linked to the span in ctx if any.
func StartTrace(ctx context.Context, name string, attrs ...Attr) (context.Context, Span) {
	return start(ctx, name, true, attrs)
}

func start(ctx context.Context, name string, newTrace bool, attrs []Attr) (context.Context, Span) {
	t := tracer.Load()
	if t == nil {
		return ctx, nop{}
	}
	return (*t).Start(ctx, name, newTrace, attrs)
}

// On reports whether spans are recorded: callers skip building attributes
// that cost something to make when they are not.
func On() bool { return tracer.Load() != nil }

// Text is a statement's text as a span keeps it: its first MaxText
// characters, with "…" when it was longer.
func Text(s string) string {
	if utf8.RuneCountInString(s) <= MaxText {
		return s
	}
	n := 0
	for i := range s {
		if n == MaxText {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

// nop is the span of a process that traces nothing.
type nop struct{}

func (nop) Set(...Attr) {}
func (nop) Fail(string) {}
func (nop) End()        {}
