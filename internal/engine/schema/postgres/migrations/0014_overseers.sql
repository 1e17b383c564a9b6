-- History of server (overseer) processes. Leadership is an advisory lock, not
-- a row: an unclosed row does not stop a successor. The trigger refresh gives
-- the table its write and TRUNCATE guards. Runs, attempts and pauses notify
-- the server when they change.

CREATE TABLE AUD_OVERSEERS (
    OVERSEER_ID     BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    HOST            VARCHAR NOT NULL,
    PID             INTEGER NOT NULL CHECK (PID > 0),
    VERSION         VARCHAR NOT NULL,
    STARTED_AT      TIMESTAMPTZ NOT NULL,
    HEARTBEAT_AT    TIMESTAMPTZ NOT NULL,
    STOPPED_AT      TIMESTAMPTZ,
    STARTED_BY      VARCHAR NOT NULL,
    STARTED_BY_KIND VARCHAR NOT NULL,
    STOPPED_BY      VARCHAR,
    STOPPED_BY_KIND VARCHAR
);

CREATE INDEX ix_overseer_unclosed ON AUD_OVERSEERS (OVERSEER_ID) WHERE STOPPED_AT IS NULL;

COMMENT ON TABLE AUD_OVERSEERS IS
    'History of server processes. Leadership is an advisory lock, not a row: an unclosed row does not stop a successor.';

-- Wakes the server (LISTEN etl_craft_events) when runs, attempts or pauses change.
CREATE OR REPLACE FUNCTION etl_craft_notify_execution() RETURNS trigger
LANGUAGE plpgsql AS $notify$
BEGIN
    PERFORM pg_notify('etl_craft_events', current_schema());
    RETURN NULL;
END
$notify$;
CREATE TRIGGER trg_notify_aud_pipelines_run_log
    AFTER INSERT OR UPDATE OR DELETE ON AUD_PIPELINES_RUN_LOG
    FOR EACH STATEMENT EXECUTE FUNCTION etl_craft_notify_execution();
CREATE TRIGGER trg_notify_aud_task_attempts
    AFTER INSERT OR UPDATE OR DELETE ON AUD_TASK_ATTEMPTS
    FOR EACH STATEMENT EXECUTE FUNCTION etl_craft_notify_execution();
CREATE TRIGGER trg_notify_aud_pipeline_pauses
    AFTER INSERT OR UPDATE OR DELETE ON AUD_PIPELINE_PAUSES
    FOR EACH STATEMENT EXECUTE FUNCTION etl_craft_notify_execution();
