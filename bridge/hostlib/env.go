package hostlib

import (
	"os"
	"slices"

	lua "github.com/yuin/gopher-lua"
)

// maxEnvValue bounds a value env.get returns.
const maxEnvValue = 1 << 20

// envModule is `env`: the environment variables route.allow.env names.
var envModule = module{
	funcs: []function{{"get", envGet}},
}

// env.get(name) -> the value; nil when it is unset; nil, message when the
// script may not read it.
func envGet(s *State, L *lua.LState) int {
	name := L.CheckString(1)
	lib := s.granted(L, "env")
	if lib == nil {
		return 2
	}
	if !slices.Contains(lib.grants.Env, name) {
		return fail(L, "env: %s is not allowed (route.allow.env)", name)
	}
	v, ok := os.LookupEnv(name)
	if !ok {
		L.Push(lua.LNil)
		return 1
	}
	if len(v) > maxEnvValue {
		return fail(L, "env: %s is longer than %d bytes", name, maxEnvValue)
	}
	L.Push(lua.LString(v))
	return 1
}
