-- CREATE_TABLE, the target absent
BEGIN;
SELECT table_name FROM "ANALYTICS".information_schema.tables WHERE LOWER(table_schema) = LOWER(?) AND LOWER(table_name) LIKE ? -- [staging, orders__etl_keep_%];
SELECT table_name FROM "ANALYTICS".information_schema.tables WHERE LOWER(table_schema) = LOWER(?) AND LOWER(table_name) LIKE ? -- [staging, etl_stage_101_%];
SELECT * FROM (
SELECT id, name, amount FROM raw.orders
) AS etl_source LIMIT 0;
CREATE TABLE "ANALYTICS"."STAGING"."etl_stage_101_<token>" AS
SELECT s."ID" AS "ID", s."NAME" AS "NAME", s."AMOUNT" AS "AMOUNT", CAST(? AS BIGINT) AS "PIPELINE_ID", CAST(? AS BIGINT) AS "PIPELINE_RUN_ID", CAST(? AS BIGINT) AS "TASK_RUN_ID", ROW_NUMBER() OVER (ORDER BY NULL) AS "ROW_ID"
FROM (
SELECT id, name, amount FROM raw.orders
) AS s -- [1, 1, 101];
SELECT c.column_name, CASE WHEN c.data_type = 'NUMBER' THEN 'NUMBER(' || c.numeric_precision || ',' || c.numeric_scale || ')' WHEN c.data_type = 'TEXT' THEN 'VARCHAR(' || c.character_maximum_length || ')' WHEN c.data_type LIKE 'TIMESTAMP%' THEN c.data_type || '(' || c.datetime_precision || ')' ELSE c.data_type END FROM "ANALYTICS".information_schema.columns c JOIN "ANALYTICS".information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE c.table_schema = ? AND c.table_name = ? AND t.table_type = 'BASE TABLE' ORDER BY c.ordinal_position -- [STAGING, ORDERS];
CREATE OR REPLACE ICEBERG TABLE "ANALYTICS"."STAGING"."ORDERS" EXTERNAL_VOLUME = 'lake_volume' CATALOG = 'SNOWFLAKE' BASE_LOCATION = 'staging/orders' AS SELECT * FROM "ANALYTICS"."STAGING"."etl_stage_101_<token>";
SELECT COUNT(CASE WHEN "TASK_RUN_ID" = ? THEN 1 END), COUNT(*) FROM "ANALYTICS"."STAGING"."ORDERS" -- [101];
DROP TABLE IF EXISTS "ANALYTICS"."STAGING"."etl_stage_101_<token>";
COMMIT;

-- CREATE_TABLE, the target exists
BEGIN;
SELECT table_name FROM "ANALYTICS".information_schema.tables WHERE LOWER(table_schema) = LOWER(?) AND LOWER(table_name) LIKE ? -- [staging, orders__etl_keep_%];
SELECT table_name FROM "ANALYTICS".information_schema.tables WHERE LOWER(table_schema) = LOWER(?) AND LOWER(table_name) LIKE ? -- [staging, etl_stage_101_%];
SELECT * FROM (
SELECT id, name, amount FROM raw.orders
) AS etl_source LIMIT 0;
CREATE TABLE "ANALYTICS"."STAGING"."etl_stage_101_<token>" AS
SELECT s."ID" AS "ID", s."NAME" AS "NAME", s."AMOUNT" AS "AMOUNT", CAST(? AS BIGINT) AS "PIPELINE_ID", CAST(? AS BIGINT) AS "PIPELINE_RUN_ID", CAST(? AS BIGINT) AS "TASK_RUN_ID", ROW_NUMBER() OVER (ORDER BY NULL) AS "ROW_ID"
FROM (
SELECT id, name, amount FROM raw.orders
) AS s -- [1, 1, 101];
SELECT c.column_name, CASE WHEN c.data_type = 'NUMBER' THEN 'NUMBER(' || c.numeric_precision || ',' || c.numeric_scale || ')' WHEN c.data_type = 'TEXT' THEN 'VARCHAR(' || c.character_maximum_length || ')' WHEN c.data_type LIKE 'TIMESTAMP%' THEN c.data_type || '(' || c.datetime_precision || ')' ELSE c.data_type END FROM "ANALYTICS".information_schema.columns c JOIN "ANALYTICS".information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE c.table_schema = ? AND c.table_name = ? AND t.table_type = 'BASE TABLE' ORDER BY c.ordinal_position -- [STAGING, ORDERS];
CREATE TABLE "ANALYTICS"."STAGING"."ORDERS__etl_keep_101_1" AS SELECT * FROM "ANALYTICS"."STAGING"."ORDERS";
CREATE OR REPLACE ICEBERG TABLE "ANALYTICS"."STAGING"."ORDERS" EXTERNAL_VOLUME = 'SNOWFLAKE_MANAGED' CATALOG = 'SNOWFLAKE' AS SELECT * FROM "ANALYTICS"."STAGING"."etl_stage_101_<token>";
SELECT COUNT(CASE WHEN "TASK_RUN_ID" = ? THEN 1 END), COUNT(*) FROM "ANALYTICS"."STAGING"."ORDERS" -- [101];
DROP TABLE IF EXISTS "ANALYTICS"."STAGING"."etl_stage_101_<token>";
DROP TABLE IF EXISTS "ANALYTICS"."STAGING"."ORDERS__etl_keep_101_1";
COMMIT;

