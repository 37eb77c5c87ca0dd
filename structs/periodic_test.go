package structs

import (
	"strings"
	"testing"
	"time"
)

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestPeriodicNext: the next launch with Nomad's cron syntax, read in the
// block's time zone, the earliest of several crons, seconds with 7 fields.
func TestPeriodicNext(t *testing.T) {
	cases := []struct {
		name string
		p    PeriodicConfig
		from string
		want string
	}{
		{"every minute", PeriodicConfig{Spec: "* * * * *"}, "2026-03-01T10:00:30Z", "2026-03-01T10:01:00Z"},
		{"strictly after", PeriodicConfig{Spec: "*/15 * * * *"}, "2026-03-01T10:15:00Z", "2026-03-01T10:30:00Z"},
		{"daily at 09:00 in Paris (UTC+1 in March)", PeriodicConfig{Spec: "0 9 * * *", TimeZone: "Europe/Paris"}, "2026-03-01T10:00:00Z", "2026-03-02T08:00:00Z"},
		{"daily at 09:00 in Paris after the switch to summer time", PeriodicConfig{Spec: "0 9 * * *", TimeZone: "Europe/Paris"}, "2026-03-29T12:00:00Z", "2026-03-30T07:00:00Z"},
		{"daily at 09:00 UTC", PeriodicConfig{Spec: "0 9 * * *"}, "2026-03-01T10:00:00Z", "2026-03-02T09:00:00Z"},
		{"earliest of crons", PeriodicConfig{Specs: []string{"0 12 * * *", "30 10 * * *"}}, "2026-03-01T10:00:00Z", "2026-03-01T10:30:00Z"},
		{"seconds (7 fields)", PeriodicConfig{Spec: "*/10 * * * * * *"}, "2026-03-01T10:00:01Z", "2026-03-01T10:00:10Z"},
		{"shorthand", PeriodicConfig{Spec: "@hourly"}, "2026-03-01T10:00:01Z", "2026-03-01T11:00:00Z"},
		{"never again", PeriodicConfig{Spec: "0 0 1 1 * 2020"}, "2026-03-01T10:00:00Z", ""},
	}
	for _, c := range cases {
		got, err := c.p.Next(mustTime(t, c.from))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if c.want == "" {
			if !got.IsZero() {
				t.Errorf("%s: next = %s, want none", c.name, got)
			}
			continue
		}
		if want := mustTime(t, c.want); !got.Equal(want) {
			t.Errorf("%s: next = %s, want %s", c.name, got.UTC(), want)
		}
	}
	if _, err := (&PeriodicConfig{Spec: "* * *"}).Next(time.Now()); err == nil {
		t.Error("a bad cron gave no error")
	}
	if _, err := (&PeriodicConfig{Spec: "* * * * *", TimeZone: "Nowhere/Town"}).Next(time.Now()); err == nil {
		t.Error("a bad time zone gave no error")
	}
}

// TestPeriodicChild: the child's ID is the parent's plus the launch's unix
// seconds (read back from it), with ParentID set and Periodic removed.
func TestPeriodicChild(t *testing.T) {
	parent := &Job{ID: "report", Name: "report", Type: JobTypeBatch, Periodic: &PeriodicConfig{Spec: "@daily", Enabled: true},
		Status: JobStatusRunning, Version: 3, CreateIndex: 7, JobModifyIndex: 9, Meta: map[string]string{"a": "1"}}
	launch := time.Unix(1700000000, 0)
	c := NewPeriodicChild(parent, launch)
	if c.ID != "report/periodic-1700000000" || c.Name != c.ID || c.ParentID != "report" || c.Periodic != nil {
		t.Fatalf("child = %+v", c)
	}
	if c.Status != "" || c.Version != 0 || c.CreateIndex != 0 || c.JobModifyIndex != 0 || c.Meta["a"] != "1" {
		t.Fatalf("child server fields not cleared or meta lost: %+v", c)
	}
	if parent.Periodic == nil {
		t.Fatal("deriving the child changed the parent")
	}
	got, ok := PeriodicLaunchTime("report", c.ID)
	if !ok || !got.Equal(launch) {
		t.Fatalf("launch time read back = %v %v", got, ok)
	}
	if _, ok := PeriodicLaunchTime("report", "report/dispatch-1-abc"); ok {
		t.Fatal("a dispatch child read as a periodic launch")
	}
}

