package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/hashicorp/nomad/api"
	"golang.org/x/sys/unix"
)

// Terminal helpers for alloc exec -t, on termios ioctls.

// terminalFile returns r as a terminal's file, or nil when it is none.
func terminalFile(r any) *os.File {
	f, ok := r.(*os.File)
	if !ok {
		return nil
	}
	if _, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err != nil {
		return nil
	}
	return f
}

// makeRaw puts the terminal in raw mode (no echo, no line editing, no
// signals from keys: they go to the remote command, as cfmakeraw) and
// returns the function that restores it.
func makeRaw(f *os.File) (restore func(), err error) {
	fd := int(f.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, err
	}
	raw := *old
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Oflag &^= unix.OPOST
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag &^= unix.CSIZE | unix.PARENB
	raw.Cflag |= unix.CS8
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &raw); err != nil {
		return nil, err
	}
	return func() { _ = unix.IoctlSetTermios(fd, unix.TCSETS, old) }, nil
}

// terminalSizes sends the terminal's size now and at every SIGWINCH until
// stop is closed.
func terminalSizes(f *os.File, stop <-chan struct{}) <-chan api.TerminalSize {
	out := make(chan api.TerminalSize, 1)
	size := func() {
		ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
		if err != nil {
			return
		}
		select {
		case out <- api.TerminalSize{Height: int(ws.Row), Width: int(ws.Col)}:
		default:
		}
	}
	size()
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	go func() {
		defer signal.Stop(winch)
		for {
			select {
			case <-winch:
				size()
			case <-stop:
				return
			}
		}
	}()
	return out
}
