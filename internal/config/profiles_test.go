package config

import (
	"path/filepath"
	"testing"
)

const twoEngineProfiles = `Engine:
  schema: main
  dev:
    jdbc_url: jdbc:sqlite:dev.db
  prod:
    jdbc_url: jdbc:sqlite:prod.db
    schema: prod_meta
`

func TestProfileSelection(t *testing.T) {
	cases := []struct {
		name        string
		yml         string
		env         map[string]string
		wantProfile string
		wantFile    string
	}{
		{"Secrets.Profile selects", "Secrets:\n  Source_type: environment\n  Profile: prod\n" + orchLocal + twoEngineProfiles,
			nil, "prod", "prod.db"},
		{"section Profile beats Secrets.Profile", secretsEnv + orchLocal + twoEngineProfiles[:8] + "  Profile: prod\n" + twoEngineProfiles[8:],
			nil, "prod", "prod.db"},
		{"a single block needs no selection", "Secrets:\n  Source_type: environment\n" + orchLocal + engineSQLite,
			nil, "dev", "engine.db"},
		{"the environment never switches the profile by itself", secretsEnv + orchLocal + twoEngineProfiles,
			map[string]string{"ETL_CRAFT_PROFILE": "prod"}, "dev", "dev.db"},
		{"a Profile naming a variable takes its value", "Secrets:\n  Source_type: environment\n  Profile: ETL_CRAFT_PROFILE\n" + orchLocal + twoEngineProfiles,
			map[string]string{"ETL_CRAFT_PROFILE": "prod"}, "prod", "prod.db"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			setenv(t, c.env)
			cfg := mustLoad(t, c.yml)
			if cfg.Engine.Profile != c.wantProfile || filepath.Base(cfg.Engine.SQLitePath) != c.wantFile {
				t.Errorf("profile %q file %q; want %q %q", cfg.Engine.Profile, cfg.Engine.SQLitePath, c.wantProfile, c.wantFile)
			}
		})
	}
}

func TestSharedDefaultsAndOverrides(t *testing.T) {
	cfg := mustLoad(t, secretsEnv+orchLocal+twoEngineProfiles)
	if cfg.Engine.Schema != "main" {
		t.Errorf("dev schema %q; want the shared main", cfg.Engine.Schema)
	}
	cfg = mustLoad(t, "Secrets:\n  Source_type: environment\n  Profile: prod\n"+orchLocal+twoEngineProfiles)
	if cfg.Engine.Schema != "prod_meta" {
		t.Errorf("prod schema %q; want the block's prod_meta", cfg.Engine.Schema)
	}
	yml := secretsEnv + `Orchestration:
  Mode: local
  Max_parallel_tasks: 4
  dev:
    Max_parallel_tasks: 2
  prod:
    Mode: remote
` + engineSQLite
	cfg = mustLoad(t, yml)
	if o := cfg.Orchestration; o.Profile != "dev" || o.MaxParallelTasks != 2 || o.Mode != "local" {
		t.Errorf("Orchestration = %+v; want profile dev, 2 tasks, local", o)
	}
}

func TestProfileErrors(t *testing.T) {
	cases := []errorCase{
		{"several blocks none selected", "Secrets:\n  Source_type: environment\n" + orchLocal + twoEngineProfiles,
			":5: Engine: has profiles dev, prod but none is selected; set Engine.Profile or Secrets.Profile"},
		{"missing profile lists the others and suggests", "Secrets:\n  Source_type: environment\n  Profile: prd\n" + orchLocal + twoEngineProfiles,
			":3: Secrets.Profile: Engine has no profile 'prd' (it has dev, prod); did you mean prod?"},
		{"missing profile named by the section", secretsEnv + orchLocal + "Engine:\n  Profile: uat\n  dev:\n    jdbc_url: jdbc:sqlite:a.db\n    schema: main\n",
			":7: Engine.Profile: Engine has no profile 'uat' (it has dev)"},
		{"a variable-like profile that is not set is explained", "Secrets:\n  Source_type: environment\n  Profile: MY_TIER_VARIABLE\n" + orchLocal + twoEngineProfiles,
			"no variable named MY_TIER_VARIABLE is set in the environment source, so the text was used as written"},
		{"Engine without a profile block", secretsEnv + orchLocal + "Engine:\n  jdbc_url: jdbc:sqlite:a.db\n  schema: main\n",
			":6: Engine: needs at least one profile block"},
		{"Cloning blocks follow Secrets.Profile too", minimal + "Cloning:\n  prod:\n    Enabled: true\n",
			"Cloning has no profile 'dev' (it has prod)"},
	}
	checkErrors(t, asIs, cases)
}

func TestOnlyTheActiveProfileIsParsed(t *testing.T) {
	yml := secretsEnv + orchLocal + `Engine:
  dev:
    jdbc_url: jdbc:sqlite:dev.db
    schema: main
  prod:
    jdbc_url: jdbc:postgresql://db.internal/etl
    schema: etl
    auth_mode: password
    user: etl
    secret: NO_SUCH_PROD_SECRET_VARIABLE
    not_a_key: 1
`
	cfg := mustLoad(t, yml)
	if cfg.Engine.Profile != "dev" {
		t.Errorf("profile %q; want dev", cfg.Engine.Profile)
	}
}
