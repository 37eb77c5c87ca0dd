package httpapi

import "testing"

// TestIndexTokensCompareAsNumbers: "<create index>.<id>" tokens compare
// their index as a number (10 after 9), then the ID, as Nomad's
// tokenizer; an unparsable token compares as a string.
func TestIndexTokensCompareAsNumbers(t *testing.T) {
	cases := []struct {
		key   pageKey
		token string
		want  int
	}{
		{indexKey(10, "a"), "9.z", 1},
		{indexKey(9, "z"), "10.a", -1},
		{indexKey(10, "b"), "10.a", 1},
		{indexKey(10, "a"), "10.a", 0},
		{indexKey(3, ""), "3", 0},
		{indexKey(3, ""), "12", -1},
		{indexKey(10, "a"), "zz", -1},
		{idKey("default.web"), "default.api", 1},
	}
	for _, c := range cases {
		if got := c.key.compare(c.token); got != c.want {
			t.Errorf("%+v vs %q: %d, want %d", c.key, c.token, got, c.want)
		}
	}
}
