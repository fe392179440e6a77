package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flightdeck/flightdeck/sandbox"
)

// machine describes where the bench ran.
type machine struct {
	cpus       int
	cpuModel   string
	memTotalMB int64
	kernel     string
	engine     sandbox.Info
	goVersion  string
	flightdeck string // git describe of the tree
	started    time.Time
	loadBefore string
	loadAfter  string
}

func describeMachine(ctx context.Context, eng sandbox.Info, repo string) machine {
	m := machine{cpus: runtime.NumCPU(), engine: eng, goVersion: runtime.Version(), started: time.Now().UTC()}
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.kernel = strings.TrimSpace(string(data))
	}
	m.cpuModel = procField("/proc/cpuinfo", "model name")
	if v := procField("/proc/meminfo", "MemTotal"); v != "" {
		kb, _ := strconv.ParseInt(strings.TrimSuffix(v, " kB"), 10, 64)
		m.memTotalMB = kb / 1024
	}
	if out, err := exec.CommandContext(ctx, "git", "-C", repo, "describe", "--always", "--dirty").Output(); err == nil {
		m.flightdeck = strings.TrimSpace(string(out))
	}
	m.loadBefore = loadAvg()
	return m
}

// procField is the value of the first "key: value" line of a /proc file.
func procField(file, key string) string {
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// loadAvg is /proc/loadavg's three load averages.
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// loadSampler records the 1-minute load average, the number of running
// containers (the bench's own included) and of those without the
// flightdeck.managed label (another program's, or an image build's step:
// the classic builder's step containers carry no label) every interval.
type loadSampler struct {
	mu         sync.Mutex
	load       samples
	containers samples
	foreign    samples
	stop       chan struct{}
	done       chan struct{}
}

func startLoadSampler(ctx context.Context, every time.Duration) *loadSampler {
	s := &loadSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			s.sample(ctx)
			select {
			case <-s.stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *loadSampler) sample(ctx context.Context) {
	load := load1(loadAvg())
	n, foreign := -1.0, 0.0
	format := `{{.Label "` + sandbox.LabelManaged + `"}}.`
	if out, err := exec.CommandContext(ctx, "docker", "ps", "--format", format).Output(); err == nil {
		lines := strings.Fields(string(out))
		n = float64(len(lines))
		for _, l := range lines {
			if l == "." {
				foreign++
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if load >= 0 {
		s.load = append(s.load, load)
	}
	if n >= 0 {
		s.containers = append(s.containers, n)
		s.foreign = append(s.foreign, foreign)
	}
}

func (s *loadSampler) finish() (load, containers, foreign samples) {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.load, s.containers, s.foreign
}

// load1 is the 1-minute figure of a loadAvg string, or -1.
func load1(avg string) float64 {
	f := strings.Fields(avg)
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}
