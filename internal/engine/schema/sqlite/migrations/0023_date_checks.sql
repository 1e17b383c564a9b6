-- The Engine DB refuses a malformed date itself: a run's RUN_DATE and a
-- pipeline's SCHEDULE_START_DATE must be a real date written YYYY-MM-DD,
-- from 0001-01-01 to 9999-12-31, or NULL. SQLite keeps a DATE column as
-- text. Each rule is a pair of triggers refusing an insert or an update of
-- the column, not a check: SQLite cannot add a check to a table that
-- exists, and rebuilding the tables would copy the values already stored,
-- which a check would refuse. Rows already stored stay as they are (a
-- clone names one it cannot read), and their other columns still change.

CREATE TRIGGER trg_check_run_date_insert BEFORE INSERT ON AUD_PIPELINES_RUN_LOG
WHEN NEW.RUN_DATE IS NOT NULL AND NOT (typeof(NEW.RUN_DATE) = 'text'
    AND date(NEW.RUN_DATE, '+0 days') IS NEW.RUN_DATE AND NEW.RUN_DATE >= '0001-01-01')
BEGIN
    SELECT RAISE(ABORT, 'AUD_PIPELINES_RUN_LOG.RUN_DATE must be a date written YYYY-MM-DD, from 0001-01-01 to 9999-12-31');
END;

CREATE TRIGGER trg_check_run_date_update BEFORE UPDATE OF RUN_DATE ON AUD_PIPELINES_RUN_LOG
WHEN NEW.RUN_DATE IS NOT NULL AND NOT (typeof(NEW.RUN_DATE) = 'text'
    AND date(NEW.RUN_DATE, '+0 days') IS NEW.RUN_DATE AND NEW.RUN_DATE >= '0001-01-01')
BEGIN
    SELECT RAISE(ABORT, 'AUD_PIPELINES_RUN_LOG.RUN_DATE must be a date written YYYY-MM-DD, from 0001-01-01 to 9999-12-31');
END;

CREATE TRIGGER trg_check_schedule_start_date_insert BEFORE INSERT ON CFG_PIPELINES
WHEN NEW.SCHEDULE_START_DATE IS NOT NULL AND NOT (typeof(NEW.SCHEDULE_START_DATE) = 'text'
    AND date(NEW.SCHEDULE_START_DATE, '+0 days') IS NEW.SCHEDULE_START_DATE AND NEW.SCHEDULE_START_DATE >= '0001-01-01')
BEGIN
    SELECT RAISE(ABORT, 'CFG_PIPELINES.SCHEDULE_START_DATE must be a date written YYYY-MM-DD, from 0001-01-01 to 9999-12-31');
END;

CREATE TRIGGER trg_check_schedule_start_date_update BEFORE UPDATE OF SCHEDULE_START_DATE ON CFG_PIPELINES
WHEN NEW.SCHEDULE_START_DATE IS NOT NULL AND NOT (typeof(NEW.SCHEDULE_START_DATE) = 'text'
    AND date(NEW.SCHEDULE_START_DATE, '+0 days') IS NEW.SCHEDULE_START_DATE AND NEW.SCHEDULE_START_DATE >= '0001-01-01')
BEGIN
    SELECT RAISE(ABORT, 'CFG_PIPELINES.SCHEDULE_START_DATE must be a date written YYYY-MM-DD, from 0001-01-01 to 9999-12-31');
END;
