-- History of server (overseer) processes. Leadership is a lock, not a row:
-- an unclosed row does not stop a successor. The trigger refresh gives the
-- table its write guard.

CREATE TABLE AUD_OVERSEERS (
    OVERSEER_ID     INTEGER PRIMARY KEY AUTOINCREMENT,
    HOST            VARCHAR NOT NULL,
    PID             INTEGER NOT NULL CHECK (PID > 0),
    VERSION         VARCHAR NOT NULL,
    STARTED_AT      TIMESTAMP NOT NULL,
    HEARTBEAT_AT    TIMESTAMP NOT NULL,
    STOPPED_AT      TIMESTAMP,
    STARTED_BY      VARCHAR NOT NULL,
    STARTED_BY_KIND VARCHAR NOT NULL,
    STOPPED_BY      VARCHAR,
    STOPPED_BY_KIND VARCHAR
);

CREATE INDEX ix_overseer_unclosed ON AUD_OVERSEERS (OVERSEER_ID) WHERE STOPPED_AT IS NULL;
