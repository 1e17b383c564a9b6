"""Runs one ingestion script for the etl-craft engine: python3 -u -m etl_craft._main.

The engine passes the two pipe descriptors in ETL_CRAFT_PIPE_OUT (requests)
and ETL_CRAFT_PIPE_IN (answers), and sends the task's context first. The
script's run(task) or run() is called; its ScriptResult, or the failure, is
the last request. stdout and stderr (where logging writes) go to the
attempt's log.
"""

import importlib.util
import inspect
import logging
import os
import sys
import threading
import traceback

from etl_craft import scripting


def _finish(ch, msg, status):
    sys.stdout.flush()
    sys.stderr.flush()
    lingering = [t.name for t in threading.enumerate() if t is not threading.main_thread() and t.is_alive()]
    if lingering:
        print("the script left threads running, which end with it: " + ", ".join(lingering), file=sys.stderr, flush=True)
    ch.call(msg)
    os._exit(status)


def main():
    ch = scripting._Channel(int(os.environ["ETL_CRAFT_PIPE_OUT"]), int(os.environ["ETL_CRAFT_PIPE_IN"]))
    ctx = ch.answer()["task"]
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    path = ctx["script"]
    sys.path.insert(0, os.path.dirname(path))
    try:
        spec = importlib.util.spec_from_file_location("__etl_craft_script__", path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
        run = getattr(mod, "run", None)
        if not callable(run):
            raise TypeError("%s defines no run(task) function" % ctx["script_name"])
        required = [p for p in inspect.signature(run).parameters.values()
                    if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        result = run(scripting.ScriptTask(ch, ctx)) if required else run()
        if not isinstance(result, scripting.ScriptResult):
            raise TypeError("run() returned %s: return a ScriptResult(row_count, offset=None, variables={})"
                            % type(result).__name__)
    except SystemExit as e:
        _finish(ch, {"op": "failure", "message": "the script called sys.exit(%r): return a ScriptResult, or raise an exception to fail" % (e.code,)}, 1)
    except BaseException as e:
        # The traceback starts at the script: this runner's frame is left out.
        tb = e.__traceback__.tb_next if e.__traceback__ is not None and e.__traceback__.tb_next is not None else e.__traceback__
        traceback.print_exception(type(e), e, tb)
        last = traceback.format_exception_only(type(e), e)[-1].strip()
        _finish(ch, {"op": "failure", "message": last}, 1)
    _finish(ch, {"op": "result", "row_count": result.row_count,
                 "offset": result.offset._stored() if result.offset is not None else None,
                 "variables": {str(k): str(v) for k, v in result.variables.items()}}, 0)


main()
