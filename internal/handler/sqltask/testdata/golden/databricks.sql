-- CREATE_TABLE, the target absent
SELECT table_name FROM `main`.information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(:p1 AS STRING)) AND LOWER(table_name) LIKE CAST(:p2 AS STRING) -- [staging, orders__etl_keep_%];
SELECT table_name FROM `main`.information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(:p1 AS STRING)) AND LOWER(table_name) LIKE CAST(:p2 AS STRING) -- [staging, etl_stage_101_%];
SELECT * FROM (
SELECT id, name, amount FROM raw.orders
) AS etl_source LIMIT 0;
CREATE TABLE `main`.`staging`.`etl_stage_101_<token>` AS
SELECT s.`id` AS `id`, s.`name` AS `name`, s.`amount` AS `amount`, CAST(CAST(:p1 AS BIGINT) AS BIGINT) AS `pipeline_id`, CAST(CAST(:p2 AS BIGINT) AS BIGINT) AS `pipeline_run_id`, CAST(CAST(:p3 AS BIGINT) AS BIGINT) AS `task_run_id`, row_number() OVER (ORDER BY NULL) AS `row_id`
FROM (
SELECT id, name, amount FROM raw.orders
) AS s -- [1, 1, 101];
SELECT c.column_name, c.full_data_type FROM `main`.information_schema.columns c JOIN `main`.information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE LOWER(c.table_schema) = LOWER(CAST(:p1 AS STRING)) AND LOWER(c.table_name) = LOWER(CAST(:p2 AS STRING)) AND t.table_type IN ('MANAGED', 'EXTERNAL') ORDER BY c.ordinal_position -- [staging, orders];
CREATE OR REPLACE TABLE `main`.`staging`.`orders` USING DELTA LOCATION 's3://lake/staging/orders' AS SELECT * FROM `main`.`staging`.`etl_stage_101_<token>`;
SELECT COUNT(CASE WHEN `task_run_id` = CAST(:p1 AS BIGINT) THEN 1 END), COUNT(*) FROM `main`.`staging`.`orders` -- [101];
DROP TABLE IF EXISTS `main`.`staging`.`etl_stage_101_<token>`;

-- CREATE_TABLE, the target exists
SELECT table_name FROM `main`.information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(:p1 AS STRING)) AND LOWER(table_name) LIKE CAST(:p2 AS STRING) -- [staging, orders__etl_keep_%];
SELECT table_name FROM `main`.information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(:p1 AS STRING)) AND LOWER(table_name) LIKE CAST(:p2 AS STRING) -- [staging, etl_stage_101_%];
SELECT * FROM (
SELECT id, name, amount FROM raw.orders
) AS etl_source LIMIT 0;
CREATE TABLE `main`.`staging`.`etl_stage_101_<token>` AS
SELECT s.`id` AS `id`, s.`name` AS `name`, s.`amount` AS `amount`, CAST(CAST(:p1 AS BIGINT) AS BIGINT) AS `pipeline_id`, CAST(CAST(:p2 AS BIGINT) AS BIGINT) AS `pipeline_run_id`, CAST(CAST(:p3 AS BIGINT) AS BIGINT) AS `task_run_id`, row_number() OVER (ORDER BY NULL) AS `row_id`
FROM (
SELECT id, name, amount FROM raw.orders
) AS s -- [1, 1, 101];
SELECT c.column_name, c.full_data_type FROM `main`.information_schema.columns c JOIN `main`.information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE LOWER(c.table_schema) = LOWER(CAST(:p1 AS STRING)) AND LOWER(c.table_name) = LOWER(CAST(:p2 AS STRING)) AND t.table_type IN ('MANAGED', 'EXTERNAL') ORDER BY c.ordinal_position -- [staging, orders];
CREATE TABLE `main`.`staging`.`orders__etl_keep_101_1` AS SELECT * FROM `main`.`staging`.`orders`;
CREATE OR REPLACE TABLE `main`.`staging`.`orders` USING DELTA AS SELECT * FROM `main`.`staging`.`etl_stage_101_<token>`;
SELECT COUNT(CASE WHEN `task_run_id` = CAST(:p1 AS BIGINT) THEN 1 END), COUNT(*) FROM `main`.`staging`.`orders` -- [101];
DROP TABLE IF EXISTS `main`.`staging`.`etl_stage_101_<token>`;
DROP TABLE IF EXISTS `main`.`staging`.`orders__etl_keep_101_1`;

