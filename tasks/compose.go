package tasks

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
)

// MainService is the compose service that is the task's own container:
// the agent works and the verifier runs in it.
const MainService = "main"

// Compose is a multi-container task's environment/docker-compose.yaml,
// layered as Harbor layers it: a base file defining main (the task image,
// the keep-alive command) first, the task's file over it.
type Compose struct {
	File string // the task's compose file, absolute
	// Main is what the task's file says of main: its environment, the
	// services it waits for, its volumes, a command or entrypoint of its own.
	Main ComposeService
	// Services are the other services, each after those it depends on.
	Services []ComposeService
	// Volumes are the named volumes the file declares, made per trial.
	Volumes []string
}

// ComposeService is one service, as flightdeck runs it.
type ComposeService struct {
	Name        string
	Image       string        // image: reference; "" when built
	Build       *ComposeBuild // build:; nil when Image is used
	Entrypoint  []string      // nil: the image's
	Command     []string      // nil: the image's (main: the keep-alive)
	Env         []string      // KEY=value, sorted
	Workdir     string
	User        string
	Hostname    string
	Init        bool
	Aliases     []string // the names others find it by, besides its own
	Healthcheck *ComposeHealthcheck
	DependsOn   []ComposeDependency
	Volumes     []ComposeVolume
	Tmpfs       []string
}

// ComposeBuild is a service built from a Dockerfile inside the task.
type ComposeBuild struct {
	Context    string            // absolute, inside the task directory
	Dockerfile string            // relative to Context
	Args       map[string]string // build.args; one given without a value takes the task's env's
	Target     string            // build.target: the stage to build
}

// ComposeHealthcheck is a service's healthcheck.
type ComposeHealthcheck struct {
	Test        []string // "CMD", args... or "CMD-SHELL", command; "NONE"
	Interval    time.Duration
	Timeout     time.Duration
	StartPeriod time.Duration
	Retries     int
}

// ComposeDependency is one entry of depends_on.
type ComposeDependency struct {
	Service   string
	Condition string // service_started, service_healthy, service_completed_successfully
}

// ComposeVolume mounts a named volume, a path of the task's read-only, or
// one of the trial's own log dirs.
type ComposeVolume struct {
	Volume   string // a named volume of Compose.Volumes; "" for a bind
	HostPath string // a bind's source: absolute, inside the task directory
	// TrialLogs is, for a bind of ${HOST_ARTIFACTS_PATH} or
	// ${HOST_AGENT_LOGS_PATH}, the trial's log dir it names (a key of
	// ComposeLogDirs): bound from the trial's dir, writable, as Harbor
	// binds it.
	TrialLogs string
	Target    string
	ReadOnly  bool
}

// ComposeLogDirs are Harbor's log dirs a compose file may bind through its
// HOST_<NAME>_PATH and ENV_<NAME>_PATH variables (the host's dir and the
// container's path): a sidecar shares the trial's artifacts with main
// through ${HOST_ARTIFACTS_PATH}:${ENV_ARTIFACTS_PATH}.
var ComposeLogDirs = map[string]string{"AGENT_LOGS": "/logs/agent", "ARTIFACTS": "/logs/artifacts", "VERIFIER_LOGS": "/logs/verifier"}

// trialLogsRoot is what HOST_<NAME>_PATH holds while the file loads: the
// trial's dir is not known yet, so a bind of it is recognised by this root
// and bound to the trial's own dir when the trial starts.
const trialLogsRoot = "/flightdeck-trial-logs"

// The dependency conditions compose knows.
const (
	ConditionStarted   = "service_started"
	ConditionHealthy   = "service_healthy"
	ConditionCompleted = "service_completed_successfully"
)

// ComposePath is the task's compose file, or "" for a single-container task.
func (t *Task) ComposePath() string {
	p := t.Path(EnvironmentDir, composeFile)
	if fileExists(p) {
		return p
	}
	return ""
}

// composeBase is Harbor's base layer for main, which the task's file
// overrides: the task image with the keep-alive as its command.
const composeBase = `services:
  main:
    image: ${MAIN_IMAGE_NAME}
    command: ["sleep", "infinity"]
`

