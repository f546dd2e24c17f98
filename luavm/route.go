package luavm

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/luamcp/luamcp/internal/logcap"
	"github.com/luamcp/luamcp/mcp"
	lua "github.com/yuin/gopher-lua"
)

// routeOptions are a script's route table (script-api.md "Route options"):
// the transport's options, and the ones luavm applies itself.
type routeOptions struct {
	mcp.Options
	callTimeout time.Duration // call_timeout_ms; 0: Config.CallTimeout
	// memoryLimit is how many bytes each of the script's Lua states may hold
	// (memory_limit_mb).
	memoryLimit int64
	reuseLists  listReuse // reuse_lists (lists.go)
	// hibernate is how long a session stays idle before it gives its Lua
	// state back (session_hibernate_ms, hibernate.go); 0: never.
	hibernate time.Duration
	// validateArgs checks tools/call arguments against the tool's
	// input_schema (validate_arguments, validate.go).
	validateArgs bool
	// validateResults checks tool results' structured_content against the
	// tool's output_schema (validate_results, validate.go).
	validateResults bool
}

// DefaultStateMemoryLimit is the default of the route option memory_limit_mb,
// in bytes.
const DefaultStateMemoryLimit = 64 << 20

// DefaultHibernate is the default of the route option session_hibernate_ms.
const DefaultHibernate = 30 * time.Second

// parseRoute reads the module's route table (script-api.md "Route
// options"). Unset transport options stay zero, which mcp.Options reads as
// their defaults; Path defaults to /mcp/<name>.
func parseRoute(v lua.LValue, name string) (routeOptions, error) {
	opts := routeOptions{Options: mcp.Options{Path: "/mcp/" + name}, memoryLimit: DefaultStateMemoryLimit, hibernate: DefaultHibernate}
	if v == lua.LNil {
		return opts, nil
	}
	t, ok := v.(*lua.LTable)
	if !ok {
		return opts, fmt.Errorf("route must be a table, got a %s", v.Type())
	}
	var err error
	t.ForEach(func(k, v lua.LValue) {
		if err != nil {
			return
		}
		key, ok := k.(lua.LString)
		if !ok {
			err = fmt.Errorf("route has a key that is not a string: %s", k)
			return
		}
		err = setOption(&opts, string(key), v)
	})
	return opts, err
}

func setOption(o *routeOptions, key string, v lua.LValue) error {
	var err error
	switch key {
	case "path":
		s, ok := v.(lua.LString)
		if !ok || !strings.HasPrefix(string(s), "/") {
			return fmt.Errorf("route.path must be a string starting with /")
		}
		if strings.ContainsAny(string(s), "{}?#") {
			return fmt.Errorf("route.path %q must not contain {, }, ? or #", string(s))
		}
		o.Path = string(s)
	case "sessions":
		o.Sessions, err = boolOption(key, v)
	case "allow_remote_access":
		o.AllowRemoteAccess, err = boolOption(key, v)
	case "validate_arguments":
		o.validateArgs, err = boolOption(key, v)
	case "validate_results":
		o.validateResults, err = boolOption(key, v)
	case "reuse_lists":
		var b bool
		if b, err = boolOption(key, v); err == nil {
			o.reuseLists = reuseNever
			if b {
				o.reuseLists = reuseState
			}
		}
	case "origins":
		o.Origins, err = stringList(key, v)
	case "concurrent_tools":
		o.ConcurrentTools, err = stringList(key, v)
		for i, name := range o.ConcurrentTools {
			if err == nil && !toolName.MatchString(name) {
				err = fmt.Errorf("route.concurrent_tools[%d] %q is not a tool name (1 to 128 characters of A-Z a-z 0-9 _ - .)", i+1, name)
			}
		}
	case "page_size":
		o.PageSize, err = intOption(key, v, 1)
	case "max_sessions":
		o.MaxSessions, err = intOption(key, v, 1)
	case "session_max_pending":
		o.SessionMaxPending, err = intOption(key, v, 1)
	case "session_buffer_max":
		o.SessionBufferMax, err = intOption(key, v, 1)
	case "session_ttl_ms":
		o.SessionTTL, err = msOption(key, v, 1)
	case "request_timeout_ms":
		o.RequestTimeout, err = msOption(key, v, 1)
	case "call_timeout_ms":
		o.callTimeout, err = msOption(key, v, 1)
	case "allow":
		// route.allow is the host library's: Version.validate parses it.
	case "memory_limit_mb":
		var mb int
		mb, err = intOption(key, v, 1)
		o.memoryLimit = int64(mb) << 20
	case "cache_ttl_ms":
		o.CacheTTL, err = msOption(key, v, 0)
	case "cache_scope":
		s, ok := v.(lua.LString)
		if !ok || !mcp.ValidCacheScope(string(s)) {
			return fmt.Errorf("route.cache_scope must be \"private\" or \"public\", got %s", describe(v))
		}
		o.CacheScope = string(s)
	case "oauth":
		o.OAuth, err = parseOAuth(v)
	case "session_hibernate_ms":
		o.hibernate, err = msOption(key, v, 0) // 0: never
	case "session_keepalive_ms":
		o.SessionKeepAlive, err = msOption(key, v, 0)
		if err == nil && o.SessionKeepAlive == 0 {
			o.SessionKeepAlive = -1 // 0 disables; mcp.Options spells that negative
		}
	default:
		return fmt.Errorf("route has an unknown option %q", key)
	}
	return err
}

