package trial

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/runner/agent"
	"github.com/flightdeck/flightdeck/tasks"
)

func askTask(maxTurns int, answers ...tasks.Answer) *tasks.Task {
	t := &tasks.Task{}
	t.Config.Flightdeck.MaxTurns = maxTurns
	t.Config.Flightdeck.Agent = &tasks.AgentAnswers{Answers: answers}
	return t
}

// ask writes a question as the protocol says: a temporary name, renamed.
func ask(t *testing.T, dir, id, question string) {
	t.Helper()
	tmp := filepath.Join(dir, "."+id+".tmp")
	require.NoError(t, os.WriteFile(tmp, []byte(question), 0o644))
	require.NoError(t, os.Rename(tmp, filepath.Join(dir, id+".q")))
}

func reply(t *testing.T, dir, id string) (string, bool) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, id+".a"))
	if os.IsNotExist(err) {
		return "", false
	}
	require.NoError(t, err)
	return string(data), true
}

func TestMailboxAnswersFromTheTaskOnly(t *testing.T) {
	m, err := newMailbox(askTask(0, tasks.Answer{Match: "Which Format", Reply: "ISO 8601"}, tasks.Answer{Match: "format", Reply: "never reached"}), t.TempDir())
	require.NoError(t, err)
	fi, err := os.Stat(m.dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o777), fi.Mode().Perm(), "any user the agent runs as can ask")

	ask(t, m.dir, "1", "which format should dates use?")
	assert.False(t, m.poll())
	got, ok := reply(t, m.dir, "1")
	require.True(t, ok)
	assert.Equal(t, "ISO 8601", got, "the first match wins, ignoring case")
	ask(t, m.dir, "2", "Which FORMAT again?")
	assert.False(t, m.poll())
	got, _ = reply(t, m.dir, "2")
	assert.Equal(t, "ISO 8601", got, "an answer may be given again")

	ask(t, m.dir, "3", "may I read /etc/shadow?")
	assert.True(t, m.poll())
	_, ok = reply(t, m.dir, "3")
	assert.False(t, ok, "an unmatched question gets no reply")
	asked, needs := m.result()
	assert.Len(t, asked, 2)
	require.NotNil(t, needs)
	assert.Equal(t, "may I read /etc/shadow?", needs.Question)
	assert.Equal(t, 3, needs.Asked)
	assert.Contains(t, needs.Reason, "no answer")

	ev := m.events()
	kinds := []string{}
	for _, e := range ev {
		kinds = append(kinds, e.Kind)
	}
	assert.Equal(t, []string{grader.EventQuestion, grader.EventAnswer, grader.EventQuestion, grader.EventAnswer, grader.EventQuestion}, kinds)
}

// A task with no answers still has the channel: the first question needs
// input at once, saying the task answers none.
func TestMailboxWithoutAnswersNeedsInputAtOnce(t *testing.T) {
	m, err := newMailbox(&tasks.Task{}, t.TempDir())
	require.NoError(t, err)
	require.NotNil(t, m)
	assert.False(t, m.poll(), "no question yet")
	require.NoError(t, os.WriteFile(filepath.Join(m.dir, "x.q"), []byte("Which format?"), 0o644))
	assert.True(t, m.poll())
	_, needs := m.result()
	require.NotNil(t, needs)
	assert.Equal(t, "Which format?", needs.Question)
	assert.Contains(t, needs.Reason, "the task answers no questions")
	assert.NoFileExists(t, filepath.Join(m.dir, "x.a"))
}

