"""Airflow DAGs from etl-craft's DAG descriptors.

Written by `etl-craft generate-yml --print-loader`. Put this file in Airflow's
dags folder; it reads every *.yml and *.yaml file of ETL_CRAFT_DAGS_DIR (by
default the folder this file is in), each written by `etl-craft generate-yml`,
and builds one DAG per file with Airflow's standard operators:

* a step with `bash_command` becomes a BashOperator running that command,
  with ETL_CRAFT_ACTOR_KIND=ORCHESTRATOR, ETL_CRAFT_ACTOR (ETL_CRAFT_AIRFLOW_ACTOR,
  default "airflow") and ETL_CRAFT_DAG_RUN_ID (the DAG run's id) in its
  environment; __finalize__ is never retried;
* a step with `sensor` becomes an ExternalTaskSensor in reschedule mode;
* each pipeline of the global DAG becomes a TriggerDagRunOperator that waits
  for the pipeline's DAG run to finish; the run it triggers has the global DAG
  run's logical date, so that the sensors of the pipelines it triggers find
  the upstream DAG runs of the same date.

Sensors and the global DAG look every ETL_CRAFT_POKE_SECONDS seconds
(default 60).

`depends_on` becomes the upstream tasks of each step. A file this loader
cannot read stops the whole file from loading, with an error naming the
descriptor, so that a broken descriptor is seen in Airflow's import errors
rather than silently skipped. See docs/orchestrators.md.
"""

import datetime
import glob
import inspect
import os

import yaml
from airflow import DAG

try:  # Airflow 3 moved the standard operators into a provider.
    from airflow.providers.standard.operators.bash import BashOperator
    from airflow.providers.standard.operators.trigger_dagrun import TriggerDagRunOperator
    from airflow.providers.standard.sensors.external_task import ExternalTaskSensor
except ImportError:
    from airflow.operators.bash import BashOperator
    from airflow.operators.trigger_dagrun import TriggerDagRunOperator
    from airflow.sensors.external_task import ExternalTaskSensor

YAML_VERSION = 1
DAGS_DIR = os.environ.get("ETL_CRAFT_DAGS_DIR") or os.path.dirname(os.path.abspath(__file__))
ACTOR = os.environ.get("ETL_CRAFT_AIRFLOW_ACTOR") or "airflow"
START_DATE = datetime.datetime.strptime(os.environ.get("ETL_CRAFT_START_DATE") or "2024-01-01", "%Y-%m-%d").replace(
    tzinfo=datetime.timezone.utc
)
POKE_SECONDS = int(os.environ.get("ETL_CRAFT_POKE_SECONDS") or 60)
FINALIZE_STEP = "__finalize__"

# What every etl-craft command runs with: the orchestrator actor and the DAG run.
COMMAND_ENV = {
    "ETL_CRAFT_ACTOR": ACTOR,
    "ETL_CRAFT_ACTOR_KIND": "ORCHESTRATOR",
    "ETL_CRAFT_DAG_RUN_ID": "{{ run_id }}",
}


def _accepts(cls, name):
    return name in inspect.signature(cls.__init__).parameters


# Airflow 2.3 added append_env (before it, env replaced the whole environment)
# and 2.4 the schedule argument (before it, schedule_interval).
APPEND_ENV = _accepts(BashOperator, "append_env")
SCHEDULE_ARG = "schedule" if _accepts(DAG, "schedule") else "schedule_interval"


class DescriptorError(ValueError):
    """A descriptor this loader cannot build a DAG from."""


def _bash(dag, step_id, step):
    kwargs = {"task_id": step_id, "trigger_rule": step["trigger_rule"], "dag": dag}
    if step_id == FINALIZE_STEP:
        # Its exit 1 reports a FAILED run: trying it again would only find
        # the run ended.
        kwargs["retries"] = 0
    command = step["bash_command"]
    if APPEND_ENV:
        return BashOperator(bash_command=command, env=dict(COMMAND_ENV), append_env=True, **kwargs)
    # Without append_env, the variables go before the command, keeping the
    # worker's environment.
    prefix = " ".join("%s=%s" % kv for kv in sorted(COMMAND_ENV.items()))
    return BashOperator(bash_command=prefix + " " + command, **kwargs)


