-- The polling budget of each pipeline or task gate, kept across restarts.
-- TASK_ID NULL is the pipeline admission gate. The trigger refresh gives the
-- table its write and TRUNCATE guards.

CREATE TABLE AUD_GATE_WAITS (
    PIPELINE_RUN_ID BIGINT NOT NULL REFERENCES AUD_PIPELINES_RUN_LOG (PIPELINE_RUN_ID),
    TASK_ID         BIGINT REFERENCES CFG_TASKS (TASK_ID)
                    CONSTRAINT ck_gate_wait_task CHECK (TASK_ID IS NULL OR TASK_ID > 0),
    FIRST_CHECK_AT  TIMESTAMPTZ NOT NULL,
    NEXT_CHECK_AT   TIMESTAMPTZ,
    LOOKS           INT NOT NULL CONSTRAINT ck_gate_wait_looks CHECK (LOOKS >= 0 AND LOOKS <= 30),
    WAIT_UNTIL      TIMESTAMPTZ NOT NULL
);

CREATE UNIQUE INDEX ux_gate_wait ON AUD_GATE_WAITS (PIPELINE_RUN_ID, COALESCE(TASK_ID, 0));
