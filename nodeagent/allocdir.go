package nodeagent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Names inside an alloc dir.
const (
	// SharedAllocDirName is the directory shared by all tasks of an alloc
	// (NOMAD_ALLOC_DIR).
	SharedAllocDirName = "alloc"
	// TaskLocalDirName is a task's private directory (NOMAD_TASK_DIR).
	TaskLocalDirName = "local"
	// TaskSecretsDirName is a task's secrets directory (NOMAD_SECRETS_DIR).
	TaskSecretsDirName = "secrets"
	// TmpDirName is the scratch directory, shared and per task.
	TmpDirName = "tmp"
	// SharedDataDirName holds data that survives a sticky/migrating
	// replacement (issue 5).
	SharedDataDirName = "data"
	// SharedLogsDirName holds the tasks' stdout/stderr files.
	SharedLogsDirName = "logs"
	// supervisorDirName is the per-task directory of the supervisor's
	// records (spec, pids, exit status, its own log).
	supervisorDirName = ".drover"
)

// AllocDir is the directory tree of one allocation,
// <data dir>/alloc/<alloc id>/:
//
//	alloc/data, alloc/logs, alloc/tmp     shared by the alloc's tasks
//	<task>/local, <task>/secrets, <task>/tmp
//	<task>/.drover                        the task supervisor's records
type AllocDir struct {
	// Dir is the alloc dir's root.
	Dir string
}

// TaskDir is one task's part of an alloc dir.
type TaskDir struct {
	// Dir is the task's root and its working directory.
	Dir string
	// LocalDir is NOMAD_TASK_DIR.
	LocalDir string
	// SecretsDir is NOMAD_SECRETS_DIR.
	SecretsDir string
	// TmpDir is the task's scratch directory.
	TmpDir string
	// StateDir holds the supervisor's records for the task.
	StateDir string
}

// NewAllocDir returns the alloc dir of allocID under allocsDir
// (<data dir>/alloc).
func NewAllocDir(allocsDir, allocID string) AllocDir {
	return AllocDir{Dir: filepath.Join(allocsDir, allocID)}
}

// SharedDir is the alloc/ directory shared by all tasks.
func (d AllocDir) SharedDir() string { return filepath.Join(d.Dir, SharedAllocDirName) }

// LogDir is alloc/logs.
func (d AllocDir) LogDir() string { return filepath.Join(d.SharedDir(), SharedLogsDirName) }

// StdoutPath is the file that receives the task's standard output.
func (d AllocDir) StdoutPath(task string) string {
	return filepath.Join(d.LogDir(), task+".stdout.0")
}

// StderrPath is the file that receives the task's standard error.
func (d AllocDir) StderrPath(task string) string {
	return filepath.Join(d.LogDir(), task+".stderr.0")
}

// TaskDir returns the paths of task's directory (without creating them).
func (d AllocDir) TaskDir(task string) TaskDir {
	root := filepath.Join(d.Dir, task)
	return TaskDir{
		Dir:        root,
		LocalDir:   filepath.Join(root, TaskLocalDirName),
		SecretsDir: filepath.Join(root, TaskSecretsDirName),
		TmpDir:     filepath.Join(root, TmpDirName),
		StateDir:   filepath.Join(root, supervisorDirName),
	}
}

// Exists reports whether the alloc dir is present on disk.
func (d AllocDir) Exists() bool {
	_, err := os.Stat(d.Dir)
	return err == nil
}

// Build creates the shared part of the alloc dir. It is idempotent.
// As in Nomad, alloc/logs and alloc/data are writable by every user, so
// that tasks running as other users (exec's nobody) can use them.
func (d AllocDir) Build() error {
	if err := mkdirs(0o755, d.Dir, d.SharedDir()); err != nil {
		return err
	}
	for _, dir := range []string{d.LogDir(), filepath.Join(d.SharedDir(), SharedDataDirName)} {
		if err := mkdirs(0o777, dir); err != nil {
			return err
		}
		if err := os.Chmod(dir, 0o777); err != nil {
			return fmt.Errorf("chmod %s: %w", dir, err)
		}
	}
	return mkdirSticky(filepath.Join(d.SharedDir(), TmpDirName))
}

// BuildTask creates task's directories. It is idempotent.
func (d AllocDir) BuildTask(task string) (TaskDir, error) {
	if err := validTaskDirName(task); err != nil {
		return TaskDir{}, err
	}
	td := d.TaskDir(task)
	if err := mkdirs(0o755, td.Dir, td.LocalDir); err != nil {
		return td, err
	}
	if err := mkdirs(0o700, td.SecretsDir, td.StateDir); err != nil {
		return td, err
	}
	return td, mkdirSticky(td.TmpDir)
}

// Destroy removes the whole alloc dir.
func (d AllocDir) Destroy() error {
	if err := os.RemoveAll(d.Dir); err != nil {
		return fmt.Errorf("remove alloc dir %s: %w", d.Dir, err)
	}
	return nil
}

// validTaskDirName rejects task names that would escape the alloc dir or
// clash with the shared directory.
func validTaskDirName(task string) error {
	if task == "" || task == "." || task == ".." || task == SharedAllocDirName ||
		strings.ContainsAny(task, "/\x00") {
		return fmt.Errorf("task name %q cannot name a task directory", task)
	}
	return nil
}

func mkdirs(perm os.FileMode, dirs ...string) error {
	for _, dir := range dirs {
		if err := os.MkdirAll(dir, perm); err != nil {
			return fmt.Errorf("create %s: %w", dir, err)
		}
	}
	return nil
}

// mkdirSticky creates a world-writable sticky directory, like /tmp.
func mkdirSticky(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if err := os.Chmod(dir, os.ModeSticky|0o777); err != nil {
		return fmt.Errorf("chmod %s: %w", dir, err)
	}
	return nil
}