-- SETUP_TABLE for SCD2_MERGE
BEGIN;
SELECT table_name FROM "ANALYTICS".information_schema.tables WHERE LOWER(table_schema) = LOWER(?) AND LOWER(table_name) LIKE ? -- [staging, orders__etl_keep_%];
SELECT table_name FROM "ANALYTICS".information_schema.tables WHERE LOWER(table_schema) = LOWER(?) AND LOWER(table_name) LIKE ? -- [staging, etl_stage_101_%];
SELECT c.column_name, CASE WHEN c.data_type = 'NUMBER' THEN 'NUMBER(' || c.numeric_precision || ',' || c.numeric_scale || ')' WHEN c.data_type = 'TEXT' THEN 'VARCHAR(' || c.character_maximum_length || ')' WHEN c.data_type LIKE 'TIMESTAMP%' THEN c.data_type || '(' || c.datetime_precision || ')' ELSE c.data_type END FROM "ANALYTICS".information_schema.columns c JOIN "ANALYTICS".information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE c.table_schema = ? AND c.table_name = ? AND t.table_type = 'BASE TABLE' ORDER BY c.ordinal_position -- [STAGING, ORDERS];
CREATE TABLE "ANALYTICS"."STAGING"."etl_stage_101_<token>" AS SELECT * FROM (
SELECT id, name, amount FROM raw.orders
) AS etl_source LIMIT 0;
SELECT c.column_name, CASE WHEN c.data_type = 'NUMBER' THEN 'NUMBER(' || c.numeric_precision || ',' || c.numeric_scale || ')' WHEN c.data_type = 'TEXT' THEN 'VARCHAR(' || c.character_maximum_length || ')' WHEN c.data_type LIKE 'TIMESTAMP%' THEN c.data_type || '(' || c.datetime_precision || ')' ELSE c.data_type END FROM "ANALYTICS".information_schema.columns c JOIN "ANALYTICS".information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE c.table_schema = ? AND c.table_name = ? AND t.table_type = 'BASE TABLE' ORDER BY c.ordinal_position -- [STAGING, etl_stage_101_<token>];
CREATE ICEBERG TABLE "ANALYTICS"."STAGING"."ORDERS" (
  "ID" NUMBER(38,0),
  "NAME" VARCHAR(16777216),
  "AMOUNT" NUMBER(12,2),
  "PIPELINE_ID" BIGINT,
  "PIPELINE_RUN_ID" BIGINT,
  "TASK_RUN_ID" BIGINT,
  "HASH_KEY" VARCHAR,
  "CREATE_DATE" TIMESTAMP_NTZ(6),
  "CREATED_BY" VARCHAR,
  "UPDATE_DATE" TIMESTAMP_NTZ(6),
  "UPDATED_BY" VARCHAR,
  "DELETE_FLAG" VARCHAR,
  "ACTIVE_FLAG" VARCHAR,
  "ROW_ID" BIGINT
) EXTERNAL_VOLUME = 'lake_volume' CATALOG = 'SNOWFLAKE' BASE_LOCATION = 'staging/orders';
DROP TABLE IF EXISTS "ANALYTICS"."STAGING"."etl_stage_101_<token>";
COMMIT;

-- OVERWRITE_TABLE
BEGIN;
SELECT table_name FROM "ANALYTICS".information_schema.tables WHERE LOWER(table_schema) = LOWER(?) AND LOWER(table_name) LIKE ? -- [staging, orders__etl_keep_%];
SELECT table_name FROM "ANALYTICS".information_schema.tables WHERE LOWER(table_schema) = LOWER(?) AND LOWER(table_name) LIKE ? -- [staging, etl_stage_101_%];
SELECT c.column_name, CASE WHEN c.data_type = 'NUMBER' THEN 'NUMBER(' || c.numeric_precision || ',' || c.numeric_scale || ')' WHEN c.data_type = 'TEXT' THEN 'VARCHAR(' || c.character_maximum_length || ')' WHEN c.data_type LIKE 'TIMESTAMP%' THEN c.data_type || '(' || c.datetime_precision || ')' ELSE c.data_type END FROM "ANALYTICS".information_schema.columns c JOIN "ANALYTICS".information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE c.table_schema = ? AND c.table_name = ? AND t.table_type = 'BASE TABLE' ORDER BY c.ordinal_position -- [STAGING, ORDERS];
CREATE TABLE "ANALYTICS"."STAGING"."etl_stage_101_<token>" AS SELECT * FROM (
SELECT id, name, amount FROM raw.orders
) AS etl_source;
SELECT c.column_name, CASE WHEN c.data_type = 'NUMBER' THEN 'NUMBER(' || c.numeric_precision || ',' || c.numeric_scale || ')' WHEN c.data_type = 'TEXT' THEN 'VARCHAR(' || c.character_maximum_length || ')' WHEN c.data_type LIKE 'TIMESTAMP%' THEN c.data_type || '(' || c.datetime_precision || ')' ELSE c.data_type END FROM "ANALYTICS".information_schema.columns c JOIN "ANALYTICS".information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE c.table_schema = ? AND c.table_name = ? AND t.table_type = 'BASE TABLE' ORDER BY c.ordinal_position -- [STAGING, etl_stage_101_<token>];
SELECT COUNT(*) FROM "ANALYTICS"."STAGING"."etl_stage_101_<token>";
CREATE TABLE "ANALYTICS"."STAGING"."ORDERS__etl_keep_101_1" AS SELECT * FROM "ANALYTICS"."STAGING"."ORDERS";
BEGIN TRANSACTION;
DELETE FROM "ANALYTICS"."STAGING"."ORDERS";
INSERT INTO "ANALYTICS"."STAGING"."ORDERS" ("ID", "NAME", "AMOUNT", "PIPELINE_ID", "PIPELINE_RUN_ID", "TASK_RUN_ID", "UPDATE_DATE", "ROW_ID")
SELECT s."ID", s."NAME", s."AMOUNT", CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BIGINT), CURRENT_TIMESTAMP, (SELECT COALESCE(MAX("ROW_ID"), 0) FROM "ANALYTICS"."STAGING"."ORDERS") + ROW_NUMBER() OVER (ORDER BY NULL)
FROM "ANALYTICS"."STAGING"."etl_stage_101_<token>" AS s -- [1, 1, 101];
SELECT COUNT(CASE WHEN "TASK_RUN_ID" = ? THEN 1 END), COUNT(*) FROM "ANALYTICS"."STAGING"."ORDERS" -- [101];
COMMIT;
DROP TABLE IF EXISTS "ANALYTICS"."STAGING"."etl_stage_101_<token>";
DROP TABLE IF EXISTS "ANALYTICS"."STAGING"."ORDERS__etl_keep_101_1";
COMMIT;