-- SETUP_TABLE for SCD2_MERGE
SELECT table_name FROM `main`.information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(:p1 AS STRING)) AND LOWER(table_name) LIKE CAST(:p2 AS STRING) -- [staging, orders__etl_keep_%];
SELECT table_name FROM `main`.information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(:p1 AS STRING)) AND LOWER(table_name) LIKE CAST(:p2 AS STRING) -- [staging, etl_stage_101_%];
SELECT c.column_name, c.full_data_type FROM `main`.information_schema.columns c JOIN `main`.information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE LOWER(c.table_schema) = LOWER(CAST(:p1 AS STRING)) AND LOWER(c.table_name) = LOWER(CAST(:p2 AS STRING)) AND t.table_type IN ('MANAGED', 'EXTERNAL') ORDER BY c.ordinal_position -- [staging, orders];
CREATE TABLE `main`.`staging`.`etl_stage_101_<token>` AS SELECT * FROM (
SELECT id, name, amount FROM raw.orders
) AS etl_source LIMIT 0;
SELECT c.column_name, c.full_data_type FROM `main`.information_schema.columns c JOIN `main`.information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE LOWER(c.table_schema) = LOWER(CAST(:p1 AS STRING)) AND LOWER(c.table_name) = LOWER(CAST(:p2 AS STRING)) AND t.table_type IN ('MANAGED', 'EXTERNAL') ORDER BY c.ordinal_position -- [staging, etl_stage_101_<token>];
CREATE TABLE `main`.`staging`.`orders` (
  `id` bigint,
  `name` string,
  `amount` decimal(12,2),
  `pipeline_id` BIGINT,
  `pipeline_run_id` BIGINT,
  `task_run_id` BIGINT,
  `hash_key` STRING,
  `create_date` TIMESTAMP,
  `created_by` STRING,
  `update_date` TIMESTAMP,
  `updated_by` STRING,
  `delete_flag` STRING,
  `active_flag` STRING,
  `row_id` BIGINT GENERATED BY DEFAULT AS IDENTITY
) USING DELTA LOCATION 's3://lake/staging/orders';
DROP TABLE IF EXISTS `main`.`staging`.`etl_stage_101_<token>`;

-- OVERWRITE_TABLE
SELECT table_name FROM `main`.information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(:p1 AS STRING)) AND LOWER(table_name) LIKE CAST(:p2 AS STRING) -- [staging, orders__etl_keep_%];
SELECT table_name FROM `main`.information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(:p1 AS STRING)) AND LOWER(table_name) LIKE CAST(:p2 AS STRING) -- [staging, etl_stage_101_%];
SELECT c.column_name, c.full_data_type FROM `main`.information_schema.columns c JOIN `main`.information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE LOWER(c.table_schema) = LOWER(CAST(:p1 AS STRING)) AND LOWER(c.table_name) = LOWER(CAST(:p2 AS STRING)) AND t.table_type IN ('MANAGED', 'EXTERNAL') ORDER BY c.ordinal_position -- [staging, orders];
CREATE TABLE `main`.`staging`.`etl_stage_101_<token>` AS SELECT * FROM (
SELECT id, name, amount FROM raw.orders
) AS etl_source;
SELECT c.column_name, c.full_data_type FROM `main`.information_schema.columns c JOIN `main`.information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE LOWER(c.table_schema) = LOWER(CAST(:p1 AS STRING)) AND LOWER(c.table_name) = LOWER(CAST(:p2 AS STRING)) AND t.table_type IN ('MANAGED', 'EXTERNAL') ORDER BY c.ordinal_position -- [staging, etl_stage_101_<token>];
SELECT COUNT(*) FROM `main`.`staging`.`etl_stage_101_<token>`;
CREATE TABLE `main`.`staging`.`orders__etl_keep_101_1` AS SELECT * FROM `main`.`staging`.`orders`;
DELETE FROM `main`.`staging`.`orders`;
INSERT INTO `main`.`staging`.`orders` (`id`, `name`, `amount`, `pipeline_id`, `pipeline_run_id`, `task_run_id`, `update_date`)
SELECT s.`id`, s.`name`, s.`amount`, CAST(CAST(:p1 AS BIGINT) AS BIGINT), CAST(CAST(:p2 AS BIGINT) AS BIGINT), CAST(CAST(:p3 AS BIGINT) AS BIGINT), CURRENT_TIMESTAMP
FROM `main`.`staging`.`etl_stage_101_<token>` AS s -- [1, 1, 101];
SELECT COUNT(CASE WHEN `task_run_id` = CAST(:p1 AS BIGINT) THEN 1 END), COUNT(*) FROM `main`.`staging`.`orders` -- [101];
DROP TABLE IF EXISTS `main`.`staging`.`etl_stage_101_<token>`;
DROP TABLE IF EXISTS `main`.`staging`.`orders__etl_keep_101_1`;

