package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"maps"
	"strconv"
	"strings"
	"time"
)

// Kinds of object, in LabelKind.
const (
	KindContainer = "container"
	KindTaskImage = "task-image"
	KindSnapshot  = "snapshot"
	KindProbe     = "probe"
)

// ownedLabels are the labels of an object this process creates: the
// caller's extra labels first, so that flightdeck's own keys always win.
func (d *Docker) ownedLabels(kind, runID, trialID string, extra map[string]string) map[string]string {
	l := make(map[string]string, len(extra)+7)
	maps.Copy(l, extra)
	l[LabelManaged] = "true"
	l[LabelKind] = kind
	l[LabelOwnerHost] = d.host
	l[LabelOwnerPID] = strconv.Itoa(d.pid)
	l[LabelCreated] = time.Now().UTC().Format(time.RFC3339)
	if runID != "" {
		l[LabelRun] = runID
	}
	if trialID != "" {
		l[LabelTrial] = trialID
	}
	if d.opts.Test != "" && kind != KindTaskImage {
		l[LabelTest] = d.opts.Test
	}
	if d.keep.Load() && kind != KindTaskImage && kind != KindProbe {
		l[LabelKeep] = "true"
	}
	return l
}

// MarkKept marks everything this process creates from now on as kept on
// purpose (LabelKeep; a run with --keep): a later run's reap of orphans
// leaves it, a gc removes it.
func (d *Docker) MarkKept() { d.keep.Store(true) }

// randomHex returns n random bytes as hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// containerName makes a unique engine-valid name from a caller's hint.
func containerName(hint string) string {
	var b strings.Builder
	for _, r := range hint {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '.', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	name := strings.Trim(b.String(), "-_.")
	if len(name) > 100 {
		name = name[:100]
	}
	if name == "" {
		name = "flightdeck"
	}
	return name + "-" + randomHex(4)
}

// IsRootUser reports whether a container's user (a name, a uid, or
// user:group) is root; "" is taken as root, as the engine does.
func IsRootUser(user string) bool {
	name, _, _ := strings.Cut(user, ":")
	return name == "" || name == "root" || name == "0"
}