-- OVERWRITE_TABLE, evolved (SCHEMA_EVOLUTION adds note)
BEGIN;
SELECT table_name FROM "ANALYTICS".information_schema.tables WHERE LOWER(table_schema) = LOWER(?) AND LOWER(table_name) LIKE ? -- [staging, orders__etl_keep_%];
SELECT table_name FROM "ANALYTICS".information_schema.tables WHERE LOWER(table_schema) = LOWER(?) AND LOWER(table_name) LIKE ? -- [staging, etl_stage_101_%];
SELECT c.column_name, CASE WHEN c.data_type = 'NUMBER' THEN 'NUMBER(' || c.numeric_precision || ',' || c.numeric_scale || ')' WHEN c.data_type = 'TEXT' THEN 'VARCHAR(' || c.character_maximum_length || ')' WHEN c.data_type LIKE 'TIMESTAMP%' THEN c.data_type || '(' || c.datetime_precision || ')' ELSE c.data_type END FROM "ANALYTICS".information_schema.columns c JOIN "ANALYTICS".information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE c.table_schema = ? AND c.table_name = ? AND t.table_type = 'BASE TABLE' ORDER BY c.ordinal_position -- [STAGING, ORDERS];
CREATE TABLE "ANALYTICS"."STAGING"."etl_stage_101_<token>" AS SELECT * FROM (
SELECT id, name, amount FROM raw.orders
) AS etl_source;
SELECT c.column_name, CASE WHEN c.data_type = 'NUMBER' THEN 'NUMBER(' || c.numeric_precision || ',' || c.numeric_scale || ')' WHEN c.data_type = 'TEXT' THEN 'VARCHAR(' || c.character_maximum_length || ')' WHEN c.data_type LIKE 'TIMESTAMP%' THEN c.data_type || '(' || c.datetime_precision || ')' ELSE c.data_type END FROM "ANALYTICS".information_schema.columns c JOIN "ANALYTICS".information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE c.table_schema = ? AND c.table_name = ? AND t.table_type = 'BASE TABLE' ORDER BY c.ordinal_position -- [STAGING, etl_stage_101_<token>];
SELECT COUNT(*) FROM "ANALYTICS"."STAGING"."etl_stage_101_<token>";
ALTER ICEBERG TABLE "ANALYTICS"."STAGING"."ORDERS" ADD COLUMN "NOTE" VARCHAR(16777216);
CREATE TABLE "ANALYTICS"."STAGING"."ORDERS__etl_keep_101_1" AS SELECT * FROM "ANALYTICS"."STAGING"."ORDERS";
BEGIN TRANSACTION;
DELETE FROM "ANALYTICS"."STAGING"."ORDERS";
INSERT INTO "ANALYTICS"."STAGING"."ORDERS" ("ID", "NAME", "AMOUNT", "NOTE", "PIPELINE_ID", "PIPELINE_RUN_ID", "TASK_RUN_ID", "UPDATE_DATE", "ROW_ID")
SELECT s."ID", s."NAME", s."AMOUNT", s."NOTE", CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BIGINT), CURRENT_TIMESTAMP, (SELECT COALESCE(MAX("ROW_ID"), 0) FROM "ANALYTICS"."STAGING"."ORDERS") + ROW_NUMBER() OVER (ORDER BY NULL)
FROM "ANALYTICS"."STAGING"."etl_stage_101_<token>" AS s -- [1, 1, 101];
SELECT COUNT(CASE WHEN "TASK_RUN_ID" = ? THEN 1 END), COUNT(*) FROM "ANALYTICS"."STAGING"."ORDERS" -- [101];
COMMIT;
DROP TABLE IF EXISTS "ANALYTICS"."STAGING"."etl_stage_101_<token>";
DROP TABLE IF EXISTS "ANALYTICS"."STAGING"."ORDERS__etl_keep_101_1";
COMMIT;