-- OVERWRITE_TABLE, evolved (SCHEMA_EVOLUTION adds note)
SELECT table_name FROM `main`.information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(:p1 AS STRING)) AND LOWER(table_name) LIKE CAST(:p2 AS STRING) -- [staging, orders__etl_keep_%];
SELECT table_name FROM `main`.information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(:p1 AS STRING)) AND LOWER(table_name) LIKE CAST(:p2 AS STRING) -- [staging, etl_stage_101_%];
SELECT c.column_name, c.full_data_type FROM `main`.information_schema.columns c JOIN `main`.information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE LOWER(c.table_schema) = LOWER(CAST(:p1 AS STRING)) AND LOWER(c.table_name) = LOWER(CAST(:p2 AS STRING)) AND t.table_type IN ('MANAGED', 'EXTERNAL') ORDER BY c.ordinal_position -- [staging, orders];
CREATE TABLE `main`.`staging`.`etl_stage_101_<token>` AS SELECT * FROM (
SELECT id, name, amount FROM raw.orders
) AS etl_source;
SELECT c.column_name, c.full_data_type FROM `main`.information_schema.columns c JOIN `main`.information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE LOWER(c.table_schema) = LOWER(CAST(:p1 AS STRING)) AND LOWER(c.table_name) = LOWER(CAST(:p2 AS STRING)) AND t.table_type IN ('MANAGED', 'EXTERNAL') ORDER BY c.ordinal_position -- [staging, etl_stage_101_<token>];
SELECT COUNT(*) FROM `main`.`staging`.`etl_stage_101_<token>`;
ALTER TABLE `main`.`staging`.`orders` ADD COLUMN `note` string;
CREATE TABLE `main`.`staging`.`orders__etl_keep_101_1` AS SELECT * FROM `main`.`staging`.`orders`;
DELETE FROM `main`.`staging`.`orders`;
INSERT INTO `main`.`staging`.`orders` (`id`, `name`, `amount`, `note`, `pipeline_id`, `pipeline_run_id`, `task_run_id`, `update_date`)
SELECT s.`id`, s.`name`, s.`amount`, s.`note`, CAST(CAST(:p1 AS BIGINT) AS BIGINT), CAST(CAST(:p2 AS BIGINT) AS BIGINT), CAST(CAST(:p3 AS BIGINT) AS BIGINT), CURRENT_TIMESTAMP
FROM `main`.`staging`.`etl_stage_101_<token>` AS s -- [1, 1, 101];
SELECT COUNT(CASE WHEN `task_run_id` = CAST(:p1 AS BIGINT) THEN 1 END), COUNT(*) FROM `main`.`staging`.`orders` -- [101];
DROP TABLE IF EXISTS `main`.`staging`.`etl_stage_101_<token>`;
DROP TABLE IF EXISTS `main`.`staging`.`orders__etl_keep_101_1`;

