-- The areas interactions are filed under, with the names reports show.
SELECT area_code, area_name
FROM (VALUES ('billing', 'Billing'),
             ('technical', 'Technical support'),
             ('account', 'Account management')) AS areas (area_code, area_name)
