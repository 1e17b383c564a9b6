-- Rows a task inserted, updated and deleted. HAS_DATA dependencies read it;
-- for older task runs it stays NULL and they fall back to TARGET_COUNT.

ALTER TABLE AUD_TASK_RUN_LOG ADD COLUMN ROWS_WRITTEN BIGINT;
