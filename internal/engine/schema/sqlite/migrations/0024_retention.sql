-- Retention (etl-craft purge). A purge deletes history in batches, each
-- in a transaction whose purpose is retention; the guards let such a
-- transaction delete, and nothing else: it may not update an append-only
-- row nor a terminal attempt (the guard triggers of those tables are
-- dropped here and made again by the trigger refresh that follows every
-- ENGINE migration).
--
-- Its deletions are not logged key by key for incremental cloning: each
-- batch logs, per table, one CLONE_CHANGES row naming the range of keys it
-- deleted from (ROW_KEY to LAST_KEY), and a clone deletes that range from
-- the mirror and copies the rows of the range the table still has.
--
-- The indexes let the foreign keys find the rows that refer to a deleted
-- run, task run or attempt, and the purge find old rows, without reading
-- whole tables.

ALTER TABLE CLONE_CHANGES ADD COLUMN LAST_KEY;

DROP TRIGGER IF EXISTS trg_actor_guard_aud_run_interventions_update;
DROP TRIGGER IF EXISTS trg_actor_guard_aud_actions_update;
DROP TRIGGER IF EXISTS trg_actor_guard_aud_metadata_changes_update;
DROP TRIGGER IF EXISTS trg_actor_guard_aud_dependency_consumption_update;
DROP TRIGGER IF EXISTS trg_actor_guard_aud_gate_decisions_update;
DROP TRIGGER IF EXISTS trg_actor_guard_aud_task_attempts_update;

DROP TRIGGER trg_clone_aud_pipelines_run_log_delete;
CREATE TRIGGER trg_clone_aud_pipelines_run_log_delete AFTER DELETE ON AUD_PIPELINES_RUN_LOG
WHEN etl_craft_purpose() <> 'retention'
BEGIN
    INSERT INTO CLONE_CHANGES (TABLE_NAME, ROW_KEY) VALUES ('AUD_PIPELINES_RUN_LOG', OLD.PIPELINE_RUN_ID);
END;

DROP TRIGGER trg_clone_aud_task_run_log_delete;
CREATE TRIGGER trg_clone_aud_task_run_log_delete AFTER DELETE ON AUD_TASK_RUN_LOG
WHEN etl_craft_purpose() <> 'retention'
BEGIN
    INSERT INTO CLONE_CHANGES (TABLE_NAME, ROW_KEY) VALUES ('AUD_TASK_RUN_LOG', OLD.TASK_RUN_ID);
END;

DROP TRIGGER trg_clone_aud_task_attempts_delete;
CREATE TRIGGER trg_clone_aud_task_attempts_delete AFTER DELETE ON AUD_TASK_ATTEMPTS
WHEN etl_craft_purpose() <> 'retention'
BEGIN
    INSERT INTO CLONE_CHANGES (TABLE_NAME, ROW_KEY) VALUES ('AUD_TASK_ATTEMPTS', OLD.ATTEMPT_ID);
END;

DROP TRIGGER trg_clone_aud_business_rules_run_log_delete;
CREATE TRIGGER trg_clone_aud_business_rules_run_log_delete AFTER DELETE ON AUD_BUSINESS_RULES_RUN_LOG
WHEN etl_craft_purpose() <> 'retention'
BEGIN
    INSERT INTO CLONE_CHANGES (TABLE_NAME, ROW_KEY) VALUES ('AUD_BUSINESS_RULES_RUN_LOG', OLD.BUSINESS_RULE_RUN_ID);
END;

DROP TRIGGER trg_clone_aud_business_rules_results_delete;
CREATE TRIGGER trg_clone_aud_business_rules_results_delete AFTER DELETE ON AUD_BUSINESS_RULES_RESULTS
WHEN etl_craft_purpose() <> 'retention'
BEGIN
    INSERT INTO CLONE_CHANGES (TABLE_NAME, ROW_KEY) VALUES ('AUD_BUSINESS_RULES_RESULTS', OLD.BUSINESS_RULE_RESULT_ID);
END;

