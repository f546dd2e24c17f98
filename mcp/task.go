package mcp

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// This file is the 2026-07-28 era's tasks extension
// (io.modelcontextprotocol/tasks, SEP-2663): a tools/call that the server
// turns into a task is answered at once with resultType "task" and a taskId,
// and runs on in the background; the client polls tasks/get (which inlines
// the result or error once the task is over), answers the task's requests
// with tasks/update, and may stop it with tasks/cancel.
//
// The server decides: a tool declares execution.taskSupport "optional" or
// "required", and its handler calls [Outbound.StartTask] where the long work
// begins (the Lua contract's mcp.task). Until then the call is an ordinary
// one (it may ask the client in rounds, input_required); from then on the
// response is gone, and a request to the client parks the task in
// input_required until tasks/update answers it.
//
// Tasks live in the route's Handler (taskStore), bound to the OAuth subject
// that started them, bounded in number, and dropped at their ttlMs. They do
// not outlive the process: a shutdown stops the running ones. The 2025-11-25
// era's experimental tasks share the store (task_session.go).

// extTasks is the extension's name, under capabilities.extensions.
const extTasks = "io.modelcontextprotocol/tasks"

// Bounds of the tasks a route keeps, finished ones included (their results
// wait for the client until ttlMs): maxTasksPerOwner keeps one token subject
// from taking every place.
const (
	maxTasks         = 4096
	maxTasksPerOwner = maxTasks / 8
	defaultTaskTTL   = time.Hour
	maxTaskTTL       = 24 * time.Hour
	defaultTaskPoll  = 500 * time.Millisecond
	minTaskPoll      = 50 * time.Millisecond
)

// maxTaskOutcomes bounds the bytes of the results and errors a route's tasks
// keep together: a task whose outcome would go past it fails with
// errOutcomeNotKept instead: 64 MiB, or outcomesOverride.
func maxTaskOutcomes() int {
	if n := outcomesOverride.Load(); n != 0 {
		return int(n)
	}
	return 64 << 20
}

// outcomesOverride, when not 0, is maxTaskOutcomes (tests lower it; atomic,
// as the tasks of earlier tests may still finish).
var outcomesOverride atomic.Int64

// errOutcomeNotKept is the outcome of a task whose own did not fit.
var errOutcomeNotKept = &Error{Code: CodeInternalError,
	Message: "Internal error: the task's result was not kept (the route keeps 64 MiB of task results at most)"}

var (
	errTaskCancelled = errors.New("mcp: the task was cancelled")
	errTaskExpired   = errors.New("mcp: the task outlived its ttlMs")
)

// TaskOptions are what a server asks of a task it starts.
type TaskOptions struct {
	// TTL is how long after its creation the task, and then its result,
	// stays: 0 means an hour; longer than a day is cut to a day.
	TTL time.Duration
	// PollInterval is the interval the client is told to poll tasks/get at:
	// 0 means 500 ms; shorter than 50 ms is raised to 50 ms.
	PollInterval time.Duration
}

// TaskSupport is a tool's execution.taskSupport.
type TaskSupport uint8

const (
	TaskForbidden TaskSupport = iota // the default: the tool never runs as a task
	TaskOptional                     // the tool may run as a task
	TaskRequired                     // the tool runs as a task only
)

// ParseTaskSupport reads an execution.taskSupport value; anything else than
// "optional" or "required" is forbidden.
func ParseTaskSupport(s string) TaskSupport {
	switch s {
	case "optional":
		return TaskOptional
	case "required":
		return TaskRequired
	}
	return TaskForbidden
}

// taskState is a task's status. A task starts working; it is input_required
// from a request to the client (taskStore.await) until tasks/update has
// answered the round's last request (task.updateLocked), then working again;
// completed, failed and cancelled are terminal and final (endLocked).
type taskState uint8

const (
	taskWorking taskState = iota
	taskInputRequired
	taskCompleted
	taskFailed
	taskCancelled
)

var taskStateNames = [...]string{
	taskWorking:       "working",
	taskInputRequired: "input_required",
	taskCompleted:     "completed",
	taskFailed:        "failed",
	taskCancelled:     "cancelled",
}

func (s taskState) terminal() bool { return s >= taskCompleted }

