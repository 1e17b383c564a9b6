-- The statement hash of each CREATE_VIEW target, so that run recreates a view
-- only when its statement changed. The trigger refresh gives the table its
-- write guard.

CREATE TABLE AUD_TARGET_VIEW_STATEMENT (
    TARGET_OBJECT    VARCHAR NOT NULL PRIMARY KEY,
    STATEMENT_SHA256 VARCHAR(64) NOT NULL,
    RECORDED_AT      TIMESTAMP NOT NULL
);
