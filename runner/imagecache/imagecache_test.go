package imagecache

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPlan(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	imgs := []Image{
		{Ref: "a", Size: 100 << 10, LastUsed: now.Add(-10 * day)},
		{Ref: "b", Size: 100 << 10, LastUsed: now.Add(-1 * day)},
		{Ref: "c", Size: 100 << 10, LastUsed: now.Add(-20 * day), InUse: true},
		{Ref: "d", Size: 100 << 10, LastUsed: now},
	}
	refs := func(is []Image) []string {
		var out []string
		for _, i := range is {
			out = append(out, i.Ref)
		}
		return out
	}
	tests := []struct {
		name        string
		p           Policy
		evict, keep []string
	}{
		{"no bound", Policy{}, nil, []string{"c", "a", "b", "d"}},
		{"fits", Policy{MaxSize: 400 << 10}, nil, []string{"c", "a", "b", "d"}},
		{"least recently used first, never one in use", Policy{MaxSize: 250 << 10}, []string{"a", "b"}, []string{"c", "d"}},
		{"in use kept even over the budget", Policy{MaxSize: 50 << 10}, []string{"a", "b", "d"}, []string{"c"}},
		{"older than", Policy{OlderThan: 5 * day}, []string{"a"}, []string{"c", "b", "d"}},
		{"both", Policy{OlderThan: 5 * day, MaxSize: 200 << 10}, []string{"a", "b"}, []string{"c", "d"}},
		{"only those matched count", Policy{MaxSize: 200 << 10, Match: func(r string) bool { return r != "a" }}, []string{"b"}, []string{"c", "d"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			evict, keep := Plan(imgs, tc.p, now)
			assert.Equal(t, tc.evict, refs(evict))
			assert.Equal(t, tc.keep, refs(keep))
		})
	}
	// An image with no layers of its own is not free: a bound below what
	// it holds evicts it.
	zero := []Image{{Ref: "z", Size: 0, LastUsed: now}}
	for _, tc := range []struct {
		name        string
		p           Policy
		evict, keep []string
	}{
		{"0B image under 1B", Policy{MaxSize: 1}, []string{"z"}, nil},
		{"0B image under 1MiB", Policy{MaxSize: 1 << 20}, nil, []string{"z"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evict, keep := Plan(zero, tc.p, now)
			assert.Equal(t, tc.evict, refs(evict))
			assert.Equal(t, tc.keep, refs(keep))
		})
	}
}

func TestIndexTouchForget(t *testing.T) {
	x := Open(t.TempDir())
	uses, err := x.Read()
	require.NoError(t, err)
	assert.Empty(t, uses, "no file: an empty index")
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 7; i++ {
		require.NoError(t, x.Touch([]Touched{{Ref: "img:1"}}, []string{"r0", "r1", "r2", "r3", "r4", "r5", "r1"}[i], t0.Add(time.Duration(i)*time.Hour)))
	}
	require.NoError(t, x.Touch([]Touched{{Ref: "img:2"}}, "r9", t0))
	uses, err = x.Read()
	require.NoError(t, err)
	assert.Equal(t, t0.Add(6*time.Hour), uses["img:1"].LastUsed)
	assert.Equal(t, []string{"r2", "r3", "r4", "r5", "r1"}, uses["img:1"].Runs, "the last five runs, latest last, once each")
	require.NoError(t, x.Forget([]string{"img:1"}))
	uses, err = x.Read()
	require.NoError(t, err)
	assert.Equal(t, []string{"img:2"}, keys(uses))
}

// Processes and goroutines touching at once lose no use.
func TestIndexConcurrentTouch(t *testing.T) {
	x := Open(t.TempDir())
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			assert.NoError(t, x.Touch([]Touched{{Ref: "img:" + string(rune('a'+i))}}, "r", time.Now()))
		}()
	}
	wg.Wait()
	uses, err := x.Read()
	require.NoError(t, err)
	assert.Len(t, uses, 20)
}

func TestIndexCorrupt(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "images.json"), []byte("{not json"), 0o644))
	_, err := Open(dir).Read()
	require.Error(t, err)
	assert.Contains(t, err.Error(), filepath.Join(dir, "images.json"))
	assert.Contains(t, err.Error(), "not an image index")
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"1024": 1024, "2KiB": 2048, "5GB": 5 << 30, " 1g ": 1 << 30} {
		got, err := ParseSize(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "lots", "-1GB"} {
		_, err := ParseSize(bad)
		assert.Error(t, err, bad)
	}
}

func keys(m map[string]Use) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