// task is one task of a route.
type task struct {
	id string
	// owner is who may reach it: subjectOwner of the OAuth subject that
	// started it ("" without oauth), or the sessionOwner of the session
	// that asked for it (2025-11-25).
	owner string
	// quota is the key it counts under in the store's owned: its owner's,
	// or its session's subject's (subjectOwner), which bounds one subject
	// however many sessions it opens; "" counts under none.
	quota   string
	created time.Time
	ttl     time.Duration
	poll    time.Duration
	// expiry drops the task at its ttl; set by taskStore.add.
	expiry *time.Timer

	// Guarded by the store's mu.
	//
	// cancel stops the task's run (tasks/cancel, expiry); nil once the task
	// is over, as notify is: what they hold of the call (its request, its
	// session) is not kept with a result that waits for its ttl.
	cancel  context.CancelCauseFunc
	state   taskState
	updated time.Time
	// outcome is the result object (completed) or the error object
	// (failed); nil otherwise.
	outcome json.RawMessage
	// round holds the requests of an input_required task that are not
	// answered yet, in the order asked; answers holds those answered, by
	// key, until the run takes them.
	round   []InputRequest
	answers map[string]json.RawMessage
	// answered is closed when the last request of the round is answered,
	// or the task ends; a new one for each round.
	answered chan struct{}
	// asking counts the requests of a 2025-11-25 task's call that wait for
	// the client (taskStore.waiting): input_required while it is not 0.
	asking int
	// done is closed when the task ends (tasks/result waits for it).
	done chan struct{}
	// notify, when set, is told each change of status with the task's
	// notifications/tasks/status (a 2025-11-25 session's GET channel).
	notify func(msg []byte)
}

// setStateLocked moves t to st (not terminal: endLocked does that) and
// tells notify.
func (t *task) setStateLocked(st taskState, now time.Time) {
	if t.state == st {
		return
	}
	t.state, t.updated = st, now
	t.notifyLocked()
}

// notifyLocked sends notifications/tasks/status with t as it is now, when
// someone listens.
func (t *task) notifyLocked() {
	if t.notify != nil {
		t.notify(appendNotification(nil, "notifications/tasks/status", appendTask2025(nil, t)))
	}
}

// taskStore holds a route's tasks by id. Each task leaves it at its ttlMs
// (a timer), or when the route shuts down (close).
type taskStore struct {
	mu    sync.Mutex
	m     map[string]*task
	owned map[string]int // tasks per non-empty owner
	// kept is the bytes of the outcomes of the tasks in m, at most
	// maxTaskOutcomes.
	kept int
}

// add stores t, unless the route or its owner has as many tasks as it may
// keep (or, for a task over that resumed, as many outcome bytes), and arms
// its expiry.
func (s *taskStore) add(t *task) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.m) >= maxTasks || (t.quota != "" && s.owned[t.quota] >= maxTasksPerOwner) ||
		s.kept+len(t.outcome) > maxTaskOutcomes() {
		return false
	}
	s.kept += len(t.outcome)
	if s.m == nil {
		s.m = make(map[string]*task)
		s.owned = make(map[string]int)
	}
	s.m[t.id] = t
	if t.quota != "" {
		s.owned[t.quota]++
	}
	t.expiry = time.AfterFunc(t.created.Add(t.ttl).Sub(now()), func() {
		s.mu.Lock()
		if s.m[t.id] == t {
			s.dropLocked(t)
		}
		s.mu.Unlock()
	})
	return true
}

// getLocked returns the task id of owner, nil when there is none: unknown,
// expired, or another subject's (to whom it is as if there were none).
func (s *taskStore) getLocked(id, owner string) *task {
	t := s.m[id]
	if t == nil || t.owner != owner {
		return nil
	}
	if now().Sub(t.created) >= t.ttl { // its timer is about to fire
		s.dropLocked(t)
		return nil
	}
	return t
}

// TaskCounts reports the route's tasks (both eras') by status: working,
// input_required, completed, failed and cancelled, the last three kept
// until their ttl.
func (h *Handler) TaskCounts() (counts [5]int) {
	s := &h.tasks
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.m {
		counts[t.state]++
	}
	return counts
}

// TaskStatuses names the statuses of [Handler.TaskCounts], in its order.
var TaskStatuses = taskStateNames

// close drops every task, stopping the ones that run (Handler.Shutdown).
func (s *taskStore) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.m {
		s.dropLocked(t)
	}
}

