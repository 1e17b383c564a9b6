-- SQLite, AUD_Odd Notes
SELECT "Note Id", "Body ""Quoted""", "SCORE", CAST("SEEN_AT" AS TEXT), CAST("SEEN_ON" AS TEXT), "OK" FROM "main"."AUD_Odd Notes";

-- SQLite, CFG_PIPELINES
SELECT "PIPELINE_ID", "PIPELINE_CODE", "PIPELINE_NAME", "DESCRIPTION", "RUN_SCHEDULE", "SLA_IN_HOURS", "REFRESH_TYPE", "ACTIVE_FLAG", "PIPELINE_PARAMETERS", "CREATED_BY", CAST("CREATE_DATE" AS TEXT), "UPDATED_BY", CAST("UPDATED_DATE" AS TEXT), "SCHEDULE_TIMEZONE", "CATCHUP", "MAX_CATCHUP_RUNS", "OVERLAP_POLICY", CAST("SCHEDULE_START_DATE" AS TEXT) FROM "main"."CFG_PIPELINES";

-- PostgreSQL, AUD_Odd Notes
SELECT "Note Id", CAST("Body ""Quoted""" AS TEXT), CAST("score" AS TEXT), "seen_at", "seen_on", "ok" FROM "AUD_Odd Notes";

-- PostgreSQL, AUD_Odd Notes, into a PostgreSQL warehouse
COPY (SELECT "Note Id", CAST("Body ""Quoted""" AS TEXT), CAST("score" AS TEXT), "seen_at", "seen_on", "ok" FROM "AUD_Odd Notes") TO STDOUT (FORMAT text, ENCODING 'UTF8');

-- PostgreSQL, CFG_PIPELINES
SELECT "pipeline_id", CAST("pipeline_code" AS TEXT), CAST("pipeline_name" AS TEXT), CAST("description" AS TEXT), CAST("run_schedule" AS TEXT), CAST("sla_in_hours" AS TEXT), CAST("refresh_type" AS TEXT), CAST("active_flag" AS TEXT), CAST("pipeline_parameters" AS TEXT), CAST("created_by" AS TEXT), "create_date", CAST("updated_by" AS TEXT), "updated_date", CAST("schedule_timezone" AS TEXT), CAST("catchup" AS TEXT), "max_catchup_runs", CAST("overlap_policy" AS TEXT), "schedule_start_date" FROM "cfg_pipelines";

-- PostgreSQL, CFG_PIPELINES, into a PostgreSQL warehouse
COPY (SELECT "pipeline_id", CAST("pipeline_code" AS TEXT), CAST("pipeline_name" AS TEXT), CAST("description" AS TEXT), CAST("run_schedule" AS TEXT), CAST("sla_in_hours" AS TEXT), CAST("refresh_type" AS TEXT), CAST("active_flag" AS TEXT), CAST("pipeline_parameters" AS TEXT), CAST("created_by" AS TEXT), "create_date", CAST("updated_by" AS TEXT), "updated_date", CAST("schedule_timezone" AS TEXT), CAST("catchup" AS TEXT), "max_catchup_runs", CAST("overlap_policy" AS TEXT), "schedule_start_date" FROM "cfg_pipelines") TO STDOUT (FORMAT text, ENCODING 'UTF8');

