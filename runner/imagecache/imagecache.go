// Package imagecache keeps the record of when each cached task image was
// last used, and decides which to evict under a size budget or an age.
// An image's labels cannot change once it is built, and the engine's own
// times say when an image was built or tagged, not used: so every run
// records its uses in an index file, shared by every flightdeck process of
// the user (a lock file orders them).
package imagecache

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/flightdeck/flightdeck/internal/atomicfile"
	"github.com/flightdeck/flightdeck/internal/text"
)

// DirEnv overrides where the index is kept (tests, CI caches).
const DirEnv = "FLIGHTDECK_CACHE_DIR"

// BudgetEnv is the image budget a run enforces when its suite sets none.
const BudgetEnv = "FLIGHTDECK_IMAGE_BUDGET"

// runsKept is how many of the last runs to use an image are recorded.
const runsKept = 5

// Use is what the index records of one image (by tag).
type Use struct {
	LastUsed time.Time `json:"last_used,omitzero"`
	Runs     []string  `json:"runs,omitempty"` // the last runs that used it, latest last
	// SizeOf is the image ID whose own size (its layers less its base's)
	// Size is: a figure for that image only, since a tag can move.
	SizeOf string `json:"size_of,omitempty"`
	Size   int64  `json:"size,omitempty"`
}

// Touched is a use of an image: its tag and, when known, its ID and own
// size.
type Touched struct {
	Ref  string
	ID   string // "": no size known
	Size int64
}

// Index is the index file of image uses.
type Index struct{ path string }

// Open is the index kept in dir.
func Open(dir string) Index { return Index{path: filepath.Join(dir, "images.json")} }

// DefaultDir is $FLIGHTDECK_CACHE_DIR, else the user's cache dir's
// flightdeck/.
func DefaultDir(getenv func(string) string) (string, error) {
	if d := getenv(DirEnv); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("the image index's directory (set %s): %w", DirEnv, err)
	}
	return filepath.Join(d, "flightdeck"), nil
}

// Path is the index file.
func (x Index) Path() string { return x.path }

// Read returns the index; a missing file is an empty index.
func (x Index) Read() (map[string]Use, error) {
	data, err := os.ReadFile(x.path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]Use{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the image index: %w", err)
	}
	uses := map[string]Use{}
	if err := json.Unmarshal(data, &uses); err != nil {
		return nil, fmt.Errorf("%s: not an image index (remove it to start a new one): %w", x.path, err)
	}
	return uses, nil
}

// Touch records that run used the images now.
func (x Index) Touch(imgs []Touched, run string, now time.Time) error {
	return x.update(func(uses map[string]Use) {
		for _, img := range imgs {
			ref := img.Ref
			u := uses[ref]
			if img.ID != "" {
				u.SizeOf, u.Size = img.ID, img.Size
			}
			u.LastUsed = now.UTC()
			if run != "" {
				u.Runs = slices.DeleteFunc(u.Runs, func(r string) bool { return r == run })
				u.Runs = append(u.Runs, run)
				if len(u.Runs) > runsKept {
					u.Runs = u.Runs[len(u.Runs)-runsKept:]
				}
			}
			uses[ref] = u
		}
	})
}

// SetSizes records images' own sizes (by tag: ID and size) without a
// use.
func (x Index) SetSizes(sizes []Touched) error {
	return x.update(func(uses map[string]Use) {
		for _, s := range sizes {
			u := uses[s.Ref]
			u.SizeOf, u.Size = s.ID, s.Size
			uses[s.Ref] = u
		}
	})
}

// Forget drops refs (removed images) from the index.
func (x Index) Forget(refs []string) error {
	return x.update(func(uses map[string]Use) {
		for _, ref := range refs {
			delete(uses, ref)
		}
	})
}

