"""Lands Client Beta's events, an hour apart: those after the offset's event time.

Client Beta names things its own way (regarding, handle_time, score). The offset is the time of
the last event landed.
"""
import datetime

from etl_craft.scripting import Offset, ScriptResult, ScriptTask

FIRST = datetime.datetime(2026, 9, 1, 8, 0)
AREAS = ("billing", "technical", "account")


def run(task: ScriptTask) -> ScriptResult:
    if task.offset is not None:
        last = task.offset.value
        if isinstance(last, str):
            last = datetime.datetime.fromisoformat(last)
        last = last.replace(tzinfo=None)
        first = int((last - FIRST) / datetime.timedelta(hours=1)) + 1
    else:
        first = 0
    count = int(task.input_params.get("rows", 8))
    events = []
    for n in range(first, first + count):
        events.append({
            "support_identifier": 5000 + n,
            "agent": "A0%d" % (n % 4 + 1),
            "regarding": AREAS[n % 3],
            "event_time": FIRST + datetime.timedelta(hours=n),
            "status": "open" if n % 5 == 0 else "closed",
            "handle_time": (45 * n) % 700 + 60,
            "score": n % 5 + 1,
        })
    task.load("lnd.client_beta", events)
    return ScriptResult(len(events), offset=Offset.timestamp(events[-1]["event_time"]))
