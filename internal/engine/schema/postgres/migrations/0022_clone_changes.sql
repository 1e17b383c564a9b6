-- Incremental cloning. clone_changes logs the key of every row inserted,
-- updated or deleted in a cloned table; CHANGE_SEQ is the writing transaction's
-- id (txid_current()):
-- a clone copies the keys whose transaction its last snapshot did not see,
-- so a transaction that commits late is never missed. clone_state is what
-- each clone left in each mirror: the proof the next clone checks before it
-- trusts the mirror.

CREATE TABLE CLONE_CHANGES (
    CHANGE_SEQ BIGINT NOT NULL,
    TABLE_NAME VARCHAR NOT NULL,
    ROW_KEY    VARCHAR
);

CREATE INDEX ix_clone_changes_table ON CLONE_CHANGES (TABLE_NAME, CHANGE_SEQ);

CREATE TABLE CLONE_STATE (
    MIRROR       VARCHAR NOT NULL PRIMARY KEY,
    ENGINE_TABLE VARCHAR NOT NULL,
    ROW_COUNT    BIGINT NOT NULL,
    HIGH_KEY     VARCHAR,
    MARK         VARCHAR NOT NULL,
    PROOF        VARCHAR NOT NULL,
    CLONED_AT    TIMESTAMPTZ NOT NULL
);

-- TG_ARGV[0] is the table's key column.
CREATE OR REPLACE FUNCTION trg_clone_change() RETURNS trigger
LANGUAGE plpgsql AS $clone$
DECLARE
    v_old text;
    v_new text;
BEGIN
    IF TG_OP <> 'INSERT' THEN
        v_old := to_jsonb(OLD) ->> lower(TG_ARGV[0]);
    END IF;
    IF TG_OP <> 'DELETE' THEN
        v_new := to_jsonb(NEW) ->> lower(TG_ARGV[0]);
        INSERT INTO clone_changes (change_seq, table_name, row_key) VALUES (txid_current(), upper(TG_TABLE_NAME), v_new);
    END IF;
    IF TG_OP <> 'INSERT' AND v_old IS DISTINCT FROM v_new THEN
        INSERT INTO clone_changes (change_seq, table_name, row_key) VALUES (txid_current(), upper(TG_TABLE_NAME), v_old);
    END IF;
    RETURN NULL;
END
$clone$;

CREATE TRIGGER trg_clone_cfg_pipelines AFTER INSERT OR UPDATE OR DELETE ON CFG_PIPELINES
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('PIPELINE_ID');

CREATE TRIGGER trg_clone_cfg_pipeline_dependency AFTER INSERT OR UPDATE OR DELETE ON CFG_PIPELINE_DEPENDENCY
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('PIPELINE_DEPENDENCY_ID');

CREATE TRIGGER trg_clone_cfg_tasks AFTER INSERT OR UPDATE OR DELETE ON CFG_TASKS
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('TASK_ID');

CREATE TRIGGER trg_clone_cfg_task_dependency AFTER INSERT OR UPDATE OR DELETE ON CFG_TASK_DEPENDENCY
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('TASK_DEPENDENCY_ID');

CREATE TRIGGER trg_clone_cfg_task_parameters AFTER INSERT OR UPDATE OR DELETE ON CFG_TASK_PARAMETERS
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('TASK_PARAMETER_ID');

CREATE TRIGGER trg_clone_cfg_business_rules AFTER INSERT OR UPDATE OR DELETE ON CFG_BUSINESS_RULES
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('BUSINESS_RULE_ID');

CREATE TRIGGER trg_clone_aud_pipelines_run_log AFTER INSERT OR UPDATE OR DELETE ON AUD_PIPELINES_RUN_LOG
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('PIPELINE_RUN_ID');

CREATE TRIGGER trg_clone_aud_task_run_log AFTER INSERT OR UPDATE OR DELETE ON AUD_TASK_RUN_LOG
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('TASK_RUN_ID');

CREATE TRIGGER trg_clone_aud_run_interventions AFTER INSERT OR UPDATE OR DELETE ON AUD_RUN_INTERVENTIONS
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('INTERVENTION_ID');

CREATE TRIGGER trg_clone_aud_pipeline_pauses AFTER INSERT OR UPDATE OR DELETE ON AUD_PIPELINE_PAUSES
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('PIPELINE_PAUSE_ID');

CREATE TRIGGER trg_clone_aud_business_rules_run_log AFTER INSERT OR UPDATE OR DELETE ON AUD_BUSINESS_RULES_RUN_LOG
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('BUSINESS_RULE_RUN_ID');

CREATE TRIGGER trg_clone_aud_business_rules_results AFTER INSERT OR UPDATE OR DELETE ON AUD_BUSINESS_RULES_RESULTS
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('BUSINESS_RULE_RESULT_ID');

CREATE TRIGGER trg_clone_aud_task_offset_tracker AFTER INSERT OR UPDATE OR DELETE ON AUD_TASK_OFFSET_TRACKER
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('TASK_ID');

CREATE TRIGGER trg_clone_aud_column_lineage AFTER INSERT OR UPDATE OR DELETE ON AUD_COLUMN_LINEAGE
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('COLUMN_LINEAGE_ID');

CREATE TRIGGER trg_clone_aud_docs_publication AFTER INSERT OR UPDATE OR DELETE ON AUD_DOCS_PUBLICATION
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('DOCS_PUBLICATION_ID');

CREATE TRIGGER trg_clone_aud_task_documentation AFTER INSERT OR UPDATE OR DELETE ON AUD_TASK_DOCUMENTATION
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('TASK_DOCUMENTATION_ID');

CREATE TRIGGER trg_clone_aud_dependency_consumption AFTER INSERT OR UPDATE OR DELETE ON AUD_DEPENDENCY_CONSUMPTION
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('CONSUMPTION_ID');

CREATE TRIGGER trg_clone_aud_task_attempts AFTER INSERT OR UPDATE OR DELETE ON AUD_TASK_ATTEMPTS
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('ATTEMPT_ID');

CREATE TRIGGER trg_clone_aud_gate_decisions AFTER INSERT OR UPDATE OR DELETE ON AUD_GATE_DECISIONS
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('DECISION_ID');

CREATE TRIGGER trg_clone_aud_actions AFTER INSERT OR UPDATE OR DELETE ON AUD_ACTIONS
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('ACTION_ID');

CREATE TRIGGER trg_clone_aud_metadata_changes AFTER INSERT OR UPDATE OR DELETE ON AUD_METADATA_CHANGES
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('CHANGE_ID');

CREATE TRIGGER trg_clone_aud_target_hash_version AFTER INSERT OR UPDATE OR DELETE ON AUD_TARGET_HASH_VERSION
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('TARGET_OBJECT');

CREATE TRIGGER trg_clone_aud_target_view_statement AFTER INSERT OR UPDATE OR DELETE ON AUD_TARGET_VIEW_STATEMENT
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('TARGET_OBJECT');

CREATE TRIGGER trg_clone_aud_overseers AFTER INSERT OR UPDATE OR DELETE ON AUD_OVERSEERS
    FOR EACH ROW EXECUTE FUNCTION trg_clone_change('OVERSEER_ID');