// dropLocked forgets t and stops its run if it still runs.
func (s *taskStore) dropLocked(t *task) {
	delete(s.m, t.id)
	s.kept -= len(t.outcome)
	t.expiry.Stop()
	if t.quota != "" {
		if s.owned[t.quota]--; s.owned[t.quota] == 0 {
			delete(s.owned, t.quota)
		}
	}
	t.cancelLocked(errTaskExpired)
}

// dropOwner forgets every task of owner, stopping the ones that run: a
// session's, when it ends (nobody can reach them any more).
func (s *taskStore) dropOwner(owner string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.m {
		if t.owner == owner {
			s.dropLocked(t)
		}
	}
}

// cancelLocked ends t as cancelled, unless it is over, and stops its run
// with cause.
func (t *task) cancelLocked(cause error) {
	if t.state.terminal() {
		return
	}
	cancel := t.cancel
	t.endLocked(taskCancelled, nil, now())
	cancel(cause)
}

// endLocked moves t to the terminal state st with outcome, waking a run
// that waits for answers.
func (t *task) endLocked(st taskState, outcome json.RawMessage, now time.Time) {
	if t.state.terminal() {
		return
	}
	close(t.done)
	t.state, t.outcome, t.updated = st, outcome, now
	t.round, t.answers = nil, nil
	if t.answered != nil {
		close(t.answered)
		t.answered = nil
	}
	t.notifyLocked()
	t.cancel, t.notify = nil, nil
}

// taskIDChars is the length of a task id's random part: 128 bits in
// base64url.
const taskIDChars = 22

// newTaskID returns a fresh task id: 128 random bits, after "<node>." in a
// cluster (whose nodes forward a task's requests to the node that holds it).
func (h *Hub) newTaskID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	id := base64.RawURLEncoding.EncodeToString(b[:])
	if h.cluster == nil {
		return id
	}
	return h.cluster.NodeID() + "." + id
}

// taskStart is what lets a call become a task: set on a 2026-07-28
// tools/call from a client that declared the extension.
type taskStart struct {
	h            *Handler
	owner, quota string // the task's (task.owner, task.quota)
	// cancel stops the call, and then the task.
	cancel context.CancelCauseFunc
	// support is the called tool's execution.taskSupport, as the server
	// reported it (Call.SetTaskSupport).
	support TaskSupport
	// started is closed once the call is a task (t set and stored).
	started chan struct{}
	// t is the task the call became, nil until then, and created its
	// fields as it started (the CreateTaskResult's: its Task members, or
	// the 2025 era's Task object). Written by the call's goroutine before
	// started is closed.
	t       *task
	created []byte

	// shed, when set, lets the call go of what it no longer needs of its
	// request once it is a task (shedBody).
	shed func()

	// asked marks a 2025-11-25 call whose client asked for a task
	// (params.task, task_session.go), with the ttl it asked for: it becomes
	// one as soon as the server reports the tool's support, and answer
	// writes its CreateTaskResult.
	asked  bool
	ttl    time.Duration
	answer func(fields []byte)
	notify func(msg []byte) // the task's (task.notify)
}

// start makes the call a task and reports whether it is one.
func (ts *taskStart) start(opts TaskOptions, rec *mrtr) bool {
	if ts.t != nil {
		return true
	}
	if ts.support == TaskForbidden {
		return false
	}
	ttl, poll := opts.TTL, opts.PollInterval
	switch {
	case ttl <= 0:
		ttl = defaultTaskTTL
	case ttl > maxTaskTTL:
		ttl = maxTaskTTL
	}
	switch {
	case poll <= 0:
		poll = defaultTaskPoll
	case poll < minTaskPoll:
		poll = minTaskPoll
	}
	created := now()
	t := &task{
		id: ts.h.hub.newTaskID(), owner: ts.owner, quota: ts.quota, done: make(chan struct{}),
		created: created, updated: created, ttl: ttl, poll: poll, cancel: ts.cancel, notify: ts.notify,
	}
	if ts.asked {
		ts.created = appendTask2025(nil, t) // task_session.go
	} else {
		ts.created = appendTaskFields(nil, t, taskWire2026)
	}
	if !ts.h.tasks.add(t) {
		ts.h.warnThrottled(&ts.h.taskFullWarn, "mcp: too many tasks; the call runs on without one", "max", maxTasks)
		return false
	}
	if rec != nil { // the 2026-07-28 era's rounds wait for tasks/update
		rec.mu.Lock()
		rec.task, rec.tasks = t, &ts.h.tasks
		rec.mu.Unlock()
	}
	ts.t = t
	if ts.shed != nil {
		ts.shed()
	}
	close(ts.started)
	if ts.answer != nil {
		ts.answer(ts.created)
	}
	return true
}

