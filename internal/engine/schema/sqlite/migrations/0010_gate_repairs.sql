-- etl-craft: rebuild-metadata
--
-- Repairs of published runs. REPAIR_PENDING is set when a run is reopened
-- and cleared when its repair publishes, which increments OUTPUT_REVISION
-- once. Existing revisions are kept; a run still in progress that has a
-- recorded REOPEN stays pending after the upgrade.
--
-- The run log is rebuilt in the guarded rebuild, with the same checks,
-- custom-object preservation, identity-counter protection and refusal of
-- project columns as 0006.

CREATE TABLE AUD_PIPELINES_RUN_LOG_new (
    PIPELINE_RUN_ID  INTEGER PRIMARY KEY AUTOINCREMENT,
    PIPELINE_ID      BIGINT NOT NULL REFERENCES CFG_PIPELINES (PIPELINE_ID),
    START_DATE       TIMESTAMP NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now') || '000+00:00'),
    END_DATE         TIMESTAMP,
    STATUS           VARCHAR NOT NULL,
    SLA_STATUS       VARCHAR(8),
    RUN_DATE         DATE,
    BACKFILL         VARCHAR(1) NOT NULL DEFAULT 'N',
    RUN_KEY          VARCHAR NOT NULL DEFAULT ('manual:' || lower(hex(randomblob(16)))),
    TRIGGER_KIND     VARCHAR NOT NULL DEFAULT 'MANUAL',
    OWNER_ID         VARCHAR,
    LEASE_EXPIRES_AT TIMESTAMP,
    OUTPUT_REVISION  INT NOT NULL DEFAULT 1,
    CONFIG_SHA256    VARCHAR(64),
    STARTED_BY       VARCHAR DEFAULT (etl_craft_actor()),
    STARTED_BY_KIND  VARCHAR DEFAULT (etl_craft_actor_kind())
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
        CHECK (STATUS IN ('IN-PROGRESS', 'SUCCESS', 'FAILED', 'SKIPPED', 'CANCELLED')),
    CONSTRAINT ck_pipeline_run_sla_status CHECK (SLA_STATUS IN ('MET', 'BREACHED'))
);

INSERT INTO AUD_PIPELINES_RUN_LOG_new
    (PIPELINE_RUN_ID, PIPELINE_ID, START_DATE, END_DATE, STATUS, SLA_STATUS, RUN_DATE, BACKFILL,
     RUN_KEY, TRIGGER_KIND, OWNER_ID, LEASE_EXPIRES_AT, OUTPUT_REVISION, CONFIG_SHA256,
     STARTED_BY, STARTED_BY_KIND, ENDED_BY, ENDED_BY_KIND, REPAIR_PENDING)
SELECT r.PIPELINE_RUN_ID, r.PIPELINE_ID, r.START_DATE, r.END_DATE, r.STATUS, r.SLA_STATUS, r.RUN_DATE,
       r.BACKFILL, r.RUN_KEY, r.TRIGGER_KIND, r.OWNER_ID, r.LEASE_EXPIRES_AT, r.OUTPUT_REVISION,
       r.CONFIG_SHA256, r.STARTED_BY, r.STARTED_BY_KIND, r.ENDED_BY, r.ENDED_BY_KIND,
       CASE WHEN r.STATUS = 'IN-PROGRESS'
             AND EXISTS (SELECT 1 FROM AUD_RUN_INTERVENTIONS i
                          WHERE i.PIPELINE_RUN_ID = r.PIPELINE_RUN_ID AND i.ACTION = 'REOPEN')
            THEN 'Y' ELSE 'N' END
  FROM AUD_PIPELINES_RUN_LOG r;

DROP TABLE AUD_PIPELINES_RUN_LOG;

ALTER TABLE AUD_PIPELINES_RUN_LOG_new RENAME TO AUD_PIPELINES_RUN_LOG;

CREATE UNIQUE INDEX ux_pipeline_run_one_active
    ON AUD_PIPELINES_RUN_LOG (PIPELINE_ID) WHERE STATUS = 'IN-PROGRESS';
CREATE INDEX ix_pipeline_run_pipeline ON AUD_PIPELINES_RUN_LOG (PIPELINE_ID);
CREATE UNIQUE INDEX ux_pipeline_run_key ON AUD_PIPELINES_RUN_LOG (PIPELINE_ID, RUN_KEY);

-- The defaults attribute a run to the actor; this fills what an insert left
-- NULL explicitly, and the ending actor of a run inserted already ended.
-- Later endings write ENDED_BY and ENDED_BY_KIND themselves.
CREATE TRIGGER trg_attribute_run_insert
AFTER INSERT ON AUD_PIPELINES_RUN_LOG
WHEN NEW.STARTED_BY IS NULL OR NEW.STARTED_BY_KIND IS NULL
  OR (NEW.END_DATE IS NOT NULL AND (NEW.ENDED_BY IS NULL OR NEW.ENDED_BY_KIND IS NULL))
BEGIN
    UPDATE AUD_PIPELINES_RUN_LOG
       SET STARTED_BY = COALESCE(NEW.STARTED_BY, etl_craft_actor()),
           STARTED_BY_KIND = COALESCE(NEW.STARTED_BY_KIND, etl_craft_actor_kind()),
           ENDED_BY = CASE WHEN NEW.END_DATE IS NULL THEN NEW.ENDED_BY
                           ELSE COALESCE(NEW.ENDED_BY, etl_craft_actor()) END,
           ENDED_BY_KIND = CASE WHEN NEW.END_DATE IS NULL THEN NEW.ENDED_BY_KIND
                                ELSE COALESCE(NEW.ENDED_BY_KIND, etl_craft_actor_kind()) END
     WHERE PIPELINE_RUN_ID = NEW.PIPELINE_RUN_ID;
END;
