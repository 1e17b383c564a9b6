-- Client Beta's landed events under the shared names, past the last one parsed.
SELECT ev.support_identifier AS interaction_id,
       ev.agent AS agent_code,
       ev.regarding AS support_area,
       CAST(ev.event_time AS DATE) AS contact_date,
       ev.status,
       CAST(ev.handle_time AS INTEGER) AS handle_seconds,
       CAST(ev.score AS INTEGER) AS rating,
       CAST($$pipeline_run_id AS BIGINT) AS parsed_by
FROM lnd.client_beta ev
WHERE ev.support_identifier >
      (SELECT COALESCE(MAX(done.interaction_id), 0) FROM prs.beta_interactions done)
