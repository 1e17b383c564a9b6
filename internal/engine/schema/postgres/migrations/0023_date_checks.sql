-- The Engine DB refuses a date outside 0001-01-01 to 9999-12-31 itself: a
-- run's RUN_DATE and a pipeline's SCHEDULE_START_DATE (a DATE column holds
-- no malformed text on PostgreSQL, but years before 1 and after 9999). As
-- on SQLite, whose DATE columns are text, each rule is a trigger refusing
-- an insert or an update of the column, not a check: a check would refuse
-- every later change of a row already stored with such a date, so that a
-- run could no longer end. Rows already stored stay as they are.

CREATE OR REPLACE FUNCTION etl_craft_check_run_date() RETURNS trigger
LANGUAGE plpgsql AS $check$
BEGIN
    IF NOT (NEW.run_date BETWEEN DATE '0001-01-01' AND DATE '9999-12-31') THEN
        RAISE EXCEPTION 'AUD_PIPELINES_RUN_LOG.RUN_DATE must be a date written YYYY-MM-DD, from 0001-01-01 to 9999-12-31'
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END
$check$;

CREATE OR REPLACE FUNCTION etl_craft_check_schedule_start_date() RETURNS trigger
LANGUAGE plpgsql AS $check$
BEGIN
    IF NOT (NEW.schedule_start_date BETWEEN DATE '0001-01-01' AND DATE '9999-12-31') THEN
        RAISE EXCEPTION 'CFG_PIPELINES.SCHEDULE_START_DATE must be a date written YYYY-MM-DD, from 0001-01-01 to 9999-12-31'
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END
$check$;

CREATE TRIGGER trg_check_run_date
    BEFORE INSERT OR UPDATE OF RUN_DATE ON AUD_PIPELINES_RUN_LOG
    FOR EACH ROW EXECUTE FUNCTION etl_craft_check_run_date();

CREATE TRIGGER trg_check_schedule_start_date
    BEFORE INSERT OR UPDATE OF SCHEDULE_START_DATE ON CFG_PIPELINES
    FOR EACH ROW EXECUTE FUNCTION etl_craft_check_schedule_start_date();
