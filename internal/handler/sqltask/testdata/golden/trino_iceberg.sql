-- CREATE_TABLE, the target absent
SELECT table_name FROM "iceberg".information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(? AS VARCHAR)) AND LOWER(table_name) LIKE CAST(? AS VARCHAR) -- [staging, orders__etl_keep_%];
SELECT table_name FROM "iceberg".information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(? AS VARCHAR)) AND LOWER(table_name) LIKE CAST(? AS VARCHAR) -- [staging, etl_stage_101_%];
SELECT * FROM (
SELECT id, name, amount FROM raw.orders
) AS etl_source LIMIT 0;
CREATE TABLE "iceberg"."staging"."etl_stage_101_<token>" AS
SELECT s."id" AS "id", s."name" AS "name", s."amount" AS "amount", CAST(CAST(? AS BIGINT) AS BIGINT) AS "pipeline_id", CAST(CAST(? AS BIGINT) AS BIGINT) AS "pipeline_run_id", CAST(CAST(? AS BIGINT) AS BIGINT) AS "task_run_id", row_number() OVER () AS "row_id"
FROM (
SELECT id, name, amount FROM raw.orders
) AS s -- [1, 1, 101];
SELECT c.column_name, c.data_type FROM "iceberg".information_schema.columns c JOIN "iceberg".information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE c.table_schema = CAST(? AS VARCHAR) AND c.table_name = CAST(? AS VARCHAR) AND t.table_type = 'BASE TABLE' ORDER BY c.ordinal_position -- [staging, orders];
CREATE OR REPLACE TABLE "iceberg"."staging"."orders" WITH (location = 's3://lake/staging/orders') AS SELECT * FROM "iceberg"."staging"."etl_stage_101_<token>";
SELECT COUNT(CASE WHEN "task_run_id" = CAST(? AS BIGINT) THEN 1 END), COUNT(*) FROM "iceberg"."staging"."orders" -- [101];
DROP TABLE IF EXISTS "iceberg"."staging"."etl_stage_101_<token>";

-- CREATE_TABLE, the target exists
SELECT table_name FROM "iceberg".information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(? AS VARCHAR)) AND LOWER(table_name) LIKE CAST(? AS VARCHAR) -- [staging, orders__etl_keep_%];
SELECT table_name FROM "iceberg".information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(? AS VARCHAR)) AND LOWER(table_name) LIKE CAST(? AS VARCHAR) -- [staging, etl_stage_101_%];
SELECT * FROM (
SELECT id, name, amount FROM raw.orders
) AS etl_source LIMIT 0;
CREATE TABLE "iceberg"."staging"."etl_stage_101_<token>" AS
SELECT s."id" AS "id", s."name" AS "name", s."amount" AS "amount", CAST(CAST(? AS BIGINT) AS BIGINT) AS "pipeline_id", CAST(CAST(? AS BIGINT) AS BIGINT) AS "pipeline_run_id", CAST(CAST(? AS BIGINT) AS BIGINT) AS "task_run_id", row_number() OVER () AS "row_id"
FROM (
SELECT id, name, amount FROM raw.orders
) AS s -- [1, 1, 101];
SELECT c.column_name, c.data_type FROM "iceberg".information_schema.columns c JOIN "iceberg".information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE c.table_schema = CAST(? AS VARCHAR) AND c.table_name = CAST(? AS VARCHAR) AND t.table_type = 'BASE TABLE' ORDER BY c.ordinal_position -- [staging, orders];
CREATE TABLE "iceberg"."staging"."orders__etl_keep_101_1" AS SELECT * FROM "iceberg"."staging"."orders";
CREATE OR REPLACE TABLE "iceberg"."staging"."orders" AS SELECT * FROM "iceberg"."staging"."etl_stage_101_<token>";
SELECT COUNT(CASE WHEN "task_run_id" = CAST(? AS BIGINT) THEN 1 END), COUNT(*) FROM "iceberg"."staging"."orders" -- [101];
DROP TABLE IF EXISTS "iceberg"."staging"."etl_stage_101_<token>";
DROP TABLE IF EXISTS "iceberg"."staging"."orders__etl_keep_101_1";

