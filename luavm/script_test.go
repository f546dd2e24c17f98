package luavm

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/luamcp/luamcp/mcp"
)

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		file string
		want string // the whole error starts with this
	}{
		{"syntax.lua", "syntax.lua:3: syntax error near '='"},
		{"eof.lua", "eof.lua:3: syntax error at end of file"},
		{"goto.lua", "goto.lua:4: no visible label 'nowhere' for <goto> at line 2"},
		{"runtime.lua", "runtime.lua:2: attempt to index a nil value with key 'field'"},
		{"notable.lua", "notable.lua:1: the script must return the server module (a table), got 42"},
		{"missing.lua", "missing.lua:1: the server module has no handle_tool function"},
		{"route_type.lua", "route_type.lua:1: route.sessions must be true or false, got a string"},
		{"page_size.lua", "page_size.lua:1: route.page_size must be an integer >= 1, got 0"},
		{"page_size_float.lua", "page_size_float.lua:1: route.page_size must be an integer >= 1, got 2.5"},
		{"memory_limit.lua", "memory_limit.lua:1: route.memory_limit_mb must be an integer >= 1, got 0"},
		{"memory_load.lua", "memory_load.lua:2: memory limit exceeded: the state holds 2 MiB once the script is loaded, more than memory_limit_mb (1)"},
		{"cache_ttl.lua", "cache_ttl.lua:1: route.cache_ttl_ms must be an integer >= 0 (milliseconds), got -1"},
		{"hibernate.lua", "hibernate.lua:1: route.session_hibernate_ms must be an integer >= 0 (milliseconds), got 0.5"},
		{"cache_scope.lua", `cache_scope.lua:1: route.cache_scope must be "private" or "public", got "shared"`},
		{"unknown_key.lua", `unknown_key.lua:1: route has an unknown option "sesions"`},
		{"origins.lua", "origins.lua:1: route.origins[2] must be a string, got 3"},
		{"concurrent_name.lua", `concurrent_name.lua:1: route.concurrent_tools[2] "not a name" is not a tool name (1 to 128 characters of A-Z a-z 0-9 _ - .)`},
		{"concurrent_type.lua", "concurrent_type.lua:1: route.concurrent_tools must be a list of strings, got a string"},
		{"concurrent_item.lua", "concurrent_item.lua:1: route.concurrent_tools[2] must be a string, got 7"},
		{"callback_type.lua", "callback_type.lua:1: channels must be a function, got a table"},
		{"list_type.lua", "list_type.lua:1: resources must be a function or a table (a static list), got \"none\""},
		{"auth_type.lua", "auth_type.lua:1: auth must be a function, got a boolean"},
		{"require_broken.lua", "require_broken.lua:1: error loading module 'lib.broken': lib/broken.lua:3: syntax error near 'return'"},
		{"absent.lua", "absent.lua: open"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			logger, _ := newLogger()
			s, err := Load(filepath.Join("testdata", "bad", tt.file), Config{Logger: logger})
			if err == nil {
				s.Close()
				t.Fatal("Load succeeded")
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error %q\nwant prefix %q", err, tt.want)
			}
		})
	}
}

func TestRouteOptions(t *testing.T) {
	logger, _ := newLogger()
	s, err := Load("testdata/bad/routes_ok.lua", Config{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	o := s.Options()
	if o.Auth == nil {
		t.Error("Auth not set for a module with auth")
	}
	o.Auth = nil
	want := mcp.Options{
		Path: "/custom", Sessions: true, Origins: []string{"http://localhost:3000"},
		AllowRemoteAccess: true, PageSize: 7, MaxSessions: 3, SessionTTL: 1500 * time.Millisecond,
		RequestTimeout: 2500 * time.Millisecond, SessionMaxPending: 9, SessionKeepAlive: -1,
		SessionBufferMax: 11, ConcurrentTools: []string{"countdown", "a.b-c_d"},
		CacheTTL: time.Minute, CacheScope: "public",
	}
	if !optionsEqual(o, want) {
		t.Errorf("options\n got %+v\nwant %+v", o, want)
	}
	if got := s.current().memory; got != 32<<20 {
		t.Errorf("memory_limit_mb 32: %d bytes", got)
	}
	if got := s.current().hibernate; got != 0 {
		t.Errorf("session_hibernate_ms 0: %v", got)
	}

	st, _ := load(t, "stateless.lua", nil)
	if got := st.Options(); !optionsEqual(got, mcp.Options{Path: "/mcp/stateless"}) || got.Auth != nil {
		t.Errorf("defaults: got %+v", got)
	}
	if got := st.current().memory; got != DefaultStateMemoryLimit {
		t.Errorf("memory_limit_mb default: %d bytes", got)
	}
	if got := st.current().hibernate; got != DefaultHibernate {
		t.Errorf("session_hibernate_ms default: %v", got)
	}
	if st.Name() != "stateless" {
		t.Errorf("Name() = %q", st.Name())
	}
}

func optionsEqual(a, b mcp.Options) bool {
	a.Auth, b.Auth = nil, nil
	return reflect.DeepEqual(a, b)
}

func TestDescribe(t *testing.T) {
	s, _ := load(t, "full.lua", nil)
	tools, err := s.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) < 3 || !slices.Equal(tools[:3], []string{"echo", "inc", "set"}) {
		t.Errorf("tools = %v", tools)
	}
}

// A capability without its callbacks can only be seen once init ran: Describe
// and Init refuse it.
func TestCapabilityWithoutCallbacks(t *testing.T) {
	logger, logs := newLogger()
	s, err := Load("testdata/bad/capability.lua", Config{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		s.Close()
		if n := s.LiveStates(); n != 0 {
			t.Errorf("%d states open", n)
		}
	}()
	const want = "advertises the resources capability, but the server module has no read_resource function"
	if _, err := s.Describe(context.Background()); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Describe: %v", err)
	}
	if _, _, err := s.Init(context.Background(), json.RawMessage(initParams), "sid"); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Init: %v", err)
	}
	contains(t, logs.String(), "read_resource")
}

