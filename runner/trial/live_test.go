package trial

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/flightdeck/flightdeck/sandbox"
)

// A process is the agent's unless it is the container's main process or
// was listed as the container's own and started by then: a PID of the
// listing taken again later, by a process started after it, is the
// agent's; a listing that did not end is no listing.
func TestContainerProcessesLeftovers(t *testing.T) {
	// Booted at 1000 s; 100 ticks a second; the listing of the container's
	// own processes ended at 1050 s (cutoff).
	out := []byte("f /etc/x\x00P 10 4000\x00P 11 4900\x00K 100 60.5 1060.5\x00")
	c := parseProcesses(out)
	assert.True(t, c.listed)
	assert.Equal(t, []listedProcess{{10, 4000}, {11, 4900}}, c.procs)
	cutoff := time.Unix(1050, 0)
	before := []sandbox.Process{{PID: 10, Command: "runc init"}, {PID: 11, Command: "nginx"}}
	assert.Equal(t, leftoversNone, c.leftovers(10, before, cutoff), "the init and nginx, started at 1040 and 1049 s")
	assert.Equal(t, leftoversSome, c.leftovers(10, before[:1], cutoff), "a process not listed before")
	assert.Equal(t, leftoversSome, c.leftovers(10, before, time.Unix(1045, 0)), "PID 11 taken by a process started after the listing")
	assert.Equal(t, leftoversUnknown, parseProcesses([]byte("f /etc/x\x00P 10 4000\x00")).leftovers(10, before, cutoff))
	if assert.Len(t, parseChanges(out), 1, "the listing is no change") {
		assert.Equal(t, "/etc/x", parseChanges(out)[0].Path)
	}
}
