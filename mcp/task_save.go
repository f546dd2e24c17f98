package mcp

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/luamcp/luamcp/internal/logcap"
)

// Tasks across restarts. [Handler.Suspend] keeps the tasks that are over
// when the route has shut down, until their ttl: a running one is over by
// then, stopped by the shutdown and failed with "Server shutting down" (a
// client polling it learns so, rather than that its task is unknown). A
// session's go with it (SavedSession.Tasks); the route's others are
// [Handler.SavedTasks], for [Handler.ResumeTasks] in the later process.

// A SavedTask is what [Handler.Suspend] keeps of a task that was over.
type SavedTask struct {
	ID string `json:"id"`
	// Subject is the OAuth subject a route's task belongs to, Credential
	// the digest of the auth hook's credential it belongs to without one
	// ("" for none, and for a session's task, which belongs to its session).
	Subject    string    `json:"subject,omitempty"`
	Credential string    `json:"credential,omitempty"`
	Created    time.Time `json:"created"`
	Updated    time.Time `json:"updated"`
	TTLMs      int64     `json:"ttlMs"`
	PollMs     int64     `json:"pollMs"`
	// Status is completed, failed or cancelled; Outcome the result object
	// (completed) or the error object (failed).
	Status  string          `json:"status"`
	Outcome json.RawMessage `json:"outcome,omitempty"`
}

// saveLocked returns what Suspend keeps of t, which is over.
func (t *task) saveLocked() SavedTask {
	sv := SavedTask{
		ID: t.id, Created: t.created, Updated: t.updated, TTLMs: t.ttl.Milliseconds(), PollMs: t.poll.Milliseconds(),
		Status: taskStateNames[t.state], Outcome: t.outcome,
	}
	if sub, ok := strings.CutPrefix(t.owner, subjectPrefix); ok {
		sv.Subject = sub
	} else if c, ok := strings.CutPrefix(t.owner, credentialPrefix); ok {
		sv.Credential = c
	}
	return sv
}

// save returns the tasks of owner (a session's) or, with owner "", every
// task that is not a session's; each is over by now (Suspend stopped what
// ran), a task that is not left out.
func (s *taskStore) save(owner string) []SavedTask {
	s.mu.Lock()
	defer s.mu.Unlock()
	var saved []SavedTask
	for _, t := range s.m {
		mine := t.owner == owner
		if owner == "" {
			mine = !strings.HasPrefix(t.owner, sessionPrefix)
		}
		if mine && t.state.terminal() {
			saved = append(saved, t.saveLocked())
		}
	}
	return saved
}

// restore stores a task Suspend saved, for owner and counted under quota
// (task.owner, task.quota): over, its outcome kept until its ttl.
func (h *Handler) restore(sv *SavedTask, owner, quota string) error {
	st := taskCompleted
	for st <= taskCancelled && taskStateNames[st] != sv.Status {
		st++
	}
	ttl := time.Duration(sv.TTLMs) * time.Millisecond
	switch {
	case st > taskCancelled:
		return fmt.Errorf("status %q is not one a task ends with", sv.Status)
	case (st == taskCancelled) != (len(sv.Outcome) == 0) || (len(sv.Outcome) > 0 && (kindOf(sv.Outcome) != '{' || !json.Valid(sv.Outcome))):
		return fmt.Errorf("its outcome does not fit its status %s", sv.Status)
	case !h.hub.mintsTask(sv.ID):
		return fmt.Errorf("its id is not one this process mints (malformed, or another node's)")
	case sv.TTLMs <= 0 || ttl > maxTaskTTL:
		return fmt.Errorf("ttl %d ms is out of range", sv.TTLMs)
	case !now().Before(sv.Created.Add(ttl)):
		return errTaskExpired // its time is up: it is gone, as it would be here
	}
	t := &task{
		id: sv.ID, owner: owner, quota: quota, created: sv.Created, updated: sv.Updated,
		ttl: ttl, poll: max(time.Duration(sv.PollMs)*time.Millisecond, minTaskPoll),
		state: st, outcome: sv.Outcome, done: make(chan struct{}),
	}
	close(t.done)
	if !h.tasks.add(t) {
		return fmt.Errorf("the route holds as many tasks, or results, as it may keep")
	}
	return nil
}

// SavedTasks returns the tasks of the route, not a session's, that
// [Handler.Suspend] kept: over when it returned, they wait for their
// client until their ttl. Give them to [Handler.ResumeTasks] in the later
// process, with the sessions.
func (h *Handler) SavedTasks() []SavedTask {
	h.statelessMu.Lock()
	defer h.statelessMu.Unlock()
	return h.suspendedTasks
}

// ResumeTasks brings back the tasks [Handler.SavedTasks] returned, before
// the route serves. It returns how many it took; each that it did not is
// logged with why, but those whose ttl passed, which are simply gone.
func (h *Handler) ResumeTasks(saved []SavedTask) int {
	n := 0
	for i := range saved {
		sv := &saved[i]
		owner := subjectOwner(sv.Subject)
		if sv.Credential != "" {
			owner = credentialPrefix + sv.Credential
		}
		switch err := h.restore(sv, owner, owner); {
		case err == nil:
			n++
		case err != errTaskExpired:
			h.log.Warn("mcp: saved task not resumed", "task", sv.ID, "err", err)
		}
	}
	return n
}

// resumeTasks brings back the tasks of session s, which resumed.
func (h *Handler) resumeTasks(s *session, saved []SavedTask) {
	if len(saved) == 0 {
		return
	}
	s.tasked.Store(true)
	owner, quota := sessionOwner(s), sessionQuota(s)
	for i := range saved {
		if err := h.restore(&saved[i], owner, quota); err != nil && err != errTaskExpired {
			h.log.Warn("mcp: saved task not resumed", "session", logcap.Session(s.id), "task", saved[i].ID, "err", err)
		}
	}
}

// mintsTask reports whether id has the form of the task ids this hub mints
// (newTaskID).
func (h *Hub) mintsTask(id string) bool {
	if h.cluster != nil {
		node, rest, ok := strings.Cut(id, ".")
		if !ok || node != h.cluster.NodeID() {
			return false
		}
		id = rest
	}
	if len(id) != taskIDChars {
		return false
	}
	for _, c := range []byte(id) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
