package nodeagent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// dispatchPayloadHook writes a dispatched job's payload into the task's
// local/ directory, at the task's dispatch_payload file, before the task
// first starts (Nomad's dispatch hook). The file is written with mode
// 0644 whatever the payload (an empty payload makes an empty file); a path
// that would leave local/ fails the task (validation refuses it before).
type dispatchPayloadHook struct{}

func (*dispatchPayloadHook) Name() string { return "dispatch_payload" }

func (*dispatchPayloadHook) Prestart(req *taskPrestartRequest, _ *taskPrestartResponse) error {
	d := req.Task.DispatchPayload
	if d == nil || req.Alloc.Job == nil {
		return nil
	}
	local := req.TaskDir.LocalDir
	dest := filepath.Join(local, filepath.Clean("/"+d.File))
	if rel, err := filepath.Rel(local, dest); err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return fmt.Errorf("dispatch_payload: file %q is not inside the task's local directory", d.File)
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return fmt.Errorf("dispatch_payload: %w", err)
	}
	if err := os.WriteFile(dest, req.Alloc.Job.Payload, 0o644); err != nil {
		return fmt.Errorf("dispatch_payload: write %s: %w", d.File, err)
	}
	return nil
}