-- SETUP_TABLE for SCD2_MERGE
SELECT table_name FROM "iceberg".information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(? AS VARCHAR)) AND LOWER(table_name) LIKE CAST(? AS VARCHAR) -- [staging, orders__etl_keep_%];
SELECT table_name FROM "iceberg".information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(? AS VARCHAR)) AND LOWER(table_name) LIKE CAST(? AS VARCHAR) -- [staging, etl_stage_101_%];
SELECT c.column_name, c.data_type FROM "iceberg".information_schema.columns c JOIN "iceberg".information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE c.table_schema = CAST(? AS VARCHAR) AND c.table_name = CAST(? AS VARCHAR) AND t.table_type = 'BASE TABLE' ORDER BY c.ordinal_position -- [staging, orders];
CREATE TABLE "iceberg"."staging"."etl_stage_101_<token>" AS SELECT * FROM (
SELECT id, name, amount FROM raw.orders
) AS etl_source LIMIT 0;
SELECT c.column_name, c.data_type FROM "iceberg".information_schema.columns c JOIN "iceberg".information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE c.table_schema = CAST(? AS VARCHAR) AND c.table_name = CAST(? AS VARCHAR) AND t.table_type = 'BASE TABLE' ORDER BY c.ordinal_position -- [staging, etl_stage_101_<token>];
CREATE TABLE "iceberg"."staging"."orders" (
  "id" bigint,
  "name" varchar,
  "amount" decimal(12,2),
  "pipeline_id" BIGINT,
  "pipeline_run_id" BIGINT,
  "task_run_id" BIGINT,
  "hash_key" VARCHAR,
  "create_date" TIMESTAMP(6) WITH TIME ZONE,
  "created_by" VARCHAR,
  "update_date" TIMESTAMP(6) WITH TIME ZONE,
  "updated_by" VARCHAR,
  "delete_flag" VARCHAR,
  "active_flag" VARCHAR,
  "row_id" BIGINT
) WITH (location = 's3://lake/staging/orders');
DROP TABLE IF EXISTS "iceberg"."staging"."etl_stage_101_<token>";

-- OVERWRITE_TABLE
SELECT table_name FROM "iceberg".information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(? AS VARCHAR)) AND LOWER(table_name) LIKE CAST(? AS VARCHAR) -- [staging, orders__etl_keep_%];
SELECT table_name FROM "iceberg".information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(? AS VARCHAR)) AND LOWER(table_name) LIKE CAST(? AS VARCHAR) -- [staging, etl_stage_101_%];
SELECT c.column_name, c.data_type FROM "iceberg".information_schema.columns c JOIN "iceberg".information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE c.table_schema = CAST(? AS VARCHAR) AND c.table_name = CAST(? AS VARCHAR) AND t.table_type = 'BASE TABLE' ORDER BY c.ordinal_position -- [staging, orders];
CREATE TABLE "iceberg"."staging"."etl_stage_101_<token>" AS SELECT * FROM (
SELECT id, name, amount FROM raw.orders
) AS etl_source;
SELECT c.column_name, c.data_type FROM "iceberg".information_schema.columns c JOIN "iceberg".information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE c.table_schema = CAST(? AS VARCHAR) AND c.table_name = CAST(? AS VARCHAR) AND t.table_type = 'BASE TABLE' ORDER BY c.ordinal_position -- [staging, etl_stage_101_<token>];
SELECT COUNT(*) FROM "iceberg"."staging"."etl_stage_101_<token>";
CREATE TABLE "iceberg"."staging"."orders__etl_keep_101_1" AS SELECT * FROM "iceberg"."staging"."orders";
DELETE FROM "iceberg"."staging"."orders";
INSERT INTO "iceberg"."staging"."orders" ("id", "name", "amount", "pipeline_id", "pipeline_run_id", "task_run_id", "update_date", "row_id")
SELECT s."id", s."name", s."amount", CAST(CAST(? AS BIGINT) AS BIGINT), CAST(CAST(? AS BIGINT) AS BIGINT), CAST(CAST(? AS BIGINT) AS BIGINT), current_timestamp(6), (SELECT COALESCE(MAX("row_id"), 0) FROM "iceberg"."staging"."orders") + row_number() OVER ()
FROM "iceberg"."staging"."etl_stage_101_<token>" AS s -- [1, 1, 101];
SELECT COUNT(CASE WHEN "task_run_id" = CAST(? AS BIGINT) THEN 1 END), COUNT(*) FROM "iceberg"."staging"."orders" -- [101];
DROP TABLE IF EXISTS "iceberg"."staging"."etl_stage_101_<token>";
DROP TABLE IF EXISTS "iceberg"."staging"."orders__etl_keep_101_1";

