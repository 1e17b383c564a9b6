package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// pgEngine is a PostgreSQL Engine section whose fields are variables.
const pgEngine = `Engine:
  dev:
    jdbc_url: ENGINE_JDBC_URL
    schema: etl
    auth_mode: password
    user: ENGINE_USER
    secret: ENGINE_SECRET
`

func TestVariableOrValue(t *testing.T) {
	setenv(t, map[string]string{
		"ENGINE_JDBC_URL": "jdbc:postgresql://db.example.com/etl",
		"ENGINE_SECRET":   "s3cr3t-value",
		"CT_MAX_TASKS":    " 3 ",
		"CT_TAGS":         "a, b",
		"local":           "remote",
	})
	yml := secretsEnv + `Orchestration:
  Mode: local
  Max_parallel_tasks: CT_MAX_TASKS
  Tags: CT_TAGS
  Email_recipients: [ops@example.com, CT_UNSET_RECIPIENTS]
` + pgEngine
	cfg := mustLoad(t, yml)
	if cfg.Engine.Host != "db.example.com" || cfg.Engine.Port != 5432 || cfg.Engine.Database != "etl" {
		t.Errorf("endpoint %+v; want db.example.com:5432/etl from ENGINE_JDBC_URL", cfg.Engine.Endpoint)
	}
	if cfg.Engine.User != "ENGINE_USER" {
		t.Errorf("user %q; an unset variable name is used as written", cfg.Engine.User)
	}
	if cfg.Orchestration.Mode != "remote" {
		t.Errorf("Mode %q; a set variable named like the value wins", cfg.Orchestration.Mode)
	}
	if cfg.Orchestration.MaxParallelTasks != 3 {
		t.Errorf("Max_parallel_tasks %d; want 3 from the variable, typed", cfg.Orchestration.MaxParallelTasks)
	}
	if want := []string{"a", "b"}; !reflect.DeepEqual(cfg.Orchestration.Tags, want) {
		t.Errorf("Tags %q; want %q", cfg.Orchestration.Tags, want)
	}
	if want := []string{"ops@example.com", "CT_UNSET_RECIPIENTS"}; !reflect.DeepEqual(cfg.Orchestration.EmailRecipients, want) {
		t.Errorf("Email_recipients %q; want %q (resolved item by item)", cfg.Orchestration.EmailRecipients, want)
	}
	if cfg.Engine.SecretVar != "ENGINE_SECRET" {
		t.Errorf("SecretVar %q", cfg.Engine.SecretVar)
	}
}

func TestProfileSpecificVariables(t *testing.T) {
	setenv(t, map[string]string{
		"ENGINE_JDBC_URL":      "jdbc:postgresql://plain.example.com/etl",
		"ENGINE_PROD_JDBC_URL": "jdbc:postgresql://prod.example.com/etl",
		"ENGINE_SECRET":        "plain-secret",
		"ENGINE_PROD_SECRET":   "prod-secret",
		"CT_PROD_MODE":         "remote",
		"MAIL_PROD_FROM":       "prod@example.com",
	})
	yml := "Secrets:\n  Source_type: environment\n  Profile: prod\n" + `Orchestration:
  Mode: CT_MODE
  prod:
    Email:
      host: smtp.example.com
      port: 25
      from_address: MAIL_FROM
` + strings.Replace(pgEngine, "dev:", "prod:", 1)
	cfg := mustLoad(t, yml)
	if cfg.Engine.Host != "prod.example.com" {
		t.Errorf("host %q; ENGINE_PROD_JDBC_URL wins over ENGINE_JDBC_URL", cfg.Engine.Host)
	}
	if cfg.Engine.SecretVar != "ENGINE_PROD_SECRET" {
		t.Errorf("SecretVar %q; want ENGINE_PROD_SECRET", cfg.Engine.SecretVar)
	}
	if cfg.Orchestration.Mode != "remote" {
		t.Errorf("Mode %q; CT_PROD_MODE applies to Orchestration settings", cfg.Orchestration.Mode)
	}
	if cfg.Orchestration.Email.FromAddress != "prod@example.com" {
		t.Errorf("from_address %q; the _FROM suffix matches from_address", cfg.Orchestration.Email.FromAddress)
	}
}

