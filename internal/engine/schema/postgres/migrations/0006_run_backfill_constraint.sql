-- Names the backfill check of the run log ck_pipeline_run_backfill, as a
-- fresh Engine DB has it: the check 0002 added got PostgreSQL's own name.

DO $constraint$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_constraint
                WHERE conrelid = 'aud_pipelines_run_log'::regclass
                  AND conname = 'aud_pipelines_run_log_backfill_check') THEN
        ALTER TABLE AUD_PIPELINES_RUN_LOG
            RENAME CONSTRAINT aud_pipelines_run_log_backfill_check TO ck_pipeline_run_backfill;
    END IF;
END
$constraint$;