-- APPEND_TABLE
BEGIN;
SELECT table_name FROM "ANALYTICS".information_schema.tables WHERE LOWER(table_schema) = LOWER(?) AND LOWER(table_name) LIKE ? -- [staging, orders__etl_keep_%];
SELECT table_name FROM "ANALYTICS".information_schema.tables WHERE LOWER(table_schema) = LOWER(?) AND LOWER(table_name) LIKE ? -- [staging, etl_stage_101_%];
SELECT c.column_name, CASE WHEN c.data_type = 'NUMBER' THEN 'NUMBER(' || c.numeric_precision || ',' || c.numeric_scale || ')' WHEN c.data_type = 'TEXT' THEN 'VARCHAR(' || c.character_maximum_length || ')' WHEN c.data_type LIKE 'TIMESTAMP%' THEN c.data_type || '(' || c.datetime_precision || ')' ELSE c.data_type END FROM "ANALYTICS".information_schema.columns c JOIN "ANALYTICS".information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE c.table_schema = ? AND c.table_name = ? AND t.table_type = 'BASE TABLE' ORDER BY c.ordinal_position -- [STAGING, ORDERS];
SELECT * FROM (
SELECT id, name, amount FROM raw.orders
) AS etl_source LIMIT 0;
DELETE FROM "ANALYTICS"."STAGING"."ORDERS" WHERE "TASK_RUN_ID" = ? -- [101];
INSERT INTO "ANALYTICS"."STAGING"."ORDERS" ("ID", "NAME", "AMOUNT", "PIPELINE_ID", "PIPELINE_RUN_ID", "TASK_RUN_ID", "CREATE_DATE", "ROW_ID")
SELECT s."ID", s."NAME", s."AMOUNT", CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BIGINT), CURRENT_TIMESTAMP, (SELECT COALESCE(MAX("ROW_ID"), 0) FROM "ANALYTICS"."STAGING"."ORDERS") + ROW_NUMBER() OVER (ORDER BY NULL)
FROM (
SELECT id, name, amount FROM raw.orders
) AS s -- [1, 1, 101];
SELECT COUNT(CASE WHEN "TASK_RUN_ID" = ? THEN 1 END), COUNT(*) FROM "ANALYTICS"."STAGING"."ORDERS" -- [101];
COMMIT;

