-- Pipeline and task codes start with an ASCII letter and hold only letters,
-- digits and underscores, at most 128 characters. migrate lists every code
-- that breaks the rule before this file runs (marker check-metadata-codes).
-- Each check is added without reading the table, then validated.

ALTER TABLE CFG_PIPELINES
    ADD CONSTRAINT ck_pipelines_code CHECK (PIPELINE_CODE ~ '^[A-Za-z][A-Za-z0-9_]{0,127}$') NOT VALID;

ALTER TABLE CFG_PIPELINES VALIDATE CONSTRAINT ck_pipelines_code;

ALTER TABLE CFG_TASKS
    ADD CONSTRAINT ck_tasks_code CHECK (TASK_CODE ~ '^[A-Za-z][A-Za-z0-9_]{0,127}$') NOT VALID;

ALTER TABLE CFG_TASKS VALIDATE CONSTRAINT ck_tasks_code;
