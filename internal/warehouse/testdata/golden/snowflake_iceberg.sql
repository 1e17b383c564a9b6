-- dialect
-- name: snowflake_iceberg
-- replace: copy_and_restore, row id: computed, transactions: true, temp tables: true, pk enforced: false, single writer: false
-- merge update: false, ddl commits: true
-- fold Mixed_Case: MIXED_CASE
-- quote: "it's a ""name"""

-- type mapping
-- BOOLEAN: BOOLEAN
-- BIGINT: BIGINT
-- DECIMAL: DECIMAL(38, 10)
-- DATE: DATE
-- TIMESTAMP: TIMESTAMP_NTZ(6)
-- STRING: VARCHAR

-- create mirror
CREATE ICEBERG TABLE "ANALYTICS"."ETL_CRAFT"."CFG_PIPELINES" ("PIPELINE_ID" BIGINT, "PIPELINE_CODE" VARCHAR, "ACTIVE" BOOLEAN, "SLA_HOURS" DECIMAL(38, 10), "RUN_DATE" DATE, "CREATE_DATE" TIMESTAMP_NTZ(6), "Odd ""Name""" VARCHAR) EXTERNAL_VOLUME = 'lake_volume' CATALOG = 'SNOWFLAKE' BASE_LOCATION = 'etl_craft/mirrors/Analytics.etl_craft.CFG_PIPELINES';

-- add column
ALTER ICEBERG TABLE "ANALYTICS"."ETL_CRAFT"."CFG_PIPELINES" ADD COLUMN "ROWS_WRITTEN" BIGINT;
ALTER ICEBERG TABLE "ANALYTICS"."ETL_CRAFT"."CFG_PIPELINES" ADD COLUMN "UPDATE_DATE" TIMESTAMP_NTZ(6);

-- truncate
TRUNCATE TABLE "ANALYTICS"."ETL_CRAFT"."CFG_PIPELINES";

-- insert: 7 columns, 35 rows per statement (250 bound values at most); a last batch of 2 rows
INSERT INTO "ANALYTICS"."ETL_CRAFT"."CFG_PIPELINES" ("PIPELINE_ID", "PIPELINE_CODE", "ACTIVE", "SLA_HOURS", "RUN_DATE", "CREATE_DATE", "Odd ""Name""") VALUES (?, ?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?, ?);

-- look-ups
SELECT COUNT(*) FROM "ANALYTICS".information_schema.schemata WHERE LOWER(schema_name) = LOWER(?); -- ["etl_craft"]
SELECT column_name, data_type FROM "ANALYTICS".information_schema.columns WHERE LOWER(table_schema) = LOWER(?) AND LOWER(table_name) = LOWER(?) ORDER BY ordinal_position; -- ["etl_craft" "CFG_PIPELINES"]

