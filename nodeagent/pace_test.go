package nodeagent

import (
	"testing"
	"time"
)

// pacedCP is a control plane that sets the agent's pace (as the AWS
// home's does).
type pacedCP struct{ *fakeCP }

func (pacedCP) PollInterval() time.Duration { return 3 * time.Second }
func (pacedCP) HeartbeatsPerTTL() int       { return 2 }

// TestPacerSetsPollAndHeartbeats: a control plane that is a Pacer sets the
// poll interval (unless the config sets one) and the heartbeats per TTL;
// others get the defaults.
func TestPacerSetsPollAndHeartbeats(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cp       ControlPlane
		poll     time.Duration
		wantPoll time.Duration
		wantPer  time.Duration
	}{
		{"paced", pacedCP{newFakeCP()}, 0, 3 * time.Second, 2},
		{"paced, poll set", pacedCP{newFakeCP()}, 500 * time.Millisecond, 500 * time.Millisecond, 2},
		{"unpaced", newFakeCP(), 0, DefaultPollInterval, 3},
	} {
		a, err := New(tc.cp, Config{DataDir: t.TempDir(), PollInterval: tc.poll})
		if err != nil {
			t.Fatal(err)
		}
		if a.cfg.PollInterval != tc.wantPoll || a.heartbeatsPerTTL() != tc.wantPer {
			t.Errorf("%s: poll %s, heartbeats per TTL %d; want %s, %d", tc.name, a.cfg.PollInterval, a.heartbeatsPerTTL(), tc.wantPoll, tc.wantPer)
		}
	}
}
