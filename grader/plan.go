package grader

import (
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"strings"

	"github.com/flightdeck/flightdeck/internal/text"
	"github.com/flightdeck/flightdeck/sandbox"
)

// plan is a Request turned into what the engine is asked to do.
type plan struct {
	native      bool
	what        string // the trial, for errors
	container   sandbox.ContainerSpec
	exec        sandbox.ExecSpec
	testsHost   string // the task's tests/ on the host
	testsMount  string // where they go in the container
	ownedDir    string // what the grader's user is given
	imageTests  bool   // the image owns /tests: set-up copies nothing
	uploads     []Upload
	rewardDir   string // TrialDir/verifier on the host
	rewardMount string // the reward dir in the container
	logPath     string
	owner       sandbox.Owner
	// Harbor: the work dir is given to workDirUser before the verifier
	// runs and handed back to owner afterwards (see Request.WorkDirUser).
	giveWorkDir  bool
	workDirMount string
	workDirUser  string
	// live: the grade runs in the agent's own container (RunLive), whose
	// reward dir is copied out, not mounted.
	live bool
	// testsDirs: a live grade's host dirs for /tests, in order.
	testsDirs []string
	trace     string   // the tracer's executable on the host; "": no trace
	empty     []string // files emptied before the grader runs (Request.Empty)
}

// harborCommand is Harbor's verifier command; its exit code is ignored.
const harborCommand = "chmod +x /tests/test.sh && /tests/test.sh > /logs/verifier/test-stdout.txt 2>&1"

func newPlan(req Request) (*plan, error) {
	if err := checkRequest(req); err != nil {
		return nil, err
	}
	p := &plan{
		native:    req.native(),
		what:      req.Task.ID,
		testsHost: req.Task.Path("tests"),
		rewardDir: filepath.Join(req.TrialDir, RewardDir),
		logPath:   filepath.Join(req.TrialDir, LogFile),
		owner:     req.Owner,
		trace:     req.Trace,
		empty:     req.Empty,
	}
	if req.TrialID != "" {
		p.what = req.TrialID
	}
	p.container = sandbox.ContainerSpec{
		Image:       req.Image,
		Name:        "grade-" + p.what,
		RunID:       req.RunID,
		TrialID:     req.TrialID,
		Labels:      map[string]string{sandbox.LabelPhase: "grade"},
		User:        req.User,
		NanoCPUs:    req.NanoCPUs,
		MemoryBytes: req.MemoryBytes,
	}
	p.exec = sandbox.ExecSpec{
		User:       req.User,
		StdoutPath: p.logPath,
		Timeout:    req.Timeout,
		Filter:     logFilter(req.Mask),
	}
	p.container.Service = req.Service
	if p.native {
		p.nativePlan(req)
	} else {
		p.harborPlan(req, req.harbor())
	}
	return p, nil
}

// nativePlan: the pristine task image, no network (but the trial's
// services', which has no route out, for a multi-container task), the work dir read-only,
// the tests and the command in NativeTaskDir, the reward in NativeRewardDir.
func (p *plan) nativePlan(req Request) {
	p.testsMount = path.Join(NativeTaskDir, "tests")
	p.ownedDir = NativeTaskDir
	p.rewardMount = NativeRewardDir
	p.container.Network = false
	p.container.Workdir = NativeTaskDir
	p.container.Mounts = []sandbox.Mount{
		{HostPath: req.WorkDir, ContainerPath: req.ContainerWorkDir, ReadOnly: true},
		{HostPath: p.rewardDir, ContainerPath: NativeRewardDir},
	}
	p.exec.Cmd = []string{"bash", "-c", req.Task.GraderCommand()}
	p.exec.Workdir = NativeTaskDir
	p.exec.Env = append(withoutKeys(req.Env, "FLIGHTDECK_WORKDIR", "FLIGHTDECK_REWARD_DIR"),
		"FLIGHTDECK_WORKDIR="+req.ContainerWorkDir,
		"FLIGHTDECK_REWARD_DIR="+NativeRewardDir)
}

