-- Request, ending and resuming actors are attributed when they happen, and
-- only then: request actors on insert, the ending actor when END_DATE is
-- first set, the resuming actor when RESUMED_AT is first set. An update of a
-- historical row never fills them, so no actor is invented for it.

-- Attributes runs, attempts, interventions and pauses to the actor where the
-- writer left the actor columns NULL; explicit values are kept. Request
-- actors are filled on insert only; ending and resuming actors when the
-- ending or resume time is first set.
CREATE OR REPLACE FUNCTION etl_craft_attribute() RETURNS trigger
LANGUAGE plpgsql AS $attribute$
DECLARE
    v_actor text := current_setting('etl_craft.actor', true);
    v_kind text := current_setting('etl_craft.actor_kind', true);
BEGIN
    IF TG_TABLE_NAME = 'aud_pipelines_run_log' THEN
        IF TG_OP = 'INSERT' THEN
            NEW.started_by := COALESCE(NEW.started_by, v_actor);
            NEW.started_by_kind := COALESCE(NEW.started_by_kind, v_kind);
        END IF;
        IF NEW.end_date IS NOT NULL AND (TG_OP = 'INSERT' OR OLD.end_date IS NULL) THEN
            NEW.ended_by := COALESCE(NEW.ended_by, v_actor);
            NEW.ended_by_kind := COALESCE(NEW.ended_by_kind, v_kind);
        END IF;
    ELSIF TG_TABLE_NAME IN ('aud_task_attempts', 'aud_run_interventions') THEN
        IF TG_OP = 'INSERT' THEN
            NEW.requested_by := COALESCE(NEW.requested_by, v_actor);
            NEW.requested_by_kind := COALESCE(NEW.requested_by_kind, v_kind);
        END IF;
    ELSIF TG_TABLE_NAME = 'aud_pipeline_pauses' THEN
        IF TG_OP = 'INSERT' THEN
            NEW.paused_by_kind := COALESCE(NEW.paused_by_kind, v_kind);
        END IF;
        IF NEW.resumed_at IS NOT NULL AND (TG_OP = 'INSERT' OR OLD.resumed_at IS NULL) THEN
            NEW.resumed_by_kind := COALESCE(NEW.resumed_by_kind, v_kind);
        END IF;
    END IF;
    RETURN NEW;
END
$attribute$;