// LoadCompose loads the task's compose file, interpolating env (the task's
// [environment].env, resolved) and the variables Harbor sets for it
// (CONTEXT_DIR, MAIN_IMAGE_NAME). Nothing else of the host's environment
// reaches it. An error names the file and, where it can, the service and
// the key; so do the keys flightdeck refuses.
func (t *Task) LoadCompose(env map[string]string) (*Compose, error) {
	path := t.ComposePath()
	if path == "" {
		return nil, nil
	}
	c, issues, err := loadCompose(t.Dir, path, env, t.composeInfraVars())
	if err != nil {
		return nil, err
	}
	if len(issues) > 0 {
		return nil, fmt.Errorf("%s: %s", path, issues[0].message)
	}
	return c, nil
}

// composeInfraVars are the variables Harbor sets for the compose file from
// the task's resources (CPUS, MEMORY), besides those of every file.
func (t *Task) composeInfraVars() map[string]string {
	vars := map[string]string{}
	if c := t.Config.Environment.CPUs; c > 0 {
		vars["CPUS"] = strconv.FormatFloat(c, 'f', -1, 64)
	}
	if b, err := t.MemoryBytes(); err == nil && b > 0 {
		vars["MEMORY"] = fmt.Sprintf("%dM", b>>20)
	}
	return vars
}

// loadCompose loads and converts a compose file, listing what flightdeck
// refuses in it as issues. Its variables are env (the task's) under
// Harbor's own (infra and those of every file: CONTEXT_DIR,
// MAIN_IMAGE_NAME, the log dirs' HOST_/ENV_ paths), which take precedence
// as Harbor's do.
func loadCompose(taskDir, path string, env, infra map[string]string) (*Compose, []issue, error) {
	content, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	envDir := filepath.Dir(path)
	vars := maps.Clone(env)
	if vars == nil {
		vars = map[string]string{}
	}
	maps.Copy(vars, infra)
	vars["CONTEXT_DIR"], vars["MAIN_IMAGE_NAME"] = envDir, "flightdeck-main"
	for name, target := range ComposeLogDirs {
		vars["HOST_"+name+"_PATH"], vars["ENV_"+name+"_PATH"] = trialLogsRoot+"/"+name, target
	}
	details := types.ConfigDetails{
		WorkingDir: envDir,
		ConfigFiles: []types.ConfigFile{
			{Filename: filepath.Join(envDir, "flightdeck-base.yaml"), Content: []byte(composeBase)},
			{Filename: path, Content: content},
		},
		Environment: vars,
	}
	project, err := loader.LoadWithContext(context.Background(), details, func(o *loader.Options) {
		o.SetProjectName("flightdeck", true)
		// Only the variables given: an unset one is empty, quietly (the
		// loader would log a warning to the process's stderr).
		o.Interpolate.LookupValue = func(k string) (string, bool) { return vars[k], true }
	})
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	rel, _ := filepath.Rel(taskDir, path)
	cv := composeConverter{taskDir: taskDir, file: filepath.ToSlash(rel), vars: vars, secrets: project.Secrets, configs: project.Configs}
	c := &Compose{File: path}
	for name, vol := range project.Volumes {
		if vol.External {
			cv.refuse(name, "volumes.external", "an external volume is not the trial's: each trial gets its own volumes")
		}
		c.Volumes = append(c.Volumes, name)
	}
	sort.Strings(c.Volumes)
	for name := range project.Networks {
		if n := project.Networks[name]; n.External {
			cv.refuse(name, "networks.external", "an external network is not the trial's: each trial's services share one private network")
		}
	}
	byName := map[string]ComposeService{}
	for _, s := range project.Services {
		byName[s.Name] = cv.service(s)
	}
	c.Main = byName[MainService]
	order, err := dependencyOrder(project.Services)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, name := range order {
		if name != MainService {
			c.Services = append(c.Services, byName[name])
		}
	}
	for _, s := range project.Services {
		for _, dep := range slices.Sorted(mapKeys(s.DependsOn)) {
			if dep == MainService {
				cv.refuse(s.Name, "depends_on", "a service cannot wait for main: main starts last, once the services it needs are up")
			}
			// compose-go refuses a condition it does not know.
			if s.DependsOn[dep].Condition == ConditionHealthy {
				// compose refuses to wait for the health of a service
				// that has none; so does flightdeck, before anything runs.
				if d, ok := project.Services[dep]; ok && (d.HealthCheck == nil || d.HealthCheck.Disable || len(d.HealthCheck.Test) == 0) &&
					!imageHealthcheck(d) {
					cv.refuse(s.Name, "depends_on."+dep+".condition", fmt.Sprintf("%s, but service %q has no healthcheck: "+
						"give it one (healthcheck: in the compose file) or wait for %s", ConditionHealthy, dep, ConditionStarted))
				}
			}
		}
	}
	return c, cv.issues, nil
}

