-- PostgreSQL fixes when its attribution trigger fills request, ending and
-- resuming actors. SQLite attributes runs on insert only and needs no change.

SELECT 1;