-- OVERWRITE_TABLE, evolved (SCHEMA_EVOLUTION adds note)
SELECT table_name FROM "iceberg".information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(? AS VARCHAR)) AND LOWER(table_name) LIKE CAST(? AS VARCHAR) -- [staging, orders__etl_keep_%];
SELECT table_name FROM "iceberg".information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(? AS VARCHAR)) AND LOWER(table_name) LIKE CAST(? AS VARCHAR) -- [staging, etl_stage_101_%];
SELECT c.column_name, c.data_type FROM "iceberg".information_schema.columns c JOIN "iceberg".information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE c.table_schema = CAST(? AS VARCHAR) AND c.table_name = CAST(? AS VARCHAR) AND t.table_type = 'BASE TABLE' ORDER BY c.ordinal_position -- [staging, orders];
CREATE TABLE "iceberg"."staging"."etl_stage_101_<token>" AS SELECT * FROM (
SELECT id, name, amount FROM raw.orders
) AS etl_source;
SELECT c.column_name, c.data_type FROM "iceberg".information_schema.columns c JOIN "iceberg".information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE c.table_schema = CAST(? AS VARCHAR) AND c.table_name = CAST(? AS VARCHAR) AND t.table_type = 'BASE TABLE' ORDER BY c.ordinal_position -- [staging, etl_stage_101_<token>];
SELECT COUNT(*) FROM "iceberg"."staging"."etl_stage_101_<token>";
ALTER TABLE "iceberg"."staging"."orders" ADD COLUMN "note" varchar;
CREATE TABLE "iceberg"."staging"."orders__etl_keep_101_1" AS SELECT * FROM "iceberg"."staging"."orders";
DELETE FROM "iceberg"."staging"."orders";
INSERT INTO "iceberg"."staging"."orders" ("id", "name", "amount", "note", "pipeline_id", "pipeline_run_id", "task_run_id", "update_date", "row_id")
SELECT s."id", s."name", s."amount", s."note", CAST(CAST(? AS BIGINT) AS BIGINT), CAST(CAST(? AS BIGINT) AS BIGINT), CAST(CAST(? AS BIGINT) AS BIGINT), current_timestamp(6), (SELECT COALESCE(MAX("row_id"), 0) FROM "iceberg"."staging"."orders") + row_number() OVER ()
FROM "iceberg"."staging"."etl_stage_101_<token>" AS s -- [1, 1, 101];
SELECT COUNT(CASE WHEN "task_run_id" = CAST(? AS BIGINT) THEN 1 END), COUNT(*) FROM "iceberg"."staging"."orders" -- [101];
DROP TABLE IF EXISTS "iceberg"."staging"."etl_stage_101_<token>";
DROP TABLE IF EXISTS "iceberg"."staging"."orders__etl_keep_101_1";

