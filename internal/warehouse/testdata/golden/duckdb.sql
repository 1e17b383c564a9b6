-- dialect
-- name: duckdb
-- replace: transactional, row id: sequence, transactions: true, temp tables: true, pk enforced: true, single writer: true
-- merge update: false, ddl commits: false
-- fold Mixed_Case: Mixed_Case
-- quote: "it's a ""name"""

-- type mapping
-- BOOLEAN: BOOLEAN
-- BIGINT: BIGINT
-- DECIMAL: DECIMAL(38, 10)
-- DATE: DATE
-- TIMESTAMP: TIMESTAMP WITH TIME ZONE
-- STRING: VARCHAR

-- create mirror
CREATE TABLE "Analytics"."etl_craft"."CFG_PIPELINES" ("PIPELINE_ID" BIGINT, "PIPELINE_CODE" VARCHAR, "ACTIVE" BOOLEAN, "SLA_HOURS" DECIMAL(38, 10), "RUN_DATE" DATE, "CREATE_DATE" TIMESTAMP WITH TIME ZONE, "Odd ""Name""" VARCHAR);

-- add column
ALTER TABLE "Analytics"."etl_craft"."CFG_PIPELINES" ADD COLUMN "ROWS_WRITTEN" BIGINT;
ALTER TABLE "Analytics"."etl_craft"."CFG_PIPELINES" ADD COLUMN "UPDATE_DATE" TIMESTAMP WITH TIME ZONE;

-- truncate
TRUNCATE TABLE "Analytics"."etl_craft"."CFG_PIPELINES";

-- insert: 7 columns, 35 rows per statement (250 bound values at most); a last batch of 2 rows
INSERT INTO "Analytics"."etl_craft"."CFG_PIPELINES" ("PIPELINE_ID", "PIPELINE_CODE", "ACTIVE", "SLA_HOURS", "RUN_DATE", "CREATE_DATE", "Odd ""Name""") VALUES (?, ?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?, ?);

-- look-ups
SELECT COUNT(*) FROM information_schema.schemata WHERE LOWER(catalog_name) = LOWER(?) AND LOWER(schema_name) = LOWER(?); -- ["Analytics" "etl_craft"]
SELECT column_name, data_type FROM information_schema.columns WHERE LOWER(table_catalog) = LOWER(?) AND LOWER(table_schema) = LOWER(?) AND LOWER(table_name) = LOWER(?) ORDER BY ordinal_position; -- ["Analytics" "etl_craft" "CFG_PIPELINES"]

