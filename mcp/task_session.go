package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// This file is the 2025-11-25 era's experimental tasks, on sessions: the
// client asks for a task (tools/call with params.task), and the call answers
// at once with {task} and runs on in its session, in its turn, as any call
// (its state lands). The client polls tasks/get, waits for the outcome with
// tasks/result, lists its tasks (tasks/list) and may cancel one
// (tasks/cancel). They share the route's task store with the 2026-07-28
// extension (task.go), bound to the session that made them.
//
// A task's requests to the client go on its session's GET channel, marked
// with the task's id (_meta "io.modelcontextprotocol/related-task"), the
// task input_required until they are answered; so do its
// notifications/tasks/status, at each change of status.

// tasksCapability is what initialize advertises of these tasks, on a
// 2025-11-25 session of a server with tools.
var tasksCapability = []byte(`{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`)

// maxTasksPage is how many tasks one tasks/list page holds.
const maxTasksPage = 100

// The owners of tasks in the route's store (task.owner) are sessions, OAuth
// subjects and the credentials an auth hook accepted (Handler.clientKey),
// each in a namespace of its own: no subject is a session.
const (
	sessionPrefix    = "session "
	subjectPrefix    = "subject "
	credentialPrefix = "credential "
)

// sessionOwner is the owner of a session's tasks.
func sessionOwner(s *session) string { return sessionPrefix + s.id }

// subjectOwner is the owner of the tasks of an OAuth subject ("" for none).
func subjectOwner(subject string) string {
	if subject == "" {
		return ""
	}
	return subjectPrefix + subject
}

// sessionQuota is the key a session's tasks count under (task.quota): its
// client's (clientKey: its subject, or its auth hook's credential), shared by
// the client's other sessions and its 2026-07-28 tasks; the session's own
// for an anonymous client.
func sessionQuota(s *session) string {
	if s.quota != "" {
		return s.quota
	}
	return sessionOwner(s)
}

// taskParams reads params.task of a tools/call: its ttl (0 when absent),
// and whether the request asks for a task at all.
func taskParams(params []byte) (ttl time.Duration, ok bool) {
	v, found := member(params, "task")
	if !found || kindOf(v) != '{' {
		return 0, false
	}
	if n, found := member(v, "ttl"); found {
		if ms, err := strconv.ParseInt(string(trimSpace(n)), 10, 64); err == nil && ms > 0 {
			// Cut before it is multiplied, which would wrap.
			ttl = time.Duration(min(ms, maxTaskTTL.Milliseconds())) * time.Millisecond
		}
	}
	return ttl, true
}

// sessionTaskStart returns what lets call j of s become the task its client
// asked for, or nil when it did not ask (or cannot have one: a version
// before 2025-11-25, a server without tools).
func (h *Handler) sessionTaskStart(s *session, j *job) *taskStart {
	if j.msg.method != methodToolsCall || s.version != latestVersion || !s.sc.has.Tools {
		return nil
	}
	ttl, ok := taskParams(j.msg.params)
	if !ok {
		return nil
	}
	s.tasked.Store(true)
	return &taskStart{
		h: h, owner: sessionOwner(s), quota: sessionQuota(s), started: make(chan struct{}),
		asked: true, ttl: ttl,
		// Its changes of status go where its requests to the client do.
		notify: s.Deliver,
		// tasks/cancel interrupts the call as notifications/cancelled
		// would: its state does not land.
		cancel: func(error) {
			s.mu.Lock()
			cancel := j.cancel
			s.mu.Unlock()
			if cancel != nil {
				cancel()
			}
		},
		answer: func(fields []byte) {
			// Its requests to the client wait as long as the task may,
			// not as long as the caller did.
			j.out.deadline = time.Time{}
			b := getBuf()
			*b = appendResult(*b, j.msg.id, nil)
			*b = (*b)[:len(*b)-1]
			*b = append(*b, `{"task":`...)
			*b = append(*b, fields...)
			*b = append(*b, "}}"...)
			j.rp.finish(b)
		},
	}
}

