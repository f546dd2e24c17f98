package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"
)

// envFileFlag is --env-file, of serve and call.
func envFileFlag() cli.Flag {
	return &cli.StringFlag{Name: "env-file", Usage: "load KEY=VALUE lines into the environment first (variables already set win)"}
}

// maxEnvFile bounds an --env-file.
const maxEnvFile = 1 << 20

// loadEnvFile sets the variables of an env file (KEY=VALUE lines; blank lines,
// # comments and a leading "export " are allowed; a value may be quoted) in
// the process environment, except those already set: the real environment
// wins over the file. Scripts read them with env.get when route.allow.env
// names them.
func loadEnvFile(path string) error {
	if path == "" {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("--env-file: %w", err)
	}
	defer f.Close()
	vars, err := parseEnvFile(io.LimitReader(f, maxEnvFile+1), path)
	if err != nil {
		return err
	}
	for _, kv := range vars {
		if _, set := os.LookupEnv(kv[0]); !set {
			if err := os.Setenv(kv[0], kv[1]); err != nil {
				return fmt.Errorf("--env-file %s: %s: %w", path, kv[0], err)
			}
		}
	}
	return nil
}

// parseEnvFile reads KEY=VALUE lines, in order.
func parseEnvFile(r io.Reader, name string) ([][2]string, error) {
	var vars [][2]string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxEnvFile)
	size := 0
	for n := 1; sc.Scan(); n++ {
		size += len(sc.Bytes()) + 1
		if size > maxEnvFile {
			return nil, fmt.Errorf("--env-file %s: larger than %d bytes", name, maxEnvFile)
		}
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		key, value, ok := strings.Cut(line, "=")
		key = strings.TrimSpace(key)
		if !ok || !envName(key) {
			return nil, fmt.Errorf("--env-file %s:%d: want KEY=VALUE, with a KEY of letters, digits and _", name, n)
		}
		value = strings.TrimSpace(value)
		if len(value) >= 2 && (value[0] == '"' || value[0] == '\'') && value[len(value)-1] == value[0] {
			value = value[1 : len(value)-1]
		}
		vars = append(vars, [2]string{key, value})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--env-file %s: %w", name, err)
	}
	return vars, nil
}

// envName accepts letters, digits and _, not starting with a digit.
func envName(s string) bool {
	for i, c := range s {
		if c != '_' && !('a' <= c && c <= 'z') && !('A' <= c && c <= 'Z') && !('0' <= c && c <= '9' && i > 0) {
			return false
		}
	}
	return s != ""
}
