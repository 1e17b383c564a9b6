package freetext

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode"
)

func TestCheckRefusesControlAndFormatCharacters(t *testing.T) {
	for _, s := range []string{"a\x1b[2J", "bell\a", "nul\x00", "line\nbreak", "tab\tbed", "cr\r", "del\x7f", "c1\u009b",
		"zero\u200bwidth", "rtl\u202eoverride", "bad \xff byte"} {
		if err := Check(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
	for _, s := range []string{"", "a reason", "naïve café", "日本語", "emoji 👍", strings.Repeat("x", 5000)} {
		if err := Check(s); err != nil {
			t.Errorf("%q refused: %v", s, err)
		}
	}
	if err := Check("x\x1b"); err == nil || !strings.Contains(err.Error(), "U+001B") {
		t.Errorf("the message must name the character: %v", err)
	}
}

func TestVisibleEscapesWhatCouldFoolAReader(t *testing.T) {
	cases := map[string]string{
		"\x1b[2J\x1b[31mFAKE: all good\x1b[0m": `\u001b[2J\u001b[31mFAKE: all good\u001b[0m`,
		"a\nb\tc\rd":                           `a\nb\tc\rd`,
		"bell\a nul\x00 del\x7f c1\u009b":      `bell\u0007 nul\u0000 del\u007f c1\u009b`,
		"file\u202etxt.exe":                    `file\u202etxt.exe`,
		"bad \xff":                             `bad \xff`,
		"plain text, naïve 日本":                 "plain text, naïve 日本",
		"family 👨\u200d👩\u200d👧":               "family 👨\u200d👩\u200d👧", // joiners print as they are
	}
	for in, want := range cases {
		if got := Visible(in); got != want {
			t.Errorf("Visible(%q) = %q, want %q", in, got, want)
		}
	}
}

// The writer keeps the output's own line breaks and tabs, escapes the rest,
// keeps a character split between writes whole, and leaves JSON valid and
// equal in meaning.
func TestWriterKeepsLayoutAndJSON(t *testing.T) {
	var b bytes.Buffer
	w := NewWriter(&b)
	w.Write([]byte("ID\tREASON\n1\tpaused \x1b[2J"))
	w.Write([]byte("ok \xe2\x80")) // the first two bytes of U+202E
	w.Write([]byte("\xae here\n"))
	w.Write([]byte("caf\xc3"))
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "ID\tREASON\n1\tpaused \\u001b[2Jok \\u202e here\ncaf\\xc3"
	if b.String() != want {
		t.Fatalf("got %q, want %q", b.String(), want)
	}

	b.Reset()
	doc := map[string]string{"reason": "a\u202eb\x7fc\u0085d"}
	raw, _ := json.Marshal(doc)
	NewWriter(&b).Write(raw)
	var back map[string]string
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || back["reason"] != doc["reason"] {
		t.Fatalf("JSON through the writer: %s -> %v %v", b.Bytes(), back, err)
	}
	if bytes.ContainsAny(b.Bytes(), "\u202e\x7f\u0085") {
		t.Fatalf("hidden characters left: %q", b.Bytes())
	}
}

// hidden, written as ranges for speed, is exactly Unicode's control
// characters and its Bidi_Control characters.
func TestHiddenIsControlOrBidiControl(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if want := unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r); hidden(r) != want {
			t.Errorf("hidden(%U) = %v, want %v", r, hidden(r), want)
		}
	}
}
