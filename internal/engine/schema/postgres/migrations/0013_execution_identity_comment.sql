-- The pipeline table's comment says what $$pipeline_run_id_filter expands to.

COMMENT ON TABLE CFG_PIPELINES IS
    'One row per pipeline. PIPELINE_CODE is the key the CLI takes; REFRESH_TYPE decides whether $$pipeline_run_id_filter selects only the current run''s rows (INCREMENTAL) or every row (FULL). Also holds the schedule and SLA.';
