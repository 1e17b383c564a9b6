"""Lands Client Alpha's interactions: the next INPUT_PARAMS["rows"] after the offset.

The desk exports every field but the id as text; parsing types them. Interaction n is synthetic
and always the same: every ninth is a test call (agent TEST), every eleventh an agent nobody
knows (A99); ratings run from 0 to 6 and some calls run long, for the business rules to find.
The offset is the last interaction id landed.
"""
import datetime

from etl_craft.scripting import Offset, ScriptResult, ScriptTask

AREAS = ("billing", "technical", "account")


def agent_of(n: int) -> str:
    if n % 9 == 0:
        return "TEST"
    if n % 11 == 0:
        return "A99"
    return "A0%d" % (n % 4 + 1)


def interaction(n: int) -> dict:
    day = datetime.date(2026, 9, 1) + datetime.timedelta(days=n % 28)
    return {
        "interaction_id": n,
        "agent_code": agent_of(n),
        "support_area": AREAS[n % 3],
        "contact_date": day.isoformat(),
        "status": "pending" if n % 4 == 0 else "resolved",
        "duration_seconds": str((60 * n) % 900 + 30),
        "rating": str(n % 7),
    }


def run(task: ScriptTask) -> ScriptResult:
    first = (int(task.offset.value) if task.offset is not None else 0) + 1
    count = int(task.input_params.get("rows", 12))
    rows = [interaction(n) for n in range(first, first + count)]
    task.load("lnd.client_alpha", rows)
    task.logger.info("landed interactions %d to %d", first, first + count - 1)
    return ScriptResult(len(rows), offset=Offset.number(first + count - 1))
