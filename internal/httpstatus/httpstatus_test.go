package httpstatus

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestRecorderKeepsTheFirstStatus(t *testing.T) {
	cases := []struct {
		name    string
		handler func(w http.ResponseWriter)
		want    int
	}{
		{"body only", func(w http.ResponseWriter) { w.Write([]byte("ok")) }, http.StatusOK},
		{"status then body", func(w http.ResponseWriter) { w.WriteHeader(http.StatusTeapot); w.Write([]byte("x")) }, http.StatusTeapot},
		{"second status ignored", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusNotFound)
			w.WriteHeader(http.StatusInternalServerError)
		}, http.StatusNotFound},
		{"body then status", func(w http.ResponseWriter) { w.Write([]byte("x")); w.WriteHeader(http.StatusBadGateway) }, http.StatusOK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			under := httptest.NewRecorder()
			rec := Record(under)
			c.handler(rec)
			if rec.Status() != c.want || under.Code != c.want {
				t.Fatalf("recorded %d, written %d; want %d", rec.Status(), under.Code, c.want)
			}
			if http.NewResponseController(rec).Flush() != nil {
				t.Fatal("the writer underneath cannot be flushed through the recorder")
			}
		})
	}
}