// taskOver records the outcome of a call that became a task, as dispatch
// returned it; it reports whether the call was one.
func (h *Handler) taskOver(call *Call, out []byte, err error) bool {
	ts := call.tasks
	if ts == nil || ts.t == nil {
		return false
	}
	h.tasks.finish(ts.t, out, err, nil, h.closing.Err() != nil)
	return true
}

// serveSessionTask answers tasks/get, tasks/result, tasks/list and
// tasks/cancel on session s, without its queue: a task's own call may hold
// the session's turn for minutes.
func (h *Handler) serveSessionTask(w http.ResponseWriter, r *http.Request, s *session, m *message, acc accept) {
	start := time.Now()
	if s.version != latestVersion || !s.sc.has.Tools {
		h.observeError(start, m, CodeMethodNotFound)
		h.writeAnswerError(w, acc, m.id, CodeMethodNotFound, msgMethodNotFound)
		return
	}
	s.touch()
	b := getBuf()
	defer putBuf(b)
	*b = h.sessionTaskAnswer(r.Context(), *b, s, m)
	h.observe(start, m, nil, *b, nil)
	h.writeAnswer(w, acc, *b)
	s.touch()
}

// sessionTaskAnswer appends the answer of a tasks request of session s.
func (h *Handler) sessionTaskAnswer(ctx context.Context, dst []byte, s *session, m *message) []byte {
	owner, st := sessionOwner(s), &h.tasks
	if m.method == methodTasksList {
		offset, ok := parseCursor(m.params)
		if !ok {
			return appendError(dst, m.id, CodeInvalidParams, msgInvalidCursor, nil)
		}
		return st.appendList(dst, m.id, owner, offset)
	}
	id, ok := stringMember(m.params, "taskId")
	if !ok {
		return appendError(dst, m.id, CodeInvalidParams, "Invalid params: missing taskId", nil)
	}
	st.mu.Lock()
	t := st.getLocked(id, owner)
	if t == nil {
		st.mu.Unlock()
		return appendError(dst, m.id, CodeInvalidParams, "Invalid params: unknown taskId", nil)
	}
	switch m.method {
	case methodTasksCancel:
		if t.state.terminal() {
			st.mu.Unlock()
			return appendError(dst, m.id, CodeInvalidParams, "Invalid params: the task is "+taskStateNames[t.state]+" already", nil)
		}
		t.cancelLocked(errTaskCancelled)
	case methodTasksResult:
		done := t.done
		st.mu.Unlock()
		select { // the outcome, once there is one
		case <-done:
		case <-ctx.Done():
			return appendError(dst, m.id, CodeInternalError, "Request cancelled", nil)
		case <-s.ended():
			return appendError(dst, m.id, CodeInternalError, msgSessionEnded, nil)
		case <-h.closing.Done():
			return appendError(dst, m.id, CodeInternalError, msgShuttingDown, nil)
		}
		st.mu.Lock()
		defer st.mu.Unlock()
		return appendTaskOutcome(dst, m.id, t)
	}
	defer st.mu.Unlock()
	dst = appendResult(dst, m.id, nil)
	dst = dst[:len(dst)-1]
	return append(appendTask2025(dst, t), '}')
}

