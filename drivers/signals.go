package drivers

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ParseSignal turns a signal name ("SIGINT", "INT", "sigterm") or number
// ("15") into a signal; empty means SIGINT, Nomad's default kill signal.
func ParseSignal(name string) (syscall.Signal, error) {
	if name == "" {
		return unix.SIGINT, nil
	}
	if n, err := strconv.Atoi(name); err == nil && n > 0 && n < 65 {
		return syscall.Signal(n), nil
	}
	up := strings.ToUpper(strings.TrimSpace(name))
	if !strings.HasPrefix(up, "SIG") {
		up = "SIG" + up
	}
	if s := unix.SignalNum(up); s != 0 {
		return s, nil
	}
	return 0, fmt.Errorf("unknown signal %q", name)
}

// SignalName is the name of sig ("SIGINT"), or its number when it has none.
func SignalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return strconv.Itoa(int(sig))
}