// harborPlan: the agent's snapshot, network as the task decides, tests at
// /tests (cleared first), a fresh /logs/verifier, test.sh run in the work
// dir. The work dir, when the agent had it bind-mounted (and so the
// snapshot lacks it), is mounted read-write as the agent had it.
func (p *plan) harborPlan(req Request, hv HarborVerifier) {
	p.testsMount = HarborTestsDir
	p.ownedDir = HarborTestsDir
	p.rewardMount = HarborVerifierDir
	p.imageTests, p.uploads, p.testsDirs = hv.ImageTests, hv.Uploads, hv.TestsDirs
	p.container.Network = hv.Network
	p.container.NetworkOf = hv.NetworkOf
	p.container.KeepEntrypoint = hv.KeepEntrypoint
	p.container.NoInit = hv.KeepEntrypoint
	p.container.Workdir = req.ContainerWorkDir
	p.container.Env = req.Env
	if req.WorkDir != "" {
		p.container.Mounts = append(p.container.Mounts,
			sandbox.Mount{HostPath: req.WorkDir, ContainerPath: req.ContainerWorkDir})
		p.workDirMount = req.ContainerWorkDir
		p.workDirUser = hv.WorkDirUser
		p.giveWorkDir = req.Owner.UID != 0
	}
	p.container.Mounts = append(p.container.Mounts, hv.Mounts...)
	p.container.Mounts = append(p.container.Mounts,
		sandbox.Mount{HostPath: p.rewardDir, ContainerPath: HarborVerifierDir})
	p.exec.Cmd = []string{"bash", "-c", harborCommand}
	p.exec.Workdir = req.ContainerWorkDir
	p.exec.Env = req.Env
}

func checkRequest(req Request) error {
	var errs []string
	if req.Task == nil {
		return errors.New("grade: no task")
	}
	if req.Image == "" {
		errs = append(errs, "no image")
	}
	if req.TrialDir == "" {
		errs = append(errs, "no trial dir")
	}
	if req.Timeout < 0 {
		errs = append(errs, "a negative timeout")
	}
	if req.native() {
		switch {
		case req.WorkDir == "":
			errs = append(errs, "no work dir")
		case !path.IsAbs(req.ContainerWorkDir):
			errs = append(errs, fmt.Sprintf("container work dir %q is not absolute", req.ContainerWorkDir))
		case overlaps(req.ContainerWorkDir, "/flightdeck"):
			errs = append(errs, fmt.Sprintf("container work dir %q overlaps /flightdeck, where the grader's files go", req.ContainerWorkDir))
		}
	} else if req.WorkDir != "" && !path.IsAbs(req.ContainerWorkDir) {
		errs = append(errs, fmt.Sprintf("container work dir %q is not absolute", req.ContainerWorkDir))
	}
	if len(errs) > 0 {
		return fmt.Errorf("grade %s: %s", req.Task.ID, strings.Join(errs, "; "))
	}
	return nil
}

// overlaps reports whether one of two absolute paths contains the other.
func overlaps(a, b string) bool {
	a, b = path.Clean(a), path.Clean(b)
	within := func(x, dir string) bool { return x == dir || dir == "/" || strings.HasPrefix(x, dir+"/") }
	return within(a, b) || within(b, a)
}

// withoutKeys drops env entries for keys.
func withoutKeys(env []string, keys ...string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, key := range keys {
			drop = drop || k == key
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return out
}

// logFilter writes grader.log as it comes without escape sequences, then
// through mask (the run's secrets masked) when there is one: the stripping
// comes first, since a sequence inside a secret would hide it from a mask.
func logFilter(mask sandbox.OutputFilter) sandbox.OutputFilter {
	if mask == nil {
		return nil
	}
	return func(w io.Writer) io.WriteCloser {
		m := mask(w)
		return strippedWriter{Writer: text.NewANSIStripper(m), Closer: m}
	}
}

// strippedWriter writes through a stripper and closes the mask behind it.
type strippedWriter struct {
	io.Writer
	io.Closer
}