// composeConverter turns compose-go's services into flightdeck's, noting
// what it refuses.
type composeConverter struct {
	taskDir string
	file    string
	vars    map[string]string // the variables the file was loaded with
	secrets types.Secrets     // the file's top-level secrets and configs
	configs types.Configs
	issues  []issue
}

func (cv *composeConverter) refuse(service, key, why string) {
	cv.issues = append(cv.issues, issue{file: cv.file, field: "services." + service + "." + key, rule: "compose." + strings.Split(key, ".")[0],
		message: fmt.Sprintf("service %q: %s: %s", service, key, why)})
}

// service converts one service, refusing what would reach past the trial:
// the host's ports, paths, devices, namespaces or privileges.
func (cv *composeConverter) service(s types.ServiceConfig) ComposeService {
	cv.refusals(s)
	out := ComposeService{
		Name: s.Name, Image: s.Image, Workdir: s.WorkingDir, User: s.User, Hostname: s.Hostname,
		Entrypoint: s.Entrypoint, Command: s.Command, Init: s.Init != nil && *s.Init, Tmpfs: s.Tmpfs,
	}
	if s.Build != nil {
		out.Image = ""
		out.Build = cv.build(s)
	}
	for k, v := range s.Environment {
		if v != nil {
			out.Env = append(out.Env, k+"="+*v)
		}
	}
	sort.Strings(out.Env)
	for _, n := range s.Networks {
		if n != nil {
			out.Aliases = append(out.Aliases, n.Aliases...)
		}
	}
	if s.ContainerName != "" {
		out.Aliases = append(out.Aliases, s.ContainerName)
	}
	if hc := s.HealthCheck; hc != nil {
		out.Healthcheck = healthcheck(hc)
	}
	for _, dep := range slices.Sorted(mapKeys(s.DependsOn)) {
		cond := s.DependsOn[dep].Condition
		if cond == "" {
			cond = ConditionStarted
		}
		out.DependsOn = append(out.DependsOn, ComposeDependency{Service: dep, Condition: cond})
	}
	for _, v := range s.Volumes {
		if m, ok := cv.volume(s.Name, v); ok {
			out.Volumes = append(out.Volumes, m)
		}
	}
	for _, sec := range s.Secrets {
		if m, ok := cv.fileObject(s.Name, "secrets", types.FileObjectConfig(cv.secrets[sec.Source]), sec.Source, sec.Target, "/run/secrets/"); ok {
			out.Volumes = append(out.Volumes, m)
		}
	}
	for _, c := range s.Configs {
		if m, ok := cv.fileObject(s.Name, "configs", types.FileObjectConfig(cv.configs[c.Source]), c.Source, c.Target, "/"); ok {
			out.Volumes = append(out.Volumes, m)
		}
	}
	return out
}

// fileObject mounts a secret or config from a file of the task, read-only,
// where compose mounts it: at its target, a relative one (or the name, when
// it has none) under dir. One from the environment, inline content or
// outside the trial is refused.
func (cv *composeConverter) fileObject(service, key string, def types.FileObjectConfig, name, target, dir string) (ComposeVolume, bool) {
	switch {
	case def.Name == "" && def.File == "" && def.Environment == "" && def.Content == "" && !bool(def.External):
		cv.refuse(service, key, fmt.Sprintf("%q is not declared at the top level", name))
		return ComposeVolume{}, false
	case bool(def.External):
		cv.refuse(service, key, fmt.Sprintf("%q is external: a trial gets only what its task holds", name))
		return ComposeVolume{}, false
	case def.File == "":
		cv.refuse(service, key, fmt.Sprintf("%q: only a file of the task is supported (not environment or content)", name))
		return ComposeVolume{}, false
	case !cv.inside(def.File):
		cv.refuse(service, key, fmt.Sprintf("%q: %s is outside the task directory", name, def.File))
		return ComposeVolume{}, false
	}
	if target == "" {
		target = name
	}
	if !path.IsAbs(target) {
		target = dir + target
	}
	return ComposeVolume{HostPath: def.File, Target: target, ReadOnly: true}, true
}

