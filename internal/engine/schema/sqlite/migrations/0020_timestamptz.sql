-- PostgreSQL gives the retry due time and the API tokens' times a time zone.
-- SQLite keeps every timestamp as UTC text already.

SELECT 1;
