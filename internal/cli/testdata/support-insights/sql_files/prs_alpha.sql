-- Client Alpha's landed interactions, typed, past the last one parsed; parsed_by is the run.
SELECT CAST(src.interaction_id AS BIGINT) AS interaction_id,
       src.agent_code,
       src.support_area,
       CAST(src.contact_date AS DATE) AS contact_date,
       src.status,
       CAST(src.duration_seconds AS INTEGER) AS handle_seconds,
       CAST(src.rating AS INTEGER) AS rating,
       CAST($$pipeline_run_id AS BIGINT) AS parsed_by
FROM lnd.client_alpha src
WHERE CAST(src.interaction_id AS BIGINT) >
      (SELECT COALESCE(MAX(done.interaction_id), 0) FROM prs.alpha_interactions done)
