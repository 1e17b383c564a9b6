-- Actors and write guards.
--
-- Runs record who started and ended them; attempts, interventions and pauses
-- record the kind of actor that asked for them. The columns are added without
-- defaults, so historical rows keep them empty (who did them is not known,
-- and nothing is invented); the defaults that attribute new rows to the
-- transaction's actor are set at the end.
--
-- AUD_ACTIONS records every state-changing command; AUD_METADATA_CHANGES
-- records every CFG_ row change. The stamping trigger now records the
-- etl-craft actor instead of the database user. Once AUD_METADATA_CHANGES
-- exists, the trigger refresh that follows every ENGINE migration gives every
-- CFG_ and AUD_ table its write guard and TRUNCATE guard, and the metadata
-- tables their change capture.

ALTER TABLE AUD_PIPELINES_RUN_LOG ADD COLUMN STARTED_BY VARCHAR;

ALTER TABLE AUD_PIPELINES_RUN_LOG ADD COLUMN STARTED_BY_KIND VARCHAR
    CONSTRAINT ck_aud_pipelines_run_log_started_by_kind
    CHECK (STARTED_BY_KIND IN ('HUMAN', 'SCHEDULE', 'ORCHESTRATOR', 'WORKER', 'SYSTEM'));

ALTER TABLE AUD_PIPELINES_RUN_LOG ADD COLUMN ENDED_BY VARCHAR;

ALTER TABLE AUD_PIPELINES_RUN_LOG ADD COLUMN ENDED_BY_KIND VARCHAR
    CONSTRAINT ck_aud_pipelines_run_log_ended_by_kind
    CHECK (ENDED_BY_KIND IN ('HUMAN', 'SCHEDULE', 'ORCHESTRATOR', 'WORKER', 'SYSTEM'));

ALTER TABLE AUD_TASK_ATTEMPTS ADD COLUMN REQUESTED_BY_KIND VARCHAR
    CONSTRAINT ck_aud_task_attempts_requested_by_kind
    CHECK (REQUESTED_BY_KIND IN ('HUMAN', 'SCHEDULE', 'ORCHESTRATOR', 'WORKER', 'SYSTEM'));

ALTER TABLE AUD_RUN_INTERVENTIONS ADD COLUMN REQUESTED_BY_KIND VARCHAR
    CONSTRAINT ck_aud_run_interventions_requested_by_kind
    CHECK (REQUESTED_BY_KIND IN ('HUMAN', 'SCHEDULE', 'ORCHESTRATOR', 'WORKER', 'SYSTEM'));

ALTER TABLE AUD_PIPELINE_PAUSES ADD COLUMN PAUSED_BY_KIND VARCHAR
    CONSTRAINT ck_aud_pipeline_pauses_paused_by_kind
    CHECK (PAUSED_BY_KIND IN ('HUMAN', 'SCHEDULE', 'ORCHESTRATOR', 'WORKER', 'SYSTEM'));

ALTER TABLE AUD_PIPELINE_PAUSES ADD COLUMN RESUMED_BY_KIND VARCHAR
    CONSTRAINT ck_aud_pipeline_pauses_resumed_by_kind
    CHECK (RESUMED_BY_KIND IN ('HUMAN', 'SCHEDULE', 'ORCHESTRATOR', 'WORKER', 'SYSTEM'));

CREATE TABLE AUD_ACTIONS (
    ACTION_ID       BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    STARTED_AT      TIMESTAMPTZ NOT NULL DEFAULT now(),
    ENDED_AT        TIMESTAMPTZ NOT NULL DEFAULT now(),
    ACTOR           VARCHAR NOT NULL,
    ACTOR_KIND      VARCHAR NOT NULL,
    HOST            VARCHAR NOT NULL,
    COMMAND         VARCHAR NOT NULL,
    ARGUMENTS       JSONB NOT NULL,
    PIPELINE_ID     BIGINT REFERENCES CFG_PIPELINES (PIPELINE_ID),
    PIPELINE_RUN_ID BIGINT REFERENCES AUD_PIPELINES_RUN_LOG (PIPELINE_RUN_ID),
    TASK_ID         BIGINT REFERENCES CFG_TASKS (TASK_ID),
    OUTCOME         VARCHAR NOT NULL,
    EXIT_CODE       INT,
    CONSTRAINT ck_actions_actor_kind
        CHECK (ACTOR_KIND IN ('HUMAN', 'SCHEDULE', 'ORCHESTRATOR', 'WORKER', 'SYSTEM'))
);

CREATE INDEX ix_actions_pipeline ON AUD_ACTIONS (PIPELINE_ID, STARTED_AT);