DROP TRIGGER trg_clone_aud_gate_decisions_delete;
CREATE TRIGGER trg_clone_aud_gate_decisions_delete AFTER DELETE ON AUD_GATE_DECISIONS
WHEN etl_craft_purpose() <> 'retention'
BEGIN
    INSERT INTO CLONE_CHANGES (TABLE_NAME, ROW_KEY) VALUES ('AUD_GATE_DECISIONS', OLD.DECISION_ID);
END;

DROP TRIGGER trg_clone_aud_dependency_consumption_delete;
CREATE TRIGGER trg_clone_aud_dependency_consumption_delete AFTER DELETE ON AUD_DEPENDENCY_CONSUMPTION
WHEN etl_craft_purpose() <> 'retention'
BEGIN
    INSERT INTO CLONE_CHANGES (TABLE_NAME, ROW_KEY) VALUES ('AUD_DEPENDENCY_CONSUMPTION', OLD.CONSUMPTION_ID);
END;

DROP TRIGGER trg_clone_aud_run_interventions_delete;
CREATE TRIGGER trg_clone_aud_run_interventions_delete AFTER DELETE ON AUD_RUN_INTERVENTIONS
WHEN etl_craft_purpose() <> 'retention'
BEGIN
    INSERT INTO CLONE_CHANGES (TABLE_NAME, ROW_KEY) VALUES ('AUD_RUN_INTERVENTIONS', OLD.INTERVENTION_ID);
END;

DROP TRIGGER trg_clone_aud_actions_delete;
CREATE TRIGGER trg_clone_aud_actions_delete AFTER DELETE ON AUD_ACTIONS
WHEN etl_craft_purpose() <> 'retention'
BEGIN
    INSERT INTO CLONE_CHANGES (TABLE_NAME, ROW_KEY) VALUES ('AUD_ACTIONS', OLD.ACTION_ID);
END;

DROP TRIGGER trg_clone_aud_metadata_changes_delete;
CREATE TRIGGER trg_clone_aud_metadata_changes_delete AFTER DELETE ON AUD_METADATA_CHANGES
WHEN etl_craft_purpose() <> 'retention'
BEGIN
    INSERT INTO CLONE_CHANGES (TABLE_NAME, ROW_KEY) VALUES ('AUD_METADATA_CHANGES', OLD.CHANGE_ID);
END;

CREATE INDEX ix_gate_decisions_run ON AUD_GATE_DECISIONS (PIPELINE_RUN_ID);
CREATE INDEX ix_gate_decisions_selected_run ON AUD_GATE_DECISIONS (SELECTED_PIPELINE_RUN_ID);
CREATE INDEX ix_gate_decisions_selected_task_run ON AUD_GATE_DECISIONS (SELECTED_TASK_RUN_ID);
CREATE INDEX ix_gate_decisions_attempt ON AUD_GATE_DECISIONS (ATTEMPT_ID);
CREATE INDEX ix_consumption_consumed_run ON AUD_DEPENDENCY_CONSUMPTION (CONSUMED_PIPELINE_RUN_ID);
CREATE INDEX ix_consumption_consumed_task_run ON AUD_DEPENDENCY_CONSUMPTION (CONSUMED_TASK_RUN_ID);
CREATE INDEX ix_br_run_task_run ON AUD_BUSINESS_RULES_RUN_LOG (TASK_RUN_ID);
CREATE INDEX ix_actions_run ON AUD_ACTIONS (PIPELINE_RUN_ID);
CREATE INDEX ix_actions_started ON AUD_ACTIONS (STARTED_AT);
CREATE INDEX ix_metadata_changes_row ON AUD_METADATA_CHANGES (TABLE_NAME, ROW_KEY, CHANGE_ID);
CREATE INDEX ix_metadata_changes_changed ON AUD_METADATA_CHANGES (CHANGED_AT);
CREATE INDEX ix_run_interventions_requested ON AUD_RUN_INTERVENTIONS (REQUESTED_AT);
CREATE INDEX ix_pipeline_run_end ON AUD_PIPELINES_RUN_LOG (END_DATE);
CREATE INDEX ix_pipeline_run_latest ON AUD_PIPELINES_RUN_LOG (PIPELINE_ID, PIPELINE_RUN_ID);
CREATE INDEX ix_task_run_latest ON AUD_TASK_RUN_LOG (TASK_ID, TASK_RUN_ID);