func TestProfileVariableNames(t *testing.T) {
	cases := []struct{ name, profile, field, want string }{
		{"ENGINE_SECRET", "prod", "secret", "ENGINE_PROD_SECRET"},
		{"ENGINE_PROD_SECRET", "prod", "secret", "ENGINE_PROD_SECRET"},
		{"ENGINE_JDBC_URL", "dev", "jdbc_url", "ENGINE_DEV_JDBC_URL"},
		{"MAIL_FROM", "uat", "from_address", "MAIL_UAT_FROM"},
		{"MAIL_FROM_ADDRESS", "uat", "from_address", "MAIL_UAT_FROM_ADDRESS"},
		{"PASSWORD", "prod", "secret", ""},
		{"ENGINE_SECRET", "", "secret", ""},
		{"engine_secret", "prod", "secret", "engine_PROD_secret"},
	}
	for _, c := range cases {
		if got := profileVariable(c.name, c.profile, c.field); got != c.want {
			t.Errorf("profileVariable(%q, %q, %q) = %q; want %q", c.name, c.profile, c.field, got, c.want)
		}
	}
}

func TestSecretRules(t *testing.T) {
	const value = "Sup3r-S3cret!"
	cases := []struct {
		name   string
		env    map[string]string
		secret string
		want   []string
	}{
		{"a literal value is refused without echoing it", nil, value,
			[]string{":12: Engine.dev.secret: must be the name of a variable holding the secret"}},
		{"an unset variable names both candidates and a near name", map[string]string{"ENGINE_SECRT": value}, "ENGINE_SECRET",
			[]string{":12: Engine.dev.secret: names the secret variable 'ENGINE_DEV_SECRET' or 'ENGINE_SECRET', which is not set in the environment source; did you mean ENGINE_SECRT?"}},
		{"a blank variable is refused", map[string]string{"ENGINE_SECRET": "  "}, "ENGINE_SECRET",
			[]string{"the secret variable ENGINE_SECRET in the environment source is empty"}},
		{"a number is refused", nil, "12345", []string{"must be the name of a variable"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			setenv(t, c.env)
			yml := secretsEnv + orchLocal + fmt.Sprintf(`Engine:
  dev:
    jdbc_url: jdbc:postgresql://db/etl
    schema: etl
    auth_mode: password
    user: etl
    secret: %s
`, c.secret)
			_, _, err := loadYAML(t, yml)
			wantConfigError(t, err, c.want...)
			if err != nil && strings.Contains(err.Error(), value) {
				t.Errorf("the error shows the secret value: %v", err)
			}
		})
	}
}

func TestCredentialsInURLsAreRefusedWithoutTheValue(t *testing.T) {
	const value = "hunter2-xyz"
	for _, key := range []string{"password", "PWD", "passwd", "token", "Access_Token", "secret", "private_key_file_pwd"} {
		t.Run(key, func(t *testing.T) {
			yml := secretsEnv + orchLocal + "Engine:\n  dev:\n    jdbc_url: jdbc:postgresql://db/etl?sslmode=require&" + key + "=" + value +
				"\n    schema: etl\n    auth_mode: password\n    user: u\n    secret: X\n"
			_, _, err := loadYAML(t, yml)
			wantConfigError(t, err, ":8: Engine.dev.jdbc_url: contains the credential query key '"+key+"'")
			if err != nil && strings.Contains(err.Error(), value) {
				t.Errorf("the error shows the value: %v", err)
			}
		})
	}
	t.Run("user and password before the host", func(t *testing.T) {
		yml := secretsEnv + orchLocal + "Engine:\n  dev:\n    jdbc_url: jdbc:postgresql://etl:" + value + "@db/etl\n    schema: etl\n"
		_, _, err := loadYAML(t, yml)
		wantConfigError(t, err, "must not carry a user or password before the host")
		if err != nil && strings.Contains(err.Error(), value) {
			t.Errorf("the error shows the value: %v", err)
		}
	})
}

