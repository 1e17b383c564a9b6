"""Lands the agent directory, whole, in its next version (the offset is the version landed).

From version 2 on, Bo has moved from the east team to the west, the directory has lost Bo's
email (the SCD1 merge keeps the one on file) and Di has left the company.
"""
from etl_craft.scripting import Offset, ScriptResult, ScriptTask


def directory(version: int) -> list:
    agents = [
        {"agent_code": "A01", "agent_name": "Ann", "team": "east", "email": "ann@example.com", "left_company": "N"},
        {"agent_code": "A02", "agent_name": "Bo", "team": "east", "email": "bo@example.com", "left_company": "N"},
        {"agent_code": "A03", "agent_name": "Cy", "team": "west", "email": "cy@example.com", "left_company": "N"},
        {"agent_code": "A04", "agent_name": "Di", "team": "west", "email": "di@example.com", "left_company": "N"},
    ]
    if version >= 2:
        agents[1].update(team="west", email=None)
        agents[3].update(left_company="Y")
    return agents


def run(task: ScriptTask) -> ScriptResult:
    version = (int(task.offset.value) if task.offset is not None else 0) + 1
    agents = directory(version)
    task.load("lnd.agents", agents, mode="replace")
    return ScriptResult(len(agents), offset=Offset.number(version))
