package mcp

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
)

// newTestTask returns a task of owner, counted under it, that nobody runs.
func newTestTask(id, owner string) *task {
	return &task{id: id, owner: owner, quota: owner, created: now(), ttl: time.Hour, cancel: func(error) {}, done: make(chan struct{})}
}

// The store is bounded per route and per token subject, and a task is
// another subject's to no one.
func TestTaskStoreBounds(t *testing.T) {
	var s taskStore
	defer s.close()
	for i := range maxTasksPerOwner {
		if !s.add(newTestTask("a"+strconv.Itoa(i), "alice")) {
			t.Fatalf("alice's task %d refused", i)
		}
	}
	if s.add(newTestTask("a-more", "alice")) {
		t.Errorf("alice got more than %d tasks", maxTasksPerOwner)
	}
	if !s.add(newTestTask("b0", "bob")) {
		t.Error("bob's first task refused")
	}
	for i := 0; len(s.m) < maxTasks; i++ {
		s.add(newTestTask("x"+strconv.Itoa(i), ""))
	}
	if s.add(newTestTask("x-more", "")) {
		t.Errorf("the route got more than %d tasks", maxTasks)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, tc := range []struct {
		id, owner string
		found     bool
	}{
		{"a0", "alice", true},
		{"a0", "bob", false},
		{"a0", "", false},
		{"b0", "bob", true},
		{"x0", "", true},
		{"x0", "alice", false},
	} {
		if got := s.getLocked(tc.id, tc.owner) != nil; got != tc.found {
			t.Errorf("get(%s) by %q: found %v, want %v", tc.id, tc.owner, got, tc.found)
		}
	}
}

// A task leaves the store at its ttl (its timer), a running one stopped.
func TestTaskStoreExpiry(t *testing.T) {
	var s taskStore
	defer s.close()
	ctx, cancel := context.WithCancelCause(context.Background())
	tk := newTestTask("t", "")
	tk.ttl, tk.cancel = 20*time.Millisecond, cancel
	s.add(tk)
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the task's run was not stopped at its ttl")
	}
	if context.Cause(ctx) != errTaskExpired {
		t.Errorf("cause %v", context.Cause(ctx))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.m) != 0 || tk.state != taskCancelled {
		t.Errorf("after its ttl: %d tasks, state %s", len(s.m), taskStateNames[tk.state])
	}
}

// The outcomes a route keeps are bounded in bytes: one past the bound fails
// its task with a clear error, and a dropped task gives its bytes back.
func TestTaskStoreOutcomeBudget(t *testing.T) {
	outcomesOverride.Store(300)
	defer outcomesOverride.Store(0)
	var s taskStore
	defer s.close()
	result := func(n int) []byte {
		return []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", n) + `"}]}}`)
	}
	a, b, c := newTestTask("a", ""), newTestTask("b", ""), newTestTask("c", "")
	for _, tk := range []*task{a, b, c} {
		s.add(tk)
	}
	s.finish(a, result(100), nil, nil, false)
	s.finish(b, result(200), nil, nil, false)
	s.mu.Lock()
	if a.state != taskCompleted || b.state != taskFailed || !strings.Contains(string(b.outcome), "was not kept") {
		t.Errorf("a %s, b %s %s", taskStateNames[a.state], taskStateNames[b.state], b.outcome)
	}
	s.dropLocked(a)
	s.dropLocked(b)
	if s.kept != 0 {
		t.Errorf("%d bytes kept after the drops", s.kept)
	}
	s.mu.Unlock()
	s.finish(c, result(200), nil, nil, false)
	if c.state != taskCompleted {
		t.Errorf("c %s %s", taskStateNames[c.state], c.outcome)
	}
}

// appendWithInner adds obj[key][inner] unless it is there, and leaves what
// is no object as it is.
func TestAppendWithInner(t *testing.T) {
	for _, tc := range []struct{ obj, want string }{
		{`{}`, `{"_meta":{"k":1}}`},
		{` {"a":2} `, `{"a":2,"_meta":{"k":1}}`},
		{`{"_meta":{"other":true},"a":2}`, `{"_meta":{"k":1,"other":true},"a":2}`},
		{`{"_meta":{"k":"theirs"}}`, `{"_meta":{"k":"theirs"}}`},
		{`{"_meta":null}`, `{"_meta":null}`},
		{`1`, `1`},
		{`[]`, `[]`},
	} {
		if got := string(appendWithInner(nil, []byte(tc.obj), "_meta", "k", []byte("1"))); got != tc.want {
			t.Errorf("appendWithInner(%s) = %s, want %s", tc.obj, got, tc.want)
		}
	}
	if got := string(relatedTask([]byte("1"), "x")); got != "1" {
		t.Errorf("relatedTask of params that are no object: %s", got)
	}
}