func TestSecretValueNeverInConfigOutput(t *testing.T) {
	const value = "never-print-me-42"
	setenv(t, map[string]string{"ENGINE_SECRET": value, "ENGINE_JDBC_URL": "jdbc:postgresql://db.example.com/etl"})
	cfg := mustLoad(t, secretsEnv+orchLocal+pgEngine)
	for _, format := range []string{"%v", "%+v", "%#v"} {
		if out := fmt.Sprintf(format, cfg); strings.Contains(out, value) {
			t.Errorf("fmt %s of the config shows the secret value", format)
		}
	}
	if strings.Contains(cfg.Engine.DSN(), value) || strings.Contains(cfg.Engine.RedactedURL(), value) {
		t.Errorf("DSN or URL shows the secret value")
	}
	got, err := cfg.Secret("ENGINE_SECRET")
	if err != nil || got != value {
		t.Fatalf("Secret = %q, %v; want the value", got, err)
	}
}

func TestSecretIsReadAgainEachTime(t *testing.T) {
	setenv(t, map[string]string{"ENGINE_SECRET": "first", "ENGINE_JDBC_URL": "jdbc:postgresql://db.example.com/etl"})
	cfg := mustLoad(t, secretsEnv+orchLocal+pgEngine)
	t.Setenv("ENGINE_SECRET", "second")
	if got, err := cfg.Secret("ENGINE_SECRET"); err != nil || got != "second" {
		t.Errorf("Secret = %q, %v; want the new value", got, err)
	}
	t.Setenv("ENGINE_SECRET", "")
	_, err := cfg.Secret("ENGINE_SECRET")
	wantConfigError(t, err, "secret variable ENGINE_SECRET in the environment source is empty")
	os.Unsetenv("ENGINE_SECRET")
	_, err = cfg.Secret("ENGINE_SECRET")
	wantConfigError(t, err, "'ENGINE_SECRET' not found")
}