-- APPEND_TABLE
SELECT table_name FROM "iceberg".information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(? AS VARCHAR)) AND LOWER(table_name) LIKE CAST(? AS VARCHAR) -- [staging, orders__etl_keep_%];
SELECT table_name FROM "iceberg".information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(? AS VARCHAR)) AND LOWER(table_name) LIKE CAST(? AS VARCHAR) -- [staging, etl_stage_101_%];
SELECT c.column_name, c.data_type FROM "iceberg".information_schema.columns c JOIN "iceberg".information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE c.table_schema = CAST(? AS VARCHAR) AND c.table_name = CAST(? AS VARCHAR) AND t.table_type = 'BASE TABLE' ORDER BY c.ordinal_position -- [staging, orders];
SELECT * FROM (
SELECT id, name, amount FROM raw.orders
) AS etl_source LIMIT 0;
DELETE FROM "iceberg"."staging"."orders" WHERE "task_run_id" = CAST(? AS BIGINT) -- [101];
INSERT INTO "iceberg"."staging"."orders" ("id", "name", "amount", "pipeline_id", "pipeline_run_id", "task_run_id", "create_date", "row_id")
SELECT s."id", s."name", s."amount", CAST(CAST(? AS BIGINT) AS BIGINT), CAST(CAST(? AS BIGINT) AS BIGINT), CAST(CAST(? AS BIGINT) AS BIGINT), current_timestamp(6), (SELECT COALESCE(MAX("row_id"), 0) FROM "iceberg"."staging"."orders") + row_number() OVER ()
FROM (
SELECT id, name, amount FROM raw.orders
) AS s -- [1, 1, 101];
SELECT COUNT(CASE WHEN "task_run_id" = CAST(? AS BIGINT) THEN 1 END), COUNT(*) FROM "iceberg"."staging"."orders" -- [101];

