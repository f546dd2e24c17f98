package luavm

import (
	"context"
	"strings"
	"testing"

	"github.com/luamcp/luamcp/mcp"
)

// TestSaveAndResume: a session saved awake or asleep resumes in another
// Script (another process, in serve) asleep, with its state whole (shared
// tables, cycle, null, array marker), and wakes on its first call. A state holding a function cannot be saved, and a
// session advertising what the script cannot serve does not resume.
func TestSaveAndResume(t *testing.T) {
	rec := &recorder{}
	for _, asleepAtSave := range []bool{false, true} {
		ms := 0
		if asleepAtSave {
			ms = 5
		}
		s, _ := loadSleeper(t, ms, "v1", rec, nil)
		sess, _ := open(t, s, "a")
		mustCall(t, sess, "bump", `{}`)
		mustCall(t, sess, "bump", `{}`)
		if asleepAtSave {
			eventually(t, "hibernation", func() bool { return isAsleep(sess) })
		}
		state, err := sess.(mcp.Saver).Save()
		if err != nil {
			t.Fatal(err)
		}
		sess.Close("")

		s2, _ := loadSleeper(t, 0, "v2", rec, nil)
		back, err := s2.Resume(context.Background(), "a", mcp.Capabilities{Tools: true}, state)
		if err != nil {
			t.Fatal(err)
		}
		if !isAsleep(back) || hasState(back) {
			t.Error("a resumed session holds a Lua state before its first call")
		}
		if got := text(t, mustCall(t, back, "bump", `{}`)); got != "v2 3" {
			t.Errorf("asleep at save %v: bump after resume = %q, want v2 3", asleepAtSave, got)
		}
		if got := text(t, mustCall(t, back, "check", `{}`)); got != "true" {
			t.Errorf("asleep at save %v: sharing, cycle, null or array marker lost", asleepAtSave)
		}
		back.Close("")
	}
	s, _ := loadSleeper(t, 0, "v1", rec, nil)
	sess, _ := open(t, s, "b")
	mustCall(t, sess, "keep_fn", `{}`)
	if _, err := sess.(mcp.Saver).Save(); err == nil {
		t.Error("a state holding a function was saved")
	}
	sess.Close("")
	if _, err := s.Resume(context.Background(), "c", mcp.Capabilities{Tools: true, Prompts: true}, nil); err == nil ||
		!strings.Contains(err.Error(), "prompts") {
		t.Errorf("a session advertising prompts resumed on a script without them: %v", err)
	}
	if _, err := s.Resume(context.Background(), "d", mcp.Capabilities{Tools: true}, []byte("not frozen")); err == nil {
		t.Error("a session resumed with a state that does not thaw")
	}
}
