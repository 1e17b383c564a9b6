package config

import (
	"path/filepath"
	"reflect"
	"testing"
)

// withOrchestration returns a file whose Orchestration section is body
// (indented keys) after Mode: local.
func withOrchestration(body string) string {
	return secretsEnv + "Orchestration:\n  Mode: local\n" + body + engineSQLite
}

func TestOrchestrationSettings(t *testing.T) {
	cfg := mustLoad(t, withOrchestration(`  Name: Airflow
  Api_address: "[::1]:0"
  Log_dir: /var/log/etl
  Task_timeout_seconds: 0
  Max_parallel_tasks: "16"
  Shutdown_grace_seconds: 5
  Timezone: Europe/Berlin
  Enforce_sla: YES
  Gate_wait_minutes: 0
  Dependency_gates: Warn
  Global_dag: "1"
  Catchup: false
  Tags: [finance, daily]
  Retries: 3
  Retry_delay_minutes: 10
  Depends_on_past: "no"
  Email_on_failure: true
  Email_recipients: a@example.com, b@example.com
  Allow_schedule: false
  Metrics_public: true
  Traces_endpoint: http://collector:4318
`))
	o := cfg.Orchestration
	f, tr := false, true
	three, ten := 3, 10
	want := Orchestration{
		Profile: "dev", Mode: "local", Name: "Airflow", APIAddress: "[::1]:0", LogDir: "/var/log/etl",
		TaskTimeoutSeconds: 0, MaxParallelTasks: 16, ShutdownGraceSeconds: 5,
		Timezone: "Europe/Berlin", Location: o.Location, EnforceSLA: true, GateWaitMinutes: 0,
		DependencyGates: "warn", GlobalDAG: true, Catchup: &f, Tags: []string{"finance", "daily"},
		Retries: &three, RetryDelayMinutes: &ten, DependsOnPast: &f, EmailOnFailure: &tr,
		EmailRecipients: []string{"a@example.com", "b@example.com"}, AllowSchedule: false,
		MetricsPublic: true, TracesEndpoint: "http://collector:4318",
	}
	if !reflect.DeepEqual(o, want) {
		t.Errorf("Orchestration\n got %+v\nwant %+v", o, want)
	}
	if o.Location.String() != "Europe/Berlin" {
		t.Errorf("Location %v", o.Location)
	}
}

func TestHomeFolderPaths(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	cfg := mustLoad(t, withOrchestration("  Log_dir: ~/etl-logs\n"))
	if cfg.Orchestration.LogDir != filepath.Join(home, "etl-logs") {
		t.Errorf("LogDir %q; want it under %s", cfg.Orchestration.LogDir, home)
	}
}

