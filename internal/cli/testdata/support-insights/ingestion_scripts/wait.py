"""Waits INPUT_PARAMS["seconds"]: a slow export, a long backfill."""
import time

from etl_craft.scripting import ScriptResult, ScriptTask


def run(task: ScriptTask) -> ScriptResult:
    time.sleep(float(task.input_params.get("seconds", 0)))
    return ScriptResult(0)
