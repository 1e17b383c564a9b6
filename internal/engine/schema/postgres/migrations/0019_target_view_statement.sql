-- The statement hash of each CREATE_VIEW target, so that run recreates a view
-- only when its statement changed. The trigger refresh gives the table its
-- write and TRUNCATE guards.

CREATE TABLE AUD_TARGET_VIEW_STATEMENT (
    TARGET_OBJECT    VARCHAR PRIMARY KEY,
    STATEMENT_SHA256 VARCHAR(64) NOT NULL,
    RECORDED_AT      TIMESTAMPTZ NOT NULL
);
