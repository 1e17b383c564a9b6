-- Interactions, handle time and average rating per area and team.
SELECT fact.area_name,
       fact.team,
       COUNT(*) AS interactions,
       SUM(fact.handle_seconds) AS handle_seconds,
       AVG(CAST(fact.rating AS DECIMAL(10, 2))) AS average_rating
FROM dm.support_fact fact
GROUP BY fact.area_name, fact.team