// TestValidateDispatch: Nomad's dispatch rules on payload and meta, each
// error naming the field.
func TestValidateDispatch(t *testing.T) {
	p := &ParameterizedJobConfig{Payload: DispatchPayloadOptional, MetaRequired: []string{"input"}, MetaOptional: []string{"mode"}}
	cases := []struct {
		name    string
		cfg     *ParameterizedJobConfig
		payload []byte
		meta    map[string]string
		field   string
		rule    string
	}{
		{"ok", p, []byte("x"), map[string]string{"input": "a", "mode": "b"}, "", ""},
		{"missing required", p, nil, map[string]string{"mode": "b"}, "Meta", "required meta keys: input"},
		{"unknown key", p, nil, map[string]string{"input": "a", "color": "red"}, "Meta", "unpermitted metadata keys: color"},
		{"too big", p, make([]byte, DispatchPayloadSizeLimit+1), map[string]string{"input": "a"}, "Payload", "exceeds maximum size"},
		{"at the limit", p, make([]byte, DispatchPayloadSizeLimit), map[string]string{"input": "a"}, "", ""},
		{"required", &ParameterizedJobConfig{Payload: DispatchPayloadRequired}, nil, nil, "Payload", "not provided"},
		{"forbidden", &ParameterizedJobConfig{Payload: DispatchPayloadForbidden}, []byte("x"), nil, "Payload", "not allowed"},
		{"forbidden and empty", &ParameterizedJobConfig{Payload: DispatchPayloadForbidden}, nil, nil, "", ""},
	}
	for _, c := range cases {
		err := c.cfg.ValidateDispatch(c.payload, c.meta)
		if c.field == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		de, ok := err.(*DispatchError)
		if !ok || de.Field != c.field || !strings.Contains(de.Rule, c.rule) {
			t.Errorf("%s: error %v, want %s: ...%s...", c.name, err, c.field, c.rule)
		}
	}
}

// TestDispatchChild: the dispatched child's ID shape, its meta merged over
// the parent's, its payload and token.
func TestDispatchChild(t *testing.T) {
	parent := &Job{ID: "proc", Type: JobTypeBatch, ParameterizedJob: &ParameterizedJobConfig{}, Meta: map[string]string{"a": "1", "b": "2"}}
	c := NewDispatchChild(parent, time.Unix(1700000000, 0), "0123abcd", map[string]string{"b": "3"}, []byte("hi"), "tok")
	if c.ID != "proc/dispatch-1700000000-0123abcd" || c.ParentID != "proc" || !c.Dispatched || c.DispatchIdempotencyToken != "tok" {
		t.Fatalf("child = %+v", c)
	}
	if c.Meta["a"] != "1" || c.Meta["b"] != "3" || string(c.Payload) != "hi" || parent.Meta["b"] != "2" {
		t.Fatalf("meta %v payload %q parent meta %v", c.Meta, c.Payload, parent.Meta)
	}
	if c.IsParameterized() || !parent.IsParameterized() || !parent.IsParent() || c.IsParent() {
		t.Fatal("a dispatched child counts as a parameterized parent")
	}
}

// TestPeriodicDispatch: a periodic parameterized job launches nothing
// itself; its dispatched children are periodic jobs that do.
func TestPeriodicDispatch(t *testing.T) {
	parent := &Job{ID: "p", Type: JobTypeBatch, Periodic: &PeriodicConfig{Enabled: true, Spec: "@hourly"}, ParameterizedJob: &ParameterizedJobConfig{}}
	if parent.IsPeriodicActive() || !parent.IsParent() {
		t.Fatal("a periodic parameterized parent launches by itself")
	}
	c := NewDispatchChild(parent, time.Unix(1700000000, 0), "abcd0123", nil, nil, "")
	if !c.IsPeriodicActive() || !c.IsParent() || c.IsParameterized() {
		t.Fatalf("a dispatched child of a periodic job does not launch: %+v", c)
	}
	if k := NewPeriodicChild(c, time.Unix(1700003600, 0)); k.IsParent() || k.ParentID != c.ID || k.ID != c.ID+"/periodic-1700003600" {
		t.Fatalf("grandchild %+v", k)
	}
}
