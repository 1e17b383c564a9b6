package config

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// sweepSecret is in every value the sweep gives a variable: no error may
// show it.
const sweepSecret = "Sw33pSecret"

// sweepValues are values of a variable a setting names, each wrong for most
// settings in its own way.
var sweepValues = []string{
	sweepSecret,
	sweepSecret + " with spaces: and/slashes",
	"-1" + sweepSecret,
	"jdbc:postgresql://" + sweepSecret + ":99999/" + sweepSecret + "?password=" + sweepSecret,
	"jdbc:duckdb:" + sweepSecret + "/my-" + sweepSecret + ".duckdb",
	sweepSecret + ":80",
	"[" + sweepSecret + "]",
	"smtp",
	"http://" + sweepSecret + ".example.com/" + sweepSecret,
}

// block is a section or a block of settings in file order.
type block struct {
	name   string      // the section, or Section.profile / Orchestration.Email
	indent string      // the settings' indentation
	keys   [][2]string // key, value
	// swept are the settings the sweep names the variable in.
	swept []string
}

// text writes the block with key's value replaced by (or added as) value.
func (b block) text(key, value string) string {
	head := ""
	for _, part := range strings.Split(b.name, ".") {
		head += strings.Repeat("  ", strings.Count(head, "\n")) + part + ":\n"
	}
	var out strings.Builder
	out.WriteString(head)
	done := false
	for _, kv := range b.keys {
		v := kv[1]
		if kv[0] == key {
			v, done = value, true
		}
		fmt.Fprintf(&out, "%s%s: %s\n", b.indent, kv[0], v)
	}
	if !done && key != "" {
		fmt.Fprintf(&out, "%s%s: %s\n", b.indent, key, value)
	}
	return out.String()
}

// TestNoValueOfAVariableIsShown names a variable in every setting of every
// section and warehouse, one at a time, with values wrong in many ways:
// whatever the setting's error says, it never shows the variable's value.
func TestNoValueOfAVariableIsShown(t *testing.T) {
	t.Parallel()
	orchestration := slices.DeleteFunc(slices.Clone(orchestrationKeys), func(k string) bool { return k == "Email" })
	warehouseKeys := append(sectionSettings("Warehouse"), authExtras...)
	engineKeys := append([]string{"Name"}, connectionKeys...)
	sections := []struct {
		order  int // the section's place in the file
		blocks []block
	}{
		{0, []block{{name: "Secrets", indent: "  ", keys: [][2]string{{"Source_type", "environment"}, {"Profile", "dev"}},
			swept: []string{"Source_type", "Path", "Profile"}}}},
		{1, []block{
			{name: "Orchestration", indent: "  ", keys: [][2]string{{"Mode", "local"}}, swept: orchestration},
		}},
		{2, []block{
			{name: "Engine.dev", indent: "    ", keys: [][2]string{{"jdbc_url", "jdbc:sqlite:engine.db"}, {"schema", "main"}}, swept: engineKeys},
			{name: "Engine.dev", indent: "    ", keys: [][2]string{{"jdbc_url", "jdbc:postgresql://db.example.com/etl"}, {"schema", "public"},
				{"auth_mode", "password"}, {"user", "etl"}, {"secret", "ENGINE_SECRET"}}, swept: engineKeys},
		}},
		{3, []block{
			{name: "Warehouse.dev", indent: "    ", keys: [][2]string{{"jdbc_url", "jdbc:duckdb:warehouse.duckdb"}, {"schema", "main"}}, swept: warehouseKeys},
			{name: "Warehouse.dev", indent: "    ", keys: [][2]string{{"Table_format", "iceberg"}, {"jdbc_url", "jdbc:duckdb:warehouse.duckdb"}, {"schema", "main"},
				{"catalog", "lake"}, {"catalog_uri", "http://localhost:8181"}, {"iceberg_warehouse", "s3://lake"}}, swept: warehouseKeys},
			{name: "Warehouse.dev", indent: "    ", keys: [][2]string{{"jdbc_url", "jdbc:postgresql://wh.example.com/analytics"}, {"schema", "staging"},
				{"auth_mode", "password"}, {"user", "loader"}, {"secret", "ENGINE_SECRET"}}, swept: warehouseKeys},
			{name: "Warehouse.dev", indent: "    ", keys: [][2]string{{"jdbc_url", "jdbc:trino://trino.local/lake/sales"}, {"schema", "sales"}}, swept: warehouseKeys},
			{name: "Warehouse.dev", indent: "    ", keys: [][2]string{{"Name", "Databricks"}, {"jdbc_url", "jdbc:databricks://adb-1.net:443/default;httpPath=/sql/1.0/warehouses/abc"},
				{"catalog", "main"}, {"schema", "sales"}, {"token", "ENGINE_SECRET"}}, swept: warehouseKeys},
			{name: "Warehouse.dev", indent: "    ", keys: [][2]string{{"Name", "Snowflake"}, {"account", "myorg-acct"}, {"user", "loader"},
				{"database", "ANALYTICS"}, {"schema", "PUBLIC"}, {"warehouse", "WH"}, {"token", "ENGINE_SECRET"}}, swept: warehouseKeys},
		}},
		{4, []block{{name: "Cloning", indent: "  ", keys: [][2]string{{"Enabled", "true"}}, swept: cloningKeys}}},
		{5, []block{{name: "Docs_site", indent: "  ", keys: [][2]string{{"Output", "docs"}}, swept: docsSiteKeys}}},
		{6, []block{
			{name: "Notifications", indent: "  ", keys: [][2]string{{"Retries", "1"}},
				swept: slices.DeleteFunc(slices.Clone(notificationsKeys), func(k string) bool { return k == "Channels" })},
			{name: "Notifications.Channels.pager", indent: "      ", keys: [][2]string{{"kind", "webhook"}, {"url", "HOOK_URL"}}, swept: channelKeys},
		}},
	}
	// The Email block's settings are swept inside Orchestration.
	email := block{name: "Orchestration.Email", indent: "    ",
		keys:  [][2]string{{"host", "smtp.example.com"}, {"port", "587"}, {"from_address", "etl@example.com"}},
		swept: emailKeys}
	base := []string{secretsEnv, orchLocal, engineSQLite, warehouseDuck, "", "", ""}
	dir := t.TempDir()
	tried, refused := 0, 0
	var value string
	try := func(file, where string) {
		l := &loader{file: dir + "/" + FileName, dir: dir,
			src: source{values: map[string]string{"ENGINE_SECRET": "pw", "HOOK_URL": "https://hooks.example.com/x", "SWEEP_VALUE": value}, describe: "the environment source"}}
		_, err := l.load([]byte(file))
		tried++
		if err == nil {
			return
		}
		refused++
		if strings.Contains(err.Error(), sweepSecret) {
			t.Errorf("%s: the error shows the variable's value: %v", where, err)
		}
	}
	for _, value = range sweepValues {
		for _, s := range sections {
			for _, b := range s.blocks {
				for _, key := range b.swept {
					file := slices.Clone(base)
					file[s.order] = b.text(key, "SWEEP_VALUE")
					try(strings.Join(file, ""), fmt.Sprintf("%s.%s = %q", b.name, key, value))
				}
			}
		}
		for _, key := range email.swept {
			file := slices.Clone(base)
			file[1] = orchLocal + email.text(key, "SWEEP_VALUE")[len("Orchestration:\n"):]
			try(strings.Join(file, ""), fmt.Sprintf("Orchestration.Email.%s = %q", key, value))
		}
	}
	if refused < tried/2 {
		t.Fatalf("only %d of %d files were refused: the sweep does not reach the settings' checks", refused, tried)
	}
}