// What an agent might try through the channel: each ends the agent's
// phase as needs-input, and nothing but the task's replies comes back.
func TestMailboxRefusesWhatIsNotAQuestion(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "host-secret")
	require.NoError(t, os.WriteFile(secret, []byte("host secret"), 0o644))
	cases := map[string]struct {
		plant  func(t *testing.T, dir string)
		reason string
	}{
		"a link to a host file": {func(t *testing.T, dir string) {
			require.NoError(t, os.Symlink(secret, filepath.Join(dir, "1.q")))
		}, "regular file"},
		"a huge question": {func(t *testing.T, dir string) {
			ask(t, dir, "1", "format? "+strings.Repeat("x", agent.MaxQuestionBytes))
		}, "longer than"},
		"a binary question": {func(t *testing.T, dir string) {
			ask(t, dir, "1", "format?\x00\xff\xfe")
		}, "not text"},
		"a FIFO": {func(t *testing.T, dir string) {
			require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "1.q"), 0o644))
		}, "regular file"},
		"a directory": {func(t *testing.T, dir string) {
			require.NoError(t, os.Mkdir(filepath.Join(dir, "1.q"), 0o755))
		}, "regular file"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m, err := newMailbox(askTask(0, tasks.Answer{Match: "format", Reply: "ISO"}), t.TempDir())
			require.NoError(t, err)
			tc.plant(t, m.dir)
			done := make(chan bool)
			go func() { done <- m.poll() }()
			select {
			case stop := <-done:
				assert.True(t, stop)
			case <-time.After(5 * time.Second):
				t.Fatal("the poll blocked")
			}
			_, needs := m.result()
			require.NotNil(t, needs)
			assert.Contains(t, needs.Reason, tc.reason)
			assert.NotContains(t, needs.Question, "host secret")
			_, ok := reply(t, m.dir, "1")
			assert.False(t, ok)
		})
	}
}

// Names that are not NAME.q are never read: a path in a name cannot be
// one, and a reply file the agent planted as a link is replaced, not
// written through.
func TestMailboxNamesAndReplies(t *testing.T) {
	m, err := newMailbox(askTask(0, tasks.Answer{Match: "format", Reply: "ISO"}), t.TempDir())
	require.NoError(t, err)
	outside := filepath.Join(t.TempDir(), "outside")
	require.NoError(t, os.WriteFile(outside, []byte("untouched"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(m.dir, "..q"), []byte("format?"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(m.dir, "a.b.q"), []byte("format?"), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(m.dir, "1.a")))
	ask(t, m.dir, "1", "format?")
	assert.False(t, m.poll())
	data, err := os.ReadFile(outside)
	require.NoError(t, err)
	assert.Equal(t, "untouched", string(data), "the reply replaced the link")
	fi, err := os.Lstat(filepath.Join(m.dir, "1.a"))
	require.NoError(t, err)
	assert.True(t, fi.Mode().IsRegular())
	asked, _ := m.result()
	assert.Len(t, asked, 1, "only 1.q is a question")
}

// A flood of questions stops at the bound: max_turns when set.
func TestMailboxBound(t *testing.T) {
	for _, tc := range []struct{ maxTurns, bound int }{{0, defaultQuestionBound}, {3, 3}} {
		t.Run(fmt.Sprint(tc.maxTurns), func(t *testing.T) {
			m, err := newMailbox(askTask(tc.maxTurns, tasks.Answer{Match: "format", Reply: "ISO"}), t.TempDir())
			require.NoError(t, err)
			for i := 1; i <= 1000; i++ {
				ask(t, m.dir, fmt.Sprint(i), "format?")
			}
			assert.True(t, m.poll())
			asked, needs := m.result()
			assert.Len(t, asked, tc.bound)
			require.NotNil(t, needs)
			assert.Equal(t, fmt.Sprint(tc.bound+1), needs.ID, "questions are taken in order: 2 before 10")
			assert.Contains(t, needs.Reason, "past the bound")
		})
	}
}

// watch ends the agent's phase as soon as a question needs input.
func TestMailboxWatchStops(t *testing.T) {
	m, err := newMailbox(askTask(0, tasks.Answer{Match: "format", Reply: "ISO"}), t.TempDir())
	require.NoError(t, err)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.watch(ctx, stop)
	}()
	ask(t, m.dir, "x", "what now?")
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the watch did not stop on an unmatched question")
	}
	assert.Error(t, ctx.Err(), "stop was called")
}
