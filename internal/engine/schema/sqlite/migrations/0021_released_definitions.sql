-- PostgreSQL brings the definitions an Engine DB of the reference
-- implementation's 0.2.0 release words its own way to today's. SQLite keeps
-- no comments and has no functions. Its run-condition check of CFG_TASKS,
-- worded that release's way, means the same as today's; changing its text
-- would take a rebuild of CFG_TASKS, which refuses a table with columns of
-- the project's own, so it is left as it is.

SELECT 1;