-- SCD1_MERGE, PRESERVE_TARGET
SELECT table_name FROM "iceberg".information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(? AS VARCHAR)) AND LOWER(table_name) LIKE CAST(? AS VARCHAR) -- [staging, orders__etl_keep_%];
SELECT table_name FROM "iceberg".information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(? AS VARCHAR)) AND LOWER(table_name) LIKE CAST(? AS VARCHAR) -- [staging, etl_stage_101_%];
SELECT c.column_name, c.data_type FROM "iceberg".information_schema.columns c JOIN "iceberg".information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE c.table_schema = CAST(? AS VARCHAR) AND c.table_name = CAST(? AS VARCHAR) AND t.table_type = 'BASE TABLE' ORDER BY c.ordinal_position -- [staging, orders];
CREATE TABLE "iceberg"."staging"."etl_stage_101_<token>" AS SELECT * FROM (
SELECT id, name, amount FROM raw.orders
) AS etl_source;
SELECT c.column_name, c.data_type FROM "iceberg".information_schema.columns c JOIN "iceberg".information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE c.table_schema = CAST(? AS VARCHAR) AND c.table_name = CAST(? AS VARCHAR) AND t.table_type = 'BASE TABLE' ORDER BY c.ordinal_position -- [staging, etl_stage_101_<token>];
SELECT COUNT(*) FROM "iceberg"."staging"."etl_stage_101_<token>";
SELECT COUNT(*) FROM "iceberg"."staging"."etl_stage_101_<token>" WHERE "id" IS NULL;
CREATE TABLE "iceberg"."staging"."etl_stage_101_<token>_src" AS SELECT DISTINCT "id", "name", "amount" FROM "iceberg"."staging"."etl_stage_101_<token>";
SELECT COUNT(*) FROM (SELECT "id" FROM "iceberg"."staging"."etl_stage_101_<token>_src" GROUP BY "id" HAVING COUNT(*) > 1) AS dup;
SELECT COUNT(*) FROM "iceberg"."staging"."orders" AS t JOIN "iceberg"."staging"."etl_stage_101_<token>_src" AS s ON t."id" = s."id" AND (t."hash_key" IS DISTINCT FROM lower(to_hex(md5(to_utf8(CASE WHEN COALESCE(s."name", t."name") IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(COALESCE(s."name", t."name") AS VARCHAR)) AS VARCHAR) || ':' || CAST(COALESCE(s."name", t."name") AS VARCHAR) END || CASE WHEN COALESCE(s."amount", t."amount") IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(COALESCE(s."amount", t."amount") AS VARCHAR)) AS VARCHAR) || ':' || CAST(COALESCE(s."amount", t."amount") AS VARCHAR) END)))) OR COALESCE(t."delete_flag", 'N') = 'Y');
MERGE INTO "iceberg"."staging"."orders" AS t
USING "iceberg"."staging"."etl_stage_101_<token>_src" AS s
ON t."id" = s."id"
WHEN MATCHED AND (t."hash_key" IS DISTINCT FROM lower(to_hex(md5(to_utf8(CASE WHEN COALESCE(s."name", t."name") IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(COALESCE(s."name", t."name") AS VARCHAR)) AS VARCHAR) || ':' || CAST(COALESCE(s."name", t."name") AS VARCHAR) END || CASE WHEN COALESCE(s."amount", t."amount") IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(COALESCE(s."amount", t."amount") AS VARCHAR)) AS VARCHAR) || ':' || CAST(COALESCE(s."amount", t."amount") AS VARCHAR) END)))) OR COALESCE(t."delete_flag", 'N') = 'Y') THEN UPDATE SET "name" = COALESCE(s."name", t."name"), "amount" = COALESCE(s."amount", t."amount"), "pipeline_id" = CAST(CAST(? AS BIGINT) AS BIGINT), "pipeline_run_id" = CAST(CAST(? AS BIGINT) AS BIGINT), "task_run_id" = CAST(CAST(? AS BIGINT) AS BIGINT), "hash_key" = lower(to_hex(md5(to_utf8(CASE WHEN COALESCE(s."name", t."name") IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(COALESCE(s."name", t."name") AS VARCHAR)) AS VARCHAR) || ':' || CAST(COALESCE(s."name", t."name") AS VARCHAR) END || CASE WHEN COALESCE(s."amount", t."amount") IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(COALESCE(s."amount", t."amount") AS VARCHAR)) AS VARCHAR) || ':' || CAST(COALESCE(s."amount", t."amount") AS VARCHAR) END)))), "update_date" = current_timestamp(6), "updated_by" = current_user, "delete_flag" = 'N' -- [1, 1, 101];
SELECT COUNT(*) FROM "iceberg"."staging"."etl_stage_101_<token>_src" AS s WHERE NOT EXISTS (SELECT 1 FROM "iceberg"."staging"."orders" AS t WHERE t."id" = s."id");
INSERT INTO "iceberg"."staging"."orders" ("id", "name", "amount", "pipeline_id", "pipeline_run_id", "task_run_id", "hash_key", "create_date", "created_by", "update_date", "updated_by", "delete_flag", "row_id")
SELECT s."id", s."name", s."amount", CAST(CAST(? AS BIGINT) AS BIGINT), CAST(CAST(? AS BIGINT) AS BIGINT), CAST(CAST(? AS BIGINT) AS BIGINT), lower(to_hex(md5(to_utf8(CASE WHEN s."name" IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(s."name" AS VARCHAR)) AS VARCHAR) || ':' || CAST(s."name" AS VARCHAR) END || CASE WHEN s."amount" IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(s."amount" AS VARCHAR)) AS VARCHAR) || ':' || CAST(s."amount" AS VARCHAR) END)))), current_timestamp(6), current_user, current_timestamp(6), current_user, 'N', (SELECT COALESCE(MAX("row_id"), 0) FROM "iceberg"."staging"."orders") + row_number() OVER ()
FROM "iceberg"."staging"."etl_stage_101_<token>_src" AS s
WHERE NOT EXISTS (SELECT 1 FROM "iceberg"."staging"."orders" AS t WHERE t."id" = s."id") -- [1, 1, 101];
SELECT COUNT(*) FROM "iceberg"."staging"."orders";
DROP TABLE IF EXISTS "iceberg"."staging"."etl_stage_101_<token>";
DROP TABLE IF EXISTS "iceberg"."staging"."etl_stage_101_<token>_src";