-- APPEND_TABLE
SELECT table_name FROM `main`.information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(:p1 AS STRING)) AND LOWER(table_name) LIKE CAST(:p2 AS STRING) -- [staging, orders__etl_keep_%];
SELECT table_name FROM `main`.information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(:p1 AS STRING)) AND LOWER(table_name) LIKE CAST(:p2 AS STRING) -- [staging, etl_stage_101_%];
SELECT c.column_name, c.full_data_type FROM `main`.information_schema.columns c JOIN `main`.information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE LOWER(c.table_schema) = LOWER(CAST(:p1 AS STRING)) AND LOWER(c.table_name) = LOWER(CAST(:p2 AS STRING)) AND t.table_type IN ('MANAGED', 'EXTERNAL') ORDER BY c.ordinal_position -- [staging, orders];
SELECT * FROM (
SELECT id, name, amount FROM raw.orders
) AS etl_source LIMIT 0;
DELETE FROM `main`.`staging`.`orders` WHERE `task_run_id` = CAST(:p1 AS BIGINT) -- [101];
INSERT INTO `main`.`staging`.`orders` (`id`, `name`, `amount`, `pipeline_id`, `pipeline_run_id`, `task_run_id`, `create_date`)
SELECT s.`id`, s.`name`, s.`amount`, CAST(CAST(:p1 AS BIGINT) AS BIGINT), CAST(CAST(:p2 AS BIGINT) AS BIGINT), CAST(CAST(:p3 AS BIGINT) AS BIGINT), CURRENT_TIMESTAMP
FROM (
SELECT id, name, amount FROM raw.orders
) AS s -- [1, 1, 101];
SELECT COUNT(CASE WHEN `task_run_id` = CAST(:p1 AS BIGINT) THEN 1 END), COUNT(*) FROM `main`.`staging`.`orders` -- [101];

