package trial

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/flightdeck/flightdeck/grader"
	"github.com/flightdeck/flightdeck/runner/agent"
	"github.com/flightdeck/flightdeck/runner/results"
	"github.com/flightdeck/flightdeck/tasks"
)

// The question channel's runner side (agent.AskDir says the protocol):
// a host dir under the trial's scratch, bind-mounted at agent.AskDir in
// the agent's container, which the runner polls. Only what the task's
// [flightdeck.agent] answers say ever goes back: a question is read as
// text, matched, and answered by a file the runner writes; nothing the
// agent names is opened on the host but regular files in that dir,
// never through a link.

// defaultQuestionBound is the most questions a trial may ask when the
// task sets no max_turns.
const defaultQuestionBound = 20

// askPoll is how often the runner looks for a new question.
const askPoll = 50 * time.Millisecond

// questionName is a question's file name: NAME.q.
var questionName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}\.q$`)

// mailbox is a trial's question channel.
type mailbox struct {
	dir     string
	answers []tasks.Answer
	bound   int

	mu    sync.Mutex
	seen  map[string]bool
	asked []results.Exchange
	needs *results.NeedsInput
}

// newMailbox makes the channel's dir. Every trial of a flightdeck-native
// task has one, answers or none: an agent that asks in a task with no
// answers gets needs_input at once instead of waiting for its timeout.
// Any user the agent runs as may write it; the run's private work dir
// keeps others out.
func newMailbox(task *tasks.Task, scratch string) (*mailbox, error) {
	fd := task.Config.Flightdeck
	m := &mailbox{dir: filepath.Join(scratch, "ask"), bound: defaultQuestionBound, seen: map[string]bool{}}
	if fd.Agent != nil {
		m.answers = fd.Agent.Answers
	}
	if fd.MaxTurns > 0 {
		m.bound = fd.MaxTurns
	}
	if err := os.MkdirAll(m.dir, 0o777); err != nil {
		return nil, fmt.Errorf("make the question channel: %w", err)
	}
	if err := os.Chmod(m.dir, 0o777); err != nil {
		return nil, fmt.Errorf("make the question channel: %w", err)
	}
	return m, nil
}

// watch answers questions until ctx ends or one needs input; then it calls
// stop, which ends the agent's phase.
func (m *mailbox) watch(ctx context.Context, stop func()) {
	tick := time.NewTicker(askPoll)
	defer tick.Stop()
	for {
		if m.poll() {
			stop()
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// poll answers the questions asked since the last poll, in order (a
// shorter name first, so 2.q before 10.q), and reports whether one needs
// input: the first such question is the last one read.
func (m *mailbox) poll() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.needs != nil {
		return true
	}
	entries, err := os.ReadDir(m.dir)
	if err != nil {
		return false
	}
	var names []string
	for _, e := range entries {
		if questionName.MatchString(e.Name()) && !m.seen[e.Name()] {
			names = append(names, e.Name())
		}
	}
	slices.SortFunc(names, func(a, b string) int {
		if len(a) != len(b) {
			return len(a) - len(b)
		}
		return strings.Compare(a, b)
	})
	for _, name := range names {
		m.seen[name] = true
		id := strings.TrimSuffix(name, ".q")
		question, bad := readQuestion(filepath.Join(m.dir, name))
		n, now := len(m.asked)+1, time.Now().UTC()
		needs := func(reason string) *results.NeedsInput {
			return &results.NeedsInput{ID: id, Question: question, Asked: n, At: now, Reason: reason}
		}
		switch {
		case bad != "":
			m.needs = needs(bad)
		case n > m.bound:
			m.needs = needs(fmt.Sprintf("question %d, past the bound of %d (max_turns, else %d)", n, m.bound, defaultQuestionBound))
		default:
			reply, ok := m.match(question)
			if !ok && len(m.answers) == 0 {
				m.needs = needs("the task answers no questions (no [flightdeck.agent] answers)")
				break
			}
			if !ok {
				m.needs = needs("no answer of the task's matches it")
				break
			}
			if err := m.reply(id, reply); err != nil {
				m.needs = needs("the reply could not be written: " + err.Error())
				break
			}
			m.asked = append(m.asked, results.Exchange{ID: id, Question: question, Reply: reply, At: now})
		}
		if m.needs != nil {
			return true
		}
	}
	return false
}

// match is the reply of the first answer whose match the question
// contains, ignoring case. An answer may be given any number of times;
// the bound is on questions.
func (m *mailbox) match(question string) (string, bool) {
	q := strings.ToLower(question)
	for _, a := range m.answers {
		if strings.Contains(q, strings.ToLower(a.Match)) {
			return a.Reply, true
		}
	}
	return "", false
}

// reply writes NAME.a whole: a fresh file renamed over whatever has that
// name (a link is replaced, never followed).
func (m *mailbox) reply(id, reply string) error {
	f, err := os.CreateTemp(m.dir, ".reply-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(reply); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), filepath.Join(m.dir, id+".a"))
}

// readQuestion reads a question file as text, at most
// agent.MaxQuestionBytes of it; bad says why it is not a question.
func readQuestion(path string) (question, bad string) {
	// No link is followed and no FIFO waited for: a file the agent
	// made is read only if it is a regular file.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", "not a readable regular file"
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", "not a regular file"
	}
	buf := make([]byte, agent.MaxQuestionBytes+1)
	n, _ := f.Read(buf)
	for n < len(buf) {
		k, err := f.Read(buf[n:])
		n += k
		if err != nil || k == 0 {
			break
		}
	}
	data := buf[:n]
	if n > agent.MaxQuestionBytes {
		return "", fmt.Sprintf("longer than %d bytes", agent.MaxQuestionBytes)
	}
	if !utf8.Valid(data) || slices.Contains(data, 0) {
		return "", "not text (a question is UTF-8 without NUL bytes)"
	}
	return strings.TrimSpace(string(data)), ""
}

// result is what the channel saw, for the trial's result.
func (m *mailbox) result() ([]results.Exchange, *results.NeedsInput) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.asked), m.needs
}

// events are the exchanges as evidence: each question and its answer,
// then the question that needed input.
func (m *mailbox) events() []grader.Event {
	asked, needs := m.result()
	var out []grader.Event
	for _, x := range asked {
		out = append(out, grader.Event{Kind: grader.EventQuestion, Question: x.Question},
			grader.Event{Kind: grader.EventAnswer, Question: x.Question, Reply: x.Reply})
	}
	if needs != nil {
		out = append(out, grader.Event{Kind: grader.EventQuestion, Question: needs.Question})
	}
	return out
}
