package nodeagent

import "github.com/drover-sched/drover/drivers/shared/logfiles"

// Nomad's defaults of a task's logs block.
const (
	// DefaultLogMaxFiles is how many files of each stream are kept.
	DefaultLogMaxFiles = logfiles.DefaultMaxFiles
	// DefaultLogMaxFileSizeMB is the size of one log file, in MiB.
	DefaultLogMaxFileSizeMB = logfiles.DefaultMaxFileSizeMB
)

// Log stream names, as in the file names and the logs API.
const (
	LogTypeStdout = logfiles.Stdout
	LogTypeStderr = logfiles.Stderr
)

// listLogFiles returns the files of base in dir, oldest (lowest index)
// first. A missing dir is no files.
func listLogFiles(dir, base string) ([]logfiles.File, error) { return logfiles.List(dir, base) }
