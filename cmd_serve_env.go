package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
)

// envPrefix starts the names of the environment variables that set serve's
// flags: LUAMCP_ADDR for --addr, LUAMCP_MAX_SESSIONS for --max-sessions.
const envPrefix = "LUAMCP_"

// envVar names the environment variable of the flag name.
func envVar(name string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// fromEnv lets each of flags be set by its environment variable (envVar):
// containers and hosting platforms configure a process through its
// environment. A flag on the command line wins over its variable. The
// variables are read from the process's environment when serve starts, not
// from --env-file (which is for the scripts).
func fromEnv(flags []cli.Flag) []cli.Flag {
	for _, f := range flags {
		env := []string{envVar(f.Names()[0])}
		switch f := f.(type) {
		case *cli.StringFlag:
			f.EnvVars = env
		case *cli.BoolFlag:
			f.EnvVars = env
		case *cli.IntFlag:
			f.EnvVars = env
		case *cli.DurationFlag:
			f.EnvVars = env
		default:
			panic(fmt.Sprintf("serve flag --%s: a %T has no environment variable here", f.Names()[0], f))
		}
	}
	return flags
}