-- SCD2_MERGE, evolved, MERGE_DEDUPE_ORDER
SELECT table_name FROM "iceberg".information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(? AS VARCHAR)) AND LOWER(table_name) LIKE CAST(? AS VARCHAR) -- [staging, orders__etl_keep_%];
SELECT table_name FROM "iceberg".information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(? AS VARCHAR)) AND LOWER(table_name) LIKE CAST(? AS VARCHAR) -- [staging, etl_stage_101_%];
SELECT c.column_name, c.data_type FROM "iceberg".information_schema.columns c JOIN "iceberg".information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE c.table_schema = CAST(? AS VARCHAR) AND c.table_name = CAST(? AS VARCHAR) AND t.table_type = 'BASE TABLE' ORDER BY c.ordinal_position -- [staging, orders];
CREATE TABLE "iceberg"."staging"."etl_stage_101_<token>" AS SELECT * FROM (
SELECT id, name, amount FROM raw.orders
) AS etl_source;
SELECT c.column_name, c.data_type FROM "iceberg".information_schema.columns c JOIN "iceberg".information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE c.table_schema = CAST(? AS VARCHAR) AND c.table_name = CAST(? AS VARCHAR) AND t.table_type = 'BASE TABLE' ORDER BY c.ordinal_position -- [staging, etl_stage_101_<token>];
SELECT COUNT(*) FROM "iceberg"."staging"."etl_stage_101_<token>";
SELECT COUNT(*) FROM "iceberg"."staging"."etl_stage_101_<token>" WHERE "id" IS NULL;
CREATE TABLE "iceberg"."staging"."etl_stage_101_<token>_src" AS SELECT "id", "name", "amount", "note" FROM (
  SELECT "id", "name", "amount", "note", RANK() OVER (PARTITION BY "id" ORDER BY amount DESC) AS etl_dedupe_rank
  FROM (SELECT DISTINCT "id", "name", "amount", "note" FROM "iceberg"."staging"."etl_stage_101_<token>") AS d
) AS ranked WHERE etl_dedupe_rank = 1;
SELECT COUNT(*) FROM (SELECT "id" FROM "iceberg"."staging"."etl_stage_101_<token>_src" GROUP BY "id" HAVING COUNT(*) > 1) AS dup;
ALTER TABLE "iceberg"."staging"."orders" ADD COLUMN "note" varchar;
SELECT COUNT(*) FROM "iceberg"."staging"."orders" AS t JOIN "iceberg"."staging"."etl_stage_101_<token>_src" AS s ON t."id" = s."id" AND t."active_flag" = 'Y' AND (t."hash_key" IS DISTINCT FROM lower(to_hex(md5(to_utf8(CASE WHEN s."name" IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(s."name" AS VARCHAR)) AS VARCHAR) || ':' || CAST(s."name" AS VARCHAR) END || CASE WHEN s."amount" IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(s."amount" AS VARCHAR)) AS VARCHAR) || ':' || CAST(s."amount" AS VARCHAR) END || CASE WHEN s."note" IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(s."note" AS VARCHAR)) AS VARCHAR) || ':' || CAST(s."note" AS VARCHAR) END)))) OR COALESCE(t."delete_flag", 'N') = 'Y');
MERGE INTO "iceberg"."staging"."orders" AS t
USING "iceberg"."staging"."etl_stage_101_<token>_src" AS s
ON t."id" = s."id" AND t."active_flag" = 'Y'
WHEN MATCHED AND (t."hash_key" IS DISTINCT FROM lower(to_hex(md5(to_utf8(CASE WHEN s."name" IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(s."name" AS VARCHAR)) AS VARCHAR) || ':' || CAST(s."name" AS VARCHAR) END || CASE WHEN s."amount" IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(s."amount" AS VARCHAR)) AS VARCHAR) || ':' || CAST(s."amount" AS VARCHAR) END || CASE WHEN s."note" IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(s."note" AS VARCHAR)) AS VARCHAR) || ':' || CAST(s."note" AS VARCHAR) END)))) OR COALESCE(t."delete_flag", 'N') = 'Y') THEN UPDATE SET "active_flag" = 'N', "pipeline_id" = CAST(CAST(? AS BIGINT) AS BIGINT), "pipeline_run_id" = CAST(CAST(? AS BIGINT) AS BIGINT), "task_run_id" = CAST(CAST(? AS BIGINT) AS BIGINT), "update_date" = current_timestamp(6), "updated_by" = current_user -- [1, 1, 101];
SELECT COUNT(*) FROM "iceberg"."staging"."etl_stage_101_<token>_src" AS s WHERE NOT EXISTS (SELECT 1 FROM "iceberg"."staging"."orders" AS t WHERE t."id" = s."id" AND t."active_flag" = 'Y');
INSERT INTO "iceberg"."staging"."orders" ("id", "name", "amount", "note", "pipeline_id", "pipeline_run_id", "task_run_id", "hash_key", "create_date", "created_by", "update_date", "updated_by", "delete_flag", "active_flag", "row_id")
SELECT s."id", s."name", s."amount", s."note", CAST(CAST(? AS BIGINT) AS BIGINT), CAST(CAST(? AS BIGINT) AS BIGINT), CAST(CAST(? AS BIGINT) AS BIGINT), lower(to_hex(md5(to_utf8(CASE WHEN s."name" IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(s."name" AS VARCHAR)) AS VARCHAR) || ':' || CAST(s."name" AS VARCHAR) END || CASE WHEN s."amount" IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(s."amount" AS VARCHAR)) AS VARCHAR) || ':' || CAST(s."amount" AS VARCHAR) END || CASE WHEN s."note" IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(s."note" AS VARCHAR)) AS VARCHAR) || ':' || CAST(s."note" AS VARCHAR) END)))), current_timestamp(6), current_user, current_timestamp(6), current_user, 'N', 'Y', (SELECT COALESCE(MAX("row_id"), 0) FROM "iceberg"."staging"."orders") + row_number() OVER ()
FROM "iceberg"."staging"."etl_stage_101_<token>_src" AS s
WHERE NOT EXISTS (SELECT 1 FROM "iceberg"."staging"."orders" AS t WHERE t."id" = s."id" AND t."active_flag" = 'Y') -- [1, 1, 101];
SELECT COUNT(*) FROM "iceberg"."staging"."orders";
DROP TABLE IF EXISTS "iceberg"."staging"."etl_stage_101_<token>";
DROP TABLE IF EXISTS "iceberg"."staging"."etl_stage_101_<token>_src";

