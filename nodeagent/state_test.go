package nodeagent

import (
	"encoding/json"
	"testing"

	"github.com/drover-sched/drover/drivers/shared/supervisor"
)

// TestLegacyTaskHandleDecodes: a handle written before the driver
// interface (a raw_exec supervisor's pids) is read back as a raw_exec
// TaskHandle whose driver state is that record.
func TestLegacyTaskHandleDecodes(t *testing.T) {
	old := `{"RunID":"run-1","SupervisorPid":10,"SupervisorStartTicks":20,"TaskPid":11,"TaskStartTicks":21,"StartedAt":"2030-01-01T00:00:00Z"}`
	h, err := decodeTaskHandle([]byte(old))
	if err != nil {
		t.Fatal(err)
	}
	if h.Driver != DriverRawExec || h.ID() != "run-1" {
		t.Fatalf("legacy handle read as %+v", h)
	}
	var st supervisor.State
	if err := json.Unmarshal(h.DriverState, &st); err != nil || st.TaskPid != 11 || st.SupervisorStartTicks != 20 {
		t.Fatalf("driver state %+v %v", st, err)
	}
	// Today's handles round-trip.
	b, _ := json.Marshal(h)
	h2, err := decodeTaskHandle(b)
	if err != nil || h2.Driver != DriverRawExec || h2.ID() != "run-1" || string(h2.DriverState) != old {
		t.Fatalf("round trip %+v %v", h2, err)
	}
}
