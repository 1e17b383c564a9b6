-- Retries: when a queued retry may start, and whether an attempt's failure
-- may be retried at all. Existing attempts are retryable.

ALTER TABLE AUD_TASK_ATTEMPTS ADD COLUMN NOT_BEFORE TIMESTAMP;

ALTER TABLE AUD_TASK_ATTEMPTS ADD COLUMN RETRYABLE BOOLEAN NOT NULL DEFAULT TRUE CHECK (RETRYABLE IN (TRUE, FALSE));