-- SCD1_MERGE, PRESERVE_TARGET
BEGIN;
SELECT table_name FROM "ANALYTICS".information_schema.tables WHERE LOWER(table_schema) = LOWER(?) AND LOWER(table_name) LIKE ? -- [staging, orders__etl_keep_%];
SELECT table_name FROM "ANALYTICS".information_schema.tables WHERE LOWER(table_schema) = LOWER(?) AND LOWER(table_name) LIKE ? -- [staging, etl_stage_101_%];
SELECT c.column_name, CASE WHEN c.data_type = 'NUMBER' THEN 'NUMBER(' || c.numeric_precision || ',' || c.numeric_scale || ')' WHEN c.data_type = 'TEXT' THEN 'VARCHAR(' || c.character_maximum_length || ')' WHEN c.data_type LIKE 'TIMESTAMP%' THEN c.data_type || '(' || c.datetime_precision || ')' ELSE c.data_type END FROM "ANALYTICS".information_schema.columns c JOIN "ANALYTICS".information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE c.table_schema = ? AND c.table_name = ? AND t.table_type = 'BASE TABLE' ORDER BY c.ordinal_position -- [STAGING, ORDERS];
CREATE TABLE "ANALYTICS"."STAGING"."etl_stage_101_<token>" AS SELECT * FROM (
SELECT id, name, amount FROM raw.orders
) AS etl_source;
SELECT c.column_name, CASE WHEN c.data_type = 'NUMBER' THEN 'NUMBER(' || c.numeric_precision || ',' || c.numeric_scale || ')' WHEN c.data_type = 'TEXT' THEN 'VARCHAR(' || c.character_maximum_length || ')' WHEN c.data_type LIKE 'TIMESTAMP%' THEN c.data_type || '(' || c.datetime_precision || ')' ELSE c.data_type END FROM "ANALYTICS".information_schema.columns c JOIN "ANALYTICS".information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE c.table_schema = ? AND c.table_name = ? AND t.table_type = 'BASE TABLE' ORDER BY c.ordinal_position -- [STAGING, etl_stage_101_<token>];
SELECT COUNT(*) FROM "ANALYTICS"."STAGING"."etl_stage_101_<token>";
SELECT COUNT(*) FROM "ANALYTICS"."STAGING"."etl_stage_101_<token>" WHERE "ID" IS NULL;
CREATE TABLE "ANALYTICS"."STAGING"."etl_stage_101_<token>_src" AS SELECT DISTINCT "ID", "NAME", "AMOUNT" FROM "ANALYTICS"."STAGING"."etl_stage_101_<token>";
SELECT COUNT(*) FROM (SELECT "ID" FROM "ANALYTICS"."STAGING"."etl_stage_101_<token>_src" GROUP BY "ID" HAVING COUNT(*) > 1) AS dup;
BEGIN TRANSACTION;
SELECT COUNT(*) FROM "ANALYTICS"."STAGING"."ORDERS" AS t JOIN "ANALYTICS"."STAGING"."etl_stage_101_<token>_src" AS s ON t."ID" = s."ID" AND (t."HASH_KEY" IS DISTINCT FROM MD5(CASE WHEN COALESCE(s."NAME", t."NAME") IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(COALESCE(s."NAME", t."NAME") AS VARCHAR)) AS VARCHAR) || ':' || CAST(COALESCE(s."NAME", t."NAME") AS VARCHAR) END || CASE WHEN COALESCE(s."AMOUNT", t."AMOUNT") IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(COALESCE(s."AMOUNT", t."AMOUNT") AS VARCHAR)) AS VARCHAR) || ':' || CAST(COALESCE(s."AMOUNT", t."AMOUNT") AS VARCHAR) END) OR COALESCE(t."DELETE_FLAG", 'N') = 'Y');
UPDATE "ANALYTICS"."STAGING"."ORDERS" AS t SET "NAME" = COALESCE(s."NAME", t."NAME"), "AMOUNT" = COALESCE(s."AMOUNT", t."AMOUNT"), "PIPELINE_ID" = CAST(? AS BIGINT), "PIPELINE_RUN_ID" = CAST(? AS BIGINT), "TASK_RUN_ID" = CAST(? AS BIGINT), "HASH_KEY" = MD5(CASE WHEN COALESCE(s."NAME", t."NAME") IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(COALESCE(s."NAME", t."NAME") AS VARCHAR)) AS VARCHAR) || ':' || CAST(COALESCE(s."NAME", t."NAME") AS VARCHAR) END || CASE WHEN COALESCE(s."AMOUNT", t."AMOUNT") IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(COALESCE(s."AMOUNT", t."AMOUNT") AS VARCHAR)) AS VARCHAR) || ':' || CAST(COALESCE(s."AMOUNT", t."AMOUNT") AS VARCHAR) END), "UPDATE_DATE" = CURRENT_TIMESTAMP, "UPDATED_BY" = CURRENT_USER(), "DELETE_FLAG" = 'N'
FROM "ANALYTICS"."STAGING"."etl_stage_101_<token>_src" AS s
WHERE t."ID" = s."ID" AND (t."HASH_KEY" IS DISTINCT FROM MD5(CASE WHEN COALESCE(s."NAME", t."NAME") IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(COALESCE(s."NAME", t."NAME") AS VARCHAR)) AS VARCHAR) || ':' || CAST(COALESCE(s."NAME", t."NAME") AS VARCHAR) END || CASE WHEN COALESCE(s."AMOUNT", t."AMOUNT") IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(COALESCE(s."AMOUNT", t."AMOUNT") AS VARCHAR)) AS VARCHAR) || ':' || CAST(COALESCE(s."AMOUNT", t."AMOUNT") AS VARCHAR) END) OR COALESCE(t."DELETE_FLAG", 'N') = 'Y') -- [1, 1, 101];
SELECT COUNT(*) FROM "ANALYTICS"."STAGING"."etl_stage_101_<token>_src" AS s WHERE NOT EXISTS (SELECT 1 FROM "ANALYTICS"."STAGING"."ORDERS" AS t WHERE t."ID" = s."ID");
INSERT INTO "ANALYTICS"."STAGING"."ORDERS" ("ID", "NAME", "AMOUNT", "PIPELINE_ID", "PIPELINE_RUN_ID", "TASK_RUN_ID", "HASH_KEY", "CREATE_DATE", "CREATED_BY", "UPDATE_DATE", "UPDATED_BY", "DELETE_FLAG", "ROW_ID")
SELECT s."ID", s."NAME", s."AMOUNT", CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BIGINT), MD5(CASE WHEN s."NAME" IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(s."NAME" AS VARCHAR)) AS VARCHAR) || ':' || CAST(s."NAME" AS VARCHAR) END || CASE WHEN s."AMOUNT" IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(s."AMOUNT" AS VARCHAR)) AS VARCHAR) || ':' || CAST(s."AMOUNT" AS VARCHAR) END), CURRENT_TIMESTAMP, CURRENT_USER(), CURRENT_TIMESTAMP, CURRENT_USER(), 'N', (SELECT COALESCE(MAX("ROW_ID"), 0) FROM "ANALYTICS"."STAGING"."ORDERS") + ROW_NUMBER() OVER (ORDER BY NULL)
FROM "ANALYTICS"."STAGING"."etl_stage_101_<token>_src" AS s
WHERE NOT EXISTS (SELECT 1 FROM "ANALYTICS"."STAGING"."ORDERS" AS t WHERE t."ID" = s."ID") -- [1, 1, 101];
SELECT COUNT(*) FROM "ANALYTICS"."STAGING"."ORDERS";
COMMIT;
DROP TABLE IF EXISTS "ANALYTICS"."STAGING"."etl_stage_101_<token>";
DROP TABLE IF EXISTS "ANALYTICS"."STAGING"."etl_stage_101_<token>_src";
COMMIT;

