// Package httpstatus records the status an HTTP handler answered with, for
// the request logs and metrics of the middleware around it.
package httpstatus

import "net/http"

// Recorder is a ResponseWriter that keeps the first status written: 200
// when the handler writes a body without one.
type Recorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

// Record returns a Recorder writing to w.
func Record(w http.ResponseWriter) *Recorder {
	return &Recorder{ResponseWriter: w, status: http.StatusOK}
}

// Status returns the status the handler answered with.
func (r *Recorder) Status() int { return r.status }

// WriteHeader records the first status written and writes it.
func (r *Recorder) WriteHeader(status int) {
	if !r.wrote {
		r.status, r.wrote = status, true
	}
	r.ResponseWriter.WriteHeader(status)
}

// Write writes the body, with a 200 status when none was written.
func (r *Recorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.ResponseWriter.Write(b)
}

// Unwrap returns the writer underneath, for http.ResponseController.
func (r *Recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