CREATE TABLE AUD_METADATA_CHANGES (
    CHANGE_ID   BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    CHANGED_AT  TIMESTAMPTZ NOT NULL DEFAULT now(),
    ACTOR       VARCHAR NOT NULL,
    ACTOR_KIND  VARCHAR NOT NULL,
    TABLE_NAME  VARCHAR NOT NULL,
    ROW_KEY     VARCHAR NOT NULL,
    OPERATION   VARCHAR NOT NULL,
    BEFORE_JSON JSONB,
    AFTER_JSON  JSONB,
    MIGRATION   VARCHAR,
    CONSTRAINT ck_metadata_actor_kind
        CHECK (ACTOR_KIND IN ('HUMAN', 'SCHEDULE', 'ORCHESTRATOR', 'WORKER', 'SYSTEM')),
    CONSTRAINT ck_metadata_operation CHECK (OPERATION IN ('INSERT', 'UPDATE', 'DELETE'))
);

CREATE INDEX ix_metadata_changes_table ON AUD_METADATA_CHANGES (TABLE_NAME, CHANGED_AT);

-- Stamps the metadata CFG_ tables: who created a row and when cannot be
-- written by anyone; who changed it last and when are the current actor and
-- the transaction's time. Values a writer supplies are ignored.
CREATE OR REPLACE FUNCTION trg_set_audit_columns() RETURNS trigger
LANGUAGE plpgsql AS $stamp$
BEGIN
    IF TG_OP = 'INSERT' THEN
        NEW.created_by := current_setting('etl_craft.actor');
        NEW.create_date := now();
    ELSE
        NEW.created_by := OLD.created_by;
        NEW.create_date := OLD.create_date;
    END IF;
    NEW.updated_by := current_setting('etl_craft.actor');
    NEW.updated_date := now();
    RETURN NEW;
END
$stamp$;

-- The write guard of every CFG_ and AUD_ table, for row writes and TRUNCATE.
-- A transaction that has not set etl_craft.actor is refused. The append-only
-- tables refuse UPDATE, DELETE and TRUNCATE, and an attempt that reached a
-- terminal status cannot change, unless etl_craft.purpose is 'retention'.
CREATE OR REPLACE FUNCTION etl_craft_guard() RETURNS trigger
LANGUAGE plpgsql AS $guard$
DECLARE
    v_table text := upper(TG_TABLE_NAME);
    v_retention boolean := COALESCE(current_setting('etl_craft.purpose', true), '') = 'retention';
BEGIN
    IF COALESCE(current_setting('etl_craft.actor', true), '') = '' THEN
        RAISE EXCEPTION '% is written only by etl-craft: %', v_table,
            CASE
                WHEN v_table = 'CFG_API_TOKENS' THEN 'manage API tokens with etl-craft token'
                WHEN left(v_table, 4) = 'CFG_' THEN 'change metadata in a project migration and run etl-craft migrate'
                WHEN v_table = 'AUD_TARGET_HASH_VERSION' THEN 'upgrade merge targets with etl-craft rehash'
                WHEN v_table = 'AUD_TARGET_VIEW_STATEMENT' THEN 'etl-craft run records view statements'
                ELSE 'audit rows change only through etl-craft commands such as run, mark and cancel'
            END
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF TG_OP <> 'INSERT' AND NOT v_retention THEN
        IF v_table IN ('AUD_RUN_INTERVENTIONS', 'AUD_ACTIONS', 'AUD_METADATA_CHANGES',
                       'AUD_DEPENDENCY_CONSUMPTION', 'AUD_GATE_DECISIONS') THEN
            RAISE EXCEPTION '% is append-only: its rows are immutable history; add a new row instead', v_table
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        IF v_table = 'AUD_TASK_ATTEMPTS' THEN
            IF TG_OP = 'TRUNCATE' THEN
                RAISE EXCEPTION '% cannot be truncated: terminal attempt rows are immutable', v_table
                    USING ERRCODE = 'insufficient_privilege';
            END IF;
            IF OLD.status NOT IN ('QUEUED', 'CLAIMED', 'RUNNING') THEN
                RAISE EXCEPTION '% row is immutable: the attempt is terminal; queue a new attempt instead', v_table
                    USING ERRCODE = 'insufficient_privilege';
            END IF;
        END IF;
    END IF;
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    RETURN NEW;
END
$guard$;

-- Records a CFG_ row change in AUD_METADATA_CHANGES (of the table's own
-- schema): full before and after images, the primary-key value named by the
-- trigger's argument, the actor and the PROJECT migration, if any. An update
-- that changed nothing is not recorded.
CREATE OR REPLACE FUNCTION etl_craft_metadata_change() RETURNS trigger
LANGUAGE plpgsql AS $change$
DECLARE
    v_before jsonb;
    v_after jsonb;