-- SCD2_MERGE, evolved, MERGE_DEDUPE_ORDER
BEGIN;
SELECT table_name FROM "ANALYTICS".information_schema.tables WHERE LOWER(table_schema) = LOWER(?) AND LOWER(table_name) LIKE ? -- [staging, orders__etl_keep_%];
SELECT table_name FROM "ANALYTICS".information_schema.tables WHERE LOWER(table_schema) = LOWER(?) AND LOWER(table_name) LIKE ? -- [staging, etl_stage_101_%];
SELECT c.column_name, CASE WHEN c.data_type = 'NUMBER' THEN 'NUMBER(' || c.numeric_precision || ',' || c.numeric_scale || ')' WHEN c.data_type = 'TEXT' THEN 'VARCHAR(' || c.character_maximum_length || ')' WHEN c.data_type LIKE 'TIMESTAMP%' THEN c.data_type || '(' || c.datetime_precision || ')' ELSE c.data_type END FROM "ANALYTICS".information_schema.columns c JOIN "ANALYTICS".information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE c.table_schema = ? AND c.table_name = ? AND t.table_type = 'BASE TABLE' ORDER BY c.ordinal_position -- [STAGING, ORDERS];
CREATE TABLE "ANALYTICS"."STAGING"."etl_stage_101_<token>" AS SELECT * FROM (
SELECT id, name, amount FROM raw.orders
) AS etl_source;
SELECT c.column_name, CASE WHEN c.data_type = 'NUMBER' THEN 'NUMBER(' || c.numeric_precision || ',' || c.numeric_scale || ')' WHEN c.data_type = 'TEXT' THEN 'VARCHAR(' || c.character_maximum_length || ')' WHEN c.data_type LIKE 'TIMESTAMP%' THEN c.data_type || '(' || c.datetime_precision || ')' ELSE c.data_type END FROM "ANALYTICS".information_schema.columns c JOIN "ANALYTICS".information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE c.table_schema = ? AND c.table_name = ? AND t.table_type = 'BASE TABLE' ORDER BY c.ordinal_position -- [STAGING, etl_stage_101_<token>];
SELECT COUNT(*) FROM "ANALYTICS"."STAGING"."etl_stage_101_<token>";
SELECT COUNT(*) FROM "ANALYTICS"."STAGING"."etl_stage_101_<token>" WHERE "ID" IS NULL;
CREATE TABLE "ANALYTICS"."STAGING"."etl_stage_101_<token>_src" AS SELECT "ID", "NAME", "AMOUNT", "NOTE" FROM (
  SELECT "ID", "NAME", "AMOUNT", "NOTE", RANK() OVER (PARTITION BY "ID" ORDER BY amount DESC) AS etl_dedupe_rank
  FROM (SELECT DISTINCT "ID", "NAME", "AMOUNT", "NOTE" FROM "ANALYTICS"."STAGING"."etl_stage_101_<token>") AS d
) AS ranked WHERE etl_dedupe_rank = 1;
SELECT COUNT(*) FROM (SELECT "ID" FROM "ANALYTICS"."STAGING"."etl_stage_101_<token>_src" GROUP BY "ID" HAVING COUNT(*) > 1) AS dup;
ALTER ICEBERG TABLE "ANALYTICS"."STAGING"."ORDERS" ADD COLUMN "NOTE" VARCHAR(16777216);
BEGIN TRANSACTION;
SELECT COUNT(*) FROM "ANALYTICS"."STAGING"."ORDERS" AS t JOIN "ANALYTICS"."STAGING"."etl_stage_101_<token>_src" AS s ON t."ID" = s."ID" AND t."ACTIVE_FLAG" = 'Y' AND (t."HASH_KEY" IS DISTINCT FROM MD5(CASE WHEN s."NAME" IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(s."NAME" AS VARCHAR)) AS VARCHAR) || ':' || CAST(s."NAME" AS VARCHAR) END || CASE WHEN s."AMOUNT" IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(s."AMOUNT" AS VARCHAR)) AS VARCHAR) || ':' || CAST(s."AMOUNT" AS VARCHAR) END || CASE WHEN s."NOTE" IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(s."NOTE" AS VARCHAR)) AS VARCHAR) || ':' || CAST(s."NOTE" AS VARCHAR) END) OR COALESCE(t."DELETE_FLAG", 'N') = 'Y');
UPDATE "ANALYTICS"."STAGING"."ORDERS" AS t SET "ACTIVE_FLAG" = 'N', "PIPELINE_ID" = CAST(? AS BIGINT), "PIPELINE_RUN_ID" = CAST(? AS BIGINT), "TASK_RUN_ID" = CAST(? AS BIGINT), "UPDATE_DATE" = CURRENT_TIMESTAMP, "UPDATED_BY" = CURRENT_USER()
FROM "ANALYTICS"."STAGING"."etl_stage_101_<token>_src" AS s
WHERE t."ID" = s."ID" AND t."ACTIVE_FLAG" = 'Y' AND (t."HASH_KEY" IS DISTINCT FROM MD5(CASE WHEN s."NAME" IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(s."NAME" AS VARCHAR)) AS VARCHAR) || ':' || CAST(s."NAME" AS VARCHAR) END || CASE WHEN s."AMOUNT" IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(s."AMOUNT" AS VARCHAR)) AS VARCHAR) || ':' || CAST(s."AMOUNT" AS VARCHAR) END || CASE WHEN s."NOTE" IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(s."NOTE" AS VARCHAR)) AS VARCHAR) || ':' || CAST(s."NOTE" AS VARCHAR) END) OR COALESCE(t."DELETE_FLAG", 'N') = 'Y') -- [1, 1, 101];
SELECT COUNT(*) FROM "ANALYTICS"."STAGING"."etl_stage_101_<token>_src" AS s WHERE NOT EXISTS (SELECT 1 FROM "ANALYTICS"."STAGING"."ORDERS" AS t WHERE t."ID" = s."ID" AND t."ACTIVE_FLAG" = 'Y');
INSERT INTO "ANALYTICS"."STAGING"."ORDERS" ("ID", "NAME", "AMOUNT", "NOTE", "PIPELINE_ID", "PIPELINE_RUN_ID", "TASK_RUN_ID", "HASH_KEY", "CREATE_DATE", "CREATED_BY", "UPDATE_DATE", "UPDATED_BY", "DELETE_FLAG", "ACTIVE_FLAG", "ROW_ID")
SELECT s."ID", s."NAME", s."AMOUNT", s."NOTE", CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BIGINT), MD5(CASE WHEN s."NAME" IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(s."NAME" AS VARCHAR)) AS VARCHAR) || ':' || CAST(s."NAME" AS VARCHAR) END || CASE WHEN s."AMOUNT" IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(s."AMOUNT" AS VARCHAR)) AS VARCHAR) || ':' || CAST(s."AMOUNT" AS VARCHAR) END || CASE WHEN s."NOTE" IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(s."NOTE" AS VARCHAR)) AS VARCHAR) || ':' || CAST(s."NOTE" AS VARCHAR) END), CURRENT_TIMESTAMP, CURRENT_USER(), CURRENT_TIMESTAMP, CURRENT_USER(), 'N', 'Y', (SELECT COALESCE(MAX("ROW_ID"), 0) FROM "ANALYTICS"."STAGING"."ORDERS") + ROW_NUMBER() OVER (ORDER BY NULL)
FROM "ANALYTICS"."STAGING"."etl_stage_101_<token>_src" AS s
WHERE NOT EXISTS (SELECT 1 FROM "ANALYTICS"."STAGING"."ORDERS" AS t WHERE t."ID" = s."ID" AND t."ACTIVE_FLAG" = 'Y') -- [1, 1, 101];
SELECT COUNT(*) FROM "ANALYTICS"."STAGING"."ORDERS";
COMMIT;
DROP TABLE IF EXISTS "ANALYTICS"."STAGING"."etl_stage_101_<token>";
DROP TABLE IF EXISTS "ANALYTICS"."STAGING"."etl_stage_101_<token>_src";
COMMIT;

