-- The "as of" date of a run ($$run_date) and whether it is a backfill.
-- Existing runs get the UTC date of their start and are not backfills.

ALTER TABLE AUD_PIPELINES_RUN_LOG ADD COLUMN RUN_DATE DATE;

ALTER TABLE AUD_PIPELINES_RUN_LOG ADD COLUMN BACKFILL VARCHAR(1) NOT NULL DEFAULT 'N' CHECK (BACKFILL IN ('Y', 'N'));

UPDATE AUD_PIPELINES_RUN_LOG SET RUN_DATE = (START_DATE AT TIME ZONE 'UTC')::date WHERE RUN_DATE IS NULL;
