package supervisor

import "testing"

func TestLaunchRefusedWhileAnotherSupervisorHoldsTheTask(t *testing.T) {
	stateDir := t.TempDir()
	lock, err := AcquireLock(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if !LockHeld(stateDir) {
		t.Fatal("lock not seen as held")
	}
	l := &Launcher{Command: []string{"/bin/false"}}
	if _, err := l.Launch(&Spec{RunID: "r", Command: "/bin/true", StateDir: stateDir}); err == nil {
		t.Fatal("launched a second supervisor for one task")
	}
	lock.Close()
	if LockHeld(stateDir) {
		t.Fatal("lock still held after release")
	}
}