-- DELETE_ROWS, soft
BEGIN;
SELECT table_name FROM "ANALYTICS".information_schema.tables WHERE LOWER(table_schema) = LOWER(?) AND LOWER(table_name) LIKE ? -- [staging, orders__etl_keep_%];
SELECT table_name FROM "ANALYTICS".information_schema.tables WHERE LOWER(table_schema) = LOWER(?) AND LOWER(table_name) LIKE ? -- [staging, etl_stage_101_%];
SELECT c.column_name, CASE WHEN c.data_type = 'NUMBER' THEN 'NUMBER(' || c.numeric_precision || ',' || c.numeric_scale || ')' WHEN c.data_type = 'TEXT' THEN 'VARCHAR(' || c.character_maximum_length || ')' WHEN c.data_type LIKE 'TIMESTAMP%' THEN c.data_type || '(' || c.datetime_precision || ')' ELSE c.data_type END FROM "ANALYTICS".information_schema.columns c JOIN "ANALYTICS".information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE c.table_schema = ? AND c.table_name = ? AND t.table_type = 'BASE TABLE' ORDER BY c.ordinal_position -- [STAGING, ORDERS];
CREATE TABLE "ANALYTICS"."STAGING"."etl_stage_101_<token>" AS SELECT * FROM (
SELECT id, name, amount FROM raw.orders
) AS etl_source;
SELECT c.column_name, CASE WHEN c.data_type = 'NUMBER' THEN 'NUMBER(' || c.numeric_precision || ',' || c.numeric_scale || ')' WHEN c.data_type = 'TEXT' THEN 'VARCHAR(' || c.character_maximum_length || ')' WHEN c.data_type LIKE 'TIMESTAMP%' THEN c.data_type || '(' || c.datetime_precision || ')' ELSE c.data_type END FROM "ANALYTICS".information_schema.columns c JOIN "ANALYTICS".information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE c.table_schema = ? AND c.table_name = ? AND t.table_type = 'BASE TABLE' ORDER BY c.ordinal_position -- [STAGING, etl_stage_101_<token>];
SELECT COUNT(*) FROM "ANALYTICS"."STAGING"."etl_stage_101_<token>";
SELECT COUNT(*) FROM "ANALYTICS"."STAGING"."etl_stage_101_<token>" WHERE "ID" IS NULL;
SELECT COUNT(*) FROM "ANALYTICS"."STAGING"."ORDERS" AS t WHERE EXISTS (SELECT 1 FROM "ANALYTICS"."STAGING"."etl_stage_101_<token>" AS s WHERE t."ID" = s."ID") AND NOT COALESCE(t."DELETE_FLAG", 'N') = 'Y';
BEGIN TRANSACTION;
UPDATE "ANALYTICS"."STAGING"."ORDERS" AS t SET "DELETE_FLAG" = 'Y', "PIPELINE_ID" = CAST(? AS BIGINT), "PIPELINE_RUN_ID" = CAST(? AS BIGINT), "TASK_RUN_ID" = CAST(? AS BIGINT), "UPDATE_DATE" = CURRENT_TIMESTAMP, "UPDATED_BY" = CURRENT_USER()
WHERE EXISTS (SELECT 1 FROM "ANALYTICS"."STAGING"."etl_stage_101_<token>" AS s WHERE t."ID" = s."ID") AND NOT COALESCE(t."DELETE_FLAG", 'N') = 'Y' -- [1, 1, 101];
SELECT COUNT(*) FROM "ANALYTICS"."STAGING"."ORDERS";
COMMIT;
DROP TABLE IF EXISTS "ANALYTICS"."STAGING"."etl_stage_101_<token>";
COMMIT;

