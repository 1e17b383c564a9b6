"""A feed that is not ready the first time it is read in this project, and is every time after.

Its first attempt leaves a marker beside the script and fails.
"""
import pathlib

from etl_craft.scripting import ScriptResult

MARKER = pathlib.Path(__file__).with_name(".flaky-failed-once")


def run() -> ScriptResult:
    if not MARKER.exists():
        MARKER.write_text("failed once\n")
        raise RuntimeError("the feed is not ready yet; the next attempt finds it")
    return ScriptResult(0)