-- SCD1_MERGE, PRESERVE_TARGET
SELECT table_name FROM `main`.information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(:p1 AS STRING)) AND LOWER(table_name) LIKE CAST(:p2 AS STRING) -- [staging, orders__etl_keep_%];
SELECT table_name FROM `main`.information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(:p1 AS STRING)) AND LOWER(table_name) LIKE CAST(:p2 AS STRING) -- [staging, etl_stage_101_%];
SELECT c.column_name, c.full_data_type FROM `main`.information_schema.columns c JOIN `main`.information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE LOWER(c.table_schema) = LOWER(CAST(:p1 AS STRING)) AND LOWER(c.table_name) = LOWER(CAST(:p2 AS STRING)) AND t.table_type IN ('MANAGED', 'EXTERNAL') ORDER BY c.ordinal_position -- [staging, orders];
CREATE TABLE `main`.`staging`.`etl_stage_101_<token>` AS SELECT * FROM (
SELECT id, name, amount FROM raw.orders
) AS etl_source;
SELECT c.column_name, c.full_data_type FROM `main`.information_schema.columns c JOIN `main`.information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE LOWER(c.table_schema) = LOWER(CAST(:p1 AS STRING)) AND LOWER(c.table_name) = LOWER(CAST(:p2 AS STRING)) AND t.table_type IN ('MANAGED', 'EXTERNAL') ORDER BY c.ordinal_position -- [staging, etl_stage_101_<token>];
SELECT COUNT(*) FROM `main`.`staging`.`etl_stage_101_<token>`;
SELECT COUNT(*) FROM `main`.`staging`.`etl_stage_101_<token>` WHERE `id` IS NULL;
CREATE TABLE `main`.`staging`.`etl_stage_101_<token>_src` AS SELECT DISTINCT `id`, `name`, `amount` FROM `main`.`staging`.`etl_stage_101_<token>`;
SELECT COUNT(*) FROM (SELECT `id` FROM `main`.`staging`.`etl_stage_101_<token>_src` GROUP BY `id` HAVING COUNT(*) > 1) AS dup;
SELECT COUNT(*) FROM `main`.`staging`.`orders` AS t JOIN `main`.`staging`.`etl_stage_101_<token>_src` AS s ON t.`id` = s.`id` AND (t.`hash_key` IS DISTINCT FROM md5(CASE WHEN COALESCE(s.`name`, t.`name`) IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(COALESCE(s.`name`, t.`name`) AS STRING)) AS STRING) || ':' || CAST(COALESCE(s.`name`, t.`name`) AS STRING) END || CASE WHEN COALESCE(s.`amount`, t.`amount`) IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(replace(format_number(COALESCE(s.`amount`, t.`amount`), 2), ',', '')) AS STRING) || ':' || replace(format_number(COALESCE(s.`amount`, t.`amount`), 2), ',', '') END) OR COALESCE(t.`delete_flag`, 'N') = 'Y');
MERGE INTO `main`.`staging`.`orders` AS t
USING `main`.`staging`.`etl_stage_101_<token>_src` AS s
ON t.`id` = s.`id`
WHEN MATCHED AND (t.`hash_key` IS DISTINCT FROM md5(CASE WHEN COALESCE(s.`name`, t.`name`) IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(COALESCE(s.`name`, t.`name`) AS STRING)) AS STRING) || ':' || CAST(COALESCE(s.`name`, t.`name`) AS STRING) END || CASE WHEN COALESCE(s.`amount`, t.`amount`) IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(replace(format_number(COALESCE(s.`amount`, t.`amount`), 2), ',', '')) AS STRING) || ':' || replace(format_number(COALESCE(s.`amount`, t.`amount`), 2), ',', '') END) OR COALESCE(t.`delete_flag`, 'N') = 'Y') THEN UPDATE SET `name` = COALESCE(s.`name`, t.`name`), `amount` = COALESCE(s.`amount`, t.`amount`), `pipeline_id` = CAST(CAST(:p1 AS BIGINT) AS BIGINT), `pipeline_run_id` = CAST(CAST(:p2 AS BIGINT) AS BIGINT), `task_run_id` = CAST(CAST(:p3 AS BIGINT) AS BIGINT), `hash_key` = md5(CASE WHEN COALESCE(s.`name`, t.`name`) IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(COALESCE(s.`name`, t.`name`) AS STRING)) AS STRING) || ':' || CAST(COALESCE(s.`name`, t.`name`) AS STRING) END || CASE WHEN COALESCE(s.`amount`, t.`amount`) IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(replace(format_number(COALESCE(s.`amount`, t.`amount`), 2), ',', '')) AS STRING) || ':' || replace(format_number(COALESCE(s.`amount`, t.`amount`), 2), ',', '') END), `update_date` = CURRENT_TIMESTAMP, `updated_by` = current_user(), `delete_flag` = 'N' -- [1, 1, 101];
SELECT COUNT(*) FROM `main`.`staging`.`etl_stage_101_<token>_src` AS s WHERE NOT EXISTS (SELECT 1 FROM `main`.`staging`.`orders` AS t WHERE t.`id` = s.`id`);
INSERT INTO `main`.`staging`.`orders` (`id`, `name`, `amount`, `pipeline_id`, `pipeline_run_id`, `task_run_id`, `hash_key`, `create_date`, `created_by`, `update_date`, `updated_by`, `delete_flag`)
SELECT s.`id`, s.`name`, s.`amount`, CAST(CAST(:p1 AS BIGINT) AS BIGINT), CAST(CAST(:p2 AS BIGINT) AS BIGINT), CAST(CAST(:p3 AS BIGINT) AS BIGINT), md5(CASE WHEN s.`name` IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(s.`name` AS STRING)) AS STRING) || ':' || CAST(s.`name` AS STRING) END || CASE WHEN s.`amount` IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(replace(format_number(s.`amount`, 2), ',', '')) AS STRING) || ':' || replace(format_number(s.`amount`, 2), ',', '') END), CURRENT_TIMESTAMP, current_user(), CURRENT_TIMESTAMP, current_user(), 'N'
FROM `main`.`staging`.`etl_stage_101_<token>_src` AS s
WHERE NOT EXISTS (SELECT 1 FROM `main`.`staging`.`orders` AS t WHERE t.`id` = s.`id`) -- [1, 1, 101];
SELECT COUNT(*) FROM `main`.`staging`.`orders`;
DROP TABLE IF EXISTS `main`.`staging`.`etl_stage_101_<token>`;
DROP TABLE IF EXISTS `main`.`staging`.`etl_stage_101_<token>_src`;

