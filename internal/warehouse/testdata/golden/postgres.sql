-- dialect
-- name: postgres
-- replace: transactional, row id: identity, transactions: true, temp tables: true, pk enforced: true, single writer: false
-- merge update: false, ddl commits: false
-- fold Mixed_Case: mixed_case
-- quote: "it's a ""name"""

-- type mapping
-- BOOLEAN: BOOLEAN
-- BIGINT: BIGINT
-- DECIMAL: DECIMAL(38, 10)
-- DATE: DATE
-- TIMESTAMP: TIMESTAMP WITH TIME ZONE
-- STRING: VARCHAR

-- create mirror
CREATE TABLE "analytics"."etl_craft"."CFG_PIPELINES" ("PIPELINE_ID" BIGINT, "PIPELINE_CODE" VARCHAR, "ACTIVE" BOOLEAN, "SLA_HOURS" DECIMAL(38, 10), "RUN_DATE" DATE, "CREATE_DATE" TIMESTAMP WITH TIME ZONE, "Odd ""Name""" VARCHAR);

-- add column
ALTER TABLE "analytics"."etl_craft"."CFG_PIPELINES" ADD COLUMN "ROWS_WRITTEN" BIGINT;
ALTER TABLE "analytics"."etl_craft"."CFG_PIPELINES" ADD COLUMN "UPDATE_DATE" TIMESTAMP WITH TIME ZONE;

-- truncate
TRUNCATE TABLE "analytics"."etl_craft"."CFG_PIPELINES";

-- insert: 7 columns, 35 rows per statement (250 bound values at most); a last batch of 2 rows
INSERT INTO "analytics"."etl_craft"."CFG_PIPELINES" ("PIPELINE_ID", "PIPELINE_CODE", "ACTIVE", "SLA_HOURS", "RUN_DATE", "CREATE_DATE", "Odd ""Name""") VALUES ($1, $2, $3, $4, $5, $6, $7), ($8, $9, $10, $11, $12, $13, $14);

-- look-ups
SELECT COUNT(*) FROM pg_catalog.pg_namespace WHERE nspname = $1; -- ["etl_craft"]
SELECT column_name, data_type FROM information_schema.columns WHERE LOWER(table_schema) = LOWER($1) AND LOWER(table_name) = LOWER($2) ORDER BY ordinal_position; -- ["etl_craft" "CFG_PIPELINES"]

