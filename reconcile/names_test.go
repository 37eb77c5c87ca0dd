package reconcile

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/drover-sched/drover/structs"
)

func TestNameIndex(t *testing.T) {
	t.Run("next takes the lowest free names below the count", func(t *testing.T) {
		ni := newNameIndex(5, []uint{0, 2})
		if got := ni.next(3); !slices.Equal(got, []uint{1, 3, 4}) {
			t.Fatalf("next = %v", got)
		}
	})
	t.Run("next beyond the free names reuses low names", func(t *testing.T) {
		ni := newNameIndex(2, []uint{0, 1})
		if got := ni.next(2); !slices.Equal(got, []uint{0, 1}) {
			t.Fatalf("next = %v", got)
		}
	})
	t.Run("highest frees the highest taken names", func(t *testing.T) {
		ni := newNameIndex(3, []uint{0, 1, 7, 4000000000})
		if got := ni.highest(2); !slices.Equal(got, []uint{7, 4000000000}) {
			t.Fatalf("highest = %v", got)
		}
		if ni.has(7) || ni.has(4000000000) || !ni.has(1) {
			t.Fatal("highest did not free exactly its names")
		}
		if got := ni.highest(5); !slices.Equal(got, []uint{0, 1}) {
			t.Fatalf("highest = %v", got)
		}
	})
	t.Run("a huge index costs no huge bitmap", func(t *testing.T) {
		ni := newNameIndex(2, []uint{1 << 40})
		if len(ni.dense) > 2 || !ni.has(1<<40) {
			t.Fatalf("dense words %d", len(ni.dense))
		}
		ni.unset(1 << 40)
		if ni.has(1 << 40) {
			t.Fatal("unset failed")
		}
	})
	t.Run("canaries prefer names under destructive update", func(t *testing.T) {
		ni := newNameIndex(4, []uint{0, 1, 2, 3})
		if got := ni.nextCanaries(2, nil, []uint{1, 3}); !slices.Equal(got, []uint{1, 3}) {
			t.Fatalf("canaries = %v", got)
		}
	})
	t.Run("canaries skip names of existing canaries", func(t *testing.T) {
		ni := newNameIndex(3, []uint{0, 1, 2})
		if got := ni.nextCanaries(1, map[uint]bool{0: true}, []uint{0, 1, 2}); !slices.Equal(got, []uint{1}) {
			t.Fatalf("canaries = %v", got)
		}
	})
	t.Run("surplus canaries are named from the count up", func(t *testing.T) {
		ni := newNameIndex(2, []uint{0, 1})
		if got := ni.nextCanaries(4, nil, []uint{0, 1}); !slices.Equal(got, []uint{0, 1, 2, 3}) {
			t.Fatalf("canaries = %v", got)
		}
	})
	t.Run("count zero scans the whole bitmap", func(t *testing.T) {
		ni := newNameIndex(0, []uint{3})
		if ni.size != 8 {
			t.Fatalf("size %d", ni.size)
		}
		if got := ni.nextCanaries(2, nil, []uint{3}); !slices.Equal(got, []uint{3, 0}) {
			t.Fatalf("canaries = %v", got)
		}
	})
}

func TestAllocSet(t *testing.T) {
	g := &groupRun{allocs: make([]*allocInfo, 130), words: 3}
	all := g.everything()
	if all.len() != 130 {
		t.Fatalf("everything has %d", all.len())
	}
	a, b := g.newSet(), g.newSet()
	for _, p := range []int{0, 64, 129} {
		a.add(p)
	}
	b.add(64)
	if got := slices.Collect(a.minus(b).ascending()); !slices.Equal(got, []int{0, 129}) {
		t.Fatalf("minus = %v", got)
	}
	if got := slices.Collect(a.plus(b).descending()); !slices.Equal(got, []int{129, 64, 0}) {
		t.Fatalf("plus = %v", got)
	}
	for p := range a.ascending() {
		a.remove(p)
	}
	if !a.empty() {
		t.Fatal("removing while iterating left members")
	}
}

func TestParseNames(t *testing.T) {
	cases := []struct {
		name      string
		index     uint
		generated bool
	}{
		{"example.web[3]", 3, true},
		{"example.web[10]", 10, true},
		{"example.web[03]", 3, false},
		{"example.api[3]", 3, false},
		{"other.web[3]", 0, false},
		{"garbage", 0, false},
		{"example.web[x]", 0, false},
		{"example.web[-2]", 0, false},
	}
	for _, c := range cases {
		i := parseNameIndex(c.name, "example", "web")
		if i != c.index || isGeneratedName(c.name, "example", "web", i) != c.generated {
			t.Errorf("%s: index %d generated %v", c.name, i, isGeneratedName(c.name, "example", "web", i))
		}
	}
}

func TestAllocNamesMatchAllocName(t *testing.T) {
	indexes := []uint{0, 1, 2, 9, 10, 11, 99, 100, 7, 7, 998, 999, 1000, 1001, 5, 1 << 40, 1<<40 + 1, 9999, 10000}
	names := newAllocNames("my.job", "web", indexes)
	got := make([]string, len(indexes))
	for k, i := range indexes {
		got[k] = names.next(i)
	}
	for k, i := range indexes {
		if want := structs.AllocName("my.job", "web", i); got[k] != want {
			t.Errorf("index %d: %q, want %q", i, got[k], want)
		}
	}
}

func TestNameIndexNextMatchesScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 500 {
		count := rng.IntN(200)
		var taken []uint
		for range rng.IntN(150) {
			i := uint(rng.IntN(260))
			if rng.IntN(20) == 0 {
				i += 1 << 20 // a sparse index
			}
			taken = append(taken, i)
		}
		n := uint(rng.IntN(count + 20))
		got := newNameIndex(count, taken).next(n)
		// The reference: one index at a time from 0, then reuse from 0.
		ref := newNameIndex(count, taken)
		var want []uint
		for i := uint(0); i < ref.scanEnd() && uint(len(want)) < n; i++ {
			if !ref.has(i) {
				want = append(want, i)
				ref.set(i)
			}
		}
		for i := uint(0); uint(len(want)) < n; i++ {
			want = append(want, i)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d (count %d, taken %v, n %d): next = %v, want %v", trial, count, taken, n, got, want)
		}
	}
}

// A new job's placements (its names and records) cost a fixed number of
// allocations, whatever the count: none per placement.
func TestScaleUpAllocationsDoNotGrowWithCount(t *testing.T) {
	allocs := func(count int) float64 {
		in := benchInput(count, 1)
		in.Allocs = nil
		return testing.AllocsPerRun(5, func() {
			if res := Reconcile(in); len(res.Place) != count {
				t.Fatalf("placements: %d", len(res.Place))
			}
		})
	}
	small, large := allocs(10), allocs(5000)
	if large > small+2 {
		t.Fatalf("count 10: %.0f allocations, count 5000: %.0f: placements allocate one by one", small, large)
	}
}