-- SCD2_MERGE, evolved, MERGE_DEDUPE_ORDER
SELECT table_name FROM `main`.information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(:p1 AS STRING)) AND LOWER(table_name) LIKE CAST(:p2 AS STRING) -- [staging, orders__etl_keep_%];
SELECT table_name FROM `main`.information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(:p1 AS STRING)) AND LOWER(table_name) LIKE CAST(:p2 AS STRING) -- [staging, etl_stage_101_%];
SELECT c.column_name, c.full_data_type FROM `main`.information_schema.columns c JOIN `main`.information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE LOWER(c.table_schema) = LOWER(CAST(:p1 AS STRING)) AND LOWER(c.table_name) = LOWER(CAST(:p2 AS STRING)) AND t.table_type IN ('MANAGED', 'EXTERNAL') ORDER BY c.ordinal_position -- [staging, orders];
CREATE TABLE `main`.`staging`.`etl_stage_101_<token>` AS SELECT * FROM (
SELECT id, name, amount FROM raw.orders
) AS etl_source;
SELECT c.column_name, c.full_data_type FROM `main`.information_schema.columns c JOIN `main`.information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE LOWER(c.table_schema) = LOWER(CAST(:p1 AS STRING)) AND LOWER(c.table_name) = LOWER(CAST(:p2 AS STRING)) AND t.table_type IN ('MANAGED', 'EXTERNAL') ORDER BY c.ordinal_position -- [staging, etl_stage_101_<token>];
SELECT COUNT(*) FROM `main`.`staging`.`etl_stage_101_<token>`;
SELECT COUNT(*) FROM `main`.`staging`.`etl_stage_101_<token>` WHERE `id` IS NULL;
CREATE TABLE `main`.`staging`.`etl_stage_101_<token>_src` AS SELECT `id`, `name`, `amount`, `note` FROM (
  SELECT `id`, `name`, `amount`, `note`, RANK() OVER (PARTITION BY `id` ORDER BY amount DESC) AS etl_dedupe_rank
  FROM (SELECT DISTINCT `id`, `name`, `amount`, `note` FROM `main`.`staging`.`etl_stage_101_<token>`) AS d
) AS ranked WHERE etl_dedupe_rank = 1;
SELECT COUNT(*) FROM (SELECT `id` FROM `main`.`staging`.`etl_stage_101_<token>_src` GROUP BY `id` HAVING COUNT(*) > 1) AS dup;
ALTER TABLE `main`.`staging`.`orders` ADD COLUMN `note` string;
SELECT COUNT(*) FROM `main`.`staging`.`orders` AS t JOIN `main`.`staging`.`etl_stage_101_<token>_src` AS s ON t.`id` = s.`id` AND t.`active_flag` = 'Y' AND (t.`hash_key` IS DISTINCT FROM md5(CASE WHEN s.`name` IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(s.`name` AS STRING)) AS STRING) || ':' || CAST(s.`name` AS STRING) END || CASE WHEN s.`amount` IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(replace(format_number(s.`amount`, 2), ',', '')) AS STRING) || ':' || replace(format_number(s.`amount`, 2), ',', '') END || CASE WHEN s.`note` IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(s.`note` AS STRING)) AS STRING) || ':' || CAST(s.`note` AS STRING) END) OR COALESCE(t.`delete_flag`, 'N') = 'Y');
MERGE INTO `main`.`staging`.`orders` AS t
USING `main`.`staging`.`etl_stage_101_<token>_src` AS s
ON t.`id` = s.`id` AND t.`active_flag` = 'Y'
WHEN MATCHED AND (t.`hash_key` IS DISTINCT FROM md5(CASE WHEN s.`name` IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(s.`name` AS STRING)) AS STRING) || ':' || CAST(s.`name` AS STRING) END || CASE WHEN s.`amount` IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(replace(format_number(s.`amount`, 2), ',', '')) AS STRING) || ':' || replace(format_number(s.`amount`, 2), ',', '') END || CASE WHEN s.`note` IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(s.`note` AS STRING)) AS STRING) || ':' || CAST(s.`note` AS STRING) END) OR COALESCE(t.`delete_flag`, 'N') = 'Y') THEN UPDATE SET `active_flag` = 'N', `pipeline_id` = CAST(CAST(:p1 AS BIGINT) AS BIGINT), `pipeline_run_id` = CAST(CAST(:p2 AS BIGINT) AS BIGINT), `task_run_id` = CAST(CAST(:p3 AS BIGINT) AS BIGINT), `update_date` = CURRENT_TIMESTAMP, `updated_by` = current_user() -- [1, 1, 101];
SELECT COUNT(*) FROM `main`.`staging`.`etl_stage_101_<token>_src` AS s WHERE NOT EXISTS (SELECT 1 FROM `main`.`staging`.`orders` AS t WHERE t.`id` = s.`id` AND t.`active_flag` = 'Y');
INSERT INTO `main`.`staging`.`orders` (`id`, `name`, `amount`, `note`, `pipeline_id`, `pipeline_run_id`, `task_run_id`, `hash_key`, `create_date`, `created_by`, `update_date`, `updated_by`, `delete_flag`, `active_flag`)
SELECT s.`id`, s.`name`, s.`amount`, s.`note`, CAST(CAST(:p1 AS BIGINT) AS BIGINT), CAST(CAST(:p2 AS BIGINT) AS BIGINT), CAST(CAST(:p3 AS BIGINT) AS BIGINT), md5(CASE WHEN s.`name` IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(s.`name` AS STRING)) AS STRING) || ':' || CAST(s.`name` AS STRING) END || CASE WHEN s.`amount` IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(replace(format_number(s.`amount`, 2), ',', '')) AS STRING) || ':' || replace(format_number(s.`amount`, 2), ',', '') END || CASE WHEN s.`note` IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(s.`note` AS STRING)) AS STRING) || ':' || CAST(s.`note` AS STRING) END), CURRENT_TIMESTAMP, current_user(), CURRENT_TIMESTAMP, current_user(), 'N', 'Y'
FROM `main`.`staging`.`etl_stage_101_<token>_src` AS s
WHERE NOT EXISTS (SELECT 1 FROM `main`.`staging`.`orders` AS t WHERE t.`id` = s.`id` AND t.`active_flag` = 'Y') -- [1, 1, 101];
SELECT COUNT(*) FROM `main`.`staging`.`orders`;
DROP TABLE IF EXISTS `main`.`staging`.`etl_stage_101_<token>`;
DROP TABLE IF EXISTS `main`.`staging`.`etl_stage_101_<token>_src`;

