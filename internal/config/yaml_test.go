package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSyntaxErrorsNameTheirLine: the parser's refusals, and a byte that is
// not UTF-8, are reported at the line that holds the mistake.
func TestSyntaxErrorsNameTheirLine(t *testing.T) {
	t.Parallel()
	orch := "Orchestration:\n  Mode: local\n  Max_parallel_tasks: 4\n\n" // lines 4 to 7
	cases := []struct{ name, yml, want string }{
		{"a flow mapping left open", secretsEnv + "Orchestration:\n  Mode: local\n  Max_parallel_tasks: {4\n\n" + engineSQLite,
			":6: this is not valid YAML: did not find expected ',' or '}' on line 9, inside the flow mapping { … } that starts here (column 23)"},
		{"a key indented too little", secretsEnv + orch + "Engine:\n  dev:\n    jdbc_url: jdbc:sqlite:e.db\n   schema: main\n",
			":11: this is not valid YAML: did not find expected key"},
		{"a key indented too much", secretsEnv + orch + "Engine:\n  dev:\n    jdbc_url: jdbc:sqlite:e.db\n      schema: main\n",
			":11: this is not valid YAML: mapping values are not allowed in this context"},
		{"a quote left open", secretsEnv + orch + engineSQLite + "Warehouse:\n  dev:\n    schema: 'main\n",
			":14: this is not valid YAML: found unexpected end of stream on line 15, inside the quoted text that starts here (column 13)"},
		{"a byte that is not UTF-8", secretsEnv + orch + engineSQLite + "Cloning:\n  Enabled: tr\xffue\n",
			":13: this is not UTF-8 text: the byte 0xff in column 14 is not; save the file as UTF-8"},
		{"an accent before the bad byte", secretsEnv + "Orchestration:\n  Name: é\xc3\n",
			":5: this is not UTF-8 text: the byte 0xc3 in column 10 is not"},
	}
	for _, c := range cases {
		_, path, err := loadYAML(t, c.yml)
		wantConfigError(t, err, path+c.want)
	}
}

// TestUnknownKeysAreListedUpToALimit: a mapping of many unknown keys names
// the first ones and counts the rest.
func TestUnknownKeysAreListedUpToALimit(t *testing.T) {
	t.Parallel()
	var keys strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&keys, "  Key_%d: x\n", i)
	}
	_, _, err := loadYAML(t, secretsEnv+"Orchestration:\n  Mode: local\n"+keys.String()+engineSQLite)
	wantConfigError(t, err, ":6: Orchestration: unknown key 'Key_0', 'Key_1'", "'Key_19' and 980 more; the keys read here are Mode")
	if strings.Contains(err.Error(), "Key_20") {
		t.Errorf("the message lists more than %d keys: %v", maxListed, err)
	}
}

// TestAFileTooLargeIsNotRead: a file larger than any configuration is
// refused before it is read.
func TestAFileTooLargeIsNotRead(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), FileName)
	if err := os.WriteFile(path, []byte(minimal+"#"+strings.Repeat("x", MaxFileBytes)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	wantConfigError(t, err, path+" is 1048726 bytes, more than the 1048576 a craft-connector.yml may have")
}
