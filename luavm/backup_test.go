package luavm

import "testing"

// TestBackupAcrossCalls interleaves calls that keep their changes with
// crashes, so that the backup is patched between calls (bridge.Mirror) and
// rebuilt after each rollback: every crash must restore the state the call
// before it left.
func TestBackupAcrossCalls(t *testing.T) {
	s, _ := load(t, "full.lua", nil)
	ss, _ := open(t, s, "sid")
	steps := []struct {
		tool, args string
		crash      bool
		want       string // the state afterwards
	}{
		{"inc", `{}`, false, `{"count":1,"nested":{"items":[1,2]},"session":"sid"}`},
		{"inc", `{"n":2}`, false, `{"count":3,"nested":{"items":[1,2]},"session":"sid"}`},
		{"crash", `{}`, true, `{"count":3,"nested":{"items":[1,2]},"session":"sid"}`},
		{"inc", `{}`, false, `{"count":4,"nested":{"items":[1,2]},"session":"sid"}`},
		{"set", `{"n":7}`, false, `{"count":7,"nested":{"items":{}}}`},
		{"crash", `{}`, true, `{"count":7,"nested":{"items":{}}}`},
		{"crash", `{}`, true, `{"count":7,"nested":{"items":{}}}`},
		{"inc", `{}`, false, `{"count":8,"nested":{"items":{}}}`},
		{"fail", `{}`, false, `{"count":9,"nested":{"items":{}}}`},
		{"crash", `{}`, true, `{"count":9,"nested":{"items":{}}}`},
		{"inc", `{}`, false, `{"count":10,"nested":{"items":{}}}`},
	}
	for i, st := range steps {
		_, err := call(t, ss, st.tool, st.args)
		if st.crash != isCrash(err) {
			t.Fatalf("step %d (%s): crash %v, got %v", i+1, st.tool, st.crash, err)
		}
		jsonEqual(t, state(t, ss), st.want)
	}
}
