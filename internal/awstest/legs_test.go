package awstest

import (
	"slices"
	"strings"
	"testing"
)

// TestLegs: DROVER_EMULATORS names the legs; a typo or an empty list is
// refused before any leg runs, naming the value.
func TestLegs(t *testing.T) {
	for _, c := range []struct {
		env  string
		want []string
		err  string
	}{
		{"", []string{Kumo, Moto}, ""},
		{"kumo", []string{Kumo}, ""},
		{" moto , kumo ", []string{Moto, Kumo}, ""},
		{"kumo,bogus", nil, `unknown emulator "bogus"`},
		{",", nil, "names no emulator"},
	} {
		t.Setenv("DROVER_EMULATORS", c.env)
		got, err := legs()
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("DROVER_EMULATORS=%q: got %v, %v; want an error containing %q", c.env, got, err, c.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("DROVER_EMULATORS=%q: got %v, %v; want %v", c.env, got, err, c.want)
		}
	}
}
