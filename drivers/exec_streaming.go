package drivers

import (
	"context"
	"io"
)

// ExecStreamer is implemented by drivers that run a command in a task's
// context with live standard streams and, when asked, a terminal (Nomad's
// ExecTaskStreaming, behind `nomad alloc exec`). Drivers without it are
// reached through Driver.Exec, which buffers the output and has no stdin.
type ExecStreamer interface {
	// ExecStreaming runs opts.Command in the task's context (as Exec
	// does) and copies opts.Stdin to it and its output to opts.Stdout
	// and opts.Stderr while it runs. It returns the command's exit code
	// once it has ended and its output is copied. With opts.Tty the
	// command gets a terminal: its stdout and stderr both go to
	// opts.Stdout, and opts.Resize changes the terminal's size. When ctx
	// ends the command is killed. ErrTaskNotFound for an unknown task;
	// failing to start the command is an error, an exit code is not.
	ExecStreaming(ctx context.Context, taskID string, opts *ExecOptions) (int, error)
}

// ExecOptions are a streamed command's arguments and streams.
type ExecOptions struct {
	// Command is the program and its arguments.
	Command []string
	// Tty gives the command a terminal.
	Tty bool
	// Stdin feeds the command's standard input; nil means none (the
	// command reads end of file).
	Stdin io.Reader
	// Stdout and Stderr receive its output; with Tty everything goes to
	// Stdout.
	Stdout, Stderr io.Writer
	// Resize carries the terminal's new sizes (Tty only); may be nil.
	Resize <-chan TerminalSize
}

// TerminalSize is a terminal's size in characters.
type TerminalSize struct {
	Height, Width int
}
