-- Retention (etl-craft purge). A purge deletes history in batches, each
-- in a transaction whose purpose is retention; the guards let such a
-- transaction delete, and nothing else: it may not update an append-only
-- row nor a terminal attempt (etl_craft_guard, replaced here).
--
-- Its deletions are not logged key by key for incremental cloning: each
-- batch logs, per table, one CLONE_CHANGES row naming the range of keys it
-- deleted from (ROW_KEY to LAST_KEY), and a clone deletes that range from
-- the mirror and copies the rows of the range the table still has.
--
-- The indexes let the foreign keys find the rows that refer to a deleted
-- run, task run or attempt, and the purge find old rows, without reading
-- whole tables.

ALTER TABLE CLONE_CHANGES ADD COLUMN LAST_KEY VARCHAR;

CREATE OR REPLACE FUNCTION etl_craft_guard() RETURNS trigger
LANGUAGE plpgsql AS $guard$
DECLARE
    v_table text := upper(TG_TABLE_NAME);
    v_purge boolean := COALESCE(current_setting('etl_craft.purpose', true), '') = 'retention' AND TG_OP = 'DELETE';
BEGIN
    IF COALESCE(current_setting('etl_craft.actor', true), '') = '' THEN
        RAISE EXCEPTION '% is written only by etl-craft: %', v_table,
            CASE
                WHEN v_table = 'CFG_API_TOKENS' THEN 'manage API tokens with etl-craft token'
                WHEN left(v_table, 4) = 'CFG_' THEN 'change metadata in a project migration and run etl-craft migrate'
                WHEN v_table = 'AUD_TARGET_HASH_VERSION' THEN 'upgrade merge targets with etl-craft rehash'
                WHEN v_table = 'AUD_TARGET_VIEW_STATEMENT' THEN 'etl-craft run records view statements'
                ELSE 'audit rows change only through etl-craft commands such as run, mark and cancel'
            END
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF TG_OP <> 'INSERT' AND NOT v_purge THEN
        IF v_table IN ('AUD_RUN_INTERVENTIONS', 'AUD_ACTIONS', 'AUD_METADATA_CHANGES',
                       'AUD_DEPENDENCY_CONSUMPTION', 'AUD_GATE_DECISIONS') THEN
            RAISE EXCEPTION '% is append-only: its rows are immutable history; add a new row instead', v_table
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        IF v_table = 'AUD_TASK_ATTEMPTS' THEN
            IF TG_OP = 'TRUNCATE' THEN
                RAISE EXCEPTION '% cannot be truncated: terminal attempt rows are immutable', v_table
                    USING ERRCODE = 'insufficient_privilege';
            END IF;
            IF OLD.status NOT IN ('QUEUED', 'CLAIMED', 'RUNNING') THEN
                RAISE EXCEPTION '% row is immutable: the attempt is terminal; queue a new attempt instead', v_table
                    USING ERRCODE = 'insufficient_privilege';
            END IF;
        END IF;
    END IF;
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    RETURN NEW;
END
$guard$;

CREATE OR REPLACE FUNCTION trg_clone_change() RETURNS trigger
LANGUAGE plpgsql AS $clone$
DECLARE
    v_old text;
    v_new text;
BEGIN
    IF TG_OP = 'DELETE' AND COALESCE(current_setting('etl_craft.purpose', true), '') = 'retention' THEN
        RETURN NULL; -- the purge logs the range of keys it deleted
    END IF;
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