BEGIN
    IF TG_OP <> 'INSERT' THEN
        v_before := to_jsonb(OLD);
    END IF;
    IF TG_OP <> 'DELETE' THEN
        v_after := to_jsonb(NEW);
    END IF;
    IF TG_OP = 'UPDATE' AND v_before = v_after THEN
        RETURN NULL;
    END IF;
    EXECUTE format(
        'INSERT INTO %I.aud_metadata_changes
             (actor, actor_kind, table_name, row_key, operation, before_json, after_json, migration)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)', TG_TABLE_SCHEMA)
    USING current_setting('etl_craft.actor'),
          current_setting('etl_craft.actor_kind'),
          upper(TG_TABLE_NAME),
          COALESCE(COALESCE(v_after, v_before) ->> TG_ARGV[0], ''),
          TG_OP,
          v_before,
          v_after,
          NULLIF(current_setting('etl_craft.migration', true), '');
    RETURN NULL;
END
$change$;

-- Attributes runs, attempts, interventions and pauses to the actor where the
-- writer left the actor columns NULL; explicit values are kept. Request
-- actors are filled on insert only; ending and resuming actors when the
-- ending or resume time is first set.
CREATE OR REPLACE FUNCTION etl_craft_attribute() RETURNS trigger
LANGUAGE plpgsql AS $attribute$
DECLARE
    v_actor text := current_setting('etl_craft.actor', true);
    v_kind text := current_setting('etl_craft.actor_kind', true);
BEGIN
    IF TG_TABLE_NAME = 'aud_pipelines_run_log' THEN
        IF TG_OP = 'INSERT' THEN
            NEW.started_by := COALESCE(NEW.started_by, v_actor);
            NEW.started_by_kind := COALESCE(NEW.started_by_kind, v_kind);
        END IF;
        IF NEW.end_date IS NOT NULL AND (TG_OP = 'INSERT' OR OLD.end_date IS NULL) THEN
            NEW.ended_by := COALESCE(NEW.ended_by, v_actor);
            NEW.ended_by_kind := COALESCE(NEW.ended_by_kind, v_kind);
        END IF;
    ELSIF TG_TABLE_NAME IN ('aud_task_attempts', 'aud_run_interventions') THEN
        IF TG_OP = 'INSERT' THEN
            NEW.requested_by := COALESCE(NEW.requested_by, v_actor);
            NEW.requested_by_kind := COALESCE(NEW.requested_by_kind, v_kind);
        END IF;
    ELSIF TG_TABLE_NAME = 'aud_pipeline_pauses' THEN
        IF TG_OP = 'INSERT' THEN
            NEW.paused_by_kind := COALESCE(NEW.paused_by_kind, v_kind);
        END IF;
        IF NEW.resumed_at IS NOT NULL AND (TG_OP = 'INSERT' OR OLD.resumed_at IS NULL) THEN
            NEW.resumed_by_kind := COALESCE(NEW.resumed_by_kind, v_kind);
        END IF;
    END IF;
    RETURN NEW;
END
$attribute$;

CREATE TRIGGER trg_attribute_aud_pipelines_run_log
    BEFORE INSERT OR UPDATE ON AUD_PIPELINES_RUN_LOG
    FOR EACH ROW EXECUTE FUNCTION etl_craft_attribute();
CREATE TRIGGER trg_attribute_aud_task_attempts
    BEFORE INSERT OR UPDATE ON AUD_TASK_ATTEMPTS
    FOR EACH ROW EXECUTE FUNCTION etl_craft_attribute();
CREATE TRIGGER trg_attribute_aud_run_interventions
    BEFORE INSERT OR UPDATE ON AUD_RUN_INTERVENTIONS
    FOR EACH ROW EXECUTE FUNCTION etl_craft_attribute();
CREATE TRIGGER trg_attribute_aud_pipeline_pauses
    BEFORE INSERT OR UPDATE ON AUD_PIPELINE_PAUSES
    FOR EACH ROW EXECUTE FUNCTION etl_craft_attribute();

-- From now on new rows are attributed to the transaction's actor.
ALTER TABLE AUD_PIPELINES_RUN_LOG
    ALTER COLUMN STARTED_BY SET DEFAULT current_setting('etl_craft.actor', true),
    ALTER COLUMN STARTED_BY_KIND SET DEFAULT current_setting('etl_craft.actor_kind', true);

ALTER TABLE AUD_TASK_ATTEMPTS
    ALTER COLUMN REQUESTED_BY SET DEFAULT current_setting('etl_craft.actor', true),
    ALTER COLUMN REQUESTED_BY_KIND SET DEFAULT current_setting('etl_craft.actor_kind', true);

ALTER TABLE AUD_RUN_INTERVENTIONS
    ALTER COLUMN REQUESTED_BY_KIND SET DEFAULT current_setting('etl_craft.actor_kind', true);

ALTER TABLE AUD_PIPELINE_PAUSES
    ALTER COLUMN PAUSED_BY_KIND SET DEFAULT current_setting('etl_craft.actor_kind', true);

COMMENT ON TABLE AUD_PIPELINES_RUN_LOG IS
    'One row per pipeline run: status, run key and trigger kind, lease, output revision and who started and ended it.';