func TestOrchestrationErrors(t *testing.T) {
	cases := []errorCase{
		{"negative number", "  Task_timeout_seconds: -1\n", ":6: Orchestration.Task_timeout_seconds: must be a whole number of at least 0; got '-1'"},
		{"zero parallel tasks", "  Max_parallel_tasks: 0\n", "Orchestration.Max_parallel_tasks: must be a whole number of at least 1; got '0'"},
		{"boolean as number", "  Max_parallel_tasks: true\n", "must be a whole number of at least 1; got 'true'"},
		{"float as number", "  Retries: 1.5\n", "Orchestration.Retries: must be a whole number of at least 0; got '1.5'"},
		{"superscript digits", "  Retries: \"²\"\n", "Orchestration.Retries: must be a whole number"},
		{"other digits", "  Retries: \"٣\"\n", "Orchestration.Retries: must be a whole number"},
		{"hex number", "  Retries: 0x10\n", "Orchestration.Retries: must be a whole number"},
		{"huge number", "  Retries: 99999999999999999999\n", "Orchestration.Retries: must be a whole number"},
		{"bad boolean", "  Enforce_sla: maybe\n", ":6: Orchestration.Enforce_sla: must be true or false; got 'maybe'"},
		{"bad gate policy", "  Dependency_gates: loose\n", "must be one of enforce, warn, off; got 'loose'"},
		{"bad timezone", "  Timezone: Mars/Olympus\n", ":6: Orchestration.Timezone: must be an IANA time zone name"},
		{"Local is not a zone", "  Timezone: Local\n", "must be an IANA time zone name"},
		{"api address without port", "  Api_address: localhost\n", "Orchestration.Api_address: must be host:port"},
		{"api address with path", "  Api_address: localhost:80/x\n", "must be host:port"},
		{"api address with user", "  Api_address: me@localhost:80\n", "must be host:port"},
		{"api address port too big", "  Api_address: localhost:70000\n", "must be host:port"},
		{"api address bare ipv6", "  Api_address: ::1:80\n", "must be host:port"},
		{"list item not a value", "  Tags:\n    - [a]\n", ":7: Orchestration.Tags[0]: must be a single value, not a list"},
		{"a mapping where a value belongs", "  Timezone: {a: b}\n", ":6: Orchestration.Timezone: Timezone is a setting, so it takes a single value"},
		{"a lower-case setting is not a profile", "  email:\n    host: x\n", "Orchestration.email: Email is a setting"},
		{"empty value", "  Name: \"\"\n", "Orchestration.Name: must not be empty"},
		{"metrics public not a boolean", "  Metrics_public: open\n", ":6: Orchestration.Metrics_public: must be true or false; got 'open'"},
		{"traces endpoint not a URL", "  Traces_endpoint: collector:4318\n", ":6: Orchestration.Traces_endpoint: must be the http or https URL of an OTLP/HTTP receiver"},
		{"traces endpoint with a query", "  Traces_endpoint: http://collector:4318/?a=b\n", "Orchestration.Traces_endpoint: must be the http or https URL"},
	}
	checkErrors(t, withOrchestration, cases)
	// A URL's password is not echoed.
	checkErrors(t, withOrchestration, []errorCase{{"traces endpoint with a user", "  Traces_endpoint: https://me:s3cret@collector:4318\n",
		":6: Orchestration.Traces_endpoint: must not hold a user or password; give the receiver's credentials in OTEL_EXPORTER_OTLP_HEADERS"}}, "s3cret")
	t.Run("mode required", func(t *testing.T) {
		_, _, err := loadYAML(t, secretsEnv+"Orchestration:\n  Name: x\n"+engineSQLite)
		wantConfigError(t, err, ":4: Orchestration: needs Mode: one of local, remote")
	})
	t.Run("mode invalid", func(t *testing.T) {
		_, _, err := loadYAML(t, secretsEnv+"Orchestration:\n  Mode: hybrid\n"+engineSQLite)
		wantConfigError(t, err, "Orchestration.Mode: must be one of local, remote; got 'hybrid'")
	})
	t.Run("gates relaxed in remote mode", func(t *testing.T) {
		_, _, err := loadYAML(t, secretsEnv+"Orchestration:\n  Mode: remote\n  Dependency_gates: off\n"+engineSQLite)
		wantConfigError(t, err, ":6: Orchestration.Dependency_gates: is off, but Mode is remote")
	})
}

