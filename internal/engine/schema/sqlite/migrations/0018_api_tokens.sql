-- Bearer credentials of the HTTP API: only the SHA-256 of each token is kept.
-- The trigger refresh guards the table like an AUD_ table.

CREATE TABLE CFG_API_TOKENS (
    TOKEN_ID     INTEGER PRIMARY KEY AUTOINCREMENT,
    NAME         VARCHAR(128) NOT NULL,
    TOKEN_SHA256 VARCHAR(64) NOT NULL UNIQUE,
    ROLE         VARCHAR(16) NOT NULL CHECK (ROLE IN ('viewer', 'operator', 'admin')),
    PROJECT_ID   BIGINT,
    CREATED_BY   VARCHAR(128) NOT NULL,
    CREATED_AT   TIMESTAMP NOT NULL,
    EXPIRES_AT   TIMESTAMP,
    REVOKED_AT   TIMESTAMP
);
