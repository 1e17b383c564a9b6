// Package airflow holds the tests that run etl-craft under a real Apache
// Airflow, as a team past one machine does: the DAG descriptors
// `etl-craft generate-yml` writes and the loader it prints, in Airflow's DAGs
// folder; Airflow's scheduler with the LocalExecutor, and with the
// CeleryExecutor, Redis and two workers as separate processes, each with its
// own copy of the project and the binary; every step an `etl-craft run`
// process of the built binary on one PostgreSQL Engine DB and warehouse.
// They check Airflow's own database against the Engine DB, the warehouse
// against a local-mode run, and what a worker's death leaves.
//
// Each Airflow version of scripts/airflow/requirements-*.txt is installed by
// scripts/test.sh into a virtual environment under a cache folder
// (scripts/airflow/install.sh), named by ETL_CRAFT_AIRFLOW. The package has
// no code of its own.
package airflow