// update changes the index under its lock and writes it whole.
func (x Index) update(change func(map[string]Use)) error {
	if err := os.MkdirAll(filepath.Dir(x.path), 0o755); err != nil {
		return fmt.Errorf("the image index's directory: %w", err)
	}
	lock, err := os.OpenFile(x.path+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("lock the image index: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock the image index: %w", err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	uses, err := x.Read()
	if err != nil {
		return err
	}
	change(uses)
	data, err := json.MarshalIndent(uses, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Replace(x.path, append(data, '\n')); err != nil {
		return fmt.Errorf("write the image index: %w", err)
	}
	return nil
}

// Image is a cached image as the eviction sees it.
type Image struct {
	Ref      string
	Size     int64
	LastUsed time.Time // the index's, else when it was built
	InUse    bool      // a container is made from it: never evicted
	// Retag: another tag of an image whose size its first tag carries.
	Retag bool
}

// Policy bounds the cache: MaxSize in bytes (0: none), OlderThan an age
// since last use (0: none).
type Policy struct {
	MaxSize   int64
	OlderThan time.Duration
	// Match, when set, narrows the images considered (sizes included) to
	// those it accepts: one dataset's, say.
	Match func(ref string) bool
}

// Plan picks the images to evict, least recently used first: every image
// unused for longer than OlderThan, then more until the rest fit in
// MaxSize. An image in use is never picked, even when the rest cannot fit.
// Images Match refuses are in neither list.
// Sizes are each image's own layers (what removing it frees), an image
// counting at least minCharge.
func Plan(imgs []Image, p Policy, now time.Time) (evict, keep []Image) {
	sorted := slices.Clone(imgs)
	if p.Match != nil {
		sorted = slices.DeleteFunc(sorted, func(i Image) bool { return !p.Match(i.Ref) })
	}
	slices.SortStableFunc(sorted, func(a, b Image) int {
		if c := a.LastUsed.Compare(b.LastUsed); c != 0 {
			return c
		}
		return strings.Compare(a.Ref, b.Ref)
	})
	var total int64
	for _, i := range sorted {
		total += charged(i)
	}
	for _, i := range sorted {
		old := p.OlderThan > 0 && now.Sub(i.LastUsed) > p.OlderThan
		over := p.MaxSize > 0 && total > p.MaxSize
		if !i.InUse && (old || over) {
			evict = append(evict, i)
			total -= charged(i)
			continue
		}
		keep = append(keep, i)
	}
	return evict, keep
}

// minCharge is what a budget counts at least for an image: one whose
// layers are all its base's still holds a config and a tag, so a budget
// smaller than the images (--max-size 1B) evicts it rather than calling
// it free.
const minCharge = 1 << 10

func charged(i Image) int64 {
	if i.Retag {
		return 0
	}
	return max(i.Size, minCharge)
}

// Select is the images p.Match accepts (all of them when it is nil).
func Select(imgs []Image, p Policy) []Image {
	if p.Match == nil {
		return imgs
	}
	var out []Image
	for _, i := range imgs {
		if p.Match(i.Ref) {
			out = append(out, i)
		}
	}
	return out
}

// Total is the images' summed size.
func Total(imgs []Image) int64 {
	var n int64
	for _, i := range imgs {
		n += i.Size
	}
	return n
}

// ParseSize reads a size as a user writes one: 5GB, 500MiB, 2g, 1024 (bytes).
// Every unit is binary: 1KB = 1KiB = 1024 bytes, as docker's flags read them.
func ParseSize(s string) (int64, error) {
	in := strings.TrimSpace(s)
	num := strings.TrimRightFunc(in, func(r rune) bool { return r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' })
	unit := strings.ToLower(strings.TrimSpace(in[len(num):]))
	shift, ok := map[string]uint{"": 0, "b": 0, "k": 10, "kb": 10, "kib": 10, "m": 20, "mb": 20, "mib": 20,
		"g": 30, "gb": 30, "gib": 30, "t": 40, "tb": 40, "tib": 40}[unit]
	n, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if !ok || err != nil || n < 0 || n*float64(int64(1)<<shift) > math.MaxInt64/2 {
		return 0, fmt.Errorf("%q is not a size (for example 20GB, 500MiB)", s)
	}
	return int64(n * float64(int64(1)<<shift)), nil
}

// HumanSize writes a size for people, in the units ParseSize reads: 1.2GiB.
func HumanSize(n int64) string { return text.Bytes(n) }
