package report

// Finding is one problem validate found.
type Finding struct {
	// Where is the pipeline code, or PIPELINE.TASK for a task.
	Where   string `json:"where"`
	Status  string `json:"status"`
	Message string `json:"message"`
}

// Validation is what validate checked and every finding, pipeline by
// pipeline in code order.
type Validation struct {
	Schema    string    `json:"schema"`
	Pipelines int       `json:"pipelines"`
	Tasks     int       `json:"tasks"`
	Failed    int       `json:"failed"`
	Warnings  int       `json:"warnings"`
	Findings  []Finding `json:"findings"`
}
