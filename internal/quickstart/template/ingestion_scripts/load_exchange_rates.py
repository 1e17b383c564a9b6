"""The quickstart's ingestion script: loads the exchange rates of
data/exchange_rates.csv that are newer than the task's offset.

The file stands for a source that grows every day. The offset is the last
rate date loaded, so each run loads only the days added since; a run that
finds none loads nothing and keeps the offset.
"""
import csv
import datetime
import decimal
import os

from etl_craft.scripting import Offset, ScriptResult, ScriptTask


def run(task: ScriptTask) -> ScriptResult:
    source = os.path.join(task.config["project_dir"], task.input_params["source"])
    after = task.offset.value if task.offset is not None else None
    rows = []
    with open(source, newline="") as f:
        for r in csv.DictReader(f):
            # ISO dates (YYYY-MM-DD) sort as text.
            if after is None or r["rate_date"] > after:
                rows.append({"rate_date": datetime.date.fromisoformat(r["rate_date"]),
                             "currency": r["currency"],
                             "per_usd": decimal.Decimal(r["per_usd"])})
    task.logger.info("%d new rate(s) after %s", len(rows), after or "the start")
    if not rows:
        return ScriptResult(0)
    task.load("main.exchange_rates", rows, mode="append")
    last = max(r["rate_date"] for r in rows).isoformat()
    return ScriptResult(len(rows), offset=Offset.text(last))