-- DELETE_ROWS, HARD_DELETE
BEGIN;
SELECT table_name FROM "ANALYTICS".information_schema.tables WHERE LOWER(table_schema) = LOWER(?) AND LOWER(table_name) LIKE ? -- [staging, orders__etl_keep_%];
SELECT table_name FROM "ANALYTICS".information_schema.tables WHERE LOWER(table_schema) = LOWER(?) AND LOWER(table_name) LIKE ? -- [staging, etl_stage_101_%];
SELECT c.column_name, CASE WHEN c.data_type = 'NUMBER' THEN 'NUMBER(' || c.numeric_precision || ',' || c.numeric_scale || ')' WHEN c.data_type = 'TEXT' THEN 'VARCHAR(' || c.character_maximum_length || ')' WHEN c.data_type LIKE 'TIMESTAMP%' THEN c.data_type || '(' || c.datetime_precision || ')' ELSE c.data_type END FROM "ANALYTICS".information_schema.columns c JOIN "ANALYTICS".information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE c.table_schema = ? AND c.table_name = ? AND t.table_type = 'BASE TABLE' ORDER BY c.ordinal_position -- [STAGING, ORDERS];
CREATE TABLE "ANALYTICS"."STAGING"."etl_stage_101_<token>" AS SELECT * FROM (
SELECT id, name, amount FROM raw.orders
) AS etl_source;
SELECT c.column_name, CASE WHEN c.data_type = 'NUMBER' THEN 'NUMBER(' || c.numeric_precision || ',' || c.numeric_scale || ')' WHEN c.data_type = 'TEXT' THEN 'VARCHAR(' || c.character_maximum_length || ')' WHEN c.data_type LIKE 'TIMESTAMP%' THEN c.data_type || '(' || c.datetime_precision || ')' ELSE c.data_type END FROM "ANALYTICS".information_schema.columns c JOIN "ANALYTICS".information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE c.table_schema = ? AND c.table_name = ? AND t.table_type = 'BASE TABLE' ORDER BY c.ordinal_position -- [STAGING, etl_stage_101_<token>];
SELECT COUNT(*) FROM "ANALYTICS"."STAGING"."etl_stage_101_<token>";
SELECT COUNT(*) FROM "ANALYTICS"."STAGING"."etl_stage_101_<token>" WHERE "ID" IS NULL;
SELECT COUNT(*) FROM "ANALYTICS"."STAGING"."ORDERS" AS t WHERE EXISTS (SELECT 1 FROM "ANALYTICS"."STAGING"."etl_stage_101_<token>" AS s WHERE t."ID" = s."ID");
BEGIN TRANSACTION;
DELETE FROM "ANALYTICS"."STAGING"."ORDERS" AS t WHERE EXISTS (SELECT 1 FROM "ANALYTICS"."STAGING"."etl_stage_101_<token>" AS s WHERE t."ID" = s."ID");
SELECT COUNT(*) FROM "ANALYTICS"."STAGING"."ORDERS";
COMMIT;
DROP TABLE IF EXISTS "ANALYTICS"."STAGING"."etl_stage_101_<token>";
COMMIT;

-- DROP_TABLE
BEGIN;
SELECT table_name FROM "ANALYTICS".information_schema.tables WHERE LOWER(table_schema) = LOWER(?) AND LOWER(table_name) LIKE ? -- [staging, orders__etl_keep_%];
SELECT table_name FROM "ANALYTICS".information_schema.tables WHERE LOWER(table_schema) = LOWER(?) AND LOWER(table_name) LIKE ? -- [staging, etl_stage_101_%];
DROP ICEBERG TABLE IF EXISTS "ANALYTICS"."STAGING"."ORDERS";
COMMIT;

-- etl-craft rehash --target staging.orders
BEGIN;
SELECT c.column_name, CASE WHEN c.data_type = 'NUMBER' THEN 'NUMBER(' || c.numeric_precision || ',' || c.numeric_scale || ')' WHEN c.data_type = 'TEXT' THEN 'VARCHAR(' || c.character_maximum_length || ')' WHEN c.data_type LIKE 'TIMESTAMP%' THEN c.data_type || '(' || c.datetime_precision || ')' ELSE c.data_type END FROM "ANALYTICS".information_schema.columns c JOIN "ANALYTICS".information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE c.table_schema = ? AND c.table_name = ? AND t.table_type = 'BASE TABLE' ORDER BY c.ordinal_position -- [STAGING, ORDERS];
SELECT COUNT(*) FROM "ANALYTICS"."STAGING"."ORDERS";
UPDATE "ANALYTICS"."STAGING"."ORDERS" SET "HASH_KEY" = MD5(CASE WHEN "NAME" IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST("NAME" AS VARCHAR)) AS VARCHAR) || ':' || CAST("NAME" AS VARCHAR) END || CASE WHEN "AMOUNT" IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST("AMOUNT" AS VARCHAR)) AS VARCHAR) || ':' || CAST("AMOUNT" AS VARCHAR) END);
COMMIT;

-- etl-craft upgrade-targets
BEGIN;
SELECT c.column_name, CASE WHEN c.data_type = 'NUMBER' THEN 'NUMBER(' || c.numeric_precision || ',' || c.numeric_scale || ')' WHEN c.data_type = 'TEXT' THEN 'VARCHAR(' || c.character_maximum_length || ')' WHEN c.data_type LIKE 'TIMESTAMP%' THEN c.data_type || '(' || c.datetime_precision || ')' ELSE c.data_type END FROM "ANALYTICS".information_schema.columns c JOIN "ANALYTICS".information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE c.table_schema = ? AND c.table_name = ? AND t.table_type = 'BASE TABLE' ORDER BY c.ordinal_position -- [STAGING, ORDERS];
ALTER ICEBERG TABLE "ANALYTICS"."STAGING"."ORDERS" ADD COLUMN "PIPELINE_ID" BIGINT;
ALTER ICEBERG TABLE "ANALYTICS"."STAGING"."ORDERS" ADD COLUMN "TASK_RUN_ID" BIGINT;
COMMIT;

