package structs

import "testing"

// TestRanSuccessfully: an alloc ran successfully only when it has task
// states and every task is dead without having failed.
func TestRanSuccessfully(t *testing.T) {
	done := &TaskState{State: TaskStateDead}
	failed := &TaskState{State: TaskStateDead, Failed: true}
	running := &TaskState{State: TaskStateRunning}
	for name, c := range map[string]struct {
		states map[string]*TaskState
		want   bool
	}{
		"no task states":    {nil, false},
		"all done":          {map[string]*TaskState{"a": done, "b": done}, true},
		"one failed":        {map[string]*TaskState{"a": done, "b": failed}, false},
		"one still running": {map[string]*TaskState{"a": done, "b": running}, false},
		"a nil state":       {map[string]*TaskState{"a": done, "b": nil}, false},
	} {
		if got := (&Allocation{TaskStates: c.states}).RanSuccessfully(); got != c.want {
			t.Errorf("%s: RanSuccessfully() = %v, want %v", name, got, c.want)
		}
	}
}
