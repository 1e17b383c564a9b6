-- An ingestion script, a task using what it loads, and a daily schedule.
--
-- load_exchange_rates runs ingestion_scripts/load_exchange_rates.py (a PYTHON
-- task, docs/scripts.md): it appends the rates of data/exchange_rates.csv
-- newer than its offset to main.exchange_rates. daily_revenue_eur converts
-- each day's revenue with that day's EUR rate.

WITH t (code, task_type, handler) AS (VALUES
  ('load_exchange_rates', 'INGESTION', 'PYTHON'),
  ('daily_revenue_eur', 'ETL', 'SQL')
)
INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER)
SELECT t.code, t.task_type, p.PIPELINE_ID, t.handler
FROM t
LEFT JOIN CFG_PIPELINES p ON p.PIPELINE_CODE = 'QUICKSTART_SALES' AND p.ACTIVE_FLAG = 'Y';

WITH params (task_code, name, value) AS (VALUES
  ('load_exchange_rates', 'SCRIPT_NAME', 'load_exchange_rates.py'),
  ('load_exchange_rates', 'INPUT_PARAMS', '{"source": "data/exchange_rates.csv"}'),
  ('load_exchange_rates', 'SOURCE_OBJECT', 'data/exchange_rates.csv'),
  ('load_exchange_rates', 'TARGET_OBJECT', 'main.exchange_rates'),
  ('daily_revenue_eur', 'SQL_ACTION', 'CREATE_TABLE'),
  ('daily_revenue_eur', 'TARGET_OBJECT', 'main.daily_revenue_eur'),
  ('daily_revenue_eur', 'SOURCE_SQL',
   'SELECT d.order_date, d.revenue, r.per_usd AS eur_per_usd, round(d.revenue * r.per_usd, 2) AS revenue_eur FROM main.daily_revenue d JOIN main.exchange_rates r ON r.rate_date = d.order_date AND r.currency = ''EUR''')
)
INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE)
SELECT t.TASK_ID, params.name, params.value
FROM params
LEFT JOIN CFG_PIPELINES p ON p.PIPELINE_CODE = 'QUICKSTART_SALES' AND p.ACTIVE_FLAG = 'Y'
LEFT JOIN CFG_TASKS t ON t.PIPELINE_ID = p.PIPELINE_ID AND t.TASK_CODE = params.task_code AND t.ACTIVE_FLAG = 'Y';

-- daily_revenue_eur waits for daily_revenue and the rates.
WITH deps (upstream_code) AS (VALUES ('daily_revenue'), ('load_exchange_rates'))
INSERT INTO CFG_TASK_DEPENDENCY (PIPELINE_ID, TASK_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE)
SELECT p.PIPELINE_ID, t.TASK_ID, u.TASK_ID, 'SUCCESS'
FROM deps
LEFT JOIN CFG_PIPELINES p ON p.PIPELINE_CODE = 'QUICKSTART_SALES' AND p.ACTIVE_FLAG = 'Y'
LEFT JOIN CFG_TASKS t ON t.PIPELINE_ID = p.PIPELINE_ID AND t.TASK_CODE = 'daily_revenue_eur' AND t.ACTIVE_FLAG = 'Y'
LEFT JOIN CFG_TASKS u ON u.PIPELINE_ID = p.PIPELINE_ID AND u.TASK_CODE = deps.upstream_code AND u.ACTIVE_FLAG = 'Y';

-- etl-craft server runs the pipeline every day at 06:00 UTC (docs/server.md).
UPDATE CFG_PIPELINES SET RUN_SCHEDULE = '0 6 * * *', SCHEDULE_TIMEZONE = 'UTC'
WHERE PIPELINE_CODE = 'QUICKSTART_SALES' AND ACTIVE_FLAG = 'Y';
