-- etl-craft Engine DB, PostgreSQL: the full current schema.
--
-- init-db runs every statement of this file, then the trigger refresh, in one
-- transaction, in the configured schema (the first schema of search_path;
-- etl-craft never creates schemas). Names are unquoted, so the catalog holds
-- them in lower case.
--
-- The refresh (engine.Tx.RefreshTriggers) creates, on every CFG_ and AUD_
-- table, the write guard trg_actor_guard_<t> and trg_truncate_<t>, and on the
-- metadata CFG_ tables the stamping trigger trg_audit_<t> and the change
-- capture trg_changes_<t>. The functions they call are defined here.
--
-- Every engine transaction starts by setting four transaction-local settings
-- with set_config(..., true): etl_craft.actor, etl_craft.actor_kind,
-- etl_craft.purpose ('' or 'retention') and etl_craft.migration (the PROJECT
-- migration file being applied, or ''). A connection that has not set them
-- cannot write a CFG_ or AUD_ table.

-- ---------------------------------------------------------------------------
-- CFG_: what to run. Rows are retired with ACTIVE_FLAG = 'N', not deleted;
-- codes are unique among active rows only.
-- ---------------------------------------------------------------------------

CREATE TABLE CFG_PIPELINES (
    PIPELINE_ID         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    PIPELINE_CODE       VARCHAR NOT NULL,
    PIPELINE_NAME       VARCHAR NOT NULL,
    DESCRIPTION         VARCHAR,
    RUN_SCHEDULE        VARCHAR,
    SLA_IN_HOURS        NUMERIC,
    REFRESH_TYPE        VARCHAR NOT NULL,
    ACTIVE_FLAG         VARCHAR NOT NULL DEFAULT 'Y',
    PIPELINE_PARAMETERS JSONB,
    CREATED_BY          VARCHAR,
    CREATE_DATE         TIMESTAMPTZ,
    UPDATED_BY          VARCHAR,
    UPDATED_DATE        TIMESTAMPTZ,
    SCHEDULE_TIMEZONE   VARCHAR,
    CATCHUP             VARCHAR(1) NOT NULL DEFAULT 'N'
                        CONSTRAINT ck_schedule_catchup CHECK (CATCHUP IN ('Y', 'N')),
    MAX_CATCHUP_RUNS    INT NOT NULL DEFAULT 1
                        CONSTRAINT ck_schedule_catchup_runs CHECK (MAX_CATCHUP_RUNS > 0),
    OVERLAP_POLICY      VARCHAR NOT NULL DEFAULT 'SKIP'
                        CONSTRAINT ck_schedule_overlap CHECK (OVERLAP_POLICY IN ('SKIP', 'QUEUE')),
    SCHEDULE_START_DATE DATE,
    CONSTRAINT ck_pipelines_code CHECK (PIPELINE_CODE ~ '^[A-Za-z][A-Za-z0-9_]{0,127}$'),
    CONSTRAINT ck_pipelines_refresh_type CHECK (REFRESH_TYPE IN ('FULL', 'INCREMENTAL')),
    CONSTRAINT ck_pipelines_active_flag CHECK (ACTIVE_FLAG IN ('Y', 'N'))
);

CREATE UNIQUE INDEX ux_pipelines_code_active ON CFG_PIPELINES (PIPELINE_CODE) WHERE ACTIVE_FLAG = 'Y';

CREATE TABLE CFG_PIPELINE_DEPENDENCY (
    PIPELINE_DEPENDENCY_ID BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    PIPELINE_ID            BIGINT NOT NULL REFERENCES CFG_PIPELINES (PIPELINE_ID),
    DEPENDS_ON_PIPELINE_ID BIGINT NOT NULL REFERENCES CFG_PIPELINES (PIPELINE_ID),
    DEPENDENCY_TYPE        VARCHAR NOT NULL,
    ACTIVE_FLAG            VARCHAR NOT NULL DEFAULT 'Y',
    CREATED_BY             VARCHAR,
    CREATE_DATE            TIMESTAMPTZ,
    UPDATED_BY             VARCHAR,
    UPDATED_DATE           TIMESTAMPTZ,
    CONSUME_REPAIRS        VARCHAR(1) NOT NULL DEFAULT 'Y',
    CONSTRAINT ck_pipedep_type CHECK (DEPENDENCY_TYPE IN ('SUCCESS', 'FAILURE', 'ALWAYS', 'HAS_DATA')),
    CONSTRAINT ck_pipedep_active_flag CHECK (ACTIVE_FLAG IN ('Y', 'N')),
    CONSTRAINT ck_pipedep_no_self_dep CHECK (PIPELINE_ID <> DEPENDS_ON_PIPELINE_ID),
    CONSTRAINT ck_pipedep_consume_repairs CHECK (CONSUME_REPAIRS IN ('Y', 'N'))
);

CREATE UNIQUE INDEX ux_pipedep_edge_active
    ON CFG_PIPELINE_DEPENDENCY (PIPELINE_ID, DEPENDS_ON_PIPELINE_ID, DEPENDENCY_TYPE)
    WHERE ACTIVE_FLAG = 'Y';
CREATE INDEX ix_pipedep_depends_on ON CFG_PIPELINE_DEPENDENCY (DEPENDS_ON_PIPELINE_ID);

CREATE TABLE CFG_TASKS (
    TASK_ID             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    TASK_CODE           VARCHAR NOT NULL,
    TASK_TYPE           VARCHAR NOT NULL,
    PIPELINE_ID         BIGINT NOT NULL REFERENCES CFG_PIPELINES (PIPELINE_ID),
    HANDLER             VARCHAR NOT NULL,
    RUN_CONDITION       VARCHAR,
    RUN_CONDITION_COUNT INT,
    ACTIVE_FLAG         VARCHAR NOT NULL DEFAULT 'Y',
    CREATED_BY          VARCHAR,
    CREATE_DATE         TIMESTAMPTZ,
    UPDATED_BY          VARCHAR,
    UPDATED_DATE        TIMESTAMPTZ,
    CONSTRAINT ck_tasks_code CHECK (TASK_CODE ~ '^[A-Za-z][A-Za-z0-9_]{0,127}$'),
    CONSTRAINT ck_tasks_task_type CHECK (TASK_TYPE IN ('INGESTION', 'ETL')),
    CONSTRAINT ck_tasks_handler CHECK (HANDLER IN ('PYTHON', 'SQL', 'BUSINESS_RULES', 'EMAIL_ALERT')),
    CONSTRAINT ck_tasks_active_flag CHECK (ACTIVE_FLAG IN ('Y', 'N')),
    CONSTRAINT ck_tasks_run_condition CHECK (RUN_CONDITION IS NULL OR RUN_CONDITION IN ('ALL', 'ANY', 'N')),
    -- N needs a count of at least 1; every other condition (NULL means ALL) has none.
    CONSTRAINT ck_tasks_run_condition_count CHECK (
        (RUN_CONDITION IS NOT DISTINCT FROM 'N' AND RUN_CONDITION_COUNT IS NOT NULL AND RUN_CONDITION_COUNT >= 1)
        OR (RUN_CONDITION IS DISTINCT FROM 'N' AND RUN_CONDITION_COUNT IS NULL))
);