// TestValuesOfVariablesInMessages: a setting naming a variable where a plain
// value belongs is refused naming the variable, never showing its value; a
// short value is replaced only where it stands alone.
func TestValuesOfVariablesInMessages(t *testing.T) {
	setenv(t, map[string]string{"MAIL_SECRET": "topsecretvalue123", "FOUR": "4"})
	for _, c := range []struct{ orchestration, want string }{
		{"  Mode: local\n  Timezone: MAIL_SECRET\n", ":6: Orchestration.Timezone: must be an IANA time zone name, such as UTC or Europe/Berlin; got '<value of MAIL_SECRET>'"},
		{"  Mode: local\n  Max_parallel_tasks: MAIL_SECRET\n", ":6: Orchestration.Max_parallel_tasks: must be a whole number of at least 1; got '<value of MAIL_SECRET>'"},
		{"  Mode: local\n  Api_address: MAIL_SECRET\n", ":6: Orchestration.Api_address: must be host:port"},
		{"  Mode: local\n  Email:\n    host: h\n    port: MAIL_SECRET\n    from_address: a@b\n",
			":8: Orchestration.Email.port: must be a whole number from 1 to 65535; got '<value of MAIL_SECRET>'"},
		{"  Mode: FOUR\n", ":5: Orchestration.Mode: must be one of local, remote; got '<value of FOUR>'"},
	} {
		_, _, err := loadYAML(t, secretsEnv+"Orchestration:\n"+c.orchestration+engineSQLite)
		wantConfigError(t, err, c.want)
		if err != nil && (strings.Contains(err.Error(), "topsecretvalue123") || strings.Contains(err.Error(), "'4'")) {
			t.Errorf("%q: %v", c.orchestration, err)
		}
	}
}

func TestReplaceWithheld(t *testing.T) {
	t.Parallel()
	l := &loader{}
	l.withhold("4", "FOUR")
	l.withhold(" topsecretvalue123 ", "MAIL_SECRET")
	for in, want := range map[string]string{
		"from 1 to 64; got '4'":                   "from 1 to 64; got '<value of FOUR>'",
		"4x 4":                                    "4x <value of FOUR>",
		"the file a/my-topsecretvalue123.duckdb":  "the file a/my-<value of MAIL_SECRET>.duckdb",
		"the host topsecret:80":                   "the host <value of MAIL_SECRET>:80",
		"topsecr is shorter than a withheld part": "topsecr is shorter than a withheld part",
	} {
		if got := l.replaceWithheld(in); got != want {
			t.Errorf("replaceWithheld(%q) = %q, want %q", in, got, want)
		}
	}
}