-- DELETE_ROWS, soft
SELECT table_name FROM `main`.information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(:p1 AS STRING)) AND LOWER(table_name) LIKE CAST(:p2 AS STRING) -- [staging, orders__etl_keep_%];
SELECT table_name FROM `main`.information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(:p1 AS STRING)) AND LOWER(table_name) LIKE CAST(:p2 AS STRING) -- [staging, etl_stage_101_%];
SELECT c.column_name, c.full_data_type FROM `main`.information_schema.columns c JOIN `main`.information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE LOWER(c.table_schema) = LOWER(CAST(:p1 AS STRING)) AND LOWER(c.table_name) = LOWER(CAST(:p2 AS STRING)) AND t.table_type IN ('MANAGED', 'EXTERNAL') ORDER BY c.ordinal_position -- [staging, orders];
CREATE TABLE `main`.`staging`.`etl_stage_101_<token>` AS SELECT * FROM (
SELECT id, name, amount FROM raw.orders
) AS etl_source;
SELECT c.column_name, c.full_data_type FROM `main`.information_schema.columns c JOIN `main`.information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE LOWER(c.table_schema) = LOWER(CAST(:p1 AS STRING)) AND LOWER(c.table_name) = LOWER(CAST(:p2 AS STRING)) AND t.table_type IN ('MANAGED', 'EXTERNAL') ORDER BY c.ordinal_position -- [staging, etl_stage_101_<token>];
SELECT COUNT(*) FROM `main`.`staging`.`etl_stage_101_<token>`;
SELECT COUNT(*) FROM `main`.`staging`.`etl_stage_101_<token>` WHERE `id` IS NULL;
SELECT COUNT(*) FROM `main`.`staging`.`orders` AS t WHERE EXISTS (SELECT 1 FROM `main`.`staging`.`etl_stage_101_<token>` AS s WHERE t.`id` = s.`id`) AND NOT COALESCE(t.`delete_flag`, 'N') = 'Y';
MERGE INTO `main`.`staging`.`orders` AS t
USING (SELECT DISTINCT `id` FROM `main`.`staging`.`etl_stage_101_<token>`) AS s
ON t.`id` = s.`id`
WHEN MATCHED AND NOT COALESCE(t.`delete_flag`, 'N') = 'Y' THEN UPDATE SET `delete_flag` = 'Y', `pipeline_id` = CAST(CAST(:p1 AS BIGINT) AS BIGINT), `pipeline_run_id` = CAST(CAST(:p2 AS BIGINT) AS BIGINT), `task_run_id` = CAST(CAST(:p3 AS BIGINT) AS BIGINT), `update_date` = CURRENT_TIMESTAMP, `updated_by` = current_user() -- [1, 1, 101];
SELECT COUNT(*) FROM `main`.`staging`.`orders`;
DROP TABLE IF EXISTS `main`.`staging`.`etl_stage_101_<token>`;

