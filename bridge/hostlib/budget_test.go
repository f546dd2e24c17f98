package hostlib

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
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

// TestRequestAllSharesTheBudget: the bodies of one request_all draw on one
// share of the budget as they are read, so 40 bodies of 3 MiB under a 4 MiB
// budget never sit in Go memory together (each used to be read whole
// against the whole budget, 120 MiB, before any was refused), sized or not.
func TestRequestAllSharesTheBudget(t *testing.T) {
	const limit, size, n = 4 << 20, 3 << 20, 40
	body := make([]byte, size)
	mux := http.NewServeMux()
	mux.HandleFunc("/sized", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(size))
		w.Write(body)
	})
	mux.HandleFunc("/chunked", func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i < size; i += 1 << 20 {
			w.Write(body[i : i+1<<20])
			w.(http.Flusher).Flush()
		}
	})
	api := httptest.NewServer(mux)
	t.Cleanup(api.Close)
	L, _ := newLua(t, newLib(t, t.TempDir(), fmt.Sprintf(`{ http = { %q } }`, strings.TrimPrefix(api.URL, "http://"))))
	L.SetMemoryLimit(limit)
	L.SetGlobal("BASE", lstr(api.URL))
	for _, path := range []string{"/sized", "/chunked"} {
		t.Run(path, func(t *testing.T) {
			L.SetGlobal("PATH", lstr(path))
			grew := heapGrowth(func() {
				runCases(t, L, []luaCase{{"request_all", `local reqs = {}
				for i = 1, 40 do reqs[i] = { url = BASE .. PATH } end
				local kept = 0
				for _, r in ipairs(http.request_all(reqs)) do
				  if r[1] then kept = kept + 1 elseif not r[2]:find("memory limit", 1, true) then error(r[2]) end
				end
				-- one fits (two do not); a sized body draws its size before it
				-- is read, so the first wins; unsized ones draw as they go,
				-- and may all run out of room together
				if PATH == "/sized" then eq(kept, 1) elseif kept > 1 then error(kept .. " kept") end`}})
			})
			t.Logf("heap grew by %d MiB at most (budget %d MiB, %d bodies of %d MiB)", grew>>20, limit>>20, n, size>>20)
			if grew > 10*limit {
				t.Errorf("heap grew by %d MiB under a %d MiB budget", grew>>20, limit>>20)
			}
		})
	}
}

// heapGrowth runs f and returns by how much the heap's live objects grew at
// most while it ran, sampled every millisecond.
func heapGrowth(f func()) int64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	base := sample[0].Value.Uint64()
	var peak atomic.Uint64
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	f()
	close(stop)
	<-stopped
	return int64(peak.Load()) - int64(base)
}

// TestRequestAllRequestBodiesWithinTheBudget: the request bodies of one
// request_all are all built before the first is sent, in Go memory: one
// string the state holds once, sent by 200 requests, must not become 200
// copies outside the budget (nor 200 JSON encodings of one table).
func TestRequestAllRequestBodiesWithinTheBudget(t *testing.T) {
	const limit, n = 8 << 20, 200
	mux := http.NewServeMux()
	mux.HandleFunc("/sink", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, "ok")
	})
	api := httptest.NewServer(mux)
	t.Cleanup(api.Close)
	lib := newLib(t, t.TempDir(), fmt.Sprintf(`{ http = { %q } }`, strings.TrimPrefix(api.URL, "http://")))
	for _, kind := range []string{"body", "json"} {
		t.Run(kind, func(t *testing.T) {
			L, _ := newLua(t, lib)
			L.SetMemoryLimit(limit)
			L.SetGlobal("BASE", lstr(api.URL))
			L.SetGlobal("KIND", lstr(kind))
			if err := L.DoString(`BIG = string.rep("x", 2^20); ARR = { BIG }`); err != nil {
				t.Fatal(err)
			}
			grew := heapGrowth(func() {
				runCases(t, L, []luaCase{{"request_all", fmt.Sprintf(`local reqs = {}
					for i = 1, %d do
					  reqs[i] = { method = "POST", url = BASE .. "/sink" }
					  if KIND == "body" then reqs[i].body = BIG else reqs[i].json = ARR end
					end
					local kept, refused = 0, 0
					for _, r in ipairs(http.request_all(reqs)) do
					  if r[1] then kept = kept + 1; eq(r[1].body, "ok")
					  elseif r[2]:find("memory limit", 1, true) then refused = refused + 1
					  else error(r[2]) end
					end
					-- the script's own string is sent as it is; what is
					-- encoded must fit the budget together
					if KIND == "body" then eq(kept, %d) else eq(kept >= 1 and refused >= 1, true, kept .. " kept") end`, n, n)}})
			})
			t.Logf("heap grew by %d MiB at most (budget %d MiB, %d bodies of 1 MiB)", grew>>20, limit>>20, n)
			if grew > 10*limit {
				t.Errorf("heap grew by %d MiB under a %d MiB budget", grew>>20, limit>>20)
			}
		})
	}
}

// TestRequestAllResponseHeadersWithinTheBudget: the response headers of one
// request_all (up to 1 MiB each) wait in Go memory until every request is
// done, as the bodies do: they must draw on the budget's share too, or 100
// responses of 1 MiB of headers sit in memory under a 4 MiB budget.
func TestRequestAllResponseHeadersWithinTheBudget(t *testing.T) {
	const limit, n = 4 << 20, 100
	value := strings.Repeat("h", 1000)
	mux := http.NewServeMux()
	mux.HandleFunc("/headers", func(w http.ResponseWriter, r *http.Request) {
		for i := range 900 { // 900 KiB, under the 1 MiB cap
			w.Header().Set(fmt.Sprintf("X-H%d", i), value)
		}
		io.WriteString(w, "ok")
	})
	api := httptest.NewServer(mux)
	t.Cleanup(api.Close)
	L, _ := newLua(t, newLib(t, t.TempDir(), fmt.Sprintf(`{ http = { %q } }`, strings.TrimPrefix(api.URL, "http://"))))
	L.SetMemoryLimit(limit)
	L.SetGlobal("BASE", lstr(api.URL))
	grew := heapGrowth(func() {
		runCases(t, L, []luaCase{{"request_all", fmt.Sprintf(`local reqs = {}
			for i = 1, %d do reqs[i] = { url = BASE .. "/headers" } end
			local kept = 0
			for _, r in ipairs(http.request_all(reqs)) do
			  if r[1] then kept = kept + 1 elseif not r[2]:find("memory limit", 1, true) then error(r[2]) end
			end
			if kept > 4 then error(kept .. " kept") end`, n)}})
	})
	t.Logf("heap grew by %d MiB at most (budget %d MiB, %d responses of 900 KiB of headers)", grew>>20, limit>>20, n)
	if grew > 10*limit {
		t.Errorf("heap grew by %d MiB under a %d MiB budget", grew>>20, limit>>20)
	}
}
