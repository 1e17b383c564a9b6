-- Repairs of published runs. REPAIR_PENDING is set when a run is reopened
-- and cleared when its repair publishes, which increments OUTPUT_REVISION
-- once. Existing revisions are kept; a run still in progress that has a
-- recorded REOPEN stays pending after the upgrade.

ALTER TABLE AUD_PIPELINES_RUN_LOG ADD COLUMN REPAIR_PENDING VARCHAR NOT NULL DEFAULT 'N'
    CONSTRAINT ck_run_repair_pending CHECK (REPAIR_PENDING IN ('Y', 'N'));

UPDATE AUD_PIPELINES_RUN_LOG r
   SET REPAIR_PENDING = 'Y'
 WHERE r.STATUS = 'IN-PROGRESS'
   AND EXISTS (SELECT 1 FROM AUD_RUN_INTERVENTIONS i
                WHERE i.PIPELINE_RUN_ID = r.PIPELINE_RUN_ID AND i.ACTION = 'REOPEN');
