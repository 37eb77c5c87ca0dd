package mock

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/drover-sched/drover/drivers"
)

var _ drivers.ExecStreamer = (*Driver)(nil)

// ExecStreaming implements drivers.ExecStreamer for tests: the command
// ["exit", "N"] ends at once with code N; any other command is echoed to
// stdout (quoted, as Exec does), then stdin is copied to stdout until it
// ends, and the exit code is 0.
func (d *Driver) ExecStreaming(ctx context.Context, taskID string, opts *drivers.ExecOptions) (int, error) {
	if _, err := d.get(taskID); err != nil {
		return 0, err
	}
	if len(opts.Command) == 2 && opts.Command[0] == "exit" {
		code, err := strconv.Atoi(opts.Command[1])
		if err != nil {
			return 0, fmt.Errorf("exec exit: %w", err)
		}
		return code, nil
	}
	if _, err := fmt.Fprintf(opts.Stdout, "%q\n", opts.Command); err != nil {
		return 0, err
	}
	if opts.Stdin != nil {
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = io.Copy(opts.Stdout, opts.Stdin)
		}()
		select {
		case <-done:
		case <-ctx.Done():
			return 137, nil
		}
	}
	return 0, nil
}
