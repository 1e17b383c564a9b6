-- dialect
-- name: databricks_iceberg
-- replace: copy_and_restore, row id: identity, transactions: false, temp tables: false, pk enforced: false, single writer: false
-- merge update: true, ddl commits: false
-- fold Mixed_Case: mixed_case
-- quote: `it's a "name"`

-- type mapping
-- BOOLEAN: BOOLEAN
-- BIGINT: BIGINT
-- DECIMAL: DECIMAL(38, 10)
-- DATE: DATE
-- TIMESTAMP: TIMESTAMP
-- STRING: STRING

-- create mirror
CREATE TABLE `analytics`.`etl_craft`.`CFG_PIPELINES` (`PIPELINE_ID` BIGINT, `PIPELINE_CODE` STRING, `ACTIVE` BOOLEAN, `SLA_HOURS` DECIMAL(38, 10), `RUN_DATE` DATE, `CREATE_DATE` TIMESTAMP, `Odd "Name"` STRING) USING DELTA LOCATION 'abfss://lake@acct.dfs.core.windows.net/mirrors/Analytics.etl_craft.CFG_PIPELINES' TBLPROPERTIES ('delta.enableIcebergCompatV2'='true', 'delta.universalFormat.enabledFormats'='iceberg');

-- add column
ALTER TABLE `analytics`.`etl_craft`.`CFG_PIPELINES` ADD COLUMN `ROWS_WRITTEN` BIGINT;
ALTER TABLE `analytics`.`etl_craft`.`CFG_PIPELINES` ADD COLUMN `UPDATE_DATE` TIMESTAMP;

-- truncate
TRUNCATE TABLE `analytics`.`etl_craft`.`CFG_PIPELINES`;

-- insert: 7 columns, 35 rows per statement (250 bound values at most); a last batch of 2 rows
INSERT INTO `analytics`.`etl_craft`.`CFG_PIPELINES` (`PIPELINE_ID`, `PIPELINE_CODE`, `ACTIVE`, `SLA_HOURS`, `RUN_DATE`, `CREATE_DATE`, `Odd "Name"`) VALUES (CAST(:p1 AS BIGINT), CAST(:p2 AS STRING), CAST(:p3 AS BOOLEAN), CAST(:p4 AS DECIMAL(38, 10)), CAST(:p5 AS DATE), CAST(:p6 AS TIMESTAMP), CAST(:p7 AS STRING)), (CAST(:p8 AS BIGINT), CAST(:p9 AS STRING), CAST(:p10 AS BOOLEAN), CAST(:p11 AS DECIMAL(38, 10)), CAST(:p12 AS DATE), CAST(:p13 AS TIMESTAMP), CAST(:p14 AS STRING));

-- look-ups
SELECT COUNT(*) FROM `analytics`.information_schema.schemata WHERE LOWER(schema_name) = LOWER(CAST(:p1 AS STRING)); -- ["etl_craft"]
SELECT column_name, data_type FROM `analytics`.information_schema.columns WHERE LOWER(table_schema) = LOWER(CAST(:p1 AS STRING)) AND LOWER(table_name) = LOWER(CAST(:p2 AS STRING)) ORDER BY ordinal_position; -- ["etl_craft" "CFG_PIPELINES"]