CREATE UNIQUE INDEX ux_tasks_code_active ON CFG_TASKS (PIPELINE_ID, TASK_CODE) WHERE ACTIVE_FLAG = 'Y';

CREATE TABLE CFG_TASK_DEPENDENCY (
    TASK_DEPENDENCY_ID     BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    PIPELINE_ID            BIGINT NOT NULL REFERENCES CFG_PIPELINES (PIPELINE_ID),
    TASK_ID                BIGINT NOT NULL REFERENCES CFG_TASKS (TASK_ID),
    DEPENDS_ON_PIPELINE_ID BIGINT REFERENCES CFG_PIPELINES (PIPELINE_ID),
    DEPENDS_ON_TASK_ID     BIGINT NOT NULL REFERENCES CFG_TASKS (TASK_ID),
    DEPENDENCY_TYPE        VARCHAR NOT NULL,
    ACTIVE_FLAG            VARCHAR NOT NULL DEFAULT 'Y',
    CREATED_BY             VARCHAR,
    CREATE_DATE            TIMESTAMPTZ,
    UPDATED_BY             VARCHAR,
    UPDATED_DATE           TIMESTAMPTZ,
    CONSUME_REPAIRS        VARCHAR(1) NOT NULL DEFAULT 'Y',
    CONSTRAINT ck_taskdep_type CHECK (DEPENDENCY_TYPE IN ('SUCCESS', 'FAILURE', 'ALWAYS', 'HAS_DATA')),
    CONSTRAINT ck_taskdep_active_flag CHECK (ACTIVE_FLAG IN ('Y', 'N')),
    CONSTRAINT ck_taskdep_no_self_dep
        CHECK (NOT (TASK_ID = DEPENDS_ON_TASK_ID AND PIPELINE_ID = DEPENDS_ON_PIPELINE_ID)),
    CONSTRAINT ck_taskdep_consume_repairs CHECK (CONSUME_REPAIRS IN ('Y', 'N'))
);

CREATE UNIQUE INDEX ux_taskdep_edge_active
    ON CFG_TASK_DEPENDENCY (TASK_ID, DEPENDS_ON_PIPELINE_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE)
    WHERE ACTIVE_FLAG = 'Y';
CREATE INDEX ix_taskdep_depends_on ON CFG_TASK_DEPENDENCY (DEPENDS_ON_TASK_ID);

CREATE TABLE CFG_TASK_PARAMETERS (
    TASK_PARAMETER_ID BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    TASK_ID           BIGINT NOT NULL REFERENCES CFG_TASKS (TASK_ID),
    PARAMETER_NAME    VARCHAR NOT NULL,
    PARAMETER_VALUE   VARCHAR,
    ACTIVE_FLAG       VARCHAR NOT NULL DEFAULT 'Y',
    CREATED_BY        VARCHAR,
    CREATE_DATE       TIMESTAMPTZ,
    UPDATED_BY        VARCHAR,
    UPDATED_DATE      TIMESTAMPTZ,
    CONSTRAINT ck_taskparameters_active_flag CHECK (ACTIVE_FLAG IN ('Y', 'N'))
);

CREATE UNIQUE INDEX ux_taskparameters_name_active
    ON CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME) WHERE ACTIVE_FLAG = 'Y';

CREATE TABLE CFG_BUSINESS_RULES (
    BUSINESS_RULE_ID         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    BUSINESS_RULE_NAME       VARCHAR NOT NULL,
    PIPELINE_ID              BIGINT NOT NULL REFERENCES CFG_PIPELINES (PIPELINE_ID),
    TASK_ID                  BIGINT NOT NULL REFERENCES CFG_TASKS (TASK_ID),
    BUSINESS_RULE_SQL        VARCHAR NOT NULL,
    BUSINESS_RULE_TYPE       VARCHAR NOT NULL,
    BUSINESS_RULE_KEY_COLUMN VARCHAR NOT NULL,
    TARGET_TABLE             VARCHAR NOT NULL,
    SEQUENCE_NUMBER          BIGINT NOT NULL,
    ACTIVE_FLAG              VARCHAR NOT NULL DEFAULT 'Y',
    CREATED_BY               VARCHAR,
    CREATE_DATE              TIMESTAMPTZ,
    UPDATED_BY               VARCHAR,
    UPDATED_DATE             TIMESTAMPTZ,
    CONSTRAINT ck_br_type CHECK (BUSINESS_RULE_TYPE IN ('INCOMPLETE', 'REJECT', 'REPORT')),
    CONSTRAINT ck_br_active_flag CHECK (ACTIVE_FLAG IN ('Y', 'N'))
);

CREATE UNIQUE INDEX ux_br_name_active
    ON CFG_BUSINESS_RULES (TASK_ID, BUSINESS_RULE_NAME) WHERE ACTIVE_FLAG = 'Y';
CREATE INDEX ix_br_pipeline ON CFG_BUSINESS_RULES (PIPELINE_ID);

CREATE TABLE CFG_API_TOKENS (
    TOKEN_ID     BIGSERIAL PRIMARY KEY,
    NAME         VARCHAR(128) NOT NULL,
    TOKEN_SHA256 VARCHAR(64) NOT NULL UNIQUE,
    ROLE         VARCHAR(16) NOT NULL CHECK (ROLE IN ('viewer', 'operator', 'admin')),
    PROJECT_ID   BIGINT,
    CREATED_BY   VARCHAR(128) NOT NULL,
    CREATED_AT   TIMESTAMPTZ NOT NULL,
    EXPIRES_AT   TIMESTAMPTZ,
    REVOKED_AT   TIMESTAMPTZ
);

-- ---------------------------------------------------------------------------
-- AUD_: what ran, written by the engine.
-- ---------------------------------------------------------------------------

