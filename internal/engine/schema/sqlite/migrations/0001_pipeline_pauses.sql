-- Pause history: a paused pipeline starts no new run until it is resumed.
-- At most one open pause per pipeline.

CREATE TABLE AUD_PIPELINE_PAUSES (
    PIPELINE_PAUSE_ID INTEGER PRIMARY KEY AUTOINCREMENT,
    PIPELINE_ID       BIGINT NOT NULL REFERENCES CFG_PIPELINES (PIPELINE_ID),
    PAUSED_AT         TIMESTAMP NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now') || '000+00:00'),
    PAUSED_BY         VARCHAR NOT NULL,
    REASON            VARCHAR NOT NULL,
    RESUMED_AT        TIMESTAMP,
    RESUMED_BY        VARCHAR,
    RESUME_REASON     VARCHAR
);

CREATE UNIQUE INDEX ux_pipeline_pauses_open ON AUD_PIPELINE_PAUSES (PIPELINE_ID) WHERE RESUMED_AT IS NULL;