-- DELETE_ROWS, soft
SELECT table_name FROM "iceberg".information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(? AS VARCHAR)) AND LOWER(table_name) LIKE CAST(? AS VARCHAR) -- [staging, orders__etl_keep_%];
SELECT table_name FROM "iceberg".information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(? AS VARCHAR)) AND LOWER(table_name) LIKE CAST(? AS VARCHAR) -- [staging, etl_stage_101_%];
SELECT c.column_name, c.data_type FROM "iceberg".information_schema.columns c JOIN "iceberg".information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE c.table_schema = CAST(? AS VARCHAR) AND c.table_name = CAST(? AS VARCHAR) AND t.table_type = 'BASE TABLE' ORDER BY c.ordinal_position -- [staging, orders];
CREATE TABLE "iceberg"."staging"."etl_stage_101_<token>" AS SELECT * FROM (
SELECT id, name, amount FROM raw.orders
) AS etl_source;
SELECT c.column_name, c.data_type FROM "iceberg".information_schema.columns c JOIN "iceberg".information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE c.table_schema = CAST(? AS VARCHAR) AND c.table_name = CAST(? AS VARCHAR) AND t.table_type = 'BASE TABLE' ORDER BY c.ordinal_position -- [staging, etl_stage_101_<token>];
SELECT COUNT(*) FROM "iceberg"."staging"."etl_stage_101_<token>";
SELECT COUNT(*) FROM "iceberg"."staging"."etl_stage_101_<token>" WHERE "id" IS NULL;
SELECT COUNT(*) FROM "iceberg"."staging"."orders" AS t WHERE EXISTS (SELECT 1 FROM "iceberg"."staging"."etl_stage_101_<token>" AS s WHERE t."id" = s."id") AND NOT COALESCE(t."delete_flag", 'N') = 'Y';
MERGE INTO "iceberg"."staging"."orders" AS t
USING (SELECT DISTINCT "id" FROM "iceberg"."staging"."etl_stage_101_<token>") AS s
ON t."id" = s."id"
WHEN MATCHED AND NOT COALESCE(t."delete_flag", 'N') = 'Y' THEN UPDATE SET "delete_flag" = 'Y', "pipeline_id" = CAST(CAST(? AS BIGINT) AS BIGINT), "pipeline_run_id" = CAST(CAST(? AS BIGINT) AS BIGINT), "task_run_id" = CAST(CAST(? AS BIGINT) AS BIGINT), "update_date" = current_timestamp(6), "updated_by" = current_user -- [1, 1, 101];
SELECT COUNT(*) FROM "iceberg"."staging"."orders";
DROP TABLE IF EXISTS "iceberg"."staging"."etl_stage_101_<token>";