CREATE TABLE AUD_PIPELINES_RUN_LOG (
    PIPELINE_RUN_ID  BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    PIPELINE_ID      BIGINT NOT NULL REFERENCES CFG_PIPELINES (PIPELINE_ID),
    START_DATE       TIMESTAMPTZ NOT NULL DEFAULT now(),
    END_DATE         TIMESTAMPTZ,
    STATUS           VARCHAR NOT NULL,
    SLA_STATUS       VARCHAR(8),
    RUN_DATE         DATE,
    BACKFILL         VARCHAR(1) NOT NULL DEFAULT 'N',
    RUN_KEY          VARCHAR NOT NULL DEFAULT ('manual:' || gen_random_uuid()::text),
    TRIGGER_KIND     VARCHAR NOT NULL DEFAULT 'MANUAL',
    OWNER_ID         VARCHAR,
    LEASE_EXPIRES_AT TIMESTAMPTZ,
    OUTPUT_REVISION  INT NOT NULL DEFAULT 1,
    CONFIG_SHA256    VARCHAR(64),
    STARTED_BY       VARCHAR DEFAULT current_setting('etl_craft.actor', true),
    STARTED_BY_KIND  VARCHAR DEFAULT current_setting('etl_craft.actor_kind', true)
                     CONSTRAINT ck_aud_pipelines_run_log_started_by_kind
                     CHECK (STARTED_BY_KIND IN ('HUMAN', 'SCHEDULE', 'ORCHESTRATOR', 'WORKER', 'SYSTEM')),
    ENDED_BY         VARCHAR,
    ENDED_BY_KIND    VARCHAR
                     CONSTRAINT ck_aud_pipelines_run_log_ended_by_kind
                     CHECK (ENDED_BY_KIND IN ('HUMAN', 'SCHEDULE', 'ORCHESTRATOR', 'WORKER', 'SYSTEM')),
    REPAIR_PENDING   VARCHAR NOT NULL DEFAULT 'N'
                     CONSTRAINT ck_run_repair_pending CHECK (REPAIR_PENDING IN ('Y', 'N')),
    CONSTRAINT ck_pipeline_run_trigger_kind
        CHECK (TRIGGER_KIND IN ('SCHEDULE', 'MANUAL', 'BACKFILL', 'ORCHESTRATOR', 'STAND_IN')),
    CONSTRAINT ck_pipeline_run_backfill CHECK (BACKFILL IN ('Y', 'N')),
    CONSTRAINT ck_pipeline_run_status
        CHECK (STATUS IN ('QUEUED', 'IN-PROGRESS', 'SUCCESS', 'FAILED', 'SKIPPED', 'CANCELLED')),
    CONSTRAINT ck_pipeline_run_sla_status CHECK (SLA_STATUS IN ('MET', 'BREACHED'))
);

CREATE UNIQUE INDEX ux_pipeline_run_one_active
    ON AUD_PIPELINES_RUN_LOG (PIPELINE_ID) WHERE STATUS = 'IN-PROGRESS';
CREATE INDEX ix_pipeline_run_pipeline ON AUD_PIPELINES_RUN_LOG (PIPELINE_ID);
CREATE INDEX ix_pipeline_run_queued ON AUD_PIPELINES_RUN_LOG (PIPELINE_ID) WHERE STATUS = 'QUEUED';
CREATE UNIQUE INDEX ux_pipeline_run_key ON AUD_PIPELINES_RUN_LOG (PIPELINE_ID, RUN_KEY);
CREATE INDEX ix_pipeline_schedule_key
    ON AUD_PIPELINES_RUN_LOG (PIPELINE_ID, RUN_KEY) WHERE TRIGGER_KIND = 'SCHEDULE';

CREATE TABLE AUD_TASK_RUN_LOG (
    TASK_RUN_ID     BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    TASK_ID         BIGINT NOT NULL REFERENCES CFG_TASKS (TASK_ID),
    PIPELINE_RUN_ID BIGINT NOT NULL REFERENCES AUD_PIPELINES_RUN_LOG (PIPELINE_RUN_ID),
    START_DATE      TIMESTAMPTZ NOT NULL DEFAULT now(),
    END_DATE        TIMESTAMPTZ,
    STATUS          VARCHAR NOT NULL,
    SOURCE_COUNT    BIGINT,
    TARGET_COUNT    BIGINT,
    INSERT_COUNT    BIGINT,
    UPDATE_COUNT    BIGINT,
    DELETE_COUNT    BIGINT,
    ERROR_MESSAGE   VARCHAR,
    TASK_LOG        VARCHAR,
    ATTEMPT_COUNT   INT NOT NULL DEFAULT 1,
    ROWS_WRITTEN    BIGINT,
    CONSTRAINT ck_task_run_status
        CHECK (STATUS IN ('IN-PROGRESS', 'SUCCESS', 'FAILED', 'SKIPPED', 'CANCELLED'))
);

CREATE UNIQUE INDEX ux_task_run_one_per_pipeline_run ON AUD_TASK_RUN_LOG (TASK_ID, PIPELINE_RUN_ID);
CREATE INDEX ix_task_run_pipeline_run ON AUD_TASK_RUN_LOG (PIPELINE_RUN_ID);

CREATE TABLE AUD_RUN_INTERVENTIONS (
    INTERVENTION_ID   BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    PIPELINE_ID       BIGINT NOT NULL REFERENCES CFG_PIPELINES (PIPELINE_ID),
    PIPELINE_RUN_ID   BIGINT NOT NULL REFERENCES AUD_PIPELINES_RUN_LOG (PIPELINE_RUN_ID),
    TASK_ID           BIGINT REFERENCES CFG_TASKS (TASK_ID),
    ACTION            VARCHAR(24) NOT NULL,
    FROM_STATUS       VARCHAR(16),
    TO_STATUS         VARCHAR(16),
    TARGET_COUNT      BIGINT,
    PREVIOUS_MESSAGE  VARCHAR,
    REASON            VARCHAR NOT NULL,
    REQUESTED_BY      VARCHAR NOT NULL,
    REQUESTED_AT      TIMESTAMPTZ NOT NULL DEFAULT now(),
    REQUESTED_BY_KIND VARCHAR DEFAULT current_setting('etl_craft.actor_kind', true)
                      CONSTRAINT ck_aud_run_interventions_requested_by_kind
                      CHECK (REQUESTED_BY_KIND IN ('HUMAN', 'SCHEDULE', 'ORCHESTRATOR', 'WORKER', 'SYSTEM')),
    CONSTRAINT ck_intervention_action CHECK (ACTION IN (
        'MARK', 'NEW_RUN', 'CANCEL', 'REOPEN', 'RESET', 'GATE_BYPASS', 'IGNORE_DEPENDENCIES', 'RERUN'))
);

CREATE INDEX ix_run_interventions_run ON AUD_RUN_INTERVENTIONS (PIPELINE_RUN_ID);

CREATE TABLE AUD_PIPELINE_PAUSES (
    PIPELINE_PAUSE_ID BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    PIPELINE_ID       BIGINT NOT NULL REFERENCES CFG_PIPELINES (PIPELINE_ID),
    PAUSED_AT         TIMESTAMPTZ NOT NULL DEFAULT now(),
    PAUSED_BY         VARCHAR NOT NULL,
    REASON            VARCHAR NOT NULL,
    RESUMED_AT        TIMESTAMPTZ,
    RESUMED_BY        VARCHAR,
    RESUME_REASON     VARCHAR,
    PAUSED_BY_KIND    VARCHAR DEFAULT current_setting('etl_craft.actor_kind', true)
                      CONSTRAINT ck_aud_pipeline_pauses_paused_by_kind
                      CHECK (PAUSED_BY_KIND IN ('HUMAN', 'SCHEDULE', 'ORCHESTRATOR', 'WORKER', 'SYSTEM')),
    RESUMED_BY_KIND   VARCHAR
                      CONSTRAINT ck_aud_pipeline_pauses_resumed_by_kind
                      CHECK (RESUMED_BY_KIND IN ('HUMAN', 'SCHEDULE', 'ORCHESTRATOR', 'WORKER', 'SYSTEM'))
);

