-- One row per interaction, with its agent's team and its area's name.
SELECT i.fact_key,
       i.source_system,
       i.record_id,
       i.agent_code,
       agent.team,
       area.area_name,
       i.interaction_date,
       i.handle_seconds,
       i.rating
FROM pre_dm.interactions i
LEFT JOIN ds.agents agent ON agent.agent_code = i.agent_code
LEFT JOIN ds.support_areas area ON area.area_code = i.support_area
