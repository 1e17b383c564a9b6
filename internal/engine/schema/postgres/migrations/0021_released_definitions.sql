-- Today's wording of three things an Engine DB made or upgraded by the
-- reference implementation's 0.2.0 release words its own way: the
-- run-condition check of CFG_TASKS (same meaning), the body of the function
-- that defaults a task dependency's pipeline, and thirteen table and column
-- comments. Each statement sets the definition a fresh Engine DB has, so an
-- Engine DB that already has it is left as it was.

ALTER TABLE CFG_TASKS DROP CONSTRAINT ck_tasks_run_condition_count;

ALTER TABLE CFG_TASKS ADD CONSTRAINT ck_tasks_run_condition_count CHECK (
    (RUN_CONDITION IS NOT DISTINCT FROM 'N' AND RUN_CONDITION_COUNT IS NOT NULL AND RUN_CONDITION_COUNT >= 1)
    OR (RUN_CONDITION IS DISTINCT FROM 'N' AND RUN_CONDITION_COUNT IS NULL));

CREATE OR REPLACE FUNCTION trg_default_depends_on_pipeline() RETURNS trigger
LANGUAGE plpgsql AS $default$
BEGIN
    IF NEW.depends_on_pipeline_id IS NULL THEN
        NEW.depends_on_pipeline_id := NEW.pipeline_id;
    END IF;
    RETURN NEW;
END
$default$;

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