func TestEnvFileSource(t *testing.T) {
	const value = "file-secret-9"
	t.Setenv("FILE_ONLY_SECRET", "from-the-environment")
	t.Setenv("CT_ENV_PROFILE", "prod")
	dotenv := "\uFEFF# secrets for the test\n" +
		"export ENGINE_SECRET='" + value + "'\n" +
		"CT_ENV_PROFILE = \"dev\"\n" +
		"\n" +
		"not a pair\n" +
		"EMPTY_QUOTED=\"\"\n" +
		"CT_URL=jdbc:postgresql://file.example.com:6543/etl?sslmode=require\n"
	yml := `Secrets:
  Source_type: file
  Path: secrets/.env
  Profile: CT_ENV_PROFILE
` + orchLocal + `Engine:
  dev:
    jdbc_url: CT_URL
    schema: etl
    auth_mode: password
    user: etl
    secret: ENGINE_SECRET
`
	dir := writeFiles(t, map[string]string{FileName: yml, "secrets/.env": dotenv})
	cfg, err := Load(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Secrets.SourceType != "file" || cfg.Secrets.Path != filepath.Join(dir, "secrets", ".env") {
		t.Errorf("Secrets = %+v", cfg.Secrets)
	}
	if cfg.Secrets.Profile != "dev" || cfg.Engine.Profile != "dev" {
		t.Errorf("profile %q; want dev from the file, not the environment", cfg.Secrets.Profile)
	}
	if cfg.Engine.Host != "file.example.com" || cfg.Engine.Port != 6543 || cfg.Engine.Params["sslmode"] != "require" {
		t.Errorf("engine endpoint %+v", cfg.Engine.Endpoint)
	}
	if got, err := cfg.Secret("ENGINE_SECRET"); err != nil || got != value {
		t.Errorf("Secret = %q, %v", got, err)
	}
	_, err = cfg.Secret("FILE_ONLY_SECRET")
	wantConfigError(t, err, "'FILE_ONLY_SECRET' not found in the file source")

	values := parseEnvFile([]byte(dotenv))
	if v, ok := values["EMPTY_QUOTED"]; !ok || v != "" {
		t.Errorf("EMPTY_QUOTED = %q, %v", v, ok)
	}
	if _, ok := values["not a pair"]; ok || len(values) != 4 {
		t.Errorf("parsed %d values: %v", len(values), values)
	}
}

func TestSecretsSectionRules(t *testing.T) {
	cases := []errorCase{
		{"Path refused with environment", "Secrets:\n  Source_type: environment\n  Path: .env\n" + orchLocal + engineSQLite,
			":3: Secrets.Path: is only read with Source_type: file"},
		{"Path required with file", "Secrets:\n  Source_type: file\n" + orchLocal + engineSQLite,
			":1: Secrets: needs Path"},
		{"unreadable file", "Secrets:\n  Source_type: file\n  Path: missing.env\n" + orchLocal + engineSQLite,
			":3: Secrets.Path: could not read the secrets file"},
		{"bad source type", "Secrets:\n  Source_type: vault\n" + orchLocal + engineSQLite,
			":2: Secrets.Source_type: must be one of environment, file; got 'vault'"},
		{"source type required", "Secrets:\n  Profile: dev\n" + orchLocal + engineSQLite,
			":1: Secrets: needs Source_type"},
	}
	checkErrors(t, asIs, cases)
	t.Run("Source_type comes from the process environment", func(t *testing.T) {
		t.Setenv("CT_SOURCE", "FILE")
		t.Setenv("CT_DOTENV", "vars.env")
		yml := "Secrets:\n  Source_type: CT_SOURCE\n  Path: CT_DOTENV\n" + orchLocal + engineSQLite
		dir := writeFiles(t, map[string]string{FileName: yml, "vars.env": "A=b\n"})
		cfg, err := Load(filepath.Join(dir, FileName))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Secrets.SourceType != "file" || cfg.Secrets.Path != filepath.Join(dir, "vars.env") {
			t.Errorf("Secrets = %+v", cfg.Secrets)
		}
	})
}

func TestSettingsForDoctor(t *testing.T) {
	setenv(t, map[string]string{"ENGINE_JDBC_URL": "jdbc:postgresql://db.example.com/etl", "ENGINE_SECRET": "x"})
	cfg := mustLoad(t, secretsEnv+orchLocal+pgEngine)
	fromVars, asWritten := cfg.SettingCounts()
	// From variables: jdbc_url, secret. As written: Source_type, Profile,
	// Mode, schema, auth_mode, user.
	if fromVars != 2 || asWritten != 6 {
		t.Errorf("counts %d from variables, %d as written; want 2 and 6: %+v", fromVars, asWritten, cfg.Settings)
	}
	want := []string{"Engine.dev.user is 'ENGINE_USER': no variable of that name is set in the environment source, so the text itself is the value"}
	if got := cfg.AsWrittenWarnings(); !reflect.DeepEqual(got, want) {
		t.Errorf("warnings %q; want %q", got, want)
	}
	for _, s := range cfg.Settings {
		if s.Path == "Engine.dev.user" && s.Line != 11 {
			t.Errorf("Engine.dev.user on line %d; want 11", s.Line)
		}
	}
}

func TestBadValueUsedAsWrittenIsExplained(t *testing.T) {
	t.Setenv("CT_ORCH_MODES", "local")
	yml := secretsEnv + "Orchestration:\n  Mode: CT_ORCH_MODE\n" + engineSQLite
	_, _, err := loadYAML(t, yml)
	wantConfigError(t, err,
		":5: Orchestration.Mode: must be one of local, remote; got 'CT_ORCH_MODE'",
		"no variable named CT_ORCH_MODE is set in the environment source, so the text was used as written; did you mean CT_ORCH_MODES?")
	if strings.Contains(err.Error(), "=local") {
		t.Errorf("the hint shows a value: %v", err)
	}
}

func TestLoadForChecksKeepsAnUnsetSecretForDoctor(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "craft-connector.yml")
	os.WriteFile(path, []byte("Secrets:\n  Source_type: environment\n  Profile: dev\nOrchestration:\n  Mode: local\nEngine:\n  dev:\n    jdbc_url: jdbc:postgresql://h/db\n    schema: public\n    auth_mode: password\n    user: u\n    secret: DOCTOR_UNSET_SECRET\n"), 0o644)
	if _, err := Load(path); err == nil {
		t.Fatal("Load accepted an unset secret")
	}
	cfg, err := LoadForChecks(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Engine.SecretVar != "DOCTOR_UNSET_SECRET" {
		t.Fatalf("secret variable %q", cfg.Engine.SecretVar)
	}
	if _, err := cfg.Secret(cfg.Engine.SecretVar); err == nil || !strings.Contains(err.Error(), "DOCTOR_UNSET_SECRET") {
		t.Fatalf("Secret: %v", err)
	}
}
