package hostlib

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A reader never hands a script more than its memory budget holds, whatever
// max_bytes says, and says so instead of raising: the script may ask for less.
func TestReadsWithinTheBudget(t *testing.T) {
	const big = 16 << 20 // a body twice the state's 8 MiB limit
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "data", "big"), make([]byte, big), 0o644); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/sized", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, strings.Repeat("x", big)) })
	mux.HandleFunc("/chunked", func(w http.ResponseWriter, r *http.Request) {
		for range big >> 20 {
			io.WriteString(w, strings.Repeat("x", 1<<20))
			w.(http.Flusher).Flush()
		}
	})
	mux.HandleFunc("/small", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, strings.Repeat("x", 3<<20)) })
	api := httptest.NewServer(mux)
	t.Cleanup(api.Close)

	L, _ := newLua(t, newLib(t, dir, fmt.Sprintf(`{ read = { "data" }, http = { %q } }`, strings.TrimPrefix(api.URL, "http://"))))
	L.SetMemoryLimit(8 << 20)
	L.SetGlobal("BASE", lstr(api.URL))
	const refused = "would exceed the script's memory limit"
	L.SetGlobal("REFUSED", lstr(refused))
	runCases(t, L, []luaCase{
		{"fs.read", `local v, err = fs.read("data/big", { max_bytes = 64 * 1024 * 1024 }); eq(v, nil)
			eq(err:find(REFUSED, 1, true) ~= nil, true, err)`},
		{"http sized", `local v, err = http.request{ url = BASE .. "/sized", max_bytes = 64 * 1024 * 1024 }; eq(v, nil)
			eq(err:find(REFUSED, 1, true) ~= nil, true, err)`},
		{"http chunked", `local v, err = http.request{ url = BASE .. "/chunked", max_bytes = 64 * 1024 * 1024 }; eq(v, nil)
			eq(err:find(REFUSED, 1, true) ~= nil, true, err)`},
		// Each body fits; the three together do not.
		{"request_all", `local rs = http.request_all{ { url = BASE .. "/small" }, { url = BASE .. "/small" }, { url = BASE .. "/small" } }
			local ok, refusedN = 0, 0
			for _, r in ipairs(rs) do
			  if r[1] then ok = ok + 1 elseif r[2]:find(REFUSED, 1, true) then refusedN = refusedN + 1 else error(r[2]) end
			end
			eq(ok >= 1, true, "bodies kept"); eq(refusedN >= 1, true, "bodies refused")`},
		{"still serves", `eq(#http.get(BASE .. "/small").body, 3 * 1024 * 1024)`},
	})
}
