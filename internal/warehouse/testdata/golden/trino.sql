-- dialect
-- name: trino_iceberg
-- replace: copy_and_restore, row id: computed, transactions: false, temp tables: false, pk enforced: false, single writer: false
-- merge update: true, ddl commits: false
-- fold Mixed_Case: mixed_case
-- quote: "it's a ""name"""

-- type mapping
-- BOOLEAN: BOOLEAN
-- BIGINT: BIGINT
-- DECIMAL: DECIMAL(38, 10)
-- DATE: DATE
-- TIMESTAMP: TIMESTAMP(6) WITH TIME ZONE
-- STRING: VARCHAR

-- create mirror
CREATE TABLE "analytics"."etl_craft"."CFG_PIPELINES" ("PIPELINE_ID" BIGINT, "PIPELINE_CODE" VARCHAR, "ACTIVE" BOOLEAN, "SLA_HOURS" DECIMAL(38, 10), "RUN_DATE" DATE, "CREATE_DATE" TIMESTAMP(6) WITH TIME ZONE, "Odd ""Name""" VARCHAR);

-- add column
ALTER TABLE "analytics"."etl_craft"."CFG_PIPELINES" ADD COLUMN "ROWS_WRITTEN" BIGINT;
ALTER TABLE "analytics"."etl_craft"."CFG_PIPELINES" ADD COLUMN "UPDATE_DATE" TIMESTAMP(6) WITH TIME ZONE;

-- truncate
TRUNCATE TABLE "analytics"."etl_craft"."CFG_PIPELINES";

-- insert: 7 columns, 35 rows per statement (250 bound values at most); a last batch of 2 rows
INSERT INTO "analytics"."etl_craft"."CFG_PIPELINES" ("PIPELINE_ID", "PIPELINE_CODE", "ACTIVE", "SLA_HOURS", "RUN_DATE", "CREATE_DATE", "Odd ""Name""") VALUES (CAST(? AS BIGINT), CAST(? AS VARCHAR), CAST(? AS BOOLEAN), CAST(? AS DECIMAL(38, 10)), CAST(? AS DATE), CAST(? AS TIMESTAMP(6) WITH TIME ZONE), CAST(? AS VARCHAR)), (CAST(? AS BIGINT), CAST(? AS VARCHAR), CAST(? AS BOOLEAN), CAST(? AS DECIMAL(38, 10)), CAST(? AS DATE), CAST(? AS TIMESTAMP(6) WITH TIME ZONE), CAST(? AS VARCHAR));

-- look-ups
SELECT COUNT(*) FROM "analytics".information_schema.schemata WHERE LOWER(schema_name) = LOWER(CAST(? AS VARCHAR)); -- ["etl_craft"]
SELECT column_name, data_type FROM "analytics".information_schema.columns WHERE LOWER(table_schema) = LOWER(CAST(? AS VARCHAR)) AND LOWER(table_name) = LOWER(CAST(? AS VARCHAR)) ORDER BY ordinal_position; -- ["etl_craft" "CFG_PIPELINES"]

