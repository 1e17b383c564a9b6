-- PostgreSQL rewrites a table comment. SQLite keeps no comments.

SELECT 1;