-- DELETE_ROWS, HARD_DELETE
SELECT table_name FROM "iceberg".information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(? AS VARCHAR)) AND LOWER(table_name) LIKE CAST(? AS VARCHAR) -- [staging, orders__etl_keep_%];
SELECT table_name FROM "iceberg".information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(? AS VARCHAR)) AND LOWER(table_name) LIKE CAST(? AS VARCHAR) -- [staging, etl_stage_101_%];
SELECT c.column_name, c.data_type FROM "iceberg".information_schema.columns c JOIN "iceberg".information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE c.table_schema = CAST(? AS VARCHAR) AND c.table_name = CAST(? AS VARCHAR) AND t.table_type = 'BASE TABLE' ORDER BY c.ordinal_position -- [staging, orders];
CREATE TABLE "iceberg"."staging"."etl_stage_101_<token>" AS SELECT * FROM (
SELECT id, name, amount FROM raw.orders
) AS etl_source;
SELECT c.column_name, c.data_type FROM "iceberg".information_schema.columns c JOIN "iceberg".information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE c.table_schema = CAST(? AS VARCHAR) AND c.table_name = CAST(? AS VARCHAR) AND t.table_type = 'BASE TABLE' ORDER BY c.ordinal_position -- [staging, etl_stage_101_<token>];
SELECT COUNT(*) FROM "iceberg"."staging"."etl_stage_101_<token>";
SELECT COUNT(*) FROM "iceberg"."staging"."etl_stage_101_<token>" WHERE "id" IS NULL;
SELECT COUNT(*) FROM "iceberg"."staging"."orders" AS t WHERE EXISTS (SELECT 1 FROM "iceberg"."staging"."etl_stage_101_<token>" AS s WHERE t."id" = s."id");
MERGE INTO "iceberg"."staging"."orders" AS t
USING (SELECT DISTINCT "id" FROM "iceberg"."staging"."etl_stage_101_<token>") AS s
ON t."id" = s."id"
WHEN MATCHED THEN DELETE;
SELECT COUNT(*) FROM "iceberg"."staging"."orders";
DROP TABLE IF EXISTS "iceberg"."staging"."etl_stage_101_<token>";

-- DROP_TABLE
SELECT table_name FROM "iceberg".information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(? AS VARCHAR)) AND LOWER(table_name) LIKE CAST(? AS VARCHAR) -- [staging, orders__etl_keep_%];
SELECT table_name FROM "iceberg".information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(? AS VARCHAR)) AND LOWER(table_name) LIKE CAST(? AS VARCHAR) -- [staging, etl_stage_101_%];
DROP TABLE IF EXISTS "iceberg"."staging"."orders";

-- etl-craft rehash --target staging.orders
SELECT c.column_name, c.data_type FROM "iceberg".information_schema.columns c JOIN "iceberg".information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE c.table_schema = CAST(? AS VARCHAR) AND c.table_name = CAST(? AS VARCHAR) AND t.table_type = 'BASE TABLE' ORDER BY c.ordinal_position -- [staging, orders];
SELECT COUNT(*) FROM "iceberg"."staging"."orders";
UPDATE "iceberg"."staging"."orders" SET "hash_key" = lower(to_hex(md5(to_utf8(CASE WHEN "name" IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST("name" AS VARCHAR)) AS VARCHAR) || ':' || CAST("name" AS VARCHAR) END || CASE WHEN "amount" IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST("amount" AS VARCHAR)) AS VARCHAR) || ':' || CAST("amount" AS VARCHAR) END))));

-- etl-craft upgrade-targets
SELECT c.column_name, c.data_type FROM "iceberg".information_schema.columns c JOIN "iceberg".information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE c.table_schema = CAST(? AS VARCHAR) AND c.table_name = CAST(? AS VARCHAR) AND t.table_type = 'BASE TABLE' ORDER BY c.ordinal_position -- [staging, orders];
ALTER TABLE "iceberg"."staging"."orders" ADD COLUMN "pipeline_id" BIGINT;
ALTER TABLE "iceberg"."staging"."orders" ADD COLUMN "task_run_id" BIGINT;