def _sensor(dag, step_id, step):
    s = step["sensor"]
    return ExternalTaskSensor(task_id=step_id, external_dag_id=s["external_dag_id"],
                              external_task_id=s["external_task_id"], allowed_states=list(s["allowed_states"]),
                              failed_states=list(s["failed_states"]), mode="reschedule", poke_interval=POKE_SECONDS,
                              trigger_rule=step["trigger_rule"], dag=dag)


def _trigger(dag, step_id, step):
    return TriggerDagRunOperator(task_id=step_id, trigger_dag_id=step["trigger_dag_id"], logical_date="{{ logical_date }}",
                                 wait_for_completion=True,
                                 poke_interval=POKE_SECONDS, allowed_states=["success"], failed_states=["failed"],
                                 trigger_rule=step["trigger_rule"], dag=dag)


def _default_args(doc):
    d = doc["default_args"]
    args = {
        "owner": d["owner"],
        "retries": d["retries"],
        "retry_delay": datetime.timedelta(minutes=d["retry_delay_minutes"]),
        "depends_on_past": d["depends_on_past"],
        "email_on_failure": d["email_on_failure"],
    }
    if "email" in d:
        args["email"] = list(d["email"])
    return args


def read(path):
    """Returns the descriptor at path."""
    with open(path, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    if not isinstance(doc, dict) or doc.get("etl_craft_yaml_version") != YAML_VERSION or "dag_id" not in doc:
        raise DescriptorError("%s: not an etl-craft DAG descriptor of etl_craft_yaml_version %d; regenerate it with "
                              "etl-craft generate-yml" % (path, YAML_VERSION))
    return doc


def build(path, doc):
    """Returns the DAG of the descriptor doc, read from path."""
    try:
        kwargs = {
            "description": doc["description"],
            SCHEDULE_ARG: doc["schedule"],
            "start_date": START_DATE,
            "catchup": doc["catchup"],
            "max_active_runs": doc["max_active_runs"],
            "tags": list(doc["tags"]),
            "default_args": _default_args(doc),
        }
        dag = DAG(doc["dag_id"], **kwargs)
        if "pipelines" in doc:
            steps, make = doc["pipelines"], lambda i, s: _trigger(dag, i, s)
        else:
            steps = doc["tasks"]
            make = lambda i, s: _sensor(dag, i, s) if "sensor" in s else _bash(dag, i, s)
        ops = {step_id: make(step_id, step) for step_id, step in steps.items()}
        for step_id, step in steps.items():
            for up in step["depends_on"]:
                if up not in ops:
                    raise DescriptorError("%s: step %s depends on %s, which is not a step of the DAG" % (path, step_id, up))
                ops[step_id].set_upstream(ops[up])
    except KeyError as e:
        raise DescriptorError("%s: the descriptor has no %s; regenerate it with etl-craft generate-yml" % (path, e)) from e
    return dag


def load(folder=DAGS_DIR):
    """Returns the DAGs of the folder's descriptors by dag_id, in file name order."""
    docs, sources = {}, {}
    for path in sorted(glob.glob(os.path.join(folder, "*.yml")) + glob.glob(os.path.join(folder, "*.yaml"))):
        doc = read(path)
        dag_id = doc["dag_id"]
        if dag_id in docs:
            raise DescriptorError("%s and %s both describe DAG %s" % (sources[dag_id], path, dag_id))
        docs[dag_id], sources[dag_id] = doc, path
    return {dag_id: build(sources[dag_id], doc) for dag_id, doc in docs.items()}


# Airflow finds the DAGs among the module's globals; the prefix keeps a dag_id
# from replacing a name of this module.
globals().update({"etl_craft_dag__" + dag_id: dag for dag_id, dag in load().items()})
