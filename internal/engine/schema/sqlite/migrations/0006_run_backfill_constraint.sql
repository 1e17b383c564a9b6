-- Names the backfill check of the run log ck_pipeline_run_backfill, as a
-- fresh Engine DB has it. SQLite cannot rename a constraint: the table is
-- rebuilt in the guarded rebuild (marker rebuild-metadata), which keeps run
-- ids, the identity counter, every reference to the runs and the project's
-- own indexes, triggers and views. A run table with columns of the
-- project's own is refused before anything changes.

CREATE TABLE AUD_PIPELINES_RUN_LOG_new (
    PIPELINE_RUN_ID INTEGER PRIMARY KEY AUTOINCREMENT,
    PIPELINE_ID     BIGINT NOT NULL REFERENCES CFG_PIPELINES (PIPELINE_ID),
    START_DATE      TIMESTAMP NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now') || '000+00:00'),
    END_DATE        TIMESTAMP,
    STATUS          VARCHAR NOT NULL,
    SLA_STATUS      VARCHAR(8),
    RUN_DATE        DATE,
    BACKFILL        VARCHAR(1) NOT NULL DEFAULT 'N',
    CONSTRAINT ck_pipeline_run_backfill CHECK (BACKFILL IN ('Y', 'N')),
    CONSTRAINT ck_pipeline_run_status
        CHECK (STATUS IN ('IN-PROGRESS', 'SUCCESS', 'FAILED', 'SKIPPED', 'CANCELLED')),
    CONSTRAINT ck_pipeline_run_sla_status CHECK (SLA_STATUS IN ('MET', 'BREACHED'))
);

INSERT INTO AUD_PIPELINES_RUN_LOG_new
    (PIPELINE_RUN_ID, PIPELINE_ID, START_DATE, END_DATE, STATUS, SLA_STATUS, RUN_DATE, BACKFILL)
SELECT PIPELINE_RUN_ID, PIPELINE_ID, START_DATE, END_DATE, STATUS, SLA_STATUS, RUN_DATE, BACKFILL
  FROM AUD_PIPELINES_RUN_LOG;

DROP TABLE AUD_PIPELINES_RUN_LOG;

ALTER TABLE AUD_PIPELINES_RUN_LOG_new RENAME TO AUD_PIPELINES_RUN_LOG;

CREATE UNIQUE INDEX ux_pipeline_run_one_active
    ON AUD_PIPELINES_RUN_LOG (PIPELINE_ID) WHERE STATUS = 'IN-PROGRESS';
CREATE INDEX ix_pipeline_run_pipeline ON AUD_PIPELINES_RUN_LOG (PIPELINE_ID);