// await parks t in input_required with the unanswered requests of round
// until tasks/update has answered them all, and returns their answers by
// key. It ends with ctx (tasks/cancel, expiry, shutdown).
func (s *taskStore) await(ctx context.Context, t *task, round []InputRequest) (map[string]json.RawMessage, error) {
	s.mu.Lock()
	if t.state.terminal() {
		s.mu.Unlock()
		return nil, context.Cause(ctx)
	}
	ch := make(chan struct{})
	t.setStateLocked(taskInputRequired, now())
	t.round, t.answers, t.answered = round, make(map[string]json.RawMessage, len(round)), ch
	s.mu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.state.terminal() {
		return nil, errTaskCancelled
	}
	got := t.answers
	t.answers = nil
	return got, nil
}

// finish records the outcome of t's run: out and err as dispatch returned
// them, failure the round's failure (a -32021), closing whether the server
// is shutting down.
func (s *taskStore) finish(t *task, out []byte, err error, failure *Error, closing bool) {
	st, outcome := taskFailed, json.RawMessage(nil)
	switch {
	case failure != nil:
		outcome = appendErrorObject(nil, failure)
	case err == nil:
		if e, ok := member(out, "error"); ok {
			outcome = append(outcome, e...)
		} else {
			res, _ := member(out, "result")
			st, outcome = taskCompleted, append(outcome, res...)
		}
	case closing:
		outcome = appendErrorObject(nil, &Error{Code: CodeInternalError, Message: msgShuttingDown})
	default:
		outcome = appendErrorObject(nil, &Error{Code: CodeInternalError, Message: msgInternalError})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.state.terminal() || s.m[t.id] != t { // a cancel or an expiry said how it ended
		return
	}
	if s.kept+len(outcome) > maxTaskOutcomes() {
		st, outcome = taskFailed, appendErrorObject(nil, errOutcomeNotKept)
	}
	s.kept += len(outcome)
	t.endLocked(st, outcome, now())
}

// appendErrorObject appends e as a JSON-RPC error object.
func appendErrorObject(dst []byte, e *Error) []byte {
	dst = append(dst, `{"code":`...)
	dst = strconv.AppendInt(dst, int64(e.Code), 10)
	dst = append(dst, `,"message":`...)
	dst = appendString(dst, e.Message)
	if e.Data != nil {
		dst = append(dst, `,"data":`...)
		dst = append(dst, e.Data...)
	}
	return append(dst, '}')
}

// taskWire names a Task's duration members (milliseconds) in an era.
type taskWire struct{ ttl, poll string }

var (
	taskWire2026 = taskWire{ttl: "ttlMs", poll: "pollIntervalMs"}
	taskWire2025 = taskWire{ttl: "ttl", poll: "pollInterval"}
)

// appendTaskFields appends the Task members of t, the first without a
// comma before it, with the duration names of w.
func appendTaskFields(dst []byte, t *task, w taskWire) []byte {
	dst = append(dst, `"taskId":`...)
	dst = appendString(dst, t.id)
	dst = append(dst, `,"status":"`...)
	dst = append(dst, taskStateNames[t.state]...)
	dst = append(dst, `","createdAt":"`...)
	dst = t.created.UTC().AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, `","lastUpdatedAt":"`...)
	dst = t.updated.UTC().AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, `",`...)
	dst = appendString(dst, w.ttl)
	dst = append(dst, ':')
	dst = strconv.AppendInt(dst, t.ttl.Milliseconds(), 10)
	dst = append(dst, ',')
	dst = appendString(dst, w.poll)
	dst = append(dst, ':')
	return strconv.AppendInt(dst, t.poll.Milliseconds(), 10)
}

// appendTask2025 appends t as the 2025-11-25 era's Task object.
func appendTask2025(dst []byte, t *task) []byte {
	dst = append(dst, '{')
	return append(appendTaskFields(dst, t, taskWire2025), '}')
}

