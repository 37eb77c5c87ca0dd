package structs

// MaxJobSourceBytes is the largest job source kept with a job version
// (Nomad's default job_max_source_size, 1 MB): a larger one is discarded
// with a warning.
const MaxJobSourceBytes = 1_000_000

// JobSubmission is the source a job version was registered from, Nomad's
// JobSubmission shape: the HCL (or JSON) text, its format ("hcl2",
// "json"), the -var flags and the variables file content.
type JobSubmission struct {
	Source        string
	Format        string
	VariableFlags map[string]string `json:",omitempty"`
	Variables     string
	// Namespace, JobID and Version name the job version it belongs to
	// (set by the store).
	Namespace string
	JobID     string
	Version   uint64
	// JobModifyIndex is the job's at registration (set by the store).
	JobModifyIndex uint64
}

// Size is the submission's size in bytes as Nomad counts it: the source,
// the variables file and the -var flags.
func (s *JobSubmission) Size() int {
	if s == nil {
		return 0
	}
	n := len(s.Source) + len(s.Variables)
	for k, v := range s.VariableFlags {
		n += len(k) + len(v)
	}
	return n
}
