package metrics

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/span"
)

// ServiceName is the service.name of etl-craft's spans, unless
// OTEL_SERVICE_NAME names another.
const ServiceName = "etl-craft"

// scope names the tracer of etl-craft's spans.
const scope = "github.com/etl-craft/etl-craft"

// Tracing is the process's export of spans, once started.
type Tracing struct {
	provider *sdktrace.TracerProvider
}

// StartTracing turns tracing on when it is configured: by the standard
// variables OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT
// (with the exporter's other OTEL_EXPORTER_OTLP_* settings), or by endpoint,
// Orchestration.Traces_endpoint, the base URL of an OTLP/HTTP receiver.
// OTEL_TRACES_EXPORTER=none or OTEL_SDK_DISABLED=true keep it off. It
// returns nil when tracing stays off. Spans go in batches over OTLP/HTTP as
// protobuf; another protocol asked for is a configuration error (exit 3).
// Stop exports what is left.
func StartTracing(ctx context.Context, endpoint, version string, log *slog.Logger) (*Tracing, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	switch os.Getenv("OTEL_TRACES_EXPORTER") {
	case "", "otlp":
	case "none":
		return nil, nil
	default:
		return nil, exit.Errorf(exit.Configuration,
			"OTEL_TRACES_EXPORTER is %q: etl-craft exports traces with otlp only (or none to turn tracing off)", os.Getenv("OTEL_TRACES_EXPORTER"))
	}
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return nil, nil
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := os.Getenv(name); p != "" && p != "http/protobuf" {
			return nil, exit.Errorf(exit.Configuration,
				"%s is %q: etl-craft exports traces over http/protobuf only; set it to http/protobuf or leave it unset", name, p)
		}
	}
	var opts []otlptracehttp.Option
	switch {
	case os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "":
	case endpoint != "":
		u, err := url.Parse(endpoint)
		if err != nil {
			return nil, exit.Wrap(exit.Configuration, err, "Orchestration.Traces_endpoint")
		}
		opts = append(opts, otlptracehttp.WithEndpointURL(u.JoinPath("v1", "traces").String()))
	default:
		return nil, nil
	}
	exporter, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, exit.Wrap(exit.Configuration, err, "the OTLP trace exporter")
	}
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", ServiceName),
		attribute.String("service.version", version)), resource.WithFromEnv())
	if err != nil {
		return nil, exit.Wrap(exit.Configuration, err, "OTEL_RESOURCE_ATTRIBUTES")
	}
	provider := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
	otel.SetTracerProvider(provider)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("tracing: could not export spans", "error", err)
	}))
	span.SetTracer(tracer{provider.Tracer(scope)})
	return &Tracing{provider: provider}, nil
}

// Stop turns tracing off and exports the spans not exported yet, until ctx
// ends.
func (t *Tracing) Stop(ctx context.Context) error {
	span.SetTracer(nil)
	return t.provider.Shutdown(ctx)
}

// tracer is the OpenTelemetry span.Tracer.
type tracer struct{ t trace.Tracer }

func (t tracer) Start(ctx context.Context, name string, newTrace bool, attrs []span.Attr) (context.Context, span.Span) {
	opts := []trace.SpanStartOption{trace.WithAttributes(attributes(attrs)...)}
	if newTrace {
		opts = append(opts, trace.WithNewRoot())
		if parent := trace.SpanContextFromContext(ctx); parent.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: parent}))
		}
	}
	ctx, s := t.t.Start(ctx, name, opts...)
	return ctx, spanOf{s}
}

// spanOf is an OpenTelemetry span as a span.Span.
type spanOf struct{ s trace.Span }

func (s spanOf) Set(attrs ...span.Attr) { s.s.SetAttributes(attributes(attrs)...) }
func (s spanOf) Fail(reason string)     { s.s.SetStatus(codes.Error, reason) }
func (s spanOf) End()                   { s.s.End() }

// attributes converts span attributes.
func attributes(attrs []span.Attr) []attribute.KeyValue {
	out := make([]attribute.KeyValue, 0, len(attrs))
	for _, a := range attrs {
		switch v := a.Value.(type) {
		case string:
			out = append(out, attribute.String(a.Key, v))
		case int64:
			out = append(out, attribute.Int64(a.Key, v))
		case bool:
			out = append(out, attribute.Bool(a.Key, v))
		}
	}
	return out
}

// startRequest starts the span of an HTTP request when tracing is on, a
// child of the caller's span when the request carries a traceparent.
func startRequest(r *http.Request) (*http.Request, trace.Span) {
	if !span.On() {
		return r, nil
	}
	ctx := otel.GetTextMapPropagator().Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	ctx, s := otel.Tracer(scope).Start(ctx, "HTTP "+methodLabel(r.Method), trace.WithSpanKind(trace.SpanKindServer))
	return r.WithContext(ctx), s
}

// endRequest ends a request's span, named by its method and route, with
// its status: failed for a 5xx.
func endRequest(s trace.Span, method, route string, status int) {
	if s == nil {
		return
	}
	s.SetName(method + " " + route)
	s.SetAttributes(attribute.String("http.request.method", method), attribute.String("http.route", route),
		attribute.Int("http.response.status_code", status))
	if status >= http.StatusInternalServerError {
		s.SetStatus(codes.Error, "HTTP "+strconv.Itoa(status))
	}
	s.End()
}