CREATE UNIQUE INDEX ux_pipeline_pauses_open ON AUD_PIPELINE_PAUSES (PIPELINE_ID) WHERE RESUMED_AT IS NULL;

CREATE TABLE AUD_BUSINESS_RULES_RUN_LOG (
    BUSINESS_RULE_RUN_ID BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    BUSINESS_RULE_ID     BIGINT NOT NULL REFERENCES CFG_BUSINESS_RULES (BUSINESS_RULE_ID),
    TASK_RUN_ID          BIGINT NOT NULL REFERENCES AUD_TASK_RUN_LOG (TASK_RUN_ID),
    START_DATE           TIMESTAMPTZ NOT NULL DEFAULT now(),
    END_DATE             TIMESTAMPTZ,
    STATUS               VARCHAR NOT NULL,
    CONSTRAINT ck_br_run_status CHECK (STATUS IN ('IN-PROGRESS', 'SUCCESS', 'FAILED', 'SKIPPED'))
);

CREATE UNIQUE INDEX ux_br_run_one_per_task_run ON AUD_BUSINESS_RULES_RUN_LOG (BUSINESS_RULE_ID, TASK_RUN_ID);

CREATE TABLE AUD_BUSINESS_RULES_RESULTS (
    BUSINESS_RULE_RESULT_ID BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    BUSINESS_RULE_RUN_ID    BIGINT NOT NULL REFERENCES AUD_BUSINESS_RULES_RUN_LOG (BUSINESS_RULE_RUN_ID),
    BUSINESS_RULE_ID        BIGINT NOT NULL REFERENCES CFG_BUSINESS_RULES (BUSINESS_RULE_ID),
    BUSINESS_RULE_KEY       VARCHAR NOT NULL,
    TARGET_TABLE            VARCHAR NOT NULL,
    STATUS                  VARCHAR NOT NULL,
    ACTIVE_FLAG             VARCHAR NOT NULL DEFAULT 'Y',
    START_DATE              TIMESTAMPTZ NOT NULL DEFAULT now(),
    END_DATE                TIMESTAMPTZ,
    CONSTRAINT ck_brresults_status CHECK (STATUS IN ('INCOMPLETE', 'REJECT', 'REPORT')),
    CONSTRAINT ck_brresults_active_flag CHECK (ACTIVE_FLAG IN ('Y', 'N'))
);

CREATE INDEX ix_brresults_run ON AUD_BUSINESS_RULES_RESULTS (BUSINESS_RULE_RUN_ID);
CREATE INDEX ix_brresults_rule ON AUD_BUSINESS_RULES_RESULTS (BUSINESS_RULE_ID);

CREATE TABLE AUD_TASK_OFFSET_TRACKER (
    TASK_ID                BIGINT PRIMARY KEY REFERENCES CFG_TASKS (TASK_ID),
    OFFSET_TYPE            VARCHAR NOT NULL,
    OFFSET_VALUE           VARCHAR,
    LAST_UPDATED_TIMESTAMP TIMESTAMPTZ NOT NULL DEFAULT now(),
    CONSTRAINT ck_offset_type CHECK (OFFSET_TYPE IN ('NUMBER', 'TEXT', 'TIMESTAMP'))
);