func (cv *composeConverter) refusals(s types.ServiceConfig) {
	host := func(key, v string) {
		if v != "" && v != "private" && v != "shareable" {
			cv.refuse(s.Name, key, fmt.Sprintf("%q shares a namespace beyond the trial", v))
		}
	}
	switch {
	case s.Privileged:
		cv.refuse(s.Name, "privileged", "a privileged container can reach the host")
	case len(s.CapAdd) > 0:
		cv.refuse(s.Name, "cap_add", "extra capabilities reach past the container")
	case len(s.Devices) > 0:
		cv.refuse(s.Name, "devices", "the host's devices are not the trial's")
	case len(s.Gpus) > 0 || (s.Deploy != nil && s.Deploy.Resources.Reservations != nil && len(s.Deploy.Resources.Reservations.Devices) > 0):
		cv.refuse(s.Name, "gpus", "GPUs are not supported: flightdeck runs tasks on local engines without GPUs")
	case s.NetworkMode != "":
		cv.refuse(s.Name, "network_mode", fmt.Sprintf("%q: every service of a trial is on the trial's own network", s.NetworkMode))
	case len(s.SecurityOpt) > 0:
		cv.refuse(s.Name, "security_opt", "security options are flightdeck's to set")
	case len(s.VolumesFrom) > 0:
		cv.refuse(s.Name, "volumes_from", "use a named volume the file declares")
	case s.UserNSMode != "" || s.CgroupParent != "" || s.Runtime != "":
		cv.refuse(s.Name, "userns_mode/cgroup_parent/runtime", "these are the engine's settings, not a task's")
	}
	host("pid", s.Pid)
	host("ipc", s.Ipc)
	for _, p := range s.Ports {
		if p.Published != "" {
			cv.refuse(s.Name, "ports", fmt.Sprintf("publishes host port %s: services reach each other on the trial's network, not through the host", p.Published))
			break
		}
	}
	if s.Build != nil && s.Build.DockerfileInline != "" {
		cv.refuse(s.Name, "build.dockerfile_inline", "inline Dockerfiles are not supported yet: give the service a Dockerfile of its own")
	}
}

// build is a service's build, its context inside the task.
func (cv *composeConverter) build(s types.ServiceConfig) *ComposeBuild {
	ctxDir := s.Build.Context
	if !cv.inside(ctxDir) {
		cv.refuse(s.Name, "build.context", fmt.Sprintf("%s is outside the task directory", ctxDir))
		return nil
	}
	df := s.Build.Dockerfile
	if df == "" {
		df = "Dockerfile"
	}
	if filepath.IsAbs(df) {
		rel, err := filepath.Rel(ctxDir, df)
		if err != nil || !filepath.IsLocal(rel) {
			cv.refuse(s.Name, "build.dockerfile", fmt.Sprintf("%s is outside the build context %s", df, ctxDir))
			return nil
		}
		df = rel
	}
	b := &ComposeBuild{Context: ctxDir, Dockerfile: df, Target: s.Build.Target}
	for k, v := range s.Build.Args {
		// A name without a value takes the variable's value where compose
		// runs (here: the task's env), and is left out when it has none.
		val, ok := cv.vars[k]
		if v != nil {
			val, ok = *v, true
		}
		if ok {
			if b.Args == nil {
				b.Args = map[string]string{}
			}
			b.Args[k] = val
		}
	}
	return b
}

