-- Pipeline and task codes start with an ASCII letter and hold only letters,
-- digits and underscores, at most 128 characters. migrate lists every code
-- that breaks the rule before this file runs (marker check-metadata-codes),
-- so the copies below cannot fail on a code.
--
-- SQLite cannot add a CHECK to an existing table: both tables are rebuilt in
-- the guarded rebuild (marker rebuild-metadata), which keeps ids, identity
-- counters, references, and the project's own indexes, triggers and views.
-- A table with columns of the project's own is refused before anything
-- changes.

CREATE TABLE CFG_PIPELINES_new (
    PIPELINE_ID         INTEGER PRIMARY KEY AUTOINCREMENT,
    PIPELINE_CODE       VARCHAR NOT NULL,
    PIPELINE_NAME       VARCHAR NOT NULL,
    DESCRIPTION         VARCHAR,
    RUN_SCHEDULE        VARCHAR,
    SLA_IN_HOURS        NUMERIC,
    REFRESH_TYPE        VARCHAR NOT NULL,
    ACTIVE_FLAG         VARCHAR NOT NULL DEFAULT 'Y',
    PIPELINE_PARAMETERS TEXT,
    CREATED_BY          VARCHAR DEFAULT 'etl-craft',
    CREATE_DATE         TIMESTAMP DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now') || '000+00:00'),
    UPDATED_BY          VARCHAR DEFAULT 'etl-craft',
    UPDATED_DATE        TIMESTAMP DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now') || '000+00:00'),
    CONSTRAINT ck_pipelines_code CHECK (
        PIPELINE_CODE GLOB '[A-Za-z]*'
        AND PIPELINE_CODE NOT GLOB '*[^A-Za-z0-9_]*'
        AND length(PIPELINE_CODE) <= 128
        AND instr(PIPELINE_CODE, char(0)) = 0),
    CONSTRAINT ck_pipelines_refresh_type CHECK (REFRESH_TYPE IN ('FULL', 'INCREMENTAL')),
    CONSTRAINT ck_pipelines_active_flag CHECK (ACTIVE_FLAG IN ('Y', 'N')),
    CONSTRAINT ck_pipelines_parameters_json
        CHECK (PIPELINE_PARAMETERS IS NULL OR json_valid(PIPELINE_PARAMETERS))
);

INSERT INTO CFG_PIPELINES_new
    (PIPELINE_ID, PIPELINE_CODE, PIPELINE_NAME, DESCRIPTION, RUN_SCHEDULE, SLA_IN_HOURS, REFRESH_TYPE,
     ACTIVE_FLAG, PIPELINE_PARAMETERS, CREATED_BY, CREATE_DATE, UPDATED_BY, UPDATED_DATE)
SELECT PIPELINE_ID, PIPELINE_CODE, PIPELINE_NAME, DESCRIPTION, RUN_SCHEDULE, SLA_IN_HOURS, REFRESH_TYPE,
       ACTIVE_FLAG, PIPELINE_PARAMETERS, CREATED_BY, CREATE_DATE, UPDATED_BY, UPDATED_DATE
  FROM CFG_PIPELINES;

DROP TABLE CFG_PIPELINES;

ALTER TABLE CFG_PIPELINES_new RENAME TO CFG_PIPELINES;

CREATE UNIQUE INDEX ux_pipelines_code_active ON CFG_PIPELINES (PIPELINE_CODE) WHERE ACTIVE_FLAG = 'Y';

CREATE TABLE CFG_TASKS_new (
    TASK_ID             INTEGER PRIMARY KEY AUTOINCREMENT,
    TASK_CODE           VARCHAR NOT NULL,
    TASK_TYPE           VARCHAR NOT NULL,
    PIPELINE_ID         BIGINT NOT NULL REFERENCES CFG_PIPELINES (PIPELINE_ID),
    HANDLER             VARCHAR NOT NULL,
    RUN_CONDITION       VARCHAR,
    RUN_CONDITION_COUNT INT,
    ACTIVE_FLAG         VARCHAR NOT NULL DEFAULT 'Y',
    CREATED_BY          VARCHAR DEFAULT 'etl-craft',
    CREATE_DATE         TIMESTAMP DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now') || '000+00:00'),
    UPDATED_BY          VARCHAR DEFAULT 'etl-craft',
    UPDATED_DATE        TIMESTAMP DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now') || '000+00:00'),
    CONSTRAINT ck_tasks_code CHECK (
        TASK_CODE GLOB '[A-Za-z]*'
        AND TASK_CODE NOT GLOB '*[^A-Za-z0-9_]*'
        AND length(TASK_CODE) <= 128
        AND instr(TASK_CODE, char(0)) = 0),
    CONSTRAINT ck_tasks_task_type CHECK (TASK_TYPE IN ('INGESTION', 'ETL')),
    CONSTRAINT ck_tasks_handler CHECK (HANDLER IN ('PYTHON', 'SQL', 'BUSINESS_RULES', 'EMAIL_ALERT')),
    CONSTRAINT ck_tasks_active_flag CHECK (ACTIVE_FLAG IN ('Y', 'N')),
    CONSTRAINT ck_tasks_run_condition CHECK (RUN_CONDITION IS NULL OR RUN_CONDITION IN ('ALL', 'ANY', 'N')),
    CONSTRAINT ck_tasks_run_condition_count CHECK (
        (RUN_CONDITION IS 'N' AND RUN_CONDITION_COUNT IS NOT NULL AND RUN_CONDITION_COUNT >= 1)
        OR (RUN_CONDITION IS NOT 'N' AND RUN_CONDITION_COUNT IS NULL))
);

INSERT INTO CFG_TASKS_new
    (TASK_ID, TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER, RUN_CONDITION, RUN_CONDITION_COUNT, ACTIVE_FLAG,
     CREATED_BY, CREATE_DATE, UPDATED_BY, UPDATED_DATE)
SELECT TASK_ID, TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER, RUN_CONDITION, RUN_CONDITION_COUNT, ACTIVE_FLAG,
       CREATED_BY, CREATE_DATE, UPDATED_BY, UPDATED_DATE
  FROM CFG_TASKS;

DROP TABLE CFG_TASKS;

ALTER TABLE CFG_TASKS_new RENAME TO CFG_TASKS;

CREATE UNIQUE INDEX ux_tasks_code_active ON CFG_TASKS (PIPELINE_ID, TASK_CODE) WHERE ACTIVE_FLAG = 'Y';