func boolOption(key string, v lua.LValue) (bool, error) {
	b, ok := v.(lua.LBool)
	if !ok {
		return false, fmt.Errorf("route.%s must be true or false, got a %s", key, v.Type())
	}
	return bool(b), nil
}

func intOption(key string, v lua.LValue, least int) (int, error) {
	n, ok := v.(lua.LNumber)
	f := float64(n)
	if !ok || f != math.Trunc(f) || f < float64(least) || f > math.MaxInt32 {
		return 0, fmt.Errorf("route.%s must be an integer >= %d, got %s", key, least, describe(v))
	}
	return int(f), nil
}

func msOption(key string, v lua.LValue, least int) (time.Duration, error) {
	n, ok := v.(lua.LNumber)
	f := float64(n)
	if !ok || f != math.Trunc(f) || f < float64(least) || f > float64(math.MaxInt64/int64(time.Millisecond)) {
		return 0, fmt.Errorf("route.%s must be an integer >= %d (milliseconds), got %s", key, least, describe(v))
	}
	return time.Duration(f) * time.Millisecond, nil
}

func stringList(key string, v lua.LValue) ([]string, error) {
	t, ok := v.(*lua.LTable)
	if !ok {
		return nil, fmt.Errorf("route.%s must be a list of strings, got a %s", key, v.Type())
	}
	n, count := t.Len(), 0
	t.ForEach(func(lua.LValue, lua.LValue) { count++ })
	if count != n {
		return nil, fmt.Errorf("route.%s must be a list of strings (it has keys other than 1..n)", key)
	}
	list := make([]string, 0, n)
	for i := 1; i <= n; i++ {
		s, ok := t.RawGetInt(i).(lua.LString)
		if !ok {
			return nil, fmt.Errorf("route.%s[%d] must be a string, got %s", key, i, describe(t.RawGetInt(i)))
		}
		list = append(list, string(s))
	}
	return list, nil
}

// describe names a Lua value in an error message.
func describe(v lua.LValue) string {
	switch v.(type) {
	case lua.LNumber:
		return v.String()
	case lua.LString:
		return fmt.Sprintf("%q", logcap.String(string(v.(lua.LString))))
	}
	return "a " + v.Type().String()
}

// authHook is Options.Auth for a module with an auth function: it runs
// auth(request) on a pooled state. true passes (0); false or nothing rejects
// with 401; a number in 400..599 rejects with that status. Anything else, and
// a crash, is logged and answered 500; no scheduler slot in time is 503.
//
// It runs on the current version; a version without auth (whose route the
// host remounts) lets the request through.
func (s *Script) authHook(ctx context.Context, r *mcp.AuthRequest) int {
	return s.current().auth(ctx, r)
}

func (s *Version) auth(ctx context.Context, r *mcp.AuthRequest) int {
	v, err := s.pool.getSpare(ctx)
	if err != nil {
		s.logger.Error("auth: no Lua state", "error", err)
		return 500
	}
	if v.auth == nil {
		s.pool.release(v)
		return 0
	}
	L := v.L
	req := L.CreateTable(0, 4)
	req.RawSetString("method", lua.LString(r.Method))
	req.RawSetString("path", lua.LString(r.Path))
	req.RawSetString("remote_addr", lua.LString(r.RemoteAddr))
	headers := L.CreateTable(0, len(r.Headers))
	for k, val := range r.Headers {
		headers.RawSetString(k, lua.LString(val))
	}
	req.RawSetString("headers", headers)
	if r.Auth != nil {
		req.RawSetString("auth", v.codec.AuthTable(callAuth(r.Auth)))
	}

	run, err := v.begin(ctx)
	if err != nil { // no slot: the server is busy, or the client left
		s.pool.release(v)
		if ok, held := s.authWarn.Allow(time.Now(), logcap.Every); ok {
			s.logger.Warn("auth: not run", "error", err, "unlogged_since_last", held)
		}
		return 503
	}
	rets, err := run.call("auth", v.auth, 1, req)
	run.end()
	s.pool.release(v)
	if err != nil {
		return 500
	}
	switch res := rets[0].(type) {
	case lua.LBool:
		if res {
			return 0
		}
		return 401
	case *lua.LNilType:
		return 401
	case lua.LNumber:
		if f := float64(res); f == math.Trunc(f) && f >= 400 && f <= 599 {
			return int(f)
		}
	}
	s.logger.Error("auth returned an unusable value (want true, false, nil or an HTTP status 400..599)",
		"callback", "auth", "value", describe(rets[0]))
	return 500
}
