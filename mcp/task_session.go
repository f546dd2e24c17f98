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
const tasksCapability = `{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`

// maxTasksPage is how many tasks one tasks/list page holds.
const maxTasksPage = 100

// sessionOwner is the owner of a session's tasks in the route's store.
func sessionOwner(s *session) string { return "session " + s.id }

// taskParams reads params.task of a tools/call: its ttl (0 when absent),
// and whether the request asks for a task at all.
func taskParams(params []byte) (ttl time.Duration, ok bool) {
	v, found := member(params, "task")
	if !found || kindOf(v) != '{' {
		return 0, false
	}
	if n, found := member(v, "ttl"); found {
		if ms, err := strconv.ParseInt(string(trimSpace(n)), 10, 64); err == nil && ms > 0 {
			ttl = time.Duration(ms) * time.Millisecond
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
	return &taskStart{
		h: h, owner: sessionOwner(s), started: make(chan struct{}),
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
		t.endLocked(taskCancelled, nil, now())
		t.cancel(errTaskCancelled)
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
		res := t.outcome
		if _, ok := member(res, "_meta"); ok || len(res) < 2 {
			return appendResult(dst, id, res)
		}
		dst = appendResult(dst, id, nil)
		dst = dst[:len(dst)-1]
		dst = append(dst, `{"_meta":{"io.modelcontextprotocol/related-task":{"taskId":`...)
		dst = appendString(dst, t.id)
		dst = append(dst, "}}"...)
		if inner := trimSpace(res[1:]); len(inner) > 0 && inner[0] != '}' {
			dst = append(dst, ',')
		}
		dst = append(dst, trimSpace(res[1:])...)
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

// appendWithKey appends the object obj with key: value added, unless obj has
// key already.
func appendWithKey(dst, obj []byte, key, value string) []byte {
	if _, ok := member(obj, key); ok {
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

// relatedTask returns params with _meta "io.modelcontextprotocol/related-task"
// naming task id, unless params has a _meta already.
func relatedTask(params []byte, id string) []byte {
	if len(params) == 0 {
		params = emptyObject
	}
	meta := appendString([]byte(`{"io.modelcontextprotocol/related-task":{"taskId":`), id)
	return appendWithKey(nil, trimSpace(params), "_meta", string(append(meta, "}}"...)))
}

// waiting marks t input_required while its call waits for answers from
// the client, and returns what marks it working again.
func (s *taskStore) waiting(t *task) (done func()) {
	s.mu.Lock()
	if !t.state.terminal() {
		t.setStateLocked(taskInputRequired, now())
	}
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		if !t.state.terminal() {
			t.setStateLocked(taskWorking, now())
		}
		s.mu.Unlock()
	}
}