// appendTaskOutcome appends what tasks/result answers for t, which is over:
// the call's result, marked as the task's, or its error.
func appendTaskOutcome(dst, id []byte, t *task) []byte {
	switch t.state {
	case taskCompleted:
		dst = appendResult(dst, id, nil)
		dst = dst[:len(dst)-1]
		dst = appendWithInner(dst, t.outcome, "_meta", metaRelatedTask, relatedTaskMark(t.id))
		return append(dst, '}')
	case taskFailed:
		var e struct {
			Code    int             `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		}
		if json.Unmarshal(t.outcome, &e) == nil {
			return appendErrorValue(dst, id, &Error{Code: e.Code, Message: e.Message, Data: e.Data})
		}
	}
	return appendError(dst, id, CodeInternalError, "The task was "+taskStateNames[t.state], nil)
}

// appendList appends a tasks/list page of owner's tasks from offset, oldest
// first.
func (s *taskStore) appendList(dst, id []byte, owner string, offset int) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	var mine []*task
	for _, t := range s.m {
		if t.owner == owner {
			mine = append(mine, t)
		}
	}
	slices.SortFunc(mine, func(a, b *task) int {
		if c := a.created.Compare(b.created); c != 0 {
			return c
		}
		return bytes.Compare([]byte(a.id), []byte(b.id))
	})
	dst = appendResult(dst, id, nil)
	dst = dst[:len(dst)-1]
	dst = append(dst, `{"tasks":[`...)
	end := min(offset+maxTasksPage, len(mine))
	for i := offset; i < end; i++ {
		if i > offset {
			dst = append(dst, ',')
		}
		dst = appendTask2025(dst, mine[i])
	}
	dst = append(dst, ']')
	if end < len(mine) {
		dst = append(dst, `,"nextCursor":"`...)
		dst = appendCursor(dst, end)
		dst = append(dst, '"')
	}
	return append(dst, "}}"...)
}

// metaRelatedTask is the _meta key that marks a message as a task's.
const metaRelatedTask = "io.modelcontextprotocol/related-task"

// relatedTaskMark is the value of metaRelatedTask for task id.
func relatedTaskMark(id string) []byte {
	return append(appendString([]byte(`{"taskId":`), id), '}')
}

// appendWithKey appends the object obj with key: value added, unless obj has
// key already (or is no object: then as it is).
func appendWithKey(dst, obj []byte, key string, value []byte) []byte {
	obj = trimSpace(obj)
	if _, ok := member(obj, key); ok || kindOf(obj) != '{' {
		return append(dst, obj...)
	}
	dst = append(dst, obj[:len(obj)-1]...)
	if len(trimSpace(obj[1:len(obj)-1])) > 0 {
		dst = append(dst, ',')
	}
	dst = appendString(dst, key)
	dst = append(dst, ':')
	dst = append(dst, value...)
	return append(dst, '}')
}

// appendWithInner appends the object obj with obj[key][inner] = value added:
// key made an object holding only it when obj lacks key; obj as it is when
// obj[key] has inner already, or either is no object.
func appendWithInner(dst, obj []byte, key, inner string, value []byte) []byte {
	obj = trimSpace(obj)
	outer, ok := member(obj, key)
	if !ok {
		v := appendString([]byte{'{'}, inner)
		v = append(append(append(v, ':'), value...), '}')
		return appendWithKey(dst, obj, key, v)
	}
	if _, ok := member(outer, inner); ok || kindOf(outer) != '{' || kindOf(obj) != '{' {
		return append(dst, obj...)
	}
	// Rare (the server set key itself): rebuilt, not spliced.
	var o, in map[string]json.RawMessage
	if json.Unmarshal(obj, &o) != nil || json.Unmarshal(outer, &in) != nil {
		return append(dst, obj...)
	}
	in[inner] = value
	o[key], _ = json.Marshal(in)
	b, _ := json.Marshal(o)
	return append(dst, b...)
}

// relatedTask returns params marked as task id's (_meta
// "io.modelcontextprotocol/related-task").
func relatedTask(params []byte, id string) []byte {
	if len(params) == 0 {
		params = emptyObject
	}
	return appendWithInner(nil, params, "_meta", metaRelatedTask, relatedTaskMark(id))
}

// waiting marks t input_required while its call waits for answers from
// the client, and returns what marks it working again once no request of
// its call waits (a Go server may ask several at once).
func (s *taskStore) waiting(t *task) (done func()) {
	s.mu.Lock()
	t.asking++
	if !t.state.terminal() {
		t.setStateLocked(taskInputRequired, now())
	}
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		if t.asking--; t.asking == 0 && !t.state.terminal() {
			t.setStateLocked(taskWorking, now())
		}
		s.mu.Unlock()
	}
}
