-- The web console (etl-craft server, internal/console). CONSOLE_SESSIONS
-- holds one row per sign-in: the SHA-256 of the session cookie's value
-- (never the value itself), the API token it signed in with, which decides
-- its name and role at every request (a revoked or expired token ends its
-- sessions), and when it ends. Like CLONE_ tables it is the engine's own
-- bookkeeping: neither guarded nor cloned. The partial index of QUEUED
-- runs serves the pipelines and server pages, which count and list them on
-- every view (a run's page reads AUD_GATE_DECISIONS by the index of
-- migration 0024).

CREATE TABLE CONSOLE_SESSIONS (
    SESSION_SHA256 VARCHAR(64) NOT NULL PRIMARY KEY,
    TOKEN_ID       BIGINT NOT NULL,
    CREATED_AT     TIMESTAMPTZ NOT NULL,
    EXPIRES_AT     TIMESTAMPTZ NOT NULL
);

CREATE INDEX ix_console_sessions_expires ON CONSOLE_SESSIONS (EXPIRES_AT);

CREATE INDEX ix_pipeline_run_queued ON AUD_PIPELINES_RUN_LOG (PIPELINE_ID) WHERE STATUS = 'QUEUED';