func TestEmailBlock(t *testing.T) {
	t.Setenv("MAIL_SECRET", "mail-pass")
	t.Run("smtp with password", func(t *testing.T) {
		cfg := mustLoad(t, withOrchestration(`  Email:
    host: smtp.example.com
    port: 587
    from_address: etl@example.com
    from_name: ETL
    auth_mode: password
    user: etl
    secret: MAIL_SECRET
    ca_file: certs/ca.pem
`))
		e := cfg.Orchestration.Email
		want := Email{Transport: "smtp", Host: "smtp.example.com", Port: 587, FromAddress: "etl@example.com", FromName: "ETL",
			AuthMode: "password", User: "etl", SecretVar: "MAIL_SECRET", TLSMode: "starttls",
			CAFile: filepath.Join(cfg.ProjectDir, "certs", "ca.pem")}
		if *e != want {
			t.Errorf("Email\n got %+v\nwant %+v", *e, want)
		}
	})
	t.Run("use_tls false means none", func(t *testing.T) {
		cfg := mustLoad(t, withOrchestration("  Email:\n    host: relay\n    port: 25\n    from_address: a@b\n    use_tls: false\n"))
		if e := cfg.Orchestration.Email; e.TLSMode != "none" || e.AuthMode != "none" {
			t.Errorf("Email %+v; want tls none, auth none", e)
		}
	})
	t.Run("sendmail", func(t *testing.T) {
		cfg := mustLoad(t, withOrchestration("  Email:\n    transport: sendmail\n    from_address: a@b\n    sendmail_path: bin/sendmail\n"))
		if e := cfg.Orchestration.Email; e.SendmailPath != filepath.Join(cfg.ProjectDir, "bin", "sendmail") || e.Transport != "sendmail" {
			t.Errorf("Email %+v", e)
		}
		cfg = mustLoad(t, withOrchestration("  Email:\n    transport: sendmail\n    from_address: a@b\n"))
		if e := cfg.Orchestration.Email; e.SendmailPath != DefaultSendmailPath {
			t.Errorf("SendmailPath %q; want the default", e.SendmailPath)
		}
	})
	t.Run("oauth", func(t *testing.T) {
		cfg := mustLoad(t, withOrchestration(`  Email:
    host: smtp.office365.com
    port: 587
    from_address: a@b
    auth_mode: oauth
    user: a@b
    client_id: app
    secret: MAIL_SECRET
    token_url: https://login.example.com/token
    scope: https://outlook.office365.com/.default
    tls_mode: starttls
`))
		if e := cfg.Orchestration.Email; e.ClientID != "app" || e.TokenURL == "" || e.Scope == "" || e.SecretVar != "MAIL_SECRET" {
			t.Errorf("Email %+v", e)
		}
	})

	cases := []errorCase{
		{"smtp-only keys with sendmail", "    transport: sendmail\n    from_address: a@b\n    host: x\n    port: 25\n",
			"Orchestration.Email: sends through sendmail, so host, port would be ignored"},
		{"sendmail_path with smtp", "    host: x\n    port: 25\n    from_address: a@b\n    sendmail_path: /bin/sm\n",
			"Orchestration.Email.sendmail_path: applies only with transport: sendmail"},
		{"host required", "    port: 25\n    from_address: a@b\n", ":6: Orchestration.Email: needs host"},
		{"port required", "    host: x\n    from_address: a@b\n", "Orchestration.Email: needs port"},
		{"port range", "    host: x\n    port: 0\n    from_address: a@b\n", "Orchestration.Email.port: must be a whole number from 1 to 65535; got '0'"},
		{"port range high", "    host: x\n    port: 65536\n    from_address: a@b\n", "from 1 to 65535; got '65536'"},
		{"from_address required", "    host: x\n    port: 25\n", "Orchestration.Email: needs from_address"},
		{"password needs user", "    host: x\n    port: 25\n    from_address: a@b\n    auth_mode: password\n    secret: MAIL_SECRET\n",
			"Orchestration.Email: needs user for auth_mode password"},
		{"password needs secret", "    host: x\n    port: 25\n    from_address: a@b\n    auth_mode: password\n    user: u\n",
			"Orchestration.Email: needs secret (the name of the variable holding the secret) for auth_mode password"},
		{"oauth needs token_url", "    host: x\n    port: 25\n    from_address: a@b\n    auth_mode: oauth\n    user: u\n    client_id: c\n    secret: MAIL_SECRET\n",
			"needs token_url for auth_mode oauth"},
		{"unknown auth mode", "    host: x\n    port: 25\n    from_address: a@b\n    auth_mode: kerberos\n",
			"Orchestration.Email.auth_mode: must be one of none, password, oauth; got 'kerberos'"},
		{"tls_mode disagrees with use_tls", "    host: x\n    port: 25\n    from_address: a@b\n    use_tls: true\n    tls_mode: none\n",
			"Orchestration.Email.tls_mode: is none, which disagrees with use_tls: true"},
		{"ca_file without TLS", "    host: x\n    port: 25\n    from_address: a@b\n    tls_mode: none\n    ca_file: ca.pem\n",
			"Orchestration.Email.ca_file: would be ignored with tls_mode none"},
		{"bad tls mode", "    host: x\n    port: 25\n    from_address: a@b\n    tls_mode: tls\n",
			"must be one of none, starttls, ssl; got 'tls'"},
		{"unknown key", "    host: x\n    port: 25\n    from_adress: a@b\n",
			"Orchestration.Email: unknown key 'from_adress' (did you mean from_address?)"},
	}
	checkErrors(t, func(body string) string { return withOrchestration("  Email:\n" + body) }, cases, "mail-pass")
	_, _, err := loadYAML(t, withOrchestration("  Email: smtp\n"))
	wantConfigError(t, err, ":6: Orchestration.Email: must be a mapping")
}

func TestEmailInAProfileBlockReplacesTheSectionOne(t *testing.T) {
	cfg := mustLoad(t, secretsEnv+`Orchestration:
  Mode: local
  Email:
    host: shared.example.com
    port: 25
    from_address: shared@example.com
  dev:
    Email:
      transport: sendmail
      from_address: dev@example.com
`+engineSQLite)
	if e := cfg.Orchestration.Email; e.Transport != "sendmail" || e.FromAddress != "dev@example.com" {
		t.Errorf("Email %+v; want dev's own block", e)
	}
}