// appendCreateTask appends the answer of a call that became a task: the
// task's fields as they were when it started.
func appendCreateTask(dst, id, fields []byte) []byte {
	dst = appendResult(dst, id, nil)
	dst = dst[:len(dst)-1]
	dst = append(dst, `{"resultType":"task",`...)
	dst = append(dst, fields...)
	return append(dst, "}}"...)
}

// missingTasks is the answer to a tasks method, or to a call of a tool that
// requires a task, from a client that did not declare the extension.
var missingTasks = &Error{Code: CodeMissingClientCapability, Message: "Missing required client capability",
	Data: []byte(`{"requiredCapabilities":{"extensions":{"` + extTasks + `":{}}}}`)}

// taskMethod answers tasks/get, tasks/update or tasks/cancel for owner:
// the response, or the error and its HTTP status.
func (h *Handler) taskMethod(dst []byte, m *message, rm *requestMeta, owner string) ([]byte, *statelessError) {
	if !rm.tasks {
		return nil, &statelessError{status: 400, err: missingTasks}
	}
	id, ok := stringMember(m.params, "taskId")
	if !ok {
		return nil, &statelessError{status: 200, err: &Error{Code: CodeInvalidParams, Message: "Invalid params: missing taskId"}}
	}
	var answers []byte
	if m.method == methodTasksUpdate {
		if answers, ok = member(m.params, "inputResponses"); !ok || kindOf(answers) != '{' {
			return nil, &statelessError{status: 200, err: &Error{Code: CodeInvalidParams, Message: "Invalid params: inputResponses must be an object"}}
		}
	}
	s := &h.tasks
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.getLocked(id, owner)
	if t == nil {
		return nil, &statelessError{status: 200, err: &Error{Code: CodeInvalidParams, Message: "Invalid params: unknown taskId"}}
	}
	switch m.method {
	case methodTasksCancel:
		t.cancelLocked(errTaskCancelled)
	case methodTasksUpdate:
		if e := t.updateLocked(answers); e != nil {
			return nil, &statelessError{status: 200, err: e}
		}
	default: // tasks/get
		dst = appendResult(dst, m.id, nil)
		dst = dst[:len(dst)-1]
		dst = append(dst, `{"resultType":"complete",`...)
		dst = appendTaskFields(dst, t, taskWire2026)
		switch t.state {
		case taskInputRequired:
			dst = append(dst, `,"inputRequests":`...)
			dst = appendInputRequests(dst, t.round)
		case taskCompleted:
			dst = append(dst, `,"result":`...)
			dst = append(dst, t.outcome...)
		case taskFailed:
			dst = append(dst, `,"error":`...)
			dst = append(dst, t.outcome...)
		}
		return append(dst, "}}"...), nil
	}
	dst = appendResult(dst, m.id, nil)
	dst = dst[:len(dst)-1]
	return append(dst, `{"resultType":"complete"}}`...), nil
}

// updateLocked takes the client's answers to t's pending requests: each a
// well-formed result of its request's method (else -32602, and none is
// taken). Answers to keys that are not pending are ignored. The run goes on
// once every pending request is answered.
func (t *task) updateLocked(answers []byte) *Error {
	if t.state != taskInputRequired {
		return nil
	}
	type taken struct {
		i int
		a json.RawMessage
	}
	var got []taken
	it := objectIter{data: answers}
	for {
		k, a, more := it.next()
		if !more {
			break
		}
		for i, q := range t.round {
			if q.Key != string(k) {
				continue
			}
			if !validAnswer(q.Method, a) {
				return &Error{Code: CodeInvalidParams, Message: "Invalid params: inputResponses." + q.Key + " is not a valid " + q.Method + " result"}
			}
			got = append(got, taken{i, a})
		}
	}
	if len(got) == 0 {
		return nil
	}
	left := t.round[:0:0]
	for i, q := range t.round {
		answered := false
		for _, g := range got {
			if g.i == i {
				t.answers[q.Key] = append(json.RawMessage(nil), g.a...)
				answered = true
			}
		}
		if !answered {
			left = append(left, q)
		}
	}
	t.round, t.updated = left, now()
	if len(left) == 0 {
		t.setStateLocked(taskWorking, now())
		close(t.answered)
		t.answered = nil
	}
	return nil
}
