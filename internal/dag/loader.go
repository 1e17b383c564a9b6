package dag

import (
	_ "embed"
	"slices"
)

// LoaderFile is the name the Airflow loader is meant to have in Airflow's
// dags folder.
const LoaderFile = "etl_craft_dags.py"

//go:embed loader/etl_craft_dags.py
var loader []byte

// Loader returns the Airflow loader that generate-yml --print-loader
// writes: a Python file that builds a DAG from each descriptor of a folder
// with Airflow's BashOperator, ExternalTaskSensor and TriggerDagRunOperator,
// running every command as the ORCHESTRATOR actor with the DAG run's id in
// its environment (loader/etl_craft_dags.py).
func Loader() []byte { return slices.Clone(loader) }
