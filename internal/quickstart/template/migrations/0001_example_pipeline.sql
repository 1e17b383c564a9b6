-- The quickstart's example pipeline, registered as metadata.
--
-- Rows refer to each other by code, never by id: a misspelt code gives a NULL
-- id, the NOT NULL constraint fails, and the whole file (one transaction)
-- changes nothing.

INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, DESCRIPTION, REFRESH_TYPE)
VALUES ('QUICKSTART_SALES', 'Quickstart sales', 'Builds a small sales mart from inline data', 'FULL');

-- Four SQL tasks: two loads, then two tables built from them.
WITH t (code) AS (VALUES ('load_customers'), ('load_orders'), ('daily_revenue'), ('customer_revenue'))
INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER)
SELECT t.code, 'ETL', p.PIPELINE_ID, 'SQL'
FROM t
LEFT JOIN CFG_PIPELINES p ON p.PIPELINE_CODE = 'QUICKSTART_SALES' AND p.ACTIVE_FLAG = 'Y';

WITH params (task_code, name, value) AS (VALUES
  ('load_customers', 'SQL_ACTION', 'CREATE_TABLE'),
  ('load_customers', 'TARGET_OBJECT', 'main.customers'),
  ('load_customers', 'SOURCE_SQL',
   'SELECT * FROM (VALUES (1, ''Ada''), (2, ''Grace''), (3, ''Edsger'')) AS c (customer_id, customer_name)'),
  ('load_orders', 'SQL_ACTION', 'CREATE_TABLE'),
  ('load_orders', 'TARGET_OBJECT', 'main.orders'),
  ('load_orders', 'SOURCE_SQL',
   'SELECT * FROM (VALUES (100, 1, DATE ''2026-01-05'', 120.50), (101, 2, DATE ''2026-01-05'', 80.00), (102, 1, DATE ''2026-01-06'', 42.25), (103, 3, DATE ''2026-01-06'', 310.00)) AS o (order_id, customer_id, order_date, amount)'),
  ('daily_revenue', 'SQL_ACTION', 'CREATE_TABLE'),
  ('daily_revenue', 'TARGET_OBJECT', 'main.daily_revenue'),
  ('daily_revenue', 'SOURCE_SQL',
   'SELECT order_date, count(*) AS orders, sum(amount) AS revenue FROM main.orders GROUP BY order_date'),
  ('customer_revenue', 'SQL_ACTION', 'CREATE_TABLE'),
  ('customer_revenue', 'TARGET_OBJECT', 'main.customer_revenue'),
  ('customer_revenue', 'SOURCE_SQL',
   'SELECT c.customer_id, c.customer_name, coalesce(sum(o.amount), 0) AS revenue FROM main.customers c LEFT JOIN main.orders o ON o.customer_id = c.customer_id GROUP BY c.customer_id, c.customer_name')
)
INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE)
SELECT t.TASK_ID, params.name, params.value
FROM params
LEFT JOIN CFG_PIPELINES p ON p.PIPELINE_CODE = 'QUICKSTART_SALES' AND p.ACTIVE_FLAG = 'Y'
LEFT JOIN CFG_TASKS t ON t.PIPELINE_ID = p.PIPELINE_ID AND t.TASK_CODE = params.task_code AND t.ACTIVE_FLAG = 'Y';

-- daily_revenue waits for load_orders; customer_revenue for both loads.
WITH deps (task_code, upstream_code) AS (VALUES
  ('daily_revenue', 'load_orders'),
  ('customer_revenue', 'load_orders'),
  ('customer_revenue', 'load_customers')
)
INSERT INTO CFG_TASK_DEPENDENCY (PIPELINE_ID, TASK_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE)
SELECT p.PIPELINE_ID, t.TASK_ID, u.TASK_ID, 'SUCCESS'
FROM deps
LEFT JOIN CFG_PIPELINES p ON p.PIPELINE_CODE = 'QUICKSTART_SALES' AND p.ACTIVE_FLAG = 'Y'
LEFT JOIN CFG_TASKS t ON t.PIPELINE_ID = p.PIPELINE_ID AND t.TASK_CODE = deps.task_code AND t.ACTIVE_FLAG = 'Y'
LEFT JOIN CFG_TASKS u ON u.PIPELINE_ID = p.PIPELINE_ID AND u.TASK_CODE = deps.upstream_code AND u.ACTIVE_FLAG = 'Y';
