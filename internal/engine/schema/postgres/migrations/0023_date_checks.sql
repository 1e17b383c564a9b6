-- The Engine DB refuses a date outside 0001-01-01 to 9999-12-31 itself: a
-- run's RUN_DATE and a pipeline's SCHEDULE_START_DATE (a DATE column holds
-- no malformed text on PostgreSQL, but years before 1 and after 9999). The
-- checks are added NOT VALID, so that rows already stored never stop the
-- upgrade, then validated when every row keeps them, as a fresh Engine DB
-- has them.

ALTER TABLE AUD_PIPELINES_RUN_LOG ADD CONSTRAINT ck_pipeline_run_date
    CHECK (RUN_DATE BETWEEN DATE '0001-01-01' AND DATE '9999-12-31') NOT VALID;

ALTER TABLE CFG_PIPELINES ADD CONSTRAINT ck_pipelines_schedule_start_date
    CHECK (SCHEDULE_START_DATE BETWEEN DATE '0001-01-01' AND DATE '9999-12-31') NOT VALID;

DO $validate$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM AUD_PIPELINES_RUN_LOG
                    WHERE NOT (RUN_DATE BETWEEN DATE '0001-01-01' AND DATE '9999-12-31')) THEN
        ALTER TABLE AUD_PIPELINES_RUN_LOG VALIDATE CONSTRAINT ck_pipeline_run_date;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM CFG_PIPELINES
                    WHERE NOT (SCHEDULE_START_DATE BETWEEN DATE '0001-01-01' AND DATE '9999-12-31')) THEN
        ALTER TABLE CFG_PIPELINES VALIDATE CONSTRAINT ck_pipelines_schedule_start_date;
    END IF;
END
$validate$;