-- DELETE_ROWS, HARD_DELETE
SELECT table_name FROM `main`.information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(:p1 AS STRING)) AND LOWER(table_name) LIKE CAST(:p2 AS STRING) -- [staging, orders__etl_keep_%];
SELECT table_name FROM `main`.information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(:p1 AS STRING)) AND LOWER(table_name) LIKE CAST(:p2 AS STRING) -- [staging, etl_stage_101_%];
SELECT c.column_name, c.full_data_type FROM `main`.information_schema.columns c JOIN `main`.information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE LOWER(c.table_schema) = LOWER(CAST(:p1 AS STRING)) AND LOWER(c.table_name) = LOWER(CAST(:p2 AS STRING)) AND t.table_type IN ('MANAGED', 'EXTERNAL') ORDER BY c.ordinal_position -- [staging, orders];
CREATE TABLE `main`.`staging`.`etl_stage_101_<token>` AS SELECT * FROM (
SELECT id, name, amount FROM raw.orders
) AS etl_source;
SELECT c.column_name, c.full_data_type FROM `main`.information_schema.columns c JOIN `main`.information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE LOWER(c.table_schema) = LOWER(CAST(:p1 AS STRING)) AND LOWER(c.table_name) = LOWER(CAST(:p2 AS STRING)) AND t.table_type IN ('MANAGED', 'EXTERNAL') ORDER BY c.ordinal_position -- [staging, etl_stage_101_<token>];
SELECT COUNT(*) FROM `main`.`staging`.`etl_stage_101_<token>`;
SELECT COUNT(*) FROM `main`.`staging`.`etl_stage_101_<token>` WHERE `id` IS NULL;
SELECT COUNT(*) FROM `main`.`staging`.`orders` AS t WHERE EXISTS (SELECT 1 FROM `main`.`staging`.`etl_stage_101_<token>` AS s WHERE t.`id` = s.`id`);
MERGE INTO `main`.`staging`.`orders` AS t
USING (SELECT DISTINCT `id` FROM `main`.`staging`.`etl_stage_101_<token>`) AS s
ON t.`id` = s.`id`
WHEN MATCHED THEN DELETE;
SELECT COUNT(*) FROM `main`.`staging`.`orders`;
DROP TABLE IF EXISTS `main`.`staging`.`etl_stage_101_<token>`;

-- DROP_TABLE
SELECT table_name FROM `main`.information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(:p1 AS STRING)) AND LOWER(table_name) LIKE CAST(:p2 AS STRING) -- [staging, orders__etl_keep_%];
SELECT table_name FROM `main`.information_schema.tables WHERE LOWER(table_schema) = LOWER(CAST(:p1 AS STRING)) AND LOWER(table_name) LIKE CAST(:p2 AS STRING) -- [staging, etl_stage_101_%];
DROP TABLE IF EXISTS `main`.`staging`.`orders`;

-- etl-craft rehash --target staging.orders
SELECT c.column_name, c.full_data_type FROM `main`.information_schema.columns c JOIN `main`.information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE LOWER(c.table_schema) = LOWER(CAST(:p1 AS STRING)) AND LOWER(c.table_name) = LOWER(CAST(:p2 AS STRING)) AND t.table_type IN ('MANAGED', 'EXTERNAL') ORDER BY c.ordinal_position -- [staging, orders];
SELECT COUNT(*) FROM `main`.`staging`.`orders`;
UPDATE `main`.`staging`.`orders` SET `hash_key` = md5(CASE WHEN `name` IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(CAST(`name` AS STRING)) AS STRING) || ':' || CAST(`name` AS STRING) END || CASE WHEN `amount` IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(replace(format_number(`amount`, 2), ',', '')) AS STRING) || ':' || replace(format_number(`amount`, 2), ',', '') END);

-- etl-craft upgrade-targets
SELECT c.column_name, c.full_data_type FROM `main`.information_schema.columns c JOIN `main`.information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name WHERE LOWER(c.table_schema) = LOWER(CAST(:p1 AS STRING)) AND LOWER(c.table_name) = LOWER(CAST(:p2 AS STRING)) AND t.table_type IN ('MANAGED', 'EXTERNAL') ORDER BY c.ordinal_position -- [staging, orders];
ALTER TABLE `main`.`staging`.`orders` ADD COLUMN `pipeline_id` BIGINT;
ALTER TABLE `main`.`staging`.`orders` ADD COLUMN `task_run_id` BIGINT;