func TestInitResult(t *testing.T) {
	s, _ := load(t, "full.lua", nil)
	ss, res := open(t, s, "sid-1")
	jsonEqual(t, string(res.ServerInfo), `{"name":"full","version":"1.0.0","websiteUrl":"https://example.com"}`)
	jsonEqual(t, string(res.Capabilities), `{"tools":{},"resources":{"subscribe":true},"prompts":{},"completions":{},"logging":{}}`)
	if want := (mcp.Capabilities{Tools: true, Resources: true, Prompts: true, Logging: true, Completions: true}); res.Has != want {
		t.Errorf("Has = %+v", res.Has)
	}
	if res.Instructions != "Be nice." {
		t.Errorf("Instructions = %q", res.Instructions)
	}
	// init saw the session id in its params.
	jsonEqual(t, text(t, mustCall(t, ss, "get", `{}`)), `{"count":0,"nested":{"items":[1,2]},"session":"sid-1"}`)

	// Stateless: init({}) with no params at all.
	st, _ := load(t, "stateless.lua", nil)
	sl, res := open(t, st, "")
	jsonEqual(t, string(res.Capabilities), `{"tools":{}}`)
	if got := text(t, mustCall(t, sl, "hit", `{}`)); got != "params=0 hits=1" {
		t.Errorf("stateless init saw %q", got)
	}
}

// TestInitCall checks that InitCall, the stateless start that skips
// encoding init's result, reports the same capabilities as Init and refuses
// the same wrong shapes; only what encoding alone finds (a function inside
// server_info) is left to Init.
func TestInitCall(t *testing.T) {
	for _, tc := range []struct {
		name, init string
		has        mcp.Capabilities
		initErr    bool // Init fails
		callErr    bool // InitCall fails
	}{
		{"tools", `return { name = "s", version = "1" }, { tools = {} }, {}`, mcp.Capabilities{Tools: true}, false, false},
		{"no capabilities", `return { name = "s", version = "1" }, nil, {}`, mcp.Capabilities{}, false, false},
		{"all", `return { name = "s", version = "1", instructions = "hi" }, { tools = {}, logging = {} }, {}`,
			mcp.Capabilities{Tools: true, Logging: true}, false, false},
		{"server_info not a table", `return "s", { tools = {} }, {}`, mcp.Capabilities{}, true, true},
		{"instructions not a string", `return { name = "s", instructions = 1 }, { tools = {} }, {}`, mcp.Capabilities{}, true, true},
		{"capabilities not a table", `return { name = "s" }, "tools", {}`, mcp.Capabilities{}, true, true},
		{"missing callback", `return { name = "s" }, { prompts = {} }, {}`, mcp.Capabilities{}, true, true},
		{"function in server_info", `return { name = "s", icon = print }, { tools = {} }, {}`, mcp.Capabilities{Tools: true}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := `return {
  init = function() ` + tc.init + ` end,
  tools = function() return { { name = "t" } } end,
  handle_tool = function() return "ok" end,
}`
			s, _ := loadSource(t, "s.lua", src)
			ctx := context.Background()
			ss, res, err := s.Init(ctx, nil, "")
			if (err != nil) != tc.initErr {
				t.Fatalf("Init: %v, want error %v", err, tc.initErr)
			}
			if err == nil {
				ss.Close("")
				if res.Has != tc.has {
					t.Errorf("Init: Has = %+v, want %+v", res.Has, tc.has)
				}
			}
			ss, has, err := s.InitCall(ctx)
			if (err != nil) != tc.callErr {
				t.Fatalf("InitCall: %v, want error %v", err, tc.callErr)
			}
			if err == nil {
				ss.Close("")
				if has != tc.has {
					t.Errorf("InitCall: Has = %+v, want %+v", has, tc.has)
				}
			}
		})
	}
}