CREATE TABLE AUD_COLUMN_LINEAGE (
    COLUMN_LINEAGE_ID BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    TASK_ID           BIGINT NOT NULL REFERENCES CFG_TASKS (TASK_ID),
    SOURCE_SQL_HASH   VARCHAR NOT NULL,
    TARGET_OBJECT     VARCHAR NOT NULL,
    TARGET_COLUMN     VARCHAR NOT NULL,
    SOURCE_OBJECT     VARCHAR,
    SOURCE_COLUMN     VARCHAR,
    TRANSFORMATION    VARCHAR,
    COMPUTED_AT       TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE INDEX ix_column_lineage_task ON AUD_COLUMN_LINEAGE (TASK_ID, SOURCE_SQL_HASH);
CREATE INDEX ix_column_lineage_target ON AUD_COLUMN_LINEAGE (TARGET_OBJECT, TARGET_COLUMN);
CREATE INDEX ix_column_lineage_source ON AUD_COLUMN_LINEAGE (SOURCE_OBJECT, SOURCE_COLUMN);

CREATE TABLE AUD_DOCS_PUBLICATION (
    DOCS_PUBLICATION_ID BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    PUBLISHED_URL       VARCHAR NOT NULL,
    FIRST_PUBLISHED     TIMESTAMPTZ NOT NULL DEFAULT now(),
    LAST_PUBLISHED      TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE AUD_TASK_DOCUMENTATION (
    TASK_DOCUMENTATION_ID BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    TASK_ID               BIGINT NOT NULL REFERENCES CFG_TASKS (TASK_ID),
    VERSION               INT NOT NULL,
    DOCUMENTATION_HASH    VARCHAR NOT NULL,
    DOCUMENTATION         VARCHAR NOT NULL,
    RECORDED_AT           TIMESTAMPTZ NOT NULL DEFAULT now(),
    CONSTRAINT ux_task_documentation_version UNIQUE (TASK_ID, VERSION)
);

CREATE INDEX ix_task_documentation_task ON AUD_TASK_DOCUMENTATION (TASK_ID, VERSION DESC);

CREATE TABLE AUD_DEPENDENCY_CONSUMPTION (
    CONSUMPTION_ID           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    PIPELINE_DEPENDENCY_ID   BIGINT REFERENCES CFG_PIPELINE_DEPENDENCY (PIPELINE_DEPENDENCY_ID),
    TASK_DEPENDENCY_ID       BIGINT REFERENCES CFG_TASK_DEPENDENCY (TASK_DEPENDENCY_ID),
    PIPELINE_ID              BIGINT NOT NULL REFERENCES CFG_PIPELINES (PIPELINE_ID),
    PIPELINE_RUN_ID          BIGINT REFERENCES AUD_PIPELINES_RUN_LOG (PIPELINE_RUN_ID),
    TASK_ID                  BIGINT REFERENCES CFG_TASKS (TASK_ID),
    DEPENDS_ON_PIPELINE_ID   BIGINT NOT NULL REFERENCES CFG_PIPELINES (PIPELINE_ID),
    CONSUMED_PIPELINE_RUN_ID BIGINT NOT NULL REFERENCES AUD_PIPELINES_RUN_LOG (PIPELINE_RUN_ID),
    CONSUMED_TASK_RUN_ID     BIGINT REFERENCES AUD_TASK_RUN_LOG (TASK_RUN_ID),
    CONSUMED_AT              TIMESTAMPTZ NOT NULL DEFAULT now(),
    CONSUMED_REVISION        INT NOT NULL DEFAULT 1,
    CONSTRAINT ck_consumption_one_dependency
        CHECK ((PIPELINE_DEPENDENCY_ID IS NULL) <> (TASK_DEPENDENCY_ID IS NULL))
);

CREATE INDEX ix_consumption_pipeline_dependency
    ON AUD_DEPENDENCY_CONSUMPTION (PIPELINE_DEPENDENCY_ID, CONSUMPTION_ID);
CREATE INDEX ix_consumption_task_dependency
    ON AUD_DEPENDENCY_CONSUMPTION (TASK_DEPENDENCY_ID, CONSUMPTION_ID);
CREATE INDEX ix_consumption_run ON AUD_DEPENDENCY_CONSUMPTION (PIPELINE_RUN_ID);

CREATE TABLE SCHEMA_MIGRATIONS (
    SOURCE     VARCHAR NOT NULL,
    VERSION    VARCHAR NOT NULL,
    CHECKSUM   VARCHAR(64) NOT NULL,
    APPLIED_AT TIMESTAMPTZ NOT NULL DEFAULT now(),
    CONSTRAINT pk_schema_migrations PRIMARY KEY (SOURCE, VERSION),
    CONSTRAINT ck_schema_migrations_source CHECK (SOURCE IN ('ENGINE', 'PROJECT')),
    CONSTRAINT ck_schema_migrations_checksum CHECK (CHECKSUM ~ '^[0-9a-f]{64}$')
);

CREATE TABLE AUD_TASK_ATTEMPTS (
    ATTEMPT_ID        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    TASK_RUN_ID       BIGINT NOT NULL REFERENCES AUD_TASK_RUN_LOG (TASK_RUN_ID),
    ATTEMPT_NUMBER    INT NOT NULL,
    STATUS            VARCHAR NOT NULL,
    OWNER_ID          VARCHAR,
    LEASE_EXPIRES_AT  TIMESTAMPTZ,
    HEARTBEAT_AT      TIMESTAMPTZ,
    QUEUED_AT         TIMESTAMPTZ,
    CLAIMED_AT        TIMESTAMPTZ,
    STARTED_AT        TIMESTAMPTZ,
    ENDED_AT          TIMESTAMPTZ,
    HOST              VARCHAR,
    PID               INT,
    PROCESS_START     VARCHAR,
    EXIT_CODE         INT,
    SOURCE_COUNT      BIGINT,
    TARGET_COUNT      BIGINT,
    INSERT_COUNT      BIGINT,
    UPDATE_COUNT      BIGINT,
    DELETE_COUNT      BIGINT,
    ROWS_WRITTEN      BIGINT,
    ERROR_MESSAGE     VARCHAR,
    TASK_LOG          VARCHAR,
    LOG_PATH          VARCHAR,
    REQUESTED_BY      VARCHAR DEFAULT current_setting('etl_craft.actor', true),
    REQUESTED_BY_KIND VARCHAR DEFAULT current_setting('etl_craft.actor_kind', true)
                      CONSTRAINT ck_aud_task_attempts_requested_by_kind
                      CHECK (REQUESTED_BY_KIND IN ('HUMAN', 'SCHEDULE', 'ORCHESTRATOR', 'WORKER', 'SYSTEM')),
    NOT_BEFORE        TIMESTAMPTZ,
    RETRYABLE         BOOLEAN NOT NULL DEFAULT TRUE CHECK (RETRYABLE IN (TRUE, FALSE)),
    CONSTRAINT ck_attempt_status CHECK (STATUS IN (
        'QUEUED', 'CLAIMED', 'RUNNING', 'SUCCESS', 'FAILED', 'TIMED_OUT', 'CANCELLED', 'LOST'))
);

CREATE UNIQUE INDEX ux_attempt_number ON AUD_TASK_ATTEMPTS (TASK_RUN_ID, ATTEMPT_NUMBER);
CREATE UNIQUE INDEX ux_attempt_one_active
    ON AUD_TASK_ATTEMPTS (TASK_RUN_ID) WHERE STATUS IN ('QUEUED', 'CLAIMED', 'RUNNING');
CREATE INDEX ix_attempt_status_lease ON AUD_TASK_ATTEMPTS (STATUS, LEASE_EXPIRES_AT);

CREATE TABLE AUD_GATE_DECISIONS (
    DECISION_ID              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    PIPELINE_RUN_ID          BIGINT NOT NULL REFERENCES AUD_PIPELINES_RUN_LOG (PIPELINE_RUN_ID),
    ATTEMPT_ID               BIGINT REFERENCES AUD_TASK_ATTEMPTS (ATTEMPT_ID),
    PIPELINE_DEPENDENCY_ID   BIGINT REFERENCES CFG_PIPELINE_DEPENDENCY (PIPELINE_DEPENDENCY_ID),
    TASK_DEPENDENCY_ID       BIGINT REFERENCES CFG_TASK_DEPENDENCY (TASK_DEPENDENCY_ID),
    SELECTED_PIPELINE_RUN_ID BIGINT REFERENCES AUD_PIPELINES_RUN_LOG (PIPELINE_RUN_ID),
    SELECTED_TASK_RUN_ID     BIGINT REFERENCES AUD_TASK_RUN_LOG (TASK_RUN_ID),
    SELECTED_REVISION        INT,
    RESULT                   VARCHAR NOT NULL,
    REASON                   VARCHAR NOT NULL,
    DECIDED_AT               TIMESTAMPTZ NOT NULL DEFAULT now(),
    CONSTRAINT ck_gate_result CHECK (RESULT IN ('SATISFIED', 'UNSATISFIED', 'BYPASSED')),
    CONSTRAINT ck_gate_one_dependency CHECK (
        (PIPELINE_DEPENDENCY_ID IS NOT NULL AND TASK_DEPENDENCY_ID IS NULL)
        OR (PIPELINE_DEPENDENCY_ID IS NULL AND TASK_DEPENDENCY_ID IS NOT NULL))
);

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

CREATE TABLE AUD_TARGET_HASH_VERSION (
    TARGET_OBJECT VARCHAR PRIMARY KEY,
    HASH_VERSION  INTEGER NOT NULL,
    RECOMPUTED_AT TIMESTAMPTZ NOT NULL,
    CONSTRAINT ck_target_hash_version CHECK (HASH_VERSION IN (1, 2))
);

CREATE TABLE AUD_TARGET_VIEW_STATEMENT (
    TARGET_OBJECT    VARCHAR PRIMARY KEY,
    STATEMENT_SHA256 VARCHAR(64) NOT NULL,
    RECORDED_AT      TIMESTAMPTZ NOT NULL
);

CREATE TABLE AUD_OVERSEERS (
    OVERSEER_ID     BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    HOST            VARCHAR NOT NULL,
    PID             INTEGER NOT NULL CHECK (PID > 0),
    VERSION         VARCHAR NOT NULL,
    STARTED_AT      TIMESTAMPTZ NOT NULL,
    HEARTBEAT_AT    TIMESTAMPTZ NOT NULL,
    STOPPED_AT      TIMESTAMPTZ,
    STARTED_BY      VARCHAR NOT NULL,
    STARTED_BY_KIND VARCHAR NOT NULL,
    STOPPED_BY      VARCHAR,
    STOPPED_BY_KIND VARCHAR
);

CREATE INDEX ix_overseer_unclosed ON AUD_OVERSEERS (OVERSEER_ID) WHERE STOPPED_AT IS NULL;

CREATE TABLE AUD_GATE_WAITS (
    PIPELINE_RUN_ID BIGINT NOT NULL REFERENCES AUD_PIPELINES_RUN_LOG (PIPELINE_RUN_ID),
    TASK_ID         BIGINT REFERENCES CFG_TASKS (TASK_ID)
                    CONSTRAINT ck_gate_wait_task CHECK (TASK_ID IS NULL OR TASK_ID > 0),
    FIRST_CHECK_AT  TIMESTAMPTZ NOT NULL,
    NEXT_CHECK_AT   TIMESTAMPTZ,
    LOOKS           INT NOT NULL CONSTRAINT ck_gate_wait_looks CHECK (LOOKS >= 0 AND LOOKS <= 30),
    WAIT_UNTIL      TIMESTAMPTZ NOT NULL
);

CREATE UNIQUE INDEX ux_gate_wait ON AUD_GATE_WAITS (PIPELINE_RUN_ID, COALESCE(TASK_ID, 0));

-- ---------------------------------------------------------------------------
-- Trigger functions.
-- ---------------------------------------------------------------------------

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

-- A task dependency without DEPENDS_ON_PIPELINE_ID is on a task of its own pipeline.
CREATE OR REPLACE FUNCTION trg_default_depends_on_pipeline() RETURNS trigger
LANGUAGE plpgsql AS $default$
BEGIN
    IF NEW.depends_on_pipeline_id IS NULL THEN
        NEW.depends_on_pipeline_id := NEW.pipeline_id;
    END IF;
    RETURN NEW;
END
$default$;

-- A run's RUN_DATE and a pipeline's SCHEDULE_START_DATE are dates from
-- 0001-01-01 to 9999-12-31 (triggers, not checks: see migration 0023).
CREATE OR REPLACE FUNCTION etl_craft_check_run_date() RETURNS trigger
LANGUAGE plpgsql AS $check$
BEGIN
    IF NOT (NEW.run_date BETWEEN DATE '0001-01-01' AND DATE '9999-12-31') THEN
        RAISE EXCEPTION 'AUD_PIPELINES_RUN_LOG.RUN_DATE must be a date written YYYY-MM-DD, from 0001-01-01 to 9999-12-31'
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END
$check$;

CREATE OR REPLACE FUNCTION etl_craft_check_schedule_start_date() RETURNS trigger
LANGUAGE plpgsql AS $check$
BEGIN
    IF NOT (NEW.schedule_start_date BETWEEN DATE '0001-01-01' AND DATE '9999-12-31') THEN
        RAISE EXCEPTION 'CFG_PIPELINES.SCHEDULE_START_DATE must be a date written YYYY-MM-DD, from 0001-01-01 to 9999-12-31'
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END
$check$;

-- The write guard of every CFG_ and AUD_ table, for row writes and TRUNCATE.
-- A transaction that has not set etl_craft.actor is refused. The append-only
-- tables refuse UPDATE, DELETE and TRUNCATE, and an attempt that reached a
-- terminal status cannot change; a transaction whose etl_craft.purpose is
-- 'retention' (a purge) may delete those rows, never update them.
CREATE OR REPLACE FUNCTION etl_craft_guard() RETURNS trigger
LANGUAGE plpgsql AS $guard$
DECLARE
    v_table text := upper(TG_TABLE_NAME);
    v_purge boolean := COALESCE(current_setting('etl_craft.purpose', true), '') = 'retention' AND TG_OP = 'DELETE';
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
    IF TG_OP <> 'INSERT' AND NOT v_purge THEN
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

-- Wakes the server (LISTEN etl_craft_events) when runs, attempts or pauses change.
CREATE OR REPLACE FUNCTION etl_craft_notify_execution() RETURNS trigger
LANGUAGE plpgsql AS $notify$
BEGIN
    PERFORM pg_notify('etl_craft_events', current_schema());
    RETURN NULL;
END
$notify$;

-- ---------------------------------------------------------------------------
-- Triggers other than the guards, stamps and change capture (see the top).
-- Same-timing triggers fire in name order, so trg_actor_guard_<t> runs first.
-- ---------------------------------------------------------------------------

CREATE TRIGGER trg_default_taskdep_pipeline
    BEFORE INSERT OR UPDATE ON CFG_TASK_DEPENDENCY
    FOR EACH ROW EXECUTE FUNCTION trg_default_depends_on_pipeline();

CREATE TRIGGER trg_check_run_date
    BEFORE INSERT OR UPDATE OF RUN_DATE ON AUD_PIPELINES_RUN_LOG
    FOR EACH ROW EXECUTE FUNCTION etl_craft_check_run_date();

CREATE TRIGGER trg_check_schedule_start_date
    BEFORE INSERT OR UPDATE OF SCHEDULE_START_DATE ON CFG_PIPELINES
    FOR EACH ROW EXECUTE FUNCTION etl_craft_check_schedule_start_date();

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

CREATE TRIGGER trg_notify_aud_pipelines_run_log
    AFTER INSERT OR UPDATE OR DELETE ON AUD_PIPELINES_RUN_LOG
    FOR EACH STATEMENT EXECUTE FUNCTION etl_craft_notify_execution();
CREATE TRIGGER trg_notify_aud_task_attempts
    AFTER INSERT OR UPDATE OR DELETE ON AUD_TASK_ATTEMPTS
    FOR EACH STATEMENT EXECUTE FUNCTION etl_craft_notify_execution();
CREATE TRIGGER trg_notify_aud_pipeline_pauses
    AFTER INSERT OR UPDATE OR DELETE ON AUD_PIPELINE_PAUSES
    FOR EACH STATEMENT EXECUTE FUNCTION etl_craft_notify_execution();

-- ---------------------------------------------------------------------------
-- Comments.
-- ---------------------------------------------------------------------------

COMMENT ON TABLE CFG_PIPELINES IS
    'One row per pipeline. PIPELINE_CODE is the key the CLI takes; REFRESH_TYPE decides whether $$pipeline_run_id_filter selects only the current run''s rows (INCREMENTAL) or every row (FULL). Also holds the schedule, SLA and catch-up settings.';
COMMENT ON TABLE CFG_PIPELINE_DEPENDENCY IS
    'A pipeline waits for an outcome of another pipeline. Every upstream run it uses is recorded in AUD_DEPENDENCY_CONSUMPTION; CONSUME_REPAIRS = Y lets a repaired revision of a consumed run satisfy it again.';
COMMENT ON TABLE CFG_TASKS IS
    'One row per task of a pipeline: its code, type, handler and run condition.';
COMMENT ON COLUMN CFG_TASKS.RUN_CONDITION IS
    'Which upstream dependencies must be satisfied: ALL (also when NULL), ANY, or N of them.';
COMMENT ON COLUMN CFG_TASKS.RUN_CONDITION_COUNT IS
    'How many dependencies must be satisfied when RUN_CONDITION is N; NULL otherwise.';
COMMENT ON TABLE CFG_TASK_DEPENDENCY IS
    'A task waits for an outcome of another task, in its own pipeline (DEPENDS_ON_PIPELINE_ID NULL on insert) or another. Consumed upstream runs are recorded in AUD_DEPENDENCY_CONSUMPTION.';
COMMENT ON TABLE CFG_TASK_PARAMETERS IS
    'Task settings as name and value rows; one active value per name.';
COMMENT ON TABLE CFG_BUSINESS_RULES IS
    'Data-quality rules of a BUSINESS_RULES task: a query finding the failing keys of TARGET_TABLE.';
COMMENT ON TABLE CFG_API_TOKENS IS
    'Bearer tokens of the HTTP API. Only the SHA-256 of a token is stored; a revoked or expired token is refused.';
COMMENT ON TABLE AUD_PIPELINES_RUN_LOG IS
    'One row per pipeline run: status, run key and trigger kind, lease, output revision and who started and ended it.';
COMMENT ON TABLE AUD_TASK_RUN_LOG IS
    'One row per task per pipeline run, summarising its latest attempt.';
COMMENT ON TABLE AUD_BUSINESS_RULES_RUN_LOG IS
    'One row per business rule per task run.';
COMMENT ON TABLE AUD_BUSINESS_RULES_RESULTS IS
    'Keys flagged by each business rule; ACTIVE_FLAG turns N when the row later passes.';
COMMENT ON TABLE AUD_TASK_OFFSET_TRACKER IS
    'The watermark an incremental ingestion task has reached.';
COMMENT ON TABLE AUD_COLUMN_LINEAGE IS
    'Column lineage parsed from the SQL of each task.';
COMMENT ON TABLE AUD_TASK_DOCUMENTATION IS
    'Every version of a task''s DOCUMENTATION parameter.';
COMMENT ON TABLE SCHEMA_MIGRATIONS IS
    'The migration ledger: one row per applied ENGINE or PROJECT file with the SHA-256 of its bytes.';
COMMENT ON TABLE AUD_OVERSEERS IS
    'History of server processes. Leadership is an advisory lock, not a row: an unclosed row does not stop a successor.';

-- ---------------------------------------------------------------------------
-- Cloning: the change log and each mirror's state (ENGINE migration 0022).
-- ---------------------------------------------------------------------------

-- Incremental cloning. clone_changes logs the key of every row inserted,
-- updated or deleted in a cloned table; CHANGE_SEQ is the writing transaction's
-- id (txid_current()):
-- a clone copies the keys whose transaction its last snapshot did not see,
-- so a transaction that commits late is never missed. A purge (retention,
-- migration 0024) logs instead one row per table and batch naming the range
-- of keys it deleted from: ROW_KEY to LAST_KEY (NULL for one key).
-- clone_state is what each clone left in each mirror: the proof the next
-- clone checks before it trusts the mirror.

CREATE TABLE CLONE_CHANGES (
    CHANGE_SEQ BIGINT NOT NULL,
    TABLE_NAME VARCHAR NOT NULL,
    ROW_KEY    VARCHAR,
    LAST_KEY   VARCHAR
);

CREATE INDEX ix_clone_changes_table ON CLONE_CHANGES (TABLE_NAME, CHANGE_SEQ);

CREATE TABLE CLONE_STATE (
    MIRROR       VARCHAR NOT NULL PRIMARY KEY,
    ENGINE_TABLE VARCHAR NOT NULL,
    ROW_COUNT    BIGINT NOT NULL,
    HIGH_KEY     VARCHAR,
    MARK         VARCHAR NOT NULL,
    PROOF        VARCHAR NOT NULL,
    CLONED_AT    TIMESTAMPTZ NOT NULL
);

-- TG_ARGV[0] is the table's key column.
CREATE OR REPLACE FUNCTION trg_clone_change() RETURNS trigger
LANGUAGE plpgsql AS $clone$
DECLARE
    v_old text;
    v_new text;
BEGIN
    IF TG_OP = 'DELETE' AND COALESCE(current_setting('etl_craft.purpose', true), '') = 'retention' THEN
        RETURN NULL; -- the purge logs the range of keys it deleted
    END IF;
    IF TG_OP <> 'INSERT' THEN
        v_old := to_jsonb(OLD) ->> lower(TG_ARGV[0]);
    END IF;
    IF TG_OP <> 'DELETE' THEN
        v_new := to_jsonb(NEW) ->> lower(TG_ARGV[0]);
        INSERT INTO clone_changes (change_seq, table_name, row_key) VALUES (txid_current(), upper(TG_TABLE_NAME), v_new);
    END IF;
    IF TG_OP <> 'INSERT' AND v_old IS DISTINCT FROM v_new THEN
        INSERT INTO clone_changes (change_seq, table_name, row_key) VALUES (txid_current(), upper(TG_TABLE_NAME), v_old);
    END IF;
    RETURN NULL;
END
$clone$;

CREATE TRIGGER trg_clone_cfg_pipelines AFTER INSERT OR UPDATE OR DELETE ON CFG_PIPELINES
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('PIPELINE_ID');

CREATE TRIGGER trg_clone_cfg_pipeline_dependency AFTER INSERT OR UPDATE OR DELETE ON CFG_PIPELINE_DEPENDENCY
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('PIPELINE_DEPENDENCY_ID');

CREATE TRIGGER trg_clone_cfg_tasks AFTER INSERT OR UPDATE OR DELETE ON CFG_TASKS
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('TASK_ID');

CREATE TRIGGER trg_clone_cfg_task_dependency AFTER INSERT OR UPDATE OR DELETE ON CFG_TASK_DEPENDENCY
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('TASK_DEPENDENCY_ID');

CREATE TRIGGER trg_clone_cfg_task_parameters AFTER INSERT OR UPDATE OR DELETE ON CFG_TASK_PARAMETERS
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('TASK_PARAMETER_ID');

CREATE TRIGGER trg_clone_cfg_business_rules AFTER INSERT OR UPDATE OR DELETE ON CFG_BUSINESS_RULES
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('BUSINESS_RULE_ID');

CREATE TRIGGER trg_clone_aud_pipelines_run_log AFTER INSERT OR UPDATE OR DELETE ON AUD_PIPELINES_RUN_LOG
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('PIPELINE_RUN_ID');

CREATE TRIGGER trg_clone_aud_task_run_log AFTER INSERT OR UPDATE OR DELETE ON AUD_TASK_RUN_LOG
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('TASK_RUN_ID');

CREATE TRIGGER trg_clone_aud_run_interventions AFTER INSERT OR UPDATE OR DELETE ON AUD_RUN_INTERVENTIONS
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('INTERVENTION_ID');

CREATE TRIGGER trg_clone_aud_pipeline_pauses AFTER INSERT OR UPDATE OR DELETE ON AUD_PIPELINE_PAUSES
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('PIPELINE_PAUSE_ID');

CREATE TRIGGER trg_clone_aud_business_rules_run_log AFTER INSERT OR UPDATE OR DELETE ON AUD_BUSINESS_RULES_RUN_LOG
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('BUSINESS_RULE_RUN_ID');

CREATE TRIGGER trg_clone_aud_business_rules_results AFTER INSERT OR UPDATE OR DELETE ON AUD_BUSINESS_RULES_RESULTS
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('BUSINESS_RULE_RESULT_ID');

CREATE TRIGGER trg_clone_aud_task_offset_tracker AFTER INSERT OR UPDATE OR DELETE ON AUD_TASK_OFFSET_TRACKER
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('TASK_ID');

CREATE TRIGGER trg_clone_aud_column_lineage AFTER INSERT OR UPDATE OR DELETE ON AUD_COLUMN_LINEAGE
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('COLUMN_LINEAGE_ID');

CREATE TRIGGER trg_clone_aud_docs_publication AFTER INSERT OR UPDATE OR DELETE ON AUD_DOCS_PUBLICATION
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('DOCS_PUBLICATION_ID');

CREATE TRIGGER trg_clone_aud_task_documentation AFTER INSERT OR UPDATE OR DELETE ON AUD_TASK_DOCUMENTATION
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('TASK_DOCUMENTATION_ID');

CREATE TRIGGER trg_clone_aud_dependency_consumption AFTER INSERT OR UPDATE OR DELETE ON AUD_DEPENDENCY_CONSUMPTION
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('CONSUMPTION_ID');

CREATE TRIGGER trg_clone_aud_task_attempts AFTER INSERT OR UPDATE OR DELETE ON AUD_TASK_ATTEMPTS
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('ATTEMPT_ID');

CREATE TRIGGER trg_clone_aud_gate_decisions AFTER INSERT OR UPDATE OR DELETE ON AUD_GATE_DECISIONS
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('DECISION_ID');

CREATE TRIGGER trg_clone_aud_actions AFTER INSERT OR UPDATE OR DELETE ON AUD_ACTIONS
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('ACTION_ID');

CREATE TRIGGER trg_clone_aud_metadata_changes AFTER INSERT OR UPDATE OR DELETE ON AUD_METADATA_CHANGES
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('CHANGE_ID');

CREATE TRIGGER trg_clone_aud_target_hash_version AFTER INSERT OR UPDATE OR DELETE ON AUD_TARGET_HASH_VERSION
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('TARGET_OBJECT');

CREATE TRIGGER trg_clone_aud_target_view_statement AFTER INSERT OR UPDATE OR DELETE ON AUD_TARGET_VIEW_STATEMENT
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('TARGET_OBJECT');

CREATE TRIGGER trg_clone_aud_overseers AFTER INSERT OR UPDATE OR DELETE ON AUD_OVERSEERS
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('OVERSEER_ID');

-- ---------------------------------------------------------------------------
-- Retention (ENGINE migration 0024): the indexes a purge needs, so that the
-- foreign keys find the rows referring to a deleted run, task run or
-- attempt, and the purge finds old rows, without reading whole tables.
-- ---------------------------------------------------------------------------

CREATE INDEX ix_gate_decisions_run ON AUD_GATE_DECISIONS (PIPELINE_RUN_ID);
CREATE INDEX ix_gate_decisions_selected_run ON AUD_GATE_DECISIONS (SELECTED_PIPELINE_RUN_ID);
CREATE INDEX ix_gate_decisions_selected_task_run ON AUD_GATE_DECISIONS (SELECTED_TASK_RUN_ID);
CREATE INDEX ix_gate_decisions_attempt ON AUD_GATE_DECISIONS (ATTEMPT_ID);
CREATE INDEX ix_consumption_consumed_run ON AUD_DEPENDENCY_CONSUMPTION (CONSUMED_PIPELINE_RUN_ID);
CREATE INDEX ix_consumption_consumed_task_run ON AUD_DEPENDENCY_CONSUMPTION (CONSUMED_TASK_RUN_ID);
CREATE INDEX ix_br_run_task_run ON AUD_BUSINESS_RULES_RUN_LOG (TASK_RUN_ID);
CREATE INDEX ix_actions_run ON AUD_ACTIONS (PIPELINE_RUN_ID);
CREATE INDEX ix_actions_started ON AUD_ACTIONS (STARTED_AT);
CREATE INDEX ix_metadata_changes_row ON AUD_METADATA_CHANGES (TABLE_NAME, ROW_KEY, CHANGE_ID);
CREATE INDEX ix_metadata_changes_changed ON AUD_METADATA_CHANGES (CHANGED_AT);
CREATE INDEX ix_run_interventions_requested ON AUD_RUN_INTERVENTIONS (REQUESTED_AT);
CREATE INDEX ix_pipeline_run_end ON AUD_PIPELINES_RUN_LOG (END_DATE);
CREATE INDEX ix_pipeline_run_latest ON AUD_PIPELINES_RUN_LOG (PIPELINE_ID, PIPELINE_RUN_ID);
CREATE INDEX ix_task_run_latest ON AUD_TASK_RUN_LOG (TASK_ID, TASK_RUN_ID);

-- ---------------------------------------------------------------------------
-- The web console's sign-ins (ENGINE migration 0025).
-- ---------------------------------------------------------------------------

-- One row per sign-in: the SHA-256 of the session cookie's value (never the
-- value itself), the API token it signed in with, which decides its name
-- and role at every request (a revoked or expired token ends its sessions),
-- and when it ends. The engine's own bookkeeping: neither guarded nor cloned.
CREATE TABLE CONSOLE_SESSIONS (
    SESSION_SHA256 VARCHAR(64) NOT NULL PRIMARY KEY,
    TOKEN_ID       BIGINT NOT NULL,
    CREATED_AT     TIMESTAMPTZ NOT NULL,
    EXPIRES_AT     TIMESTAMPTZ NOT NULL
);

CREATE INDEX ix_console_sessions_expires ON CONSOLE_SESSIONS (EXPIRES_AT);
