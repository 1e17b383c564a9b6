package report

// The schema ids of the config command's documents.
const (
	SchemaConfigSync   = "etl-craft/config-sync/1"
	SchemaConfigExport = "etl-craft/config-export/1"
)

// ConfigSync is what config plan or config apply did: the files' revision,
// every change, the validation run on the result, and whether it committed.
type ConfigSync struct {
	Schema     string         `json:"schema"`
	Command    string         `json:"command"`
	Revision   string         `json:"revision"`
	Dir        string         `json:"dir"`
	Applied    bool           `json:"applied"`
	Changes    []ConfigChange `json:"changes"`
	Validation Validation     `json:"validation"`
}

// ConfigChange is one row a sync inserts, updates, reactivates or retires.
type ConfigChange struct {
	Op      string   `json:"op"`
	File    string   `json:"file"`
	Row     string   `json:"row"`
	Details []string `json:"details"`
}

// ConfigExport is what config export wrote.
type ConfigExport struct {
	Schema   string       `json:"schema"`
	Revision string       `json:"revision"`
	Dir      string       `json:"dir"`
	Files    []ConfigFile `json:"files"`
}

// ConfigFile is one file config export wrote and its row count.
type ConfigFile struct {
	File string `json:"file"`
	Rows int    `json:"rows"`
}