// volume converts a mount: a named volume, or a bind of a path inside the
// task, read-only (a trial never changes the task's files).
func (cv *composeConverter) volume(service string, v types.ServiceVolumeConfig) (ComposeVolume, bool) {
	switch v.Type {
	case types.VolumeTypeVolume:
		if v.Source == "" {
			return ComposeVolume{}, false // anonymous: the image's VOLUME, made by the engine
		}
		return ComposeVolume{Volume: v.Source, Target: v.Target, ReadOnly: v.ReadOnly}, true
	case types.VolumeTypeBind:
		if name, ok := strings.CutPrefix(v.Source, trialLogsRoot+"/"); ok {
			return cv.trialLogs(service, name, v)
		}
		if !cv.inside(v.Source) {
			cv.refuse(service, "volumes", fmt.Sprintf("binds %s, outside the task directory", v.Source))
			return ComposeVolume{}, false
		}
		return ComposeVolume{HostPath: v.Source, Target: v.Target, ReadOnly: true}, true
	case types.VolumeTypeTmpfs:
		return ComposeVolume{}, false
	}
	cv.refuse(service, "volumes", fmt.Sprintf("a %q mount is not supported", v.Type))
	return ComposeVolume{}, false
}

// trialLogs converts a bind of a trial's log dir (${HOST_<NAME>_PATH}).
// The verifier's is refused: flightdeck's verifier writes to a
// /logs/verifier of its own, made anew before test.sh, which no service
// can share.
func (cv *composeConverter) trialLogs(service, name string, v types.ServiceVolumeConfig) (ComposeVolume, bool) {
	if _, ok := ComposeLogDirs[name]; !ok || strings.Contains(name, "/") {
		cv.refuse(service, "volumes", fmt.Sprintf("binds %s, not one of the trial's log dirs", v.Source))
		return ComposeVolume{}, false
	}
	if name == "VERIFIER_LOGS" {
		cv.refuse(service, "volumes", "binds ${HOST_VERIFIER_LOGS_PATH}: the verifier's /logs/verifier is made anew for it "+
			"and shared with no service; share files through ${HOST_ARTIFACTS_PATH} instead")
		return ComposeVolume{}, false
	}
	return ComposeVolume{TrialLogs: name, Target: v.Target, ReadOnly: v.ReadOnly}, true
}

func (cv *composeConverter) inside(p string) bool {
	rel, err := filepath.Rel(cv.taskDir, p)
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}

func healthcheck(hc *types.HealthCheckConfig) *ComposeHealthcheck {
	if hc.Disable {
		return &ComposeHealthcheck{Test: []string{"NONE"}}
	}
	out := &ComposeHealthcheck{Test: hc.Test}
	d := func(x *types.Duration) time.Duration {
		if x == nil {
			return 0
		}
		return time.Duration(*x)
	}
	out.Interval, out.Timeout, out.StartPeriod = d(hc.Interval), d(hc.Timeout), d(hc.StartPeriod)
	if hc.Retries != nil {
		out.Retries = int(*hc.Retries)
	}
	return out
}

// dependencyOrder lists the services so that each comes after those it
// depends on (by name among equals), refusing a cycle.
func dependencyOrder(services types.Services) ([]string, error) {
	var order []string
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(name string, path []string) error
	visit = func(name string, path []string) error {
		switch state[name] {
		case 1:
			return fmt.Errorf("depends_on makes a cycle: %s", strings.Join(append(path, name), " -> "))
		case 2:
			return nil
		}
		state[name] = 1
		s, ok := services[name]
		if !ok {
			return fmt.Errorf("depends_on names %q, which is not a service", name)
		}
		for _, dep := range slices.Sorted(mapKeys(s.DependsOn)) {
			if err := visit(dep, append(path, name)); err != nil {
				return err
			}
		}
		state[name] = 2
		order = append(order, name)
		return nil
	}
	for _, name := range slices.Sorted(mapKeys(services)) {
		if err := visit(name, nil); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// mapKeys iterates a map's keys, for slices.Sorted.
func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// imageHealthcheck reports whether a service may have a healthcheck from
// its image (a HEALTHCHECK in a Dockerfile it builds, or in an image it
// names, which cannot be read before the build): only a service built
// from a Dockerfile without HEALTHCHECK certainly has none.
func imageHealthcheck(s types.ServiceConfig) bool {
	if s.Build == nil {
		return true
	}
	dockerfile := s.Build.Dockerfile
	if dockerfile == "" {
		dockerfile = "Dockerfile"
	}
	if !filepath.IsAbs(dockerfile) {
		dockerfile = filepath.Join(s.Build.Context, dockerfile)
	}
	data, err := os.ReadFile(dockerfile)
	if err != nil {
		return true
	}
	return strings.Contains(strings.ToUpper(string(data)), "HEALTHCHECK")
}
