-- The "as of" date of a run ($$run_date) and whether it is a backfill.
-- Existing runs get the date of their start and are not backfills.

ALTER TABLE AUD_PIPELINES_RUN_LOG ADD COLUMN RUN_DATE DATE;

ALTER TABLE AUD_PIPELINES_RUN_LOG ADD COLUMN BACKFILL VARCHAR(1) NOT NULL DEFAULT 'N' CHECK (BACKFILL IN ('Y', 'N'));

-- Start dates are UTC text: the first ten characters are the date.
UPDATE AUD_PIPELINES_RUN_LOG SET RUN_DATE = substr(START_DATE, 1, 10) WHERE RUN_DATE IS NULL;
